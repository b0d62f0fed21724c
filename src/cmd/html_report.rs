//! `retrace report`: one self-contained HTML page about one program — the
//! estimate on each core asked for, where the time goes on the first of
//! them (hottest functions and source lines, costliest branches) and, with
//! `--sweep`, how the cycles move across a grid of core variants. The same
//! figures as JSON with `--format json`, from the same values.

use super::common::{duration_text, load_core_with, thousands, FidelityArg};
use super::estimate::{CpiRow, EstimateRow};
use super::profile::{profile_report, profiled, ProfileReport, Profiled, ProfiledArgs};
use super::sweep::{estimate_grid, Grid, SweepReport};
use crate::html::{bar_chart, line_chart, stacked_bar_chart, Cell, Page};
use crate::status::{tag, Status};
use anyhow::{anyhow, Context};
use retrace_estimate::annotate::Lines;
use retrace_estimate::{estimate_trace, Fidelity};
use retrace_program::Addr;
use retrace_sim::attribution::InstructionCost;
use retrace_timing::Axis;
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `retrace report`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
    retrace report prog.elf prog.rtrace --core rocket --core picorv32 -o report.html\n  \
    retrace report prog.elf --core rocket -o report.html -- 5000      (records the run first)\n  \
    retrace report prog.elf prog.rtrace --core rocket --sweep icache.size=512..16384*2 --sweep branch.predictor=bimodal,gshare --sweep branch.history_bits=8 -o report.html")]
pub struct Args {
    /// The program.
    pub program: PathBuf,
    /// Its trace (`retrace record`); without one, the program is recorded
    /// first with the arguments after `--`.
    pub trace: Option<PathBuf>,
    /// A core: preset name or TOML file. Repeatable; the first is the one
    /// profiled (functions, lines, branches) and swept.
    #[arg(long = "core", value_name = "NAME|FILE", required = true)]
    pub cores: Vec<String>,
    #[command(flatten)]
    pub sets: super::common::CoreSets,
    /// fast or control (docs/TIMING.md, "Fidelity").
    #[arg(long, value_enum, default_value_t = FidelityArg::Control)]
    pub fidelity: FidelityArg,
    /// Sweep the first core over KEY=VALUES (as `retrace sweep --set`);
    /// repeatable: the grid is every combination, plotted against the
    /// first axis with a line per combination of the others.
    #[arg(long = "sweep", value_name = "KEY=VALUES", value_parser = super::sweep::parse_axis)]
    pub sweep: Vec<Axis>,
    /// Rows per table.
    #[arg(long, default_value_t = 15)]
    pub top: usize,
    /// Write the HTML page to FILE.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// text: say where the page went; json: print the report's figures.
    #[arg(long, value_enum, default_value_t = crate::report::Format::Text, value_name = "FORMAT")]
    pub format: crate::report::Format,
    /// The program's arguments, when the report records the run.
    #[arg(last = true, value_name = "ARGS")]
    pub program_args: Vec<String>,
}

/// The figures of a report, as `--format json` prints them and as the page
/// shows them.
#[derive(Serialize)]
pub struct ReportData {
    /// The program as given.
    pub program: String,
    /// The trace used.
    pub trace: String,
    /// One estimate per core, in the order given.
    pub estimates: Vec<EstimateRow>,
    /// Where the time goes on the first core: functions, branches.
    pub profile: ProfileReport,
    /// The source lines with the most cycles on the first core.
    pub hottest_lines: Vec<LineRow>,
    /// The sweep of the first core, with --sweep.
    pub sweep: Option<SweepReport>,
    /// Each core's CPI stack, in the order given (`retrace estimate
    /// --cpi`'s rows).
    pub cpi: Vec<CpiRow>,
}

/// One source line's cost over the whole run on the first core.
#[derive(Serialize)]
pub struct LineRow {
    /// `file:line`, or `(no line)` for code without debugging information.
    pub source: String,
    /// Cycles charged to its instructions.
    pub cycles: u64,
    /// Its instructions executed.
    pub executions: u64,
    /// Mispredictions of its branches.
    pub mispredicts: u64,
    /// I-cache misses of its fetches.
    pub icache_misses: u64,
}

/// The `top` source lines with the most cycles, summed over every
/// instruction (inlined copies included) that DWARF gives the line.
fn hottest_lines(prof: &Profiled, top: usize) -> Vec<LineRow> {
    let costs = &prof.profile.instructions;
    let pcs: Vec<u64> = costs.keys().copied().collect();
    let lines = Lines::of(&prof.bytes, &pcs);
    let mut by_line: std::collections::HashMap<String, InstructionCost> = Default::default();
    for (pc, cost) in costs {
        let key = lines
            .get(*pc)
            .map_or_else(|| "(no line)".to_string(), ToString::to_string);
        by_line.entry(key).or_default().add(cost);
    }
    let mut rows: Vec<LineRow> = by_line
        .into_iter()
        .map(|(source, c)| LineRow {
            source,
            cycles: c.cycles,
            executions: c.executions,
            mispredicts: c.mispredicts,
            icache_misses: c.icache_misses,
        })
        .collect();
    rows.sort_by(|a, b| {
        b.cycles
            .cmp(&a.cycles)
            .then_with(|| a.source.cmp(&b.source))
    });
    rows.truncate(top);
    rows
}

/// Entry point of `retrace report`.
pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    if args.output.is_none() && args.format == crate::report::Format::Text {
        return Err(tag(
            anyhow!("give -o FILE for the HTML page (or --format json for the figures)"),
            Status::BadInput,
        ));
    }
    if let Some(out) = &args.output {
        super::common::check_output_name(out, "report")?;
    }
    let elf = super::common::load_elf(&args.program)?;
    let shown = args.program.display().to_string();
    let cores = args
        .cores
        .iter()
        .map(|c| load_core_with(c, &args.sets.set))
        .collect::<anyhow::Result<Vec<_>>>()?;
    for c in &cores {
        super::common::check_xlen(c, &elf, &shown)?;
    }
    // Without a trace: record one next to nothing the user owns.
    let recorded;
    let trace = match &args.trace {
        Some(t) => t.clone(),
        None => {
            recorded = tempfile::Builder::new()
                .prefix("retrace-report-")
                .suffix(".rtrace")
                .tempfile()
                .context("cannot create a temporary trace")?;
            record(&args, recorded.path())?;
            recorded.path().to_path_buf()
        }
    };
    let header = super::common::check_trace(&trace, &elf, &shown)?;
    if header.harts > 1 {
        return Err(tag(
            anyhow!(
                "{} holds {} harts; a report covers a trace of one hart (see `retrace estimate --timeline` for several)",
                trace.display(),
                header.harts
            ),
            Status::BadInput,
        ));
    }
    let program = super::common::analyse(&elf, &shown)?;
    let fidelity = Fidelity::from(args.fidelity);
    let start = std::time::Instant::now();
    let source = crate::progress::WatchedTrace::new(&trace, "replaying");
    let results = estimate_trace(
        &program.table,
        Addr(elf.entry),
        &source,
        &cores,
        fidelity,
        None,
    )
    .map_err(|e| super::common::replay_error(&trace, e))?;
    source.finish();
    let seconds = start.elapsed().as_secs_f64();
    let estimates: Vec<EstimateRow> = cores
        .iter()
        .zip(&results)
        .map(|(c, (e, _))| EstimateRow::new(c, fidelity, e, seconds, false, c.frequency_hz))
        .collect();
    let prof = profiled(&ProfiledArgs {
        program: args.program.clone(),
        trace: trace.clone(),
        core: args.cores[0].clone(),
        sets: args.sets.clone(),
        fidelity: args.fidelity,
    })?;
    let profile = profile_report(&prof, args.top, false);
    // The first core's profile has its stack; the others are replayed
    // again, charging every instruction.
    let mut cpi = Vec::new();
    for (i, core) in cores.iter().enumerate() {
        let stack_row = |p: &retrace_estimate::Profile, e: &retrace_estimate::Estimate| CpiRow {
            core: core.name.clone(),
            fidelity: fidelity.to_string(),
            cycles: e.cycles,
            instructions: e.instructions,
            cpi: p.cpi_stack(e),
        };
        if i == 0 {
            cpi.push(stack_row(&prof.profile, &prof.estimate));
        } else {
            let (p, e) = retrace_estimate::profile_trace(&program, &trace, core, fidelity)
                .map_err(|e| super::common::replay_error(&trace, e))?;
            cpi.push(stack_row(&p, &e));
        }
    }
    let hottest_lines = hottest_lines(&prof, args.top);
    let sweep = if args.sweep.is_empty() {
        None
    } else {
        let grid = Grid::new(&args.program, &args.cores[0], &args.sweep, 1024)?;
        Some(estimate_grid(grid, &trace, fidelity)?)
    };
    let data = ReportData {
        program: shown,
        trace: match &args.trace {
            Some(t) => t.display().to_string(),
            None => "(recorded for this report)".into(),
        },
        estimates,
        profile,
        hottest_lines,
        sweep,
        cpi,
    };
    if let Some(out) = &args.output {
        std::fs::write(out, page(&data)).map_err(|e| {
            tag(
                anyhow!("cannot write the report to {}: {e}", out.display()),
                Status::BadInput,
            )
        })?;
    }
    match args.format {
        crate::report::Format::Json => {
            println!("{}", serde_json::to_string(&data)?);
        }
        _ => {
            if let Some(out) = &args.output {
                eprintln!("wrote {} (open it in a browser)", out.display());
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Record the program into `path` with retrace's own `record`.
fn record(args: &Args, path: &std::path::Path) -> anyhow::Result<()> {
    let exe = std::env::current_exe().context("cannot find retrace's own executable")?;
    let mut cmd = std::process::Command::new(exe);
    cmd.arg("record")
        .arg(&args.program)
        .arg("-o")
        .arg(path)
        .stdout(std::process::Stdio::null());
    if !args.program_args.is_empty() {
        cmd.arg("--").args(&args.program_args);
    }
    let out = cmd.output().context("cannot run retrace record")?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(tag(
            anyhow!(
                "recording {} for the report failed: {}",
                args.program.display(),
                err.lines().last().unwrap_or("")
            ),
            Status::BadInput,
        ));
    }
    Ok(())
}

fn count(n: Option<u64>) -> Cell {
    match n {
        Some(n) => Cell::number(thousands(n), n),
        None => Cell::missing(),
    }
}

/// The page.
fn page(data: &ReportData) -> String {
    let mut p = Page::new(&format!("retrace report: {}", data.program));
    p.heading(1, &format!("retrace report: {}", data.program), "top");
    let instructions = data.estimates.first().map_or(0, |e| e.instructions);
    p.paragraph(&format!(
        "Trace {}: {} instructions. Cycles are retrace's estimate from the recorded branch history at fidelity {} (docs/TIMING.md).",
        data.trace,
        thousands(instructions),
        data.estimates
            .first()
            .map_or_else(String::new, |e| e.fidelity.to_string())
    ));

    p.heading(2, "Estimate per core", "estimates");
    let rows: Vec<Vec<Cell>> = data
        .estimates
        .iter()
        .map(|e| {
            vec![
                Cell::text(&e.core),
                Cell::number(thousands(e.cycles), e.cycles),
                Cell::number(format!("{:.3}", e.cpi), e.cpi),
                count(e.mispredicts),
                count(e.icache_misses),
                count(e.dcache_cycles),
                match e.target_seconds {
                    Some(t) => Cell::number(duration_text(t), t),
                    None => Cell::missing(),
                },
            ]
        })
        .collect();
    p.table(
        "estimates",
        &[
            "core",
            "cycles",
            "CPI",
            "mispredicts",
            "I$ misses",
            "D$ cycles",
            "time",
        ],
        &rows,
    );
    let bars: Vec<(String, f64)> = data
        .estimates
        .iter()
        .map(|e| (e.core.clone(), e.cycles as f64))
        .collect();
    p.raw(&bar_chart("cycles", "cycles", &bars));

    p.heading(2, "CPI stack per core", "cpi");
    p.paragraph(
        "Why the cycles go: each core's cycles split by cause (docs/REPORTS.md, \"CPI stacks\"), the parts summing to its estimate.",
    );
    let names: Vec<&str> = retrace_timing::CpiPart::ALL
        .iter()
        .map(|p| p.name())
        .collect();
    let stacks: Vec<(String, Vec<f64>)> = data
        .cpi
        .iter()
        .map(|c| (c.core.clone(), c.cpi.0.iter().map(|&v| v as f64).collect()))
        .collect();
    p.raw(&stacked_bar_chart("cpi", &names, &stacks));

    profile_sections(&mut p, data);
    if let Some(s) = &data.sweep {
        sweep_section(&mut p, s);
    }
    p.finish()
}

/// The sweep: its table, and cycles against the first axis, a line per
/// combination of the other axes' values.
fn sweep_section(p: &mut Page, s: &SweepReport) {
    p.heading(2, &format!("Sweep of {}", s.base.core), "sweep");
    let mut header: Vec<&str> = s.keys.iter().map(String::as_str).collect();
    header.extend(["cycles", "CPI", "vs base"]);
    let rows: Vec<Vec<Cell>> = s
        .points
        .iter()
        .map(|pt| {
            let mut r: Vec<Cell> = s.keys.iter().map(|k| Cell::text(&pt.settings[k])).collect();
            r.push(Cell::number(
                thousands(pt.estimate.cycles),
                pt.estimate.cycles,
            ));
            r.push(Cell::number(
                format!("{:.3}", pt.estimate.cpi),
                pt.estimate.cpi,
            ));
            r.push(Cell::number(
                format!("{:+.2}%", (pt.vs_base - 1.0) * 100.0),
                pt.vs_base,
            ));
            r
        })
        .collect();
    p.table("sweep", &header, &rows);
    let Some(first) = s.keys.first() else { return };
    let mut xs: Vec<String> = Vec::new();
    let mut series: Vec<(String, Vec<f64>)> = Vec::new();
    for pt in &s.points {
        let x = pt.settings[first].clone();
        if !xs.contains(&x) {
            xs.push(x.clone());
        }
        let name: Vec<String> = s.keys[1..]
            .iter()
            .map(|k| format!("{k}={}", pt.settings[k]))
            .collect();
        let name = if name.is_empty() {
            s.base.core.clone()
        } else {
            name.join(" ")
        };
        match series.iter_mut().find(|(n, _)| *n == name) {
            Some((_, ys)) => ys.push(pt.estimate.cycles as f64),
            None => series.push((name, vec![pt.estimate.cycles as f64])),
        }
    }
    p.raw(&line_chart("sweep", first, "cycles", &xs, &series));
}

/// Where the time goes on the first core: hottest functions, source
/// lines, and the branches whose mispredictions cost the most.
fn profile_sections(p: &mut Page, data: &ReportData) {
    let prof = &data.profile;
    let total = prof.cycles.max(1) as f64;
    let pct = |n: u64| {
        Cell::number(
            format!("{:.1}%", n as f64 * 100.0 / total),
            n as f64 / total,
        )
    };
    p.heading(
        2,
        &format!("Hottest functions on {}", prof.core),
        "functions",
    );
    let rows: Vec<Vec<Cell>> = prof
        .functions
        .iter()
        .map(|f| {
            vec![
                Cell::text(&f.name),
                Cell::number(thousands(f.exclusive_cycles), f.exclusive_cycles),
                pct(f.exclusive_cycles),
                Cell::number(thousands(f.inclusive_cycles), f.inclusive_cycles),
                Cell::number(thousands(f.calls), f.calls),
                Cell::number(thousands(f.instructions), f.instructions),
            ]
        })
        .collect();
    p.table(
        "functions",
        &[
            "function",
            "exclusive cycles",
            "%",
            "inclusive cycles",
            "calls",
            "instructions",
        ],
        &rows,
    );
    let bars: Vec<(String, f64)> = prof
        .functions
        .iter()
        .map(|f| (f.name.clone(), f.exclusive_cycles as f64))
        .collect();
    p.raw(&bar_chart("functions", "cycles", &bars));

    p.heading(
        2,
        &format!("Hottest source lines on {}", prof.core),
        "lines",
    );
    let rows: Vec<Vec<Cell>> = data
        .hottest_lines
        .iter()
        .map(|l| {
            vec![
                Cell::text(&l.source),
                Cell::number(thousands(l.cycles), l.cycles),
                pct(l.cycles),
                Cell::number(thousands(l.executions), l.executions),
                Cell::number(thousands(l.mispredicts), l.mispredicts),
                Cell::number(thousands(l.icache_misses), l.icache_misses),
            ]
        })
        .collect();
    p.table(
        "lines",
        &[
            "line",
            "cycles",
            "%",
            "instructions executed",
            "mispredicts",
            "I$ misses",
        ],
        &rows,
    );

    p.heading(
        2,
        &format!("Costliest branches on {}", prof.core),
        "branches",
    );
    if prof.costliest_branches.is_empty() {
        p.paragraph("No branch mispredictions cost cycles on this core.");
        return;
    }
    let rows: Vec<Vec<Cell>> = prof
        .costliest_branches
        .iter()
        .map(|b| {
            vec![
                Cell::text(&b.at),
                Cell::text(b.source.as_deref().unwrap_or("-")),
                Cell::number(thousands(b.executed), b.executed),
                Cell::number(
                    format!("{:.1}%", b.taken_probability * 100.0),
                    b.taken_probability,
                ),
                Cell::number(thousands(b.mispredicts), b.mispredicts),
                Cell::number(thousands(b.mispredict_cycles), b.mispredict_cycles),
            ]
        })
        .collect();
    p.table(
        "branches",
        &[
            "branch",
            "line",
            "executions",
            "taken",
            "mispredicts",
            "cycles lost",
        ],
        &rows,
    );
}
