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
//! Each hart's clock runs at a frequency of its own, which the hart may
//! change (`set_hz`, [`crate::frequency`]): clocks are compared in time,
//! and a hart that waits for another waits until the other's time, in as
//! many of its own cycles as reach it. With one frequency for all harts,
//! as by default, time and cycles order the harts alike.
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
use crate::frequency::{HartClock, DEFAULT_HZ};
use crate::observer::{HartId, Observer, Retired, TrapEvent};
use crate::sync::{SyncEvent, SyncOp, SyncOutcome};
use crate::{Machine, RunResult, StopReason};
use retrace_isa::{Flow, Inst, Op};
use retrace_timing::CoreModel;

/// What schedules the harts of a run by clocks: a core per hart
/// (`cores[h]`) and the frequency each hart's clock starts at (`hz[h]`;
/// one entry for all harts, or none for [`DEFAULT_HZ`]).
#[derive(Clone, Copy, Debug)]
pub struct Schedule<'a> {
    /// Hart `h`'s core.
    pub cores: &'a [&'a CoreModel],
    /// The harts' starting frequencies, in hertz.
    pub hz: &'a [u64],
}

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
    /// Its time at the end, in attoseconds ([`crate::frequency`]).
    pub time: u128,
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
    /// Each hart's clock against time.
    clocks: Vec<HartClock>,
    /// Harts whose blocked call completed: it pays the trap when its
    /// `ecall` retires.
    resumed: Vec<bool>,
    /// The hart whose turn it is, and the clock it must stay below: the
    /// first of its own counter values that is not earlier than the next
    /// earliest runnable hart's time (with the lower id first on a tie).
    current: HartId,
    until: u64,
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
            clocks: vec![HartClock::new(DEFAULT_HZ); harts],
            resumed: vec![false; harts],
            current: 0,
            until: u64::MAX,
            synced: false,
        }
    }

    /// Hart `h`'s clock starts at `hz[h]` hertz (every hart's at `hz[0]`
    /// when `hz` has one entry; [`DEFAULT_HZ`] when it has none).
    pub fn at_frequencies(mut self, hz: &[u64]) -> ClockedHarts {
        for (h, clock) in self.clocks.iter_mut().enumerate() {
            let hz = hz.get(h).or(hz.first()).copied().unwrap_or(DEFAULT_HZ);
            *clock = HartClock::new(hz);
        }
        self
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

    /// Hart `h`'s time now, in attoseconds.
    pub fn time(&self, h: HartId) -> u128 {
        self.clocks[h].time_at(self.clock(h))
    }

    /// Hart `h`'s clock against time: its frequencies and their changes.
    pub fn hart_clock(&self, h: HartId) -> &HartClock {
        &self.clocks[h]
    }

    /// Each hart's time.
    pub fn times(&self) -> Vec<HartTime> {
        (0..self.cores.len())
            .map(|h| HartTime {
                busy: self.cores[h].core().cycles(),
                wait: self.wait[h],
                instructions: self.cores[h].core().stats().instructions,
                time: self.time(h),
            })
            .collect()
    }

    /// The run's length in cycles: the latest hart's clock (a measure of
    /// the run when every hart ran at one frequency).
    pub fn makespan(&self) -> u64 {
        (0..self.cores.len())
            .map(|h| self.clock(h))
            .max()
            .unwrap_or(0)
    }

    /// The run's length in time (attoseconds): the latest hart's time.
    pub fn end_time(&self) -> u128 {
        (0..self.cores.len())
            .map(|h| self.time(h))
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
                // The call completes at the completing hart's time (the
                // first of this hart's cycles to reach it), or at once if
                // this hart's own clock is later still.
                let then = self.clocks[h].counter_reaching(self.time(by));
                self.wait[h] += then.saturating_sub(self.clock(h));
                self.resumed[h] = true;
            }
            _ => {
                self.cores[h].sync(ev);
                if ev.op == SyncOp::SET_HZ && ev.outcome == SyncOutcome::Done {
                    // From the end of the call on (its `ecall` and trap at
                    // the old frequency).
                    let now = self.clock(h);
                    self.clocks[h].set_hz(now, ev.value);
                }
                self.synced = true;
            }
        }
    }

    #[inline(always)]
    fn keep_going(&mut self) -> bool {
        !self.synced && self.clock(self.current) < self.until
    }
}

/// Of `(time, hart)` pairs: the hart with the earliest time (the lowest
/// id on a tie), and the least pair among the others.
fn earliest(
    clocks: impl Iterator<Item = (u128, HartId)>,
) -> Option<(HartId, Option<(u128, HartId)>)> {
    let mut first: Option<(u128, HartId)> = None;
    let mut rest: Option<(u128, HartId)> = None;
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
            .map(|h| (obs.time(h), h));
        let Some((h, next)) = earliest(runnable) else {
            break StopReason::Deadlock(machine.deadlock());
        };
        obs.current = h;
        // The hart goes on while its (time, id) stays below the next's:
        // up to its first cycle at the next's time, or just past it if its
        // id is the lower.
        obs.until = next.map_or(u64::MAX, |(time, other)| {
            obs.clocks[h].counter_reaching(time + u128::from(h < other))
        });
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
        let clocks = [(5u128, 0usize), (3, 1), (3, 2), (9, 3)];
        assert_eq!(earliest(clocks.into_iter()), Some((1, Some((3, 2)))));
        assert_eq!(earliest([(7, 4)].into_iter()), Some((4, None)));
        assert_eq!(
            earliest([(1, 0), (2, 1)].into_iter()),
            Some((0, Some((2, 1))))
        );
        assert_eq!(earliest(std::iter::empty()), None);
    }
}
