//! Bad input to `retrace run`: each case must give one line on stderr and
//! the documented exit status (see `src/status.rs`). The test ELFs are
//! written byte by byte here, so no cross compiler is needed.

use std::path::PathBuf;
use std::process::Command;

use retrace_testkit::asm::{bytes as words, semihost};
use retrace_testkit::elf::{ElfImage, BASE, EM_RISCV, EM_X86_64, PF_R, PF_X};

/// A minimal ELF64 executable: one R+X PT_LOAD segment holding `code` at
/// `addr` (entry = `addr`).
fn elf64(machine: u16, addr: u64, code: &[u8]) -> Vec<u8> {
    ElfImage::riscv64()
        .machine(machine)
        .at(addr)
        .flags(PF_R | PF_X)
        .build(code)
}

fn scratch() -> PathBuf {
    let d = std::env::temp_dir().join(format!("retrace-cli-run-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Run `retrace run` with `args` on a file holding `bytes`; returns
/// (status, stdout, stderr).
fn run(name: &str, bytes: Option<&[u8]>, args: &[&str]) -> (i32, String, String) {
    let path = scratch().join(name);
    if let Some(b) = bytes {
        std::fs::write(&path, b).unwrap();
    }
    let out = Command::new(env!("CARGO_BIN_EXE_retrace"))
        .arg("run")
        .args(args)
        .arg(&path)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// One line on stderr, starting `retrace: error:`, mentioning every `needle`.
fn assert_one_line(stderr: &str, needles: &[&str]) {
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "expected one line, got {stderr:?}");
    assert!(lines[0].starts_with("retrace: error: "), "{stderr:?}");
    for n in needles {
        assert!(lines[0].contains(n), "{n:?} missing from {stderr:?}");
    }
}

#[test]
fn missing_file_is_bad_input() {
    let (code, _, err) = run("does-not-exist.elf", None, &[]);
    assert_eq!(code, 125);
    assert_one_line(&err, &["does-not-exist.elf", "check the path"]);
}

#[test]
fn not_an_elf_is_bad_input() {
    let (code, _, err) = run("text.elf", Some(b"#!/bin/sh\necho hi\n"), &[]);
    assert_eq!(code, 125);
    assert_one_line(&err, &["text.elf", "not an ELF"]);
}

#[test]
fn foreign_machine_is_named() {
    let (code, _, err) = run(
        "x86.elf",
        Some(&elf64(EM_X86_64, 0x40_0000, &[0x90; 4])),
        &[],
    );
    assert_eq!(code, 125);
    assert_one_line(&err, &["x86.elf", "x86-64", "not RISC-V"]);
}

#[test]
fn truncated_elf_is_bad_input() {
    let full = elf64(EM_RISCV, BASE, &words(&[0x0000_0013; 8]));
    let (code, _, err) = run("cut.elf", Some(&full[..100]), &[]);
    assert_eq!(code, 125);
    assert_one_line(&err, &["cut.elf", "truncated"]);
}

#[test]
fn segment_outside_memory_is_bad_input() {
    let (code, _, err) = run(
        "low.elf",
        Some(&elf64(EM_RISCV, 0x1_0000, &words(&[0x13]))),
        &[],
    );
    assert_eq!(code, 125);
    assert_one_line(&err, &["low.elf", "does not fit in memory", "0x10000"]);
}

#[test]
fn illegal_instruction_names_hart_pc_and_bits() {
    // nop; then an all-ones word, which is no instruction.
    let code = words(&[0x0000_0013, 0xffff_ffff]);
    let (code, _, err) = run("ill.elf", Some(&elf64(EM_RISCV, BASE, &code)), &[]);
    assert_eq!(code, 126);
    assert_one_line(
        &err,
        &["illegal instruction 0xffffffff", "pc 0x80000004", "hart 0"],
    );
}

#[test]
fn access_outside_memory_names_address_and_pc() {
    // lw a0, 0(zero): address 0 is not RAM.
    let code = words(&[0x0000_2503]);
    let (code, _, err) = run("load0.elf", Some(&elf64(EM_RISCV, BASE, &code)), &[]);
    assert_eq!(code, 126);
    assert_one_line(&err, &["load access fault", "address 0x0", "pc 0x80000000"]);
}

#[test]
fn runaway_stops_at_the_limit() {
    let code = words(&[0x0000_006f]); // j . (forever)
    let (code, out, err) = run(
        "loop.elf",
        Some(&elf64(EM_RISCV, BASE, &code)),
        &["--max-insns", "12345", "--json"],
    );
    assert_eq!(code, 124);
    assert_one_line(&err, &["12345 instructions", "--max-insns"]);
    let json: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert_eq!(json["instructions"], 12345);
    assert_eq!(json["stop"], "runaway");
}

/// A program that opens `path` (stored after the code) with SYS_OPEN.
fn open_program(path: &str) -> Vec<u8> {
    // auipc a1, 0; addi a1, a1, 40 → a block at code+40: {name ptr, mode, len}
    let mut ws = vec![0x0000_0597, 0x0285_8593];
    ws.extend(semihost(0x01));
    ws.extend([0x0000_006f, 0x0000_0013, 0x0000_0013, 0x0000_0013]); // j . ; pad to 40
    let mut bytes = words(&ws);
    assert_eq!(bytes.len(), 40);
    let name_at = BASE + 40 + 24;
    bytes.extend_from_slice(&name_at.to_le_bytes());
    bytes.extend_from_slice(&0u64.to_le_bytes());
    bytes.extend_from_slice(&(path.len() as u64).to_le_bytes());
    bytes.extend_from_slice(path.as_bytes());
    bytes.push(0);
    bytes
}

#[test]
fn semihosting_outside_allow_dir_is_denied() {
    let allowed = scratch().join("allowed");
    std::fs::create_dir_all(&allowed).unwrap();
    let elf = elf64(EM_RISCV, BASE, &open_program("/etc/passwd"));
    let (code, _, err) = run(
        "open.elf",
        Some(&elf),
        &["--allow-dir", allowed.to_str().unwrap()],
    );
    assert_eq!(code, 123);
    assert_one_line(
        &err,
        &[
            "/etc/passwd",
            "outside the allowed directories",
            "--allow-dir",
        ],
    );
    let (code, _, err) = run("open2.elf", Some(&elf), &[]);
    assert_eq!(code, 123);
    assert_one_line(&err, &["/etc/passwd", "no directory is allowed"]);
}

#[test]
fn a_host_command_is_refused_without_suggesting_allow_dir() {
    // a1 = a zeroed argument block; SYS_SYSTEM (0x12).
    let mut ws = vec![0x0000_1597u32]; // auipc a1, 0x1
    ws.extend(semihost(0x12));
    let elf = elf64(EM_RISCV, BASE, &words(&ws));
    for extra in [&[][..], &["--allow-dir", "."][..]] {
        let (code, _, err) = run("system.elf", Some(&elf), extra);
        assert_eq!(code, 123, "{err}");
        assert_one_line(&err, &["SYS_SYSTEM", "never allows"]);
        assert!(!err.contains("--allow-dir"), "{err}");
    }
}

#[test]
fn exit_code_passes_through() {
    // li a1, 0x20026 (ADP_Stopped_ApplicationExit) is too wide for addi:
    // lui a1, 0x20; addi a1, a1, 0x26; then RV64 SYS_EXIT wants a block, so
    // use SYS_EXIT_EXTENDED with a block on the stack: sp = 0x80001000.
    let ws = [
        0x0000_1117u32, // auipc sp, 0x1 (lui would sign-extend on RV64)
        0x0002_05b7,    // lui a1, 0x20
        0x0265_859b,    // addiw a1, a1, 0x26
        0x00b1_3023,    // sd a1, 0(sp)
        0x02a0_0593,    // li a1, 42
        0x00b1_3423,    // sd a1, 8(sp)
        0x0001_0593,    // mv a1, sp
    ];
    let mut all = ws.to_vec();
    all.extend(semihost(0x20));
    let (code, _, err) = run("exit.elf", Some(&elf64(EM_RISCV, BASE, &words(&all))), &[]);
    assert_eq!((code, err.as_str()), (42, ""));
}
