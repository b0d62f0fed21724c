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
//!
//! At `-O2` GCC usually hoists the constants out of the loop that holds
//! the `switch`: the table's address (and often the bound `K`) is computed
//! once before the loop into a callee-saved register, and only the bounds
//! check, the shift, the add, the load and the `jr` stay in the loop. When
//! a constant is not computed on the straight-line path, its value is
//! looked for backwards over every path that reaches the path's start
//! ([`Preds::reaching`]): every definition that reaches must be the same
//! link-time constant, no path may start at a function entry or an
//! indirect target (whose predecessors are not all known), and a path
//! through a call or a system call keeps only a callee-saved register
//! (the calling convention GCC relies on for the hoisting itself).

use crate::pp::{End, PpId, PpTable, StartKind};
use crate::Addr;
use retrace_isa::{Inst, Op};
use std::collections::{HashMap, HashSet};

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

/// Most instructions one backward search for a constant visits.
const MAX_VISITS: usize = 20_000;

/// How control reaches each instruction of a table: what the recogniser
/// needs beyond one straight-line path.
#[derive(Debug, Default)]
pub struct Preds {
    /// By PP: the PPs whose not-taken successor it is.
    fallers: HashMap<PpId, Vec<PpId>>,
    /// By address: the instructions that can execute just before it, and
    /// whether code outside the path runs in between (a callee, a system
    /// call).
    before: HashMap<Addr, Vec<(Addr, Inst, bool)>>,
    /// Start addresses whose predecessors are not all known: function
    /// entries (their callers) and indirect targets.
    open: HashSet<Addr>,
}

impl Preds {
    /// The predecessors of every instruction on a path of `table`.
    pub fn of(table: &PpTable) -> Preds {
        let mut p = Preds::default();
        let mut seen: HashSet<(Addr, Addr)> = HashSet::new();
        let mut add = |p: &mut Preds, to: Addr, from: (Addr, Inst), through: bool| {
            if seen.insert((to, from.0)) {
                p.before
                    .entry(to)
                    .or_default()
                    .push((from.0, from.1, through));
            }
        };
        for (id, pp) in table.iter() {
            if pp.starts.contains(StartKind::FunctionEntry)
                || pp.starts.contains(StartKind::Indirect)
            {
                p.open.insert(pp.start);
            }
            let insts: Vec<(Addr, Inst)> = table.insts(id).collect();
            for w in insts.windows(2) {
                add(&mut p, w[1].0, w[0], false);
            }
            let Some(&last) = insts.last() else { continue };
            let start = |s: PpId| table.get(s).start;
            match pp.end {
                End::Branch { taken, not_taken } => {
                    for s in [taken, not_taken].into_iter().flatten() {
                        add(&mut p, start(s), last, false);
                    }
                    if let Some(n) = not_taken {
                        p.fallers.entry(n).or_default().push(id);
                    }
                }
                End::Jump { target } => add(&mut p, start(target), last, false),
                End::Call { ret: Some(r), .. }
                | End::IndirectCall { ret: Some(r) }
                | End::Ecall { next: Some(r) }
                | End::Ebreak { next: Some(r), .. } => add(&mut p, start(r), last, true),
                _ => {}
            }
        }
        p
    }

    /// The PPs whose not-taken successor is `pp`.
    pub fn fallers(&self, pp: PpId) -> &[PpId] {
        self.fallers.get(&pp).map(Vec::as_slice).unwrap_or(&[])
    }

    /// The value of `reg` on entry to the instruction at `at`, when every
    /// definition that reaches it is the same link-time constant.
    fn reaching(&self, at: Addr, reg: u8, depth: u32) -> Option<u64> {
        if reg == 0 {
            return Some(0);
        }
        if depth > 8 {
            return None;
        }
        let mut value = None;
        let mut stack = vec![at];
        let mut visited: HashSet<Addr> = HashSet::new();
        while let Some(x) = stack.pop() {
            if self.open.contains(&x) {
                return None;
            }
            for &(y, inst, through) in self.before.get(&x)? {
                if through && !callee_saved(reg) {
                    return None;
                }
                if !visited.insert(y) {
                    continue;
                }
                if visited.len() > MAX_VISITS {
                    return None;
                }
                if inst.writes() != Some(reg) {
                    stack.push(y);
                    continue;
                }
                let v = match inst.op {
                    Op::Lui => inst.imm as i64 as u64,
                    Op::Auipc => y.0.wrapping_add(inst.imm as i64 as u64),
                    Op::Addi | Op::Addiw => self
                        .reaching(y, inst.rs1, depth + 1)?
                        .wrapping_add(inst.imm as i64 as u64),
                    _ => return None,
                };
                if value.is_some_and(|w| w != v) {
                    return None;
                }
                value = Some(v);
            }
        }
        value
    }
}

/// Registers a callee keeps (`sp`, `s0`–`s11`).
fn callee_saved(reg: u8) -> bool {
    matches!(reg, 2 | 8 | 9 | 18..=27)
}

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
/// link-time constant (`lui`, `auipc`, `addi`, `li`): computed on the path,
/// or, when the path does not write `reg`, before it on every way in
/// ([`Preds::reaching`]).
fn value_of(preds: &Preds, path: &[(Addr, Inst)], pos: usize, reg: u8, depth: u32) -> Option<u64> {
    if reg == 0 {
        return Some(0);
    }
    if depth > 8 {
        return None;
    }
    let Some(i) = (0..pos).rev().find(|&i| path[i].1.writes() == Some(reg)) else {
        return preds.reaching(path.first()?.0, reg, depth);
    };
    let (pc, inst) = path[i];
    match inst.op {
        Op::Lui => Some(inst.imm as i64 as u64),
        Op::Auipc => Some(pc.0.wrapping_add(inst.imm as i64 as u64)),
        Op::Addi | Op::Addiw => Some(
            value_of(preds, path, i, inst.rs1, depth + 1)?.wrapping_add(inst.imm as i64 as u64),
        ),
        _ => None,
    }
}

/// The index of the last instruction before `pos` that writes `reg`.
fn def(path: &[(Addr, Inst)], pos: usize, reg: u8) -> Option<usize> {
    (0..pos).rev().find(|&i| path[i].1.writes() == Some(reg))
}

/// Tries to recognise the jump table behind the indirect jump ending `pp`;
/// `preds` is [`Preds::of`] the table.
pub fn recognise(table: &PpTable, pp: PpId, preds: &Preds) -> Option<JumpTable> {
    let p = table.get(pp);
    if p.end != End::IndirectJump {
        return None;
    }
    let path = straight_line(table, pp, preds.fallers(pp));
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
        rel_base = Some(value_of(preds, &path, at, other, 0)?);
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
                if let Some(base) = value_of(preds, &path, a_at, t, 0) {
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
        Op::Bltu if br.rs2 == index_reg => {
            value_of(preds, &path, br_at, br.rs1, 0)?.checked_add(1)?
        }
        // bgeu rI, rK, out: falls through when rI < K.
        Op::Bgeu if br.rs1 == index_reg => value_of(preds, &path, br_at, br.rs2, 0)?,
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

#[cfg(test)]
mod tests {
    use crate::{Addr, Code, Program, Terminator};
    use retrace_isa::{Op, Xlen};
    use retrace_testkit::asm::{bytes, word, NOP, RET};

    const S1: u8 = 9;
    const S2: u8 = 18;
    const T1: u8 = 6;
    const A0: u8 = 10;
    const A5: u8 = 15;
    const RA: u8 = 1;

    fn w(op: Op, rd: u8, rs1: u8, rs2: u8, imm: i32) -> u32 {
        word(Xlen::Rv32, op, rd, rs1, rs2, imm)
    }

    /// GCC's `-O2` shape: the table's address and the bound are computed
    /// once before the loop, into callee-saved registers; the loop calls a
    /// function, then checks the bound (`bltu` in the block before) and
    /// dispatches with `slli`/`add`/`lw`/`jr`.
    ///
    /// ```text
    /// 0x1000  lui  base, 0x1
    /// 0x1004  addi base, base, 0x60      # the table, 0x1060
    /// 0x1008  li   s2, 2                 # the bound
    /// 0x100c  jal  ra, f                 <- loop
    /// 0x1010  bltu s2, a0, done
    /// 0x1014  slli a5, a0, 2
    /// 0x1018  add  a5, a5, base
    /// 0x101c  lw   a5, 0(a5)
    /// 0x1020  jr   a5
    /// 0x1024  case 0: addi a0, a0, 1; j loop
    /// 0x102c  case 1: addi a0, a0, 2; j loop
    /// 0x1034  case 2: addi a0, a0, 3; j loop
    /// 0x1048  done: j done
    /// 0x1050  f: ret
    /// 0x1060  .word 0x1024, 0x102c, 0x1034
    /// ```
    fn hoisted(base: u8) -> Program {
        let mut ws = vec![
            w(Op::Lui, base, 0, 0, 0x1 << 12),
            w(Op::Addi, base, base, 0, 0x60),
            w(Op::Addi, S2, 0, 0, 2),
            w(Op::Jal, RA, 0, 0, 0x1050 - 0x100c),
            w(Op::Bltu, 0, S2, A0, 0x1048 - 0x1010),
            w(Op::Slli, A5, A0, 0, 2),
            w(Op::Add, A5, A5, base, 0),
            w(Op::Lw, A5, A5, 0, 0),
            w(Op::Jalr, 0, A5, 0, 0),
        ];
        for (k, at) in [(1, 0x1024), (2, 0x102c), (3, 0x1034)] {
            ws.push(w(Op::Addi, A0, A0, 0, k));
            ws.push(w(Op::Jal, 0, 0, 0, 0x100c - (at + 4)));
        }
        ws.extend([NOP, NOP, NOP]);
        ws.push(w(Op::Jal, 0, 0, 0, 0)); // 0x1048 done
        ws.push(NOP);
        ws.push(RET); // 0x1050 f
        ws.extend([NOP, NOP, NOP]);
        ws.extend([0x1024, 0x102c, 0x1034]); // 0x1060
        let code = Code::from_regions(Xlen::Rv32, vec![(Addr(0x1000), bytes(&ws))]).unwrap();
        Program::from_code(code, Addr(0x1000), &[]).unwrap()
    }

    #[test]
    fn a_table_whose_address_is_hoisted_out_of_the_loop_is_recognised() {
        let p = hoisted(S1);
        let jt = p
            .jump_tables
            .iter()
            .find(|j| j.site == Addr(0x1020))
            .unwrap_or_else(|| panic!("no table at 0x1020: {:?}", p.jump_tables));
        assert_eq!(jt.table, Addr(0x1060));
        assert_eq!((jt.entry_size, jt.relative), (4, false));
        assert_eq!(jt.targets, [Addr(0x1024), Addr(0x102c), Addr(0x1034)]);
        // The CFG has the cases as successors of the jump.
        let main = p.function_at(Addr(0x1000)).unwrap();
        let jr = p
            .cfg(main)
            .blocks
            .iter()
            .find(|b| b.last == Addr(0x1020))
            .unwrap();
        assert_eq!(jr.term, Terminator::IndirectJump { table: true });
        assert_eq!(jr.succs.len(), 3);
    }

    #[test]
    fn a_hoisted_address_in_a_register_a_call_may_clobber_is_not_trusted() {
        // The same code with the table's address in t1, which the call
        // inside the loop need not preserve.
        let p = hoisted(T1);
        assert!(
            p.jump_tables.iter().all(|j| j.site != Addr(0x1020)),
            "{:?}",
            p.jump_tables
        );
    }
}
