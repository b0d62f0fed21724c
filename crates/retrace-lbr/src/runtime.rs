//! The writer runtime's C source and how to build a writer with it.
//!
//! The runtime is shipped as source inside retrace and compiled with the
//! user's own compiler (the one that builds the writer), so its object
//! matches that compiler's ABI and flags; `retrace lbr cc` does both steps.

use crate::Error;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Command;

/// `runtime/retrace_lbr_rt.c`.
pub const SOURCE: &str = include_str!("../runtime/retrace_lbr_rt.c");

/// The symbol every writer has (the runtime defines it).
pub const MARKER_SYMBOL: &str = "retrace_lbr_runtime_version";

/// The flag that makes gcc and clang call the runtime at each basic block.
pub const COVERAGE_FLAG: &str = "-fsanitize-coverage=trace-pc";

/// [`COVERAGE_FLAG`] with comparison tracing (`lbr cc --trace-cmp`): the
/// compiler also calls the runtime before each `switch` dispatches, with
/// its value, and before each comparison, with both sides. The runtime
/// records the value and how each comparison came out, which tells apart
/// the machine paths between two instrumented blocks that gcc's lowering
/// made after its coverage pass (a range check and a jump table both
/// reaching the default case, case and edge blocks without a coverage
/// call). The calls change how the compiler allocates registers and lays
/// out the writer, so its layout is further from the ordinary build's
/// (docs/LBR.md measures both).
pub const COVERAGE_CMP_FLAG: &str = "-fsanitize-coverage=trace-pc,trace-cmp";

/// The link flag that keeps relocations in the executable, which BOLT
/// needs to move functions and reorder blocks freely (`lbr cc --emit-relocs`).
pub const EMIT_RELOCS_FLAG: &str = "-Wl,--emit-relocs";

/// Whether the compiler command `args` (without the compiler) links.
pub fn links(args: &[OsString]) -> bool {
    !args
        .iter()
        .any(|a| a == "-c" || a == "-S" || a == "-E" || a == "-M" || a == "-MM")
}

/// Compile the runtime with `compiler` into `dir/retrace_lbr_rt.o`
/// (optimised, position-independent, without coverage instrumentation).
/// Its debugging information is DWARF 4: clang-14's default DWARF 5 uses
/// forms that Debian 12's valgrind cannot read, and one such object in a
/// writer makes valgrind give up on the whole binary, whatever DWARF
/// version the user's own files have.
pub fn compile(compiler: &OsStr, dir: &Path) -> Result<PathBuf, Error> {
    let src = dir.join("retrace_lbr_rt.c");
    std::fs::write(&src, SOURCE).map_err(|e| Error::io(&src, e))?;
    let obj = dir.join("retrace_lbr_rt.o");
    let out = Command::new(compiler)
        .args(["-O2", "-fPIC", "-g", "-gdwarf-4", "-c"])
        .arg(&src)
        .arg("-o")
        .arg(&obj)
        .output()
        .map_err(|e| Error::Tool(format!("cannot run {}: {e}", compiler.to_string_lossy())))?;
    if !out.status.success() {
        return Err(Error::Tool(format!(
            "{} could not compile the writer runtime: {}",
            compiler.to_string_lossy(),
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .next()
                .unwrap_or("")
        )));
    }
    Ok(obj)
}

/// The compiler command of a writer build: `command` with the coverage
/// flag added and, unless it only compiles (`-c`, `-S`, `-E`), the runtime
/// object `rt` linked in.
pub fn writer_command(command: &[OsString], rt: &Path) -> Result<Command, Error> {
    writer_command_with(command, rt, false)
}

/// [`writer_command`], with comparison tracing if `trace_cmp`
/// ([`COVERAGE_CMP_FLAG`]).
pub fn writer_command_with(
    command: &[OsString],
    rt: &Path,
    trace_cmp: bool,
) -> Result<Command, Error> {
    let (compiler, rest) = command
        .split_first()
        .ok_or_else(|| Error::Config("no compiler command after `--`".into()))?;
    let mut cmd = Command::new(compiler);
    cmd.arg(if trace_cmp {
        COVERAGE_CMP_FLAG
    } else {
        COVERAGE_FLAG
    });
    // clang links its own sanitizer runtime for coverage flags (and fails
    // where libclang-rt is not installed); ours replaces it.
    let name = Path::new(compiler)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if name.contains("clang") {
        cmd.arg("-fno-sanitize-link-runtime");
    }
    cmd.args(rest);
    if links(rest) {
        cmd.arg(rt);
    }
    Ok(cmd)
}

/// Run `command` as a writer build (see [`writer_command`]); the runtime is
/// compiled by the same compiler into a temporary directory first. With
/// `emit_relocs`, a command that links also gets [`EMIT_RELOCS_FLAG`]; with
/// `trace_cmp`, comparisons are traced too ([`COVERAGE_CMP_FLAG`]).
pub fn build_writer(command: &[OsString], emit_relocs: bool, trace_cmp: bool) -> Result<(), Error> {
    let compiler = command
        .first()
        .ok_or_else(|| Error::Config("no compiler command after `--`".into()))?;
    let dir = tempfile::tempdir().map_err(|e| Error::io(Path::new("temporary directory"), e))?;
    let rt = compile(compiler, dir.path())?;
    let mut cmd = writer_command_with(command, &rt, trace_cmp)?;
    if emit_relocs && links(&command[1..]) {
        cmd.arg(EMIT_RELOCS_FLAG);
    }
    let status = cmd
        .status()
        .map_err(|e| Error::Tool(format!("cannot run {}: {e}", compiler.to_string_lossy())))?;
    if !status.success() {
        return Err(Error::Tool(format!(
            "the writer build failed ({status}); the command was the one after `--` plus {COVERAGE_FLAG} and the runtime object"
        )));
    }
    Ok(())
}
