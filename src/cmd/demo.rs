//! `retrace demo`: the product on its bundled example programs. Each program
//! is recorded once; the one trace is replayed on every preset core, and the
//! cycle-level engine runs each core for reference. The table shows both
//! cycle counts, the error and what each step cost. The steps are those of
//! `retrace compare` ([`retrace_estimate::compare`]), in the order that lets
//! one recording serve every core.

use super::common::{display, preset_dcaches, thousands};
use crate::report::{csv_of, emit, FormatArgs, Report};
use anyhow::Context;
use retrace_estimate::compare::{
    error_percent, estimate_recorded, record_in_memory, reference_run,
};
use retrace_estimate::Fidelity;
use retrace_program::{Addr, Elf, Program};
use retrace_sim::{Console, HostConfig};
use retrace_timing::{preset, CoreModel, PRESETS};
use serde::Serialize;
use std::io::Write;
use std::process::ExitCode;

/// Arguments of `retrace demo`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Only the programs whose name contains this.
    #[arg(long, value_name = "TEXT")]
    pub only: Option<String>,
    /// Output format (json and csv: one row per program × core).
    #[command(flatten)]
    pub output: FormatArgs,
}

/// The example programs built into the binary (RV32 at -O2, so that every
/// preset, the RV32-only picorv32 included, can run them).
const BUNDLED: &[(&str, &[u8])] = &[
    (
        "crc32",
        include_bytes!("../../programs/bin/crc32-rv32-O2.elf"),
    ),
    (
        "nqueens",
        include_bytes!("../../programs/bin/nqueens-rv32-O2.elf"),
    ),
    (
        "exprparse",
        include_bytes!("../../programs/bin/exprparse-rv32-O2.elf"),
    ),
    (
        "dhry",
        include_bytes!("../../programs/bin/dhry-rv32-O2.elf"),
    ),
    (
        "dijkstra",
        include_bytes!("../../programs/bin/dijkstra-rv32-O2.elf"),
    ),
];

/// The fidelity the demo uses for a core: `fast` where it is exact.
fn fidelity_for(core: &CoreModel) -> Fidelity {
    if core.is_context_free() {
        Fidelity::Fast
    } else {
        Fidelity::Control
    }
}

/// Capture a program's console output in memory.
#[derive(Clone, Default)]
struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// One program × core pair.
#[derive(Serialize)]
pub struct DemoRow {
    /// The bundled program's name.
    pub program: String,
    /// The core's name.
    pub core: String,
    /// The fidelity the estimate used.
    #[serde(serialize_with = "display")]
    pub fidelity: Fidelity,
    /// Instructions of the run.
    pub instructions: u64,
    /// Cycle-level engine's cycles.
    pub reference_cycles: u64,
    /// Estimated cycles.
    pub estimated_cycles: u64,
    /// Signed error in percent of the reference.
    pub error_percent: f64,
    /// Wall seconds of the cycle-level run.
    pub reference_seconds: f64,
}

/// What one program's recording and estimates cost.
pub struct DemoProgram {
    name: String,
    instructions: u64,
    branches: u64,
    trace_bytes: u64,
    record_seconds: f64,
    /// The program's last line of output.
    says: String,
    /// Wall seconds of every core's estimate together.
    estimate_seconds: f64,
}

/// What `retrace demo` reports: the rows for machines (a JSON array, as
/// before), and for people each program's recording and the totals too.
#[derive(Serialize)]
#[serde(transparent)]
pub struct DemoReport {
    rows: Vec<DemoRow>,
    #[serde(skip)]
    programs: Vec<DemoProgram>,
    #[serde(skip)]
    cores: usize,
}

impl DemoReport {
    fn header(&self) -> String {
        format!(
            "retrace demo: each program is recorded once, then estimated on {} cores from that one trace;\n\
             the cycle-level engine runs every core for reference.\n\n",
            self.cores
        )
    }

    fn program_line(p: &DemoProgram) -> String {
        format!(
            "{}: {} instructions, {} branches; trace {} bytes ({:.2} bits/branch); recorded in {:.2} s ({:.0} MIPS)\n  program says: {}\n",
            p.name,
            thousands(p.instructions),
            thousands(p.branches),
            thousands(p.trace_bytes),
            p.trace_bytes as f64 * 8.0 / p.branches.max(1) as f64,
            p.record_seconds,
            p.instructions as f64 / p.record_seconds.max(1e-9) / 1e6,
            p.says
        )
    }

    fn row_line(r: &DemoRow) -> String {
        format!(
            "  {:<12} {:<8} reference {:>14} cycles ({:>6.2} s)   estimate {:>14} cycles   error {:+.4}%\n",
            r.core,
            r.fidelity.to_string(),
            thousands(r.reference_cycles),
            r.reference_seconds,
            thousands(r.estimated_cycles),
            r.error_percent
        )
    }

    fn program_footer(&self, p: &DemoProgram) -> String {
        format!(
            "  all {} estimates from the one trace: {:.2} s\n\n",
            self.cores, p.estimate_seconds
        )
    }

    fn summary(&self) -> String {
        let t_ref: f64 = self.rows.iter().map(|r| r.reference_seconds).sum();
        let t_rec: f64 = self.programs.iter().map(|p| p.record_seconds).sum();
        let t_est: f64 = self.programs.iter().map(|p| p.estimate_seconds).sum();
        let worst = self
            .rows
            .iter()
            .fold(0.0f64, |w, r| w.max(r.error_percent.abs()));
        format!(
            "{} program × core pairs: largest error {worst:.4}%. Cycle-level engine {t_ref:.2} s in all; \
             recording {t_rec:.2} s; every estimate from the recordings {t_est:.2} s ({:.1}× less than the cycle-level runs).\n",
            self.rows.len(),
            t_ref / t_est.max(1e-9)
        )
    }
}

impl Report for DemoReport {
    fn text(&self) -> String {
        let mut out = self.header();
        for p in &self.programs {
            out += &Self::program_line(p);
            for r in self.rows.iter().filter(|r| r.program == p.name) {
                out += &Self::row_line(r);
            }
            out += &self.program_footer(p);
        }
        out + &self.summary()
    }

    fn csv(&self) -> anyhow::Result<String> {
        csv_of(&self.rows)
    }
}

/// Entry point of `retrace demo`.
pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    let cores: Vec<CoreModel> = PRESETS
        .iter()
        .map(|(n, _)| preset(n).expect("presets parse"))
        .collect();
    let format = args.output.get();
    // Text is shown as it is produced (the cycle-level runs take a while);
    // the machine formats are printed whole at the end.
    let progress = |s: &str| -> anyhow::Result<()> {
        if format == crate::report::Format::Text {
            emit(s)?;
        }
        Ok(())
    };
    let mut report = DemoReport {
        rows: Vec::new(),
        programs: Vec::new(),
        cores: cores.len(),
    };
    progress(&report.header())?;
    for (name, bytes) in BUNDLED {
        if args.only.as_deref().is_some_and(|o| !name.contains(o)) {
            continue;
        }
        let elf = Elf::parse(bytes).with_context(|| format!("bundled program {name}"))?;
        let program = Program::analyse(&elf).with_context(|| format!("bundled program {name}"))?;
        let host = || HostConfig {
            cmdline: format!("{name}.elf"),
            ..HostConfig::default()
        };
        // Record once (the program's output is kept to show it).
        let out = Captured::default();
        let console = Console {
            stdout: Box::new(out.clone()),
            stderr: Box::new(std::io::sink()),
            stdin: Box::new(std::io::empty()),
            is_tty: [false; 3],
        };
        let recorded = record_in_memory(&elf, host(), console, None, &preset_dcaches())
            .with_context(|| format!("recording {name}"))?;
        let output = String::from_utf8_lossy(&out.0.lock().unwrap()).to_string();
        // All cores from the one trace.
        let mut estimates = Vec::new();
        let mut estimate_seconds = 0.0;
        for fidelity in [Fidelity::Fast, Fidelity::Control] {
            let group: Vec<CoreModel> = cores
                .iter()
                .filter(|c| fidelity_for(c) == fidelity)
                .cloned()
                .collect();
            let (got, seconds) =
                estimate_recorded(&program.table, Addr(elf.entry), &recorded, &group, fidelity)
                    .with_context(|| format!("estimating {name}"))?;
            estimate_seconds += seconds;
            for (c, e) in group.iter().zip(got) {
                estimates.push((c.name.clone(), fidelity, e));
            }
        }
        let rec = &recorded.recording;
        let p = DemoProgram {
            name: name.to_string(),
            instructions: rec.run.instructions,
            branches: rec.branches,
            trace_bytes: rec.trace.file_bytes,
            record_seconds: recorded.seconds,
            says: output.lines().last().unwrap_or("").to_string(),
            estimate_seconds,
        };
        progress(&DemoReport::program_line(&p))?;
        for core in &cores {
            let reference = reference_run(&elf, host(), None, core)
                .with_context(|| format!("cycle-level run of {name}"))?;
            let (_, fidelity, e) = estimates
                .iter()
                .find(|(n, _, _)| *n == core.name)
                .expect("estimated");
            let row = DemoRow {
                program: name.to_string(),
                core: core.name.clone(),
                fidelity: *fidelity,
                instructions: rec.run.instructions,
                reference_cycles: reference.cycles,
                estimated_cycles: e.cycles,
                error_percent: error_percent(e.cycles, reference.cycles),
                reference_seconds: reference.seconds,
            };
            progress(&DemoReport::row_line(&row))?;
            report.rows.push(row);
        }
        progress(&report.program_footer(&p))?;
        report.programs.push(p);
    }
    match format {
        crate::report::Format::Text => emit(&report.summary())?,
        other => emit(&report.render(other)?)?,
    }
    Ok(ExitCode::SUCCESS)
}
