//! Helpers shared by the tests: build writers of the bundled example
//! programs natively, with the C compiler the machine has.

#![allow(dead_code)]

use retrace_lbr::convert::{BranchKind, BranchSite};
use retrace_lbr::disasm::{Code, Flow, Insn};
use retrace_lbr::runtime;
use rustc_hash::FxHashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The bundled example programs' sources.
pub fn programs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../programs/src")
}

/// Whether missing tools must fail the test (CI) rather than skip it.
pub fn require_tools() -> bool {
    std::env::var_os("RETRACE_REQUIRE_TOOLS").is_some_and(|v| v == "1")
}

/// `tool` if it runs; otherwise None after printing why (or a panic
/// when tools are required).
pub fn tool(tool: &str) -> Option<String> {
    let ok = Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        return Some(tool.to_string());
    }
    assert!(
        !require_tools(),
        "{tool} is required (RETRACE_REQUIRE_TOOLS=1) but does not run"
    );
    eprintln!("skipping: {tool} is not installed");
    None
}

/// A C compiler for x86-64 writers (`CC`, else gcc), or None (skip).
pub fn cc() -> Option<String> {
    if !cfg!(all(target_arch = "x86_64", target_os = "linux")) {
        eprintln!("skipping: software branch records are built for x86-64 Linux");
        return None;
    }
    tool(&std::env::var("CC").unwrap_or_else(|_| "gcc".into()))
}

/// Build `sources` with `flags` into `dir/name` as a writer (coverage
/// flag added, runtime linked), as `retrace lbr cc` does.
pub fn writer(cc: &str, dir: &Path, name: &str, sources: &[PathBuf], flags: &[&str]) -> PathBuf {
    writer_with(cc, dir, name, sources, flags, false)
}

/// [`writer`], with comparison tracing if `trace_cmp` (`lbr cc --trace-cmp`).
pub fn writer_with(
    cc: &str,
    dir: &Path,
    name: &str,
    sources: &[PathBuf],
    flags: &[&str],
    trace_cmp: bool,
) -> PathBuf {
    let rt = runtime::compile(cc.as_ref(), dir).expect("the runtime compiles");
    let out = dir.join(name);
    let mut command: Vec<std::ffi::OsString> = vec![cc.into()];
    command.extend(flags.iter().map(Into::into));
    command.push("-I".into());
    command.push(programs().into());
    command.extend(sources.iter().map(|s| s.clone().into_os_string()));
    command.push("-o".into());
    command.push(out.clone().into_os_string());
    let status = runtime::writer_command_with(&command, &rt, trace_cmp)
        .unwrap()
        .status()
        .unwrap();
    assert!(status.success(), "building writer {name}");
    out
}

/// Build an example program as a writer at -O2 with line tables.
pub fn example_writer(cc: &str, dir: &Path, program: &str) -> PathBuf {
    writer(
        cc,
        dir,
        program,
        &[programs().join(format!("{program}.c"))],
        &["-O2", "-g"],
    )
}

/// Build the stress driver (not instrumented; it calls the runtime itself).
pub fn stress_driver(cc: &str, dir: &Path) -> PathBuf {
    let rt = runtime::compile(cc.as_ref(), dir).expect("the runtime compiles");
    let out = dir.join("stress");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/stress.c");
    let status = Command::new(cc)
        .args(["-O2", "-fno-ipa-icf"])
        .arg(&src)
        .arg(&rt)
        .arg("-o")
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success(), "building the stress driver");
    out
}

/// (source, destination) → executions of the binary's own conditional and
/// direct jumps, from `callgrind --collect-jumps=yes --dump-instr=yes`:
/// a `jcnd=TAKEN/EXECUTED TARGET` or `jump=TAKEN TARGET` line, then the
/// source instruction's position line, gives the taken edges. A conditional
/// jump's fall-through (the edge to the next instruction) is its execution
/// count — the `Ir` of its own cost lines, summed over every context —
/// less its taken count: callgrind keeps costs per calling context (and per
/// recursion level), and writes no `jcnd` line in a context where the jump
/// was never taken, so the `jcnd` lines alone miss those fall-throughs.
/// Only jumps whose source instruction `keep` accepts count, and only branch
/// instructions (callgrind counts each repetition of `rep stos` as a jump
/// to itself).
pub fn callgrind_edges(
    binary: &Path,
    args: &[&str],
    code: &Code,
    keep: &dyn Fn(&Insn) -> bool,
) -> FxHashMap<(u64, u64), u64> {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cg.out");
    let status = Command::new("valgrind")
        .args([
            "--tool=callgrind",
            "--collect-jumps=yes",
            "--dump-instr=yes",
            "--dump-line=no",
            "--compress-strings=no",
            "--compress-pos=no",
            "-q",
        ])
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(binary)
        .args(args)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.code().is_some(), "valgrind ran");
    let text = std::fs::read_to_string(&out).unwrap();
    let me = std::fs::canonicalize(binary).unwrap();
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap();
    let mut edges = FxHashMap::default();
    // Executions of each instruction, and taken executions of each jump.
    let mut executed: FxHashMap<u64, u64> = FxHashMap::default();
    let mut taken_from: FxHashMap<u64, u64> = FxHashMap::default();
    let mut in_binary = false;
    // A jump line's (taken, target), waiting for its position line.
    let mut pending: Option<(u64, u64)> = None;
    // The cost line after `calls=` is the call's inclusive cost, not the
    // call instruction's own execution count.
    let mut after_call = false;
    for line in text.lines() {
        if let Some(ob) = line.strip_prefix("ob=") {
            in_binary = std::fs::canonicalize(ob.trim()).ok().as_deref() == Some(me.as_path());
            continue;
        }
        if !in_binary {
            continue;
        }
        if line.starts_with("calls=") {
            after_call = true;
            continue;
        }
        let Some(first) = line.split_whitespace().next() else {
            continue;
        };
        if !first.starts_with("0x") {
            if let Some(rest) = line.strip_prefix("jcnd=") {
                let (c, t) = rest.split_once(' ').unwrap();
                let (taken, _executed) = c.split_once('/').unwrap();
                pending = Some((taken.parse().unwrap(), hex(t.trim())));
            } else if let Some(rest) = line.strip_prefix("jump=") {
                let (c, t) = rest.split_once(' ').unwrap();
                pending = Some((c.parse().unwrap(), hex(t.trim())));
            }
            continue;
        }
        let src = hex(first);
        if let Some((taken, target)) = pending.take() {
            // callgrind also writes a `jump` line for each repetition of a
            // string instruction (`rep stos`, a jump to itself): not a branch.
            let branch = code.insn(src).is_some_and(|i| {
                matches!(i.flow, Flow::Cond(_) | Flow::Jump(_) | Flow::JumpIndirect)
            });
            if taken > 0 && branch && code.insn(src).is_some_and(keep) {
                *edges.entry((src, target)).or_insert(0) += taken;
                *taken_from.entry(src).or_insert(0) += taken;
            }
            continue;
        }
        if std::mem::take(&mut after_call) {
            continue;
        }
        let ir: u64 = line
            .split_whitespace()
            .nth(1)
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        *executed.entry(src).or_insert(0) += ir;
    }
    for (&src, &n) in &executed {
        let Some(insn) = code.insn(src) else { continue };
        if !matches!(insn.flow, Flow::Cond(_)) || !keep(insn) {
            continue;
        }
        let taken = taken_from.get(&src).copied().unwrap_or(0);
        if n > taken {
            *edges.entry((src, insn.next)).or_insert(0) += n - taken;
        }
    }
    edges
}

/// (source, destination) → executions from branch sites of `code`: taken
/// edges of conditional, direct and indirect jumps, and the fall-through
/// edges of conditional jumps — what [`callgrind_edges`] counts.
pub fn jump_edges(sites: &[BranchSite], code: &Code) -> FxHashMap<(u64, u64), u64> {
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap();
    let mut ours: FxHashMap<(u64, u64), u64> = FxHashMap::default();
    for site in sites {
        let addr = hex(&site.addr);
        let insn = code.insn(addr).unwrap();
        match site.kind {
            BranchKind::Conditional | BranchKind::Jump | BranchKind::IndirectJump => {}
            _ => continue,
        }
        for t in &site.targets {
            *ours.entry((addr, hex(&t.to))).or_insert(0) += t.count;
        }
        if site.executions > site.taken {
            *ours.entry((addr, insn.next)).or_insert(0) += site.executions - site.taken;
        }
    }
    ours
}

/// The share of `theirs`' executions whose edge has the same count in
/// `ours`, their total, and the five largest that differ as (their count,
/// edge, our count).
pub type Worst = Vec<(u64, (u64, u64), Option<u64>)>;

/// See [`Worst`].
pub fn agreement(
    theirs: &FxHashMap<(u64, u64), u64>,
    ours: &FxHashMap<(u64, u64), u64>,
) -> (f64, u64, Worst) {
    let total: u64 = theirs.values().sum();
    let agree: u64 = theirs
        .iter()
        .filter(|(e, n)| ours.get(e) == Some(n))
        .map(|(_, n)| n)
        .sum();
    let mut worst: Worst = theirs
        .iter()
        .filter(|(e, n)| ours.get(e) != Some(n))
        .map(|(e, n)| (*n, *e, ours.get(e).copied()))
        .collect();
    worst.sort_by(|a, b| b.cmp(a));
    worst.truncate(5);
    (agree as f64 / total.max(1) as f64, total, worst)
}

/// Build an example program as the *analysed* program: the writer's
/// compiler and `flags`, without coverage or runtime, into `dir/name.plain`.
pub fn example_plain(cc: &str, dir: &Path, program: &str, flags: &[&str]) -> PathBuf {
    let out = dir.join(format!("{program}.plain"));
    let status = Command::new(cc)
        .args(flags)
        .arg("-I")
        .arg(programs())
        .arg(programs().join(format!("{program}.c")))
        .arg("-o")
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success(), "building {program}");
    out
}

/// BOLT's aggregator: `perf2bolt` in LLVM 16's own directory. Debian's
/// `perf2bolt-16` link does not do: llvm-bolt looks at the name it was run
/// by, and only `perf2bolt` makes it aggregate (`perf2bolt-16 -o X` writes
/// an optimised binary to X). `llvm-bolt-16 -aggregate-only` is the same.
pub fn perf2bolt(bolt: &str) -> Command {
    let own = Path::new("/usr/lib/llvm-16/bin/perf2bolt");
    if own.exists() {
        Command::new(own)
    } else {
        let mut c = Command::new(bolt);
        c.arg("-aggregate-only");
        c
    }
}

/// A command's standard output and error as one text.
fn all_output(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// perf2bolt (`bolt` the llvm-bolt binary) on `binary` with the
/// pre-aggregated profile `preagg`, writing `DIR/NAME.fdata`: the fdata
/// file, whether it succeeded, and what it printed.
pub fn aggregate(
    bolt: &str,
    dir: &Path,
    name: &str,
    preagg: &str,
    binary: &Path,
) -> (std::path::PathBuf, bool, String) {
    let file = dir.join(format!("{name}.preagg"));
    std::fs::write(&file, preagg).unwrap();
    let fdata = dir.join(format!("{name}.fdata"));
    let out = perf2bolt(bolt)
        .arg("-pa")
        .arg("-p")
        .arg(&file)
        .arg("-o")
        .arg(&fdata)
        .arg(binary)
        .output()
        .unwrap();
    (fdata, out.status.success(), all_output(&out))
}

/// llvm-bolt lays `binary` out by `fdata` (blocks ext-tsp, functions
/// hfsort) into `DIR/NAME.bolt`: that file, whether it succeeded, and what
/// it printed.
pub fn optimise(
    bolt: &str,
    dir: &Path,
    name: &str,
    binary: &Path,
    fdata: &Path,
) -> (std::path::PathBuf, bool, String) {
    let bolted = dir.join(format!("{name}.bolt"));
    let out = Command::new(bolt)
        .arg(binary)
        .arg("-o")
        .arg(&bolted)
        .arg(format!("-data={}", fdata.display()))
        .args(["-reorder-blocks=ext-tsp", "-reorder-functions=hfsort"])
        .output()
        .unwrap();
    (bolted, out.status.success(), all_output(&out))
}

/// BOLT's own warnings that are not about the profile: the writer is
/// built with -g (BOLT drops debug info unless asked), and some
/// relocations of the runtime object it does not analyse (printed before
/// the profile is read; the same program without the runtime has none).
pub fn profile_warnings(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| l.contains("WARNING") || l.contains("ERROR"))
        .filter(|l| !l.contains("debug info will be stripped"))
        .filter(|l| !l.contains("Failed to analyze") || !l.contains("relocations"))
        .collect()
}
