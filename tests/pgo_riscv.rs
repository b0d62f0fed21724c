//! Profile-guided optimisation of a RISC-V program from a retrace
//! recording: `retrace profile --sample-profile` writes the run as an LLVM
//! sample profile, which `clang-14 -fprofile-sample-use` reads without a
//! complaint, and the build it optimises runs fewer cycles on a core —
//! estimated by retrace, on a core nobody has to own.
//!
//! Needs clang-14 (the compiler) and the RISC-V GNU toolchain with
//! picolibc (the C library and the linker); without them the test is
//! skipped with the reason, unless `RETRACE_REQUIRE_TOOLS=1`, where it
//! fails.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const PICOLIBC: &str = "/usr/lib/picolibc/riscv64-unknown-elf/include";

fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Whether clang-14 and the RISC-V toolchain are here (or fail when they
/// must be).
fn tools() -> bool {
    let missing: Vec<&str> = ["clang-14", "riscv64-unknown-elf-gcc"]
        .into_iter()
        .filter(|t| !have(t))
        .collect();
    if missing.is_empty() && Path::new(PICOLIBC).is_dir() {
        return true;
    }
    assert!(
        std::env::var_os("RETRACE_REQUIRE_TOOLS").is_none_or(|v| v != "1"),
        "{missing:?} (and picolibc's headers) are required (RETRACE_REQUIRE_TOOLS=1)"
    );
    eprintln!("skipping: {missing:?} or picolibc's headers are not installed");
    false
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn retrace(dir: &Path, args: &[&str]) -> Output {
    run(Command::new(env!("CARGO_BIN_EXE_retrace"))
        .args(args)
        .current_dir(dir))
}

/// Build `programs/src/NAME.c` for RV32 with clang-14 at -O2 (and
/// `extra`), linked with picolibc as `programs/build.sh` links; returns
/// clang's diagnostics.
fn build(dir: &Path, name: &str, out: &str, extra: &[&str]) -> String {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("programs/src");
    let object = dir.join(format!("{out}.o"));
    let cc = run(Command::new("clang-14")
        .args([
            "--target=riscv32-unknown-elf",
            "-march=rv32imac",
            "-mabi=ilp32",
            "-O2",
            "-g",
            "-isystem",
            PICOLIBC,
        ])
        .arg("-I")
        .arg(&src)
        .args(extra)
        .arg("-c")
        .arg(src.join(format!("{name}.c")))
        .arg("-o")
        .arg(&object)
        .current_dir(dir));
    run(Command::new("riscv64-unknown-elf-gcc")
        .args([
            "-march=rv32imac",
            "-mabi=ilp32",
            "--specs=picolibc.specs",
            "--oslib=semihost",
            "--crt0=semihost",
            "-Wl,--defsym=__flash=0x80000000",
            "-Wl,--defsym=__flash_size=0x200000",
            "-Wl,--defsym=__ram=0x80200000",
            "-Wl,--defsym=__ram_size=0x200000",
        ])
        .arg(&object)
        .arg("-o")
        .arg(dir.join(out)));
    String::from_utf8_lossy(&cc.stderr).into_owned()
}

/// Cycles of `elf` on `core`, estimated from a recording of it.
fn cycles(dir: &Path, elf: &str, core: &str) -> u64 {
    let trace = format!("{elf}.rtrace");
    retrace(dir, &["record", elf, "-o", &trace]);
    let out = retrace(
        dir,
        &["estimate", elf, &trace, "--core", core, "--format", "json"],
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["estimates"][0]["cycles"]
        .as_u64()
        .unwrap_or_else(|| panic!("{v}"))
}

fn scratch() -> PathBuf {
    let d = std::env::temp_dir().join(format!("retrace-pgo-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn a_recording_guides_clang_and_the_optimised_build_runs_faster() {
    if !tools() {
        return;
    }
    let dir = scratch();
    build(&dir, "exprparse", "plain.elf", &[]);
    retrace(&dir, &["record", "plain.elf", "-o", "plain.rtrace"]);
    retrace(
        &dir,
        &[
            "profile",
            "plain.elf",
            "plain.rtrace",
            "--sample-profile",
            "p.prof",
        ],
    );
    let text = std::fs::read_to_string(dir.join("p.prof")).unwrap();
    // The text format: `name:total:head`, then ` offset: count [callee:count]…`
    // lines whose counts add up to the total.
    let mut functions = 0;
    let mut lines = text.lines().peekable();
    while let Some(header) = lines.next() {
        let parts: Vec<&str> = header.rsplitn(3, ':').collect();
        assert_eq!(parts.len(), 3, "{header}");
        let total: u64 = parts[1].parse().unwrap();
        let _head: u64 = parts[0].parse().unwrap();
        let mut sum = 0;
        while let Some(body) = lines.next_if(|l| l.starts_with(' ')) {
            let mut words = body.split_whitespace();
            let offset = words.next().unwrap();
            assert!(
                offset.ends_with(':') && offset[..offset.len() - 1].parse::<u32>().is_ok(),
                "{body}"
            );
            sum += words.next().unwrap().parse::<u64>().unwrap();
            for call in words {
                let (callee, n) = call.rsplit_once(':').unwrap();
                assert!(!callee.is_empty() && n.parse::<u64>().is_ok(), "{body}");
            }
        }
        assert_eq!(sum, total, "{header}");
        functions += 1;
    }
    assert!(
        functions >= 5 && text.contains("\nmain:") || text.starts_with("main:"),
        "{text}"
    );

    let diagnostics = build(
        &dir,
        "exprparse",
        "pgo.elf",
        &["-fprofile-sample-use=p.prof", "-Wall"],
    );
    assert!(
        diagnostics.trim().is_empty(),
        "clang complained: {diagnostics}"
    );
    let (before, after) = (
        cycles(&dir, "plain.elf", "rocket"),
        cycles(&dir, "pgo.elf", "rocket"),
    );
    println!("exprparse on rocket: {before} cycles plain, {after} with the sample profile");
    assert!(after < before, "{after} ≥ {before}");

    // A program without DWARF cannot be mapped to source lines.
    run(Command::new("riscv64-unknown-elf-strip")
        .args(["--strip-debug", "-o", "stripped.elf", "plain.elf"])
        .current_dir(&dir));
    let out = Command::new(env!("CARGO_BIN_EXE_retrace"))
        .args([
            "profile",
            "stripped.elf",
            "plain.rtrace",
            "--sample-profile",
            "s.prof",
        ])
        .current_dir(&dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{err}");
    assert!(
        err.contains("build it with -g") && err.trim().lines().count() == 1,
        "{err}"
    );
}
