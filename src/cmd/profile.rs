//! `retrace profile`: the by-products of a replay (US patent 8,448,140, embodiment 1):
//! cycles per function, call counts, branch probabilities, hottest partial
//! programs — on a chosen core, from the trace alone.

use super::common::{
    analyse, check_trace, check_xlen, create_output, display, load_core_with, load_elf_bytes,
    replay_error, thousands, FidelityArg,
};
use crate::report::{csv_of, emit, hex, Format, Report};
use crate::status::{tag, Status};
use anyhow::anyhow;
use retrace_estimate::annotate::Lines;
use retrace_estimate::callgrind::{callgrind, Header as CallgrindHeader};
use retrace_estimate::sample_profile::sample_profile;
use retrace_estimate::{profile_trace, Fidelity};
use retrace_timing::{CpiPart, CpiStack};
use serde::Serialize;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `retrace profile`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Cycles per function (docs/TIMING.md, \"Per-function cycles\"):\n  \
    exclusive  cycles of the instructions that lie in the function\n  \
    inclusive  from its entry to its exit, callees included; recursion counts once;\n             \
    a tail call (`j g`) ends the caller's frame and enters g's\n  \
    calls      entries: calls, tail calls and jumps in from another function\n  \
    The rule is `retrace run --core`'s, and on a core the estimate times exactly the\n  \
    figures are the cycle-level engine's. The data-cache term is estimated for the\n  \
    whole run, not per function: the header gives it, and percentages are of the\n  \
    header's total.\n\n\
    Costliest branches: the conditional branches whose mispredictions cost the most\n\
    cycles on the core (mispredictions x its mispredict penalty).\n\n\
    Branches and partial programs name their source line (file:line of the innermost\n\
    inlined frame) when the program has debugging information (-g).\n\n\
    Examples:\n  \
    retrace profile prog.elf prog.rtrace\n  \
    retrace profile prog.elf prog.rtrace --core rocket --top 20 --format json\n  \
    retrace profile prog.elf prog.rtrace --core inorder5 --cpi\n  \
    retrace profile prog.elf prog.rtrace --core rocket --format callgrind -o callgrind.out.1\n  \
    retrace profile prog.elf prog.rtrace --sample-profile prog.prof   (for clang -fprofile-sample-use)"
)]
pub struct Args {
    /// The program, its trace, the core and the fidelity.
    #[command(flatten)]
    pub run: super::profile::ProfiledArgs,
    /// Rows per table.
    #[arg(long, default_value_t = 15)]
    pub top: usize,
    /// Also write the run as an LLVM sample profile (AutoFDO text) to
    /// FILE, for `clang -fprofile-sample-use=FILE` on the same sources:
    /// execution counts per function and source line offset (from the
    /// program's DWARF; build it with -g), calls per call site
    /// (docs/TIMING.md, "A sample profile for clang").
    #[arg(long, value_name = "FILE")]
    pub sample_profile: Option<PathBuf>,
    /// Output format: text for people; json or csv (the functions table)
    /// for machines; callgrind for KCachegrind, QCachegrind and
    /// `callgrind_annotate` (estimated cycles and instructions per source
    /// line and instruction, and the call graph; docs/REPORTS.md).
    #[arg(long, value_enum, default_value_t = ProfileFormat::Text, value_name = "FORMAT")]
    pub format: ProfileFormat,
    /// Also split each function's exclusive cycles by cause, its CPI stack
    /// (docs/REPORTS.md): a table in text, a `cpi` object per function in
    /// JSON, a column per part in CSV.
    #[arg(long)]
    pub cpi: bool,
    /// The same as --format json (kept for existing scripts).
    #[arg(long, hide = true)]
    pub json: bool,
    /// Write the output to FILE instead of the standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// How `retrace profile` writes its result: the report formats, and
/// callgrind's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ProfileFormat {
    /// Tables for people.
    Text,
    /// One JSON value.
    Json,
    /// The functions table as comma-separated values.
    Csv,
    /// Callgrind's profile format.
    Callgrind,
}

/// One function's cycles.
#[derive(Clone, Serialize)]
pub struct FunctionRow {
    /// The function's name.
    pub name: String,
    /// Cycles of the instructions in the function.
    pub exclusive_cycles: u64,
    /// Cycles from its entry to its exit, callees included.
    pub inclusive_cycles: u64,
    /// Entries: calls, tail calls and jumps in from another function.
    pub calls: u64,
    /// Instructions executed in the function itself.
    pub instructions: u64,
    /// Its exclusive cycles by cause (with `--cpi`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpi: Option<CpiStack>,
}

/// One conditional branch.
#[derive(Serialize)]
pub struct BranchRow {
    /// Its address.
    #[serde(serialize_with = "hex")]
    pub pc: u64,
    /// Its address as `symbol+offset`.
    #[serde(rename = "where")]
    pub at: String,
    /// Its source line, `file:line` (null without debugging information).
    pub source: Option<String>,
    /// Times executed.
    pub executed: u64,
    /// Times taken.
    pub taken: u64,
    /// taken / executed.
    pub taken_probability: f64,
}

/// A conditional branch whose mispredictions cost cycles.
#[derive(Serialize)]
pub struct CostlyBranchRow {
    /// Its address.
    #[serde(serialize_with = "hex")]
    pub pc: u64,
    /// Its address as `symbol+offset`.
    #[serde(rename = "where")]
    pub at: String,
    /// Its source line, `file:line` (null without debugging information).
    pub source: Option<String>,
    /// Times executed.
    pub executed: u64,
    /// taken / executed.
    pub taken_probability: f64,
    /// Times the core mispredicted it.
    pub mispredicts: u64,
    /// The cycles those mispredictions cost (each the core's mispredict
    /// penalty).
    pub mispredict_cycles: u64,
}

/// One of the hottest partial programs.
#[derive(Serialize)]
pub struct HotRow {
    /// Its id in the table.
    pub pp: u32,
    /// Its start address.
    #[serde(serialize_with = "hex")]
    pub start: u64,
    /// Its start as `symbol+offset`.
    #[serde(rename = "where")]
    pub at: String,
    /// Its start's source line, `file:line` (null without debugging
    /// information).
    pub source: Option<String>,
    /// Times executed.
    pub executed: u64,
    /// Cycles spent in it.
    pub cycles: u64,
}

/// What `retrace profile` reports.
#[derive(Serialize)]
pub struct ProfileReport {
    /// The program as given.
    pub program: String,
    /// The core's name.
    pub core: String,
    /// The fidelity of the replay.
    #[serde(serialize_with = "display")]
    pub fidelity: Fidelity,
    /// Estimated cycles, the data-cache term included: what the
    /// percentages are of.
    pub cycles: u64,
    /// Of `cycles`, the data-cache term, estimated for the whole run and not
    /// attributed to functions; null on a core without a data cache, or
    /// when the trace has no miss rate for it.
    pub dcache_cycles: Option<u64>,
    /// The core has a data cache the trace has no miss rate for: `cycles`
    /// leaves it out.
    pub dcache_unmeasured: bool,
    /// Instructions replayed.
    pub instructions: u64,
    /// The hottest functions.
    pub functions: Vec<FunctionRow>,
    /// The most executed branches.
    pub branches: Vec<BranchRow>,
    /// The branches whose mispredictions cost the most cycles.
    pub costliest_branches: Vec<CostlyBranchRow>,
    /// The partial programs with the most cycles.
    pub hottest_partial_programs: Vec<HotRow>,
}

impl Report for ProfileReport {
    fn text(&self) -> String {
        let total = self.cycles.max(1) as f64;
        let mut o = String::new();
        let _ = writeln!(
            o,
            "{} on {}: {} cycles, {} instructions",
            self.program,
            self.core,
            thousands(self.cycles),
            thousands(self.instructions)
        );
        if let Some(d) = self.dcache_cycles {
            let _ = writeln!(
                o,
                "  of which {} cycles ({:.2}%) are the data cache's, estimated for the whole run from the recorded miss rate; no function's cycles include them",
                thousands(d),
                d as f64 * 100.0 / total
            );
        }
        if self.dcache_unmeasured {
            let _ = writeln!(
                o,
                "  without the data cache: the trace has no miss rate for this core's (`retrace estimate` gives the `retrace record --dcache` that measures it)"
            );
        }
        let _ = writeln!(o, "  percentages are of this total\n");
        let _ = writeln!(
            o,
            "{:<28} {:>14} {:>7} {:>14} {:>7} {:>10}",
            "function", "exclusive", "%", "inclusive", "%", "calls"
        );
        for f in &self.functions {
            let _ = writeln!(
                o,
                "{:<28} {:>14} {:>6.2}% {:>14} {:>6.2}% {:>10}",
                f.name,
                thousands(f.exclusive_cycles),
                f.exclusive_cycles as f64 * 100.0 / total,
                thousands(f.inclusive_cycles),
                f.inclusive_cycles as f64 * 100.0 / total,
                thousands(f.calls)
            );
        }
        let stacks: Vec<(String, CpiStack)> = self
            .functions
            .iter()
            .filter_map(|f| Some((f.name.clone(), f.cpi?)))
            .collect();
        if !stacks.is_empty() {
            let _ = writeln!(o, "\nCPI stacks of exclusive cycles (% of the function's)");
            cpi_table(&mut o, "function", &stacks);
        }
        let _ = writeln!(
            o,
            "\n{:<34} {:>14} {:>8}  source",
            "branch", "executed", "taken"
        );
        for b in &self.branches {
            let _ = writeln!(
                o,
                "{:<34} {:>14} {:>7.2}%  {}",
                b.at,
                thousands(b.executed),
                b.taken as f64 * 100.0 / b.executed.max(1) as f64,
                b.source.as_deref().unwrap_or("")
            );
        }
        let _ = writeln!(
            o,
            "\n{:<34} {:>14} {:>8} {:>12} {:>14} {:>7}  source",
            "costliest branch", "executed", "taken", "mispredicts", "cycles", "%"
        );
        for b in &self.costliest_branches {
            let _ = writeln!(
                o,
                "{:<34} {:>14} {:>7.2}% {:>12} {:>14} {:>6.2}%  {}",
                b.at,
                thousands(b.executed),
                b.taken_probability * 100.0,
                thousands(b.mispredicts),
                thousands(b.mispredict_cycles),
                b.mispredict_cycles as f64 * 100.0 / total,
                b.source.as_deref().unwrap_or("")
            );
        }
        let _ = writeln!(
            o,
            "\n{:<8} {:<34} {:>14} {:>14} {:>7}  source",
            "pp", "start", "executed", "cycles", "%"
        );
        for h in &self.hottest_partial_programs {
            let _ = writeln!(
                o,
                "{:<8} {:<34} {:>14} {:>14} {:>6.2}%  {}",
                h.pp,
                h.at,
                thousands(h.executed),
                thousands(h.cycles),
                h.cycles as f64 * 100.0 / total,
                h.source.as_deref().unwrap_or("")
            );
        }
        o
    }

    fn csv(&self) -> anyhow::Result<String> {
        csv_with_cpi(&self.functions, |f| &mut f.cpi)
    }
}

/// Rows as CSV ([`csv_of`]) and, when they carry a CPI stack (`cpi` gives
/// it), a column per part after their own.
pub fn csv_with_cpi<T: Serialize + Clone>(
    rows: &[T],
    cpi: impl Fn(&mut T) -> &mut Option<CpiStack>,
) -> anyhow::Result<String> {
    let mut plain = rows.to_vec();
    let stacks: Vec<Option<CpiStack>> = plain.iter_mut().map(|r| cpi(r).take()).collect();
    let text = csv_of(&plain)?;
    if stacks.iter().all(Option::is_none) {
        return Ok(text);
    }
    // Read the rows back (quoting and all) and write them again, longer.
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header: Vec<String> = reader.headers()?.iter().map(str::to_string).collect();
    header.extend(CpiPart::ALL.iter().map(|p| p.name().to_string()));
    w.write_record(&header)?;
    for (record, stack) in reader.records().zip(&stacks) {
        let mut fields: Vec<String> = record?.iter().map(str::to_string).collect();
        fields.extend(stack.unwrap_or_default().0.iter().map(u64::to_string));
        w.write_record(&fields)?;
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}

/// A table of CPI stacks, one row per `(name, stack)`: each part with any
/// cycles in some row, as a share of the row's total.
pub fn cpi_table(o: &mut String, what: &str, rows: &[(String, CpiStack)]) {
    let parts: Vec<CpiPart> = CpiPart::ALL
        .into_iter()
        .filter(|&p| rows.iter().any(|(_, s)| s.get(p) > 0))
        .collect();
    let _ = write!(o, "{what:<28} {:>14}", "cycles");
    for p in &parts {
        let _ = write!(o, " {:>10}", p.name());
    }
    o.push('\n');
    for (name, s) in rows {
        let total = s.total();
        let _ = write!(o, "{name:<28} {:>14}", thousands(total));
        for &p in &parts {
            let pct = s.get(p) as f64 * 100.0 / total.max(1) as f64;
            let _ = write!(o, " {pct:>9.1}%");
        }
        o.push('\n');
    }
}

/// Each function's exclusive CPI stack, by the address ranges the profile
/// charges to it, indexed like `ranges`.
pub fn function_stacks(
    profile: &retrace_estimate::Profile,
    ranges: &retrace_program::FunctionRanges,
) -> Vec<CpiStack> {
    let map = retrace_sim::functions::FunctionMap::new(&ranges.ranges);
    let mut out = vec![CpiStack::default(); ranges.ranges.len()];
    for (&pc, c) in &profile.instructions {
        if let Some(f) = map.lookup(pc) {
            out[f].add(&c.cpi);
        }
    }
    out
}

/// A program profiled on one core from its trace: what `profile` and
/// `annotate` both start from.
pub struct Profiled {
    /// The program.
    pub elf: retrace_program::Elf,
    /// Its file's bytes (its DWARF).
    pub bytes: Vec<u8>,
    /// The program as the user named it.
    pub shown: String,
    /// The core.
    pub core: retrace_timing::CoreModel,
    /// The analysed program.
    pub program: retrace_program::Program,
    /// The replay's fidelity.
    pub fidelity: Fidelity,
    /// The profile.
    pub profile: retrace_estimate::Profile,
    /// The estimate.
    pub estimate: retrace_estimate::Estimate,
}

/// What `profile` and `annotate` are given to profile a run.
#[derive(clap::Args, Debug)]
pub struct ProfiledArgs {
    /// The program the trace was recorded from.
    pub program: PathBuf,
    /// The trace.
    pub trace: PathBuf,
    /// The core whose cycles are attributed.
    #[arg(long, default_value = "ideal", value_name = "NAME|FILE")]
    pub core: String,
    #[command(flatten)]
    pub sets: super::common::CoreSets,
    /// Fidelity of the timing.
    #[arg(long, value_enum, default_value_t = FidelityArg::Control)]
    pub fidelity: FidelityArg,
}

/// Load the program, check the trace against it and profile it on the
/// core.
pub fn profiled(args: &ProfiledArgs) -> anyhow::Result<Profiled> {
    let ProfiledArgs {
        program,
        trace,
        core,
        sets,
        fidelity,
    } = args;
    let (sets, fidelity) = (&sets.set, *fidelity);
    let (elf, bytes) = load_elf_bytes(program)?;
    let shown = program.display().to_string();
    check_trace(trace, &elf, &shown)?;
    let core = load_core_with(core, sets)?;
    check_xlen(&core, &elf, &shown)?;
    let analysed = analyse(&elf, &shown)?;
    let fidelity = Fidelity::from(fidelity);
    let source = crate::progress::WatchedTrace::new(trace, "replaying");
    let (profile, estimate) = profile_trace(&analysed, &source, &core, fidelity)
        .map_err(|err| replay_error(trace, err))?;
    source.finish();
    Ok(Profiled {
        elf,
        bytes,
        shown,
        core,
        program: analysed,
        fidelity,
        profile,
        estimate,
    })
}

/// The report of a profiled run: its `top` hottest functions, most
/// executed and costliest branches and hottest partial programs, with
/// their source lines. `profile` prints it; `report` draws it.
pub fn profile_report(prof: &Profiled, top: usize, cpi: bool) -> ProfileReport {
    let Profiled {
        elf,
        bytes,
        shown,
        core,
        fidelity,
        profile: p,
        estimate: e,
        ..
    } = prof;
    let fidelity = *fidelity;
    let describe = |pc: u64| elf.describe(pc).unwrap_or_else(|| format!("{pc:#x}"));
    // Source lines of the addresses shown, where the program has DWARF.
    let costliest = p.costliest_branches();
    let shown_addrs: Vec<u64> = (p.branches.iter().take(top).map(|b| b.pc))
        .chain(costliest.iter().take(top).map(|b| b.pc))
        .chain(p.hottest.iter().take(top).map(|h| h.start))
        .collect();
    let lines = Lines::of(bytes, &shown_addrs);
    let source = |pc: u64| lines.get(pc).map(ToString::to_string);
    let ranges = retrace_program::FunctionRanges::of_program(&prof.program);
    let stacks = if cpi {
        function_stacks(p, &ranges)
    } else {
        Vec::new()
    };
    let stack_of = |entry: u64| {
        let i = ranges.ranges.iter().position(|r| r.0 == entry)?;
        stacks.get(i).copied()
    };
    ProfileReport {
        program: shown.clone(),
        core: core.name.clone(),
        fidelity,
        cycles: e.cycles,
        dcache_cycles: (core.dcache.is_some() && e.dcache_measured).then_some(e.dcache_cycles),
        dcache_unmeasured: core.dcache.is_some() && !e.dcache_measured,
        instructions: e.instructions,
        functions: p
            .functions
            .iter()
            .take(top)
            .map(|f| FunctionRow {
                name: f.name.clone(),
                exclusive_cycles: f.exclusive,
                inclusive_cycles: f.inclusive,
                calls: f.calls,
                instructions: f.instructions,
                cpi: stack_of(f.entry),
            })
            .collect(),
        branches: p
            .branches
            .iter()
            .take(top)
            .map(|b| BranchRow {
                pc: b.pc,
                at: describe(b.pc),
                source: source(b.pc),
                executed: b.executed,
                taken: b.taken,
                taken_probability: b.taken as f64 / b.executed.max(1) as f64,
            })
            .collect(),
        costliest_branches: costliest
            .iter()
            .take(top)
            .map(|b| CostlyBranchRow {
                pc: b.pc,
                at: describe(b.pc),
                source: source(b.pc),
                executed: b.executed,
                taken_probability: b.taken as f64 / b.executed.max(1) as f64,
                mispredicts: b.mispredicts,
                mispredict_cycles: b.mispredict_cycles,
            })
            .collect(),
        hottest_partial_programs: p
            .hottest
            .iter()
            .take(top)
            .map(|h| HotRow {
                pp: h.pp.0,
                start: h.start,
                at: describe(h.start),
                source: source(h.start),
                executed: h.executed,
                cycles: h.cycles,
            })
            .collect(),
    }
}

/// Entry point of `retrace profile`.
pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    let prof = profiled(&args.run)?;
    let Profiled {
        bytes,
        shown,
        program,
        fidelity,
        profile: p,
        ..
    } = &prof;
    if let Some(path) = &args.sample_profile {
        let text = sample_profile(p, &program.table, bytes).map_err(|e| {
            tag(
                anyhow!("cannot make a sample profile of {shown}: {e}"),
                Status::BadInput,
            )
        })?;
        std::fs::write(path, text).map_err(|e| {
            tag(
                anyhow!(
                    "cannot write the sample profile to {}: {e}; check the path",
                    path.display()
                ),
                Status::BadInput,
            )
        })?;
    }
    let report = profile_report(&prof, args.top, args.cpi);
    let format = match (args.json, args.format) {
        (true, _) | (_, ProfileFormat::Json) => Format::Json,
        (_, ProfileFormat::Text) => Format::Text,
        (_, ProfileFormat::Csv) => Format::Csv,
        (_, ProfileFormat::Callgrind) => {
            let ranges = retrace_program::FunctionRanges::of_program(program);
            let mut addrs: Vec<u64> = p.instructions.keys().copied().collect();
            addrs.extend(ranges.ranges.iter().map(|r| r.0));
            let lines = Lines::of(bytes, &addrs);
            let text = callgrind(
                p,
                &ranges,
                &lines,
                &CallgrindHeader {
                    command: &report.program,
                    core: &format!("{} ({fidelity})", report.core),
                    dcache_cycles: report.dcache_cycles.unwrap_or(0),
                },
            );
            write_out(args.output.as_deref(), &text)?;
            return Ok(ExitCode::SUCCESS);
        }
    };
    write_out(args.output.as_deref(), &report.render(format)?)?;
    Ok(ExitCode::SUCCESS)
}

/// `text` to `path`, or to the standard output without one.
fn write_out(path: Option<&std::path::Path>, text: &str) -> anyhow::Result<()> {
    match path {
        None => emit(text),
        Some(path) => {
            use std::io::Write as _;
            create_output(path, "the profile")?
                .write_all(text.as_bytes())
                .map_err(|e| {
                    tag(
                        anyhow!("cannot write the profile to {}: {e}", path.display()),
                        Status::BadInput,
                    )
                })
        }
    }
}
