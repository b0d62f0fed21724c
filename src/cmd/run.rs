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
//!
//! With `--core NAME|FILE.toml` the run goes through the cycle-level engine
//! ([`retrace_sim::cycle`]): the same functional run, with every retired
//! instruction fed to the core's timing model. The report (cycles, CPI,
//! mispredictions, cache hits and misses, the hottest functions) goes to
//! stderr as a table so it never mixes with the program's own stdout, or
//! into the JSON object with `--json`.

use super::common::{check_xlen, load_core, thousands};
use crate::status::{tag, Status, WithStatus};
use anyhow::anyhow;
use retrace_program::Elf;
use retrace_sim::cycle::{CycleObserver, FunctionCycles};
use retrace_sim::{Console, HostConfig, Machine, MachineConfig, Observer, RunResult, StopReason};
use retrace_timing::CoreModel;
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
    retrace run --allow-dir data prog.elf -- data/input.txt\n  \
    retrace run --core rocket prog.elf\n  \
    retrace run --core my-core.toml --json --functions 0 prog.elf")]
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
    /// Time the run on this core (a preset name, or a TOML core
    /// description; `retrace cores` lists the presets) with the cycle-level
    /// engine, and report cycles, CPI, mispredictions, cache hits and misses
    /// and cycles per function.
    #[arg(long, value_name = "NAME|FILE.toml")]
    pub core: Option<String>,
    /// With --core: how many functions to report, hottest (most exclusive
    /// cycles) first; 0 reports every function that ran.
    #[arg(long, value_name = "N", default_value_t = 10, requires = "core")]
    pub functions: usize,
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
    // The core is checked before anything runs: a bad --core is bad input,
    // not something to discover after a long run.
    let timed = match &args.core {
        Some(spec) => {
            let core = load_core(spec)?;
            check_xlen(&core, &elf, &shown)?;
            let funcs = functions(&elf);
            Some((core, funcs))
        }
        None => None,
    };
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
    let mut cycle = timed
        .as_ref()
        .map(|(core, funcs)| CycleObserver::new(core, &funcs.ranges));
    let start = Instant::now();
    let result = match &mut cycle {
        Some(obs) => {
            let r = run_with_progress(&mut machine, args.max_insns, progress, start, obs);
            obs.finish();
            r
        }
        None => run_with_progress(&mut machine, args.max_insns, progress, start, &mut ()),
    };
    let wall = start.elapsed().as_secs_f64();
    let mips = result.instructions as f64 / wall.max(1e-9) / 1e6;
    let _ = std::io::stdout().flush();

    if args.stats {
        eprintln!(
            "retrace: {} instructions in {wall:.3} s ({mips:.1} MIPS)",
            result.instructions
        );
    }
    let report = match (&timed, &cycle) {
        (Some((core, funcs)), Some(obs)) => {
            Some(TimedReport::new(core, funcs, obs, args.functions))
        }
        _ => None,
    };
    if let (Some(r), false) = (&report, args.json) {
        eprint!("{}", r.text());
    }
    if args.json {
        let mut out = std::io::stdout().lock();
        if last.load(Ordering::Relaxed) != b'\n' {
            let _ = writeln!(out);
        }
        let mut obj = serde_json::json!({
            "program": shown,
            "exit_code": result.exit_code(),
            "stop": result.stop.kind(),
            "stop_detail": result.stop.to_string(),
            "instructions": result.instructions,
            "wall_seconds": wall,
            "mips": mips,
        });
        if let (Some(r), Some(o)) = (&report, obj.as_object_mut()) {
            r.add_json(o);
        }
        let _ = writeln!(out, "{obj}");
        let _ = out.flush();
    }
    outcome(&shown, &result)
}

/// Run in slices so a terminal can show progress; the slices do not change
/// the run (the machine resumes exactly where it stopped).
fn run_with_progress<O: Observer>(
    machine: &mut Machine,
    max: Option<u64>,
    progress: bool,
    start: Instant,
    obs: &mut O,
) -> RunResult {
    if !progress {
        return machine.run(max, obs);
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
        let mut r = machine.run(Some(slice), obs);
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

/// The functions cycles are attributed to: names and `(entry, size)`.
struct Functions {
    names: Vec<String>,
    ranges: Vec<(u64, u64)>,
}

/// The program's functions as the analysis finds them; when the analysis
/// fails (it should not stop a run), the ELF's function symbols. A function
/// of unknown size extends to the next function's entry.
fn functions(elf: &Elf) -> Functions {
    let mut list: Vec<(u64, u64, String)> = match retrace_program::Program::analyse(elf) {
        Ok(p) => p
            .functions
            .iter()
            .map(|f| (f.entry.0, f.size.unwrap_or(0), f.name.clone()))
            .collect(),
        Err(_) => elf
            .symbols
            .iter()
            .filter(|s| s.is_function)
            .map(|s| (s.addr, s.size, s.name.clone()))
            .collect(),
    };
    list.sort_by_key(|f| f.0);
    list.dedup_by_key(|f| f.0);
    let entries: Vec<u64> = list.iter().map(|f| f.0).collect();
    let mut out = Functions {
        names: Vec::with_capacity(list.len()),
        ranges: Vec::with_capacity(list.len()),
    };
    for (i, (entry, size, name)) in list.into_iter().enumerate() {
        let size = match (size, entries.get(i + 1)) {
            (0, Some(next)) => next - entry,
            (0, None) => 4,
            (s, _) => s,
        };
        out.names.push(name);
        out.ranges.push((entry, size));
    }
    out
}

/// What a cycle-level run reports.
struct TimedReport {
    core: String,
    cycles: u64,
    stats: retrace_timing::CoreStats,
    icache: bool,
    dcache: bool,
    /// The reported functions, hottest first: name, entry, figures.
    functions: Vec<(String, u64, FunctionCycles)>,
    /// Functions that ran but are not in `functions`.
    omitted: usize,
}

impl TimedReport {
    fn new(core: &CoreModel, funcs: &Functions, obs: &CycleObserver, top: usize) -> TimedReport {
        let mut ran: Vec<(String, u64, FunctionCycles)> = obs
            .per_function
            .iter()
            .enumerate()
            .filter(|(_, f)| f.instructions > 0 || f.calls > 0)
            .map(|(i, f)| (funcs.names[i].clone(), funcs.ranges[i].0, *f))
            .collect();
        ran.sort_by(|a, b| {
            (b.2.exclusive, b.2.inclusive)
                .cmp(&(a.2.exclusive, a.2.inclusive))
                .then(a.1.cmp(&b.1))
        });
        let keep = if top == 0 {
            ran.len()
        } else {
            top.min(ran.len())
        };
        let omitted = ran.len() - keep;
        ran.truncate(keep);
        TimedReport {
            core: core.name.clone(),
            cycles: obs.core().cycles(),
            stats: obs.core().stats(),
            icache: core.icache.is_some(),
            dcache: core.dcache.is_some(),
            functions: ran,
            omitted,
        }
    }

    fn cpi(&self) -> f64 {
        self.cycles as f64 / self.stats.instructions.max(1) as f64
    }

    fn text(&self) -> String {
        use std::fmt::Write as _;
        let s = &self.stats;
        let pct = |n: u64, of: u64| n as f64 * 100.0 / of.max(1) as f64;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "retrace: core {}: {} cycles, {} instructions, CPI {:.3}",
            self.core,
            thousands(self.cycles),
            thousands(s.instructions),
            self.cpi()
        );
        let _ = writeln!(
            out,
            "  branches {}, mispredicted {} ({:.2}%); return mispredictions {}",
            thousands(s.branches),
            thousands(s.mispredicts),
            pct(s.mispredicts, s.branches),
            thousands(s.return_mispredicts)
        );
        for (name, on, hits, misses) in [
            ("I-cache", self.icache, s.icache_hits, s.icache_misses),
            ("D-cache", self.dcache, s.dcache_hits, s.dcache_misses),
        ] {
            if on {
                let _ = writeln!(
                    out,
                    "  {name}: {} hits, {} misses ({:.3}% miss rate)",
                    thousands(hits),
                    thousands(misses),
                    pct(misses, hits + misses)
                );
            } else {
                let _ = writeln!(out, "  {name}: none in this core");
            }
        }
        if self.functions.is_empty() {
            return out;
        }
        let _ = writeln!(
            out,
            "  {:<28} {:>12} {:>16} {:>7} {:>16} {:>7}",
            "function", "calls", "inclusive", "%", "exclusive", "%"
        );
        for (name, _, f) in &self.functions {
            let _ = writeln!(
                out,
                "  {:<28} {:>12} {:>16} {:>6.2}% {:>16} {:>6.2}%",
                name,
                thousands(f.calls),
                thousands(f.inclusive),
                pct(f.inclusive, self.cycles),
                thousands(f.exclusive),
                pct(f.exclusive, self.cycles)
            );
        }
        if self.omitted > 0 {
            let _ = writeln!(
                out,
                "  ({} more functions ran; --functions 0 shows all)",
                self.omitted
            );
        }
        out
    }

    fn add_json(&self, o: &mut serde_json::Map<String, serde_json::Value>) {
        let s = &self.stats;
        let put = |o: &mut serde_json::Map<_, _>, k: &str, v: serde_json::Value| {
            o.insert(k.to_string(), v);
        };
        put(o, "core", self.core.clone().into());
        put(o, "cycles", self.cycles.into());
        put(o, "cpi", self.cpi().into());
        put(o, "branches", s.branches.into());
        put(o, "mispredicts", s.mispredicts.into());
        put(o, "return_mispredicts", s.return_mispredicts.into());
        // Caches the core does not have are null rather than 0 hits, so a
        // reader cannot mistake "no cache" for "a cache that was never used".
        let cache = |on: bool, n: u64| {
            if on {
                n.into()
            } else {
                serde_json::Value::Null
            }
        };
        put(o, "icache_hits", cache(self.icache, s.icache_hits));
        put(o, "icache_misses", cache(self.icache, s.icache_misses));
        put(o, "dcache_hits", cache(self.dcache, s.dcache_hits));
        put(o, "dcache_misses", cache(self.dcache, s.dcache_misses));
        let funcs: Vec<serde_json::Value> = self
            .functions
            .iter()
            .map(|(name, entry, f)| {
                serde_json::json!({
                    "name": name,
                    "entry": format!("{entry:#x}"),
                    "calls": f.calls,
                    "inclusive": f.inclusive,
                    "exclusive": f.exclusive,
                    "instructions": f.instructions,
                })
            })
            .collect();
        put(o, "functions", funcs.into());
        put(o, "functions_omitted", self.omitted.into());
    }
}
