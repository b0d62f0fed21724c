//! `retrace annotate`: per source line and per instruction, what a
//! function's code cost on a core — cycles, executions, mispredictions,
//! I-cache misses — with the source interleaved with the disassembly as
//! `objdump -S` and `perf annotate` show it.

use super::common::thousands;
use super::profile::{cpi_table, csv_with_cpi, profiled, Profiled};
use crate::report::{hex, print, FormatArgs, Report};
use crate::status::{tag, Status};
use anyhow::anyhow;
use retrace_estimate::annotate::{annotate, AnnotatedFunction, Lines, SourceRef};
use retrace_program::FunctionRanges;
use retrace_timing::CpiStack;
use serde::Serialize;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments of `retrace annotate`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Each instruction is charged the cycles by which it advances the core's issue\n\
    clock (docs/REPORTS.md): a stall lands on the instruction that waited, a branch\n\
    penalty on the branch, a trap on the last instruction issued (an ecall itself);\n\
    so the figures of all instructions sum to the run's cycles (the data-cache term,\n\
    estimated for the whole run, aside). Source lines are the innermost inlined frame's, from the\n\
    program's debugging information (build it with -g); the source text is read\n\
    from the file the DWARF names, looked for under the current directory, the\n\
    program's directory and its parents, and each --source-dir.\n\n\
    Examples:\n  \
    retrace annotate prog.elf prog.rtrace --core rocket\n  \
    retrace annotate prog.elf prog.rtrace --core rocket --function quick_sort\n  \
    retrace annotate prog.elf prog.rtrace --core picorv32 --fidelity fast --format csv\n  \
    retrace annotate prog.elf prog.rtrace --core inorder5 --cpi"
)]
pub struct Args {
    /// The program, its trace, the core and the fidelity.
    #[command(flatten)]
    pub run: super::profile::ProfiledArgs,
    /// Annotate this function only (default: the hottest ones).
    #[arg(long, value_name = "NAME")]
    pub function: Option<String>,
    /// How many of the hottest functions (by exclusive cycles).
    #[arg(long, default_value_t = 3)]
    pub top: usize,
    /// Also split the cycles of each function, source line and instruction
    /// by cause, their CPI stacks (docs/REPORTS.md): a table per function
    /// in text, a `cpi` object in JSON, a column per part in CSV.
    #[arg(long)]
    pub cpi: bool,
    /// Also look for source files under DIR (repeatable).
    #[arg(long, value_name = "DIR")]
    pub source_dir: Vec<PathBuf>,
    /// Output format (csv: one row per instruction).
    #[command(flatten)]
    pub output: FormatArgs,
}

/// One instruction's row.
#[derive(Clone, Serialize)]
pub struct InstructionRow {
    /// The function it lies in.
    pub function: String,
    /// Its address.
    #[serde(serialize_with = "hex")]
    pub pc: u64,
    /// Its source line, `file:line` (empty without debugging information).
    pub source: Option<String>,
    /// Cycles charged to it.
    pub cycles: u64,
    /// Times executed.
    pub executions: u64,
    /// Times mispredicted (a branch's direction, a return's target).
    pub mispredicts: u64,
    /// Times its fetch missed the I-cache.
    pub icache_misses: u64,
    /// objdump's text of it.
    pub instruction: String,
    /// Its cycles by cause (with `--cpi`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpi: Option<CpiStack>,
}

/// One source line's share of a function.
#[derive(Serialize)]
pub struct LineRow {
    /// `file:line` (null: instructions without a line).
    pub source: Option<String>,
    /// Cycles of its instructions in the function.
    pub cycles: u64,
    /// Its instructions executed.
    pub instructions: u64,
    /// Mispredictions of its branches and returns.
    pub mispredicts: u64,
    /// I-cache misses fetching it.
    pub icache_misses: u64,
    /// Its cycles by cause (with `--cpi`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpi: Option<CpiStack>,
}

/// One annotated function.
#[derive(Serialize)]
pub struct FunctionAnnotation {
    /// Its name.
    pub name: String,
    /// Its entry address.
    #[serde(serialize_with = "hex")]
    pub entry: u64,
    /// Its exclusive cycles (the sum over its instructions).
    pub cycles: u64,
    /// Its instructions executed.
    pub instructions: u64,
    /// Its exclusive cycles by cause (with `--cpi`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpi: Option<CpiStack>,
    /// Its source lines with any cost, most cycles first.
    pub lines: Vec<LineRow>,
    /// Its instructions, in address order.
    pub code: Vec<InstructionRow>,
    /// The line number and source text of each line shown, by
    /// `file:line`, where the file was found (not serialised: the text
    /// view's).
    #[serde(skip)]
    pub text: HashMap<String, (u32, String)>,
}

/// What `retrace annotate` reports.
#[derive(Serialize)]
pub struct AnnotateReport {
    /// The program as given.
    pub program: String,
    /// The core's name.
    pub core: String,
    /// The fidelity of the replay.
    pub fidelity: String,
    /// Estimated cycles of the run, the data-cache term included.
    pub cycles: u64,
    /// Of `cycles`, the data-cache term: estimated for the whole run, not
    /// charged to any instruction (null without one).
    pub dcache_cycles: Option<u64>,
    /// Instructions replayed.
    pub instructions: u64,
    /// Why there are no source lines, when there are none.
    pub no_lines: Option<String>,
    /// The functions annotated.
    pub functions: Vec<FunctionAnnotation>,
}

/// A share of the run's cycles, in percent.
fn percent(part: u64, total: u64) -> f64 {
    part as f64 * 100.0 / total.max(1) as f64
}

impl Report for AnnotateReport {
    fn text(&self) -> String {
        let mut o = String::new();
        let _ = writeln!(
            o,
            "{} on {} ({}): {} cycles, {} instructions",
            self.program,
            self.core,
            self.fidelity,
            thousands(self.cycles),
            thousands(self.instructions)
        );
        if let Some(d) = self.dcache_cycles {
            let _ = writeln!(
                o,
                "  of which {} cycles ({:.2}%) are the data cache's, estimated for the whole run and charged to no instruction",
                thousands(d),
                percent(d, self.cycles)
            );
        }
        if let Some(why) = &self.no_lines {
            let _ = writeln!(o, "  no source lines: the program {why}");
        }
        let _ = writeln!(o, "  percentages are of this total");
        for f in &self.functions {
            let _ = writeln!(
                o,
                "\n{} ({:#x}): {} cycles ({:.2}%), {} instructions executed",
                f.name,
                f.entry,
                thousands(f.cycles),
                percent(f.cycles, self.cycles),
                thousands(f.instructions)
            );
            let _ = writeln!(
                o,
                "\n  {:<40} {:>12} {:>7} {:>12} {:>9} {:>7}",
                "source line", "cycles", "%", "instructions", "mispred", "i$miss"
            );
            for l in f.lines.iter().take(10) {
                let _ = writeln!(
                    o,
                    "  {:<40} {:>12} {:>6.2}% {:>12} {:>9} {:>7}",
                    l.source.as_deref().unwrap_or("(no line)"),
                    thousands(l.cycles),
                    percent(l.cycles, self.cycles),
                    thousands(l.instructions),
                    thousands(l.mispredicts),
                    thousands(l.icache_misses)
                );
            }
            if let Some(total) = f.cpi {
                let mut rows = vec![("(the function)".to_string(), total)];
                rows.extend(f.lines.iter().take(10).filter_map(|l| {
                    let name = l.source.as_deref().unwrap_or("(no line)").to_string();
                    Some((name, l.cpi?))
                }));
                let _ = writeln!(o, "\n  CPI stacks (% of each row's cycles)");
                cpi_table(&mut o, "source line", &rows);
            }
            let _ = writeln!(
                o,
                "\n{:>12} {:>7} {:>11} {:>7} {:>6} |",
                "cycles", "%", "executed", "mispred", "i$miss"
            );
            let line_cycles: HashMap<&str, u64> = f
                .lines
                .iter()
                .filter_map(|l| Some((l.source.as_deref()?, l.cycles)))
                .collect();
            let gutter = format!("{:>47} |", "");
            let mut last: Option<&str> = None;
            for row in &f.code {
                let here = row.source.as_deref();
                if let Some(s) = here.filter(|_| here != last) {
                    let cycles = line_cycles.get(s).copied().unwrap_or(0);
                    let _ = writeln!(
                        o,
                        "{gutter} {s}  ({} cycles, {:.2}%)",
                        thousands(cycles),
                        percent(cycles, self.cycles)
                    );
                    if let Some((line, text)) = f.text.get(s) {
                        let _ = writeln!(o, "{gutter} {line:>6}  {text}");
                    }
                }
                last = here;
                if row.executions == 0 && row.cycles == 0 {
                    let _ = writeln!(o, "{gutter} {:>8x}:  {}", row.pc, row.instruction);
                } else {
                    let _ = writeln!(
                        o,
                        "{:>12} {:>6.2}% {:>11} {:>7} {:>6} | {:>8x}:  {}",
                        thousands(row.cycles),
                        percent(row.cycles, self.cycles),
                        thousands(row.executions),
                        thousands(row.mispredicts),
                        thousands(row.icache_misses),
                        row.pc,
                        row.instruction
                    );
                }
            }
        }
        o
    }

    fn csv(&self) -> anyhow::Result<String> {
        let rows: Vec<InstructionRow> = self
            .functions
            .iter()
            .flat_map(|f| f.code.iter().cloned())
            .collect();
        csv_with_cpi(&rows, |r| &mut r.cpi)
    }
}

/// Source files, read once each, found under the places `retrace annotate
/// --help` names.
struct SourceFiles {
    roots: Vec<PathBuf>,
    files: HashMap<String, Option<Vec<String>>>,
}

impl SourceFiles {
    fn new(program: &Path, extra: &[PathBuf]) -> SourceFiles {
        let mut roots = vec![PathBuf::from(".")];
        if let Ok(p) = program.canonicalize() {
            roots.extend(p.ancestors().skip(1).map(Path::to_path_buf));
        }
        roots.extend(extra.iter().cloned());
        SourceFiles {
            roots,
            files: HashMap::new(),
        }
    }

    /// The text of `r`'s line, if its file is found.
    fn line(&mut self, r: &SourceRef) -> Option<String> {
        let roots = &self.roots;
        let lines = self.files.entry(r.file.clone()).or_insert_with(|| {
            let path = Path::new(&r.file);
            let found = if path.is_absolute() {
                path.is_file().then(|| path.to_path_buf())
            } else {
                roots.iter().map(|d| d.join(path)).find(|p| p.is_file())
            }?;
            let text = std::fs::read(found).ok()?;
            Some(
                String::from_utf8_lossy(&text)
                    .lines()
                    .map(|l| l.trim_end().replace('\t', "    "))
                    .collect(),
            )
        });
        lines
            .as_ref()?
            .get(r.line.checked_sub(1)? as usize)
            .cloned()
    }
}

/// The functions to annotate (indices into `ranges`): `--function`, or
/// the hottest.
fn chosen(args: &Args, p: &Profiled, ranges: &FunctionRanges) -> anyhow::Result<Vec<usize>> {
    match &args.function {
        Some(name) => {
            let i = ranges.names.iter().position(|n| n == name).ok_or_else(|| {
                tag(
                    anyhow!(
                        "no function {name:?} in {}; `retrace profile {} {}` lists the functions that ran",
                        p.shown,
                        p.shown,
                        args.run.trace.display()
                    ),
                    Status::BadInput,
                )
            })?;
            Ok(vec![i])
        }
        None => Ok(p
            .profile
            .functions
            .iter()
            .filter(|f| f.exclusive > 0)
            .take(args.top)
            .filter_map(|f| ranges.ranges.iter().position(|r| r.0 == f.entry))
            .collect()),
    }
}

/// Entry point of `retrace annotate`.
pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    let p = profiled(&args.run)?;
    let ranges = FunctionRanges::of_program(&p.program);
    let which = chosen(&args, &p, &ranges)?;
    let addrs: Vec<u64> = which
        .iter()
        .flat_map(|&f| {
            let (entry, size) = ranges.ranges[f];
            retrace_estimate::annotate::instructions_of(&p.program, entry, size)
                .into_iter()
                .map(|(pc, _)| pc)
        })
        .collect();
    let lines = Lines::of(&p.bytes, &addrs);
    let annotated = annotate(
        &p.program,
        &p.elf,
        &lines,
        &ranges,
        &which,
        &p.profile.instructions,
    );
    let mut sources = SourceFiles::new(&args.run.program, &args.source_dir);
    let functions = annotated
        .into_iter()
        .map(|f| function_rows(f, &mut sources, args.cpi))
        .collect();
    let e = &p.estimate;
    let report = AnnotateReport {
        program: p.shown.clone(),
        core: p.core.name.clone(),
        fidelity: p.fidelity.to_string(),
        cycles: e.cycles,
        dcache_cycles: (p.core.dcache.is_some() && e.dcache_measured).then_some(e.dcache_cycles),
        instructions: e.instructions,
        no_lines: lines.missing.clone(),
        functions,
    };
    print(&report, args.output.get())?;
    Ok(ExitCode::SUCCESS)
}

/// A function's rows, with the text of its source lines.
fn function_rows(f: AnnotatedFunction, sources: &mut SourceFiles, cpi: bool) -> FunctionAnnotation {
    let mut text = HashMap::new();
    for i in &f.instructions {
        if let Some(r) = &i.source {
            if let std::collections::hash_map::Entry::Vacant(v) = text.entry(r.to_string()) {
                if let Some(t) = sources.line(r) {
                    v.insert((r.line, t));
                }
            }
        }
    }
    FunctionAnnotation {
        name: f.name.clone(),
        entry: f.entry,
        cycles: f.cost.cycles,
        instructions: f.cost.executions,
        cpi: cpi.then_some(f.cost.cpi),
        lines: f
            .lines
            .iter()
            .map(|l| LineRow {
                source: l.source.as_ref().map(ToString::to_string),
                cycles: l.cost.cycles,
                instructions: l.cost.executions,
                mispredicts: l.cost.mispredicts,
                icache_misses: l.cost.icache_misses,
                cpi: cpi.then_some(l.cost.cpi),
            })
            .collect(),
        code: f
            .instructions
            .iter()
            .map(|i| InstructionRow {
                function: f.name.clone(),
                pc: i.pc,
                source: i.source.as_ref().map(ToString::to_string),
                cycles: i.cost.cycles,
                executions: i.cost.executions,
                mispredicts: i.cost.mispredicts,
                icache_misses: i.cost.icache_misses,
                instruction: i.text.clone(),
                cpi: cpi.then_some(i.cost.cpi),
            })
            .collect(),
        text,
    }
}
