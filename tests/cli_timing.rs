//! `retrace run --core` and `retrace pp --core` from the command line: the
//! cycle-level report agrees with `compare`'s reference, and bad cores are
//! refused with messages that say what is wrong and what is allowed.

use std::path::PathBuf;
use std::process::{Command, Output};

fn retrace(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_retrace"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("retrace runs")
}

fn prog(name: &str) -> String {
    let p = PathBuf::from("programs/bin").join(name);
    assert!(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(&p).exists(),
        "{} missing; build programs/ first",
        p.display()
    );
    p.display().to_string()
}

/// The JSON object on the last line of stdout.
fn last_json(out: &Output) -> serde_json::Value {
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().last().expect("stdout has a line");
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"))
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn run_core_json_has_the_report_and_matches_compare() {
    let elf = prog("crc32-rv64-O2.elf");
    let out = retrace(&["run", "--core", "rocket", "--json", &elf]);
    let plain = retrace(&["run", "--json", &elf]);
    // The program's exit code and output stay the same with --core.
    assert_eq!(out.status.code(), plain.status.code());
    let j = last_json(&out);
    let p = last_json(&plain);
    for key in [
        "program",
        "exit_code",
        "stop",
        "instructions",
        "wall_seconds",
        "mips",
        "core",
        "cycles",
        "cpi",
        "branches",
        "mispredicts",
        "return_mispredicts",
        "icache_hits",
        "icache_misses",
        "dcache_hits",
        "dcache_misses",
        "functions",
    ] {
        assert!(j.get(key).is_some(), "missing {key} in {j}");
    }
    assert_eq!(j["core"], "rocket");
    assert_eq!(j["instructions"], p["instructions"]);
    assert_eq!(j["exit_code"], p["exit_code"]);
    let cycles = j["cycles"].as_u64().unwrap();
    let insns = j["instructions"].as_u64().unwrap();
    assert!(cycles >= insns, "rocket issues at most one per cycle");
    let cpi = j["cpi"].as_f64().unwrap();
    assert!((cpi - cycles as f64 / insns as f64).abs() < 1e-9);
    // Every fetch goes through the instruction cache.
    let fetches = j["icache_hits"].as_u64().unwrap() + j["icache_misses"].as_u64().unwrap();
    assert_eq!(fetches, insns);

    // Functions: hottest first, inclusive ≥ exclusive, and the exclusive
    // cycles of all functions that ran add up to the total.
    let all = retrace(&[
        "run",
        "--core",
        "rocket",
        "--json",
        "--functions",
        "0",
        &elf,
    ]);
    let funcs = last_json(&all)["functions"].as_array().unwrap().clone();
    assert!(funcs.iter().any(|f| f["name"] == "main"), "{funcs:?}");
    let excl: Vec<u64> = funcs
        .iter()
        .map(|f| f["exclusive"].as_u64().unwrap())
        .collect();
    assert!(excl.windows(2).all(|w| w[0] >= w[1]), "{excl:?}");
    let main = funcs.iter().find(|f| f["name"] == "main").unwrap();
    assert!(main["inclusive"].as_u64() >= main["exclusive"].as_u64());
    assert_eq!(main["calls"], 1);
    let top3 = retrace(&[
        "run",
        "--core",
        "rocket",
        "--json",
        "--functions",
        "3",
        &elf,
    ]);
    assert_eq!(last_json(&top3)["functions"].as_array().unwrap().len(), 3);

    let cmp = retrace(&["compare", &elf, "--core", "rocket", "--json"]);
    assert!(cmp.status.success(), "{}", stderr(&cmp));
    let c = last_json(&cmp);
    assert_eq!(c["reference_cycles"].as_u64(), Some(cycles));
}

#[test]
fn run_core_text_report_goes_to_stderr() {
    let elf = prog("nqueens-rv32-O2.elf");
    let out = retrace(&["run", "--core", "picorv32", "--functions", "0", &elf]);
    let plain = retrace(&["run", &elf]);
    assert_eq!(out.stdout, plain.stdout, "program output unchanged");
    assert_eq!(out.status.code(), plain.status.code());
    let err = stderr(&out);
    for word in [
        "core picorv32",
        "cycles",
        "CPI",
        "branches",
        "function",
        "main",
    ] {
        assert!(err.contains(word), "missing {word:?} in:\n{err}");
    }
    // picorv32 has no caches and no branch prediction (a taken branch just
    // costs more); the report says so instead of printing counts.
    assert!(err.contains("I-cache: none"), "{err}");
    assert!(
        err.contains("no prediction in this core; no return-address stack"),
        "{err}"
    );
    assert!(!err.contains("mispredicted"), "{err}");
}

#[test]
fn unknown_preset_lists_the_known_ones() {
    let out = retrace(&["run", "--core", "boom", &prog("crc32-rv64-O2.elf")]);
    assert_eq!(out.status.code(), Some(125));
    let err = stderr(&out);
    for name in ["boom", "ideal", "picorv32", "inorder5", "rocket"] {
        assert!(err.contains(name), "missing {name} in {err}");
    }
}

#[test]
fn bad_toml_names_file_line_and_field() {
    let dir = std::env::temp_dir().join(format!("retrace-cli-timing-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let elf = prog("crc32-rv64-O2.elf");

    // An unknown key: the file, its line, the key and the allowed keys.
    let unknown = dir.join("unknown.toml");
    std::fs::write(&unknown, "name = \"x\"\nxlen = [64]\n[latency]\nmull = 3\n").unwrap();
    let out = retrace(&["run", "--core", unknown.to_str().unwrap(), &elf]);
    assert_eq!(out.status.code(), Some(125));
    let err = stderr(&out);
    assert!(
        err.contains(&format!("{}:4:", unknown.display())),
        "no file:line in {err}"
    );
    assert!(err.contains("mull") && err.contains("mulh"), "{err}");

    // A value out of range: the field and what is allowed.
    let ways = dir.join("ways.toml");
    std::fs::write(
        &ways,
        "name = \"x\"\nxlen = [64]\n[icache]\nsize = 16384\nways = 3\nline = 64\nmiss_penalty = 20\n",
    )
    .unwrap();
    let out = retrace(&["run", "--core", ways.to_str().unwrap(), &elf]);
    assert_eq!(out.status.code(), Some(125));
    let err = stderr(&out);
    assert!(err.contains(&ways.display().to_string()), "{err}");
    assert!(
        err.contains("icache.ways") && err.contains("power of two"),
        "{err}"
    );

    // A value of the wrong type, on line 2.
    let typ = dir.join("type.toml");
    std::fs::write(&typ, "name = \"x\"\nxlen = \"64\"\n").unwrap();
    let out = retrace(&["run", "--core", typ.to_str().unwrap(), &elf]);
    assert_eq!(out.status.code(), Some(125));
    let err = stderr(&out);
    assert!(err.contains(&format!("{}:2:", typ.display())), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn rv64_program_on_rv32_core_is_refused_naming_both() {
    let elf = prog("crc32-rv64-O2.elf");
    for cmd in [
        vec!["run", "--core", "picorv32", elf.as_str()],
        vec!["pp", elf.as_str(), "--core", "picorv32"],
    ] {
        let out = retrace(&cmd);
        assert_eq!(out.status.code(), Some(125), "{cmd:?}");
        assert!(out.stdout.is_empty(), "nothing ran: {cmd:?}");
        let err = stderr(&out);
        assert!(
            err.contains("picorv32") && err.contains("RV32") && err.contains("RV64"),
            "{err}"
        );
        assert!(err.contains(&elf), "{err}");
    }
}

#[test]
fn pp_core_prints_static_cycles() {
    let elf = prog("crc32-rv32-O2.elf");
    let out = retrace(&["pp", &elf, "--core", "picorv32"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("cycles"), "{text}");
    // picorv32 charges a branch 3 cycles not taken and 5 taken, so every
    // branch-ended PP shows a pair two cycles apart — three where the
    // fall-through is a 32-bit instruction at 2 mod 4, which a taken branch
    // still waits to prefetch (compressed code: `[fetch]`).
    let pairs: Vec<(u64, u64)> = text
        .split_whitespace()
        .filter_map(|w| {
            let (a, b) = w.split_once('/')?;
            Some((a.parse().ok()?, b.parse().ok()?))
        })
        .collect();
    assert!(!pairs.is_empty(), "{text}");
    assert!(
        pairs.iter().all(|&(n, t)| t == n + 2 || t == n + 3),
        "{pairs:?}"
    );
    assert!(pairs.iter().any(|&(n, t)| t == n + 3), "{pairs:?}");

    // JSON and CSV carry the same figures; on `ideal` a PP costs one cycle
    // per instruction whichever way its branch goes.
    let out = retrace(&["pp", &elf, "--core", "ideal", "--format", "json"]);
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["core"], "ideal");
    for pp in j["partial_programs"].as_array().unwrap() {
        assert_eq!(pp["cycles"], pp["instructions"], "{pp}");
        if pp["end"] == "branch" {
            assert_eq!(pp["cycles_taken"], pp["instructions"], "{pp}");
        }
    }
    let out = retrace(&["pp", &elf, "--core", "picorv32", "--format", "csv"]);
    let csv = String::from_utf8_lossy(&out.stdout);
    let header = csv.lines().next().unwrap();
    assert!(header.ends_with(",cycles,cycles_taken"), "{header}");
    let branch_rows = csv.lines().filter(|l| l.contains(",branch,")).count();
    assert_eq!(branch_rows, pairs.len());
}

/// A program built for a floating-point extension the core lacks (its
/// `float`) is refused before anything runs, naming the extension and the
/// flags that build the program without it; a core with the unit, or one
/// whose description does not say, runs it.
#[test]
fn a_core_without_the_programs_float_extension_is_refused() {
    let single = prog("fp/fft-rv32-O2.elf");
    let double = prog("fp/nbody-rv64-O2.elf");
    let out = retrace(&["run", "--core", "picorv32", &single]);
    assert_eq!(out.status.code(), Some(125));
    let err = stderr(&out);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("uses the F (single-precision floating point) extension, which core picorv32 does not have")
            && err.contains("-march=rv32imac -mabi=ilp32,"),
        "{err}"
    );
    // Single precision only: a D program is told to drop D and keep F.
    let out = retrace(&["run", "--core", "rocket", "--set", "float=single", &double]);
    assert_eq!(out.status.code(), Some(125));
    let err = stderr(&out);
    assert!(
        err.contains("uses the D (double-precision floating point) extension")
            && err.contains("-march=rv64imafc -mabi=lp64f,"),
        "{err}"
    );
    for (core, elf) in [("rocket", &double), ("inorder5", &single)] {
        let out = retrace(&["run", "--core", core, elf]);
        assert!(!stderr(&out).contains("error"), "{core}: {}", stderr(&out));
    }
    // A bad value names the allowed ones.
    let out = retrace(&["run", "--core", "rocket", "--set", "float=half", &double]);
    assert_eq!(out.status.code(), Some(125));
    assert!(
        stderr(&out).contains("none") && stderr(&out).contains("double"),
        "{}",
        stderr(&out)
    );
}
