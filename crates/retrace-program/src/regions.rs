//! If-else regions (US patent 8,448,140, embodiment 3): a conditional branch whose two
//! successors re-join at one merge point, with no other way in and no other
//! way out — a single-entry single-exit region.
//!
//! The merge point is the branch block's immediate post-dominator
//! (post-dominators are dominators of the reversed CFG, rooted at a virtual
//! exit that every function-leaving block reaches). The region is every
//! block reachable from the branch without passing the merge point; it
//! qualifies when none of those blocks has a predecessor outside the
//! region, none leaves the function, and none is the header of a loop the
//! branch is not inside (so loop continue tests are not taken for if-else).
//! Regions nest; a region inside a loop records the innermost loop.

use crate::cfg::{BlockId, Cfg};
use crate::dom::DomTree;
use crate::loops::{LoopId, LoopNest};
use crate::Addr;
use std::collections::BTreeSet;

/// Shape of an if-else region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegionKind {
    /// One successor is the merge point: `if (c) { … }`.
    IfThen,
    /// Both successors have code before the merge point.
    IfThenElse,
}

/// One single-entry single-exit if-else region.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Region {
    /// The block ending in the conditional branch.
    pub branch_block: BlockId,
    /// The branch's address.
    pub branch: Addr,
    /// The merge block.
    pub merge: BlockId,
    /// The merge block's address.
    pub merge_addr: Addr,
    /// Blocks strictly between branch and merge, sorted.
    pub blocks: Vec<BlockId>,
    /// Shape.
    pub kind: RegionKind,
    /// Index (in the returned list) of the smallest region containing this
    /// one's branch block.
    pub parent: Option<usize>,
    /// The innermost loop containing the branch.
    pub in_loop: Option<LoopId>,
}

/// Finds the if-else regions of a function.
pub fn find(cfg: &Cfg, nest: &LoopNest) -> Vec<Region> {
    let n = cfg.blocks.len();
    if n == 0 {
        return Vec::new();
    }
    // Reversed CFG with a virtual exit node `n`.
    let mut rsuccs: Vec<Vec<usize>> = vec![Vec::new(); n + 1];
    for (v, b) in cfg.blocks.iter().enumerate() {
        for &(s, _) in &b.succs {
            rsuccs[s.index()].push(v);
        }
        if b.exits_function || b.succs.is_empty() {
            rsuccs[n].push(v);
        }
    }
    let pdom = DomTree::new(&rsuccs, n);
    let headers: BTreeSet<usize> = nest.loops.iter().map(|l| l.header.index()).collect();
    let mut out: Vec<Region> = Vec::new();
    for (v, b) in cfg.blocks.iter().enumerate() {
        if b.term != crate::cfg::Terminator::Branch || b.succs.len() != 2 || b.exits_function {
            continue;
        }
        let Some(m) = pdom.idom(v).filter(|&m| m != n) else {
            continue;
        };
        // Blocks reachable from the branch's successors short of the merge.
        let mut region = BTreeSet::new();
        let mut work: Vec<usize> = b
            .succs
            .iter()
            .map(|&(s, _)| s.index())
            .filter(|&s| s != m)
            .collect();
        let mut ok = true;
        while let Some(x) = work.pop() {
            if x == v {
                ok = false; // back to the branch: a loop, not an if-else
                break;
            }
            if !region.insert(x) {
                continue;
            }
            let bx = &cfg.blocks[x];
            if bx.exits_function || headers.contains(&x) {
                ok = false;
                break;
            }
            for &(s, _) in &bx.succs {
                if s.index() != m {
                    work.push(s.index());
                }
            }
        }
        if !ok {
            continue;
        }
        let single_entry = region.iter().all(|&x| {
            cfg.blocks[x]
                .preds
                .iter()
                .all(|p| p.index() == v || region.contains(&p.index()))
        });
        if !single_entry {
            continue;
        }
        let kind = if b.succs.iter().any(|&(s, _)| s.index() == m) {
            RegionKind::IfThen
        } else {
            RegionKind::IfThenElse
        };
        out.push(Region {
            branch_block: BlockId(v as u32),
            branch: b.last,
            merge: BlockId(m as u32),
            merge_addr: cfg.blocks[m].start,
            blocks: region.iter().map(|&x| BlockId(x as u32)).collect(),
            kind,
            parent: None,
            in_loop: nest.innermost(BlockId(v as u32)),
        });
    }
    // Nesting: the smallest region whose blocks contain this branch block.
    for i in 0..out.len() {
        let me = out[i].branch_block;
        out[i].parent = (0..out.len())
            .filter(|&j| j != i && out[j].blocks.binary_search(&me).is_ok())
            .min_by_key(|&j| out[j].blocks.len());
    }
    out
}
