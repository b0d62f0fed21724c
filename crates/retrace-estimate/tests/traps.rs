//! Regression: a program that enters a trap handler with `ecall` and comes
//! back with `mret`. The trapping `ecall` is not retired architecturally,
//! yet it ends a partial program; the replay once counted it while the
//! recorder and the cycle-level engine did not, so `--check` failed and the
//! cycles were off. The program is assembled here with retrace-isa's
//! encoder into a minimal RV64 ELF, so no cross compiler is needed.

use retrace_estimate::{estimate_trace, replay_check, Fidelity};
use retrace_isa::{csr, Op, Xlen};
use retrace_program::{Addr, Elf, Program};
use retrace_sim::cycle::run_cycle_level;
use retrace_sim::record::record_run;
use retrace_sim::{Console, HostConfig, StopReason};
use retrace_timing::preset;

use retrace_testkit::asm::{self, A0, A1, S0, SP, T0, T1};
use retrace_testkit::elf::ElfImage;

fn i(op: Op, rd: u8, rs1: u8, rs2: u8, imm: i32) -> u32 {
    asm::word(Xlen::Rv64, op, rd, rs1, rs2, imm)
}

/// The program: install a handler, `ecall` three times in a loop (the
/// handler skips the `ecall` and returns with `mret`), then exit 7 through
/// semihosting `SYS_EXIT_EXTENDED`.
fn program() -> Vec<u32> {
    let handler_at = 0x80; // byte offset of the handler
    let mut w = vec![
        i(Op::Auipc, T0, 0, 0, 0),
        i(Op::Addi, T0, T0, 0, handler_at),
        i(Op::Csrrw, 0, T0, 0, i32::from(csr::MTVEC)),
        i(Op::Addi, S0, 0, 0, 3),
        // loop (offset 16):
        i(Op::Ecall, 0, 0, 0, 0),
        i(Op::Addi, S0, S0, 0, -1),
        i(Op::Bne, 0, S0, 0, -8),
        // exit: block {ADP_Stopped_ApplicationExit, 7} at sp = BASE + 0x1000
        i(Op::Auipc, SP, 0, 0, 0x1000),
        i(Op::Lui, A1, 0, 0, 0x20 << 12),
        i(Op::Addiw, A1, A1, 0, 0x26),
        i(Op::Sd, 0, SP, A1, 0),
        i(Op::Addi, A1, 0, 0, 7),
        i(Op::Sd, 0, SP, A1, 8),
        i(Op::Addi, A1, SP, 0, 0),
        i(Op::Addi, A0, 0, 0, 0x20),
        i(Op::Slli, 0, 0, 0, 0x1f),
        i(Op::Ebreak, 0, 0, 0, 0),
        i(Op::Srai, 0, 0, 0, 7),
    ];
    // The auipc of sp sits at offset 28: sp = BASE + 28 + 0x1000; fine, the
    // block only needs to be in RAM and 8-byte aligned enough for sd.
    while w.len() * 4 < handler_at as usize {
        w.push(i(Op::Addi, 0, 0, 0, 0));
    }
    w.extend([
        i(Op::Csrrs, T1, 0, 0, i32::from(csr::MEPC)),
        i(Op::Addi, T1, T1, 0, 4),
        i(Op::Csrrw, 0, T1, 0, i32::from(csr::MEPC)),
        i(Op::Mret, 0, 0, 0, 0),
    ]);
    w
}

#[test]
fn ecall_into_a_handler_replays_exactly() {
    let elf = Elf::parse(&ElfImage::riscv64().build(&asm::bytes(&program()))).unwrap();
    let program = Program::analyse(&elf).unwrap();
    let host = || HostConfig {
        cmdline: "traps".into(),
        ..HostConfig::default()
    };
    let trace = std::env::temp_dir().join(format!("retrace-traps-{}.rtrace", std::process::id()));
    let rec = record_run(
        &elf,
        host(),
        Console::null(),
        Some(10_000),
        std::fs::File::create(&trace).unwrap(),
        retrace_trace::Header::new(0, 64, 1),
        &[],
    )
    .unwrap();
    assert!(
        matches!(rec.run.stop, StopReason::Exit { code: 7 }),
        "{:?}",
        rec.run.stop
    );
    assert_eq!(
        rec.run.harts[0].traps, 3,
        "the three ecalls entered the handler"
    );

    // The replay follows the functional engine instruction for instruction.
    let (_, functional) =
        retrace_sim::check::functional_pc_sequence(&elf, host(), Some(10_000)).unwrap();
    let mut table = program.table.clone();
    let replayed = replay_check(&mut table, Addr(elf.entry), &trace).unwrap();
    assert_eq!(replayed, functional);

    // And the cycles equal the cycle-level engine's on every preset.
    for name in ["ideal", "inorder5", "rocket"] {
        let core = preset(name).unwrap().without_dcache();
        let (_, obs) =
            run_cycle_level(&elf, host(), Console::null(), Some(10_000), &core, &[]).unwrap();
        let fidelity = if core.is_context_free() {
            Fidelity::Fast
        } else {
            Fidelity::Control
        };
        let est = estimate_trace(
            &program.table,
            Addr(elf.entry),
            &trace,
            std::slice::from_ref(&core),
            fidelity,
            None,
        )
        .unwrap();
        assert_eq!(est[0].0.cycles, obs.core().cycles(), "{name}");
    }
    let _ = std::fs::remove_file(&trace);
}

/// Regression: `retrace pp --check` reported a mismatch at the `ecall` that
/// enters the handler, and its summary counted more partial programs
/// executed than the table has.
#[test]
fn table_check_follows_an_ecall_into_a_handler() {
    let elf = Elf::parse(&ElfImage::riscv64().build(&asm::bytes(&program()))).unwrap();
    let mut table = Program::analyse(&elf).unwrap().table;
    let host = HostConfig {
        cmdline: "traps".into(),
        ..HostConfig::default()
    };
    let (run, report) =
        retrace_sim::check::check_table(&elf, &mut table, host, Some(10_000)).unwrap();
    assert!(
        matches!(run.stop, StopReason::Exit { code: 7 }),
        "{:?}",
        run.stop
    );
    assert_eq!(report.traps, 3, "{report:?}");
    assert_eq!(report.mismatches, 0, "{:?}", report.first_mismatches);
    assert!(
        report.executed_partial_programs <= table.len() as u64,
        "{} of {} partial programs executed",
        report.executed_partial_programs,
        table.len()
    );
    assert_eq!(
        report.covered_instructions, report.executed_instructions,
        "{report:?}"
    );
}
