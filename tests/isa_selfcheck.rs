//! The ISA self-check tests (`tests/isa/*.S`, built into `tests/isa/bin/`)
//! pass under `retrace run` and under QEMU: each prints exactly "PASS" and
//! exits 0; a failing case prints "FAIL <n>" and exits with n. Every ELF in
//! the directory is run, and every failure is reported.

mod common;

use common::*;

const PASS: &[u8] = b"PASS\n";

fn check_all(runner: &str, run: impl Fn(&std::path::Path) -> Outcome + Sync) {
    let elfs = elf_files(&root().join("tests/isa/bin"));
    let outcomes = parallel_map(&elfs, THREADS, |elf| run(elf));
    let failures: Vec<String> = elfs
        .iter()
        .zip(&outcomes)
        .filter(|(_, o)| o.code != Some(0) || o.stdout != PASS)
        .map(|(elf, o)| format!("{}: {}", name(elf), o.describe()))
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} ISA tests fail under {runner} (the exit code is the failing case's number):\n{}",
        failures.len(),
        elfs.len(),
        failures.join("\n")
    );
}

#[test]
fn isa_tests_pass_under_retrace() {
    check_all("retrace run", |elf| run_retrace(elf, &[]));
}

#[test]
fn isa_tests_pass_under_qemu() {
    if !qemu_available("isa_tests_pass_under_qemu") {
        return;
    }
    check_all("QEMU", |elf| run_qemu(elf, &[]));
}
