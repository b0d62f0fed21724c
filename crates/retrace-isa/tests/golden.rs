//! Golden decodings for the cases that are easy to get wrong: compressed
//! immediates (scattered bits, scaled offsets, sign extension), the `*W`
//! operations, CSR forms and AMO ordering bits, in
//! `tests/golden/decodings.txt`. Each row's first column is the input
//! (XLEN, pc, encoding); the test writes the decoded fields and the printed
//! text after it and compares the whole file, which `RETRACE_BLESS=1`
//! rewrites instead. The expected text is what
//! `riscv64-unknown-elf-objdump -d` printed for the same word (assembled
//! from `tests/data/every_instruction.s`), and each row is also encoded
//! back. Every row is checked; failures are reported together.

use retrace_isa::{decode, disasm, encode, EncodeError, Inst, Op, Xlen};
use retrace_testkit::golden;
use std::path::Path;

use Xlen::{Rv32, Rv64};

/// The golden file's rows, rendered from what the decoder does with each
/// row's input; also returns the rows whose encoding does not come back.
fn render(text: &str) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut failures = Vec::new();
    for line in text.lines() {
        if line.trim().is_empty() || line.starts_with('#') {
            out += line;
            out.push('\n');
            continue;
        }
        let cols: Vec<&str> = line.split(" | ").collect();
        let input = cols[0];
        let note = cols.get(3);
        let f: Vec<&str> = input.split_whitespace().collect();
        let parse = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16);
        let (xlen, pc, bits) = match (
            f.as_slice(),
            f.get(1).map(|s| parse(s)),
            f.get(2).map(|s| parse(s)),
        ) {
            (["rv32", ..], Some(Ok(pc)), Some(Ok(bits))) => (Rv32, pc, bits as u32),
            (["rv64", ..], Some(Ok(pc)), Some(Ok(bits))) => (Rv64, pc, bits as u32),
            _ => panic!("malformed input column {input:?}: want `rv32|rv64 PC ENCODING`"),
        };
        let (shown, fields) = match decode(bits, xlen) {
            Ok(inst) => {
                if encode(&inst, xlen) != Ok(bits) {
                    failures.push(format!(
                        "{bits:#x} {xlen:?}: encoded {:x?}",
                        encode(&inst, xlen)
                    ));
                }
                (
                    disasm(&inst, pc, xlen).to_string().replace('\t', "\\t"),
                    format!(
                        "{:?} rd={} rs1={} rs2={} imm={}",
                        inst.op, inst.rd, inst.rs1, inst.rs2, inst.imm
                    ),
                )
            }
            Err(e) => (format!("error: {e}"), "-".to_string()),
        };
        out += &format!("{input} | {shown} | {fields}");
        if let Some(note) = note {
            out += &format!(" | {note}");
        }
        out.push('\n');
    }
    (out, failures)
}

#[test]
fn golden_decodings_print_and_encode() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/decodings.txt");
    let text = std::fs::read_to_string(&path).expect("tests/golden/decodings.txt");
    let (rendered, failures) = render(&text);
    let golden = golden::check(&path, &rendered);
    assert!(
        golden.is_ok() && failures.is_empty(),
        "{}\n{}",
        golden.err().unwrap_or_default(),
        failures.join("\n")
    );
}

fn inst(op: Op, rd: u8, rs1: u8, rs2: u8, imm: i32, len: u8) -> Inst {
    Inst {
        len,
        ..retrace_testkit::asm::inst(op, rd, rs1, rs2, imm)
    }
}

#[test]
fn encode_checks_field_ranges() {
    let cases: &[(Inst, Xlen, Result<u32, EncodeError>)] = &[
        (inst(Op::Addi, 10, 10, 0, 2047, 4), Rv32, Ok(0x7ff5_0513)),
        (
            inst(Op::Addi, 10, 10, 0, 2048, 4),
            Rv32,
            Err(EncodeError::Immediate {
                op: Op::Addi,
                imm: 2048,
            }),
        ),
        (
            inst(Op::Beq, 0, 10, 11, 3, 4),
            Rv32,
            Err(EncodeError::Immediate {
                op: Op::Beq,
                imm: 3,
            }),
        ),
        (
            inst(Op::Slli, 10, 10, 0, 32, 4),
            Rv32,
            Err(EncodeError::Immediate {
                op: Op::Slli,
                imm: 32,
            }),
        ),
        (inst(Op::Slli, 10, 10, 0, 32, 4), Rv64, Ok(0x0205_1513)),
        (
            inst(Op::Ld, 10, 2, 0, 0, 4),
            Rv32,
            Err(EncodeError::WrongXlen {
                op: Op::Ld,
                xlen: Rv32,
            }),
        ),
        (
            inst(Op::Add, 32, 1, 2, 0, 4),
            Rv64,
            Err(EncodeError::Register {
                op: Op::Add,
                reg: 32,
            }),
        ),
        (
            inst(Op::Add, 1, 1, 2, 5, 4),
            Rv64,
            Err(EncodeError::UnusedField { op: Op::Add }),
        ),
        (
            inst(Op::Lui, 10, 0, 0, 0x1001, 4),
            Rv64,
            Err(EncodeError::Immediate {
                op: Op::Lui,
                imm: 0x1001,
            }),
        ),
        // Compressed: c.lw only reaches x8..x15 and word-aligned offsets below 128.
        (inst(Op::Lw, 8, 9, 0, 124, 2), Rv32, Ok(0x5ce0)),
        (
            inst(Op::Lw, 8, 9, 0, 128, 2),
            Rv32,
            Err(EncodeError::NotCompressible { op: Op::Lw }),
        ),
        (inst(Op::Lw, 1, 2, 0, 128, 2), Rv32, Ok(0x408a)), // falls back to c.lwsp
        (
            inst(Op::Jal, 1, 0, 0, 8, 2),
            Rv64,
            Err(EncodeError::NotCompressible { op: Op::Jal }),
        ),
        (
            inst(Op::Addi, 2, 2, 0, 0, 2),
            Rv32,
            Ok(0x0101), // c.addi sp, 0 (a HINT); c.addi16sp cannot hold 0
        ),
        (
            inst(Op::Ecall, 0, 0, 0, 0, 2),
            Rv32,
            Err(EncodeError::NotCompressible { op: Op::Ecall }),
        ),
        (
            inst(Op::Ecall, 0, 0, 0, 0, 3),
            Rv32,
            Err(EncodeError::Length { len: 3 }),
        ),
    ];
    let mut failures = Vec::new();
    for (i, xlen, want) in cases {
        let got = encode(i, *xlen);
        if got != *want {
            failures.push(format!("{i:?} {xlen:?}: got {got:x?}, want {want:x?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn raw_picks_between_equivalent_compressed_forms() {
    // c.li zero, 1 and c.nop 1 both expand to addi x0, x0, 1.
    for raw in [0x4005u32, 0x0005] {
        let i = decode(raw, Rv32).unwrap();
        assert_eq!((i.op, i.rd, i.rs1, i.imm), (Op::Addi, 0, 0, 1));
        assert_eq!(encode(&i, Rv32), Ok(raw));
    }
    // Without a hint from raw, the first form that fits is used.
    assert_eq!(encode(&inst(Op::Addi, 0, 0, 0, 1, 2), Rv32), Ok(0x0005));
}
