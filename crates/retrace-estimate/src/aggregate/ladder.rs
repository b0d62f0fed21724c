//! The aggregation ladder: one program recorded at each level that is
//! built, each recording replayed on one core — bits recorded, trace
//! bytes, replay time, the estimate and the local timing error, against the
//! unaggregated replay (the reference for every lossy rung, and equal to it
//! on the exact ones). `retrace aggregate` prints it.
//!
//! The plain recording comes first whatever the levels asked for: it is the
//! reference, and the lossy levels' profile (each branch's taken
//! probability) is its replay — the patent's "profile of an earlier run", on
//! the same input.

use super::build::{build_plan, Gates};
use super::collapse::PlanError;
use super::formula::BadThreshold;
use super::ifelse::BranchCounts;
use super::local::{compare, Call, LocalError};
use super::plan::Level;
use crate::compare::CompareError;
use crate::estimator::{Estimate, Fidelity};
use crate::run::{estimate_trace, replay_visit, time_calls};
use retrace_program::{Addr, Elf, Program};
use retrace_sim::record::{record_run_planned, RecordError, Recording};
use retrace_sim::{Console, HostConfig, StopReason};
use retrace_timing::CoreModel;
use retrace_trace::protocol::loops::Plan;
use std::time::Instant;

/// The levels, from none up.
pub const BUILT: [Level; 5] = [
    Level::None,
    Level::Loops,
    Level::IfElse,
    Level::Nested,
    Level::Functions,
];

/// One level of the ladder.
#[derive(Debug)]
pub struct Rung {
    /// The level.
    pub level: Level,
    /// The bias threshold of this rung's gate (embodiment 6; the if-else
    /// gate at `+if-else`, the loop gate at `+nested`; `None`: off).
    pub threshold: Option<f64>,
    /// Loops the plan aggregates.
    pub loops: usize,
    /// Fixed if-else sites the plan has.
    pub fixed: usize,
    /// Candidates the gate kept recorded (if-else sites or nests).
    pub gated: usize,
    /// Collapsed nests.
    pub nests: usize,
    /// Collapsed functions.
    pub functions: usize,
    /// What the recorder reports (bits written, aggregated tests, runs,
    /// trace sizes).
    pub recording: Recording,
    /// Wall seconds of the recording.
    pub record_seconds: f64,
    /// The estimate from this level's trace.
    pub estimate: Estimate,
    /// Wall seconds of the replay.
    pub replay_seconds: f64,
    /// The local timing error against the plain replay (`None` for the
    /// plain rung itself).
    pub local: Option<LocalError>,
}

/// Why a ladder could not be built.
#[derive(Debug, thiserror::Error)]
pub enum LadderError {
    /// Recording or replaying failed, or the run did not end.
    #[error(transparent)]
    Pipeline(#[from] CompareError),
    /// A bias threshold that is no threshold.
    #[error(transparent)]
    Threshold(#[from] BadThreshold),
    /// The plan could not be made from the profile.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// The aggregated replay made other calls than the plain one.
    #[error("the aggregated replay does not follow the plain one: {0}")]
    Calls(String),
}

impl From<crate::walk::ReplayError> for LadderError {
    fn from(e: crate::walk::ReplayError) -> LadderError {
        LadderError::Pipeline(e.into())
    }
}

/// Record `elf` with `plan` (its console discarded). A run that does not
/// reach its end is an error: there is no time to compare.
fn record(
    elf: &Elf,
    host: HostConfig,
    max_insns: Option<u64>,
    plan: &Plan,
) -> Result<(Vec<u8>, Recording, f64), CompareError> {
    let mut trace = Vec::with_capacity(1 << 20);
    let t = Instant::now();
    let recording = record_run_planned(
        elf,
        host,
        Console::null(),
        max_insns,
        &mut trace,
        retrace_trace::Header::new(0, 32, 1),
        &[],
        &mut (),
        plan,
    )?;
    let seconds = t.elapsed().as_secs_f64();
    match recording.run.stop {
        StopReason::Exit { .. } => Ok((trace, recording, seconds)),
        StopReason::Runaway { limit } => Err(CompareError::Runaway { limit }),
        stop => Err(CompareError::Incomplete {
            stop,
            instructions: recording.run.instructions,
        }),
    }
}

/// A lossy plan's branch profile: every branch's outcomes in the replay of
/// the plain trace.
pub fn branch_counts(program: &Program, plain: &[u8]) -> Result<BranchCounts, LadderError> {
    let mut counts = BranchCounts::default();
    let mut table = program.table.clone();
    replay_visit(&mut table, program.entry, plain, &mut counts)?;
    Ok(counts)
}

/// The ladder's rungs, and the levels that could not be recorded for this
/// program, with why (a program that writes code has no `+if-else` rung).
#[derive(Debug, Default)]
pub struct Ladder {
    /// The rungs, from none up.
    pub rungs: Vec<Rung>,
    /// Levels refused, with the recorder's reason.
    pub refused: Vec<(Level, String)>,
}

/// Record `elf` at each of `levels` and estimate `core` from each trace;
/// the if-else level once with its gate off and once per threshold of
/// `thresholds`, the nested level likewise with `loop_thresholds`.
#[allow(clippy::too_many_arguments)]
pub fn ladder(
    elf: &Elf,
    program: &Program,
    host: impl Fn() -> HostConfig,
    max_insns: Option<u64>,
    core: &CoreModel,
    fidelity: Fidelity,
    levels: &[Level],
    thresholds: &[f64],
    loop_thresholds: &[f64],
) -> Result<Ladder, LadderError> {
    for &t in thresholds.iter().chain(loop_thresholds) {
        super::formula::keep_unaggregated(0.0, t)?;
    }
    let (plain, plain_rec, plain_secs) = record(elf, host(), max_insns, &Plan::default())?;
    let mut reference_calls: Option<Vec<Call>> = None;
    let mut counts: Option<BranchCounts> = None;
    let mut rungs = Vec::new();
    let mut refused = Vec::new();
    let mut plain_rec = Some(plain_rec);
    'levels: for &level in levels {
        // Each gate's sweep at its own level, the gate off first.
        let sweep = |ts: &[f64], gate: fn(Option<f64>) -> Gates| -> Vec<Gates> {
            std::iter::once(None)
                .chain(ts.iter().map(|&t| Some(t)))
                .map(gate)
                .collect()
        };
        let gate_sweep: Vec<Gates> = match level {
            Level::IfElse => sweep(thresholds, |t| Gates {
                if_else: t,
                loops: None,
            }),
            Level::Nested => sweep(loop_thresholds, |t| Gates {
                if_else: None,
                loops: t,
            }),
            _ => vec![Gates::default()],
        };
        for gates in gate_sweep {
            if level >= Level::IfElse && counts.is_none() {
                counts = Some(branch_counts(program, &plain)?);
            }
            let built = build_plan(
                program,
                level,
                counts.as_ref().map(|c| (&plain[..], c)),
                core,
                gates,
            )?;
            let (trace, recording, record_seconds) = if level == Level::None {
                match plain_rec.take() {
                    Some(r) => (plain.clone(), r, plain_secs),
                    None => record(elf, host(), max_insns, &Plan::default())?,
                }
            } else {
                match record(elf, host(), max_insns, &built.plan) {
                    // Lossy aggregation cannot follow this program (it
                    // writes code, or traps mid partial program): no rung.
                    Err(CompareError::Record(RecordError::Unsupported(why)))
                        if built.plan.is_lossy() =>
                    {
                        refused.push((level, why));
                        continue 'levels;
                    }
                    r => r?,
                }
            };
            let t = Instant::now();
            let est = estimate_trace(
                &program.table,
                Addr(elf.entry),
                &trace[..],
                std::slice::from_ref(core),
                fidelity,
                None,
            )
            .map_err(CompareError::from)?;
            let replay_seconds = t.elapsed().as_secs_f64();
            let local = if level == Level::None {
                None
            } else {
                // The reference leaves out the calls this plan's
                // collapsed extents hold (per plan; without regions, once).
                let regions = &built.plan.regions;
                let reference = match (&reference_calls, regions.is_empty()) {
                    (Some(r), true) => r.clone(),
                    _ => {
                        let r = time_calls(program, &plain[..], core, fidelity, regions)?;
                        if regions.is_empty() {
                            reference_calls = Some(r.clone());
                        }
                        r
                    }
                };
                let calls = time_calls(program, &trace[..], core, fidelity, &[])?;
                Some(compare(&reference, &calls).map_err(LadderError::Calls)?)
            };
            let regions = &built.collapse.regions;
            let nests = regions
                .iter()
                .filter(|r| {
                    matches!(
                        r.region.kind,
                        retrace_trace::protocol::regions::RegionKind::Nest { .. }
                    )
                })
                .count();
            rungs.push(Rung {
                level,
                threshold: gates.if_else.or(gates.loops),
                loops: built.plan.loops.len(),
                fixed: built.plan.fixed.len(),
                gated: built.ifelse.gated + built.collapse.gated,
                nests,
                functions: regions.len() - nests,
                recording,
                record_seconds,
                estimate: est[0].0,
                replay_seconds,
                local,
            });
        }
    }
    Ok(Ladder { rungs, refused })
}
