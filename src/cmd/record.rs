//! `retrace record`: run a program once in the functional engine and write
//! its branch history to a trace file. The program's console output passes
//! through; retrace exits 0 when the recording is complete (the program's
//! own exit code is reported, and kept in the trace).

use super::common::{
    check_trace, hart_cores, host, load_core, load_elf, preset_dcaches, replay_error, thousands,
    ProgramArgs,
};
use crate::progress::{CountingWriter, Progress};
use crate::report::{csv_of, print, Format, FormatArgs, Report};
use crate::status::{tag, Status};
use anyhow::anyhow;
use retrace_estimate::aggregate::build::{build_plan, BuiltPlan, Gates};
use retrace_estimate::aggregate::Level;
use retrace_estimate::compare::add_geometry;
use retrace_sim::clocked::Schedule;
use retrace_sim::record::{record_run_harts, record_run_planned, RecordError};
use retrace_sim::{Console, Observer, StopReason};
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Arguments of `retrace record`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
    retrace record prog.elf -o prog.rtrace\n  \
    retrace record sort-rv32-O2.elf -o sort.rtrace -- 20000\n  \
    retrace estimate sort-rv32-O2.elf sort.rtrace --core picorv32 --core rocket\n  \
    retrace record --aggregate loops matmul-rv32-O2.elf -o matmul.rtrace\n  \
    retrace record --aggregate if-else --profile plain.rtrace crc32-rv32-O2.elf -o crc.rtrace\n  \
    retrace record --aggregate all dhry-rv32-O2.elf -o dhry.rtrace\n  \
    retrace record --harts 4 --schedule-core inorder5 workq-rv64-O2.elf -o workq.rtrace")]
pub struct Args {
    /// The program: a RISC-V ELF executable.
    pub program: PathBuf,
    /// Where to write the trace.
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
    /// Stop with status 124 after this many instructions (a trap taken with
    /// nothing retired since the previous one counts as one, so a handler
    /// that traps at once ends too).
    #[arg(long, value_name = "N")]
    pub max_insns: Option<u64>,
    /// Do not measure data-cache miss rates (by default the recorder measures
    /// the geometries of the built-in cores, for `estimate`'s data-cache term).
    #[arg(long, conflicts_with = "dcache")]
    pub no_dcache: bool,
    /// Also measure this data-cache geometry, SIZE:WAYS:LINE in bytes (e.g.
    /// 32768:8:64), for a core of your own. Repeatable.
    #[arg(long, value_name = "SIZE:WAYS:LINE", value_parser = parse_geometry)]
    pub dcache: Vec<retrace_timing::CacheModel>,
    /// Aggregate regions of the program (US patent 8,448,140): `loops` records, for
    /// every loop whose body has no other branch and no call, each
    /// execution's trip count instead of one bit per pass. The estimate
    /// from the trace is the same, cycle for cycle (docs/AGGREGATION.md).
    /// `if-else` also records nothing for branches whose two ways join by
    /// the next branch: the replay takes the way the profile saw more often
    /// and the estimate adds the probability-weighted difference (lossy).
    /// `nested` also collapses loop nests with one way out and no call into
    /// their mean time; `functions` (or `all`) also collapses every
    /// function that neither recurses nor makes an environment call into
    /// its mean time per call (lossy: the means come from a profile run).
    #[arg(long, value_enum, default_value = "none", value_name = "LEVEL")]
    pub aggregate: AggregateArg,
    /// For the lossy levels: a plain (or `loops`) trace of an earlier run
    /// of this program, whose branch probabilities and region times the
    /// plan uses. By default the program is run once more first, without
    /// its console.
    #[arg(long, value_name = "TRACE")]
    pub profile: Option<PathBuf>,
    /// For the lossy levels: keep every branch whose if-else bias
    /// `|T_true − T_false| × executions` (cycles on `--bias-core`) is at or
    /// above this as a recorded branch. By default every candidate is
    /// aggregated.
    #[arg(long, value_name = "CYCLES", value_parser = super::common::parse_threshold)]
    pub if_else_bias: Option<f64>,
    /// For `--aggregate nested` and up: keep every loop nest whose loop
    /// bias `Var(trip counts) × executions × cycles per pass` (on
    /// `--bias-core`) is at or above this recorded. By default every
    /// candidate nest collapses.
    #[arg(long, value_name = "CYCLES", value_parser = super::common::parse_threshold)]
    pub loop_bias: Option<f64>,
    /// The core whose static cycles the bias gates weigh.
    #[arg(long, value_name = "NAME|FILE", default_value = "inorder5")]
    pub bias_core: String,
    /// Output format of the recording's figures: text (on stderr), or one
    /// JSON object or CSV record as the last lines of stdout.
    #[command(flatten)]
    pub format: FormatArgs,
    /// Record a run on this many harts (1 to 64; docs/MULTIPROCESSOR.md):
    /// one branch history per hart, and each hart's synchronisation calls.
    /// `retrace estimate` replays them together, a core per hart.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=64))]
    pub harts: u8,
    /// With --harts: run the harts in the order of this core's clocks, as
    /// `retrace run --harts N --core` does, instead of fixed turns; a replay
    /// on the same core is then exact. Repeat once per hart for a
    /// heterogeneous system.
    #[arg(long, value_name = "NAME|FILE.toml")]
    pub schedule_core: Vec<String>,
    /// With --schedule-core: the clock frequency each hart starts at, in
    /// MHz (default 100), as `retrace run --mhz`; one for every hart, or
    /// one per hart. Give the replay the same (`retrace estimate --mhz`).
    #[arg(long, value_name = "MHZ", value_parser = super::common::parse_mhz, requires = "schedule_core")]
    pub mhz: Vec<u64>,
    #[command(flatten)]
    pub program_args: ProgramArgs,
}

/// `--aggregate` levels.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum AggregateArg {
    /// One bit per conditional branch.
    None,
    /// Loops without inner branches or calls: trip counts, exact.
    Loops,
    /// Loops, and if-else branches by probability (lossy).
    IfElse,
    /// As if-else, and loop nests by their mean time (lossy).
    Nested,
    /// As nested, and functions by their mean time per call (lossy).
    Functions,
    /// Everything: the same as `functions`.
    All,
}

impl From<AggregateArg> for Level {
    fn from(a: AggregateArg) -> Level {
        match a {
            AggregateArg::None => Level::None,
            AggregateArg::Loops => Level::Loops,
            AggregateArg::IfElse => Level::IfElse,
            AggregateArg::Nested => Level::Nested,
            AggregateArg::Functions | AggregateArg::All => Level::Functions,
        }
    }
}

/// What `retrace record` reports.
#[derive(Serialize)]
pub struct RecordReport {
    /// The trace file written.
    pub trace: String,
    /// The program's exit code.
    pub exit_code: u8,
    /// Instructions recorded.
    pub instructions: u64,
    /// Conditional branches recorded.
    pub branches: u64,
    /// Size of the trace file.
    pub trace_bytes: u64,
    /// Size of the streams before compression.
    pub raw_bytes: u64,
    /// Bits per branch before compression.
    pub bits_per_branch_raw: f64,
    /// Bits per branch in the file.
    pub bits_per_branch_compressed: f64,
    /// Wall seconds of the recording.
    pub wall_seconds: f64,
    /// Millions of instructions per second.
    pub mips: f64,
    /// The aggregation level (`none`, `loops`).
    pub aggregate: String,
    /// Loops aggregated by the plan.
    pub aggregated_loops: usize,
    /// Their continue tests executed: branches counted, not recorded.
    pub aggregated_tests: u64,
    /// Runs `(loop, count, repeats)` written instead.
    pub loop_runs: u64,
    /// Fixed if-else sites (lossy aggregation).
    pub fixed_sites: usize,
    /// Their executions: branches not recorded.
    pub fixed_tests: u64,
    /// Candidates the if-else bias gate kept recorded.
    pub gated_sites: usize,
    /// Loop nests collapsed by their mean time.
    pub collapsed_nests: usize,
    /// Functions collapsed by their mean time per call.
    pub collapsed_functions: usize,
    /// Nests the loop bias gate kept recorded.
    pub gated_nests: usize,
    /// Extents of collapsed regions the run went through (nothing
    /// recorded for them).
    pub collapsed_extents: u64,
    /// Harts recorded.
    pub harts: usize,
    /// The cores whose clocks scheduled the harts (empty: fixed turns).
    pub schedule: String,
}

impl Report for RecordReport {
    fn text(&self) -> String {
        format!(
            "recorded {} instructions (exit code {}), {} branches into {} ({} bytes: {:.3} bits/branch raw, {:.3} compressed) in {:.2} s\n",
            thousands(self.instructions),
            self.exit_code,
            thousands(self.branches),
            self.trace,
            thousands(self.trace_bytes),
            self.bits_per_branch_raw,
            self.bits_per_branch_compressed,
            self.wall_seconds
        ) + &match (self.harts, self.schedule.as_str()) {
            (1, "") => String::new(),
            (n, "") => format!("{n} harts, in fixed turns of 10,000 instructions\n"),
            (n, cores) => format!("{n} harts, in the order of the clocks of {cores}\n"),
        } + &if self.aggregate == "none" {
            String::new()
        } else {
            format!(
                "aggregated {} loops: {} continue tests counted into {} runs instead of recorded\n",
                self.aggregated_loops,
                thousands(self.aggregated_tests),
                thousands(self.loop_runs)
            ) + &if self.fixed_sites > 0 || self.gated_sites > 0 {
                format!(
                    "fixed {} if-else sites by probability: {} branches not recorded ({} sites kept recorded by the bias gate)\n",
                    self.fixed_sites,
                    thousands(self.fixed_tests),
                    self.gated_sites
                )
            } else {
                String::new()
            } + &if self.collapsed_nests + self.collapsed_functions + self.gated_nests > 0 {
                format!(
                    "collapsed {} loop nests and {} functions by their mean time: {} extents not recorded ({} nests kept recorded by the loop bias gate)\n",
                    self.collapsed_nests,
                    self.collapsed_functions,
                    thousands(self.collapsed_extents),
                    self.gated_nests
                )
            } else {
                String::new()
            }
        }
    }

    fn csv(&self) -> anyhow::Result<String> {
        csv_of(&[self])
    }
}

/// Parse `SIZE:WAYS:LINE` into a cache geometry (validated like a core
/// description's cache).
fn parse_geometry(text: &str) -> Result<retrace_timing::CacheModel, String> {
    let parts: Vec<&str> = text.split(':').collect();
    let [size, ways, line] = parts[..] else {
        return Err(format!(
            "`{text}`: give SIZE:WAYS:LINE in bytes, e.g. 16384:4:64"
        ));
    };
    let toml = format!(
        "name = \"dcache\"\nxlen = [32]\n[dcache]\nsize = {size}\nways = {ways}\nline = {line}\nmiss_penalty = 1\n"
    );
    retrace_timing::CoreModel::from_toml(&toml, "--dcache")
        .map_err(|e| format!("`{text}`: {e}"))?
        .dcache
        .ok_or_else(|| format!("`{text}`: not a cache geometry"))
}

/// Stops the run once a signal has asked for it: polled by the engine
/// between blocks, so the recording ends within microseconds of Ctrl-C.
struct StopOnSignal<'a> {
    signal: &'a AtomicUsize,
    /// The recording's spinner, and the polls since it was last told.
    progress: &'a Progress,
    polls: u32,
}

impl Observer for StopOnSignal<'_> {
    // Only `keep_going`: no hook on any instruction, so the recording may
    // run in host code (polled between its stretches then, every few
    // thousand instructions).
    const RETIRE: bool = false;
    const HOST_CODE: bool = true;
    fn keep_going(&mut self) -> bool {
        // Polled between blocks (interpreted) or between stretches of host
        // code (thousands of instructions): every 256th poll, the spinner
        // may show (the trace's bytes move it only once a megabyte). The
        // check is a clock read, so this stays far below the run's cost
        // either way.
        self.polls = self.polls.wrapping_add(1);
        if self.polls & 0xff == 0 {
            self.progress.poll();
        }
        self.signal.load(Ordering::Relaxed) == 0
    }
}

/// SIGINT and SIGTERM stop the recording instead of the process: the first
/// sets the returned number to the signal's; a second ends the process at
/// once, with the shell's status for it.
fn stop_on_signals() -> std::io::Result<Arc<AtomicUsize>> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let signal = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(AtomicBool::new(false));
    for sig in [SIGINT, SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(sig, 128 + sig, Arc::clone(&seen))?;
        signal_hook::flag::register(sig, Arc::clone(&seen))?;
        signal_hook::flag::register_usize(sig, Arc::clone(&signal), sig as usize)?;
    }
    Ok(signal)
}

/// Entry point of `retrace record`.
///
/// Interrupted (SIGINT, SIGTERM), it stops the run, writes nothing and
/// leaves a trace already at the output path as it was: a trace of part of
/// a run is never left where a whole one is expected.
pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    let signal = stop_on_signals().map_err(|e| anyhow!("cannot handle signals: {e}"))?;
    super::common::check_output_name(&args.output, "trace")?;
    let elf = load_elf(&args.program)?;
    let shown = args.program.display().to_string();
    // The trace is written to a temporary file beside the target and
    // renamed over it only once it is whole: a failed or interrupted
    // recording leaves the previous trace as it was, and two recordings to
    // one path cannot interleave (the last to finish wins).
    let cannot_create = |e: std::io::Error| {
        tag(
            anyhow!("cannot create trace {}: {e}", args.output.display()),
            Status::BadInput,
        )
    };
    let dir = match args.output.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    let mut builder = tempfile::Builder::new();
    builder.prefix(".retrace-record-").suffix(".rtrace.partial");
    // As a file created in place would be (0666 less the umask), not the
    // private 0600 of a temporary file.
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    let partial = builder.tempfile_in(dir).map_err(cannot_create)?;
    let file = partial.as_file().try_clone().map_err(cannot_create)?;
    let mut header = retrace_trace::Header::new(0, 32, 1);
    // The path as given: without arguments it is the command line the
    // program sees (QEMU's `-kernel` fallback), which `estimate --check`
    // must give it again whatever the path is spelled there.
    header.program = shown.clone();
    header.args = args.program_args.args.clone();
    let mut dcaches = if args.no_dcache {
        Vec::new()
    } else {
        preset_dcaches()
    };
    for g in &args.dcache {
        add_geometry(&mut dcaches, *g);
    }
    let console = Console {
        stdout: Box::new(std::io::stdout()),
        stderr: Box::new(std::io::stderr()),
        stdin: Box::new(std::io::stdin()),
        is_tty: [false; 3],
    };
    let level = Level::from(args.aggregate);
    if level < Level::IfElse && (args.profile.is_some() || args.if_else_bias.is_some()) {
        // A usage error, as clap reports one (status 2).
        clap::Error::raw(
            clap::error::ErrorKind::ArgumentConflict,
            "--profile and --if-else-bias apply to the lossy levels only (--aggregate if-else, nested, functions, all)\n",
        )
        .exit();
    }
    if level < Level::Nested && args.loop_bias.is_some() {
        clap::Error::raw(
            clap::error::ErrorKind::ArgumentConflict,
            "--loop-bias applies to --aggregate nested, functions and all only\n",
        )
        .exit();
    }
    let harts = usize::from(args.harts);
    if (harts > 1 || !args.schedule_core.is_empty()) && level != Level::None {
        clap::Error::raw(
            clap::error::ErrorKind::ArgumentConflict,
            "--aggregate applies to one hart: record several harts with --aggregate none\n",
        )
        .exit();
    }
    let built = match level {
        Level::None => BuiltPlan::default(),
        _ => {
            let program = retrace_program::Program::analyse(&elf).map_err(|e| {
                tag(
                    anyhow!("cannot analyse {shown} for --aggregate: {e}"),
                    Status::BadInput,
                )
            })?;
            lossy_plan(&args, level, &elf, &program, &shown)?
        }
    };
    let schedule = match args.schedule_core.len() {
        0 => Vec::new(),
        _ => hart_cores(
            &args.schedule_core,
            &[],
            harts,
            &elf,
            &shown,
            "--schedule-core",
        )?,
    };
    let hz = super::common::hart_frequencies(&args.mhz, harts)?;
    let start = Instant::now();
    let progress = Progress::spinner("recording");
    let rec = if harts > 1 || !schedule.is_empty() {
        let models: Vec<&retrace_timing::CoreModel> = match schedule.len() {
            0 => Vec::new(),
            n => (0..harts).map(|h| &schedule[h % n]).collect(),
        };
        record_run_harts(
            &elf,
            host(&shown, &args.program_args.args),
            console,
            args.max_insns,
            std::io::BufWriter::with_capacity(
                1 << 20,
                CountingWriter::new(file, progress.clone(), "recording"),
            ),
            header,
            &dcaches,
            &mut StopOnSignal {
                signal: &signal,
                progress: &progress,
                polls: 0,
            },
            harts,
            (!schedule.is_empty()).then_some(Schedule {
                cores: &models,
                hz: &hz,
            }),
        )
    } else {
        record_run_planned(
            &elf,
            host(&shown, &args.program_args.args),
            console,
            args.max_insns,
            std::io::BufWriter::with_capacity(
                1 << 20,
                CountingWriter::new(file, progress.clone(), "recording"),
            ),
            header,
            &dcaches,
            &mut StopOnSignal {
                signal: &signal,
                progress: &progress,
                polls: 0,
            },
            &built.plan,
        )
    };
    progress.finish();
    let wall = start.elapsed().as_secs_f64();
    let signal = signal.load(Ordering::Relaxed);
    if signal != 0 {
        // `partial` is removed when dropped; the target is untouched.
        let name = if signal == signal_hook::consts::SIGINT as usize {
            "SIGINT"
        } else {
            "SIGTERM"
        };
        return Err(tag(
            anyhow!(
                "recording of {shown} interrupted by {name}: no trace written ({} is as it was); run it again to the end, or bound it with --max-insns",
                args.output.display()
            ),
            Status::Interrupted(signal as u8),
        ));
    }
    let rec = match rec {
        Ok(r) => r,
        Err(e) => {
            // `partial` is removed when dropped; the target is untouched.
            let status = match e {
                RecordError::Unsupported(_) => Status::Fault,
                _ => Status::BadInput,
            };
            return Err(tag(anyhow!("cannot record {shown}: {e}"), status));
        }
    };
    // The trace is whole (a run that faulted or ran away is recorded up to
    // where it stopped, and says so below): put it in place.
    partial.persist(&args.output).map_err(|e| {
        tag(
            anyhow!("cannot write trace {}: {}", args.output.display(), e.error),
            Status::BadInput,
        )
    })?;
    let exit = match &rec.run.stop {
        StopReason::Exit { code } => *code as u8,
        StopReason::Runaway { limit } => {
            return Err(tag(
                anyhow!(
                    "{shown} ran past --max-insns {limit}; the trace {} is complete up to there",
                    args.output.display()
                ),
                Status::Runaway,
            ))
        }
        other => {
            return Err(tag(
                anyhow!(
                    "{shown} stopped: {other}; the trace {} records the run up to there",
                    args.output.display()
                ),
                Status::Fault,
            ))
        }
    };
    let branches = rec.branches.max(1) as f64;
    let nests = built
        .plan
        .regions
        .iter()
        .filter(|r| {
            matches!(
                r.kind,
                retrace_trace::protocol::regions::RegionKind::Nest { .. }
            )
        })
        .count();
    let report = RecordReport {
        trace: args.output.display().to_string(),
        exit_code: exit,
        instructions: rec.run.instructions,
        branches: rec.branches,
        trace_bytes: rec.trace.file_bytes,
        raw_bytes: rec.trace.raw_bytes,
        bits_per_branch_raw: rec.trace.raw_bytes as f64 * 8.0 / branches,
        bits_per_branch_compressed: rec.trace.file_bytes as f64 * 8.0 / branches,
        wall_seconds: wall,
        mips: rec.run.instructions as f64 / wall.max(1e-9) / 1e6,
        aggregate: level.name().to_string(),
        aggregated_loops: built.plan.loops.len(),
        aggregated_tests: rec.loops.tests,
        loop_runs: rec.loops.runs,
        fixed_sites: built.plan.fixed.len(),
        fixed_tests: rec.loops.fixed,
        gated_sites: built.ifelse.gated,
        collapsed_nests: nests,
        collapsed_functions: built.plan.regions.len() - nests,
        gated_nests: built.collapse.gated,
        collapsed_extents: rec.loops.collapsed,
        harts,
        schedule: schedule
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
    };
    match args.format.get() {
        // The program's own output owns stdout; the summary goes to stderr.
        Format::Text => eprint!("{}", report.text()),
        other => print(&report, other)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// The plan of an aggregation level: for the lossy levels, from
/// `--profile`'s trace, or from a run made for it now.
fn lossy_plan(
    args: &Args,
    level: Level,
    elf: &retrace_program::Elf,
    program: &retrace_program::Program,
    shown: &str,
) -> anyhow::Result<BuiltPlan> {
    use retrace_estimate::aggregate::ladder::branch_counts;
    let bad = |e: anyhow::Error| tag(e, Status::BadInput);
    let gate = load_core(&args.bias_core)?;
    let gates = Gates {
        if_else: args.if_else_bias,
        loops: args.loop_bias,
    };
    if level < Level::IfElse {
        return build_plan::<[u8]>(program, level, None, &gate, gates)
            .map_err(|e| bad(anyhow!("{e}")));
    }
    let plain = match &args.profile {
        Some(p) => {
            check_trace(p, elf, shown)?;
            std::fs::read(p)
                .map_err(|e| bad(anyhow!("cannot read profile {}: {e}", p.display())))?
        }
        None => {
            let mut trace = Vec::new();
            let rec = retrace_sim::record::record_run_watched(
                elf,
                host(shown, &args.program_args.args),
                Console::null(),
                args.max_insns,
                &mut trace,
                retrace_trace::Header::new(0, 32, 1),
                &[],
                &mut (),
            )
            .map_err(|e| bad(anyhow!("cannot profile {shown} for --aggregate: {e}")))?;
            if !matches!(rec.run.stop, StopReason::Exit { .. }) {
                return Err(tag(
                    anyhow!(
                        "the profile run of {shown} for --aggregate stopped: {}; a lossy plan needs a run that reaches its end",
                        rec.run.stop
                    ),
                    Status::Fault,
                ));
            }
            trace
        }
    };
    let shown_profile = args
        .profile
        .as_deref()
        .unwrap_or(std::path::Path::new("(profile run)"));
    {
        let mut r = retrace_trace::TraceReader::new(&plain[..])
            .map_err(|e| bad(anyhow!("profile {}: {e}", shown_profile.display())))?;
        let lossy = retrace_trace::protocol::loops::LoopDecoder::read_plan(&mut r, 0)
            .map_err(|e| bad(anyhow!("profile {}: {e}", shown_profile.display())))?
            .is_some_and(|d| !d.fixed().is_empty() || !d.regions().is_empty());
        if lossy {
            return Err(bad(anyhow!(
                "profile {} was recorded with a lossy --aggregate level: it holds no outcomes for what that level aggregated; give a plain or --aggregate loops trace",
                shown_profile.display()
            )));
        }
    }
    let counts = branch_counts(program, &plain).map_err(|e| match e {
        retrace_estimate::aggregate::ladder::LadderError::Pipeline(
            retrace_estimate::compare::CompareError::Replay(e),
        ) => replay_error(shown_profile, e),
        e => bad(anyhow!("profile {}: {e}", shown_profile.display())),
    })?;
    // The thresholds were checked when parsed.
    build_plan(program, level, Some((&plain[..], &counts)), &gate, gates).map_err(|e| match e {
        retrace_estimate::aggregate::collapse::PlanError::Profile(e) => {
            replay_error(shown_profile, e)
        }
        e => bad(anyhow!("{e}")),
    })
}
