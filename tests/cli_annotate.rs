//! `retrace annotate`: per instruction and per source line, the cycles a
//! replay charged. A function's instructions sum to the exclusive cycles
//! `retrace profile` gives it, every function's to the run's cycles; the
//! text view interleaves the C source (read from `programs/src`) with the
//! disassembly; `-O2` code inlined into `main` shows the inlined function's
//! line; CSV has a row per instruction; a function that does not exist is
//! one line of error. With `--cpi`, every instruction's, line's and
//! function's stack sums to its cycles, in `annotate` and `profile` alike,
//! and `estimate --cpi` gives each core's stack summing to its estimate.

mod common;
use common::{retrace_in as retrace, succeeded as stdout};

use serde_json::Value;
use std::path::{Path, PathBuf};

/// A scratch directory holding crc32-rv32-O2's recording `p.rtrace`; the
/// program stays in `programs/bin`, where its sources are found.
fn scratch(name: &str) -> (PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!(
        "retrace-cli-annotate-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let elf = Path::new(env!("CARGO_MANIFEST_DIR")).join("programs/bin/crc32-rv32-O2.elf");
    let out = retrace(&dir, &["record", elf.to_str().unwrap(), "-o", "p.rtrace"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (dir, elf)
}

fn json(dir: &Path, cmd: &str, elf: &Path, extra: &[&str]) -> Value {
    let mut args = vec![cmd, elf.to_str().unwrap(), "p.rtrace", "--core", "rocket"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--format", "json"]);
    serde_json::from_str(&stdout(&retrace(dir, &args))).unwrap()
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

#[test]
fn functions_sum_to_the_profile_and_the_run() {
    let (dir, elf) = scratch("sums");
    let profile = json(&dir, "profile", &elf, &["--top", "1000"]);
    let annotated = json(&dir, "annotate", &elf, &["--top", "1000"]);
    let functions = annotated["functions"].as_array().unwrap();
    assert!(functions.len() > 3, "{annotated}");
    let mut sum = 0;
    for f in functions {
        let code_sum: u64 = f["code"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| u(&i["cycles"]))
            .sum();
        let line_sum: u64 = f["lines"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| u(&l["cycles"]))
            .sum();
        assert_eq!(code_sum, u(&f["cycles"]), "{}", f["name"]);
        assert_eq!(line_sum, u(&f["cycles"]), "{}", f["name"]);
        let p = profile["functions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == f["name"])
            .unwrap();
        assert_eq!(u(&f["cycles"]), u(&p["exclusive_cycles"]), "{}", f["name"]);
        assert_eq!(
            u(&f["instructions"]),
            u(&p["instructions"]),
            "{}",
            f["name"]
        );
        sum += u(&f["cycles"]);
    }
    let dcache = annotated["dcache_cycles"].as_u64().unwrap_or(0);
    assert_eq!(sum + dcache, u(&annotated["cycles"]));
    assert_eq!(annotated["cycles"], profile["cycles"]);
}

#[test]
fn text_interleaves_source_and_disassembly() {
    let (dir, elf) = scratch("text");
    let text = stdout(&retrace(
        &dir,
        &[
            "annotate",
            elf.to_str().unwrap(),
            "p.rtrace",
            "--core",
            "rocket",
            "--function",
            "main",
        ],
    ));
    // The source line, its text from programs/src/crc32.c, then the
    // instructions.
    let table = "for (uint32_t i = 0; i < 256; i++) {";
    let at = text
        .find(table)
        .unwrap_or_else(|| panic!("no source text in\n{text}"));
    assert!(text[..at].contains("src/crc32.c:22"), "{text}");
    assert!(text[at..].lines().nth(1).unwrap().contains(":  "), "{text}");
    // `rng_next` and friends from common.h, inlined into main at -O2.
    assert!(text.contains("src/common.h:"), "{text}");
    assert!(
        !text.contains("\nmemcpy ("),
        "one function asked for\n{text}"
    );
}

#[test]
fn csv_has_a_row_per_instruction_and_bad_names_are_refused() {
    let (dir, elf) = scratch("csv");
    let e = elf.to_str().unwrap();
    let csv = stdout(&retrace(
        &dir,
        &[
            "annotate",
            e,
            "p.rtrace",
            "--core",
            "rocket",
            "--function",
            "memcpy",
            "--format",
            "csv",
        ],
    ));
    let mut lines = csv.lines();
    assert_eq!(
        lines.next().unwrap(),
        "function,pc,source,cycles,executions,mispredicts,icache_misses,instruction"
    );
    let rows: Vec<&str> = lines.collect();
    assert!(
        rows.len() > 5 && rows.iter().all(|r| r.starts_with("memcpy,0x")),
        "{csv}"
    );
    let out = retrace(&dir, &["annotate", e, "p.rtrace", "--function", "no_such"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("no function \"no_such\""), "{err}");
}

/// `retrace pp` and `retrace cfg` name each partial program's and block's
/// first source line.
#[test]
fn pp_and_cfg_name_source_lines() {
    let dir = std::env::temp_dir();
    let elf = Path::new(env!("CARGO_MANIFEST_DIR")).join("programs/bin/sort-rv32-O2.elf");
    let e = elf.to_str().unwrap();
    let args = ["pp", e, "--function", "cmp_low", "--format", "json"];
    let j: Value = serde_json::from_str(&stdout(&retrace(&dir, &args))).unwrap();
    let rows = j["partial_programs"].as_array().unwrap();
    assert!(!rows.is_empty(), "{j}");
    for r in rows {
        assert!(
            r["source"].as_str().unwrap().starts_with("src/sort.c:"),
            "{r}"
        );
    }
    let text = stdout(&retrace(&dir, &["cfg", e, "--function", "cmp_low"]));
    let blocks: Vec<&str> = text.lines().filter(|l| l.starts_with("  b")).collect();
    assert!(!blocks.is_empty(), "{text}");
    assert!(
        blocks.iter().all(|l| l.contains("  (src/sort.c:")),
        "{text}"
    );
}

/// The sum of a JSON CPI stack's parts.
fn stack_sum(cpi: &Value) -> u64 {
    let parts = cpi.as_object().unwrap_or_else(|| panic!("no stack: {cpi}"));
    assert_eq!(parts.len(), retrace_timing::CPI_PARTS, "{cpi}");
    parts.values().map(u).sum()
}

#[test]
fn cpi_stacks_sum_to_their_cycles_everywhere() {
    let (dir, elf) = scratch("cpi");
    let e = elf.to_str().unwrap();
    let annotated = json(&dir, "annotate", &elf, &["--top", "3", "--cpi"]);
    for f in annotated["functions"].as_array().unwrap() {
        assert_eq!(stack_sum(&f["cpi"]), u(&f["cycles"]), "{}", f["name"]);
        for l in f["lines"].as_array().unwrap() {
            assert_eq!(stack_sum(&l["cpi"]), u(&l["cycles"]), "{l}");
        }
        for i in f["code"].as_array().unwrap() {
            assert_eq!(stack_sum(&i["cpi"]), u(&i["cycles"]), "{i}");
        }
    }
    let profile = json(&dir, "profile", &elf, &["--top", "3", "--cpi"]);
    for f in profile["functions"].as_array().unwrap() {
        assert_eq!(stack_sum(&f["cpi"]), u(&f["exclusive_cycles"]), "{f}");
    }
    // Without --cpi, no stacks.
    let plain = json(&dir, "profile", &elf, &["--top", "3"]);
    assert!(plain["functions"][0].get("cpi").is_none(), "{plain}");

    let args = [
        "estimate", e, "p.rtrace", "--core", "rocket", "--core", "inorder5", "--format",
    ];
    let csv = stdout(&retrace(&dir, &[&args[..], &["csv", "--cpi"]].concat()));
    let plain: Value =
        serde_json::from_str(&stdout(&retrace(&dir, &[&args[..], &["json"]].concat()))).unwrap();
    let mut lines = csv.lines();
    assert!(lines
        .next()
        .unwrap()
        .starts_with("core,fidelity,cycles,instructions,base,mul,div,"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 2, "{csv}");
    for (row, est) in rows.iter().zip(plain["estimates"].as_array().unwrap()) {
        let parts: u64 = row[4..].iter().map(|v| v.parse::<u64>().unwrap()).sum();
        assert_eq!(row[2].parse::<u64>().unwrap(), parts, "{csv}");
        assert_eq!(parts, u(&est["cycles"]), "{csv}");
    }
    let out = retrace(
        &dir,
        &[
            "estimate", e, "p.rtrace", "--core", "rocket", "--cpi", "--check",
        ],
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("--cpi does not combine with --check"), "{err}");
}
