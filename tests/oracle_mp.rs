//! The multi-hart oracle (docs/MULTIPROCESSOR.md): every program in
//! `programs/bin/mp/` — discovered by listing the directory — run by
//! `retrace run --harts N` against its synchronisation ecalls prints
//! byte-identical output and exits with the same code as its atomics-only
//! build under `qemu-system-riscv32/64 -smp N`, for 2, 4 and 8 harts. The
//! programs also promise output that does not depend on the hart count,
//! which is checked against a one-hart run without QEMU.
//!
//! And the command line's side: with `--core`, several harts on cores
//! report a makespan and each hart's busy and wait cycles without changing
//! what the program prints; a deadlock and a bad handle are one line on
//! stderr with exit status 126.
//!
//! One trial per program × hart count × check; without QEMU the QEMU trials
//! are reported ignored with the reason, unless `RETRACE_REQUIRE_TOOLS=1`,
//! where they fail.

mod common;

use common::*;
use retrace_isa::{Op, Xlen};
use retrace_testkit::asm::{bytes, word, A0, ECALL};
use retrace_testkit::elf::{ElfImage, BASE};
use retrace_testkit::programs::{programs_in, scratch_dir, ExampleProgram};
use retrace_testkit::tools::QEMU;
use retrace_testkit::trials::{self, Failed, Trial};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};

/// The hart counts every program is checked with.
const HARTS: [usize; 3] = [2, 4, 8];

/// Inputs small enough that QEMU, whose spinning harts share the host's
/// cores, finishes in seconds even with 8 harts (a pipeline moves every
/// item through every hart).
fn input(prog: &ExampleProgram) -> Vec<&'static str> {
    match prog.base_name() {
        "pipeline" => vec!["400", "5"],
        _ => vec![],
    }
}

/// The atomics-only build of an ecall build: `x-rv32-O2.elf` →
/// `x-rv32-O2-atomic.elf`.
fn atomic_twin(prog: &ExampleProgram) -> PathBuf {
    prog.path
        .with_file_name(format!("{}-atomic.elf", prog.name))
}

/// One program and its one-hart `retrace run`, run once by whichever
/// trial needs it first.
struct Case {
    prog: ExampleProgram,
    one_hart: OnceLock<Outcome>,
}

impl Case {
    fn ours(&self, harts: usize) -> Outcome {
        run_retrace_harts(&self.prog.path, &input(&self.prog), harts)
    }

    fn one_hart(&self) -> &Outcome {
        self.one_hart.get_or_init(|| self.ours(1))
    }
}

/// retrace (ecalls) and QEMU (atomics) print the same and exit the same.
fn matches_qemu(case: &Case, harts: usize) -> Result<(), Failed> {
    let file = case.prog.file_name();
    let twin = atomic_twin(&case.prog);
    if !twin.exists() {
        return Err(format!("{file}: no atomics build {}", twin.display()).into());
    }
    let ours = case.ours(harts);
    let theirs = run_qemu_smp(&twin, &input(&case.prog), harts);
    if theirs.timed_out || theirs.code.is_none() {
        return Err(format!(
            "{file} on {harts} harts: QEMU did not finish: {}",
            theirs.describe()
        )
        .into());
    }
    if ours != theirs {
        return Err(format!(
            "{file} on {harts} harts:\n  retrace: {}\n  QEMU:    {}",
            ours.describe(),
            theirs.describe()
        )
        .into());
    }
    Ok(())
}

/// With N harts the program ends as with one: same last line, same exit
/// code — and it did exit, with the program's code rather than one of
/// retrace's (a deadlock or a bad call would be 126).
fn independent_of_hart_count(case: &Case, harts: usize) -> Result<(), Failed> {
    let file = case.prog.file_name();
    let one = case.one_hart();
    let many = case.ours(harts);
    let mut problems = Vec::new();
    if !(1..=64).contains(&one.code.unwrap_or(0)) {
        problems.push(format!(
            "{file} on 1 hart did not end well: {}",
            one.describe()
        ));
    }
    if many.code != one.code || many.last_line() != one.last_line() {
        problems.push(format!(
            "{file}: on {harts} harts {}, on 1 hart {}",
            many.describe(),
            one.describe()
        ));
    }
    // The first line names the hart count the program saw.
    let first = String::from_utf8_lossy(&many.stdout)
        .lines()
        .next()
        .unwrap_or("")
        .to_string();
    if !first.contains(&format!("{harts} harts")) {
        problems.push(format!(
            "{file}: first line {first:?} does not say {harts} harts"
        ));
    }
    trials::all_ok(problems)
}

/// A hand-assembled RV64 program whose harts all receive from one empty
/// channel (`deadlock`), or send to a handle with no object behind it.
fn api_error_program(dir: &Path, deadlock: bool) -> PathBuf {
    let w = |op, rd, rs1, imm| word(Xlen::Rv64, op, rd, rs1, 0, imm);
    const A7: u8 = 17;
    let objects = 0x100;
    let call = if deadlock { 3 } else { 2 };
    let handle = if deadlock { objects } else { objects + 16 };
    let mut image = bytes(&[
        w(Op::Auipc, A0, 0, 0),
        w(Op::Addi, A0, A0, handle),
        w(Op::Lui, A7, 0, 0x5359_0000),
        w(Op::Addi, A7, A7, call),
        ECALL,
    ]);
    image.resize(objects as usize, 0);
    for v in [retrace_sim::sync::MAGIC, 1, 1, 0] {
        image.extend_from_slice(&v.to_le_bytes());
    }
    let path = dir.join(if deadlock {
        "deadlock.elf"
    } else {
        "badhandle.elf"
    });
    std::fs::write(&path, ElfImage::riscv64().build(&image)).unwrap();
    path
}

/// `retrace run --harts 3` on an API error: one line, naming what went
/// wrong, status 126.
fn api_error_is_one_line(dir: &Path, deadlock: bool) -> Result<(), Failed> {
    let elf = api_error_program(dir, deadlock);
    let out = run_with_timeout(
        {
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_retrace"));
            cmd.args(["run", "--harts", "3"]).arg(&elf);
            cmd
        },
        RUN_TIMEOUT,
    );
    let lines: Vec<&str> = out.stderr.lines().collect();
    let want = if deadlock {
        format!(
            "deadlock: hart 0 receives from empty channel {0:#x}, hart 1 receives from empty \
             channel {0:#x}, hart 2 receives from empty channel {0:#x}",
            BASE + 0x100
        )
    } else {
        format!(
            "bad handle {:#x} for send: no synchronisation object there",
            BASE + 0x110
        )
    };
    if out.code != Some(126) || lines.len() != 1 || !lines[0].contains(&want) {
        return Err(format!(
            "expected status 126 and one line with {want:?}, got {}",
            out.describe()
        )
        .into());
    }
    Ok(())
}

/// `retrace run --harts 4 --core inorder5 --format json`: the program's
/// own output and exit code as without a core, and a hart table whose
/// clocks are busy + wait, the latest being the makespan.
fn timed_on_cores(case: &Case) -> Result<(), Failed> {
    let file = case.prog.file_name();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_retrace"));
    cmd.args([
        "run", "--harts", "4", "--core", "inorder5", "--format", "json",
    ])
    .arg(&case.prog.path)
    .arg("--")
    .args(input(&case.prog));
    let out = run_with_timeout(cmd, RUN_TIMEOUT);
    let plain = case.ours(4);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (program_output, json) = text.trim_end().rsplit_once('\n').unwrap_or(("", &text));
    if out.code != plain.code || program_output.as_bytes() != plain.stdout.trim_ascii_end() {
        return Err(format!(
            "{file}: with cores {}, without {}",
            out.describe(),
            plain.describe()
        )
        .into());
    }
    let v: serde_json::Value =
        serde_json::from_str(json).map_err(|e| format!("{file}: {e}: {json}"))?;
    let harts = v["harts"]
        .as_array()
        .ok_or(format!("{file}: no harts in {json}"))?;
    let n = |h: &serde_json::Value, k: &str| h[k].as_u64().unwrap_or(u64::MAX);
    let mut problems = Vec::new();
    if harts.len() != 4 {
        problems.push(format!("{file}: {} harts reported", harts.len()));
    }
    for h in harts {
        if n(h, "busy") + n(h, "wait") != n(h, "clock") {
            problems.push(format!("{file}: clock is not busy + wait: {h}"));
        }
    }
    let latest = harts.iter().map(|h| n(h, "clock")).max();
    if latest != v["makespan"].as_u64() {
        problems.push(format!(
            "{file}: makespan {} is not the latest clock {latest:?}",
            v["makespan"]
        ));
    }
    trials::all_ok(problems)
}

fn main() {
    let dir = root().join("programs/bin/mp");
    let cases: Vec<Arc<Case>> = programs_in(&dir)
        .into_iter()
        .filter(|p| !p.name.ends_with("-atomic"))
        .map(|prog| {
            Arc::new(Case {
                prog,
                one_hart: OnceLock::new(),
            })
        })
        .collect();
    assert!(
        cases.len() >= 10,
        "only {} multi-hart programs in {}",
        cases.len(),
        dir.display()
    );
    let mut list = Vec::new();
    for case in &cases {
        for harts in HARTS {
            let c = case.clone();
            list.push(trials::needing(
                format!("oracle_mp::{}::{harts}-harts::qemu", case.prog.name),
                QEMU,
                move || matches_qemu(&c, harts),
            ));
            let c = case.clone();
            list.push(Trial::test(
                format!("oracle_mp::{}::{harts}-harts::as-one-hart", case.prog.name),
                move || independent_of_hart_count(&c, harts),
            ));
        }
    }
    for case in &cases {
        let c = case.clone();
        list.push(Trial::test(
            format!("oracle_mp::{}::4-harts::on-cores", case.prog.name),
            move || timed_on_cores(&c),
        ));
    }
    let scratch = scratch_dir("oracle-mp");
    for deadlock in [true, false] {
        let dir = scratch.clone();
        let name = if deadlock { "deadlock" } else { "bad-handle" };
        list.push(Trial::test(
            format!("oracle_mp::cli::{name}-is-one-line"),
            move || api_error_is_one_line(&dir, deadlock),
        ));
    }
    trials::run(list, || {
        let _ = std::fs::remove_dir_all(&scratch);
    })
}
