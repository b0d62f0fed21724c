//! Graphviz DOT of one function's CFG, with partial-program starts and
//! loops marked: people would rather look at a graph than read a table.
//!
//! Blocks are boxes labelled with their address range and instruction
//! count; a block where a partial program starts shows the PP id and start
//! kinds in bold. Loops are nested clusters labelled with their flags.
//! Edge styles: taken solid, not-taken dashed, call-return dotted, jump
//! and jump-table edges blue, back edges red.

use crate::cfg::{BlockId, EdgeKind, Terminator};
use crate::loops::{Loop, LoopId};
use crate::program::{FuncId, Program};
use std::fmt::Write;

fn esc(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// The DOT text of function `f`'s CFG.
pub fn function_dot(program: &Program, f: FuncId) -> String {
    let func = program.function(f);
    let cfg = program.cfg(f);
    let nest = program.loops(f);
    let mut s = String::new();
    let _ = writeln!(s, "digraph \"{}\" {{", esc(&func.name));
    let _ = writeln!(
        s,
        "  label=\"{} at {}\"; labelloc=t; node [shape=box fontname=monospace];",
        esc(&func.name),
        func.entry
    );
    let node = |s: &mut String, b: BlockId, indent: &str| {
        let blk = cfg.block(b);
        let term = match blk.term {
            Terminator::Call { target } => {
                format!("call {}", program_name(program, target))
            }
            Terminator::TailCall { target } => {
                format!("tail {}", program_name(program, target))
            }
            t => t.to_string(),
        };
        let pp = match program.table.lookup(blk.start) {
            Some(id) => format!("<BR/><B>PP {} ({})</B>", id, program.table.get(id).starts),
            None => String::new(),
        };
        let _ = writeln!(
            s,
            "{indent}b{} [label=<{}..{} ({} insts){}<BR/>{}>];",
            b.0, blk.start, blk.last, blk.len, pp, term
        );
    };
    // Clusters for loops, outermost first; a block is drawn in its
    // innermost loop.
    let mut drawn = vec![false; cfg.blocks.len()];
    fn cluster(
        s: &mut String,
        nest: &[Loop],
        id: LoopId,
        depth: usize,
        drawn: &mut [bool],
        node: &dyn Fn(&mut String, BlockId, &str),
    ) {
        let l = &nest[id.0 as usize];
        let indent = "  ".repeat(depth + 1);
        let _ = writeln!(s, "{indent}subgraph cluster_{} {{", id.0);
        let _ = writeln!(
            s,
            "{indent}  label=\"{} header {} Z1={} X1={} X2={}\"; color=red;",
            id, l.header_addr, l.z1, l.x1, l.x2
        );
        for &c in &l.children {
            cluster(s, nest, c, depth + 1, drawn, node);
        }
        for &b in &l.body {
            if !drawn[b.index()] {
                drawn[b.index()] = true;
                node(s, b, &format!("{indent}  "));
            }
        }
        let _ = writeln!(s, "{indent}}}");
    }
    for l in nest.loops.iter().filter(|l| l.parent.is_none()) {
        cluster(&mut s, &nest.loops, l.id, 0, &mut drawn, &node);
    }
    for (i, d) in drawn.iter().enumerate() {
        if !d {
            node(&mut s, BlockId(i as u32), "  ");
        }
    }
    for (i, blk) in cfg.blocks.iter().enumerate() {
        for &(t, kind) in &blk.succs {
            let back = nest
                .loops
                .iter()
                .any(|l| l.header == t && l.latches.contains(&BlockId(i as u32)));
            let style = match kind {
                EdgeKind::Taken => "style=solid",
                EdgeKind::NotTaken => "style=dashed",
                EdgeKind::CallReturn | EdgeKind::SystemReturn => "style=dotted",
                EdgeKind::Jump | EdgeKind::IndirectTarget => "color=blue",
                EdgeKind::FallThrough => "color=gray40",
            };
            let style = if back { "color=red penwidth=2" } else { style };
            let _ = writeln!(
                s,
                "  b{} -> b{} [label=\"{}\" {style}];",
                i,
                t.0,
                kind.name()
            );
        }
    }
    s.push_str("}\n");
    s
}

fn program_name(program: &Program, a: crate::Addr) -> String {
    match program.function_at(a) {
        Some(f) => esc(&program.function(f).name),
        None => a.to_string(),
    }
}
