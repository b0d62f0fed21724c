//! The QEMU oracle (issue 2's acceptance): every example program in
//! `programs/bin/` — both XLENs, all optimisation levels, discovered by
//! listing the directory — prints byte-identical output and exits with the
//! same code under `retrace run` as under QEMU, and matches the expected
//! output and exit code documented in `programs/README.md`.
//!
//! Every failing program is reported, not just the first.

mod common;

use common::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

fn program_dir() -> PathBuf {
    root().join("programs/bin")
}

/// `sort-rv32-O2.elf` -> `sort`.
fn program_name(elf: &Path) -> String {
    let n = name(elf);
    n.split("-rv").next().unwrap().to_string()
}

/// `retrace run` of every program with its default input, run once per test
/// binary and shared by the tests below.
fn retrace_outcomes() -> &'static Vec<(PathBuf, Outcome)> {
    static CELL: OnceLock<Vec<(PathBuf, Outcome)>> = OnceLock::new();
    CELL.get_or_init(|| {
        let elfs = elf_files(&program_dir());
        let outcomes = parallel_map(&elfs, THREADS, |elf| run_retrace(elf, &[]));
        elfs.into_iter().zip(outcomes).collect()
    })
}

#[test]
fn every_program_matches_qemu() {
    if !qemu_available("every_program_matches_qemu") {
        return;
    }
    let runs = retrace_outcomes();
    let elfs: Vec<&PathBuf> = runs.iter().map(|(p, _)| p).collect();
    let qemu = parallel_map(&elfs, THREADS, |elf| run_qemu(elf, &[]));
    let mut failures = Vec::new();
    for ((elf, ours), theirs) in runs.iter().zip(&qemu) {
        if theirs.timed_out || theirs.code.is_none() {
            failures.push(format!(
                "{}: QEMU did not finish: {}",
                name(elf),
                theirs.describe()
            ));
        } else if ours != theirs {
            failures.push(format!(
                "{}:\n  retrace: {}\n  QEMU:    {}",
                name(elf),
                ours.describe(),
                theirs.describe()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} programs differ between retrace and QEMU:\n{}",
        failures.len(),
        runs.len(),
        failures.join("\n")
    );
}

/// A row of the README's program table.
struct Row {
    last_line: String,
    exit_code: i32,
}

/// The program table of `programs/README.md`; columns: name, exercises, default input, expected
/// output (last line), exit code, instructions (rv32, rv64).
fn readme_rows() -> BTreeMap<String, Row> {
    let path = root().join("programs/README.md");
    let text = std::fs::read_to_string(&path).expect("programs/README.md");
    let mut rows = BTreeMap::new();
    // The table is the one whose header starts "| program | exercises".
    let table = text
        .lines()
        .skip_while(|l| !l.starts_with("| program | exercises"))
        .skip(2)
        .take_while(|l| l.starts_with('|'));
    for line in table {
        let cols: Vec<&str> = line.split('|').map(str::trim).collect();
        assert!(
            cols.len() == 9,
            "malformed table row in programs/README.md: {line}"
        );
        let unquote = |s: &str| s.trim_matches('`').to_string();
        let exit_code = cols[5]
            .parse()
            .unwrap_or_else(|_| panic!("exit code column is not a number: {line}"));
        rows.insert(
            unquote(cols[1]),
            Row {
                last_line: unquote(cols[4]),
                exit_code,
            },
        );
    }
    assert!(!rows.is_empty(), "no program table in programs/README.md");
    rows
}

#[test]
fn every_program_matches_its_readme_row() {
    let rows = readme_rows();
    let runs = retrace_outcomes();
    let mut failures = Vec::new();
    for (elf, ours) in runs {
        let prog = program_name(elf);
        let Some(row) = rows.get(&prog) else {
            failures.push(format!(
                "{}: no row for `{prog}` in programs/README.md",
                name(elf)
            ));
            continue;
        };
        if ours.last_line() != row.last_line || ours.code != Some(row.exit_code) {
            failures.push(format!(
                "{}: README says {:?} and exit code {}, retrace run gave {}",
                name(elf),
                row.last_line,
                row.exit_code,
                ours.describe()
            ));
        }
    }
    for prog in rows.keys() {
        if !runs.iter().any(|(elf, _)| &program_name(elf) == prog) {
            failures.push(format!(
                "programs/README.md lists `{prog}`, but programs/bin has no build of it"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Non-default inputs reach the program the same way under both: the same
/// argument list for `retrace run ELF -- ARGS` and QEMU's `arg=` values.
/// The output must also differ from the default run (else the arguments
/// were lost on the way).
#[test]
fn arguments_reach_the_program() {
    let dir = program_dir();
    let sort = dir.join("sort-rv32-O2.elf");
    let matmul = dir.join("matmul-rv64-O2.elf");
    let sort_path = sort.to_string_lossy().into_owned();
    let cases: Vec<(PathBuf, Vec<&str>)> = vec![
        (sort.clone(), vec!["5000", "3", "9"]),
        // a conventional argv[0]-style first argument, skipped by the program
        (sort.clone(), vec![sort_path.as_str(), "3000", "2"]),
        (matmul.clone(), vec!["5", "77"]),
    ];
    let check_qemu = qemu_available("arguments_reach_the_program");
    let mut failures = Vec::new();
    for (elf, args) in &cases {
        let default = run_retrace(elf, &[]);
        let ours = run_retrace(elf, args);
        if ours.code.is_none() || ours.stdout == default.stdout {
            failures.push(format!(
                "{} {args:?}: output does not depend on the arguments: {}",
                name(elf),
                ours.describe()
            ));
        }
        if check_qemu {
            let theirs = run_qemu(elf, args);
            if ours != theirs {
                failures.push(format!(
                    "{} {args:?}:\n  retrace: {}\n  QEMU:    {}",
                    name(elf),
                    ours.describe(),
                    theirs.describe()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
