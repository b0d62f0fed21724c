//! The call graph, with recursion marked.
//!
//! Nodes are functions; an edge `f → g` means `f` calls `g` directly or
//! tail-calls it. Indirect calls have no static edge; the functions that
//! make them are flagged. Strongly connected components (Tarjan, iterative
//! so a deep call chain cannot overflow the stack) give recursion: a
//! function is recursive when its component has more than one member or it
//! calls itself. Embodiment 5 aggregates functions bottom-up, which is
//! only possible outside such components.

use crate::cfg::Cfg;
use crate::program::{FuncId, Function};
use crate::Addr;
use std::collections::HashMap;

/// The call graph of a program.
#[derive(Clone, Debug, Default)]
pub struct CallGraph {
    /// Direct callees of each function (sorted, no duplicates).
    pub callees: Vec<Vec<FuncId>>,
    /// Callers of each function (sorted, no duplicates).
    pub callers: Vec<Vec<FuncId>>,
    /// Whether each function makes an indirect call.
    pub indirect: Vec<bool>,
    /// The strongly connected component of each function.
    pub scc: Vec<u32>,
    /// Whether each function is recursive (directly or mutually).
    pub recursive: Vec<bool>,
    /// Components in reverse topological order (callees before callers).
    pub components: Vec<Vec<FuncId>>,
}

impl CallGraph {
    pub(crate) fn build(
        functions: &[Function],
        cfgs: &[Cfg],
        by_entry: &HashMap<Addr, FuncId>,
    ) -> CallGraph {
        let n = functions.len();
        let mut callees = vec![Vec::new(); n];
        let mut indirect = vec![false; n];
        for (f, cfg) in cfgs.iter().enumerate() {
            for c in &cfg.calls {
                match c.target {
                    Some(t) => {
                        if let Some(&g) = by_entry.get(&t) {
                            callees[f].push(g);
                        }
                    }
                    None => indirect[f] = true,
                }
            }
            callees[f].sort();
            callees[f].dedup();
        }
        let mut callers = vec![Vec::new(); n];
        for (f, cs) in callees.iter().enumerate() {
            for g in cs {
                callers[g.index()].push(FuncId(f as u32));
            }
        }
        let (scc, components) = tarjan(&callees);
        let recursive = (0..n)
            .map(|f| {
                components[scc[f] as usize].len() > 1 || callees[f].contains(&FuncId(f as u32))
            })
            .collect();
        CallGraph {
            callees,
            callers,
            indirect,
            scc,
            recursive,
            components,
        }
    }
}

/// Tarjan's SCC algorithm without recursion.
fn tarjan(succ: &[Vec<FuncId>]) -> (Vec<u32>, Vec<Vec<FuncId>>) {
    let n = succ.len();
    const NONE: u32 = u32::MAX;
    let mut index = vec![NONE; n];
    let mut low = vec![0u32; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut comp = vec![NONE; n];
    let mut comps: Vec<Vec<FuncId>> = Vec::new();
    let mut next = 0u32;
    for root in 0..n {
        if index[root] != NONE {
            continue;
        }
        let mut call: Vec<(usize, usize)> = vec![(root, 0)];
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&mut (v, ref mut i)) = call.last_mut() {
            if let Some(w) = succ[v].get(*i).map(|w| w.index()) {
                *i += 1;
                if index[w] == NONE {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    call.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            call.pop();
            if let Some(&(u, _)) = call.last() {
                low[u] = low[u].min(low[v]);
            }
            if low[v] == index[v] {
                let id = comps.len() as u32;
                let mut members = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    comp[w] = id;
                    members.push(FuncId(w as u32));
                    if w == v {
                        break;
                    }
                }
                members.sort();
                comps.push(members);
            }
        }
    }
    (comp, comps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_mutual_recursion() {
        // 0 -> 1 -> 2 -> 1, 2 -> 3
        let g = vec![
            vec![FuncId(1)],
            vec![FuncId(2)],
            vec![FuncId(1), FuncId(3)],
            vec![],
        ];
        let (scc, comps) = tarjan(&g);
        assert_eq!(scc[1], scc[2]);
        assert_ne!(scc[0], scc[1]);
        assert_ne!(scc[3], scc[1]);
        // Callees before callers.
        assert!(scc[3] < scc[1] && scc[1] < scc[0]);
        assert_eq!(comps[scc[1] as usize], vec![FuncId(1), FuncId(2)]);
    }
}
