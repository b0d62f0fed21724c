//! The subcommands, one module each, and the top-level argument parser.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

pub mod aggregate;
pub mod annotate;
pub mod bench;
pub mod cfg;
pub mod clock;
pub mod common;
pub mod compare;
pub mod cores;
pub mod demo;
pub mod disasm;
pub mod estimate;
pub mod estimate_mp;
pub mod html_report;
pub mod lbr;
pub mod mca;
pub mod pp;
pub mod profile;
pub mod record;
pub mod run;
pub mod sweep;
pub mod sweep_batch;
pub mod timeline;

/// retrace: how long a program takes on a RISC-V core that you do not have.
#[derive(Parser, Debug)]
#[command(name = "retrace", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run the bundled example programs and show what retrace does.
    Demo(demo::Args),
    /// Run a RISC-V ELF program in the functional simulator.
    Run(run::Args),
    /// Disassemble a RISC-V ELF file (objdump -d format).
    Disasm(disasm::Args),
    /// Put many processors' cycle counters on one clock.
    #[command(subcommand)]
    Clock(clock::Command),
    /// Show the partial-program table (and loops, regions); --check it against a run.
    Pp(pp::Args),
    /// Show one function's control-flow graph (Graphviz DOT with --dot).
    Cfg(cfg::Args),
    /// Time a program's hottest straight-line blocks by a core model and by
    /// LLVM's scheduling model of the core (llvm-mca), side by side.
    Mca(mca::Args),
    /// Run a program once and record its branch history to a trace file.
    Record(record::Args),
    /// Record and replay a program at each aggregation level: bits, bytes, time, error.
    Aggregate(aggregate::Args),
    /// Estimate a recorded run's cycles on one or many cores, from the trace.
    Estimate(estimate::Args),
    /// Cycle-level engine versus record + estimate: error and speedup.
    Compare(compare::Args),
    /// Cycles per function, branch probabilities and hot spots from a trace.
    Profile(profile::Args),
    /// One self-contained HTML page: the estimate per core, where the time
    /// goes, and a sweep's curve.
    Report(html_report::Args),
    /// Estimate a recorded run on every point of a grid of core variants
    /// (`--set key=A..B*2`, `--set key=a,b`), from the one trace.
    Sweep(sweep::Command),
    /// Cycles, executions, mispredictions and I-cache misses per source line and instruction.
    Annotate(annotate::Args),
    /// List the built-in target cores.
    Cores(cores::Args),
    /// Measure what recording and estimating cost against a plain run and
    /// the cycle-level engine (interleaved rounds in one process).
    Bench(bench::Args),
    /// Software branch records of native x86-64 programs, for PGO tools.
    #[command(subcommand)]
    Lbr(lbr::Command),
}

/// Run one parsed command line; the result is the process exit status.
pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Demo(a) => demo::main(a),
        Command::Run(a) => run::main(a),
        Command::Disasm(a) => disasm::main(a),
        Command::Clock(c) => clock::main(c),
        Command::Pp(a) => pp::main(a),
        Command::Cfg(a) => cfg::main(a),
        Command::Mca(a) => mca::main(a),
        Command::Record(a) => record::main(a),
        Command::Aggregate(a) => aggregate::main(a),
        Command::Estimate(a) => estimate::main(a),
        Command::Compare(a) => compare::main(a),
        Command::Profile(a) => profile::main(a),
        Command::Sweep(a) => sweep::main(a),
        Command::Report(a) => html_report::main(a),
        Command::Annotate(a) => annotate::main(a),
        Command::Cores(a) => cores::main(a),
        Command::Bench(a) => bench::main(a),
        Command::Lbr(c) => lbr::main(c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
