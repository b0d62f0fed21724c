//! Regression: a program that enters a trap handler with `ecall` and comes
//! back with `mret`. The trapping `ecall` is not retired architecturally,
//! yet it ends a partial program; the replay once counted it while the
//! recorder and the cycle-level engine did not, so `--check` failed and the
//! cycles were off. The program is assembled here with retrace-isa's
//! encoder into a minimal RV64 ELF, so no cross compiler is needed.

use retrace_estimate::{estimate_trace, replay_check, Fidelity};
use retrace_isa::{csr, encode, Inst, Op, Xlen};
use retrace_program::{Addr, Elf, Program};
use retrace_sim::cycle::run_cycle_level;
use retrace_sim::record::record_run;
use retrace_sim::{Console, HostConfig, StopReason};
use retrace_timing::preset;

const BASE: u64 = 0x8000_0000;
const T0: u8 = 5;
const T1: u8 = 6;
const S0: u8 = 8;
const A0: u8 = 10;
const A1: u8 = 11;
const SP: u8 = 2;

fn i(op: Op, rd: u8, rs1: u8, rs2: u8, imm: i32) -> u32 {
    let inst = Inst {
        op,
        rd,
        rs1,
        rs2,
        len: 4,
        imm,
        raw: 0,
    };
    encode(&inst, Xlen::Rv64).unwrap_or_else(|e| panic!("{op:?}: {e:?}"))
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

/// A minimal ELF64 executable: one R+W+X segment with `code` at BASE.
fn elf64(code: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&[0x7f, b'E', b'L', b'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    f.extend_from_slice(&2u16.to_le_bytes()); // ET_EXEC
    f.extend_from_slice(&243u16.to_le_bytes()); // EM_RISCV
    f.extend_from_slice(&1u32.to_le_bytes());
    f.extend_from_slice(&BASE.to_le_bytes()); // entry
    f.extend_from_slice(&64u64.to_le_bytes()); // phoff
    f.extend_from_slice(&0u64.to_le_bytes()); // shoff
    f.extend_from_slice(&0u32.to_le_bytes()); // flags
    for v in [64u16, 56, 1, 64, 0, 0] {
        f.extend_from_slice(&v.to_le_bytes());
    }
    f.extend_from_slice(&1u32.to_le_bytes()); // PT_LOAD
    f.extend_from_slice(&7u32.to_le_bytes()); // R+W+X
    f.extend_from_slice(&120u64.to_le_bytes()); // offset
    f.extend_from_slice(&BASE.to_le_bytes());
    f.extend_from_slice(&BASE.to_le_bytes());
    f.extend_from_slice(&(code.len() as u64).to_le_bytes());
    f.extend_from_slice(&(code.len() as u64).to_le_bytes());
    f.extend_from_slice(&4u64.to_le_bytes());
    f.extend_from_slice(code);
    f
}

#[test]
fn ecall_into_a_handler_replays_exactly() {
    let code: Vec<u8> = program().iter().flat_map(|w| w.to_le_bytes()).collect();
    let elf = Elf::parse(&elf64(&code)).unwrap();
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
