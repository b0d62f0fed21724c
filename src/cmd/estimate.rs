//! `retrace estimate`: cycles of a recorded run on one or many cores, from
//! the trace alone.

use super::common::{
    analyse, check_trace, check_xlen, display, load_core, load_elf, replay_error, thousands,
    FidelityArg,
};
use crate::report::{csv_of, print, FormatArgs, Report};
use crate::status::{tag, Status};
use anyhow::anyhow;
use retrace_estimate::{estimate_trace, replay_check, Estimate, Fidelity};
use retrace_program::Addr;
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// Arguments of `retrace estimate`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
    retrace estimate prog.elf prog.rtrace --core rocket\n  \
    retrace estimate prog.elf prog.rtrace --core ideal --core picorv32 --core inorder5 --fidelity fast\n  \
    retrace estimate prog.elf prog.rtrace --core my-core.toml --format json\n  \
    retrace estimate prog.elf prog.rtrace --core rocket --check")]
pub struct Args {
    /// The program the trace was recorded from.
    pub program: PathBuf,
    /// The trace (`retrace record`).
    pub trace: PathBuf,
    /// A core: preset name (`retrace cores`) or TOML file. Repeatable; the
    /// cores are estimated in parallel from the one trace.
    #[arg(long = "core", value_name = "NAME|FILE", required = true)]
    pub cores: Vec<String>,
    /// fast: partial-program times with boundary terms and static branch
    /// prediction; control: also the predictor, return stack and I-cache.
    #[arg(long, value_enum, default_value_t = FidelityArg::Control)]
    pub fidelity: FidelityArg,
    /// Data-cache miss rate for the data-cache term (default: the rate the
    /// recorder measured for the core's geometry).
    #[arg(long, value_name = "RATE")]
    pub dcache_miss_rate: Option<f64>,
    /// Also replay against the functional engine and verify the executed
    /// instruction sequence (count and hash of the pcs).
    #[arg(long)]
    pub check: bool,
    /// Output format (csv: one row per core).
    #[command(flatten)]
    pub output: FormatArgs,
}

/// One core's estimate.
#[derive(Serialize)]
pub struct EstimateRow {
    /// The core's name.
    pub core: String,
    /// The fidelity of the replay.
    #[serde(serialize_with = "display")]
    pub fidelity: Fidelity,
    /// Estimated cycles.
    pub cycles: u64,
    /// Instructions replayed.
    pub instructions: u64,
    /// Cycles per instruction.
    pub cpi: f64,
    /// Mispredicted branches.
    pub mispredicts: u64,
    /// Instruction-cache misses.
    pub icache_misses: u64,
    /// Cycles of the data-cache term.
    pub dcache_cycles: u64,
    /// Whether the data-cache miss rate was measured (or given).
    pub dcache_measured: bool,
    /// Loads and stores.
    pub memory_accesses: u64,
    /// Partial programs replayed.
    pub partial_programs: u64,
    /// Of those, how many came from memoised stretches.
    pub memoised_partial_programs: u64,
    /// Memoised stretches replayed.
    pub memoised_stretches: u64,
    /// Stretches recorded for memoisation.
    pub stretches_recorded: u64,
    /// Wall seconds of the whole estimate (every core).
    pub seconds: f64,
    /// Whether the core has a data cache (the text shows `-` if not).
    #[serde(skip)]
    pub has_dcache: bool,
}

impl EstimateRow {
    /// The row of estimate `e` of `core`.
    pub fn new(
        core: &retrace_timing::CoreModel,
        fidelity: Fidelity,
        e: &Estimate,
        seconds: f64,
    ) -> EstimateRow {
        EstimateRow {
            core: core.name.clone(),
            fidelity,
            cycles: e.cycles,
            instructions: e.instructions,
            cpi: e.cycles as f64 / e.instructions.max(1) as f64,
            mispredicts: e.mispredicts,
            icache_misses: e.icache_misses,
            dcache_cycles: e.dcache_cycles,
            dcache_measured: e.dcache_measured,
            memory_accesses: e.mem_ops,
            partial_programs: e.memoised.pps,
            memoised_partial_programs: e.memoised.pps_memoised,
            memoised_stretches: e.memoised.hits,
            stretches_recorded: e.memoised.recorded,
            seconds,
            has_dcache: core.dcache.is_some(),
        }
    }
}

/// The `--check` result: the replay's instruction sequence matched the
/// functional engine's.
#[derive(Serialize)]
pub struct CheckSummary {
    /// Instructions compared.
    pub instructions: u64,
    /// Hash of the pc sequence, 16 hex digits.
    pub pc_hash: String,
    /// Always true: a mismatch is an error.
    pub matches: bool,
}

/// What `retrace estimate` reports.
#[derive(Serialize)]
pub struct EstimateReport {
    /// The program as given.
    pub program: String,
    /// The trace as given.
    pub trace: String,
    /// One row per core, in the order given.
    pub estimates: Vec<EstimateRow>,
    /// With --check.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub check: Option<CheckSummary>,
}

impl EstimateReport {
    /// The notes that follow the table, on stderr: replay speed and the
    /// check.
    fn notes(&self) -> String {
        let first = self.estimates.first();
        let mut out = String::new();
        let memo_note = match first {
            Some(r) if r.memoised_partial_programs > 0 => format!(
                " ({:.1}% of {} partial programs from {} memoised stretches)",
                r.memoised_partial_programs as f64 * 100.0 / r.partial_programs.max(1) as f64,
                thousands(r.partial_programs),
                thousands(r.memoised_stretches)
            ),
            _ => String::new(),
        };
        out += &format!(
            "{} instructions replayed for {} core(s) in {:.3} s{memo_note}\n",
            thousands(first.map_or(0, |r| r.instructions)),
            self.estimates.len(),
            first.map_or(0.0, |r| r.seconds)
        );
        if let Some(c) = &self.check {
            out += &format!(
                "check: {} instructions, pc hash {}: the replay follows the functional engine exactly\n",
                thousands(c.instructions),
                c.pc_hash
            );
        }
        out
    }
}

impl Report for EstimateReport {
    fn text(&self) -> String {
        let mut out = format!(
            "{:<12} {:>8} {:>16} {:>7} {:>12} {:>12} {:>14}\n",
            "core", "fidelity", "cycles", "CPI", "mispredicts", "I$ misses", "D$ cycles"
        );
        for r in &self.estimates {
            let dc = if !r.has_dcache {
                "-".to_string()
            } else if r.dcache_measured {
                thousands(r.dcache_cycles)
            } else {
                "unmeasured".to_string()
            };
            out += &format!(
                "{:<12} {:>8} {:>16} {:>7.3} {:>12} {:>12} {:>14}\n",
                r.core,
                r.fidelity.to_string(),
                thousands(r.cycles),
                r.cpi,
                thousands(r.mispredicts),
                thousands(r.icache_misses),
                dc
            );
        }
        out
    }

    fn csv(&self) -> anyhow::Result<String> {
        csv_of(&self.estimates)
    }
}

/// Entry point of `retrace estimate`.
pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    let elf = load_elf(&args.program)?;
    let shown = args.program.display().to_string();
    let header = check_trace(&args.trace, &elf, &shown)?;
    let cores = args
        .cores
        .iter()
        .map(|c| load_core(c))
        .collect::<anyhow::Result<Vec<_>>>()?;
    for c in &cores {
        check_xlen(c, &elf, &shown)?;
    }
    if let Some(r) = args.dcache_miss_rate {
        if !(0.0..=1.0).contains(&r) {
            return Err(tag(
                anyhow!("--dcache-miss-rate {r}: give a rate from 0 to 1"),
                Status::BadInput,
            ));
        }
    }
    let program = analyse(&elf, &shown)?;
    let fidelity = Fidelity::from(args.fidelity);
    let start = Instant::now();
    let results = estimate_trace(
        &program.table,
        Addr(elf.entry),
        &args.trace,
        &cores,
        fidelity,
        args.dcache_miss_rate,
    )
    .map_err(|e| replay_error(&args.trace, e))?;
    let seconds = start.elapsed().as_secs_f64();

    let check = if args.check {
        let mut table = program.table.clone();
        let replayed = replay_check(&mut table, Addr(elf.entry), &args.trace)
            .map_err(|e| replay_error(&args.trace, e))?;
        let host = super::common::host(&shown, &header.args);
        // Run as far as the recording did (a recording cut by --max-insns
        // stops there too).
        let recorded =
            retrace_estimate::read_totals(&args.trace).map_err(|e| replay_error(&args.trace, e))?;
        let (_, functional) =
            retrace_sim::check::functional_pc_sequence(&elf, host, Some(recorded.instructions))
                .map_err(|e| tag(anyhow!("cannot load {shown}: {e}"), Status::BadInput))?;
        if replayed != functional {
            return Err(tag(
                anyhow!(
                    "check failed: the replay executes {} instructions (pc hash {:016x}), the functional engine {} (pc hash {:016x})",
                    replayed.instructions, replayed.hash, functional.instructions, functional.hash
                ),
                Status::BadInput,
            ));
        }
        Some(replayed)
    } else {
        None
    };

    let report = EstimateReport {
        program: shown,
        trace: args.trace.display().to_string(),
        estimates: cores
            .iter()
            .zip(&results)
            .map(|(c, (e, _))| EstimateRow::new(c, fidelity, e, seconds))
            .collect(),
        check: check.map(|c| CheckSummary {
            instructions: c.instructions,
            pc_hash: format!("{:016x}", c.hash),
            matches: true,
        }),
    };
    let format = args.output.get();
    print(&report, format)?;
    if format == crate::report::Format::Text {
        eprint!("{}", report.notes());
    }
    Ok(ExitCode::SUCCESS)
}
