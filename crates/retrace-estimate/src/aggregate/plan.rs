//! The aggregation plan: which regions of a program collapse.
//!
//! Embodiment 2 (loops): every natural loop that satisfies seed condition
//! **Z1** at machine level — its body holds no conditional branch other
//! than its continue test, no call, no environment call and no indirect
//! jump (`retrace_program::loops`: X1, one exit branch and no other way
//! out, is part of Z1) — stops recording its continue test's outcomes and
//! records each execution's trip count instead, in the trace's per-loop
//! run-length stream (`docs/FORMATS.md`). That is exact whatever the count
//! depends on, so the plan aggregates every Z1 loop; the patent's types are
//! reported, not used as a gate:
//!
//! - **type 1** (trip count constant for the whole run) and **type 2**
//!   (fixed per execution) by the patent's *static* rule where the machine
//!   code decides it: each operand of the continue test is an induction
//!   variable (set to a constant before the loop, updated only by
//!   `addi r, r, c` inside), a constant, or — for type 2 — loop-invariant
//!   (not written inside). This is [`retrace_program::TripCount`];
//! - where the code does not decide it ([`LoopType::Unknown`]: the bound is
//!   computed in the loop, loaded from memory, …) the run decides: the
//!   count stream of a recording shows whether a loop kept one count
//!   (type 1 in that run) or not ([`LoopType::observed`]).

use retrace_program::{Addr, EdgeKind, FuncId, LoopId, Program, TripCount};

/// How much of the program a recording aggregates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// Nothing: one bit per conditional branch (embodiment 1).
    None,
    /// Loops without inner branches or calls (embodiment 2, exact).
    Loops,
    /// Loops, and if-else branches by probability (embodiment 3, lossy;
    /// [`super::ifelse`]).
    IfElse,
    /// As [`Level::IfElse`], and loop nests without calls collapsed by
    /// their mean time (embodiment 4, lossy; [`super::collapse`]).
    Nested,
    /// As [`Level::Nested`], and functions collapsed by their mean time
    /// per call, nests that call only such functions too (embodiment 5,
    /// lossy): everything the seed aggregates.
    Functions,
}

impl Level {
    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Level::None => "none",
            Level::Loops => "loops",
            Level::IfElse => "+if-else",
            Level::Nested => "+nested",
            Level::Functions => "+functions",
        }
    }
}

/// The patent's loop types, as far as embodiment 2 distinguishes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LoopType {
    /// Type 1: the same trip count every time the loop runs.
    Constant,
    /// Type 2: a trip count fixed for each execution of the loop.
    PerExecution,
    /// Not decided by the code: the count depends on data the loop reads
    /// or computes (still exact to aggregate: the count is recorded).
    Unknown,
}

impl LoopType {
    /// The patent's number (1, 2), or `None` for a type the code leaves open.
    pub fn seed_type(self) -> Option<u8> {
        match self {
            LoopType::Constant => Some(1),
            LoopType::PerExecution => Some(2),
            LoopType::Unknown => None,
        }
    }

    /// The type a run shows: the counts of every execution of the loop in
    /// that run (in any order). One distinct count is type 1 for that run;
    /// more is type 2; no execution, `None`.
    pub fn observed(counts: impl IntoIterator<Item = u64>) -> Option<LoopType> {
        let mut it = counts.into_iter();
        let first = it.next()?;
        Some(if it.all(|c| c == first) {
            LoopType::Constant
        } else {
            LoopType::PerExecution
        })
    }

    /// Short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            LoopType::Constant => "type 1",
            LoopType::PerExecution => "type 2",
            LoopType::Unknown => "data-dependent",
        }
    }
}

impl From<TripCount> for LoopType {
    fn from(t: TripCount) -> LoopType {
        match t {
            TripCount::Constant => LoopType::Constant,
            TripCount::PerExecution => LoopType::PerExecution,
            TripCount::Unknown => LoopType::Unknown,
        }
    }
}

/// One aggregated loop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AggLoop {
    /// The function it is in.
    pub function: FuncId,
    /// Its id in that function's loop nest.
    pub loop_id: LoopId,
    /// Its header's address.
    pub header: Addr,
    /// The continue test: the loop's only conditional branch.
    pub site: Addr,
    /// Which outcome of the test stays in the loop (`true`: taken).
    pub continue_taken: bool,
    /// The patent's type by the static rule.
    pub static_type: LoopType,
}

/// Which loops a recording aggregates, sorted by continue-test address.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoopPlan {
    /// The loops, by [`AggLoop::site`], each site once.
    pub loops: Vec<AggLoop>,
}

impl LoopPlan {
    /// The plan of `level` for `program`.
    pub fn new(program: &Program, level: Level) -> LoopPlan {
        match level {
            Level::None => LoopPlan::default(),
            _ => LoopPlan::z1_loops(program),
        }
    }

    /// Every Z1 loop of the program with a continue test whose in-loop
    /// successor the function's graph shows.
    fn z1_loops(program: &Program) -> LoopPlan {
        LoopPlan::admitting_fixed(program, &[])
    }

    /// The Z1 loops, and the loops that would be Z1 but for conditional
    /// branches that are all in `fixed` (sorted): fixed if-else sites write
    /// nothing and do not interrupt a loop's execution, so such a loop's
    /// trip counts record as a Z1 loop's — the patent's type-3 loop made
    /// type 1 or 2 once its if-else body is aggregated (embodiment 3).
    pub fn admitting_fixed(program: &Program, fixed: &[u64]) -> LoopPlan {
        let mut loops: Vec<AggLoop> = Vec::new();
        for f in 0..program.functions.len() {
            let function = FuncId(f as u32);
            let cfg = program.cfg(function);
            let nest = program.loops(function);
            let admitted = |l: &&retrace_program::Loop| {
                if l.z1 {
                    return true;
                }
                let Some(trip) = l.trip else { return false };
                if fixed.is_empty()
                    || !l.x1
                    || l.calls != 0
                    || fixed.binary_search(&trip.branch.get()).is_ok()
                {
                    return false;
                }
                // Every other conditional branch of the body is fixed.
                let others: Vec<u64> = branch_sites(program, cfg, l)
                    .into_iter()
                    .filter(|&a| a != trip.branch.get())
                    .collect();
                others.len() as u32 + 1 == l.branches
                    && others.iter().all(|a| fixed.binary_search(a).is_ok())
            };
            for l in nest.loops.iter().filter(admitted) {
                let Some(trip) = l.trip else { continue };
                let Some(continue_taken) = continues_when_taken(cfg, l, trip.branch) else {
                    continue;
                };
                loops.push(AggLoop {
                    function,
                    loop_id: l.id,
                    header: l.header_addr,
                    site: trip.branch,
                    continue_taken,
                    static_type: trip.count.into(),
                });
            }
        }
        loops.sort_by_key(|l| l.site);
        // A function reached under two names (aliases, overlapping
        // recursive descent) lists its loops twice: keep one per site.
        loops.dedup_by_key(|l| l.site);
        LoopPlan { loops }
    }

    /// Whether the plan aggregates nothing.
    pub fn is_empty(&self) -> bool {
        self.loops.is_empty()
    }

    /// The continue tests and their continuing outcome, as the recording
    /// protocol takes them.
    pub fn sites(&self) -> Vec<(u64, bool)> {
        self.loops
            .iter()
            .map(|l| (l.site.get(), l.continue_taken))
            .collect()
    }

    /// The loop whose continue test is at `site`.
    pub fn at(&self, site: u64) -> Option<&AggLoop> {
        self.loops
            .binary_search_by_key(&site, |l| l.site.get())
            .ok()
            .map(|i| &self.loops[i])
    }
}

/// The conditional branches of loop `l`'s body (inner loops' included), by
/// address, each once.
pub(crate) fn branch_sites(
    program: &Program,
    cfg: &retrace_program::Cfg,
    l: &retrace_program::Loop,
) -> Vec<u64> {
    let mut sites: Vec<u64> = l
        .body
        .iter()
        .map(|&b| cfg.block(b).last)
        .filter(|&a| {
            program
                .table
                .code()
                .get(a)
                .is_some_and(|i| i.class() == retrace_isa::Class::Branch)
        })
        .map(|a| a.get())
        .collect();
    sites.sort_unstable();
    sites.dedup();
    sites
}

/// Whether the taken outcome of `test` keeps loop `l` going (`false`: the
/// fall-through does); `None` when the test's block has not exactly one
/// edge staying in the loop (not a continue test).
pub(crate) fn continues_when_taken(
    cfg: &retrace_program::Cfg,
    l: &retrace_program::Loop,
    test: Addr,
) -> Option<bool> {
    let b = l
        .body
        .iter()
        .map(|&b| cfg.block(b))
        .find(|b| b.last == test)?;
    let inside = |s: &retrace_program::BlockId| l.body.binary_search(s).is_ok();
    let stay: Vec<EdgeKind> = b
        .succs
        .iter()
        .filter(|(s, _)| inside(s))
        .map(|&(_, k)| k)
        .collect();
    match stay.as_slice() {
        [EdgeKind::Taken] => Some(true),
        [EdgeKind::NotTaken] => Some(false),
        // Both edges in the loop, or neither.
        _ => None,
    }
}
