//! The QEMU oracle: every example program in
//! `programs/bin/` — both XLENs, all optimisation levels, discovered by
//! listing the directory — prints byte-identical output and exits with the
//! same code under `retrace run` as under QEMU, and matches the expected
//! output and exit code documented in `programs/README.md`.
//!
//! One trial per program and check (`oracle_qemu::sort-rv32-O2::qemu`,
//! `…::readme`), plus the README's coverage of `programs/bin/` and the
//! argument-passing cases; libtest's pool runs them in parallel. Without
//! QEMU the QEMU trials are reported ignored with the reason, unless
//! `RETRACE_REQUIRE_TOOLS=1`, where they fail.

mod common;

use common::*;
use retrace_testkit::programs::{example_programs, program_dir, ExampleProgram};
use retrace_testkit::tools::QEMU;
use retrace_testkit::trials::{self, Failed, Trial};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

/// One example program and its `retrace run` with the default input, run
/// once by whichever of its trials comes first.
struct Case {
    prog: ExampleProgram,
    ours: OnceLock<Outcome>,
}

impl Case {
    fn ours(&self) -> &Outcome {
        self.ours.get_or_init(|| run_retrace(&self.prog.path, &[]))
    }
}

/// retrace and QEMU print the same and exit the same.
fn matches_qemu(case: &Case) -> Result<(), Failed> {
    let theirs = run_qemu(&case.prog.path, &[]);
    let ours = case.ours();
    let file = case.prog.file_name();
    if theirs.timed_out || theirs.code.is_none() {
        return Err(format!("{file}: QEMU did not finish: {}", theirs.describe()).into());
    }
    if *ours != theirs {
        return Err(format!(
            "{file}:\n  retrace: {}\n  QEMU:    {}",
            ours.describe(),
            theirs.describe()
        )
        .into());
    }
    Ok(())
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

/// The program's last line and exit code are its README row's.
fn matches_readme_row(case: &Case, rows: &BTreeMap<String, Row>) -> Result<(), Failed> {
    let prog = case.prog.base_name();
    let file = case.prog.file_name();
    let Some(row) = rows.get(prog) else {
        return Err(format!("{file}: no row for `{prog}` in programs/README.md").into());
    };
    let ours = case.ours();
    if ours.last_line() != row.last_line || ours.code != Some(row.exit_code) {
        return Err(format!(
            "{file}: README says {:?} and exit code {}, retrace run gave {}",
            row.last_line,
            row.exit_code,
            ours.describe()
        )
        .into());
    }
    Ok(())
}

/// Every program the README lists has a build in `programs/bin/`.
fn readme_lists_only_built_programs(
    cases: &[Arc<Case>],
    rows: &BTreeMap<String, Row>,
) -> Result<(), Failed> {
    let missing: Vec<String> = rows
        .keys()
        .filter(|prog| !cases.iter().any(|c| c.prog.base_name() == prog.as_str()))
        .map(|prog| {
            format!("programs/README.md lists `{prog}`, but programs/bin has no build of it")
        })
        .collect();
    trials::all_ok(missing)
}

/// Non-default inputs reach the program the same way under both: the same
/// argument list for `retrace run ELF -- ARGS` and QEMU's `arg=` values.
/// The output must also differ from the default run (else the arguments
/// were lost on the way). Without QEMU only the first half is checked
/// (with a printed reason), unless `RETRACE_REQUIRE_TOOLS=1`.
fn arguments_reach_the_program(test: &str, elf: PathBuf, args: Vec<String>) -> Result<(), Failed> {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let default = run_retrace(&elf, &[]);
    let ours = run_retrace(&elf, &args);
    let mut failures = Vec::new();
    if ours.code.is_none() || ours.stdout == default.stdout {
        failures.push(format!(
            "{} {args:?}: output does not depend on the arguments: {}",
            name(&elf),
            ours.describe()
        ));
    }
    if QEMU.available(test) {
        let theirs = run_qemu(&elf, &args);
        if ours != theirs {
            failures.push(format!(
                "{} {args:?}:\n  retrace: {}\n  QEMU:    {}",
                name(&elf),
                ours.describe(),
                theirs.describe()
            ));
        }
    }
    trials::all_ok(failures)
}

fn main() {
    let rows = Arc::new(readme_rows());
    let cases: Vec<Arc<Case>> = example_programs()
        .into_iter()
        .map(|prog| {
            Arc::new(Case {
                prog,
                ours: OnceLock::new(),
            })
        })
        .collect();
    let mut list = Vec::new();
    for case in &cases {
        let c = case.clone();
        list.push(trials::needing(
            format!("oracle_qemu::{}::qemu", case.prog.name),
            QEMU,
            move || matches_qemu(&c),
        ));
    }
    for case in &cases {
        let (c, rows) = (case.clone(), rows.clone());
        list.push(Trial::test(
            format!("oracle_qemu::{}::readme", case.prog.name),
            move || matches_readme_row(&c, &rows),
        ));
    }
    {
        let (cases, rows) = (cases.clone(), rows.clone());
        list.push(Trial::test(
            "oracle_qemu::readme-lists-only-built-programs",
            move || readme_lists_only_built_programs(&cases, &rows),
        ));
    }
    let dir = program_dir();
    let sort = dir.join("sort-rv32-O2.elf");
    let matmul = dir.join("matmul-rv64-O2.elf");
    let sort_path = sort.to_string_lossy().into_owned();
    let cases: Vec<(&str, PathBuf, Vec<String>)> = vec![
        (
            "sort-rv32-O2",
            sort.clone(),
            vec!["5000".into(), "3".into(), "9".into()],
        ),
        // a conventional argv[0]-style first argument, skipped by the program
        (
            "sort-rv32-O2-argv0",
            sort,
            vec![sort_path, "3000".into(), "2".into()],
        ),
        ("matmul-rv64-O2", matmul, vec!["5".into(), "77".into()]),
    ];
    for (tag, elf, args) in cases {
        let name = format!("oracle_qemu::arguments::{tag}");
        let test = name.clone();
        list.push(Trial::test(name, move || {
            arguments_reach_the_program(&test, elf, args)
        }));
    }
    trials::run(list, || {})
}
