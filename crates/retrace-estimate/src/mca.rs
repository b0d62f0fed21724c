//! The cross-check of a core model against LLVM's scheduling models
//! (`retrace mca`): a program's hottest straight-line blocks
//! ([`retrace_sim::blocks`]), each timed over many iterations by retrace's
//! own timing rule and written as the assembly text `llvm-mca` reads; and
//! `llvm-mca`'s report read back.
//!
//! `llvm-mca` knows nothing of control flow: it times a block as if every
//! branch fell through and every jump cost what its scheduling class says.
//! So the retrace side times the block the same way: the core's control
//! penalties (taken, jump, indirect jump, return, misprediction) are set
//! to zero, caches hit, and a trap an `ecall` would take is not charged.
//! What is left is the scoreboard and the latencies and occupancies of the
//! core's table, which is what the comparison is about.

use retrace_isa::{disasm, Flow, Inst, Xlen};
use retrace_sim::blocks::Block;
use retrace_timing::{CoreModel, Events, Pipeline};

/// Iterations of each block when none are asked for: `llvm-mca`'s own
/// default.
pub const DEFAULT_ITERATIONS: u32 = 100;

/// The label every branch and jump of a block's text targets: `llvm-mca`
/// ignores where they go, but the assembler needs a symbol.
pub const LABEL: &str = ".Lblock";

/// The `-mcpu` of LLVM's scheduling model that a built-in core is modelled
/// after, for programs of `xlen`; `None` for cores that follow no LLVM
/// model (the caller must then be told which to use).
pub fn default_mcpu(core: &str, xlen: Xlen) -> Option<&'static str> {
    let rv64 = xlen == Xlen::Rv64;
    match core {
        "rocket" => Some(if rv64 { "rocket-rv64" } else { "rocket-rv32" }),
        "u74" => Some(if rv64 { "sifive-u74" } else { "sifive-7-rv32" }),
        _ => None,
    }
}

/// `llvm-mca`'s `-mattr` for a program built for the single-letter
/// extensions `extensions` (as [`retrace_program::Elf::extensions`] gives
/// them, e.g. `imafdc`): the ones LLVM needs told (M, A, F, D, C). Without
/// the ELF's attributes, all five, which every instruction retrace decodes
/// needs at most.
pub fn mattr(extensions: Option<&str>) -> String {
    let letters = extensions.unwrap_or("mafdc");
    ['m', 'a', 'f', 'd', 'c']
        .into_iter()
        .filter(|c| letters.contains(*c))
        .map(|c| format!("+{c}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// `core` as `llvm-mca` sees control flow: every control penalty zero
/// (the block's final branch is timed not taken and predicted, a jump,
/// call or return at no cost).
pub fn without_control_penalties(core: &CoreModel) -> CoreModel {
    let mut m = core.clone();
    let b = &mut m.branch;
    b.mispredict_penalty = 0;
    b.taken_penalty = 0;
    b.jal_penalty = 0;
    b.jalr_penalty = 0;
    b.return_penalty = 0;
    m
}

/// Cycles of `iterations` back-to-back runs of `insts` on `core` by
/// retrace's timing rule ([`Pipeline::issue`]), from an idle pipeline until
/// the last result is ready — how `llvm-mca` counts its total cycles.
/// `core` is used as given; [`without_control_penalties`] makes it time
/// control flow as `llvm-mca` does.
pub fn block_cycles(core: &CoreModel, insts: &[(u64, Inst)], iterations: u32) -> u64 {
    let mut p = Pipeline::new();
    for _ in 0..iterations {
        for (pc, inst) in insts {
            p.issue(core, *pc, inst, Events::default());
        }
    }
    let in_flight = p.signature().0.iter().map(|&(_, rel)| rel).max();
    p.cycle() + u64::from(in_flight.unwrap_or(0))
}

/// A block as `llvm-mca` input.
#[derive(Clone, Debug)]
pub struct McaSource {
    /// The whole text: [`LABEL`] on the first line, then one instruction
    /// per line.
    pub text: String,
    /// The instruction lines, in order (instruction `k` is line `k + 2` of
    /// the text).
    pub lines: Vec<String>,
    /// The block ends in a call, given to `llvm-mca` as the same jump
    /// without the link (`j`/`jr`): `llvm-mca` 14 charges any call a fixed
    /// 100 cycles ("call instructions are not correctly modeled"), and
    /// the link register is read by nothing in the block.
    pub call_as_jump: bool,
}

impl McaSource {
    /// The instruction on `line` of [`McaSource::text`] (1-based), if it
    /// is one.
    pub fn line(&self, line: usize) -> Option<&str> {
        line.checked_sub(2)
            .and_then(|k| self.lines.get(k))
            .map(String::as_str)
    }
}

/// Write a block as `llvm-mca` input: objdump's text of each instruction
/// (retrace's disassembler, aliases and all, which LLVM's assembler
/// reads), with branch and jump targets replaced by [`LABEL`] and a call
/// by its jump (see [`McaSource::call_as_jump`]).
pub fn mca_source(insts: &[(u64, Inst)], xlen: Xlen) -> McaSource {
    let mut call_as_jump = false;
    let lines: Vec<String> = insts
        .iter()
        .map(|&(pc, inst)| {
            let mut i = inst;
            if matches!(inst.flow(), Flow::Call | Flow::IndirectCall) {
                i.rd = 0;
                call_as_jump = true;
            }
            let d = disasm(&i, pc, xlen);
            let mut text = d.to_string();
            if let Some(hash) = text.find(" #") {
                text.truncate(hash);
            }
            if d.target().is_some() {
                // The target is the last operand: after the last comma, or
                // the only one (`j`, `jal`).
                let cut = text.rfind(',').or_else(|| text.rfind('\t'));
                if let Some(cut) = cut {
                    text.truncate(cut + 1);
                    text.push_str(LABEL);
                }
            }
            text
        })
        .collect();
    let mut text = format!("{LABEL}:\n");
    for l in &lines {
        text.push_str(l);
        text.push('\n');
    }
    McaSource {
        text,
        lines,
        call_as_jump,
    }
}

/// The figures of an `llvm-mca` report.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct McaFigures {
    /// "Iterations".
    pub iterations: u64,
    /// "Instructions": iterations × instructions it accepted.
    pub instructions: u64,
    /// "Total Cycles".
    pub total_cycles: u64,
    /// "Block RThroughput": the block's reciprocal throughput from its
    /// resources alone, in cycles.
    pub block_rthroughput: f64,
}

/// Why `llvm-mca` did not time a block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum McaProblem {
    /// Its assembler rejected a line: the line's text and the message.
    Rejected {
        /// The instruction as written.
        line: String,
        /// `llvm-mca`'s message.
        message: String,
    },
    /// It parsed every line but does not simulate one instruction
    /// (`ebreak`, `fence`, `fence.i`, `mret`, …).
    Unsupported {
        /// The instruction, as `llvm-mca` names it.
        instruction: String,
    },
    /// It does not know the `-mcpu`.
    UnknownCpu,
    /// Anything else, in its words.
    Other(String),
}

/// Read `llvm-mca`'s standard error for the problem it reports, if any.
/// Its assembler's errors do not stop it (it times the lines it did read
/// and exits 0), so every run's standard error must be read.
pub fn mca_problem(stderr: &str, source: &McaSource) -> Option<McaProblem> {
    let mut lines = stderr.lines();
    while let Some(l) = lines.next() {
        if l.contains("is not a recognized processor") {
            return Some(McaProblem::UnknownCpu);
        }
        if l.contains("unsupported instruction") {
            let instruction = lines
                .next()
                .and_then(|n| n.split_once("instruction:"))
                .map(|(_, i)| i.split_whitespace().collect::<Vec<_>>().join(" "))
                .unwrap_or_default();
            return Some(McaProblem::Unsupported { instruction });
        }
        // `<stdin>:LINE:COL: error: MESSAGE`
        if let Some((place, message)) = l.split_once(": error: ") {
            let line = place
                .split(':')
                .nth(1)
                .and_then(|n| n.parse::<usize>().ok())
                .and_then(|n| source.line(n));
            if let Some(line) = line {
                return Some(McaProblem::Rejected {
                    line: line.replace('\t', " "),
                    message: message.trim().to_string(),
                });
            }
        }
        if let Some(message) = l.strip_prefix("error: ") {
            return Some(McaProblem::Other(message.trim().to_string()));
        }
    }
    None
}

/// Read the figures from `llvm-mca`'s standard output (its default text
/// report); `None` when one is missing.
pub fn mca_figures(stdout: &str) -> Option<McaFigures> {
    let field = |name: &str| {
        stdout.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == name).then(|| v.trim().to_string())
        })
    };
    Some(McaFigures {
        iterations: field("Iterations")?.parse().ok()?,
        instructions: field("Instructions")?.parse().ok()?,
        total_cycles: field("Total Cycles")?.parse().ok()?,
        block_rthroughput: field("Block RThroughput")?.parse().ok()?,
    })
}

/// The `top` blocks that retired the most instructions, most first (ties
/// by address, so the order repeats).
pub fn hottest(mut blocks: Vec<Block>, top: usize) -> Vec<Block> {
    blocks.sort_by(|a, b| {
        b.instructions()
            .cmp(&a.instructions())
            .then(a.start().cmp(&b.start()))
    });
    blocks.truncate(top);
    blocks
}

#[cfg(test)]
mod tests {
    use super::*;
    use retrace_isa::decode;
    use retrace_timing::preset;

    fn block(words: &[u32]) -> Vec<(u64, Inst)> {
        let mut pc = 0x8000_0000;
        words
            .iter()
            .map(|&w| {
                let i = decode(w, Xlen::Rv64).unwrap();
                let at = pc;
                pc += u64::from(i.len);
                (at, i)
            })
            .collect()
    }

    #[test]
    fn control_flow_is_written_to_the_label_and_calls_as_jumps() {
        // addi a0,a0,1 ; bne a0,a1,-4 ; jal ra,+16 ; jalr ra,0(a5)
        let b = block(&[0x0015_0513, 0xfeb5_1ee3, 0x0100_00ef, 0x0007_80e7]);
        let s = mca_source(&b, Xlen::Rv64);
        assert_eq!(s.lines[1], "bne\ta0,a1,.Lblock");
        assert_eq!(s.lines[2], "j\t.Lblock");
        assert_eq!(s.lines[3], "jr\ta5");
        assert!(s.call_as_jump);
        assert!(s.text.starts_with(".Lblock:\n"));
        assert_eq!(s.line(3), Some("bne\ta0,a1,.Lblock"));
        assert_eq!(s.line(1), None);
    }

    #[test]
    fn a_dependent_chain_costs_its_latencies_on_rocket() {
        let rocket = without_control_penalties(&preset("rocket").unwrap());
        // mul a0,a0,a1 (latency 4) feeding itself: 4 cycles an iteration,
        // the last result ready 4 cycles after the last issue.
        let b = block(&[0x02b5_0533]);
        assert_eq!(block_cycles(&rocket, &b, 100), 99 * 4 + 4);
        // The loop branch costs nothing more, taken or not.
        let b = block(&[0x0015_0513, 0xfeb5_1ee3]);
        assert_eq!(block_cycles(&rocket, &b, 10), 20);
    }

    #[test]
    fn reports_and_complaints_are_read() {
        let out = "Iterations:        100\nInstructions:      200\nTotal Cycles:      203\nTotal uOps:        200\n\nDispatch Width:    1\nBlock RThroughput: 2.0\n";
        assert_eq!(
            mca_figures(out),
            Some(McaFigures {
                iterations: 100,
                instructions: 200,
                total_cycles: 203,
                block_rthroughput: 2.0
            })
        );
        assert_eq!(mca_figures("Iterations: 1\n"), None);
        let s = mca_source(&block(&[0x0015_0513, 0x0015_0513]), Xlen::Rv64);
        let err = "<stdin>:3:1: error: instruction requires the following: 'D'\naddi a0,a0,1\n^\n";
        assert_eq!(
            mca_problem(err, &s),
            Some(McaProblem::Rejected {
                line: "add a0,a0,1".into(),
                message: "instruction requires the following: 'D'".into()
            })
        );
        let err = "error: found an unsupported instruction in the input assembly sequence.\nnote: instruction: \tebreak\t\n";
        assert_eq!(
            mca_problem(err, &s),
            Some(McaProblem::Unsupported {
                instruction: "ebreak".into()
            })
        );
        let err = "'x' is not a recognized processor for this target (ignoring processor)\n";
        assert_eq!(mca_problem(err, &s), Some(McaProblem::UnknownCpu));
        assert_eq!(mca_problem("warning: found a call\n", &s), None);
        assert_eq!(mattr(Some("imafc")), "+m,+a,+f,+c");
        assert_eq!(mattr(None), "+m,+a,+f,+d,+c");
        assert_eq!(default_mcpu("rocket", Xlen::Rv32), Some("rocket-rv32"));
        assert_eq!(default_mcpu("u74", Xlen::Rv64), Some("sifive-u74"));
        assert_eq!(default_mcpu("picorv32", Xlen::Rv32), None);
    }
}
