//! `retrace aggregate`: the aggregation ladder of US patent 8,448,140 for one program —
//! recorded at each level (none, loops, …), each trace replayed on one
//! core — in one table: bits recorded, trace bytes, replay time and the
//! error against the unaggregated replay. Levels not built yet are listed
//! as such, without figures.

use super::common::{
    analyse, check_xlen, display, host, load_core, load_elf, thousands, FidelityArg, ProgramArgs,
};
use super::compare::pipeline_error;
use crate::report::{csv_of, print, FormatArgs, Report};
use retrace_estimate::aggregate::ladder::{ladder, BUILT};
use retrace_estimate::Fidelity;
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `retrace aggregate`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
    retrace aggregate matmul-rv32-O2.elf\n  \
    retrace aggregate sort-rv32-O2.elf --core picorv32 --format csv -- 20000")]
pub struct Args {
    /// The program.
    pub program: PathBuf,
    /// The core the traces are replayed on: preset name or TOML file.
    #[arg(long, value_name = "NAME|FILE", default_value = "inorder5")]
    pub core: String,
    /// Fidelity of the replays.
    #[arg(long, value_enum, default_value_t = FidelityArg::Fast)]
    pub fidelity: FidelityArg,
    /// Stop after this many instructions (status 124).
    #[arg(long, value_name = "N")]
    pub max_insns: Option<u64>,
    #[command(flatten)]
    pub output: FormatArgs,
    #[command(flatten)]
    pub program_args: ProgramArgs,
}

/// The ladder's rungs in order; the ones after `loops` are not built yet.
const LADDER: [&str; 5] = ["none", "loops", "+if-else", "+nested", "+functions"];

/// One rung of the ladder.
#[derive(Serialize)]
pub struct RungRow {
    /// The program as given.
    pub program: String,
    /// The core replayed on.
    pub core: String,
    /// The level: `none`, `loops`, then the levels still to come.
    pub level: &'static str,
    /// Whether retrace builds this level yet (the figures are empty when
    /// not).
    pub built: bool,
    /// Loops aggregated.
    pub loops: Option<usize>,
    /// Branch bits recorded.
    pub bits_recorded: Option<u64>,
    /// Branches counted by aggregated loops instead of recorded.
    pub bits_saved: Option<u64>,
    /// Loop runs written instead.
    pub loop_runs: Option<u64>,
    /// Size of the trace file.
    pub trace_bytes: Option<u64>,
    /// Wall seconds of the replay.
    pub replay_seconds: Option<f64>,
    /// Estimated cycles.
    pub cycles: Option<u64>,
    /// Estimated minus unaggregated cycles, in percent of the latter.
    pub total_error_percent: Option<f64>,
}

/// What `retrace aggregate` reports.
#[derive(Serialize)]
pub struct AggregateReport {
    /// The program as given.
    pub program: String,
    /// The core replayed on.
    pub core: String,
    /// Fidelity of the replays.
    #[serde(serialize_with = "display")]
    pub fidelity: Fidelity,
    /// Instructions of the run.
    pub instructions: u64,
    /// The rungs, from none up.
    pub rungs: Vec<RungRow>,
}

fn opt<T>(v: Option<T>, f: impl Fn(T) -> String) -> String {
    v.map(f).unwrap_or_else(|| "-".into())
}

impl Report for AggregateReport {
    fn text(&self) -> String {
        let mut s = format!(
            "{} on {} ({} fidelity), {} instructions\n{:<11} {:>5} {:>13} {:>13} {:>10} {:>9} {:>16} {:>9}\n",
            self.program,
            self.core,
            self.fidelity,
            thousands(self.instructions),
            "level",
            "loops",
            "bits",
            "bits saved",
            "bytes",
            "replay s",
            "cycles",
            "error %"
        );
        for r in &self.rungs {
            if !r.built {
                s += &format!("{:<11} not built yet\n", r.level);
                continue;
            }
            s += &format!(
                "{:<11} {:>5} {:>13} {:>13} {:>10} {:>9} {:>16} {:>9}\n",
                r.level,
                opt(r.loops, |v| v.to_string()),
                opt(r.bits_recorded, thousands),
                opt(r.bits_saved, thousands),
                opt(r.trace_bytes, thousands),
                opt(r.replay_seconds, |v| format!("{v:.3}")),
                opt(r.cycles, thousands),
                opt(r.total_error_percent, |v| format!("{v:+.4}")),
            );
        }
        s
    }

    fn csv(&self) -> anyhow::Result<String> {
        csv_of(&self.rungs)
    }
}

/// Entry point of `retrace aggregate`.
pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    let elf = load_elf(&args.program)?;
    let shown = args.program.display().to_string();
    let core = load_core(&args.core)?;
    check_xlen(&core, &elf, &shown)?;
    let program = analyse(&elf, &shown)?;
    let fidelity = Fidelity::from(args.fidelity);
    let rungs = ladder(
        &elf,
        &program,
        || host(&shown, &args.program_args.args),
        args.max_insns,
        &core,
        fidelity,
        &BUILT,
    )
    .map_err(|e| pipeline_error(&shown, e))?;
    let reference = rungs[0].estimate.cycles as f64;
    let mut rows: Vec<RungRow> = rungs
        .iter()
        .zip(LADDER)
        .map(|(r, level)| RungRow {
            program: shown.clone(),
            core: core.name.clone(),
            level,
            built: true,
            loops: Some(r.loops),
            bits_recorded: Some(r.recording.branches),
            bits_saved: Some(r.recording.loops.tests),
            loop_runs: Some(r.recording.loops.runs),
            trace_bytes: Some(r.recording.trace.file_bytes),
            replay_seconds: Some(r.replay_seconds),
            cycles: Some(r.estimate.cycles),
            total_error_percent: Some(
                (r.estimate.cycles as f64 - reference) / reference.max(1.0) * 100.0,
            ),
        })
        .collect();
    for level in &LADDER[rungs.len()..] {
        rows.push(RungRow {
            program: shown.clone(),
            core: core.name.clone(),
            level,
            built: false,
            loops: None,
            bits_recorded: None,
            bits_saved: None,
            loop_runs: None,
            trace_bytes: None,
            replay_seconds: None,
            cycles: None,
            total_error_percent: None,
        });
    }
    let report = AggregateReport {
        program: shown,
        core: core.name.clone(),
        fidelity,
        instructions: rungs[0].recording.run.instructions,
        rungs: rows,
    };
    print(&report, args.output.get())?;
    Ok(ExitCode::SUCCESS)
}
