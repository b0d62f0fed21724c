//! The cycle-level engine for several harts: one core per hart, each with
//! its own clock, and the harts run in the order of their clocks.
//!
//! This is the ground truth the multiprocessor replay of US patent
//! 8,448,140 (embodiment 7) is to be checked against, and it works the way
//! that replay does: the hart with the earliest clock is the one to
//! advance (lowest id on a tie); it runs while its clock and id, compared
//! as a pair, stay below the next earliest hart's, or until it makes a
//! synchronisation call. The test is made at the start of each block the
//! engine runs and again at every call, before the call happens, so calls
//! happen in the order of the harts' clocks at the calls (the lowest id
//! first on a tie) — whatever the engine's blocks are, which lets a replay
//! that knows nothing of them (`retrace-estimate`'s `system`) put the
//! calls in the very same order. A hart that blocks in a call does not
//! run; when another hart completes its call, its clock moves on to the
//! completing hart's clock if that is later, and the difference counts as
//! the blocked hart's *wait cycles*. A hart's clock is its core's cycles
//! (busy) plus its wait cycles.
//!
//! Every `ecall` of the API pays the core's trap cost, as on one hart
//! ([`crate::cycle::CycleObserver`]): a call done at once just after it
//! retires, a call that blocked when it retires after the wait.
//!
//! The order of the harts' turns differs from the functional engine's
//! fixed turns, so a program whose result depends on the interleaving may
//! take another path here; programs that synchronise properly print the
//! same.

use crate::cycle::CycleObserver;
use crate::observer::{HartId, Observer, Retired, TrapEvent};
use crate::sync::{SyncEvent, SyncOutcome};
use crate::{Machine, RunResult, StopReason};
use retrace_isa::{Flow, Inst, Op};
use retrace_timing::CoreModel;

/// One hart's time in a run of [`run_by_clock`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HartTime {
    /// Cycles its core spent on its instructions (the core's own count).
    pub busy: u64,
    /// Cycles it spent blocked in synchronisation calls, waiting for other
    /// harts.
    pub wait: u64,
    /// Instructions its core retired.
    pub instructions: u64,
}

impl HartTime {
    /// Its clock: busy and waiting cycles.
    pub fn clock(&self) -> u64 {
        self.busy + self.wait
    }
}

/// The observer of a multi-hart cycle-level run: a core per hart, and the
/// state of the turn in progress.
pub struct ClockedHarts {
    cores: Vec<CycleObserver>,
    wait: Vec<u64>,
    /// Harts whose blocked call completed: it pays the trap when its
    /// `ecall` retires.
    resumed: Vec<bool>,
    /// The hart whose turn it is, and the (clock, hart) pair its own must
    /// stay below: the next earliest runnable hart's.
    current: HartId,
    until: (u64, HartId),
    /// The turn's hart made a synchronisation call: the turn is over.
    synced: bool,
}

impl ClockedHarts {
    /// `harts` cores of `model`, attributing cycles to `funcs` (`(start,
    /// size)` each; may be empty).
    pub fn new(model: &CoreModel, funcs: &[(u64, u64)], harts: usize) -> ClockedHarts {
        ClockedHarts::heterogeneous(&vec![model; harts], funcs)
    }

    /// One core per hart, of the model given for it (hart `h` on
    /// `models[h]`): a heterogeneous system.
    pub fn heterogeneous(models: &[&CoreModel], funcs: &[(u64, u64)]) -> ClockedHarts {
        let harts = models.len();
        ClockedHarts {
            cores: models
                .iter()
                .map(|m| CycleObserver::new(m, funcs))
                .collect(),
            wait: vec![0; harts],
            resumed: vec![false; harts],
            current: 0,
            until: (u64::MAX, HartId::MAX),
            synced: false,
        }
    }

    /// Let each core read the program's code where its timing needs it
    /// ([`CycleObserver::reading_code`]).
    pub fn reading_code(mut self, elf: &retrace_program::Elf) -> ClockedHarts {
        self.cores = self
            .cores
            .into_iter()
            .map(|c| c.reading_code(elf))
            .collect();
        self
    }

    /// Hart `h`'s clock.
    pub fn clock(&self, h: HartId) -> u64 {
        self.cores[h].core().cycles() + self.wait[h]
    }

    /// Each hart's time.
    pub fn times(&self) -> Vec<HartTime> {
        self.cores
            .iter()
            .zip(&self.wait)
            .map(|(c, &wait)| HartTime {
                busy: c.core().cycles(),
                wait,
                instructions: c.core().stats().instructions,
            })
            .collect()
    }

    /// The run's length: the latest hart's clock.
    pub fn makespan(&self) -> u64 {
        (0..self.cores.len())
            .map(|h| self.clock(h))
            .max()
            .unwrap_or(0)
    }

    /// Hart `h`'s core (statistics, per-function cycles).
    pub fn core(&self, h: HartId) -> &CycleObserver {
        &self.cores[h]
    }
}

impl Observer for ClockedHarts {
    #[inline(always)]
    fn retire(&mut self, ev: &Retired<'_>) {
        self.cores[ev.hart].retire(ev);
        if self.resumed[ev.hart] && ev.inst.op == Op::Ecall {
            self.resumed[ev.hart] = false;
            self.cores[ev.hart].charge_trap();
        }
    }

    #[inline(always)]
    fn branch(&mut self, hart: HartId, pc: u64, inst: &Inst, taken: bool, target: u64) {
        self.cores[hart].branch(hart, pc, inst, taken, target);
    }

    #[inline(always)]
    fn jump(&mut self, hart: HartId, pc: u64, inst: &Inst, flow: Flow, target: u64) {
        self.cores[hart].jump(hart, pc, inst, flow, target);
    }

    fn trap(&mut self, ev: &TrapEvent) {
        self.cores[ev.hart].trap(ev);
    }

    fn sync(&mut self, ev: &SyncEvent) {
        let h = ev.hart;
        match ev.outcome {
            SyncOutcome::Resumed { by } => {
                // The call completes at the completing hart's time, or at
                // once if this hart's own clock is later still.
                let (now, then) = (self.clock(h), self.clock(by));
                self.wait[h] += then.saturating_sub(now);
                self.resumed[h] = true;
            }
            _ => {
                self.cores[h].sync(ev);
                self.synced = true;
            }
        }
    }

    #[inline(always)]
    fn keep_going(&mut self) -> bool {
        !self.synced && (self.clock(self.current), self.current) < self.until
    }
}

/// Of `(clock, hart)` pairs: the hart with the earliest clock (the
/// lowest id on a tie), and the least pair among the others.
fn earliest(
    clocks: impl Iterator<Item = (u64, HartId)>,
) -> Option<(HartId, Option<(u64, HartId)>)> {
    let mut first: Option<(u64, HartId)> = None;
    let mut rest: Option<(u64, HartId)> = None;
    for c in clocks {
        let later = match first {
            Some(f) if f <= c => c,
            _ => match first.replace(c) {
                Some(f) => f,
                None => continue,
            },
        };
        rest = Some(rest.map_or(later, |r| r.min(later)));
    }
    first.map(|(_, h)| (h, rest))
}

/// Run `machine` with each hart timed on its own core of `obs`, the harts
/// scheduled by their clocks (the module's rule), until the program stops
/// or `max_insns` instructions have retired over all harts.
pub fn run_by_clock(
    machine: &mut Machine,
    max_insns: Option<u64>,
    obs: &mut ClockedHarts,
) -> RunResult {
    run_by_clock_watched(machine, max_insns, obs, &mut ())
}

/// [`run_by_clock`] while `watcher` observes the same run: a recorder, to
/// record the harts in the order of the clocks of `obs`'s cores
/// (`retrace record --harts N --schedule-core C`).
pub fn run_by_clock_watched<O: Observer>(
    machine: &mut Machine,
    max_insns: Option<u64>,
    obs: &mut ClockedHarts,
    watcher: &mut O,
) -> RunResult {
    let limit = max_insns.unwrap_or(u64::MAX);
    let mut left = limit;
    let n = machine.harts.len().min(obs.cores.len());
    let stop = loop {
        if left == 0 {
            break StopReason::Runaway { limit };
        }
        let runnable = (0..n)
            .filter(|&h| machine.hart_state(h) == crate::HartState::Runnable)
            .map(|h| (obs.clock(h), h));
        let Some((h, next)) = earliest(runnable) else {
            break StopReason::Deadlock(machine.deadlock());
        };
        obs.current = h;
        obs.until = next.unwrap_or((u64::MAX, HartId::MAX));
        obs.synced = false;
        let work = |m: &Machine| m.harts[h].stats.instructions + m.harts[h].stats.idle_traps;
        let before = work(machine);
        let stop = machine.run_hart_for(h, left, &mut (&mut *obs, &mut *watcher));
        left = left.saturating_sub(work(machine) - before);
        match stop {
            // The turn is over (a synchronisation call, or the clock).
            Some(StopReason::Observer) | None => {}
            Some(stop) => break stop,
        }
    };
    obs.cores.iter_mut().for_each(CycleObserver::finish);
    machine.end_run(stop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_earliest_clock_goes_first_and_the_lowest_id_on_a_tie() {
        let clocks = [(5u64, 0usize), (3, 1), (3, 2), (9, 3)];
        assert_eq!(earliest(clocks.into_iter()), Some((1, Some((3, 2)))));
        assert_eq!(earliest([(7, 4)].into_iter()), Some((4, None)));
        assert_eq!(
            earliest([(1, 0), (2, 1)].into_iter()),
            Some((0, Some((2, 1))))
        );
        assert_eq!(earliest(std::iter::empty()), None);
    }
}
