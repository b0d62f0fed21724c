//! `retrace run`: run a RISC-V ELF program in the functional simulator.
//!
//! The program's console output (semihosting) goes straight to retrace's
//! stdout/stderr, and its exit code becomes retrace's. retrace's own failures
//! use the statuses of [`crate::status`]: 123 denied host access, 124
//! runaway, 125 bad input, 126 program fault.
//!
//! With `--json`, the program's own stdout still comes first (it is part of
//! what the program did, and hiding it would change behaviour between modes);
//! the JSON object is always the *last line* of stdout, on a line of its own,
//! so `retrace run --json prog.elf | tail -n 1` gets it.

use crate::status::{tag, Status, WithStatus};
use anyhow::anyhow;
use retrace_program::Elf;
use retrace_sim::{Console, HostConfig, Machine, MachineConfig, RunResult, StopReason};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Arguments of `retrace run`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
    retrace run prog.elf\n  \
    retrace run --stats prog.elf -- 1000 abc\n  \
    retrace run --json --max-insns 1000000000 prog.elf\n  \
    retrace run --allow-dir data prog.elf -- data/input.txt")]
pub struct Args {
    /// The program: a RISC-V ELF executable (RV32 or RV64).
    pub program: PathBuf,
    /// Stop with status 124 after this many instructions.
    #[arg(long, value_name = "N")]
    pub max_insns: Option<u64>,
    /// Print instructions, wall time and MIPS to stderr after the run.
    #[arg(long)]
    pub stats: bool,
    /// Print one JSON object (exit_code, stop, instructions, wall_seconds,
    /// mips) as the last line of stdout.
    #[arg(long)]
    pub json: bool,
    /// Let the program open, create, remove and rename files under DIR
    /// (repeatable). Without it the program cannot touch host files.
    #[arg(long, value_name = "DIR")]
    pub allow_dir: Vec<PathBuf>,
    /// Let the program read the host's clocks (by default time is a
    /// deterministic function of the instruction count, so runs repeat).
    #[arg(long)]
    pub host_time: bool,
    /// Arguments passed to the program (its command line, as QEMU builds it).
    #[arg(last = true, value_name = "ARGS")]
    pub args: Vec<String>,
}

/// Standard output that remembers its last byte, so the JSON line can start
/// on a line of its own.
struct TrackedStdout {
    last: Arc<AtomicU8>,
}

impl Write for TrackedStdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = std::io::stdout().write(buf)?;
        if n > 0 {
            self.last.store(buf[n - 1], Ordering::Relaxed);
        }
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stdout().flush()
    }
}

/// Load `path` as a RISC-V ELF program, with bad-input errors.
pub fn load_elf(path: &std::path::Path) -> anyhow::Result<Elf> {
    let shown = path.display();
    let bytes = std::fs::read(path)
        .map_err(|e| anyhow!("cannot read program {shown}: {e}; check the path"))
        .status(Status::BadInput)?;
    Elf::parse(&bytes).map_err(|e| {
        tag(
            anyhow!("cannot load program {shown}: {e}; retrace runs RISC-V ELF executables"),
            Status::BadInput,
        )
    })
}

/// Entry point of `retrace run`.
pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    let elf = load_elf(&args.program)?;
    let shown = args.program.display().to_string();
    let mut allow_dirs = Vec::new();
    for d in &args.allow_dir {
        let canon = d.canonicalize().map_err(|e| {
            tag(
                anyhow!(
                    "--allow-dir {}: {e}; give an existing directory",
                    d.display()
                ),
                Status::BadInput,
            )
        })?;
        if !canon.is_dir() {
            return Err(tag(
                anyhow!(
                    "--allow-dir {}: not a directory; give an existing directory",
                    d.display()
                ),
                Status::BadInput,
            ));
        }
        allow_dirs.push(canon);
    }
    let host = HostConfig {
        cmdline: HostConfig::qemu_cmdline(&shown, &args.args),
        allow_dirs,
        host_time: args.host_time,
    };
    let last = Arc::new(AtomicU8::new(b'\n'));
    let console = Console {
        stdout: Box::new(TrackedStdout { last: last.clone() }),
        stderr: Box::new(std::io::stderr()),
        stdin: Box::new(std::io::stdin()),
        is_tty: [
            std::io::stdin().is_terminal(),
            std::io::stdout().is_terminal(),
            std::io::stderr().is_terminal(),
        ],
    };
    let mut machine =
        Machine::new(&elf, &MachineConfig::default(), host, console).map_err(|e| {
            tag(
                anyhow!(
                    "cannot load program {shown}: {e}; link it for RAM at 0x80000000 (128 MiB)"
                ),
                Status::BadInput,
            )
        })?;

    let progress = std::io::stderr().is_terminal();
    let start = Instant::now();
    let result = run_with_progress(&mut machine, args.max_insns, progress, start);
    let wall = start.elapsed().as_secs_f64();
    let mips = result.instructions as f64 / wall.max(1e-9) / 1e6;
    let _ = std::io::stdout().flush();

    if args.stats {
        eprintln!(
            "retrace: {} instructions in {wall:.3} s ({mips:.1} MIPS)",
            result.instructions
        );
    }
    if args.json {
        let mut out = std::io::stdout().lock();
        if last.load(Ordering::Relaxed) != b'\n' {
            let _ = writeln!(out);
        }
        let obj = serde_json::json!({
            "program": shown,
            "exit_code": result.exit_code(),
            "stop": result.stop.kind(),
            "stop_detail": result.stop.to_string(),
            "instructions": result.instructions,
            "wall_seconds": wall,
            "mips": mips,
        });
        let _ = writeln!(out, "{obj}");
        let _ = out.flush();
    }
    outcome(&shown, &result)
}

/// Run in slices so a terminal can show progress; the slices do not change
/// the run (the machine resumes exactly where it stopped).
fn run_with_progress(
    machine: &mut Machine,
    max: Option<u64>,
    progress: bool,
    start: Instant,
) -> RunResult {
    if !progress {
        return machine.run(max, &mut ());
    }
    const SLICE: u64 = 200_000_000;
    let mut shown = false;
    loop {
        let done = machine
            .harts
            .iter()
            .map(|h| h.stats.instructions)
            .sum::<u64>();
        let left = max.map(|m| m - done.min(m));
        let slice = left.map_or(SLICE, |l| l.min(SLICE));
        let mut r = machine.run(Some(slice), &mut ());
        let ended =
            !matches!(r.stop, StopReason::Runaway { .. }) || left.is_some_and(|l| l <= SLICE);
        if ended {
            if shown {
                eprint!("\r\x1b[K");
            }
            if let (StopReason::Runaway { limit }, Some(m)) = (&mut r.stop, max) {
                *limit = m;
            }
            return r;
        }
        let secs = start.elapsed().as_secs_f64();
        if secs > 0.5 {
            shown = true;
            eprint!(
                "\rretrace: {} M instructions, {:.1} s, {:.0} MIPS",
                r.instructions / 1_000_000,
                secs,
                r.instructions as f64 / secs / 1e6
            );
        }
    }
}

/// The exit status for a finished run, or the error describing how it ended.
fn outcome(prog: &str, r: &RunResult) -> anyhow::Result<ExitCode> {
    let err = |status: Status, what: String| Err(tag(anyhow!(what), status));
    match &r.stop {
        StopReason::Exit { code } => Ok(ExitCode::from((*code & 0xff) as u8)),
        StopReason::Fault(f) => err(
            Status::Fault,
            format!("program {prog} faulted: {f}; no trap handler was installed (mtvec is 0)"),
        ),
        StopReason::Runaway { limit } => err(
            Status::Runaway,
            format!("program {prog} still running after {limit} instructions (--max-insns); raise the limit or look for an endless loop"),
        ),
        StopReason::Denied { .. } => err(
            Status::Denied,
            format!("program {prog} was stopped: {}; allow a directory with --allow-dir DIR", r.stop),
        ),
        other => err(Status::Fault, format!("program {prog} stopped: {other}")),
    }
}
