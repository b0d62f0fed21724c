//! `retrace lbr` on a large third-party C code base: the SQLite
//! amalgamation (about 270,000 lines, from the `libsqlite3-sys` crate's
//! source, compiled here, never copied into the repository) driven by
//! `programs/native/sqlbench.c`.
//!
//! A writer built with `retrace lbr cc -- clang-14`, recorded `--exact` on
//! a training input and converted to branch stacks, gives `llvm-profgen-14`
//! a profile without a warning; `clang-14 -fprofile-sample-use` reads it
//! without a word; the profile names the functions where an independent
//! count (cachegrind, on another input) finds the time; and every build —
//! plain, retrace's profile, clang's own instrumented PGO, the writer —
//! prints the same results. Whether the profile pays off is measured, not
//! asserted: `scripts/pgo-compare.sh`, docs/LBR.md.
//!
//! SQLite takes about 30 s of CPU per -O2 build, so each variant is built
//! once and the clang chain runs on a second thread beside the writer's.

use retrace_testkit::tools::{self, Tools};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// What the whole chain needs (`llvm-profdata-14`, which has no
/// `--version`, comes with `llvm-profgen-14` in llvm-14).
const TOOLS: Tools = Tools {
    bins: &["clang-14", "llvm-profgen-14", "objdump", "valgrind"],
    install: "Debian: apt-get install clang-14 llvm-14 libclang-rt-14-dev binutils valgrind",
};

const TEST: &str = "lbr_sqlite";

/// Every build's options. One thread (the writer records one) and no
/// extension loading (no libdl) keep the program self-contained; DWARF 4
/// because Debian 12's valgrind cannot read clang-14's default DWARF 5.
const FLAGS: &[&str] = &[
    "-O2",
    "-g",
    "-gdwarf-4",
    "-DSQLITE_THREADSAFE=0",
    "-DSQLITE_OMIT_LOAD_EXTENSION",
];

/// sqlbench SIZE SEED: the profile is trained on one input and the
/// builds are checked on another.
const TRAIN: &[&str] = &["300", "3"];
const EVAL: &[&str] = &["500", "17"];

fn run(cmd: &mut Command) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn retrace(args: &[&str]) -> Output {
    run(Command::new(env!("CARGO_BIN_EXE_retrace")).args(args))
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The sources and options of one build: `FLAGS`, `extra`, the driver and
/// the amalgamation, into `out`.
fn compile_args(sqlite: &Path, extra: &[&str], out: &Path) -> Vec<String> {
    let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("programs/native/sqlbench.c");
    let mut args: Vec<String> = FLAGS.iter().chain(extra).map(|a| a.to_string()).collect();
    args.push(format!("-I{}", sqlite.display()));
    args.push(driver.display().to_string());
    args.push(sqlite.join("sqlite3.c").display().to_string());
    args.extend(["-o".to_string(), out.display().to_string()]);
    args
}

/// `clang-14` with [`compile_args`]; returns clang's diagnostics.
fn clang(sqlite: &Path, extra: &[&str], out: &Path) -> String {
    let o = run(Command::new("clang-14").args(compile_args(sqlite, extra, out)));
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// stdout of `program ARGS`.
fn output_of(program: &Path, args: &[&str]) -> String {
    String::from_utf8(run(Command::new(program).args(args)).stdout).unwrap()
}

/// clang's instrumented PGO (`-fprofile-instr-generate`, a training run,
/// `llvm-profdata merge`, `-fprofile-instr-use`), the reference retrace's
/// profile is measured against; returns the optimised build.
fn clang_instrumented_pgo(dir: &Path, sqlite: &Path) -> PathBuf {
    let instr = dir.join("sqlbench.instr");
    clang(sqlite, &["-fprofile-instr-generate"], &instr);
    let raw = dir.join("train.profraw");
    run(Command::new(&instr)
        .args(TRAIN)
        .env("LLVM_PROFILE_FILE", &raw));
    let data = dir.join("train.profdata");
    run(Command::new("llvm-profdata-14").args(["merge", "-o", s(&data), s(&raw)]));
    let pgo = dir.join("sqlbench.instr-pgo");
    let said = clang(
        sqlite,
        &[&format!("-fprofile-instr-use={}", data.display())],
        &pgo,
    );
    assert!(said.trim().is_empty(), "clang on its own profile: {said}");
    pgo
}

/// Functions of a text sample profile, top level and inlined, with their
/// sample totals (`name:total:head` at the start of a line, `offset:
/// name:total` inside).
fn profile_functions(profile: &str) -> Vec<(String, u64)> {
    profile
        .lines()
        .filter_map(|l| {
            let l = l.trim_start();
            // An inlined callee's line starts with its call site's offset.
            let l = match l.split_once(": ") {
                Some((offset, rest)) if offset.chars().all(|c| c.is_ascii_digit() || c == '.') => {
                    rest
                }
                _ => l,
            };
            let mut parts = l.split(':');
            let name = parts.next()?;
            let total = parts.next()?.trim().parse().ok()?;
            (!name.is_empty() && !name.contains(' ')).then(|| (name.to_string(), total))
        })
        .collect()
}

/// The functions that ran at least `share` of `program ARGS`'s
/// instructions, by `valgrind --tool=cachegrind` (the independent count).
fn hot_functions(dir: &Path, program: &Path, args: &[&str], share: f64) -> Vec<(String, u64)> {
    let out = dir.join("cachegrind.out");
    run(Command::new("valgrind")
        .args(["--tool=cachegrind", "--cache-sim=no"])
        .arg(format!("--cachegrind-out-file={}", out.display()))
        .arg(program)
        .args(args));
    // fn=NAME lines, each followed by `line Ir` lines.
    let text = std::fs::read_to_string(&out).unwrap();
    let mut per_fn: std::collections::HashMap<String, u64> = Default::default();
    let mut current = String::new();
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("fn=") {
            current = name.to_string();
        } else if let Some(ir) = line
            .split_whitespace()
            .nth(1)
            .filter(|_| line.starts_with(|c: char| c.is_ascii_digit()))
            .and_then(|n| n.parse::<u64>().ok())
        {
            *per_fn.entry(current.clone()).or_default() += ir;
        }
    }
    let total: u64 = per_fn.values().sum();
    let mut hot: Vec<(String, u64)> = per_fn
        .into_iter()
        .filter(|(_, ir)| *ir as f64 >= share * total as f64)
        .collect();
    hot.sort_by_key(|h| std::cmp::Reverse(h.1));
    hot
}

#[test]
fn a_writer_of_sqlite_gives_clang_a_profile_it_accepts() {
    if !cfg!(all(target_arch = "x86_64", target_os = "linux")) || !TOOLS.available(TEST) {
        return;
    }
    // clang links its profiling runtime into -fprofile-instr-generate builds.
    let runtime = Command::new("clang-14")
        .arg("--print-runtime-dir")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    if !Path::new(&runtime)
        .join("libclang_rt.profile-x86_64.a")
        .is_file()
    {
        tools::skip_or_fail(
            TEST,
            "clang-14's profiling runtime is not installed (Debian: apt-get install libclang-rt-14-dev)",
        );
        return;
    }
    let Some(sqlite) = retrace_testkit::programs::sqlite_source() else {
        tools::skip_or_fail(
            TEST,
            "the libsqlite3-sys source is not in cargo's registry (run `cargo fetch`)",
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();

    // clang's own chain and the plain build, beside the writer's.
    let (d, sq) = (dir.to_path_buf(), sqlite.clone());
    let clang_side = std::thread::spawn(move || {
        let plain = d.join("sqlbench.plain");
        let said = clang(&sq, &[], &plain);
        assert!(said.trim().is_empty(), "the plain build: {said}");
        (plain, clang_instrumented_pgo(&d, &sq))
    });

    let writer = dir.join("sqlbench.writer");
    let mut cc = vec![
        "lbr".to_string(),
        "cc".into(),
        "--".into(),
        "clang-14".into(),
    ];
    cc.extend(compile_args(&sqlite, &[], &writer));
    retrace(&cc.iter().map(String::as_str).collect::<Vec<_>>());
    let lbr = dir.join("train.lbr");
    let mut rec = vec![
        "lbr",
        "record",
        "--writer",
        s(&writer),
        "-o",
        s(&lbr),
        "--exact",
    ];
    rec.push("--");
    rec.extend(TRAIN);
    retrace(&rec);

    // Conversion: almost every pair becomes a machine path.
    let json = retrace(&["lbr", "convert", s(&lbr), "--format", "json"]).stdout;
    let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let c = &v["conversion"];
    let share = |k: &str| c[k].as_f64().unwrap() / c["occurrences"].as_f64().unwrap();
    println!(
        "sqlite: {} distinct pairs, {} occurrences, {:.2}% resolved, {:.2}% ambiguous, {:.2}% unresolved",
        c["pairs"],
        c["occurrences"],
        100.0 * share("resolved"),
        100.0 * share("ambiguous"),
        100.0 * share("unresolved")
    );
    assert!(share("unresolved") < 0.02, "{c}");

    // llvm-profgen reads retrace's branch stacks without a warning (but
    // the advice to profile longer: the training run is short on purpose).
    let script = dir.join("train.perfscript");
    retrace(&[
        "lbr",
        "convert",
        s(&lbr),
        "--format",
        "perfscript",
        "-o",
        s(&script),
    ]);
    let prof = dir.join("train.prof");
    let out = run(Command::new("llvm-profgen-14")
        .arg(format!("--binary={}", writer.display()))
        .arg(format!("--perfscript={}", script.display()))
        .arg(format!("--output={}", prof.display()))
        .arg("--format=text"));
    let said = String::from_utf8_lossy(&out.stderr);
    let warnings: Vec<&str> = said
        .lines()
        .filter(|l| l.contains("warning") && !l.contains("more samples"))
        .collect();
    assert!(warnings.is_empty(), "llvm-profgen warned: {said}");

    // clang reads the profile without a word (a mismatched or damaged one
    // draws "profile data may be corrupted", "… out of date", "mismatch").
    let retrace_pgo = dir.join("sqlbench.retrace-pgo");
    let said = clang(
        &sqlite,
        &[&format!("-fprofile-sample-use={}", prof.display())],
        &retrace_pgo,
    );
    assert!(said.trim().is_empty(), "clang on retrace's profile: {said}");

    let (plain, instr_pgo) = clang_side.join().unwrap();

    // Every build prints the same results on an input none was trained on.
    let expected = output_of(&plain, EVAL);
    assert!(
        expected
            .lines()
            .last()
            .unwrap()
            .starts_with("sqlbench: checksum "),
        "{expected}"
    );
    for build in [&retrace_pgo, &instr_pgo, &writer] {
        assert_eq!(output_of(build, EVAL), expected, "{}", build.display());
    }

    // The profile covers where the time goes: every function that runs at
    // least 3% of the plain build's instructions on the evaluation input
    // (cachegrind's count) has samples in it, and the hottest of them are
    // among the profile's hottest.
    let profile = std::fs::read_to_string(&prof).unwrap();
    let functions = profile_functions(&profile);
    let samples =
        |name: &str| -> u64 { functions.iter().filter(|f| f.0 == name).map(|f| f.1).sum() };
    let hot = hot_functions(dir, &plain, EVAL, 0.03);
    println!("hot functions (cachegrind): {hot:?}");
    assert!(hot.len() >= 3, "{hot:?}");
    for (name, _) in &hot {
        assert!(samples(name) > 0, "{name} is hot but has no samples");
    }
    let mut top: Vec<&(String, u64)> = functions.iter().collect();
    top.sort_by_key(|f| std::cmp::Reverse(f.1));
    let top: Vec<&str> = top.iter().take(20).map(|f| f.0.as_str()).collect();
    assert!(
        top.contains(&hot[0].0.as_str()),
        "{} not in {top:?}",
        hot[0].0
    );
}
