//! Natural loops of a function, their nest, and the patent's loop conditions.
//!
//! A back edge is an edge `latch → header` whose header dominates the
//! latch; the natural loop is the header plus every block that reaches a
//! latch without passing the header. Back edges to one header make one
//! loop. Retreating edges whose target does not dominate their source
//! (irreducible control flow) form no loop and are listed instead.
//!
//! For each loop, the flags of US patent 8,448,140 (embodiments 2 and 4),
//! read at machine level:
//!
//! - an *exit branch* is a conditional branch in the loop with one
//!   successor outside it; the *continue test* is the loop's exit branch
//!   when it has exactly one;
//! - **X1**: exactly one exit branch and no other way out (no second exit
//!   edge, no `return`, tail call, unresolved indirect jump or
//!   non-returning call inside);
//! - **Z1**: X1, no conditional branch other than the continue test, and
//!   no call or environment call — the loops whose trip count can replace
//!   their branch bits;
//! - **X2**: every loop nested inside satisfies X1.
//!
//! The *trip-count test* classifies the continue test's operands
//! (induction variable `v = v ± c`, loop-invariant, constant set before
//! the loop, or varying), which gives the patent's type 1 (constant count)
//! and type 2 (count fixed per execution) candidates.

use crate::cfg::{BlockId, Cfg, Terminator};
use crate::dom::DomTree;
use crate::pp::PpTable;
use crate::Addr;
use retrace_isa::{Inst, Op};
use std::collections::BTreeSet;
use std::fmt;

/// Index of a loop in its [`LoopNest`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LoopId(pub u32);

impl fmt::Display for LoopId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "L{}", self.0)
    }
}

/// What a continue-test operand is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operand {
    /// `x0`.
    Zero,
    /// Not written in the loop and set to a constant just before it.
    Constant {
        /// The register.
        reg: u8,
        /// Its value.
        value: i64,
    },
    /// Not written in the loop.
    Invariant {
        /// The register.
        reg: u8,
    },
    /// Written once per iteration as `reg = reg + step`.
    Induction {
        /// The register.
        reg: u8,
        /// The step.
        step: i64,
        /// Its value on entry when set to a constant just before the loop.
        init: Option<i64>,
    },
    /// Anything else.
    Varying {
        /// The register.
        reg: u8,
    },
}

/// What the continue test says about the trip count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TripCount {
    /// Every operand is an induction variable with a constant start or a
    /// constant: the same count every time the loop runs (seed type 1).
    Constant,
    /// Every operand is an induction variable or loop-invariant: the count
    /// is fixed for each execution of the loop (seed type 2).
    PerExecution,
    /// The count depends on data computed in the loop.
    Unknown,
}

/// The loop's continue test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TripTest {
    /// The conditional branch.
    pub branch: Addr,
    /// Its operation (`bne`, `bltu`, …).
    pub op: Op,
    /// Its two operands (`rs1`, `rs2`).
    pub operands: [Operand; 2],
    /// What that makes the trip count.
    pub count: TripCount,
}

/// One natural loop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loop {
    /// Its id.
    pub id: LoopId,
    /// The header block.
    pub header: BlockId,
    /// The header's address.
    pub header_addr: Addr,
    /// Blocks with a back edge to the header.
    pub latches: Vec<BlockId>,
    /// Every block of the loop (inner loops' blocks included), sorted.
    pub body: Vec<BlockId>,
    /// The enclosing loop.
    pub parent: Option<LoopId>,
    /// Loops directly inside.
    pub children: Vec<LoopId>,
    /// Nesting depth (1 for an outermost loop).
    pub depth: u32,
    /// Exit edges `(from, to)`; `to` is `None` where control leaves the
    /// function from inside the loop.
    pub exits: Vec<(BlockId, Option<BlockId>)>,
    /// Addresses of the conditional branches with a successor outside.
    pub exit_branches: Vec<Addr>,
    /// Conditional branches in the loop (inner loops' included).
    pub branches: u32,
    /// Calls and environment calls in the loop.
    pub calls: u32,
    /// Seed condition X1.
    pub x1: bool,
    /// Seed condition Z1.
    pub z1: bool,
    /// Seed condition X2.
    pub x2: bool,
    /// The continue test, when there is exactly one exit branch.
    pub trip: Option<TripTest>,
}

/// The loops of one function.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoopNest {
    /// Loops, outer loops before the loops they contain.
    pub loops: Vec<Loop>,
    /// Sources of retreating edges that form no natural loop (irreducible
    /// control flow), as `(from, to)` blocks.
    pub irreducible: Vec<(BlockId, BlockId)>,
}

impl LoopNest {
    /// The innermost loop containing `b`.
    pub fn innermost(&self, b: BlockId) -> Option<LoopId> {
        self.loops
            .iter()
            .filter(|l| l.body.binary_search(&b).is_ok())
            .max_by_key(|l| l.depth)
            .map(|l| l.id)
    }

    /// A loop.
    pub fn get(&self, id: LoopId) -> &Loop {
        &self.loops[id.0 as usize]
    }
}

/// The instructions of a block.
pub(crate) fn block_insts<'a>(
    table: &'a PpTable,
    cfg: &'a Cfg,
    b: BlockId,
) -> impl Iterator<Item = (Addr, Inst)> + 'a {
    let blk = cfg.block(b);
    let code = table.code();
    let mask = code.xlen().mask();
    let mut pc = blk.start;
    (0..blk.len).map_while(move |_| {
        let i = code.get(pc)?;
        let here = pc;
        pc = Addr(i.fallthrough(pc.0) & mask);
        Some((here, i))
    })
}

/// Finds the loops of a function.
pub fn find(cfg: &Cfg, table: &PpTable) -> LoopNest {
    let Some(entry) = cfg.entry_block() else {
        return LoopNest::default();
    };
    let succs: Vec<Vec<usize>> = cfg
        .blocks
        .iter()
        .map(|b| b.succs.iter().map(|&(s, _)| s.index()).collect())
        .collect();
    let dom = DomTree::new(&succs, entry.index());

    // Back edges grouped by header; retreating non-back edges noted.
    let mut headers: Vec<(usize, Vec<usize>)> = Vec::new();
    let mut irreducible = Vec::new();
    for (v, ss) in succs.iter().enumerate() {
        if !dom.reachable(v) {
            continue;
        }
        for &h in ss {
            if dom.dominates(h, v) {
                match headers.iter_mut().find(|(x, _)| *x == h) {
                    Some((_, l)) => l.push(v),
                    None => headers.push((h, vec![v])),
                }
            } else if dom.rpo(h) <= dom.rpo(v) {
                irreducible.push((BlockId(v as u32), BlockId(h as u32)));
            }
        }
    }
    // Natural loop bodies.
    let mut raw: Vec<(usize, Vec<usize>, BTreeSet<usize>)> = Vec::new();
    for (h, latches) in headers {
        let mut body = BTreeSet::new();
        body.insert(h);
        let mut work: Vec<usize> = latches.clone();
        while let Some(v) = work.pop() {
            if body.insert(v) {
                for &p in &cfg.blocks[v].preds {
                    if dom.reachable(p.index()) {
                        work.push(p.index());
                    }
                }
            }
        }
        raw.push((h, latches, body));
    }
    // Outer loops first: a loop contains only smaller ones.
    raw.sort_by(|a, b| b.2.len().cmp(&a.2.len()).then(a.0.cmp(&b.0)));
    let mut loops: Vec<Loop> = Vec::with_capacity(raw.len());
    for (i, (h, latches, body)) in raw.iter().enumerate() {
        // The parent is the smallest earlier loop containing the header.
        let parent = (0..i)
            .rev()
            .find(|&j| raw[j].2.contains(h) && raw[j].2.is_superset(body))
            .map(|j| LoopId(j as u32));
        let depth = parent.map_or(1, |p| loops[p.0 as usize].depth + 1);
        let mut exits = Vec::new();
        let mut exit_branches = Vec::new();
        let mut branches = 0;
        let mut calls = 0;
        for &v in body {
            let blk = &cfg.blocks[v];
            let mut leaves = false;
            for &(s, _) in &blk.succs {
                if !body.contains(&s.index()) {
                    exits.push((BlockId(v as u32), Some(s)));
                    leaves = true;
                }
            }
            if blk.exits_function {
                exits.push((BlockId(v as u32), None));
                leaves |= blk.term == Terminator::Branch && blk.branch_leaves;
            }
            match blk.term {
                Terminator::Branch => {
                    branches += 1;
                    if leaves {
                        exit_branches.push(blk.last);
                    }
                }
                Terminator::Call { .. }
                | Terminator::IndirectCall
                | Terminator::Ecall
                | Terminator::Ebreak => calls += 1,
                _ => {}
            }
        }
        let x1 = exit_branches.len() == 1
            && exits
                .iter()
                .all(|&(from, to)| to.is_some() && cfg.block(from).last == exit_branches[0]);
        let z1 = x1 && branches == 1 && calls == 0;
        let trip = if exit_branches.len() == 1 {
            trip_test(cfg, table, *h, body, exit_branches[0])
        } else {
            None
        };
        loops.push(Loop {
            id: LoopId(i as u32),
            header: BlockId(*h as u32),
            header_addr: cfg.blocks[*h].start,
            latches: latches.iter().map(|&l| BlockId(l as u32)).collect(),
            body: body.iter().map(|&b| BlockId(b as u32)).collect(),
            parent,
            children: Vec::new(),
            depth,
            exits,
            exit_branches,
            branches,
            calls,
            x1,
            z1,
            x2: true,
            trip,
        });
    }
    for i in 0..loops.len() {
        if let Some(p) = loops[i].parent {
            loops[p.0 as usize].children.push(LoopId(i as u32));
        }
    }
    // X2 needs every descendant's X1; inner loops come later, so walk
    // backwards and fold each loop into its parent.
    for i in (0..loops.len()).rev() {
        let ok = loops[i].x1 && loops[i].x2;
        if let Some(p) = loops[i].parent {
            if !ok {
                loops[p.0 as usize].x2 = false;
            }
        }
    }
    LoopNest { loops, irreducible }
}

fn trip_test(
    cfg: &Cfg,
    table: &PpTable,
    header: usize,
    body: &BTreeSet<usize>,
    branch: Addr,
) -> Option<TripTest> {
    let inst = table.code().get(branch)?;
    // The unique block outside the loop that enters the header.
    let pre: Vec<BlockId> = cfg.blocks[header]
        .preds
        .iter()
        .copied()
        .filter(|p| !body.contains(&p.index()))
        .collect();
    let preheader = match pre.as_slice() {
        [p] => Some(*p),
        _ => None,
    };
    let constant_before = |reg: u8| -> Option<i64> {
        let p = preheader?;
        let insts: Vec<(Addr, Inst)> = block_insts(table, cfg, p).collect();
        let (_, d) = insts.iter().rev().find(|(_, i)| i.writes() == Some(reg))?;
        match d.op {
            Op::Addi | Op::Addiw if d.rs1 == 0 => Some(i64::from(d.imm)),
            Op::Lui => Some(i64::from(d.imm)),
            _ => None,
        }
    };
    let classify = |reg: u8| -> Operand {
        if reg == 0 {
            return Operand::Zero;
        }
        let defs: Vec<Inst> = body
            .iter()
            .flat_map(|&b| block_insts(table, cfg, BlockId(b as u32)))
            .map(|(_, i)| i)
            .filter(|i| i.writes() == Some(reg))
            .collect();
        match defs.as_slice() {
            [] => match constant_before(reg) {
                Some(value) => Operand::Constant { reg, value },
                None => Operand::Invariant { reg },
            },
            // Rematerialised constants: `li` inside the loop, every time
            // the same value (common at -O0, where the bound is reloaded).
            [d, ..]
                if defs.iter().all(|x| {
                    matches!(x.op, Op::Addi | Op::Addiw) && x.rs1 == 0 && x.imm == d.imm
                }) =>
            {
                Operand::Constant {
                    reg,
                    value: i64::from(d.imm),
                }
            }
            [d] if matches!(d.op, Op::Addi | Op::Addiw) && d.rs1 == reg => Operand::Induction {
                reg,
                step: i64::from(d.imm),
                init: constant_before(reg),
            },
            _ => Operand::Varying { reg },
        }
    };
    let operands = [classify(inst.rs1), classify(inst.rs2)];
    let fixed = |o: &Operand| !matches!(o, Operand::Varying { .. });
    let constant = |o: &Operand| {
        matches!(
            o,
            Operand::Zero | Operand::Constant { .. } | Operand::Induction { init: Some(_), .. }
        )
    };
    let has_induction = operands
        .iter()
        .any(|o| matches!(o, Operand::Induction { .. }));
    let count = if has_induction && operands.iter().all(constant) {
        TripCount::Constant
    } else if has_induction && operands.iter().all(fixed) {
        TripCount::PerExecution
    } else {
        TripCount::Unknown
    };
    Some(TripTest {
        branch,
        op: inst.op,
        operands,
        count,
    })
}
