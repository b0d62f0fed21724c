//! One hart's replay, on its own: where its calls fall in its busy cycles.
//!
//! A hart's core has no state that another hart touches — pipeline,
//! predictor, return stack and caches are each hart's, and the data-cache
//! term is the hart's own memory operations at its own measured miss rate
//! — and a wait stops its clock, not its pipeline: a call's `ecall` and
//! its trap are timed whole, as on one hart, whether the call waits or
//! not, and the pipeline starts empty after the trap. So the busy cycles
//! at each of a hart's calls do not depend on how the harts interleave,
//! nor on the frequencies, which only turn cycles into time. The unit
//! (`super`) works them out here once, hart by hart, and then orders the
//! calls over the flat records alone.
//!
//! The estimator notes every `ecall` it times — the cycles before it (the
//! prefix of its partial program, [`Estimator::prefix_cycles`]) and after
//! it — and a memoised stretch ([`crate::span`]) keeps those inside it,
//! so stretches run across calls as anywhere else: a loop with calls in it
//! is one lookup per stretch, whatever it calls. The harts on one core
//! (of one thread, `super`) replay one after the other with one estimator
//! and one memo ([`Shared`]), so what one hart's replay learnt the next
//! one reuses.

use super::calls::HartCalls;
use crate::estimator::{Counters, DcacheTerm, Ecall, Estimator, Fidelity};
use crate::machine::TraceHistory;
use crate::source::TraceSource;
use crate::span::{span_step, SpanStep, Spans};
use crate::walk::{Graph, Leave, ReplayError, Visit, Walker};
use retrace_program::{Addr, PpId, PpTable};
use retrace_timing::CoreModel;
use retrace_trace::{SegmentCache, StreamKind, TraceReader};

/// Which function each partial program the replay visits is in, and the
/// runs of one function, in busy cycles (waits are not known to the
/// estimator; the unit's timeline puts them in).
pub(super) struct FunctionTrack {
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

/// The estimator and the functions the hart runs: the visitor of a
/// replay that keeps a timeline (step by step).
struct Tracked<'a> {
    est: &'a mut Estimator,
    functions: &'a mut FunctionTrack,
}

impl Tracked<'_> {
    /// `pp` is entered now, after the busy cycles so far: the core's and
    /// the data-cache term of the memory operations so far.
    fn enter(&mut self, table: &PpTable, pp: PpId) {
        let busy = self.est.cycles() + self.est.dcache_cycles();
        self.functions.enter(table.get(pp).start.get(), busy);
    }
}

impl Visit<PpTable> for Tracked<'_> {
    fn pp(&mut self, table: &PpTable, pp: PpId, how: Leave, next: PpId) {
        self.enter(table, pp);
        self.est.pp(table, pp, how, next);
    }
    fn last(&mut self, table: &PpTable, pp: PpId, executed: u32) {
        self.enter(table, pp);
        self.est.last(table, pp, executed);
    }
    fn trap(&mut self, table: &PpTable, pp: PpId, executed: u32) {
        self.est.trap(table, pp, executed);
    }
    fn cut(&mut self, table: &PpTable, pp: PpId, executed: u32) {
        self.est.cut(table, pp, executed);
    }
}

/// What the replays of the harts on one core share, one hart after the
/// other: the partial-program table, the estimator's memo and node graph
/// and the memoised stretches — all of which depend on the core and the
/// code alone.
pub(super) struct Shared {
    table: PpTable,
    est: Estimator,
    spans: Option<Spans>,
}

impl Shared {
    /// For harts on `core` at `fidelity`; memoised stretches at `fast`
    /// without a timeline (a timeline follows every partial program).
    pub fn new(table: &PpTable, core: &CoreModel, fidelity: Fidelity, timeline: bool) -> Shared {
        Shared {
            table: table.clone(),
            est: Estimator::new(core, fidelity, 0.0).noting_ecalls(),
            spans: (fidelity == Fidelity::Fast && !timeline).then(Spans::shared),
        }
    }
}

/// What a hart's replay found, besides its calls' busy cycles.
pub(super) struct HartRun {
    /// The call by which the hart's replay had ended (its `ecall` the last
    /// thing it ran, or one that never retired): it runs no more after it.
    pub last: Option<usize>,
    /// Its busy cycles at the end.
    pub busy: u64,
    /// Instructions it executed.
    pub instructions: u64,
    /// With a timeline: its function runs (`(first busy cycle, one past
    /// the last, function)`).
    pub runs: Vec<(u64, u64, usize)>,
    /// Its code changed (a code event): the [`Shared`] it ran with holds
    /// code only it ran, and no other hart may start from it.
    pub changed: bool,
}

/// Replay hart `h` of `trace` whole with `shared`'s core, its data-cache
/// term at `miss_rate`, and find its recorded calls (`calls`) among the
/// `ecall`s: each call's busy cycles before its `ecall` and what the
/// `ecall` and the trap take go into `calls`. With `ranges` (the
/// functions, `(entry, size)` in entry order), it also notes the runs of
/// each function.
#[allow(clippy::too_many_arguments)]
pub(super) fn replay_hart<S: TraceSource + ?Sized>(
    shared: &mut Shared,
    entry: Addr,
    trace: &S,
    cache: &SegmentCache,
    h: usize,
    calls: &mut HartCalls,
    miss_rate: f64,
    ranges: Option<&std::sync::Arc<[(u64, u64)]>>,
) -> Result<HartRun, ReplayError> {
    let reader = TraceReader::sharing(trace.open()?, cache, Some(h as u16))?;
    let Shared { table, est, spans } = shared;
    est.restart(miss_rate);
    let start = table.resolve(entry.get())?;
    let mut walker = Walker::new(start, calls.instructions);
    let mut history = TraceHistory::new(reader, h as u16);
    let mut functions = ranges.map(|r| FunctionTrack {
        ranges: r.clone(),
        current: None,
        runs: Vec::new(),
    });
    let mut found = Found {
        hart: h,
        calls: &mut *calls,
        next: 0,
        last_at: 0,
        dcache: est.dcache_term(),
        error: None,
    };
    loop {
        let mut ended = None;
        if let Some(spans) = spans.as_mut() {
            let mut stretch = |start: &Counters, ecalls: &[Ecall]| {
                for e in ecalls {
                    found.ecall(
                        start.instructions + e.at,
                        start.cycles + e.before,
                        start.cycles + e.after,
                        start.mem_ops + e.mem_ops,
                    );
                }
            };
            match span_step(table, &mut history, est, spans, &mut walker, &mut stretch)? {
                SpanStep::Moved => ended = Some(false),
                SpanStep::Finished => ended = Some(true),
                SpanStep::Nothing => {}
            }
        }
        let ended = match (ended, &mut functions) {
            (Some(ended), _) => ended,
            (None, None) => walker.step(table, &mut history, est)?,
            (None, Some(functions)) => {
                walker.step(table, &mut history, &mut Tracked { est, functions })?
            }
        };
        // The `ecall`s the estimator timed itself.
        for e in est.ecalls().drain(..) {
            found.ecall(e.at, e.before, e.after, e.mem_ops);
        }
        if let Some(e) = found.error.take() {
            return Err(e);
        }
        if ended {
            break;
        }
    }
    let (found, last_at) = (found.next, found.last_at);
    walker.finish_code(table, &mut history)?;
    let stats = walker.stats();
    let busy = est.cycles() + est.dcache_cycles();
    let done = stats.instructions;
    // The replay ended right after the last call found, or at the next.
    let mut last = found.checked_sub(1).filter(|_| last_at + 1 == done);
    let mut unretired = false;
    if let (None, Some(at)) = (last, calls.next_to_reach(last_at)) {
        if at != done {
            return Err(misplaced(h, found, at, done));
        }
        // The run stopped at this call, before its `ecall` retired (the
        // hart exited, or waited until the end).
        unretired = true;
        calls.reached(found, busy, 0);
        last = Some(found);
    }
    if stats.last_pc != calls.last_pc {
        return Err(ReplayError::Totals {
            what: format!(
                "hart {h}'s recorded run ended at pc {:#x}, its replay after {} instructions at {:#x}",
                calls.last_pc, stats.instructions, stats.last_pc
            ),
        });
    }
    let mut reader = history.into_reader();
    if unretired {
        skip_unretired_completion(&mut reader, h as u16)?;
    }
    reader.finish()?;
    let runs = match functions {
        Some(mut f) => {
            f.finish(busy);
            f.runs
        }
        None => Vec::new(),
    };
    Ok(HartRun {
        last,
        busy,
        instructions: est.estimate().instructions,
        runs,
        changed: walker.code_epoch != 0,
    })
}

/// Finds a hart's recorded calls among the `ecall`s its replay times, in
/// order, and puts where each falls in the hart's busy cycles into its
/// record.
struct Found<'a> {
    hart: usize,
    /// The calls, those before `next` found ([`HartCalls::reached`]).
    calls: &'a mut HartCalls,
    /// The next call to find.
    next: usize,
    /// The instructions before the last found call's `ecall` (0 before
    /// the first: what the next call's are a difference from).
    last_at: u64,
    dcache: DcacheTerm,
    /// The first call the replay went past without an `ecall` there.
    error: Option<ReplayError>,
}

impl Found<'_> {
    /// An `ecall` after `at` instructions, `before` cycles before it and
    /// `after` once it and the trap are done, after `mem_ops` memory
    /// operations.
    #[inline]
    fn ecall(&mut self, at: u64, before: u64, after: u64, mem_ops: u64) {
        match self.calls.next_to_reach(self.last_at) {
            Some(wanted) if wanted == at => {
                self.last_at = at;
                let busy = before + self.dcache.cycles(mem_ops);
                match u32::try_from(after - before) {
                    Ok(trap) => self.calls.reached(self.next, busy, trap),
                    Err(_) => {
                        self.error.get_or_insert(ReplayError::System(format!(
                            "hart {}'s `ecall` after {at} instructions takes {} cycles: more than this replay counts",
                            self.hart,
                            after - before
                        )));
                    }
                }
                self.next += 1;
            }
            Some(wanted) if wanted < at => {
                let e = misplaced(self.hart, self.next, wanted, at);
                self.error.get_or_insert(e);
            }
            // Another `ecall` (not the synchronisation API's).
            _ => {}
        }
    }
}

/// Hart `h`'s call #`k`, recorded after `at` instructions, where its
/// replay has no `ecall` (it went on to `done`).
fn misplaced(h: usize, k: usize, at: u64, done: u64) -> ReplayError {
    ReplayError::System(format!(
        "hart {h}'s synchronisation call #{k} is recorded after {at} instructions, where the replay has no `ecall` ending a partial program (it reached {done}): the trace does not fit this program"
    ))
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
