//! Embodiments 4 and 5 (lossy): whole loop nests and whole functions
//! collapsed into one node each, timed by their mean over a profile run,
//! with embodiment 6's loop bias gate. The recording and replay rules are
//! the protocol's ([`retrace_trace::protocol::regions`]); this module
//! decides which regions collapse and what their mean time is.
//!
//! **Functions** (embodiment 5). A function collapses when nothing its
//! calls can execute needs recording for the replay to go on: it is not
//! recursive (the seed leaves recursion alone), neither it nor anything it
//! calls (directly or by tail call) makes an environment call, an indirect
//! call or an indirect jump the code does not resolve, and it is not the
//! program's entry. Bottom-up over the call graph: a function whose callees
//! all collapse collapses, so a program without recursion or I/O in its
//! computation collapses up to the functions that print. Loops that leave
//! by `break` or `return` are inside such functions and go with them.
//!
//! **Nests** (embodiment 4). The largest loop whose only way out is its
//! continue test (X1) and whose inner loops are likewise (X2), with no call
//! (or, at the functions level, calls only to collapsed functions), no
//! environment call and no unresolved indirect jump. A loop that the exact
//! level already records by its trip counts (a Z1 loop, or a loop of fixed
//! if-else sites) is left to it.
//!
//! **The time.** A profile run (the replay of a plain trace) counts, for
//! each region, its extents and how often each partial program ran inside
//! them, each way it was left ([`RegionProfiler`]). On a core, the mean
//! extent costs `Σ C_i T_i / C_entry` with `T_i` the partial program's
//! static cycles ([`region_cycles`]) — the patent's formula for functions,
//! and for a nest the patent's `(T33 + r×T35 + (1−r)×T36) × C_mean` with every
//! branch probability and mean trip count of the nest folded into the
//! counts.
//!
//! **The gate** (embodiment 6): a nest whose loop bias `Var(trip counts) ×
//! N × T_pass` (the outermost loop's trip counts over its `N` extents, the
//! mean cycles of one pass on the gate core) is at or above the threshold
//! stays recorded.

use super::formula::{keep_unaggregated, loop_bias, BadThreshold};
use super::plan::{branch_sites, continues_when_taken, LoopPlan};
use crate::static_pp::StaticCycles;
use crate::walk::{Leave, Visit};
use retrace_program::cfg::Terminator;
use retrace_program::{Addr, FuncId, PpId, PpTable, Program};
use retrace_timing::CoreModel;
use retrace_trace::protocol::regions::{PpCount, Region, RegionKind, RegionTracker, Step, Strayed};
use rustc_hash::FxHashMap;

/// A terminator that a collapsed region may hold: nothing the replay
/// would need from the history to go on (calls are checked apart).
fn plain_terminator(t: &Terminator) -> bool {
    matches!(
        t,
        Terminator::FallThrough
            | Terminator::Branch
            | Terminator::Jump
            | Terminator::Return
            | Terminator::TailCall { .. }
            | Terminator::Call { .. }
            | Terminator::IndirectJump { table: true }
    )
}

/// The functions of `program` that can collapse (see the module docs), by
/// [`FuncId`] index. `indirect` holds the callees each indirect call site
/// reached in the profile: a site whose callees all collapse is a call like
/// any other (one the profile never saw is no call at all; should it call
/// something that cannot be stepped over, the recorder refuses the run).
pub fn collapsible_functions(program: &Program, indirect: &FxHashMap<u64, Vec<u64>>) -> Vec<bool> {
    let cg = &program.call_graph;
    let n = program.functions.len();
    let entry = program.function_containing(program.entry);
    // Callees: direct and tail calls, and the profile's indirect ones; an
    // indirect callee that is no known function makes the caller unfit.
    let mut fit = vec![true; n];
    let mut callees: Vec<Vec<usize>> = cg
        .callees
        .iter()
        .map(|c| c.iter().map(|g| g.index()).collect())
        .collect();
    for (f, cs) in callees.iter_mut().enumerate() {
        let cfg = program.cfg(FuncId(f as u32));
        for b in &cfg.blocks {
            if b.term != Terminator::IndirectCall {
                continue;
            }
            for &t in indirect.get(&b.last.get()).map_or(&[][..], |v| &v[..]) {
                match program.function_at(Addr(t)) {
                    Some(g) => cs.push(g.index()),
                    None => fit[f] = false,
                }
            }
        }
    }
    let mut ok: Vec<bool> = (0..n)
        .map(|f| {
            let cfg = program.cfg(FuncId(f as u32));
            fit[f]
                && !cg.recursive[f]
                && Some(FuncId(f as u32)) != entry
                && !cfg.blocks.is_empty()
                && cfg.blocks.iter().all(|b| {
                    (plain_terminator(&b.term) || b.term == Terminator::IndirectCall)
                        && !b.branch_leaves
                })
        })
        .collect();
    // A function collapses only with all its callees; recursion through
    // indirect calls (which the call graph cannot see) is left alone too:
    // whatever of the fit functions cannot be ordered callees-first is on
    // or above a cycle.
    loop {
        let mut changed = false;
        for f in 0..n {
            if ok[f] && !callees[f].iter().all(|&g| ok[g]) {
                ok[f] = false;
                changed = true;
            }
        }
        // Kahn's order over the fit functions, callees first.
        let mut pending: Vec<usize> = (0..n)
            .map(|f| callees[f].iter().filter(|&&g| ok[g]).count())
            .collect();
        let mut callers: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (f, cs) in callees.iter().enumerate() {
            for &g in cs {
                callers[g].push(f);
            }
        }
        let mut ready: Vec<usize> = (0..n).filter(|&f| ok[f] && pending[f] == 0).collect();
        let mut ordered = vec![false; n];
        while let Some(g) = ready.pop() {
            ordered[g] = true;
            for &f in &callers[g] {
                if ok[f] {
                    pending[f] -= 1;
                    if pending[f] == 0 {
                        ready.push(f);
                    }
                }
            }
        }
        for f in 0..n {
            if ok[f] && !ordered[f] {
                ok[f] = false;
                changed = true;
            }
        }
        if !changed {
            return ok;
        }
    }
}

/// The nests of `program` that can collapse: the largest X1/X2 loops with
/// no call except to a function `callable` allows (an indirect call: only
/// with `indirect`, the callees each site reached in the profile, and when
/// `callable` allows every one), that `exact` does not already record by
/// trip counts.
pub fn collapsible_nests(
    program: &Program,
    exact: &LoopPlan,
    callable: &dyn Fn(Addr) -> bool,
    indirect: Option<&FxHashMap<u64, Vec<u64>>>,
) -> Vec<RegionKind> {
    let mut out = Vec::new();
    for f in 0..program.functions.len() {
        let id = FuncId(f as u32);
        let cfg = program.cfg(id);
        let nest = program.loops(id);
        let eligible: Vec<bool> = nest
            .loops
            .iter()
            .map(|l| {
                l.x1 && l.x2
                    && l.trip.is_some()
                    && l.body.iter().all(|&b| {
                        let b = cfg.block(b);
                        match b.term {
                            Terminator::Call { target } => callable(target),
                            Terminator::IndirectCall => indirect.is_some_and(|m| {
                                m.get(&b.last.get())
                                    .is_none_or(|ts| ts.iter().all(|&t| callable(Addr(t))))
                            }),
                            Terminator::Return | Terminator::TailCall { .. } => false,
                            ref t => plain_terminator(t) && !b.exits_function,
                        }
                    })
            })
            .collect();
        for (k, l) in nest.loops.iter().enumerate() {
            let parent_eligible = l.parent.is_some_and(|p| {
                nest.loops
                    .iter()
                    .position(|m| m.id == p)
                    .is_some_and(|i| eligible[i])
            });
            if !eligible[k] || parent_eligible {
                continue;
            }
            let Some(trip) = l.trip else { continue };
            if exact.at(trip.branch.get()).is_some() {
                continue;
            }
            // The outcome of the test that leaves the loop.
            let Some(cont) = continues_when_taken(cfg, l, trip.branch) else {
                continue;
            };
            let (leave, sites) = (!cont, branch_sites(program, cfg, l));
            out.push(RegionKind::Nest {
                sites,
                exit: trip.branch.get(),
                leave,
            });
        }
    }
    // A function reached under two names lists its loops twice.
    out.sort_by_key(|k| match k {
        RegionKind::Nest { exit, .. } => *exit,
        RegionKind::Function { entry } => *entry,
    });
    out.dedup();
    out
}

/// What the profile saw of one region.
#[derive(Clone, Debug, Default)]
pub struct RegionStats {
    /// Extents.
    pub entries: u64,
    /// Per partial program run inside: `(fall, taken)` executions (the
    /// nest entry's fall-through taken away, see the protocol).
    pub pps: FxHashMap<PpId, (i64, i64)>,
    /// A nest's trip count (continues of its exit test) per extent.
    pub trips: Vec<u64>,
    /// The profile met something the region cannot hold (a return out of
    /// it, a trap inside, the end of the run inside).
    pub unusable: bool,
}

/// A visitor of a plain replay that profiles candidate regions: the
/// planner's input, and the tables the plan records.
pub struct RegionProfiler {
    tracker: RegionTracker,
    /// Per region, a nest's exit test and leaving outcome.
    exits: Vec<Option<(u64, bool)>>,
    /// Continues of the open nest's exit test so far.
    trips: u64,
    /// Per region, what was seen.
    pub stats: Vec<RegionStats>,
}

impl RegionProfiler {
    /// Profile `regions` (their tables are ignored).
    pub fn new(regions: &[Region]) -> RegionProfiler {
        RegionProfiler {
            tracker: RegionTracker::new(regions),
            exits: regions
                .iter()
                .map(|r| match &r.kind {
                    RegionKind::Nest { exit, leave, .. } => Some((*exit, *leave)),
                    RegionKind::Function { .. } => None,
                })
                .collect(),
            trips: 0,
            stats: vec![RegionStats::default(); regions.len()],
        }
    }

    fn count(&mut self, r: u32, pp: PpId, how: Leave, by: i64) {
        let e = self.stats[r as usize].pps.entry(pp).or_default();
        if how == Leave::Branch(true) {
            e.1 += by;
        } else {
            e.0 += by;
        }
    }

    /// The event cannot be placed in the open extent: its region is
    /// unusable.
    fn spoil(&mut self) {
        if let Some(r) = self.tracker.inside() {
            self.stats[r as usize].unusable = true;
            self.tracker.abandon();
        }
    }
}

/// Feed a replay's step — partial program `pp` left by `how` for `next`
/// — to `tracker`: the replay's side of the protocol's region rules, for
/// visitors of a plain replay.
pub fn track(
    tracker: &mut RegionTracker,
    table: &PpTable,
    pp: PpId,
    how: Leave,
    next: PpId,
) -> Result<Step, Strayed> {
    let p = table.get(pp);
    let start_of = |id: PpId| {
        if id == crate::machine::INVALID {
            0
        } else {
            table.get(id).start.get()
        }
    };
    Ok(match how {
        Leave::Branch(taken) => tracker.branch(p.last.get(), taken),
        Leave::Call => {
            let ret = table
                .code()
                .get(p.last)
                .map_or(0, |i| i.fallthrough(p.last.get()));
            tracker.call(start_of(next), ret)
        }
        Leave::Return { .. } => tracker.ret(start_of(next))?,
        _ if tracker.inside().is_some() => Step::Inside,
        _ => Step::Outside,
    })
}

impl Visit<PpTable> for RegionProfiler {
    fn pp(&mut self, table: &PpTable, pp: PpId, how: Leave, next: PpId) {
        let p = table.get(pp);
        let step = match track(&mut self.tracker, table, pp, how, next) {
            Ok(s) => s,
            Err(strayed) => {
                self.stats[strayed.region as usize].unusable = true;
                self.tracker.abandon();
                return;
            }
        };
        let continues = |exit: Option<(u64, bool)>| matches!((exit, how), (Some((site, leave)), Leave::Branch(t)) if site == p.last.get() && t != leave);
        match step {
            Step::Outside => {}
            Step::Inside => {
                let r = self.tracker.inside().unwrap_or(0);
                self.count(r, pp, how, 1);
                if continues(self.exits[r as usize]) {
                    self.trips += 1;
                }
            }
            Step::Enter(r) | Step::Through(r) => {
                self.stats[r as usize].entries += 1;
                let nest = self.exits[r as usize];
                if nest.is_some() {
                    // The replay leaves the entry branch as a fall-through:
                    // the extent holds the difference to its real way.
                    self.count(r, pp, how, 1);
                    self.count(r, pp, Leave::Branch(false), -1);
                    self.trips = u64::from(continues(nest));
                }
                if matches!(step, Step::Through(_)) {
                    self.stats[r as usize].trips.push(0);
                }
            }
            Step::Leave(r) => {
                self.count(r, pp, how, 1);
                if self.exits[r as usize].is_some() {
                    let t = self.trips;
                    self.stats[r as usize].trips.push(t);
                }
            }
        }
    }
    fn last(&mut self, _: &PpTable, _: PpId, _: u32) {
        self.spoil();
    }
    fn trap(&mut self, _: &PpTable, _: PpId, _: u32) {
        self.spoil();
    }
    fn cut(&mut self, _: &PpTable, _: PpId, _: u32) {
        self.spoil();
    }
}

/// One region of a plan, with what the planner saw.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannedRegion {
    /// The region as recorded.
    pub region: Region,
    /// Its name for reports: the function, or `nest at function+offset`.
    pub name: String,
    /// Mean cycles of one extent on the gate core.
    pub mean_cycles: f64,
    /// A nest's loop bias on the gate core (0 for a function).
    pub bias: f64,
}

/// The collapsed regions of a lossy plan.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CollapsePlan {
    /// The regions: functions first, then nests, each by address.
    pub regions: Vec<PlannedRegion>,
    /// Nests the loop bias gate kept recorded.
    pub gated: usize,
}

/// A region's name for reports.
fn region_name(program: &Program, kind: &RegionKind) -> String {
    let at = |a: u64| {
        program
            .function_containing(Addr(a))
            .map(|f| {
                let func = program.function(f);
                format!("{}+{:#x}", func.name, a - func.entry.get())
            })
            .unwrap_or_else(|| format!("{a:#x}"))
    };
    match kind {
        RegionKind::Function { entry } => program
            .function_at(Addr(*entry))
            .map(|f| program.function(f).name.clone())
            .unwrap_or_else(|| format!("{entry:#x}")),
        RegionKind::Nest { exit, .. } => format!("nest at {}", at(*exit)),
    }
}

/// Profile `kinds` over the replay of `profile` (a plain trace of this
/// program): per region, its stats, and the table the replay grew (the
/// stats' partial programs are its).
pub fn profile_regions<S: crate::source::TraceSource + ?Sized>(
    program: &Program,
    profile: &S,
    kinds: &[RegionKind],
) -> Result<(Vec<RegionStats>, PpTable), crate::walk::ReplayError> {
    let shells: Vec<Region> = kinds
        .iter()
        .map(|k| Region {
            kind: k.clone(),
            entries: 1,
            pps: Vec::new(),
        })
        .collect();
    let mut prof = RegionProfiler::new(&shells);
    let mut table = program.table.clone();
    crate::run::replay_visit(&mut table, program.entry, profile, &mut prof)?;
    Ok((prof.stats, table))
}

/// The recorded form of a region from its profile.
fn region_of(table: &PpTable, kind: &RegionKind, stats: &RegionStats) -> Region {
    let mut pps: Vec<PpCount> = stats
        .pps
        .iter()
        .filter(|(_, &(f, t))| f != 0 || t != 0)
        .map(|(&id, &(fall, taken))| PpCount {
            start: table.get(id).start.get(),
            fall,
            taken,
        })
        .collect();
    pps.sort_unstable_by_key(|p| p.start);
    Region {
        kind: kind.clone(),
        entries: stats.entries.max(1),
        pps,
    }
}

impl CollapsePlan {
    /// The regions among `kinds` that ran in `profile` and can be
    /// collapsed there, with their tables; with `loop_threshold`, every
    /// nest whose loop bias on `gate` is at or above it is left out (and
    /// the rest profiled again without it, so that every table holds
    /// exactly what the replay will step over).
    pub fn new<S: crate::source::TraceSource + ?Sized>(
        program: &Program,
        profile: &S,
        kinds: Vec<RegionKind>,
        gate: &CoreModel,
        loop_threshold: Option<f64>,
    ) -> Result<CollapsePlan, PlanError> {
        if let Some(t) = loop_threshold {
            keep_unaggregated(0.0, t)?;
        }
        let mut kinds = kinds;
        let mut gated = 0;
        loop {
            let (stats, mut table) = profile_regions(program, profile, &kinds)?;
            let mut keep = Vec::new();
            let mut planned = Vec::new();
            for (kind, st) in kinds.iter().zip(&stats) {
                if st.entries == 0 || st.unusable {
                    continue;
                }
                let region = region_of(&table, kind, st);
                let mean = region_cycles(&mut table, gate, std::slice::from_ref(&region))[0];
                let bias = if st.trips.is_empty() {
                    0.0
                } else {
                    let passes = st.trips.iter().sum::<u64>().max(1) as f64;
                    loop_bias(&st.trips, mean * st.entries as f64 / passes)
                };
                if let (Some(t), RegionKind::Nest { .. }) = (loop_threshold, kind) {
                    if keep_unaggregated(bias, t)? {
                        gated += 1;
                        continue;
                    }
                }
                keep.push(kind.clone());
                planned.push(PlannedRegion {
                    name: region_name(program, kind),
                    region,
                    mean_cycles: mean,
                    bias,
                });
            }
            if keep.len() == kinds.len() {
                return Ok(CollapsePlan {
                    regions: planned,
                    gated,
                });
            }
            // Something was left out: what the others' extents hold may
            // change (a function called from a gated nest), so profile
            // again with the regions that stay.
            kinds = keep;
        }
    }

    /// The regions as the recorder takes them.
    pub fn regions(&self) -> Vec<Region> {
        self.regions.iter().map(|r| r.region.clone()).collect()
    }
}

/// Per region, the mean cycles of one extent on `core`: `Σ C_i T_i /
/// C_entry` over the region's partial programs, each `T_i` its static
/// cycles the way it was left.
pub fn region_cycles(table: &mut PpTable, core: &CoreModel, regions: &[Region]) -> Vec<f64> {
    let ids: Vec<Vec<Option<PpId>>> = regions
        .iter()
        .map(|r| {
            r.pps
                .iter()
                .map(|p| table.ensure(Addr(p.start)).ok())
                .collect()
        })
        .collect();
    let all: Vec<PpId> = ids.iter().flatten().flatten().copied().collect();
    let costs = StaticCycles::new(core, table, &all);
    regions
        .iter()
        .zip(&ids)
        .map(|(r, ids)| {
            let total: f64 = r
                .pps
                .iter()
                .zip(ids)
                .filter_map(|(p, id)| {
                    let c = costs.get((*id)?)?;
                    let taken = c.taken.unwrap_or(c.cycles);
                    Some(p.fall as f64 * c.cycles as f64 + p.taken as f64 * taken as f64)
                })
                .sum();
            total / r.entries.max(1) as f64
        })
        .collect()
}

/// Why a collapse plan could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// The profile could not be replayed.
    #[error("the profile trace: {0}")]
    Profile(#[from] crate::walk::ReplayError),
    /// A bias threshold that is no threshold.
    #[error(transparent)]
    Threshold(#[from] BadThreshold),
}
