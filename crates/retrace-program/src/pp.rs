//! The partial-program table (US patent 8,448,140, embodiment 1, at machine level).
//!
//! A *partial program* (PP) is the longest instruction path from a start
//! point to an end point, following fall-through and direct unconditional
//! jumps (`DESIGN.md`, "Partial programs at machine level"):
//!
//! - start points: function entries (symbols, the ELF entry, call targets),
//!   both successors of every conditional branch, the return point after
//!   every call, the instruction after `ecall`/`ebreak`, and indirect
//!   targets (jump-table entries found statically, or targets observed at
//!   run time through [`PpTable::ensure`]);
//! - end points: conditional branches, direct and indirect calls, returns,
//!   other indirect jumps, `ecall`/`ebreak`, trap returns, and the last
//!   instruction before one that cannot be executed.
//!
//! The table is what the replay walks millions of times per second, so it
//! is shaped for that:
//!
//! - [`PpId`] is a dense `u32` index into one `Vec<PartialProgram>`; every
//!   successor is already resolved to a `PpId` ([`End`]), so following a
//!   branch bit is one `match` and one index.
//! - A PP's path is stored as a few [`Run`]s (start, instruction count) of
//!   contiguous instructions in one shared arena — a path only breaks at a
//!   taken `j` — and the decoded instructions live once in the [`Code`]
//!   cache, so [`PpTable::insts`] yields `(pc, Inst)` without copying.
//! - Start address → `PpId` is one hash lookup ([`PpTable::lookup`]) for
//!   indirect targets; direct successors never need it.
//!
//! The table is *extendable*: an indirect target seen at run time (a jump
//! table the static recogniser missed, a function pointer, a return to an
//! unusual place) becomes a new PP with [`PpTable::ensure`], together with
//! every PP reachable from it that did not exist yet. PPs may overlap: a
//! start point in the middle of another PP's path starts its own PP while
//! the other still runs through it.
//!
//! Code written at run time changes the table ([`PpTable::patch`]): the PPs
//! whose paths touch changed bytes are *retired* — no address leads to them
//! any more and they must not be walked again (their start, end and length
//! stay, but their instructions read the new code) — and the PPs built from
//! then on get new ids, so an id never stands for two contents and memos
//! keyed by id stay right. An address therefore maps to one PP at a time,
//! not to one PP forever.

use crate::code::Code;
use crate::error::{ProgramError, Warning};
use crate::Addr;
use retrace_isa::{Flow, Inst};
use rustc_hash::FxHashMap;
use std::collections::HashSet;
use std::fmt;

/// Index of a partial program in its [`PpTable`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PpId(pub u32);

impl PpId {
    /// The index into [`PpTable::pps`].
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for PpId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Why an address is a start point. One address can be several at once
/// (a function entry that is also a loop's branch target), so a PP keeps a
/// set of these, [`StartKinds`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StartKind {
    /// A function's first instruction (symbol, ELF entry or call target).
    FunctionEntry,
    /// The target of a taken conditional branch (or of a direct jump that
    /// closes a loop of unconditional jumps).
    Taken,
    /// The fall-through of a conditional branch, or the instruction after
    /// `ecall`/`ebreak`.
    FallThrough,
    /// The instruction after a call.
    ReturnPoint,
    /// The target of an indirect jump or call (jump-table entry, observed
    /// target).
    Indirect,
}

impl StartKind {
    const ALL: [StartKind; 5] = [
        StartKind::FunctionEntry,
        StartKind::Taken,
        StartKind::FallThrough,
        StartKind::ReturnPoint,
        StartKind::Indirect,
    ];

    fn bit(self) -> u8 {
        1 << self as u8
    }

    /// Short lower-case name (`entry`, `taken`, `fallthrough`, `return`,
    /// `indirect`).
    pub fn name(self) -> &'static str {
        match self {
            StartKind::FunctionEntry => "entry",
            StartKind::Taken => "taken",
            StartKind::FallThrough => "fallthrough",
            StartKind::ReturnPoint => "return",
            StartKind::Indirect => "indirect",
        }
    }
}

/// A set of [`StartKind`]s.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct StartKinds(u8);

impl StartKinds {
    /// Whether `k` is in the set.
    #[inline]
    pub fn contains(self, k: StartKind) -> bool {
        self.0 & k.bit() != 0
    }

    /// Adds `k`.
    #[inline]
    pub fn insert(&mut self, k: StartKind) {
        self.0 |= k.bit();
    }

    /// The members, in [`StartKind`] declaration order.
    pub fn iter(self) -> impl Iterator<Item = StartKind> {
        StartKind::ALL
            .into_iter()
            .filter(move |k| self.contains(*k))
    }
}

impl fmt::Display for StartKinds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for k in self.iter() {
            if !first {
                f.write_str("|")?;
            }
            first = false;
            f.write_str(k.name())?;
        }
        Ok(())
    }
}

/// How a partial program ends, with its successors resolved. A successor
/// is `None` only when its address cannot be executed (outside the code,
/// illegal, misaligned); the analysis reported a [`Warning`] for it and a
/// replay that reaches it must stop with an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// A conditional branch: one bit of the history picks the successor.
    Branch {
        /// Successor when the branch is taken (bit 1).
        taken: Option<PpId>,
        /// Successor when it is not (bit 0).
        not_taken: Option<PpId>,
    },
    /// A direct call (`jal ra`/`jal t0`): continue in the callee, push the
    /// return point.
    Call {
        /// The callee's entry.
        target: Option<PpId>,
        /// Where the callee returns to.
        ret: Option<PpId>,
    },
    /// An indirect call: the target comes from the trace, the return point
    /// is pushed.
    IndirectCall {
        /// Where the callee returns to.
        ret: Option<PpId>,
    },
    /// A return: pop the return stack.
    Return,
    /// Any other indirect jump (jump tables, tail calls through a
    /// register); the target comes from the trace.
    IndirectJump,
    /// `ecall`; execution resumes after it.
    Ecall {
        /// The instruction after the `ecall`.
        next: Option<PpId>,
    },
    /// `ebreak`; a semihosting request (the `slli; ebreak; srai` sequence)
    /// resumes after it, a plain breakpoint traps.
    Ebreak {
        /// Whether it is the semihosting sequence's `ebreak`.
        semihosting: bool,
        /// The instruction after the `ebreak` (`None` for a plain
        /// breakpoint followed by something that is not code).
        next: Option<PpId>,
    },
    /// `mret`/`sret`: the target is the trap's saved pc.
    TrapReturn,
    /// A direct jump back onto the PP's own path (a loop made only of
    /// unconditional jumps, e.g. `1: wfi; j 1b`): the path cannot be
    /// extended, so it ends here and continues at the target's PP.
    Jump {
        /// The jump target's PP.
        target: PpId,
    },
    /// The next instruction, at `at`, cannot be executed (illegal, outside
    /// the code, truncated): a program that gets there traps.
    Fault {
        /// The address that cannot be executed.
        at: Addr,
    },
}

/// The kind of an [`End`] without its successors (for listings and
/// statistics).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EndKind {
    /// Conditional branch.
    Branch,
    /// Direct call.
    Call,
    /// Indirect call.
    IndirectCall,
    /// Return.
    Return,
    /// Other indirect jump.
    IndirectJump,
    /// `ecall`.
    Ecall,
    /// The semihosting `ebreak` (how picolibc programs do I/O and exit).
    Semihost,
    /// A plain `ebreak`.
    Ebreak,
    /// `mret`/`sret`.
    TrapReturn,
    /// A direct jump closing a loop of unconditional jumps.
    Jump,
    /// The next instruction cannot be executed.
    Fault,
}

impl EndKind {
    /// Short lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            EndKind::Branch => "branch",
            EndKind::Call => "call",
            EndKind::IndirectCall => "indirect-call",
            EndKind::Return => "return",
            EndKind::IndirectJump => "indirect-jump",
            EndKind::Ecall => "ecall",
            EndKind::Semihost => "semihost",
            EndKind::Ebreak => "ebreak",
            EndKind::TrapReturn => "trap-return",
            EndKind::Jump => "jump",
            EndKind::Fault => "fault",
        }
    }
}

impl End {
    /// The kind, without successors.
    pub fn kind(&self) -> EndKind {
        match self {
            End::Branch { .. } => EndKind::Branch,
            End::Call { .. } => EndKind::Call,
            End::IndirectCall { .. } => EndKind::IndirectCall,
            End::Return => EndKind::Return,
            End::IndirectJump => EndKind::IndirectJump,
            End::Ecall { .. } => EndKind::Ecall,
            End::Ebreak {
                semihosting: true, ..
            } => EndKind::Semihost,
            End::Ebreak { .. } => EndKind::Ebreak,
            End::TrapReturn => EndKind::TrapReturn,
            End::Jump { .. } => EndKind::Jump,
            End::Fault { .. } => EndKind::Fault,
        }
    }

    /// Whether the end instruction, when it executes, enters a trap
    /// handler: an `ecall`, or an `ebreak` that is not a semihosting call.
    /// (Without a handler the run stops there instead.)
    pub fn traps(&self) -> bool {
        matches!(
            self,
            End::Ecall { .. }
                | End::Ebreak {
                    semihosting: false,
                    ..
                }
        )
    }

    /// Every statically known successor, in a fixed order (taken before
    /// not-taken, call target before return point).
    pub fn successors(&self) -> impl Iterator<Item = PpId> {
        let (a, b) = match *self {
            End::Branch { taken, not_taken } => (taken, not_taken),
            End::Call { target, ret } => (target, ret),
            End::IndirectCall { ret } => (ret, None),
            End::Ecall { next } | End::Ebreak { next, .. } => (next, None),
            End::Jump { target } => (Some(target), None),
            End::Return | End::IndirectJump | End::TrapReturn | End::Fault { .. } => (None, None),
        };
        a.into_iter().chain(b)
    }
}

/// A run of `count` consecutive instructions starting at `start`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    /// Address of the first instruction.
    pub start: Addr,
    /// Number of instructions.
    pub count: u32,
}

/// One partial program. Its path is in the table ([`PpTable::runs`],
/// [`PpTable::insts`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartialProgram {
    /// Address of its first instruction.
    pub start: Addr,
    /// Why it starts there.
    pub starts: StartKinds,
    /// Address of its last instruction (the end instruction; for
    /// [`End::Fault`] the last instruction that can execute).
    pub last: Addr,
    /// How it ends, with successors.
    pub end: End,
    /// Number of instructions on its path, the last one included.
    pub len: u32,
    /// Whether it was added after the static analysis, by
    /// [`PpTable::ensure`] of a target no static rule found.
    pub dynamic: bool,
    first_run: u32,
    n_runs: u32,
    /// The addresses the PP's content was read from, `[lo, hi)`: its path,
    /// the words around an `ebreak` end, an unexecutable next instruction.
    lo: u64,
    hi: u64,
    /// Replaced after the code under it changed ([`PpTable::patch`]).
    retired: bool,
}

/// Partial programs by start address. Fx hashing: the keys are program
/// addresses, not attacker-chosen strings, and the lookup sits in the
/// replay's indirect-jump path.
type AddrMap<V> = FxHashMap<Addr, V>;

/// Longest path the builder follows; a path is finite anyway (a jump back
/// onto it ends it), this only bounds the work on adversarial input.
const MAX_PATH: u32 = 1 << 22;

/// The partial-program table. See the module docs.
#[derive(Clone, Debug)]
pub struct PpTable {
    code: Code,
    pps: Vec<PartialProgram>,
    runs: Vec<Run>,
    index: AddrMap<PpId>,
    pending: Vec<PpId>,
    warnings: Vec<Warning>,
    warned: HashSet<(Addr, Addr)>,
    sealed: bool,
}

impl PpTable {
    /// An empty table over `code`.
    pub fn new(code: Code) -> PpTable {
        PpTable {
            code,
            pps: Vec::new(),
            runs: Vec::new(),
            index: AddrMap::default(),
            pending: Vec::new(),
            warnings: Vec::new(),
            warned: HashSet::new(),
            sealed: false,
        }
    }

    /// Adds a start point of the given kind (and everything reachable from
    /// it) during the static analysis.
    pub fn add_start(&mut self, start: Addr, kind: StartKind) -> Result<PpId, ProgramError> {
        let id = self.intern(start, kind)?;
        self.drain();
        Ok(id)
    }

    /// Marks the static analysis finished: PPs created from now on are
    /// flagged [`PartialProgram::dynamic`].
    pub fn seal(&mut self) {
        self.sealed = true;
    }

    /// The PP starting at `start`, creating it (as an indirect target) and
    /// every PP newly reachable from it if it does not exist yet. This is
    /// how a replay or a check handles an indirect target no static rule
    /// found. Fails only when `start` cannot be executed.
    pub fn ensure(&mut self, start: Addr) -> Result<PpId, ProgramError> {
        if let Some(&id) = self.index.get(&start) {
            return Ok(id);
        }
        self.add_start(start, StartKind::Indirect)
    }

    /// The PP starting exactly at `start`, if there is one.
    #[inline]
    pub fn lookup(&self, start: Addr) -> Option<PpId> {
        self.index.get(&start).copied()
    }

    /// The PP with this id. Panics on an id that is not from this table.
    #[inline]
    pub fn get(&self, id: PpId) -> &PartialProgram {
        &self.pps[id.index()]
    }

    /// Every PP, indexed by [`PpId`].
    #[inline]
    pub fn pps(&self) -> &[PartialProgram] {
        &self.pps
    }

    /// Number of PPs.
    pub fn len(&self) -> usize {
        self.pps.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.pps.is_empty()
    }

    /// `(id, pp)` for every PP.
    pub fn iter(&self) -> impl Iterator<Item = (PpId, &PartialProgram)> {
        self.pps
            .iter()
            .enumerate()
            .map(|(i, p)| (PpId(i as u32), p))
    }

    /// The runs of a PP's path, in order.
    #[inline]
    pub fn runs(&self, id: PpId) -> &[Run] {
        let p = &self.pps[id.index()];
        &self.runs[p.first_run as usize..(p.first_run + p.n_runs) as usize]
    }

    /// The `(pc, instruction)` pairs of a PP's path, in execution order.
    pub fn insts(&self, id: PpId) -> impl Iterator<Item = (Addr, Inst)> + '_ {
        let code = &self.code;
        self.runs(id)
            .iter()
            .flat_map(move |r| code.straight_line(r.start, r.count))
    }

    /// The instruction that ends a PP.
    pub fn end_inst(&self, id: PpId) -> Option<Inst> {
        self.code.get(self.pps[id.index()].last)
    }

    /// The decoded code the table reads.
    pub fn code(&self) -> &Code {
        &self.code
    }

    /// The decoded code, for analyses that decode more of it.
    pub fn code_mut(&mut self) -> &mut Code {
        &mut self.code
    }

    /// Warnings found while building the table (unexecutable successors,
    /// instructions that overlap others).
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    fn mask(&self, a: u64) -> Addr {
        Addr(a & self.code.xlen().mask())
    }

    /// The PP at `start`, allocating a placeholder to be built by
    /// [`Self::drain`] if it is new. Fails if `start` cannot be decoded.
    fn intern(&mut self, start: Addr, kind: StartKind) -> Result<PpId, ProgramError> {
        if let Some(&id) = self.index.get(&start) {
            self.pps[id.index()].starts.insert(kind);
            return Ok(id);
        }
        self.code.decode_at(start)?;
        let id = PpId(self.pps.len() as u32);
        let mut starts = StartKinds::default();
        starts.insert(kind);
        self.pps.push(PartialProgram {
            start,
            starts,
            last: start,
            end: End::Fault { at: start },
            len: 0,
            dynamic: self.sealed,
            first_run: 0,
            n_runs: 0,
            lo: start.0,
            hi: start.0,
            retired: false,
        });
        self.index.insert(start, id);
        self.pending.push(id);
        Ok(id)
    }

    /// A successor of the instruction at `from`: interned, or `None` with
    /// a warning (`quiet` suppresses the warning where an unexecutable
    /// successor is expected, e.g. after a call to a function that does
    /// not return).
    fn successor(&mut self, from: Addr, to: Addr, kind: StartKind, quiet: bool) -> Option<PpId> {
        match self.intern(to, kind) {
            Ok(id) => Some(id),
            Err(error) => {
                if !quiet {
                    self.warn_target(from, to, error);
                }
                None
            }
        }
    }

    fn warn_target(&mut self, from: Addr, to: Addr, error: ProgramError) {
        if self.warned.insert((from, to)) {
            self.warnings.push(Warning::BadTarget { from, to, error });
        }
    }

    fn drain(&mut self) {
        while let Some(id) = self.pending.pop() {
            self.build(id);
        }
        let w = self.code.take_warnings();
        self.warnings.extend(w);
    }

    /// Follows the path of a placeholder PP to its end point.
    fn build(&mut self, id: PpId) {
        let start = self.pps[id.index()].start;
        let first_run = self.runs.len() as u32;
        let mut run = Run { start, count: 0 };
        let mut pc = start;
        let mut prev = start;
        let mut len = 0u32;
        let (mut lo, mut hi) = (start.0, start.0);
        let end = loop {
            let inst = match self.code.decode_at(pc) {
                Ok(i) => i,
                Err(error) => {
                    // Only reachable after the first instruction: `intern`
                    // decoded the start already.
                    self.warn_target(prev, pc, error);
                    (lo, hi) = (lo.min(pc.0), hi.max(pc.0.saturating_add(4)));
                    break End::Fault { at: pc };
                }
            };
            (lo, hi) = (lo.min(pc.0), hi.max(pc.0 + u64::from(inst.len)));
            run.count += 1;
            len += 1;
            prev = pc;
            let next = self.mask(inst.fallthrough(pc.0));
            let target = inst.direct_target(pc.0).map(|t| self.mask(t));
            match inst.flow() {
                Flow::Next => {
                    if len >= MAX_PATH {
                        break End::Fault { at: next };
                    }
                    pc = next;
                }
                Flow::Jump => {
                    let t = target.unwrap_or(next);
                    self.runs.push(run);
                    run = Run { start: t, count: 0 };
                    if self.on_path(first_run, t) || len >= MAX_PATH {
                        // Re-entering the path: end here; the target is a
                        // start point of its own.
                        match self.successor(pc, t, StartKind::Taken, false) {
                            Some(target) => break End::Jump { target },
                            None => break End::Fault { at: t },
                        }
                    }
                    pc = t;
                }
                Flow::CondBranch => {
                    let t = target.unwrap_or(next);
                    let taken = self.successor(pc, t, StartKind::Taken, false);
                    let not_taken = self.successor(pc, next, StartKind::FallThrough, false);
                    break End::Branch { taken, not_taken };
                }
                Flow::Call => {
                    let t = target.unwrap_or(next);
                    let target = self.successor(pc, t, StartKind::FunctionEntry, false);
                    let ret = self.successor(pc, next, StartKind::ReturnPoint, true);
                    break End::Call { target, ret };
                }
                Flow::IndirectCall => {
                    let ret = self.successor(pc, next, StartKind::ReturnPoint, true);
                    break End::IndirectCall { ret };
                }
                Flow::Return => break End::Return,
                Flow::IndirectJump => break End::IndirectJump,
                Flow::TrapReturn => break End::TrapReturn,
                Flow::Ecall => {
                    let next = self.successor(pc, next, StartKind::FallThrough, false);
                    break End::Ecall { next };
                }
                Flow::Ebreak => {
                    // The semihosting test reads the words around it.
                    (lo, hi) = (lo.min(pc.0.saturating_sub(4)), hi.max(pc.0 + 8));
                    let semihosting = self.code.is_semihost_ebreak(pc);
                    let next = self.successor(pc, next, StartKind::FallThrough, !semihosting);
                    break End::Ebreak { semihosting, next };
                }
            }
        };
        if run.count > 0 {
            self.runs.push(run);
        }
        let n_runs = self.runs.len() as u32 - first_run;
        let p = &mut self.pps[id.index()];
        p.last = prev;
        p.end = end;
        p.len = len;
        p.first_run = first_run;
        p.n_runs = n_runs;
        p.lo = lo;
        p.hi = hi;
    }

    /// Whether `id` was retired by [`PpTable::patch`]: no address leads to
    /// it any more, and it must not be walked again (its instructions would
    /// read the new code).
    #[inline]
    pub fn is_retired(&self, id: PpId) -> bool {
        self.pps[id.index()].retired
    }

    /// The code now holds `bytes` at `addr` (the run wrote or placed them
    /// there). Every PP whose content was read from a changed byte is
    /// retired; every other PP whose successor was retired, or could not be
    /// executed before and may be now, is pointed at the PP that starts
    /// there now — new ones get new ids. Returns the changed addresses
    /// `[lo, hi)`, `None` when the code held the bytes already.
    pub fn patch(&mut self, addr: Addr, bytes: &[u8]) -> Option<(Addr, Addr)> {
        let (lo, hi) = self.code.patch(addr, bytes)?;
        let (lo, hi) = (lo.0, hi.0);
        for id in 0..self.pps.len() {
            let p = &mut self.pps[id];
            if !p.retired && p.lo < hi && lo < p.hi.max(p.lo + 1) {
                p.retired = true;
                if self.index.get(&p.start) == Some(&PpId(id as u32)) {
                    self.index.remove(&p.start);
                }
            }
        }
        // An unexecutable successor may have become code: an instruction
        // there, or one that starts 2 bytes before and spans into it.
        let changed = |a: Addr| a.0 < hi && a.0.saturating_add(2) > lo;
        for id in 0..self.pps.len() {
            let p = self.pps[id];
            // Most partial programs have every successor, none retired.
            let fixable = |s: Option<PpId>| s.is_none_or(|s| self.pps[s.index()].retired);
            let work = match p.end {
                End::Branch { taken, not_taken } => fixable(taken) || fixable(not_taken),
                End::Call { target, ret } => fixable(target) || fixable(ret),
                End::IndirectCall { ret } => fixable(ret),
                End::Ecall { next } | End::Ebreak { next, .. } => fixable(next),
                End::Jump { target } => fixable(Some(target)),
                End::Return | End::IndirectJump | End::TrapReturn | End::Fault { .. } => false,
            };
            if p.retired || !work {
                continue;
            }
            let Some(inst) = self.code.get(p.last) else {
                continue;
            };
            let next = self.mask(inst.fallthrough(p.last.0));
            let target = inst.direct_target(p.last.0).map(|t| self.mask(t));
            let fix = |t: &mut Self, slot: Option<PpId>, to: Option<Addr>, kind| match slot {
                Some(s) if !t.pps[s.index()].retired => slot,
                Some(s) => t.successor(p.last, t.pps[s.index()].start, kind, true),
                None => match to {
                    Some(to) if changed(to) => t.successor(p.last, to, kind, true),
                    _ => None,
                },
            };
            let end = match p.end {
                End::Branch { taken, not_taken } => End::Branch {
                    taken: fix(self, taken, target, StartKind::Taken),
                    not_taken: fix(self, not_taken, Some(next), StartKind::FallThrough),
                },
                End::Call { target: t, ret } => End::Call {
                    target: fix(self, t, target, StartKind::FunctionEntry),
                    ret: fix(self, ret, Some(next), StartKind::ReturnPoint),
                },
                End::IndirectCall { ret } => End::IndirectCall {
                    ret: fix(self, ret, Some(next), StartKind::ReturnPoint),
                },
                End::Ecall { next: n } => End::Ecall {
                    next: fix(self, n, Some(next), StartKind::FallThrough),
                },
                End::Ebreak {
                    semihosting,
                    next: n,
                } => End::Ebreak {
                    semihosting,
                    next: fix(self, n, Some(next), StartKind::FallThrough),
                },
                End::Jump { target: t } => match fix(self, Some(t), None, StartKind::Taken) {
                    Some(t) => End::Jump { target: t },
                    None => End::Fault {
                        at: self.pps[t.index()].start,
                    },
                },
                e => e,
            };
            self.pps[id].end = end;
        }
        self.drain();
        Some((Addr(lo), Addr(hi)))
    }

    /// Whether `t` is the address of an instruction on the path being
    /// built (runs from `first_run` on).
    fn on_path(&self, first_run: u32, t: Addr) -> bool {
        for r in &self.runs[first_run as usize..] {
            if t < r.start {
                continue;
            }
            let mut pc = r.start;
            for _ in 0..r.count {
                if pc == t {
                    return true;
                }
                match self.code.get(pc) {
                    Some(i) => pc = self.mask(i.fallthrough(pc.0)),
                    None => break,
                }
            }
        }
        false
    }
}

/// A position on a PP's path, for following execution instruction by
/// instruction (the check mode, the control-fidelity replay).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cursor {
    /// The PP being followed.
    pub pp: PpId,
    /// The pc of the next instruction on its path.
    pub pc: Addr,
    run: u32,
    left: u32,
}

impl Cursor {
    /// The first instruction of `pp`.
    pub fn new(table: &PpTable, pp: PpId) -> Cursor {
        let r = table.runs(pp)[0];
        Cursor {
            pp,
            pc: r.start,
            run: 0,
            left: r.count,
        }
    }

    /// Moves past the instruction at [`Cursor::pc`]; returns `false` if it
    /// was the PP's last instruction.
    #[inline]
    pub fn advance(&mut self, table: &PpTable) -> bool {
        self.left -= 1;
        if self.left > 0 {
            match table.code.get(self.pc) {
                Some(i) => {
                    self.pc = table.mask(i.fallthrough(self.pc.0));
                    return true;
                }
                None => return false,
            }
        }
        let runs = table.runs(self.pp);
        self.run += 1;
        match runs.get(self.run as usize) {
            Some(r) => {
                self.pc = r.start;
                self.left = r.count;
                true
            }
            None => false,
        }
    }
}
