//! `retrace pp`: the partial-program table of a program, its loops and
//! if-else regions, and `--check`, which runs the program and verifies
//! instruction by instruction that execution follows the table.
//!
//! With `--core`, each partial program also gets its static cycles on that
//! core: its path issued into an idle pipeline by the same [`PathTimer`] the
//! replay uses (caches hitting, branches predicted by the core's static
//! rule), so the figures read as "what this path costs on its own".

use crate::cmd::common::{host, load_elf_bytes, ProgramArgs};
use crate::report::{csv_of, hex, print, FormatArgs, Report};
use crate::status::{tag, Status};
use anyhow::anyhow;
use retrace_estimate::annotate::Lines;
use retrace_estimate::StaticCycles;
use retrace_program::loops::Operand;
use retrace_program::{Addr, End, FuncId, Names, PpId, PpTable, Program, TripCount};
use serde::Serialize;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// Arguments of `retrace pp`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
The table has one row per partial program (PP): the longest instruction path
from a start point (function entry, branch target or fall-through, return
point, indirect target) to an end point (conditional branch, call, return,
indirect jump, ecall/ebreak), following direct jumps.

--check runs the program in the functional simulator (hart 0) and follows
the table along the run: every retired instruction must be the next one on
the current PP's path, and every PP must end in one of its successors.
Indirect targets the static analysis did not find are added to the table as
the run reaches them, as a replay would. 'covered' is the number of retired
instructions that were exactly the table's prediction; coverage is covered
divided by retired instructions. The check passes (status 0) with 100%
coverage and no mismatches, and fails with status 1 otherwise.

Examples:
  retrace pp prog.elf
  retrace pp prog.elf --function main --loops --regions
  retrace pp prog.elf --format csv > table.csv
  retrace pp prog.elf --core picorv32
  retrace pp prog.elf --check --format json -- 1000")]
pub struct Args {
    /// The program: a RISC-V ELF executable.
    pub program: PathBuf,
    /// Only the PPs, loops and regions of this function.
    #[arg(long, value_name = "NAME")]
    pub function: Option<String>,
    #[command(flatten)]
    pub output: FormatArgs,
    /// Print each function's loop nest with the Z1/X1/X2 flags and the
    /// trip-count test.
    #[arg(long)]
    pub loops: bool,
    /// Print each function's if-else regions.
    #[arg(long)]
    pub regions: bool,
    /// Add each partial program's static cycles on this core (a preset
    /// name or a TOML core description): its path issued into an idle
    /// pipeline, caches hitting, branches predicted by the core's static
    /// rule. A PP ending in a conditional branch shows `not-taken/taken`.
    #[arg(long, value_name = "NAME|FILE.toml", conflicts_with = "check")]
    pub core: Option<String>,
    #[command(flatten)]
    pub sets: super::common::CoreSets,
    /// Run the program and check that execution follows the table.
    #[arg(long)]
    pub check: bool,
    /// With --check: stop the run after this many instructions.
    #[arg(long, value_name = "N", requires = "check")]
    pub max_insns: Option<u64>,
    #[command(flatten)]
    pub program_args: ProgramArgs,
}

/// Entry point of `retrace pp`.
pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    let (elf, bytes) = load_elf_bytes(&args.program)?;
    let shown = args.program.display().to_string();
    let started = Instant::now();
    let program = Program::analyse(&elf).map_err(|e| {
        tag(
            anyhow!("cannot analyse program {shown}: {e}"),
            Status::BadInput,
        )
    })?;
    let analysis_seconds = started.elapsed().as_secs_f64();
    for w in &program.warnings {
        eprintln!("retrace: warning: {shown}: {w}");
    }
    if args.check {
        return check(&elf, program, &shown, &args);
    }
    let func = match &args.function {
        Some(name) => Some(
            program
                .function_named(name)
                .map_err(|e| tag(anyhow!("{shown}: {e}"), Status::BadInput))?,
        ),
        None => None,
    };
    let ids = selected(&program, func);
    let names = Names::new(&program, &elf);
    // Each partial program's first line, where the program has DWARF.
    let starts: Vec<u64> = ids
        .iter()
        .map(|&id| program.table.get(id).start.0)
        .collect();
    let lines = Lines::of(&bytes, &starts);
    let cycles = match &args.core {
        Some(spec) => {
            let core = super::common::load_core_with(spec, &args.sets.set)?;
            super::common::check_xlen(&core, &elf, &shown)?;
            Some(StaticCycles::new(&core, &program.table, &ids))
        }
        None => None,
    };
    let funcs: Vec<FuncId> = match func {
        Some(f) => vec![f],
        None => (0..program.functions.len())
            .map(|i| FuncId(i as u32))
            .collect(),
    };
    let report = PpReport {
        program: shown,
        function: func.map(|f| program.function(f).name.clone()),
        functions: program.functions.len(),
        instructions_decoded: program.table.code().decoded(),
        partial_programs: ids
            .iter()
            .map(|&id| PpRow::new(&program.table, id, &names, cycles.as_ref(), &lines))
            .collect(),
        warnings: program.warnings.iter().map(|w| w.to_string()).collect(),
        core: cycles.as_ref().map(|c| c.core.clone()),
        loops: args.loops.then(|| loop_rows(&program, &funcs, &names)),
        irreducible_edges: args
            .loops
            .then(|| irreducible_rows(&program, &funcs, &names)),
        regions: args.regions.then(|| region_rows(&program, &funcs, &names)),
        table_size: program.table.len(),
        analysis_seconds,
    };
    print(&report, args.output.get())?;
    Ok(ExitCode::SUCCESS)
}

/// One partial program. The successor fields appear for the end kinds
/// that have them (`null` when the successor is unknown).
#[derive(Serialize)]
pub struct PpRow {
    id: u32,
    #[serde(serialize_with = "hex")]
    start: u64,
    start_symbol: String,
    start_kinds: Vec<&'static str>,
    #[serde(serialize_with = "hex")]
    last: u64,
    /// The last instruction's name (`function+0x1c`).
    last_symbol: String,
    end: &'static str,
    instructions: u32,
    /// Runs of the path: start address and instruction count.
    path: Vec<(String, u32)>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cycles: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cycles_taken: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    taken: Option<Option<u32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    not_taken: Option<Option<u32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    call_target: Option<Option<u32>>,
    /// The called function's name, for a call whose target is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    call_target_symbol: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    return_point: Option<Option<u32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    next: Option<Option<u32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fault_at: Option<String>,
    /// The start's source line, `file:line` (null without debugging
    /// information).
    source: Option<String>,
}

impl PpRow {
    fn new(
        t: &PpTable,
        id: PpId,
        n: &Names<'_>,
        cycles: Option<&StaticCycles>,
        lines: &Lines,
    ) -> PpRow {
        let p = t.get(id);
        let j = |x: Option<PpId>| Some(x.map(|i| i.0));
        let cost = cycles.and_then(|c| c.get(id));
        let mut row = PpRow {
            id: id.0,
            start: p.start.0,
            start_symbol: n.at(p.start),
            start_kinds: p.starts.iter().map(|k| k.name()).collect(),
            last: p.last.0,
            last_symbol: n.at(p.last),
            end: p.end.kind().name(),
            instructions: p.len,
            path: t
                .runs(id)
                .iter()
                .map(|r| (format!("{:#x}", r.start.0), r.count))
                .collect(),
            cycles: cost.map(|c| c.cycles),
            cycles_taken: cost.and_then(|c| c.taken),
            source: lines.get(p.start.0).map(ToString::to_string),
            taken: None,
            not_taken: None,
            call_target: None,
            call_target_symbol: None,
            return_point: None,
            next: None,
            fault_at: None,
        };
        match p.end {
            End::Branch { taken, not_taken } => {
                row.taken = j(taken);
                row.not_taken = j(not_taken);
            }
            End::Call { target, ret } => {
                row.call_target = j(target);
                row.call_target_symbol = target.map(|c| n.at(t.get(c).start));
                row.return_point = j(ret);
            }
            End::IndirectCall { ret } => row.return_point = j(ret),
            End::Ecall { next } | End::Ebreak { next, .. } => row.next = j(next),
            End::Jump { target } => row.next = j(Some(target)),
            End::Fault { at } => row.fault_at = Some(format!("{:#x}", at.0)),
            _ => {}
        }
        row
    }

    /// The start kinds as `a|b`.
    fn starts_text(&self) -> String {
        self.start_kinds.join("|")
    }

    /// The patent's "end command": `branch(X)`, `callee:start @X`, …
    fn end_text(&self) -> String {
        let at = &self.last_symbol;
        match self.end {
            "branch" => format!("branch({at})"),
            "call" => match &self.call_target_symbol {
                Some(callee) => format!("{callee}:start @{at}"),
                None => format!("call ? @{at}"),
            },
            "fault" => format!(
                "fault: {} not executable",
                self.fault_at.as_deref().unwrap_or("?")
            ),
            kind => format!("{kind} @{at}"),
        }
    }

    /// The successors in short: `T:3 F:4`, `call:5 ret:6`, `next:7`, …
    fn successors_text(&self) -> String {
        let s = |x: Option<Option<u32>>| {
            x.flatten()
                .map_or_else(|| "-".to_string(), |i| i.to_string())
        };
        match self.end {
            "branch" => format!("T:{} F:{}", s(self.taken), s(self.not_taken)),
            "call" => format!("call:{} ret:{}", s(self.call_target), s(self.return_point)),
            "indirect-call" => format!("call:? ret:{}", s(self.return_point)),
            "ecall" | "semihost" | "ebreak" | "jump" => format!("next:{}", s(self.next)),
            "return" => "pop".into(),
            "fault" => "-".into(),
            _ => "?".into(),
        }
    }

    /// The cycles column of the text table: `n`, or `not-taken/taken`.
    fn cycles_text(&self) -> String {
        match (self.cycles, self.cycles_taken) {
            (Some(n), Some(t)) => format!("{n}/{t}"),
            (Some(n), None) => n.to_string(),
            _ => "-".into(),
        }
    }
}

/// One partial program as a CSV record (the table's columns, flat).
#[derive(Serialize)]
struct PpCsvRow<'a> {
    id: u32,
    start: String,
    start_symbol: &'a str,
    start_kinds: String,
    last: String,
    end_kind: &'static str,
    instructions: u32,
    taken: Option<u32>,
    not_taken: Option<u32>,
    call_target: Option<u32>,
    return_point: Option<u32>,
    next: Option<u32>,
    source: Option<&'a str>,
    /// Only with a core (outer `None`: no column).
    #[serde(skip_serializing_if = "Option::is_none")]
    cycles: Option<Option<u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cycles_taken: Option<Option<u64>>,
}

impl<'a> PpCsvRow<'a> {
    /// Row `r`; `timed`: whether a core was given (the cycle columns exist).
    fn new(r: &'a PpRow, timed: bool) -> Self {
        PpCsvRow {
            id: r.id,
            start: format!("{:#x}", r.start),
            start_symbol: &r.start_symbol,
            start_kinds: r.starts_text(),
            last: format!("{:#x}", r.last),
            end_kind: r.end,
            instructions: r.instructions,
            taken: r.taken.flatten(),
            not_taken: r.not_taken.flatten(),
            call_target: r.call_target.flatten(),
            return_point: r.return_point.flatten(),
            next: r.next.flatten(),
            source: r.source.as_deref(),
            cycles: timed.then_some(r.cycles),
            cycles_taken: timed.then_some(r.cycles_taken),
        }
    }
}

/// An address with its name (`function+0x10`).
#[derive(Serialize)]
pub struct Place {
    #[serde(serialize_with = "hex")]
    addr: u64,
    symbol: String,
}

impl Place {
    fn new(a: Addr, n: &Names<'_>) -> Place {
        Place {
            addr: a.0,
            symbol: n.at(a),
        }
    }
}

/// An operand of a loop's trip-count test.
#[derive(Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum OperandRow {
    /// `x0`.
    Zero,
    /// Set to a constant before the loop, not written in it.
    Constant { reg: u8, value: i64 },
    /// Not written in the loop.
    Invariant { reg: u8 },
    /// `reg += step` once per iteration.
    Induction {
        reg: u8,
        step: i64,
        init: Option<i64>,
    },
    /// Anything else.
    Varying { reg: u8 },
}

impl From<&Operand> for OperandRow {
    fn from(o: &Operand) -> Self {
        match *o {
            Operand::Zero => OperandRow::Zero,
            Operand::Constant { reg, value } => OperandRow::Constant { reg, value },
            Operand::Invariant { reg } => OperandRow::Invariant { reg },
            Operand::Induction { reg, step, init } => OperandRow::Induction { reg, step, init },
            Operand::Varying { reg } => OperandRow::Varying { reg },
        }
    }
}

impl std::fmt::Display for OperandRow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OperandRow::Zero => write!(f, "zero"),
            OperandRow::Constant { reg, value } => write!(f, "x{reg} = {value} (constant)"),
            OperandRow::Invariant { reg } => write!(f, "x{reg} (loop-invariant)"),
            OperandRow::Induction {
                reg,
                step,
                init: Some(i),
            } => write!(f, "x{reg} (induction {step:+}, from {i})"),
            OperandRow::Induction {
                reg,
                step,
                init: None,
            } => write!(f, "x{reg} (induction {step:+})"),
            OperandRow::Varying { reg } => write!(f, "x{reg} (varying)"),
        }
    }
}

/// A loop's trip-count test: its one exit branch and what decides it.
#[derive(Serialize)]
pub struct TripTestRow {
    branch: Place,
    /// The branch's mnemonic (`bne`, `bltu`, …).
    op: &'static str,
    operands: [OperandRow; 2],
}

/// One loop of the nest.
#[derive(Serialize)]
pub struct LoopRow {
    function: String,
    id: u32,
    parent: Option<u32>,
    depth: u32,
    #[serde(serialize_with = "hex")]
    header: u64,
    header_symbol: String,
    /// The last instructions of the blocks with a back edge, as addresses.
    latches: Vec<String>,
    latch_symbols: Vec<String>,
    blocks: usize,
    exit_edges: usize,
    exit_branches: Vec<String>,
    exit_branch_symbols: Vec<String>,
    /// Conditional branches in the loop (inner loops' included).
    branches: u32,
    /// Calls and environment calls in the loop.
    calls: u32,
    z1: bool,
    x1: bool,
    x2: bool,
    trip_count: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    trip_test: Option<TripTestRow>,
}

fn loop_rows(p: &Program, funcs: &[FuncId], n: &Names<'_>) -> Vec<LoopRow> {
    let mut all = Vec::new();
    for &f in funcs {
        let cfg = p.cfg(f);
        for l in p.loops(f).loops {
            let latches: Vec<Addr> = l.latches.iter().map(|b| cfg.block(*b).last).collect();
            all.push(LoopRow {
                function: p.function(f).name.clone(),
                id: l.id.0,
                parent: l.parent.map(|x| x.0),
                depth: l.depth,
                header: l.header_addr.0,
                header_symbol: n.at(l.header_addr),
                latches: latches.iter().map(|a| a.to_string()).collect(),
                latch_symbols: latches.iter().map(|a| n.at(*a)).collect(),
                blocks: l.body.len(),
                exit_edges: l.exits.len(),
                exit_branches: l.exit_branches.iter().map(|a| a.to_string()).collect(),
                exit_branch_symbols: l.exit_branches.iter().map(|a| n.at(*a)).collect(),
                branches: l.branches,
                calls: l.calls,
                z1: l.z1,
                x1: l.x1,
                x2: l.x2,
                trip_count: l.trip.map(|t| trip_name(t.count)),
                trip_test: l.trip.map(|t| TripTestRow {
                    branch: Place::new(t.branch, n),
                    op: t.op.mnemonic(),
                    operands: [(&t.operands[0]).into(), (&t.operands[1]).into()],
                }),
            });
        }
    }
    all
}

/// A retreating edge that forms no natural loop (irreducible control flow).
#[derive(Serialize)]
pub struct IrreducibleRow {
    function: String,
    /// The last instruction of the edge's source block.
    from: Place,
    /// The first instruction of its target block.
    to: Place,
}

fn irreducible_rows(p: &Program, funcs: &[FuncId], n: &Names<'_>) -> Vec<IrreducibleRow> {
    let mut all = Vec::new();
    for &f in funcs {
        let cfg = p.cfg(f);
        for (a, b) in p.loops(f).irreducible {
            all.push(IrreducibleRow {
                function: p.function(f).name.clone(),
                from: Place::new(cfg.block(a).last, n),
                to: Place::new(cfg.block(b).start, n),
            });
        }
    }
    all
}

/// One if-else region.
#[derive(Serialize)]
pub struct RegionRow {
    function: String,
    /// Its index among the function's regions.
    id: usize,
    #[serde(serialize_with = "hex")]
    branch: u64,
    branch_symbol: String,
    #[serde(serialize_with = "hex")]
    merge: u64,
    merge_symbol: String,
    kind: String,
    blocks: usize,
    /// The smallest region of the function containing this one's branch.
    parent: Option<usize>,
    #[serde(rename = "loop")]
    in_loop: Option<u32>,
}

fn region_rows(p: &Program, funcs: &[FuncId], n: &Names<'_>) -> Vec<RegionRow> {
    let mut all = Vec::new();
    for &f in funcs {
        for (i, r) in p.regions(f).into_iter().enumerate() {
            all.push(RegionRow {
                function: p.function(f).name.clone(),
                id: i,
                branch: r.branch.0,
                branch_symbol: n.at(r.branch),
                merge: r.merge_addr.0,
                merge_symbol: n.at(r.merge_addr),
                kind: format!("{:?}", r.kind),
                blocks: r.blocks.len(),
                parent: r.parent,
                in_loop: r.in_loop.map(|l| l.0),
            });
        }
    }
    all
}

/// What `retrace pp` reports.
#[derive(Serialize)]
pub struct PpReport {
    program: String,
    /// The function asked for with --function.
    #[serde(skip_serializing_if = "Option::is_none")]
    function: Option<String>,
    functions: usize,
    instructions_decoded: usize,
    partial_programs: Vec<PpRow>,
    warnings: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    core: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    loops: Option<Vec<LoopRow>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    irreducible_edges: Option<Vec<IrreducibleRow>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    regions: Option<Vec<RegionRow>>,
    /// Partial programs in the whole table (the rows may be one function's).
    table_size: usize,
    analysis_seconds: f64,
}

/// The functions a section of the text covers, in the rows' order: those
/// with rows, or the one asked for (shown even without any).
fn section_functions<'a>(
    names: impl Iterator<Item = &'a str>,
    asked: Option<&'a str>,
) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for name in names {
        if out.last() != Some(&name) {
            out.push(name);
        }
    }
    if let Some(f) = asked {
        if out.is_empty() {
            out.push(f);
        }
    }
    out
}

impl PpReport {
    fn loops_text(&self, out: &mut String) {
        let (Some(loops), irreducible) = (&self.loops, self.irreducible_edges.as_deref()) else {
            return;
        };
        let irreducible = irreducible.unwrap_or_default();
        let asked = self.function.as_deref();
        for func in section_functions(loops.iter().map(|l| l.function.as_str()), asked) {
            let _ = writeln!(out, "\nloops of {func}:");
            let mut any = false;
            for l in loops.iter().filter(|l| l.function == func) {
                any = true;
                let indent = "  ".repeat(l.depth as usize);
                let _ = writeln!(
                    out,
                    "{indent}L{} header {} ({} blocks, latches [{}], {} exit edges, exit branches [{}], {} branches, {} calls) Z1={} X1={} X2={}",
                    l.id,
                    l.header_symbol,
                    l.blocks,
                    l.latch_symbols.join(", "),
                    l.exit_edges,
                    l.exit_branch_symbols.join(", "),
                    l.branches,
                    l.calls,
                    yes(l.z1),
                    yes(l.x1),
                    yes(l.x2)
                );
                if let (Some(t), Some(count)) = (&l.trip_test, l.trip_count) {
                    let _ = writeln!(
                        out,
                        "{indent}  trip-count test {} at {}: {} vs {}: {count}",
                        t.op, t.branch.symbol, t.operands[0], t.operands[1]
                    );
                }
            }
            if !any {
                let _ = writeln!(out, "  none");
            }
            for e in irreducible.iter().filter(|e| e.function == func) {
                let _ = writeln!(
                    out,
                    "  irreducible edge {} -> {}",
                    e.from.symbol, e.to.symbol
                );
            }
        }
    }

    fn regions_text(&self, out: &mut String) {
        let Some(regions) = &self.regions else {
            return;
        };
        let asked = self.function.as_deref();
        for func in section_functions(regions.iter().map(|r| r.function.as_str()), asked) {
            let _ = writeln!(out, "\nif-else regions of {func}:");
            let mut any = false;
            for r in regions.iter().filter(|r| r.function == func) {
                any = true;
                let _ = writeln!(
                    out,
                    "  R{} branch {} merge {} ({}, {} blocks){}{}",
                    r.id,
                    r.branch_symbol,
                    r.merge_symbol,
                    r.kind,
                    r.blocks,
                    r.parent
                        .map(|p| format!(" inside R{p}"))
                        .unwrap_or_default(),
                    r.in_loop
                        .map(|l| format!(" in loop L{l}"))
                        .unwrap_or_default()
                );
            }
            if !any {
                let _ = writeln!(out, "  none");
            }
        }
    }
}

impl Report for PpReport {
    fn text(&self) -> String {
        let mut out = String::new();
        let timed = self.core.is_some();
        if let Some(c) = &self.core {
            let _ = writeln!(
                out,
                "cycles on core {c}: from an idle pipeline; not-taken/taken for branches"
            );
        }
        let _ = writeln!(
            out,
            "{:>6}  {:<34} {:<18} {:<44} {:>6}{}  successors  (source)",
            "ID",
            "start",
            "start kind",
            "end",
            "insts",
            if timed {
                format!("  {:>11}", "cycles")
            } else {
                String::new()
            }
        );
        for r in &self.partial_programs {
            let _ = writeln!(
                out,
                "{:>6}  {:<34} {:<18} {:<44} {:>6}{}  {}{}",
                r.id,
                format!("{} ({})", r.start_symbol, Addr(r.start)),
                r.starts_text(),
                r.end_text(),
                r.instructions,
                if timed {
                    format!("  {:>11}", r.cycles_text())
                } else {
                    String::new()
                },
                r.successors_text(),
                r.source
                    .as_ref()
                    .map(|s| format!("  ({s})"))
                    .unwrap_or_default()
            );
        }
        self.loops_text(&mut out);
        self.regions_text(&mut out);
        let _ = writeln!(
            out,
            "{} partial programs ({} shown), {} functions, {} instructions decoded, {} warnings; analysed in {:.1} ms",
            self.table_size,
            self.partial_programs.len(),
            self.functions,
            self.instructions_decoded,
            self.warnings.len(),
            self.analysis_seconds * 1e3
        );
        out
    }

    fn csv(&self) -> anyhow::Result<String> {
        let timed = self.core.is_some();
        let rows: Vec<PpCsvRow<'_>> = self
            .partial_programs
            .iter()
            .map(|r| PpCsvRow::new(r, timed))
            .collect();
        csv_of(&rows)
    }
}

/// The PPs to show: all, or those starting at a block of one function.
fn selected(program: &Program, func: Option<FuncId>) -> Vec<PpId> {
    match func {
        None => program.table.iter().map(|(id, _)| id).collect(),
        Some(f) => {
            let mut ids: Vec<PpId> = program
                .cfg(f)
                .blocks
                .iter()
                .filter_map(|b| program.table.lookup(b.start))
                .collect();
            ids.sort();
            ids.dedup();
            ids
        }
    }
}

fn trip_name(c: TripCount) -> &'static str {
    match c {
        TripCount::Constant => "constant (type 1)",
        TripCount::PerExecution => "fixed per execution (type 2)",
        TripCount::Unknown => "data-dependent",
    }
}

fn yes(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

/// What `retrace pp --check` reports.
#[derive(Serialize)]
pub struct CheckReport {
    program: String,
    /// How the run ended (`exit`, `runaway`, …).
    stop: &'static str,
    exit_code: Option<u32>,
    /// Partial programs the static analysis found.
    partial_programs: usize,
    executed_partial_programs: u64,
    added_partial_programs: u64,
    pp_executions: u64,
    executed_instructions: u64,
    covered_instructions: u64,
    coverage_percent: f64,
    mismatches: u64,
    first_mismatches: Vec<String>,
    return_escapes: u64,
    traps: u64,
    analysis_warnings: usize,
    ok: bool,
    /// How the run ended, in words.
    stop_detail: String,
}

impl Report for CheckReport {
    fn text(&self) -> String {
        let mut out = format!(
            "{}: {} of {} executed instructions covered ({:.4}%), {} mismatches; \
             {} of {} partial programs executed ({} executions), {} added at run time; \
             {} return escapes, {} traps; program stopped: {}\n",
            self.program,
            self.covered_instructions,
            self.executed_instructions,
            self.coverage_percent,
            self.mismatches,
            self.executed_partial_programs,
            // Executed ones include those found at run time (trap
            // handlers, indirect targets), so count them in the whole.
            self.partial_programs as u64 + self.added_partial_programs,
            self.pp_executions,
            self.added_partial_programs,
            self.return_escapes,
            self.traps,
            self.stop_detail
        );
        for m in &self.first_mismatches {
            let _ = writeln!(out, "  mismatch: {m}");
        }
        out
    }

    fn csv(&self) -> anyhow::Result<String> {
        Err(tag(
            anyhow!(
                "--check reports one record with a list of mismatches; use --format text or json"
            ),
            Status::BadInput,
        ))
    }
}

fn check(
    elf: &retrace_program::Elf,
    mut program: Program,
    shown: &str,
    args: &Args,
) -> anyhow::Result<ExitCode> {
    let static_pps = program.table.len();
    let (result, report) = retrace_sim::check::check_table(
        elf,
        &mut program.table,
        host(shown, &args.program_args.args),
        args.max_insns,
    )
    .map_err(|e| {
        tag(
            anyhow!("cannot load program {shown}: {e}"),
            Status::BadInput,
        )
    })?;
    let ok = report.mismatches == 0 && report.covered_instructions == report.executed_instructions;
    let out = CheckReport {
        program: shown.to_string(),
        stop: result.stop.kind(),
        exit_code: result.exit_code(),
        partial_programs: static_pps,
        executed_partial_programs: report.executed_partial_programs,
        added_partial_programs: report.added_partial_programs,
        pp_executions: report.pp_executions,
        executed_instructions: report.executed_instructions,
        covered_instructions: report.covered_instructions,
        coverage_percent: report.coverage_percent(),
        mismatches: report.mismatches,
        first_mismatches: report
            .first_mismatches
            .iter()
            .map(|m| m.to_string())
            .collect(),
        return_escapes: report.return_escapes,
        traps: report.traps,
        analysis_warnings: program.warnings.len(),
        ok,
        stop_detail: result.stop.to_string(),
    };
    print(&out, args.output.get())?;
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
