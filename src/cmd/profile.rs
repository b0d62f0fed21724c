//! `retrace profile`: the by-products of a replay (seed 000, embodiment 1):
//! cycles per function, call counts, branch probabilities, hottest partial
//! programs — on a chosen core, from the trace alone.

use super::common::{
    analyse, check_trace, check_xlen, load_core, load_elf, replay_error, thousands,
};
use retrace_estimate::{profile_trace, Fidelity};
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `retrace profile`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
    retrace profile prog.elf prog.rtrace\n  \
    retrace profile prog.elf prog.rtrace --core rocket --top 20 --json")]
pub struct Args {
    /// The program the trace was recorded from.
    pub program: PathBuf,
    /// The trace.
    pub trace: PathBuf,
    /// The core whose cycles are attributed.
    #[arg(long, default_value = "ideal", value_name = "NAME|FILE")]
    pub core: String,
    /// Fidelity of the timing.
    #[arg(long, default_value = "control", value_name = "fast|control")]
    pub fidelity: Fidelity,
    /// Rows per table.
    #[arg(long, default_value_t = 15)]
    pub top: usize,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
}

/// Entry point of `retrace profile`.
pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    let elf = load_elf(&args.program)?;
    let shown = args.program.display().to_string();
    check_trace(&args.trace, &elf, &shown)?;
    let core = load_core(&args.core)?;
    check_xlen(&core, &elf, &shown)?;
    let program = analyse(&elf, &shown)?;
    let (p, e) = profile_trace(&program, &args.trace, &core, args.fidelity)
        .map_err(|err| replay_error(&args.trace, err))?;
    let total = e.control_cycles.max(1) as f64;
    let describe = |pc: u64| elf.describe(pc).unwrap_or_else(|| format!("{pc:#x}"));
    if args.json {
        let funcs: Vec<_> = p.functions.iter().take(args.top).map(|f| serde_json::json!({
            "name": f.name, "exclusive_cycles": f.exclusive, "inclusive_cycles": f.inclusive,
            "calls": f.calls, "instructions": f.instructions,
        })).collect();
        let branches: Vec<_> = p.branches.iter().take(args.top).map(|b| serde_json::json!({
            "pc": format!("{:#x}", b.pc), "where": describe(b.pc), "executed": b.executed,
            "taken": b.taken, "taken_probability": b.taken as f64 / b.executed.max(1) as f64,
        })).collect();
        let hot: Vec<_> = p
            .hottest
            .iter()
            .take(args.top)
            .map(|h| {
                serde_json::json!({
                    "pp": h.pp.0, "start": format!("{:#x}", h.start), "where": describe(h.start),
                    "executed": h.executed, "cycles": h.cycles,
                })
            })
            .collect();
        println!(
            "{}",
            serde_json::json!({
                "program": shown, "core": core.name, "fidelity": args.fidelity.to_string(),
                "cycles": e.cycles, "instructions": e.instructions,
                "functions": funcs, "branches": branches, "hottest_partial_programs": hot,
            })
        );
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{shown} on {}: {} cycles, {} instructions\n",
        core.name,
        thousands(e.cycles),
        thousands(e.instructions)
    );
    println!(
        "{:<28} {:>14} {:>7} {:>14} {:>7} {:>10}",
        "function", "exclusive", "%", "inclusive", "%", "calls"
    );
    for f in p.functions.iter().take(args.top) {
        println!(
            "{:<28} {:>14} {:>6.2}% {:>14} {:>6.2}% {:>10}",
            f.name,
            thousands(f.exclusive),
            f.exclusive as f64 * 100.0 / total,
            thousands(f.inclusive),
            f.inclusive as f64 * 100.0 / total,
            thousands(f.calls)
        );
    }
    println!("\n{:<34} {:>14} {:>8}", "branch", "executed", "taken");
    for b in p.branches.iter().take(args.top) {
        println!(
            "{:<34} {:>14} {:>7.2}%",
            describe(b.pc),
            thousands(b.executed),
            b.taken as f64 * 100.0 / b.executed.max(1) as f64
        );
    }
    println!(
        "\n{:<8} {:<34} {:>14} {:>14} {:>7}",
        "pp", "start", "executed", "cycles", "%"
    );
    for h in p.hottest.iter().take(args.top) {
        println!(
            "{:<8} {:<34} {:>14} {:>14} {:>6.2}%",
            h.pp.0,
            describe(h.start),
            thousands(h.executed),
            thousands(h.cycles),
            h.cycles as f64 * 100.0 / total
        );
    }
    Ok(ExitCode::SUCCESS)
}
