//! `retrace profile` counts cycles per function as `retrace run --core`
//! does (docs/TIMING.md, "Per-function cycles"): a function entered by a
//! tail call is entered and holds its cycles, exclusive never exceeds
//! inclusive, the two commands agree function by function on a core the
//! estimate times exactly, and percentages are of the total the header
//! prints, whose data-cache term is named.

mod common;
use common::{retrace_in as retrace, succeeded as stdout};

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A scratch directory holding `p.elf` (crc32-rv32-O2: picolibc's `_start`
/// ends with `j _cstart`, a tail call) and its recording `p.rtrace`, plus
/// `nodc.rtrace` recorded without data-cache measurements.
fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("retrace-cli-profile-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("programs/bin/crc32-rv32-O2.elf");
    std::fs::copy(src, dir.join("p.elf")).unwrap();
    for args in [
        &["record", "p.elf", "-o", "p.rtrace"][..],
        &["record", "p.elf", "-o", "nodc.rtrace", "--no-dcache"],
    ] {
        let out = retrace(&dir, args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    }
    dir
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The profile as JSON, every function.
fn profile_json(dir: &Path, trace: &str, core: &str, fidelity: &str) -> Value {
    let out = retrace(
        dir,
        &[
            "profile",
            "p.elf",
            trace,
            "--core",
            core,
            "--fidelity",
            fidelity,
            "--top",
            "100000",
            "--format",
            "json",
        ],
    );
    serde_json::from_str(&stdout(&out)).unwrap()
}

fn function<'a>(j: &'a Value, name: &str) -> &'a Value {
    j["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == name)
        .unwrap_or_else(|| panic!("no function {name} in {j}"))
}

/// `1234567` as `1,234,567`, as the text output prints counts.
fn thousands(v: u64) -> String {
    let digits = v.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn n(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

#[test]
fn a_tail_called_function_is_entered_and_within_its_frames() {
    let dir = scratch("tail");
    let j = profile_json(&dir, "p.rtrace", "rocket", "control");
    let cstart = function(&j, "_cstart");
    assert!(n(&cstart["calls"]) >= 1, "{cstart}");
    assert!(n(&cstart["exclusive_cycles"]) > 0, "{cstart}");
    for f in j["functions"].as_array().unwrap() {
        assert!(
            n(&f["exclusive_cycles"]) <= n(&f["inclusive_cycles"]),
            "{f}"
        );
    }
    // `_start` is the program's first function: it is entered too, and its
    // frame ends at the tail call.
    let start = function(&j, "_start");
    assert_eq!(n(&start["calls"]), 1, "{start}");
    assert!(n(&start["inclusive_cycles"]) < n(&cstart["inclusive_cycles"]));
    let _ = std::fs::remove_dir_all(&dir);
}

/// On a core the estimate times exactly, `profile` and `run --core` give
/// the same figures for every function.
#[test]
fn profile_and_run_core_agree_per_function() {
    let dir = scratch("agree");
    let prof = profile_json(&dir, "p.rtrace", "inorder5", "fast");
    let out = retrace(
        &dir,
        &[
            "run",
            "p.elf",
            "--core",
            "inorder5",
            "--functions",
            "0",
            "--format",
            "json",
        ],
    );
    // `run` exits with the program's exit code.
    assert!(
        out.status.code().is_some_and(|c| c < 120),
        "{}",
        stderr(&out)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let run: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(run["cycles"], prof["cycles"]);
    let mut from_run: Vec<(String, u64, u64, u64, u64)> = run["functions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["name"].as_str().unwrap().to_string(),
                n(&f["exclusive"]),
                n(&f["inclusive"]),
                n(&f["calls"]),
                n(&f["instructions"]),
            )
        })
        .collect();
    let mut from_profile: Vec<(String, u64, u64, u64, u64)> = prof["functions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["name"].as_str().unwrap().to_string(),
                n(&f["exclusive_cycles"]),
                n(&f["inclusive_cycles"]),
                n(&f["calls"]),
                n(&f["instructions"]),
            )
        })
        .collect();
    from_run.sort();
    from_profile.sort();
    assert!(from_run.len() > 10);
    assert_eq!(from_run, from_profile);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The percentage column (the `%` after each count) in the text row of
/// `name`: (exclusive %, inclusive %).
fn percentages(text: &str, name: &str) -> (f64, f64) {
    let row = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| panic!("no row {name}: {text}"));
    let pct: Vec<f64> = row
        .split_whitespace()
        .filter_map(|w| w.strip_suffix('%'))
        .map(|w| w.parse().unwrap())
        .collect();
    (pct[0], pct[1])
}

#[test]
fn percentages_are_of_the_printed_total_and_the_dcache_term_is_named() {
    let dir = scratch("percent");
    let j = profile_json(&dir, "p.rtrace", "rocket", "control");
    let total = n(&j["cycles"]);
    let dcache = n(&j["dcache_cycles"]);
    assert!(dcache > 0, "{j}");
    assert_eq!(j["dcache_unmeasured"], false);
    // The functions' exclusive cycles, and the D-cache term, make the total.
    let exclusive: u64 = j["functions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| n(&f["exclusive_cycles"]))
        .sum();
    assert!(
        exclusive + dcache <= total,
        "{exclusive} + {dcache} > {total}"
    );
    let main = function(&j, "main");
    let text = stdout(&retrace(
        &dir,
        &[
            "profile", "p.elf", "p.rtrace", "--core", "rocket", "--top", "5",
        ],
    ));
    let header: Vec<&str> = text.lines().take(3).collect();
    assert!(header[1].contains("data cache"), "{text}");
    assert!(header[1].contains(&thousands(dcache)), "{text}");
    assert!(
        header[2].contains("percentages are of this total"),
        "{text}"
    );
    let (ex, inc) = percentages(&text, "main");
    let of_total = |c: u64| c as f64 * 100.0 / total as f64;
    assert!(
        (ex - of_total(n(&main["exclusive_cycles"]))).abs() < 0.006,
        "{text}"
    );
    assert!(
        (inc - of_total(n(&main["inclusive_cycles"]))).abs() < 0.006,
        "{text}"
    );

    // Without a measured miss rate, the header says the total leaves the
    // data cache out.
    let j = profile_json(&dir, "nodc.rtrace", "rocket", "control");
    assert_eq!(j["dcache_unmeasured"], true);
    assert!(j["dcache_cycles"].is_null());
    let text = stdout(&retrace(
        &dir,
        &["profile", "p.elf", "nodc.rtrace", "--core", "rocket"],
    ));
    assert!(text.contains("without the data cache"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Branches and hot partial programs name their source line, from the
/// program's DWARF (the bundled programs are built with -g).
#[test]
fn hot_addresses_have_source_lines() {
    let dir = scratch("source");
    let j = profile_json(&dir, "p.rtrace", "rocket", "control");
    for list in ["branches", "hottest_partial_programs"] {
        let rows = j[list].as_array().unwrap();
        assert!(!rows.is_empty(), "{list}");
        for row in rows {
            let source = row["source"]
                .as_str()
                .unwrap_or_else(|| panic!("{list}: {row}"));
            let (file, line) = source.rsplit_once(':').unwrap();
            assert!(!file.is_empty(), "{source}");
            assert!(line.parse::<u32>().is_ok_and(|l| l > 0), "{source}");
        }
    }
    assert!(j["branches"][0]["source"]
        .as_str()
        .unwrap()
        .starts_with("src/crc32.c:"));
}

/// The costliest branches: every mispredicted conditional branch, sorted by
/// the cycles its mispredictions cost (each the core's mispredict penalty),
/// whose mispredictions add up to the cycle-level engine's count
/// (`retrace run --core`), with its source line.
#[test]
fn costliest_branches_add_up_to_the_engine_s_mispredictions() {
    let dir = scratch("costliest");
    let j = profile_json(&dir, "p.rtrace", "rocket", "control");
    let rows = j["costliest_branches"].as_array().unwrap();
    assert!(rows.len() > 3, "{j}");
    let cost = |r: &Value| n(&r["mispredict_cycles"]);
    assert!(rows.windows(2).all(|w| cost(&w[0]) >= cost(&w[1])), "{j}");
    let penalty = cost(&rows[0]) / n(&rows[0]["mispredicts"]);
    assert!(penalty > 0);
    for r in rows {
        assert_eq!(cost(r), n(&r["mispredicts"]) * penalty, "{r}");
        assert!(n(&r["mispredicts"]) <= n(&r["executed"]), "{r}");
    }
    assert!(
        rows[0]["source"]
            .as_str()
            .unwrap()
            .starts_with("src/crc32.c:"),
        "{j}"
    );
    // The program exits with its checksum's code: the report is the last
    // line of its output.
    let run = retrace(
        &dir,
        &["run", "p.elf", "--core", "rocket", "--format", "json"],
    );
    let run = String::from_utf8_lossy(&run.stdout);
    let run: Value = serde_json::from_str(run.lines().last().unwrap()).unwrap();
    let sum: u64 = rows.iter().map(|r| n(&r["mispredicts"])).sum();
    assert_eq!(sum, n(&run["mispredicts"]));
    let text = stdout(&retrace(
        &dir,
        &["profile", "p.elf", "p.rtrace", "--core", "rocket"],
    ));
    assert!(text.contains("costliest branch"), "{text}");
}

/// `--format callgrind`, read by valgrind's own `callgrind_annotate`: its
/// program totals are the estimate's cycles and instructions, its
/// per-function figures (summed over the files of a function's inlined
/// code) are the profile's exclusive cycles and instructions, and its
/// inclusive figures those of functions that make no tail call.
#[test]
fn callgrind_annotate_reads_the_callgrind_output() {
    // callgrind_annotate has no option that exits 0 (`--version` dies
    // with its version): whether it starts is the test.
    let started = Command::new("callgrind_annotate")
        .arg("--version")
        .output()
        .is_ok();
    if !started
        && !retrace_testkit::tools::skip_or_fail(
            "callgrind_annotate_reads_the_callgrind_output",
            "callgrind_annotate is not installed (Debian: apt-get install valgrind)",
        )
    {
        return;
    }
    let dir = scratch("callgrind");
    let j = profile_json(&dir, "p.rtrace", "rocket", "control");
    let out = retrace(
        &dir,
        &[
            "profile",
            "p.elf",
            "p.rtrace",
            "--core",
            "rocket",
            "--format",
            "callgrind",
            "-o",
            "callgrind.out.1",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let annotate = |inclusive: &str| {
        let out = Command::new("callgrind_annotate")
            .args([
                &format!("--inclusive={inclusive}"),
                "--threshold=100",
                "--auto=no",
            ])
            .arg(dir.join("callgrind.out.1"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(out.stderr.is_empty(), "{}", stderr(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    // "12,338,165 (100.0%) 11,358,641 (100.0%)  src/crc32.c:main", a 0
    // without its percentage: counts, then the name.
    let rows = |text: &str| -> Vec<(u64, u64, String)> {
        text.lines()
            .filter_map(|l| {
                let mut nums = Vec::new();
                let mut rest = l.trim_start();
                loop {
                    let (word, after) = rest.split_once(' ').unwrap_or((rest, ""));
                    if word.chars().all(|c| c.is_ascii_digit() || c == ',') && !word.is_empty() {
                        nums.push(word.replace(',', "").parse::<u64>().ok()?);
                    } else if !(word == "(" || word.ends_with("%)")) {
                        break;
                    }
                    rest = after.trim_start();
                }
                let name = rest.trim();
                if nums.is_empty() || name.is_empty() {
                    return None;
                }
                let function = name.rsplit_once(':').map_or(name, |(_, f)| f);
                Some((nums[0], *nums.get(1).unwrap_or(&0), function.to_string()))
            })
            .collect()
    };
    let exclusive = annotate("no");
    let all = rows(&exclusive);
    let (totals, functions) = all.split_first().unwrap();
    assert_eq!(totals.2, "PROGRAM TOTALS", "{exclusive}");
    assert_eq!(
        (totals.0, totals.1),
        (n(&j["cycles"]), n(&j["instructions"]))
    );
    let sum: u64 = functions.iter().map(|f| f.0).sum();
    assert_eq!(sum, n(&j["cycles"]), "{exclusive}");
    let of = |rows: &[(u64, u64, String)], name: &str| {
        rows.iter()
            .filter(|r| r.2 == name)
            .fold((0, 0), |(c, i), r| (c + r.0, i + r.1))
    };
    for f in j["functions"].as_array().unwrap() {
        let name = f["name"].as_str().unwrap();
        assert_eq!(
            of(functions, name),
            (n(&f["exclusive_cycles"]), n(&f["instructions"])),
            "{name}"
        );
    }
    let inclusive = rows(&annotate("yes"));
    for name in ["main", "memcpy", "memset"] {
        let want = n(&function(&j, name)["inclusive_cycles"]);
        // main's own code inlines common.h's: its file's row is the call's.
        let got = inclusive.iter().find(|r| r.2 == name).unwrap().0;
        assert_eq!(got, want, "{name}");
    }
}
