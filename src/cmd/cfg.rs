//! `retrace cfg`: one function's control-flow graph, as Graphviz DOT or as
//! a block listing.

use crate::cmd::common::load_elf_bytes;
use crate::report::emit;
use crate::status::{tag, Status};
use anyhow::anyhow;
use retrace_estimate::annotate::Lines;
use retrace_program::cfg::Terminator;
use retrace_program::{dot, Program};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `retrace cfg`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Blocks where a partial program starts are marked with its id and start
kinds; loops are clusters labelled with their Z1/X1/X2 flags; back edges are
red, taken edges solid, not-taken dashed, call-return dotted, jumps blue.

Examples:
  retrace cfg prog.elf --function main --dot > main.dot && dot -Tsvg main.dot -o main.svg
  retrace cfg prog.elf --function main")]
pub struct Args {
    /// The program: a RISC-V ELF executable.
    pub program: PathBuf,
    /// The function to show.
    #[arg(long, value_name = "NAME")]
    pub function: String,
    /// Write Graphviz DOT instead of a block listing.
    #[arg(long)]
    pub dot: bool,
}

/// Entry point of `retrace cfg`.
pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    let (elf, bytes) = load_elf_bytes(&args.program)?;
    let shown = args.program.display().to_string();
    let program = Program::analyse(&elf).map_err(|e| {
        tag(
            anyhow!("cannot analyse program {shown}: {e}"),
            Status::BadInput,
        )
    })?;
    let f = program
        .function_named(&args.function)
        .map_err(|e| tag(anyhow!("{shown}: {e}"), Status::BadInput))?;
    if args.dot {
        emit(&dot::function_dot(&program, f))?;
        return Ok(ExitCode::SUCCESS);
    }
    let cfg = program.cfg(f);
    // Each block's first line, where the program has DWARF.
    let starts: Vec<u64> = cfg.blocks.iter().map(|b| b.start.0).collect();
    let lines = Lines::of(&bytes, &starts);
    let mut out = String::new();
    let func = program.function(f);
    let _ = writeln!(
        out,
        "{} at {}: {} blocks, {} instructions, {} calls",
        func.name,
        func.entry,
        cfg.blocks.len(),
        cfg.instructions(),
        cfg.calls.len()
    );
    for (i, b) in cfg.blocks.iter().enumerate() {
        let succs: Vec<String> = b
            .succs
            .iter()
            .map(|(s, k)| format!("b{} ({})", s.0, k.name()))
            .collect();
        let pp = program
            .table
            .lookup(b.start)
            .map(|id| format!(" PP {id}"))
            .unwrap_or_default();
        // Calls name their callee: `call f (0x80000496)`.
        let term = match b.term {
            Terminator::Call { target } | Terminator::TailCall { target } => {
                match program.function_at(target) {
                    Some(callee) => format!(
                        "{} {} ({target})",
                        b.term.name(),
                        program.function(callee).name
                    ),
                    None => b.term.to_string(),
                }
            }
            t => t.to_string(),
        };
        let _ = writeln!(
            out,
            "  b{i} {}..{} {} insts {term}{}{} -> {}{}",
            b.start,
            b.last,
            b.len,
            if b.exits_function { " exits" } else { "" },
            pp,
            if succs.is_empty() {
                "-".to_string()
            } else {
                succs.join(", ")
            },
            lines
                .get(b.start.0)
                .map(|s| format!("  ({s})"))
                .unwrap_or_default()
        );
    }
    emit(&out)?;
    Ok(ExitCode::SUCCESS)
}
