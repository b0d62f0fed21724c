//! Aggregated loops (US patent 8,448,140, embodiment 2): the recording protocol's
//! rules for the loops whose continue test writes no branch bits. Instead,
//! each execution of such a loop is summarised by its trip count in the
//! hart's *loop-runs* stream ([`StreamKind::LoopRuns`]), run-length encoded
//! per loop. `docs/FORMATS.md` ("Aggregated loops") states the rules.
//!
//! The *plan* — the continue tests (sites) and which outcome of each stays
//! in the loop — is written first, so that a trace carries the plan it was
//! recorded with and the replay applies that plan, not one of its own.
//!
//! An *execution* of an aggregated loop is a run of consecutive outcomes
//! at its site; its *count* is how many of them continued. It ends at the
//! outcome that leaves, or — when something else comes first — at a
//! branch elsewhere, at a trap taken in the middle of a partial program,
//! at a segment's mid-gap close (see `docs/FORMATS.md`, "Closing rule"; the
//! replay ends it where it crosses that close), or at the end of the run
//! (then it ended after `count` continues and no exit). The first branch
//! after a trap is always written as a bit
//! (the replay cannot tell which partial program a trap handler starts
//! with before it has walked it). Executions of one loop that follow each
//! other with equal counts form a *run* `(loop, count, repeats)`; a run is
//! written when the next execution of its loop has another count, and
//! every run not yet written is written just before a segment closes and at
//! the end of the trace. So the runs of the executions that happen in one
//! segment's window are all in that segment, and a replay that reads the
//! whole segment's runs when it meets the window's first execution has
//! every count it needs for the window — per loop in order, which makes
//! the counts unambiguous (unlike the patent's one shared de-duplicated
//! stream: US patent 8,448,140, executions 8, 8, 4).
//!
//! A plan may also name *fixed sites* (embodiment 3, if-else by
//! probability; lossy): conditional branches whose two successors end at
//! the same instruction, so either way the walk rejoins the run at the
//! next branch. Such a site writes nothing; the replay takes its *fixed*
//! outcome every time, and the estimate adds the probability-weighted
//! difference in time. The replay then walks a different number of
//! instructions than the run executed: the recorder adds up the difference
//! (each site's `walk_delta`, the length of the fixed successor less the
//! other one's, whenever the run went the other way), and the trace
//! stores the walk's total for the replay to stop at ([`LoopStats::walk_adjust`]).

use super::regions::{unzigzag, zigzag, PpCount, Region, RegionKind};
use super::Encoder;
use crate::{StreamKind, TraceError, TraceReader, TraceWriter};
use rustc_hash::FxHashMap;
use std::collections::VecDeque;
use std::io::{Read, Write};

/// The first record of a plan: its layout's version (1: loops only; 2:
/// loops, then fixed sites).
pub const PLAN_VERSION: u64 = 1;
/// The layout of a plan with fixed sites.
pub const PLAN_VERSION_FIXED: u64 = 2;
/// The layout of a plan with fixed sites and collapsed regions
/// ([`super::regions`]).
pub const PLAN_VERSION_REGIONS: u64 = 3;
/// The unit of a fixed site's recorded probability: parts per million.
pub const PROBABILITY_UNIT: u64 = 1_000_000;
/// Aggregated sites a plan may name (bounds the replay's allocation on a
/// damaged trace).
pub const MAX_SITES: u64 = 1 << 20;

const KIND: StreamKind = StreamKind::LoopRuns;

/// What an aggregated site is: a loop's continue test (the loop's index
/// in the plan and the outcome that continues), or a fixed site (its index
/// among the fixed sites and its fixed outcome).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Site {
    Loop(u32, bool),
    Fixed(u32, bool),
}

/// Aggregated sites by address.
fn site_map(loops: &[(u64, bool)], fixed: &[FixedSite]) -> FxHashMap<u64, Site> {
    let mut m: FxHashMap<u64, Site> = loops
        .iter()
        .enumerate()
        .map(|(i, &(s, c))| (s, Site::Loop(i as u32, c)))
        .collect();
    for (k, f) in fixed.iter().enumerate() {
        m.entry(f.site).or_insert(Site::Fixed(k as u32, f.outcome));
    }
    m
}

/// A fixed site (embodiment 3): a conditional branch that writes no bit and
/// that the replay always takes one way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FixedSite {
    /// The branch's address.
    pub site: u64,
    /// The outcome the replay takes (`true`: taken).
    pub outcome: bool,
    /// How often the branch was taken in the profile it was planned from,
    /// in [`PROBABILITY_UNIT`]s (recorded in the plan; the estimate weighs
    /// the two ways' times with it).
    pub taken_ppm: u32,
    /// Instructions the replay's way is longer than the other one, up to
    /// where they join (the recorder's bookkeeping; not recorded).
    pub walk_delta: i64,
}

/// Everything a recording aggregates: the loops whose trip counts are
/// recorded (continue test, continuing outcome), the fixed if-else sites
/// and the collapsed regions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// Aggregated loops: continue test and the outcome that continues.
    pub loops: Vec<(u64, bool)>,
    /// Fixed if-else sites.
    pub fixed: Vec<FixedSite>,
    /// Collapsed regions (nests and functions).
    pub regions: Vec<Region>,
}

impl Plan {
    /// Whether the plan aggregates nothing.
    pub fn is_empty(&self) -> bool {
        self.loops.is_empty() && self.fixed.is_empty() && self.regions.is_empty()
    }

    /// Whether the plan loses information (fixed sites or collapsed
    /// regions): the replay then walks other instructions than the run.
    pub fn is_lossy(&self) -> bool {
        !self.fixed.is_empty() || !self.regions.is_empty()
    }
}

/// Write `regions` to `hart`'s plan (layout [`PLAN_VERSION_REGIONS`]; see
/// `docs/FORMATS.md`).
fn write_regions<W: Write>(w: &mut TraceWriter<W>, hart: u16, regions: &[Region]) {
    w.record(hart, KIND, regions.len() as u64);
    for r in regions {
        match &r.kind {
            RegionKind::Function { entry } => {
                w.record(hart, KIND, 0);
                w.record(hart, KIND, *entry);
            }
            RegionKind::Nest { sites, exit, leave } => {
                w.record(hart, KIND, 1);
                w.record(hart, KIND, *exit);
                w.record(hart, KIND, u64::from(*leave));
                w.record(hart, KIND, sites.len() as u64);
                let mut prev = 0;
                for &s in sites {
                    w.record(hart, KIND, s - prev);
                    prev = s;
                }
            }
        }
        w.record(hart, KIND, r.entries);
        w.record(hart, KIND, r.pps.len() as u64);
        for p in &r.pps {
            w.record(hart, KIND, p.start);
            w.record(hart, KIND, zigzag(p.fall));
            w.record(hart, KIND, zigzag(p.taken));
        }
    }
}

/// Read the regions of a plan (layout [`PLAN_VERSION_REGIONS`]), checking
/// every count and order before it sizes anything.
fn read_regions(
    next: &mut dyn FnMut() -> Result<u64, TraceError>,
    bad: &dyn Fn(String) -> TraceError,
) -> Result<Vec<Region>, TraceError> {
    let n = next()?;
    if n > MAX_SITES {
        return Err(bad(format!("{n} collapsed regions")));
    }
    let mut regions = Vec::new();
    for k in 0..n {
        let kind = match next()? {
            0 => RegionKind::Function { entry: next()? },
            1 => {
                let exit = next()?;
                let leave = next()?;
                let m = next()?;
                if leave > 1 || m > MAX_SITES {
                    return Err(bad(format!(
                        "region {k}: a nest with outcome {leave} and {m} branches"
                    )));
                }
                let mut sites = Vec::new();
                let mut prev = 0u64;
                for j in 0..m {
                    let d = next()?;
                    let Some(s) = prev.checked_add(d).filter(|_| j == 0 || d > 0) else {
                        return Err(bad(format!(
                            "region {k}: branch {j} is not after the previous one"
                        )));
                    };
                    sites.push(s);
                    prev = s;
                }
                if sites.binary_search(&exit).is_err() {
                    return Err(bad(format!(
                        "region {k}: the exit test {exit:#x} is not one of the nest's branches"
                    )));
                }
                RegionKind::Nest {
                    sites,
                    exit,
                    leave: leave == 1,
                }
            }
            other => {
                return Err(bad(format!(
                    "region {k} is of kind {other}, this retrace reads 0 and 1"
                )))
            }
        };
        let entries = next()?;
        let m = next()?;
        if entries == 0 || m > MAX_SITES {
            return Err(bad(format!(
                "region {k}: {entries} extents, {m} partial programs"
            )));
        }
        let mut pps = Vec::new();
        for _ in 0..m {
            let (start, fall, taken) = (next()?, next()?, next()?);
            pps.push(PpCount {
                start,
                fall: unzigzag(fall),
                taken: unzigzag(taken),
            });
        }
        regions.push(Region { kind, entries, pps });
    }
    Ok(regions)
}

/// One hart's aggregation state while recording.
#[derive(Clone, Default)]
pub(super) struct HartLoops {
    /// The execution in progress: loop index and continues so far.
    open: Option<(u32, u64)>,
    /// Per loop, the run not yet written: `(count, repeats)`.
    pending: Vec<Option<(u64, u64)>>,
    /// The next branch is written as a bit whatever its site (the first
    /// after a trap).
    raw_next: bool,
}

/// What a [`LoopEncoder`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoopStats {
    /// Outcomes at aggregated sites: the branch bits not written.
    pub tests: u64,
    /// Executions of aggregated loops.
    pub executions: u64,
    /// Runs written.
    pub runs: u64,
    /// Outcomes at fixed sites (bits not written either).
    pub fixed: u64,
    /// Of those, the ones the run took the other way than the replay will.
    pub fixed_other: u64,
    /// Instructions the replay walks more than the run executed (negative:
    /// fewer), from the fixed sites and the collapsed regions.
    pub walk_adjust: i64,
    /// Extents of collapsed regions (nothing recorded for them).
    pub collapsed: u64,
}

/// Every hart's aggregation state while recording, kept in the
/// [`Encoder`] (empty when no loop is aggregated): the encoder's segment
/// closes end the executions in progress and write the pending runs.
#[derive(Clone, Default)]
pub(super) struct LoopState {
    harts: Vec<HartLoops>,
    pub(super) stats: LoopStats,
    /// The plan is lossy (fixed sites or collapsed regions): the trace
    /// gets a walk block.
    pub(super) lossy: bool,
}

impl LoopState {
    /// Write every pending run of every hart (before a segment closes
    /// before a branch bit).
    pub(super) fn flush<W: Write>(&mut self, w: &mut TraceWriter<W>) {
        for (hart, h) in self.harts.iter_mut().enumerate() {
            for (i, p) in h.pending.iter_mut().enumerate() {
                if let Some((count, repeats)) = p.take() {
                    write_run(w, &mut self.stats, hart as u16, i as u32, count, repeats);
                }
            }
        }
    }

    /// A segment closes mid-gap: every execution in progress ends here (the
    /// replay ends it where it crosses this close), and every pending run
    /// is written.
    pub(super) fn cut<W: Write>(&mut self, w: &mut TraceWriter<W>) {
        for (hart, h) in self.harts.iter_mut().enumerate() {
            if let Some((j, c)) = h.open.take() {
                end(w, h, &mut self.stats, hart as u16, j, c);
            }
        }
        self.flush(w);
    }
}

/// The recorder's side: sits in front of [`Encoder::branch`] and decides,
/// per branch, whether it writes a bit or counts towards a loop.
pub struct LoopEncoder {
    sites: FxHashMap<u64, Site>,
    /// Per fixed site: the walk's extra instructions when the run goes the
    /// other way.
    deltas: Vec<i64>,
}

impl LoopEncoder {
    /// Aggregate the loops whose continue tests are `sites` (address and
    /// continuing outcome, addresses distinct), and write the plan to every
    /// hart's loop-runs stream. Call before any other event is encoded.
    pub fn new<W: Write>(enc: &mut Encoder<W>, sites: &[(u64, bool)]) -> LoopEncoder {
        LoopEncoder::with_fixed(enc, sites, &[])
    }

    /// [`LoopEncoder::new`], and make `fixed` fixed sites (distinct from
    /// the loops' sites; a site named twice keeps its first role).
    pub fn with_fixed<W: Write>(
        enc: &mut Encoder<W>,
        sites: &[(u64, bool)],
        fixed: &[FixedSite],
    ) -> LoopEncoder {
        LoopEncoder::with_plan(
            enc,
            &Plan {
                loops: sites.to_vec(),
                fixed: fixed.to_vec(),
                regions: Vec::new(),
            },
        )
    }

    /// Aggregate as `plan` says, and write the plan to every hart's
    /// loop-runs stream (layout [`PLAN_VERSION`] for loops alone,
    /// [`PLAN_VERSION_FIXED`] with fixed sites, [`PLAN_VERSION_REGIONS`]
    /// with collapsed regions). Call before any other event is encoded.
    /// Collapsed regions are the recorder's to follow
    /// ([`super::regions::RegionTracker`]); it reports each extent with
    /// [`LoopEncoder::collapsed`].
    pub fn with_plan<W: Write>(enc: &mut Encoder<W>, plan: &Plan) -> LoopEncoder {
        let mut sorted = plan.loops.clone();
        sorted.sort_unstable();
        sorted.dedup_by_key(|s| s.0);
        let mut fixed = plan.fixed.clone();
        fixed.sort_unstable_by_key(|f| f.site);
        fixed.dedup_by_key(|f| f.site);
        fixed.retain(|f| sorted.binary_search_by_key(&f.site, |s| s.0).is_err());
        let regions = &plan.regions;
        let harts = enc.harts.len();
        let layout = if !regions.is_empty() {
            PLAN_VERSION_REGIONS
        } else if !fixed.is_empty() {
            PLAN_VERSION_FIXED
        } else {
            PLAN_VERSION
        };
        for h in 0..harts as u16 {
            let w = &mut enc.writer;
            w.record(h, KIND, layout);
            w.record(h, KIND, sorted.len() as u64);
            let mut prev = 0;
            for &(s, c) in &sorted {
                // Ascending addresses, as differences: short varints.
                w.record(h, KIND, s - prev);
                w.record(h, KIND, u64::from(c));
                prev = s;
            }
            if layout >= PLAN_VERSION_FIXED {
                w.record(h, KIND, fixed.len() as u64);
                let mut prev = 0;
                for f in &fixed {
                    w.record(h, KIND, f.site - prev);
                    w.record(h, KIND, u64::from(f.outcome));
                    w.record(h, KIND, u64::from(f.taken_ppm).min(PROBABILITY_UNIT));
                    prev = f.site;
                }
            }
            if layout >= PLAN_VERSION_REGIONS {
                write_regions(w, h, regions);
            }
        }
        enc.loops = LoopState {
            harts: vec![
                HartLoops {
                    pending: vec![None; sorted.len()],
                    ..HartLoops::default()
                };
                harts
            ],
            stats: LoopStats::default(),
            lossy: !fixed.is_empty() || !regions.is_empty(),
        };
        LoopEncoder {
            sites: site_map(&sorted, &fixed),
            deltas: fixed.iter().map(|f| f.walk_delta).collect(),
        }
    }

    /// The recorder stepped over an extent of a collapsed region in which
    /// the run executed `instructions` that the replay will not walk.
    pub fn collapsed<W: Write>(&mut self, enc: &mut Encoder<W>, instructions: u64) {
        let stats = &mut enc.loops.stats;
        stats.collapsed += 1;
        stats.walk_adjust -= instructions as i64;
    }

    /// What was aggregated so far in `enc`'s run.
    pub fn stats<W: Write>(&self, enc: &Encoder<W>) -> LoopStats {
        enc.loops.stats
    }

    /// A conditional branch of `hart` at `site`, taken or not.
    #[inline]
    pub fn branch<W: Write>(&mut self, enc: &mut Encoder<W>, hart: u16, site: u64, taken: bool) {
        match self.sites.get(&site) {
            Some(&Site::Fixed(k, outcome)) if !enc.loops.harts[usize::from(hart)].raw_next => {
                // Nothing is written and nothing ends: the replay takes
                // `outcome` and rejoins the run where the two ways meet.
                let stats = &mut enc.loops.stats;
                stats.fixed += 1;
                if taken != outcome {
                    stats.fixed_other += 1;
                    stats.walk_adjust += self.deltas[k as usize];
                }
            }
            Some(&Site::Loop(i, cont)) if !enc.loops.harts[usize::from(hart)].raw_next => {
                // A test at an aggregated site is an event: its run may be
                // written, so a mid-gap close may come first.
                enc.event();
                let LoopState { harts, stats, .. } = &mut enc.loops;
                let h = &mut harts[usize::from(hart)];
                let w = &mut enc.writer;
                stats.tests += 1;
                let count = match h.open.take() {
                    Some((j, c)) if j == i => c,
                    Some((j, c)) => {
                        end(w, h, stats, hart, j, c);
                        0
                    }
                    None => 0,
                };
                if taken == cont {
                    h.open = Some((i, count + 1));
                } else {
                    end(w, h, stats, hart, i, count);
                }
            }
            _ => {
                let LoopState { harts, stats, .. } = &mut enc.loops;
                let h = &mut harts[usize::from(hart)];
                h.raw_next = false;
                if let Some((j, c)) = h.open.take() {
                    end(&mut enc.writer, h, stats, hart, j, c);
                }
                // Writes the pending runs first if the segment closes.
                enc.branch(hart, taken);
            }
        }
    }

    /// A trap of `hart` in the middle of a partial program (as
    /// [`Encoder::trap`]): ends the execution in progress, and the next
    /// branch writes a bit.
    pub fn trap<W: Write>(&mut self, enc: &mut Encoder<W>, hart: u16) {
        let LoopState { harts, stats, .. } = &mut enc.loops;
        let h = &mut harts[usize::from(hart)];
        if let Some((j, c)) = h.open.take() {
            end(&mut enc.writer, h, stats, hart, j, c);
        }
        h.raw_next = true;
    }

    /// The end of the run: ends the executions in progress and writes every
    /// run not yet written. Call before [`Encoder::finish`].
    pub fn finish<W: Write>(&mut self, enc: &mut Encoder<W>) {
        enc.loops.cut(&mut enc.writer);
    }
}

/// An execution of loop `i` ended after `count` continues: extend its
/// pending run, or write that run and start another.
fn end<W: Write>(
    w: &mut TraceWriter<W>,
    h: &mut HartLoops,
    stats: &mut LoopStats,
    hart: u16,
    i: u32,
    count: u64,
) {
    stats.executions += 1;
    let p = &mut h.pending[i as usize];
    match p {
        Some((c, r)) if *c == count => *r += 1,
        _ => {
            if let Some((c, r)) = p.replace((count, 1)) {
                write_run(w, stats, hart, i, c, r);
            }
        }
    }
}

fn write_run<W: Write>(
    w: &mut TraceWriter<W>,
    stats: &mut LoopStats,
    hart: u16,
    i: u32,
    count: u64,
    repeats: u64,
) {
    stats.runs += 1;
    w.record(hart, KIND, u64::from(i));
    w.record(hart, KIND, count);
    w.record(hart, KIND, repeats);
}

/// The replay's side, for one hart: the plan read from the trace, and the
/// outcome of each test at an aggregated site, from the counts.
pub struct LoopDecoder {
    hart: u16,
    plan: Vec<(u64, bool)>,
    /// The fixed sites: address, fixed outcome, taken probability in
    /// [`PROBABILITY_UNIT`]s.
    fixed: Vec<(u64, bool, u32)>,
    /// Per fixed site, outcomes given.
    fixed_visits: Vec<u64>,
    /// The collapsed regions (the replay's to step over).
    regions: Vec<Region>,
    sites: FxHashMap<u64, Site>,
    /// Per loop, the runs read and not yet used up.
    queues: Vec<VecDeque<(u64, u64)>>,
    /// The execution in progress: loop, its count, continues given so far.
    open: Option<(u32, u64, u64)>,
    /// The reader's mid-gap crossings when the execution in progress
    /// started: one more ends it ([`TraceReader::mid_gap_crossings`]).
    open_crossings: u64,
    /// The next branch is a bit whatever its site (the first after a trap).
    raw_next: bool,
    /// Outcomes given at aggregated sites (bits the trace does not hold).
    tests: u64,
}

impl LoopDecoder {
    /// The plan at the start of `hart`'s loop-runs stream, if the trace was
    /// recorded with one (read when the reader has just been opened).
    pub fn read_plan<R: Read>(
        r: &mut TraceReader<R>,
        hart: u16,
    ) -> Result<Option<LoopDecoder>, TraceError> {
        if r.peek_record(hart, KIND)?.is_none() {
            return Ok(None);
        }
        let bad = |r: &TraceReader<R>, what: String| TraceError::Desync {
            segment: r.segment(),
            what: format!("hart {hart}'s aggregation plan: {what}"),
        };
        let next = |r: &mut TraceReader<R>| {
            r.next_record(hart, KIND)?.ok_or(TraceError::Exhausted {
                hart,
                what: "the aggregation plan",
            })
        };
        let version = next(r)?;
        if !(PLAN_VERSION..=PLAN_VERSION_REGIONS).contains(&version) {
            return Err(bad(
                r,
                format!("layout {version}, this retrace reads {PLAN_VERSION} to {PLAN_VERSION_REGIONS}; re-record the trace"),
            ));
        }
        let n = next(r)?;
        if n > MAX_SITES {
            return Err(bad(r, format!("{n} aggregated loops")));
        }
        let mut plan = Vec::with_capacity(n as usize);
        let mut prev = 0u64;
        for k in 0..n {
            let delta = next(r)?;
            let cont = next(r)?;
            let site = prev.checked_add(delta).filter(|_| k == 0 || delta > 0);
            let (Some(site), 0 | 1) = (site, cont) else {
                return Err(bad(
                    r,
                    format!("loop {k} is not a site after the previous one"),
                ));
            };
            plan.push((site, cont == 1));
            prev = site;
        }
        let mut fixed = Vec::new();
        if version >= PLAN_VERSION_FIXED {
            let m = next(r)?;
            if m > MAX_SITES {
                return Err(bad(r, format!("{m} fixed sites")));
            }
            let mut prev = 0u64;
            for k in 0..m {
                let delta = next(r)?;
                let outcome = next(r)?;
                let ppm = next(r)?;
                let site = prev.checked_add(delta).filter(|_| k == 0 || delta > 0);
                let (Some(site), 0 | 1, 0..=PROBABILITY_UNIT) = (site, outcome, ppm) else {
                    return Err(bad(
                        r,
                        format!("fixed site {k} is not a site after the previous one with an outcome and a probability"),
                    ));
                };
                if plan.binary_search_by_key(&site, |p| p.0).is_ok() {
                    return Err(bad(
                        r,
                        format!("fixed site {k} at {site:#x} is also an aggregated loop's test"),
                    ));
                }
                fixed.push((site, outcome == 1, ppm as u32));
                prev = site;
            }
        }
        let regions = if version >= PLAN_VERSION_REGIONS {
            let segment = r.segment();
            read_regions(&mut || next(r), &|what| TraceError::Desync {
                segment,
                what: format!("hart {hart}'s aggregation plan: {what}"),
            })?
        } else {
            Vec::new()
        };
        let fixed_sites: Vec<FixedSite> = fixed
            .iter()
            .map(|&(site, outcome, taken_ppm)| FixedSite {
                site,
                outcome,
                taken_ppm,
                walk_delta: 0,
            })
            .collect();
        Ok(Some(LoopDecoder {
            hart,
            sites: site_map(&plan, &fixed_sites),
            fixed_visits: vec![0; fixed.len()],
            fixed,
            regions,
            queues: vec![VecDeque::new(); plan.len()],
            plan,
            open: None,
            open_crossings: 0,
            raw_next: false,
            tests: 0,
        }))
    }

    /// The plan: each aggregated continue test and its continuing outcome,
    /// by address.
    pub fn plan(&self) -> &[(u64, bool)] {
        &self.plan
    }

    /// Outcomes given at aggregated sites so far: branches the replay
    /// walked that the trace holds no bits for (fixed sites included).
    pub fn tests(&self) -> u64 {
        self.tests + self.fixed_visits.iter().sum::<u64>()
    }

    /// The fixed sites: address, the outcome the replay takes, and the
    /// taken probability recorded with the plan, in [`PROBABILITY_UNIT`]s.
    pub fn fixed(&self) -> &[(u64, bool, u32)] {
        &self.fixed
    }

    /// The plan's collapsed regions.
    pub fn regions(&self) -> &[Region] {
        &self.regions
    }

    /// Per fixed site (in [`LoopDecoder::fixed`]'s order), the outcomes
    /// given so far.
    pub fn fixed_visits(&self) -> &[u64] {
        &self.fixed_visits
    }

    /// The next conditional branch, at `site`: from the counts when the site
    /// is aggregated, otherwise from the branch bits (and it ends the
    /// execution in progress).
    #[inline]
    pub fn branch<R: Read>(
        &mut self,
        r: &mut TraceReader<R>,
        site: u64,
    ) -> Result<Option<bool>, TraceError> {
        match self.sites.get(&site) {
            Some(&Site::Fixed(k, outcome)) if !self.raw_next => {
                self.fixed_visits[k as usize] += 1;
                Ok(Some(outcome))
            }
            Some(&Site::Loop(i, cont)) if !self.raw_next => self.test(r, i, cont).map(Some),
            _ => {
                self.raw_next = false;
                self.end_open(r, "a branch elsewhere")?;
                r.next_bit(self.hart)
            }
        }
    }

    fn test<R: Read>(
        &mut self,
        r: &mut TraceReader<R>,
        i: u32,
        cont: bool,
    ) -> Result<bool, TraceError> {
        // A segment closed mid-gap since the execution began (the replay
        // is at that close once the segment is drained): it ended there.
        r.cross_mid_gap()?;
        if self.open.is_some() && r.mid_gap_crossings() != self.open_crossings {
            self.end_open(r, "a segment's mid-gap close")?;
        }
        if self.open.is_some_and(|(j, _, _)| j != i) {
            self.end_open(r, "another aggregated loop")?;
        }
        let (j, count, done) = match self.open {
            Some(o) => o,
            None => {
                self.open_crossings = r.mid_gap_crossings();
                (i, self.start(r, i)?, 0)
            }
        };
        self.tests += 1;
        if done < count {
            self.open = Some((j, count, done + 1));
            Ok(cont)
        } else {
            self.open = None;
            Ok(!cont)
        }
    }

    /// A new execution of loop `i`: its count, from the loop's runs (read
    /// from the loaded segment first if it holds runs not yet read).
    fn start<R: Read>(&mut self, r: &mut TraceReader<R>, i: u32) -> Result<u64, TraceError> {
        while r.has_records(self.hart, KIND)? {
            let mut next = || {
                r.next_record(self.hart, KIND)?
                    .ok_or(TraceError::Exhausted {
                        hart: self.hart,
                        what: "a loop run",
                    })
            };
            let (l, count, repeats) = (next()?, next()?, next()?);
            let Some(q) = self.queues.get_mut(l as usize).filter(|_| repeats > 0) else {
                return Err(TraceError::Desync {
                    segment: r.segment(),
                    what: format!(
                        "a run of {repeats} executions of aggregated loop {l}, the plan has {}",
                        self.plan.len()
                    ),
                });
            };
            q.push_back((count, repeats));
        }
        let q = &mut self.queues[i as usize];
        let Some(front) = q.front_mut() else {
            return Err(TraceError::Exhausted {
                hart: self.hart,
                what: "the trip count of an aggregated loop",
            });
        };
        let count = front.0;
        front.1 -= 1;
        if front.1 == 0 {
            q.pop_front();
        }
        Ok(count)
    }

    /// The execution in progress ends (before its exit outcome): it must
    /// have given every continue its count holds.
    fn end_open<R: Read>(
        &mut self,
        r: &TraceReader<R>,
        why: &'static str,
    ) -> Result<(), TraceError> {
        match self.open.take() {
            Some((i, count, done)) if done != count => Err(TraceError::Desync {
                segment: r.segment(),
                what: format!(
                    "aggregated loop at {:#x} recorded {count} passes, the replay left it after {done} for {why}",
                    self.plan[i as usize].0
                ),
            }),
            _ => Ok(()),
        }
    }

    /// A trap in the middle of a partial program: the execution in progress
    /// ends, and the next branch is read as a bit.
    pub fn trap<R: Read>(&mut self, r: &TraceReader<R>) -> Result<(), TraceError> {
        self.raw_next = true;
        self.end_open(r, "a trap")
    }

    /// The replay ended: every run recorded must have been used.
    pub fn finish<R: Read>(&mut self, r: &TraceReader<R>) -> Result<(), TraceError> {
        self.end_open(r, "the end of the run")?;
        let left: u64 = self.queues.iter().flatten().map(|&(_, n)| n).sum();
        if left > 0 {
            return Err(TraceError::Desync {
                segment: r.segment(),
                what: format!(
                    "the replay ended but hart {} has {left} executions of aggregated loops left unread",
                    self.hart
                ),
            });
        }
        Ok(())
    }
}
