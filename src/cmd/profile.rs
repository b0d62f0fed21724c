//! `retrace profile`: the by-products of a replay (seed 000, embodiment 1):
//! cycles per function, call counts, branch probabilities, hottest partial
//! programs — on a chosen core, from the trace alone.

use super::common::{
    analyse, check_trace, check_xlen, display, load_core, load_elf, replay_error, thousands,
    FidelityArg,
};
use crate::report::{csv_of, hex, print, FormatArgs, Report};
use retrace_estimate::{profile_trace, Fidelity};
use serde::Serialize;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `retrace profile`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
    retrace profile prog.elf prog.rtrace\n  \
    retrace profile prog.elf prog.rtrace --core rocket --top 20 --format json")]
pub struct Args {
    /// The program the trace was recorded from.
    pub program: PathBuf,
    /// The trace.
    pub trace: PathBuf,
    /// The core whose cycles are attributed.
    #[arg(long, default_value = "ideal", value_name = "NAME|FILE")]
    pub core: String,
    /// Fidelity of the timing.
    #[arg(long, value_enum, default_value_t = FidelityArg::Control)]
    pub fidelity: FidelityArg,
    /// Rows per table.
    #[arg(long, default_value_t = 15)]
    pub top: usize,
    /// Output format (csv: the functions table).
    #[command(flatten)]
    pub output: FormatArgs,
}

/// One function's cycles.
#[derive(Serialize)]
pub struct FunctionRow {
    /// The function's name.
    pub name: String,
    /// Cycles in the function itself.
    pub exclusive_cycles: u64,
    /// Cycles in the function and its callees.
    pub inclusive_cycles: u64,
    /// Calls.
    pub calls: u64,
    /// Instructions executed in the function itself.
    pub instructions: u64,
}

/// One conditional branch.
#[derive(Serialize)]
pub struct BranchRow {
    /// Its address.
    #[serde(serialize_with = "hex")]
    pub pc: u64,
    /// Its address as `symbol+offset`.
    #[serde(rename = "where")]
    pub at: String,
    /// Times executed.
    pub executed: u64,
    /// Times taken.
    pub taken: u64,
    /// taken / executed.
    pub taken_probability: f64,
}

/// One of the hottest partial programs.
#[derive(Serialize)]
pub struct HotRow {
    /// Its id in the table.
    pub pp: u32,
    /// Its start address.
    #[serde(serialize_with = "hex")]
    pub start: u64,
    /// Its start as `symbol+offset`.
    #[serde(rename = "where")]
    pub at: String,
    /// Times executed.
    pub executed: u64,
    /// Cycles spent in it.
    pub cycles: u64,
}

/// What `retrace profile` reports.
#[derive(Serialize)]
pub struct ProfileReport {
    /// The program as given.
    pub program: String,
    /// The core's name.
    pub core: String,
    /// The fidelity of the replay.
    #[serde(serialize_with = "display")]
    pub fidelity: Fidelity,
    /// Estimated cycles.
    pub cycles: u64,
    /// Instructions replayed.
    pub instructions: u64,
    /// The hottest functions.
    pub functions: Vec<FunctionRow>,
    /// The most executed branches.
    pub branches: Vec<BranchRow>,
    /// The partial programs with the most cycles.
    pub hottest_partial_programs: Vec<HotRow>,
    /// The cycles the percentages are of: what control flow decides
    /// (the data-cache term is not attributed to functions).
    #[serde(skip)]
    pub attributed_cycles: u64,
}

impl Report for ProfileReport {
    fn text(&self) -> String {
        let total = self.attributed_cycles.max(1) as f64;
        let mut o = String::new();
        let _ = writeln!(
            o,
            "{} on {}: {} cycles, {} instructions\n",
            self.program,
            self.core,
            thousands(self.cycles),
            thousands(self.instructions)
        );
        let _ = writeln!(
            o,
            "{:<28} {:>14} {:>7} {:>14} {:>7} {:>10}",
            "function", "exclusive", "%", "inclusive", "%", "calls"
        );
        for f in &self.functions {
            let _ = writeln!(
                o,
                "{:<28} {:>14} {:>6.2}% {:>14} {:>6.2}% {:>10}",
                f.name,
                thousands(f.exclusive_cycles),
                f.exclusive_cycles as f64 * 100.0 / total,
                thousands(f.inclusive_cycles),
                f.inclusive_cycles as f64 * 100.0 / total,
                thousands(f.calls)
            );
        }
        let _ = writeln!(o, "\n{:<34} {:>14} {:>8}", "branch", "executed", "taken");
        for b in &self.branches {
            let _ = writeln!(
                o,
                "{:<34} {:>14} {:>7.2}%",
                b.at,
                thousands(b.executed),
                b.taken as f64 * 100.0 / b.executed.max(1) as f64
            );
        }
        let _ = writeln!(
            o,
            "\n{:<8} {:<34} {:>14} {:>14} {:>7}",
            "pp", "start", "executed", "cycles", "%"
        );
        for h in &self.hottest_partial_programs {
            let _ = writeln!(
                o,
                "{:<8} {:<34} {:>14} {:>14} {:>6.2}%",
                h.pp,
                h.at,
                thousands(h.executed),
                thousands(h.cycles),
                h.cycles as f64 * 100.0 / total
            );
        }
        o
    }

    fn csv(&self) -> anyhow::Result<String> {
        csv_of(&self.functions)
    }
}

/// Entry point of `retrace profile`.
pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    let elf = load_elf(&args.program)?;
    let shown = args.program.display().to_string();
    check_trace(&args.trace, &elf, &shown)?;
    let core = load_core(&args.core)?;
    check_xlen(&core, &elf, &shown)?;
    let program = analyse(&elf, &shown)?;
    let fidelity = Fidelity::from(args.fidelity);
    let (p, e) = profile_trace(&program, &args.trace, &core, fidelity)
        .map_err(|err| replay_error(&args.trace, err))?;
    let describe = |pc: u64| elf.describe(pc).unwrap_or_else(|| format!("{pc:#x}"));
    let report = ProfileReport {
        program: shown,
        core: core.name.clone(),
        fidelity,
        cycles: e.cycles,
        instructions: e.instructions,
        functions: p
            .functions
            .iter()
            .take(args.top)
            .map(|f| FunctionRow {
                name: f.name.clone(),
                exclusive_cycles: f.exclusive,
                inclusive_cycles: f.inclusive,
                calls: f.calls,
                instructions: f.instructions,
            })
            .collect(),
        branches: p
            .branches
            .iter()
            .take(args.top)
            .map(|b| BranchRow {
                pc: b.pc,
                at: describe(b.pc),
                executed: b.executed,
                taken: b.taken,
                taken_probability: b.taken as f64 / b.executed.max(1) as f64,
            })
            .collect(),
        hottest_partial_programs: p
            .hottest
            .iter()
            .take(args.top)
            .map(|h| HotRow {
                pp: h.pp.0,
                start: h.start,
                at: describe(h.start),
                executed: h.executed,
                cycles: h.cycles,
            })
            .collect(),
        attributed_cycles: e.control_cycles,
    };
    print(&report, args.output.get())?;
    Ok(ExitCode::SUCCESS)
}
