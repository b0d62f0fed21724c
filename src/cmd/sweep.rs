//! `retrace sweep`: one recorded run estimated on every point of a grid of
//! core variants — `--set key=A..B*F`, `--set key=a,b` — from the one
//! trace, the cores spread over the host's CPUs.

use super::common::{
    analyse, check_trace, check_xlen, load_core, load_core_with, load_elf, replay_error, thousands,
    FidelityArg,
};
use super::estimate::{unmeasured_warning, EstimateRow};
use crate::report::{print, FormatArgs, Report};
use crate::status::{tag, Status};
use anyhow::{anyhow, Context};
use retrace_estimate::{estimate_trace, Fidelity};
use retrace_program::Addr;
use retrace_timing::{grid, Axis, Override};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// Arguments of `retrace sweep`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
    retrace sweep prog.elf prog.rtrace --core rocket --set icache.size=512..16384*2 --set branch.predictor=bimodal,gshare --set branch.history_bits=8\n  \
    retrace sweep prog.elf prog.rtrace --core my-core.toml --set branch.mispredict_penalty=1..9+2 --format csv > sweep.csv\n  \
    retrace sweep prog.elf prog.rtrace --core inorder5 --set latency.mul=1,2,4,8 --fidelity fast")]
pub struct Args {
    /// The program the trace was recorded from.
    #[arg(required = true)]
    pub program: Option<PathBuf>,
    /// The trace (`retrace record`), of one hart. With --slurm or
    /// --emit-commands it may not exist yet: recording it is then a task
    /// of its own, run with the arguments after `--`.
    #[arg(required = true)]
    pub trace: Option<PathBuf>,
    /// The base core: a preset name (`retrace cores`) or a TOML file.
    #[arg(long, value_name = "NAME|FILE", required = true)]
    pub core: Option<String>,
    /// An axis of the grid: KEY=VALUES, KEY a field of the core description
    /// with tables joined by dots (docs/TIMING.md), VALUES one value, a list
    /// `a,b,c`, a range `A..B*F` (A, A·F, A·F², … up to B) or `A..B+S` (A,
    /// A+S, … up to B). Repeatable: the grid is every combination, the
    /// first --set varying slowest. A single value changes every point.
    #[arg(long = "set", value_name = "KEY=VALUES", value_parser = parse_axis, required = true)]
    pub axes: Vec<Axis>,
    /// fast: partial-program times with boundary terms and static branch
    /// prediction; control: also the predictor, return stack and I-cache.
    #[arg(long, value_enum, default_value_t = FidelityArg::Control)]
    pub fidelity: FidelityArg,
    /// Refuse grids larger than this (a typo in a range should not run for
    /// hours).
    #[arg(long, value_name = "N", default_value_t = 1024)]
    pub max_points: usize,
    /// Instead of estimating here, write the sweep to DIR as plain shell
    /// commands, one per grid point (and one to record the trace if it
    /// does not exist), for GNU parallel or any batch system; then
    /// `retrace sweep collect DIR` (docs/CLUSTER.md).
    #[arg(long, value_name = "DIR", conflicts_with = "slurm")]
    pub emit_commands: Option<PathBuf>,
    /// Instead of estimating here, submit the sweep to Slurm as a job
    /// array (and a recording job the array depends on, if the trace does
    /// not exist), keeping the plan, commands, results and logs in DIR, a
    /// directory every node sees. Run again with the same arguments, it
    /// submits only the points that have no result (docs/CLUSTER.md).
    #[arg(long, value_name = "DIR")]
    pub slurm: Option<PathBuf>,
    /// With --slurm: the partition (sbatch --partition).
    #[arg(long, value_name = "P", requires = "slurm")]
    pub partition: Option<String>,
    /// With --slurm: at most this many array tasks at once (sbatch's
    /// `--array=…%N`).
    #[arg(long, value_name = "N", requires = "slurm")]
    pub array_limit: Option<u32>,
    /// With --slurm or --emit-commands: grid points per task.
    #[arg(long, value_name = "K", default_value_t = 1)]
    pub chunk: usize,
    /// With --slurm: wait for the jobs to end, then collect.
    #[arg(long, requires = "slurm")]
    pub wait: bool,
    /// Output format (csv: one row per grid point, a column per swept key).
    #[command(flatten)]
    pub output: FormatArgs,
    /// With --slurm or --emit-commands and no trace yet: the program's
    /// arguments for its recording.
    #[arg(last = true, value_name = "ARGS")]
    pub program_args: Vec<String>,
}

/// Parse a `--set`/`--sweep` axis for clap (also `retrace report`'s).
pub(crate) fn parse_axis(text: &str) -> Result<Axis, String> {
    Axis::parse(text).map_err(|e| e.to_string())
}

/// One point of the grid and its estimate.
#[derive(Serialize)]
pub struct SweepPoint {
    /// The swept keys and their values at this point.
    pub settings: BTreeMap<String, String>,
    /// Cycles on this point ÷ cycles on the base core (the core without
    /// the sweep's changes).
    pub vs_base: f64,
    /// The estimate, as `retrace estimate` gives it.
    #[serde(flatten)]
    pub estimate: EstimateRow,
}

/// What `retrace sweep` reports.
#[derive(Serialize)]
pub struct SweepReport {
    /// The program as given.
    pub program: String,
    /// The trace as given.
    pub trace: String,
    /// The fidelity of every estimate.
    #[serde(serialize_with = "super::common::display")]
    pub fidelity: Fidelity,
    /// The swept keys, in the order given (the first varies slowest).
    pub keys: Vec<String>,
    /// The base core's estimate.
    pub base: EstimateRow,
    /// Every point of the grid, in grid order.
    pub points: Vec<SweepPoint>,
    /// Wall seconds of all the estimates (base included).
    pub seconds: f64,
}

impl Report for SweepReport {
    fn text(&self) -> String {
        let widths: Vec<usize> = self
            .keys
            .iter()
            .map(|k| {
                self.points
                    .iter()
                    .map(|p| p.settings[k].len())
                    .chain([k.len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut out = String::new();
        for (k, w) in self.keys.iter().zip(&widths) {
            out += &format!("{k:<w$} ");
        }
        let timed = self
            .points
            .iter()
            .any(|p| p.estimate.target_seconds.is_some());
        out += &format!(
            "{:>17} {:>7} {:>8} {:>12} {:>12} {:>14}",
            "cycles", "CPI", "vs base", "mispredicts", "I$ misses", "D$ cycles"
        );
        out += if timed { "         time\n" } else { "\n" };
        let fewest = self.points.iter().map(|p| p.estimate.cycles).min();
        let cell = |n: Option<u64>| n.map_or_else(|| "-".to_string(), thousands);
        for p in &self.points {
            for (k, w) in self.keys.iter().zip(&widths) {
                out += &format!("{:<w$} ", p.settings[k]);
            }
            let e = &p.estimate;
            let mark = if e.cycles_exclude_dcache { "*" } else { " " };
            out += &format!(
                "{:>16}{mark} {:>7.3} {:>+7.2}% {:>12} {:>12} {:>14}",
                thousands(e.cycles),
                e.cpi,
                (p.vs_base - 1.0) * 100.0,
                cell(e.mispredicts),
                cell(e.icache_misses),
                cell(e.dcache_cycles),
            );
            if timed {
                let t = e
                    .target_seconds
                    .map_or("-".into(), super::common::duration_text);
                out += &format!(" {t:>12}");
            }
            out += if Some(e.cycles) == fewest {
                "  fewest\n"
            } else {
                "\n"
            };
        }
        out += &format!(
            "base {}: {} cycles, CPI {:.3}\n",
            self.base.core,
            thousands(self.base.cycles),
            self.base.cpi
        );
        if self.points.iter().any(|p| p.estimate.cycles_exclude_dcache) {
            out += "* without the data cache: the trace has no miss rate for that D-cache geometry (see the warning)\n";
        }
        out
    }

    fn csv(&self) -> anyhow::Result<String> {
        let mut w = csv::Writer::from_writer(Vec::new());
        let fixed = [
            "core",
            "cycles",
            "instructions",
            "cpi",
            "mhz",
            "target_seconds",
            "vs_base",
            "mispredicts",
            "icache_misses",
            "dcache_cycles",
            "dcache",
            "cycles_exclude_dcache",
        ];
        let header: Vec<&str> = self.keys.iter().map(String::as_str).chain(fixed).collect();
        w.write_record(&header).context("rendering CSV")?;
        let opt = |n: Option<u64>| n.map_or_else(String::new, |n| n.to_string());
        for p in &self.points {
            let e = &p.estimate;
            let mut record: Vec<String> = self.keys.iter().map(|k| p.settings[k].clone()).collect();
            record.extend([
                e.core.clone(),
                e.cycles.to_string(),
                e.instructions.to_string(),
                e.cpi.to_string(),
                e.mhz.map_or_else(String::new, |m| m.to_string()),
                e.target_seconds.map_or_else(String::new, |t| t.to_string()),
                p.vs_base.to_string(),
                opt(e.mispredicts),
                opt(e.icache_misses),
                opt(e.dcache_cycles),
                super::common::name_of_serialized(&e.dcache),
                e.cycles_exclude_dcache.to_string(),
            ]);
            w.write_record(&record).context("rendering CSV")?;
        }
        let bytes = w.into_inner().context("rendering CSV")?;
        String::from_utf8(bytes).context("rendering CSV")
    }
}

/// `retrace sweep`, or `retrace sweep collect DIR`.
#[derive(clap::Args, Debug)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct Command {
    #[command(subcommand)]
    pub action: Option<Action>,
    #[command(flatten)]
    pub args: Args,
}

/// What `retrace sweep` does besides a local sweep.
#[derive(clap::Subcommand, Debug)]
pub enum Action {
    /// Gather the results of a sweep run by --slurm or --emit-commands
    /// into the table a local sweep prints; names every point without a
    /// result (its configuration and log) instead of a partial table.
    Collect(super::sweep_batch::CollectArgs),
}

/// Entry point of `retrace sweep`.
pub fn main(cmd: Command) -> anyhow::Result<ExitCode> {
    match cmd.action {
        Some(Action::Collect(c)) => super::sweep_batch::collect(c),
        None => sweep(cmd.args),
    }
}

/// A checked grid: the base core and every point's core, all valid for
/// the program.
pub struct Grid {
    /// The program as given.
    pub shown: String,
    /// Its ELF.
    pub elf: retrace_program::Elf,
    /// The swept keys, in order.
    pub keys: Vec<String>,
    /// Each point's overrides, in grid order.
    pub points: Vec<Vec<Override>>,
    /// The base core, then one core per point.
    pub cores: Vec<retrace_timing::CoreModel>,
}

impl Grid {
    /// Check the arguments and build every point's core: a bad value
    /// anywhere in the grid is bad input before anything runs.
    pub fn new(
        program: &std::path::Path,
        spec: &str,
        axes: &[Axis],
        max_points: usize,
    ) -> anyhow::Result<Grid> {
        let elf = load_elf(program)?;
        let shown = program.display().to_string();
        let base = load_core(spec)?;
        check_xlen(&base, &elf, &shown)?;
        // A key given twice would make two columns of one field.
        for (i, a) in axes.iter().enumerate() {
            if axes[..i].iter().any(|b| b.key == a.key) {
                return Err(tag(
                    anyhow!(
                        "--set {} is given twice; give its values in one --set (a list: a,b,c)",
                        a.key
                    ),
                    Status::BadInput,
                ));
            }
        }
        let size: usize = axes
            .iter()
            .map(|a| a.values.len())
            .try_fold(1usize, |n, v| n.checked_mul(v))
            .unwrap_or(usize::MAX);
        if size > max_points {
            return Err(tag(
                anyhow!(
                    "the grid has {} points, more than --max-points {}; narrow a range or raise --max-points",
                    if size == usize::MAX { "too many".to_string() } else { thousands(size as u64) },
                    max_points
                ),
                Status::BadInput,
            ));
        }
        let points = grid(axes);
        let mut cores = vec![base];
        for point in &points {
            let core = load_core_with(spec, point)?;
            check_xlen(&core, &elf, &shown)?;
            cores.push(core);
        }
        Ok(Grid {
            shown,
            elf,
            keys: axes.iter().map(|a| a.key.clone()).collect(),
            points,
            cores,
        })
    }
}

/// The report of a sweep from its estimates: the base's row and each
/// point's, in grid order. A local sweep and `sweep collect` both end here,
/// so their tables cannot differ.
pub fn sweep_report(
    program: String,
    trace: String,
    fidelity: Fidelity,
    keys: Vec<String>,
    base: EstimateRow,
    points: Vec<(Vec<Override>, EstimateRow)>,
    seconds: f64,
) -> SweepReport {
    let points = points
        .into_iter()
        .map(|(point, estimate)| SweepPoint {
            settings: point
                .iter()
                .map(|o| (o.key.clone(), o.value.to_string()))
                .collect(),
            vs_base: estimate.cycles as f64 / base.cycles.max(1) as f64,
            estimate,
        })
        .collect();
    SweepReport {
        program,
        trace,
        fidelity,
        keys,
        base,
        points,
        seconds,
    }
}

/// Print a sweep's report, with its timing note on a terminal.
pub fn print_sweep(report: &SweepReport, format: crate::report::Format) -> anyhow::Result<()> {
    print(report, format)?;
    if format == crate::report::Format::Text {
        eprintln!(
            "{} estimates ({} grid points and the base) from one trace in {:.3} s",
            report.points.len() + 1,
            report.points.len(),
            report.seconds
        );
    }
    Ok(())
}

fn sweep(args: Args) -> anyhow::Result<ExitCode> {
    let grid = Grid::new(
        args.program.as_deref().expect("required by clap"),
        args.core.as_deref().expect("required by clap"),
        &args.axes,
        args.max_points,
    )?;
    if let Some(dir) = &args.emit_commands {
        return super::sweep_batch::emit_commands(&args, &grid, dir);
    }
    if let Some(dir) = &args.slurm {
        return super::sweep_batch::submit(&args, &grid, dir);
    }
    let trace = args.trace.as_ref().expect("required by clap");
    let report = estimate_grid(grid, trace, Fidelity::from(args.fidelity))?;
    print_sweep(&report, args.output.get())?;
    Ok(ExitCode::SUCCESS)
}

/// Estimate every point of `grid` (and its base) from `trace`, one walk of
/// the trace per host CPU feeding all of that CPU's cores.
pub fn estimate_grid(
    grid: Grid,
    trace: &std::path::Path,
    fidelity: Fidelity,
) -> anyhow::Result<SweepReport> {
    let Grid {
        shown,
        elf,
        keys,
        points,
        cores,
    } = grid;
    let header = check_trace(trace, &elf, &shown)?;
    if header.harts > 1 {
        return Err(tag(
            anyhow!(
                "{} holds {} harts; sweep estimates a trace of one hart (for several, `retrace estimate --core C --set KEY=VALUE` changes every hart's core)",
                trace.display(),
                header.harts
            ),
            Status::BadInput,
        ));
    }
    let program = analyse(&elf, &shown)?;
    let start = Instant::now();
    let source =
        crate::progress::WatchedTrace::new(trace, &format!("estimating {} points", cores.len()));
    let results = estimate_trace(
        &program.table,
        Addr(elf.entry),
        &source,
        &cores,
        fidelity,
        None,
    )
    .map_err(|e| replay_error(trace, e))?;
    source.finish();
    let seconds = start.elapsed().as_secs_f64();
    let mut rows: Vec<EstimateRow> = cores
        .iter()
        .zip(&results)
        .map(|(c, (e, _))| EstimateRow::new(c, fidelity, e, seconds, false, c.frequency_hz))
        .collect();
    let trace_shown = trace.display().to_string();
    if let Some(w) = unmeasured_warning(&rows, &cores, &header, &shown, &trace_shown) {
        eprintln!("{w}");
    }
    let base = rows.remove(0);
    let report = sweep_report(
        shown,
        trace_shown,
        fidelity,
        keys,
        base,
        points.into_iter().zip(rows).collect(),
        seconds,
    );
    Ok(report)
}
