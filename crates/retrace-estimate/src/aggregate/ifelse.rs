//! Embodiment 3 (if-else by branch probability, lossy) with embodiment 6's
//! if-else bias gate.
//!
//! **Which branches.** A conditional branch whose two successor partial
//! programs end at the same instruction, in the same way: whichever way the
//! branch goes, the run is back on one path by the end of the next partial
//! program, so a replay that always takes one way rejoins the run there and
//! reads the next branch bit as recorded. That is the patent's if-else region
//! in partial-program terms — `if (c) {…}` and `if (c) {…} else {…}` whose
//! arms hold no branch, call or jump of their own — and also the shapes a
//! compiler makes of `c ? a : b`. Loop continue tests never qualify (one
//! way leaves the loop), and an aggregated loop's test is left to the loop.
//!
//! **What is recorded.** Nothing for such a *fixed site*: the recorder
//! writes no bit, the replay always takes the way the branch went more
//! often in a profile run (its *fixed outcome*), and the plan in the trace
//! records the site, that outcome and the profile's taken probability `j`.
//!
//! **The time.** The replay times the fixed way, and the estimate adds, per
//! visit of the site, `j × T_true + (1 − j) × T_false − T_fixed` — so each
//! visit costs the patent's `T' = j × T_true + (1 − j) × T_false`. `T_true`
//! is the branch's taken cost plus the taken successor's static cycles on
//! the core (issued into an idle pipeline, [`StaticCycles`]); `T_false`
//! likewise. On the profiled input the total moves only by what the
//! static times miss (pipeline context at the joins); every single visit
//! is off by the difference between its way and the average, which is the
//! *local timing error* [`crate::aggregate::local`] measures.
//!
//! **The gate** (embodiment 6): a site whose bias `|T_true − T_false| × M`
//! (`M` its executions in the profile; times on the gate core) is at or
//! above the threshold stays a recorded branch. No threshold aggregates
//! every candidate that ran.

use super::formula::{if_else, if_else_bias, keep_unaggregated, probability, BadThreshold};
use crate::static_pp::StaticCycles;
use crate::walk::{Leave, Visit};
use retrace_program::{End, EndKind, PpId, PpTable};
use retrace_timing::CoreModel;
use retrace_trace::protocol::loops::{FixedSite, PROBABILITY_UNIT};
use rustc_hash::FxHashMap;

/// A branch whose two ways join by the end of the next partial program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// The branch's address.
    pub site: u64,
    /// A partial program ending at the branch (to time its outcomes).
    pub branch_pp: PpId,
    /// The successor when taken.
    pub taken: PpId,
    /// The successor when not taken.
    pub not_taken: PpId,
    /// Their lengths in instructions.
    pub taken_len: u32,
    /// See `taken_len`.
    pub not_taken_len: u32,
}

/// Every branch of `table` whose two successors end at the same
/// instruction with the same kind of end (not a fault), by address.
pub fn candidates(table: &PpTable) -> Vec<Candidate> {
    let mut out: FxHashMap<u64, Candidate> = FxHashMap::default();
    for (id, pp) in table.iter() {
        if table.is_retired(id) {
            continue;
        }
        let End::Branch {
            taken: Some(t),
            not_taken: Some(n),
        } = pp.end
        else {
            continue;
        };
        let (a, b) = (table.get(t), table.get(n));
        if t == n
            || a.last != b.last
            || a.end.kind() != b.end.kind()
            || a.end.kind() == EndKind::Fault
            || a.last == pp.last
        {
            continue;
        }
        out.entry(pp.last.get()).or_insert(Candidate {
            site: pp.last.get(),
            branch_pp: id,
            taken: t,
            not_taken: n,
            taken_len: a.len,
            not_taken_len: b.len,
        });
    }
    let mut v: Vec<Candidate> = out.into_values().collect();
    v.sort_unstable_by_key(|c| c.site);
    v
}

/// The profile a lossy plan is made from: per branch site, `(taken,
/// executed)` in a replay, and per indirect call site the callees it
/// reached. Fill it by replaying a plain trace with it as the visitor.
#[derive(Clone, Debug, Default)]
pub struct BranchCounts {
    /// Per conditional branch's address, `(taken, executed)`.
    pub branches: FxHashMap<u64, (u64, u64)>,
    /// Per indirect call's address, the entries it called (sorted).
    pub indirect_calls: FxHashMap<u64, Vec<u64>>,
}

impl Visit<PpTable> for BranchCounts {
    #[inline]
    fn pp(&mut self, table: &PpTable, pp: PpId, how: Leave, next: PpId) {
        match how {
            Leave::Branch(taken) => {
                let e = self.branches.entry(table.get(pp).last.get()).or_default();
                e.0 += u64::from(taken);
                e.1 += 1;
            }
            Leave::Call if next != crate::machine::INVALID => {
                let p = table.get(pp);
                if let End::IndirectCall { .. } = p.end {
                    let targets = self.indirect_calls.entry(p.last.get()).or_default();
                    let t = table.get(next).start.get();
                    if let Err(i) = targets.binary_search(&t) {
                        targets.insert(i, t);
                    }
                }
            }
            _ => {}
        }
    }
    fn last(&mut self, _: &PpTable, _: PpId, _: u32) {}
    fn trap(&mut self, _: &PpTable, _: PpId, _: u32) {}
    fn cut(&mut self, _: &PpTable, _: PpId, _: u32) {}
}

/// The two ways' static times of a candidate on one core: `(T_true,
/// T_false)`, each the branch's cost that way plus the successor's.
fn way_times(c: &Candidate, costs: &StaticCycles) -> Option<(f64, f64)> {
    let b = costs.get(c.branch_pp)?;
    let t = costs.get(c.taken)?.cycles;
    let n = costs.get(c.not_taken)?.cycles;
    Some(((b.taken? + t) as f64, (b.cycles + n) as f64))
}

/// The partial programs whose static cycles the candidates need.
fn timed_pps(cands: &[Candidate]) -> Vec<PpId> {
    cands
        .iter()
        .flat_map(|c| [c.branch_pp, c.taken, c.not_taken])
        .collect()
}

/// One fixed site of a plan, with what the planner saw.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlannedSite {
    /// The candidate.
    pub candidate: Candidate,
    /// Taken probability in the profile.
    pub j: f64,
    /// Executions in the profile.
    pub executions: u64,
    /// Embodiment 6's bias on the gate core.
    pub bias: f64,
}

/// The fixed sites of a lossy plan.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IfElsePlan {
    /// The sites, by address.
    pub sites: Vec<PlannedSite>,
    /// Candidates the gate kept as recorded branches.
    pub gated: usize,
}

impl IfElsePlan {
    /// Fixed sites from `table`'s candidates that ran in `profile`, leaving
    /// out `exclude` (aggregated loops' tests) and — when `threshold` is
    /// given — every site whose bias on `gate` is at or above it.
    pub fn new(
        table: &PpTable,
        profile: &BranchCounts,
        exclude: &[u64],
        gate: &CoreModel,
        threshold: Option<f64>,
    ) -> Result<IfElsePlan, BadThreshold> {
        if let Some(t) = threshold {
            keep_unaggregated(0.0, t)?;
        }
        let cands: Vec<Candidate> = candidates(table)
            .into_iter()
            .filter(|c| exclude.binary_search(&c.site).is_err())
            .collect();
        let costs = StaticCycles::new(gate, table, &timed_pps(&cands));
        let mut plan = IfElsePlan::default();
        for c in cands {
            let Some(&(taken, executions)) = profile.branches.get(&c.site) else {
                continue;
            };
            if executions == 0 {
                continue;
            }
            let Some((tt, tf)) = way_times(&c, &costs) else {
                continue;
            };
            let bias = if_else_bias(tt, tf, executions);
            if let Some(t) = threshold {
                if keep_unaggregated(bias, t)? {
                    plan.gated += 1;
                    continue;
                }
            }
            plan.sites.push(PlannedSite {
                candidate: c,
                j: probability(taken, executions),
                executions,
                bias,
            });
        }
        Ok(plan)
    }

    /// The sites as the recorder takes them.
    pub fn fixed_sites(&self) -> Vec<FixedSite> {
        self.sites
            .iter()
            .map(|s| {
                let c = &s.candidate;
                let outcome = s.j >= 0.5;
                let (mine, other) = if outcome {
                    (c.taken_len, c.not_taken_len)
                } else {
                    (c.not_taken_len, c.taken_len)
                };
                FixedSite {
                    site: c.site,
                    outcome,
                    taken_ppm: (s.j * PROBABILITY_UNIT as f64).round() as u32,
                    walk_delta: i64::from(mine) - i64::from(other),
                }
            })
            .collect()
    }
}

/// Per fixed site of a trace's plan, the cycles one visit adds on a core:
/// `j × T_true + (1 − j) × T_false − T_fixed` (0 for a site that is not a
/// candidate of `table`: the replay refuses such a plan before).
pub fn corrections(table: &PpTable, core: &CoreModel, fixed: &[(u64, bool, u32)]) -> Vec<f64> {
    let cands = candidates(table);
    let found: Vec<Option<&Candidate>> = fixed
        .iter()
        .map(|&(site, _, _)| {
            cands
                .binary_search_by_key(&site, |c| c.site)
                .ok()
                .map(|i| &cands[i])
        })
        .collect();
    let needed: Vec<Candidate> = found.iter().flatten().map(|c| **c).collect();
    let costs = StaticCycles::new(core, table, &timed_pps(&needed));
    fixed
        .iter()
        .zip(found)
        .map(|(&(_, outcome, ppm), c)| {
            let Some((tt, tf)) = c.and_then(|c| way_times(c, &costs)) else {
                return 0.0;
            };
            let j = f64::from(ppm) / PROBABILITY_UNIT as f64;
            if_else(j, tt, tf) - if outcome { tt } else { tf }
        })
        .collect()
}

/// Whether `site` is a candidate of `table` (a fixed site that is not is a
/// plan from another program).
pub fn is_candidate(table: &PpTable, site: u64) -> bool {
    candidates(table)
        .binary_search_by_key(&site, |c| c.site)
        .is_ok()
}
