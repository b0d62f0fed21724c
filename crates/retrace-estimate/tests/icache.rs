//! The I-cache replay against the cycle-level engine over random cache
//! geometries, on generated programs whose partial programs run long
//! stretches of straight-line code — more lines than the replay's 64-bit
//! miss mask holds. Such a path once had every line past the 64th charged
//! a miss whenever one of them missed (tens of cycles of error on AES's
//! unrolled rounds); the example programs' paths are all shorter, so the
//! sweep over them could not see it.

use retrace_estimate::{estimate_trace, Fidelity};
use retrace_isa::{Op, Xlen};
use retrace_program::{Addr, Elf, Program};
use retrace_sim::cycle::run_cycle_level;
use retrace_sim::record::record_run;
use retrace_sim::{Console, HostConfig};
use retrace_testkit::asm::{self, A2, S0, T0, T1};
use retrace_testkit::elf::ElfImage;
use retrace_testkit::Rng;
use retrace_timing::{preset, CacheModel, CoreModel};

/// A loop around `body` straight-line instructions, then a call-free
/// second stretch of `tail` instructions reached every `every`-th turn
/// (so lines are evicted and refetched in changing patterns); runs until
/// the instruction budget ends it.
fn program(xlen: Xlen, body: usize, tail: usize, every: i32) -> Vec<u8> {
    let i = |op, rd, rs1, rs2, imm| asm::word(xlen, op, rd, rs1, rs2, imm);
    let mut w = vec![i(Op::Addi, A2, 0, 0, every)];
    let top = w.len();
    w.extend((0..body).map(|k| i(Op::Addi, T0 + (k % 2) as u8, T0, 0, 1)));
    // s0 += 1; if s0 % every != 0 skip the tail
    w.push(i(Op::Addi, S0, S0, 0, 1));
    w.push(i(Op::Rem, T1, S0, A2, 0));
    let skip = (tail + 1) as i32 * 4; // to the jal
    w.push(i(Op::Bne, 0, T1, 0, skip));
    w.extend((0..tail).map(|_| i(Op::Xori, T0, T0, 0, 5)));
    let back = -((w.len() - top) as i32) * 4;
    w.push(i(Op::Jal, 0, 0, 0, back));
    asm::bytes(&w)
}

/// A random I-cache: 64 B to 8 KiB, 1 to 8 ways, lines of 4 to 64 B.
fn random_icache(rng: &mut Rng) -> CacheModel {
    loop {
        let size = 64u32 << rng.below(8);
        let ways = 1u32 << rng.below(4);
        let line = 4u32 << rng.below(5);
        if size >= ways * line {
            return CacheModel {
                size,
                ways,
                line,
                miss_penalty: 1 + rng.below(30) as u32,
            };
        }
    }
}

#[test]
fn long_paths_replay_exactly_on_random_icaches() {
    let mut rng = Rng::new(0x001c_ac4e);
    let budget = Some(60_000);
    let mut checked = 0;
    for _ in 0..24 {
        // The test kit writes ELF64 files: RV64 code (the I-cache replay
        // does not depend on XLEN).
        let xlen = Xlen::Rv64;
        let body = 40 + rng.below(400) as usize;
        let tail = rng.below(200) as usize;
        let every = 1 + rng.below(5) as i32;
        let elf =
            Elf::parse(&ElfImage::riscv64().build(&program(xlen, body, tail, every))).unwrap();
        let table = Program::analyse(&elf).unwrap().table;
        let mut trace = Vec::new();
        let header = retrace_trace::Header::new(0, 32, 1);
        record_run(
            &elf,
            HostConfig::default(),
            Console::null(),
            budget,
            &mut trace,
            header,
            &[],
        )
        .unwrap();
        for base in ["rocket", "inorder5"] {
            let icache = random_icache(&mut rng);
            let core = CoreModel {
                icache: Some(icache),
                ..preset(base).unwrap().without_dcache()
            };
            let (run, obs) = run_cycle_level(
                &elf,
                HostConfig::default(),
                Console::null(),
                budget,
                &core,
                &[],
            )
            .unwrap();
            let est = estimate_trace(
                &table,
                Addr(elf.entry),
                &trace[..],
                std::slice::from_ref(&core),
                Fidelity::Control,
                None,
            )
            .unwrap()[0]
                .0;
            let what =
                format!("body {body} tail {tail} every {every} on {base} with I-cache {icache:?}");
            assert!(
                matches!(run.stop, retrace_sim::StopReason::Runaway { .. }),
                "{what}: {}",
                run.stop
            );
            assert_eq!(est.instructions, run.instructions, "{what}");
            assert_eq!(
                est.icache_misses,
                obs.core().stats().icache_misses,
                "{what}"
            );
            assert_eq!(est.cycles, obs.core().cycles(), "{what}");
            checked += 1;
        }
    }
    assert_eq!(checked, 48);
}
