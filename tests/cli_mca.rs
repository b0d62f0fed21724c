//! `retrace mca`: a core's timing of a program's hottest blocks against
//! llvm-mca's. The comparisons need `llvm-mca-14` (Debian: llvm-14); they
//! skip with the reason when it is missing, and fail under
//! `RETRACE_REQUIRE_TOOLS=1`. The bad-input tests need nothing.

use retrace_isa::{Op, Xlen};
use retrace_testkit::asm::{semihost, Labelled};
use retrace_testkit::programs::program_dir;
use retrace_testkit::tools::Tools;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// llvm-mca as LLVM 14 ships it.
const LLVM_MCA: Tools = Tools {
    bins: &["llvm-mca-14"],
    install: "Debian: apt-get install llvm-14",
};

fn dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("retrace-cli-mca-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn mca(elf: &Path, more: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_retrace"))
        .arg("mca")
        .arg(elf)
        .args(more)
        .env_remove("RETRACE_LLVM_MCA")
        .output()
        .unwrap()
}

fn json(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A loop of 1000 iterations, `lw a1,0(a0); add a2,a2,a1; addi a3,a3,-1;
/// bnez a3,loop`, then exit 0, written as `name` (one per test: the tests
/// run in parallel).
fn load_use_loop(name: &str) -> PathBuf {
    let mut p = Labelled::new(Xlen::Rv64);
    p.li(13, 1000)
        .la(10, "data")
        .label("loop")
        .i(Op::Lw, 11, 10, 0, 0)
        .i(Op::Add, 12, 12, 11, 0)
        .i(Op::Addi, 13, 13, 0, -1)
        .b(Op::Bne, 13, 0, "loop");
    // SYS_EXIT_EXTENDED (0x20) with ADP_Stopped_ApplicationExit, code 0.
    p.i(Op::Auipc, 2, 0, 0, 0x1000)
        .li(11, 0x20026)
        .i(Op::Sd, 0, 2, 11, 0)
        .i(Op::Sd, 0, 2, 0, 8)
        .i(Op::Addi, 11, 2, 0, 0);
    for w in semihost(0x20) {
        p.raw(w);
    }
    p.label("data").raw(0x1234_5678);
    let path = dir().join(name);
    std::fs::write(&path, p.build()).unwrap();
    path
}

#[test]
fn a_load_use_loop_costs_what_the_rule_says_on_both_sides() {
    if !LLVM_MCA.available("a_load_use_loop_costs_what_the_rule_says_on_both_sides") {
        return;
    }
    let elf = load_use_loop("a.elf");
    let j = json(&mca(&elf, &["--core", "rocket", "--format", "json"]));
    assert_eq!(j["mcpu"], "rocket-rv64");
    assert_eq!(j["mtriple"], "riscv64");
    assert_eq!(j["stop"], "exit");
    assert_eq!(j["iterations"], 100);
    let top = &j["blocks"][0];
    assert_eq!(top["instructions"], 4, "{top}");
    assert_eq!(top["ends"], "branch");
    assert_eq!(top["executions"], 999);
    assert_eq!(
        top["asm"],
        serde_json::json!([
            "lw a1,0(a0)",
            "add a2,a2,a1",
            "add a3,a3,-1",
            "bnez a3,.Lblock"
        ])
    );
    // By hand on rocket: lw issues at 0, its value is ready at 2 (load_word
    // = 2), so add issues at 2, addi at 3, bnez (reading a3, ready at 4) at
    // 4, and the next lw at 5; nothing is in flight after the last bnez.
    // 100 iterations take 500 cycles: 5 an iteration.
    assert_eq!(top["retrace_cycles"], 5.0, "{top}");
    let m = top["mca_cycles"].as_f64().unwrap();
    assert!(m > 0.0, "{top}");
    assert!(top["mca_rthroughput"].as_f64().unwrap() > 0.0, "{top}");
    let d = top["difference_percent"].as_f64().unwrap();
    assert!((d - (5.0 - m) / m * 100.0).abs() < 1e-9, "{top}");
    assert!(!top["flagged"].as_bool().unwrap(), "{top}");
}

#[test]
fn bundled_programs_compare_their_hottest_blocks() {
    if !LLVM_MCA.available("bundled_programs_compare_their_hottest_blocks") {
        return;
    }
    for (name, mcpu, mattr) in [
        ("crc32-rv64-O2.elf", "rocket-rv64", "+m,+a,+c"),
        ("matmul-rv32-O2.elf", "rocket-rv32", "+m,+a,+c"),
    ] {
        let elf = program_dir().join(name);
        let j = json(&mca(
            &elf,
            &["--core", "rocket", "--top", "5", "--format", "json"],
        ));
        assert_eq!(j["mcpu"], mcpu, "{name}");
        assert_eq!(j["mattr"], mattr, "{name}");
        let blocks = j["blocks"].as_array().unwrap();
        assert_eq!(blocks.len(), 5, "{name}");
        assert_eq!(j["compared"], 5, "{name}");
        let mut last = f64::INFINITY;
        for b in blocks {
            // Hottest first, by instructions retired.
            let retired = b["executions"].as_f64().unwrap() * b["instructions"].as_f64().unwrap();
            assert!(retired <= last, "{name}: {b}");
            last = retired;
            assert!(b["mca_cycles"].as_f64().unwrap() > 0.0, "{name}: {b}");
            assert!(b["retrace_cycles"].as_f64().unwrap() > 0.0, "{name}: {b}");
            assert_eq!(
                b["asm"].as_array().unwrap().len(),
                b["instructions"].as_u64().unwrap() as usize
            );
        }
    }
    // crc32's hottest block, the bitwise CRC's inner loop, is eight
    // one-cycle ALU instructions, none waiting for another longer than a
    // cycle: 8 cycles an iteration by hand.
    let j = json(&mca(
        &program_dir().join("crc32-rv64-O2.elf"),
        &["--core", "rocket", "--top", "1", "--format", "json"],
    ));
    let b = &j["blocks"][0];
    assert_eq!(b["instructions"], 8, "{b}");
    assert_eq!(b["retrace_cycles"], 8.0, "{b}");
    // The text: a header naming both sides, a row per block.
    let out = mca(
        &program_dir().join("crc32-rv64-O2.elf"),
        &["--core", "rocket", "--top", "3", "--asm"],
    );
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines().next().unwrap().contains("-mcpu=rocket-rv64"),
        "{text}"
    );
    assert!(
        text.contains("of 3 blocks timed by llvm-mca are within 10%"),
        "{text}"
    );
    assert!(text.contains("bnez a1,.Lblock"), "{text}");
}

#[test]
fn flagged_blocks_are_explained_by_llvm_mca_conventions() {
    if !LLVM_MCA.available("flagged_blocks_are_explained_by_llvm_mca_conventions") {
        return;
    }
    // dhry's string loops: a byte load, then one-cycle instructions that
    // retrace issues past it and llvm-mca holds back to write back in
    // order (docs/TIMING.md, cause 1 on Rocket).
    let j = json(&mca(
        &program_dir().join("dhry-rv64-O2.elf"),
        &["--core", "rocket", "--format", "json"],
    ));
    let mut flagged = 0;
    for b in j["blocks"].as_array().unwrap() {
        let why = &b["why"];
        assert!(why.is_object(), "every timed block is re-timed: {b}");
        if !b["flagged"].as_bool().unwrap() {
            continue;
        }
        flagged += 1;
        assert_eq!(why["explained"], true, "{b}");
        assert_eq!(
            why["causes"],
            serde_json::json!(["in-order-writeback"]),
            "{b}"
        );
        // The steps land on llvm-mca's figure: the schedule, then its count.
        let m = b["mca_cycles"].as_f64().unwrap();
        assert!(
            (why["with_mca_counting"].as_f64().unwrap() - m).abs() < 0.005,
            "{b}"
        );
    }
    assert!(flagged >= 2, "dhry's string loops are flagged: {j}");
    // exprparse's digit loop: a divuw whose result the block does not read.
    // LLVM's divider takes one divide at a time (reciprocal throughput
    // 34), the preset's issues past it: LLVM's table explains it.
    let out = mca(
        &program_dir().join("exprparse-rv64-O2.elf"),
        &["--core", "rocket", "--format", "json"],
    );
    let j = json(&out);
    let divide = j["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| {
            b["asm"]
                .as_array()
                .unwrap()
                .iter()
                .any(|l| l.as_str().unwrap().starts_with("divuw"))
                && b["flagged"] == true
        })
        .expect("exprparse's divide loop is flagged");
    let why = &divide["why"];
    assert_eq!(why["explained"], true, "{divide}");
    assert_eq!(why["causes"][0], "llvm-table", "{divide}");
    let row = why["table"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["class"] == "div_w")
        .expect("the divuw's figures differ");
    assert!(row["llvm_rthroughput"].as_f64().unwrap() >= 33.0, "{row}");
    // The text says the same in a line per flagged block.
    let out = mca(
        &program_dir().join("exprparse-rv64-O2.elf"),
        &["--core", "rocket"],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Why the flagged blocks differ"), "{text}");
    assert!(text.contains("LLVM's table (divuw"), "{text}");
    assert!(text.contains("(explained)"), "{text}");
}

#[test]
fn an_unknown_mcpu_is_one_line() {
    if !LLVM_MCA.available("an_unknown_mcpu_is_one_line") {
        return;
    }
    let out = mca(
        &load_use_loop("b.elf"),
        &["--core", "rocket", "--mcpu", "nosuch"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("-mcpu=nosuch"), "{err}");
}

fn one_error_line(out: &Output, needles: &[&str]) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{err}");
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("retrace: error: "), "{err}");
    for n in needles {
        assert!(err.contains(n), "{n}: {err}");
    }
}

#[test]
fn a_missing_llvm_mca_says_how_to_get_it() {
    let elf = load_use_loop("c.elf");
    let out = mca(
        &elf,
        &["--core", "rocket", "--llvm-mca", "/nonexistent/llvm-mca"],
    );
    one_error_line(&out, &["/nonexistent/llvm-mca", "llvm-14", "--llvm-mca"]);
    // The environment names it too.
    let out = Command::new(env!("CARGO_BIN_EXE_retrace"))
        .arg("mca")
        .arg(&elf)
        .args(["--core", "rocket"])
        .env("RETRACE_LLVM_MCA", "/nonexistent/mca-from-env")
        .output()
        .unwrap();
    one_error_line(&out, &["/nonexistent/mca-from-env"]);
}

#[test]
fn a_core_without_an_llvm_model_needs_mcpu() {
    let elf = load_use_loop("d.elf");
    one_error_line(&mca(&elf, &["--core", "inorder5"]), &["--mcpu"]);
    one_error_line(&mca(&elf, &["--core", "nosuch"]), &["nosuch"]);
    let out = mca(&elf, &["--core", "rocket", "--tolerance=-1"]);
    one_error_line(&out, &["--tolerance"]);
}

#[cfg(unix)]
#[test]
fn a_line_llvm_mca_rejects_is_named() {
    use std::os::unix::fs::PermissionsExt;
    // A stand-in that complains about the second instruction as llvm-mca
    // 14 does, and still exits 0 (as llvm-mca does after an assembler
    // error).
    let fake = dir().join("fake-llvm-mca");
    std::fs::write(
        &fake,
        "#!/bin/sh\nwhile read -r l; do :; done\necho '<stdin>:3:1: error: invalid operand for instruction' >&2\necho 'Iterations: 100'\necho 'Instructions: 100'\necho 'Total Cycles: 101'\necho 'Block RThroughput: 1.0'\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = mca(
        &load_use_loop("e.elf"),
        &["--core", "rocket", "--llvm-mca", fake.to_str().unwrap()],
    );
    one_error_line(&out, &["rejects `add a2,a2,a1`", "invalid operand"]);
}
