//! Conversion: the machine branches rebuilt from exact pair counts agree
//! with an independent count (valgrind's callgrind), and the branch-stack
//! text is accepted by the real `llvm-profgen`.

mod common;

use retrace_lbr::control::Mode;
use retrace_lbr::convert::convert;
use retrace_lbr::disasm::Code;
use retrace_lbr::record::{record, RecordOptions};
use std::path::Path;
use std::process::Command;

/// An `--exact` recording of the writer `w` run with `args`, and its code.
fn record_exact(w: &Path, args: &[&str]) -> (retrace_lbr::recording::Recording, Code) {
    let rec = record(&RecordOptions::new(
        w.to_path_buf(),
        args.iter().map(|&a| a.into()).collect(),
        Mode::Exact,
    ))
    .unwrap();
    (rec, Code::load(w).unwrap())
}

#[test]
fn exact_branch_counts_agree_with_callgrind() {
    let Some(cc) = common::cc() else { return };
    if common::tool("valgrind").is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // The share of jump executions whose (source, destination) count
    // agrees, at least. crc32 and dijkstra: every pair has one path. sort:
    // gcc compiles a `?:` inside one instrumented block to a jump around a
    // move (cmp_low), which no pair can see (measured 91.5%). exprparse: a
    // switch whose range check and jump table both reach the default case,
    // and one whose case blocks have no coverage call (measured 91.6%).
    // Both show up as ambiguous pairs.
    for (program, args, floor) in [
        ("crc32", vec!["1024", "8"], 0.999),
        ("dijkstra", vec![], 0.999),
        ("sort", vec!["2000"], 0.91),
        ("exprparse", vec![], 0.91),
    ] {
        let w = common::example_writer(&cc, dir.path(), program);
        let (rec, code) = record_exact(&w, &args);
        let conv = convert(&rec, &code);
        let ours = common::jump_edges(&conv.branch_sites(), &code);
        let theirs = common::callgrind_edges(&w, &args, &code, &|i| {
            code.functions[i.func as usize].instrumented
        });
        let (share, total, worst) = common::agreement(&theirs, &ours);
        eprintln!(
            "{program}: {:.3}% of {total} jump executions agree with callgrind (conversion {:?}); worst {worst:x?}",
            100.0 * share,
            conv.stats
        );
        assert!(share >= floor, "{program}: {:.2}% agree", 100.0 * share);
    }
}

/// A writer built with `lbr cc --trace-cmp` also records each `switch`
/// value and how each comparison came out, which decide the paths the
/// pairs alone leave open (sort's `?:`, exprparse's dispatches, and the
/// edge blocks the comparison calls themselves make gcc lay out).
#[test]
fn with_comparison_tracing_every_path_is_decided() {
    let Some(cc) = common::cc() else { return };
    if common::tool("valgrind").is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (program, args, floor) in [
        ("crc32", vec!["1024", "8"], 0.999),
        ("dijkstra", vec![], 0.999),
        ("sort", vec!["2000"], 0.999),
        ("exprparse", vec![], 0.999),
        ("bytevm", vec![], 0.999),
    ] {
        let w = common::writer_with(
            &cc,
            dir.path(),
            program,
            &[common::programs().join(format!("{program}.c"))],
            &["-O2", "-g"],
            true,
        );
        let (rec, code) = record_exact(&w, &args);
        let conv = convert(&rec, &code);
        let ours = common::jump_edges(&conv.branch_sites(), &code);
        let theirs = common::callgrind_edges(&w, &args, &code, &|i| {
            code.functions[i.func as usize].instrumented
        });
        let (share, total, worst) = common::agreement(&theirs, &ours);
        eprintln!(
            "{program} (trace-cmp): {:.3}% of {total} jump executions agree with callgrind (conversion {:?}); worst {worst:x?}",
            100.0 * share,
            conv.stats
        );
        assert!(share >= floor, "{program}: {:.2}% agree", 100.0 * share);
    }
}

#[test]
fn perfscript_is_accepted_by_llvm_profgen() {
    let Some(cc) = common::cc() else { return };
    let Some(profgen) = common::tool("llvm-profgen-14") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let w = common::example_writer(&cc, dir.path(), "sort");
    let rec = record(&RecordOptions::new(
        w.clone(),
        vec!["3000".into()],
        Mode::Exact,
    ))
    .unwrap();
    let bytes = std::fs::read(&w).unwrap();
    let code = Code::load(&w).unwrap();
    let text = convert(&rec, &code).perfscript(&w, &bytes, 50_000).unwrap();
    let script = dir.path().join("sort.perfscript");
    std::fs::write(&script, text).unwrap();
    let prof = dir.path().join("sort.prof");
    let out = Command::new(profgen)
        .arg(format!("--binary={}", w.display()))
        .arg(format!("--perfscript={}", script.display()))
        .arg(format!("--output={}", prof.display()))
        .arg("--format=text")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "llvm-profgen failed: {stderr}");
    // Any warning but the advice to profile longer (this run is short on
    // purpose) means the profile and the binary do not match.
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("warning") && !l.contains("more samples"))
        .collect();
    assert!(warnings.is_empty(), "llvm-profgen warned: {stderr}");
    let profile = std::fs::read_to_string(&prof).unwrap();
    assert!(
        profile.starts_with("main:") || profile.contains("\nmain:"),
        "{profile}"
    );
    assert!(
        !profile.contains("__sanitizer_cov_trace_pc"),
        "no call to the callback is recorded"
    );
}

#[test]
fn bolt_profile_is_accepted_by_perf2bolt_and_llvm_bolt() {
    let Some(cc) = common::cc() else { return };
    let Some(bolt) = common::tool("llvm-bolt-16") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for (program, args) in [("sort", vec!["3000"]), ("exprparse", vec![])] {
        let w = common::writer(
            &cc,
            dir.path(),
            program,
            &[common::programs().join(format!("{program}.c"))],
            &["-O2", "-g", retrace_lbr::runtime::EMIT_RELOCS_FLAG],
        );
        let (rec, code) = record_exact(&w, &args);
        let conv = convert(&rec, &code);
        let profile = conv.bolt_preaggregated().unwrap();

        // Every line parses; the B lines of the paths add up to the taken
        // executions the conversion reports; each pair occurrence adds one
        // call of the coverage callback and one return from it; every F
        // range runs forward within one function.
        let (cb, cb_ret) = (code.callback.unwrap(), code.callback_ret.unwrap());
        let hex = |s: &str| u64::from_str_radix(s, 16).unwrap();
        let (mut path_b, mut callback_b, mut ranges) = (0u64, 0u64, 0usize);
        for line in profile.text.lines() {
            let f: Vec<&str> = line.split(' ').collect();
            match f[0] {
                "B" => {
                    assert_eq!(f.len(), 5, "{line}");
                    let (from, to, n) = (hex(f[1]), hex(f[2]), f[3].parse::<u64>().unwrap());
                    assert!(n > 0 && f[4] == "0", "{line}");
                    assert!(
                        code.insn(from).is_some(),
                        "{line}: source is an instruction"
                    );
                    if from == cb_ret || to == cb {
                        callback_b += n;
                    } else {
                        path_b += n;
                    }
                }
                "F" => {
                    assert_eq!(f.len(), 4, "{line}");
                    let (start, end) = (hex(f[1]), hex(f[2]));
                    assert!(f[3].parse::<u64>().unwrap() > 0, "{line}");
                    assert!(start <= end, "{line}");
                    assert_eq!(
                        code.insn(start).map(|i| i.func),
                        code.insn(end).map(|i| i.func),
                        "{line}: one function"
                    );
                    ranges += 1;
                }
                _ => panic!("unexpected line {line:?}"),
            }
        }
        let taken: u64 = conv.branch_sites().iter().map(|b| b.taken).sum();
        assert_eq!(path_b, taken, "{program}: B lines vs taken executions");
        assert_eq!(path_b, profile.path_branches);
        assert_eq!(
            callback_b,
            2 * (conv.stats.resolved + conv.stats.ambiguous),
            "{program}: a call and a return per pair occurrence"
        );
        assert!(ranges > 10, "{program}: {ranges} ranges");

        let (fdata, ok, text) = common::aggregate(&bolt, dir.path(), program, &profile.text, &w);
        assert!(ok, "perf2bolt failed: {text}");
        assert!(
            text.contains("traces mismatching disassembled function contents: 0 (0.0%)"),
            "{program}: {text}"
        );
        assert!(
            text.contains("Out of range traces involving unknown regions: 0 (0.0%)"),
            "{program}: {text}"
        );
        assert!(
            common::profile_warnings(&text).is_empty(),
            "{program}: {text}"
        );
        let fd = std::fs::read_to_string(&fdata).unwrap();
        assert!(fd.lines().count() > 10, "{fd}");

        let (bolted, ok, text) = common::optimise(&bolt, dir.path(), program, &w, &fdata);
        assert!(ok, "llvm-bolt failed: {text}");
        assert!(
            common::profile_warnings(&text).is_empty(),
            "{program}: {text}"
        );
        assert!(
            text.contains("basic block reordering modified layout"),
            "{program}: {text}"
        );
        // The optimised writer still computes the same thing.
        let run = |p: &Path| Command::new(p).args(&args).output().unwrap();
        let (a, b) = (run(&w), run(&bolted));
        assert_eq!(a.stdout, b.stdout, "{program}: same output after BOLT");
        assert_eq!(a.status.code(), b.status.code());
    }
}
