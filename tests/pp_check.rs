//! Acceptance test of the partial-program table: every example program in
//! `programs/bin/` (found by listing the directory, both XLENs, every
//! optimisation level, the picolibc runtime included) runs in the
//! functional simulator while a checker follows the table instruction by
//! instruction. Every retired instruction must be the table's prediction
//! and every PP must end in one of its successors. One trial per program
//! (`pp_check::sort-rv32-O2`), run in parallel by libtest's pool.

use retrace_program::{Elf, Program};
use retrace_sim::check::check_table;
use retrace_sim::{HostConfig, StopReason};
use retrace_testkit::programs::{example_programs, root};
use retrace_testkit::trials::{self, Failed, Trial};
use std::path::Path;

/// Checks one program (as `retrace pp --check` does); `Err` describes what
/// went wrong.
fn check(path: &Path) -> Result<String, String> {
    let name = path.file_name().unwrap().to_string_lossy().to_string();
    let elf =
        Elf::parse(&std::fs::read(path).map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
    let mut program = Program::analyse(&elf).map_err(|e| e.to_string())?;
    if !program.warnings.is_empty() {
        return Err(format!("{name}: analysis warnings {:?}", program.warnings));
    }
    let host = HostConfig {
        cmdline: HostConfig::qemu_cmdline(&name, &[]),
        ..HostConfig::default()
    };
    let (result, r) = check_table(&elf, &mut program.table, host, Some(2_000_000_000))
        .map_err(|e| e.to_string())?;
    if !matches!(result.stop, StopReason::Exit { .. }) {
        return Err(format!("{name}: did not exit: {}", result.stop));
    }
    if r.executed_instructions == 0
        || r.covered_instructions != r.executed_instructions
        || r.mismatches != 0
    {
        return Err(format!(
            "{name}: {} of {} covered, {} mismatches: {:?}",
            r.covered_instructions, r.executed_instructions, r.mismatches, r.first_mismatches
        ));
    }
    Ok(format!(
        "{name}: {} instructions, {} PP executions, {} PPs executed, {} added at run time",
        r.executed_instructions,
        r.pp_executions,
        r.executed_partial_programs,
        r.added_partial_programs
    ))
}

/// The CLI's JSON report has the documented fields and passes.
fn pp_check_json_reports_full_coverage() {
    let prog = root().join("programs/bin/nqueens-rv32-O2.elf");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_retrace"))
        .args(["pp", "--check", "--json"])
        .arg(&prog)
        .args(["--", "6", "6"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let v: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    for field in [
        "partial_programs",
        "executed_partial_programs",
        "executed_instructions",
        "covered_instructions",
        "mismatches",
    ] {
        assert!(v.get(field).is_some(), "no {field} in {v}");
    }
    assert_eq!(v["executed_instructions"], v["covered_instructions"]);
    assert_eq!(v["mismatches"], 0);
    assert!(v["executed_instructions"].as_u64().unwrap() > 1000);
}

fn main() {
    let progs = example_programs();
    let mut list: Vec<Trial> = progs
        .into_iter()
        .map(|p| {
            Trial::test(format!("pp_check::{}", p.name), move || {
                let line = check(&p.path).map_err(Failed::from)?;
                eprintln!("{line}");
                Ok(())
            })
        })
        .collect();
    list.push(Trial::test("pp_check::json-reports-full-coverage", || {
        pp_check_json_reports_full_coverage();
        Ok(())
    }));
    trials::run(list, || {})
}
