//! Per-instruction attribution: on a core the replay times exactly (rocket
//! without its data cache at `control`, picorv32 and inorder5 at `fast`),
//! the profile's cost of every instruction address — executions, cycles,
//! mispredictions, I-cache misses — equals the cycle-level engine's
//! (`retrace_sim::attribution`), and the cycles sum to the run's total.
//! The cost includes the instruction's CPI stack, so the stacks are equal
//! address by address too; grouped by function (`annotate`), the
//! functions' stacks are equal and each sums to the function's cycles.
//! One test per program: a compressed `-Os` build (picorv32's split
//! fetches), recursion, and code written at run time.

use retrace_estimate::annotate::{annotate, Lines};
use retrace_estimate::{profile_trace, Fidelity};
use retrace_program::{Elf, FunctionRanges, Program};
use retrace_sim::attribution::{AttributingObserver, PerInstruction};
use retrace_sim::cycle::CycleObserver;
use retrace_sim::record::record_run_watched;
use retrace_sim::{Console, HostConfig};
use retrace_testkit::programs::example_program;
use retrace_timing::{preset, CoreModel};

/// The cores, with the fidelity at which the replay is exact on each.
fn cores() -> Vec<(CoreModel, Fidelity)> {
    vec![
        (
            preset("rocket").unwrap().without_dcache(),
            Fidelity::Control,
        ),
        (preset("picorv32").unwrap(), Fidelity::Fast),
        (preset("inorder5").unwrap(), Fidelity::Fast),
    ]
}

/// Record `name` once while every core attributes cycles to instructions,
/// then profile the trace on each core and compare address by address.
fn replay_equals_engine(name: &str) {
    let prog = example_program(name);
    let elf = Elf::parse(&prog.bytes()).unwrap();
    let program = Program::analyse(&elf).unwrap();
    let functions = FunctionRanges::of_program(&program);
    let cores: Vec<_> = cores()
        .into_iter()
        .filter(|(c, _)| c.supports(elf.xlen))
        .collect();
    let mut watchers: Vec<AttributingObserver> = cores
        .iter()
        .map(|(c, _)| {
            AttributingObserver::new(CycleObserver::new(c, &functions.ranges).reading_code(&elf))
        })
        .collect();
    let mut trace = Vec::new();
    let host = HostConfig {
        cmdline: prog.path.display().to_string(),
        ..HostConfig::default()
    };
    record_run_watched(
        &elf,
        host,
        Console::null(),
        Some(2_000_000_000),
        &mut trace,
        retrace_trace::Header::new(0, 32, 1),
        &[],
        &mut watchers,
    )
    .unwrap();
    let mut bad = Vec::new();
    for ((core, fidelity), engine) in cores.iter().zip(&watchers) {
        let total = engine.inner().core().cycles();
        let want = engine.per_instruction();
        let (profile, est) = profile_trace(&program, &trace[..], core, *fidelity).unwrap();
        let got = &profile.instructions;
        let row = format!("{name} on {} ({fidelity})", core.name);
        assert_eq!(est.cycles, total, "{row}: the estimate is not exact");
        let sum = |m: &PerInstruction| m.values().map(|c| c.cycles).sum::<u64>();
        if sum(&want) != total || sum(got) != total {
            bad.push(format!(
                "{row}: per-instruction cycles sum to {} (engine) and {} (replay), total {total}",
                sum(&want),
                sum(got)
            ));
        }
        if want.len() != got.len() {
            bad.push(format!(
                "{row}: {} addresses in the engine, {} in the replay",
                want.len(),
                got.len()
            ));
        }
        let differ = want
            .iter()
            .filter(|(pc, c)| got.get(pc) != Some(c))
            .map(|(pc, c)| format!("{row}: {pc:#x} engine {c:?}, replay {:?}", got.get(pc)));
        bad.extend(differ.take(8));
        // The test can fail: the replay's costs are not all in one place.
        assert!(got.values().filter(|c| c.cycles > 0).count() > 10, "{row}");
        let all: Vec<usize> = (0..functions.names.len()).collect();
        let lines = Lines::of(&[], &[]);
        let by_function = |costs: &PerInstruction| {
            annotate(&program, &elf, &lines, &functions, &all, costs)
                .into_iter()
                .map(|f| (f.name, f.cost))
                .collect::<Vec<_>>()
        };
        let (want_f, got_f) = (by_function(&want), by_function(got));
        for ((name, w), (_, g)) in want_f.iter().zip(&got_f) {
            if w.cpi != g.cpi || g.cpi.total() != g.cycles {
                bad.push(format!(
                    "{row}: {name} engine {} ({} cycles), replay {} ({} cycles)",
                    w.cpi.json(),
                    w.cycles,
                    g.cpi.json(),
                    g.cycles
                ));
            }
        }
        // Some function waits on a load, or the split is not tested.
        if core.name == "inorder5" {
            let load_use = |f: &[(String, retrace_sim::attribution::InstructionCost)]| {
                f.iter()
                    .map(|(_, c)| c.cpi.get(retrace_timing::CpiPart::LoadUse))
                    .sum::<u64>()
            };
            assert!(load_use(&got_f) > 0, "{row}: no load-use cycles");
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn crc32_rv32_o2() {
    replay_equals_engine("crc32-rv32-O2");
}

#[test]
fn exprparse_rv32_os() {
    replay_equals_engine("exprparse-rv32-Os");
}

#[test]
fn nqueens_rv64_o2() {
    replay_equals_engine("nqueens-rv64-O2");
}

#[test]
fn selfmod_rv32_o2() {
    replay_equals_engine("selfmod-rv32-O2");
}
