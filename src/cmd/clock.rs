//! `retrace clock …`: seed 002's clock correction — many processors' cycle
//! counters on one clock. The work is in `retrace-clock`; this module reads
//! arguments and files, and prints tables or JSON.
//!
//! The clock commands keep `--json` for their summaries: `clock correct`'s
//! `--format` names the format of the corrected events it writes, which is
//! a different thing from the summary's.

use crate::status::{Status, WithStatus};
use anyhow::{bail, Context};
use retrace_clock::formats::{
    self, BadRows, Corrected, FrequencyPoint, OutputFormat, ReadOptions, Skipped,
};
use retrace_clock::simulate::{self, Scenario};
use retrace_clock::{
    probe, workload, Corrector, CounterWidth, DriftModel, OffsetEstimator, OffsetTrack,
    ProcessorId, ATTOS_PER_NANOSECOND,
};
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;
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

/// `--estimator`: how the rounds of one synchronisation combine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum EstimatorArg {
    /// The seed's mean over every round.
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

File formats: docs/FORMATS.md (\"Clock files\").")]
    Correct(CorrectArgs),
    /// Measure each estimator's error on simulated processors with known truth.
    #[command(after_help = "Example:
  retrace clock simulate --processors 4 --seed 1 --trials 1000")]
    Simulate(SimulateArgs),
    /// Run the synchronisation exchange between two CPUs of this machine.
    #[command(after_help = "Example:
  retrace clock probe --cpus 0,1 --rounds 100000")]
    Probe(ProbeArgs),
    /// Measure correction speed on a synthetic workload.
    #[command(after_help = "Example:
  retrace clock bench --events 10000000 --changes 10000")]
    Bench(BenchArgs),
}

/// Options shared by commands that print results.
#[derive(clap::Args, Debug)]
pub struct Output {
    /// Print JSON for machines instead of a table.
    #[arg(long)]
    json: bool,
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
    /// Output format.
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
    #[command(flatten)]
    out: Output,
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
    out: Output,
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
    out: Output,
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
    #[command(flatten)]
    out: Output,
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
    if args.out.json && args.output == std::path::Path::new("-") {
        bail!("--json prints a summary on standard output; write the events to a file with -o");
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

    let history_text = formats::read_text(&args.history).status(Status::BadInput)?;
    let history =
        formats::parse_history(&history_text, &args.history, options).status(Status::BadInput)?;
    drop(history_text);
    if history.histories.is_empty() {
        return Err(anyhow::anyhow!(
            "{}: no frequency history rows",
            args.history.display()
        ))
        .status(Status::BadInput);
    }
    let mut skipped = Skipped::default();
    skipped.merge(&history.skipped);

    let (sync, corrector) = match &args.sync {
        Some(path) => {
            let text = formats::read_text(path).status(Status::BadInput)?;
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

    let events_text = formats::read_text(&args.events).status(Status::BadInput)?;
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
    if args.output == std::path::Path::new("-") {
        let stdout = std::io::stdout();
        let mut lock = std::io::BufWriter::new(stdout.lock());
        write(&mut lock)
            .and_then(|()| lock.flush())
            .context("writing standard output")?;
    } else {
        let file = std::fs::File::create(&args.output)
            .with_context(|| format!("{}", args.output.display()))
            .status(Status::BadInput)?;
        let mut buffered = std::io::BufWriter::new(file);
        write(&mut buffered)
            .and_then(|()| buffered.flush())
            .with_context(|| format!("{}", args.output.display()))?;
    }

    let responders: Vec<ResponderSummary> = sync
        .iter()
        .flat_map(|s| &s.responders)
        .map(|(processor, r)| ResponderSummary {
            processor: *processor,
            sessions: r
                .estimates
                .iter()
                .map(|e| SessionSummary {
                    offset_ns: e.offset as f64 / ATTOS_PER_NANOSECOND as f64,
                    bound_ns: e.bound as f64 / ATTOS_PER_NANOSECOND as f64,
                    spread_ns: e.spread / ATTOS_PER_NANOSECOND as f64,
                    rounds_used: e.rounds_used,
                    rounds_total: e.rounds_total,
                })
                .collect(),
        })
        .collect();
    if args.out.json {
        let summary = CorrectSummary {
            reference: corrector.reference(),
            events_corrected: corrected.len(),
            estimator,
            drift,
            responders,
            skipped: &skipped,
            history_other_lines: history.other_lines,
            output: &args.output,
        };
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        eprintln!(
            "corrected {} events onto processor {}'s clock ({} estimator, {} drift)",
            corrected.len(),
            corrector.reference(),
            estimator.name(),
            drift.name()
        );
        for (processor, r) in sync.iter().flat_map(|s| &s.responders) {
            for e in &r.estimates {
                eprintln!(
                    "  processor {processor}: offset {:.3} ns ± {:.3} ns (spread {:.3} ns, {} of {} rounds)",
                    e.offset as f64 / 1e9,
                    e.bound as f64 / 1e9,
                    e.spread / 1e9,
                    e.rounds_used,
                    e.rounds_total
                );
            }
        }
        if history.other_lines > 0 {
            eprintln!(
                "  {} lines of the history file are other trace events",
                history.other_lines
            );
        }
        report_skipped(&skipped);
    }
    Ok(ExitCode::SUCCESS)
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

/// What `clock correct --json` prints.
#[derive(Serialize)]
struct CorrectSummary<'a> {
    reference: ProcessorId,
    events_corrected: usize,
    estimator: OffsetEstimator,
    drift: DriftModel,
    responders: Vec<ResponderSummary>,
    skipped: &'a Skipped,
    history_other_lines: u64,
    output: &'a std::path::Path,
}

fn report_skipped(skipped: &Skipped) {
    if skipped.total == 0 {
        return;
    }
    let kinds: Vec<String> = skipped
        .by_kind
        .iter()
        .map(|(k, n)| format!("{n} {k}"))
        .collect();
    eprintln!("skipped {} bad rows: {}", skipped.total, kinds.join(", "));
    for example in &skipped.examples {
        eprintln!("  {example}");
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
    if args.out.json {
        println!("{}", serde_json::to_string_pretty(&summaries)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{} trials per scenario, seeds {}..={}, {} processors (processor 0 is the reference)",
        args.trials,
        args.seed,
        args.seed.wrapping_add(args.trials - 1),
        n
    );
    for s in &summaries {
        let sc = &s.scenario;
        println!();
        if sc.rounds == 0 {
            println!(
                "{}: {} frequency changes per processor, no offsets; largest event error {:.6} ticks ({:.3} ns)",
                sc.name, sc.changes, s.max_error_ticks, s.estimators[0].max_event_error_ns
            );
            continue;
        }
        println!(
            "{} (drift model {}): {} rounds x {} sync(s), delays {:.0}/{:.0} ns + jitter {:.0} ns, {:.0}% outliers up to {:.0} ns, drift up to {} ppb",
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
        println!(
            "  {:<9} {:>12} {:>14} {:>14} {:>14} {:>15} {:>15}",
            "estimator",
            "within bound",
            "mean |err| ns",
            "p99 |err| ns",
            "mean bound ns",
            "event p99 ns",
            "event max ns"
        );
        for e in &s.estimators {
            println!(
                "  {:<9} {:>11.2}% {:>14.2} {:>14.2} {:>14.2} {:>15.2} {:>15.2}",
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
    Ok(ExitCode::SUCCESS)
}

fn probe(args: ProbeArgs) -> anyhow::Result<ExitCode> {
    let report = probe::run(probe::ProbeConfig {
        cpus: args.cpus,
        rounds: args.rounds as usize,
    })?;
    if args.out.json {
        let mut value = serde_json::to_value(&report)?;
        // `Result` serialises as {"Ok": null}; say it plainly instead.
        value["pinned"] = serde_json::to_value(match &report.pinned {
            Ok(()) => Pinned::Yes(true),
            Err(why) => Pinned::No {
                not_pinned: why.clone(),
            },
        })?;
        println!("{}", serde_json::to_string_pretty(&value)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "probe: {} rounds between CPU {} (reference) and CPU {} (responder), counter {} at {:.6} GHz",
        report.rounds,
        report.cpus.0,
        report.cpus.1,
        report.counter,
        report.ticks_per_second / 1e9
    );
    match &report.pinned {
        Ok(()) => println!("  threads pinned"),
        Err(why) => println!("  threads NOT pinned: {why}"),
    }
    if !report.tsc_flags.is_empty() {
        println!("  cpu flags: {}", report.tsc_flags.join(" "));
    }
    println!(
        "  {:<9} {:>12} {:>12} {:>12} {:>8}",
        "estimator", "offset ns", "bound ns", "spread ns", "rounds"
    );
    for e in &report.estimates {
        println!(
            "  {:<9} {:>12.2} {:>12.2} {:>12.2} {:>8}",
            e.estimator.name(),
            e.offset_ns,
            e.bound_ns,
            e.spread_ns,
            e.ticks.rounds_used
        );
    }
    let rt = &report.round_trip;
    println!(
        "  round trip ns: min {:.1}, median {:.1}, p99 {:.1}, max {:.1}",
        rt.min_ns, rt.median_ns, rt.p99_ns, rt.max_ns
    );
    println!(
        "  monotonicity: {} backward steps on a thread, {} rounds with a cross-CPU read outside its interval",
        report.backward_steps, report.causality_violations
    );
    Ok(ExitCode::SUCCESS)
}

/// `clock probe --json`'s `pinned`: `true`, or why not.
#[derive(Serialize)]
#[serde(untagged)]
enum Pinned {
    Yes(bool),
    No { not_pinned: String },
}

/// What `clock bench --json` prints.
#[derive(Serialize)]
struct ClockBenchReport {
    events: usize,
    processors: u32,
    changes_per_processor: usize,
    seconds: f64,
    events_per_second: f64,
    cpu_seconds: Option<f64>,
    events_per_cpu_second: Option<f64>,
    /// A decimal string: the sum is an i128, beyond what JSON readers keep.
    checksum: String,
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
    if args.out.json {
        let value = ClockBenchReport {
            events: best.events,
            processors: args.processors,
            changes_per_processor: args.changes,
            seconds: best.seconds,
            events_per_second: best.events_per_second,
            cpu_seconds: best.cpu_seconds,
            events_per_cpu_second: best.events_per_cpu_second,
            checksum: best.checksum.to_string(),
        };
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        println!(
            "corrected {} events ({} processors, {} frequency changes each, piecewise drift) in {:.3} s: {:.1} M events/s (best of {})",
            best.events,
            args.processors,
            args.changes,
            best.seconds,
            best.events_per_second / 1e6,
            args.repeat
        );
        if let (Some(cpu), Some(rate)) = (best.cpu_seconds, best.events_per_cpu_second) {
            println!(
                "  CPU time of the correcting thread: {cpu:.3} s, {:.1} M events per CPU second",
                rate / 1e6
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
