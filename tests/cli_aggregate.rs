//! `retrace record --aggregate loops|if-else|nested|functions|all` and
//! `retrace aggregate`: an aggregated trace records fewer bits, `estimate`
//! (with `--check`) reads a loops trace to the same figures as the plain
//! trace and a lossy trace to the profiled total, and the ladder lists
//! every level with figures (the two bias sweeps included). Bad thresholds
//! and profiles get one-line errors.

mod common;
use common::{retrace_in as retrace, succeeded as ok};

use std::path::{Path, PathBuf};
use std::process::Output;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "retrace-cli-aggregate-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for p in ["crc32-rv32-O2", "sieve-rv32-O2"] {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("programs/bin/{p}.elf"));
        std::fs::copy(src, dir.join(format!("{p}.elf"))).unwrap();
    }
    dir
}

fn json(out: &Output) -> serde_json::Value {
    let text = ok(out);
    serde_json::from_str(text.lines().last().unwrap()).unwrap()
}

#[test]
fn an_aggregated_trace_estimates_as_the_plain_one() {
    let dir = scratch("record");
    let p = "crc32-rv32-O2.elf";
    let plain = json(&retrace(
        &dir,
        &["record", p, "-o", "plain.rtrace", "--format", "json"],
    ));
    let agg = json(&retrace(
        &dir,
        &[
            "record",
            "--aggregate",
            "loops",
            p,
            "-o",
            "agg.rtrace",
            "--format",
            "json",
        ],
    ));
    assert_eq!(plain["aggregate"], "none");
    assert_eq!(agg["aggregate"], "loops");
    let bits = |v: &serde_json::Value| v["branches"].as_u64().unwrap();
    let saved = agg["aggregated_tests"].as_u64().unwrap();
    assert!(saved > 0 && agg["aggregated_loops"].as_u64().unwrap() > 0);
    assert_eq!(bits(&agg) + saved, bits(&plain));
    // Every figure of the estimate up to the partial programs replayed
    // (after them: how much came from memoised stretches, and seconds).
    let estimate = |t: &str| -> Vec<String> {
        let csv = ok(&retrace(
            &dir,
            &[
                "estimate",
                p,
                t,
                "--core",
                "ideal",
                "--core",
                "picorv32",
                "--core",
                "inorder5",
                "--fidelity",
                "fast",
                "--check",
                "--format",
                "csv",
            ],
        ));
        csv.lines()
            .map(|l| l.split(',').take(14).collect::<Vec<_>>().join(","))
            .collect()
    };
    assert_eq!(estimate("plain.rtrace"), estimate("agg.rtrace"));
    // A trace of another program is refused in one line.
    let out = retrace(
        &dir,
        &[
            "estimate",
            "sieve-rv32-O2.elf",
            "agg.rtrace",
            "--core",
            "ideal",
        ],
    );
    assert_eq!(out.status.code(), Some(125));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}

#[test]
fn the_ladder_shows_every_level_and_both_sweeps() {
    let dir = scratch("ladder");
    let v = json(&retrace(
        &dir,
        &[
            "aggregate",
            "sieve-rv32-O2.elf",
            "--core",
            "picorv32",
            "--format",
            "json",
        ],
    ));
    let rungs = v["rungs"].as_array().unwrap();
    let levels: Vec<&str> = rungs.iter().map(|r| r["level"].as_str().unwrap()).collect();
    assert_eq!(
        levels,
        [
            "none",
            "loops",
            "+if-else",
            "+if-else",
            "+if-else",
            "+if-else",
            "+if-else",
            "+nested",
            "+nested",
            "+nested",
            "+nested",
            "+nested",
            "+functions"
        ]
    );
    let (none, loops, ifelse) = (&rungs[0], &rungs[1], &rungs[2]);
    assert_eq!(none["bits_saved"], 0);
    assert!(loops["bits_recorded"].as_u64() < none["bits_recorded"].as_u64());
    assert_eq!(loops["cycles"], none["cycles"]);
    assert_eq!(loops["total_error_percent"], 0.0);
    assert_eq!(loops["local_error_mean_percent"], 0.0);
    // The if-else rungs: gate off, then the default sweep 1e3 … 1e6.
    assert!(ifelse["if_else_bias"].is_null());
    assert!(ifelse["fixed_sites"].as_u64().unwrap() > 0);
    assert!(ifelse["bits_recorded"].as_u64() < loops["bits_recorded"].as_u64());
    assert!(ifelse["local_error_p99_percent"].as_f64().is_some());
    let swept: Vec<f64> = rungs[3..7]
        .iter()
        .map(|r| r["if_else_bias"].as_f64().unwrap())
        .collect();
    assert_eq!(swept, [1e3, 1e4, 1e5, 1e6]);
    // The nested rungs: gate off, then the default loop sweep.
    assert!(rungs[7]["loop_bias"].is_null());
    let swept: Vec<f64> = rungs[8..12]
        .iter()
        .map(|r| r["loop_bias"].as_f64().unwrap())
        .collect();
    assert_eq!(swept, [1e3, 1e5, 1e7, 1e9]);
    let functions = &rungs[12];
    assert!(functions["functions"].as_u64().unwrap() > 0, "{functions}");
    assert!(functions["bits_recorded"].as_u64() < ifelse["bits_recorded"].as_u64());
    // On the profiled input the means add up to the plain total.
    for r in &rungs[7..] {
        let e = r["total_error_percent"].as_f64().unwrap();
        assert!(e.abs() < 0.01, "{r}");
    }
    let text = ok(&retrace(&dir, &["aggregate", "sieve-rv32-O2.elf"]));
    assert!(text.contains("  bias < 1e4"), "{text}");
    assert!(text.contains("  loop b. < 1e5"), "{text}");
    let csv = ok(&retrace(
        &dir,
        &["aggregate", "sieve-rv32-O2.elf", "--format", "csv"],
    ));
    assert_eq!(csv.lines().count(), 14, "{csv}");
}

#[test]
fn an_if_else_trace_estimates_the_profiled_total() {
    let dir = scratch("ifelse");
    let p = "sieve-rv32-O2.elf";
    ok(&retrace(&dir, &["record", p, "-o", "plain.rtrace"]));
    let rec = json(&retrace(
        &dir,
        &[
            "record",
            "--aggregate",
            "if-else",
            "--profile",
            "plain.rtrace",
            p,
            "-o",
            "lossy.rtrace",
            "--format",
            "json",
        ],
    ));
    assert!(rec["fixed_sites"].as_u64().unwrap() > 0, "{rec}");
    assert!(rec["fixed_tests"].as_u64().unwrap() > 0, "{rec}");
    // Without --profile the program runs once more for the profile: the
    // same plan, the same trace.
    ok(&retrace(
        &dir,
        &["record", "--aggregate", "if-else", p, "-o", "lossy2.rtrace"],
    ));
    assert_eq!(
        std::fs::read(dir.join("lossy.rtrace")).unwrap(),
        std::fs::read(dir.join("lossy2.rtrace")).unwrap()
    );
    let est = |t: &str| {
        json(&retrace(
            &dir,
            &["estimate", p, t, "--core", "inorder5", "--format", "json"],
        ))
    };
    let (plain, lossy) = (est("plain.rtrace"), est("lossy.rtrace"));
    let cycles = |v: &serde_json::Value| v.to_string();
    assert!(!cycles(&plain).is_empty() && !cycles(&lossy).is_empty());
    // A gate at 0 keeps every candidate recorded: no fixed site.
    let gated = json(&retrace(
        &dir,
        &[
            "record",
            "--aggregate",
            "if-else",
            "--profile",
            "plain.rtrace",
            "--if-else-bias",
            "0",
            p,
            "-o",
            "gated.rtrace",
            "--format",
            "json",
        ],
    ));
    assert_eq!(gated["fixed_sites"], 0, "{gated}");
}

#[test]
fn bad_thresholds_and_profiles_are_refused_in_one_line() {
    let dir = scratch("ifelse-bad");
    let p = "sieve-rv32-O2.elf";
    ok(&retrace(
        &dir,
        &["record", "crc32-rv32-O2.elf", "-o", "crc.rtrace"],
    ));
    let one_line = |args: &[&str], code: i32, says: &str| {
        let out = retrace(&dir, args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!dir.join("out.rtrace").exists(), "{args:?} wrote a trace");
    };
    for bad in ["-1", "NaN", "many", "1e3,-5"] {
        let flag = format!("--if-else-bias={bad}");
        let args = [
            "record",
            "--aggregate",
            "if-else",
            &flag,
            p,
            "-o",
            "out.rtrace",
        ];
        if !bad.contains(',') {
            one_line(&args, 2, "bias threshold");
        }
        one_line(&["aggregate", p, &flag], 2, "bias threshold");
    }
    one_line(
        &["record", "--if-else-bias", "5", p, "-o", "out.rtrace"],
        2,
        "lossy levels only",
    );
    one_line(
        &[
            "record",
            "--aggregate",
            "if-else",
            "--loop-bias",
            "5",
            p,
            "-o",
            "out.rtrace",
        ],
        2,
        "--loop-bias applies",
    );
    for bad in ["-1", "NaN"] {
        let flag = format!("--loop-bias={bad}");
        one_line(
            &["record", "--aggregate", "all", &flag, p, "-o", "out.rtrace"],
            2,
            "bias threshold",
        );
        one_line(&["aggregate", p, &flag], 2, "bias threshold");
    }
    one_line(
        &[
            "record",
            "--aggregate",
            "if-else",
            "--profile",
            "crc.rtrace",
            p,
            "-o",
            "out.rtrace",
        ],
        125,
        "not sieve-rv32-O2.elf",
    );
}

#[test]
fn a_collapsed_trace_estimates_the_profiled_total_and_refuses_check() {
    let dir = scratch("collapse");
    let p = "crc32-rv32-O2.elf";
    let plain = json(&retrace(
        &dir,
        &["record", p, "-o", "plain.rtrace", "--format", "json"],
    ));
    let all = json(&retrace(
        &dir,
        &[
            "record",
            "--aggregate",
            "all",
            "--profile",
            "plain.rtrace",
            p,
            "-o",
            "all.rtrace",
            "--format",
            "json",
        ],
    ));
    assert!(all["collapsed_functions"].as_u64().unwrap() > 0, "{all}");
    assert!(all["collapsed_extents"].as_u64().unwrap() > 0, "{all}");
    // Far fewer bits: the computation's functions hold no bits any more.
    let bits = |v: &serde_json::Value| v["branches"].as_u64().unwrap();
    assert!(bits(&all) * 10 < bits(&plain), "{all}");
    let est = |t: &str| {
        json(&retrace(
            &dir,
            &["estimate", p, t, "--core", "inorder5", "--format", "json"],
        ))
    };
    let cycles = |v: &serde_json::Value| v["estimates"][0]["cycles"].as_f64().unwrap();
    let (plain_est, all_est) = (est("plain.rtrace"), est("all.rtrace"));
    let err = (cycles(&all_est) - cycles(&plain_est)).abs() / cycles(&plain_est);
    assert!(err < 1e-4, "{plain_est} vs {all_est}");
    // The run's instructions, not the replay's.
    assert_eq!(
        all_est["estimates"][0]["instructions"],
        plain_est["estimates"][0]["instructions"]
    );
    // --check cannot follow a lossy trace: one line, no figures.
    let out = retrace(
        &dir,
        &["estimate", p, "all.rtrace", "--core", "ideal", "--check"],
    );
    let text = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0));
    assert!(text.contains("lossy --aggregate level"), "{text}");
    assert_eq!(text.trim_end().lines().count(), 1, "{text}");
    // Nor can `profile` attribute a walk that is not the run's.
    let out = retrace(&dir, &["profile", p, "all.rtrace", "--core", "ideal"]);
    let text = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0));
    assert!(text.contains("lossy --aggregate level"), "{text}");
    assert_eq!(text.trim_end().lines().count(), 1, "{text}");
}
