//! `retrace clock …`: JP5267566B2's clock correction — many processors' cycle
//! counters on one clock. The work is in `retrace-clock`; this module reads
//! arguments and files, and renders typed reports (`crate::report`).
//!
//! `simulate`, `probe` and `bench` print their results like every other
//! command: `--format text|json|csv` (`--json` is the hidden spelling of
//! `--format json`). `clock correct` is the exception, because its output
//! is the corrected events: its `--format csv|json|chrome` is the format
//! of the events file written to `-o`. Its summary is chosen with
//! `--summary text|json` instead: text goes to standard error (so `-o -`
//! can put the events on standard output), JSON to standard output (then
//! the events must go to a file). `--json` is kept there as the hidden
//! spelling of `--summary json`.

use crate::report::{csv_of, emit, FormatArgs, Report};
use crate::status::{Status, WithStatus};
use anyhow::{anyhow, bail, Context};
use retrace_clock::formats::{
    self, BadRows, Corrected, FrequencyPoint, OutputFormat, ReadOptions, Skipped,
};
use retrace_clock::probe::Pinning;
use retrace_clock::simulate::{self, Scenario};
use retrace_clock::{
    probe, workload, Corrector, CounterWidth, DriftModel, OffsetEstimator, OffsetTrack,
    ProcessorId, ATTOS_PER_NANOSECOND,
};
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `clock correct --format`: how the corrected events are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum EventsFormat {
    /// processor,counter,time_ns,payload rows.
    Csv,
    /// A JSON array of events.
    Json,
    /// Chrome Trace Event JSON (Perfetto opens it).
    Chrome,
}

/// `clock correct --summary`: how the summary is printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SummaryFormat {
    /// Sentences on standard error.
    Text,
    /// One JSON value on standard output (the events must go to a file).
    Json,
}

/// `--estimator`: how the rounds of one synchronisation combine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum EstimatorArg {
    /// The patent's mean over every round.
    Mean,
    /// The mean over the rounds with the smallest round trips.
    MinRtt,
}

/// `--drift`: how the offsets of several synchronisations apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DriftArg {
    /// One offset, the first synchronisation's.
    Constant,
    /// Interpolated between synchronisations.
    Piecewise,
    /// One weighted least-squares line.
    Fit,
}

/// `clock simulate --scenario`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ScenarioArg {
    /// Every scenario.
    All,
    /// Frequency changes only, no offsets.
    DvfsOnly,
    /// Equal delays both ways.
    Symmetric,
    /// Different delays each way.
    Asymmetric,
    /// Drifting offsets, under each drift model.
    Drift,
}

/// The command-line name of a `ValueEnum` value (the library's own name
/// for the same thing).
fn name_of<T: clap::ValueEnum>(v: T) -> String {
    v.to_possible_value()
        .map(|p| p.get_name().to_string())
        .unwrap_or_default()
}

/// The `clock` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Correct trace events onto the reference processor's clock.
    #[command(after_help = "Examples:
  retrace clock correct --history freq.csv --sync sync.csv events.csv -o out.csv
  retrace clock correct --history trace.txt --sync sync.csv events.csv -o out.json --format chrome
  retrace clock correct --history freq.csv --zero-offsets events.csv -o out.csv --summary json

--format is the format of the corrected events (the command's output, written
to -o); --summary is how the summary of the correction is printed: text on
standard error, or JSON on standard output.

File formats: docs/FORMATS.md (\"Clock files\").")]
    Correct(CorrectArgs),
    /// Measure each estimator's error on simulated processors with known truth.
    #[command(after_help = "Example:
  retrace clock simulate --processors 4 --seed 1 --trials 1000
  retrace clock simulate --scenario asymmetric --format csv")]
    Simulate(SimulateArgs),
    /// Run the synchronisation exchange between two CPUs of this machine.
    #[command(after_help = "Example:
  retrace clock probe --cpus 0,1 --rounds 100000
  retrace clock probe --format json")]
    Probe(ProbeArgs),
    /// Measure correction speed on a synthetic workload.
    #[command(after_help = "Example:
  retrace clock bench --events 10000000 --changes 10000
  retrace clock bench --events 1000000 --format json")]
    Bench(BenchArgs),
}

/// Arguments of `retrace clock correct`.
#[derive(clap::Args, Debug)]
pub struct CorrectArgs {
    /// Frequency history: CSV, JSON, or ftrace / `perf script` text.
    #[arg(long, value_name = "FILE")]
    history: PathBuf,
    /// Synchronisation rounds (CSV or JSON). Required unless --zero-offsets.
    #[arg(long, value_name = "FILE", required_unless_present = "zero_offsets")]
    sync: Option<PathBuf>,
    /// All counters started together: correct frequencies only.
    #[arg(long, conflicts_with = "sync")]
    zero_offsets: bool,
    /// The reference processor with --zero-offsets (default: the first in the history).
    #[arg(long, value_name = "ID", requires = "zero_offsets")]
    reference: Option<u32>,
    /// Trace events (CSV or JSON); `-` for standard input.
    #[arg(value_name = "EVENTS")]
    events: PathBuf,
    /// Where to write the corrected events; `-` for standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: PathBuf,
    /// Format of the corrected events written to -o (not of the summary:
    /// see --summary).
    #[arg(long, value_enum, default_value_t = EventsFormat::Csv)]
    format: EventsFormat,
    /// How to combine the rounds of one synchronisation.
    #[arg(long, value_enum, default_value_t = EstimatorArg::MinRtt)]
    estimator: EstimatorArg,
    /// How offsets of several synchronisations apply between them.
    #[arg(long, value_enum, default_value_t = DriftArg::Piecewise)]
    drift: DriftArg,
    /// Counter width in bits when counters wrap around (e.g. 32).
    #[arg(long, value_name = "BITS", value_parser = clap::value_parser!(u32).range(1..=64))]
    counter_bits: Option<u32>,
    /// Leave out bad rows and report how many, instead of stopping at the first.
    #[arg(long)]
    skip_bad: bool,
    /// Write events in order of corrected time instead of input order.
    #[arg(long)]
    sort: bool,
    /// The summary: text on standard error, or json on standard output
    /// (then the events must go to a file with -o).
    #[arg(long, value_enum, default_value_t = SummaryFormat::Text, value_name = "FORMAT")]
    summary: SummaryFormat,
    /// The same as --summary json (kept for existing scripts).
    #[arg(long, hide = true)]
    json: bool,
}

impl CorrectArgs {
    /// The summary format asked for.
    fn summary(&self) -> SummaryFormat {
        if self.json {
            SummaryFormat::Json
        } else {
            self.summary
        }
    }
}

/// Arguments of `retrace clock simulate`.
#[derive(clap::Args, Debug)]
pub struct SimulateArgs {
    /// Processors, the reference included.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(2..=64))]
    processors: u32,
    /// First seed; trial i uses seed + i.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Trials per scenario.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
    trials: u64,
    /// Which scenario(s) to run.
    #[arg(long, value_enum, default_value_t = ScenarioArg::All)]
    scenario: ScenarioArg,
    #[command(flatten)]
    out: FormatArgs,
}

/// Arguments of `retrace clock probe`.
#[derive(clap::Args, Debug)]
pub struct ProbeArgs {
    /// The reference's and the responder's CPU.
    #[arg(long, default_value = "0,1", value_name = "I,J", value_parser = parse_cpu_pair)]
    cpus: (usize, usize),
    /// Rounds of the exchange.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    rounds: u64,
    #[command(flatten)]
    out: FormatArgs,
}

/// Arguments of `retrace clock bench`.
#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    /// Events to correct.
    #[arg(long, default_value_t = 10_000_000)]
    events: usize,
    /// Frequency changes per processor.
    #[arg(long, default_value_t = 10_000)]
    changes: usize,
    /// Processors.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1024))]
    processors: u32,
    /// Runs; the fastest is reported (the others absorb noise from other work).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    repeat: u32,
    /// Rows of each input syntax (events CSV/JSON/JSON Lines, history
    /// CSV/ftrace) whose loading is timed too; 0 skips it.
    #[arg(long, default_value_t = 1_000_000)]
    load_rows: usize,
    #[command(flatten)]
    out: FormatArgs,
}

fn parse_cpu_pair(text: &str) -> Result<(usize, usize), String> {
    let (i, j) = text
        .split_once(',')
        .ok_or("expected two CPU numbers, e.g. 0,1")?;
    let cpu = |s: &str| {
        s.trim()
            .parse::<usize>()
            .map_err(|_| format!("{s:?} is not a CPU number"))
    };
    Ok((cpu(i)?, cpu(j)?))
}

/// Entry point of `retrace clock`.
pub fn main(cmd: Command) -> anyhow::Result<ExitCode> {
    match cmd {
        Command::Correct(args) => correct(args),
        Command::Simulate(args) => simulate(args),
        Command::Probe(args) => probe(args),
        Command::Bench(args) => bench(args),
    }
}

fn correct(args: CorrectArgs) -> anyhow::Result<ExitCode> {
    let summary_format = args.summary();
    if summary_format == SummaryFormat::Json && args.output == Path::new("-") {
        bail!("--summary json prints the summary on standard output; write the events to a file with -o");
    }
    let options = ReadOptions {
        bad_rows: if args.skip_bad {
            BadRows::Skip
        } else {
            BadRows::Fail
        },
        width: args.counter_bits.map(CounterWidth::new).transpose()?,
    };
    let estimator =
        OffsetEstimator::from_name(&name_of(args.estimator)).expect("clap checked the name");
    let drift = DriftModel::from_name(&name_of(args.drift)).expect("clap checked the name");
    let format = OutputFormat::from_name(&name_of(args.format)).expect("clap checked the name");

    let history_text = read_input(&args.history, "frequency history")?;
    let history =
        formats::parse_history(&history_text, &args.history, options).status(Status::BadInput)?;
    drop(history_text);
    if history.histories.is_empty() {
        return Err(anyhow!(
            "{}: no frequency history rows",
            args.history.display()
        ))
        .status(Status::BadInput);
    }
    let mut skipped = Skipped::default();
    skipped.merge(&history.skipped);

    let (sync, corrector) = match &args.sync {
        Some(path) => {
            let text = read_input(path, "synchronisation rounds")?;
            let file = formats::parse_sync(&text, path, options).status(Status::BadInput)?;
            skipped.merge(&file.skipped);
            let sync = retrace_clock::synchronise(&history.histories, &file.rows, estimator, drift)
                .with_context(|| format!("{}", path.display()))
                .status(Status::BadInput)?;
            let corrector = Corrector::new(&history.histories, &sync);
            (Some(sync), corrector)
        }
        None => {
            let reference = args
                .reference
                .map(ProcessorId)
                .unwrap_or_else(|| history.histories.by_index(0).processor());
            let zero = history
                .histories
                .iter()
                .map(|h| (h.processor(), OffsetTrack::constant(0)))
                .collect::<Vec<_>>();
            (
                None,
                Corrector::with_tracks(&history.histories, reference, zero),
            )
        }
    };

    let events_text = read_input(&args.events, "events")?;
    let events =
        formats::parse_events(&events_text, &args.events, options).status(Status::BadInput)?;
    drop(events_text);
    skipped.merge(&events.skipped);

    let mut corrected = Vec::with_capacity(events.events.len());
    let mut event_skips = Skipped::default();
    let mut pass = corrector.pass();
    for event in &events.events {
        let time = pass.correct(event.processor, event.counter).map_err(|e| {
            e.at(retrace_clock::Location {
                file: args.events.clone(),
                line: event.line,
            })
        });
        if let Some(time) = event_skips
            .handle(options.bad_rows, time)
            .status(Status::BadInput)?
        {
            corrected.push(Corrected { event, time });
        }
    }
    skipped.merge(&event_skips);
    if args.sort {
        corrected.sort_by_key(|c| c.time);
    }

    let write = |out: &mut dyn Write| -> std::io::Result<()> {
        match format {
            OutputFormat::Csv => formats::write_csv(out, &corrected),
            OutputFormat::Json => formats::write_json(out, &corrected),
            OutputFormat::Chrome => {
                let frequencies = frequency_points(&history.histories, &corrector);
                formats::write_chrome(out, &corrected, &frequencies)
            }
        }
    };
    if args.output == Path::new("-") {
        let stdout = std::io::stdout();
        let mut lock = std::io::BufWriter::new(stdout.lock());
        match write(&mut lock).and_then(|()| lock.flush()) {
            Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                return Err(e).context("writing standard output")
            }
            _ => {}
        }
    } else {
        let file = super::common::create_output(&args.output, "events file")?;
        let mut buffered = std::io::BufWriter::new(file);
        write(&mut buffered)
            .and_then(|()| buffered.flush())
            .with_context(|| format!("writing {}", args.output.display()))?;
    }

    let summary = CorrectSummary {
        reference: corrector.reference(),
        events_corrected: corrected.len(),
        estimator,
        drift,
        responders: responder_summaries(sync.as_ref()),
        skipped,
        history_other_lines: history.other_lines,
        output: args.output.clone(),
    };
    match summary_format {
        SummaryFormat::Json => summary
            .render(crate::report::Format::Json)
            .and_then(|s| emit(&s))?,
        SummaryFormat::Text => eprint!("{}", summary.text()),
    }
    Ok(ExitCode::SUCCESS)
}

/// Read an input file (`-`: standard input): on failure, one line that
/// names the file, gives the system's reason once, and says what to do.
fn read_input(path: &Path, what: &str) -> anyhow::Result<String> {
    formats::read_text(path)
        .map_err(|e| {
            let why = match &e {
                retrace_clock::Error::Io { error, .. } => error.to_string(),
                other => other.to_string(),
            };
            if path == Path::new("-") {
                anyhow!("cannot read {what} from standard input: {why}")
            } else {
                anyhow!(
                    "cannot read {what} {}: {why}; check the path",
                    path.display()
                )
            }
        })
        .status(Status::BadInput)
}

/// The offset estimates of each responder, one per session.
fn responder_summaries(sync: Option<&retrace_clock::Synchronisation>) -> Vec<ResponderSummary> {
    let ns = |attos: f64| attos / ATTOS_PER_NANOSECOND as f64;
    sync.iter()
        .flat_map(|s| &s.responders)
        .map(|(processor, r)| ResponderSummary {
            processor: *processor,
            sessions: r
                .estimates
                .iter()
                .map(|e| SessionSummary {
                    offset_ns: ns(e.offset as f64),
                    bound_ns: ns(e.bound as f64),
                    spread_ns: ns(e.spread),
                    rounds_used: e.rounds_used,
                    rounds_total: e.rounds_total,
                })
                .collect(),
        })
        .collect()
}

/// One synchronisation session's offset estimate.
#[derive(Serialize)]
struct SessionSummary {
    offset_ns: f64,
    bound_ns: f64,
    spread_ns: f64,
    rounds_used: usize,
    rounds_total: usize,
}

/// A responder's offset estimates, one per session.
#[derive(Serialize)]
struct ResponderSummary {
    processor: ProcessorId,
    sessions: Vec<SessionSummary>,
}

/// What `clock correct` says about the correction (`--summary`).
#[derive(Serialize)]
struct CorrectSummary {
    reference: ProcessorId,
    events_corrected: usize,
    estimator: OffsetEstimator,
    drift: DriftModel,
    responders: Vec<ResponderSummary>,
    skipped: Skipped,
    history_other_lines: u64,
    output: PathBuf,
}

impl Report for CorrectSummary {
    fn text(&self) -> String {
        let mut out = format!(
            "corrected {} events onto processor {}'s clock ({} estimator, {} drift)\n",
            self.events_corrected,
            self.reference,
            self.estimator.name(),
            self.drift.name()
        );
        for r in &self.responders {
            for e in &r.sessions {
                out += &format!(
                    "  processor {}: offset {:.3} ns ± {:.3} ns (spread {:.3} ns, {} of {} rounds)\n",
                    r.processor, e.offset_ns, e.bound_ns, e.spread_ns, e.rounds_used, e.rounds_total
                );
            }
        }
        if self.history_other_lines > 0 {
            out += &format!(
                "  {} lines of the history file are other trace events\n",
                self.history_other_lines
            );
        }
        let skipped = &self.skipped;
        if skipped.total > 0 {
            let kinds: Vec<String> = skipped
                .by_kind
                .iter()
                .map(|(k, n)| format!("{n} {k}"))
                .collect();
            out += &format!("skipped {} bad rows: {}\n", skipped.total, kinds.join(", "));
            for example in &skipped.examples {
                out += &format!("  {example}\n");
            }
        }
        out
    }

    fn csv(&self) -> anyhow::Result<String> {
        bail!("the summary of clock correct is text or json (--summary)")
    }
}

/// Every frequency change of every processor that can be put on the
/// reference's clock (processors without synchronisation have no track).
fn frequency_points(
    histories: &retrace_clock::Histories,
    corrector: &Corrector<'_>,
) -> Vec<FrequencyPoint> {
    let mut points = Vec::new();
    let mut pass = corrector.pass();
    for history in histories.iter() {
        for (counter, hz) in history.rows() {
            let Ok(time) = pass.correct(history.processor(), counter) else {
                break;
            };
            points.push(FrequencyPoint {
                processor: history.processor(),
                time,
                hz,
            });
        }
    }
    points
}

/// What `clock simulate` reports: one summary per scenario and drift
/// model run (in JSON, the array of them).
#[derive(Serialize)]
#[serde(transparent)]
struct SimulateReport {
    runs: Vec<simulate::Summary>,
}

/// One estimator of one scenario run, as a CSV record.
#[derive(Serialize)]
struct SimulateCsvRow {
    scenario: &'static str,
    drift: DriftModel,
    processors: u32,
    trials: u64,
    seed: u64,
    estimator: OffsetEstimator,
    within_bound: f64,
    mean_offset_error_ns: f64,
    p99_offset_error_ns: f64,
    mean_bound_ns: f64,
    p99_event_error_ns: f64,
    max_event_error_ns: f64,
    max_error_ticks: f64,
}

impl Report for SimulateReport {
    fn text(&self) -> String {
        let mut out = String::new();
        if let Some(first) = self.runs.first() {
            out += &format!(
                "{} trials per scenario, seeds {}..={}, {} processors (processor 0 is the reference)\n",
                first.trials,
                first.seed,
                first.seed.wrapping_add(first.trials.saturating_sub(1)),
                first.scenario.processors
            );
        }
        for s in &self.runs {
            let sc = &s.scenario;
            out.push('\n');
            if sc.rounds == 0 {
                out += &format!(
                    "{}: {} frequency changes per processor, no offsets; largest event error {:.6} ticks ({:.3} ns)\n",
                    sc.name,
                    sc.changes,
                    s.max_error_ticks,
                    s.estimators.first().map_or(0.0, |e| e.max_event_error_ns)
                );
                continue;
            }
            out += &format!(
                "{} (drift model {}): {} rounds x {} sync(s), delays {:.0}/{:.0} ns + jitter {:.0} ns, {:.0}% outliers up to {:.0} ns, drift up to {} ppb\n",
                sc.name,
                s.drift.name(),
                sc.rounds,
                sc.sessions,
                sc.delays.forward_ns,
                sc.delays.backward_ns,
                sc.delays.jitter_ns,
                sc.delays.outlier_probability * 100.0,
                sc.delays.outlier_ns,
                sc.max_drift_ppb
            );
            out += &format!(
                "  {:<9} {:>12} {:>14} {:>14} {:>14} {:>15} {:>15}\n",
                "estimator",
                "within bound",
                "mean |err| ns",
                "p99 |err| ns",
                "mean bound ns",
                "event p99 ns",
                "event max ns"
            );
            for e in &s.estimators {
                out += &format!(
                    "  {:<9} {:>11.2}% {:>14.2} {:>14.2} {:>14.2} {:>15.2} {:>15.2}\n",
                    e.estimator.name(),
                    e.within_bound * 100.0,
                    e.mean_offset_error_ns,
                    e.p99_offset_error_ns,
                    e.mean_bound_ns,
                    e.p99_event_error_ns,
                    e.max_event_error_ns
                );
            }
        }
        out
    }

    fn csv(&self) -> anyhow::Result<String> {
        let rows: Vec<SimulateCsvRow> = self
            .runs
            .iter()
            .flat_map(|s| {
                s.estimators.iter().map(move |e| SimulateCsvRow {
                    scenario: s.scenario.name,
                    drift: s.drift,
                    processors: s.scenario.processors,
                    trials: s.trials,
                    seed: s.seed,
                    estimator: e.estimator,
                    within_bound: e.within_bound,
                    mean_offset_error_ns: e.mean_offset_error_ns,
                    p99_offset_error_ns: e.p99_offset_error_ns,
                    mean_bound_ns: e.mean_bound_ns,
                    p99_event_error_ns: e.p99_event_error_ns,
                    max_event_error_ns: e.max_event_error_ns,
                    max_error_ticks: s.max_error_ticks,
                })
            })
            .collect();
        csv_of(&rows)
    }
}

fn simulate(args: SimulateArgs) -> anyhow::Result<ExitCode> {
    let n = args.processors;
    let mut runs = Vec::new();
    let wanted = |name: &str| args.scenario == ScenarioArg::All || name_of(args.scenario) == name;
    if wanted("dvfs-only") {
        runs.push((Scenario::dvfs_only(n, 10_000), DriftModel::Constant));
    }
    if wanted("symmetric") {
        runs.push((Scenario::symmetric(n), DriftModel::Constant));
    }
    if wanted("asymmetric") {
        runs.push((Scenario::asymmetric(n), DriftModel::Constant));
    }
    if wanted("drift") {
        for model in [DriftModel::Constant, DriftModel::Piecewise, DriftModel::Fit] {
            runs.push((Scenario::drift(n), model));
        }
    }
    let mut summaries = Vec::new();
    for (scenario, drift) in runs {
        summaries.push(simulate::run(&scenario, args.seed, args.trials, drift)?);
    }
    crate::report::print(&SimulateReport { runs: summaries }, args.out.get())?;
    Ok(ExitCode::SUCCESS)
}

/// What `clock probe` reports: the library's report as it is.
#[derive(Serialize)]
#[serde(transparent)]
struct ProbeOutput(probe::ProbeReport);

/// One estimator of the probe, as a CSV record.
#[derive(Serialize)]
struct ProbeCsvRow {
    reference_cpu: usize,
    responder_cpu: usize,
    counter: &'static str,
    pinned: bool,
    estimator: OffsetEstimator,
    offset_ns: f64,
    bound_ns: f64,
    spread_ns: f64,
    rounds_used: usize,
    rounds_total: usize,
}

impl Report for ProbeOutput {
    fn text(&self) -> String {
        let report = &self.0;
        let mut out = format!(
            "probe: {} rounds between CPU {} (reference) and CPU {} (responder), counter {} at {:.6} GHz\n",
            report.rounds,
            report.cpus.0,
            report.cpus.1,
            report.counter,
            report.ticks_per_second / 1e9
        );
        match &report.pinned {
            Pinning::Pinned => out += "  threads pinned\n",
            Pinning::NotPinned(why) => out += &format!("  threads NOT pinned: {why}\n"),
        }
        if !report.tsc_flags.is_empty() {
            out += &format!("  cpu flags: {}\n", report.tsc_flags.join(" "));
        }
        out += &format!(
            "  {:<9} {:>12} {:>12} {:>12} {:>8}\n",
            "estimator", "offset ns", "bound ns", "spread ns", "rounds"
        );
        for e in &report.estimates {
            out += &format!(
                "  {:<9} {:>12.2} {:>12.2} {:>12.2} {:>8}\n",
                e.estimator.name(),
                e.offset_ns,
                e.bound_ns,
                e.spread_ns,
                e.ticks.rounds_used
            );
        }
        let rt = &report.round_trip;
        out += &format!(
            "  round trip ns: min {:.1}, median {:.1}, p99 {:.1}, max {:.1}\n",
            rt.min_ns, rt.median_ns, rt.p99_ns, rt.max_ns
        );
        out += &format!(
            "  monotonicity: {} backward steps on a thread, {} rounds with a cross-CPU read outside its interval\n",
            report.backward_steps, report.causality_violations
        );
        out
    }

    fn csv(&self) -> anyhow::Result<String> {
        let report = &self.0;
        let rows: Vec<ProbeCsvRow> = report
            .estimates
            .iter()
            .map(|e| ProbeCsvRow {
                reference_cpu: report.cpus.0,
                responder_cpu: report.cpus.1,
                counter: report.counter,
                pinned: report.pinned == Pinning::Pinned,
                estimator: e.estimator,
                offset_ns: e.offset_ns,
                bound_ns: e.bound_ns,
                spread_ns: e.spread_ns,
                rounds_used: e.ticks.rounds_used,
                rounds_total: e.ticks.rounds_total,
            })
            .collect();
        csv_of(&rows)
    }
}

fn probe(args: ProbeArgs) -> anyhow::Result<ExitCode> {
    let report = probe::run(probe::ProbeConfig {
        cpus: args.cpus,
        rounds: args.rounds as usize,
    })?;
    crate::report::print(&ProbeOutput(report), args.out.get())?;
    Ok(ExitCode::SUCCESS)
}

/// What `clock bench` reports: the correction's figures (one flat
/// record, its CSV row) and the loading rows.
#[derive(Serialize)]
struct ClockBenchReport {
    #[serde(flatten)]
    correction: CorrectionFigures,
    /// How fast each input syntax loads (`--load-rows`); not in CSV, whose
    /// one record is the correction's.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    loading: Vec<workload::LoadThroughput>,
}

/// `clock bench`'s correction figures.
#[derive(Serialize)]
struct CorrectionFigures {
    events: usize,
    processors: u32,
    changes_per_processor: usize,
    /// Runs made; the figures are the fastest's.
    runs: u32,
    seconds: f64,
    events_per_second: f64,
    cpu_seconds: Option<f64>,
    events_per_cpu_second: Option<f64>,
    /// A decimal string: the sum is an i128, beyond what JSON readers keep.
    checksum: String,
}

impl Report for ClockBenchReport {
    fn text(&self) -> String {
        let c = &self.correction;
        let mut out = format!(
            "corrected {} events ({} processors, {} frequency changes each, piecewise drift) in {:.3} s: {:.1} M events/s (best of {})\n",
            c.events,
            c.processors,
            c.changes_per_processor,
            c.seconds,
            c.events_per_second / 1e6,
            c.runs
        );
        if let (Some(cpu), Some(rate)) = (c.cpu_seconds, c.events_per_cpu_second) {
            out += &format!(
                "  CPU time of the correcting thread: {cpu:.3} s, {:.1} M events per CPU second\n",
                rate / 1e6
            );
        }
        for l in &self.loading {
            out += &format!(
                "loaded {} rows of {} ({:.1} MB) in {:.3} s: {:.2} M rows/s\n",
                l.rows,
                l.format,
                l.bytes as f64 / 1e6,
                l.seconds,
                l.rows_per_second / 1e6
            );
        }
        out
    }

    fn csv(&self) -> anyhow::Result<String> {
        csv_of(&[&self.correction])
    }
}

fn bench(args: BenchArgs) -> anyhow::Result<ExitCode> {
    let load = workload::synthetic(args.processors, args.changes, args.events, 1);
    let mut best: Option<workload::Throughput> = None;
    for _ in 0..args.repeat {
        let run = workload::measure(&load)?;
        if best.is_none_or(|b| run.events_per_second > b.events_per_second) {
            best = Some(run);
        }
    }
    let best = best.expect("at least one run");
    let report = ClockBenchReport {
        correction: CorrectionFigures {
            events: best.events,
            processors: args.processors,
            changes_per_processor: args.changes,
            runs: args.repeat,
            seconds: best.seconds,
            events_per_second: best.events_per_second,
            cpu_seconds: best.cpu_seconds,
            events_per_cpu_second: best.events_per_cpu_second,
            checksum: best.checksum.to_string(),
        },
        loading: if args.load_rows == 0 {
            Vec::new()
        } else {
            workload::measure_loading(args.load_rows, args.repeat)?
        },
    };
    crate::report::print(&report, args.out.get())?;
    Ok(ExitCode::SUCCESS)
}
