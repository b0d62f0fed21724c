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
use retrace_estimate::compare::{
    estimate_recorded, record_in_memory, reference_run, CompareError, Recorded,
};
use retrace_estimate::system::estimate_system;
use retrace_estimate::Fidelity;
use retrace_program::Addr;
use retrace_sim::clocked::{run_by_clock, ClockedHarts};
use retrace_sim::record::record_run_harts;
use retrace_sim::{Console, Machine, MachineConfig, RunResult, StopReason};
use retrace_timing::CoreModel;
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// Arguments of `retrace bench`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
    retrace bench programs/bin/bytevm-rv64-O2.elf\n  \
    retrace bench prog.elf --core inorder5 --rounds 15 --format json\n  \
    retrace bench --harts 8\n  \
    retrace bench --harts 8 programs/bin/mp/workq-rv64-O2.elf -- 12000 9")]
pub struct Args {
    /// The program. With --harts: the programs, each measured in turn
    /// (default: the multi-hart examples of programs/bin/mp, both widths).
    #[arg(value_name = "PROGRAM", required_unless_present = "harts")]
    pub programs: Vec<PathBuf>,
    /// The core for the cycle-level run and the estimates: preset name or
    /// TOML file [default: rocket; with --harts, inorder5, every hart's].
    #[arg(long, value_name = "NAME|FILE")]
    pub core: Option<String>,
    /// Rounds (each runs every step once) [default: 9; with --harts, 5].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub rounds: Option<u32>,
    /// Measure several harts instead (docs/MULTIPROCESSOR.md): the
    /// functional run on 1 hart and on N, the cycle-level run of N harts by
    /// their clocks, its recording (`record --harts N --schedule-core`,
    /// with and without data-cache measurement) and the multiprocessor
    /// replay at fast and control.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8).range(2..=64))]
    pub harts: Option<u8>,
    /// With --harts: repeat each step within a round until it has taken
    /// this many seconds (calibrated once, before the rounds), and report
    /// the time of one run.
    #[arg(long, value_name = "S", default_value_t = 0.3, requires = "harts")]
    pub min_seconds: f64,
    /// With --harts: measure only these steps (comma-separated; default:
    /// all). The recording runs once before the rounds whenever a replay
    /// is measured.
    #[arg(long, value_name = "STEP", value_delimiter = ',', requires = "harts")]
    pub steps: Vec<MpStep>,
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
    /// The median of the per-round ratios of CPU time (all threads), where
    /// measurable: steadier than wall time on a loaded machine.
    median_cpu: Option<f64>,
}

fn ratio<const K: usize>(samples: &[[Sample; K]], num: usize, den: usize) -> Ratio {
    Ratio {
        median_cpu: samples
            .iter()
            .map(|r| Some(r[num].cpu? / r[den].cpu?))
            .collect::<Option<Vec<f64>>>()
            .map(median),
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
    if let Some(harts) = args.harts {
        return main_harts(&args, usize::from(harts));
    }
    let [path] = &args.programs[..] else {
        // A usage error, as clap reports one (status 2).
        clap::Error::raw(
            clap::error::ErrorKind::TooManyValues,
            "give one program (several programs go with --harts)\n",
        )
        .exit();
    };
    let rounds = args.rounds.unwrap_or(9);
    let elf = load_elf(path)?;
    let shown = path.display().to_string();
    let core = load_core(args.core.as_deref().unwrap_or("rocket"))?;
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
    for r in 0..rounds as usize {
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
        rounds,
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

/// The steps of `retrace bench --harts N`, in the order each round runs
/// them.
const MP_STEPS: [&str; 7] = [
    "run 1 hart",
    "run harts",
    "cycle-level",
    "record",
    "record --no-dcache",
    "replay fast",
    "replay control",
];

/// A step of `retrace bench --harts N`, as `--steps` names it.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum MpStep {
    /// The functional run on one hart.
    Run1,
    /// The functional run on N harts.
    Run,
    /// The cycle-level run of N harts by their clocks.
    CycleLevel,
    /// The recording (with data-cache measurement).
    Record,
    /// The recording without data-cache measurement.
    RecordNoDcache,
    /// The replay at `fast`.
    Fast,
    /// The replay at `control`.
    Control,
}

impl MpStep {
    /// Its index in [`MP_STEPS`].
    fn index(self) -> usize {
        match self {
            MpStep::Run1 => MP_RUN1,
            MpStep::Run => MP_RUN,
            MpStep::CycleLevel => MP_CYCLE,
            MpStep::Record => MP_RECORD,
            MpStep::RecordNoDcache => MP_RECORD_NO_DCACHE,
            MpStep::Fast => MP_FAST,
            MpStep::Control => MP_CONTROL,
        }
    }
}

/// Index of each step in [`MP_STEPS`].
const MP_RUN1: usize = 0;
const MP_RUN: usize = 1;
const MP_CYCLE: usize = 2;
const MP_RECORD: usize = 3;
const MP_RECORD_NO_DCACHE: usize = 4;
const MP_FAST: usize = 5;
const MP_CONTROL: usize = 6;

/// The multi-hart examples (`programs/bin/mp/NAME-rvXX-O2.elf`) and the
/// input `bench --harts` gives each when no arguments follow `--`: larger
/// than their defaults, so that a run is tens of millions of instructions
/// (`reduce` is at its largest, 65,536 numbers).
const MP_EXAMPLES: [(&str, &[&str]); 5] = [
    ("pipeline", &["60000", "5"]),
    ("reduce", &["65536", "7"]),
    ("workq", &["12000", "9"]),
    ("table", &["800000", "400", "3"]),
    ("stencil", &["4096", "4000", "3"]),
];

/// One step's times over the rounds, for one run of it.
#[derive(Serialize)]
pub struct MpStepTimes {
    /// The step's name.
    pub step: &'static str,
    /// Runs of the step in each measurement (the time given is one run's;
    /// 0: not measured, `--steps`).
    pub runs_per_measurement: u32,
    /// The fastest round's wall seconds.
    pub fastest_seconds: f64,
    /// The median round's wall seconds.
    pub median_seconds: f64,
    /// The median round's CPU seconds (all threads), where measurable.
    pub median_cpu_seconds: Option<f64>,
}

/// What `retrace bench --harts N` reports for one program.
#[derive(Serialize)]
pub struct MpProgramReport {
    /// The program as given.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Instructions of the run on one hart.
    pub instructions_one_hart: u64,
    /// Instructions of the run on N harts (all harts; the cycle-level run
    /// and the recording run the same).
    pub instructions: u64,
    /// The cycle-level run's makespan.
    pub makespan: u64,
    /// The `fast` replay's makespan.
    pub fast_makespan: u64,
    /// The `control` replay's makespan.
    pub control_makespan: u64,
    /// Synchronisation calls the replay made.
    pub calls: u64,
    /// Calls that met their object in another order than recorded (fast).
    pub reordered: u64,
    /// Each step's times, in [`MP_STEPS`] order.
    pub steps: Vec<MpStepTimes>,
    /// The functional engine's MIPS on one hart (fastest round).
    pub mips_one_hart: f64,
    /// Its aggregate MIPS on N harts (fastest round).
    pub mips: f64,
    /// The cycle-level engine's aggregate MIPS on N harts (fastest round).
    pub cycle_level_mips: f64,
    /// Aggregate MIPS on N harts over MIPS on one hart.
    pub mips_over_one_hart: Ratio,
    /// Recording over the functional run of N harts.
    pub record_over_run: Ratio,
    /// Recording without data-cache measurement over the same.
    pub record_no_dcache_over_run: Ratio,
    /// Recording over the cycle-level run (the recording runs the harts
    /// by the core's clocks, so it includes one).
    pub record_over_cycle_level: Ratio,
    /// Recording without data-cache measurement over the cycle-level run.
    pub record_no_dcache_over_cycle_level: Ratio,
    /// Cycle-level run over the `fast` replay: the replay's speedup.
    pub cycle_level_over_fast: Ratio,
    /// Cycle-level run over the `control` replay.
    pub cycle_level_over_control: Ratio,
}

/// What `retrace bench --harts N` reports.
#[derive(Serialize)]
pub struct MpBenchReport {
    /// Harts of every run but the single-hart one.
    pub harts: usize,
    /// Every hart's core (cycle-level run, recording's schedule, replays).
    pub core: String,
    /// Rounds measured.
    pub rounds: u32,
    /// Each measurement's least length (runs repeated to reach it).
    pub min_seconds: f64,
    /// Per program.
    pub programs: Vec<MpProgramReport>,
}

/// A CSV row of `bench --harts`: one program's step.
#[derive(Serialize)]
struct MpCsvRow<'a> {
    program: &'a str,
    step: &'static str,
    runs_per_measurement: u32,
    fastest_seconds: f64,
    median_seconds: f64,
    median_cpu_seconds: Option<f64>,
}

impl Report for MpBenchReport {
    fn text(&self) -> String {
        use std::fmt::Write as _;
        let mut o = String::new();
        let n = self.harts;
        let _ = writeln!(
            o,
            "{n} harts on {}; {} interleaved rounds, each step repeated to at least {:.2} s; seconds of one run",
            self.core, self.rounds, self.min_seconds
        );
        for p in &self.programs {
            let args = match p.args.len() {
                0 => String::new(),
                _ => format!(" -- {}", p.args.join(" ")),
            };
            let _ = writeln!(
                o,
                "{}{args}: {} instructions on {n} harts, {} on 1",
                p.program,
                thousands(p.instructions),
                thousands(p.instructions_one_hart)
            );
            let _ = writeln!(
                o,
                "  {:<30} {:>5} {:>9} {:>9} {:>12}",
                "step", "runs", "fastest", "median", "median CPU"
            );
            for (i, s) in p.steps.iter().enumerate() {
                if s.runs_per_measurement == 0 {
                    // Not measured (--steps).
                    continue;
                }
                let label = match i {
                    MP_RUN => format!("run {n} harts"),
                    MP_CYCLE | MP_FAST | MP_CONTROL => format!("{} ({})", s.step, self.core),
                    MP_RECORD => format!("record ({} clocks)", self.core),
                    MP_RECORD_NO_DCACHE => format!("record --no-dcache ({})", self.core),
                    _ => s.step.to_string(),
                };
                let cpu = s
                    .median_cpu_seconds
                    .map_or("-".into(), |c| format!("{c:.3} s"));
                let _ = writeln!(
                    o,
                    "  {label:<30} {:>5} {:>7.3} s {:>7.3} s {cpu:>12}",
                    s.runs_per_measurement, s.fastest_seconds, s.median_seconds
                );
            }
            // The lines of steps not measured (--steps) are left out.
            let has = |i: usize| p.steps[i].runs_per_measurement > 0;
            let m = p.mips_over_one_hart;
            if has(MP_RUN1) && has(MP_RUN) {
                let cycle = if has(MP_CYCLE) {
                    format!("; cycle-level {:.1}", p.cycle_level_mips)
                } else {
                    String::new()
                };
                let _ = writeln!(
                    o,
                    "  MIPS: 1 hart {:.1}, {n} harts {:.1} ({n} ÷ 1: {:.2}, median of rounds {:.2}){cycle}",
                    p.mips_one_hart, p.mips, m.fastest, m.median
                );
            }
            let (r, rn, rc, rnc, f, c) = (
                p.record_over_run,
                p.record_no_dcache_over_run,
                p.record_over_cycle_level,
                p.record_no_dcache_over_cycle_level,
                p.cycle_level_over_fast,
                p.cycle_level_over_control,
            );
            if has(MP_RECORD) && has(MP_RECORD_NO_DCACHE) && has(MP_RUN) && has(MP_CYCLE) {
                let _ = writeln!(
                    o,
                    "  record ÷ run {n} harts {:.2}× (median of rounds {:.2}×), --no-dcache {:.2}× ({:.2}×)",
                    r.fastest, r.median, rn.fastest, rn.median
                );
                let _ = writeln!(
                    o,
                    "  record ÷ cycle-level {:.2}× (median of rounds {:.2}×), --no-dcache {:.2}× ({:.2}×)",
                    rc.fastest, rc.median, rnc.fastest, rnc.median
                );
            }
            // A ratio of steps not both measured is "-", not NaN.
            let wall = |r: Ratio, step: usize| {
                if has(MP_CYCLE) && has(step) {
                    format!("{:.1}× (median of rounds {:.1}×)", r.fastest, r.median)
                } else {
                    "-".into()
                }
            };
            let cpu = |r: Ratio| r.median_cpu.map_or("-".into(), |c| format!("{c:.1}×"));
            if has(MP_FAST) || has(MP_CONTROL) {
                let _ = writeln!(
                    o,
                    "  cycle-level ÷ replay fast {}, ÷ replay control {}",
                    wall(f, MP_FAST),
                    wall(c, MP_CONTROL)
                );
                let _ = writeln!(
                    o,
                    "  in CPU time (all threads), median of rounds: cycle-level ÷ replay fast {}, ÷ replay control {}",
                    cpu(f),
                    cpu(c)
                );
            }
            if has(MP_CYCLE) || has(MP_FAST) || has(MP_CONTROL) {
                let _ = writeln!(
                    o,
                    "  makespan: cycle-level {}, fast {}, control {}; {} synchronisation calls, {} reordered",
                    thousands(p.makespan),
                    thousands(p.fast_makespan),
                    thousands(p.control_makespan),
                    thousands(p.calls),
                    thousands(p.reordered)
                );
            }
        }
        if self.programs.len() > 1 {
            // Over the programs where both steps were measured.
            let lowest = |f: fn(&MpProgramReport) -> f64| {
                self.programs
                    .iter()
                    .map(|p| (f(p), p.program.as_str()))
                    .filter(|(v, _)| v.is_finite())
                    .min_by(|a, b| a.0.total_cmp(&b.0))
                    .map_or("-".to_string(), |(v, p)| format!("{v:.2} ({p})"))
            };
            let f = lowest(|p| p.cycle_level_over_fast.fastest);
            let m = lowest(|p| p.mips_over_one_hart.fastest);
            let _ = writeln!(
                o,
                "lowest, fastest ÷ fastest: cycle-level ÷ replay fast {f}; {n}-hart ÷ 1-hart MIPS {m}"
            );
        }
        o
    }

    fn csv(&self) -> anyhow::Result<String> {
        let rows: Vec<MpCsvRow> = self
            .programs
            .iter()
            .flat_map(|p| {
                p.steps.iter().map(|s| MpCsvRow {
                    program: &p.program,
                    step: s.step,
                    runs_per_measurement: s.runs_per_measurement,
                    fastest_seconds: s.fastest_seconds,
                    median_seconds: s.median_seconds,
                    median_cpu_seconds: s.median_cpu_seconds,
                })
            })
            .collect();
        csv_of(&rows)
    }
}

/// `f` run `runs` times, the time of one run.
fn measure_runs(runs: u32, mut f: impl FnMut() -> anyhow::Result<()>) -> anyhow::Result<Sample> {
    let s = measure(|| (0..runs).try_for_each(|_| f()))?;
    let per = f64::from(runs);
    Ok(Sample {
        wall: s.wall / per,
        cpu: s.cpu.map(|c| c / per),
    })
}

/// One program of `bench --harts`, and what its steps found.
struct MpProgram {
    shown: String,
    args: Vec<String>,
    elf: retrace_program::Elf,
    program: retrace_program::Program,
    /// The trace of the latest recording (the replays read it).
    trace: Vec<u8>,
    instructions: [u64; 2],
    makespans: [u64; 3],
    calls: u64,
    reordered: u64,
    runs: [u32; MP_STEPS.len()],
}

/// Refuse a run that did not reach the program's end.
fn ran_to_end(shown: &str, r: &RunResult) -> anyhow::Result<u64> {
    match r.stop {
        StopReason::Exit { .. } => Ok(r.instructions),
        ref stop => Err(tag(anyhow!("{shown} stopped: {stop}"), Status::Fault)),
    }
}

impl MpProgram {
    /// Run step `i` once.
    fn step(&mut self, i: usize, harts: usize, core: &CoreModel) -> anyhow::Result<()> {
        let shown = &self.shown;
        let host = || host(shown, &self.args);
        let load =
            |e: retrace_sim::LoadError| tag(anyhow!("cannot load {shown}: {e}"), Status::BadInput);
        let cores: Vec<&CoreModel> = vec![core; harts];
        match i {
            MP_RUN1 | MP_RUN => {
                let config = MachineConfig {
                    harts: if i == MP_RUN1 { 1 } else { harts },
                    ..MachineConfig::default()
                };
                let mut m =
                    Machine::new(&self.elf, &config, host(), Console::null()).map_err(load)?;
                self.instructions[i] = ran_to_end(shown, &m.run(None, &mut ()))?;
            }
            MP_CYCLE => {
                let config = MachineConfig {
                    harts,
                    ..MachineConfig::default()
                };
                let mut m =
                    Machine::new(&self.elf, &config, host(), Console::null()).map_err(load)?;
                let mut obs = ClockedHarts::heterogeneous(&cores, &[]).reading_code(&self.elf);
                ran_to_end(shown, &run_by_clock(&mut m, None, &mut obs))?;
                self.makespans[0] = obs.makespan();
            }
            MP_RECORD | MP_RECORD_NO_DCACHE => {
                // What `retrace record --harts N --schedule-core CORE`
                // does (with or without its default data-cache
                // measurement), into memory.
                let dcaches = match i {
                    MP_RECORD => preset_dcaches(),
                    _ => Vec::new(),
                };
                let mut trace = Vec::with_capacity(1 << 20);
                let rec = record_run_harts(
                    &self.elf,
                    host(),
                    Console::null(),
                    None,
                    &mut trace,
                    retrace_trace::Header::new(0, 32, 1),
                    &dcaches,
                    &mut (),
                    harts,
                    Some(retrace_sim::clocked::Schedule {
                        cores: &cores,
                        hz: &[],
                    }),
                )
                .map_err(|e| pipeline_error(shown, CompareError::from(e)))?;
                ran_to_end(shown, &rec.run)?;
                if i == MP_RECORD {
                    self.trace = trace;
                }
            }
            _ => {
                let fidelity = match i {
                    MP_FAST => Fidelity::Fast,
                    _ => Fidelity::Control,
                };
                let est = estimate_system(
                    &self.program.table,
                    Addr(self.elf.entry),
                    &self.trace,
                    std::slice::from_ref(core),
                    &[],
                    fidelity,
                )
                .map_err(|e| pipeline_error(shown, CompareError::from(e)))?;
                self.makespans[if i == MP_FAST { 1 } else { 2 }] = est.makespan;
                if i == MP_FAST {
                    (self.calls, self.reordered) = (est.calls, est.reordered);
                }
            }
        }
        Ok(())
    }
}

/// `retrace bench --harts N [PROGRAMS…]`.
fn main_harts(args: &Args, harts: usize) -> anyhow::Result<ExitCode> {
    let core = load_core(args.core.as_deref().unwrap_or("inorder5"))?;
    let rounds = args.rounds.unwrap_or(5);
    if !(args.min_seconds.is_finite() && args.min_seconds >= 0.0) {
        return Err(tag(
            anyhow!(
                "--min-seconds {}: give a number of seconds, 0 or more",
                args.min_seconds
            ),
            Status::BadInput,
        ));
    }
    let paths: Vec<PathBuf> = match args.programs.len() {
        0 => MP_EXAMPLES
            .iter()
            .flat_map(|(name, _)| {
                ["rv32", "rv64"]
                    .map(|w| PathBuf::from(format!("programs/bin/mp/{name}-{w}-O2.elf")))
            })
            .collect(),
        _ => args.programs.clone(),
    };
    let mut programs = Vec::new();
    for path in &paths {
        let elf = load_elf(path)?;
        let shown = path.display().to_string();
        check_xlen(&core, &elf, &shown)?;
        let program = analyse(&elf, &shown)?;
        // Arguments after `--` are every program's; without them an
        // example gets its bench input.
        let stem = path.file_name().and_then(|s| s.to_str()).unwrap_or("");
        let prog_args: Vec<String> = match &args.program_args.args[..] {
            [] => MP_EXAMPLES
                .iter()
                .find(|(name, _)| stem.starts_with(&format!("{name}-rv")))
                .map(|(_, a)| a.iter().map(|s| s.to_string()).collect())
                .unwrap_or_default(),
            given => given.to_vec(),
        };
        programs.push(MpProgram {
            shown,
            args: prog_args,
            elf,
            program,
            trace: Vec::new(),
            instructions: [0; 2],
            makespans: [0; 3],
            calls: 0,
            reordered: 0,
            runs: [1; MP_STEPS.len()],
        });
    }
    let mut measured = [args.steps.is_empty(); MP_STEPS.len()];
    for s in &args.steps {
        measured[s.index()] = true;
    }
    // Calibration, unmeasured: every step once (the recording first, for
    // the replays), and the runs per measurement that make it last
    // --min-seconds.
    for p in &mut programs {
        for i in [
            MP_RECORD,
            MP_RECORD_NO_DCACHE,
            MP_RUN1,
            MP_RUN,
            MP_CYCLE,
            MP_FAST,
            MP_CONTROL,
        ] {
            let replayed = measured[MP_FAST] || measured[MP_CONTROL];
            if !(measured[i] || i == MP_RECORD && replayed) {
                p.runs[i] = 0;
                continue;
            }
            let s = measure(|| p.step(i, harts, &core))?;
            p.runs[i] = match measured[i] {
                true => (args.min_seconds / s.wall.max(1e-6))
                    .ceil()
                    .clamp(1.0, 10_000.0) as u32,
                // Recorded for the replays only.
                false => 0,
            };
        }
    }
    // Each round measures every program's steps, each program's starting
    // one step later than in the round before (see `main`).
    let mut samples: Vec<Vec<[Sample; MP_STEPS.len()]>> = vec![Vec::new(); programs.len()];
    for r in 0..rounds as usize {
        for (p, samples) in programs.iter_mut().zip(&mut samples) {
            let mut round = [Sample::default(); MP_STEPS.len()];
            for k in 0..MP_STEPS.len() {
                let i = (r + k) % MP_STEPS.len();
                if !measured[i] {
                    continue;
                }
                let runs = p.runs[i];
                round[i] = measure_runs(runs, || p.step(i, harts, &core))?;
            }
            samples.push(round);
        }
    }

    let reports = programs
        .iter()
        .zip(&samples)
        .map(|(p, samples)| {
            let fastest_of = |i: usize| fastest(samples.iter().map(|r| r[i].wall));
            let steps = (0..MP_STEPS.len())
                .map(|i| MpStepTimes {
                    step: MP_STEPS[i],
                    runs_per_measurement: p.runs[i],
                    fastest_seconds: fastest_of(i),
                    median_seconds: median(samples.iter().map(|r| r[i].wall).collect()),
                    median_cpu_seconds: samples
                        .iter()
                        .map(|r| r[i].cpu)
                        .collect::<Option<Vec<_>>>()
                        .map(median),
                })
                .collect();
            let [one, many] = p.instructions.map(|n| n as f64);
            let mips = |n: f64, i: usize| n / fastest_of(i) / 1e6;
            // MIPS on N harts over MIPS on one: the time ratio, scaled by
            // the instructions each ran.
            let t = ratio(samples, MP_RUN1, MP_RUN);
            let scale = many / one.max(1.0);
            MpProgramReport {
                program: p.shown.clone(),
                args: p.args.clone(),
                instructions_one_hart: p.instructions[0],
                instructions: p.instructions[1],
                makespan: p.makespans[0],
                fast_makespan: p.makespans[1],
                control_makespan: p.makespans[2],
                calls: p.calls,
                reordered: p.reordered,
                steps,
                mips_one_hart: mips(one, MP_RUN1),
                mips: mips(many, MP_RUN),
                cycle_level_mips: mips(many, MP_CYCLE),
                mips_over_one_hart: Ratio {
                    median: t.median * scale,
                    fastest: t.fastest * scale,
                    median_cpu: t.median_cpu.map(|c| c * scale),
                },
                record_over_run: ratio(samples, MP_RECORD, MP_RUN),
                record_no_dcache_over_run: ratio(samples, MP_RECORD_NO_DCACHE, MP_RUN),
                record_over_cycle_level: ratio(samples, MP_RECORD, MP_CYCLE),
                record_no_dcache_over_cycle_level: ratio(samples, MP_RECORD_NO_DCACHE, MP_CYCLE),
                cycle_level_over_fast: ratio(samples, MP_CYCLE, MP_FAST),
                cycle_level_over_control: ratio(samples, MP_CYCLE, MP_CONTROL),
            }
        })
        .collect();
    let report = MpBenchReport {
        harts,
        core: core.name.clone(),
        rounds,
        min_seconds: args.min_seconds,
        programs: reports,
    };
    print(&report, args.output.get())?;
    Ok(ExitCode::SUCCESS)
}
