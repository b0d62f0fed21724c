//! Calls nested deeper than the recording protocol's return-stack bound
//! (`RETURN_STACK_BOUND`) record and replay exactly, and cost a bounded
//! amount of memory.
//!
//! The programs are assembled here (RV32 and RV64) and recurse without
//! touching memory — every call's return address is the same one, kept in
//! `ra` — so they can nest far deeper than the bound, or forever:
//! - `deep`: nests three times the bound and more, then returns through
//!   every level; past the bound the recorder's and the replay's stacks
//!   have dropped the oldest return points, so the last returns are escapes
//!   on both sides;
//! - `longjmp`: a return out of three frames to a return point still on the
//!   stack (the unwind rule), then ordinary calls and returns;
//! - `forever`: a function that calls itself and never returns, cut by the
//!   instruction budget: the replay's stack stays at the bound (it grew with
//!   every call before the bound existed), the return points beyond it are
//!   counted as dropped.
//!
//! For each: the replay's pc sequence is the functional engine's; `pp
//! --check` follows the run with no mismatch and counts the escapes the
//! trace holds (its shadow stack follows the same bound and unwind rule);
//! the estimate equals the cycle-level engine's cycles on every preset that
//! runs the XLEN (`fast` and `control` on the context-free cores, `control`
//! on the others without their data cache); and the memoised `fast` replay
//! equals the step-by-step one, though its stretches are applied at every
//! depth up to the bound and across it.
//!
//! - `returns_forever`: a return to itself with nothing on the stack, cut
//!   by the budget — an escape of about six bytes of records per
//!   instruction and not one branch bit, so the segments close mid-gap
//!   (`SEGMENT_MID_GAP`) and the replay's peeks at the escape stream must
//!   see across those closes.
//!
//! `tests/data/calls-forever-rv{32,64}.elf` are the `forever` program as
//! files, for the memory benchmark in docs/PERFORMANCE.md; a test keeps
//! them equal to what is assembled here (`RETRACE_BLESS=1` rewrites them).

use retrace_estimate::{
    estimate_trace, estimate_trace_stepwise, read_totals, replay_check, walk, Estimator, Fidelity,
    Graph, TraceHistory,
};
use retrace_isa::{Op, Xlen, RETURN_STACK_BOUND};
use retrace_program::{Addr, Elf, Program};
use retrace_sim::check::{check_table, functional_pc_sequence, PcSequenceObserver};
use retrace_sim::cycle::CycleObserver;
use retrace_sim::record::record_run_watched;
use retrace_sim::{Console, HostConfig, StopReason};
use retrace_testkit::asm::{self, Labelled, A0, A1, RA, S0, T0, T1};
use retrace_timing::{preset, CoreModel, PRESETS};
use retrace_trace::{PcSequence, TraceReader};
use std::path::Path;

const T2: u8 = 7;
const S1: u8 = 9;
const S2: u8 = 18;

/// Levels `deep` nests: three times the bound and a bit (not a multiple of
/// anything the bound is).
const DEEP: i32 = 3 * RETURN_STACK_BOUND as i32 + 12_345;

/// Instructions `forever` runs: about 80,000 calls of itself (and twice as
/// many of others), 1.2 times the bound.
const FOREVER_BUDGET: u64 = 1_000_000;

/// The testkit's assembler, with the routines these programs share.
type Asm = Labelled;

/// `ret` and the exit.
trait Routines {
    fn ret(&mut self) -> &mut Asm;
    fn exit(&mut self) -> &mut Asm;
}

impl Routines for Asm {
    /// `ret`: `jalr x0, 0(ra)`.
    fn ret(&mut self) -> &mut Asm {
        self.i(Op::Jalr, 0, RA, 0, 0)
    }

    /// Exit through semihosting `SYS_EXIT_EXTENDED` with code 0.
    fn exit(&mut self) -> &mut Asm {
        let w = if self.xlen == Xlen::Rv64 { 8 } else { 4 };
        let store = if self.xlen == Xlen::Rv64 {
            Op::Sd
        } else {
            Op::Sw
        };
        self.i(Op::Auipc, A1, 0, 0, 0x10000)
            .i(Op::Lui, T0, 0, 0, 0x20 << 12)
            .i(Op::Addi, T0, T0, 0, 0x26)
            .i(store, 0, A1, T0, 0)
            .i(store, 0, A1, 0, w)
            .i(Op::Addi, A0, 0, 0, 0x20);
        self.raw(asm::SEMI_PRE).raw(asm::EBREAK).raw(asm::SEMI_POST)
    }
}

/// The body of a recursion that keeps no frame: count down `a0`, call a
/// function that goes two calls deeper and returns, then at 0 go to
/// `bottom`, else branch on the low bits of `a0` (so the history has bits,
/// and stretches of the `fast` replay repeat) and call itself at `f`. The
/// stretches end before a branch, so after the two calls: they go two
/// deeper than they end, and at the bound drop two return points more than
/// they leave pushed. The program places `bottom` right after (which must
/// set `ra` itself), and [`leaf`] anywhere.
fn recurse(a: &mut Asm) {
    a.label("f")
        .i(Op::Addi, A0, A0, 0, -1)
        .jal(RA, "leaf")
        .b(Op::Beq, A0, 0, "bottom")
        .i(Op::Andi, T0, A0, 0, 3)
        .b(Op::Beq, T0, 0, "skip")
        .i(Op::Addi, T1, T1, 0, 1)
        .label("skip")
        .jal(RA, "f");
}

/// The function [`recurse`] calls, and the leaf function it calls.
fn leaf(a: &mut Asm) {
    a.label("leaf")
        .i(Op::Addi, T2, RA, 0, 0)
        .jal(RA, "leaf2")
        .i(Op::Addi, RA, T2, 0, 0)
        .ret()
        .label("leaf2")
        .i(Op::Addi, T1, T1, 0, 1)
        .ret();
}

/// `DEEP` nested calls, then as many returns: every return but the last
/// goes to `bottom`, right after the recursive call (where `ra` points);
/// the last, counted in `a1`, to `after`, the first call's return point
/// (`s0`).
fn deep(xlen: Xlen) -> Vec<u8> {
    let mut a = Asm::new(xlen);
    a.li(A0, DEEP as u32)
        .li(S1, DEEP as u32)
        .i(Op::Addi, A1, 0, 0, 0)
        .la(S0, "after")
        .jal(RA, "f")
        .label("after")
        .exit();
    recurse(&mut a);
    a.label("bottom")
        .la(RA, "bottom")
        .i(Op::Addi, A1, A1, 0, 1)
        .b(Op::Bne, A1, S1, "return")
        .i(Op::Addi, RA, S0, 0, 0)
        .label("return")
        .ret();
    leaf(&mut a);
    a.build()
}

/// `main` calls `g`, which nests three deep and then returns straight to
/// `main`'s return point `back` (a `longjmp`: an escape to a return point
/// still on the stack, which unwinds it); `main` then calls `k`, which
/// returns normally, and returns to its own caller — an ordinary return
/// only if the stack was unwound.
fn longjmp(xlen: Xlen) -> Vec<u8> {
    let mut a = Asm::new(xlen);
    a.jal(RA, "main").exit();
    a.label("main")
        .i(Op::Addi, S2, RA, 0, 0)
        .i(Op::Addi, A0, 0, 0, 3)
        .jal(RA, "g")
        .label("back")
        .jal(RA, "k")
        .i(Op::Addi, RA, S2, 0, 0)
        .ret();
    a.label("g")
        .i(Op::Addi, A0, A0, 0, -1)
        .b(Op::Beq, A0, 0, "jump")
        .jal(RA, "g")
        .label("jump")
        .la(RA, "back")
        .ret();
    a.label("k").i(Op::Addi, T1, T1, 0, 1).ret();
    a.build()
}

/// A function that calls itself forever.
fn forever(xlen: Xlen) -> Vec<u8> {
    let mut a = Asm::new(xlen);
    a.i(Op::Addi, A0, 0, 0, 0);
    recurse(&mut a);
    a.label("bottom").jal(0, "f");
    leaf(&mut a);
    a.build()
}

fn host() -> HostConfig {
    HostConfig {
        cmdline: "deep".into(),
        ..HostConfig::default()
    }
}

/// The cores to compare on, each with the fidelities that must be exact.
fn cores(xlen: Xlen) -> Vec<(CoreModel, Vec<Fidelity>)> {
    PRESETS
        .iter()
        .map(|(name, _)| preset(name).unwrap())
        .filter(|c| c.supports(xlen))
        .map(|c| {
            if c.is_context_free() {
                (c, vec![Fidelity::Fast, Fidelity::Control])
            } else {
                (c.without_dcache(), vec![Fidelity::Control])
            }
        })
        .collect()
}

/// Record `elf` while a pc summary and every core's cycle-level engine
/// watch; check everything the module documentation lists. Returns the
/// trace and the recorded run's stop.
fn check(name: &str, elf: &[u8], xlen: Xlen, budget: u64) -> (Vec<u8>, StopReason) {
    let elf = Elf::parse(elf).unwrap();
    let program = Program::analyse(&elf).unwrap();
    let cores = cores(xlen);
    let mut watchers = (
        PcSequenceObserver::default(),
        cores
            .iter()
            .map(|(c, _)| CycleObserver::new(c, &[]))
            .collect::<Vec<_>>(),
    );
    let mut trace = Vec::new();
    let bits = if xlen == Xlen::Rv64 { 64 } else { 32 };
    let rec = record_run_watched(
        &elf,
        host(),
        Console::null(),
        Some(budget),
        &mut trace,
        retrace_trace::Header::new(0, bits, 1),
        &[],
        &mut watchers,
    )
    .unwrap();
    let (pcs, engines) = watchers;
    let pcs: PcSequence = pcs.0;
    let entry = Addr(elf.entry);
    let mut bad = Vec::new();

    let mut table = program.table.clone();
    match replay_check(&mut table, entry, &trace[..]) {
        Ok(seq) if seq == pcs => {}
        Ok(_) => bad.push("the replay's pc sequence differs from the recording's".into()),
        Err(e) => bad.push(format!("replay: {e}")),
    }
    let (_, functional) = functional_pc_sequence(&elf, host(), Some(budget)).unwrap();
    assert_eq!(functional, pcs, "{name}: recorded and plain runs differ");

    let totals = read_totals(&trace[..]).unwrap();
    let mut table = program.table.clone();
    let (_, report) = check_table(&elf, &mut table, host(), Some(budget)).unwrap();
    if report.mismatches != 0 || report.covered_instructions != report.executed_instructions {
        bad.push(format!(
            "pp --check: {} of {} covered, {:?}",
            report.covered_instructions, report.executed_instructions, report.first_mismatches
        ));
    }
    if report.return_escapes != totals.escapes {
        bad.push(format!(
            "pp --check counted {} escapes, the trace holds {}",
            report.return_escapes, totals.escapes
        ));
    }

    for ((core, exact), engine) in cores.iter().zip(&engines) {
        let reference = engine.core().cycles();
        let one = std::slice::from_ref(core);
        let table = &program.table;
        for &fidelity in exact {
            match estimate_trace(table, entry, &trace[..], one, fidelity, None) {
                Ok(e) if e[0].0.cycles == reference => {}
                Ok(e) => bad.push(format!(
                    "{} ({fidelity}): estimate {}, cycle-level {reference}",
                    core.name, e[0].0.cycles
                )),
                Err(e) => bad.push(format!("{} ({fidelity}): {e}", core.name)),
            }
        }
        for fidelity in [Fidelity::Fast, Fidelity::Control] {
            let memo = estimate_trace(table, entry, &trace[..], one, fidelity, None);
            let step = estimate_trace_stepwise(table, entry, &trace[..], one, fidelity, None);
            match (memo, step) {
                (Ok(m), Ok(s)) => {
                    let (m, s) = (m[0].0, s[0].0);
                    if !m.same_results(&s) {
                        bad.push(format!(
                            "{} ({fidelity}): memoised {m:?}, step by step {s:?}",
                            core.name
                        ));
                    }
                }
                (m, s) => bad.push(format!(
                    "{} ({fidelity}): {:?} / {:?}",
                    core.name,
                    m.err(),
                    s.err()
                )),
            }
        }
    }
    assert!(bad.is_empty(), "{name}:\n{}", bad.join("\n"));
    (trace, rec.run.stop)
}

/// The replay's walk statistics of `trace` (step by step, on inorder5).
fn walk_stats(elf: &[u8], trace: &[u8]) -> retrace_estimate::WalkStats {
    let elf = Elf::parse(elf).unwrap();
    let mut table = Program::analyse(&elf).unwrap().table;
    let totals = read_totals(trace).unwrap();
    let mut history = TraceHistory::new(TraceReader::new(trace).unwrap(), 0);
    let mut est = Estimator::new(&preset("inorder5").unwrap(), Fidelity::Fast, 0.0);
    let start = table.resolve(elf.entry).unwrap();
    walk(
        &mut table,
        &mut history,
        &mut est,
        start,
        totals.instructions,
    )
    .unwrap()
}

#[test]
fn nesting_three_times_the_bound_and_returning() {
    for xlen in [Xlen::Rv32, Xlen::Rv64] {
        let elf = deep(xlen);
        let (trace, stop) = check("deep", &elf, xlen, 10_000_000);
        assert!(matches!(stop, StopReason::Exit { code: 0 }), "{stop:?}");
        // Every return past the bound is an escape: the stack held only the
        // latest RETURN_STACK_BOUND return points, of which the two calls in
        // between the recursive ones took two at the bottom.
        let totals = read_totals(&trace[..]).unwrap();
        let past = DEEP as u64 - RETURN_STACK_BOUND as u64;
        assert_eq!(totals.escapes, past + 2);
        let st = walk_stats(&elf, &trace);
        assert_eq!(st.max_depth, RETURN_STACK_BOUND);
        assert!((past..=past + 2).contains(&st.dropped), "{st:?}");
        assert_eq!(st.escapes, totals.escapes);
    }
}

#[test]
fn a_longjmp_unwinds_every_stack_alike() {
    for xlen in [Xlen::Rv32, Xlen::Rv64] {
        let (trace, stop) = check("longjmp", &longjmp(xlen), xlen, 10_000);
        assert!(matches!(stop, StopReason::Exit { code: 0 }), "{stop:?}");
        // The jump out of g's frames, and nothing else.
        assert_eq!(read_totals(&trace[..]).unwrap().escapes, 1);
    }
}

#[test]
fn calling_forever_keeps_the_stacks_at_the_bound() {
    for xlen in [Xlen::Rv32, Xlen::Rv64] {
        let elf = forever(xlen);
        let (trace, stop) = check("forever", &elf, xlen, FOREVER_BUDGET);
        assert!(matches!(stop, StopReason::Runaway { .. }), "{stop:?}");
        let st = walk_stats(&elf, &trace);
        assert_eq!(st.instructions, FOREVER_BUDGET);
        // Calls of itself: the budget over the loop's length (12 or 13
        // instructions, the other calls' included), each one deeper; at the
        // bound each level drops one return point (its call of `leaf2` does,
        // with the stack full: those two calls return, the next call of
        // itself fills it again).
        let calls = st.max_depth as u64 + st.dropped;
        assert!(
            (FOREVER_BUDGET / 13..=FOREVER_BUDGET / 12 + 1).contains(&calls),
            "{calls} {st:?}"
        );
        assert_eq!(st.max_depth, RETURN_STACK_BOUND, "{st:?}");
    }
}

/// A `ret` that returns to itself forever with an empty stack: every
/// instruction is a return escape.
fn returns_forever(xlen: Xlen) -> Vec<u8> {
    let mut a = Asm::new(xlen);
    a.la(RA, "r").label("r").ret();
    a.build()
}

/// Instructions `returns_forever` runs: about 2.5 million escapes, some 15
/// MiB of records with no branch bit — three mid-gap closes and more.
const RETURNS_BUDGET: u64 = 2_500_000;

#[test]
fn returning_forever_closes_segments_mid_gap() {
    for xlen in [Xlen::Rv32, Xlen::Rv64] {
        let elf = returns_forever(xlen);
        let (trace, stop) = check("returns_forever", &elf, xlen, RETURNS_BUDGET);
        assert!(matches!(stop, StopReason::Runaway { .. }), "{stop:?}");
        let totals = read_totals(&trace[..]).unwrap();
        assert_eq!(totals.branches, 0);
        assert!(totals.escapes > RETURNS_BUDGET - 10, "{totals:?}");
        // Drain the escape stream: the reader crosses every mid-gap close
        // and never holds more than a segment.
        let mut r = TraceReader::new(&trace[..]).unwrap();
        let (mut items, mut most) = (0u64, 0usize);
        while r
            .next_record(0, retrace_trace::StreamKind::Escapes)
            .unwrap()
            .is_some()
        {
            items += 1;
            most = most.max(r.buffered_bytes());
        }
        assert_eq!(items, 2 * totals.escapes);
        assert!(r.mid_gap_crossings() >= 3, "{}", r.mid_gap_crossings());
        assert!(most < 24 << 20, "the reader held {most} bytes");
    }
}

/// The `forever` program as files for the memory benchmark (RV64 for the
/// presets that run it, RV32 for `picorv32`).
#[test]
fn the_benchmark_programs_are_current() {
    for (xlen, bits) in [(Xlen::Rv32, 32), (Xlen::Rv64, 64)] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(format!("tests/data/calls-forever-rv{bits}.elf"));
        let elf = forever(xlen);
        if retrace_testkit::golden::blessing() {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &elf).unwrap();
            continue;
        }
        let committed = std::fs::read(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (RETRACE_BLESS=1 writes it)", path.display()));
        assert!(
            committed == elf,
            "{} is not the assembled program (RETRACE_BLESS=1 rewrites it)",
            path.display()
        );
    }
}

/// `forever` cut at many points while its stack fills up and its memoised
/// stretches start dropping return points: the memoised replay's stack
/// figures (and everything else) equal the step-by-step replay's at every
/// cut, and the estimate the cycle-level engine's — a stretch applied on a
/// nearly full stack drops what its deepest point would have, not merely
/// room for what it leaves pushed.
#[test]
fn cuts_where_memoised_stretches_reach_the_bound() {
    let elf = Elf::parse(&forever(Xlen::Rv64)).unwrap();
    let program = Program::analyse(&elf).unwrap();
    let core = preset("inorder5").unwrap();
    let one = std::slice::from_ref(&core);
    let entry = Addr(elf.entry);
    // The bound is reached after about 65,536 × 12.75 instructions.
    let mut bad = Vec::new();
    for budget in (832_000..842_000).step_by(250) {
        let mut engine = CycleObserver::new(&core, &[]);
        let mut trace = Vec::new();
        record_run_watched(
            &elf,
            host(),
            Console::null(),
            Some(budget),
            &mut trace,
            retrace_trace::Header::new(0, 64, 1),
            &[],
            &mut engine,
        )
        .unwrap();
        let table = &program.table;
        let memo = estimate_trace(table, entry, &trace[..], one, Fidelity::Fast, None).unwrap();
        let step =
            estimate_trace_stepwise(table, entry, &trace[..], one, Fidelity::Fast, None).unwrap();
        let (m, s) = (memo[0].0, step[0].0);
        if !m.same_results(&s) || s.cycles != engine.core().cycles() {
            bad.push(format!(
                "cut at {budget}: memoised {m:?}, step by step {s:?}, cycle-level {}",
                engine.core().cycles()
            ));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
