//! The control-flow graph of one function.
//!
//! Blocks end where partial programs end (conditional branches, calls,
//! returns, indirect jumps, `ecall`/`ebreak`) and also at direct jumps and
//! before every leader, the classic basic-block rule; so every PP start
//! inside a function is a block start and loops found on blocks line up
//! with the PP table.
//!
//! The function's extent is its symbol's `[addr, addr + size)` when the
//! symbol has a size; code outside it that control flow reaches is still
//! included (with a [`Warning`]) unless it is another function's entry, in
//! which case the edge is a tail call that leaves the function. Without a
//! size (stripped files, zero-size symbols) the function is whatever its
//! control flow reaches short of other functions' entries.

use crate::code::Code;
use crate::error::Warning;
use crate::Addr;
use retrace_isa::{Flow, Inst};
use std::collections::{BTreeSet, HashMap, HashSet};

/// Index of a block in its [`Cfg`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BlockId(pub u32);

impl BlockId {
    /// The index into [`Cfg::blocks`].
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// The kind of an intra-procedural edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EdgeKind {
    /// Straight-line flow into a block that starts at a leader.
    FallThrough,
    /// A taken conditional branch.
    Taken,
    /// A conditional branch's fall-through.
    NotTaken,
    /// A direct jump.
    Jump,
    /// From a call to its return point (the callee runs in between).
    CallReturn,
    /// From `ecall`/`ebreak` to the next instruction.
    SystemReturn,
    /// An entry of a recognised jump table.
    IndirectTarget,
}

impl EdgeKind {
    /// Short lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            EdgeKind::FallThrough => "fallthrough",
            EdgeKind::Taken => "taken",
            EdgeKind::NotTaken => "not-taken",
            EdgeKind::Jump => "jump",
            EdgeKind::CallReturn => "call-return",
            EdgeKind::SystemReturn => "system-return",
            EdgeKind::IndirectTarget => "indirect",
        }
    }
}

/// How a block ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Terminator {
    /// Its next instruction starts another block.
    FallThrough,
    /// A conditional branch.
    Branch,
    /// A direct jump within the function.
    Jump,
    /// A direct call.
    Call {
        /// The callee.
        target: Addr,
    },
    /// An indirect call.
    IndirectCall,
    /// A return.
    Return,
    /// An indirect jump (`table` when a jump table was recognised for it).
    IndirectJump {
        /// Whether its targets are known from a jump table.
        table: bool,
    },
    /// A direct jump, or fall-through, to another function's entry.
    TailCall {
        /// That function's entry.
        target: Addr,
    },
    /// `ecall`.
    Ecall,
    /// `ebreak`.
    Ebreak,
    /// `mret`/`sret`.
    TrapReturn,
    /// The next instruction cannot be executed.
    Fault,
}

impl Terminator {
    /// A short stable name of the kind: `fallthrough`, `call`,
    /// `indirect-jump`, …
    pub fn name(self) -> &'static str {
        match self {
            Terminator::FallThrough => "fallthrough",
            Terminator::Branch => "branch",
            Terminator::Jump => "jump",
            Terminator::Call { .. } => "call",
            Terminator::IndirectCall => "indirect-call",
            Terminator::Return => "return",
            Terminator::IndirectJump { .. } => "indirect-jump",
            Terminator::TailCall { .. } => "tail-call",
            Terminator::Ecall => "ecall",
            Terminator::Ebreak => "ebreak",
            Terminator::TrapReturn => "trap-return",
            Terminator::Fault => "fault",
        }
    }
}

/// The kind's name, with the target address in hex where there is one:
/// `call 0x80000496`, `indirect-jump (jump table)`.
impl std::fmt::Display for Terminator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Terminator::Call { target } | Terminator::TailCall { target } => {
                write!(f, "{} {target}", self.name())
            }
            Terminator::IndirectJump { table: true } => {
                write!(f, "{} (jump table)", self.name())
            }
            _ => f.write_str(self.name()),
        }
    }
}

/// One basic block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    /// First instruction.
    pub start: Addr,
    /// Last instruction.
    pub last: Addr,
    /// Number of instructions.
    pub len: u32,
    /// How it ends.
    pub term: Terminator,
    /// Successor blocks in this function.
    pub succs: Vec<(BlockId, EdgeKind)>,
    /// Predecessor blocks in this function.
    pub preds: Vec<BlockId>,
    /// Whether control can leave the function from this block (return,
    /// tail call, unresolved indirect jump, fault, trap return).
    pub exits_function: bool,
    /// Whether the last instruction is a conditional branch one of whose
    /// targets leaves the function (a conditional tail call).
    pub branch_leaves: bool,
}

/// A call made by a function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallSite {
    /// The call (or tail jump) instruction.
    pub at: Addr,
    /// The callee, `None` for an indirect call.
    pub target: Option<Addr>,
    /// Whether it is a tail call (a jump that does not return here).
    pub tail: bool,
}

/// A function's control-flow graph.
#[derive(Clone, Debug, Default)]
pub struct Cfg {
    /// The entry address.
    pub entry: Addr,
    /// Blocks sorted by start address; the entry block is
    /// [`Cfg::entry_block`].
    pub blocks: Vec<Block>,
    /// Calls made from this function, in address order.
    pub calls: Vec<CallSite>,
    by_start: HashMap<Addr, BlockId>,
}

impl Cfg {
    /// The block starting at `addr`.
    pub fn block_at(&self, addr: Addr) -> Option<BlockId> {
        self.by_start.get(&addr).copied()
    }

    /// The entry block.
    pub fn entry_block(&self) -> Option<BlockId> {
        self.block_at(self.entry)
    }

    /// The block with this id.
    pub fn block(&self, id: BlockId) -> &Block {
        &self.blocks[id.index()]
    }

    /// Number of instructions in the function.
    pub fn instructions(&self) -> u64 {
        self.blocks.iter().map(|b| u64::from(b.len)).sum()
    }
}

/// Where the function's extent is and what else starts functions; what
/// the builder needs to know about the rest of the program.
pub(crate) struct Scope<'a> {
    /// The function's name, for warnings.
    pub name: &'a str,
    /// Its entry.
    pub entry: Addr,
    /// Its symbol size, if known.
    pub size: Option<u64>,
    /// Every function entry in the program.
    pub entries: &'a HashSet<Addr>,
    /// Recognised jump tables by site.
    pub tables: &'a HashMap<Addr, Vec<Addr>>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Dest {
    Inside,
    Other,
}

impl Scope<'_> {
    fn in_symbol(&self, a: Addr) -> bool {
        match self.size {
            Some(s) => a.0 >= self.entry.0 && a.0 - self.entry.0 < s,
            None => false,
        }
    }

    fn dest(&self, a: Addr) -> Dest {
        if a == self.entry || self.in_symbol(a) || !self.entries.contains(&a) {
            Dest::Inside
        } else {
            Dest::Other
        }
    }
}

/// What one instruction does to the block structure.
struct Step {
    /// Intra-procedural successors.
    succs: Vec<(Addr, EdgeKind)>,
    /// Whether the instruction ends its block.
    ends: bool,
    term: Terminator,
    exits: bool,
    branch_leaves: bool,
    call: Option<CallSite>,
    warning: Option<Warning>,
}

fn step(code: &mut Code, scope: &Scope<'_>, pc: Addr, inst: Inst) -> Step {
    let mask = code.xlen().mask();
    let next = Addr(inst.fallthrough(pc.0) & mask);
    let target = inst.direct_target(pc.0).map(|t| Addr(t & mask));
    let mut s = Step {
        succs: Vec::new(),
        ends: true,
        term: Terminator::Fault,
        exits: false,
        branch_leaves: false,
        call: None,
        warning: None,
    };
    let ok = |code: &mut Code, a: Addr| code.decode_at(a).is_ok();
    // Leaving the symbol's extent for code that belongs to nobody: keep it,
    // but say so (a function falling off its end is usually a bug or a
    // misread symbol table).
    let outside = |a: Addr| scope.size.is_some() && !scope.in_symbol(a) && a != scope.entry;
    match inst.flow() {
        Flow::Next => {
            if !ok(code, next) {
                s.exits = true;
                return s;
            }
            match scope.dest(next) {
                Dest::Inside => {
                    if outside(next) {
                        s.warning = Some(Warning::FallsOffEnd {
                            function: scope.name.to_string(),
                            addr: next,
                        });
                    }
                    s.ends = false;
                    s.succs.push((next, EdgeKind::FallThrough));
                }
                Dest::Other => {
                    s.warning = Some(Warning::FallsOffEnd {
                        function: scope.name.to_string(),
                        addr: next,
                    });
                    s.term = Terminator::TailCall { target: next };
                    s.exits = true;
                    s.call = Some(CallSite {
                        at: pc,
                        target: Some(next),
                        tail: true,
                    });
                }
            }
        }
        Flow::Jump => {
            let t = target.unwrap_or(next);
            if !ok(code, t) {
                s.exits = true;
                return s;
            }
            match scope.dest(t) {
                Dest::Inside => {
                    if outside(t) {
                        s.warning = Some(Warning::JumpOutsideFunction {
                            function: scope.name.to_string(),
                            from: pc,
                            to: t,
                        });
                    }
                    s.term = Terminator::Jump;
                    s.succs.push((t, EdgeKind::Jump));
                }
                Dest::Other => {
                    s.term = Terminator::TailCall { target: t };
                    s.exits = true;
                    s.call = Some(CallSite {
                        at: pc,
                        target: Some(t),
                        tail: true,
                    });
                }
            }
        }
        Flow::CondBranch => {
            s.term = Terminator::Branch;
            let t = target.unwrap_or(next);
            for (a, kind) in [(t, EdgeKind::Taken), (next, EdgeKind::NotTaken)] {
                if !ok(code, a) {
                    s.exits = true;
                    continue;
                }
                match scope.dest(a) {
                    Dest::Inside => s.succs.push((a, kind)),
                    Dest::Other => {
                        s.branch_leaves = true;
                        s.exits = true;
                        s.call = Some(CallSite {
                            at: pc,
                            target: Some(a),
                            tail: true,
                        });
                    }
                }
            }
        }
        Flow::Call | Flow::IndirectCall => {
            s.term = match target {
                Some(t) if inst.flow() == Flow::Call => Terminator::Call { target: t },
                _ => Terminator::IndirectCall,
            };
            s.call = Some(CallSite {
                at: pc,
                target: if inst.flow() == Flow::Call {
                    target
                } else {
                    None
                },
                tail: false,
            });
            // A call at the very end of a function is a call to a function
            // that does not return (`exit`, `abort`): no return edge then.
            if ok(code, next) && scope.dest(next) == Dest::Inside && !outside(next) {
                s.succs.push((next, EdgeKind::CallReturn));
            } else {
                s.exits = true;
            }
        }
        Flow::Return => {
            s.term = Terminator::Return;
            s.exits = true;
        }
        Flow::IndirectJump => match scope.tables.get(&pc) {
            Some(targets) => {
                s.term = Terminator::IndirectJump { table: true };
                let mut seen = HashSet::new();
                for &t in targets {
                    if seen.insert(t) && ok(code, t) && scope.dest(t) == Dest::Inside {
                        s.succs.push((t, EdgeKind::IndirectTarget));
                    }
                }
            }
            None => {
                s.term = Terminator::IndirectJump { table: false };
                s.exits = true;
            }
        },
        Flow::TrapReturn => {
            s.term = Terminator::TrapReturn;
            s.exits = true;
        }
        Flow::Ecall | Flow::Ebreak => {
            s.term = if inst.flow() == Flow::Ecall {
                Terminator::Ecall
            } else {
                Terminator::Ebreak
            };
            if ok(code, next) && scope.dest(next) == Dest::Inside && !outside(next) {
                s.succs.push((next, EdgeKind::SystemReturn));
            } else {
                s.exits = true;
            }
        }
    }
    s
}

/// Builds the CFG of the function described by `scope`. Warnings about the
/// function's extent are appended to `warnings`.
pub(crate) fn build(code: &mut Code, scope: &Scope<'_>, warnings: &mut Vec<Warning>) -> Cfg {
    // Pass 1: find every instruction and every leader by recursive descent.
    let mut leaders: BTreeSet<Addr> = BTreeSet::new();
    let mut seen: HashSet<Addr> = HashSet::new();
    let mut work = vec![scope.entry];
    if code.decode_at(scope.entry).is_err() {
        return Cfg {
            entry: scope.entry,
            ..Cfg::default()
        };
    }
    leaders.insert(scope.entry);
    let mut warned = HashSet::new();
    while let Some(mut pc) = work.pop() {
        loop {
            if !seen.insert(pc) {
                break;
            }
            let Ok(inst) = code.decode_at(pc) else { break };
            let s = step(code, scope, pc, inst);
            if let Some(w) = s.warning {
                if warned.insert(w.addr()) {
                    warnings.push(w);
                }
            }
            if s.ends {
                for (a, _) in s.succs {
                    leaders.insert(a);
                    work.push(a);
                }
                break;
            }
            match s.succs.first() {
                Some(&(a, _)) => pc = a,
                None => break,
            }
        }
    }
    // Pass 2: one block per leader, up to its terminator or the next leader.
    let mut cfg = Cfg {
        entry: scope.entry,
        ..Cfg::default()
    };
    for (i, &l) in leaders.iter().enumerate() {
        cfg.by_start.insert(l, BlockId(i as u32));
    }
    let mut edges: Vec<Vec<(Addr, EdgeKind)>> = Vec::with_capacity(leaders.len());
    for &l in &leaders {
        let mut pc = l;
        let mut len = 0u32;
        let (term, succs, exits, branch_leaves, last) = loop {
            let Ok(inst) = code.decode_at(pc) else {
                break (Terminator::Fault, Vec::new(), true, false, pc);
            };
            len += 1;
            let s = step(code, scope, pc, inst);
            if let Some(c) = s.call {
                cfg.calls.push(c);
            }
            if s.ends {
                break (s.term, s.succs, s.exits, s.branch_leaves, pc);
            }
            let next = s.succs[0].0;
            if leaders.contains(&next) {
                break (Terminator::FallThrough, s.succs, false, false, pc);
            }
            pc = next;
        };
        cfg.blocks.push(Block {
            start: l,
            last,
            len,
            term,
            succs: Vec::new(),
            preds: Vec::new(),
            exits_function: exits,
            branch_leaves,
        });
        edges.push(succs);
    }
    for (i, succs) in edges.into_iter().enumerate() {
        for (a, kind) in succs {
            if let Some(&b) = cfg.by_start.get(&a) {
                if !cfg.blocks[i].succs.iter().any(|&(x, _)| x == b) {
                    cfg.blocks[i].succs.push((b, kind));
                    cfg.blocks[b.index()].preds.push(BlockId(i as u32));
                }
            }
        }
    }
    cfg.calls.sort_by_key(|c| c.at);
    cfg.calls.dedup();
    cfg
}
