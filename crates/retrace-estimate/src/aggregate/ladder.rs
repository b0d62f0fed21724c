//! The aggregation ladder: one program recorded at each level that is
//! built, each recording replayed on one core — bits recorded, trace
//! bytes, replay time, the estimate and the local timing error, against the
//! unaggregated replay (the reference for every lossy rung, and equal to it
//! on the exact ones). `retrace aggregate` prints it.
//!
//! The plain recording comes first whatever the levels asked for: it is the
//! reference, and the lossy levels' profile (each branch's taken
//! probability) is its replay — the seed's "profile of an earlier run", on
//! the same input.

use super::formula::BadThreshold;
use super::ifelse::{BranchCounts, IfElsePlan};
use super::local::{compare, Call, LocalError};
use super::plan::{Level, LoopPlan};
use crate::compare::CompareError;
use crate::estimator::{Estimate, Fidelity};
use crate::run::{estimate_trace, replay_visit, time_calls};
use retrace_program::{Addr, Elf, Program};
use retrace_sim::record::{record_run_planned, RecordError, Recording};
use retrace_sim::{Console, HostConfig, StopReason};
use retrace_timing::CoreModel;
use retrace_trace::protocol::loops::FixedSite;
use std::time::Instant;

/// The levels that are built, from none up.
pub const BUILT: [Level; 3] = [Level::None, Level::Loops, Level::IfElse];

/// One level of the ladder.
#[derive(Debug)]
pub struct Rung {
    /// The level.
    pub level: Level,
    /// The if-else bias threshold (embodiment 6's gate; `None`: off).
    pub threshold: Option<f64>,
    /// Loops the plan aggregates.
    pub loops: usize,
    /// Fixed if-else sites the plan has.
    pub fixed: usize,
    /// If-else candidates the gate kept recorded.
    pub gated: usize,
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
    /// The aggregated replay made other calls than the plain one.
    #[error("the aggregated replay does not follow the plain one: {0}")]
    Calls(String),
}

impl From<crate::walk::ReplayError> for LadderError {
    fn from(e: crate::walk::ReplayError) -> LadderError {
        LadderError::Pipeline(e.into())
    }
}

/// Record `elf` with `loops` and `fixed` (its console discarded). A run
/// that does not reach its end is an error: there is no time to compare.
fn record(
    elf: &Elf,
    host: HostConfig,
    max_insns: Option<u64>,
    loops: &[(u64, bool)],
    fixed: &[FixedSite],
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
        loops,
        fixed,
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
/// `thresholds`.
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
) -> Result<Ladder, LadderError> {
    for &t in thresholds {
        super::formula::keep_unaggregated(0.0, t)?;
    }
    let (plain, plain_rec, plain_secs) = record(elf, host(), max_insns, &[], &[])?;
    let mut reference_calls: Option<Vec<Call>> = None;
    let mut counts: Option<BranchCounts> = None;
    let mut rungs = Vec::new();
    let mut refused = Vec::new();
    let mut plain_rec = Some(plain_rec);
    'levels: for &level in levels {
        // The Z1 loops; at the if-else level, also the loops whose other
        // branches are all fixed sites (computed per gate below).
        let loop_plan = LoopPlan::new(program, level);
        let z1_sites: Vec<u64> = loop_plan.loops.iter().map(|l| l.site.get()).collect();
        let gates: Vec<Option<f64>> = if level == Level::IfElse {
            std::iter::once(None)
                .chain(thresholds.iter().map(|&t| Some(t)))
                .collect()
        } else {
            vec![None]
        };
        for threshold in gates {
            let (fixed, gated, loop_plan) = if level == Level::IfElse {
                if counts.is_none() {
                    counts = Some(branch_counts(program, &plain)?);
                }
                let plan = IfElsePlan::new(
                    &program.table,
                    counts.as_ref().unwrap(),
                    &z1_sites,
                    core,
                    threshold,
                )?;
                let fixed = plan.fixed_sites();
                let sites: Vec<u64> = fixed.iter().map(|f| f.site).collect();
                (
                    fixed,
                    plan.gated,
                    LoopPlan::admitting_fixed(program, &sites),
                )
            } else {
                (Vec::new(), 0, loop_plan.clone())
            };
            let loops = loop_plan.sites();
            let (trace, recording, record_seconds) = if level == Level::None {
                match plain_rec.take() {
                    Some(r) => (plain.clone(), r, plain_secs),
                    None => record(elf, host(), max_insns, &[], &[])?,
                }
            } else {
                match record(elf, host(), max_insns, &loops, &fixed) {
                    // Lossy aggregation cannot follow this program (it
                    // writes code, or traps mid partial program): no rung.
                    Err(CompareError::Record(RecordError::Unsupported(why)))
                        if !fixed.is_empty() =>
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
                if reference_calls.is_none() {
                    reference_calls = Some(time_calls(program, &plain[..], core, fidelity)?);
                }
                let calls = time_calls(program, &trace[..], core, fidelity)?;
                Some(
                    compare(reference_calls.as_ref().unwrap(), &calls)
                        .map_err(LadderError::Calls)?,
                )
            };
            rungs.push(Rung {
                level,
                threshold,
                loops: loop_plan.loops.len(),
                fixed: fixed.len(),
                gated,
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
