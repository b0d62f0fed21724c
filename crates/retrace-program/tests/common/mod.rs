//! Helpers shared by the integration tests: RV32 encodings of the handful of
//! instructions the tests need (by `retrace-testkit`'s encoder, with this
//! crate's register numbers as `u32`), and a consistency check of a
//! partial-program table against the instructions it was built from.

#![allow(dead_code)]

use retrace_isa::{Flow, Op, Xlen};
use retrace_program::{Addr, Code, End, PpTable, Program, Symbol};
use retrace_testkit::asm;

pub const BASE: u64 = 0x1000;

fn rv32(op: Op, rd: u32, rs1: u32, rs2: u32, imm: i32) -> u32 {
    asm::word(Xlen::Rv32, op, rd as u8, rs1 as u8, rs2 as u8, imm)
}

pub fn addi(rd: u32, rs1: u32, imm: i32) -> u32 {
    rv32(Op::Addi, rd, rs1, 0, imm)
}

pub fn beq(rs1: u32, rs2: u32, off: i32) -> u32 {
    rv32(Op::Beq, 0, rs1, rs2, off)
}

pub fn bne(rs1: u32, rs2: u32, off: i32) -> u32 {
    rv32(Op::Bne, 0, rs1, rs2, off)
}

pub fn jal(rd: u32, off: i32) -> u32 {
    rv32(Op::Jal, rd, 0, 0, off)
}

pub fn jalr(rd: u32, rs1: u32, imm: i32) -> u32 {
    rv32(Op::Jalr, rd, rs1, 0, imm)
}

#[allow(unused_imports)] // each test binary uses a different subset
pub use retrace_testkit::asm::{bytes, EBREAK, ECALL, NOP, RET, SEMI_POST, SEMI_PRE};
pub const A0: u32 = 10;
pub const RA: u32 = 1;

pub fn code(words: &[u32]) -> Code {
    Code::from_regions(retrace_isa::Xlen::Rv32, vec![(Addr(BASE), bytes(words))]).unwrap()
}

pub fn func(name: &str, addr: u64, size: u64) -> Symbol {
    Symbol {
        name: name.into(),
        addr,
        size,
        is_function: true,
        is_global: true,
        is_object: false,
        in_code: true,
        section: 1,
    }
}

pub fn analyse(words: &[u32], symbols: &[Symbol]) -> Program {
    Program::from_code(code(words), Addr(BASE), symbols).unwrap()
}

/// Every way a table can disagree with its code; empty when consistent.
pub fn inconsistencies(t: &PpTable) -> Vec<String> {
    let mut bad = Vec::new();
    let mask = t.code().xlen().mask();
    for (id, p) in t.iter() {
        if t.lookup(p.start) != Some(id) {
            bad.push(format!("PP {id}: lookup of its start gives another PP"));
        }
        let insts: Vec<_> = t.insts(id).collect();
        if insts.len() != p.len as usize || p.len == 0 {
            bad.push(format!(
                "PP {id}: {} instructions, len {}",
                insts.len(),
                p.len
            ));
            continue;
        }
        if insts[0].0 != p.start || insts.last().unwrap().0 != p.last {
            bad.push(format!("PP {id}: path does not run from start to last"));
        }
        for w in insts.windows(2) {
            let ((pc, i), (next, _)) = (w[0], w[1]);
            let expect = match i.flow() {
                Flow::Next => i.fallthrough(pc.0) & mask,
                Flow::Jump => i.direct_target(pc.0).unwrap() & mask,
                f => {
                    bad.push(format!("PP {id}: {f:?} at {pc} inside the path"));
                    continue;
                }
            };
            if next.0 != expect {
                bad.push(format!("PP {id}: {pc} is followed by {next}"));
            }
        }
        let (pc, last) = *insts.last().unwrap();
        let fall = Addr(last.fallthrough(pc.0) & mask);
        let target = last.direct_target(pc.0).map(|x| Addr(x & mask));
        let start = |x: Option<retrace_program::PpId>| x.map(|i| t.get(i).start);
        let ok = match (p.end, last.flow()) {
            (End::Branch { taken, not_taken }, Flow::CondBranch) => {
                (taken.is_none() || start(taken) == target)
                    && (not_taken.is_none() || start(not_taken) == Some(fall))
            }
            (End::Call { target: c, ret }, Flow::Call) => {
                (c.is_none() || start(c) == target) && (ret.is_none() || start(ret) == Some(fall))
            }
            (End::IndirectCall { ret }, Flow::IndirectCall) => {
                ret.is_none() || start(ret) == Some(fall)
            }
            (End::Return, Flow::Return)
            | (End::IndirectJump, Flow::IndirectJump)
            | (End::TrapReturn, Flow::TrapReturn) => true,
            (End::Ecall { next }, Flow::Ecall) | (End::Ebreak { next, .. }, Flow::Ebreak) => {
                next.is_none() || start(next) == Some(fall)
            }
            (End::Jump { target: j }, Flow::Jump) => Some(t.get(j).start) == target,
            (End::Fault { at }, Flow::Next) => at == fall && t.code().get(at).is_none(),
            (End::Fault { at }, Flow::Jump) => Some(at) == target && t.code().get(at).is_none(),
            _ => false,
        };
        if !ok {
            bad.push(format!(
                "PP {id}: end {:?} does not match {:?} at {pc}",
                p.end,
                last.flow()
            ));
        }
    }
    bad
}
