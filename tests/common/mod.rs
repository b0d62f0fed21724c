//! Shared helpers of the integration tests that run example ELF files under
//! `retrace run` and under QEMU (the independent oracle, see DESIGN.md).
//!
//! QEMU is found on `PATH`; whether it is there, and what a test does when
//! it is not, is `retrace_testkit::tools::QEMU`'s business.

#![allow(dead_code)] // each test binary uses a different subset

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How long one QEMU or retrace run may take before it counts as hung.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(60);

#[allow(unused_imports)] // each test binary uses a different subset
pub use retrace_testkit::programs::{elf_xlen, file_name as name, root};

/// What one run of a program did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The program's console output (stdout).
    pub stdout: Vec<u8>,
    /// Exit code, or None when killed (timeout or signal).
    pub code: Option<i32>,
    /// The runner's own diagnostics (stderr), for failure messages.
    pub stderr: String,
    /// True when the run was stopped by [`RUN_TIMEOUT`].
    pub timed_out: bool,
}

impl Outcome {
    /// The last line of stdout, without its newline.
    pub fn last_line(&self) -> String {
        let text = String::from_utf8_lossy(&self.stdout);
        text.lines().last().unwrap_or("").to_string()
    }

    /// A short description for failure messages.
    pub fn describe(&self) -> String {
        let code = match (self.timed_out, self.code) {
            (true, _) => format!("timed out after {}s", RUN_TIMEOUT.as_secs()),
            (false, Some(c)) => format!("exit code {c}"),
            (false, None) => "killed by a signal".to_string(),
        };
        let mut s = format!("{code}, stdout {:?}", String::from_utf8_lossy(&self.stdout));
        if !self.stderr.trim().is_empty() {
            s += &format!(", stderr {:?}", self.stderr.trim());
        }
        s
    }
}

/// Run `cmd` to completion or until `timeout`, collecting stdout and stderr.
pub fn run_with_timeout(mut cmd: Command, timeout: Duration) -> Outcome {
    let shown = format!("{cmd:?}");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {shown}: {e}"));
    let mut out_pipe = child.stdout.take().unwrap();
    let mut err_pipe = child.stderr.take().unwrap();
    // Drain both pipes on threads so a chatty program cannot block on a full pipe.
    let out_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = out_pipe.read_to_end(&mut buf);
        buf
    });
    let err_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = err_pipe.read_to_end(&mut buf);
        buf
    });
    let start = Instant::now();
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for a child process") {
            break status;
        }
        if start.elapsed() > timeout {
            timed_out = true;
            let _ = child.kill();
            break child.wait().expect("waiting for a killed child process");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Outcome {
        stdout: out_reader.join().unwrap(),
        code: if timed_out { None } else { status.code() },
        stderr: String::from_utf8_lossy(&err_reader.join().unwrap()).into_owned(),
        timed_out,
    }
}

/// `retrace run ELF [-- ARGS]`.
pub fn run_retrace(elf: &Path, args: &[&str]) -> Outcome {
    run_retrace_harts(elf, args, 1)
}

/// `retrace run --harts N ELF [-- ARGS]` (no `--harts` for one hart).
pub fn run_retrace_harts(elf: &Path, args: &[&str], harts: usize) -> Outcome {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_retrace"));
    cmd.arg("run");
    if harts != 1 {
        cmd.arg("--harts").arg(harts.to_string());
    }
    cmd.arg(elf);
    if !args.is_empty() {
        cmd.arg("--").args(args);
    }
    run_with_timeout(cmd, RUN_TIMEOUT)
}

/// The QEMU system emulator for an ELF file's XLEN.
pub fn qemu_binary(elf: &Path) -> &'static str {
    if elf_xlen(elf) == 32 {
        "qemu-system-riscv32"
    } else {
        "qemu-system-riscv64"
    }
}

/// `qemu-system-riscvNN -M virt -bios none -nographic -semihosting-config
/// enable=on,target=native[,arg=A…] -kernel ELF`, DESIGN.md's oracle.
///
/// QEMU's semihosting console is routed to a file chardev so that the
/// program's output cannot mix with QEMU's own messages (without a chardev,
/// QEMU 7.2 writes the console to its stderr).
///
/// Command line: with `arg=` values, QEMU's `SYS_GET_CMDLINE` returns them
/// joined by spaces; without, the `-kernel` path. `retrace run ELF -- ARGS`
/// returns the same line for the same ARGS (and the ELF path as given when
/// there are none), so passing the same path and arguments to both gives
/// the program the same argv.
pub fn run_qemu(elf: &Path, args: &[&str]) -> Outcome {
    run_qemu_smp(elf, args, 1)
}

/// [`run_qemu`] on a machine of `harts` harts (`-smp`, given only when
/// there is more than one).
pub fn run_qemu_smp(elf: &Path, args: &[&str], harts: usize) -> Outcome {
    static SEQ: AtomicUsize = AtomicUsize::new(0);
    let console = std::env::temp_dir().join(format!(
        "retrace-qemu-console-{}-{}.txt",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_file(&console);
    let mut semihosting = String::from("enable=on,target=native,chardev=semihosting");
    for a in args {
        assert!(
            !a.contains(','),
            "QEMU option values cannot hold a comma: {a}"
        );
        semihosting += ",arg=";
        semihosting += a;
    }
    let mut cmd = Command::new(qemu_binary(elf));
    cmd.args(["-M", "virt", "-bios", "none", "-nographic"]);
    if harts != 1 {
        cmd.arg("-smp").arg(harts.to_string());
    }
    cmd.arg("-chardev")
        .arg(format!("file,id=semihosting,path={}", console.display()))
        .arg("-semihosting-config")
        .arg(semihosting)
        .arg("-kernel")
        .arg(elf);
    let mut outcome = run_with_timeout(cmd, RUN_TIMEOUT);
    outcome.stdout = std::fs::read(&console).unwrap_or_default();
    let _ = std::fs::remove_file(&console);
    outcome
}

/// Run `retrace ARGS` in `dir` and wait for it.
pub fn retrace_in(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_retrace"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("retrace runs")
}

/// Run `retrace ARGS` in the repository's root (where `programs/` is).
pub fn retrace(args: &[&str]) -> std::process::Output {
    retrace_in(Path::new(env!("CARGO_MANIFEST_DIR")), args)
}

/// The standard output of a command that must have succeeded; its
/// status and standard error otherwise.
pub fn succeeded(out: &std::process::Output) -> String {
    assert!(
        out.status.success(),
        "status {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
