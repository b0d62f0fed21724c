//! The comparison pipeline: the cycle-level engine for reference, one
//! recording, and estimates from that recording — the steps `retrace
//! compare`, `retrace demo` and `retrace bench` are made of, written once.
//!
//! This is the one module of the crate that runs the program: the estimate
//! itself never does (it reads the trace only), but judging an estimate
//! needs the reference run and the recording it came from. The recording
//! stays in memory ([`Recorded::trace`]) and the estimates replay it from
//! there, so no step leaves a file behind, whatever fails.

use crate::estimator::{Estimate, Fidelity};
use crate::run::estimate_trace;
use crate::walk::ReplayError;
use retrace_program::{Addr, Elf, PpTable};
use retrace_sim::cycle::run_cycle_level;
use retrace_sim::record::{record_run, RecordError, Recording};
use retrace_sim::{Console, HostConfig, LoadError, RunResult, StopReason};
use retrace_timing::{preset, CacheModel, CoreModel, PRESETS};
use std::time::Instant;

/// Why a step of the pipeline failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CompareError {
    /// The program could not be loaded into the machine.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// The recording failed.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// The replay of the recording failed.
    #[error(transparent)]
    Replay(#[from] ReplayError),
    /// The reference run did not end within the instruction limit.
    #[error("ran past --max-insns {limit}")]
    Runaway {
        /// The limit.
        limit: u64,
    },
    /// The reference run stopped before the program's end (a fault, a
    /// refused request): there is no run to compare.
    #[error("did not run to its end: {stop}, after {instructions} instructions; there is no run to compare")]
    Incomplete {
        /// How it stopped.
        stop: StopReason,
        /// Instructions it retired.
        instructions: u64,
    },
}

/// The cycle-level engine's run of a program on one core.
#[derive(Debug)]
pub struct Reference {
    /// How the run ended.
    pub run: RunResult,
    /// The core's cycles.
    pub cycles: u64,
    /// Wall seconds of the run.
    pub seconds: f64,
}

/// Run `elf` through the cycle-level engine on `core` (its console
/// discarded).
pub fn reference_run(
    elf: &Elf,
    host: HostConfig,
    max_insns: Option<u64>,
    core: &CoreModel,
) -> Result<Reference, CompareError> {
    let t = Instant::now();
    let (run, obs) = run_cycle_level(elf, host, Console::null(), max_insns, core, &[])?;
    Ok(Reference {
        run,
        cycles: obs.core().cycles(),
        seconds: t.elapsed().as_secs_f64(),
    })
}

/// A recording held in memory.
#[derive(Debug)]
pub struct Recorded {
    /// What the recorder reports.
    pub recording: Recording,
    /// The whole trace file's bytes.
    pub trace: Vec<u8>,
    /// Wall seconds of the recording.
    pub seconds: f64,
}

/// Record one run of `elf` into memory, measuring the data-cache miss
/// rates of `dcaches` on the way.
pub fn record_in_memory(
    elf: &Elf,
    host: HostConfig,
    console: Console,
    max_insns: Option<u64>,
    dcaches: &[CacheModel],
) -> Result<Recorded, CompareError> {
    // A megabyte up front: what the file path's buffered writer held too.
    let mut trace = Vec::with_capacity(1 << 20);
    let t = Instant::now();
    let recording = record_run(
        elf,
        host,
        console,
        max_insns,
        &mut trace,
        retrace_trace::Header::new(0, 32, 1),
        dcaches,
    )?;
    Ok(Recorded {
        recording,
        trace,
        seconds: t.elapsed().as_secs_f64(),
    })
}

/// Estimates of several cores from one recording, and the wall seconds
/// they took together.
pub fn estimate_recorded(
    table: &PpTable,
    entry: Addr,
    recorded: &Recorded,
    cores: &[CoreModel],
    fidelity: Fidelity,
) -> Result<(Vec<Estimate>, f64), CompareError> {
    let t = Instant::now();
    let got = estimate_trace(table, entry, &recorded.trace[..], cores, fidelity, None)?;
    let seconds = t.elapsed().as_secs_f64();
    Ok((got.into_iter().map(|(e, _)| e).collect(), seconds))
}

/// The data-cache geometries of the built-in presets, each once: what a
/// recording measures by default so that estimates can use measured miss
/// rates.
pub fn preset_dcaches() -> Vec<CacheModel> {
    let mut v = Vec::new();
    for (name, _) in PRESETS {
        if let Some(dc) = preset(name).ok().and_then(|m| m.dcache) {
            add_geometry(&mut v, dc);
        }
    }
    v
}

/// Add `dc` to `list` unless a cache of its geometry is there already
/// (penalties do not change a miss rate).
pub fn add_geometry(list: &mut Vec<CacheModel>, dc: CacheModel) {
    if !list
        .iter()
        .any(|g| (g.size, g.ways, g.line) == (dc.size, dc.ways, dc.line))
    {
        list.push(dc);
    }
}

/// The data-cache geometries to measure when recording for `core`: the
/// presets' and the core's own.
pub fn measured_dcaches(core: &CoreModel) -> Vec<CacheModel> {
    let mut v = preset_dcaches();
    if let Some(dc) = core.dcache {
        add_geometry(&mut v, dc);
    }
    v
}

/// The figures of one comparison on one core.
#[derive(Clone, Copy, Debug)]
pub struct Comparison {
    /// The program's exit code (only runs that exit are compared).
    pub exit_code: u32,
    /// Cycle-level engine's cycles.
    pub reference_cycles: u64,
    /// Estimated cycles.
    pub estimated_cycles: u64,
    /// Instructions of the run.
    pub instructions: u64,
    /// Wall seconds of the cycle-level run.
    pub reference_seconds: f64,
    /// Wall seconds of the recording.
    pub record_seconds: f64,
    /// Wall seconds of the estimate.
    pub estimate_seconds: f64,
}

impl Comparison {
    /// Signed error in cycles.
    pub fn error_cycles(&self) -> i64 {
        self.estimated_cycles as i64 - self.reference_cycles as i64
    }
    /// Signed error in percent of the reference.
    pub fn error_percent(&self) -> f64 {
        error_percent(self.estimated_cycles, self.reference_cycles)
    }
    /// Reference seconds / estimate seconds.
    pub fn speedup(&self) -> f64 {
        self.reference_seconds / self.estimate_seconds.max(1e-9)
    }
}

/// Signed error of `estimated` in percent of `reference`.
pub fn error_percent(estimated: u64, reference: u64) -> f64 {
    (estimated as f64 - reference as f64) * 100.0 / reference.max(1) as f64
}

/// The whole pipeline for one core: the cycle-level run, a recording (in
/// memory) and the estimate from it. `host` gives each run its
/// configuration (the runs must see the same command line).
pub fn compare(
    elf: &Elf,
    table: &PpTable,
    host: impl Fn() -> HostConfig,
    core: &CoreModel,
    fidelity: Fidelity,
    max_insns: Option<u64>,
) -> Result<Comparison, CompareError> {
    let reference = reference_run(elf, host(), max_insns, core)?;
    // Only a run that reaches its end is compared: two truncated runs
    // agreeing says nothing about the program's time.
    let exit_code = match reference.run.stop {
        StopReason::Exit { code } => code,
        StopReason::Runaway { limit } => return Err(CompareError::Runaway { limit }),
        stop => {
            return Err(CompareError::Incomplete {
                stop,
                instructions: reference.run.instructions,
            })
        }
    };
    let recorded = record_in_memory(
        elf,
        host(),
        Console::null(),
        max_insns,
        &measured_dcaches(core),
    )?;
    let (estimates, estimate_seconds) = estimate_recorded(
        table,
        Addr(elf.entry),
        &recorded,
        std::slice::from_ref(core),
        fidelity,
    )?;
    Ok(Comparison {
        exit_code,
        reference_cycles: reference.cycles,
        estimated_cycles: estimates[0].cycles,
        instructions: recorded.recording.run.instructions,
        reference_seconds: reference.seconds,
        record_seconds: recorded.seconds,
        estimate_seconds,
    })
}
