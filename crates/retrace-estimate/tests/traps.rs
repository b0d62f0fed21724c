//! Programs that take synchronous traps record and replay exactly: every
//! kind of trap the functional engine raises — illegal instructions (an
//! undecodable word, a write to a read-only CSR, `sret`, `mret` and an
//! M-mode CSR from U-mode), loads, stores and AMOs outside memory,
//! misaligned LR/SC/AMOs, a fetch outside memory, `ecall` and `ebreak` to a
//! handler (a semihosting sequence's `ebreak` from U-mode too) — in the
//! middle of a partial program, at its first instruction and at its end,
//! once or hundreds of times in a loop, with handlers that return with
//! `mret` to `mepc + 4` or elsewhere.
//!
//! The programs are assembled here with retrace-isa's encoder into minimal
//! ELF files, RV32 and RV64, so no cross compiler is needed. One trial per
//! row (`traps::NAME-rvXX::ROW`, `harness = false` as in `exact.rs`):
//! - `check`: the replay's pc sequence equals the functional engine's, and
//!   `pp --check` follows the run with full coverage and no mismatch;
//! - one row per preset that runs the program's XLEN: the estimate from the
//!   recording equals the cycle-level engine's cycles at `fast` and
//!   `control` on the context-free cores, at `control` on rocket without
//!   its data cache, within 2% with it (miss rate measured at recording);
//!   a profile's cycles equal the estimate's; and the memoised `fast`
//!   replay equals the step-by-step one;
//! - `cuts`: the run cut by `--max-insns` after every instruction count
//!   (traps near the cut, the last partial program cut by a trap) records
//!   and replays exactly too.
//!
//! The `ecall-loop` program is the regression this file began with: an
//! `ecall` is not retired architecturally yet ends a partial program, and
//! the replay once counted it while the recorder and the cycle-level engine
//! did not.

use retrace_estimate::{estimate_trace, profile_trace, replay_check, Fidelity};
use retrace_isa::{csr, Op, Xlen};
use retrace_program::{Addr, Elf, Program};
use retrace_sim::check::{check_table, functional_pc_sequence, PcSequenceObserver};
use retrace_sim::cycle::CycleObserver;
use retrace_sim::record::record_run_watched;
use retrace_sim::{Console, HostConfig, StopReason};
use retrace_testkit::asm::{self, Labelled, A0, A1, A2, RA, S0, T0, T1};
use retrace_testkit::trials::{self, all_ok, Failed, Trial};
use retrace_timing::{preset, CoreModel, PRESETS};
use retrace_trace::PcSequence;
use std::sync::{Arc, OnceLock};

mod common;

const T2: u8 = 7;
const T3: u8 = 28;
const S1: u8 = 9;
const S2: u8 = 18;
const A7: u8 = 17;

/// Far more than any of these programs runs.
const BUDGET: u64 = 1_000_000;

/// The testkit's assembler, with the routines these programs share.
type Asm = Labelled;

/// Data addresses, the handler every program installs, and the exit.
trait Routines {
    fn data(&mut self, rd: u8, offset: i32) -> &mut Asm;
    fn prologue(&mut self) -> &mut Asm;
    fn exit(&mut self) -> &mut Asm;
    fn handler(&mut self) -> &mut Asm;
}

impl Routines for Asm {
    /// `rd` = an address in RAM 64 KiB past here, `+ offset`: data that no
    /// code shares.
    fn data(&mut self, rd: u8, offset: i32) -> &mut Asm {
        self.i(Op::Auipc, rd, 0, 0, 0x10000)
            .i(Op::Addi, rd, rd, 0, offset)
    }

    /// Install the common handler at label `handler`.
    fn prologue(&mut self) -> &mut Asm {
        self.la(T0, "handler").csrw(csr::MTVEC, T0)
    }

    /// Exit through semihosting `SYS_EXIT_EXTENDED` with the number of traps
    /// the handler counted in `s1` as the exit code.
    fn exit(&mut self) -> &mut Asm {
        let w = if self.xlen == Xlen::Rv64 { 8 } else { 4 };
        self.data(A1, 0)
            .i(Op::Lui, T0, 0, 0, 0x20 << 12)
            .i(Op::Addi, T0, T0, 0, 0x26)
            .store(A1, T0, 0)
            .store(A1, S1, w)
            .i(Op::Addi, A0, 0, 0, 0x20);
        self.raw(asm::SEMI_PRE).raw(asm::EBREAK).raw(asm::SEMI_POST)
    }

    /// The handler every program installs: counts the trap in `s1`; exits
    /// on an `ecall` with `a7` = 93; after a fetch fault returns to `ra`
    /// (the jump that faulted was a call); with a resume address in `s2`
    /// returns there (once); else to `mepc + 4`, past the trapping
    /// instruction.
    fn handler(&mut self) -> &mut Asm {
        self.label("handler")
            .i(Op::Addi, S1, S1, 0, 1)
            .i(Op::Addi, T3, 0, 0, 93)
            .b(Op::Beq, A7, T3, "handler-exit")
            .csrr(T2, csr::MCAUSE)
            .i(Op::Addi, T3, 0, 0, 1)
            .b(Op::Beq, T2, T3, "handler-to-ra")
            .b(Op::Bne, S2, 0, "handler-to-s2")
            .csrr(T2, csr::MEPC)
            .i(Op::Addi, T2, T2, 0, 4)
            .csrw(csr::MEPC, T2)
            .i(Op::Mret, 0, 0, 0, 0)
            .label("handler-to-ra")
            .csrw(csr::MEPC, RA)
            .i(Op::Mret, 0, 0, 0, 0)
            .label("handler-to-s2")
            .csrw(csr::MEPC, S2)
            .i(Op::Addi, S2, 0, 0, 0)
            .i(Op::Mret, 0, 0, 0, 0)
            .label("handler-exit")
            .exit()
    }
}

/// One program: its name, the traps it takes and how it is written.
struct Source {
    name: &'static str,
    traps: u64,
    /// Extra traps on RV64.
    traps_rv64: u64,
    body: fn(&mut Asm),
}

/// Illegal instructions: a write to a read-only CSR in the middle of a
/// partial program; an undecodable word, before which the path ends (the
/// trap comes right after the partial program's last instruction); `sret`
/// (illegal without S-mode), the end instruction of its partial program.
fn illegal(a: &mut Asm) {
    a.i(Op::Addi, T1, 0, 0, 5)
        .csrw(csr::CYCLE, T1)
        .i(Op::Addi, T1, T1, 0, 1)
        .b(Op::Bne, T1, 0, "after-branch")
        .label("after-branch")
        .i(Op::Addi, T1, T1, 0, 1)
        .raw(0)
        .i(Op::Addi, T1, T1, 0, 1)
        .i(Op::Sret, 0, 0, 0, 0)
        .i(Op::Addi, T1, T1, 0, 1);
}

/// A load, a store and an AMO outside memory (address 0), in the middle of
/// partial programs; on RV64 also `ld` from the top of the address space.
fn access(a: &mut Asm) {
    a.i(Op::Lw, T1, 0, 0, 0)
        .i(Op::Addi, T2, 0, 0, 1)
        .i(Op::Sw, 0, 0, T2, 0)
        .i(Op::Addi, T2, T2, 0, 1)
        .i(Op::AmoaddW, T1, 0, T2, 0)
        .i(Op::Addi, T2, T2, 0, 1);
    if a.xlen == Xlen::Rv64 {
        a.i(Op::Ld, T1, 0, 0, -8).i(Op::Addi, T2, T2, 0, 1);
    }
}

/// Misaligned LR, SC and AMO at an address 2 past a multiple of 8 (plain
/// loads and stores work misaligned, as on QEMU: the `lw` does not trap);
/// on RV64 also `amoswap.d`.
fn misaligned(a: &mut Asm) {
    a.data(A2, 0)
        .i(Op::Andi, A2, A2, 0, -8)
        .i(Op::Addi, A2, A2, 0, 2)
        .i(Op::LrW, T1, A2, 0, 0)
        .i(Op::Addi, T2, 0, 0, 3)
        .i(Op::ScW, T1, A2, T2, 0)
        .i(Op::AmoaddW, T1, A2, T2, 0)
        .i(Op::Lw, T1, A2, 0, 0);
    if a.xlen == Xlen::Rv64 {
        a.i(Op::AmoswapD, T1, A2, T2, 0).i(Op::Addi, T2, T2, 0, 1);
    }
}

/// `ecall` and `ebreak` into the handler, which returns past them.
fn calls(a: &mut Asm) {
    a.i(Op::Ecall, 0, 0, 0, 0)
        .i(Op::Addi, T1, 0, 0, 1)
        .i(Op::Ebreak, 0, 0, 0, 0)
        .i(Op::Addi, T1, T1, 0, 1);
}

/// Handlers that do not return past the trap: a fault whose handler
/// returns to a resume address (`mret` to a label), and a call to address
/// 0, whose fetch faults and whose handler returns to the caller.
fn resume(a: &mut Asm) {
    a.la(S2, "resumed")
        .i(Op::Lw, T1, 0, 0, 0)
        .i(Op::Addi, T1, T1, 0, 100)
        .i(Op::Addi, T1, T1, 0, 100)
        .label("resumed")
        .i(Op::Addi, T1, 0, 0, 7)
        .i(Op::Jalr, RA, 0, 0, 0)
        .i(Op::Addi, T1, T1, 0, 1);
}

/// Traps at the first instruction of a partial program: a branch target
/// whose load faults; a branch to an undecodable word (no partial program
/// can start there); a call to address 0 (a fetch fault).
fn first(a: &mut Asm) {
    a.i(Op::Addi, T1, 0, 0, 1)
        .b(Op::Bne, T1, 0, "target")
        .i(Op::Addi, T1, T1, 0, 1)
        .label("target")
        .i(Op::Lw, T2, 0, 0, 0)
        .i(Op::Addi, T1, T1, 0, 1)
        .b(Op::Beq, 0, 0, "bad")
        .i(Op::Addi, T1, T1, 0, 1)
        .label("bad")
        .raw(0)
        .i(Op::Addi, T1, T1, 0, 1)
        .i(Op::Jalr, RA, 0, 0, 0)
        .i(Op::Addi, T1, T1, 0, 1);
}

/// Traps in a loop of 100 turns: a faulting load in the middle of the loop
/// body, a called function whose first instruction faults, an `ecall` at
/// the return point, and a data-dependent branch between them.
fn looping(a: &mut Asm) {
    a.i(Op::Addi, S0, 0, 0, 100)
        .label("loop")
        .i(Op::Addi, T1, 0, 0, 1)
        .i(Op::Lw, T2, 0, 0, 0)
        .i(Op::Add, T1, T1, T1, 0)
        .i(Op::Andi, T3, S0, 0, 3)
        .b(Op::Beq, T3, 0, "skip")
        .i(Op::Addi, T1, T1, 0, 3)
        .label("skip")
        .jal(RA, "func")
        .i(Op::Ecall, 0, 0, 0, 0)
        .i(Op::Addi, S0, S0, 0, -1)
        .b(Op::Bne, S0, 0, "loop")
        .jal(0, "done")
        .label("func")
        .i(Op::Sw, 0, 0, T1, 0)
        .i(Op::Addi, T1, T1, 0, 1)
        .i(Op::Jalr, 0, RA, 0, 0)
        .label("done");
}

/// U-mode: `mret` into it, then an `ecall` (from U), a semihosting
/// sequence's `ebreak` (a plain breakpoint in U-mode, though the partial
/// program table takes it for a semihosting call), `mret` (illegal in
/// U-mode; the end instruction of its partial program) and a read of an
/// M-mode CSR (illegal); an `ecall` with `a7` = 93 exits through the handler.
fn user(a: &mut Asm) {
    a.la(T0, "user")
        .csrw(csr::MEPC, T0)
        .i(Op::Mret, 0, 0, 0, 0)
        .label("user")
        .i(Op::Addi, T1, 0, 0, 1)
        .i(Op::Ecall, 0, 0, 0, 0)
        .i(Op::Addi, T1, T1, 0, 1)
        .raw(asm::SEMI_PRE)
        .raw(asm::EBREAK)
        .raw(asm::SEMI_POST)
        .i(Op::Addi, T1, T1, 0, 1)
        .i(Op::Mret, 0, 0, 0, 0)
        .i(Op::Addi, T1, T1, 0, 1)
        .csrr(T2, csr::MSTATUS)
        .i(Op::Addi, A7, 0, 0, 93)
        .i(Op::Ecall, 0, 0, 0, 0);
}

/// The program this file began with: `ecall` three times in a loop.
fn ecall_loop(a: &mut Asm) {
    a.i(Op::Addi, S0, 0, 0, 3)
        .label("ecall-loop")
        .i(Op::Ecall, 0, 0, 0, 0)
        .i(Op::Addi, S0, S0, 0, -1)
        .b(Op::Bne, S0, 0, "ecall-loop");
}

const SOURCES: &[Source] = &[
    Source {
        name: "illegal",
        traps: 3,
        traps_rv64: 0,
        body: illegal,
    },
    Source {
        name: "access",
        traps: 3,
        traps_rv64: 1,
        body: access,
    },
    Source {
        name: "misaligned",
        traps: 3,
        traps_rv64: 1,
        body: misaligned,
    },
    Source {
        name: "calls",
        traps: 2,
        traps_rv64: 0,
        body: calls,
    },
    Source {
        name: "resume",
        traps: 2,
        traps_rv64: 0,
        body: resume,
    },
    Source {
        name: "first",
        traps: 3,
        traps_rv64: 0,
        body: first,
    },
    Source {
        name: "loop",
        traps: 300,
        traps_rv64: 0,
        body: looping,
    },
    Source {
        name: "user",
        traps: 5,
        traps_rv64: 0,
        body: user,
    },
    Source {
        name: "ecall-loop",
        traps: 3,
        traps_rv64: 0,
        body: ecall_loop,
    },
];

/// The program's ELF: prologue, body, exit, handler.
fn assemble(src: &Source, xlen: Xlen) -> Vec<u8> {
    let mut a = Asm::new(xlen);
    a.prologue();
    (src.body)(&mut a);
    a.exit().handler();
    a.build()
}

fn host() -> HostConfig {
    HostConfig {
        cmdline: "traps".into(),
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
    xlen: Xlen,
    traps: u64,
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
    traps: u64,
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
            .map(|c| CycleObserver::new(c, &[]).reading_code(elf))
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
            assert_eq!(elf.xlen, self.xlen);
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
                traps: run.harts[0].traps,
                stop: run.stop,
                instructions: run.instructions,
                pcs,
                cycles,
            }
        })
    }
}

/// The run exits normally having taken its traps; the replay reproduces
/// its pc sequence; `pp --check` follows it all.
fn check_row(case: &Case) -> Result<(), Failed> {
    let r = case.pass();
    let mut bad = Vec::new();
    if !matches!(r.stop, StopReason::Exit { code } if u64::from(code) == case.traps) {
        bad.push(format!(
            "stopped with {:?}, not an exit with the {} traps counted",
            r.stop, case.traps
        ));
    }
    if r.traps != case.traps {
        bad.push(format!("took {} traps, expected {}", r.traps, case.traps));
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
    // Executed: retired, and the `ecall`s and `ebreak`s that entered the
    // handler (observers see them execute), as the pc summary counts.
    if report.covered_instructions != report.executed_instructions
        || report.executed_instructions != r.pcs.instructions
    {
        bad.push(format!(
            "pp --check covered {} of {} instructions; the run executed {}",
            report.covered_instructions, report.executed_instructions, r.pcs.instructions
        ));
    }
    if report.traps != case.traps {
        bad.push(format!("pp --check saw {} traps", report.traps));
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
        // A profile replays the same way, one partial program at a time.
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
        eprintln!("{name}: estimate {got}, cycle-level {reference}, error {err:+.3}%");
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

/// The run cut by `--max-insns` after every instruction count: replayed
/// exactly on a context-free core (inorder5) and on rocket without its data
/// cache.
fn cuts_row(case: &Case) -> Result<(), Failed> {
    let r = case.pass();
    let inorder5 = preset("inorder5").unwrap();
    let rocket = preset("rocket").unwrap().without_dcache();
    let mut bad = Vec::new();
    // Every count up to a few hundred, then every 7th.
    let counts = (1..r.instructions.min(401)).chain((401..r.instructions).step_by(7));
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

fn main() {
    let rows = Arc::new(rows());
    let mut cases = Vec::new();
    for src in SOURCES {
        for xlen in [Xlen::Rv32, Xlen::Rv64] {
            let bits = if xlen == Xlen::Rv64 { 64 } else { 32 };
            let extra = if xlen == Xlen::Rv64 {
                src.traps_rv64
            } else {
                0
            };
            cases.push(Arc::new(Case {
                name: format!("{}-rv{bits}", src.name),
                xlen,
                traps: src.traps + extra,
                elf: assemble(src, xlen),
                rows: rows.clone(),
                run: OnceLock::new(),
            }));
        }
    }
    let mut trials = Vec::new();
    for case in &cases {
        let c = case.clone();
        trials.push(Trial::test(
            format!("traps::{}::check", c.name),
            move || check_row(&c),
        ));
        for (i, row) in rows.iter().enumerate() {
            if row.core.supports(case.xlen) {
                let c = case.clone();
                trials.push(Trial::test(
                    format!("traps::{}::{}", c.name, row.name),
                    move || core_row(&c, i),
                ));
            }
        }
        let c = case.clone();
        trials.push(Trial::test(format!("traps::{}::cuts", c.name), move || {
            cuts_row(&c)
        }));
    }
    trials::run(trials, || {})
}
