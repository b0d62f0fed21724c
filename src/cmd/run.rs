//! `retrace run`: run a RISC-V ELF program in the functional simulator.
//!
//! The program's console output (semihosting) goes straight to retrace's
//! stdout/stderr, and its exit code becomes retrace's. retrace's own failures
//! use the statuses of [`crate::status`]: 123 denied host access, 124
//! runaway, 125 bad input, 126 program fault.
//!
//! With `--json`, the program's own stdout still comes first (it is part of
//! what the program did, and hiding it would change behaviour between modes);
//! the JSON object is always the *last line* of stdout, on a line of its own,
//! so `retrace run --json prog.elf | tail -n 1` gets it.
//!
//! With `--core NAME|FILE.toml` the run goes through the cycle-level engine
//! ([`retrace_sim::cycle`]): the same functional run, with every retired
//! instruction fed to the core's timing model. The report (cycles, CPI,
//! mispredictions, cache hits and misses, the hottest functions) goes to
//! stderr as a table so it never mixes with the program's own stdout, or
//! into the JSON object with `--json`.

use super::common::{hart_cores, hart_frequencies, load_elf, parse_mhz, thousands, ProgramArgs};
use crate::report::{csv_of, hex, Format, FormatArgs, Report};
use crate::status::{tag, Status};
use anyhow::anyhow;
use retrace_program::FunctionRanges;
use retrace_sim::clocked::{run_by_clock, ClockedHarts, HartTime};
use retrace_sim::cycle::{CycleObserver, FunctionCycles};
use retrace_sim::frequency::HartClock;
use retrace_sim::{Console, HostConfig, Machine, MachineConfig, Observer, RunResult, StopReason};
use retrace_timing::CoreModel;
use serde::Serialize;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Arguments of `retrace run`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
    retrace run prog.elf\n  \
    retrace run --stats prog.elf -- 1000 abc\n  \
    retrace run --format json --max-insns 1000000000 prog.elf\n  \
    retrace run --allow-dir data prog.elf -- data/input.txt\n  \
    retrace run --core rocket prog.elf\n  \
    retrace run --core my-core.toml --format json --functions 0 prog.elf\n  \
    retrace run --harts 4 programs/bin/mp/reduce-rv64-O2.elf")]
pub struct Args {
    /// The program: a RISC-V ELF executable (RV32 or RV64).
    pub program: PathBuf,
    /// Stop with status 124 after this many instructions (a trap taken with
    /// nothing retired since the previous one counts as one, so a handler
    /// that traps at once ends too).
    #[arg(long, value_name = "N")]
    pub max_insns: Option<u64>,
    /// Number of harts (1 to 64) sharing the memory; each starts at the
    /// entry with a0 = its mhartid, and they take turns of 10,000
    /// instructions — with --core, each on a core of its own, the hart
    /// with the earliest clock first, reporting the makespan and each
    /// hart's busy and wait cycles (docs/MULTIPROCESSOR.md).
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u8).range(1..=64))]
    pub harts: u8,
    /// Print instructions, wall time and MIPS to stderr after the run.
    #[arg(long)]
    pub stats: bool,
    /// Interpret every instruction: no translation of hot code to host
    /// code (docs/PERFORMANCE.md, "Functional engine and QEMU"). The
    /// results are the same; the interpreter is the reference, and slower.
    #[arg(long)]
    pub interpret: bool,
    /// Output format of the report: text (to stderr, with --stats or
    /// --core), or one JSON object (exit_code, stop, instructions,
    /// wall_seconds, mips, …) or CSV as the last lines of stdout.
    #[command(flatten)]
    pub output: FormatArgs,
    /// Let the program open, create, remove and rename files under DIR
    /// (repeatable). Without it the program cannot touch host files.
    #[arg(long, value_name = "DIR")]
    pub allow_dir: Vec<PathBuf>,
    /// Let the program read the host's clocks (by default time is a
    /// deterministic function of the instruction count, so runs repeat).
    #[arg(long)]
    pub host_time: bool,
    /// Time the run on this core (a preset name, or a TOML core
    /// description; `retrace cores` lists the presets) with the cycle-level
    /// engine, and report cycles, CPI, mispredictions, cache hits and misses
    /// and cycles per function (counted as `retrace profile` counts them,
    /// data-cache misses included where they happen; docs/TIMING.md,
    /// "Per-function cycles"). With --harts N: one --core for every hart,
    /// or N of them, one per hart in hart order (a heterogeneous system).
    #[arg(long, value_name = "NAME|FILE.toml")]
    pub core: Vec<String>,
    /// With --core: how many functions to report, hottest (most exclusive
    /// cycles) first; 0 reports every function that ran.
    #[arg(long, value_name = "N", default_value_t = 10, requires = "core")]
    pub functions: usize,
    /// With --harts N and --core: the clock frequency each hart starts at,
    /// in MHz (default 100); one for every hart, or N of them in hart
    /// order. A hart changes its own with the synchronisation API's
    /// set_hz; harts are ordered by time, and the report gives each
    /// hart's time and frequency changes (docs/MULTIPROCESSOR.md).
    #[arg(long, value_name = "MHZ", value_parser = parse_mhz, requires = "core")]
    pub mhz: Vec<u64>,
    /// With --core (one hart): also write the run's timeline to FILE as
    /// Chrome Trace Event JSON for Perfetto — the call stack over the
    /// core's cycles, a slice per function call, as `retrace estimate
    /// --timeline` writes the replay's (docs/REPORTS.md, "Timeline").
    #[arg(long, value_name = "FILE", requires = "core")]
    pub timeline: Option<PathBuf>,
    /// Keep about N of the longest calls in the timeline.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 100_000,
        requires = "timeline"
    )]
    pub timeline_spans: usize,
    #[command(flatten)]
    pub sets: super::common::CoreSets,
    #[command(flatten)]
    pub program_args: ProgramArgs,
}

/// Standard output that remembers its last byte, so the JSON line can start
/// on a line of its own.
struct TrackedStdout {
    last: Arc<AtomicU8>,
}

impl Write for TrackedStdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = std::io::stdout().write(buf)?;
        if n > 0 {
            self.last.store(buf[n - 1], Ordering::Relaxed);
        }
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stdout().flush()
    }
}

/// Entry point of `retrace run`.
pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    let elf = load_elf(&args.program)?;
    let shown = args.program.display().to_string();
    // The core is checked before anything runs: a bad --core is bad input,
    // not something to discover after a long run.
    let cores = match args.core.len() {
        0 => Vec::new(),
        _ => hart_cores(
            &args.core,
            &args.sets.set,
            usize::from(args.harts),
            &elf,
            &shown,
            "--core",
        )?,
    };
    let hz = hart_frequencies(&args.mhz, usize::from(args.harts))?;
    if args.timeline.is_some() && args.harts > 1 {
        return Err(tag(
            anyhow!("--timeline with --harts {}: the cycle-level engine writes one hart's; record the run (`retrace record --harts {}`) and give the trace to `retrace estimate --timeline`", args.harts, args.harts),
            Status::BadInput,
        ));
    }
    let timed = cores
        .first()
        .map(|core| (core.clone(), FunctionRanges::of(&elf)));
    let mut allow_dirs = Vec::new();
    for d in &args.allow_dir {
        let canon = d.canonicalize().map_err(|e| {
            tag(
                anyhow!(
                    "--allow-dir {}: {e}; give an existing directory",
                    d.display()
                ),
                Status::BadInput,
            )
        })?;
        if !canon.is_dir() {
            return Err(tag(
                anyhow!(
                    "--allow-dir {}: not a directory; give an existing directory",
                    d.display()
                ),
                Status::BadInput,
            ));
        }
        allow_dirs.push(canon);
    }
    let host = HostConfig {
        cmdline: HostConfig::qemu_cmdline(&shown, &args.program_args.args),
        allow_dirs,
        host_time: args.host_time,
    };
    let last = Arc::new(AtomicU8::new(b'\n'));
    let console = Console {
        stdout: Box::new(TrackedStdout { last: last.clone() }),
        stderr: Box::new(std::io::stderr()),
        stdin: Box::new(std::io::stdin()),
        is_tty: [
            std::io::stdin().is_terminal(),
            std::io::stdout().is_terminal(),
            std::io::stderr().is_terminal(),
        ],
    };
    let config = MachineConfig {
        harts: usize::from(args.harts),
        ..MachineConfig::default()
    };
    let mut machine = Machine::new(&elf, &config, host, console).map_err(|e| {
        tag(
            anyhow!("cannot load program {shown}: {e}; link it for RAM at 0x80000000 (128 MiB)"),
            Status::BadInput,
        )
    })?;
    machine.set_translation(!args.interpret);

    let progress = std::io::stderr().is_terminal();
    let harts = usize::from(args.harts);
    // Several harts on cores: one core per hart, harts run by their clocks.
    let mut clocked = match &timed {
        Some(_) if harts > 1 => {
            let models: Vec<&CoreModel> = (0..harts).map(|h| &cores[h % cores.len()]).collect();
            Some(
                ClockedHarts::heterogeneous(&models, &[])
                    .at_frequencies(&hz)
                    .reading_code(&elf),
            )
        }
        _ => None,
    };
    let mut cycle = timed
        .as_ref()
        .filter(|_| clocked.is_none())
        .map(|(core, funcs)| {
            let obs = CycleObserver::new(core, &funcs.ranges).reading_code(&elf);
            match args.timeline {
                Some(_) => obs.logging_spans(args.timeline_spans),
                None => obs,
            }
        });
    let start = Instant::now();
    let result = match (&mut cycle, &mut clocked) {
        (_, Some(obs)) => run_by_clock(&mut machine, args.max_insns, obs),
        (Some(obs), None) => {
            let r = run_with_progress(&mut machine, args.max_insns, progress, start, obs);
            obs.finish();
            r
        }
        (None, None) => run_with_progress(&mut machine, args.max_insns, progress, start, &mut ()),
    };
    let wall = start.elapsed().as_secs_f64();
    let mips = result.instructions as f64 / wall.max(1e-9) / 1e6;
    let _ = std::io::stdout().flush();

    if args.stats {
        eprintln!(
            "retrace: {} instructions in {wall:.3} s ({mips:.1} MIPS), {} blocks translated",
            result.instructions,
            machine.translated_blocks()
        );
    }
    let harts_report = match (&timed, &clocked) {
        (Some(_), Some(obs)) => {
            let clocks: Vec<&HartClock> = (0..harts).map(|h| obs.hart_clock(h)).collect();
            Some(HartsReport::new(&cores, &obs.times(), &clocks))
        }
        _ => None,
    };
    if let (Some(path), Some((core, funcs)), Some(obs)) = (&args.timeline, &timed, &cycle) {
        let spans = obs.span_log().expect("asked for with --timeline");
        let hz = args.mhz.first().copied().or(core.frequency_hz);
        let run = super::timeline::CoreRun {
            core: &core.name,
            hz: hz.unwrap_or(retrace_sim::frequency::DEFAULT_HZ),
            spans,
            cycles: obs.core().cycles(),
        };
        let title = format!("retrace run: {shown}");
        let events = super::timeline::one_hart_events(&title, &[run], &funcs.names)?;
        super::timeline::write(path, &events)?;
        if let Some(note) = super::timeline::left_out_note(&core.name, spans) {
            eprintln!("{note}");
        }
    }
    let timed = match (&timed, &cycle) {
        (Some((core, funcs)), Some(obs)) => {
            let hz = args.mhz.first().copied().or(core.frequency_hz);
            Some(TimedReport::new(core, funcs, obs, args.functions, hz))
        }
        _ => None,
    };
    let format = args.output.get();
    let report = RunReport {
        run: RunSummary {
            program: shown.clone(),
            exit_code: result.exit_code(),
            stop: result.stop.kind(),
            stop_detail: result.stop.to_string(),
            instructions: result.instructions,
            wall_seconds: wall,
            mips,
        },
        timed,
        harts: harts_report,
    };
    if format == Format::Text {
        if let Some(r) = &report.timed {
            eprint!("{}", r.text());
        }
        if let Some(r) = &report.harts {
            eprint!("{}", r.text());
        }
    } else {
        // The program's own output came first; the report starts on a
        // line of its own.
        let mut out = std::io::stdout().lock();
        if last.load(Ordering::Relaxed) != b'\n' {
            let _ = writeln!(out);
        }
        let _ = out.write_all(report.render(format)?.as_bytes());
        let _ = out.flush();
    }
    outcome(&shown, &result)
}

/// How the run went.
#[derive(Serialize)]
pub struct RunSummary {
    program: String,
    exit_code: Option<u32>,
    /// How the run ended (`exit`, `fault`, …).
    stop: &'static str,
    /// The same in words.
    stop_detail: String,
    instructions: u64,
    wall_seconds: f64,
    mips: f64,
}

/// What `retrace run` reports: the run, and with `--core` its timing.
#[derive(Serialize)]
pub struct RunReport {
    #[serde(flatten)]
    run: RunSummary,
    #[serde(flatten)]
    timed: Option<TimedReport>,
    /// With --core and several harts.
    #[serde(flatten)]
    harts: Option<HartsReport>,
}

impl Report for RunReport {
    fn text(&self) -> String {
        let mut text = self
            .timed
            .as_ref()
            .map(TimedReport::text)
            .unwrap_or_default();
        if let Some(h) = &self.harts {
            text += &h.text();
        }
        text
    }

    /// With --core the functions (one hart) or the harts; otherwise the
    /// run as one record.
    fn csv(&self) -> anyhow::Result<String> {
        match (&self.timed, &self.harts) {
            (Some(t), _) => csv_of(&t.functions),
            (None, Some(h)) => h.csv(),
            (None, None) => csv_of(&[&self.run]),
        }
    }
}

/// One hart's time on its core.
#[derive(Serialize)]
pub struct HartRow {
    hart: usize,
    /// Its core.
    core: String,
    instructions: u64,
    /// Cycles spent on its instructions.
    busy: u64,
    /// Cycles spent waiting in synchronisation calls.
    wait: u64,
    /// busy + wait: its cycle counter at the end.
    clock: u64,
    /// Its clock's frequency at the start and at the end, in MHz.
    start_mhz: f64,
    mhz: f64,
    /// Its time at the end: nanoseconds, and exactly in attoseconds.
    time_ns: f64,
    time_attos: u128,
    /// Each change of its frequency: at which value of its cycle counter,
    /// to what.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    frequency_changes: Vec<FrequencyChange>,
}

/// A change of a hart's clock frequency.
#[derive(Serialize)]
pub struct FrequencyChange {
    cycle: u64,
    mhz: f64,
}

/// What a cycle-level run of several harts reports (and, from a
/// recording, `retrace estimate` of a multi-hart trace): the makespan (the
/// latest hart's clock, and its time) and each hart's busy and wait
/// cycles, frequency and time.
#[derive(Serialize)]
pub struct HartsReport {
    /// The core of every hart, or the cores in hart order (`a, b, …`).
    pub core: String,
    /// The latest hart's clock, in cycles.
    pub makespan: u64,
    /// The latest hart's time.
    pub makespan_ns: f64,
    /// Per hart.
    pub harts: Vec<HartRow>,
}

/// Hertz as MHz.
fn mhz(hz: u64) -> f64 {
    hz as f64 / 1e6
}

impl HartsReport {
    /// From each hart's time and clock, hart `h` on `cores[h]` (or all on
    /// the one core given).
    pub fn new(cores: &[CoreModel], times: &[HartTime], clocks: &[&HartClock]) -> HartsReport {
        let name = |h: usize| cores[h % cores.len()].name.clone();
        let harts: Vec<HartRow> = times
            .iter()
            .zip(clocks)
            .enumerate()
            .map(|(hart, (t, c))| HartRow {
                hart,
                core: name(hart),
                instructions: t.instructions,
                busy: t.busy,
                wait: t.wait,
                clock: t.clock(),
                start_mhz: mhz(c.start_hz()),
                mhz: mhz(c.hz()),
                time_ns: t.time as f64 / 1e9,
                time_attos: t.time,
                frequency_changes: c
                    .changes()
                    .iter()
                    .map(|&(cycle, hz)| FrequencyChange {
                        cycle,
                        mhz: mhz(hz),
                    })
                    .collect(),
            })
            .collect();
        HartsReport {
            core: cores
                .iter()
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            makespan: harts.iter().map(|h| h.clock).max().unwrap_or(0),
            makespan_ns: harts.iter().map(|h| h.time_attos).max().unwrap_or(0) as f64 / 1e9,
            harts,
        }
    }

    /// Whether every hart ran at one frequency throughout.
    fn one_frequency(&self) -> bool {
        let first = self.harts.first().map_or(0.0, |h| h.start_mhz);
        self.harts
            .iter()
            .all(|h| h.start_mhz == first && h.frequency_changes.is_empty())
    }

    /// The makespan line and the table of harts (with their frequencies
    /// and times when they differ).
    pub fn text(&self) -> String {
        use std::fmt::Write as _;
        let mut out = format!(
            "retrace: {} {}, {} harts: ",
            if self.core.contains(", ") {
                "cores"
            } else {
                "core"
            },
            self.core,
            self.harts.len(),
        );
        let one = self.one_frequency();
        if one {
            let _ = writeln!(
                out,
                "makespan {} cycles ({} µs at {} MHz)",
                thousands(self.makespan),
                micros(self.makespan_ns),
                self.harts.first().map_or(0.0, |h| h.mhz)
            );
        } else {
            let _ = writeln!(
                out,
                "makespan {} µs (the latest hart's time; clocks at their own frequencies)",
                micros(self.makespan_ns)
            );
        }
        let _ = write!(
            out,
            "  {:>4} {:>10} {:>16} {:>16} {:>16} {:>16}",
            "hart", "core", "instructions", "busy", "wait", "clock"
        );
        if !one {
            let _ = write!(out, " {:>14} {:>16}", "MHz", "time µs");
        }
        out.push('\n');
        for h in &self.harts {
            let _ = write!(
                out,
                "  {:>4} {:>10} {:>16} {:>16} {:>16} {:>16}",
                h.hart,
                h.core,
                thousands(h.instructions),
                thousands(h.busy),
                thousands(h.wait),
                thousands(h.clock)
            );
            if !one {
                let changes = match h.frequency_changes.len() {
                    0 => format!("{}", h.mhz),
                    n => format!("{}→{} ({n}×)", h.start_mhz, h.mhz),
                };
                let _ = write!(out, " {:>14} {:>16}", changes, micros(h.time_ns));
            }
            out.push('\n');
        }
        out
    }
}

/// A hart's row in CSV: its frequency changes counted, not listed.
#[derive(Serialize)]
struct HartCsvRow<'a> {
    hart: usize,
    core: &'a str,
    instructions: u64,
    busy: u64,
    wait: u64,
    clock: u64,
    start_mhz: f64,
    mhz: f64,
    frequency_changes: usize,
    time_ns: f64,
}

impl HartsReport {
    /// One CSV row per hart.
    pub fn csv(&self) -> anyhow::Result<String> {
        let rows: Vec<HartCsvRow> = self
            .harts
            .iter()
            .map(|h| HartCsvRow {
                hart: h.hart,
                core: &h.core,
                instructions: h.instructions,
                busy: h.busy,
                wait: h.wait,
                clock: h.clock,
                start_mhz: h.start_mhz,
                mhz: h.mhz,
                frequency_changes: h.frequency_changes.len(),
                time_ns: h.time_ns,
            })
            .collect();
        csv_of(&rows)
    }
}

/// Nanoseconds as microseconds with three places (whole nanoseconds).
fn micros(ns: f64) -> String {
    format!("{:.3}", ns / 1e3)
}

/// Run in slices so a terminal can show progress; the slices do not change
/// the run (the machine resumes exactly where it stopped).
fn run_with_progress<O: Observer>(
    machine: &mut Machine,
    max: Option<u64>,
    progress: bool,
    start: Instant,
    obs: &mut O,
) -> RunResult {
    if !progress {
        return machine.run(max, obs);
    }
    const SLICE: u64 = 200_000_000;
    let spinner = crate::progress::Progress::spinner("running");
    loop {
        let done = machine
            .harts
            .iter()
            .map(|h| h.stats.instructions)
            .sum::<u64>();
        let left = max.map(|m| m - done.min(m));
        let slice = left.map_or(SLICE, |l| l.min(SLICE));
        let mut r = machine.run(Some(slice), obs);
        let ended =
            !matches!(r.stop, StopReason::Runaway { .. }) || left.is_some_and(|l| l <= SLICE);
        if ended {
            spinner.finish();
            if let (StopReason::Runaway { limit }, Some(m)) = (&mut r.stop, max) {
                *limit = m;
            }
            return r;
        }
        let secs = start.elapsed().as_secs_f64();
        spinner.message(format!(
            "running: {} M instructions, {:.0} MIPS",
            r.instructions / 1_000_000,
            r.instructions as f64 / secs.max(1e-9) / 1e6
        ));
    }
}

/// The exit status for a finished run, or the error describing how it ended.
fn outcome(prog: &str, r: &RunResult) -> anyhow::Result<ExitCode> {
    let err = |status: Status, what: String| Err(tag(anyhow!(what), status));
    match &r.stop {
        StopReason::Exit { code } => Ok(ExitCode::from((*code & 0xff) as u8)),
        StopReason::Fault(f) => err(
            Status::Fault,
            format!("program {prog} faulted: {f}; no trap handler was installed (mtvec is 0)"),
        ),
        StopReason::Runaway { limit } => err(
            Status::Runaway,
            format!("program {prog} still running after {limit} instructions (--max-insns); raise the limit or look for an endless loop"),
        ),
        // Only a host file can be allowed (`--allow-dir`); a host command
        // (SYS_SYSTEM) never is, and its message says so.
        StopReason::Denied { message, .. } if message.contains("host file") => err(
            Status::Denied,
            format!("program {prog} was stopped: {}; allow a directory with --allow-dir DIR", r.stop),
        ),
        StopReason::Denied { .. } => err(
            Status::Denied,
            format!("program {prog} was stopped: {}", r.stop),
        ),
        StopReason::Deadlock(_) => err(
            Status::Fault,
            format!("program {prog} stopped: {}; see docs/MULTIPROCESSOR.md", r.stop),
        ),
        StopReason::Sync { .. } => err(
            Status::Fault,
            format!("program {prog} made a bad synchronisation call: {}", r.stop),
        ),
        other => err(Status::Fault, format!("program {prog} stopped: {other}")),
    }
}

/// One function's cycles on the core.
#[derive(Serialize)]
pub struct FunctionRow {
    name: String,
    #[serde(serialize_with = "hex")]
    entry: u64,
    calls: u64,
    inclusive: u64,
    exclusive: u64,
    instructions: u64,
}

/// What a cycle-level run reports. Caches the core does not have are
/// `null` rather than 0 hits, so a reader cannot mistake "no cache" for "a
/// cache that was never used".
#[derive(Serialize)]
pub struct TimedReport {
    core: String,
    cycles: u64,
    cpi: f64,
    branches: u64,
    /// Null on a core where a misprediction costs nothing (no prediction).
    mispredicts: Option<u64>,
    /// Null on a core without a return-address stack.
    return_mispredicts: Option<u64>,
    icache_hits: Option<u64>,
    icache_misses: Option<u64>,
    dcache_hits: Option<u64>,
    dcache_misses: Option<u64>,
    /// The core's clock in MHz (`--mhz`, else the core description's
    /// `frequency_mhz`); null when neither gives one.
    mhz: Option<f64>,
    /// `cycles` at that clock, in seconds.
    target_seconds: Option<f64>,
    /// The reported functions, hottest first.
    functions: Vec<FunctionRow>,
    /// Functions that ran but are not in `functions`.
    functions_omitted: usize,
    #[serde(skip)]
    instructions: u64,
}

impl TimedReport {
    fn new(
        core: &CoreModel,
        funcs: &FunctionRanges,
        obs: &CycleObserver,
        top: usize,
        hz: Option<u64>,
    ) -> TimedReport {
        let mut ran: Vec<(String, u64, FunctionCycles)> = obs
            .per_function()
            .iter()
            .enumerate()
            .filter(|(_, f)| f.instructions > 0 || f.calls > 0)
            .map(|(i, f)| (funcs.names[i].clone(), funcs.ranges[i].0, *f))
            .collect();
        ran.sort_by(|a, b| {
            (b.2.exclusive, b.2.inclusive)
                .cmp(&(a.2.exclusive, a.2.inclusive))
                .then(a.1.cmp(&b.1))
        });
        let keep = if top == 0 {
            ran.len()
        } else {
            top.min(ran.len())
        };
        let omitted = ran.len() - keep;
        ran.truncate(keep);
        let s = obs.core().stats();
        let cycles = obs.core().cycles();
        let ic = core.icache.is_some();
        let dc = core.dcache.is_some();
        let (mhz, target_seconds) = super::common::target_time(cycles, hz);
        TimedReport {
            core: core.name.clone(),
            mhz,
            target_seconds,
            cycles,
            cpi: cycles as f64 / s.instructions.max(1) as f64,
            branches: s.branches,
            mispredicts: super::common::predicts(core).then_some(s.mispredicts),
            return_mispredicts: (core.branch.ras_depth > 0).then_some(s.return_mispredicts),
            icache_hits: ic.then_some(s.icache_hits),
            icache_misses: ic.then_some(s.icache_misses),
            dcache_hits: dc.then_some(s.dcache_hits),
            dcache_misses: dc.then_some(s.dcache_misses),
            functions: ran
                .into_iter()
                .map(|(name, entry, f)| FunctionRow {
                    name,
                    entry,
                    calls: f.calls,
                    inclusive: f.inclusive,
                    exclusive: f.exclusive,
                    instructions: f.instructions,
                })
                .collect(),
            functions_omitted: omitted,
            instructions: s.instructions,
        }
    }

    fn text(&self) -> String {
        use std::fmt::Write as _;
        let pct = |n: u64, of: u64| n as f64 * 100.0 / of.max(1) as f64;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "retrace: core {}: {} cycles, {} instructions, CPI {:.3}{}",
            self.core,
            thousands(self.cycles),
            thousands(self.instructions),
            self.cpi,
            match (self.mhz, self.target_seconds) {
                (Some(mhz), Some(t)) => {
                    format!("; {} at {mhz} MHz", super::common::duration_text(t))
                }
                _ => String::new(),
            }
        );
        let mispredicted = match self.mispredicts {
            Some(m) => format!(
                "mispredicted {} ({:.2}%)",
                thousands(m),
                pct(m, self.branches)
            ),
            None => "no prediction in this core".to_string(),
        };
        let returns = match self.return_mispredicts {
            Some(r) => format!("return mispredictions {}", thousands(r)),
            None => "no return-address stack".to_string(),
        };
        let _ = writeln!(
            out,
            "  branches {}, {mispredicted}; {returns}",
            thousands(self.branches)
        );
        for (name, hits, misses) in [
            ("I-cache", self.icache_hits, self.icache_misses),
            ("D-cache", self.dcache_hits, self.dcache_misses),
        ] {
            match (hits, misses) {
                (Some(hits), Some(misses)) => {
                    let _ = writeln!(
                        out,
                        "  {name}: {} hits, {} misses ({:.3}% miss rate)",
                        thousands(hits),
                        thousands(misses),
                        pct(misses, hits + misses)
                    );
                }
                _ => {
                    let _ = writeln!(out, "  {name}: none in this core");
                }
            }
        }
        if self.functions.is_empty() {
            return out;
        }
        let _ = writeln!(
            out,
            "  {:<28} {:>12} {:>16} {:>7} {:>16} {:>7}",
            "function", "calls", "inclusive", "%", "exclusive", "%"
        );
        for f in &self.functions {
            let _ = writeln!(
                out,
                "  {:<28} {:>12} {:>16} {:>6.2}% {:>16} {:>6.2}%",
                f.name,
                thousands(f.calls),
                thousands(f.inclusive),
                pct(f.inclusive, self.cycles),
                thousands(f.exclusive),
                pct(f.exclusive, self.cycles)
            );
        }
        if self.functions_omitted > 0 {
            let _ = writeln!(
                out,
                "  ({} more functions ran; --functions 0 shows all)",
                self.functions_omitted
            );
        }
        out
    }
}
