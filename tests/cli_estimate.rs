//! `retrace estimate` says what its numbers are: a total that leaves the
//! data cache out is marked and the fix is given, a fidelity that does not
//! model part of the core says so, figures that do not apply to a core are
//! `-` (null in JSON), bad rates are usage errors, and `--check` re-runs
//! the program with the recording's command line.

mod common;
use common::{retrace_in as retrace, succeeded as stdout};

use std::path::{Path, PathBuf};
use std::process::Output;

/// A scratch directory of its own for each test, holding a copy of the
/// program as `p.elf` (so paths can be spelled relative to it).
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "retrace-cli-estimate-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("programs/bin/crc32-rv32-O2.elf");
    std::fs::copy(src, dir.join("p.elf")).unwrap();
    dir
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn record(dir: &Path, args: &[&str]) {
    let out = retrace(dir, &[&["record"], args].concat());
    assert!(out.status.success(), "record {args:?}: {}", stderr(&out));
}

#[test]
fn an_unmeasured_data_cache_is_marked_and_the_record_command_given() {
    let dir = scratch("dcache");
    record(&dir, &["p.elf", "-o", "p.rtrace", "--no-dcache"]);
    let out = retrace(&dir, &["estimate", "p.elf", "p.rtrace", "--core", "rocket"]);
    let text = stdout(&out);
    let err = stderr(&out);
    // The total is marked, and the mark explained.
    let row = text.lines().find(|l| l.starts_with("rocket")).unwrap();
    assert!(row.contains("* "), "{text}");
    assert!(row.contains("unmeasured"), "{text}");
    assert!(text.contains("* without the data cache"), "{text}");
    // The warning names the exact command that measures the geometry.
    let warning = err
        .lines()
        .find(|l| l.starts_with("retrace: warning: "))
        .unwrap_or_else(|| panic!("no warning in {err}"));
    assert!(warning.contains("rocket (16384:4:64)"), "{warning}");
    let command = warning
        .split('`')
        .nth(1)
        .unwrap_or_else(|| panic!("no command in {warning}"));
    assert_eq!(
        command,
        "retrace record p.elf --dcache 16384:4:64 -o p.rtrace"
    );

    let out = retrace(
        &dir,
        &[
            "estimate", "p.elf", "p.rtrace", "--core", "rocket", "--format", "json",
        ],
    );
    let j: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let e = &j["estimates"][0];
    assert_eq!(e["dcache"], "unmeasured");
    assert_eq!(e["cycles_exclude_dcache"], true);
    assert!(e["dcache_cycles"].is_null(), "{e}");

    // Running that command fixes it: no warning, no mark.
    let words: Vec<&str> = command.split_whitespace().skip(2).collect();
    record(&dir, &words);
    let out = retrace(
        &dir,
        &[
            "estimate", "p.elf", "p.rtrace", "--core", "rocket", "--format", "json",
        ],
    );
    assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
    let j: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let e = &j["estimates"][0];
    assert_eq!(e["dcache"], "measured");
    assert_eq!(e["cycles_exclude_dcache"], false);
    assert!(e["dcache_cycles"].as_u64().unwrap() > 0, "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn fast_fidelity_says_what_it_does_not_model_and_inapplicable_columns_are_dashes() {
    let dir = scratch("fast");
    record(&dir, &["p.elf", "-o", "p.rtrace"]);
    let cores = [
        "--core", "rocket", "--core", "inorder5", "--core", "picorv32",
    ];
    let run = |more: &[&str]| {
        let args = [&["estimate", "p.elf", "p.rtrace"], &cores[..], more].concat();
        stdout(&retrace(&dir, &args))
    };
    let text = run(&["--fidelity", "fast"]);
    let notes: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("does not model"))
        .collect();
    assert_eq!(
        notes,
        ["fidelity fast does not model rocket's branch predictor, return-address stack and I-cache (static prediction, returns predicted, fetches hit); --fidelity control does"],
        "{text}"
    );
    let cells = |core: &str| -> Vec<String> {
        text.lines()
            .find(|l| l.starts_with(core))
            .unwrap()
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    // core fidelity cycles CPI mispredicts I$ D$
    assert_eq!(
        cells("rocket")[5],
        "-",
        "fast does not model the I-cache: {text}"
    );
    assert_eq!(
        cells("picorv32")[4],
        "-",
        "picorv32 predicts nothing: {text}"
    );
    assert_eq!(cells("picorv32")[5], "-", "{text}");
    assert_ne!(
        cells("inorder5")[4],
        "-",
        "inorder5 predicts not-taken: {text}"
    );

    let j: serde_json::Value =
        serde_json::from_str(&run(&["--fidelity", "fast", "--format", "json"])).unwrap();
    let e = j["estimates"].as_array().unwrap();
    assert_eq!(
        e[0]["not_modelled"],
        serde_json::json!(["branch-predictor", "return-stack", "icache"])
    );
    assert!(e[0]["icache_misses"].is_null());
    assert_eq!(e[1]["not_modelled"], serde_json::json!([]));
    assert!(e[2]["mispredicts"].is_null());
    assert!(e[2]["icache_misses"].is_null());
    assert!(e[1]["mispredicts"].as_u64().unwrap() > 0);

    // At control fidelity nothing is left out and rocket's I-cache counts.
    let text = run(&[]);
    assert!(!text.contains("does not model"), "{text}");
    let j: serde_json::Value = serde_json::from_str(&run(&["--format", "json"])).unwrap();
    assert!(j["estimates"][0]["icache_misses"].is_u64());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_miss_rate_outside_zero_to_one_is_a_usage_error() {
    let dir = scratch("rate");
    for rate in ["5", "NaN", "-1", "inf", "five"] {
        let out = retrace(
            &dir,
            &[
                "estimate",
                "p.elf",
                "p.rtrace",
                "--core",
                "rocket",
                "--dcache-miss-rate",
                rate,
            ],
        );
        assert_eq!(out.status.code(), Some(2), "{rate}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("--dcache-miss-rate"),
            "{}",
            stderr(&out)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A recording without program arguments gave the program its path as
/// spelled to `record`; the trace keeps it, so a check that spells the
/// path otherwise (the identity hash says it is the same program) re-runs
/// with the recorded command line.
#[test]
fn check_uses_the_recorded_command_line_whatever_the_path_spelling() {
    let dir = scratch("check");
    let full = dir.join("p.elf");
    let full = full.to_str().unwrap();
    let check = |program: &str, trace: &str| {
        let out = retrace(
            &dir,
            &[
                "estimate", program, trace, "--core", "ideal", "--check", "--format", "json",
            ],
        );
        let j: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        assert_eq!(j["check"]["matches"], true, "{program} {trace}");
        j["check"]["cmdline"].as_str().unwrap().to_string()
    };
    record(&dir, &["p.elf", "-o", "p.rtrace"]);
    assert_eq!(check("./p.elf", "p.rtrace"), "p.elf");
    assert_eq!(check(full, "p.rtrace"), "p.elf");

    // Recorded as ./p.elf: the program saw "./p.elf", whatever the
    // spelling given to estimate.
    record(&dir, &["./p.elf", "-o", "dot.rtrace"]);
    assert_eq!(check("p.elf", "dot.rtrace"), "./p.elf");
    assert_eq!(check(full, "dot.rtrace"), "./p.elf");
    assert_eq!(check("./p.elf", "dot.rtrace"), "./p.elf");

    // With arguments, the command line is the arguments, whatever the path.
    record(&dir, &["./p.elf", "-o", "a.rtrace", "--", "1", "2"]);
    assert_eq!(check(full, "a.rtrace"), "1 2");
    let _ = std::fs::remove_dir_all(&dir);
}
