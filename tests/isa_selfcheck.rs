//! The ISA self-check tests (`tests/isa/*.S`, built into `tests/isa/bin/`)
//! pass under `retrace run` and under QEMU: each prints exactly "PASS" and
//! exits 0; a failing case prints "FAIL <n>" and exits with n. Every ELF in
//! the directory is run, as one trial per file and runner
//! (`isa_selfcheck::rv_m-rv32::retrace`, `…::qemu`).

mod common;

use common::*;
use retrace_testkit::programs::programs_in;
use retrace_testkit::tools::QEMU;
use retrace_testkit::trials::{self, Failed, Trial};

const PASS: &[u8] = b"PASS\n";

fn check(runner: &str, outcome: Outcome) -> Result<(), Failed> {
    if outcome.code != Some(0) || outcome.stdout != PASS {
        return Err(format!(
            "fails under {runner} (the exit code is the failing case's number): {}",
            outcome.describe()
        )
        .into());
    }
    Ok(())
}

fn main() {
    let progs = programs_in(&root().join("tests/isa/bin"));
    let mut list = Vec::new();
    for p in &progs {
        let path = p.path.clone();
        list.push(Trial::test(
            format!("isa_selfcheck::{}::retrace", p.name),
            move || check("retrace run", run_retrace(&path, &[])),
        ));
    }
    for p in &progs {
        let path = p.path.clone();
        list.push(trials::needing(
            format!("isa_selfcheck::{}::qemu", p.name),
            QEMU,
            move || check("QEMU", run_qemu(&path, &[])),
        ));
    }
    trials::run(list, || {})
}
