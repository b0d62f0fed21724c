//! The view `perf annotate` gives, from a replay: for one function, every
//! instruction with its disassembly, its source line and what it cost
//! (executions, cycles, mispredictions, I-cache misses:
//! [`retrace_sim::attribution`]'s rule, so the parts sum to the run's
//! cycles), and the same summed per source line (`retrace annotate`).
//!
//! Source lines are the innermost inlined frame's (`file:line` through
//! [`retrace_program::lines::locate`]), so code an `-O2` build inlined into
//! `main` shows the line of the function it came from.

use retrace_isa::{disasm, Xlen};
use retrace_program::lines::locate;
use retrace_program::{Addr, Elf, FunctionRanges, Program};
use retrace_sim::attribution::{InstructionCost, PerInstruction};
use retrace_sim::functions::FunctionMap;
use std::collections::HashMap;

/// A source line: the file as the program's DWARF names it, and the line.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SourceRef {
    /// The file, as the DWARF names it (without a leading `./`).
    pub file: String,
    /// The line, from 1.
    pub line: u32,
}

impl std::fmt::Display for SourceRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// One instruction of an annotated function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AnnotatedInstruction {
    /// Its address.
    pub pc: u64,
    /// objdump's text of it (`addi a0,a0,1`, branch targets with
    /// `<symbol+offset>`).
    pub text: String,
    /// Its source line, when the program has debugging information.
    pub source: Option<SourceRef>,
    /// What it cost over the run (zero when it never executed).
    pub cost: InstructionCost,
}

/// One source line's share of a function: the sum over its instructions
/// (`executions` is then the instructions of that line executed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineCost {
    /// The line; `None` for instructions without one.
    pub source: Option<SourceRef>,
    /// Summed over the line's instructions in the function.
    pub cost: InstructionCost,
}

/// A function, annotated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AnnotatedFunction {
    /// Its name.
    pub name: String,
    /// Its entry address.
    pub entry: u64,
    /// Summed over its instructions (its exclusive cycles).
    pub cost: InstructionCost,
    /// Its source lines with any cost, most cycles first.
    pub lines: Vec<LineCost>,
    /// Its instructions, in address order.
    pub instructions: Vec<AnnotatedInstruction>,
}

/// Source lines of addresses, from a program's DWARF (none without it).
pub struct Lines {
    map: HashMap<u64, SourceRef>,
    /// Why there are none, when the DWARF could not be read.
    pub missing: Option<String>,
}

impl Lines {
    /// The source lines of `addrs` in the ELF file `bytes`.
    pub fn of(bytes: &[u8], addrs: &[u64]) -> Lines {
        match locate(bytes, addrs) {
            Ok(located) => Lines {
                map: addrs
                    .iter()
                    .zip(located)
                    .filter_map(|(&a, l)| Some((a, split_file_line(&l.file_line?)?)))
                    .collect(),
                missing: None,
            },
            Err(e) => Lines {
                map: HashMap::new(),
                missing: Some(e.to_string()),
            },
        }
    }

    /// The source line of `pc`, if known.
    pub fn get(&self, pc: u64) -> Option<&SourceRef> {
        self.map.get(&pc)
    }
}

/// `file:line` as a [`SourceRef`].
fn split_file_line(s: &str) -> Option<SourceRef> {
    let (file, line) = s.rsplit_once(':')?;
    Some(SourceRef {
        file: file.to_string(),
        line: line.parse().ok()?,
    })
}

/// The instructions in `[entry, entry + size)`, decoded from the program's
/// code (an address that does not decode is skipped by a halfword).
pub fn instructions_of(program: &Program, entry: u64, size: u64) -> Vec<(u64, retrace_isa::Inst)> {
    let code = program.table.code();
    let mut out = Vec::new();
    let mut pc = entry;
    while pc < entry.saturating_add(size.max(1)) {
        match code.get(Addr(pc)) {
            Some(inst) => {
                out.push((pc, inst));
                pc += u64::from(inst.len);
            }
            None => pc += 2,
        }
    }
    out
}

/// objdump's text of `inst` at `pc`, a branch or jump target followed by
/// `<symbol+offset>` as objdump prints it.
pub fn instruction_text(elf: &Elf, xlen: Xlen, pc: u64, inst: &retrace_isa::Inst) -> String {
    let d = disasm(inst, pc, xlen);
    let text = d.to_string();
    let mut s = match text.split_once('\t') {
        Some((mnemonic, operands)) => format!("{mnemonic:<7} {operands}"),
        None => text,
    };
    if let Some(t) = d.target() {
        if let Some(name) = elf.describe(t) {
            s.push_str(&format!(" <{name}>"));
        }
    }
    s
}

/// Annotate the functions `which` (indices into `functions`) from a
/// replay's per-instruction costs, with source lines from `lines`. A
/// function holds the addresses the profile charges to it
/// ([`retrace_sim::functions::FunctionMap`]): where symbols overlap (GCC's
/// `__riscv_save_N` entry points into one routine), each address goes to
/// one function only.
pub fn annotate(
    program: &Program,
    elf: &Elf,
    lines: &Lines,
    functions: &FunctionRanges,
    which: &[usize],
    costs: &PerInstruction,
) -> Vec<AnnotatedFunction> {
    let map = FunctionMap::new(&functions.ranges);
    which
        .iter()
        .map(|&f| {
            let (entry, size) = functions.ranges[f];
            let instructions: Vec<AnnotatedInstruction> = instructions_of(program, entry, size)
                .into_iter()
                .filter(|(pc, _)| map.lookup(*pc) == Some(f))
                .map(|(pc, inst)| AnnotatedInstruction {
                    pc,
                    text: instruction_text(elf, program.xlen, pc, &inst),
                    source: lines.get(pc).cloned(),
                    cost: costs.get(&pc).copied().unwrap_or_default(),
                })
                .collect();
            let mut total = InstructionCost::default();
            let mut by_line: HashMap<Option<SourceRef>, InstructionCost> = HashMap::new();
            for i in &instructions {
                total.add(&i.cost);
                by_line.entry(i.source.clone()).or_default().add(&i.cost);
            }
            let mut lines: Vec<LineCost> = by_line
                .into_iter()
                .filter(|(_, c)| c.executions > 0 || c.cycles > 0)
                .map(|(source, cost)| LineCost { source, cost })
                .collect();
            lines.sort_by(|a, b| {
                b.cost
                    .cycles
                    .cmp(&a.cost.cycles)
                    .then_with(|| a.source.cmp(&b.source))
            });
            AnnotatedFunction {
                name: functions.names[f].clone(),
                entry,
                cost: total,
                lines,
                instructions,
            }
        })
        .collect()
}
