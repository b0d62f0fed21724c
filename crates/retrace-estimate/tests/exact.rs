//! Exactness of the replay, the backbone differential test: for every
//! example program (the floating-point ones in `programs/bin/fp/` too) ×
//! every preset that runs it (its XLEN, and its F/D if the core says), the
//! estimate from one recorded trace equals the cycle-level engine's cycles
//! exactly — `fast` on the context-free cores (ideal, picorv32, inorder5,
//! ibex-small, ibex-maxperf, cv32e40p, and the dual-issue u74 without
//! predictor tables, return stack or caches), `control` on e31, and on
//! rocket and u74 without their data caches. With the data cache (miss
//! rate measured at recording), the error is printed and must stay within
//! 2%.
//!
//! One trial per row, run in parallel by libtest's pool: for each program
//! in `programs/bin/` (found by listing it),
//! - `exact::PROG::replay-check`: the replay reproduces the functional
//!   engine's pc sequence;
//! - `exact::PROG::CORE` (`ideal`, `picorv32`, `inorder5`, `ibex-small`,
//!   `ibex-maxperf`, `cv32e40p`, `e31`, `rocket`, `rocket-dcache`, `u74`,
//!   `u74-dcache`, `u74-static`): estimate against the cycle-level engine;
//!   on `picorv32`, `inorder5`, `cv32e40p` and `u74-static` also the
//!   memoised `fast` replay against the step-by-step one, on `e31` the
//!   memoised `control` replay; on the exact rows, the profile's cycles per
//!   function (exclusive, inclusive, calls, instructions) against the
//!   cycle-level engine's, function by function, with exclusive ≤ inclusive, and the
//!   profile's CPI stack (the sum of its instructions' stacks) against the
//!   engine's, part by part, both summing to the cycles;
//! - `exact::tail-calls`: the sweep covers functions entered by a tail
//!   call (`j`), which count as entered and hold their cycles;
//! - `exact::PROG::memo-rocket`: the same on rocket, whose `fast` estimate
//!   is not its cycle-level one (static prediction instead of its
//!   predictor);
//! - `exact::PROG::memo-control-rocket`, `…-rocket-no-dcache`: the
//!   memoised `control` replay, whose memo also keys on the predictor and
//!   I-cache, against the step-by-step one, with the data-cache term and
//!   without; `exact::PROG::memo-control-u74-no-dcache` the same on u74.
//!
//! A program runs once, by whichever of its trials comes first, with the
//! recorder, the pc summary and every core's cycle-level model watching
//! that one run; the others of the same program wait for it. The trace
//! stays in memory.
//! `cargo test --test exact -- sort-rv32` runs one program's rows.

use retrace_estimate::{estimate_trace, profile_trace, replay_check, Fidelity};
use retrace_isa::Xlen;
use retrace_program::{Addr, Elf, FunctionRanges, Program};
use retrace_sim::check::PcSequenceObserver;
use retrace_sim::cycle::{CycleObserver, FunctionCycles};
use retrace_sim::record::record_run_watched;
use retrace_sim::{Console, HostConfig};
use retrace_testkit::programs::{example_programs, program_dir, programs_in, ExampleProgram};
use retrace_testkit::trials::{self, all_ok, Failed, Trial};
use retrace_timing::{preset, CoreModel, CpiStack, PredictorKind};
use retrace_trace::PcSequence;
use std::path::Path;
use std::sync::{Arc, OnceLock};

mod common;

/// The instruction budget of every run: far above any example's length.
const BUDGET: Option<u64> = Some(2_000_000_000);

/// A core of the sweep: its row name, model, fidelity, and whether the
/// estimate must equal the cycle-level engine (else within 2%).
struct Row {
    name: &'static str,
    core: CoreModel,
    fidelity: Fidelity,
    exact: bool,
    /// Also compare the memoised `fast` replay with the step-by-step one.
    memo: bool,
}

/// One example program and, once a trial has made it, its run.
struct Case {
    prog: ExampleProgram,
    /// The standard extensions the program was built for (its ELF's
    /// attributes).
    extensions: Option<String>,
    rows: Arc<Vec<Row>>,
    run: OnceLock<Pass>,
}

/// The one run of a program every trial of it shares.
struct Pass {
    elf: Elf,
    program: Program,
    /// The recording, in memory.
    trace: Vec<u8>,
    /// Instructions the run executed.
    instructions: u64,
    /// Its executed pc sequence.
    pcs: PcSequence,
    /// The cycle-level engine's cycles for each row's core (`None` when
    /// the core does not run the program's XLEN).
    cycles: Vec<Option<u64>>,
    /// The functions cycles are attributed to.
    functions: FunctionRanges,
    /// The cycle-level engine's cycles per function, for each row's core
    /// (as `cycles`).
    per_function: Vec<Option<Vec<FunctionCycles>>>,
    /// The cycle-level engine's CPI stack for each row's core (as
    /// `cycles`).
    cpi: Vec<Option<CpiStack>>,
}

fn host(path: &Path) -> HostConfig {
    HostConfig {
        cmdline: path.display().to_string(),
        ..HostConfig::default()
    }
}

impl Case {
    /// The program run once, recorded (measuring the data-cache
    /// geometries of the presets that have one) while every row's core
    /// follows it cycle by cycle; made on first use.
    fn pass(&self) -> &Pass {
        self.run.get_or_init(|| {
            let path = &self.prog.path;
            let elf = Elf::parse(&self.prog.bytes()).unwrap();
            let program = Program::analyse(&elf).unwrap();
            let functions = FunctionRanges::of_program(&program);
            let geometries: Vec<_> = retrace_timing::PRESETS
                .iter()
                .filter_map(|(n, _)| preset(n).unwrap().dcache)
                .collect();
            let runs: Vec<bool> = self.rows.iter().map(|r| self.runs_on(&r.core)).collect();
            let mut watchers = (
                PcSequenceObserver::default(),
                self.rows
                    .iter()
                    .zip(&runs)
                    .filter(|(_, &runs)| runs)
                    .map(|(r, _)| {
                        CycleObserver::new(&r.core, &functions.ranges)
                            .reading_code(&elf)
                            .accounting()
                    })
                    .collect::<Vec<_>>(),
            );
            let mut trace = Vec::new();
            let rec = record_run_watched(
                &elf,
                host(path),
                Console::null(),
                BUDGET,
                &mut trace,
                retrace_trace::Header::new(0, 32, 1),
                &geometries,
                &mut watchers,
            )
            .unwrap();
            let (pcs, mut cores) = watchers;
            for c in &mut cores {
                c.finish();
            }
            let mut each = cores.iter();
            let mut cpi = Vec::new();
            let (cycles, per_function) = runs
                .iter()
                .map(|&runs| match runs {
                    true => {
                        let c = each.next().unwrap();
                        cpi.push(c.core().cpi().copied());
                        (Some(c.core().cycles()), Some(c.per_function().to_vec()))
                    }
                    false => {
                        cpi.push(None);
                        (None, None)
                    }
                })
                .unzip();
            Pass {
                elf,
                program,
                trace,
                instructions: rec.run.instructions,
                pcs: pcs.0,
                cycles,
                functions,
                per_function,
                cpi,
            }
        })
    }

    fn name(&self) -> &str {
        &self.prog.name
    }

    /// Whether `core` runs the program: its XLEN, and the floating-point
    /// extensions it was built for (a core that does not say runs any).
    fn runs_on(&self, core: &CoreModel) -> bool {
        core.supports(self.xlen())
            && match (core.float, &self.extensions) {
                (Some(unit), Some(built)) => built.chars().all(|e| unit.implements(e)),
                _ => true,
            }
    }

    fn xlen(&self) -> Xlen {
        if self.prog.xlen == 32 {
            Xlen::Rv32
        } else {
            Xlen::Rv64
        }
    }
}

/// The replay reproduces the executed pc sequence.
fn replay_check_row(case: &Case) -> Result<(), Failed> {
    let r = case.pass();
    let mut table = r.program.table.clone();
    let chk = replay_check(&mut table, Addr(r.elf.entry), &r.trace[..]).unwrap();
    let mut bad = Vec::new();
    if chk != r.pcs {
        bad.push(format!(
            "{}: replay pc sequence {} insns hash {:016x}, functional {} insns hash {:016x}",
            case.name(),
            chk.instructions,
            chk.hash,
            r.pcs.instructions,
            r.pcs.hash
        ));
    }
    if r.instructions != r.pcs.instructions {
        bad.push(format!(
            "{}: recorded {} instructions, the pc summary saw {}",
            case.name(),
            r.instructions,
            r.pcs.instructions
        ));
    }
    all_ok(bad)
}

/// Estimate against the cycle-level engine: equal when `exact`, else
/// within 2% (the data cache, estimated from a measured miss rate); with
/// `memo`, the memoised replay against the step-by-step one too.
fn core_row(case: &Case, row: usize) -> Result<(), Failed> {
    let r = case.pass();
    let Row {
        core,
        fidelity,
        exact,
        memo,
        ..
    } = &case.rows[row];
    let (fidelity, exact) = (*fidelity, *exact);
    let name = case.prog.file_name();
    let reference = r.cycles[row].expect("a row runs only on cores that support its program");
    let est = estimate_trace(
        &r.program.table,
        Addr(r.elf.entry),
        &r.trace[..],
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
    if *memo {
        let memoised = (fidelity == Fidelity::Fast).then_some(est[0].0);
        memo_matches_stepwise(case, core, Fidelity::Fast, memoised)?;
    }
    if exact {
        functions_match(case, row)?;
    }
    Ok(())
}

/// The profile's cycles per function equal the cycle-level engine's,
/// function by function, and no function's exclusive cycles exceed its
/// inclusive ones.
fn functions_match(case: &Case, row: usize) -> Result<(), Failed> {
    let r = case.pass();
    let Row { core, fidelity, .. } = &case.rows[row];
    let name = case.prog.file_name();
    let (profile, est) = profile_trace(&r.program, &r.trace[..], core, *fidelity).unwrap();
    let reference = r.per_function[row].as_ref().expect("a row that ran");
    let mut bad = Vec::new();
    if Some(est.cycles) != r.cycles[row] {
        bad.push(format!(
            "{name} on {}: profile total {}, cycle-level {:?}",
            core.name, est.cycles, r.cycles[row]
        ));
    }
    let mut expected: Vec<(u64, &str, FunctionCycles)> = reference
        .iter()
        .enumerate()
        .filter(|(_, f)| f.instructions > 0 || f.calls > 0)
        .map(|(i, f)| (r.functions.ranges[i].0, r.functions.names[i].as_str(), *f))
        .collect();
    expected.sort_by_key(|e| e.0);
    let mut got: Vec<(u64, &str, FunctionCycles)> = profile
        .functions
        .iter()
        .map(|f| {
            let c = FunctionCycles {
                exclusive: f.exclusive,
                inclusive: f.inclusive,
                calls: f.calls,
                instructions: f.instructions,
            };
            (f.entry, f.name.as_str(), c)
        })
        .collect();
    got.sort_by_key(|e| e.0);
    if got.len() != expected.len() {
        bad.push(format!(
            "{name} on {}: the profile has {} functions, the cycle-level engine {}",
            core.name,
            got.len(),
            expected.len()
        ));
    }
    for (e, g) in expected.iter().zip(&got) {
        if e != g {
            bad.push(format!(
                "{name} on {}: {} cycle-level {:?}, profile {} {:?}",
                core.name, e.1, e.2, g.1, g.2
            ));
        }
    }
    for (_, f, c) in expected.iter().chain(&got) {
        if c.exclusive > c.inclusive {
            bad.push(format!(
                "{name} on {}: {f} exclusive {} > inclusive {}",
                core.name, c.exclusive, c.inclusive
            ));
        }
    }
    let mut stack = CpiStack::default();
    for c in profile.instructions.values() {
        stack.add(&c.cpi);
    }
    let engine = r.cpi[row].expect("a row that ran keeps a CPI stack");
    if stack != engine || stack.total() != est.cycles || engine.total() != est.cycles {
        bad.push(format!(
            "{name} on {}: CPI stack {} (sum {}), cycle-level {} (sum {}), cycles {}",
            core.name,
            stack.json(),
            stack.total(),
            engine.json(),
            engine.total(),
            est.cycles
        ));
    }
    bad.truncate(12);
    all_ok(bad)
}

/// The sweep's programs have functions entered only by a tail call: in
/// `sort-rv32-O2`, `_start` ends with `j _cstart`, and functions return
/// through `j __riscv_restore_0` (GCC's -msave-restore epilogue). Each is
/// entered, and its cycles lie inside its frames.
fn tail_calls(cases: &[Arc<Case>]) -> Result<(), Failed> {
    let case = cases
        .iter()
        .find(|c| c.name() == "sort-rv32-O2")
        .ok_or("sort-rv32-O2 is not among the example programs")?;
    let r = case.pass();
    let row = case.rows.iter().position(|r| r.name == "ideal").unwrap();
    let per = r.per_function[row].as_ref().unwrap();
    let mut bad = Vec::new();
    for name in ["_cstart", "__riscv_restore_0"] {
        let i = r
            .functions
            .names
            .iter()
            .position(|n| n == name)
            .ok_or_else(|| format!("no function {name}"))?;
        let f = per[i];
        if f.calls == 0 || f.exclusive == 0 || f.exclusive > f.inclusive {
            bad.push(format!("{name}: {f:?}"));
        }
    }
    all_ok(bad)
}

/// The memoised replay at `fidelity` gives the step-by-step replay's
/// numbers exactly; `memoised` is its estimate when the caller has it
/// already.
fn memo_matches_stepwise(
    case: &Case,
    core: &CoreModel,
    fidelity: Fidelity,
    memoised: Option<retrace_estimate::Estimate>,
) -> Result<(), Failed> {
    let r = case.pass();
    let name = case.prog.file_name();
    let cores = std::slice::from_ref(core);
    let entry = Addr(r.elf.entry);
    let table = &r.program.table;
    let trace = &r.trace[..];
    let memo = match memoised {
        Some(e) => e,
        None => estimate_trace(table, entry, trace, cores, fidelity, None).unwrap()[0].0,
    };
    let used = memo.memoised;
    let mut bad = Vec::new();
    if let Err(e) = common::stepwise_agrees(&name, table, entry, trace, core, fidelity, &memo) {
        bad.push(e);
    }
    if used.pps == 0 || used.pps_memoised > used.pps {
        bad.push(format!("{name}: implausible memo counts {used:?}"));
    }
    all_ok(bad)
}

fn main() {
    let rocket = preset("rocket").unwrap();
    // The dual-issue core, and the same without predictor tables, return
    // stack or caches: context-free, so `fast` is exact on it.
    let u74 = preset("u74").unwrap();
    let mut u74_static = u74.clone();
    u74_static.name = "u74-static".into();
    u74_static.branch.predictor = PredictorKind::Btfn;
    u74_static.branch.ras_depth = 0;
    u74_static.icache = None;
    u74_static.dcache = None;
    assert!(u74_static.is_context_free());
    let fast = |name: &'static str, memo: bool| Row {
        name,
        core: preset(name).unwrap(),
        fidelity: Fidelity::Fast,
        exact: true,
        memo,
    };
    let rows = Arc::new(vec![
        fast("ideal", false),
        fast("picorv32", true),
        fast("inorder5", true),
        fast("ibex-small", false),
        fast("ibex-maxperf", false),
        fast("cv32e40p", true),
        // The E31 has a BHT, a return stack and an I-cache but no data
        // cache: `control` is exact on it as it stands, memoised or not.
        Row {
            name: "e31",
            core: preset("e31").unwrap(),
            fidelity: Fidelity::Control,
            exact: true,
            memo: true,
        },
        Row {
            name: "rocket",
            core: rocket.without_dcache(),
            fidelity: Fidelity::Control,
            exact: true,
            memo: false,
        },
        Row {
            name: "rocket-dcache",
            core: rocket,
            fidelity: Fidelity::Control,
            exact: false,
            memo: false,
        },
        Row {
            name: "u74",
            core: u74.without_dcache(),
            fidelity: Fidelity::Control,
            exact: true,
            memo: false,
        },
        Row {
            name: "u74-dcache",
            core: u74.clone(),
            fidelity: Fidelity::Control,
            exact: false,
            memo: false,
        },
        Row {
            name: "u74-static",
            core: u74_static,
            fidelity: Fidelity::Fast,
            exact: true,
            memo: true,
        },
    ]);
    // The integer examples and the floating-point ones beside them.
    let mut programs = example_programs();
    programs.extend(programs_in(&program_dir().join("fp")));
    let cases: Vec<Arc<Case>> = programs
        .into_iter()
        .map(|prog| {
            let extensions = Elf::parse(&prog.bytes()).unwrap().extensions();
            Arc::new(Case {
                prog,
                extensions,
                rows: rows.clone(),
                run: OnceLock::new(),
            })
        })
        .collect();

    // Row kinds outside, programs inside: the two workers start on
    // different programs instead of one waiting for the other's run.
    let mut trials = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        for case in cases.iter().filter(|c| c.runs_on(&row.core)) {
            let case = case.clone();
            trials.push(Trial::test(
                format!("exact::{}::{}", case.name(), row.name),
                move || core_row(&case, i),
            ));
        }
    }
    let rocket = preset("rocket").unwrap();
    for case in cases.iter().filter(|c| c.runs_on(&rocket)) {
        let (case, core) = (case.clone(), rocket.clone());
        let control_case = case.clone();
        trials.push(Trial::test(
            format!("exact::{}::memo-rocket", case.name()),
            move || memo_matches_stepwise(&case, &core, Fidelity::Fast, None),
        ));
        // The memo at `control` keys on the front end too; with the data
        // cache's term and without (the `rocket` row checks the latter
        // against the cycle-level engine).
        for core in [rocket.clone(), rocket.without_dcache()] {
            let case = control_case.clone();
            trials.push(Trial::test(
                format!(
                    "exact::{}::memo-control-{}",
                    case.name(),
                    if core.dcache.is_some() {
                        "rocket"
                    } else {
                        "rocket-no-dcache"
                    }
                ),
                move || memo_matches_stepwise(&case, &core, Fidelity::Control, None),
            ));
        }
    }
    // The dual-issue core's memo at `control`: its signatures carry the
    // open issue group.
    for case in cases.iter().filter(|c| c.runs_on(&u74)) {
        let (case, core) = (case.clone(), u74.without_dcache());
        trials.push(Trial::test(
            format!("exact::{}::memo-control-u74-no-dcache", case.name()),
            move || memo_matches_stepwise(&case, &core, Fidelity::Control, None),
        ));
    }
    for case in &cases {
        let case = case.clone();
        trials.push(Trial::test(
            format!("exact::{}::replay-check", case.name()),
            move || replay_check_row(&case),
        ));
    }
    let all = cases.clone();
    trials.push(Trial::test("exact::tail-calls", move || tail_calls(&all)));
    trials::run(trials, || {})
}
