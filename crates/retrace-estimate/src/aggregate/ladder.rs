//! The aggregation ladder: one program recorded at each level that is
//! built, each recording replayed on one core — bits recorded, trace
//! bytes, replay time and the estimate, against the unaggregated replay
//! (the reference for every lossy rung, and equal to it on the exact
//! ones). `retrace aggregate` prints it.

use super::plan::{Level, LoopPlan};
use crate::compare::CompareError;
use crate::estimator::{Estimate, Fidelity};
use crate::run::estimate_trace;
use retrace_program::{Addr, Elf, Program};
use retrace_sim::record::{record_run_aggregated, Recording};
use retrace_sim::{Console, HostConfig, StopReason};
use retrace_timing::CoreModel;
use std::time::Instant;

/// The levels that are built, from none up.
pub const BUILT: [Level; 2] = [Level::None, Level::Loops];

/// One level of the ladder.
#[derive(Debug)]
pub struct Rung {
    /// The level.
    pub level: Level,
    /// Loops the plan aggregates.
    pub loops: usize,
    /// What the recorder reports (bits written, aggregated tests, runs,
    /// trace sizes).
    pub recording: Recording,
    /// Wall seconds of the recording.
    pub record_seconds: f64,
    /// The estimate from this level's trace.
    pub estimate: Estimate,
    /// Wall seconds of the replay.
    pub replay_seconds: f64,
}

/// Record `elf` at each of `levels` (its console discarded) and estimate
/// `core` from each trace. A run that does not reach its end is an error:
/// there is no time to compare.
pub fn ladder(
    elf: &Elf,
    program: &Program,
    host: impl Fn() -> HostConfig,
    max_insns: Option<u64>,
    core: &CoreModel,
    fidelity: Fidelity,
    levels: &[Level],
) -> Result<Vec<Rung>, CompareError> {
    let mut rungs = Vec::new();
    for &level in levels {
        let plan = LoopPlan::new(program, level);
        let mut trace = Vec::with_capacity(1 << 20);
        let t = Instant::now();
        let recording = record_run_aggregated(
            elf,
            host(),
            Console::null(),
            max_insns,
            &mut trace,
            retrace_trace::Header::new(0, 32, 1),
            &[],
            &mut (),
            &plan.sites(),
        )?;
        let record_seconds = t.elapsed().as_secs_f64();
        match recording.run.stop {
            StopReason::Exit { .. } => {}
            StopReason::Runaway { limit } => return Err(CompareError::Runaway { limit }),
            stop => {
                return Err(CompareError::Incomplete {
                    stop,
                    instructions: recording.run.instructions,
                })
            }
        }
        let t = Instant::now();
        let est = estimate_trace(
            &program.table,
            Addr(elf.entry),
            &trace[..],
            std::slice::from_ref(core),
            fidelity,
            None,
        )?;
        rungs.push(Rung {
            level,
            loops: plan.loops.len(),
            recording,
            record_seconds,
            estimate: est[0].0,
            replay_seconds: t.elapsed().as_secs_f64(),
        });
    }
    Ok(rungs)
}
