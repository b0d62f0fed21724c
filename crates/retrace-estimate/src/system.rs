//! The multiprocessor replay: US patent 8,448,140's post-processing unit
//! (embodiment 7) over a multi-hart trace. Each hart's branch history is
//! replayed on a core of its own, as [`crate::estimate_trace`] replays one
//! hart; the harts meet at their synchronisation calls, whose objects —
//! channels with their capacity, mutexes and their holders, barriers and
//! their arrivals, semaphores and their counts — this module simulates
//! with the very rules the engine runs them by: over flat states
//! ([`objects`]) for the calls a sound recording makes, and by the
//! engine's own ([`SyncState::replay_numbered_call_into`]) wherever those
//! give up.
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
//! It does so in two phases. A hart's busy cycles at each of its calls
//! do not depend on how the harts interleave (its core's state is its
//! own, a wait stops its clock and not its pipeline): so first each
//! hart's history is replayed whole, on its own ([`hart`]), and each of
//! its recorded calls ([`calls`]: decoded once into flat records) gets
//! its busy cycles before the `ecall` and what the `ecall` and the trap
//! take; then the unit orders the calls over those records alone, a few
//! integers per call. The harts' replays run on a thread per CPU, each
//! taking the next hart left until none is (the harts' shares of the work
//! differ); a thread's harts on one core replay one after the other with
//! one memo, and memoised stretches run across calls. The result does not
//! depend on how the harts are shared out. What the replays leave behind
//! (their memos, the decompressed trace) is freed on another thread while
//! the unit runs.
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
//! makespan on the examples; `tests/system.rs`).
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

mod calls;
mod hart;
mod objects;

use crate::estimator::Fidelity;
use crate::source::TraceSource;
use crate::walk::ReplayError;
use calls::{decode_hart, number, ranks, Call, Cursor, HartCalls, Numbers, Places, NONE};
use hart::{replay_hart, HartRun, Shared};
use objects::{Flat, Objects};
use retrace_program::{Addr, PpTable};
use retrace_sim::frequency::{HartClock, DEFAULT_HZ};
use retrace_sim::sync::{SyncOp, SyncState};
use retrace_timing::CoreModel;
use retrace_trace::{DcacheMeasurement, SegmentCache, StreamKind, TraceReader};

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

/// Decompressed bytes of the trace kept for the harts' readers at most
/// ([`SegmentCache`]): beyond that, each hart's reader decompresses the
/// rest itself.
const SEGMENT_CACHE_BYTES: usize = 1 << 28;

/// "Not at a call" in the unit's table of the harts' call times.
const NOT_AT_CALL: u128 = u128::MAX;

/// The time of each hart's next call, or [`NOT_AT_CALL`]: what the unit
/// looks through for the earliest call, once per call. When cycles order
/// the harts (every time is a clock, below 2^64 as the clocks' sums are),
/// the times are kept as 64-bit integers, which halves that search.
struct Times {
    wide: Vec<u128>,
    narrow: Vec<u64>,
}

impl Times {
    fn new(by_cycles: bool, n: usize) -> Times {
        match by_cycles {
            true => Times {
                wide: Vec::new(),
                narrow: vec![u64::MAX; n],
            },
            false => Times {
                wide: vec![NOT_AT_CALL; n],
                narrow: Vec::new(),
            },
        }
    }

    #[inline(always)]
    fn set<const BY_CYCLES: bool>(&mut self, h: usize, t: u128) {
        match BY_CYCLES {
            true => self.narrow[h] = u64::try_from(t).unwrap_or(u64::MAX),
            false => self.wide[h] = t,
        }
    }

    /// The hart whose call comes first, the lowest on a tie.
    #[inline(always)]
    fn earliest<const BY_CYCLES: bool>(&self) -> Option<usize> {
        fn first<T: Copy + Ord>(times: &[T], none: T) -> Option<usize> {
            let (mut h, mut earliest) = (usize::MAX, none);
            for (i, &t) in times.iter().enumerate() {
                if t < earliest {
                    (h, earliest) = (i, t);
                }
            }
            (h != usize::MAX).then_some(h)
        }
        match BY_CYCLES {
            true => first(&self.narrow, u64::MAX),
            false => first(&self.wide, NOT_AT_CALL),
        }
    }
}

/// What the unit needs of a hart's class of calls, found once: one load
/// per call instead of a chain of them.
#[derive(Clone, Copy)]
struct ClassInfo {
    /// The run's number of the class.
    class: u32,
    /// Its object's number (or [`NONE`]) and the call.
    object: u32,
    op: SyncOp,
    /// The number its object's state is found by.
    number: u32,
    /// The object's handle and the descriptor's parameter (0 for none).
    handle: u64,
    param: u32,
}

/// Where a hart stands in the unit's run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Standing {
    /// It has reached its next call, which has not happened yet.
    AtCall,
    /// Its call waits for another hart; busy cycles before the `ecall`.
    Blocked(u64),
    /// It has nothing more to do (or it exited, or its last call never
    /// completed in the recording).
    Done,
}

/// One hart in the unit's run: its calls, where its replay ended, its
/// clock.
struct Hart<'a> {
    calls: &'a HartCalls,
    /// Its calls' records ([`HartCalls::calls`]), and where the unit's
    /// reading of them stands: at its next call, once reached.
    records: &'a [Call],
    cursor: Cursor,
    /// The call by which its replay had ended ([`HartRun::last`];
    /// `usize::MAX`: none).
    last: usize,
    /// The values of its `set_hz` calls, in order, and how many it made.
    values: &'a [u64],
    set_hz: usize,
    /// Its own classes, as the run numbers them.
    classes: Vec<ClassInfo>,
    run: &'a HartRun,
    /// Its next call.
    next: usize,
    wait: u64,
    /// Its clock against time.
    clock: HartClock,
    standing: Standing,
    /// With a timeline: its waits (busy cycle before the `ecall`, cycles
    /// waited, call, object) and calls.
    waits: Vec<(u64, u64, u8, u64)>,
    timeline_calls: Vec<(u64, u8, u64)>,
}

impl Hart<'_> {
    /// Its clock with `busy` cycles.
    fn clock(&self, busy: u64) -> u64 {
        busy + self.wait
    }

    /// Its time with `busy` cycles, as the unit compares harts: in
    /// attoseconds, or its clock when cycles order the harts as time does.
    #[inline(always)]
    fn time<const BY_CYCLES: bool>(&self, busy: u64) -> u128 {
        match BY_CYCLES {
            true => u128::from(self.clock(busy)),
            false => self.clock.time_at(self.clock(busy)),
        }
    }

    /// Its first clock at or after `time` ([`Hart::time`]'s measure).
    #[inline(always)]
    fn counter_reaching<const BY_CYCLES: bool>(&self, time: u128) -> u64 {
        match BY_CYCLES {
            true => time as u64,
            false => self.clock.counter_reaching(time),
        }
    }

    /// Whether its replay had ended by call `k`.
    #[inline(always)]
    fn ended_by(&self, k: usize) -> bool {
        k >= self.last
    }

    /// Its call `k`, reached (there is one; the call after the last
    /// reached), as the unit takes it: read from its records now, with the
    /// busy cycles of the call after it.
    #[inline(always)]
    fn reach(&mut self, k: usize) -> Pending {
        // The harts' records are read in turn, eight streams or more from
        // memory the replays wrote long before: a line ahead is asked for
        // now, which the hardware's own prefetch does not keep up with.
        prefetch(self.records.as_ptr().wrapping_add(k + RECORDS_AHEAD));
        let call = self.cursor.next(self.calls);
        let following = match self.ended_by(k) {
            true => None,
            false => self.cursor.before(self.calls),
        };
        Pending {
            before: call.before,
            after: call.after(),
            place: call.place,
            following,
            info: self.classes[call.class as usize],
        }
    }
}

/// A hart's next call as the unit takes it, read when the hart reaches the
/// call, with the busy cycles of the hart's call after it: when the call
/// comes first, what it needs is one load by the hart's number, and the
/// hart's next time (the next search's input) is an addition — the loads
/// through the hart's records and classes happen off that path, while
/// other harts' calls are taken.
#[derive(Clone, Copy)]
struct Pending {
    /// Busy cycles before its `ecall`, and once the `ecall` and the trap
    /// are done.
    before: u64,
    after: u64,
    /// Its place in the run's recorded order.
    place: u64,
    /// Busy cycles before the `ecall` of the hart's call after it, if the
    /// hart goes on to one once this one completes (its replay did not end
    /// by this call, and it made another).
    following: Option<u64>,
    info: ClassInfo,
}

/// [`Pending`] of a hart not at a call.
const UNREACHED: Pending = Pending {
    before: 0,
    after: 0,
    place: 0,
    following: None,
    info: ClassInfo {
        class: 0,
        object: NONE,
        op: SyncOp::HARTS,
        number: 0,
        handle: 0,
        param: 0,
    },
};

/// How far ahead of a hart's next call its record is fetched: a cache
/// line of them (8 records of 8 bytes), tens of calls of the run ahead.
const RECORDS_AHEAD: usize = 8;

/// Ask the processor to bring the cache line at `p` in: a hint, which
/// reads nothing into the program and is ignored for any address.
#[inline(always)]
fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch neither reads nor faults, whatever the address;
    // SSE, which it needs, is part of every x86-64 processor.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
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
    // Each segment decompressed once, for the pass that reads the
    // synchronisation events and every hart's reader after it: first, on
    // as many threads as there are CPUs, each taking every so many
    // segments (the readers then only parse them).
    let cache = SegmentCache::new(SEGMENT_CACHE_BYTES);
    let cpus = std::thread::available_parallelism().map_or(1, |t| t.get());
    if cpus > 1 {
        std::thread::scope(|s| {
            for part in 0..cpus {
                let cache = &cache;
                s.spawn(move || {
                    // A damaged trace: the readers report it.
                    if let Ok(input) = trace.open() {
                        let _ = cache.warm(input, part as u32, cpus as u32);
                    }
                });
            }
        });
    }
    let reader = TraceReader::sharing_only(trace.open()?, &cache, StreamKind::Sync)?;
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
    let (events, _) = reader.collect_records(StreamKind::Sync)?;
    let core_index = |h: usize| if cores.len() == 1 { 0 } else { h };
    // The harts' replays, on as many threads as there are CPUs, each
    // taking the next hart not yet taken until none is left (harts' work
    // differs: a pipeline's stages are uneven), and the harts on one core
    // of a thread share what their replays learn. Each hart's calls decode
    // on its thread, just before its replay, which finds them.
    let threads = cpus.clamp(1, n);
    let taken = std::sync::atomic::AtomicUsize::new(0);
    type Replayed = (HartCalls, Option<DcacheMeasurement>, HartRun);
    // Per core of the thread's harts (by its index in `cores`).
    type Learnt = Vec<(usize, Option<Shared>)>;
    let replay_one = |h: usize, shared: &mut Learnt| -> Result<Replayed, ReplayError> {
        let mut calls = decode_hart(h as u16, &events[h])?;
        let core = &cores[core_index(h)];
        // The recording's measurement of the hart's own cache of the
        // core's geometry.
        let dcache = core.dcache.as_ref().and_then(|dc| {
            calls
                .dcache
                .iter()
                .find(|m| (m.size, m.ways, m.line) == (dc.size, dc.ways, dc.line))
                .copied()
        });
        let group = match shared.iter().position(|&(c, _)| cores[c] == *core) {
            Some(g) => g,
            None => {
                shared.push((core_index(h), None));
                shared.len() - 1
            }
        };
        let state = shared[group]
            .1
            .get_or_insert_with(|| Shared::new(table, core, fidelity, ranges.is_some()));
        let run = replay_hart(
            state,
            entry,
            trace,
            &cache,
            h,
            &mut calls,
            dcache.map_or(0.0, |m| m.miss_rate()),
            ranges.as_ref(),
        )?;
        if run.changed {
            shared[group].1 = None;
        }
        Ok((calls, dcache, run))
    };
    let mut each: Vec<Option<Result<Replayed, ReplayError>>> = (0..n).map(|_| None).collect();
    let mut learnt: Vec<Learnt> = Vec::new();
    std::thread::scope(|s| {
        let jobs: Vec<_> = (0..threads)
            .map(|_| {
                let (taken, replay_one) = (&taken, &replay_one);
                s.spawn(move || {
                    let (mut shared, mut out) = (Vec::new(), Vec::new());
                    loop {
                        let h = taken.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        if h >= n {
                            break;
                        }
                        let r = replay_one(h, &mut shared);
                        let failed = r.is_err();
                        out.push((h, r));
                        // Every hart below one taken was taken, so the
                        // first hart's error is among those met.
                        if failed {
                            break;
                        }
                    }
                    (out, shared)
                })
            })
            .collect();
        for j in jobs {
            let (out, shared) = j.join().expect("replay thread panicked");
            for (h, r) in out {
                each[h] = Some(r);
            }
            learnt.push(shared);
        }
    });
    // What the replays learnt, the decompressed trace and the events are
    // freed on another thread while the unit runs.
    let garbage = (learnt, cache, events);
    // The first hart's error, as a replay of one hart after the other
    // would meet it.
    let (mut recorded, mut dcache, mut runs) = (Vec::new(), Vec::new(), Vec::new());
    for (h, r) in each.into_iter().enumerate() {
        let (calls, d, run) = match r {
            Some(r) => r?,
            None => return Err(ReplayError::System(format!("hart {h} was not replayed"))),
        };
        recorded.push(calls);
        dcache.push(d);
        runs.push(run);
    }
    let numbers = number(&recorded);
    let start_hz: Vec<u64> = (0..n)
        .map(|h| hz.get(h).or(hz.first()).copied().unwrap_or(DEFAULT_HZ))
        .collect();
    // One frequency for every hart, and no `set_hz`: a hart's time is then
    // a strictly increasing function of its clock, the same for all
    // (at most 10^18 Hz, a cycle is at least an attosecond), so the unit
    // compares clocks — integers, not attoseconds.
    let by_cycles = start_hz.iter().all(|&f| f == start_hz[0])
        && start_hz[0] <= 1_000_000_000_000_000_000
        && numbers.classes.iter().all(|&(_, op)| op != SyncOp::SET_HZ);
    // The unit with the flat objects (`flat`) or the engine's rules.
    let unit = |ranks: Option<&[Vec<u64>]>, flat: bool| {
        let timeline = ranges.is_some();
        let (r, n, hz) = (&recorded, &numbers, &start_hz);
        match (by_cycles, flat) {
            (true, true) => order::<true, Flat>(r, &runs, n, ranks, hz, timeline),
            (false, true) => order::<false, Flat>(r, &runs, n, ranks, hz, timeline),
            (true, false) => order::<true, SyncState>(r, &runs, n, ranks, hz, timeline),
            (false, false) => order::<false, SyncState>(r, &runs, n, ranks, hz, timeline),
        }
    };
    // Ranked only if some class's calls come out of their places; by the
    // engine's rules from the start again if the flat objects give up.
    let ordered = std::thread::scope(|s| {
        s.spawn(move || drop(garbage));
        let mut ranked = None;
        let mut flat = true;
        loop {
            match unit(ranked.as_deref(), flat)? {
                Unit::Ordered(ordered) => return Ok::<_, ReplayError>(ordered),
                Unit::OutOfRank => ranked = Some(ranks(&recorded, &numbers)),
                Unit::GaveUp => flat = false,
            }
        }
    })?;
    let Ordered {
        harts,
        resources,
        calls,
        reordered,
        first_reordered,
    } = ordered;
    let (mut counts, mut clocks, mut timelines) = (Vec::new(), Vec::new(), Vec::new());
    for hart in harts {
        let busy = hart.run.busy;
        if ranges.is_some() {
            timelines.push(HartTimeline {
                slices: slices(&hart.run.runs, &hart.waits),
                calls: hart.timeline_calls,
            });
        }
        counts.push(HartEstimate {
            instructions: hart.run.instructions,
            busy,
            wait: hart.wait,
            calls: hart.next as u64,
            time: hart.clock.time_at(busy + hart.wait),
        });
        clocks.push(hart.clock);
    }
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

/// How the unit's run ended.
enum Unit<'a> {
    /// Every call ordered.
    Ordered(Ordered<'a>),
    /// Without ranks: a call of a class met before one placed earlier.
    OutOfRank,
    /// The flat objects gave up ([`objects`]): order with the reference.
    GaveUp,
}

/// What the unit found: the harts at the end, the objects' contention
/// (by handle), and the calls met out of their recorded order.
struct Ordered<'a> {
    harts: Vec<Hart<'a>>,
    resources: Vec<ResourceEstimate>,
    calls: u64,
    reordered: u64,
    first_reordered: Option<(usize, u64)>,
}

/// The unit: order the harts' calls (`recorded`, where each hart's replay
/// put them; `runs`, how the replays ended) by the harts' clocks, starting
/// at `start_hz` (compared as cycles when `BY_CYCLES`: every hart's clock
/// runs at one frequency, which none changes), and simulate their
/// objects by `R`'s rules ([`objects`]; [`Unit::GaveUp`] where they give
/// up). With `ranks` (per hart, each call's rank in its class), count the
/// calls met out of rank; without, stop ([`Unit::OutOfRank`]) at the first
/// call of a class met before one placed earlier — until then every call
/// was met at its rank (see [`calls`]).
fn order<'a, const BY_CYCLES: bool, R: Objects>(
    recorded: &'a [HartCalls],
    runs: &'a [HartRun],
    numbers: &'a Numbers,
    ranks: Option<&[Vec<u64>]>,
    start_hz: &[u64],
    timeline: bool,
) -> Result<Unit<'a>, ReplayError> {
    let Numbers {
        objects,
        classes,
        of_hart,
    } = numbers;
    let n = recorded.len();
    // The objects' states are found by their numbers. A call on no object
    // (only in a damaged trace, for calls that take one) is a call on
    // handle 0, as the engine would see it: that object's number, or one
    // of its own.
    let none_number = objects
        .iter()
        .position(|&(handle, _)| handle == 0)
        .unwrap_or(objects.len()) as u32;
    let info = |own: &[u32]| -> Vec<ClassInfo> {
        own.iter()
            .map(|&class| {
                let (o, op) = classes[class as usize];
                let ((handle, param), number) = match o {
                    NONE => ((0, 0), none_number),
                    o => (objects[o as usize], o),
                };
                ClassInfo {
                    class,
                    object: o,
                    op,
                    number,
                    handle,
                    param,
                }
            })
            .collect()
    };
    let mut harts: Vec<Hart> = recorded
        .iter()
        .zip(runs)
        .zip(of_hart)
        .enumerate()
        .map(|(h, ((calls, run), own))| Hart {
            calls,
            records: &calls.calls,
            cursor: Cursor::default(),
            last: run.last.unwrap_or(usize::MAX),
            values: &calls.values,
            set_hz: 0,
            classes: info(own),
            run,
            next: 0,
            wait: 0,
            clock: HartClock::new(start_hz[h]),
            standing: Standing::Done,
            waits: Vec::new(),
            timeline_calls: Vec::new(),
        })
        .collect();
    // The time of each hart's next call, or `NOT_AT_CALL`; and per hart at
    // a call, that call as the unit takes it.
    let mut at = Times::new(BY_CYCLES, n);
    let mut pending = vec![UNREACHED; n];
    for (h, hart) in harts.iter_mut().enumerate() {
        if !hart.records.is_empty() {
            pending[h] = hart.reach(0);
            at.set::<BY_CYCLES>(h, hart.time::<BY_CYCLES>(pending[h].before));
            hart.standing = Standing::AtCall;
        }
    }
    let mut state = R::new(n);
    let mut places = Places::new(harts.iter().map(|h| h.calls.calls.len()).sum());
    // Per object, its contention so far (`resources` at the end).
    let mut usage = vec![Usage::default(); objects.len()];
    // Per class, with ranks: the calls met so far (a call meets its object
    // in the recorded order when that is its rank); without: one past the
    // place of the last call met.
    let mut met = vec![0u64; classes.len()];
    // The object each blocked hart waits on (its number).
    let mut waiting_on: Vec<Option<usize>> = vec![None; n];
    let (mut calls, mut reordered, mut first_reordered) = (0u64, 0u64, None);
    // The harts each call resumes: one buffer for the run.
    let mut woken = Vec::with_capacity(n);
    // The call with the earliest time, the lowest hart on a tie.
    while let Some(h) = at.earliest::<BY_CYCLES>() {
        let call = pending[h];
        let hart = &mut harts[h];
        let k = hart.next;
        hart.next += 1;
        places.meet(h, call.place)?;
        let ClassInfo {
            class,
            object: o,
            op,
            number,
            handle: object,
            param,
        } = call.info;
        let class = class as usize;
        let value = if op == SyncOp::SET_HZ {
            hart.set_hz += 1;
            hart.values[hart.set_hz - 1]
        } else {
            0
        };
        calls += 1;
        let r = match o {
            NONE => None,
            o => {
                let m = &mut met[class];
                match ranks {
                    None if call.place < *m => return Ok(Unit::OutOfRank),
                    None => *m = call.place + 1,
                    Some(ranks) => {
                        if ranks[h][k] != *m {
                            reordered += 1;
                            first_reordered.get_or_insert((h, call.place));
                        }
                        *m += 1;
                    }
                }
                let u = &mut usage[o as usize];
                if u.calls == 0 {
                    u.first = op;
                }
                u.calls += 1;
                Some(o as usize)
            }
        };
        if timeline {
            let clock = hart.clock(call.before);
            hart.timeline_calls.push((clock, op.0, object));
        }
        let done = match state.call(h, op, o, number, object, param, value, &mut woken) {
            Ok(done) => done,
            Err(Some(e)) => return Err(unfit_call(h, k, e)),
            Err(None) => return Ok(Unit::GaveUp),
        };
        // The completer's clock: its `ecall` and trap are in its busy
        // cycles by now (see the module documentation).
        let busy = call.after;
        let hart = &mut harts[h];
        if op == SyncOp::SET_HZ && done {
            let now = hart.clock(busy);
            hart.clock.set_hz(now, value);
        }
        let now_time = hart.time::<BY_CYCLES>(busy);
        at.set::<BY_CYCLES>(h, NOT_AT_CALL);
        if let (true, Some(following)) = (done, call.following) {
            // On to its next call (see [`Pending`]).
            at.set::<BY_CYCLES>(h, hart.time::<BY_CYCLES>(following));
            hart.standing = Standing::AtCall;
            pending[h] = hart.reach(k + 1);
        } else if done || op == SyncOp::HART_EXIT {
            hart.standing = Standing::Done;
        } else {
            if let Some(r) = r {
                usage[r].waits += 1;
            }
            waiting_on[h] = r;
            hart.standing = Standing::Blocked(call.before);
        }
        for &(w, _) in &woken {
            let hart = &mut harts[w];
            let Standing::Blocked(b) = hart.standing else {
                return Err(not_waiting(w, h));
            };
            let then = hart.counter_reaching::<BY_CYCLES>(now_time);
            let waited = then.saturating_sub(hart.clock(b));
            if timeline && waited > 0 {
                let (op, object) = hart
                    .timeline_calls
                    .last()
                    .map_or((0, 0), |&(_, op, object)| (op, object));
                hart.waits.push((b, waited, op, object));
            }
            hart.wait += waited;
            if let Some(r) = waiting_on[w].take() {
                usage[r].wait_cycles += waited;
            }
            // The call it waited in is still its pending one.
            match pending[w].following {
                None => hart.standing = Standing::Done,
                Some(following) => {
                    at.set::<BY_CYCLES>(w, hart.time::<BY_CYCLES>(following));
                    hart.standing = Standing::AtCall;
                    pending[w] = hart.reach(hart.next);
                }
            }
        }
    }
    // Harts still waiting: in the recording their calls completed (their
    // replays go on past them), so the events do not pair up.
    let stuck = harts
        .iter()
        .filter(|x| matches!(x.standing, Standing::Blocked(_)) && !x.ended_by(x.next - 1))
        .count();
    if stuck > 0 {
        let Some(deadlock) = state.deadlock() else {
            return Ok(Unit::GaveUp);
        };
        return Err(ReplayError::System(format!(
            "the synchronisation events do not pair up: {deadlock} — no recorded call completes {}; the trace is damaged or incomplete (record it again)",
            if stuck == 1 { "it" } else { "them" }
        )));
    }
    if let Some((h, hart)) = harts
        .iter()
        .enumerate()
        .find(|(_, x)| x.next != x.calls.calls.len())
    {
        return Err(ReplayError::System(format!(
            "hart {h}'s replay ended after {} of its {} recorded synchronisation calls: the trace does not fit this program",
            hart.next,
            hart.calls.calls.len()
        )));
    }
    let mut resources: Vec<ResourceEstimate> = objects
        .iter()
        .zip(&usage)
        .filter(|(_, u)| u.calls > 0)
        .map(|(&(object, _), u)| ResourceEstimate {
            object,
            kind: u
                .first
                .object_kind()
                .map_or("object".into(), |k| k.to_string()),
            calls: u.calls,
            waits: u.waits,
            wait_cycles: u.wait_cycles,
        })
        .collect();
    resources.sort_by_key(|r| r.object);
    Ok(Unit::Ordered(Ordered {
        harts,
        resources,
        calls,
        reordered,
        first_reordered,
    }))
}

/// An object's contention in the unit's run: its calls (the first of
/// them, which names its kind), those that waited and their wait.
#[derive(Clone, Copy)]
struct Usage {
    calls: u64,
    first: SyncOp,
    waits: u64,
    wait_cycles: u64,
}

impl Default for Usage {
    fn default() -> Usage {
        Usage {
            calls: 0,
            first: SyncOp::HARTS,
            waits: 0,
            wait_cycles: 0,
        }
    }
}

/// Hart `h`'s call #`k` broke the objects' rules (`e`).
#[cold]
#[inline(never)]
fn unfit_call(h: usize, k: usize, e: retrace_sim::sync::SyncError) -> ReplayError {
    ReplayError::System(format!(
        "hart {h}'s synchronisation call #{k} does not fit the others' ({e}): the trace is damaged; record it again"
    ))
}

/// Hart `h`'s call resumed hart `w`, which was not waiting.
#[cold]
#[inline(never)]
fn not_waiting(w: usize, h: usize) -> ReplayError {
    ReplayError::System(format!(
        "hart {w} is resumed by hart {h}'s call but does not wait: the trace is damaged"
    ))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_earliest_call_is_the_lowest_hart_s_on_a_tie() {
        // Every hart count up to 24, times drawn from a
        // few values (ties everywhere) or not at a call; the unit's search
        // against a plain one.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut draw = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for n in 1..=24 {
            for _ in 0..2000 {
                let times: Vec<u128> = (0..n)
                    .map(|_| match draw() % 5 {
                        0 => NOT_AT_CALL,
                        v => u128::from(v + draw() % 3),
                    })
                    .collect();
                let earliest = times.iter().copied().filter(|&t| t != NOT_AT_CALL).min();
                let want = earliest.and_then(|e| times.iter().position(|&t| t == e));
                let mut narrow = Times::new(true, n);
                let mut wide = Times::new(false, n);
                for (h, &t) in times.iter().enumerate() {
                    narrow.set::<true>(h, t);
                    wide.set::<false>(h, t);
                }
                assert_eq!(narrow.earliest::<true>(), want, "{times:?}");
                assert_eq!(wide.earliest::<false>(), want, "{times:?}");
            }
        }
    }

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
