//! The F and D extensions against QEMU: every floating-point example in
//! `programs/bin/fp/` (both XLENs, discovered by listing the directory)
//! prints byte-identical output and exits with the same code under
//! `retrace run` as under QEMU. `fpedge`, the table of single instructions
//! on edge values (NaNs, infinities, subnormals, signed zeros, overflow,
//! underflow, every rounding mode, and the cases that must trap), is
//! compared line by line, so a failure names the instruction, operands and
//! rounding mode that differ.
//!
//! Each program is also recorded and replayed (`retrace compare`): the
//! replay of its branch history must give the cycle-level engine's cycles
//! exactly, as for the integer programs.
//!
//! One trial per program and check (`fp_qemu::fft-rv32-O2::qemu`,
//! `…::replay`). Without QEMU the QEMU trials are reported ignored with the
//! reason, unless `RETRACE_REQUIRE_TOOLS=1`, where they fail.

mod common;

use common::*;
use retrace_testkit::programs::scratch_dir;
use retrace_testkit::programs::{programs_in, ExampleProgram};
use retrace_testkit::tools::{CROSS_GCC, QEMU};
use retrace_testkit::trials::{self, Failed, Trial};
use std::process::Command;

/// How many differing lines a failure shows.
const SHOWN: usize = 12;

/// retrace and QEMU print the same, line by line, and exit the same.
fn matches_qemu(prog: &ExampleProgram) -> Result<(), Failed> {
    let ours = run_retrace(&prog.path, &[]);
    let theirs = run_qemu(&prog.path, &[]);
    let file = prog.file_name();
    if theirs.timed_out || theirs.code.is_none() {
        return Err(format!("{file}: QEMU did not finish: {}", theirs.describe()).into());
    }
    if ours == theirs {
        return Ok(());
    }
    let (a, b) = (
        String::from_utf8_lossy(&ours.stdout),
        String::from_utf8_lossy(&theirs.stdout),
    );
    let (a, b): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    let differing: Vec<String> = a
        .iter()
        .zip(&b)
        .enumerate()
        .filter(|(_, (x, y))| x != y)
        .map(|(n, (x, y))| format!("  line {}: retrace `{x}`, QEMU `{y}`", n + 1))
        .collect();
    Err(format!(
        "{file}: {} of {} lines differ ({} lines from retrace), exit codes {:?} and {:?}:\n{}\n  retrace: {}\n  QEMU:    {}",
        differing.len(),
        b.len(),
        a.len(),
        ours.code,
        theirs.code,
        differing[..differing.len().min(SHOWN)].join("\n"),
        ours.describe(),
        theirs.describe()
    )
    .into())
}

/// Recording and replaying the program gives the cycle-level engine's
/// cycle count exactly (on rocket without its data cache, at control
/// fidelity: the data-cache term is a measured rate, and its misses can
/// overlap the FPU's long latencies, so with it the replay is close, not
/// exact).
fn replays_exactly(prog: &ExampleProgram) -> Result<(), Failed> {
    let path = prog.path.to_string_lossy();
    let out = retrace(&[
        "compare",
        "--core",
        "rocket",
        "--set",
        "dcache=none",
        "--format",
        "json",
        &path,
    ]);
    let text = succeeded(&out);
    let field = |key: &str| {
        let at = text.find(&format!("\"{key}\":")).map(|i| i + key.len() + 3);
        at.map(|i| {
            text[i..]
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '-')
                .collect::<String>()
        })
    };
    match (field("reference_cycles"), field("error_cycles")) {
        (Some(cycles), Some(error)) if error == "0" && cycles != "0" => Ok(()),
        _ => Err(format!("{}: the replay differs: {text}", prog.file_name()).into()),
    }
}

/// `fpedge` built afresh at -O0 (its operands now pass through memory, by
/// `flw`/`fsd` and the compressed loads and stores) agrees with QEMU too.
fn fresh_build_at_o0(test: &str) -> Result<(), Failed> {
    if !QEMU.available(test) {
        return Ok(());
    }
    let dir = scratch_dir("fp-o0");
    let src = root().join("programs/src/fp/fpedge.c");
    let mut failures = Vec::new();
    for (arch, abi, extra) in [
        ("rv32imafc", "ilp32f", None),
        ("rv64gc", "lp64d", Some("-mcmodel=medany")),
    ] {
        let elf = dir.join(format!("fpedge-{arch}-O0.elf"));
        let mut cc = Command::new("riscv64-unknown-elf-gcc");
        cc.arg(format!("-march={arch}"))
            .arg(format!("-mabi={abi}"))
            .args(extra)
            .args([
                "--specs=picolibc.specs",
                "--oslib=semihost",
                "--crt0=semihost",
            ])
            .args(["-O0", "-std=c11", "-Wl,--defsym=__flash=0x80000000"])
            .args([
                "-Wl,--defsym=__flash_size=0x200000",
                "-Wl,--defsym=__ram=0x80200000",
            ])
            .args(["-Wl,--defsym=__ram_size=0x200000"])
            .arg("-I")
            .arg(root().join("programs/src"))
            .arg("-o")
            .arg(&elf)
            .arg(&src)
            .arg("-lm");
        let out = cc.output().expect("the cross compiler starts");
        if !out.status.success() {
            failures.push(format!(
                "{arch}: does not build: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
            continue;
        }
        let prog = programs_in(&dir)
            .into_iter()
            .find(|p| p.path == elf)
            .expect("the ELF just built");
        if let Err(e) = matches_qemu(&prog) {
            failures.push(e.message().unwrap_or_default().to_string());
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    trials::all_ok(failures)
}

/// A program that stops on an FP instruction says why, in one line: FS
/// left Off by start-up code that does not enable the FP unit, or an
/// extension retrace does not simulate, with the flags to build without it.
fn stops_name_the_reason() -> Result<(), Failed> {
    use retrace_testkit::asm::bytes;
    use retrace_testkit::elf::ElfImage;
    let dir = scratch_dir("fp-stops");
    let mut failures = Vec::new();
    let cases: [(&str, Vec<u32>, &[&str]); 2] = [
        // fadd.s ft0, ft1, ft2 at once: FS is Off at reset.
        (
            "fs-off",
            vec![0x0020_f053],
            &["illegal instruction 0x0020f053", "fadd.s", "mstatus.FS Off"],
        ),
        // li t0, 0x2000; csrs mstatus, t0; fadd.q ft0, ft1, ft2.
        (
            "quad",
            vec![0x0000_22b7, 0x3002_a073, 0x0620_f053],
            &["Q extension", "-march=rv64gc"],
        ),
    ];
    for (name, code, wanted) in cases {
        let elf = dir.join(format!("{name}.elf"));
        std::fs::write(&elf, ElfImage::riscv64().build(&bytes(&code))).expect("scratch ELF");
        let out = run_retrace(&elf, &[]);
        let lines: Vec<&str> = out.stderr.lines().collect();
        if out.code != Some(126) || lines.len() != 1 || !wanted.iter().all(|w| lines[0].contains(w))
        {
            failures.push(format!(
                "{name}: want one line with {wanted:?}: {}",
                out.describe()
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    trials::all_ok(failures)
}

fn main() {
    let progs = programs_in(&root().join("programs/bin/fp"));
    let mut list = Vec::new();
    for prog in &progs {
        let p = prog.clone();
        list.push(trials::needing(
            format!("fp_qemu::{}::qemu", prog.name),
            QEMU,
            move || matches_qemu(&p),
        ));
        let p = prog.clone();
        list.push(Trial::test(
            format!("fp_qemu::{}::replay", prog.name),
            move || replays_exactly(&p),
        ));
    }
    list.push(trials::needing("fp_qemu::fpedge-O0", CROSS_GCC, || {
        fresh_build_at_o0("fp_qemu::fpedge-O0")
    }));
    list.push(Trial::test(
        "fp_qemu::stops-name-the-reason",
        stops_name_the_reason,
    ));
    // Both widths of every program: a build missing for one XLEN would
    // leave that extension untested.
    let progs2 = progs.clone();
    list.push(Trial::test(
        "fp_qemu::every-program-on-both-xlens",
        move || {
            let missing: Vec<String> = progs2
                .iter()
                .filter(|p| {
                    let other = if p.xlen == 32 { "rv64" } else { "rv32" };
                    let twin = p.name.replace(&format!("rv{}", p.xlen), other);
                    !progs2.iter().any(|q| q.name == twin)
                })
                .map(|p| format!("{} has no build for the other XLEN", p.name))
                .collect();
            trials::all_ok(missing)
        },
    ));
    trials::run(list, || {});
}
