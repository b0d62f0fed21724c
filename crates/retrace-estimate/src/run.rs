//! Whole replays of a trace, from a file or from memory ([`TraceSource`]):
//! estimates for several cores at once, and the PC-sequence check.

use crate::aggregate::{AggregatedHistory, Tracked};
use crate::control_span::{walk_control_spans, ControlSpans};
use crate::estimator::{Estimate, Estimator, Fidelity};
use crate::machine::TraceHistory;
use crate::source::{read_totals_from, TraceSource};
use crate::span::{walk_spans, Spans};
use crate::walk::{walk, Graph, Leave, ReplayError, Visit, WalkStats};
use retrace_program::{Addr, PpId, PpTable};
use retrace_timing::CoreModel;
use retrace_trace::protocol::regions::Region;
use retrace_trace::{DcacheMeasurement, PcSequence, Totals, TraceReader};

/// Open `trace`, replay it over `table` from `entry` with `visit`, and check
/// that the replay consumed exactly what was recorded.
fn replay<V: Visit<PpTable>, S: TraceSource + ?Sized>(
    table: &mut PpTable,
    entry: Addr,
    trace: &S,
    visit: &mut V,
) -> Result<Replayed, ReplayError> {
    replay_with(table, entry, trace, |table, history, start, limit| {
        walk_tracked(table, history, visit, start, limit)
    })
}

/// Replay `trace` with `visit` watching: the walk's statistics and the
/// recorded totals.
pub fn replay_visit<V: Visit<PpTable>, S: TraceSource + ?Sized>(
    table: &mut PpTable,
    entry: Addr,
    trace: &S,
    visit: &mut V,
) -> Result<(WalkStats, Totals), ReplayError> {
    replay(table, entry, trace, visit).map(|r| (r.0, r.1))
}

/// [`walk`] over a trace's history: through [`Tracked`] when the trace
/// has aggregated loops (the history must then know each branch's site).
fn walk_tracked<R: std::io::Read, V: Visit<PpTable>>(
    table: &mut PpTable,
    history: &mut AggregatedHistory<R>,
    visit: &mut V,
    start: PpId,
    limit: u64,
) -> Result<WalkStats, ReplayError> {
    if history.plan().is_none() {
        // Nothing aggregated or collapsed: the plain history, whose walk
        // does not look up every branch's site for a collapsed nest.
        return walk(table, history.inner_mut(), visit, start, limit);
    }
    let mut tracked = Tracked::new(history.tracker(), visit, table, start);
    walk(table, history, &mut tracked, start, limit)
}

/// What a lossy trace's replay visited that the estimate adds cycles for:
/// the fixed if-else sites (address, fixed outcome, taken probability in
/// parts per million) and the collapsed regions, each with how often the
/// replay met it.
#[derive(Clone, Debug, Default)]
pub struct LossyVisits {
    /// The plan's fixed sites.
    pub fixed: Vec<(u64, bool, u32)>,
    /// Per fixed site, visits.
    pub fixed_visits: Vec<u64>,
    /// The plan's collapsed regions.
    pub regions: Vec<Region>,
    /// Per region, extents stepped over.
    pub region_visits: Vec<u64>,
}

impl LossyVisits {
    /// The cycles the visits add on `core`: per fixed-site visit, the
    /// probability-weighted difference of its two ways; per collapsed
    /// extent, the region's mean time.
    pub fn cycles(&self, table: &PpTable, core: &CoreModel) -> f64 {
        let mut total = 0.0;
        if !self.fixed.is_empty() {
            let per_visit = crate::aggregate::ifelse::corrections(table, core, &self.fixed);
            total += per_visit
                .iter()
                .zip(&self.fixed_visits)
                .map(|(c, &n)| c * n as f64)
                .sum::<f64>();
        }
        if !self.regions.is_empty() {
            let mut t = table.clone();
            let per_extent = crate::aggregate::collapse::region_cycles(&mut t, core, &self.regions);
            total += per_extent
                .iter()
                .zip(&self.region_visits)
                .map(|(c, &n)| c * n as f64)
                .sum::<f64>();
        }
        total
    }

    /// Whether nothing lossy was visited or planned.
    pub fn is_empty(&self) -> bool {
        self.fixed.is_empty() && self.regions.is_empty()
    }
}

/// What a replay returns: the walk's statistics, the recorded totals, the
/// data-cache measurements and the lossy visits.
type Replayed = (WalkStats, Totals, Vec<DcacheMeasurement>, LossyVisits);

/// The open trace's history, as the walk reads it.
type SourceHistory<'a, S> = AggregatedHistory<<S as TraceSource>::Reader<'a>>;

/// [`replay`] with the walk given: `walk(table, history, start, limit)`.
fn replay_with<'s, S: TraceSource + ?Sized>(
    table: &mut PpTable,
    entry: Addr,
    trace: &'s S,
    walk: impl FnOnce(
        &mut PpTable,
        &mut SourceHistory<'s, S>,
        PpId,
        u64,
    ) -> Result<WalkStats, ReplayError>,
) -> Result<Replayed, ReplayError> {
    let reader = TraceReader::new(trace.open()?)?;
    let harts = reader.header().harts;
    if harts > 1 {
        // Hart 0 alone would stop at the others' streams with a message
        // about segments; say what the trace is instead.
        return Err(ReplayError::System(format!(
            "the trace holds {harts} harts and this replay follows one; `retrace estimate PROGRAM TRACE --core …` replays several harts together"
        )));
    }
    // The totals are in the trailer; the walk stops at the recorded
    // instruction count, so read it first from a second reader (cheap: the
    // trailer is the trace's last bytes). When that fails, read the whole
    // trace to name the damaged segment.
    let totals = match read_totals_from(trace.open()?) {
        Ok(t) => t,
        Err(e) => {
            TraceReader::new(trace.open()?)?.validate()?;
            return Err(e.into());
        }
    };
    let mut history = AggregatedHistory::new(TraceHistory::new(reader, 0))?;
    history.check_plan(table)?;
    let start = table.resolve(entry.get())?;
    // A trace with fixed sites walks its own instruction count (the walk
    // block): the fixed ways are not the run's.
    let limit = totals.walk_instructions.unwrap_or(totals.instructions);
    let stats = walk(table, &mut history, start, limit)?;
    // Branches given back from aggregated loops' counts and fixed sites
    // hold no bits.
    let bits = stats.bits - history.synthesized();
    let lossy = LossyVisits {
        fixed: history.fixed().to_vec(),
        fixed_visits: history.fixed_visits().to_vec(),
        regions: history.regions().to_vec(),
        region_visits: history.region_visits().to_vec(),
    };
    let (recorded, dcache) = history.finish()?.finish_all()?;
    if stats.last_pc != recorded.last_pc {
        return Err(ReplayError::Totals {
            what: format!(
                "the recorded run ended at pc {:#x}, the replay after {} instructions at {:#x}",
                recorded.last_pc, limit, stats.last_pc
            ),
        });
    }
    if bits != recorded.branches
        || stats.indirect != recorded.indirect
        || stats.escapes != recorded.escapes
    {
        return Err(ReplayError::Totals {
            what: format!(
                "recorded {} branches, {} indirect targets, {} escapes; the replay used {}, {}, {}",
                recorded.branches,
                recorded.indirect,
                recorded.escapes,
                bits,
                stats.indirect,
                stats.escapes
            ),
        });
    }
    Ok((stats, recorded, dcache, lossy))
}

/// The trailer's totals, read from the end of the trace.
pub fn read_totals<S: TraceSource + ?Sized>(trace: &S) -> Result<Totals, ReplayError> {
    Ok(read_totals_from(trace.open()?)?)
}

/// An estimate with the index of its core in the caller's list.
type Indexed = (usize, Estimate, Estimator);

/// Several estimators fed by one walk: the trace is decoded and walked once
/// for all of them.
struct Fan(Vec<Estimator>);

impl Visit<PpTable> for Fan {
    #[inline]
    fn pp(&mut self, table: &PpTable, pp: PpId, how: Leave, next: PpId) {
        for e in &mut self.0 {
            e.pp(table, pp, how, next);
        }
    }
    fn last(&mut self, table: &PpTable, pp: PpId, executed: u32) {
        for e in &mut self.0 {
            e.last(table, pp, executed);
        }
    }
    fn trap(&mut self, table: &PpTable, pp: PpId, executed: u32) {
        for e in &mut self.0 {
            e.trap(table, pp, executed);
        }
    }
    fn cut(&mut self, table: &PpTable, pp: PpId, executed: u32) {
        for e in &mut self.0 {
            e.cut(table, pp, executed);
        }
    }
}

/// Estimate `cores` from one trace. The cores are split over the machine's
/// CPUs; each core walks the trace on its own (see below).
///
/// The data-cache term uses `dcache_miss_rate` when given, else the miss
/// rate the recorder measured for the core's data-cache geometry (0 when the
/// trace has no measurement for it: see [`Estimate::dcache_measured`]).
///
/// Each core replays on its own with memoised stretches (`crate::span`
/// at [`Fidelity::Fast`], `crate::control_span` at [`Fidelity::Control`]),
/// which is many times faster on programs whose control flow repeats;
/// [`estimate_trace_stepwise`] gives the same numbers step by step.
pub fn estimate_trace<S: TraceSource + ?Sized>(
    table: &PpTable,
    entry: Addr,
    trace: &S,
    cores: &[CoreModel],
    fidelity: Fidelity,
    dcache_miss_rate: Option<f64>,
) -> Result<Vec<(Estimate, Estimator)>, ReplayError> {
    estimate_cores(table, entry, trace, cores, fidelity, dcache_miss_rate, true)
}

/// [`estimate_trace`] one partial program at a time, all of a thread's
/// cores fed by one walk: the reference the memoised replay is tested
/// against.
pub fn estimate_trace_stepwise<S: TraceSource + ?Sized>(
    table: &PpTable,
    entry: Addr,
    trace: &S,
    cores: &[CoreModel],
    fidelity: Fidelity,
    dcache_miss_rate: Option<f64>,
) -> Result<Vec<(Estimate, Estimator)>, ReplayError> {
    estimate_cores(
        table,
        entry,
        trace,
        cores,
        fidelity,
        dcache_miss_rate,
        false,
    )
}

fn estimate_cores<S: TraceSource + ?Sized>(
    table: &PpTable,
    entry: Addr,
    trace: &S,
    cores: &[CoreModel],
    fidelity: Fidelity,
    dcache_miss_rate: Option<f64>,
    spans: bool,
) -> Result<Vec<(Estimate, Estimator)>, ReplayError> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, cores.len().max(1));
    let groups: Vec<Vec<usize>> = (0..threads)
        .map(|t| (t..cores.len()).step_by(threads).collect())
        .collect();
    let results: Vec<Result<Vec<Indexed>, ReplayError>> = std::thread::scope(|s| {
        let jobs: Vec<_> = groups
            .iter()
            .map(|group| {
                s.spawn(move || {
                    let mut t = table.clone();
                    let mut fan = Fan(group
                        .iter()
                        .map(|&i| {
                            Estimator::new(&cores[i], fidelity, dcache_miss_rate.unwrap_or(0.0))
                        })
                        .collect());
                    // Each core's walk statistics.
                    let mut walks = Vec::new();
                    let mut lossy = LossyVisits::default();
                    let mut run_instructions = 0;
                    let measured = if spans {
                        // Memoised stretches belong to one core's node graph
                        // (and, at `control`, its front end): each core walks
                        // the trace on its own.
                        let mut measured = Vec::new();
                        for est in &mut fan.0 {
                            let mut memo = Spans::default();
                            let mut control = ControlSpans::default();
                            let stats;
                            let totals;
                            (stats, totals, measured, lossy) =
                                replay_with(&mut t, entry, trace, |t, h, s, n| {
                                    if h.plan().is_some() {
                                        // The stretches key on the trace's
                                        // bits, which an aggregated trace
                                        // does not hold for every branch:
                                        // step by step.
                                        return walk_tracked(t, h, est, s, n);
                                    }
                                    match fidelity {
                                        Fidelity::Fast => {
                                            walk_spans(t, h.inner_mut(), est, &mut memo, s, n)
                                        }
                                        Fidelity::Control => walk_control_spans(
                                            t,
                                            h.inner_mut(),
                                            est,
                                            &mut control,
                                            s,
                                            n,
                                        ),
                                    }
                                })?;
                            run_instructions = totals.instructions;
                            let mut used = match fidelity {
                                Fidelity::Fast => memo.stats,
                                Fidelity::Control => control.stats,
                            };
                            used.pps = stats.pps;
                            est.set_span_stats(used);
                            walks.push(stats);
                        }
                        measured
                    } else {
                        let (stats, totals, measured, f) = replay(&mut t, entry, trace, &mut fan)?;
                        run_instructions = totals.instructions;
                        lossy = f;
                        walks.resize(fan.0.len(), stats);
                        measured
                    };
                    let mut out = Vec::new();
                    for ((&i, mut est), walked) in group.iter().zip(fan.0).zip(walks) {
                        let core = &cores[i];
                        let measured_rate = core.dcache.as_ref().and_then(|dc| {
                            measured
                                .iter()
                                .find(|m| (m.size, m.ways, m.line) == (dc.size, dc.ways, dc.line))
                                .map(|m| m.miss_rate())
                        });
                        if dcache_miss_rate.is_none() {
                            est.set_dcache_miss_rate(measured_rate.unwrap_or(0.0));
                        }
                        let mut e = est.estimate();
                        if !lossy.is_empty() {
                            e.lossy_cycles = lossy.cycles(table, core);
                            e.cycles = (e.cycles as f64 + e.lossy_cycles).round().max(0.0) as u64;
                            // The run's instructions, not the replay's
                            // (which steps over what was aggregated): the
                            // CPI is the program's.
                            e.instructions = run_instructions;
                        }
                        (e.max_depth, e.stack_dropped) = (walked.max_depth, walked.dropped);
                        e.dcache_measured = core.dcache.is_none()
                            || dcache_miss_rate.is_some()
                            || measured_rate.is_some();
                        out.push((i, e, est));
                    }
                    Ok(out)
                })
            })
            .collect();
        jobs.into_iter()
            .map(|j| j.join().expect("estimate thread panicked"))
            .collect()
    });
    let mut all = Vec::with_capacity(cores.len());
    for r in results {
        all.extend(r?);
    }
    all.sort_by_key(|(i, _, _)| *i);
    Ok(all.into_iter().map(|(_, e, est)| (e, est)).collect())
}

struct PcHasher(PcSequence);

impl Visit<PpTable> for PcHasher {
    fn pp(&mut self, table: &PpTable, pp: PpId, _: Leave, _: PpId) {
        self.last(table, pp, table.get(pp).len);
    }
    fn last(&mut self, table: &PpTable, pp: PpId, executed: u32) {
        if pp == crate::machine::INVALID {
            return;
        }
        for (pc, inst) in table.insts(pp).take(executed as usize) {
            self.0.push(pc.get(), inst.raw);
        }
    }
    fn trap(&mut self, table: &PpTable, pp: PpId, executed: u32) {
        self.last(table, pp, executed);
    }
    fn cut(&mut self, table: &PpTable, pp: PpId, executed: u32) {
        self.last(table, pp, executed);
    }
}

/// Replay `trace` and summarise the executed-PC sequence, to compare with
/// the functional engine's (`retrace_sim::check`).
pub fn replay_check<S: TraceSource + ?Sized>(
    table: &mut PpTable,
    entry: Addr,
    trace: &S,
) -> Result<PcSequence, ReplayError> {
    let mut h = PcHasher(PcSequence::new());
    replay(table, entry, trace, &mut h)?;
    Ok(h.0)
}

/// Replay `trace` on one core and profile it (functions, branches, hottest
/// partial programs, each instruction's cost).
pub fn profile_trace<S: TraceSource + ?Sized>(
    program: &retrace_program::Program,
    trace: &S,
    core: &CoreModel,
    fidelity: Fidelity,
) -> Result<(crate::profile::Profile, Estimate), ReplayError> {
    let costs = Profiling {
        per_instruction: true,
        timeline: None,
    };
    profile_trace_with(program, trace, core, fidelity, costs)
}

/// What a profile holds beyond functions, branches and partial programs.
#[derive(Clone, Copy, Debug, Default)]
pub struct Profiling {
    /// Each instruction's cost ([`Estimator::attributing`]).
    pub per_instruction: bool,
    /// The frames' timeline, about this many of the longest spans
    /// ([`crate::profile::Profiler::logging_spans`]).
    pub timeline: Option<usize>,
}

/// [`profile_trace`], with what to profile beyond the functions.
pub fn profile_trace_with<S: TraceSource + ?Sized>(
    program: &retrace_program::Program,
    trace: &S,
    core: &CoreModel,
    fidelity: Fidelity,
    what: Profiling,
) -> Result<(crate::profile::Profile, Estimate), ReplayError> {
    // A lossy trace's walk is not the run (fixed ways, collapsed regions):
    // per-function cycles from it would be wrong, and quietly so.
    if read_totals(trace)?.walk_instructions.is_some() {
        return Err(ReplayError::System(
            "the trace was recorded with a lossy --aggregate level (if-else, nested, functions), whose replay does not walk the run: per-function cycles need a plain or --aggregate loops trace".into(),
        ));
    }
    let mut table = program.table.clone();
    let mut est = Estimator::new(core, fidelity, 0.0);
    if what.per_instruction {
        est = est.attributing();
    }
    let mut prof = crate::profile::Profiler::new(est, program);
    if let Some(max) = what.timeline {
        prof = prof.logging_spans(max);
    }
    let (_, _, measured, _) = replay(&mut table, program.entry, trace, &mut prof)?;
    let (profile, mut est) = prof.finish(&table);
    let mut measured_rate = false;
    if let Some(dc) = &core.dcache {
        if let Some(m) = measured
            .iter()
            .find(|m| (m.size, m.ways, m.line) == (dc.size, dc.ways, dc.line))
        {
            est.set_dcache_miss_rate(m.miss_rate());
            measured_rate = true;
        }
    }
    let mut e = est.estimate();
    e.dcache_measured = core.dcache.is_none() || measured_rate;
    Ok((profile, e))
}

/// Replay `trace` on one core timing every call (the local timing error's
/// input, [`crate::aggregate::local`]): per call, the callee's entry and
/// its duration, the lossy cycles of fixed sites and collapsed regions
/// included where the replay visits them. For a plain trace, `skip` names
/// the regions an aggregated replay it is compared with steps over: the
/// calls made inside their extents are left out, as that replay never
/// makes them.
pub fn time_calls<S: TraceSource + ?Sized>(
    program: &retrace_program::Program,
    trace: &S,
    core: &CoreModel,
    fidelity: Fidelity,
    skip: &[Region],
) -> Result<Vec<crate::aggregate::local::Call>, ReplayError> {
    let (fixed, regions) = {
        let mut r = TraceReader::new(trace.open()?)?;
        retrace_trace::protocol::loops::LoopDecoder::read_plan(&mut r, 0)?
            .map(|d| (d.fixed().to_vec(), d.regions().to_vec()))
            .unwrap_or_default()
    };
    let per_visit = crate::aggregate::ifelse::corrections(&program.table, core, &fixed);
    let lossy = fixed.iter().map(|f| f.0).zip(per_visit).collect();
    let mut table = program.table.clone();
    let per_extent = crate::aggregate::collapse::region_cycles(&mut table, core, &regions);
    let mut timer = crate::aggregate::local::CallTimer::new(
        Estimator::new(core, fidelity, 0.0),
        lossy,
        &regions,
        per_extent,
        skip,
    );
    replay(&mut table, program.entry, trace, &mut timer)?;
    Ok(timer.calls)
}
