//! `retrace compare`: the cycle-level engine against record + estimate, on
//! one core: both cycle counts, the error, the wall time of each step and the
//! speedup of the estimate over the reference.

use super::common::{
    analyse, check_xlen, host, load_core, load_elf, preset_dcaches, replay_error, thousands,
};
use crate::status::{tag, Status};
use anyhow::anyhow;
use retrace_estimate::{estimate_trace, Fidelity};
use retrace_program::Addr;
use retrace_sim::cycle::run_cycle_level;
use retrace_sim::record::record_run;
use retrace_sim::Console;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// Arguments of `retrace compare`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
    retrace compare prog.elf --core rocket\n  \
    retrace compare prog.elf --core inorder5 --fidelity fast --json -- 5000")]
pub struct Args {
    /// The program.
    pub program: PathBuf,
    /// The core: preset name or TOML file.
    #[arg(long, value_name = "NAME|FILE")]
    pub core: String,
    /// Fidelity of the estimate.
    #[arg(long, default_value = "control", value_name = "fast|control")]
    pub fidelity: Fidelity,
    /// Stop after this many instructions (status 124).
    #[arg(long, value_name = "N")]
    pub max_insns: Option<u64>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Arguments passed to the program.
    #[arg(last = true, value_name = "ARGS")]
    pub args: Vec<String>,
}

/// The figures of one comparison.
#[derive(Clone, Copy, Debug)]
pub struct Comparison {
    /// Cycle-level engine's cycles.
    pub reference_cycles: u64,
    /// Estimated cycles.
    pub estimated_cycles: u64,
    /// Instructions of the run.
    pub instructions: u64,
    /// Wall seconds of the cycle-level run.
    pub reference_seconds: f64,
    /// Wall seconds of the recording.
    pub record_seconds: f64,
    /// Wall seconds of the estimate.
    pub estimate_seconds: f64,
}

impl Comparison {
    /// Signed error in cycles.
    pub fn error_cycles(&self) -> i64 {
        self.estimated_cycles as i64 - self.reference_cycles as i64
    }
    /// Signed error in percent of the reference.
    pub fn error_percent(&self) -> f64 {
        self.error_cycles() as f64 * 100.0 / self.reference_cycles.max(1) as f64
    }
    /// Reference seconds / estimate seconds.
    pub fn speedup(&self) -> f64 {
        self.reference_seconds / self.estimate_seconds.max(1e-9)
    }
}

/// The data-cache geometries to measure while recording for `core`: the
/// presets' and the core's own.
fn measured_dcaches(core: &retrace_timing::CoreModel) -> Vec<retrace_timing::CacheModel> {
    let mut v = preset_dcaches();
    if let Some(dc) = core.dcache {
        if !v
            .iter()
            .any(|g| (g.size, g.ways, g.line) == (dc.size, dc.ways, dc.line))
        {
            v.push(dc);
        }
    }
    v
}

/// Run the three steps for `elf` on `core`.
pub fn compare(
    elf: &retrace_program::Elf,
    shown: &str,
    prog_args: &[String],
    core: &retrace_timing::CoreModel,
    fidelity: Fidelity,
    max_insns: Option<u64>,
) -> anyhow::Result<Comparison> {
    check_xlen(core, elf, shown)?;
    let program = analyse(elf, shown)?;
    let load =
        |e: retrace_sim::LoadError| tag(anyhow!("cannot load {shown}: {e}"), Status::BadInput);

    let t = Instant::now();
    let (run, obs) = run_cycle_level(
        elf,
        host(shown, prog_args),
        Console::null(),
        max_insns,
        core,
        &[],
    )
    .map_err(load)?;
    let reference_seconds = t.elapsed().as_secs_f64();
    if let retrace_sim::StopReason::Runaway { limit } = run.stop {
        return Err(tag(
            anyhow!("{shown} ran past --max-insns {limit}"),
            Status::Runaway,
        ));
    }

    let trace = std::env::temp_dir().join(format!("retrace-compare-{}.rtrace", std::process::id()));
    let file = std::fs::File::create(&trace).map_err(|e| {
        tag(
            anyhow!("cannot create {}: {e}", trace.display()),
            Status::BadInput,
        )
    })?;
    let t = Instant::now();
    let rec = record_run(
        elf,
        host(shown, prog_args),
        Console::null(),
        max_insns,
        std::io::BufWriter::with_capacity(1 << 20, file),
        retrace_trace::Header::new(0, 32, 1),
        &measured_dcaches(core),
    )
    .map_err(|e| tag(anyhow!("cannot record {shown}: {e}"), Status::Fault))?;
    let record_seconds = t.elapsed().as_secs_f64();

    let t = Instant::now();
    let est = estimate_trace(
        &program.table,
        Addr(elf.entry),
        &trace,
        std::slice::from_ref(core),
        fidelity,
        None,
    );
    let estimate_seconds = t.elapsed().as_secs_f64();
    let _ = std::fs::remove_file(&trace);
    let est = est.map_err(|e| replay_error(&trace, e))?;
    Ok(Comparison {
        reference_cycles: obs.core().cycles(),
        estimated_cycles: est[0].0.cycles,
        instructions: rec.run.instructions,
        reference_seconds,
        record_seconds,
        estimate_seconds,
    })
}

/// Entry point of `retrace compare`.
pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    let elf = load_elf(&args.program)?;
    let shown = args.program.display().to_string();
    let core = load_core(&args.core)?;
    let c = compare(
        &elf,
        &shown,
        &args.args,
        &core,
        args.fidelity,
        args.max_insns,
    )?;
    if args.json {
        let j = serde_json::json!({
            "program": shown,
            "core": core.name,
            "fidelity": args.fidelity.to_string(),
            "instructions": c.instructions,
            "reference_cycles": c.reference_cycles,
            "estimated_cycles": c.estimated_cycles,
            "error_cycles": c.error_cycles(),
            "error_percent": c.error_percent(),
            "reference_seconds": c.reference_seconds,
            "record_seconds": c.record_seconds,
            "estimate_seconds": c.estimate_seconds,
            "speedup": c.speedup(),
        });
        println!("{j}");
    } else {
        println!(
            "{shown} on {} ({} fidelity), {} instructions",
            core.name,
            args.fidelity,
            thousands(c.instructions)
        );
        println!(
            "  cycle-level engine  {:>16} cycles  {:>8.3} s",
            thousands(c.reference_cycles),
            c.reference_seconds
        );
        println!(
            "  record              {:>16}         {:>8.3} s",
            "", c.record_seconds
        );
        println!(
            "  estimate            {:>16} cycles  {:>8.3} s",
            thousands(c.estimated_cycles),
            c.estimate_seconds
        );
        println!(
            "  error {} cycles ({:+.4}%), estimate {:.1}× faster than the cycle-level engine",
            c.error_cycles(),
            c.error_percent(),
            c.speedup()
        );
    }
    Ok(ExitCode::SUCCESS)
}
