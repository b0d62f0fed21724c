//! `retrace mca`: a core model's timing of a program's hottest
//! straight-line blocks against LLVM's scheduling model of the same core,
//! as `llvm-mca` computes it.

use super::common::{
    analyse, check_xlen, host, load_core_with, load_elf, stop_status, thousands, ProgramArgs,
};
use crate::report::{csv_of, hex, print, FormatArgs, Report};
use crate::status::{tag, Status};
use anyhow::anyhow;
use retrace_estimate::mca::{
    block_cycles, default_mcpu, explain, hottest, mattr, mca_figures, mca_instruction_info,
    mca_problem, mca_source, without_control_penalties, Explanation, McaInstInfo, McaProblem,
    McaSource, DEFAULT_ITERATIONS,
};
use retrace_isa::{Flow, Xlen};
use retrace_program::{Addr, Names};
use retrace_sim::blocks::count_blocks;
use retrace_sim::StopReason;
use serde::Serialize;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};

/// The `llvm-mca` run when neither `--llvm-mca` nor the environment names
/// one.
const DEFAULT_LLVM_MCA: &str = "llvm-mca-14";
/// The environment variable that names the `llvm-mca` binary.
const LLVM_MCA_ENV: &str = "RETRACE_LLVM_MCA";

/// Arguments of `retrace mca`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Runs the program in the functional simulator, finds its hottest straight-line
blocks (from where control arrives to the next branch, jump, call, return or
ecall, by instructions retired), and times each repeated --iterations times
twice: by the core's timing rule, and by llvm-mca with LLVM's scheduling model
of -mcpu. Control flow is timed as llvm-mca sees it: branches fall through and
jumps, calls and returns cost no penalty, caches hit, an ecall's trap is not
charged; a call is given to llvm-mca as the same jump without the link, since
llvm-mca 14 charges any call a fixed 100 cycles. Blocks that differ by more
than --tolerance percent are flagged. docs/TIMING.md, \"Cross-check with
llvm-mca\", has the figures for the bundled programs and why they differ.

--mcpu defaults to LLVM's model of the core: rocket -> rocket-rv64/rocket-rv32,
u74 -> sifive-u74/sifive-7-rv32; other cores need --mcpu.
llvm-mca is `llvm-mca-14` on PATH (Debian package llvm-14), or --llvm-mca, or
the RETRACE_LLVM_MCA environment variable.

Examples:
  retrace mca prog.elf --core rocket
  retrace mca prog.elf --core rocket --top 10 --asm -- 1000
  retrace mca prog.elf --core inorder5 --mcpu rocket-rv64 --format json")]
pub struct Args {
    /// The program.
    pub program: PathBuf,
    /// The core: preset name or TOML file.
    #[arg(long, value_name = "NAME|FILE")]
    pub core: String,
    #[command(flatten)]
    pub sets: super::common::CoreSets,
    /// LLVM's processor to compare with (llvm-mca's -mcpu); default: the
    /// core's own LLVM model, if it has one.
    #[arg(long, value_name = "CPU")]
    pub mcpu: Option<String>,
    /// The llvm-mca binary (default: $RETRACE_LLVM_MCA, else llvm-mca-14).
    #[arg(long, value_name = "PATH")]
    pub llvm_mca: Option<PathBuf>,
    /// Blocks to compare: the hottest by instructions retired.
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub top: usize,
    /// Times each block is repeated, on both sides.
    #[arg(long, default_value_t = DEFAULT_ITERATIONS, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub iterations: u32,
    /// Flag blocks whose cycles differ by more than this many percent.
    #[arg(long, default_value_t = 10.0, value_name = "PERCENT")]
    pub tolerance: f64,
    /// Also print each block's instructions as given to llvm-mca.
    #[arg(long)]
    pub asm: bool,
    /// Stop the run after this many instructions and compare the blocks
    /// seen so far.
    #[arg(long, value_name = "N")]
    pub max_insns: Option<u64>,
    #[command(flatten)]
    pub output: FormatArgs,
    #[command(flatten)]
    pub program_args: ProgramArgs,
}

/// One block compared.
#[derive(Serialize)]
pub struct BlockRow {
    /// Its first instruction's address.
    #[serde(serialize_with = "hex")]
    pub start: u64,
    /// Its start as `function+offset`.
    #[serde(rename = "where")]
    pub at: String,
    /// Its length in instructions.
    pub instructions: usize,
    /// How it ends: branch, jump, call, return, indirect-jump,
    /// indirect-call, ecall, ebreak, mret.
    pub ends: &'static str,
    /// Times it ran.
    pub executions: u64,
    /// Its share of the run's instructions, in percent.
    pub share_percent: f64,
    /// Retrace's cycles per iteration.
    pub retrace_cycles: f64,
    /// llvm-mca's cycles per iteration (Total Cycles / iterations); null
    /// when llvm-mca does not simulate one of its instructions.
    pub mca_cycles: Option<f64>,
    /// llvm-mca's Block RThroughput: the block's cycles from its
    /// resources alone.
    pub mca_rthroughput: Option<f64>,
    /// (retrace - llvm-mca) / llvm-mca, in percent.
    pub difference_percent: Option<f64>,
    /// The difference exceeds --tolerance.
    pub flagged: bool,
    /// What was done to the block for llvm-mca, or why it was not timed.
    pub note: Option<String>,
    /// Why the two differ: the block re-timed by retrace under llvm-mca's
    /// conventions (every timed block has one).
    pub why: Option<Why>,
    /// The block as given to llvm-mca, one instruction a line.
    pub asm: Vec<String>,
}

/// An instruction whose figures differ between the core's table and
/// LLVM's.
#[derive(Serialize)]
pub struct TableRow {
    /// The instruction, as given to llvm-mca.
    pub instruction: String,
    /// Its timing class.
    pub class: &'static str,
    /// The core's latency.
    pub latency: u32,
    /// LLVM's latency.
    pub llvm_latency: u32,
    /// The core's cycles before the next of its kind may start.
    pub throughput: u32,
    /// LLVM's reciprocal throughput.
    pub llvm_rthroughput: f64,
}

/// A block re-timed by retrace under llvm-mca's conventions, one added at
/// a time; the causes are the steps that moved its figure.
#[derive(Serialize)]
pub struct Why {
    /// The instructions whose latency or throughput LLVM's table gives
    /// otherwise.
    pub table: Vec<TableRow>,
    /// The core's late ALU was turned off with LLVM's table.
    pub late_alu_off: bool,
    /// Cycles per iteration with LLVM's latencies and throughputs.
    pub with_llvm_table: f64,
    /// … and results written back in program order, as llvm-mca's
    /// in-order pipeline does.
    pub with_in_order_writeback: f64,
    /// … and the issue group left open across the closing jump, as
    /// llvm-mca issues the next iteration beside it.
    pub with_group_across_jump: f64,
    /// … and counted as llvm-mca counts (one cycle more in all).
    pub with_mca_counting: f64,
    /// Causes, in the order applied: `llvm-table`, `in-order-writeback`,
    /// `group-across-jump`, `counting`.
    pub causes: Vec<&'static str>,
    /// With every step the block is within the tolerance of llvm-mca.
    pub explained: bool,
    /// (last step - llvm-mca) / llvm-mca, in percent.
    pub residual_percent: f64,
}

impl Why {
    /// `e` for a block retrace timed at `retrace` cycles an iteration and
    /// llvm-mca at `mca`: a step is a cause when it moved the figure by a
    /// hundredth of a cycle an iteration or more; counting only when it is
    /// what brings the block within `tolerance`.
    fn of(e: Explanation, source: &McaSource, retrace: f64, mca: f64, tolerance: f64) -> Why {
        let off = |c: f64| (c - mca) / mca * 100.0;
        let moved = |a: f64, b: f64| (a - b).abs() >= 0.005;
        let mut causes = Vec::new();
        if moved(e.with_llvm_table, retrace) {
            causes.push("llvm-table");
        }
        if moved(e.with_in_order_writeback, e.with_llvm_table) {
            causes.push("in-order-writeback");
        }
        if moved(e.with_group_across_jump, e.with_in_order_writeback) {
            causes.push("group-across-jump");
        }
        if off(e.with_group_across_jump).abs() > tolerance
            && off(e.with_mca_counting).abs() <= tolerance
        {
            causes.push("counting");
        }
        let residual = off(e.with_mca_counting);
        Why {
            table: e
                .table
                .iter()
                .map(|d| TableRow {
                    instruction: source
                        .lines
                        .get(d.index)
                        .map_or(String::new(), |l| l.replace('\t', " ")),
                    class: d.class,
                    latency: d.latency,
                    llvm_latency: d.llvm_latency,
                    throughput: d.throughput,
                    llvm_rthroughput: d.llvm_rthroughput,
                })
                .collect(),
            late_alu_off: e.late_alu,
            with_llvm_table: e.with_llvm_table,
            with_in_order_writeback: e.with_in_order_writeback,
            with_group_across_jump: e.with_group_across_jump,
            with_mca_counting: e.with_mca_counting,
            causes,
            explained: residual.abs() <= tolerance,
            residual_percent: residual,
        }
    }

    /// The causes and table differences in a few words.
    fn summary(&self) -> String {
        let mut o = Vec::new();
        for c in &self.causes {
            o.push(match *c {
                "llvm-table" => {
                    let mut seen = Vec::new();
                    if self.late_alu_off {
                        seen.push("no late ALU".to_string());
                    }
                    for t in &self.table {
                        let mnemonic = t.instruction.split(' ').next().unwrap_or("");
                        let mut d = Vec::new();
                        if t.latency != t.llvm_latency {
                            d.push(format!("latency {} vs {}", t.latency, t.llvm_latency));
                        }
                        if t.llvm_rthroughput >= 1.0
                            && t.llvm_rthroughput.round() as u32 != t.throughput
                        {
                            d.push(format!(
                                "throughput {} vs {}",
                                t.throughput, t.llvm_rthroughput
                            ));
                        }
                        let item = format!("{mnemonic} {}", d.join(", "));
                        if !seen.contains(&item) {
                            seen.push(item);
                        }
                    }
                    format!("LLVM's table ({})", seen.join("; "))
                }
                "in-order-writeback" => "llvm-mca's in-order write-back".to_string(),
                "group-across-jump" => "llvm-mca pairing across the jump".to_string(),
                _ => "llvm-mca's count of one cycle more".to_string(),
            });
        }
        if o.is_empty() {
            o.push("none of llvm-mca's conventions".to_string());
        }
        o.join(" + ")
    }
}

/// What `retrace mca` reports.
#[derive(Serialize)]
pub struct McaReport {
    /// The program as given.
    pub program: String,
    /// The core's name.
    pub core: String,
    /// LLVM's processor.
    pub mcpu: String,
    /// llvm-mca's -mtriple.
    pub mtriple: String,
    /// llvm-mca's -mattr, from the program's extensions.
    pub mattr: String,
    /// The llvm-mca binary.
    pub llvm_mca: String,
    /// Iterations of each block.
    pub iterations: u32,
    /// Instructions the run retired.
    pub run_instructions: u64,
    /// How the run ended: `exit`, or `max-insns`.
    pub stop: &'static str,
    /// The tolerance, in percent.
    pub tolerance_percent: f64,
    /// Blocks llvm-mca timed.
    pub compared: usize,
    /// Of those, how many are within the tolerance.
    pub within_tolerance: usize,
    /// The blocks, hottest first.
    pub blocks: Vec<BlockRow>,
}

/// A block as a flat CSV row.
#[derive(Serialize)]
struct CsvRow<'a> {
    start: String,
    #[serde(rename = "where")]
    at: &'a str,
    instructions: usize,
    ends: &'static str,
    executions: u64,
    share_percent: f64,
    retrace_cycles: f64,
    mca_cycles: Option<f64>,
    mca_rthroughput: Option<f64>,
    difference_percent: Option<f64>,
    flagged: bool,
    explained: Option<bool>,
    causes: String,
    note: Option<&'a str>,
}

impl Report for McaReport {
    fn csv(&self) -> anyhow::Result<String> {
        let rows: Vec<CsvRow<'_>> = self
            .blocks
            .iter()
            .map(|b| CsvRow {
                start: format!("{:#x}", b.start),
                at: &b.at,
                instructions: b.instructions,
                ends: b.ends,
                executions: b.executions,
                share_percent: b.share_percent,
                retrace_cycles: b.retrace_cycles,
                mca_cycles: b.mca_cycles,
                mca_rthroughput: b.mca_rthroughput,
                difference_percent: b.difference_percent,
                flagged: b.flagged,
                explained: b.why.as_ref().map(|w| w.explained),
                causes: b.why.as_ref().map_or(String::new(), |w| w.causes.join(" ")),
                note: b.note.as_deref(),
            })
            .collect();
        csv_of(&rows)
    }

    fn text(&self) -> String {
        let mut o = String::new();
        let share: f64 = self.blocks.iter().map(|b| b.share_percent).sum();
        let _ = writeln!(
            o,
            "{} on {} against {} -mtriple={} -mcpu={} -mattr={}, {} iterations a block",
            self.program,
            self.core,
            self.llvm_mca,
            self.mtriple,
            self.mcpu,
            self.mattr,
            self.iterations
        );
        let ran = if self.stop == "exit" {
            "to its end".to_string()
        } else {
            "until --max-insns".to_string()
        };
        let _ = writeln!(
            o,
            "  {} instructions run {ran}; these {} blocks retired {share:.2}% of them",
            thousands(self.run_instructions),
            self.blocks.len()
        );
        let _ = writeln!(
            o,
            "  cycles per iteration, control flow as llvm-mca sees it: branches fall through, no jump or call penalty, caches hit\n"
        );
        let _ = writeln!(
            o,
            "{:<12} {:<30} {:>5} {:>7} {:>8} {:>8} {:>8} {:>8}",
            "start", "where", "insts", "share", "retrace", "llvm-mca", "rthru", "diff"
        );
        let opt = |v: Option<f64>, d: usize| v.map_or("-".to_string(), |v| format!("{v:.d$}"));
        for b in &self.blocks {
            let _ = writeln!(
                o,
                "{:<12} {:<30} {:>5} {:>6.2}% {:>8.2} {:>8} {:>8} {:>8}{}{}",
                format!("{:#x}", b.start),
                b.at,
                b.instructions,
                b.share_percent,
                b.retrace_cycles,
                opt(b.mca_cycles, 2),
                opt(b.mca_rthroughput, 2),
                b.difference_percent
                    .map_or("-".to_string(), |d| format!("{d:+.1}%")),
                if b.flagged { "  *" } else { "" },
                b.note
                    .as_deref()
                    .map(|n| format!("  ({n})"))
                    .unwrap_or_default(),
            );
        }
        let _ = writeln!(
            o,
            "\n{} of {} blocks timed by llvm-mca are within {}% (* marks the others)",
            self.within_tolerance, self.compared, self.tolerance_percent
        );
        let flagged: Vec<&BlockRow> = self.blocks.iter().filter(|b| b.flagged).collect();
        if !flagged.is_empty() {
            let explained = flagged
                .iter()
                .filter(|b| b.why.as_ref().is_some_and(|w| w.explained))
                .count();
            let _ = writeln!(
                o,
                "\nWhy the flagged blocks differ: each re-timed by retrace with LLVM's latencies and throughputs,\nthen with llvm-mca's in-order write-back, then issuing beside its closing jump, then counted as\nllvm-mca counts ({explained} of {} within {}% after):",
                flagged.len(),
                self.tolerance_percent
            );
            for b in flagged {
                let Some(w) = &b.why else { continue };
                let verdict = if w.explained {
                    "explained".to_string()
                } else {
                    format!("not explained, {:+.1}% left", w.residual_percent)
                };
                let _ = writeln!(
                    o,
                    "{:<12} {:<30} {:>8.2} -> {:.2}, {:.2}, {:.2}, {:.2}: {} ({verdict})",
                    format!("{:#x}", b.start),
                    b.at,
                    b.retrace_cycles,
                    w.with_llvm_table,
                    w.with_in_order_writeback,
                    w.with_group_across_jump,
                    w.with_mca_counting,
                    w.summary()
                );
            }
        }
        o
    }
}

/// The block's instructions under its row, for `--asm`.
fn asm_text(report: &McaReport) -> String {
    let mut o = String::new();
    for b in &report.blocks {
        let _ = writeln!(o, "\n{:#x} <{}>:", b.start, b.at);
        for l in &b.asm {
            let _ = writeln!(o, "    {l}");
        }
    }
    o
}

fn flow_name(flow: Flow) -> &'static str {
    match flow {
        Flow::Next => "straight",
        Flow::CondBranch => "branch",
        Flow::Jump => "jump",
        Flow::Call => "call",
        Flow::IndirectCall => "indirect-call",
        Flow::Return => "return",
        Flow::IndirectJump => "indirect-jump",
        Flow::Ecall => "ecall",
        Flow::Ebreak => "ebreak",
        Flow::TrapReturn => "mret",
    }
}

/// The llvm-mca binary: `--llvm-mca`, else the environment, else
/// `llvm-mca-14`.
fn mca_binary(arg: &Option<PathBuf>) -> PathBuf {
    arg.clone()
        .or_else(|| std::env::var_os(LLVM_MCA_ENV).map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from(DEFAULT_LLVM_MCA))
}

/// How one block fared under llvm-mca.
enum McaOutcome {
    Timed(retrace_estimate::mca::McaFigures, Vec<McaInstInfo>),
    Unsupported(String),
}

struct Mca {
    bin: PathBuf,
    mtriple: String,
    mcpu: String,
    mattr: String,
    iterations: u32,
}

impl Mca {
    fn run(&self, source: &McaSource, at: &str) -> anyhow::Result<McaOutcome> {
        let shown = self.bin.display();
        let mut child = Command::new(&self.bin)
            .arg(format!("-mtriple={}", self.mtriple))
            .arg(format!("-mcpu={}", self.mcpu))
            .arg(format!("-mattr={}", self.mattr))
            .arg(format!("-iterations={}", self.iterations))
            .arg("-")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                let what = if e.kind() == std::io::ErrorKind::NotFound {
                    "not found".to_string()
                } else {
                    e.to_string()
                };
                tag(
                    anyhow!(
                        "cannot run llvm-mca {shown}: {what}; install it (Debian: apt-get install llvm-14) or name it with --llvm-mca PATH or {LLVM_MCA_ENV}"
                    ),
                    Status::BadInput,
                )
            })?;
        // The block is small; llvm-mca reads it all before writing.
        if let Some(mut stdin) = child.stdin.take() {
            let _ = stdin.write_all(source.text.as_bytes());
        }
        let out = child
            .wait_with_output()
            .map_err(|e| tag(anyhow!("llvm-mca {shown}: {e}"), Status::BadInput))?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let bad = |what: String| Err(tag(anyhow!("{what}"), Status::BadInput));
        match mca_problem(&stderr, source) {
            Some(McaProblem::Unsupported { instruction }) => {
                return Ok(McaOutcome::Unsupported(instruction))
            }
            Some(McaProblem::UnknownCpu) => {
                return bad(format!(
                    "llvm-mca {shown} does not know -mcpu={} for {}; give --mcpu one of `{shown} -mtriple={} -mcpu=help`",
                    self.mcpu, self.mtriple, self.mtriple
                ))
            }
            Some(McaProblem::Rejected { line, message }) => {
                return bad(format!(
                    "llvm-mca {shown} rejects `{line}` of the block at {at}: {message}; this instruction cannot be compared (-mattr={})",
                    self.mattr
                ))
            }
            Some(McaProblem::Other(message)) => {
                return bad(format!(
                    "llvm-mca {shown} failed on the block at {at}: {message}"
                ))
            }
            None => {}
        }
        let Some(figures) = mca_figures(&stdout).filter(|_| out.status.success()) else {
            let first = stderr.lines().next().unwrap_or("no report");
            return bad(format!(
                "llvm-mca {shown} gave no report for the block at {at} ({}): {first}",
                out.status
            ));
        };
        let expected = u64::from(self.iterations) * source.lines.len() as u64;
        if figures.instructions != expected {
            return bad(format!(
                "llvm-mca {shown} timed {} instructions of the block at {at}, not {expected}: it read only some of its lines",
                figures.instructions
            ));
        }
        let Some(info) = mca_instruction_info(&stdout).filter(|i| i.len() == source.lines.len())
        else {
            return bad(format!(
                "llvm-mca {shown} gave no instruction table for the block at {at}, or one of another length"
            ));
        };
        Ok(McaOutcome::Timed(figures, info))
    }
}

/// Entry point of `retrace mca`.
pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    let elf = load_elf(&args.program)?;
    let shown = args.program.display().to_string();
    let core = load_core_with(&args.core, &args.sets.set)?;
    check_xlen(&core, &elf, &shown)?;
    let mtriple = match elf.xlen {
        Xlen::Rv32 => "riscv32",
        Xlen::Rv64 => "riscv64",
    };
    let Some(mcpu) = args
        .mcpu
        .clone()
        .or_else(|| default_mcpu(&args.core, elf.xlen).map(str::to_string))
    else {
        return Err(tag(
            anyhow!(
                "core {} has no LLVM scheduling model retrace knows of; give --mcpu (`llvm-mca-14 -mtriple={mtriple} -mcpu=help` lists LLVM's)",
                core.name
            ),
            Status::BadInput,
        ));
    };
    if !args.tolerance.is_finite() || args.tolerance < 0.0 {
        return Err(tag(
            anyhow!(
                "--tolerance {} is not a percentage; give a number at or above 0, like 10",
                args.tolerance
            ),
            Status::BadInput,
        ));
    }
    let mca = Mca {
        bin: mca_binary(&args.llvm_mca),
        mtriple: mtriple.to_string(),
        mcpu,
        mattr: mattr(elf.extensions().as_deref()),
        iterations: args.iterations,
    };
    let program = analyse(&elf, &shown)?;
    let names = Names::new(&program, &elf);

    let (run, blocks) = count_blocks(&elf, host(&shown, &args.program_args.args), args.max_insns)
        .map_err(|e| tag(anyhow!("cannot load {shown}: {e}"), Status::BadInput))?;
    let stop = match &run.stop {
        StopReason::Exit { .. } => "exit",
        StopReason::Runaway { .. } => "max-insns",
        other => {
            return Err(tag(
                anyhow!(
                    "{shown} did not run to its end: {other}, after {} instructions; its blocks are not compared",
                    thousands(run.instructions)
                ),
                stop_status(other),
            ))
        }
    };
    let flat = without_control_penalties(&core);
    let total = run.instructions.max(1) as f64;
    let n = f64::from(args.iterations);
    let mut rows = Vec::new();
    for b in hottest(blocks, args.top) {
        let at = names.at(Addr(b.start()));
        let source = mca_source(&b.insts, elf.xlen);
        let retrace = block_cycles(&flat, &b.insts, args.iterations) as f64 / n;
        let ends = flow_name(b.insts.last().map_or(Flow::Next, |(_, i)| i.flow()));
        let (mca_cycles, rthroughput, note, info) = match mca.run(&source, &at)? {
            McaOutcome::Timed(f, info) => (
                Some(f.total_cycles as f64 / n),
                Some(f.block_rthroughput),
                source
                    .call_as_jump
                    .then(|| "call given to llvm-mca as a jump".to_string()),
                Some(info),
            ),
            McaOutcome::Unsupported(i) => (
                None,
                None,
                Some(format!("llvm-mca does not simulate `{i}`")),
                None,
            ),
        };
        let difference = mca_cycles
            .filter(|&m| m > 0.0)
            .map(|m| (retrace - m) / m * 100.0);
        let why = mca_cycles.filter(|&m| m > 0.0).zip(info).map(|(m, info)| {
            let e = explain(&flat, &b.insts, &info, args.iterations);
            Why::of(e, &source, retrace, m, args.tolerance)
        });
        rows.push(BlockRow {
            start: b.start(),
            at,
            instructions: b.insts.len(),
            ends,
            executions: b.executions,
            share_percent: b.instructions() as f64 * 100.0 / total,
            retrace_cycles: retrace,
            mca_cycles,
            mca_rthroughput: rthroughput,
            difference_percent: difference,
            flagged: difference.is_some_and(|d| d.abs() > args.tolerance),
            note,
            why,
            asm: source.lines.iter().map(|l| l.replace('\t', " ")).collect(),
        });
    }
    let compared = rows.iter().filter(|r| r.mca_cycles.is_some()).count();
    let within = rows
        .iter()
        .filter(|r| r.mca_cycles.is_some() && !r.flagged)
        .count();
    let report = McaReport {
        program: shown,
        core: core.name.clone(),
        mcpu: mca.mcpu.clone(),
        mtriple: mca.mtriple.clone(),
        mattr: mca.mattr.clone(),
        llvm_mca: mca.bin.display().to_string(),
        iterations: args.iterations,
        run_instructions: run.instructions,
        stop,
        tolerance_percent: args.tolerance,
        compared,
        within_tolerance: within,
        blocks: rows,
    };
    let format = args.output.get();
    print(&report, format)?;
    if args.asm && format == crate::report::Format::Text {
        crate::report::emit(&asm_text(&report))?;
    }
    Ok(ExitCode::SUCCESS)
}
