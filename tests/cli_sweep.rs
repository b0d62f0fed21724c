//! `--set` overrides and `retrace sweep`: every point of a grid estimated
//! from one trace equals the cycle-level engine run on the same changed
//! core (at `control`, without a data cache: where the replay is exact),
//! and bad grids are one-line errors.

mod common;
use common::retrace;

use serde_json::Value;
use std::path::PathBuf;
use std::process::Output;

const PROGRAM: &str = "programs/bin/crc32-rv32-O2.elf";

/// The JSON report of a command that succeeded — or, for `run`, of a
/// program that exited (crc32 exits with its own status, 21).
fn json(out: &Output) -> Value {
    assert!(
        matches!(out.status.code(), Some(0 | 21)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    // `run` prints the program's output before its JSON line.
    let line = text.lines().rev().find(|l| l.starts_with('{')).unwrap();
    serde_json::from_str(line).unwrap()
}

fn trace() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("retrace-cli-sweep-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("crc32.rtrace");
    if !path.exists() {
        let out = retrace(&["record", PROGRAM, "-o", path.to_str().unwrap()]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    path
}

/// One error line, the expected status, and the words that say what to do.
fn refused(out: &Output, status: i32, words: &[&str]) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(status), "{err}");
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    for w in words {
        assert!(err.contains(w), "`{w}` not in: {err}");
    }
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn every_grid_point_equals_the_cycle_level_engine_on_that_core() {
    let t = trace();
    let sets = [
        "--set",
        "dcache=none",
        "--set",
        "icache.size=256..1024*2",
        "--set",
        "branch.predictor=bimodal,gshare",
        "--set",
        "branch.history_bits=6",
    ];
    let mut args = vec!["sweep", PROGRAM, t.to_str().unwrap(), "--core", "rocket"];
    args.extend(sets);
    args.extend(["--format", "json"]);
    let report = json(&retrace(&args));
    let points = report["points"].as_array().unwrap();
    assert_eq!(points.len(), 6, "1 × 3 × 2 × 1 points");
    assert_eq!(
        report["keys"],
        serde_json::json!([
            "dcache",
            "icache.size",
            "branch.predictor",
            "branch.history_bits"
        ])
    );
    let base = report["base"]["cycles"].as_u64().unwrap();
    let mut distinct = std::collections::BTreeSet::new();
    for p in points {
        let s = &p["settings"];
        let size = s["icache.size"].as_str().unwrap();
        let predictor = s["branch.predictor"].as_str().unwrap();
        let oracle = json(&retrace(&[
            "run",
            "--core",
            "rocket",
            "--set",
            "dcache=none",
            "--set",
            &format!("icache.size={size}"),
            "--set",
            &format!("branch.predictor={predictor}"),
            "--set",
            "branch.history_bits=6",
            "--format",
            "json",
            PROGRAM,
        ]));
        let cycles = p["cycles"].as_u64().unwrap();
        assert_eq!(
            cycles,
            oracle["cycles"].as_u64().unwrap(),
            "icache.size={size} branch.predictor={predictor}"
        );
        assert_eq!(p["mispredicts"], oracle["mispredicts"]);
        assert_eq!(p["icache_misses"], oracle["icache_misses"]);
        let ratio = p["vs_base"].as_f64().unwrap();
        assert!((ratio - cycles as f64 / base as f64).abs() < 1e-12);
        distinct.insert(cycles);
    }
    assert!(
        distinct.len() > 2,
        "the grid changes the timing: {distinct:?}"
    );
}

#[test]
fn csv_has_a_column_per_swept_key_and_estimate_names_the_variant() {
    let t = trace();
    let out = retrace(&[
        "sweep",
        PROGRAM,
        t.to_str().unwrap(),
        "--core",
        "inorder5",
        "--set",
        "latency.mul=1,4",
        "--set",
        "branch.mispredict_penalty=1..5+2",
        "--fidelity",
        "fast",
        "--format",
        "csv",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("latency.mul,branch.mispredict_penalty,core,cycles"),
        "{}",
        lines[0]
    );
    assert_eq!(lines.len(), 1 + 6, "{text}");
    // The core's name holds commas: quoted.
    assert!(
        lines[1].starts_with("1,1,\"inorder5[latency.mul=1,branch.mispredict_penalty=1]\","),
        "{}",
        lines[1]
    );

    let out = retrace(&[
        "estimate",
        PROGRAM,
        t.to_str().unwrap(),
        "--core",
        "rocket",
        "--set",
        "icache.size=1024",
        "--format",
        "json",
    ]);
    let e = json(&out);
    assert_eq!(e["estimates"][0]["core"], "rocket[icache.size=1024]");
}

#[test]
fn bad_grids_and_overrides_are_one_line_errors() {
    let t = trace();
    let t = t.to_str().unwrap();
    let sweep = |sets: &[&str]| {
        let mut args = vec!["sweep", PROGRAM, t, "--core", "rocket"];
        args.extend(sets);
        retrace(&args)
    };
    // The value parser refuses malformed specs (clap's usage error).
    refused(&sweep(&["--set", "icache.size=512..4096"]), 2, &["A..B*F"]);
    refused(&sweep(&["--set", "icache.size"]), 2, &["KEY=VALUE"]);
    refused(&sweep(&["--set", "x=1..100000000+1"]), 2, &["4096"]);
    // Values the core description refuses, at whatever point of the grid.
    refused(
        &sweep(&["--set", "icache.size=1024,1000"]),
        125,
        &["icache.size", "1000", "power of two"],
    );
    refused(
        &sweep(&["--set", "icache.colour=1"]),
        125,
        &["colour", "--set"],
    );
    refused(
        &sweep(&[
            "--set",
            "icache.size=1..1024*2",
            "--set",
            "icache.ways=1,2",
            "--max-points",
            "8",
        ]),
        125,
        &["22 points", "--max-points"],
    );
    refused(
        &sweep(&["--set", "icache.size=1024", "--set", "icache.size=2048"]),
        125,
        &["twice"],
    );
    refused(
        &retrace(&["estimate", PROGRAM, t, "--core", "nosuch", "--set", "a=1"]),
        125,
        &["unknown core"],
    );
}

#[test]
fn a_clock_turns_cycles_into_time() {
    let t = trace();
    let t = t.to_str().unwrap();
    let e = json(&retrace(&[
        "estimate", PROGRAM, t, "--core", "rocket", "--core", "picorv32", "--mhz", "1000", "--mhz",
        "50", "--format", "json",
    ]));
    for (row, hz) in e["estimates"].as_array().unwrap().iter().zip([1e9, 50e6]) {
        let cycles = row["cycles"].as_f64().unwrap();
        assert_eq!(row["mhz"].as_f64().unwrap(), hz / 1e6);
        assert!((row["target_seconds"].as_f64().unwrap() - cycles / hz).abs() < 1e-12);
    }
    // The core description's own clock, through --set; none without it.
    let e = json(&retrace(&[
        "estimate",
        PROGRAM,
        t,
        "--core",
        "rocket",
        "--set",
        "frequency_mhz=62.5",
        "--core",
        "ideal",
        "--format",
        "json",
    ]));
    let rows = e["estimates"].as_array().unwrap();
    assert_eq!(rows[0]["core"], "rocket[frequency_mhz=62.5]");
    assert_eq!(rows[0]["mhz"].as_f64(), Some(62.5));
    assert_eq!(
        rows[1]["core"], "ideal[frequency_mhz=62.5]",
        "--set changes every core"
    );
    refused(
        &retrace(&[
            "estimate", PROGRAM, t, "--core", "rocket", "--mhz", "1", "--mhz", "2",
        ]),
        125,
        &["--mhz", "one per core"],
    );
}
