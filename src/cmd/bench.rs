//! `retrace bench`: what recording and estimating cost against a plain run
//! and the cycle-level engine, measured in one process.
//!
//! Every step runs once per round and the rounds are interleaved, so that
//! the drift of a shared machine hits all steps alike; the headline figures
//! are the medians of the per-round ratios (each ratio compares two steps
//! run seconds apart), with the fastest-of-all ratio beside them. Wall time
//! is what the user waits for; CPU time (all threads, from `getrusage`) is
//! what recording's helper threads add on top.

use super::common::{
    analyse, check_xlen, host, load_core, load_elf, preset_dcaches, thousands, ProgramArgs,
};
use super::compare::pipeline_error;
use crate::report::{csv_of, print, FormatArgs, Report};
use crate::status::{tag, Status};
use anyhow::anyhow;
use retrace_estimate::compare::{estimate_recorded, record_in_memory, reference_run, Recorded};
use retrace_estimate::Fidelity;
use retrace_program::Addr;
use retrace_sim::{Console, Machine, MachineConfig, StopReason};
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// Arguments of `retrace bench`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
    retrace bench programs/bin/bytevm-rv64-O2.elf\n  \
    retrace bench prog.elf --core inorder5 --rounds 15 --format json")]
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
    /// Output format (csv: one row per step).
    #[command(flatten)]
    pub output: FormatArgs,
    #[command(flatten)]
    pub program_args: ProgramArgs,
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
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Ratio {
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

/// One step's times over the rounds.
#[derive(Serialize)]
pub struct StepTimes {
    /// The step's name.
    pub step: &'static str,
    /// The fastest round's wall seconds.
    pub fastest_seconds: f64,
    /// The median round's wall seconds.
    pub median_seconds: f64,
    /// The median round's CPU seconds (all threads), where measurable.
    pub median_cpu_seconds: Option<f64>,
}

/// What `retrace bench` reports.
#[derive(Serialize)]
pub struct BenchReport {
    /// The program as given.
    pub program: String,
    /// The core of the cycle-level run and the single-core estimates.
    pub core: String,
    /// Instructions of the run.
    pub instructions: u64,
    /// Rounds measured.
    pub rounds: u32,
    /// Cycle-level engine's cycles.
    pub reference_cycles: u64,
    /// The `fast` estimate's cycles.
    pub fast_cycles: u64,
    /// The `control` estimate's cycles.
    pub control_cycles: u64,
    /// Each step's times, in [`STEPS`] order.
    pub steps: Vec<StepTimes>,
    /// Recording over a plain run.
    pub record_over_run: Ratio,
    /// The same in CPU time.
    pub record_over_run_cpu: Option<f64>,
    /// Recording without data-cache measurement over a plain run.
    pub record_no_dcache_over_run: Ratio,
    /// The same in CPU time.
    pub record_no_dcache_over_run_cpu: Option<f64>,
    /// Cycle-level run over the `fast` estimate.
    pub cycle_level_over_fast: Ratio,
    /// Cycle-level run over the `control` estimate.
    pub cycle_level_over_control: Ratio,
    /// Every preset's estimate over the cycle-level run.
    pub every_preset_over_cycle_level: Ratio,
    /// How many presets "every preset" estimates.
    #[serde(skip)]
    pub presets: usize,
}

impl Report for BenchReport {
    fn text(&self) -> String {
        use std::fmt::Write as _;
        let mut o = String::new();
        let _ = writeln!(
            o,
            "{}: {} instructions; core {}; {} interleaved rounds",
            self.program,
            thousands(self.instructions),
            self.core,
            self.rounds
        );
        let _ = writeln!(
            o,
            "  {:<28} {:>9} {:>9} {:>12}",
            "step", "fastest", "median", "median CPU"
        );
        for (i, s) in self.steps.iter().enumerate() {
            let label = match i {
                CYCLE | FAST | CONTROL => format!("{} ({})", s.step, self.core),
                EVERY_PRESET => format!("{} ({})", s.step, self.presets),
                _ => s.step.to_string(),
            };
            let cpu = s
                .median_cpu_seconds
                .map_or("-".into(), |c| format!("{c:.3} s"));
            let _ = writeln!(
                o,
                "  {label:<28} {:>7.3} s {:>7.3} s {cpu:>12}",
                s.fastest_seconds, s.median_seconds
            );
        }
        let cpu = |x: Option<f64>| x.map_or(String::new(), |x| format!(", CPU {x:.2}×"));
        let (r, n) = (self.record_over_run, self.record_no_dcache_over_run);
        let _ = writeln!(
            o,
            "  record ÷ run                 {:.2}× (fastest ÷ fastest {:.2}×{})",
            r.median,
            r.fastest,
            cpu(self.record_over_run_cpu)
        );
        let _ = writeln!(
            o,
            "  record --no-dcache ÷ run     {:.2}× (fastest ÷ fastest {:.2}×{})",
            n.median,
            n.fastest,
            cpu(self.record_no_dcache_over_run_cpu)
        );
        let (f, c, e) = (
            self.cycle_level_over_fast,
            self.cycle_level_over_control,
            self.every_preset_over_cycle_level,
        );
        let _ = writeln!(
            o,
            "  cycle-level ÷ estimate fast  {:.1}× (fastest ÷ fastest {:.1}×)",
            f.median, f.fastest
        );
        let _ = writeln!(
            o,
            "  cycle-level ÷ estimate control {:.1}× (fastest ÷ fastest {:.1}×)",
            c.median, c.fastest
        );
        let _ = writeln!(
            o,
            "  every preset ÷ cycle-level   {:.2}× (fastest ÷ fastest {:.2}×)",
            e.median, e.fastest
        );
        let _ = writeln!(
            o,
            "  cycles: cycle-level {}, fast {}, control {}",
            thousands(self.reference_cycles),
            thousands(self.fast_cycles),
            thousands(self.control_cycles)
        );
        o
    }

    fn csv(&self) -> anyhow::Result<String> {
        csv_of(&self.steps)
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
    let prog_args = &args.program_args.args;
    let load =
        |e: retrace_sim::LoadError| tag(anyhow!("cannot load {shown}: {e}"), Status::BadInput);
    // The estimates replay the recording with data-cache measurement; each
    // round's recordings replace it (they are the same bytes).
    let mut recorded: Option<Recorded> = None;
    let mut instructions = 0;
    let mut cycles = [0u64; 3];
    let mut step = |i: usize| -> anyhow::Result<Sample> {
        match i {
            RUN => measure(|| {
                let mut m = Machine::new(
                    &elf,
                    &MachineConfig::default(),
                    host(&shown, prog_args),
                    Console::null(),
                )
                .map_err(load)?;
                instructions = m.run(None, &mut ()).instructions;
                Ok(())
            }),
            RECORD | RECORD_NO_DCACHE => measure(|| {
                let measured = if i == RECORD { &dcaches[..] } else { &[][..] };
                let rec = record_in_memory(
                    &elf,
                    host(&shown, prog_args),
                    Console::null(),
                    None,
                    measured,
                )
                .map_err(|e| pipeline_error(&shown, e))?;
                if !matches!(rec.recording.run.stop, StopReason::Exit { .. }) {
                    return Err(tag(
                        anyhow!("{shown} stopped: {}", rec.recording.run.stop),
                        Status::Fault,
                    ));
                }
                if i == RECORD {
                    recorded = Some(rec);
                }
                Ok(())
            }),
            CYCLE => measure(|| {
                let r = reference_run(&elf, host(&shown, prog_args), None, &core)
                    .map_err(|e| pipeline_error(&shown, e))?;
                cycles[0] = r.cycles;
                Ok(())
            }),
            _ => measure(|| {
                let (cores, fidelity) = match i {
                    FAST => (std::slice::from_ref(&core), Fidelity::Fast),
                    CONTROL => (std::slice::from_ref(&core), Fidelity::Control),
                    _ => (&presets[..], Fidelity::Control),
                };
                let rec = recorded.as_ref().expect("recorded before the first round");
                let (est, _) =
                    estimate_recorded(&program.table, Addr(elf.entry), rec, cores, fidelity)
                        .map_err(|e| pipeline_error(&shown, e))?;
                match i {
                    FAST => cycles[1] = est[0].cycles,
                    CONTROL => cycles[2] = est[0].cycles,
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

    let cpu_ratio = |num: usize, den: usize| -> Option<f64> {
        let v: Option<Vec<f64>> = samples
            .iter()
            .map(|r| Some(r[num].cpu? / r[den].cpu?.max(1e-9)))
            .collect();
        v.map(median)
    };
    let steps = (0..STEPS.len())
        .map(|i| StepTimes {
            step: STEPS[i],
            fastest_seconds: fastest(samples.iter().map(|r| r[i].wall)),
            median_seconds: median(samples.iter().map(|r| r[i].wall).collect()),
            median_cpu_seconds: samples
                .iter()
                .map(|r| r[i].cpu)
                .collect::<Option<Vec<_>>>()
                .map(median),
        })
        .collect();
    let report = BenchReport {
        program: shown.clone(),
        core: core.name.clone(),
        instructions,
        rounds: args.rounds,
        reference_cycles: cycles[0],
        fast_cycles: cycles[1],
        control_cycles: cycles[2],
        steps,
        record_over_run: ratio(&samples, RECORD, RUN),
        record_over_run_cpu: cpu_ratio(RECORD, RUN),
        record_no_dcache_over_run: ratio(&samples, RECORD_NO_DCACHE, RUN),
        record_no_dcache_over_run_cpu: cpu_ratio(RECORD_NO_DCACHE, RUN),
        cycle_level_over_fast: ratio(&samples, CYCLE, FAST),
        cycle_level_over_control: ratio(&samples, CYCLE, CONTROL),
        every_preset_over_cycle_level: ratio(&samples, EVERY_PRESET, CYCLE),
        presets: presets.len(),
    };
    print(&report, args.output.get())?;
    Ok(ExitCode::SUCCESS)
}
