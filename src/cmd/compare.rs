//! `retrace compare`: the cycle-level engine against record + estimate, on
//! one core: both cycle counts, the error, the wall time of each step and the
//! speedup of the estimate over the reference. The pipeline's steps are
//! [`retrace_estimate::compare`]'s.
//!
//! Only a run that reaches its end is compared: a program that faults,
//! is denied a request or runs past `--max-insns` has no time to estimate,
//! so `compare` says how it stopped in one line and exits with that stop's
//! status (`src/status.rs`) instead of printing an agreement of two
//! truncated runs. The report says how the run ended (`stop`, `exit_code`).

use super::common::{
    analyse, check_xlen, display, host, load_core_with, load_elf, stop_status, thousands,
    FidelityArg, ProgramArgs,
};
use crate::report::{csv_of, print, FormatArgs, Report};
use crate::status::{tag, Status};
use anyhow::anyhow;
use retrace_estimate::compare::{compare, CompareError};
use retrace_estimate::Fidelity;
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `retrace compare`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
    retrace compare prog.elf --core rocket\n  \
    retrace compare prog.elf --core inorder5 --fidelity fast --format json -- 5000")]
pub struct Args {
    /// The program.
    pub program: PathBuf,
    /// The core: preset name or TOML file.
    #[arg(long, value_name = "NAME|FILE")]
    pub core: String,
    #[command(flatten)]
    pub sets: super::common::CoreSets,
    /// Fidelity of the estimate.
    #[arg(long, value_enum, default_value_t = FidelityArg::Control)]
    pub fidelity: FidelityArg,
    /// Stop after this many instructions (status 124).
    #[arg(long, value_name = "N")]
    pub max_insns: Option<u64>,
    #[command(flatten)]
    pub output: FormatArgs,
    #[command(flatten)]
    pub program_args: ProgramArgs,
}

/// What `retrace compare` reports.
#[derive(Serialize)]
pub struct CompareReport {
    /// The program as given.
    pub program: String,
    /// The core's name.
    pub core: String,
    /// Fidelity of the estimate.
    #[serde(serialize_with = "display")]
    pub fidelity: Fidelity,
    /// Instructions of the run.
    pub instructions: u64,
    /// How the run ended: always `exit` (a run that stops otherwise is an
    /// error, not a comparison).
    pub stop: &'static str,
    /// The program's exit code.
    pub exit_code: u32,
    /// Cycle-level engine's cycles.
    pub reference_cycles: u64,
    /// Estimated cycles.
    pub estimated_cycles: u64,
    /// Estimated minus reference cycles.
    pub error_cycles: i64,
    /// The error in percent of the reference.
    pub error_percent: f64,
    /// Wall seconds of the cycle-level run.
    pub reference_seconds: f64,
    /// Wall seconds of the recording.
    pub record_seconds: f64,
    /// Wall seconds of the estimate.
    pub estimate_seconds: f64,
    /// Reference seconds over estimate seconds.
    pub speedup: f64,
}

impl Report for CompareReport {
    fn csv(&self) -> anyhow::Result<String> {
        csv_of(&[self])
    }

    fn text(&self) -> String {
        format!(
            "{} on {} ({} fidelity), {} instructions, exited with code {}\n\
             \x20 cycle-level engine  {:>16} cycles  {:>8.3} s\n\
             \x20 record              {:>16}         {:>8.3} s\n\
             \x20 estimate            {:>16} cycles  {:>8.3} s\n\
             \x20 error {} cycles ({:+.4}%), estimate {:.1}× faster than the cycle-level engine\n",
            self.program,
            self.core,
            self.fidelity,
            thousands(self.instructions),
            self.exit_code,
            thousands(self.reference_cycles),
            self.reference_seconds,
            "",
            self.record_seconds,
            thousands(self.estimated_cycles),
            self.estimate_seconds,
            self.error_cycles,
            self.error_percent,
            self.speedup
        )
    }
}

/// A failed step of the pipeline as a one-line error with its exit status.
pub fn pipeline_error(shown: &str, e: CompareError) -> anyhow::Error {
    match e {
        CompareError::Load(e) => tag(anyhow!("cannot load {shown}: {e}"), Status::BadInput),
        CompareError::Record(e) => tag(anyhow!("cannot record {shown}: {e}"), Status::Fault),
        CompareError::Replay(e) => tag(
            anyhow!("replay of the recording of {shown}: {e}"),
            Status::BadInput,
        ),
        CompareError::Runaway { limit } => tag(
            anyhow!("{shown} ran past --max-insns {limit}"),
            Status::Runaway,
        ),
        other => tag(anyhow!("{shown}: {other}"), Status::BadInput),
    }
}

/// Entry point of `retrace compare`.
pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    let elf = load_elf(&args.program)?;
    let shown = args.program.display().to_string();
    let core = load_core_with(&args.core, &args.sets.set)?;
    check_xlen(&core, &elf, &shown)?;
    let program = analyse(&elf, &shown)?;
    let fidelity = Fidelity::from(args.fidelity);
    let prog_args = &args.program_args.args;
    let fail = |e| pipeline_error(&shown, e);

    let c = compare(
        &elf,
        &program.table,
        || host(&shown, prog_args),
        &core,
        fidelity,
        args.max_insns,
    )
    .map_err(|e| match e {
        CompareError::Incomplete { stop, instructions } => tag(
            anyhow!(
                "{shown} did not run to its end on {}: {stop}, after {} instructions; there is no run to compare",
                core.name,
                thousands(instructions)
            ),
            stop_status(&stop),
        ),
        other => fail(other),
    })?;
    let exit_code = c.exit_code;
    let report = CompareReport {
        program: shown,
        core: core.name.clone(),
        fidelity,
        instructions: c.instructions,
        stop: "exit",
        exit_code,
        reference_cycles: c.reference_cycles,
        estimated_cycles: c.estimated_cycles,
        error_cycles: c.error_cycles(),
        error_percent: c.error_percent(),
        reference_seconds: c.reference_seconds,
        record_seconds: c.record_seconds,
        estimate_seconds: c.estimate_seconds,
        speedup: c.speedup(),
    };
    print(&report, args.output.get())?;
    Ok(ExitCode::SUCCESS)
}
