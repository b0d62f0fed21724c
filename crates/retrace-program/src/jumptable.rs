//! Recognising plain jump tables, so that a `switch` compiled to
//! `jr` gets its targets as static start points and CFG edges.
//!
//! Only the patterns GCC emits for RV32 and RV64 (medany) are recognised,
//! and only when every piece is visible on the straight-line path that ends
//! in the `jr`: the bounds check, the table's address, the scaled index and
//! the load. Anything else stays an indirect jump whose targets come from
//! a recording — a missed table costs a run-time [`crate::PpTable::ensure`],
//! a wrongly recognised one would cost correctness, so the recogniser errs
//! on the side of giving up.
//!
//! ```text
//!   bltu  rK, rI, default     # fall-through when rI <= K  (or bgeu rI, rK)
//!   slli  rS, rI, 2|3
//!   add   rA, rS, rT          # rT = table (lui+addi or auipc+addi)
//!   lw    rX, 0(rA)           # lw/lwu/ld
//!  [add   rX, rX, rT]         # medany: entries are relative to the table
//!   jr    rX
//! ```

use crate::pp::{End, PpId, PpTable};
use crate::Addr;
use retrace_isa::{Inst, Op};

/// A recognised jump table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JumpTable {
    /// The indirect jump.
    pub site: Addr,
    /// Address of the table in memory.
    pub table: Addr,
    /// Size of one entry in bytes (4 or 8).
    pub entry_size: u8,
    /// Whether entries are offsets from the table's address.
    pub relative: bool,
    /// The targets, one per entry, in table order (duplicates kept).
    pub targets: Vec<Addr>,
}

/// Most entries a recognised table may have; a larger bound is more
/// likely a misread than a real `switch`.
const MAX_ENTRIES: u64 = 4096;

/// The straight-line instructions that lead to the end of `pp`: its own
/// path, preceded by the path of the unique PP that falls through into it
/// from a conditional branch (where the bounds check usually is).
fn straight_line(table: &PpTable, pp: PpId, preds: &[PpId]) -> Vec<(Addr, Inst)> {
    let mut out = Vec::new();
    if let [pred] = preds {
        out.extend(table.insts(*pred));
    }
    out.extend(table.insts(pp));
    out
}

/// The value of register `reg` just before position `pos`, if it is a
/// link-time constant computed on the path (`lui`, `auipc`, `addi`, `li`).
fn value_of(path: &[(Addr, Inst)], pos: usize, reg: u8, depth: u32) -> Option<u64> {
    if reg == 0 {
        return Some(0);
    }
    if depth > 8 {
        return None;
    }
    let i = (0..pos).rev().find(|&i| path[i].1.writes() == Some(reg))?;
    let (pc, inst) = path[i];
    match inst.op {
        Op::Lui => Some(inst.imm as i64 as u64),
        Op::Auipc => Some(pc.0.wrapping_add(inst.imm as i64 as u64)),
        Op::Addi | Op::Addiw => {
            Some(value_of(path, i, inst.rs1, depth + 1)?.wrapping_add(inst.imm as i64 as u64))
        }
        _ => None,
    }
}

/// The index of the last instruction before `pos` that writes `reg`.
fn def(path: &[(Addr, Inst)], pos: usize, reg: u8) -> Option<usize> {
    (0..pos).rev().find(|&i| path[i].1.writes() == Some(reg))
}

/// Tries to recognise the jump table behind the indirect jump ending `pp`.
/// `preds` are the PPs whose not-taken successor is `pp`.
pub fn recognise(table: &PpTable, pp: PpId, preds: &[PpId]) -> Option<JumpTable> {
    let p = table.get(pp);
    if p.end != End::IndirectJump {
        return None;
    }
    let path = straight_line(table, pp, preds);
    let jr = path.len().checked_sub(1)?;
    let (site, jump) = path[jr];
    if jump.op != Op::Jalr || jump.imm != 0 {
        return None;
    }
    let mask = table.code().xlen().mask();
    // rX: either the loaded entry, or entry + table for relative tables.
    let mut at = def(&path, jr, jump.rs1)?;
    let mut rel_base = None;
    if path[at].1.op == Op::Add {
        let add = path[at].1;
        let (a, b) = (add.rs1, add.rs2);
        let load_reg = [a, b]
            .into_iter()
            .find(|&r| def(&path, at, r).is_some_and(|i| path[i].1.mem().is_some()))?;
        let other = if load_reg == a { b } else { a };
        rel_base = Some(value_of(&path, at, other, 0)?);
        at = def(&path, at, load_reg)?;
    }
    let load = path[at].1;
    let (entry_size, signed) = match load.op {
        Op::Lw => (4u8, true),
        Op::Lwu => (4, false),
        Op::Ld => (8, true),
        _ => return None,
    };
    if load.imm != 0 {
        return None;
    }
    // rA = (index << k) + table.
    let a_at = def(&path, at, load.rs1)?;
    let add = path[a_at].1;
    if add.op != Op::Add {
        return None;
    }
    let mut scaled = None;
    for (s, t) in [(add.rs1, add.rs2), (add.rs2, add.rs1)] {
        if let Some(i) = def(&path, a_at, s) {
            let sh = path[i].1;
            if sh.op == Op::Slli && (1u64 << sh.imm) == u64::from(entry_size) {
                if let Some(base) = value_of(&path, a_at, t, 0) {
                    scaled = Some((sh.rs1, i, base));
                    break;
                }
            }
        }
    }
    let (index_reg, shift_at, base) = scaled?;
    if rel_base.is_some_and(|r| r & mask != base & mask) {
        return None;
    }
    // The bounds check: the last conditional branch before the shift that
    // compares the index with a constant and falls through when in range.
    let br_at = (0..shift_at)
        .rev()
        .find(|&i| path[i].1.flow() == retrace_isa::Flow::CondBranch)?;
    // The index must not change between the check and the shift.
    if def(&path, shift_at, index_reg).is_some_and(|i| i > br_at) {
        return None;
    }
    let br = path[br_at].1;
    let count = match br.op {
        // bltu rK, rI, out: falls through when rI <= K.
        Op::Bltu if br.rs2 == index_reg => value_of(&path, br_at, br.rs1, 0)?.checked_add(1)?,
        // bgeu rI, rK, out: falls through when rI < K.
        Op::Bgeu if br.rs1 == index_reg => value_of(&path, br_at, br.rs2, 0)?,
        _ => return None,
    };
    if count == 0 || count > MAX_ENTRIES {
        return None;
    }
    let mut targets = Vec::with_capacity(count as usize);
    for k in 0..count {
        let at = Addr(base.wrapping_add(k * u64::from(entry_size)) & mask);
        let raw = table.code().read_data(at, entry_size as usize)?;
        let v = match (entry_size, signed) {
            (4, true) => raw as u32 as i32 as i64 as u64,
            _ => raw,
        };
        let t = match rel_base {
            Some(b) => b.wrapping_add(v),
            None => v,
        };
        targets.push(Addr(t & mask));
    }
    Some(JumpTable {
        site,
        table: Addr(base & mask),
        entry_size,
        relative: rel_base.is_some(),
        targets,
    })
}
