//! The patent's by-products of a replay (embodiment 1, step 5): cycles per
//! function, inclusive and exclusive, call counts, each branch's taken
//! probability, and the hottest partial programs — for one core; and, for
//! `retrace annotate` and callgrind's format, each instruction's cost
//! (through [`Estimator::per_instruction`]) and the call graph with the
//! inclusive cost of every call site.
//!
//! Cycles go to functions by the one rule of [`retrace_sim::functions`],
//! through the same [`FrameTracker`] the cycle-level engine drives, over
//! the same function ranges; so on a core the replay times exactly, each
//! function's figures are the cycle-level engine's. A partial program can
//! run through more than one function (a tail call `j f` inside it, a
//! fall-through into the next symbol): the tracker is then told of each
//! change at the cycle the engine's clock shows there, from the time of the
//! partial program's first instructions.

use crate::estimator::Estimator;
use crate::walk::{Leave, Visit};
use retrace_program::{FunctionRanges, PpId, PpTable, Program};
use retrace_sim::attribution::{InstructionCost, PerInstruction};
use retrace_sim::functions::{FrameTracker, FunctionMap, SpanLog};
use retrace_timing::SignatureId;
use rustc_hash::FxHashMap;

/// Per-function figures.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FunctionProfile {
    /// Function name.
    pub name: String,
    /// Entry address.
    pub entry: u64,
    /// Cycles of its own instructions.
    pub exclusive: u64,
    /// Cycles from entry to exit, callees included (outermost frames, so
    /// recursion is not counted twice; a tail call ends the caller's).
    pub inclusive: u64,
    /// Entries: calls, tail calls and other entries from another function.
    pub calls: u64,
    /// Instructions executed in it.
    pub instructions: u64,
}

/// One conditional branch's statistics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BranchProfile {
    /// Address of the branch.
    pub pc: u64,
    /// Executions.
    pub executed: u64,
    /// Of which taken.
    pub taken: u64,
    /// Of which mispredicted (by the core's predictor under `control`, its
    /// static prediction under `fast`); 0 unless the profile has
    /// per-instruction costs.
    pub mispredicts: u64,
    /// The cycles those mispredictions cost: each one the core's
    /// `mispredict_penalty`, which the timing rule adds to the branch.
    pub mispredict_cycles: u64,
}

/// The calls from one call site to one function, with their inclusive
/// cost: from just after the call instruction to just after the return
/// that matched it (a call that never returned, to the end of the run).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallEdge {
    /// Address of the call instruction.
    pub site: u64,
    /// Index of the function called, into the profile's function ranges
    /// ([`retrace_program::FunctionRanges::of_program`]).
    pub callee: usize,
    /// Calls made.
    pub calls: u64,
    /// Cycles inside them, callees included.
    pub cycles: u64,
    /// Instructions executed inside them, callees included.
    pub instructions: u64,
}

/// One partial program's share.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PpProfile {
    /// The partial program.
    pub pp: PpId,
    /// Its start address.
    pub start: u64,
    /// Executions.
    pub executed: u64,
    /// Cycles spent in it.
    pub cycles: u64,
}

/// The profile of a replay.
#[derive(Clone, Debug, Default)]
pub struct Profile {
    /// Functions with any activity, most exclusive cycles first.
    pub functions: Vec<FunctionProfile>,
    /// Branches, most executed first ([`Profile::costliest_branches`]
    /// orders them by what their mispredictions cost).
    pub branches: Vec<BranchProfile>,
    /// Partial programs, most cycles first.
    pub hottest: Vec<PpProfile>,
    /// Per instruction address: executions, cycles, mispredictions and
    /// I-cache misses, by the rule of [`retrace_sim::attribution`] (empty
    /// unless the estimator was [`Estimator::attributing`]). The data-cache
    /// term is not in it.
    pub instructions: PerInstruction,
    /// The call graph: per call site and function called, the calls and
    /// their inclusive cost; by site, then callee.
    pub calls: Vec<CallEdge>,
    /// The frames' lives on estimated cycles, when
    /// [`Profiler::logging_spans`] asked for them: the timeline of the run.
    pub timeline: Option<SpanLog>,
}

impl Profile {
    /// The run's CPI stack: its instructions' stacks summed, and the
    /// data-cache term of `estimate` (estimated for the whole run, charged
    /// to no instruction) as its data-cache part; it sums to
    /// `estimate.cycles`.
    pub fn cpi_stack(&self, estimate: &crate::Estimate) -> retrace_timing::CpiStack {
        let mut stack = retrace_timing::CpiStack::default();
        for c in self.instructions.values() {
            stack.add(&c.cpi);
        }
        stack.charge(retrace_timing::CpiPart::DCache, estimate.dcache_cycles);
        stack
    }

    /// The branches that mispredicted, the cycles their mispredictions
    /// cost first (then the most executed, then by address).
    pub fn costliest_branches(&self) -> Vec<BranchProfile> {
        let mut v: Vec<BranchProfile> = self
            .branches
            .iter()
            .filter(|b| b.mispredicts > 0)
            .copied()
            .collect();
        v.sort_by(|a, b| {
            (b.mispredict_cycles, b.executed)
                .cmp(&(a.mispredict_cycles, a.executed))
                .then(a.pc.cmp(&b.pc))
        });
        v
    }
}

/// The functions a partial program's instructions lie in: one for all,
/// or from which instruction on each holds (`None`: outside every
/// function).
#[derive(Clone, Debug)]
enum Pieces {
    One(Option<usize>),
    Many(Box<[(u32, Option<usize>)]>),
}

/// A visitor that times (through an [`Estimator`]) and profiles.
pub struct Profiler {
    /// The estimator doing the timing.
    pub estimator: Estimator,
    functions: FunctionRanges,
    map: FunctionMap,
    /// Per partial program, made on first use (the table can grow during
    /// the replay).
    pieces: Vec<Option<Pieces>>,
    tracker: FrameTracker,
    instructions: u64,
    branches: FxHashMap<u64, (u64, u64)>,
    /// The last instruction issued: a trap's cycles are charged to it.
    last_pc: Option<u64>,
    /// Per instruction address, the traps charged so far.
    traps: FxHashMap<u64, u64>,
    /// Calls not yet returned from: site, function called, cycles and
    /// instructions when it was made.
    call_stack: Vec<(u64, Option<usize>, u64, u64)>,
    /// Per (call site, function called): calls, cycles, instructions.
    edges: FxHashMap<(u64, usize), (u64, u64, u64)>,
}

impl Profiler {
    /// Profile `program` while `estimator` times it.
    pub fn new(estimator: Estimator, program: &Program) -> Profiler {
        let functions = FunctionRanges::of_program(program);
        let map = FunctionMap::new(&functions.ranges);
        let tracker = FrameTracker::new(functions.ranges.len());
        Profiler {
            estimator,
            functions,
            map,
            pieces: Vec::new(),
            tracker,
            instructions: 0,
            branches: FxHashMap::default(),
            last_pc: None,
            traps: FxHashMap::default(),
            call_stack: Vec::new(),
            edges: FxHashMap::default(),
        }
    }

    /// Also keep the timeline of the run's frames, about `max` of the
    /// longest ([`SpanLog`]), as the cycle-level engine's
    /// `CycleObserver::logging_spans` does.
    pub fn logging_spans(mut self, max: usize) -> Profiler {
        self.tracker = self.tracker.logging_spans(max);
        self
    }

    /// The function of the code at `pp`'s start.
    fn function_at(&mut self, table: &PpTable, pp: PpId) -> Option<usize> {
        if pp == crate::machine::INVALID {
            return None;
        }
        // From the pieces, which the partial program needs next anyway: a
        // call or return costs no range search.
        match self.pieces(table, pp) {
            Pieces::One(f) => *f,
            Pieces::Many(list) => list[0].1,
        }
    }

    #[inline]
    fn pieces(&mut self, table: &PpTable, pp: PpId) -> &Pieces {
        let i = pp.index();
        if !matches!(self.pieces.get(i), Some(Some(_))) {
            self.make_pieces(table, pp);
        }
        self.pieces[i].as_ref().expect("made above")
    }

    #[cold]
    fn make_pieces(&mut self, table: &PpTable, pp: PpId) {
        let i = pp.index();
        if i >= self.pieces.len() {
            self.pieces.resize(table.len().max(i + 1), None);
        }
        {
            let mut list: Vec<(u32, Option<usize>)> = Vec::new();
            for (k, (pc, _)) in table.insts(pp).enumerate() {
                let f = self.map.lookup(pc.get());
                if list.last().is_none_or(|&(_, g)| g != f) {
                    list.push((k as u32, f));
                }
            }
            self.pieces[i] = Some(match list.as_slice() {
                [] => Pieces::One(None),
                [(_, f)] => Pieces::One(*f),
                _ => Pieces::Many(list.into_boxed_slice()),
            });
        }
    }

    /// `executed` instructions of `pp` ran, from `before` cycles and
    /// pipeline signature `entry`: tell the tracker of every function
    /// change among them, at the cycle it happened.
    #[inline]
    fn ran(&mut self, table: &PpTable, pp: PpId, executed: u32, before: u64, entry: SignatureId) {
        if pp == crate::machine::INVALID || executed == 0 {
            return;
        }
        let insns = self.instructions;
        self.instructions += u64::from(executed);
        let n = match self.pieces(table, pp) {
            Pieces::One(f) => {
                let f = *f;
                if f != self.tracker.current() {
                    self.tracker.enter(f, before, insns);
                }
                return;
            }
            Pieces::Many(list) => list.len(),
        };
        for i in 0..n {
            let Some(Pieces::Many(list)) = &self.pieces[pp.index()] else {
                unreachable!("a partial program's pieces do not change")
            };
            let (k, f) = list[i];
            if k >= executed {
                break;
            }
            if f == self.tracker.current() {
                continue;
            }
            let at = if k == 0 {
                before
            } else {
                before + self.estimator.prefix_cycles(table, pp, entry, k)
            };
            self.tracker.enter(f, at, insns + u64::from(k));
        }
    }

    /// The first `executed` instructions of `pp` issued: remember the last
    /// (a trap after them is charged to it).
    fn issued(&mut self, table: &PpTable, pp: PpId, executed: u32) {
        if executed > 0 && pp != crate::machine::INVALID {
            self.last_pc = table
                .insts(pp)
                .nth(executed as usize - 1)
                .map(|(pc, _)| pc.get());
        }
    }

    /// The innermost call open returned (or the run ended, `at` cycles and
    /// `instructions` in): charge its edge.
    fn returned(&mut self, at: u64, instructions: u64) {
        if let Some((site, Some(callee), c0, i0)) = self.call_stack.pop() {
            let e = self.edges.entry((site, callee)).or_default();
            e.0 += 1;
            e.1 += at - c0;
            e.2 += instructions - i0;
        }
    }

    /// Build the profile after the walk (closes frames still open).
    pub fn finish(mut self, table: &PpTable) -> (Profile, Estimator) {
        let (end, insns) = (self.estimator.cycles(), self.instructions);
        while !self.call_stack.is_empty() {
            self.returned(end, insns);
        }
        let mut calls: Vec<CallEdge> = self
            .edges
            .iter()
            .map(
                |(&(site, callee), &(calls, cycles, instructions))| CallEdge {
                    site,
                    callee,
                    calls,
                    cycles,
                    instructions,
                },
            )
            .collect();
        calls.sort_by_key(|c| (c.site, c.callee));
        let mut per_inst: FxHashMap<u64, InstructionCost> = FxHashMap::default();
        self.estimator.per_instruction(&mut per_inst);
        for (&pc, &c) in &self.traps {
            let cost = per_inst.entry(pc).or_default();
            cost.cycles += c;
            cost.cpi.charge(retrace_timing::CpiPart::Trap, c);
        }
        let instructions: PerInstruction = per_inst.into_iter().collect();
        let penalty = u64::from(self.estimator.model().branch.mispredict_penalty);
        self.tracker
            .finish(self.estimator.cycles(), self.instructions);
        let mut funcs: Vec<FunctionProfile> = self
            .tracker
            .per_function()
            .iter()
            .enumerate()
            .filter(|(_, f)| f.instructions > 0 || f.calls > 0)
            .map(|(i, f)| FunctionProfile {
                name: self.functions.names[i].clone(),
                entry: self.functions.ranges[i].0,
                exclusive: f.exclusive,
                inclusive: f.inclusive,
                calls: f.calls,
                instructions: f.instructions,
            })
            .collect();
        // As `retrace run --core` orders them.
        funcs.sort_by(|a, b| {
            (b.exclusive, b.inclusive)
                .cmp(&(a.exclusive, a.inclusive))
                .then(a.entry.cmp(&b.entry))
        });
        let mut hottest = Vec::new();
        let per_pp = self.estimator.per_pp();
        for (id, p) in table.iter() {
            let (executed, cycles) = per_pp.get(id.index()).copied().unwrap_or((0, 0));
            if executed == 0 {
                continue;
            }
            hottest.push(PpProfile {
                pp: id,
                start: p.start.get(),
                executed,
                cycles,
            });
        }
        hottest.sort_by(|a, b| b.cycles.cmp(&a.cycles).then(a.start.cmp(&b.start)));
        let mut branches: Vec<BranchProfile> = self
            .branches
            .iter()
            .map(|(&pc, &(executed, taken))| {
                let mispredicts = instructions.get(&pc).map_or(0, |c| c.mispredicts);
                BranchProfile {
                    pc,
                    executed,
                    taken,
                    mispredicts,
                    mispredict_cycles: mispredicts * penalty,
                }
            })
            .collect();
        branches.sort_by(|a, b| b.executed.cmp(&a.executed).then(a.pc.cmp(&b.pc)));
        (
            Profile {
                functions: funcs,
                branches,
                hottest,
                instructions,
                calls,
                timeline: self.tracker.span_log().cloned(),
            },
            self.estimator,
        )
    }
}

impl Visit<PpTable> for Profiler {
    fn pp(&mut self, table: &PpTable, pp: PpId, how: Leave, next: PpId) {
        let before = self.estimator.cycles();
        let entry = self.estimator.entry_signature(pp);
        self.estimator.pp(table, pp, how, next);
        self.ran(table, pp, table.get(pp).len, before, entry);
        if pp != crate::machine::INVALID {
            self.last_pc = Some(table.get(pp).last.get());
        }
        let after = self.estimator.cycles();
        match how {
            Leave::Branch(taken) => {
                let e = self
                    .branches
                    .entry(table.get(pp).last.get())
                    .or_insert((0, 0));
                e.0 += 1;
                e.1 += u64::from(taken);
            }
            Leave::Call => {
                let to = self.function_at(table, next);
                self.tracker.call(to, after);
                let site = table.get(pp).last.get();
                self.call_stack.push((site, to, after, self.instructions));
            }
            Leave::Return { .. } => {
                let to = self.function_at(table, next);
                self.tracker.ret(to, after);
                self.returned(after, self.instructions);
            }
            Leave::Indirect | Leave::Continue => {}
        }
    }

    fn last(&mut self, table: &PpTable, pp: PpId, executed: u32) {
        let before = self.estimator.cycles();
        let entry = self.estimator.entry_signature(pp);
        self.estimator.last(table, pp, executed);
        self.ran(table, pp, executed, before, entry);
        self.issued(table, pp, executed);
    }

    fn trap(&mut self, table: &PpTable, pp: PpId, executed: u32) {
        let before = self.estimator.cycles();
        let entry = self.estimator.entry_signature(pp);
        self.estimator.trap(table, pp, executed);
        // The trap's own cost goes to the function executing: the next
        // change charges it there, as the cycle-level engine does.
        self.ran(table, pp, executed, before, entry);
        self.issued(table, pp, executed);
        let c = self.estimator.take_trap_cycles();
        if let (Some(pc), true) = (self.last_pc, c > 0) {
            *self.traps.entry(pc).or_default() += c;
        }
    }

    fn cut(&mut self, table: &PpTable, pp: PpId, executed: u32) {
        let before = self.estimator.cycles();
        let entry = self.estimator.entry_signature(pp);
        self.estimator.cut(table, pp, executed);
        self.ran(table, pp, executed, before, entry);
        self.issued(table, pp, executed);
    }
}
