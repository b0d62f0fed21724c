//! Code written or placed at run time records and replays exactly: a
//! function copied into RAM and called there; an instruction patched in
//! place (a `nop` that becomes a `div` and back, a loop bound's immediate)
//! with `fence.i` before it runs; a function assembled word by word in a
//! data array, outside every ELF segment, and rewritten between calls; and
//! a loop that patches its own first instruction without `fence.i` (the
//! functional engine sees a store to decoded code at once, as the replay
//! must too); and a called function that rewrites the instruction its
//! caller returns to.
//!
//! The programs are assembled here with retrace-isa's encoder into minimal
//! ELF files, RV32 and RV64. One trial per row (`smc::NAME-rvXX::ROW`,
//! `harness = false` as in `exact.rs`):
//! - `check`: the program exits with the checksum it computes; the
//!   replay's pc sequence (instruction words included) equals the
//!   functional engine's; `pp --check` follows the run with full coverage
//!   and no mismatch;
//! - one row per preset that runs the program's XLEN: the estimate equals
//!   the cycle-level engine's cycles at `fast` and `control` on the
//!   context-free cores, at `control` on rocket without its data cache
//!   (within 2% with it); a profile's cycles equal the estimate's; the
//!   memoised `fast` replay equals the step-by-step one;
//! - `cuts`: the run cut by `--max-insns` after every instruction count
//!   (code events at and around the cut) records and replays exactly;
//! - `tamper`: a trace whose code bytes are altered is caught — the replay
//!   refuses it or `--check` disagrees;
//! - `qemu`: QEMU (which honours `fence.i`, and notices the store without
//!   it too) runs the program to the same exit code (ignored without QEMU,
//!   a failure under `RETRACE_REQUIRE_TOOLS=1`).
//!
//! `RETRACE_SMC_ELF_DIR=DIR` writes the programs there as ELF files, for
//! the command line.

use retrace_estimate::{estimate_trace, profile_trace, replay_check, Fidelity};
use retrace_isa::{Op, Xlen};
use retrace_program::{Addr, Elf, Program};
use retrace_sim::check::{check_table, functional_pc_sequence, PcSequenceObserver};
use retrace_sim::cycle::CycleObserver;
use retrace_sim::record::record_run_watched;
use retrace_sim::{Console, HostConfig, StopReason};
use retrace_testkit::asm::{self, Labelled, A0, A1, A2, A3, RA, S0, T0, T1};
use retrace_testkit::tools;
use retrace_testkit::trials::{self, all_ok, Failed, Trial};
use retrace_timing::{preset, CoreModel, PRESETS};
use retrace_trace::{rewrite_records, PcSequence, StreamKind};
use std::sync::{Arc, OnceLock};

mod common;

const T2: u8 = 7;
const T3: u8 = 28;
const S1: u8 = 9;
const S2: u8 = 18;
const S3: u8 = 19;
const S4: u8 = 20;

/// Far more than any of these programs runs.
const BUDGET: u64 = 1_000_000;

/// The testkit's assembler, with the routines these programs share.
type Asm = Labelled;

/// Data addresses, `fence.i` and the exit.
trait Routines {
    fn data(&mut self, rd: u8) -> &mut Asm;
    fn fence_i(&mut self) -> &mut Asm;
    fn exit(&mut self) -> &mut Asm;
}

impl Routines for Asm {
    /// `rd` = an address in RAM 64 KiB past this instruction: outside the
    /// program's one ELF segment.
    fn data(&mut self, rd: u8) -> &mut Asm {
        self.i(Op::Auipc, rd, 0, 0, 0x10000)
    }

    fn fence_i(&mut self) -> &mut Asm {
        self.i(Op::FenceI, 0, 0, 0, 0)
    }

    /// Exit through semihosting `SYS_EXIT_EXTENDED` with `s1 & 0xff`.
    fn exit(&mut self) -> &mut Asm {
        let st = if self.xlen == Xlen::Rv64 {
            Op::Sd
        } else {
            Op::Sw
        };
        let w = if self.xlen == Xlen::Rv64 { 8 } else { 4 };
        self.data(A1)
            .i(Op::Addi, A1, A1, 0, 0x7f0)
            .li(T0, 0x20026)
            .i(st, 0, A1, T0, 0)
            .i(Op::Andi, T0, S1, 0, 0xff)
            .i(st, 0, A1, T0, w)
            .i(Op::Addi, A0, 0, 0, 0x20);
        self.raw(asm::SEMI_PRE).raw(asm::EBREAK).raw(asm::SEMI_POST)
    }
}

/// A function of `a0` = n with a loop and a branch, position-independent:
/// the sum over i = 3n down to 1 of (i if i is odd, else 2).
fn function(a: &mut Asm) {
    a.i(Op::Addi, T0, 0, 0, 0)
        .i(Op::Add, T1, A0, A0, 0)
        .i(Op::Add, T1, T1, A0, 0)
        .label("fn-loop")
        .i(Op::Andi, T2, T1, 0, 1)
        .b(Op::Beq, T2, 0, "fn-even")
        .i(Op::Add, T0, T0, T1, 0)
        .jal(0, "fn-next")
        .label("fn-even")
        .i(Op::Addi, T0, T0, 0, 2)
        .label("fn-next")
        .i(Op::Addi, T1, T1, 0, -1)
        .b(Op::Bne, T1, 0, "fn-loop")
        .i(Op::Addi, A0, T0, 0, 0)
        .i(Op::Jalr, 0, RA, 0, 0);
}

/// `function` copied word by word into RAM (outside the ELF's segment),
/// `fence.i`, then called there: first by a direct `jal` (whose target was
/// no code when the table was built), then six times through a register.
fn ramfunc(a: &mut Asm) {
    a.label("ram")
        .data(S2)
        .i(Op::Addi, S2, S2, 0, 0x100)
        .la(A2, "fn-start")
        .la(T1, "fn-end")
        .i(Op::Addi, A3, S2, 0, 0)
        .label("copy")
        .i(Op::Lw, T0, A2, 0, 0)
        .i(Op::Sw, 0, A3, T0, 0)
        .i(Op::Addi, A2, A2, 0, 4)
        .i(Op::Addi, A3, A3, 0, 4)
        .b(Op::Bne, A2, T1, "copy")
        .fence_i()
        .i(Op::Addi, A0, 0, 0, 2)
        .jal_past(RA, "ram", 0x10100)
        .i(Op::Add, S1, S1, A0, 0)
        .i(Op::Addi, S0, 0, 0, 6)
        .label("call")
        .i(Op::Addi, A0, S0, 0, 0)
        .i(Op::Jalr, RA, S2, 0, 0)
        .i(Op::Add, S1, S1, A0, 0)
        .i(Op::Addi, S0, S0, 0, -1)
        .b(Op::Bne, S0, 0, "call")
        .exit()
        .label("fn-start");
    function(a);
    a.label("fn-end");
}

/// In place, with `fence.i` before each use: the instruction at `slot`
/// alternates between `nop` and `div t1, s0, t3`; the immediate of the
/// `addi` at `bound` (an inner loop's trip count) becomes `s0`.
fn patch(a: &mut Asm) {
    let nop = asm::word(a.xlen, Op::Addi, 0, 0, 0, 0);
    let div = asm::word(a.xlen, Op::Div, T1, S0, T3, 0);
    let bound = asm::word(a.xlen, Op::Addi, T1, 0, 0, 0);
    a.la(S2, "slot")
        .la(S3, "bound")
        .la(S4, "words")
        .i(Op::Addi, S0, 0, 0, 20)
        .i(Op::Addi, T3, 0, 0, 3)
        .label("loop")
        .i(Op::Andi, T0, S0, 0, 1)
        .i(Op::Slli, T0, T0, 0, 2)
        .i(Op::Add, T0, T0, S4, 0)
        .i(Op::Lw, T0, T0, 0, 0)
        .i(Op::Sw, 0, S2, T0, 0)
        .i(Op::Lw, T0, S4, 0, 8)
        .i(Op::Slli, T2, S0, 0, 20)
        .i(Op::Or, T0, T0, T2, 0)
        .i(Op::Sw, 0, S3, T0, 0)
        .fence_i()
        .i(Op::Addi, T1, 0, 0, 1)
        .label("slot")
        .raw(nop)
        .i(Op::Add, S1, S1, T1, 0)
        .label("bound")
        .raw(bound)
        .label("inner")
        .i(Op::Addi, S1, S1, 0, 1)
        .i(Op::Addi, T1, T1, 0, -1)
        .b(Op::Bne, T1, 0, "inner")
        .i(Op::Addi, S0, S0, 0, -1)
        .b(Op::Bne, S0, 0, "loop")
        .exit()
        .label("words")
        .raw(nop)
        .raw(div)
        .raw(bound);
}

/// A function assembled from immediates in a data array outside every ELF
/// segment — `addi a0, a0, k; slli a0, a0, 1; ret` — and called there; `k`
/// rewritten (with `fence.i`) before each of eight calls.
fn datacode(a: &mut Asm) {
    let add = asm::word(a.xlen, Op::Addi, A0, A0, 0, 0);
    let shift = asm::word(a.xlen, Op::Slli, A0, A0, 0, 1);
    let ret = asm::word(a.xlen, Op::Jalr, 0, RA, 0, 0);
    a.data(S2)
        .i(Op::Addi, S2, S2, 0, 0x400)
        .li(T0, shift)
        .i(Op::Sw, 0, S2, T0, 4)
        .li(T0, ret)
        .i(Op::Sw, 0, S2, T0, 8)
        .li(S3, add)
        .i(Op::Addi, S0, 0, 0, 8)
        .label("loop")
        .i(Op::Slli, T0, S0, 0, 20)
        .i(Op::Or, T0, T0, S3, 0)
        .i(Op::Sw, 0, S2, T0, 0)
        .fence_i()
        .i(Op::Addi, A0, S1, 0, 0)
        .i(Op::Jalr, RA, S2, 0, 0)
        .i(Op::Andi, S1, A0, 0, 0x3ff)
        .i(Op::Addi, S0, S0, 0, -1)
        .b(Op::Bne, S0, 0, "loop")
        .exit();
}

/// A loop whose body rewrites its own first instruction, without
/// `fence.i`: the store hits decoded code, which the functional engine
/// notices at once; the next turn runs the new instruction.
fn nofence(a: &mut Asm) {
    let nop = asm::word(a.xlen, Op::Addi, 0, 0, 0, 0);
    let add = asm::word(a.xlen, Op::Addi, S1, S1, 0, 5);
    a.la(S2, "top")
        .li(S3, nop)
        .li(S4, add)
        .i(Op::Addi, S0, 0, 0, 30)
        .label("top")
        .raw(nop)
        .i(Op::Addi, S1, S1, 0, 1)
        .i(Op::Andi, T0, S0, 0, 1)
        .i(Op::Addi, T1, S3, 0, 0)
        .b(Op::Beq, T0, 0, "even")
        .i(Op::Addi, T1, S4, 0, 0)
        .label("even")
        .i(Op::Sw, 0, S2, T1, 0)
        .i(Op::Addi, S0, S0, 0, -1)
        .b(Op::Bne, S0, 0, "top")
        .exit();
}

/// A called function that rewrites, with `fence.i`, the instruction its
/// caller returns to and one of its own that runs next (`addi` or `mul`,
/// which take different times): the return point changes while it is on
/// the replay's return stack.
fn callee(a: &mut Asm) {
    let one = asm::word(a.xlen, Op::Addi, S1, S1, 0, 1);
    let seven = asm::word(a.xlen, Op::Mul, S1, S1, A3, 0);
    a.i(Op::Addi, A3, 0, 0, 3)
        .la(S2, "return-point")
        .la(S3, "own")
        .li(S4, one)
        .li(T3, seven)
        .i(Op::Addi, S0, 0, 0, 10)
        .label("loop")
        .jal(RA, "patcher")
        .label("return-point")
        .raw(one)
        .i(Op::Addi, S0, S0, 0, -1)
        .b(Op::Bne, S0, 0, "loop")
        .exit()
        .label("patcher")
        .i(Op::Andi, T0, S0, 0, 1)
        .i(Op::Addi, T1, S4, 0, 0)
        .b(Op::Beq, T0, 0, "even")
        .i(Op::Addi, T1, T3, 0, 0)
        .label("even")
        .i(Op::Sw, 0, S2, T1, 0)
        .i(Op::Sw, 0, S3, T1, 0)
        .fence_i()
        .label("own")
        .raw(one)
        .i(Op::Jalr, 0, RA, 0, 0);
}

/// One program: its name and how it is written.
struct Source {
    name: &'static str,
    body: fn(&mut Asm),
}

/// ramfunc: f(n) for n = 2, 6..1 summed; patch: per turn s0 = 20..1, 1 or
/// s0/3 from the slot plus s0 from the inner loop; datacode: a0 = ((a0 +
/// k) * 2) & 0x3ff for k = 8..1; nofence: 30 turns of +1, and +5 on the
/// turns after an odd s0 (the first turn runs the `nop`).
const SOURCES: &[Source] = &[
    Source {
        name: "ramfunc",
        body: ramfunc,
    },
    Source {
        name: "patch",
        body: patch,
    },
    Source {
        name: "datacode",
        body: datacode,
    },
    Source {
        name: "nofence",
        body: nofence,
    },
    Source {
        name: "callee",
        body: callee,
    },
];

/// What each program computes, by the same arithmetic in Rust.
fn expected_exit(name: &str) -> u32 {
    let v: u64 = match name {
        "ramfunc" => (1..=6u64)
            .chain([2])
            .map(|n| {
                (1..=3 * n)
                    .map(|i| if i % 2 == 1 { i } else { 2 })
                    .sum::<u64>()
            })
            .sum(),
        "patch" => (1..=20u64)
            .map(|s0| if s0 % 2 == 1 { s0 / 3 } else { 1 } + s0)
            .sum(),
        "datacode" => (1..=8u64).rev().fold(0, |a, k| ((a + k) * 2) & 0x3ff),
        "nofence" => {
            // Turn t (s0 = 30 - t) runs what the previous turn stored: +5
            // after an odd s0.
            (0..30u64)
                .map(|t| 1 + if t > 0 && (31 - t) % 2 == 1 { 5 } else { 0 })
                .sum()
        }
        // Twice per turn: times 3 after an odd s0, else plus 1.
        "callee" => (1..=10u64)
            .rev()
            .fold(0, |s1, s0| if s0 % 2 == 1 { s1 * 9 } else { s1 + 2 }),
        _ => unreachable!(),
    };
    (v & 0xff) as u32
}

fn assemble(src: &Source, xlen: Xlen) -> Vec<u8> {
    let mut a = Asm::new(xlen);
    a.i(Op::Addi, S1, 0, 0, 0);
    (src.body)(&mut a);
    a.build()
}

fn host() -> HostConfig {
    HostConfig {
        cmdline: "smc".into(),
        ..HostConfig::default()
    }
}

/// A core of the sweep.
struct Row {
    name: String,
    core: CoreModel,
    /// Fidelities whose estimate must equal the cycle-level engine's.
    exact: Vec<Fidelity>,
    /// Else: `control` within 2% (the data cache, from a measured rate).
    within_2_percent: bool,
}

fn rows() -> Vec<Row> {
    let mut rows = Vec::new();
    for (name, _) in PRESETS {
        let core = preset(name).unwrap();
        if core.is_context_free() {
            rows.push(Row {
                name: name.to_string(),
                core,
                exact: vec![Fidelity::Fast, Fidelity::Control],
                within_2_percent: false,
            });
            continue;
        }
        if core.dcache.is_some() {
            rows.push(Row {
                name: format!("{name}-dcache"),
                core: core.clone(),
                exact: vec![],
                within_2_percent: true,
            });
        }
        rows.push(Row {
            name: name.to_string(),
            core: core.without_dcache(),
            exact: vec![Fidelity::Control],
            within_2_percent: false,
        });
    }
    rows
}

/// One program at one XLEN, and once a trial has made it, its run.
struct Case {
    name: String,
    exit: u32,
    xlen: Xlen,
    elf: Vec<u8>,
    rows: Arc<Vec<Row>>,
    run: OnceLock<Pass>,
}

/// The one run of a case every row shares.
struct Pass {
    elf: Elf,
    program: Program,
    trace: Vec<u8>,
    stop: StopReason,
    instructions: u64,
    pcs: PcSequence,
    /// Cycle-level cycles per row (`None`: the core does not run the XLEN).
    cycles: Vec<Option<u64>>,
}

/// Record `elf` (at most `budget` instructions) while a pc summary and a
/// cycle-level core per row watch the same run.
fn record(
    elf: &Elf,
    budget: u64,
    cores: &[&CoreModel],
) -> (Vec<u8>, retrace_sim::RunResult, PcSequence, Vec<u64>) {
    let geometries: Vec<_> = PRESETS
        .iter()
        .filter_map(|(n, _)| preset(n).unwrap().dcache)
        .collect();
    let mut watchers = (
        PcSequenceObserver::default(),
        cores
            .iter()
            .map(|c| CycleObserver::new(c, &[]))
            .collect::<Vec<_>>(),
    );
    let mut trace = Vec::new();
    let rec = record_run_watched(
        elf,
        host(),
        Console::null(),
        Some(budget),
        &mut trace,
        retrace_trace::Header::new(0, 32, 1),
        &geometries,
        &mut watchers,
    )
    .unwrap_or_else(|e| panic!("record: {e}"));
    let (pcs, cores) = watchers;
    let cycles = cores.iter().map(|c| c.core().cycles()).collect();
    (trace, rec.run, pcs.0, cycles)
}

impl Case {
    fn pass(&self) -> &Pass {
        self.run.get_or_init(|| {
            let elf = Elf::parse(&self.elf).unwrap();
            let program = Program::analyse(&elf).unwrap();
            let runs: Vec<&CoreModel> = self
                .rows
                .iter()
                .filter(|r| r.core.supports(self.xlen))
                .map(|r| &r.core)
                .collect();
            let (trace, run, pcs, cycles) = record(&elf, BUDGET, &runs);
            let mut cycles = cycles.into_iter();
            let cycles = self
                .rows
                .iter()
                .map(|r| r.core.supports(self.xlen).then(|| cycles.next().unwrap()))
                .collect();
            Pass {
                elf,
                program,
                trace,
                stop: run.stop,
                instructions: run.instructions,
                pcs,
                cycles,
            }
        })
    }
}

/// The run exits with the program's checksum; the replay reproduces its
/// pc sequence; `pp --check` follows it all.
fn check_row(case: &Case) -> Result<(), Failed> {
    let r = case.pass();
    let mut bad = Vec::new();
    if !matches!(r.stop, StopReason::Exit { code } if code == case.exit) {
        bad.push(format!(
            "stopped with {:?}, not an exit with {}",
            r.stop, case.exit
        ));
    }
    let mut table = r.program.table.clone();
    match replay_check(&mut table, Addr(r.elf.entry), &r.trace[..]) {
        Ok(seq) if seq == r.pcs => {}
        Ok(seq) => bad.push(format!(
            "replay pc sequence {} insns hash {:016x}, functional {} insns hash {:016x}",
            seq.instructions, seq.hash, r.pcs.instructions, r.pcs.hash
        )),
        Err(e) => bad.push(format!("replay: {e}")),
    }
    let (_, functional) = functional_pc_sequence(&r.elf, host(), Some(BUDGET)).unwrap();
    if functional != r.pcs {
        bad.push("the recorded run and a plain run executed different pcs".into());
    }
    let mut table = r.program.table.clone();
    let (_, report) = check_table(&r.elf, &mut table, host(), Some(BUDGET)).unwrap();
    if report.mismatches != 0 {
        bad.push(format!("pp --check: {:?}", report.first_mismatches));
    }
    if report.covered_instructions != report.executed_instructions
        || report.executed_instructions != r.pcs.instructions
    {
        bad.push(format!(
            "pp --check covered {} of {} instructions; the run executed {}",
            report.covered_instructions, report.executed_instructions, r.pcs.instructions
        ));
    }
    all_ok(bad)
}

/// Estimates against the cycle-level engine, and the memoised `fast`
/// replay against the step-by-step one.
fn core_row(case: &Case, row: usize) -> Result<(), Failed> {
    let r = case.pass();
    let Row {
        name,
        core,
        exact,
        within_2_percent,
    } = &case.rows[row];
    let reference = r.cycles[row].expect("rows run on cores of their XLEN");
    let entry = Addr(r.elf.entry);
    let table = &r.program.table;
    let cores = std::slice::from_ref(core);
    let estimate = |fidelity| {
        estimate_trace(table, entry, &r.trace[..], cores, fidelity, None)
            .map(|e| e[0].0)
            .map_err(|e| format!("{name} ({fidelity}): {e}"))
    };
    let mut bad = Vec::new();
    for &fidelity in exact {
        let e = estimate(fidelity)?;
        if e.cycles != reference {
            bad.push(format!(
                "{name} ({fidelity}): estimate {}, cycle-level {reference}",
                e.cycles
            ));
        }
        match profile_trace(&r.program, &r.trace[..], core, fidelity) {
            Ok((_, p)) if p.cycles == e.cycles => {}
            Ok((_, p)) => bad.push(format!(
                "{name} ({fidelity}): profile {} cycles, estimate {}",
                p.cycles, e.cycles
            )),
            Err(e) => bad.push(format!("{name} ({fidelity}) profile: {e}")),
        }
    }
    if *within_2_percent {
        let got = estimate(Fidelity::Control)?.cycles;
        let err = (got as f64 - reference as f64) / reference as f64 * 100.0;
        if err.abs() > 2.0 {
            bad.push(format!("{name}: error {err:+.3}% exceeds 2%"));
        }
    }
    for fidelity in [Fidelity::Fast, Fidelity::Control] {
        let memo = estimate(fidelity)?;
        if let Err(e) =
            common::stepwise_agrees(name, table, entry, &r.trace[..], core, fidelity, &memo)
        {
            bad.push(e);
        }
    }
    all_ok(bad)
}

/// The run cut by `--max-insns` after every instruction count up to 400,
/// then every 5th: replayed exactly on inorder5 (`fast`) and on rocket
/// without its data cache (`control`).
fn cuts_row(case: &Case) -> Result<(), Failed> {
    let r = case.pass();
    let inorder5 = preset("inorder5").unwrap();
    let rocket = preset("rocket").unwrap().without_dcache();
    let mut bad = Vec::new();
    let counts = (1..r.instructions.min(401)).chain((401..r.instructions).step_by(5));
    for n in counts {
        let (trace, run, pcs, cycles) = record(&r.elf, n, &[&inorder5, &rocket]);
        assert!(
            matches!(run.stop, StopReason::Runaway { .. }),
            "{n}: {:?}",
            run.stop
        );
        let mut table = r.program.table.clone();
        match replay_check(&mut table, Addr(r.elf.entry), &trace[..]) {
            Ok(seq) if seq == pcs => {}
            Ok(_) => bad.push(format!("cut at {n}: the replay's pc sequence differs")),
            Err(e) => bad.push(format!("cut at {n}: replay: {e}")),
        }
        for ((core, fidelity), want) in [(&inorder5, Fidelity::Fast), (&rocket, Fidelity::Control)]
            .into_iter()
            .zip(cycles)
        {
            let got = estimate_trace(
                &r.program.table,
                Addr(r.elf.entry),
                &trace[..],
                std::slice::from_ref(core),
                fidelity,
                None,
            )
            .map(|e| e[0].0.cycles);
            match got {
                Ok(got) if got == want => {}
                Ok(got) => bad.push(format!(
                    "cut at {n}, {}: estimate {got}, cycle-level {want}",
                    core.name
                )),
                Err(e) => bad.push(format!("cut at {n}, {}: {e}", core.name)),
            }
        }
        if bad.len() > 10 {
            break;
        }
    }
    all_ok(bad)
}

/// Visit the code events of `trace` (through [`rewrite_records`]), each
/// as `(index, address, bytes)` with its bytes editable; returns the
/// rewritten trace and the number of events.
fn edit_code_events(trace: &[u8], mut f: impl FnMut(usize, u64, &mut [u64])) -> (Vec<u8>, usize) {
    let mut n = 0;
    let out = rewrite_records(trace, |_, kind, items| {
        if kind != StreamKind::Code {
            return;
        }
        let mut i = 0;
        while i + 3 <= items.len() {
            let (addr, len) = (items[i + 1], items[i + 2] as usize);
            let end = (i + 3 + len).min(items.len());
            let bytes = &mut items[i + 3..end];
            f(n, addr, bytes);
            n += 1;
            i += 3 + len;
        }
    })
    .expect("a trace the recorder wrote");
    (out, n)
}

/// Each code event's bytes altered in turn (every byte xor 0x55): the
/// replay must refuse the trace or its pc-and-instruction sequence must
/// differ from the run's — never an estimate that `--check` would pass.
fn tamper_row(case: &Case) -> Result<(), Failed> {
    let r = case.pass();
    let (_, events) = edit_code_events(&r.trace, |_, _, _| {});
    if events == 0 {
        return Err("the trace records no code events".into());
    }
    let mut missed = Vec::new();
    for k in 0..events {
        let (trace, _) = edit_code_events(&r.trace, |i, _, bytes| {
            if i == k {
                bytes.iter_mut().for_each(|b| *b ^= 0x55);
            }
        });
        let mut table = r.program.table.clone();
        if let Ok(seq) = replay_check(&mut table, Addr(r.elf.entry), &trace[..]) {
            if seq == r.pcs {
                missed.push(k);
            }
        }
    }
    if !missed.is_empty() {
        return Err(format!("code events {missed:?} of {events} altered and not caught").into());
    }
    Ok(())
}

/// QEMU runs the program to the exit code the functional engine gives.
fn qemu_row(case: &Case) -> Result<(), Failed> {
    let path = std::env::temp_dir().join(format!(
        "retrace-smc-{}-{}.elf",
        case.name,
        std::process::id()
    ));
    std::fs::write(&path, &case.elf).map_err(|e| format!("{}: {e}", path.display()))?;
    let bin = if case.xlen == Xlen::Rv64 {
        "qemu-system-riscv64"
    } else {
        "qemu-system-riscv32"
    };
    let mut child = std::process::Command::new(bin)
        .args(["-M", "virt", "-bios", "none", "-nographic"])
        .args(["-semihosting-config", "enable=on,target=native", "-kernel"])
        .arg(&path)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("{bin}: {e}"))?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = std::fs::remove_file(&path);
            return Err(format!("{bin} ran for more than 30 s").into());
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let _ = std::fs::remove_file(&path);
    match status.code() {
        Some(code) if code as u32 == case.exit => Ok(()),
        other => Err(format!("QEMU exited with {other:?}, retrace with {}", case.exit).into()),
    }
}

fn main() {
    let rows = Arc::new(rows());
    let mut cases = Vec::new();
    for src in SOURCES {
        for xlen in [Xlen::Rv32, Xlen::Rv64] {
            let bits = if xlen == Xlen::Rv64 { 64 } else { 32 };
            let elf = assemble(src, xlen);
            if let Some(dir) = std::env::var_os("RETRACE_SMC_ELF_DIR") {
                // The programs as files, for the command line and QEMU.
                let path = std::path::Path::new(&dir).join(format!("{}-rv{bits}.elf", src.name));
                std::fs::write(&path, &elf).expect("writing an ELF");
            }
            cases.push(Arc::new(Case {
                name: format!("{}-rv{bits}", src.name),
                exit: expected_exit(src.name),
                xlen,
                elf,
                rows: rows.clone(),
                run: OnceLock::new(),
            }));
        }
    }
    let mut trials = Vec::new();
    for case in &cases {
        let c = case.clone();
        trials.push(Trial::test(format!("smc::{}::check", c.name), move || {
            check_row(&c)
        }));
        for (i, row) in rows.iter().enumerate() {
            if row.core.supports(case.xlen) {
                let c = case.clone();
                trials.push(Trial::test(
                    format!("smc::{}::{}", c.name, row.name),
                    move || core_row(&c, i),
                ));
            }
        }
        let c = case.clone();
        trials.push(Trial::test(format!("smc::{}::cuts", c.name), move || {
            cuts_row(&c)
        }));
        let c = case.clone();
        trials.push(Trial::test(format!("smc::{}::tamper", c.name), move || {
            tamper_row(&c)
        }));
        let c = case.clone();
        trials.push(trials::needing(
            format!("smc::{}::qemu", c.name),
            tools::QEMU,
            move || qemu_row(&c),
        ));
    }
    trials::run(trials, || {})
}
