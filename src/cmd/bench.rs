//! `retrace bench`: what recording and estimating cost against a plain run
//! and the cycle-level engine, measured in one process.
//!
//! Every step runs once per round and the rounds are interleaved, so that
//! the drift of a shared machine hits all steps alike; the headline figures
//! are the medians of the per-round ratios (each ratio compares two steps
//! run seconds apart), with the fastest-of-all ratio beside them. Wall time
//! is what the user waits for; CPU time (all threads, from `getrusage`) is
//! what recording's helper threads add on top.

use super::common::{analyse, check_xlen, host, load_core, load_elf, preset_dcaches, thousands};
use crate::status::{tag, Status};
use anyhow::anyhow;
use retrace_estimate::{estimate_trace, Fidelity};
use retrace_program::Addr;
use retrace_sim::cycle::run_cycle_level;
use retrace_sim::record::record_run;
use retrace_sim::{Console, Machine, MachineConfig, StopReason};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// Arguments of `retrace bench`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
    retrace bench programs/bin/bytevm-rv64-O2.elf\n  \
    retrace bench prog.elf --core inorder5 --rounds 15 --json")]
pub struct Args {
    /// The program.
    pub program: PathBuf,
    /// The core for the cycle-level run and the single-core estimates:
    /// preset name or TOML file.
    #[arg(long, default_value = "rocket", value_name = "NAME|FILE")]
    pub core: String,
    /// Rounds (each runs every step once).
    #[arg(long, default_value_t = 9, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub rounds: u32,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Arguments passed to the program.
    #[arg(last = true, value_name = "ARGS")]
    pub args: Vec<String>,
}

/// The steps, in the order each round runs them.
const STEPS: [&str; 7] = [
    "run",
    "record",
    "record --no-dcache",
    "cycle-level",
    "estimate fast",
    "estimate control",
    "estimate every preset",
];

/// Index of each step in [`STEPS`].
const RUN: usize = 0;
const RECORD: usize = 1;
const RECORD_NO_DCACHE: usize = 2;
const CYCLE: usize = 3;
const FAST: usize = 4;
const CONTROL: usize = 5;
const EVERY_PRESET: usize = 6;

/// CPU seconds used so far by all of this process's threads.
fn cpu_seconds() -> Option<f64> {
    #[cfg(unix)]
    {
        let mut u = std::mem::MaybeUninit::<libc::rusage>::zeroed();
        // SAFETY: `getrusage` fills the struct it is given.
        let status = unsafe { libc::getrusage(libc::RUSAGE_SELF, u.as_mut_ptr()) };
        if status != 0 {
            return None;
        }
        // SAFETY: initialised by the successful call above.
        let u = unsafe { u.assume_init() };
        let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
        Some(secs(u.ru_utime) + secs(u.ru_stime))
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// One measured step: wall and CPU seconds.
#[derive(Clone, Copy, Debug, Default)]
struct Sample {
    wall: f64,
    cpu: Option<f64>,
}

/// Time `f`.
fn measure(f: impl FnOnce() -> anyhow::Result<()>) -> anyhow::Result<Sample> {
    let cpu0 = cpu_seconds();
    let t = Instant::now();
    f()?;
    let wall = t.elapsed().as_secs_f64();
    let cpu = cpu_seconds().zip(cpu0).map(|(b, a)| b - a);
    Ok(Sample { wall, cpu })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn fastest(v: impl Iterator<Item = f64>) -> f64 {
    v.fold(f64::INFINITY, f64::min)
}

/// A ratio between two steps: median of the per-round ratios, fastest over
/// fastest.
#[derive(Clone, Copy, Debug)]
struct Ratio {
    median: f64,
    fastest: f64,
}

fn ratio(samples: &[[Sample; STEPS.len()]], num: usize, den: usize) -> Ratio {
    Ratio {
        median: median(samples.iter().map(|r| r[num].wall / r[den].wall).collect()),
        fastest: fastest(samples.iter().map(|r| r[num].wall))
            / fastest(samples.iter().map(|r| r[den].wall)),
    }
}

/// Entry point of `retrace bench`.
pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    let elf = load_elf(&args.program)?;
    let shown = args.program.display().to_string();
    let core = load_core(&args.core)?;
    check_xlen(&core, &elf, &shown)?;
    let program = analyse(&elf, &shown)?;
    let presets: Vec<_> = retrace_timing::PRESETS
        .iter()
        .filter_map(|(name, _)| retrace_timing::preset(name).ok())
        .filter(|m| m.supports(elf.xlen))
        .collect();
    let dcaches = preset_dcaches();
    let load =
        |e: retrace_sim::LoadError| tag(anyhow!("cannot load {shown}: {e}"), Status::BadInput);
    let traces: Vec<PathBuf> = ["dcache", "nodcache"]
        .iter()
        .map(|k| {
            std::env::temp_dir().join(format!("retrace-bench-{}-{k}.rtrace", std::process::id()))
        })
        .collect();
    let mut instructions = 0;
    let mut cycles = [0u64; 3];
    let mut step = |i: usize| -> anyhow::Result<Sample> {
        match i {
            RUN => measure(|| {
                let mut m = Machine::new(
                    &elf,
                    &MachineConfig::default(),
                    host(&shown, &args.args),
                    Console::null(),
                )
                .map_err(load)?;
                instructions = m.run(None, &mut ()).instructions;
                Ok(())
            }),
            RECORD | RECORD_NO_DCACHE => measure(|| {
                let (trace, measured) = if i == RECORD {
                    (&traces[0], &dcaches[..])
                } else {
                    (&traces[1], &[][..])
                };
                let file = std::fs::File::create(trace).map_err(|e| {
                    tag(
                        anyhow!("cannot create {}: {e}", trace.display()),
                        Status::BadInput,
                    )
                })?;
                let rec = record_run(
                    &elf,
                    host(&shown, &args.args),
                    Console::null(),
                    None,
                    std::io::BufWriter::with_capacity(1 << 20, file),
                    retrace_trace::Header::new(0, 32, 1),
                    measured,
                )
                .map_err(|e| tag(anyhow!("cannot record {shown}: {e}"), Status::Fault))?;
                if !matches!(rec.run.stop, StopReason::Exit { .. }) {
                    return Err(tag(
                        anyhow!("{shown} stopped: {}", rec.run.stop),
                        Status::Fault,
                    ));
                }
                Ok(())
            }),
            CYCLE => measure(|| {
                let (_, obs) = run_cycle_level(
                    &elf,
                    host(&shown, &args.args),
                    Console::null(),
                    None,
                    &core,
                    &[],
                )
                .map_err(load)?;
                cycles[0] = obs.core().cycles();
                Ok(())
            }),
            _ => measure(|| {
                let (cores, fidelity) = match i {
                    FAST => (std::slice::from_ref(&core), Fidelity::Fast),
                    CONTROL => (std::slice::from_ref(&core), Fidelity::Control),
                    _ => (&presets[..], Fidelity::Control),
                };
                let est = estimate_trace(
                    &program.table,
                    Addr(elf.entry),
                    &traces[0],
                    cores,
                    fidelity,
                    None,
                )
                .map_err(|e| super::common::replay_error(&traces[0], e))?;
                match i {
                    FAST => cycles[1] = est[0].0.cycles,
                    CONTROL => cycles[2] = est[0].0.cycles,
                    _ => {}
                }
                Ok(())
            }),
        }
    };
    // The estimates read the trace of a recording made first (unmeasured);
    // then each round runs every step, starting one step later than the
    // round before, so that no step always follows the same one (a step
    // that leaves threads or caches busy would otherwise always slow the
    // same next step).
    let result = (|| -> anyhow::Result<Vec<[Sample; STEPS.len()]>> {
        step(RECORD)?;
        let mut samples = Vec::new();
        for r in 0..args.rounds as usize {
            let mut round = [Sample::default(); STEPS.len()];
            for k in 0..STEPS.len() {
                let i = (r + k) % STEPS.len();
                round[i] = step(i)?;
            }
            samples.push(round);
        }
        Ok(samples)
    })();
    for t in &traces {
        let _ = std::fs::remove_file(t);
    }
    let samples = result?;

    let record = ratio(&samples, RECORD, RUN);
    let record_no_dcache = ratio(&samples, RECORD_NO_DCACHE, RUN);
    let fast = ratio(&samples, CYCLE, FAST);
    let control = ratio(&samples, CYCLE, CONTROL);
    let every = ratio(&samples, EVERY_PRESET, CYCLE);
    let cpu_ratio = |num: usize, den: usize| -> Option<f64> {
        let v: Option<Vec<f64>> = samples
            .iter()
            .map(|r| Some(r[num].cpu? / r[den].cpu?.max(1e-9)))
            .collect();
        v.map(median)
    };
    let step_stats = |i: usize| {
        (
            fastest(samples.iter().map(|r| r[i].wall)),
            median(samples.iter().map(|r| r[i].wall).collect()),
            samples
                .iter()
                .map(|r| r[i].cpu)
                .collect::<Option<Vec<_>>>()
                .map(median),
        )
    };

    if args.json {
        let steps: Vec<_> = (0..STEPS.len())
            .map(|i| {
                let (f, m, c) = step_stats(i);
                serde_json::json!({
                    "step": STEPS[i],
                    "fastest_seconds": f,
                    "median_seconds": m,
                    "median_cpu_seconds": c,
                })
            })
            .collect();
        let r = |x: Ratio| serde_json::json!({ "median": x.median, "fastest": x.fastest });
        let j = serde_json::json!({
            "program": shown,
            "core": core.name,
            "instructions": instructions,
            "rounds": args.rounds,
            "reference_cycles": cycles[0],
            "fast_cycles": cycles[1],
            "control_cycles": cycles[2],
            "steps": steps,
            "record_over_run": r(record),
            "record_over_run_cpu": cpu_ratio(RECORD, RUN),
            "record_no_dcache_over_run": r(record_no_dcache),
            "record_no_dcache_over_run_cpu": cpu_ratio(RECORD_NO_DCACHE, RUN),
            "cycle_level_over_fast": r(fast),
            "cycle_level_over_control": r(control),
            "every_preset_over_cycle_level": r(every),
        });
        println!("{j}");
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{shown}: {} instructions; core {}; {} interleaved rounds",
        thousands(instructions),
        core.name,
        args.rounds
    );
    println!(
        "  {:<28} {:>9} {:>9} {:>12}",
        "step", "fastest", "median", "median CPU"
    );
    for (i, name) in STEPS.iter().enumerate() {
        let (f, m, c) = step_stats(i);
        let label = match i {
            CYCLE | FAST | CONTROL => format!("{name} ({})", core.name),
            EVERY_PRESET => format!("{name} ({})", presets.len()),
            _ => name.to_string(),
        };
        let cpu = c.map_or("-".into(), |c| format!("{c:.3} s"));
        println!("  {label:<28} {f:>7.3} s {m:>7.3} s {cpu:>12}");
    }
    let cpu = |x: Option<f64>| x.map_or(String::new(), |x| format!(", CPU {x:.2}×"));
    println!(
        "  record ÷ run                 {:.2}× (fastest ÷ fastest {:.2}×{})",
        record.median,
        record.fastest,
        cpu(cpu_ratio(RECORD, RUN))
    );
    println!(
        "  record --no-dcache ÷ run     {:.2}× (fastest ÷ fastest {:.2}×{})",
        record_no_dcache.median,
        record_no_dcache.fastest,
        cpu(cpu_ratio(RECORD_NO_DCACHE, RUN))
    );
    println!(
        "  cycle-level ÷ estimate fast  {:.1}× (fastest ÷ fastest {:.1}×)",
        fast.median, fast.fastest
    );
    println!(
        "  cycle-level ÷ estimate control {:.1}× (fastest ÷ fastest {:.1}×)",
        control.median, control.fastest
    );
    println!(
        "  every preset ÷ cycle-level   {:.2}× (fastest ÷ fastest {:.2}×)",
        every.median, every.fastest
    );
    println!(
        "  cycles: cycle-level {}, fast {}, control {}",
        thousands(cycles[0]),
        thousands(cycles[1]),
        thousands(cycles[2])
    );
    Ok(ExitCode::SUCCESS)
}
