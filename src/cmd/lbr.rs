//! `retrace lbr …`: software branch records for native x86-64 programs on
//! CPUs without a Last Branch Record (JP2024157581A). The work is in
//! `retrace-lbr`; this module reads arguments and prints reports.
//!
//! - `lbr cc -- <compiler command>` builds the *writer*: the same command
//!   with `-fsanitize-coverage=trace-pc` and retrace's runtime linked in;
//! - `lbr record --writer W -o P.lbr -- ARGS` runs it under the branch
//!   control program and counts pairs (sampled, or `--exact`);
//! - `lbr convert P.lbr --format …` writes what real tools read, of the
//!   writer or (`--analysed`, here or at record time) of the ordinary
//!   build of the same sources.

use crate::report::{csv_of, emit, print, Format, FormatArgs, Report};
use anyhow::{anyhow, Context};
use retrace_lbr::control::Mode;
use retrace_lbr::convert::{self, BranchSite, ConversionStats};
use retrace_lbr::correspond::{self, MappingStats, UnmappedSite};
use retrace_lbr::disasm::Code;
use retrace_lbr::record::{record, RecordOptions};
use retrace_lbr::recording::{Counts, Method, Sampling};
use retrace_lbr::Recording;
use serde::Serialize;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `retrace lbr` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Build a writer: run a compiler command with -fsanitize-coverage=trace-pc
    /// and retrace's runtime linked in.
    #[command(after_help = "Examples:\n  \
        retrace lbr cc -- gcc -O2 -g prog.c -o prog.writer\n  \
        retrace lbr cc --emit-relocs -- gcc -O2 -g prog.c -o prog.writer   # for BOLT")]
    Cc(CcArgs),
    /// Run a writer under the branch control program and record its pairs.
    #[command(after_help = "Examples:\n  \
        retrace lbr record --writer ./prog.writer -o prog.lbr -- 1000\n  \
        retrace lbr record --writer ./prog.writer -o prog.lbr --exact -- 1000\n  \
        retrace lbr record --writer ./prog.writer --analysed ./prog -o prog.lbr -- 1000")]
    Record(RecordArgs),
    /// Turn a recording into branch records, a profile or probabilities.
    #[command(after_help = "Examples:\n  \
        retrace lbr convert prog.lbr --format perfscript -o prog.perfscript\n  \
        llvm-profgen-14 --binary prog.writer --perfscript prog.perfscript --output prog.prof\n  \
        retrace lbr convert prog.lbr --format json\n  \
        retrace lbr convert prog.lbr --analysed ./prog --format bolt -o prog.preagg   # of ./prog\n  \
        retrace lbr convert prog.lbr --format bolt -o prog.preagg\n  \
        /usr/lib/llvm-16/bin/perf2bolt -pa -p prog.preagg -o prog.fdata prog.writer\n  \
        llvm-bolt-16 prog.writer -o prog.bolt -data=prog.fdata -reorder-blocks=ext-tsp -reorder-functions=hfsort")]
    Convert(ConvertArgs),
}

/// Arguments of `lbr cc`.
#[derive(clap::Args, Debug)]
pub struct CcArgs {
    /// Link with -Wl,--emit-relocs, which BOLT needs to reorder functions
    /// and blocks (for `lbr convert --format bolt`).
    #[arg(long)]
    pub emit_relocs: bool,
    /// Also trace comparisons (-fsanitize-coverage=trace-pc,trace-cmp): the
    /// writer records each `switch` value and how each comparison came out,
    /// which tells apart dispatch paths between two instrumented blocks that
    /// a pair alone cannot (see docs/LBR.md for what it costs and gains).
    #[arg(long)]
    pub trace_cmp: bool,
    /// The compiler command (gcc or clang and its arguments).
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

/// Arguments of `lbr record`.
#[derive(clap::Args, Debug)]
pub struct RecordArgs {
    /// The writer (built with `retrace lbr cc`).
    #[arg(long, value_name = "PROGRAM")]
    pub writer: PathBuf,
    /// The analysed program: your ordinary build of the same sources with
    /// the same options, without coverage, with -g. `convert` then writes
    /// its addresses (the recording keeps its path and hash).
    #[arg(long, value_name = "PROGRAM")]
    pub analysed: Option<PathBuf>,
    /// Where to write the recording.
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
    /// Count every pair in the control program instead of sampling it.
    #[arg(long)]
    pub exact: bool,
    /// Sample and also count exactly, to measure the sampling error.
    #[arg(long, conflicts_with = "exact")]
    pub check: bool,
    /// With --exact: also count each pair with the two sites before it,
    /// which mapping onto an analysed program uses to split a branch among
    /// that build's copies of it (on whenever --analysed is given here).
    #[arg(long, requires = "exact")]
    pub chains: bool,
    /// Samples per second of the control thread's CPU time.
    #[arg(long, default_value_t = 20_000, value_name = "HZ")]
    pub rate: u64,
    /// Loop iterations in each code block. Longer blocks make every pair
    /// cost more nearly the same (sort, 20 kHz: taken-probability error
    /// 0.053 at 16, 0.010 at 64, 0.004 at 256) and the control program slower.
    #[arg(long, default_value_t = 64, value_name = "N")]
    pub spin: u32,
    /// Buffer slots as a power of two.
    #[arg(long, default_value_t = 16, value_name = "LOG2")]
    pub slots_log2: u32,
    /// Summary format (text on stderr; json or csv on stdout).
    #[command(flatten)]
    pub format: FormatArgs,
    /// The writer's arguments.
    #[arg(last = true, value_name = "ARGS")]
    pub args: Vec<OsString>,
}

/// `lbr convert --format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ConvertFormat {
    /// `perf script` branch stacks for `llvm-profgen --perfscript`.
    Perfscript,
    /// LLVM text sample profile for `clang -fprofile-sample-use` (made by
    /// llvm-profgen from the branch stacks).
    SampleProfile,
    /// BOLT pre-aggregated profile of the writer (`B`ranch and `F`all-through
    /// lines) for `perf2bolt -pa`; link the writer with `lbr cc --emit-relocs`.
    Bolt,
    /// Branch instructions with taken and not-taken counts (JSON).
    Json,
    /// The same as a table for people.
    Table,
}

/// Arguments of `lbr convert`.
#[derive(clap::Args, Debug)]
pub struct ConvertArgs {
    /// The recording (`retrace lbr record -o`).
    pub recording: PathBuf,
    /// What to write.
    #[arg(long, value_enum, default_value = "table")]
    pub format: ConvertFormat,
    /// The binary the recording was made with (default: the writer path it names).
    #[arg(long, value_name = "PROGRAM")]
    pub binary: Option<PathBuf>,
    /// Write the branches of this program instead of the writer's: the
    /// ordinary build of the same sources (default: the one the recording
    /// names, if any). Its branches are found through both binaries'
    /// line tables, so both need -g.
    #[arg(long, value_name = "PROGRAM")]
    pub analysed: Option<PathBuf>,
    /// Write the writer's own branches even if the recording names an
    /// analysed program.
    #[arg(long, conflicts_with = "analysed")]
    pub writer_only: bool,
    /// Write here instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Most sample lines in perfscript output (counts are scaled down to it).
    #[arg(long, default_value_t = 200_000, value_name = "N")]
    pub max_samples: u64,
    /// Branches shown in the table.
    #[arg(long, default_value_t = 30, value_name = "N")]
    pub top: usize,
}

/// Run one `lbr` subcommand.
pub fn main(cmd: Command) -> anyhow::Result<ExitCode> {
    match cmd {
        Command::Cc(a) => {
            retrace_lbr::runtime::build_writer(&a.command, a.emit_relocs, a.trace_cmp)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Record(a) => record_main(a),
        Command::Convert(a) => convert_main(a),
    }
}

/// What `lbr record` prints.
#[derive(Serialize)]
struct RecordReport {
    output: String,
    method: Method,
    exit: i32,
    seconds: f64,
    distinct_pairs: usize,
    pairs_per_second: f64,
    #[serde(flatten)]
    counts: Counts,
    #[serde(skip_serializing_if = "Option::is_none")]
    sampling: Option<Sampling>,
    /// Sampled vs exact, when both were kept (--check).
    #[serde(skip_serializing_if = "Option::is_none")]
    sampling_error: Option<SamplingError>,
}

/// Per-pair error of sampled counts against exact ones.
#[derive(Serialize, Clone, Copy)]
struct SamplingError {
    /// Σ|sampled − exact| ÷ Σ exact.
    weighted_mean_relative: f64,
    /// Share of pair occurrences whose pair's estimate is within 10%.
    within_10_percent: f64,
}

fn sampling_error(rec: &Recording) -> Option<SamplingError> {
    let exact: u64 = rec.pairs.iter().map(|p| p.exact.unwrap_or(0)).sum();
    if exact == 0 || rec.pairs.iter().any(|p| p.exact.is_none()) {
        return None;
    }
    let mut diff = 0.0;
    let mut within = 0u64;
    for p in &rec.pairs {
        let e = p.exact.unwrap_or(0) as f64;
        let d = (p.count as f64 - e).abs();
        diff += d;
        if d <= 0.1 * e {
            within += p.exact.unwrap_or(0);
        }
    }
    Some(SamplingError {
        weighted_mean_relative: diff / exact as f64,
        within_10_percent: within as f64 / exact as f64,
    })
}

impl Report for RecordReport {
    fn text(&self) -> String {
        let mut s = format!(
            "recorded {} pairs ({} distinct) in {:.3} s, {:.1} M pairs/s; writer exit {}; writer wrote {}, control program read {}, writer waited {} times\n",
            self.counts.reader_pairs,
            self.distinct_pairs,
            self.seconds,
            self.pairs_per_second / 1e6,
            self.exit,
            if self.counts.writer_finished { self.counts.writer_pairs.to_string() } else { "?".into() },
            self.counts.reader_pairs,
            self.counts.writer_waits,
        );
        if self.counts.reader_values > 0 || self.counts.writer_values > 0 {
            s += &format!(
                "switch values: writer wrote {}, control program read {}\n",
                if self.counts.writer_finished {
                    self.counts.writer_values.to_string()
                } else {
                    "?".into()
                },
                self.counts.reader_values,
            );
        }
        if let Some(sm) = &self.sampling {
            s += &format!(
                "samples: {} ({} in {} code blocks, {} lost), one every {} µs of control-thread time\n",
                sm.samples, sm.in_blocks, sm.blocks, sm.lost, sm.period_ns / 1000
            );
        }
        if let Some(e) = &self.sampling_error {
            s += &format!(
                "sampled vs exact: weighted mean error {:.2}% of pair occurrences; {:.1}% of occurrences in pairs estimated within 10%\n",
                100.0 * e.weighted_mean_relative,
                100.0 * e.within_10_percent
            );
        }
        if !self.counts.writer_finished {
            s += "warning: the writer ended without its exit handler (_exit or a signal): its last pairs were not delivered\n";
        }
        if self.counts.foreign_calls > 0 {
            s += &format!(
                "warning: {} blocks ran in threads other than the main one and were not recorded\n",
                self.counts.foreign_calls
            );
        }
        s += &format!("wrote {}\n", self.output);
        s
    }
    fn csv(&self) -> anyhow::Result<String> {
        #[derive(Serialize)]
        struct Row<'a> {
            output: &'a str,
            exit: i32,
            seconds: f64,
            pairs: u64,
            distinct_pairs: usize,
            writer_waits: u64,
        }
        csv_of(&[Row {
            output: &self.output,
            exit: self.exit,
            seconds: self.seconds,
            pairs: self.counts.reader_pairs,
            distinct_pairs: self.distinct_pairs,
            writer_waits: self.counts.writer_waits,
        }])
    }
}

fn record_main(a: RecordArgs) -> anyhow::Result<ExitCode> {
    let mode = if a.exact {
        Mode::Exact
    } else {
        Mode::Blocks {
            spin: a.spin,
            also_exact: a.check,
        }
    };
    if a.rate == 0 || a.rate > 1_000_000 {
        return Err(anyhow!(
            "--rate {} is outside 1..1000000 samples per second",
            a.rate
        ));
    }
    let mut opts = RecordOptions::new(a.writer.clone(), a.args.clone(), mode);
    opts.chains = a.chains || a.analysed.is_some();
    opts.period_ns = 1_000_000_000 / a.rate;
    opts.capacity_log2 = a.slots_log2;
    // Checked before the run, so that a wrong one costs no recording.
    let analysed = match &a.analysed {
        Some(p) => Some((p.display().to_string(), correspond::check_analysed(p)?.1)),
        None => None,
    };
    let mut rec = record(&opts)?;
    if let Some((path, hash)) = analysed {
        let abs = std::fs::canonicalize(&path).map_or(path, |p| p.display().to_string());
        rec.analysed = Some(abs);
        rec.analysed_hash = Some(hash);
    }
    rec.save(&a.output)?;
    let report = RecordReport {
        output: a.output.display().to_string(),
        method: rec.method,
        exit: rec.exit,
        seconds: rec.seconds,
        distinct_pairs: rec.pairs.len(),
        pairs_per_second: rec.counts.reader_pairs as f64 / rec.seconds.max(1e-9),
        counts: rec.counts.clone(),
        sampling: rec.sampling.clone(),
        sampling_error: sampling_error(&rec),
    };
    match a.format.get() {
        Format::Text => eprint!("{}", report.text()),
        f => print(&report, f)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// What `lbr convert --format json|table` prints.
#[derive(Serialize)]
struct ConvertReport {
    writer: String,
    method: Method,
    conversion: ConversionStats,
    /// Sampled vs exact taken probabilities (recordings made with --check).
    #[serde(skip_serializing_if = "Option::is_none")]
    probability_error: Option<convert::ProbabilityError>,
    /// The most frequent pairs without a path (at most 20).
    unresolved: Vec<UnresolvedPair>,
    /// The most frequent pairs with more than one path (at most 20).
    ambiguous: Vec<UnresolvedPair>,
    /// The analysed program whose addresses `branches` holds, and how the
    /// writer's branches mapped onto it.
    #[serde(skip_serializing_if = "Option::is_none")]
    analysed: Option<AnalysedReport>,
    branches: Vec<BranchSite>,
    #[serde(skip)]
    top: usize,
}

/// The mapping onto the analysed program.
#[derive(Serialize)]
struct AnalysedReport {
    binary: String,
    mapping: MappingStats,
    /// The writer branches that did not map, most executed first (at most 20).
    unmapped: Vec<UnmappedSite>,
}

/// A pair without one machine path.
#[derive(Serialize)]
struct UnresolvedPair {
    from: String,
    to: String,
    count: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    why: Option<convert::Unresolved>,
}

/// The `n` most frequent pairs `pick` selects, for the report.
fn top_pairs(
    converted: &convert::Converted,
    code: &Code,
    n: usize,
    pick: impl Fn(&convert::ConvertedPair) -> Option<Option<convert::Unresolved>>,
) -> Vec<UnresolvedPair> {
    let mut u: Vec<UnresolvedPair> = converted
        .pairs
        .iter()
        .filter_map(|p| {
            pick(p).map(|why| UnresolvedPair {
                from: code.describe(p.from),
                to: code.describe(p.to),
                count: p.count,
                why,
            })
        })
        .collect();
    u.sort_by_key(|p| std::cmp::Reverse(p.count));
    u.truncate(n);
    u
}

impl Report for ConvertReport {
    fn text(&self) -> String {
        let c = &self.conversion;
        let share = |n: u64| 100.0 * n as f64 / c.occurrences.max(1) as f64;
        let mut s = format!(
            "{} ({:?}): {} distinct pairs, {} occurrences: {:.2}% resolved to one path, {:.2}% to one of several, {:.2}% unresolved\n",
            self.writer,
            self.method,
            c.pairs,
            c.occurrences,
            share(c.resolved),
            share(c.ambiguous),
            share(c.unresolved)
        );
        if let Some(an) = &self.analysed {
            let m = &an.mapping;
            let pct = |n: u64| 100.0 * n as f64 / m.all.total().max(1) as f64;
            s += &format!(
                "branches of the analysed program {}: of {} writer branch executions {:.2}% mapped uniquely, {:.2}% ambiguously, {:.2}% not at all\n",
                an.binary,
                m.all.total(),
                pct(m.all.unique),
                pct(m.all.ambiguous),
                pct(m.all.unmapped)
            );
            for u in an.unmapped.iter().take(10) {
                let why = serde_json::to_value(u.why)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default();
                s += &format!(
                    "unmapped: {} {} ({}) {} times: {why}\n",
                    u.at,
                    serde_json::to_value(u.kind)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default(),
                    u.line,
                    u.executions
                );
            }
        }
        if let Some(e) = &self.probability_error {
            s += &format!(
                "sampled vs exact taken probability of {} conditional branches: weighted mean error {:.4}, p95 {:.4}\n",
                e.branches, e.weighted_mean, e.p95
            );
        }
        for u in &self.unresolved {
            let why = u.why.map(|w| format!(", {w:?}")).unwrap_or_default();
            s += &format!(
                "unresolved: {} → {} ({} times{why})\n",
                u.from, u.to, u.count
            );
        }
        for u in self.ambiguous.iter().take(5) {
            s += &format!("ambiguous: {} → {} ({} times)\n", u.from, u.to, u.count);
        }
        let mut rows: Vec<&BranchSite> = self.branches.iter().collect();
        rows.sort_by_key(|b| std::cmp::Reverse(b.executions));
        s += &format!(
            "{:>12} {:<14} {:>14} {:>8}  {}\n",
            "address", "kind", "executions", "taken", "where → most frequent target"
        );
        for b in rows.into_iter().take(self.top) {
            let kind = serde_json::to_value(b.kind)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            let target = b.targets.first().map(|t| t.at.as_str()).unwrap_or("-");
            s += &format!(
                "{:>12} {:<14} {:>14} {:>7.1}%  {} → {}\n",
                b.addr,
                kind,
                b.executions,
                100.0 * b.taken_probability,
                b.at,
                target
            );
        }
        s
    }
    fn csv(&self) -> anyhow::Result<String> {
        #[derive(Serialize)]
        struct Row<'a> {
            addr: &'a str,
            at: &'a str,
            executions: u64,
            taken: u64,
            taken_probability: f64,
        }
        let rows: Vec<Row> = self
            .branches
            .iter()
            .map(|b| Row {
                addr: &b.addr,
                at: &b.at,
                executions: b.executions,
                taken: b.taken,
                taken_probability: b.taken_probability,
            })
            .collect();
        csv_of(&rows)
    }
}

fn convert_main(a: ConvertArgs) -> anyhow::Result<ExitCode> {
    let rec = Recording::load(&a.recording)?;
    let binary = a
        .binary
        .clone()
        .unwrap_or_else(|| PathBuf::from(&rec.writer));
    let bytes = std::fs::read(&binary).with_context(|| {
        format!(
            "reading {} (the recording's writer; give it with --binary)",
            binary.display()
        )
    })?;
    convert::check_binary(&rec, &binary, &bytes)?;
    let code = Code::load(&binary)?;
    let converted = convert::convert(&rec, &code);
    // The analysed program: given, or the one the recording names (which
    // must still be the file it was).
    let analysed = match (&a.analysed, &rec.analysed, a.writer_only) {
        (_, _, true) | (None, None, false) => None,
        (Some(p), _, false) => Some((p.clone(), correspond::check_analysed(p)?.0)),
        (None, Some(p), false) => {
            let p = PathBuf::from(p);
            let (bytes, hash) = correspond::check_analysed(&p)?;
            if rec.analysed_hash.as_ref().is_some_and(|h| *h != hash) {
                return Err(anyhow!(
                    "{} is not the analysed program this recording was made with (hash {hash}, recorded {}); give the right one with --analysed",
                    p.display(),
                    rec.analysed_hash.as_deref().unwrap_or("")
                ));
            }
            Some((p, bytes))
        }
    };
    let pair = match &analysed {
        Some((p, a_bytes)) => Some(correspond::Pair::load(&binary, &bytes, &code, p, a_bytes)?),
        None => None,
    };
    let mapped = match &pair {
        Some(pair) => {
            let m = pair.map(&converted)?;
            eprintln!("{}", m.summary());
            Some(m)
        }
        None => None,
    };
    // The binary whose addresses the output holds.
    let (out_binary, out_bytes) = match &analysed {
        Some((p, b)) => (p.as_path(), b.as_slice()),
        None => (binary.as_path(), bytes.as_slice()),
    };
    let perfscript = || match &mapped {
        Some(m) => m.perfscript(out_binary, out_bytes, a.max_samples),
        None => converted.perfscript(&binary, &bytes, a.max_samples),
    };
    let text = match a.format {
        ConvertFormat::Perfscript => perfscript()?,
        ConvertFormat::SampleProfile => convert::sample_profile(&perfscript()?, out_binary)?,
        ConvertFormat::Bolt => {
            let profile = match &mapped {
                Some(m) => m.bolt_preaggregated(),
                None => converted.bolt_preaggregated()?,
            };
            if profile.dropped_ranges > 0 {
                eprintln!(
                    "note: {} straight-line range executions leave their function and are not in the profile",
                    profile.dropped_ranges
                );
            }
            profile.text
        }
        ConvertFormat::Json | ConvertFormat::Table => {
            let report = ConvertReport {
                writer: rec.writer.clone(),
                method: rec.method,
                conversion: converted.stats.clone(),
                probability_error: convert::probability_error(&rec, &code),
                unresolved: top_pairs(&converted, &code, 20, |p| match p.path {
                    Err(why) if why != convert::Unresolved::Entry => Some(Some(why)),
                    _ => None,
                }),
                ambiguous: top_pairs(&converted, &code, 20, |p| match &p.path {
                    Ok(m) if m.ambiguous => Some(None),
                    _ => None,
                }),
                analysed: mapped.as_ref().map(|m| AnalysedReport {
                    binary: out_binary.display().to_string(),
                    mapping: m.stats.clone(),
                    unmapped: m.unmapped.iter().take(20).cloned().collect(),
                }),
                branches: match &mapped {
                    Some(m) => m.branch_sites(),
                    None => converted.branch_sites(),
                },
                top: a.top,
            };
            report.render(if a.format == ConvertFormat::Json {
                Format::Json
            } else {
                Format::Text
            })?
        }
    };
    write_out(a.output.as_deref(), &text)?;
    Ok(ExitCode::SUCCESS)
}

fn write_out(path: Option<&Path>, text: &str) -> anyhow::Result<()> {
    match path {
        Some(p) => std::fs::write(p, text).with_context(|| format!("writing {}", p.display())),
        None => emit(text),
    }
}
