//! Branches of the analysed program: an exact recording of a writer,
//! mapped onto the ordinary build of the same sources, agrees with an
//! independent count of that build's own branches (valgrind's callgrind
//! run on it), and its profiles are accepted by the real tools.

mod common;

use retrace_lbr::control::Mode;
use retrace_lbr::convert::convert;
use retrace_lbr::correspond::Pair;
use retrace_lbr::disasm::Code;
use retrace_lbr::record::{record, RecordOptions};
use std::path::{Path, PathBuf};
use std::process::Command;

/// An exact recording of `w` run with `args` (chains counted, as
/// `lbr record --analysed` does), the writer's code, and the two binaries
/// read for mapping.
fn record_and_pair(w: &Path, a: &Path, args: &[&str]) -> (retrace_lbr::Recording, Code, Pair) {
    let mut opts = RecordOptions::new(
        w.to_path_buf(),
        args.iter().map(|&a| a.into()).collect(),
        Mode::Exact,
    );
    opts.chains = true;
    let rec = record(&opts).unwrap();
    let code = Code::load(w).unwrap();
    let (w_bytes, a_bytes) = (std::fs::read(w).unwrap(), std::fs::read(a).unwrap());
    let pair = Pair::load(w, &w_bytes, &code, a, &a_bytes).unwrap();
    (rec, code, pair)
}

/// Writer and analysed build of an example program with `flags`.
fn builds(cc: &str, dir: &Path, program: &str, flags: &[&str]) -> (PathBuf, PathBuf) {
    builds_with(cc, dir, program, flags, false)
}

/// [`builds`], the writer with comparison tracing if `trace_cmp`.
fn builds_with(
    cc: &str,
    dir: &Path,
    program: &str,
    flags: &[&str],
    trace_cmp: bool,
) -> (PathBuf, PathBuf) {
    let w = common::writer_with(
        cc,
        dir,
        program,
        &[common::programs().join(format!("{program}.c"))],
        flags,
        trace_cmp,
    );
    (w, common::example_plain(cc, dir, program, flags))
}

/// The example programs with their arguments and the least share of the
/// analysed build's jump executions whose counts must agree with callgrind
/// (gcc 12 -O2 -g measured a little above each; docs/LBR.md says what the
/// rest is: in exprparse, a switch's range check and jump table that both
/// reach one block and a switch's case blocks without coverage, which no
/// pair or chain of pairs tells apart; in crc32, a loop the analysed build
/// vectorised, which one writer branch cannot split exactly).
const PROGRAMS: &[(&str, &[&str], f64)] = &[
    ("crc32", &["1024", "8"], 0.99),
    ("dijkstra", &[], 0.999),
    ("sort", &["2000"], 0.999),
    ("exprparse", &[], 0.905),
    ("bytevm", &[], 0.999),
];

/// The same with writers built with `lbr cc --trace-cmp`: each pair also
/// says which way its block's `switch` and comparisons went (docs/LBR.md).
const PROGRAMS_TRACE_CMP: &[(&str, &[&str], f64)] = &[
    ("crc32", &["1024", "8"], 0.99),
    ("dijkstra", &[], 0.74),
    ("sort", &["2000"], 0.999),
    ("exprparse", &[], 0.98),
    ("bytevm", &[], 0.999),
];

#[test]
fn mapped_branch_counts_agree_with_callgrind_on_the_analysed_build() {
    agreement_with_callgrind(PROGRAMS, false);
}

#[test]
fn mapped_branch_counts_agree_with_callgrind_with_comparison_tracing() {
    agreement_with_callgrind(PROGRAMS_TRACE_CMP, true);
}

fn agreement_with_callgrind(programs: &[(&str, &[&str], f64)], trace_cmp: bool) {
    let Some(cc) = common::cc() else { return };
    if common::tool("valgrind").is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for &(program, args, floor) in programs {
        let (w, a) = builds_with(&cc, dir.path(), program, &["-O2", "-g"], trace_cmp);
        agreement_of(program, &w, &a, args, floor);
    }
}

/// Record writer `w` on `args`, map onto `a`, compare with callgrind's
/// count of `a`'s jumps and require `floor`.
fn agreement_of(program: &str, w: &Path, a: &Path, args: &[&str], floor: f64) {
    let (rec, code, pair) = record_and_pair(w, a, args);
    let conv = convert(&rec, &code);
    let mapped = pair.map(&conv).unwrap();
    let ours = common::jump_edges(&mapped.branch_sites(), &pair.a_code);
    // The analysed build's functions that the writer instruments.
    let names: std::collections::HashSet<&str> = code
        .functions
        .iter()
        .filter(|f| f.instrumented)
        .map(|f| f.name.as_str())
        .collect();
    let theirs = common::callgrind_edges(a, args, &pair.a_code, &|i| {
        names.contains(pair.a_code.functions[i.func as usize].name.as_str())
    });
    let (share, total, worst) = common::agreement(&theirs, &ours);
    eprintln!(
            "{program}: {:.3}% of {total} jump executions of the analysed build agree with callgrind; {}; worst {worst:x?}; unmapped {:?}",
            100.0 * share,
            mapped.summary(),
            mapped.unmapped.iter().take(4).collect::<Vec<_>>()
        );
    if let Some(out) = std::env::var_os("RETRACE_LBR_DIFF") {
        // Every edge whose count differs, largest first, for reading site
        // by site: callgrind's count, ours, the edge and where it is.
        let mut diff: Vec<_> = theirs
            .keys()
            .chain(ours.keys())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .map(|e| (theirs.get(e).copied(), ours.get(e).copied(), *e))
            .filter(|(t, o, _)| t != o)
            .collect();
        diff.sort_by_key(|(t, o, _)| std::cmp::Reverse(t.unwrap_or(0).abs_diff(o.unwrap_or(0))));
        let text: String = diff
            .iter()
            .map(|(t, o, (s, d))| {
                format!(
                    "{t:?} {o:?} {s:x} -> {d:x} {} {}\n",
                    pair.a_code.describe(*s),
                    pair.a_code.at.get(s).map_or(String::new(), |&i| {
                        let (m, o) = &pair.a_code.text[i];
                        format!("{m} {o}")
                    })
                )
            })
            .collect();
        let path = PathBuf::from(out).join(format!("{program}.diff"));
        std::fs::write(path, text).unwrap();
    }
    assert!(share >= floor, "{program}: {:.2}% agree", 100.0 * share);
}

/// The least share of SQLite's (`programs/native/sqlbench.c` driving the
/// amalgamation, `sqlbench 300 3`) analysed jump executions whose counts
/// must agree with callgrind; gcc 12 -O2 -g measured a little above it
/// (docs/LBR.md says what the rest is).
const SQLITE_FLOOR: f64 = 0.955;

/// The same comparison on a large third-party code base. Each -O2 build of
/// the amalgamation takes a minute or more of CPU; with
/// `RETRACE_LBR_SQLITE_BUILDS=DIR` the two builds are kept in DIR and
/// reused while they are newer than the sources.
#[test]
fn sqlite_mapped_branch_counts_agree_with_callgrind() {
    let Some(cc) = common::cc() else { return };
    if common::tool("valgrind").is_none() {
        return;
    }
    let Some(sq) = retrace_testkit::programs::sqlite_source() else {
        assert!(
            !common::require_tools(),
            "the libsqlite3-sys sources are required"
        );
        eprintln!("skipping: the libsqlite3-sys sources are not downloaded");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let dir = std::env::var_os("RETRACE_LBR_SQLITE_BUILDS")
        .map(PathBuf::from)
        .unwrap_or_else(|| tmp.path().to_path_buf());
    std::fs::create_dir_all(&dir).unwrap();
    let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../programs/native/sqlbench.c");
    let sources = [driver.clone(), sq.join("sqlite3.c")];
    let include = format!("-I{}", sq.display());
    let flags = [
        "-O2",
        "-g",
        "-DSQLITE_THREADSAFE=0",
        "-DSQLITE_OMIT_LOAD_EXTENSION",
        include.as_str(),
    ];
    let fresh = |p: &Path| {
        let built = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
        built(p).is_some_and(|t| sources.iter().all(|s| built(s).is_some_and(|u| u <= t)))
    };
    let w = dir.join("sqlbench");
    if !fresh(&w) {
        common::writer(&cc, &dir, "sqlbench", &sources, &flags);
    }
    let a = dir.join("sqlbench.plain");
    if !fresh(&a) {
        let status = Command::new(&cc)
            .args(flags)
            .args(&sources)
            .arg("-o")
            .arg(&a)
            .status()
            .unwrap();
        assert!(status.success(), "building sqlbench");
    }
    agreement_of("sqlite", &w, &a, &["300", "3"], SQLITE_FLOOR);
}

#[test]
fn analysed_profiles_are_accepted_by_llvm_profgen_perf2bolt_and_llvm_bolt() {
    let Some(cc) = common::cc() else { return };
    let Some(profgen) = common::tool("llvm-profgen-14") else {
        return;
    };
    let Some(bolt) = common::tool("llvm-bolt-16") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for &(program, args, _) in PROGRAMS {
        let flags = ["-O2", "-g", retrace_lbr::runtime::EMIT_RELOCS_FLAG];
        let (w, a) = builds(&cc, dir.path(), program, &flags);
        let (rec, code, pair) = record_and_pair(&w, &a, args);
        let conv = convert(&rec, &code);
        let mapped = pair.map(&conv).unwrap();
        let a_bytes = std::fs::read(&a).unwrap();

        // llvm-profgen reads the branch stacks against the analysed build
        // without a word about ranges or addresses that do not fit it.
        let script = dir.path().join(format!("{program}.perfscript"));
        std::fs::write(&script, mapped.perfscript(&a, &a_bytes, 100_000).unwrap()).unwrap();
        let prof = dir.path().join(format!("{program}.prof"));
        let out = Command::new(&profgen)
            .arg(format!("--binary={}", a.display()))
            .arg(format!("--perfscript={}", script.display()))
            .arg(format!("--output={}", prof.display()))
            .arg("--format=text")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "{program}: llvm-profgen failed: {stderr}"
        );
        let warnings: Vec<&str> = stderr
            .lines()
            .filter(|l| l.contains("warning") && !l.contains("more samples"))
            .collect();
        assert!(
            warnings.is_empty(),
            "{program}: llvm-profgen warned: {stderr}"
        );
        let profile = std::fs::read_to_string(&prof).unwrap();
        assert!(profile.lines().count() > 3, "{program}: {profile}");

        // perf2bolt finds every trace in the analysed build's code.
        let (fdata, ok, text) = common::aggregate(
            &bolt,
            dir.path(),
            program,
            &mapped.bolt_preaggregated().text,
            &a,
        );
        assert!(ok, "{program}: perf2bolt failed: {text}");
        for clean in [
            "traces mismatching disassembled function contents: 0 (0.0%)",
            "Out of range traces involving unknown regions: 0 (0.0%)",
        ] {
            assert!(text.contains(clean), "{program}: {text}");
        }
        assert!(
            common::profile_warnings(&text).is_empty(),
            "{program}: {text}"
        );

        // BOLT lays the analysed build out by it, and the result computes
        // the same. (bytevm's dispatch loads its jump table's base outside
        // the loop, which BOLT 16 cannot follow: "failed to post-process
        // indirect branches", with or without a profile.)
        let (bolted, ok, text) = common::optimise(&bolt, dir.path(), program, &a, &fdata);
        assert!(ok, "{program}: llvm-bolt failed: {text}");
        let warnings: Vec<&str> = common::profile_warnings(&text)
            .into_iter()
            .filter(|l| !l.contains("failed to post-process indirect branches"))
            .collect();
        assert!(warnings.is_empty(), "{program}: {text}");
        let run = |p: &Path| Command::new(p).args(args).output().unwrap();
        let (x, y) = (run(&a), run(&bolted));
        assert_eq!(x.stdout, y.stdout, "{program}: same output after BOLT");
        assert_eq!(x.status.code(), y.status.code());
    }
}
