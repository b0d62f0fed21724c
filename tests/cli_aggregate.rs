//! `retrace record --aggregate loops` and `retrace aggregate`: an
//! aggregated trace records fewer bits, `estimate` (with `--check`) reads
//! it to the same figures as the plain trace, and the ladder lists the
//! built levels with figures and the others as not built yet.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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

fn retrace(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_retrace"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("retrace runs")
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
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
fn the_ladder_shows_built_levels_and_marks_the_rest() {
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
        ["none", "loops", "+if-else", "+nested", "+functions"]
    );
    let (none, loops) = (&rungs[0], &rungs[1]);
    assert_eq!(none["bits_saved"], 0);
    assert!(loops["bits_recorded"].as_u64() < none["bits_recorded"].as_u64());
    assert_eq!(loops["cycles"], none["cycles"]);
    assert_eq!(loops["total_error_percent"], 0.0);
    for r in &rungs[2..] {
        assert_eq!(r["built"], false);
        assert!(r["cycles"].is_null() && r["bits_recorded"].is_null());
    }
    let text = ok(&retrace(&dir, &["aggregate", "sieve-rv32-O2.elf"]));
    assert!(text.contains("+nested     not built yet"), "{text}");
    let csv = ok(&retrace(
        &dir,
        &["aggregate", "sieve-rv32-O2.elf", "--format", "csv"],
    ));
    assert_eq!(csv.lines().count(), 6, "{csv}");
}
