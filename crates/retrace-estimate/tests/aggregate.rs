//! Aggregation (US patent 8,448,140, embodiment 2) on every example program, one
//! trial per program (`aggregate::PROG`):
//!
//! - the plan names only continue tests of loops the machine code shows
//!   are Z1;
//! - recorded with `--aggregate loops`, the trace holds exactly the bits of
//!   the plain recording less one per aggregated test (fewer, on every
//!   program whose Z1 loops run), and replays to the functional engine's pc
//!   sequence and to the plain trace's estimate, cycle for cycle, on
//!   `ideal`, `picorv32` (RV32) and `inorder5`.
//!
//! - the aggregation ladder (`aggregate::PROG::ladder`): with fixed
//!   if-else sites (embodiment 3, lossy) the trace holds the plain bits less
//!   the loops' tests and the fixed sites' executions; with collapsed nests
//!   and functions (embodiments 4 and 5) fewer still; every lossy rung
//!   replays making the plain replay's calls in the same order (those
//!   inside collapsed extents left out), and its total on `inorder5` is
//!   within 0.1% of the plain one on the profiled input; raising either
//!   bias threshold (embodiment 6's gates) never records more bits.
//!
//! Each row prints the bits and bytes saved (`--nocapture`).

use retrace_estimate::aggregate::ladder::{ladder, Rung, BUILT};
use retrace_estimate::aggregate::{Level, LoopPlan};
use retrace_estimate::{estimate_trace, replay_check, Fidelity};
use retrace_isa::{Class, Xlen};
use retrace_program::{Addr, Elf, Program};
use retrace_sim::check::PcSequenceObserver;
use retrace_sim::record::{record_run_planned, Recording};
use retrace_sim::{Console, HostConfig};
use retrace_testkit::programs::{example_programs, ExampleProgram};
use retrace_testkit::trials::{self, all_ok, Failed, Trial};
use retrace_timing::preset;
use retrace_trace::protocol::loops::Plan;

const BUDGET: Option<u64> = Some(2_000_000_000);

fn record(
    elf: &Elf,
    path: &str,
    sites: &[(u64, bool)],
) -> (Vec<u8>, Recording, PcSequenceObserver) {
    let mut trace = Vec::new();
    let mut pcs = PcSequenceObserver::default();
    let host = HostConfig {
        cmdline: path.to_string(),
        ..HostConfig::default()
    };
    let rec = record_run_planned(
        elf,
        host,
        Console::null(),
        BUDGET,
        &mut trace,
        retrace_trace::Header::new(0, 32, 1),
        &[],
        &mut pcs,
        &Plan {
            loops: sites.to_vec(),
            ..Plan::default()
        },
    )
    .unwrap();
    (trace, rec, pcs)
}

fn plan_row(p: &ExampleProgram) -> Result<(), Failed> {
    let elf = Elf::parse(&p.bytes()).unwrap();
    let program = Program::analyse(&elf).unwrap();
    let mut bad = Vec::new();
    if !LoopPlan::new(&program, Level::None).is_empty() {
        bad.push("level none aggregates something".to_string());
    }
    let plan = LoopPlan::new(&program, Level::Loops);
    for l in &plan.loops {
        let inst = program.table.code().get(l.site).unwrap();
        let lp = program.loops(l.function).get(l.loop_id).clone();
        if inst.class() != Class::Branch
            || !(lp.z1 && lp.calls == 0 && lp.branches == 1)
            || lp.exit_branches != vec![l.site]
        {
            bad.push(format!(
                "{}: not the continue test of a Z1 loop: {lp:?}",
                l.site
            ));
        }
    }
    let sites = plan.sites();
    if !sites.windows(2).all(|w| w[0].0 < w[1].0) {
        bad.push("sites not sorted and distinct".into());
    }
    all_ok(bad)
}

fn replay_row(p: &ExampleProgram) -> Result<(), Failed> {
    let elf = Elf::parse(&p.bytes()).unwrap();
    let program = Program::analyse(&elf).unwrap();
    let plan = LoopPlan::new(&program, Level::Loops);
    let path = p.path.display().to_string();
    let (plain, plain_rec, _) = record(&elf, &path, &[]);
    let (agg, agg_rec, pcs) = record(&elf, &path, &plan.sites());
    let mut bad = Vec::new();
    let tests = agg_rec.loops.tests;
    println!(
        "{:<22} {:>3} loops  bits {:>11} -> {:>11} ({:>5.1}% fewer, {} runs)  bytes {:>9} -> {:>9}",
        p.name,
        plan.loops.len(),
        plain_rec.branches,
        agg_rec.branches,
        tests as f64 * 100.0 / plain_rec.branches.max(1) as f64,
        agg_rec.loops.runs,
        plain_rec.trace.file_bytes,
        agg_rec.trace.file_bytes
    );
    if agg_rec.branches + tests != plain_rec.branches {
        bad.push(format!(
            "{} bits + {tests} aggregated tests, the plain recording has {} bits",
            agg_rec.branches, plain_rec.branches
        ));
    }
    if !plan.is_empty() && tests == 0 {
        bad.push("the plan has loops but none ran: no bits saved".into());
    }
    let entry = Addr(elf.entry);
    let mut table = program.table.clone();
    match replay_check(&mut table, entry, &agg[..]) {
        Ok(seq) if seq == pcs.0 => {}
        Ok(seq) => bad.push(format!(
            "aggregated replay: pc sequence {seq:?}, functional {:?}",
            pcs.0
        )),
        Err(e) => bad.push(format!("aggregated replay check: {e}")),
    }
    let xlen = if p.xlen == 32 { Xlen::Rv32 } else { Xlen::Rv64 };
    let cores: Vec<_> = ["ideal", "picorv32", "inorder5"]
        .iter()
        .map(|n| preset(n).unwrap())
        .filter(|c| c.supports(xlen))
        .collect();
    let est =
        |trace: &[u8]| estimate_trace(&program.table, entry, trace, &cores, Fidelity::Fast, None);
    match (est(&plain[..]), est(&agg[..])) {
        (Ok(a), Ok(b)) => {
            for (core, ((a, _), (b, _))) in cores.iter().zip(a.iter().zip(&b)) {
                let key = |e: &retrace_estimate::Estimate| {
                    (
                        e.cycles,
                        e.control_cycles,
                        e.instructions,
                        e.mispredicts,
                        e.mem_ops,
                    )
                };
                if key(a) != key(b) {
                    bad.push(format!(
                        "{}: plain {:?}, aggregated {:?} (cycles, control, insns, mispredicts, mem ops)",
                        core.name,
                        key(a),
                        key(b)
                    ));
                }
            }
        }
        (a, b) => bad.push(format!("estimate failed: {:?} / {:?}", a.err(), b.err())),
    }
    all_ok(bad)
}

/// An aggregated trace replayed over another program is refused with a
/// one-line error, never estimated.
fn foreign_program() -> Result<(), Failed> {
    let (p, elf, program) = load("matmul-rv32-O2");
    let plan = LoopPlan::new(&program, Level::Loops);
    let (trace, _, _) = record(&elf, &p.path.display().to_string(), &plan.sites());
    refused_over_crc32(&trace, "foreign program")
}

/// An example program, parsed and analysed.
fn load(name: &str) -> (ExampleProgram, Elf, Program) {
    let p = retrace_testkit::programs::example_program(name);
    let elf = Elf::parse(&p.bytes()).unwrap();
    let program = Program::analyse(&elf).unwrap();
    (p, elf, program)
}

/// `trace` (of another program) estimated over crc32-rv32-O2 must fail,
/// in one line.
fn refused_over_crc32(trace: &[u8], what: &str) -> Result<(), Failed> {
    let (_, other_elf, other) = load("crc32-rv32-O2");
    let core = preset("ideal").unwrap();
    let got = estimate_trace(
        &other.table,
        Addr(other_elf.entry),
        trace,
        std::slice::from_ref(&core),
        Fidelity::Fast,
        None,
    );
    match got {
        Ok(e) => Err(format!(
            "estimated {} cycles from another program's trace",
            e[0].0.cycles
        )
        .into()),
        Err(e) if e.to_string().contains('\n') => Err(format!("a multi-line error: {e}").into()),
        Err(e) => {
            println!("{what}: {e}");
            Ok(())
        }
    }
}

/// If-else bias thresholds the ladder sweeps, ascending.
const SWEEP: [f64; 3] = [1e2, 1e4, 1e6];
/// Loop bias thresholds the ladder sweeps, ascending.
const LOOP_SWEEP: [f64; 3] = [1e3, 1e6, 1e9];

/// Bits by ascending threshold, then with the gate off: never more.
fn monotonic(what: &str, rungs: &[&Rung], sweep: &[f64], bad: &mut Vec<String>) {
    let Some((off, swept)) = rungs.split_first() else {
        return;
    };
    let bits: Vec<u64> = swept
        .iter()
        .map(|r| r.recording.branches)
        .chain([off.recording.branches])
        .collect();
    if !bits.windows(2).all(|w| w[0] >= w[1]) {
        bad.push(format!(
            "{what}: bits by rising threshold {sweep:?} then gate off: {bits:?}"
        ));
    }
}

/// The whole ladder of one program on inorder5: every lossy rung within
/// 0.1% of the plain estimate on the profiled input, both gates monotonic,
/// and the bits each level records.
fn ladder_row(p: &ExampleProgram) -> Result<(), Failed> {
    let elf = Elf::parse(&p.bytes()).unwrap();
    let program = Program::analyse(&elf).unwrap();
    let path = p.path.display().to_string();
    let host = || HostConfig {
        cmdline: path.clone(),
        ..HostConfig::default()
    };
    let core = preset("inorder5").unwrap();
    let ladder = ladder(
        &elf,
        &program,
        host,
        BUDGET,
        &core,
        Fidelity::Fast,
        &BUILT,
        &SWEEP,
        &LOOP_SWEEP,
    )
    .map_err(|e| format!("ladder: {e}"))?;
    // A program that writes code: lossy aggregation refuses it (the replay
    // walks other instructions than the run, and could not place the
    // code events), in one line, and the ladder has no lossy rung.
    let writes_code = p.name.starts_with("selfmod");
    match ladder.refused.as_slice() {
        [] if !writes_code => {}
        refused if writes_code => {
            let levels: Vec<Level> = refused.iter().map(|r| r.0).collect();
            let lines_ok = refused
                .iter()
                .all(|(_, why)| why.contains("code written at run time") && !why.contains('\n'));
            return if levels == [Level::IfElse, Level::Nested, Level::Functions] && lines_ok {
                Ok(())
            } else {
                Err(format!("refused otherwise than expected: {refused:?}").into())
            };
        }
        other => return Err(format!("refused levels: {other:?}").into()),
    }
    let rungs = ladder.rungs;
    let mut bad = Vec::new();
    let plain = &rungs[0];
    let reference = plain.estimate.cycles as f64;
    let at = |level| -> Vec<&Rung> { rungs.iter().filter(|r| r.level == level).collect() };
    let lossy = at(Level::IfElse);
    let nested = at(Level::Nested);
    let functions = at(Level::Functions);
    if lossy.len() != 1 + SWEEP.len()
        || nested.len() != 1 + LOOP_SWEEP.len()
        || functions.len() != 1
    {
        bad.push(format!(
            "{} if-else, {} nested, {} functions rungs",
            lossy.len(),
            nested.len(),
            functions.len()
        ));
    }
    for r in rungs.iter().filter(|r| r.level >= Level::IfElse) {
        let err = (r.estimate.cycles as f64 - reference) / reference;
        if err.abs() > 1e-3 {
            bad.push(format!(
                "{} threshold {:?}: total error {:+.4}%",
                r.level.name(),
                r.threshold,
                err * 100.0
            ));
        }
        if r.local.is_none() {
            bad.push(format!(
                "{} threshold {:?}: no local error",
                r.level.name(),
                r.threshold
            ));
        }
    }
    for r in &lossy {
        let l = r.recording.loops;
        if r.recording.branches + l.tests + l.fixed != plain.recording.branches {
            bad.push(format!(
                "threshold {:?}: {} bits + {} loop tests + {} fixed, the plain recording has {} bits",
                r.threshold, r.recording.branches, l.tests, l.fixed, plain.recording.branches
            ));
        }
    }
    let (off, all) = (lossy[0], functions[0]);
    let row = |r: &Rung| {
        format!(
            "{:>11} bits ({:>7.1}x fewer) error {:+.5}% local mean {:.3}% p99 {:.3}%",
            r.recording.branches,
            plain.recording.branches as f64 / r.recording.branches.max(1) as f64,
            (r.estimate.cycles as f64 - reference) / reference * 100.0,
            r.local.as_ref().map_or(0.0, |l| l.mean * 100.0),
            r.local.as_ref().map_or(0.0, |l| l.p99 * 100.0),
        )
    };
    println!(
        "{:<22} plain {:>11} bits\n  +if-else   {:>3} fixed                    {}\n  +nested    {:>3} nests                    {}\n  +functions {:>3} nests {:>3} functions      {}",
        p.name,
        plain.recording.branches,
        off.fixed,
        row(off),
        nested[0].nests,
        row(nested[0]),
        all.nests,
        all.functions,
        row(all),
    );
    // Ascending thresholds aggregate more; the gate off aggregates most.
    monotonic("if-else gate", &lossy, &SWEEP, &mut bad);
    monotonic("loop gate", &nested, &LOOP_SWEEP, &mut bad);
    all_ok(bad)
}

/// `elf` (example `p`) recorded with `plan`.
fn record_planned(elf: &Elf, p: &ExampleProgram, plan: &Plan) -> Result<Vec<u8>, Failed> {
    let mut trace = Vec::new();
    record_run_planned(
        elf,
        HostConfig {
            cmdline: p.path.display().to_string(),
            ..HostConfig::default()
        },
        Console::null(),
        BUDGET,
        &mut trace,
        retrace_trace::Header::new(0, 32, 1),
        &[],
        &mut (),
        plan,
    )
    .map_err(|e| e.to_string())?;
    Ok(trace)
}

/// A trace with fixed if-else sites replayed over another program is
/// refused with a one-line error.
fn foreign_if_else_plan() -> Result<(), Failed> {
    use retrace_estimate::aggregate::ifelse::IfElsePlan;
    use retrace_estimate::aggregate::ladder::branch_counts;
    let (p, elf, program) = load("exprparse-rv32-O2");
    let (plain, _, _) = record(&elf, &p.path.display().to_string(), &[]);
    let counts = branch_counts(&program, &plain).map_err(|e| e.to_string())?;
    let core = preset("inorder5").unwrap();
    let plan = IfElsePlan::new(&program.table, &counts, &[], &core, None).unwrap();
    if plan.sites.is_empty() {
        return Err("exprparse has no if-else candidate".into());
    }
    let trace = record_planned(
        &elf,
        &p,
        &Plan {
            fixed: plan.fixed_sites(),
            ..Plan::default()
        },
    )?;
    refused_over_crc32(&trace, "foreign if-else plan")
}

/// A trace with collapsed regions (nests and functions) replayed over
/// another program is refused with a one-line error.
fn foreign_collapse_plan() -> Result<(), Failed> {
    use retrace_estimate::aggregate::build::{build_plan, Gates};
    use retrace_estimate::aggregate::ladder::branch_counts;
    let (p, elf, program) = load("dhry-rv32-O2");
    let (plain, _, _) = record(&elf, &p.path.display().to_string(), &[]);
    let counts = branch_counts(&program, &plain).map_err(|e| e.to_string())?;
    let core = preset("inorder5").unwrap();
    let built = build_plan(
        &program,
        Level::Functions,
        Some((&plain[..], &counts)),
        &core,
        Gates::default(),
    )
    .map_err(|e| e.to_string())?;
    if built.plan.regions.is_empty() {
        return Err("dhry has no collapsed region".into());
    }
    let trace = record_planned(
        &elf,
        &p,
        &Plan {
            regions: built.plan.regions,
            ..Plan::default()
        },
    )?;
    refused_over_crc32(&trace, "foreign collapse plan")
}

fn main() {
    let mut trials = vec![
        Trial::test("aggregate::foreign-program", foreign_program),
        Trial::test("aggregate::foreign-if-else-plan", foreign_if_else_plan),
        Trial::test("aggregate::foreign-collapse-plan", foreign_collapse_plan),
    ];
    for p in example_programs() {
        let q = p.clone();
        trials.push(Trial::test(
            format!("aggregate::{}::plan", p.name),
            move || plan_row(&q),
        ));
        let q = p.clone();
        trials.push(Trial::test(
            format!("aggregate::{}::loops", p.name),
            move || replay_row(&q),
        ));
        trials.push(Trial::test(
            format!("aggregate::{}::ladder", p.name),
            move || ladder_row(&p),
        ));
    }
    trials::run(trials, || {});
}
