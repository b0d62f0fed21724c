//! `retrace bench --harts N`: the structure of what it reports (steps,
//! runs, times and ratios per program, in text, JSON and CSV), on a tiny
//! input measured briefly — the figures themselves are for
//! docs/PERFORMANCE.md, not for a test on a shared machine.

use retrace_testkit::programs::program_dir;
use std::process::{Command, Output};

fn retrace(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_retrace"))
        .args(args)
        .output()
        .unwrap()
}

fn prog(name: &str) -> String {
    program_dir().join("mp").join(name).display().to_string()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

const STEPS: [&str; 7] = [
    "run 1 hart",
    "run harts",
    "cycle-level",
    "record",
    "record --no-dcache",
    "replay fast",
    "replay control",
];

/// A short bench of two programs, one of each width, on 4 harts.
fn bench(format: &[&str]) -> Output {
    let (p32, p64) = (prog("pipeline-rv32-O2.elf"), prog("workq-rv64-O2.elf"));
    let mut args = vec![
        "bench",
        "--harts",
        "4",
        &p32,
        &p64,
        "--rounds",
        "2",
        "--min-seconds",
        "0",
    ];
    args.extend_from_slice(format);
    args.extend_from_slice(&["--", "40", "5"]);
    let out = retrace(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    out
}

#[test]
fn bench_harts_reports_every_step_and_ratio_per_program() {
    let out = bench(&["--format", "json"]);
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["harts"], 4, "{j}");
    assert_eq!(j["core"], "inorder5", "{j}");
    assert_eq!(j["rounds"], 2, "{j}");
    let programs = j["programs"].as_array().unwrap();
    assert_eq!(programs.len(), 2, "{j}");
    for (p, name) in programs.iter().zip(["pipeline-rv32", "workq-rv64"]) {
        assert!(p["program"].as_str().unwrap().contains(name), "{p}");
        assert_eq!(p["args"], serde_json::json!(["40", "5"]), "{p}");
        let steps = p["steps"].as_array().unwrap();
        let names: Vec<&str> = steps.iter().map(|s| s["step"].as_str().unwrap()).collect();
        assert_eq!(names, STEPS, "{p}");
        for s in steps {
            assert!(s["runs_per_measurement"].as_u64().unwrap() >= 1, "{s}");
            let (fastest, median) = (s["fastest_seconds"].as_f64(), s["median_seconds"].as_f64());
            assert!(fastest.unwrap() > 0.0 && fastest <= median, "{s}");
        }
        for count in [
            "instructions_one_hart",
            "instructions",
            "makespan",
            "fast_makespan",
            "control_makespan",
            "calls",
        ] {
            assert!(p[count].as_u64().unwrap() > 0, "{count}: {p}");
        }
        assert!(p["reordered"].is_u64(), "{p}");
        for rate in ["mips_one_hart", "mips", "cycle_level_mips"] {
            assert!(p[rate].as_f64().unwrap() > 0.0, "{rate}: {p}");
        }
        for ratio in [
            "mips_over_one_hart",
            "record_over_run",
            "record_no_dcache_over_run",
            "record_over_cycle_level",
            "record_no_dcache_over_cycle_level",
            "cycle_level_over_fast",
            "cycle_level_over_control",
        ] {
            assert!(p[ratio]["median"].as_f64().unwrap() > 0.0, "{ratio}: {p}");
            assert!(p[ratio]["fastest"].as_f64().unwrap() > 0.0, "{ratio}: {p}");
        }
    }
}

#[test]
fn bench_harts_prints_text_and_csv() {
    let text = String::from_utf8(bench(&[]).stdout).unwrap();
    assert!(
        text.starts_with("4 harts on inorder5; 2 interleaved rounds"),
        "{text}"
    );
    for line in [
        "run 4 harts",
        "record (inorder5 clocks)",
        "record --no-dcache (inorder5)",
        "replay fast (inorder5)",
        "cycle-level ÷ replay fast",
        "lowest, fastest ÷ fastest",
    ] {
        assert!(text.contains(line), "no {line:?} in\n{text}");
    }

    let csv = String::from_utf8(bench(&["--format", "csv"]).stdout).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("program,step,runs_per_measurement,fastest_seconds,median_seconds,median_cpu_seconds")
    );
    assert_eq!(lines.count(), 2 * STEPS.len(), "{csv}");
}

#[test]
fn bench_harts_refuses_bad_options() {
    // One program without --harts; --min-seconds without it; too few harts.
    let (a, b) = (prog("reduce-rv32-O2.elf"), prog("reduce-rv64-O2.elf"));
    for args in [
        &["bench", &a, &b][..],
        &["bench", &a, "--min-seconds", "1"],
        &["bench", &a, "--harts", "1"],
        &["bench", &a, "--harts", "2", "--min-seconds", "-1"],
    ] {
        let out = retrace(args);
        assert!(
            matches!(out.status.code(), Some(2 | 125)),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    let out = retrace(&["bench", "--harts", "2", &a, "--core", "no-such-core"]);
    assert_eq!(out.status.code(), Some(125), "{}", stderr(&out));
    assert!(stderr(&out).contains("no-such-core"), "{}", stderr(&out));
}

#[test]
fn bench_harts_steps_measures_only_the_steps_named() {
    let p = prog("workq-rv32-O2.elf");
    let out = retrace(&[
        "bench",
        "--harts",
        "2",
        &p,
        "--rounds",
        "1",
        "--min-seconds",
        "0",
        "--steps",
        "cycle-level,fast",
        "--format",
        "json",
        "--",
        "40",
        "5",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let p = &j["programs"][0];
    let runs: Vec<u64> = p["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["runs_per_measurement"].as_u64().unwrap())
        .collect();
    // Only cycle-level and replay fast (the recording runs for the replay,
    // unmeasured).
    assert_eq!(runs, [0, 0, 1, 0, 0, 1, 0], "{p}");
    assert_eq!(p["fast_makespan"], p["makespan"], "{p}");
    let cpu = p["cycle_level_over_fast"]["median_cpu"].as_f64();
    assert!(cpu.is_some_and(|c| c > 0.0), "{p}");

    // Without --harts, or naming no step: refused.
    let a = prog("reduce-rv32-O2.elf");
    for args in [
        &["bench", "--steps", "fast", &a][..],
        &["bench", "--harts", "2", "--steps", "nothing", &a],
    ] {
        let out = retrace(args);
        assert!(
            matches!(out.status.code(), Some(2 | 125)),
            "{args:?}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn bench_harts_of_some_steps_prints_no_ratio_it_did_not_measure() {
    let text = String::from_utf8(bench(&["--steps", "run1,run"]).stdout).unwrap();
    assert!(!text.contains("NaN"), "{text}");
    assert!(text.contains("MIPS: 1 hart"), "{text}");
    assert!(!text.contains("makespan"), "{text}");
    assert!(
        text.contains("cycle-level ÷ replay fast -; 4-hart ÷ 1-hart MIPS"),
        "{text}"
    );
}
