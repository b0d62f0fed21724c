//! `retrace record` interrupted by a real signal, at moments from before
//! its handlers exist to deep into the run: the previous trace at the path
//! is never lost, no file of part of a run is left behind (neither at the
//! path nor as a temporary file), and the exit status says which signal
//! stopped it.
#![cfg(unix)]

use retrace_isa::{Op, Xlen};
use retrace_testkit::asm::{bytes, word, T0};
use retrace_testkit::elf::ElfImage;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// A directory of its own, removed when dropped.
struct Dir(PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// A program that never ends: a counting loop with a branch per turn, so
/// the recording has history to write all along.
fn endless_program() -> Vec<u8> {
    let i = |op, rd, rs1, rs2, imm| word(Xlen::Rv64, op, rd, rs1, rs2, imm);
    let code = [
        i(Op::Addi, T0, T0, 0, 1),
        i(Op::Bne, 0, T0, 0, -4), // back to the addi while t0 != 0
    ];
    ElfImage::riscv64().build(&bytes(&code))
}

/// Record `elf` to `trace`, send `signal` after `delay`, and return the
/// exit status (its code, or the signal that ended the process).
fn interrupted_record(elf: &Path, trace: &Path, signal: &str, delay: Duration) -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_retrace"))
        .args([
            "record",
            elf.to_str().unwrap(),
            "-o",
            trace.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(delay);
    let sent = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success(), "kill {signal} failed");
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            use std::os::unix::process::ExitStatusExt;
            let mut err = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
            return match (status.code(), status.signal()) {
                (Some(c), _) => format!("exit {c}: {}", err.trim()),
                (None, Some(s)) => format!("signal {s}"),
                _ => unreachable!(),
            };
        }
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("record did not stop within 20 s of {signal} after {delay:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn interrupted_record_keeps_the_previous_trace_and_leaves_nothing() {
    let dir = Dir(std::env::temp_dir().join(format!("retrace-signals-{}", std::process::id())));
    let _ = std::fs::remove_dir_all(&dir.0);
    std::fs::create_dir(&dir.0).unwrap();
    let elf = dir.0.join("endless.elf");
    std::fs::write(&elf, endless_program()).unwrap();
    let trace = dir.0.join("kept.rtrace");
    let previous = b"the previous trace (any bytes: it must survive untouched)".to_vec();

    let mut stopped_by_retrace = 0;
    for (signal, status, millis) in [
        ("-INT", 130, 0),
        ("-INT", 130, 2),
        ("-INT", 130, 20),
        ("-INT", 130, 150),
        ("-INT", 130, 600),
        ("-TERM", 143, 0),
        ("-TERM", 143, 300),
    ] {
        std::fs::write(&trace, &previous).unwrap();
        let got = interrupted_record(&elf, &trace, signal, Duration::from_millis(millis));
        // Before retrace installs its handlers the signal's default action
        // ends the process; after, retrace stops the run and says so.
        if got.starts_with(&format!("exit {status}:")) {
            stopped_by_retrace += 1;
            assert!(got.contains("no trace written"), "{got}");
        } else {
            assert!(
                got.starts_with("signal "),
                "{signal} after {millis} ms: {got}"
            );
        }
        assert_eq!(
            std::fs::read(&trace).unwrap(),
            previous,
            "{signal} after {millis} ms: the previous trace changed ({got})"
        );
        assert_eq!(
            files_in(&dir.0),
            ["endless.elf", "kept.rtrace"],
            "{signal} after {millis} ms left a file ({got})"
        );
    }
    // The late signals reach a recording in progress.
    assert!(
        stopped_by_retrace >= 3,
        "{stopped_by_retrace} stops by retrace"
    );

    // With no previous trace, nothing appears at all.
    std::fs::remove_file(&trace).unwrap();
    let got = interrupted_record(&elf, &trace, "-INT", Duration::from_millis(300));
    assert!(got.starts_with("exit 130:"), "{got}");
    assert_eq!(files_in(&dir.0), ["endless.elf"]);
}
