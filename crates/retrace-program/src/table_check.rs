//! Checking a partial-program table against an execution.
//!
//! [`Checker`] is fed every retired instruction of a run (`pc`, next pc)
//! and follows the table exactly as a replay would: along the current PP's
//! path instruction by instruction, and at its end to the successor the
//! table names — taken or not-taken by where the branch went, the callee
//! with the return point pushed on a shadow stack, the popped return point
//! at a return, and for indirect jumps and calls the PP of the observed
//! target ([`PpTable::ensure`], which adds it if no static rule found it).
//! The shadow stack is the recording protocol's [`ReturnStack`], with its
//! bound and its unwind rule: a return that does not go to the popped
//! return point is an escape, after which the stack unwinds to its target,
//! exactly as the recorder's and the replay's do — so the escapes counted
//! here are the escapes a recording of the same run writes.
//!
//! An executed instruction is *covered* when it is the instruction the
//! table predicted at that point. Anything else is a [`Mismatch`]: the
//! execution left the current path, or a PP ended in a transition that is
//! not one of its successors. After a mismatch the checker re-synchronises
//! at the executed pc, so one error does not hide the rest of the run.
//!
//! Traps abandon the path, as hardware does: an exception's instruction does
//! not execute and the handler runs next ([`Checker::trap`]). Execution that
//! goes where the table cannot make a partial program (a jump to an address
//! outside the code, a branch onto an illegal instruction) is a mismatch
//! only if something executes there: when a trap comes first — the fetch
//! faulted, as the table predicted — it is not.
//!
//! Code the run writes or places at run time comes in through
//! [`Checker::code`], as the engine decodes it: the table takes in what its
//! code does not hold ([`PpTable::patch`]), and the checker continues on the
//! new table from where it is — as the replay cuts the partial program it
//! is in at a recorded code event and goes on at the same pc.
//!
//! The checker does not run programs itself (this crate executes
//! nothing); the CLI's `retrace pp --check` connects it to the functional
//! simulator.

use crate::error::ProgramError;
use crate::pp::{Cursor, End, PpId, PpTable};
use crate::Addr;
use retrace_isa::ReturnStack;
use std::fmt;

/// One way the execution disagreed with the table.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Mismatch {
    /// The instruction executed is not the next one on the current PP's
    /// path.
    OffPath {
        /// The PP being followed.
        pp: PpId,
        /// The pc the path predicted.
        expected: Addr,
        /// The pc that executed.
        actual: Addr,
    },
    /// A PP ended with a conditional branch or a jump that went somewhere
    /// its successors do not include.
    BadSuccessor {
        /// The PP that ended.
        pp: PpId,
        /// Its last instruction.
        at: Addr,
        /// Where execution went.
        to: Addr,
    },
    /// Execution went to an address the table cannot make a PP of.
    Unresolvable {
        /// Where execution went.
        to: Addr,
        /// Why the table cannot start a PP there.
        error: ProgramError,
    },
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mismatch::OffPath {
                pp,
                expected,
                actual,
            } => write!(
                f,
                "executed {actual} where PP {pp}'s path continues at {expected}"
            ),
            Mismatch::BadSuccessor { pp, at, to } => {
                write!(
                    f,
                    "PP {pp} ended at {at} and went to {to}, which is not one of its successors"
                )
            }
            Mismatch::Unresolvable { to, error } => {
                write!(
                    f,
                    "execution went to {to}, which the table cannot start a PP at: {error}"
                )
            }
        }
    }
}

/// What a check found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckReport {
    /// Instructions executed.
    pub executed_instructions: u64,
    /// Executed instructions that were the table's prediction.
    pub covered_instructions: u64,
    /// PP executions (transitions into a PP, the first included).
    pub pp_executions: u64,
    /// Distinct PPs executed.
    pub executed_partial_programs: u64,
    /// PPs the run added to the table (indirect targets no static rule
    /// found).
    pub added_partial_programs: u64,
    /// Returns that did not go to the return point on top of the shadow
    /// stack (longjmp, stack switching, a return past the stack's bound);
    /// a recording of the run writes exactly these as escapes.
    pub return_escapes: u64,
    /// Traps taken (execution continued at the trap handler).
    pub traps: u64,
    /// Code events: blocks the run executed that the table's code did not
    /// hold (code copied into RAM, patched, built in a data array).
    pub code_changes: u64,
    /// Number of mismatches.
    pub mismatches: u64,
    /// The first mismatches, for the report.
    pub first_mismatches: Vec<Mismatch>,
}

impl CheckReport {
    /// Covered instructions as a percentage of executed instructions
    /// (100 when nothing executed).
    pub fn coverage_percent(&self) -> f64 {
        if self.executed_instructions == 0 {
            100.0
        } else {
            self.covered_instructions as f64 * 100.0 / self.executed_instructions as f64
        }
    }
}

/// How many mismatches a report keeps in full.
const KEEP: usize = 20;

/// Follows a table along an execution. See the module docs.
pub struct Checker<'t> {
    table: &'t mut PpTable,
    cur: Option<Cursor>,
    stack: ReturnStack<PpId>,
    seen: Vec<bool>,
    static_len: usize,
    report: CheckReport,
    /// Execution went where the table cannot make a partial program: a
    /// mismatch if an instruction retires next, none if a trap comes first.
    pending: Option<Mismatch>,
}

impl<'t> Checker<'t> {
    /// A checker over `table`; the first retired instruction starts it.
    pub fn new(table: &'t mut PpTable) -> Checker<'t> {
        let static_len = table.len();
        Checker {
            seen: vec![false; static_len],
            table,
            cur: None,
            stack: ReturnStack::new(),
            static_len,
            report: CheckReport::default(),
            pending: None,
        }
    }

    fn mismatch(&mut self, m: Mismatch) {
        self.report.mismatches += 1;
        if self.report.first_mismatches.len() < KEEP {
            self.report.first_mismatches.push(m);
        }
    }

    /// Enters the PP starting at `pc` (creating it if needed).
    fn enter_at(&mut self, pc: Addr) -> Option<Cursor> {
        match self.table.ensure(pc) {
            Ok(id) => Some(self.enter(id)),
            Err(error) => {
                self.mismatch(Mismatch::Unresolvable { to: pc, error });
                None
            }
        }
    }

    fn enter(&mut self, id: PpId) -> Cursor {
        self.report.pp_executions += 1;
        if id.index() >= self.seen.len() {
            self.seen.resize(id.index() + 1, false);
        }
        if !self.seen[id.index()] {
            self.seen[id.index()] = true;
            self.report.executed_partial_programs += 1;
        }
        Cursor::new(self.table, id)
    }

    /// One retired instruction at `pc`; the next instruction executes at
    /// `next`.
    pub fn retire(&mut self, pc: u64, next: u64) {
        let pc = Addr(pc);
        let next = Addr(next);
        self.report.executed_instructions += 1;
        if let Some(m) = self.pending.take() {
            // Something executed after all: the table could not follow.
            self.mismatch(m);
        }
        let mut cur = match self.cur {
            Some(c) if c.pc == pc => {
                self.report.covered_instructions += 1;
                c
            }
            Some(c) => {
                self.mismatch(Mismatch::OffPath {
                    pp: c.pp,
                    expected: c.pc,
                    actual: pc,
                });
                self.stack.clear();
                match self.enter_at(pc) {
                    Some(c) => c,
                    None => {
                        self.cur = None;
                        return;
                    }
                }
            }
            None => {
                // The first instruction of the run (or the first after an
                // unresolvable target): every executed pc must start or
                // continue a PP, and the first starts one.
                match self.enter_at(pc) {
                    Some(c) => {
                        if self.report.executed_instructions == 1 {
                            self.report.covered_instructions += 1;
                        }
                        c
                    }
                    None => return,
                }
            }
        };
        if cur.advance(self.table) {
            self.cur = Some(cur);
            return;
        }
        // The PP ended: go to the successor the table names.
        let pp = cur.pp;
        let end = self.table.get(pp).end;
        let start_of = |t: &PpTable, id: Option<PpId>| id.map(|i| t.get(i).start);
        // What a direct end that went elsewhere than its successors is.
        let bad_successor = Mismatch::BadSuccessor {
            pp,
            at: pc,
            to: next,
        };
        let succ: Option<PpId> = match end {
            End::Branch { taken, not_taken } => {
                if start_of(self.table, taken) == Some(next) {
                    taken
                } else if start_of(self.table, not_taken) == Some(next) {
                    not_taken
                } else {
                    self.off_table(bad_successor, next)
                }
            }
            End::Call { target, ret } => {
                if let Some(r) = ret {
                    self.stack.push(r);
                }
                if start_of(self.table, target) == Some(next) {
                    target
                } else {
                    self.off_table(bad_successor, next)
                }
            }
            End::IndirectCall { ret } => {
                if let Some(r) = ret {
                    self.stack.push(r);
                }
                self.resolve(next)
            }
            End::Return => match self.stack.pop() {
                Some(r) if self.table.get(r).start == next => Some(r),
                _ => {
                    self.report.return_escapes += 1;
                    let table = &*self.table;
                    self.stack
                        .unwind(next.get(), |&id| table.get(id).start.get());
                    self.resolve(next)
                }
            },
            End::IndirectJump | End::TrapReturn => self.resolve(next),
            End::Ecall { next: n } | End::Ebreak { next: n, .. } => {
                if start_of(self.table, n) == Some(next) {
                    n
                } else {
                    // Not resuming after the call: a trap handler runs
                    // (reported through `trap`), or the run ends here.
                    self.resolve(next)
                }
            }
            End::Jump { target } => Some(target),
            // The path ran into an instruction that cannot execute: going
            // there, the program traps (illegal instruction).
            End::Fault { at } => self.off_table(Mismatch::BadSuccessor { pp, at, to: next }, next),
        };
        self.cur = succ.map(|id| self.enter(id));
    }

    /// Execution went to `to`, which the table's successor does not name
    /// (`m` says how): a mismatch, unless the table cannot make a partial
    /// program there at all — then it is one only if an instruction
    /// executes next rather than a trap.
    fn off_table(&mut self, m: Mismatch, to: Addr) -> Option<PpId> {
        match self.table.ensure(to) {
            Ok(id) => {
                self.mismatch(m);
                Some(id)
            }
            Err(_) => {
                self.pending = Some(m);
                None
            }
        }
    }

    /// The PP of an indirect target `to`; one the table cannot make is a
    /// mismatch only if an instruction executes next rather than a trap.
    fn resolve(&mut self, to: Addr) -> Option<PpId> {
        match self.table.ensure(to) {
            Ok(id) => Some(id),
            Err(error) => {
                self.pending = Some(Mismatch::Unresolvable { to, error });
                None
            }
        }
    }

    /// A trap: execution continues at `handler` instead of where the table
    /// says. The interrupted path is abandoned, as hardware abandons it,
    /// and a target the table could not follow is explained: its fetch
    /// faulted.
    pub fn trap(&mut self, handler: u64) {
        self.report.traps += 1;
        self.pending = None;
        self.cur = self.resolve(Addr(handler)).map(|id| self.enter(id));
    }

    /// A trap entered by an `ecall` or `ebreak`: that instruction ends its
    /// partial program and is still reported as executed, going to the
    /// handler ([`Checker::retire`] follows it there), so only the count
    /// changes here. Repositioning at the handler now, as [`Checker::trap`]
    /// does, would put the checker ahead of the instruction still to come.
    pub fn call_trap(&mut self) {
        self.report.traps += 1;
    }

    /// The run is about to execute the block of `len` bytes at `pc`, just
    /// decoded; `window` is the memory around it from `base`. If the
    /// table's code does not hold the block, it takes in the window's
    /// differing bytes, and the checker goes on at the same place in the
    /// new table (return points re-resolved too).
    pub fn code(&mut self, pc: u64, len: u64, base: u64, window: &[u8]) {
        let off = (pc.wrapping_sub(base)) as usize;
        let Some(block) = window.get(off..off.saturating_add(len as usize)) else {
            return;
        };
        if self.table.code().holds(Addr(pc), block) {
            return;
        }
        let Some((lo, hi)) = self.table.code().differs(Addr(base), window) else {
            return;
        };
        let (lo, hi) = (lo & !1, ((hi + 1) & !1).min(window.len()));
        if self
            .table
            .patch(Addr(base + lo as u64), &window[lo..hi])
            .is_none()
        {
            return;
        }
        self.report.code_changes += 1;
        for i in 0..self.stack.len() {
            let r = self.stack.as_slice()[i];
            if self.table.is_retired(r) {
                let start = self.table.get(r).start;
                match self.table.ensure(start) {
                    Ok(id) => self.stack.as_mut_slice()[i] = id,
                    Err(_) => {
                        self.stack.truncate(i);
                        break;
                    }
                }
            }
        }
        if self.cur.is_none() && self.pending.is_some() {
            // Execution went where the table had no code, and the run is
            // about to execute the code it placed there.
            if let Ok(id) = self.table.ensure(Addr(pc)) {
                self.pending = None;
                self.cur = Some(self.enter(id));
            }
        } else if let Some(c) = self.cur {
            // As the replay: the partial program is cut here and a new one
            // starts at the next pc (not counted as a new execution).
            self.cur = match self.table.ensure(c.pc) {
                Ok(id) => {
                    if id.index() >= self.seen.len() {
                        self.seen.resize(id.index() + 1, false);
                    }
                    Some(Cursor::new(self.table, id))
                }
                Err(error) => {
                    self.pending = Some(Mismatch::Unresolvable { to: c.pc, error });
                    None
                }
            };
        }
    }

    /// Finishes the check. A target the table could not follow, with
    /// nothing executed after it, is no mismatch: the run ended there.
    pub fn finish(mut self) -> CheckReport {
        self.report.added_partial_programs = (self.table.len() - self.static_len) as u64;
        self.report
    }
}
