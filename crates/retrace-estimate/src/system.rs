//! The multiprocessor replay: US patent 8,448,140's post-processing unit
//! (embodiment 7) over a multi-hart trace. Each hart's branch history is
//! replayed on a core of its own, as [`crate::estimate_trace`] replays one
//! hart; the harts meet at their synchronisation calls, whose objects —
//! channels with their capacity, mutexes and their holders, barriers and
//! their arrivals, semaphores and their counts — this module simulates
//! with the very rules the engine runs them by ([`SyncState::replay_call`]).
//!
//! The unit's steps: every runnable hart's replay advances to its next
//! synchronisation point (its next recorded call), which gives the hart's
//! clock *at the call*; of those, the call with the earliest clock happens
//! first (the lowest hart id on a tie); the objects' state and the harts'
//! run/wait states change; a hart whose call completes another's resumes
//! it, and the resumed hart's clock moves on to the completer's if that is
//! later — the difference is its wait. This is the rule of the multi-hart
//! cycle-level engine ([`retrace_sim::clocked`]), which decides at each
//! call whether the calling hart's clock still comes first; so replaying a
//! trace recorded under the clocks of the same cores gives its makespan
//! and every hart's busy and wait cycles exactly
//! (`crates/retrace-estimate/tests/system.rs`).
//!
//! Each hart's clock runs at its own frequency, which the hart may change
//! (`set_hz`, from the end of that call on): the calls are ordered by the
//! time of the harts' clocks, and a resumed hart waits until the
//! completer's time, in its own cycles ([`retrace_sim::frequency`], the
//! engine's arithmetic).
//!
//! A hart's clock is its core's cycles (busy) plus its wait. The clock at
//! a call is taken before its `ecall`: the partial program the `ecall`
//! ends is timed whole, and its prefix without the `ecall` gives the
//! earlier clock ([`Estimator::prefix_cycles`]). The `ecall` and the
//! core's trap cost count when the call completes, after any wait; since
//! a core's timing does not depend on how long it waited, they are already
//! in the replayed busy cycles.
//!
//! With data caches a hart's busy cycles include its data-cache term as
//! it goes: its memory operations so far at the miss rate the recording
//! measured for the hart's own cache. Misses fall unevenly between calls
//! in the engine, so two calls may meet in another order than there: with
//! data caches the replay is an estimate (within 1.4% of the engine's
//! makespan on the examples; `tests/system.rs`). At `fast` each hart's
//! replay runs memoised stretches between its calls ([`crate::span`]),
//! each ending before the call's own partial program, which the replay
//! times itself.
//!
//! Which hart runs which path can depend on the interleaving (a work queue
//! hands tasks to whoever asks first): the recording holds the paths of
//! the recorded schedule. Replayed on cores whose clocks order the calls
//! differently, the paths are still the recorded ones, and the result is
//! an estimate. The replay counts the calls that met their object in
//! another order than in the recording, among the calls of their kind
//! ([`SystemEstimate::reordered`]): an object's calls of one kind in the
//! recorded order return what they returned in the recording, so with 0 every hart's recorded path is the one it takes
//! under the replayed schedule, and the replay is exact (for programs whose
//! harts share data only through the API, or under its locks).

use crate::estimator::{Estimator, Fidelity};
use crate::machine::TraceHistory;
use crate::source::TraceSource;
use crate::span::{span_step, SpanStep, Spans};
use crate::walk::{Graph, Leave, ReplayError, Visit, Walker};
use retrace_program::{Addr, PpId, PpTable};
use retrace_sim::frequency::{HartClock, DEFAULT_HZ};
use retrace_sim::sync::{SyncOp, SyncState};
use retrace_timing::CoreModel;
use retrace_trace::protocol::sync::{decode, HartSync, SyncCall};
use retrace_trace::{DcacheMeasurement, StreamKind, TraceReader};

/// One hart's share of a multiprocessor replay.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HartEstimate {
    /// Instructions it executed.
    pub instructions: u64,
    /// Cycles its core spent on them.
    pub busy: u64,
    /// Cycles it waited in synchronisation calls.
    pub wait: u64,
    /// Synchronisation calls it made.
    pub calls: u64,
    /// Its time at the end, in attoseconds.
    pub time: u128,
}

impl HartEstimate {
    /// Its clock at the end: busy and waiting cycles.
    pub fn clock(&self) -> u64 {
        self.busy + self.wait
    }
}

/// Contention on one synchronisation object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceEstimate {
    /// Its handle (the descriptor's address).
    pub object: u64,
    /// What it is: channel, mutex, barrier or semaphore.
    pub kind: String,
    /// Calls made on it.
    pub calls: u64,
    /// Calls that had to wait.
    pub waits: u64,
    /// Cycles the harts waited on it in all.
    pub wait_cycles: u64,
}

/// A multiprocessor replay's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SystemEstimate {
    /// The run's length in cycles: the latest hart's clock (a measure of
    /// the run when every hart ran at one frequency).
    pub makespan: u64,
    /// The run's length in time (attoseconds): the latest hart's time.
    pub end_time: u128,
    /// Per hart.
    pub harts: Vec<HartEstimate>,
    /// Per hart, its clock's frequencies: where it started and each change
    /// (in its own cycle counter).
    pub clocks: Vec<HartClock>,
    /// Per hart whose core has a data cache: the recording's measurement
    /// of the hart's own cache of that geometry, whose miss rate the
    /// data-cache term used (`None`: not measured, and the term is 0).
    pub dcache: Vec<Option<DcacheMeasurement>>,
    /// Per object, by handle.
    pub resources: Vec<ResourceEstimate>,
    /// Synchronisation calls replayed (all harts).
    pub calls: u64,
    /// Calls that met their object in another order than in the
    /// recording, among the calls of their kind on it (the k-th receive
    /// from a channel, say, was another hart's): such a call may return
    /// something else than it did in the recorded run, so the hart's
    /// recorded path may not be the one it would take. 0 when every
    /// object saw each kind of call in the recorded order — then every
    /// call returns what it returned in the recording, and the replay is
    /// exact.
    pub reordered: u64,
    /// The first such call: its hart and its place in the run's recorded
    /// order of calls.
    pub first_reordered: Option<(usize, u64)>,
}

/// What a hart did over time, for a timeline of the estimated run
/// ([`estimate_system_timeline`]): slices of its cycle counter (busy and
/// waiting cycles, as [`SystemEstimate::clocks`] counts them), in order
/// and not overlapping.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HartTimeline {
    /// Its slices: running a function, or waiting in a call.
    pub slices: Vec<Slice>,
    /// Its synchronisation calls: the counter before the call's `ecall`,
    /// the call number and the object (0 for none).
    pub calls: Vec<(u64, u8, u64)>,
}

/// A stretch of a hart's cycle counter, `start..end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slice {
    /// First cycle.
    pub start: u64,
    /// One past the last.
    pub end: u64,
    /// What the hart did.
    pub what: Doing,
}

/// What a hart does in a [`Slice`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Doing {
    /// Runs the function of that index among the ranges given to
    /// [`estimate_system_timeline`] (code outside them: `usize::MAX`).
    Function(usize),
    /// Waits in call `op` on `object` for another hart.
    Wait {
        /// The call number.
        op: u8,
        /// The object's handle.
        object: u64,
    },
}

/// Which function each partial program the replay visits is in, and the
/// runs of one function, in busy cycles (waits are not known to the
/// estimator; [`HartTimeline`] puts them in).
struct FunctionTrack {
    /// `(entry, size)` of each function, in entry order.
    ranges: std::sync::Arc<[(u64, u64)]>,
    /// The function running since the busy cycle.
    current: Option<(usize, u64)>,
    /// `(first busy cycle, one past the last, function)`.
    runs: Vec<(u64, u64, usize)>,
}

impl FunctionTrack {
    fn function_at(&self, addr: u64) -> usize {
        let i = self.ranges.partition_point(|&(entry, _)| entry <= addr);
        match i.checked_sub(1).map(|i| (i, self.ranges[i])) {
            Some((i, (entry, size))) if addr - entry < size.max(1) => i,
            _ => usize::MAX,
        }
    }

    /// The partial program starting at `addr` runs from busy cycle `at`.
    fn enter(&mut self, addr: u64, at: u64) {
        let f = self.function_at(addr);
        match self.current {
            Some((g, _)) if g == f => {}
            Some((g, since)) => {
                if at > since {
                    self.runs.push((since, at, g));
                }
                self.current = Some((f, at));
            }
            None => self.current = Some((f, at)),
        }
    }

    /// The hart's replay ended at busy cycle `at`.
    fn finish(&mut self, at: u64) {
        if let Some((g, since)) = self.current.take() {
            if at > since {
                self.runs.push((since, at, g));
            }
        }
    }
}

/// An [`Estimator`] that also notes the clock before a given instruction
/// (the `ecall` of the next synchronisation call), which ends a partial
/// program.
struct CallTimer {
    est: Estimator,
    /// With a timeline: the functions the hart runs.
    functions: Option<FunctionTrack>,
    /// Instructions visited so far.
    done: u64,
    /// The next call's `ecall` is instruction number `at` (0-based).
    at: u64,
    /// Busy cycles before that `ecall`, once visited.
    before_call: Option<u64>,
}

impl CallTimer {
    /// Busy cycles so far: the core's, and the data-cache term of the
    /// memory operations so far at the hart's measured miss rate.
    fn busy(&self) -> u64 {
        self.est.cycles() + self.est.dcache_cycles()
    }
}

impl Visit<PpTable> for CallTimer {
    fn pp(&mut self, table: &PpTable, pp: PpId, how: Leave, next: PpId) {
        let len = table.get(pp).len;
        if self.functions.is_some() {
            let busy = self.busy();
            if let Some(f) = &mut self.functions {
                f.enter(table.get(pp).start.get(), busy);
            }
        }
        let (entry, before) = (self.est.entry_signature(pp), self.est.cycles());
        self.est.pp(table, pp, how, next);
        self.done += u64::from(len);
        if self.done == self.at + 1 {
            let prefix = match len {
                0 | 1 => 0,
                _ => self.est.prefix_cycles(table, pp, entry, len - 1),
            };
            // The `ecall` is no memory operation: the data-cache term
            // so far is the prefix's.
            self.before_call = Some(before + prefix + self.est.dcache_cycles());
        }
    }
    fn last(&mut self, table: &PpTable, pp: PpId, executed: u32) {
        let busy = self.busy();
        if let Some(f) = &mut self.functions {
            f.enter(table.get(pp).start.get(), busy);
        }
        self.est.last(table, pp, executed);
        self.done += u64::from(executed);
    }
    fn trap(&mut self, table: &PpTable, pp: PpId, executed: u32) {
        self.est.trap(table, pp, executed);
        self.done += u64::from(executed);
    }
    fn cut(&mut self, table: &PpTable, pp: PpId, executed: u32) {
        self.est.cut(table, pp, executed);
        self.done += u64::from(executed);
    }
}

/// Where a hart stands in the replay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Standing {
    /// Its replay goes on to its next call.
    Runnable,
    /// Its replay has reached its next call, which has not happened yet;
    /// its busy cycles before the `ecall`.
    AtCall(u64),
    /// Its call waits for another hart; busy cycles before the `ecall`.
    Blocked(u64),
    /// It has nothing more to replay (or it exited, or its last call
    /// never completed in the recording).
    Done,
}

struct Hart<'s, S: TraceSource + ?Sized + 's> {
    table: PpTable,
    walker: Walker<PpId>,
    /// At `fast` without a timeline: memoised stretches of the hart's
    /// replay, each ending before its next call (`crate::span`).
    spans: Option<Spans>,
    history: TraceHistory<S::Reader<'s>>,
    timer: CallTimer,
    sync: HartSync,
    next: usize,
    wait: u64,
    /// Its clock against time.
    clock: HartClock,
    standing: Standing,
    /// The replay has walked all the hart executed.
    ended: bool,
    /// The run stopped at the hart's last call, before its `ecall`
    /// retired.
    unretired: bool,
    /// With a timeline: its waits (busy cycle before the `ecall`, cycles
    /// waited, call, object) and calls.
    waits: Vec<(u64, u64, u8, u64)>,
    calls: Vec<(u64, u8, u64)>,
}

impl<S: TraceSource + ?Sized> Hart<'_, S> {
    /// One step of the replay: a memoised stretch that ends before
    /// instruction `limit` where there is one, else one partial program.
    fn step(&mut self, limit: u64) -> Result<(), ReplayError> {
        if let Some(spans) = &mut self.spans {
            let done = span_step(
                &mut self.table,
                &mut self.history,
                &mut self.timer.est,
                spans,
                &mut self.walker,
                limit,
            )?;
            match done {
                SpanStep::Moved | SpanStep::Finished => {
                    // The stretch went past the timer: it counts what the
                    // walker did.
                    self.timer.done = self.walker.stats().instructions;
                    self.ended = matches!(done, SpanStep::Finished);
                    return Ok(());
                }
                SpanStep::Nothing => {}
            }
        }
        self.ended = self
            .walker
            .step(&mut self.table, &mut self.history, &mut self.timer)?;
        Ok(())
    }

    /// Replay on to the next call, or to the end.
    fn advance(&mut self, h: usize) -> Result<(), ReplayError> {
        let Some(call) = self.sync.calls.get(self.next).copied() else {
            while !self.ended {
                self.step(u64::MAX)?;
            }
            self.standing = Standing::Done;
            return Ok(());
        };
        self.timer.at = call.at;
        self.timer.before_call = None;
        // Stretches end before the call's `ecall`: its partial program is
        // the timer's, which notes the clock before it.
        while !self.ended && self.timer.done <= call.at {
            self.step(call.at + 1)?;
        }
        let before = match self.timer.before_call {
            Some(b) => b,
            // The run stopped at this call, before its `ecall` retired
            // (the hart exited, or waited until the end).
            None if self.ended && self.timer.done == call.at => {
                self.unretired = true;
                self.timer.busy()
            }
            None => {
                return Err(ReplayError::System(format!(
                    "hart {h}'s synchronisation call #{} is recorded after {} instructions, where the replay has no `ecall` ending a partial program (it reached {}): the trace does not fit this program",
                    self.next, call.at, self.timer.done
                )))
            }
        };
        self.standing = Standing::AtCall(before);
        Ok(())
    }

    /// Its clock with `busy` cycles.
    fn clock(&self, busy: u64) -> u64 {
        busy + self.wait
    }

    /// Its time with `busy` cycles.
    fn time(&self, busy: u64) -> u128 {
        self.clock.time_at(self.clock(busy))
    }
}

/// Replay the multi-hart `trace` of the program (`table`, `entry`) with
/// hart `h` on `cores[h]` (one core for every hart when `cores` has one),
/// its clock starting at `hz[h]` hertz (likewise; [`DEFAULT_HZ`] when
/// `hz` is empty), at `fidelity`; see the module documentation.
pub fn estimate_system<S: TraceSource + ?Sized>(
    table: &PpTable,
    entry: Addr,
    trace: &S,
    cores: &[CoreModel],
    hz: &[u64],
    fidelity: Fidelity,
) -> Result<SystemEstimate, ReplayError> {
    replay_system(table, entry, trace, cores, hz, fidelity, None).map(|(e, _)| e)
}

/// [`estimate_system`], and with `functions` (`(entry, size)` of each, in
/// entry order) what each hart did when: the functions it ran and its
/// waits, in its cycle counter (no timelines without `functions`).
pub fn estimate_system_timeline<S: TraceSource + ?Sized>(
    table: &PpTable,
    entry: Addr,
    trace: &S,
    cores: &[CoreModel],
    hz: &[u64],
    fidelity: Fidelity,
    functions: Option<&[(u64, u64)]>,
) -> Result<(SystemEstimate, Vec<HartTimeline>), ReplayError> {
    replay_system(table, entry, trace, cores, hz, fidelity, functions)
}

fn replay_system<S: TraceSource + ?Sized>(
    table: &PpTable,
    entry: Addr,
    trace: &S,
    cores: &[CoreModel],
    hz: &[u64],
    fidelity: Fidelity,
    functions: Option<&[(u64, u64)]>,
) -> Result<(SystemEstimate, Vec<HartTimeline>), ReplayError> {
    let ranges: Option<std::sync::Arc<[(u64, u64)]>> = functions.map(Into::into);
    let reader = TraceReader::new(trace.open()?)?;
    let n = usize::from(reader.header().harts);
    if n < 2 {
        return Err(ReplayError::System(
            "the trace holds one hart: replay it with `retrace estimate` one core at a time".into(),
        ));
    }
    if cores.len() != 1 && cores.len() != n {
        return Err(ReplayError::System(format!(
            "{} cores for a trace of {n} harts: give one core for all harts or one per hart",
            cores.len()
        )));
    }
    if hz.len() > 1 && hz.len() != n {
        return Err(ReplayError::System(format!(
            "{} frequencies for a trace of {n} harts: give one for all harts or one per hart",
            hz.len()
        )));
    }
    let (items, _) = reader.collect_records(StreamKind::Sync)?;
    let mut harts = Vec::with_capacity(n);
    let mut dcache = Vec::with_capacity(n);
    for (h, items) in items.iter().enumerate() {
        let sync = decode(h as u16, items)?;
        let reader = TraceReader::new(trace.open()?)?.follow_hart(h as u16)?;
        let core = &cores[if cores.len() == 1 { 0 } else { h }];
        let measured = core.dcache.as_ref().and_then(|dc| {
            sync.dcache
                .iter()
                .find(|m| (m.size, m.ways, m.line) == (dc.size, dc.ways, dc.line))
                .copied()
        });
        dcache.push(measured);
        let mut table = table.clone();
        let start = table.resolve(entry.get())?;
        harts.push(Hart::<S> {
            table,
            walker: Walker::new(start, sync.instructions),
            spans: (fidelity == Fidelity::Fast && functions.is_none()).then(Spans::default),
            history: TraceHistory::new(reader, h as u16),
            timer: CallTimer {
                est: Estimator::new(core, fidelity, measured.map_or(0.0, |m| m.miss_rate())),
                functions: ranges.as_ref().map(|r| FunctionTrack {
                    ranges: r.clone(),
                    current: None,
                    runs: Vec::new(),
                }),
                done: 0,
                at: u64::MAX,
                before_call: None,
            },
            sync,
            next: 0,
            wait: 0,
            clock: HartClock::new(hz.get(h).or(hz.first()).copied().unwrap_or(DEFAULT_HZ)),
            standing: Standing::Runnable,
            ended: false,
            unretired: false,
            waits: Vec::new(),
            calls: Vec::new(),
        });
    }
    let mut objects = SyncState::new(n);
    let mut resources: Vec<ResourceEstimate> = Vec::new();
    // The object each blocked hart waits on (an index into `resources`).
    let mut waiting_on: Vec<Option<usize>> = vec![None; n];
    let (mut calls, mut reordered, mut first_reordered) = (0u64, 0u64, None);
    // Per object and call, the calls' places in the recorded order, sorted:
    // the order in which the recorded run made them. What a call returns
    // depends on the calls of its kind on its object before it — a receive
    // gets the word of the send of its own rank, whoever sent it and
    // whenever; the k-th lock is the k-th to hold the mutex; the last
    // arrival at a barrier gets 1 — not on how sends and receives
    // interleave.
    let mut recorded: rustc_hash::FxHashMap<(u64, u8), (Vec<u64>, usize)> = Default::default();
    for hart in &harts {
        for c in &hart.sync.calls {
            if let Some((object, _)) = c.object {
                recorded.entry((object, c.op)).or_default().0.push(c.seq);
            }
        }
    }
    recorded
        .values_mut()
        .for_each(|(seqs, _)| seqs.sort_unstable());
    let (mut counts, mut clocks, mut timelines) = (Vec::new(), Vec::new(), Vec::new());
    loop {
        for (h, hart) in harts.iter_mut().enumerate() {
            if hart.standing == Standing::Runnable {
                hart.advance(h)?;
            }
        }
        // The call with the earliest time, the lowest hart on a tie.
        let Some((_, h)) = harts
            .iter()
            .enumerate()
            .filter_map(|(h, x)| match x.standing {
                Standing::AtCall(b) => Some((x.time(b), h)),
                _ => None,
            })
            .min()
        else {
            break;
        };
        let Standing::AtCall(before) = harts[h].standing else {
            unreachable!("chosen among the harts at a call")
        };
        let call: SyncCall = harts[h].sync.calls[harts[h].next];
        harts[h].next += 1;
        if let Some((seqs, next)) = call
            .object
            .and_then(|(o, _)| recorded.get_mut(&(o, call.op)))
        {
            if seqs.get(*next) != Some(&call.seq) {
                reordered += 1;
                first_reordered.get_or_insert((h, call.seq));
            }
            *next += 1;
        }
        calls += 1;
        let op = SyncOp(call.op);
        let (object, param) = call.object.unwrap_or((0, 0));
        if ranges.is_some() {
            let at = harts[h].clock(before);
            harts[h].calls.push((at, call.op, object));
        }
        let (done, woken) = objects.replay_call(h, op, object, param, call.value).map_err(|e| {
            ReplayError::System(format!(
                "hart {h}'s synchronisation call #{} does not fit the others' ({e}): the trace is damaged; record it again",
                harts[h].next - 1
            ))
        })?;
        let r = call.object.map(|_| resource(&mut resources, object, op));
        if let Some(r) = r {
            resources[r].calls += 1;
        }
        // The completer's clock: its `ecall` and trap are in its busy
        // cycles by now (see the module documentation).
        let busy = harts[h].timer.busy();
        let now = harts[h].clock(busy);
        if op == SyncOp::SET_HZ && done {
            harts[h].clock.set_hz(now, call.value);
        }
        let now_time = harts[h].time(busy);
        harts[h].standing = if done && !harts[h].ended {
            Standing::Runnable
        } else if done || op == SyncOp::HART_EXIT {
            Standing::Done
        } else {
            if let Some(r) = r {
                resources[r].waits += 1;
            }
            waiting_on[h] = r;
            Standing::Blocked(before)
        };
        for w in woken {
            let Standing::Blocked(b) = harts[w].standing else {
                return Err(ReplayError::System(format!(
                    "hart {w} is resumed by hart {h}'s call but does not wait: the trace is damaged"
                )));
            };
            let then = harts[w].clock.counter_reaching(now_time);
            let waited = then.saturating_sub(harts[w].clock(b));
            if ranges.is_some() && waited > 0 {
                let (op, object) = harts[w]
                    .calls
                    .last()
                    .map_or((0, 0), |&(_, op, object)| (op, object));
                harts[w].waits.push((b, waited, op, object));
            }
            harts[w].wait += waited;
            if let Some(r) = waiting_on[w].take() {
                resources[r].wait_cycles += waited;
            }
            harts[w].standing = if harts[w].ended {
                Standing::Done
            } else {
                Standing::Runnable
            };
        }
    }
    // Harts still waiting: in the recording their calls completed (their
    // replays go on past them), so the events do not pair up.
    let stuck: Vec<usize> = (0..n)
        .filter(|&h| matches!(harts[h].standing, Standing::Blocked(_)) && !harts[h].ended)
        .collect();
    if !stuck.is_empty() {
        return Err(ReplayError::System(format!(
            "the synchronisation events do not pair up: {} — no recorded call completes {}; the trace is damaged or incomplete (record it again)",
            objects.deadlock(),
            if stuck.len() == 1 { "it" } else { "them" }
        )));
    }
    for (h, mut hart) in harts.into_iter().enumerate() {
        let stats = hart.walker.stats();
        if hart.next != hart.sync.calls.len() {
            return Err(ReplayError::System(format!(
                "hart {h}'s replay ended after {} of its {} recorded synchronisation calls: the trace does not fit this program",
                hart.next,
                hart.sync.calls.len()
            )));
        }
        if stats.last_pc != hart.sync.last_pc {
            return Err(ReplayError::Totals {
                what: format!(
                    "hart {h}'s recorded run ended at pc {:#x}, its replay after {} instructions at {:#x}",
                    hart.sync.last_pc, stats.instructions, stats.last_pc
                ),
            });
        }
        let busy = hart.timer.busy();
        let time = hart.time(busy);
        if let Some(mut f) = hart.timer.functions.take() {
            f.finish(busy);
            timelines.push(HartTimeline {
                slices: slices(&f.runs, &hart.waits),
                calls: std::mem::take(&mut hart.calls),
            });
        }
        let mut reader = hart.history.into_reader();
        if hart.unretired {
            skip_unretired_completion(&mut reader, h as u16)?;
        }
        reader.finish()?;
        counts.push(HartEstimate {
            instructions: hart.timer.est.estimate().instructions,
            busy,
            wait: hart.wait,
            calls: hart.next as u64,
            time,
        });
        clocks.push(hart.clock);
    }
    resources.sort_by_key(|r| r.object);
    let estimate = SystemEstimate {
        makespan: counts.iter().map(HartEstimate::clock).max().unwrap_or(0),
        end_time: counts.iter().map(|h| h.time).max().unwrap_or(0),
        harts: counts,
        clocks,
        dcache,
        resources,
        calls,
        reordered,
        first_reordered,
    };
    Ok((estimate, timelines))
}

/// A hart's slices in its cycle counter: its function `runs` in busy
/// cycles, cut where it waited (`waits`: busy cycle, cycles waited, call,
/// object) and moved on by the waits before them.
fn slices(runs: &[(u64, u64, usize)], waits: &[(u64, u64, u8, u64)]) -> Vec<Slice> {
    let mut out = Vec::with_capacity(runs.len() + 2 * waits.len());
    let (mut next, mut offset) = (0, 0u64);
    let wait = |out: &mut Vec<Slice>,
                offset: &mut u64,
                &(at, waited, op, object): &(u64, u64, u8, u64)| {
        out.push(Slice {
            start: at + *offset,
            end: at + *offset + waited,
            what: Doing::Wait { op, object },
        });
        *offset += waited;
    };
    for &(mut start, end, f) in runs {
        // Waits at or before the run's start come before it; waits inside
        // it cut it.
        while let Some(w) = waits.get(next).filter(|w| w.0 < end) {
            if w.0 > start {
                out.push(Slice {
                    start: start + offset,
                    end: w.0 + offset,
                    what: Doing::Function(f),
                });
                start = w.0;
            }
            wait(&mut out, &mut offset, w);
            next += 1;
        }
        out.push(Slice {
            start: start + offset,
            end: end + offset,
            what: Doing::Function(f),
        });
    }
    for w in &waits[next..] {
        wait(&mut out, &mut offset, w);
    }
    out
}

/// A call that another hart completed just before the run stopped, its
/// `ecall` not yet retired, was recorded as completed: its indirect record
/// (on to the next instruction) is there, though the replay, which stops
/// where the hart stopped, never reads it. Read it past the end: the
/// protocol's indirect event, a varint k ≥ 1 or 0 and an address.
fn skip_unretired_completion<R: std::io::Read>(
    reader: &mut TraceReader<R>,
    hart: u16,
) -> Result<(), ReplayError> {
    if reader.has_records(hart, StreamKind::Indirect)?
        && reader.next_record(hart, StreamKind::Indirect)? == Some(0)
    {
        reader.next_record(hart, StreamKind::Indirect)?;
    }
    Ok(())
}

/// The index of `object`'s entry in `resources`, made on its first call.
fn resource(resources: &mut Vec<ResourceEstimate>, object: u64, op: SyncOp) -> usize {
    if let Some(i) = resources.iter().position(|r| r.object == object) {
        return i;
    }
    resources.push(ResourceEstimate {
        object,
        kind: op.object_kind().map_or("object".into(), |k| k.to_string()),
        calls: 0,
        waits: 0,
        wait_cycles: 0,
    });
    resources.len() - 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_cut_the_function_runs_and_move_what_follows() {
        // f0 for busy 0..10, f1 for 10..30; waits of 5 at busy 4 (inside
        // f0), 7 at 10 (between the runs) and 2 at 30 (at the end).
        let runs = [(0, 10, 0), (10, 30, 1)];
        let waits = [(4, 5, 3, 0x10), (10, 7, 3, 0x10), (30, 2, 4, 0x20)];
        let got: Vec<(u64, u64, Doing)> = slices(&runs, &waits)
            .iter()
            .map(|s| (s.start, s.end, s.what))
            .collect();
        let wait = |op, object| Doing::Wait { op, object };
        assert_eq!(
            got,
            [
                (0, 4, Doing::Function(0)),
                (4, 9, wait(3, 0x10)),
                (9, 15, Doing::Function(0)),
                (15, 22, wait(3, 0x10)),
                (22, 42, Doing::Function(1)),
                (42, 44, wait(4, 0x20)),
            ]
        );
    }
}
