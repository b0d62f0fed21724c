//! `retrace aggregate`: the aggregation ladder of US patent 8,448,140 for one program —
//! recorded at each level (none, loops, +if-else and its if-else bias
//! sweep, +nested and its loop bias sweep, +functions), each trace
//! replayed on one core — in one table: bits recorded, trace bytes, replay
//! time, the total error against the unaggregated replay and the local
//! timing error (per call).

use super::common::{
    analyse, check_xlen, display, host, load_core, load_elf, thousands, FidelityArg, ProgramArgs,
};
use super::compare::pipeline_error;
use crate::report::{csv_of, print, FormatArgs, Report};
use retrace_estimate::aggregate::ladder::{ladder, LadderError, BUILT};
use retrace_estimate::aggregate::Level;
use retrace_estimate::Fidelity;
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `retrace aggregate`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
    retrace aggregate matmul-rv32-O2.elf\n  \
    retrace aggregate sort-rv32-O2.elf --core picorv32 --format csv -- 20000\n  \
    retrace aggregate crc32-rv32-O2.elf --if-else-bias 0,100,1e4,1e6 --loop-bias 1e4,1e8")]
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
    /// The if-else bias thresholds to sweep (embodiment 6's gate, in cycles
    /// on `--core`): one `+if-else` rung per threshold after the one with
    /// the gate off.
    #[arg(long, value_name = "CYCLES", value_delimiter = ',', default_value = "1e3,1e4,1e5,1e6", value_parser = super::common::parse_threshold)]
    pub if_else_bias: Vec<f64>,
    /// The loop bias thresholds to sweep (embodiment 6's gate for collapsed
    /// nests, `Var(trip counts) × extents × cycles per pass` on `--core`):
    /// one `+nested` rung per threshold after the one with the gate off.
    #[arg(long, value_name = "CYCLES", value_delimiter = ',', default_value = "1e3,1e5,1e7,1e9", value_parser = super::common::parse_threshold)]
    pub loop_bias: Vec<f64>,
    #[command(flatten)]
    pub output: FormatArgs,
    #[command(flatten)]
    pub program_args: ProgramArgs,
}

/// One rung of the ladder.
#[derive(Serialize)]
pub struct RungRow {
    /// The program as given.
    pub program: String,
    /// The core replayed on.
    pub core: String,
    /// The level: `none`, `loops`, `+if-else`, `+nested`, `+functions`.
    pub level: &'static str,
    /// The if-else bias threshold of a `+if-else` rung (empty: gate off).
    pub if_else_bias: Option<f64>,
    /// The loop bias threshold of a `+nested` rung (empty: gate off).
    pub loop_bias: Option<f64>,
    /// Loops aggregated by trip counts.
    pub loops: Option<usize>,
    /// Fixed if-else sites (branches by probability).
    pub fixed_sites: Option<usize>,
    /// Loop nests collapsed by their mean time.
    pub nests: Option<usize>,
    /// Functions collapsed by their mean time per call.
    pub functions: Option<usize>,
    /// Branch bits recorded.
    pub bits_recorded: Option<u64>,
    /// Branch bits the plain recording has and this one does not.
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
    /// Local timing error, mean over calls, in percent.
    pub local_error_mean_percent: Option<f64>,
    /// Local timing error, 99th percentile over calls, in percent.
    pub local_error_p99_percent: Option<f64>,
}

impl RungRow {
    /// A row without figures: a level the recorder refused for this
    /// program.
    fn refused(program: &str, core: &str, level: &'static str) -> RungRow {
        RungRow {
            program: program.to_string(),
            core: core.to_string(),
            level,
            if_else_bias: None,
            loop_bias: None,
            loops: None,
            fixed_sites: None,
            nests: None,
            functions: None,
            bits_recorded: None,
            bits_saved: None,
            loop_runs: None,
            trace_bytes: None,
            replay_seconds: None,
            cycles: None,
            total_error_percent: None,
            local_error_mean_percent: None,
            local_error_p99_percent: None,
        }
    }
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
            "{} on {} ({} fidelity), {} instructions\n{:<16} {:>5} {:>5} {:>5} {:>5} {:>13} {:>13} {:>10} {:>9} {:>16} {:>9} {:>8} {:>8}\n",
            self.program,
            self.core,
            self.fidelity,
            thousands(self.instructions),
            "level",
            "loops",
            "fixed",
            "nests",
            "funcs",
            "bits",
            "bits saved",
            "bytes",
            "replay s",
            "cycles",
            "error %",
            "local %",
            "p99 %"
        );
        for r in &self.rungs {
            if r.bits_recorded.is_none() {
                s += &format!("{:<16} refused for this program (see above)\n", r.level);
                continue;
            }
            let level = match (r.if_else_bias, r.loop_bias) {
                (Some(0.0), _) => "  bias < 0".to_string(),
                (Some(t), _) => format!("  bias < {t:e}"),
                (_, Some(0.0)) => "  loop bias < 0".to_string(),
                (_, Some(t)) => format!("  loop b. < {t:e}"),
                _ => r.level.to_string(),
            };
            s += &format!(
                "{:<16} {:>5} {:>5} {:>5} {:>5} {:>13} {:>13} {:>10} {:>9} {:>16} {:>9} {:>8} {:>8}\n",
                level,
                opt(r.loops, |v| v.to_string()),
                opt(r.fixed_sites, |v| v.to_string()),
                opt(r.nests, |v| v.to_string()),
                opt(r.functions, |v| v.to_string()),
                opt(r.bits_recorded, thousands),
                opt(r.bits_saved, thousands),
                opt(r.trace_bytes, thousands),
                opt(r.replay_seconds, |v| format!("{v:.3}")),
                opt(r.cycles, thousands),
                opt(r.total_error_percent, |v| format!("{v:+.4}")),
                opt(r.local_error_mean_percent, |v| format!("{v:.3}")),
                opt(r.local_error_p99_percent, |v| format!("{v:.3}")),
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
    let ladder = ladder(
        &elf,
        &program,
        || host(&shown, &args.program_args.args),
        args.max_insns,
        &core,
        fidelity,
        &BUILT,
        &args.if_else_bias,
        &args.loop_bias,
    )
    .map_err(|e| match e {
        LadderError::Pipeline(e) => pipeline_error(&shown, e),
        e => crate::status::tag(
            anyhow::anyhow!("{shown}: {e}"),
            crate::status::Status::BadInput,
        ),
    })?;
    let rungs = &ladder.rungs;
    let reference = rungs[0].estimate.cycles as f64;
    let plain_bits = rungs[0].recording.branches;
    let mut rows: Vec<RungRow> = rungs
        .iter()
        .map(|r| RungRow {
            program: shown.clone(),
            core: core.name.clone(),
            level: r.level.name(),
            if_else_bias: r.threshold.filter(|_| r.level == Level::IfElse),
            loop_bias: r.threshold.filter(|_| r.level == Level::Nested),
            loops: Some(r.loops),
            fixed_sites: Some(r.fixed),
            nests: Some(r.nests),
            functions: Some(r.functions),
            bits_recorded: Some(r.recording.branches),
            bits_saved: Some(plain_bits.saturating_sub(r.recording.branches)),
            loop_runs: Some(r.recording.loops.runs),
            trace_bytes: Some(r.recording.trace.file_bytes),
            replay_seconds: Some(r.replay_seconds),
            cycles: Some(r.estimate.cycles),
            total_error_percent: Some(
                (r.estimate.cycles as f64 - reference) / reference.max(1.0) * 100.0,
            ),
            local_error_mean_percent: r.local.as_ref().map(|l| l.mean * 100.0),
            local_error_p99_percent: r.local.as_ref().map(|l| l.p99 * 100.0),
        })
        .collect();
    // A level the recorder refused for this program: a row without
    // figures, and why on stderr.
    for (level, why) in &ladder.refused {
        eprintln!("{shown}: no {} rung: {why}", level.name());
        rows.push(RungRow::refused(&shown, &core.name, level.name()));
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
