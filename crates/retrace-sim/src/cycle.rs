//! The cycle-level engine: the functional engine with an observer that
//! feeds every retired instruction to a [`retrace_timing::CoreState`] — the
//! same timing rules the replay uses — and attributes cycles to functions.

use crate::observer::{Observer, Retired, TrapEvent};
use crate::sync::{SyncEvent, SyncOutcome};
use retrace_isa::Flow;
use retrace_timing::{CoreModel, CoreState, Resolved};

use crate::functions::FrameTracker;
pub use crate::functions::{FunctionCycles, FunctionMap};

/// The observer of a cycle-level run.
///
/// Cycles go to functions by the rule of [`crate::functions`], the one the
/// replay's profile follows. The tracker hears of a *segment* change only: a
/// stretch of consecutive instructions inside one function is charged when
/// execution leaves it, so the common step costs one range check.
/// [`CycleObserver::per_function`] is complete after
/// [`CycleObserver::finish`].
pub struct CycleObserver {
    core: CoreState,
    funcs: FunctionMap,
    /// Per function, indexed like the `funcs` given to [`CycleObserver::new`].
    tracker: FrameTracker,
    /// Whether there are functions to attribute to.
    attributing: bool,
    /// The current segment: pcs in `[lo, hi)` belong to `func`; it began at
    /// `cycles` cycles and `insns` instructions.
    seg: Segment,
    /// Whether the last conditional branch was taken, as the engine decided
    /// it from the branch condition ([`Observer::branch`] comes just before
    /// that branch's [`Observer::retire`]).
    branch_taken: bool,
    /// The length of the last conditional branch's fall-through instruction
    /// (0 = unknown), when the core charges for it.
    fallthrough_len: u8,
    /// The program's loaded code, when the core's timing needs a fact of the
    /// code beyond the instruction retired: see [`CycleObserver::reading_code`].
    code: Option<CodeImage>,
}

/// The program's segments as loaded: `(address, bytes)`.
#[derive(Clone, Debug, Default)]
struct CodeImage(Vec<(u64, Vec<u8>)>);

impl CodeImage {
    /// Length of the instruction whose first halfword is at `pc`, from its
    /// low two bits (3 = 32 bits); 0 outside the image.
    fn inst_len(&self, pc: u64) -> u8 {
        self.0
            .iter()
            .find_map(|(base, bytes)| {
                let off = usize::try_from(pc.checked_sub(*base)?).ok()?;
                bytes.get(off).map(|b| if b & 3 == 3 { 4 } else { 2 })
            })
            .unwrap_or(0)
    }
}

#[derive(Clone, Copy, Debug)]
struct Segment {
    lo: u64,
    hi: u64,
}

impl CycleObserver {
    /// A cycle-level observer for `model`, attributing to `funcs`
    /// (`(start, size)` each; may be empty).
    pub fn new(model: &CoreModel, funcs: &[(u64, u64)]) -> CycleObserver {
        CycleObserver {
            core: CoreState::new(model),
            funcs: FunctionMap::new(funcs),
            tracker: FrameTracker::new(funcs.len()),
            attributing: !funcs.is_empty(),
            // Without functions the segment covers every address, so the
            // range check never fails.
            seg: Segment {
                lo: if funcs.is_empty() { 0 } else { 1 },
                hi: if funcs.is_empty() { u64::MAX } else { 0 },
            },
            branch_taken: false,
            fallthrough_len: 0,
            code: None,
        }
    }

    /// Read the code of `elf` where the core's timing depends on more than
    /// the instruction retired: the length of a conditional branch's
    /// fall-through instruction, which picorv32 prefetches (its
    /// `[fetch] taken_branch_split_fallthrough_penalty`). The replay reads
    /// the same bytes from the same file. Without it such a core is charged
    /// nothing for it. Code written at run time is not seen.
    pub fn reading_code(mut self, elf: &retrace_program::Elf) -> CycleObserver {
        if self
            .core
            .model()
            .fetch
            .taken_branch_split_fallthrough_penalty
            != 0
        {
            self.code = Some(CodeImage(
                elf.segments
                    .iter()
                    .map(|s| (s.vaddr, s.data.clone()))
                    .collect(),
            ));
        }
        self
    }

    /// Keep the core's CPI stack as it runs ([`CoreState::accounting`]),
    /// at the cost of the accounting form of the timing rule.
    pub fn accounting(mut self) -> CycleObserver {
        self.core = self.core.accounting();
        self
    }

    /// Also keep the timeline of the run's frames, about `max` of the
    /// longest ([`crate::functions::SpanLog`]; needs functions).
    pub fn logging_spans(mut self, max: usize) -> CycleObserver {
        self.tracker = self.tracker.logging_spans(max);
        self
    }

    /// The frames' lives, when [`CycleObserver::logging_spans`] asked for
    /// them (complete after [`CycleObserver::finish`]).
    pub fn span_log(&self) -> Option<&crate::functions::SpanLog> {
        self.tracker.span_log()
    }

    /// Charge the core a trap now (a synchronisation call that blocked,
    /// as its `ecall` retires: [`crate::clocked`]).
    pub(crate) fn charge_trap(&mut self) {
        self.core.trap();
    }

    /// The core's state (cycles, statistics).
    pub fn core(&self) -> &CoreState {
        &self.core
    }

    /// Cycles per function, indexed like the `funcs` given to
    /// [`CycleObserver::new`] (complete after [`CycleObserver::finish`]).
    pub fn per_function(&self) -> &[FunctionCycles] {
        self.tracker.per_function()
    }

    /// Start a new segment at `pc`: the tracker charges the one left.
    #[cold]
    #[inline(never)]
    fn switch_segment(&mut self, pc: u64) {
        let (lo, hi, func) = self.funcs.segment(pc);
        self.tracker
            .enter(func, self.core.cycles(), self.core.stats().instructions);
        self.seg = Segment { lo, hi };
    }

    /// Charge the open segment and close every open frame (at the end of the
    /// run) so inclusive times of functions that never returned (`main`
    /// calling `exit`) are counted. Calling it again adds nothing.
    pub fn finish(&mut self) {
        if self.attributing {
            self.tracker
                .finish(self.core.cycles(), self.core.stats().instructions);
        }
    }

    /// Calls and returns, for inclusive cycles and call counts.
    #[inline(never)]
    fn call_or_return(&mut self, flow: Flow, next_pc: u64) {
        let now = self.core.cycles();
        let to = self.funcs.lookup(next_pc);
        match flow {
            Flow::Call | Flow::IndirectCall => self.tracker.call(to, now),
            Flow::Return => self.tracker.ret(to, now),
            _ => {}
        }
    }
}

impl Observer for CycleObserver {
    #[inline(always)]
    fn branch(&mut self, _hart: usize, pc: u64, inst: &retrace_isa::Inst, taken: bool, _: u64) {
        self.branch_taken = taken;
        if let Some(code) = &self.code {
            self.fallthrough_len = code.inst_len(inst.fallthrough(pc));
        }
    }

    // Inlined into the engine's loop: a call per instruction is a
    // measurable part of the budget.
    #[inline(always)]
    fn retire(&mut self, ev: &Retired<'_>) {
        let inst = ev.inst;
        let outcome = Resolved {
            next_pc: ev.next_pc,
            // Only read for conditional branches. From the condition, as the
            // recorder and the replay take it: `beq x0, x0, .+4` is taken
            // although it lands on its fall-through.
            taken: self.branch_taken,
            mem_addr: ev.mem_addr.unwrap_or(0),
            fallthrough_len: self.fallthrough_len,
        };
        if ev.pc < self.seg.lo || ev.pc >= self.seg.hi {
            self.switch_segment(ev.pc);
        }
        let flow = self.core.step(ev.pc, inst, outcome);
        if matches!(flow, Flow::Call | Flow::IndirectCall | Flow::Return) && self.attributing {
            self.call_or_return(flow, ev.next_pc);
        }
    }

    /// Entering a handler: the timing rule's trap (after the `ecall` or
    /// `ebreak` that trapped, which retired just before; in place of a
    /// faulting instruction, which never does). The fatal trap that stops
    /// the run costs nothing: nothing runs after it.
    fn trap(&mut self, ev: &TrapEvent) {
        if ev.handler.is_some() {
            self.core.trap();
        }
    }

    /// A synchronisation call the environment answered at once: its
    /// `ecall` ends a partial program like one that enters a handler, and
    /// the replay charges every such `ecall` the trap, so the core pays it
    /// here too, just after the `ecall` retired. (A call that blocked
    /// completes only with another hart's help; the cycle-level engine
    /// times one hart.)
    fn sync(&mut self, ev: &SyncEvent) {
        if ev.outcome == SyncOutcome::Done {
            self.core.trap();
        }
    }
}

/// Run `elf` in the cycle-level engine on `model`, attributing cycles to
/// `funcs` (`(start, size)` each).
pub fn run_cycle_level(
    elf: &retrace_program::Elf,
    host: crate::HostConfig,
    console: crate::Console,
    max_insns: Option<u64>,
    model: &CoreModel,
    funcs: &[(u64, u64)],
) -> Result<(crate::RunResult, CycleObserver), crate::LoadError> {
    let mut machine = crate::Machine::new(elf, &crate::MachineConfig::default(), host, console)?;
    let mut obs = CycleObserver::new(model, funcs).reading_code(elf);
    let run = machine.run(max_insns, &mut obs);
    obs.finish();
    Ok((run, obs))
}
