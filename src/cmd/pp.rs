//! `retrace pp`: the partial-program table of a program, its loops and
//! if-else regions, and `--check`, which runs the program and verifies
//! instruction by instruction that execution follows the table.
//!
//! With `--core`, each partial program also gets its static cycles on that
//! core: its path issued into an idle pipeline by the same [`PathTimer`] the
//! replay uses (caches hitting, branches predicted by the core's static
//! rule), so the figures read as "what this path costs on its own".

use crate::cmd::run::load_elf;
use crate::status::{tag, Status};
use anyhow::anyhow;
use clap::ValueEnum;
use retrace_program::loops::Operand;
use retrace_program::{Addr, CheckReport, Checker, End, FuncId, PpId, PpTable, Program, TripCount};
use retrace_sim::{Console, HostConfig, Machine, MachineConfig, Observer, Retired, TrapEvent};
use retrace_timing::{static_prediction, Events, PathTimer, SignatureId};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// Output format of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// A table for people.
    Text,
    /// One JSON object.
    Json,
    /// Comma-separated values with a header line.
    Csv,
}

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
  retrace pp prog.elf --check --json -- 1000")]
pub struct Args {
    /// The program: a RISC-V ELF executable.
    pub program: PathBuf,
    /// Only the PPs, loops and regions of this function.
    #[arg(long, value_name = "NAME")]
    pub function: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
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
    /// Run the program and check that execution follows the table.
    #[arg(long)]
    pub check: bool,
    /// With --check: print the report as one JSON object.
    #[arg(long, requires = "check")]
    pub json: bool,
    /// With --check: stop the run after this many instructions.
    #[arg(long, value_name = "N", requires = "check")]
    pub max_insns: Option<u64>,
    /// Arguments passed to the program with --check.
    #[arg(last = true, value_name = "ARGS")]
    pub args: Vec<String>,
}

/// Entry point of `retrace pp`.
pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    let elf = load_elf(&args.program)?;
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
    let cycles = match &args.core {
        Some(spec) => {
            let core = super::common::load_core(spec)?;
            super::common::check_xlen(&core, &elf, &shown)?;
            Some(PpCycles::new(&core, &program.table, &ids))
        }
        None => None,
    };
    let cycles = cycles.as_ref();
    let mut out = String::new();
    match args.format {
        Format::Text => {
            text_table(&mut out, &program.table, &ids, &names, cycles);
            let funcs: Vec<FuncId> = match func {
                Some(f) => vec![f],
                None => (0..program.functions.len())
                    .map(|i| FuncId(i as u32))
                    .collect(),
            };
            if args.loops {
                for &f in &funcs {
                    loops_text(&mut out, &program, f, &names, func.is_some());
                }
            }
            if args.regions {
                for &f in &funcs {
                    regions_text(&mut out, &program, f, &names, func.is_some());
                }
            }
            let _ = writeln!(
                out,
                "{} partial programs ({} shown), {} functions, {} instructions decoded, {} warnings; analysed in {:.1} ms",
                program.table.len(),
                ids.len(),
                program.functions.len(),
                program.table.code().decoded(),
                program.warnings.len(),
                analysis_seconds * 1e3
            );
        }
        Format::Csv => csv_table(&mut out, &program.table, &ids, &names, cycles),
        Format::Json => {
            let v = json_all(&program, &ids, &names, func, &args, cycles);
            out = format!("{v}\n");
        }
    }
    emit(&out)?;
    Ok(ExitCode::SUCCESS)
}

/// Static cycles of partial programs on one core.
struct PpCycles {
    core: String,
    /// Per PP index: cycles when it falls through (or does not end in a
    /// conditional branch), and when its final branch is taken.
    cycles: Vec<Option<(u64, Option<u64>)>>,
}

impl PpCycles {
    fn new(core: &retrace_timing::CoreModel, t: &PpTable, ids: &[PpId]) -> PpCycles {
        let mut timer = PathTimer::new(core);
        let mut cycles = vec![None; t.len()];
        for &id in ids {
            let insts: Vec<_> = t.insts(id).map(|(_, i)| i).collect();
            let mut time = |last: Events| {
                let n = insts.len();
                let path = insts
                    .iter()
                    .enumerate()
                    .map(|(k, i)| (i, if k + 1 == n { last } else { Events::default() }));
                timer.time(SignatureId::IDLE, path).0
            };
            let branch = match (t.get(id).end, insts.last()) {
                (End::Branch { .. }, Some(b)) => Some(b.imm < 0),
                _ => None,
            };
            let c = match branch {
                Some(backward) => {
                    // The core's static prediction decides which direction
                    // pays the misprediction penalty.
                    let predicted = static_prediction(core.branch.predictor, backward);
                    let ev = |taken: bool| Events {
                        taken,
                        mispredict: predicted != taken,
                        ..Events::default()
                    };
                    (time(ev(false)), Some(time(ev(true))))
                }
                None => (time(Events::default()), None),
            };
            cycles[id.index()] = Some(c);
        }
        PpCycles {
            core: core.name.clone(),
            cycles,
        }
    }

    fn get(&self, id: PpId) -> Option<(u64, Option<u64>)> {
        self.cycles.get(id.index()).copied().flatten()
    }

    fn text(&self, id: PpId) -> String {
        match self.get(id) {
            Some((n, Some(t))) => format!("{n}/{t}"),
            Some((n, None)) => n.to_string(),
            None => "-".into(),
        }
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

/// Symbolic names for addresses.
struct Names<'a> {
    program: &'a Program,
    elf: &'a retrace_program::Elf,
}

impl<'a> Names<'a> {
    fn new(program: &'a Program, elf: &'a retrace_program::Elf) -> Self {
        Names { program, elf }
    }

    /// `sym+0x10`, or the bare address.
    fn at(&self, a: Addr) -> String {
        if let Some(f) = self.program.function_containing(a) {
            let func = self.program.function(f);
            let off = a.0 - func.entry.0;
            return if off == 0 {
                func.name.clone()
            } else {
                format!("{}+{:#x}", func.name, off)
            };
        }
        self.elf.describe(a.0).unwrap_or_else(|| a.to_string())
    }
}

fn pp_ref(id: Option<PpId>) -> String {
    id.map_or_else(|| "-".to_string(), |i| i.to_string())
}

/// The seed's "end command": `branch(X)`, `callee:start | ret`, `f:end` …
fn end_text(t: &PpTable, id: PpId, n: &Names<'_>) -> String {
    let p = t.get(id);
    let at = n.at(p.last);
    match p.end {
        End::Branch { .. } => format!("branch({at})"),
        End::Call { target, .. } => match target {
            Some(c) => format!("{}:start @{at}", n.at(t.get(c).start)),
            None => format!("call ? @{at}"),
        },
        End::IndirectCall { .. } => format!("indirect-call @{at}"),
        End::Return => format!("return @{at}"),
        End::IndirectJump => format!("indirect-jump @{at}"),
        End::Ecall { .. } => format!("ecall @{at}"),
        End::Ebreak {
            semihosting: true, ..
        } => format!("semihost @{at}"),
        End::Ebreak { .. } => format!("ebreak @{at}"),
        End::TrapReturn => format!("trap-return @{at}"),
        End::Jump { .. } => format!("jump @{at}"),
        End::Fault { at: f } => format!("fault: {} not executable", f),
    }
}

fn succ_text(t: &PpTable, id: PpId) -> String {
    let s = pp_ref;
    match t.get(id).end {
        End::Branch { taken, not_taken } => format!("T:{} F:{}", s(taken), s(not_taken)),
        End::Call { target, ret } => format!("call:{} ret:{}", s(target), s(ret)),
        End::IndirectCall { ret } => format!("call:? ret:{}", s(ret)),
        End::Ecall { next } | End::Ebreak { next, .. } => format!("next:{}", s(next)),
        End::Jump { target } => format!("next:{target}"),
        End::Return => "pop".into(),
        End::IndirectJump | End::TrapReturn => "?".into(),
        End::Fault { .. } => "-".into(),
    }
}

fn text_table(
    out: &mut String,
    t: &PpTable,
    ids: &[PpId],
    n: &Names<'_>,
    cycles: Option<&PpCycles>,
) {
    if let Some(c) = cycles {
        let _ = writeln!(
            out,
            "cycles on core {}: from an idle pipeline; not-taken/taken for branches",
            c.core
        );
    }
    let _ = writeln!(
        out,
        "{:>6}  {:<34} {:<18} {:<44} {:>6}{}  successors",
        "ID",
        "start",
        "start kind",
        "end",
        "insts",
        if cycles.is_some() {
            format!("  {:>11}", "cycles")
        } else {
            String::new()
        }
    );
    for &id in ids {
        let p = t.get(id);
        let _ = writeln!(
            out,
            "{:>6}  {:<34} {:<18} {:<44} {:>6}{}  {}",
            id.0,
            format!("{} ({})", n.at(p.start), p.start),
            p.starts.to_string(),
            end_text(t, id, n),
            p.len,
            cycles.map_or_else(String::new, |c| format!("  {:>11}", c.text(id))),
            succ_text(t, id)
        );
    }
}

fn opt(x: Option<PpId>) -> String {
    x.map(|i| i.0.to_string()).unwrap_or_default()
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn csv_table(
    out: &mut String,
    t: &PpTable,
    ids: &[PpId],
    n: &Names<'_>,
    cycles: Option<&PpCycles>,
) {
    out.push_str("id,start,start_symbol,start_kinds,last,end_kind,instructions,taken,not_taken,call_target,return_point,next");
    out.push_str(if cycles.is_some() {
        ",cycles,cycles_taken\n"
    } else {
        "\n"
    });
    for &id in ids {
        let p = t.get(id);
        let (mut taken, mut not_taken, mut target, mut ret, mut next) =
            (None, None, None, None, None);
        match p.end {
            End::Branch {
                taken: a,
                not_taken: b,
            } => (taken, not_taken) = (a, b),
            End::Call { target: a, ret: b } => (target, ret) = (a, b),
            End::IndirectCall { ret: b } => ret = b,
            End::Ecall { next: a } | End::Ebreak { next: a, .. } => next = a,
            End::Jump { target: a } => next = Some(a),
            _ => {}
        }
        let _ = writeln!(
            out,
            "{},{:#x},{},{},{:#x},{},{},{},{},{},{},{}{}",
            id.0,
            p.start.0,
            csv_field(&n.at(p.start)),
            p.starts,
            p.last.0,
            p.end.kind().name(),
            p.len,
            opt(taken),
            opt(not_taken),
            opt(target),
            opt(ret),
            opt(next),
            match cycles.and_then(|c| c.get(id)) {
                Some((c, taken)) =>
                    format!(",{c},{}", taken.map_or(String::new(), |t| t.to_string())),
                None if cycles.is_some() => ",,".to_string(),
                None => String::new(),
            }
        );
    }
}

fn pp_json(t: &PpTable, id: PpId, n: &Names<'_>, cycles: Option<&PpCycles>) -> serde_json::Value {
    let p = t.get(id);
    let j = |x: Option<PpId>| x.map(|i| i.0);
    let mut v = serde_json::json!({
        "id": id.0,
        "start": format!("{:#x}", p.start.0),
        "start_symbol": n.at(p.start),
        "start_kinds": p.starts.iter().map(|k| k.name()).collect::<Vec<_>>(),
        "last": format!("{:#x}", p.last.0),
        "end": p.end.kind().name(),
        "instructions": p.len,
        "path": t.runs(id).iter().map(|r| serde_json::json!([format!("{:#x}", r.start.0), r.count])).collect::<Vec<_>>(),
    });
    let o = v.as_object_mut().expect("a JSON object literal");
    if let Some((c, taken)) = cycles.and_then(|c| c.get(id)) {
        o.insert("cycles".into(), c.into());
        if let Some(t) = taken {
            o.insert("cycles_taken".into(), t.into());
        }
    }
    match p.end {
        End::Branch { taken, not_taken } => {
            o.insert("taken".into(), j(taken).into());
            o.insert("not_taken".into(), j(not_taken).into());
        }
        End::Call { target, ret } => {
            o.insert("call_target".into(), j(target).into());
            o.insert("return_point".into(), j(ret).into());
        }
        End::IndirectCall { ret } => {
            o.insert("return_point".into(), j(ret).into());
        }
        End::Ecall { next } | End::Ebreak { next, .. } => {
            o.insert("next".into(), j(next).into());
        }
        End::Jump { target } => {
            o.insert("next".into(), target.0.into());
        }
        End::Fault { at } => {
            o.insert("fault_at".into(), format!("{:#x}", at.0).into());
        }
        _ => {}
    }
    v
}

fn operand_text(o: &Operand) -> String {
    let r = |x: &u8| format!("x{x}");
    match o {
        Operand::Zero => "zero".into(),
        Operand::Constant { reg, value } => format!("{} = {value} (constant)", r(reg)),
        Operand::Invariant { reg } => format!("{} (loop-invariant)", r(reg)),
        Operand::Induction { reg, step, init } => match init {
            Some(i) => format!("{} (induction {step:+}, from {i})", r(reg)),
            None => format!("{} (induction {step:+})", r(reg)),
        },
        Operand::Varying { reg } => format!("{} (varying)", r(reg)),
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

fn loops_text(out: &mut String, p: &Program, f: FuncId, n: &Names<'_>, always: bool) {
    let nest = p.loops(f);
    if nest.loops.is_empty() && !always {
        return;
    }
    let _ = writeln!(out, "\nloops of {}:", p.function(f).name);
    if nest.loops.is_empty() {
        let _ = writeln!(out, "  none");
    }
    let cfg = p.cfg(f);
    for l in &nest.loops {
        let indent = "  ".repeat(l.depth as usize);
        let latches: Vec<String> = l.latches.iter().map(|b| n.at(cfg.block(*b).last)).collect();
        let exits: Vec<String> = l.exit_branches.iter().map(|a| n.at(*a)).collect();
        let _ = writeln!(
            out,
            "{indent}{} header {} ({} blocks, latches [{}], {} exit edges, exit branches [{}], {} branches, {} calls) Z1={} X1={} X2={}",
            l.id,
            n.at(l.header_addr),
            l.body.len(),
            latches.join(", "),
            l.exits.len(),
            exits.join(", "),
            l.branches,
            l.calls,
            yes(l.z1),
            yes(l.x1),
            yes(l.x2)
        );
        if let Some(t) = &l.trip {
            let _ = writeln!(
                out,
                "{indent}  trip-count test {} at {}: {} vs {}: {}",
                t.op.mnemonic(),
                n.at(t.branch),
                operand_text(&t.operands[0]),
                operand_text(&t.operands[1]),
                trip_name(t.count)
            );
        }
    }
    for (a, b) in &nest.irreducible {
        let _ = writeln!(
            out,
            "  irreducible edge {} -> {}",
            n.at(cfg.block(*a).last),
            n.at(cfg.block(*b).start)
        );
    }
}

fn regions_text(out: &mut String, p: &Program, f: FuncId, n: &Names<'_>, always: bool) {
    let regions = p.regions(f);
    if regions.is_empty() && !always {
        return;
    }
    let _ = writeln!(out, "\nif-else regions of {}:", p.function(f).name);
    if regions.is_empty() {
        let _ = writeln!(out, "  none");
    }
    for (i, r) in regions.iter().enumerate() {
        let _ = writeln!(
            out,
            "  R{i} branch {} merge {} ({:?}, {} blocks){}{}",
            n.at(r.branch),
            n.at(r.merge_addr),
            r.kind,
            r.blocks.len(),
            r.parent
                .map(|p| format!(" inside R{p}"))
                .unwrap_or_default(),
            r.in_loop
                .map(|l| format!(" in loop {l}"))
                .unwrap_or_default()
        );
    }
}

fn json_all(
    p: &Program,
    ids: &[PpId],
    n: &Names<'_>,
    func: Option<FuncId>,
    args: &Args,
    cycles: Option<&PpCycles>,
) -> serde_json::Value {
    let funcs: Vec<FuncId> = match func {
        Some(f) => vec![f],
        None => (0..p.functions.len()).map(|i| FuncId(i as u32)).collect(),
    };
    let mut v = serde_json::json!({
        "program": args.program.display().to_string(),
        "functions": p.functions.len(),
        "instructions_decoded": p.table.code().decoded(),
        "partial_programs": ids.iter().map(|&id| pp_json(&p.table, id, n, cycles)).collect::<Vec<_>>(),
        "warnings": p.warnings.iter().map(|w| w.to_string()).collect::<Vec<_>>(),
    });
    let o = v.as_object_mut().expect("a JSON object literal");
    if let Some(c) = cycles {
        o.insert("core".into(), c.core.clone().into());
    }
    if args.loops {
        let mut all = Vec::new();
        for &f in &funcs {
            let cfg = p.cfg(f);
            for l in p.loops(f).loops {
                all.push(serde_json::json!({
                    "function": p.function(f).name,
                    "id": l.id.0,
                    "parent": l.parent.map(|x| x.0),
                    "depth": l.depth,
                    "header": format!("{:#x}", l.header_addr.0),
                    "latches": l.latches.iter().map(|b| format!("{:#x}", cfg.block(*b).last.0)).collect::<Vec<_>>(),
                    "blocks": l.body.len(),
                    "exit_edges": l.exits.len(),
                    "exit_branches": l.exit_branches.iter().map(|a| format!("{:#x}", a.0)).collect::<Vec<_>>(),
                    "z1": l.z1, "x1": l.x1, "x2": l.x2,
                    "trip_count": l.trip.map(|t| trip_name(t.count)),
                }));
            }
        }
        o.insert("loops".into(), all.into());
    }
    if args.regions {
        let mut all = Vec::new();
        for &f in &funcs {
            for r in p.regions(f) {
                all.push(serde_json::json!({
                    "function": p.function(f).name,
                    "branch": format!("{:#x}", r.branch.0),
                    "merge": format!("{:#x}", r.merge_addr.0),
                    "kind": format!("{:?}", r.kind),
                    "blocks": r.blocks.len(),
                    "loop": r.in_loop.map(|l| l.0),
                }));
            }
        }
        o.insert("regions".into(), all.into());
    }
    v
}

/// Feeds hart 0's retired instructions and traps to a [`Checker`].
struct CheckObserver<'a, 't> {
    checker: &'a mut Checker<'t>,
}

impl Observer for CheckObserver<'_, '_> {
    #[inline]
    fn retire(&mut self, ev: &Retired<'_>) {
        if ev.hart == 0 {
            self.checker.retire(ev.pc, ev.next_pc);
        }
    }
    fn trap(&mut self, ev: &TrapEvent) {
        if ev.hart == 0 {
            if let Some(h) = ev.handler {
                self.checker.trap(h);
            }
        }
    }
}

fn check(
    elf: &retrace_program::Elf,
    mut program: Program,
    shown: &str,
    args: &Args,
) -> anyhow::Result<ExitCode> {
    let static_pps = program.table.len();
    let host = HostConfig {
        cmdline: HostConfig::qemu_cmdline(shown, &args.args),
        allow_dirs: Vec::new(),
        host_time: false,
    };
    let mut machine =
        Machine::new(elf, &MachineConfig::default(), host, Console::null()).map_err(|e| {
            tag(
                anyhow!("cannot load program {shown}: {e}"),
                Status::BadInput,
            )
        })?;
    let mut checker = Checker::new(&mut program.table);
    let result = machine.run(
        args.max_insns,
        &mut CheckObserver {
            checker: &mut checker,
        },
    );
    let report: CheckReport = checker.finish();
    let ok = report.mismatches == 0 && report.covered_instructions == report.executed_instructions;
    if args.json {
        let v = serde_json::json!({
            "program": shown,
            "stop": result.stop.kind(),
            "exit_code": result.exit_code(),
            "partial_programs": static_pps,
            "executed_partial_programs": report.executed_partial_programs,
            "added_partial_programs": report.added_partial_programs,
            "pp_executions": report.pp_executions,
            "executed_instructions": report.executed_instructions,
            "covered_instructions": report.covered_instructions,
            "coverage_percent": report.coverage_percent(),
            "mismatches": report.mismatches,
            "first_mismatches": report.first_mismatches.iter().map(|m| m.to_string()).collect::<Vec<_>>(),
            "return_escapes": report.return_escapes,
            "traps": report.traps,
            "analysis_warnings": program.warnings.len(),
            "ok": ok,
        });
        println!("{v}");
    } else {
        println!(
            "{shown}: {} of {} executed instructions covered ({:.4}%), {} mismatches; \
             {} of {} partial programs executed ({} executions), {} added at run time; \
             {} return escapes, {} traps; program stopped: {}",
            report.covered_instructions,
            report.executed_instructions,
            report.coverage_percent(),
            report.mismatches,
            report.executed_partial_programs,
            static_pps,
            report.pp_executions,
            report.added_partial_programs,
            report.return_escapes,
            report.traps,
            result.stop
        );
        for m in &report.first_mismatches {
            println!("  mismatch: {m}");
        }
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Writes to stdout; a closed pipe (`| head`) ends the output quietly.
pub(crate) fn emit(s: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(s.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}
