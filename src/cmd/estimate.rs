//! `retrace estimate`: cycles of a recorded run on one or many cores, from
//! the trace alone.

use super::common::{
    analyse, check_trace, check_xlen, load_core, load_elf, replay_error, thousands,
};
use crate::status::{tag, Status};
use anyhow::anyhow;
use retrace_estimate::{estimate_trace, replay_check, Estimate, Fidelity};
use retrace_program::Addr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// Arguments of `retrace estimate`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
    retrace estimate prog.elf prog.rtrace --core rocket\n  \
    retrace estimate prog.elf prog.rtrace --core ideal --core picorv32 --core inorder5 --fidelity fast\n  \
    retrace estimate prog.elf prog.rtrace --core my-core.toml --json\n  \
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
    #[arg(long, default_value = "control", value_name = "fast|control")]
    pub fidelity: Fidelity,
    /// Data-cache miss rate for the data-cache term (default: the rate the
    /// recorder measured for the core's geometry).
    #[arg(long, value_name = "RATE")]
    pub dcache_miss_rate: Option<f64>,
    /// Also replay against the functional engine and verify the executed
    /// instruction sequence (count and hash of the pcs).
    #[arg(long)]
    pub check: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// One estimate as JSON.
pub fn estimate_json(
    core: &str,
    fidelity: Fidelity,
    e: &Estimate,
    seconds: f64,
) -> serde_json::Value {
    serde_json::json!({
        "core": core,
        "fidelity": fidelity.to_string(),
        "cycles": e.cycles,
        "instructions": e.instructions,
        "cpi": e.cycles as f64 / e.instructions.max(1) as f64,
        "mispredicts": e.mispredicts,
        "icache_misses": e.icache_misses,
        "dcache_cycles": e.dcache_cycles,
        "dcache_measured": e.dcache_measured,
        "memory_accesses": e.mem_ops,
        "partial_programs": e.memoised.pps,
        "memoised_partial_programs": e.memoised.pps_memoised,
        "memoised_stretches": e.memoised.hits,
        "stretches_recorded": e.memoised.recorded,
        "seconds": seconds,
    })
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
    let start = Instant::now();
    let results = estimate_trace(
        &program.table,
        Addr(elf.entry),
        &args.trace,
        &cores,
        args.fidelity,
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

    if args.json {
        let list: Vec<_> = cores
            .iter()
            .zip(&results)
            .map(|(c, (e, _))| estimate_json(&c.name, args.fidelity, e, seconds))
            .collect();
        let mut j = serde_json::json!({ "program": shown, "trace": args.trace.display().to_string(), "estimates": list });
        if let Some(c) = check {
            j["check"] = serde_json::json!({ "instructions": c.instructions, "pc_hash": format!("{:016x}", c.hash), "matches": true });
        }
        println!("{j}");
    } else {
        println!(
            "{:<12} {:>8} {:>16} {:>7} {:>12} {:>12} {:>14}",
            "core", "fidelity", "cycles", "CPI", "mispredicts", "I$ misses", "D$ cycles"
        );
        for (c, (e, _)) in cores.iter().zip(&results) {
            let dc = if c.dcache.is_none() {
                "-".to_string()
            } else if e.dcache_measured {
                thousands(e.dcache_cycles)
            } else {
                "unmeasured".to_string()
            };
            println!(
                "{:<12} {:>8} {:>16} {:>7.3} {:>12} {:>12} {:>14}",
                c.name,
                args.fidelity.to_string(),
                thousands(e.cycles),
                e.cycles as f64 / e.instructions.max(1) as f64,
                thousands(e.mispredicts),
                thousands(e.icache_misses),
                dc
            );
        }
        let memo = results.first().map(|r| r.0.memoised).unwrap_or_default();
        let memo_note = if memo.pps_memoised > 0 {
            format!(
                " ({:.1}% of {} partial programs from {} memoised stretches)",
                memo.pps_memoised as f64 * 100.0 / memo.pps.max(1) as f64,
                thousands(memo.pps),
                thousands(memo.hits)
            )
        } else {
            String::new()
        };
        eprintln!(
            "{} instructions replayed for {} core(s) in {:.3} s{memo_note}",
            thousands(results.first().map(|r| r.0.instructions).unwrap_or(0)),
            cores.len(),
            seconds
        );
        if let Some(c) = check {
            eprintln!(
                "check: {} instructions, pc hash {:016x}: the replay follows the functional engine exactly",
                thousands(c.instructions),
                c.hash
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
