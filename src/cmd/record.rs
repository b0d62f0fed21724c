//! `retrace record`: run a program once in the functional engine and write
//! its branch history to a trace file. The program's console output passes
//! through; retrace exits 0 when the recording is complete (the program's
//! own exit code is reported, and kept in the trace).

use super::common::{host, load_elf, preset_dcaches, thousands};
use crate::status::{tag, Status};
use anyhow::anyhow;
use retrace_sim::record::{record_run, RecordError};
use retrace_sim::{Console, StopReason};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// Arguments of `retrace record`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
    retrace record prog.elf -o prog.rtrace\n  \
    retrace record sort-rv32-O2.elf -o sort.rtrace -- 20000\n  \
    retrace estimate sort-rv32-O2.elf sort.rtrace --core picorv32 --core rocket")]
pub struct Args {
    /// The program: a RISC-V ELF executable.
    pub program: PathBuf,
    /// Where to write the trace.
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
    /// Stop with status 124 after this many instructions.
    #[arg(long, value_name = "N")]
    pub max_insns: Option<u64>,
    /// Do not measure data-cache miss rates (by default the recorder measures
    /// the geometries of the built-in cores, for `estimate`'s data-cache term).
    #[arg(long, conflicts_with = "dcache")]
    pub no_dcache: bool,
    /// Also measure this data-cache geometry, SIZE:WAYS:LINE in bytes (e.g.
    /// 32768:8:64), for a core of your own. Repeatable.
    #[arg(long, value_name = "SIZE:WAYS:LINE", value_parser = parse_geometry)]
    pub dcache: Vec<retrace_timing::CacheModel>,
    /// Print one JSON object with the recording's figures as the last line
    /// of stdout.
    #[arg(long)]
    pub json: bool,
    /// Arguments passed to the program.
    #[arg(last = true, value_name = "ARGS")]
    pub args: Vec<String>,
}

/// Parse `SIZE:WAYS:LINE` into a cache geometry (validated like a core
/// description's cache).
fn parse_geometry(text: &str) -> Result<retrace_timing::CacheModel, String> {
    let parts: Vec<&str> = text.split(':').collect();
    let [size, ways, line] = parts[..] else {
        return Err(format!(
            "`{text}`: give SIZE:WAYS:LINE in bytes, e.g. 16384:4:64"
        ));
    };
    let toml = format!(
        "name = \"dcache\"\nxlen = [32]\n[dcache]\nsize = {size}\nways = {ways}\nline = {line}\nmiss_penalty = 1\n"
    );
    retrace_timing::CoreModel::from_toml(&toml, "--dcache")
        .map_err(|e| format!("`{text}`: {e}"))?
        .dcache
        .ok_or_else(|| format!("`{text}`: not a cache geometry"))
}

/// Entry point of `retrace record`.
pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    let elf = load_elf(&args.program)?;
    let shown = args.program.display().to_string();
    let file = std::fs::File::create(&args.output).map_err(|e| {
        tag(
            anyhow!("cannot create trace {}: {e}", args.output.display()),
            Status::BadInput,
        )
    })?;
    let mut header = retrace_trace::Header::new(0, 32, 1);
    header.program = args
        .program
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    header.args = args.args.clone();
    let mut dcaches = if args.no_dcache {
        Vec::new()
    } else {
        preset_dcaches()
    };
    for g in &args.dcache {
        if !dcaches
            .iter()
            .any(|d| (d.size, d.ways, d.line) == (g.size, g.ways, g.line))
        {
            dcaches.push(*g);
        }
    }
    let console = Console {
        stdout: Box::new(std::io::stdout()),
        stderr: Box::new(std::io::stderr()),
        stdin: Box::new(std::io::stdin()),
        is_tty: [false; 3],
    };
    let start = Instant::now();
    let rec = record_run(
        &elf,
        host(&shown, &args.args),
        console,
        args.max_insns,
        std::io::BufWriter::with_capacity(1 << 20, file),
        header,
        &dcaches,
    );
    let wall = start.elapsed().as_secs_f64();
    let rec = match rec {
        Ok(r) => r,
        Err(e) => {
            let _ = std::fs::remove_file(&args.output);
            let status = match e {
                RecordError::Unsupported(_) => Status::Fault,
                _ => Status::BadInput,
            };
            return Err(tag(anyhow!("cannot record {shown}: {e}"), status));
        }
    };
    let exit = match &rec.run.stop {
        StopReason::Exit { code } => *code as u8,
        StopReason::Runaway { limit } => {
            return Err(tag(
                anyhow!(
                    "{shown} ran past --max-insns {limit}; the trace {} is complete up to there",
                    args.output.display()
                ),
                Status::Runaway,
            ))
        }
        other => {
            return Err(tag(
                anyhow!(
                    "{shown} stopped: {other}; the trace {} records the run up to there",
                    args.output.display()
                ),
                Status::Fault,
            ))
        }
    };
    let branches = rec.branches.max(1) as f64;
    let raw_bits = rec.trace.raw_bytes as f64 * 8.0 / branches;
    let file_bits = rec.trace.file_bytes as f64 * 8.0 / branches;
    if args.json {
        let j = serde_json::json!({
            "trace": args.output.display().to_string(),
            "exit_code": exit,
            "instructions": rec.run.instructions,
            "branches": rec.branches,
            "trace_bytes": rec.trace.file_bytes,
            "raw_bytes": rec.trace.raw_bytes,
            "bits_per_branch_raw": raw_bits,
            "bits_per_branch_compressed": file_bits,
            "wall_seconds": wall,
            "mips": rec.run.instructions as f64 / wall.max(1e-9) / 1e6,
        });
        println!("{j}");
    } else {
        eprintln!(
            "recorded {} instructions (exit code {exit}), {} branches into {} ({} bytes: {:.3} bits/branch raw, {:.3} compressed) in {:.2} s",
            thousands(rec.run.instructions),
            thousands(rec.branches),
            args.output.display(),
            thousands(rec.trace.file_bytes),
            raw_bits,
            file_bits,
            wall
        );
    }
    Ok(ExitCode::SUCCESS)
}
