//! `retrace compare` compares runs that reach their end, and says how the
//! run ended; a run that stops early (a fault) is one error line with the
//! fault's status, not "error 0 cycles". The test ELFs are written byte by
//! byte, so no cross compiler is needed.

use retrace_testkit::asm::{bytes, semihost};
use retrace_testkit::elf::ElfImage;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn write_elf(name: &str, words: &[u32]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("retrace-cli-compare-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, ElfImage::riscv64().build(&bytes(words))).unwrap();
    path
}

fn compare(elf: &Path, more: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_retrace"))
        .args(["compare", elf.to_str().unwrap(), "--core", "rocket"])
        .args(more)
        .output()
        .unwrap()
}

/// Exit with code 42 through SYS_EXIT_EXTENDED (as in `cli_run.rs`).
fn exit_42() -> Vec<u32> {
    let mut ws = vec![
        0x0000_1117u32, // auipc sp, 0x1
        0x0002_05b7,    // lui a1, 0x20
        0x0265_859b,    // addiw a1, a1, 0x26
        0x00b1_3023,    // sd a1, 0(sp)
        0x02a0_0593,    // li a1, 42
        0x00b1_3423,    // sd a1, 8(sp)
        0x0001_0593,    // mv a1, sp
    ];
    ws.extend(semihost(0x20));
    ws
}

#[test]
fn a_program_that_faults_early_is_not_a_comparison() {
    // Three additions, then an FP instruction (fadd.s f0, f0, f0) with
    // mstatus.FS still Off, as at reset: the program faults there.
    let mut ws = vec![0x0015_0513u32; 3]; // addi a0, a0, 1
    ws.push(0x0000_0053);
    ws.extend(exit_42());
    let elf = write_elf("fp.elf", &ws);
    for format in ["text", "json"] {
        let out = compare(&elf, &["--format", format]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(126), "{format}: {err}");
        assert!(
            out.stdout.is_empty(),
            "no report: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 1, "{err}");
        assert!(lines[0].starts_with("retrace: error: "), "{err}");
        assert!(lines[0].contains("did not run to its end"), "{err}");
        assert!(lines[0].contains("illegal instruction"), "{err}");
        assert!(lines[0].contains("after 3 instructions"), "{err}");
    }
}

#[test]
fn a_comparison_says_how_the_run_ended() {
    let elf = write_elf("exit42.elf", &exit_42());
    let out = compare(&elf, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines()
            .next()
            .unwrap()
            .ends_with("exited with code 42"),
        "{text}"
    );
    let out = compare(&elf, &["--format", "json"]);
    assert!(out.status.success());
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["stop"], "exit");
    assert_eq!(j["exit_code"], 42);
}
