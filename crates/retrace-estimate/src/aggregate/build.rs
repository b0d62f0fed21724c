//! One plan from one level: the loops, fixed if-else sites and collapsed
//! regions a recording at a [`Level`] aggregates, with the gates applied.
//! `retrace record --aggregate` and the ladder of `retrace aggregate` both
//! build their plans here, so the two cannot drift apart.

use super::collapse::{collapsible_functions, collapsible_nests, CollapsePlan, PlanError};
use super::ifelse::{BranchCounts, IfElsePlan};
use super::plan::{Level, LoopPlan};
use retrace_program::{Addr, FuncId, Program};
use retrace_timing::CoreModel;
use retrace_trace::protocol::loops::Plan;
use retrace_trace::protocol::regions::RegionKind;

/// The gates of the lossy levels (embodiment 6).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Gates {
    /// If-else bias threshold (`None`: every candidate aggregates).
    pub if_else: Option<f64>,
    /// Loop bias threshold for collapsed nests (`None`: off).
    pub loops: Option<f64>,
}

/// A level's plan, with what each kind of aggregation decided.
#[derive(Clone, Debug, Default)]
pub struct BuiltPlan {
    /// What the recorder takes.
    pub plan: Plan,
    /// The loops recorded by trip counts.
    pub loops: LoopPlan,
    /// The fixed if-else sites.
    pub ifelse: IfElsePlan,
    /// The collapsed regions.
    pub collapse: CollapsePlan,
}

/// The plan of `level` for `program`. The lossy levels need `profile`, a
/// plain trace of an earlier run of the program, and `counts`, its branch
/// profile (its replay through [`BranchCounts`]); `gate` is the core whose
/// static cycles the bias gates weigh.
pub fn build_plan<S: crate::source::TraceSource + ?Sized>(
    program: &Program,
    level: Level,
    profile: Option<(&S, &BranchCounts)>,
    gate: &CoreModel,
    gates: Gates,
) -> Result<BuiltPlan, PlanError> {
    let mut built = BuiltPlan {
        loops: LoopPlan::new(program, level),
        ..BuiltPlan::default()
    };
    let Some((trace, counts)) = profile.filter(|_| level >= Level::IfElse) else {
        built.plan.loops = built.loops.sites();
        return Ok(built);
    };
    let z1: Vec<u64> = built.loops.loops.iter().map(|l| l.site.get()).collect();
    built.ifelse = IfElsePlan::new(&program.table, counts, &z1, gate, gates.if_else)?;
    let mut fixed = built.ifelse.fixed_sites();
    let sites: Vec<u64> = fixed.iter().map(|f| f.site).collect();
    built.loops = LoopPlan::admitting_fixed(program, &sites);
    if level >= Level::Nested {
        let functions = if level >= Level::Functions {
            collapsible_functions(program, &counts.indirect_calls)
        } else {
            Vec::new()
        };
        let callable = |a: Addr| {
            program
                .function_at(a)
                .is_some_and(|f| functions.get(f.index()).copied().unwrap_or(false))
        };
        let mut kinds: Vec<RegionKind> = functions
            .iter()
            .enumerate()
            .filter(|(_, &ok)| ok)
            .map(|(f, _)| RegionKind::Function {
                entry: program.function(FuncId(f as u32)).entry.get(),
            })
            .collect();
        // An indirect call in a nest counts as a call only where functions
        // collapse.
        let indirect = (level >= Level::Functions).then_some(&counts.indirect_calls);
        kinds.extend(collapsible_nests(
            program,
            &built.loops,
            &callable,
            indirect,
        ));
        built.collapse = CollapsePlan::new(program, trace, kinds, gate, gates.loops)?;
    }
    // Sites inside a collapsed nest are stepped over with it.
    let in_nest = |site: u64| {
        built.collapse.regions.iter().any(|r| match &r.region.kind {
            RegionKind::Nest { sites, .. } => sites.binary_search(&site).is_ok(),
            RegionKind::Function { .. } => false,
        })
    };
    built.loops.loops.retain(|l| !in_nest(l.site.get()));
    fixed.retain(|f| !in_nest(f.site));
    built.plan = Plan {
        loops: built.loops.sites(),
        fixed,
        regions: built.collapse.regions(),
    };
    Ok(built)
}
