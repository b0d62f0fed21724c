//! Exactness of the replay, the backbone differential test: for every
//! example program × every preset that supports its XLEN, the estimate from
//! one recorded trace equals the cycle-level engine's cycles exactly —
//! `fast` on the context-free cores (ideal, picorv32, inorder5), `control` on
//! rocket without its data cache. With the data cache (miss rate measured at
//! recording), the error is printed and must stay within 2%.
//!
//! One trial per row, run in parallel by libtest's pool: for each program
//! in `programs/bin/` (found by listing it),
//! - `exact::PROG::replay-check`: the replay reproduces the functional
//!   engine's pc sequence;
//! - `exact::PROG::CORE` (`ideal`, `picorv32`, `inorder5`, `rocket`,
//!   `rocket-dcache`): estimate against the cycle-level engine;
//! - `exact::PROG::memo-CORE`: the memoised `fast` replay against the
//!   step-by-step one.
//!
//! A program is recorded once, by whichever of its trials runs first; the
//! others of the same program wait for that recording.
//! `cargo test --test exact -- sort-rv32` runs one program's rows.

use retrace_estimate::{estimate_trace, estimate_trace_stepwise, replay_check, Fidelity};
use retrace_isa::Xlen;
use retrace_program::{Addr, Elf, Program};
use retrace_sim::cycle::run_cycle_level;
use retrace_sim::record::record_run;
use retrace_sim::{Console, HostConfig};
use retrace_testkit::programs::{example_programs, scratch_dir, ExampleProgram};
use retrace_testkit::trials::{self, all_ok, Failed, Trial};
use retrace_timing::{preset, CoreModel};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// The instruction budget of every run: far above any example's length.
const BUDGET: Option<u64> = Some(2_000_000_000);

/// One example program and, once a trial has made it, its recording.
struct Case {
    prog: ExampleProgram,
    trace: PathBuf,
    recorded: OnceLock<Recorded>,
}

/// What every trial of a program shares.
struct Recorded {
    elf: Elf,
    program: Program,
    /// Instructions the recording run executed.
    instructions: u64,
}

fn host(path: &Path) -> HostConfig {
    HostConfig {
        cmdline: path.display().to_string(),
        ..HostConfig::default()
    }
}

impl Case {
    /// The program recorded to `self.trace` (measuring the data-cache
    /// geometries of the presets that have one), made on first use.
    fn recorded(&self) -> &Recorded {
        self.recorded.get_or_init(|| {
            let path = &self.prog.path;
            let elf = Elf::parse(&self.prog.bytes()).unwrap();
            let program = Program::analyse(&elf).unwrap();
            let file = std::io::BufWriter::new(std::fs::File::create(&self.trace).unwrap());
            let header = retrace_trace::Header::new(0, 32, 1);
            let geometries: Vec<_> = retrace_timing::PRESETS
                .iter()
                .filter_map(|(n, _)| preset(n).unwrap().dcache)
                .collect();
            let rec = record_run(
                &elf,
                host(path),
                Console::null(),
                BUDGET,
                file,
                header,
                &geometries,
            )
            .unwrap();
            Recorded {
                elf,
                program,
                instructions: rec.run.instructions,
            }
        })
    }

    fn name(&self) -> &str {
        &self.prog.name
    }
}

/// The replay reproduces the executed pc sequence.
fn replay_check_row(case: &Case) -> Result<(), Failed> {
    let r = case.recorded();
    let mut table = r.program.table.clone();
    let chk = replay_check(&mut table, Addr(r.elf.entry), &case.trace).unwrap();
    let (_, functional) =
        retrace_sim::check::functional_pc_sequence(&r.elf, host(&case.prog.path), BUDGET).unwrap();
    let mut bad = Vec::new();
    if chk != functional {
        bad.push(format!(
            "{}: replay pc sequence {} insns hash {:016x}, functional {} insns hash {:016x}",
            case.name(),
            chk.instructions,
            chk.hash,
            functional.instructions,
            functional.hash
        ));
    }
    if r.instructions != functional.instructions {
        bad.push(format!(
            "{}: recorded {} instructions, functional run {}",
            case.name(),
            r.instructions,
            functional.instructions
        ));
    }
    all_ok(bad)
}

/// Estimate against the cycle-level engine: equal when `exact`, else
/// within 2% (the data cache, estimated from a measured miss rate).
fn core_row(case: &Case, core: &CoreModel, fidelity: Fidelity, exact: bool) -> Result<(), Failed> {
    let r = case.recorded();
    let name = case.prog.file_name();
    let (run, obs) = run_cycle_level(
        &r.elf,
        host(&case.prog.path),
        Console::null(),
        BUDGET,
        core,
        &[],
    )
    .unwrap();
    if run.instructions != r.instructions {
        return Err(format!(
            "{name} on {}: cycle-level engine ran {} instructions, the recording {}",
            core.name, run.instructions, r.instructions
        )
        .into());
    }
    let reference = obs.core().cycles();
    let est = estimate_trace(
        &r.program.table,
        Addr(r.elf.entry),
        &case.trace,
        std::slice::from_ref(core),
        fidelity,
        None,
    )
    .unwrap();
    let got = est[0].0.cycles;
    let err = (got as f64 - reference as f64) / reference as f64 * 100.0;
    if exact && got != reference {
        return Err(format!(
            "{name} on {} ({fidelity}): estimate {got}, cycle-level {reference} ({err:+.4}%)",
            core.name
        )
        .into());
    }
    if !exact {
        eprintln!(
            "{name} on {} with data cache ({fidelity}): estimate {got}, cycle-level {reference}, error {err:+.3}%",
            core.name
        );
        if err.abs() > 2.0 {
            return Err(format!(
                "{name} on {} with data cache: error {err:+.3}% exceeds 2%",
                core.name
            )
            .into());
        }
    }
    Ok(())
}

/// The memoised replay (`fast`) gives the step-by-step replay's numbers
/// exactly, also on the core whose fast estimate is not the cycle-level
/// one (rocket: static prediction instead of its predictor).
fn memo_row(case: &Case, core: &CoreModel) -> Result<(), Failed> {
    let r = case.recorded();
    let name = case.prog.file_name();
    let cores = std::slice::from_ref(core);
    let entry = Addr(r.elf.entry);
    let table = &r.program.table;
    let memo = estimate_trace(table, entry, &case.trace, cores, Fidelity::Fast, None);
    let step = estimate_trace_stepwise(table, entry, &case.trace, cores, Fidelity::Fast, None);
    let (mut memo, step) = (memo.unwrap()[0].0, step.unwrap()[0].0);
    let used = memo.memoised;
    memo.memoised = step.memoised;
    let mut bad = Vec::new();
    if memo != step {
        bad.push(format!(
            "{name} on {} (fast): memoised replay {memo:?}, step by step {step:?}",
            core.name
        ));
    }
    if used.pps == 0 || used.pps_memoised > used.pps {
        bad.push(format!("{name}: implausible memo counts {used:?}"));
    }
    all_ok(bad)
}

fn main() {
    let scratch = scratch_dir("exact");
    let cases: Vec<Arc<Case>> = example_programs()
        .into_iter()
        .map(|prog| {
            let trace = scratch.join(format!("{}.rtrace", prog.name));
            Arc::new(Case {
                prog,
                trace,
                recorded: OnceLock::new(),
            })
        })
        .collect();
    let xlen = |c: &Case| {
        if c.prog.xlen == 32 {
            Xlen::Rv32
        } else {
            Xlen::Rv64
        }
    };

    // (row name, core, fidelity, exact)
    let rocket = preset("rocket").unwrap();
    let mut rows: Vec<(&str, CoreModel, Fidelity, bool)> = Vec::new();
    for name in ["ideal", "picorv32", "inorder5"] {
        rows.push((name, preset(name).unwrap(), Fidelity::Fast, true));
    }
    rows.push(("rocket", rocket.without_dcache(), Fidelity::Control, true));
    rows.push(("rocket-dcache", rocket, Fidelity::Control, false));

    // Row kinds outside, programs inside: the two workers start on
    // different programs instead of one waiting for the other's recording,
    // and the long cycle-level rows start first.
    let mut trials = Vec::new();
    for (row, core, fidelity, exact) in &rows {
        for case in cases.iter().filter(|c| core.supports(xlen(c))) {
            let (case, core, fidelity, exact) = (case.clone(), core.clone(), *fidelity, *exact);
            trials.push(Trial::test(
                format!("exact::{}::{row}", case.name()),
                move || core_row(&case, &core, fidelity, exact),
            ));
        }
    }
    for name in ["rocket", "inorder5", "picorv32"] {
        let core = preset(name).unwrap();
        for case in cases.iter().filter(|c| core.supports(xlen(c))) {
            let (case, core) = (case.clone(), core.clone());
            trials.push(Trial::test(
                format!("exact::{}::memo-{name}", case.name()),
                move || memo_row(&case, &core),
            ));
        }
    }
    for case in &cases {
        let case = case.clone();
        trials.push(Trial::test(
            format!("exact::{}::replay-check", case.name()),
            move || replay_check_row(&case),
        ));
    }
    trials::run(trials, move || {
        let _ = std::fs::remove_dir_all(&scratch);
    })
}
