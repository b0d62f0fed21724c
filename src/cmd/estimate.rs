//! `retrace estimate`: cycles of a recorded run on one or many cores, from
//! the trace alone.

use super::common::{
    analyse, check_trace, check_xlen, display, load_core_with, load_elf, replay_error, shell_word,
    thousands, FidelityArg,
};
use crate::progress::WatchedTrace;
use crate::report::{csv_of, print, FormatArgs, Report};
use crate::status::{tag, Status};
use anyhow::anyhow;
use retrace_estimate::{estimate_trace, replay_check, Estimate, Fidelity};
use retrace_program::Addr;
use retrace_sim::HostConfig;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// Arguments of `retrace estimate`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
    retrace estimate prog.elf prog.rtrace --core rocket\n  \
    retrace estimate prog.elf prog.rtrace --core ideal --core picorv32 --core inorder5 --fidelity fast\n  \
    retrace estimate prog.elf prog.rtrace --core my-core.toml --format json\n  \
    retrace estimate prog.elf prog.rtrace --core rocket --check\n  \
    retrace estimate prog.elf prog.rtrace --core rocket --core inorder5 --cpi --format csv\n  \
    retrace estimate workq.elf workq.rtrace --core inorder5 --core picorv32 --fidelity fast  (a trace of 2 harts)")]
pub struct Args {
    /// The program the trace was recorded from.
    pub program: PathBuf,
    /// The trace (`retrace record`).
    pub trace: PathBuf,
    /// A core: preset name (`retrace cores`) or TOML file. Repeatable; the
    /// cores are estimated in parallel from the one trace. For a trace of
    /// several harts: one core for all harts, or one per hart in hart
    /// order, replayed together (docs/MULTIPROCESSOR.md).
    #[arg(long = "core", value_name = "NAME|FILE", required = true)]
    pub cores: Vec<String>,
    #[command(flatten)]
    pub sets: super::common::CoreSets,
    /// fast: partial-program times with boundary terms and static branch
    /// prediction; control: also the predictor, return stack and I-cache.
    #[arg(long, value_enum, default_value_t = FidelityArg::Control)]
    pub fidelity: FidelityArg,
    /// Data-cache miss rate for the data-cache term, from 0 to 1 (default:
    /// the rate the recorder measured for the core's geometry).
    #[arg(long, value_name = "RATE", value_parser = parse_rate, allow_negative_numbers = true)]
    pub dcache_miss_rate: Option<f64>,
    /// Also replay against the functional engine and verify the executed
    /// instruction sequence (count and hash of the pcs).
    #[arg(long)]
    pub check: bool,
    /// The clock in MHz, to show each estimate's time beside its cycles
    /// (default: the core description's `frequency_mhz`, if any); one for
    /// every core, or one per core in order. For a trace of several harts:
    /// the frequency each hart starts at (default 100), one for every hart
    /// or one per hart in hart order; frequencies the program set (set_hz)
    /// are in the trace.
    #[arg(long, value_name = "MHZ", value_parser = super::common::parse_mhz)]
    pub mhz: Vec<u64>,
    /// Also write a timeline of the estimated run to FILE as Chrome Trace
    /// Event JSON (open it in Perfetto, ui.perfetto.dev, or
    /// chrome://tracing). For a trace of one hart: a process per core with
    /// the call stack over estimated time, a slice per function call
    /// (docs/REPORTS.md, "Timeline"). For a trace of several harts: a track
    /// per hart with the functions it runs and its waits, and its clock
    /// frequency, on one time axis (docs/MULTIPROCESSOR.md, "Timeline").
    #[arg(long, value_name = "FILE")]
    pub timeline: Option<PathBuf>,
    /// Print each core's CPI stack instead: the cycles split by cause
    /// (issue, multi-cycle operations, operand waits, cache misses,
    /// branch penalties, traps; docs/REPORTS.md), the parts summing to
    /// the estimate. The replay then charges every instruction, which is
    /// slower than the plain estimate.
    #[arg(long)]
    pub cpi: bool,
    /// For a trace of one hart: keep about N of the longest calls in the
    /// timeline (shorter ones are left out, and a note says how many).
    #[arg(
        long,
        value_name = "N",
        default_value_t = 100_000,
        requires = "timeline"
    )]
    pub timeline_spans: usize,
    /// Output format (csv: one row per core).
    #[command(flatten)]
    pub output: FormatArgs,
}

/// Read a fidelity back from its name (`fast`, `control`): for reports
/// that are read again, as `retrace sweep collect` reads estimates.
fn parse_fidelity<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Fidelity, D::Error> {
    let name = String::deserialize(d)?;
    name.parse().map_err(serde::de::Error::custom)
}

/// Parse `--dcache-miss-rate`: a finite number from 0 to 1.
fn parse_rate(text: &str) -> Result<f64, String> {
    let r: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a number; give a rate from 0 to 1, e.g. 0.05"))?;
    if !(0.0..=1.0).contains(&r) {
        // NaN is not in the range either.
        return Err(format!(
            "`{text}` is not a rate from 0 to 1 (a miss rate of 5% is 0.05)"
        ));
    }
    Ok(r)
}

/// Where a core's data-cache term comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DcacheTerm {
    /// The core has no data cache.
    None,
    /// The miss rate the recorder measured for the core's geometry.
    Measured,
    /// The miss rate of `--dcache-miss-rate`.
    Given,
    /// The trace has no miss rate for the core's geometry: the total
    /// leaves the data cache out.
    Unmeasured,
}

/// A part of the core that the fidelity does not model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NotModelled {
    /// A dynamic branch predictor (replaced by static prediction).
    BranchPredictor,
    /// The return-address stack (returns counted as predicted).
    ReturnStack,
    /// The instruction cache (every fetch hits).
    Icache,
}

impl NotModelled {
    fn text(self) -> &'static str {
        match self {
            NotModelled::BranchPredictor => "branch predictor",
            NotModelled::ReturnStack => "return-address stack",
            NotModelled::Icache => "I-cache",
        }
    }
}

/// What `fidelity` leaves out of `core`.
pub fn not_modelled(core: &retrace_timing::CoreModel, fidelity: Fidelity) -> Vec<NotModelled> {
    let mut out = Vec::new();
    if fidelity == Fidelity::Fast {
        if core.branch.predictor.is_dynamic() {
            out.push(NotModelled::BranchPredictor);
        }
        if core.branch.ras_depth > 0 {
            out.push(NotModelled::ReturnStack);
        }
        if core.icache.is_some() {
            out.push(NotModelled::Icache);
        }
    }
    out
}

/// One core's estimate. A figure that does not apply to the core (or is
/// not modelled at this fidelity) is `null`, shown `-` in the text.
#[derive(Serialize, Deserialize)]
pub struct EstimateRow {
    /// The core's name.
    pub core: String,
    /// The fidelity of the replay.
    #[serde(serialize_with = "display", deserialize_with = "parse_fidelity")]
    pub fidelity: Fidelity,
    /// Estimated cycles (without the data-cache term when `dcache` is
    /// `unmeasured`).
    pub cycles: u64,
    /// Instructions replayed.
    pub instructions: u64,
    /// Cycles per instruction.
    pub cpi: f64,
    /// The core's clock in MHz (`--mhz`, else the core description's
    /// `frequency_mhz`); null when neither gives one.
    pub mhz: Option<f64>,
    /// `cycles` at that clock, in seconds: the run's time on the core.
    pub target_seconds: Option<f64>,
    /// Mispredicted branches and returns; null on a core where a
    /// misprediction costs nothing (no prediction to miss).
    pub mispredicts: Option<u64>,
    /// Instruction-cache misses; null without an I-cache, or at a fidelity
    /// that does not model it.
    pub icache_misses: Option<u64>,
    /// Cycles of the data-cache term; null without a data cache or a
    /// miss rate.
    pub dcache_cycles: Option<u64>,
    /// Whether the data-cache miss rate was measured (or given).
    pub dcache_measured: bool,
    /// Where the data-cache term comes from.
    pub dcache: DcacheTerm,
    /// True when the core has a data cache that the total leaves out (no
    /// measured miss rate in the trace): `cycles` is then a lower bound.
    pub cycles_exclude_dcache: bool,
    /// Parts of the core the fidelity does not model (empty at `control`).
    pub not_modelled: Vec<NotModelled>,
    /// Cycles the total includes for fixed if-else sites (a trace recorded
    /// with `--aggregate if-else`: lossy); 0 otherwise. With them,
    /// `instructions` counts the replay's walk, which takes one way at each
    /// fixed site, not the run's.
    pub lossy_cycles: f64,
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
}

impl EstimateRow {
    /// The row of estimate `e` of `core`; `rate_given`: whether
    /// `--dcache-miss-rate` was; `hz`: the core's clock, if known.
    pub fn new(
        core: &retrace_timing::CoreModel,
        fidelity: Fidelity,
        e: &Estimate,
        seconds: f64,
        rate_given: bool,
        hz: Option<u64>,
    ) -> EstimateRow {
        let (mhz, target_seconds) = super::common::target_time(e.cycles, hz);
        let dcache = match (core.dcache.is_some(), e.dcache_measured, rate_given) {
            (false, _, _) => DcacheTerm::None,
            (true, false, _) => DcacheTerm::Unmeasured,
            (true, true, true) => DcacheTerm::Given,
            (true, true, false) => DcacheTerm::Measured,
        };
        let not_modelled = not_modelled(core, fidelity);
        let predicts = super::common::predicts(core);
        let icache = core.icache.is_some() && !not_modelled.contains(&NotModelled::Icache);
        EstimateRow {
            core: core.name.clone(),
            fidelity,
            cycles: e.cycles,
            instructions: e.instructions,
            cpi: e.cycles as f64 / e.instructions.max(1) as f64,
            mhz,
            target_seconds,
            mispredicts: predicts.then_some(e.mispredicts),
            icache_misses: icache.then_some(e.icache_misses),
            dcache_cycles: matches!(dcache, DcacheTerm::Measured | DcacheTerm::Given)
                .then_some(e.dcache_cycles),
            dcache_measured: e.dcache_measured,
            lossy_cycles: e.lossy_cycles,
            dcache,
            cycles_exclude_dcache: dcache == DcacheTerm::Unmeasured,
            not_modelled,
            memory_accesses: e.mem_ops,
            partial_programs: e.memoised.pps,
            memoised_partial_programs: e.memoised.pps_memoised,
            memoised_stretches: e.memoised.hits,
            stretches_recorded: e.memoised.recorded,
            seconds,
        }
    }
}

/// A count for a table cell: `-` when it does not apply.
fn cell(n: Option<u64>) -> String {
    n.map_or_else(|| "-".to_string(), thousands)
}

/// The `--check` result: the replay's instruction sequence matched the
/// functional engine's.
#[derive(Serialize)]
pub struct CheckSummary {
    /// The command line the functional run gave the program.
    pub cmdline: String,
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
        if first.is_some_and(|r| r.lossy_cycles != 0.0) {
            out += &format!(
                "lossy aggregation (the trace's fixed if-else sites or collapsed regions): the cycles include {:+.0} on {} (each core its own) for what the replay did not walk, from the profile's probabilities and mean times (docs/AGGREGATION.md); instructions are the run's\n",
                first.map_or(0.0, |r| r.lossy_cycles),
                first.map_or("", |r| r.core.as_str())
            );
        }
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
        // Cores changed by --set have long names: the column fits them.
        let w = self
            .estimates
            .iter()
            .map(|r| r.core.len())
            .max()
            .unwrap_or(0)
            .max(12);
        let timed = self.estimates.iter().any(|r| r.target_seconds.is_some());
        let mut out = format!(
            "{:<w$} {:>8} {:>17} {:>7} {:>12} {:>12} {:>14}",
            "core", "fidelity", "cycles", "CPI", "mispredicts", "I$ misses", "D$ cycles"
        );
        if timed {
            out += &format!(" {:>10} {:>12}", "MHz", "time");
        }
        out += "\n";
        for r in &self.estimates {
            let dc = match r.dcache {
                DcacheTerm::Unmeasured => "unmeasured".to_string(),
                _ => cell(r.dcache_cycles),
            };
            // A total that leaves the data cache out is marked, with the
            // reason below the table.
            let cycles = if r.cycles_exclude_dcache {
                format!("{}*", thousands(r.cycles))
            } else {
                format!("{} ", thousands(r.cycles))
            };
            out += &format!(
                "{:<w$} {:>8} {:>17} {:>7.3} {:>12} {:>12} {:>14}",
                r.core,
                r.fidelity.to_string(),
                cycles,
                r.cpi,
                cell(r.mispredicts),
                cell(r.icache_misses),
                dc
            );
            if timed {
                match (r.mhz, r.target_seconds) {
                    (Some(mhz), Some(t)) => {
                        out += &format!(" {mhz:>10} {:>12}", super::common::duration_text(t))
                    }
                    _ => out += &format!(" {:>10} {:>12}", "-", "-"),
                }
            }
            out += "\n";
        }
        if self.estimates.iter().any(|r| r.cycles_exclude_dcache) {
            out += "* without the data cache: the trace has no miss rate for this core's D-cache geometry (see the warning)\n";
        }
        let ignored: Vec<String> = self
            .estimates
            .iter()
            .filter(|r| !r.not_modelled.is_empty())
            .map(|r| {
                let parts: Vec<&str> = r.not_modelled.iter().map(|n| n.text()).collect();
                format!("{}'s {}", r.core, and_list(&parts))
            })
            .collect();
        if !ignored.is_empty() {
            out += &format!(
                "fidelity fast does not model {} (static prediction, returns predicted, fetches hit); --fidelity control does\n",
                ignored.join("; ")
            );
        }
        out
    }

    fn csv(&self) -> anyhow::Result<String> {
        let rows: Vec<EstimateCsvRow<'_>> =
            self.estimates.iter().map(EstimateCsvRow::from).collect();
        csv_of(&rows)
    }
}

/// An estimate as a flat CSV record: the JSON row's fields, with the list
/// of parts not modelled as `a|b`.
#[derive(Serialize)]
struct EstimateCsvRow<'a> {
    core: &'a str,
    #[serde(serialize_with = "display")]
    fidelity: Fidelity,
    cycles: u64,
    instructions: u64,
    cpi: f64,
    mhz: Option<f64>,
    target_seconds: Option<f64>,
    mispredicts: Option<u64>,
    icache_misses: Option<u64>,
    dcache_cycles: Option<u64>,
    dcache_measured: bool,
    dcache: DcacheTerm,
    cycles_exclude_dcache: bool,
    not_modelled: String,
    memory_accesses: u64,
    partial_programs: u64,
    memoised_partial_programs: u64,
    memoised_stretches: u64,
    stretches_recorded: u64,
    seconds: f64,
}

impl<'a> From<&'a EstimateRow> for EstimateCsvRow<'a> {
    fn from(r: &'a EstimateRow) -> Self {
        let names: Vec<String> = r
            .not_modelled
            .iter()
            .map(super::common::name_of_serialized)
            .collect();
        EstimateCsvRow {
            core: &r.core,
            fidelity: r.fidelity,
            cycles: r.cycles,
            instructions: r.instructions,
            cpi: r.cpi,
            mhz: r.mhz,
            target_seconds: r.target_seconds,
            mispredicts: r.mispredicts,
            icache_misses: r.icache_misses,
            dcache_cycles: r.dcache_cycles,
            dcache_measured: r.dcache_measured,
            dcache: r.dcache,
            cycles_exclude_dcache: r.cycles_exclude_dcache,
            not_modelled: names.join("|"),
            memory_accesses: r.memory_accesses,
            partial_programs: r.partial_programs,
            memoised_partial_programs: r.memoised_partial_programs,
            memoised_stretches: r.memoised_stretches,
            stretches_recorded: r.stretches_recorded,
            seconds: r.seconds,
        }
    }
}

/// `a`, `a and b`, `a, b and c`.
fn and_list(parts: &[&str]) -> String {
    match parts {
        [] => String::new(),
        [one] => one.to_string(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// Entry point of `retrace estimate`.
pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    let elf = load_elf(&args.program)?;
    let shown = args.program.display().to_string();
    let header = check_trace(&args.trace, &elf, &shown)?;
    if header.harts > 1 && args.cpi {
        return Err(tag(
            anyhow!(
                "--cpi applies to a trace of one hart; {} holds {}",
                args.trace.display(),
                header.harts
            ),
            Status::BadInput,
        ));
    }
    if header.harts > 1 {
        return super::estimate_mp::main(&args, &elf, &shown, usize::from(header.harts));
    }
    let cores = args
        .cores
        .iter()
        .map(|c| load_core_with(c, &args.sets.set))
        .collect::<anyhow::Result<Vec<_>>>()?;
    for c in &cores {
        check_xlen(c, &elf, &shown)?;
    }
    // One --mhz for every core, or one per core in order.
    let clocks: Vec<Option<u64>> = match args.mhz.len() {
        0 => cores.iter().map(|c| c.frequency_hz).collect(),
        1 => vec![Some(args.mhz[0]); cores.len()],
        n if n == cores.len() => args.mhz.iter().map(|&hz| Some(hz)).collect(),
        n => {
            return Err(tag(
                anyhow!(
                    "{n} --mhz for {} --core: give one for every core, or one per core in order",
                    cores.len()
                ),
                Status::BadInput,
            ))
        }
    };
    let program = analyse(&elf, &shown)?;
    let fidelity = Fidelity::from(args.fidelity);
    if args.cpi {
        return cpi_main(&args, &program, shown, &cores, fidelity);
    }
    let start = Instant::now();
    let source = WatchedTrace::new(&args.trace, "replaying");
    let results = estimate_trace(
        &program.table,
        Addr(elf.entry),
        &source,
        &cores,
        fidelity,
        args.dcache_miss_rate,
    )
    .map_err(|e| replay_error(&args.trace, e))?;
    source.finish();
    let seconds = start.elapsed().as_secs_f64();
    if let Some(path) = &args.timeline {
        write_timeline(&args, path, &program, &cores, &clocks, fidelity, &shown)?;
    }

    let check = if args.check {
        // A lossy trace stores the replay's own instruction count.
        let lossy = retrace_estimate::read_totals(&args.trace)
            .map_err(|e| replay_error(&args.trace, e))?
            .walk_instructions
            .is_some();
        if lossy {
            return Err(tag(
                anyhow!(
                    "--check: trace {} was recorded with a lossy --aggregate level (if-else, nested, functions), whose replay does not walk the run's instructions; only an exact trace (none or loops) can follow the functional engine",
                    args.trace.display()
                ),
                Status::BadInput,
            ));
        }
        Some(check(&args, &elf, &program, &shown, &header)?)
    } else {
        None
    };

    let report = EstimateReport {
        program: shown,
        trace: args.trace.display().to_string(),
        estimates: cores
            .iter()
            .zip(&results)
            .zip(&clocks)
            .map(|((c, (e, _)), &hz)| {
                EstimateRow::new(c, fidelity, e, seconds, args.dcache_miss_rate.is_some(), hz)
            })
            .collect(),
        check,
    };
    if let Some(w) = unmeasured_warning(
        &report.estimates,
        &cores,
        &header,
        &report.program,
        &report.trace,
    ) {
        eprintln!("{w}");
    }
    let format = args.output.get();
    print(&report, format)?;
    if format == crate::report::Format::Text {
        eprint!("{}", report.notes());
    }
    Ok(ExitCode::SUCCESS)
}

/// One core's CPI stack (`retrace estimate --cpi`).
#[derive(Serialize)]
pub struct CpiRow {
    /// The core's name.
    pub core: String,
    /// The fidelity of the replay.
    pub fidelity: String,
    /// Estimated cycles: the sum of the parts.
    pub cycles: u64,
    /// Instructions replayed.
    pub instructions: u64,
    /// Cycles per part, in stack order.
    pub cpi: retrace_timing::CpiStack,
}

/// What `retrace estimate --cpi` reports.
#[derive(Serialize)]
pub struct CpiReport {
    /// The program as given.
    pub program: String,
    /// The trace as given.
    pub trace: String,
    /// One stack per core, in the order given.
    pub cores: Vec<CpiRow>,
}

impl Report for CpiReport {
    fn text(&self) -> String {
        let mut o = format!("{} ({}): CPI stacks\n", self.program, self.trace);
        o.push_str(&format!("{:<12}", "part"));
        for c in &self.cores {
            o.push_str(&format!(" {:>28}", format!("{} ({})", c.core, c.fidelity)));
        }
        o.push('\n');
        let row = |o: &mut String, name: &str, cycles: &dyn Fn(&CpiRow) -> u64| {
            o.push_str(&format!("{name:<12}"));
            for c in &self.cores {
                let n = cycles(c);
                let cpi = n as f64 / c.instructions.max(1) as f64;
                let pct = n as f64 * 100.0 / c.cycles.max(1) as f64;
                o.push_str(&format!(" {:>14} {cpi:>6.3} {pct:>5.1}%", thousands(n)));
            }
            o.push('\n');
        };
        for part in retrace_timing::CpiPart::ALL {
            row(&mut o, part.name(), &|c| c.cpi.get(part));
        }
        row(&mut o, "total", &|c| c.cycles);
        o.push_str("(cycles, cycles per instruction, share of the total)\n");
        o
    }

    fn csv(&self) -> anyhow::Result<String> {
        let mut o = format!(
            "core,fidelity,cycles,instructions,{}\n",
            retrace_timing::CpiStack::csv_header()
        );
        for c in &self.cores {
            let mut w = csv::Writer::from_writer(Vec::new());
            w.write_record([&c.core, &c.fidelity])?;
            let quoted = String::from_utf8(w.into_inner()?)?;
            o.push_str(&format!(
                "{},{},{},{}\n",
                quoted.trim_end(),
                c.cycles,
                c.instructions,
                c.cpi.csv_row()
            ));
        }
        Ok(o)
    }
}

/// `retrace estimate --cpi`: each core's CPI stack, from a replay that
/// charges every instruction.
fn cpi_main(
    args: &Args,
    program: &retrace_program::Program,
    shown: String,
    cores: &[retrace_timing::CoreModel],
    fidelity: Fidelity,
) -> anyhow::Result<ExitCode> {
    for (given, what) in [
        (args.check, "--check"),
        (args.dcache_miss_rate.is_some(), "--dcache-miss-rate"),
        (!args.mhz.is_empty(), "--mhz"),
        (args.timeline.is_some(), "--timeline"),
    ] {
        if given {
            return Err(tag(
                anyhow!(
                    "--cpi does not combine with {what}: run the estimate without --cpi for it"
                ),
                Status::BadInput,
            ));
        }
    }
    let mut rows = Vec::new();
    for core in cores {
        let (profile, e) = retrace_estimate::profile_trace(program, &args.trace, core, fidelity)
            .map_err(|err| replay_error(&args.trace, err))?;
        rows.push(CpiRow {
            core: core.name.clone(),
            fidelity: fidelity.to_string(),
            cycles: e.cycles,
            instructions: e.instructions,
            cpi: profile.cpi_stack(&e),
        });
    }
    let report = CpiReport {
        program: shown,
        trace: args.trace.display().to_string(),
        cores: rows,
    };
    print(&report, args.output.get())?;
    Ok(ExitCode::SUCCESS)
}

/// `--timeline` for a trace of one hart: each core's replay, following
/// its frames, as one process of the timeline.
fn write_timeline(
    args: &Args,
    path: &std::path::Path,
    program: &retrace_program::Program,
    cores: &[retrace_timing::CoreModel],
    clocks: &[Option<u64>],
    fidelity: Fidelity,
    shown: &str,
) -> anyhow::Result<()> {
    let what = retrace_estimate::Profiling {
        per_instruction: false,
        timeline: Some(args.timeline_spans),
    };
    let mut profiles = Vec::new();
    for core in cores {
        let source = WatchedTrace::new(&args.trace, &format!("timeline on {}", core.name));
        let (profile, estimate) =
            retrace_estimate::profile_trace_with(program, &source, core, fidelity, what)
                .map_err(|e| replay_error(&args.trace, e))?;
        source.finish();
        profiles.push((
            profile
                .timeline
                .unwrap_or_else(|| retrace_sim::functions::SpanLog::new(1)),
            estimate.control_cycles,
        ));
    }
    let runs: Vec<super::timeline::CoreRun> = cores
        .iter()
        .zip(&profiles)
        .zip(clocks)
        .map(|((core, (spans, cycles)), hz)| super::timeline::CoreRun {
            core: &core.name,
            hz: hz.unwrap_or(retrace_sim::frequency::DEFAULT_HZ),
            spans,
            cycles: *cycles,
        })
        .collect();
    let names = retrace_program::FunctionRanges::of_program(program).names;
    let title = format!("retrace estimate: {shown} ({fidelity})");
    let events = super::timeline::one_hart_events(&title, &runs, &names)?;
    super::timeline::write(path, &events)?;
    for run in &runs {
        if let Some(note) = super::timeline::left_out_note(run.core, run.spans) {
            eprintln!("{note}");
        }
    }
    Ok(())
}

/// The warning for cores whose data cache the trace has no miss rate for:
/// which, and the `retrace record` command that measures them.
pub fn unmeasured_warning(
    rows: &[EstimateRow],
    cores: &[retrace_timing::CoreModel],
    header: &retrace_trace::Header,
    program: &str,
    trace: &str,
) -> Option<String> {
    let mut names = Vec::new();
    let mut geometries: Vec<String> = Vec::new();
    for (row, core) in rows.iter().zip(cores) {
        if let (DcacheTerm::Unmeasured, Some(dc)) = (row.dcache, core.dcache) {
            names.push(format!(
                "{} ({}:{}:{})",
                row.core, dc.size, dc.ways, dc.line
            ));
            let g = format!("--dcache {}:{}:{}", dc.size, dc.ways, dc.line);
            if !geometries.contains(&g) {
                geometries.push(g);
            }
        }
    }
    if names.is_empty() {
        return None;
    }
    let mut command = format!(
        "retrace record {} {} -o {}",
        shell_word(program),
        geometries.join(" "),
        shell_word(trace)
    );
    if !header.args.is_empty() {
        command += " --";
        for a in &header.args {
            command += " ";
            command += &shell_word(a);
        }
    }
    Some(format!(
        "retrace: warning: the trace has no data-cache miss rate for {}: the total leaves the data cache out; measure it by recording again with `{command}` (or give --dcache-miss-rate)",
        names.join(", ")
    ))
}

/// The command lines the recording may have given the program, in the
/// order to try them. With arguments, the line is the arguments, which the
/// trace stores: exactly one candidate. Without, it was the program path
/// as `retrace record` was given it, which the trace stores
/// (`Header::program`), so how the path is spelled here does not matter.
/// Traces written before that stored only the file name: for them the path
/// given here is tried as well.
fn recorded_cmdlines(header: &retrace_trace::Header, shown: &str) -> Vec<String> {
    if !header.args.is_empty() {
        return vec![HostConfig::qemu_cmdline(shown, &header.args)];
    }
    let mut out = Vec::new();
    if !header.program.is_empty() {
        out.push(HostConfig::qemu_cmdline(&header.program, &[]));
    }
    if header.program != shown {
        out.push(HostConfig::qemu_cmdline(shown, &[]));
    }
    out
}

/// `--check`: replay the trace and run the program in the functional
/// engine with the recording's command line, and compare the executed pc
/// sequences.
fn check(
    args: &Args,
    elf: &retrace_program::Elf,
    program: &retrace_program::Program,
    shown: &str,
    header: &retrace_trace::Header,
) -> anyhow::Result<CheckSummary> {
    let mut table = program.table.clone();
    let replayed = replay_check(&mut table, Addr(elf.entry), &args.trace)
        .map_err(|e| replay_error(&args.trace, e))?;
    // Run as far as the recording did (a recording cut by --max-insns
    // stops there too).
    let recorded =
        retrace_estimate::read_totals(&args.trace).map_err(|e| replay_error(&args.trace, e))?;
    let mut tried = Vec::new();
    for cmdline in recorded_cmdlines(header, shown) {
        let host = HostConfig {
            cmdline: cmdline.clone(),
            ..HostConfig::default()
        };
        let (_, functional) =
            retrace_sim::check::functional_pc_sequence(elf, host, Some(recorded.instructions))
                .map_err(|e| tag(anyhow!("cannot load {shown}: {e}"), Status::BadInput))?;
        if replayed == functional {
            return Ok(CheckSummary {
                cmdline,
                instructions: replayed.instructions,
                pc_hash: format!("{:016x}", replayed.hash),
                matches: true,
            });
        }
        tried.push((cmdline, functional));
    }
    let (_, functional) = &tried[0];
    // Only a trace from before the path was stored leaves a doubt about
    // the command line: say so, with what was tried.
    let hint = if tried.len() > 1 {
        let lines: Vec<String> = tried.iter().map(|(c, _)| format!("{c:?}")).collect();
        format!(
            "; the program ran with command line {}: this trace stores only the program's file name {:?} (written by an older retrace), so record it again, or spell the path as it was recorded",
            lines.join(" and "),
            header.program
        )
    } else {
        String::new()
    };
    Err(tag(
        anyhow!(
            "check failed: the replay executes {} instructions (pc hash {:016x}), the functional engine {} (pc hash {:016x}){hint}",
            replayed.instructions,
            replayed.hash,
            functional.instructions,
            functional.hash
        ),
        Status::BadInput,
    ))
}
