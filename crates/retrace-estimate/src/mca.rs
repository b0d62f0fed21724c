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

use retrace_isa::{disasm, Flow, Inst, Op, Xlen};
use retrace_sim::blocks::Block;
use retrace_timing::{CoreModel, Events, LateAlu, Pipeline, TimingClass, Unit};

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
    p.cycle() + in_flight(&p)
}

/// Cycles from the issue clock until the last register result in flight
/// is ready (a unit still busy or an open issue group is not a result).
fn in_flight(p: &Pipeline) -> u64 {
    let signature = p.signature();
    let registers = signature.0.iter().filter(|&&(slot, _)| slot < 64);
    u64::from(registers.map(|&(_, rel)| rel).max().unwrap_or(0))
}

/// [`block_cycles`] under one more rule, `llvm-mca`'s and not the core's:
/// results are written back in program order. `llvm-mca`'s in-order
/// pipeline (its `InOrderIssueStage`, LLVM 14) holds an instruction until
/// its first write-back — `latency` cycles after issue, for an instruction
/// that writes nothing too — would come no earlier than the last one of any
/// older instruction; every younger one waits behind it. Retrace's rule is
/// a scoreboard (an instruction waits for its own operands only), so this
/// is how the two schedules differ when everything else is equal.
pub fn block_cycles_in_order_writeback(
    core: &CoreModel,
    insts: &[(u64, Inst)],
    iterations: u32,
) -> u64 {
    let mut p = Pipeline::new();
    let mut last_writeback = 0u64;
    for _ in 0..iterations {
        for (pc, inst) in insts {
            let class = inst.class();
            let occupancy = u64::from(core.occupancy.get(class));
            let latency = u64::from(core.latency.get(class));
            // Where it would issue, found by issuing it on a copy: with no
            // control penalty, miss or split fetch to add, the issue clock
            // after an instruction is its issue cycle plus its occupancy.
            let writeback = loop {
                let mut q = p.clone();
                q.issue(core, *pc, inst, Events::default());
                let issue = q.cycle().saturating_sub(occupancy);
                let writeback = issue + latency;
                if writeback >= last_writeback {
                    p = q;
                    break writeback;
                }
                // Issue it no earlier than its write-back allows: it may
                // have paired in the cycle before the clock, so the stall
                // is counted from the clock.
                let at = issue + (last_writeback - writeback);
                p.stall(at.saturating_sub(p.cycle()));
            };
            last_writeback = writeback;
        }
    }
    (p.cycle() + in_flight(&p)).max(last_writeback)
}

/// The block with its closing jump, call or return given as a conditional
/// branch that falls through, on a core that times that branch as it
/// timed the jump: `llvm-mca` issues the next iteration's first
/// instruction beside the jump, where retrace's rule ends the issue group
/// at every control transfer (fetch is redirected). `None` when the block
/// does not end in one.
pub fn jump_as_fall_through(
    core: &CoreModel,
    insts: &[(u64, Inst)],
) -> Option<(CoreModel, Vec<(u64, Inst)>)> {
    let &(pc, last) = insts.last()?;
    let reads_register = match last.flow() {
        Flow::Jump | Flow::Call => false,
        Flow::IndirectJump | Flow::IndirectCall | Flow::Return => true,
        _ => return None,
    };
    let jump = last.class();
    // `bne rs1, x0`: reads what the jump read (`jalr`'s base register),
    // writes nothing — `llvm-mca` was given calls without their link too.
    let branch = Inst {
        op: Op::Bne,
        rd: 0,
        rs1: if reads_register { last.rs1 } else { 0 },
        rs2: 0,
        imm: i32::from(last.len),
        len: last.len,
        raw: 0,
    };
    let mut m = core.clone();
    let b = TimingClass::Branch as usize;
    m.latency.0[b] = core.latency.get(jump);
    m.occupancy.0[b] = core.occupancy.get(jump);
    m.pipes.0[b] = core.pipes.get(jump);
    let mut block = insts.to_vec();
    *block.last_mut()? = (pc, branch);
    Some((m, block))
}

/// One instruction's line of `llvm-mca`'s "Instruction Info" table.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct McaInstInfo {
    /// "Latency": cycles until its result may be used.
    pub latency: u32,
    /// "RThroughput": cycles between two independent ones, from the
    /// resources it holds (0.5 where two pipes take it).
    pub rthroughput: f64,
}

/// Read the "Instruction Info" table of `llvm-mca`'s report, one entry per
/// instruction of the block in order; `None` when it is missing or
/// unreadable.
pub fn mca_instruction_info(stdout: &str) -> Option<Vec<McaInstInfo>> {
    let mut lines = stdout
        .lines()
        .skip_while(|l| !l.starts_with("Instruction Info:"))
        .skip_while(|l| !(l.starts_with("[1]") && l.contains("Instructions:")))
        .skip(1);
    let mut info = Vec::new();
    for l in lines.by_ref() {
        if l.trim().is_empty() {
            break;
        }
        let mut f = l.split_whitespace();
        let _uops = f.next()?;
        info.push(McaInstInfo {
            latency: f.next()?.parse().ok()?,
            rthroughput: f.next()?.parse().ok()?,
        });
    }
    (!info.is_empty()).then_some(info)
}

/// An instruction of a block whose latency or throughput differs between
/// the core's table and LLVM's.
#[derive(Clone, Debug, PartialEq)]
pub struct TableDifference {
    /// Its place in the block (0-based).
    pub index: usize,
    /// Its timing class, as the core's TOML names it.
    pub class: &'static str,
    /// The core's latency for it.
    pub latency: u32,
    /// LLVM's.
    pub llvm_latency: u32,
    /// Cycles before the next of its kind may start on the core: its
    /// unit's busy time, else its occupancy.
    pub throughput: u32,
    /// LLVM's reciprocal throughput.
    pub llvm_rthroughput: f64,
}

/// The core's cycles between two independent instructions of `class`:
/// the busy time of the unit it takes, else its occupancy.
fn throughput(core: &CoreModel, class: TimingClass) -> u32 {
    let busy = Unit::of(class, core).map_or(0, |_| core.busy.get(class));
    busy.max(core.occupancy.get(class))
}

/// `core` with LLVM's figures for the block's instructions, and the
/// instructions whose figures differed. A class takes LLVM's latency when
/// LLVM gives all of the block's instructions of that class one latency;
/// an LLVM reciprocal throughput of one cycle or more becomes the busy time
/// of the class's unit (dividers) or else its occupancy. A late ALU
/// ([`CoreModel::late_alu`]) is turned off.
pub fn with_llvm_table(
    core: &CoreModel,
    insts: &[(u64, Inst)],
    info: &[McaInstInfo],
) -> (CoreModel, Vec<TableDifference>) {
    let mut m = core.clone();
    // LLVM 14's models have no late ALU (a latency that depends on the
    // consumer): its latencies are the early ones.
    m.late_alu = LateAlu::NONE;
    let mut differences = Vec::new();
    let mut latency: Vec<Option<Option<u32>>> = vec![None; TimingClass::COUNT];
    let mut rthroughput: Vec<Option<Option<u32>>> = vec![None; TimingClass::COUNT];
    // One figure per class, or none where the block's instructions of the
    // class disagree on LLVM's side.
    let agree = |seen: &mut Option<Option<u32>>, v: u32| {
        *seen = match *seen {
            None => Some(Some(v)),
            Some(Some(w)) if w == v => Some(Some(v)),
            _ => Some(None),
        }
    };
    for (index, ((_, inst), i)) in insts.iter().zip(info).enumerate() {
        let class = inst.class();
        let own = throughput(core, class);
        let llvm = (i.rthroughput >= 1.0).then(|| i.rthroughput.round() as u32);
        agree(&mut latency[class as usize], i.latency);
        agree(&mut rthroughput[class as usize], llvm.unwrap_or(own));
        if core.latency.get(class) != i.latency || llvm.is_some_and(|t| t != own) {
            differences.push(TableDifference {
                index,
                class: class.key(),
                latency: core.latency.get(class),
                llvm_latency: i.latency,
                throughput: own,
                llvm_rthroughput: i.rthroughput,
            });
        }
    }
    for class in TimingClass::ALL {
        let c = class as usize;
        if let Some(Some(l)) = latency[c] {
            m.latency.0[c] = l;
        }
        if let Some(Some(t)) = rthroughput[c] {
            if t != throughput(core, class) {
                if Unit::of(class, core).is_some() {
                    m.busy.0[c] = t;
                } else {
                    m.occupancy.0[c] = t.max(1);
                }
            }
        }
    }
    (m, differences)
}

/// A block re-timed by retrace under `llvm-mca`'s conventions, added one
/// at a time: what is left of the difference after each says what causes
/// it.
#[derive(Clone, Debug, PartialEq)]
pub struct Explanation {
    /// The block's instructions whose latency or throughput LLVM's table
    /// gives otherwise.
    pub table: Vec<TableDifference>,
    /// The core has a late ALU, which LLVM's table does not (turned off
    /// with the table).
    pub late_alu: bool,
    /// Cycles per iteration with LLVM's figures ([`with_llvm_table`]).
    pub with_llvm_table: f64,
    /// … and results written back in program order
    /// ([`block_cycles_in_order_writeback`]).
    pub with_in_order_writeback: f64,
    /// … and the issue group left open across the block's closing jump
    /// ([`jump_as_fall_through`]); the same figure when it ends otherwise.
    pub with_group_across_jump: f64,
    /// … and counted as `llvm-mca` counts: one cycle more in all (its
    /// total includes the cycle in which the last result is written).
    pub with_mca_counting: f64,
}

/// Re-time a block under `llvm-mca`'s conventions (see [`Explanation`]).
/// `core` is the one the block was timed on, as [`block_cycles`] took it.
pub fn explain(
    core: &CoreModel,
    insts: &[(u64, Inst)],
    info: &[McaInstInfo],
    iterations: u32,
) -> Explanation {
    let n = f64::from(iterations.max(1));
    let (llvm, table) = with_llvm_table(core, insts, info);
    let with_table = block_cycles(&llvm, insts, iterations);
    let in_order = block_cycles_in_order_writeback(&llvm, insts, iterations);
    let across = jump_as_fall_through(&llvm, insts).map_or(in_order, |(m, block)| {
        block_cycles_in_order_writeback(&m, &block, iterations)
    });
    Explanation {
        table,
        late_alu: core.late_alu != LateAlu::NONE,
        with_llvm_table: with_table as f64 / n,
        with_in_order_writeback: in_order as f64 / n,
        with_group_across_jump: across as f64 / n,
        with_mca_counting: (across + 1) as f64 / n,
    }
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

    /// What `llvm-mca-14` reports for each instruction (latency,
    /// reciprocal throughput), as its Instruction Info table gives them.
    fn info(figures: &[(u32, f64)]) -> Vec<McaInstInfo> {
        figures
            .iter()
            .map(|&(latency, rthroughput)| McaInstInfo {
                latency,
                rthroughput,
            })
            .collect()
    }

    #[test]
    fn in_order_writeback_times_blocks_as_llvm_mca_does() {
        // docs/TIMING.md's two-instruction blocks on Rocket, 100 iterations:
        // `llvm-mca-14 -mcpu=rocket-rv64` gives 301 and 401 total cycles,
        // one more than its schedule (it counts the write-back cycle).
        let rocket = without_control_penalties(&preset("rocket").unwrap());
        // lbu a0,0(a1) (latency 3); addi a2,a2,1: retrace issues the add
        // beside the load in flight, 2 cycles an iteration; written back
        // in order, the add waits a cycle more (3).
        let b = block(&[0x0005_c503, 0x0016_0613]);
        assert_eq!(block_cycles(&rocket, &b, 100), 201);
        assert_eq!(block_cycles_in_order_writeback(&rocket, &b, 100), 300);
        // mul a0,a1,a2 (latency 4); addi a3,a3,1: 2 against 4 an iteration.
        let b = block(&[0x02c5_8533, 0x0016_8693]);
        assert_eq!(block_cycles(&rocket, &b, 100), 202);
        assert_eq!(block_cycles_in_order_writeback(&rocket, &b, 100), 400);
        let e = explain(&rocket, &b, &info(&[(4, 1.0), (1, 1.0)]), 100);
        assert!(e.table.is_empty());
        assert_eq!(e.with_llvm_table, 2.02);
        assert_eq!(e.with_mca_counting, 4.01);
    }

    #[test]
    fn llvm_table_and_the_jump_explain_a_u74_block() {
        let u74 = without_control_penalties(&preset("u74").unwrap());
        // addw a5,t0,a4 ; j back. `llvm-mca-14 -mcpu=sifive-u74`: 202
        // cycles for 100 iterations; the addw has latency 3 there (1 on
        // the preset) and the j latency 1; the next iteration's addw issues
        // beside the j, which waits for the addw's write-back.
        let b = block(&[0x00e2_87bb, 0xffdf_f06f]);
        let e = explain(&u74, &b, &info(&[(3, 0.5), (1, 1.0)]), 100);
        assert_eq!(e.table.len(), 1);
        assert_eq!((e.table[0].class, e.table[0].llvm_latency), ("alu", 3));
        // The addw's result now in flight at the end: 1.02 (retrace: 1.00).
        assert_eq!(e.with_llvm_table, 1.02);
        // Written back in order, the j waits two cycles for the addw, and
        // the group closes behind it: 3 an iteration.
        assert_eq!(e.with_in_order_writeback, 3.0);
        // Issued beside the j, as llvm-mca does: 2 an iteration, 202 in all.
        assert_eq!(e.with_group_across_jump, 2.01);
        assert_eq!(e.with_mca_counting, 2.02);
        // A block that ends in no jump is left as it is.
        assert!(jump_as_fall_through(&u74, &b[..1]).is_none());
    }

    #[test]
    fn the_instruction_table_is_read() {
        let out = "Iterations: 100\n\nInstruction Info:\n[1]: #uOps\n[2]: Latency\n\n[1]    [2]    [3]    [4]    [5]    [6]    Instructions:\n 1      3     1.00    *                   lbu\ta0, 0(a1)\n 1      16    16.00                       divuw\ta3, a4, a5\n\n\nResources:\n";
        assert_eq!(
            mca_instruction_info(out),
            Some(info(&[(3, 1.0), (16, 16.0)]))
        );
        assert_eq!(mca_instruction_info("Iterations: 100\n"), None);
        assert_eq!(
            mca_instruction_info("Instruction Info:\n[1]    [2]    Instructions:\n 1 x 1.0 add\n"),
            None
        );
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
