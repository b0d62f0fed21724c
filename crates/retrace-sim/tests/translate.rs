//! The translating engine against the interpreter: every bundled program
//! (one hart, and the multi-hart examples on 2 and 8) and random programs
//! run both ways must end with the same console output, stop reason,
//! instruction and branch counts, registers and memory.

use std::io::Write;
use std::sync::{Arc, Mutex};

use proptest::prelude::*;
use retrace_isa::encode;
use retrace_isa::{Op, Xlen};
use retrace_program::Elf;
use retrace_sim::{Console, HostConfig, Machine, MachineConfig, RunResult};
use retrace_testkit::asm::{bytes, inst, word};
use retrace_testkit::elf::{ElfImage, BASE};
use retrace_testkit::programs::{elf_files, program_dir};

/// A console writer whose bytes the test can read afterwards.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Everything a run leaves that the two engines must agree on.
#[derive(Debug, PartialEq)]
struct Outcome {
    output: Vec<u8>,
    stop: String,
    instructions: u64,
    harts: Vec<retrace_sim::HartStats>,
    cache_flushes: u64,
    registers: Vec<([u64; 32], u64)>,
    /// Each hart's standing: runnable, blocked (on what, at which
    /// `ecall`), exited.
    states: Vec<String>,
    memory_digest: u64,
}

fn run(
    elf: &Elf,
    harts: usize,
    cmdline: &str,
    translate: bool,
    max: Option<u64>,
) -> (Outcome, u64) {
    let out = Captured::default();
    let console = Console {
        stdout: Box::new(out.clone()),
        stderr: Box::new(out.clone()),
        stdin: Box::new(std::io::empty()),
        is_tty: [false; 3],
    };
    let host = HostConfig {
        cmdline: cmdline.to_string(),
        ..HostConfig::default()
    };
    let config = MachineConfig {
        harts,
        ..MachineConfig::default()
    };
    let mut m = Machine::new(elf, &config, host, console).unwrap();
    m.set_translation(translate);
    let r: RunResult = m.run(max, &mut ());
    let translated = m.translated_blocks();
    // FNV-1a over the whole RAM: cheap enough at 128 MiB once per run, and
    // any byte that differs changes it.
    let ram = m.memory.slice(m.memory.base(), m.memory.size()).unwrap();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for chunk in ram.chunks(8) {
        let mut w = [0u8; 8];
        w[..chunk.len()].copy_from_slice(chunk);
        h = (h ^ u64::from_le_bytes(w)).wrapping_mul(0x100_0000_01b3);
    }
    let outcome = Outcome {
        output: out.0.lock().unwrap().clone(),
        stop: format!("{:?}", r.stop),
        instructions: r.instructions,
        harts: r.harts.clone(),
        cache_flushes: r.cache_flushes,
        registers: m.harts.iter().map(|h| (h.x, h.pc)).collect(),
        states: (0..harts)
            .map(|h| format!("{:?}", m.hart_state(h)))
            .collect(),
        memory_digest: h,
    };
    (outcome, translated)
}

fn both_ways(elf: &Elf, harts: usize, cmdline: &str, max: Option<u64>) -> u64 {
    let (interpreted, none) = run(elf, harts, cmdline, false, max);
    let (translated, blocks) = run(elf, harts, cmdline, true, max);
    assert_eq!(none, 0, "the interpreter translated blocks");
    assert_eq!(interpreted, translated, "{cmdline} on {harts} hart(s)");
    blocks
}

#[test]
fn every_bundled_program_runs_the_same_translated() {
    let files = elf_files(&program_dir());
    assert!(files.len() >= 20, "bundled programs missing");
    let mut translated = 0;
    for path in files {
        let elf = Elf::parse(&std::fs::read(&path).unwrap()).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        translated += both_ways(&elf, 1, &name, None);
        // A budget that ends the run inside translated code.
        both_ways(&elf, 1, &name, Some(1_234_567));
    }
    assert!(translated > 1000, "only {translated} blocks translated");
}

#[test]
fn every_multi_hart_example_runs_the_same_translated() {
    let files = elf_files(&program_dir().join("mp"));
    assert!(files.len() >= 10, "multi-hart examples missing");
    for path in files {
        let elf = Elf::parse(&std::fs::read(&path).unwrap()).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        for harts in [2, 8] {
            both_ways(&elf, harts, &name, None);
        }
    }
}

/// Translated code makes synchronisation calls itself, waking the harts
/// they complete: stopped at budgets that end the run mid-way — among the
/// harts' turns, with calls completed but not yet retired, harts blocked —
/// every multi-hart example on 2, 4 and 8 harts must stand exactly as the
/// interpreter leaves it: each hart's counts, registers, pc and standing.
#[test]
fn synchronisation_calls_in_translated_code_stop_exactly_mid_run() {
    for path in elf_files(&program_dir().join("mp")) {
        let elf = Elf::parse(&std::fs::read(&path).unwrap()).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        for harts in [2, 4, 8] {
            let (whole, _) = run(&elf, harts, &name, true, None);
            let all = whole.instructions;
            assert!(all > 100_000, "{name}: {all} instructions");
            // Odd budgets, so that they fall inside turns and blocks.
            for max in [all / 3 + 7, all * 5 / 7 + 3, all - 1_001] {
                both_ways(&elf, harts, &name, Some(max));
            }
        }
    }
}

/// Operations the random programs draw from, for `xlen`.
fn ops(xlen: Xlen) -> Vec<Op> {
    use Op::*;
    let mut v = vec![
        Lui, Auipc, Addi, Slti, Sltiu, Xori, Ori, Andi, Slli, Srli, Srai, Add, Sub, Sll, Slt, Sltu,
        Xor, Srl, Sra, Or, And, Mul, Mulh, Mulhsu, Mulhu, Div, Divu, Rem, Remu, Lb, Lbu, Lh, Lhu,
        Lw, Sb, Sh, Sw,
    ];
    if xlen == Xlen::Rv64 {
        v.extend([
            Addiw, Slliw, Srliw, Sraiw, Addw, Subw, Sllw, Srlw, Sraw, Mulw, Divw, Divuw, Remw,
            Remuw, Ld, Lwu, Sd,
        ]);
    }
    v
}

/// Data the programs load and store around: x31 points here.
const DATA: u64 = BASE + 0x10_0000;

/// One random instruction: registers x1..x29 written (x30 counts the
/// loop, x31 is the data pointer), any read; loads and stores through x31
/// with any offset (misaligned ones too), or now and then through any
/// register, which mostly leaves memory and traps.
fn instruction(xlen: Xlen) -> impl Strategy<Value = u32> {
    let ops = ops(xlen);
    (
        0..ops.len(),
        1u8..30,
        0u8..32,
        0u8..32,
        any::<i32>(),
        0u8..16,
    )
        .prop_map(move |(k, rd, rs1, rs2, raw, wild)| {
            let op = ops[k];
            let memory = matches!(
                op,
                Op::Lb
                    | Op::Lbu
                    | Op::Lh
                    | Op::Lhu
                    | Op::Lw
                    | Op::Lwu
                    | Op::Ld
                    | Op::Sb
                    | Op::Sh
                    | Op::Sw
                    | Op::Sd
            );
            let imm = match op {
                Op::Lui | Op::Auipc => raw & !0xfff,
                Op::Slli | Op::Srli | Op::Srai => {
                    raw.rem_euclid(if xlen == Xlen::Rv64 { 64 } else { 32 })
                }
                Op::Slliw | Op::Srliw | Op::Sraiw => raw.rem_euclid(32),
                _ => raw.rem_euclid(4096) - 2048,
            };
            let rs1 = if memory && wild != 0 { 31 } else { rs1 };
            // The fields the operation has: the others must be zero.
            let shapes = [
                (rd, rs1, rs2, imm),
                (rd, rs1, 0, imm),
                (rd, rs1, rs2, 0),
                (rd, 0, 0, imm),
                (0, rs1, rs2, imm),
            ];
            shapes
                .iter()
                .find_map(|&(d, s1, s2, i)| encode(&inst(op, d, s1, s2, i), xlen).ok())
                .unwrap_or_else(|| panic!("no encoding of {op:?}"))
        })
}

/// `body` in a loop run `x30` times, then `ebreak` (no handler: the run
/// stops there).
fn looped(xlen: Xlen, body: &[u32]) -> Elf {
    let mut code = body.to_vec();
    code.push(word(xlen, Op::Addi, 30, 30, 0, -1));
    let back = -4 * (code.len() as i32);
    code.push(word(xlen, Op::Bne, 0, 30, 0, back));
    code.push(0x0010_0073); // ebreak
    let image = match xlen {
        Xlen::Rv64 => ElfImage::riscv64(),
        Xlen::Rv32 => ElfImage::riscv32(),
    };
    Elf::parse(&image.build(&bytes(&code))).unwrap()
}

fn random_both_ways(xlen: Xlen, body: &[u32], trips: u64) {
    let elf = looped(xlen, body);
    let outcome = |translate: bool| {
        let mut m = Machine::new(
            &elf,
            &MachineConfig::default(),
            HostConfig::default(),
            Console::null(),
        )
        .unwrap();
        m.set_translation(translate);
        m.harts[0].x[30] = trips;
        // RV32 keeps registers sign-extended from bit 31.
        m.harts[0].x[31] = if xlen == Xlen::Rv32 {
            DATA as i32 as i64 as u64
        } else {
            DATA
        };
        let r = m.run(Some(1_000_000), &mut ());
        let data = m.memory.slice(DATA - 4096, 8192).unwrap().to_vec();
        (
            format!("{:?}", r.stop),
            r.instructions,
            r.harts,
            m.harts[0].x,
            m.harts[0].pc,
            data,
        )
    };
    assert_eq!(outcome(false), outcome(true));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn random_rv64_code_runs_the_same_translated(
        body in prop::collection::vec(instruction(Xlen::Rv64), 1..40),
        trips in 1u64..200,
    ) {
        random_both_ways(Xlen::Rv64, &body, trips);
    }

    #[test]
    fn random_rv32_code_runs_the_same_translated(
        body in prop::collection::vec(instruction(Xlen::Rv32), 1..40),
        trips in 1u64..200,
    ) {
        random_both_ways(Xlen::Rv32, &body, trips);
    }
}
