//! The cycle-level engine: the functional engine with an observer that
//! feeds every retired instruction to a [`retrace_timing::CoreState`] — the
//! same timing rules the replay uses — and attributes cycles to functions.

use crate::observer::{Observer, Retired};
use retrace_isa::Flow;
use retrace_timing::{CoreModel, CoreState, Outcome};

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
}

/// The observer of a cycle-level run.
pub struct CycleObserver {
    core: CoreState,
    funcs: FunctionMap,
    /// Per function, indexed like the `funcs` given to [`CycleObserver::new`].
    pub per_function: Vec<FunctionCycles>,
    /// Active call frames: (function, cycles at entry).
    frames: Vec<(usize, u64)>,
    active: Vec<u32>,
    /// Memo of the last lookup: pcs mostly stay in one function.
    last: (u64, u64, Option<usize>),
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
            last: (1, 0, None),
        }
    }

    /// The core's state (cycles, statistics).
    pub fn core(&self) -> &CoreState {
        &self.core
    }

    #[inline]
    fn function_of(&mut self, pc: u64) -> Option<usize> {
        if pc >= self.last.0 && pc < self.last.1 {
            return self.last.2;
        }
        let r = self.funcs.range(pc);
        self.last = match r {
            Some((start, end, f)) => (start, end, Some(f)),
            None => (1, 0, None),
        };
        self.last.2
    }

    /// Close every open frame (at the end of the run) so inclusive times of
    /// functions that never returned (`main` calling `exit`) are counted.
    pub fn finish(&mut self) {
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
}

impl Observer for CycleObserver {
    #[inline]
    fn retire(&mut self, ev: &Retired<'_>) {
        let inst = ev.inst;
        let flow = inst.flow();
        let outcome = Outcome {
            next_pc: ev.next_pc,
            taken: flow == Flow::CondBranch && ev.next_pc != inst.fallthrough(ev.pc),
            mem_addr: ev.mem_addr.unwrap_or(0),
        };
        let before = self.core.cycles();
        self.core.step(ev.pc, inst, outcome);
        let now = self.core.cycles();
        if self.per_function.is_empty() {
            return;
        }
        if let Some(f) = self.function_of(ev.pc) {
            let pf = &mut self.per_function[f];
            pf.exclusive += now - before;
            pf.instructions += 1;
        }
        match flow {
            Flow::Call | Flow::IndirectCall => {
                if let Some(callee) = self.function_of(ev.next_pc) {
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
    let mut obs = CycleObserver::new(model, funcs);
    let run = machine.run(max_insns, &mut obs);
    obs.finish();
    Ok((run, obs))
}
