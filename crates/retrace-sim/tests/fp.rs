//! The F and D extensions in the functional engine on hand-assembled
//! programs: they execute once `mstatus.FS` is on, and random FP
//! instruction words (any fields, any rounding mode, either XLEN) never
//! panic the engine — each executes or traps as illegal.
//! Bit-exactness against QEMU is `tests/fp_qemu.rs` at the repository root.

use proptest::prelude::*;
use retrace_program::Elf;
use retrace_sim::{Console, HostConfig, Machine, MachineConfig, StopReason};
use retrace_testkit::asm::bytes;
use retrace_testkit::elf::{ElfImage, BASE};

/// `mstatus.FS` = Initial.
const FS_INITIAL: u64 = 1 << 13;

fn machine(code: &[u32], rv64: bool) -> Machine {
    let image = if rv64 {
        ElfImage::riscv64()
    } else {
        ElfImage::riscv32()
    };
    let elf = Elf::parse(&image.bss(64).build(&bytes(code))).unwrap();
    Machine::new(
        &elf,
        &MachineConfig::default(),
        HostConfig::default(),
        Console::null(),
    )
    .unwrap()
}

#[test]
fn fp_instructions_execute_with_fs_on() {
    // fmv.w.x fa0, a0; fmv.w.x fa1, a1; fadd.s fa2, fa0, fa1 (rne);
    // fcvt.w.s a2, fa2 (rtz); fsw fa2, 0(a3); flw fa3, 0(a3)
    let code = [
        0xf005_0553,
        0xf005_85d3,
        0x00b5_0653,
        0xc006_1653,
        0x00c6_a027,
        0x0006_a687,
    ];
    let mut m = machine(&code, true);
    let h = &mut m.harts[0];
    h.csr.mstatus |= FS_INITIAL;
    h.x[10] = 0x3fc0_0000; // 1.5
    h.x[11] = 0x4020_0000; // 2.5
    h.x[13] = BASE + 0x100;
    let r = m.run(Some(code.len() as u64), &mut ());
    assert_eq!(r.instructions, code.len() as u64, "{:?}", r.stop);
    let h = &m.harts[0];
    assert_eq!(h.fp.f[12], 0xffff_ffff_4080_0000); // 4.0, NaN-boxed
    assert_eq!(h.x[12], 4);
    assert_eq!(h.fp.f[13], h.fp.f[12]);
    assert_eq!(h.fp.fflags, 0);
    // FS is Dirty now.
    assert_eq!(h.csr.mstatus >> 13 & 3, 3);
}

/// A word on one of the FP opcodes (loads, stores, the fused
/// multiply-adds, OP-FP) with random fields.
fn fp_word() -> impl Strategy<Value = u32> {
    (
        prop::sample::select(vec![0x07u32, 0x27, 0x43, 0x47, 0x4b, 0x4f, 0x53]),
        any::<u32>(),
    )
        .prop_map(|(opcode, rest)| rest & !0x7f | opcode)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn random_fp_words_never_panic(
        words in prop::collection::vec(fp_word(), 1..12),
        regs in prop::collection::vec(any::<u64>(), 32),
        fregs in prop::collection::vec(any::<u64>(), 32),
        frm in 0u8..8,
        rv64 in any::<bool>(),
        fs_on in any::<bool>(),
    ) {
        let mut m = machine(&words, rv64);
        let h = &mut m.harts[0];
        if fs_on {
            h.csr.mstatus |= FS_INITIAL;
        }
        for (r, &v) in regs.iter().enumerate().skip(1) {
            // Half the registers point into memory, so loads and stores
            // reach it as well as fault.
            let v = if r % 2 == 0 { BASE + (v & 0x3f) } else { v };
            h.x[r] = if rv64 { v } else { v as i32 as i64 as u64 };
        }
        h.fp.f.copy_from_slice(&fregs);
        h.fp.frm = frm;
        let r = m.run(Some(64), &mut ());
        // Whatever happened, the run ended with a reason, not a panic.
        prop_assert!(r.instructions <= 64);
        let stopped = matches!(
            r.stop,
            StopReason::Fault(_) | StopReason::Runaway { .. } | StopReason::Exit { .. }
        );
        prop_assert!(stopped, "{:?}", r.stop);
    }
}
