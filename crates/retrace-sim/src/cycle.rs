//! The cycle-level engine: the functional engine with an observer that
//! feeds every retired instruction to a [`retrace_timing::CoreState`] — the
//! same timing rules the replay uses — and attributes cycles to functions.

use crate::observer::{Observer, Retired, TrapEvent};
use retrace_isa::Flow;
use retrace_timing::{CoreModel, CoreState, Resolved};

/// Cycles of one function.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FunctionCycles {
    /// Cycles of instructions inside the function.
    pub exclusive: u64,
    /// Cycles from entry to return, callees included (outermost activation
    /// only, so recursion is not counted twice).
    pub inclusive: u64,
    /// Calls into it.
    pub calls: u64,
    /// Instructions inside it.
    pub instructions: u64,
}

/// Maps a pc to a function index through sorted `(start, end)` ranges.
#[derive(Clone, Debug, Default)]
pub struct FunctionMap {
    ranges: Vec<(u64, u64, usize)>,
}

impl FunctionMap {
    /// Functions as `(start, size)`, indexed by position in `funcs`.
    pub fn new(funcs: &[(u64, u64)]) -> FunctionMap {
        let mut ranges: Vec<_> = funcs
            .iter()
            .enumerate()
            .map(|(i, &(s, n))| (s, s + n.max(1), i))
            .collect();
        ranges.sort_unstable();
        FunctionMap { ranges }
    }
    /// The function containing `pc`.
    #[inline]
    pub fn lookup(&self, pc: u64) -> Option<usize> {
        self.range(pc).map(|r| r.2)
    }

    /// The `(start, end, function)` range containing `pc`.
    fn range(&self, pc: u64) -> Option<(u64, u64, usize)> {
        let i = self.ranges.partition_point(|r| r.0 <= pc);
        let r = *self.ranges.get(i.checked_sub(1)?)?;
        (pc < r.1).then_some(r)
    }

    /// The widest `[lo, hi)` around `pc` in which every address maps to the
    /// same function as `pc` (or to none): a function's range cut at the next
    /// function's start, or the gap between two functions.
    fn segment(&self, pc: u64) -> (u64, u64, Option<usize>) {
        let i = self.ranges.partition_point(|r| r.0 <= pc);
        let next = self.ranges.get(i).map_or(u64::MAX, |r| r.0);
        match i.checked_sub(1).map(|k| self.ranges[k]) {
            Some((start, end, f)) if pc < end => (start, end.min(next), Some(f)),
            Some((_, end, _)) => (end, next, None),
            None => (0, next, None),
        }
    }
}

/// The observer of a cycle-level run.
///
/// Exclusive cycles are attributed per *segment*: a stretch of consecutive
/// instructions inside one function is charged when execution leaves it, so
/// the common step costs one range check. [`CycleObserver::per_function`] is
/// complete after [`CycleObserver::finish`].
pub struct CycleObserver {
    core: CoreState,
    funcs: FunctionMap,
    /// Per function, indexed like the `funcs` given to [`CycleObserver::new`].
    pub per_function: Vec<FunctionCycles>,
    /// Active call frames: (function, cycles at entry).
    frames: Vec<(usize, u64)>,
    active: Vec<u32>,
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
    func: Option<usize>,
    cycles: u64,
    insns: u64,
}

impl CycleObserver {
    /// A cycle-level observer for `model`, attributing to `funcs`
    /// (`(start, size)` each; may be empty).
    pub fn new(model: &CoreModel, funcs: &[(u64, u64)]) -> CycleObserver {
        CycleObserver {
            core: CoreState::new(model),
            funcs: FunctionMap::new(funcs),
            per_function: vec![FunctionCycles::default(); funcs.len()],
            frames: Vec::new(),
            active: vec![0; funcs.len()],
            // Without functions the segment covers every address, so the
            // range check never fails.
            seg: Segment {
                lo: if funcs.is_empty() { 0 } else { 1 },
                hi: if funcs.is_empty() { u64::MAX } else { 0 },
                func: None,
                cycles: 0,
                insns: 0,
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

    /// The core's state (cycles, statistics).
    pub fn core(&self) -> &CoreState {
        &self.core
    }

    /// Charge the current segment to its function and start a new one at
    /// `pc` (or, with `pc` `None`, at the end of the run).
    #[cold]
    #[inline(never)]
    fn switch_segment(&mut self, pc: Option<u64>) {
        let cycles = self.core.cycles();
        let insns = self.core.stats().instructions;
        if let Some(f) = self.seg.func {
            let pf = &mut self.per_function[f];
            pf.exclusive += cycles - self.seg.cycles;
            pf.instructions += insns - self.seg.insns;
        }
        let (lo, hi, func) = match pc {
            Some(pc) => self.funcs.segment(pc),
            None => (self.seg.lo, self.seg.hi, self.seg.func),
        };
        self.seg = Segment {
            lo,
            hi,
            func,
            cycles,
            insns,
        };
    }

    /// Charge the open segment and close every open frame (at the end of the
    /// run) so inclusive times of functions that never returned (`main`
    /// calling `exit`) are counted. Calling it again adds nothing.
    pub fn finish(&mut self) {
        if !self.per_function.is_empty() {
            self.switch_segment(None);
        }
        let now = self.core.cycles();
        while let Some((f, start)) = self.frames.pop() {
            self.leave(f, start, now);
        }
    }

    fn leave(&mut self, f: usize, start: u64, now: u64) {
        self.active[f] -= 1;
        if self.active[f] == 0 {
            self.per_function[f].inclusive += now - start;
        }
    }

    /// Calls and returns, for inclusive cycles and call counts.
    #[inline(never)]
    fn call_or_return(&mut self, flow: Flow, next_pc: u64) {
        let now = self.core.cycles();
        match flow {
            Flow::Call | Flow::IndirectCall => {
                if let Some(callee) = self.funcs.lookup(next_pc) {
                    self.per_function[callee].calls += 1;
                    self.active[callee] += 1;
                    self.frames.push((callee, now));
                }
            }
            Flow::Return => {
                if let Some((f, start)) = self.frames.pop() {
                    self.leave(f, start, now);
                }
            }
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
            self.switch_segment(Some(ev.pc));
        }
        let flow = self.core.step(ev.pc, inst, outcome);
        if matches!(flow, Flow::Call | Flow::IndirectCall | Flow::Return)
            && !self.per_function.is_empty()
        {
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
