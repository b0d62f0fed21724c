//! `retrace demo`: the product on its bundled example programs. Each program
//! is recorded once; the one trace is replayed on every preset core, and the
//! cycle-level engine runs each core for reference. The table shows both
//! cycle counts, the error and what each step cost.

use super::common::{preset_dcaches, thousands};
use anyhow::Context;
use retrace_estimate::{estimate_trace, Fidelity};
use retrace_program::{Addr, Elf, Program};
use retrace_sim::cycle::run_cycle_level;
use retrace_sim::record::record_run;
use retrace_sim::{Console, HostConfig};
use retrace_timing::{preset, CoreModel, PRESETS};
use std::io::Write;
use std::process::ExitCode;
use std::time::Instant;

/// Arguments of `retrace demo`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Only the programs whose name contains this.
    #[arg(long, value_name = "TEXT")]
    pub only: Option<String>,
    /// Print JSON (one object per program × core) instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// The example programs built into the binary (RV32 at -O2, so that every
/// preset, the RV32-only picorv32 included, can run them).
const BUNDLED: &[(&str, &[u8])] = &[
    (
        "crc32",
        include_bytes!("../../programs/bin/crc32-rv32-O2.elf"),
    ),
    (
        "nqueens",
        include_bytes!("../../programs/bin/nqueens-rv32-O2.elf"),
    ),
    (
        "exprparse",
        include_bytes!("../../programs/bin/exprparse-rv32-O2.elf"),
    ),
    (
        "dhry",
        include_bytes!("../../programs/bin/dhry-rv32-O2.elf"),
    ),
    (
        "dijkstra",
        include_bytes!("../../programs/bin/dijkstra-rv32-O2.elf"),
    ),
];

/// The fidelity the demo uses for a core: `fast` where it is exact.
fn fidelity_for(core: &CoreModel) -> Fidelity {
    if core.is_context_free() {
        Fidelity::Fast
    } else {
        Fidelity::Control
    }
}

/// Capture a program's console output in memory.
#[derive(Clone, Default)]
struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Entry point of `retrace demo`.
pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    let cores: Vec<CoreModel> = PRESETS
        .iter()
        .map(|(n, _)| preset(n).expect("presets parse"))
        .collect();
    let mut rows = Vec::new();
    let (mut t_ref, mut t_rec, mut t_est, mut worst) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    let mut pairs = 0;
    if !args.json {
        println!(
            "retrace demo: each program is recorded once, then estimated on {} cores from that one trace;\n\
             the cycle-level engine runs every core for reference.\n",
            cores.len()
        );
    }
    for (name, bytes) in BUNDLED {
        if args.only.as_deref().is_some_and(|o| !name.contains(o)) {
            continue;
        }
        let elf = Elf::parse(bytes).with_context(|| format!("bundled program {name}"))?;
        let program = Program::analyse(&elf).with_context(|| format!("bundled program {name}"))?;
        let host = || HostConfig {
            cmdline: format!("{name}.elf"),
            ..HostConfig::default()
        };
        // Record once (the program's output is kept to show it).
        let out = Captured::default();
        let console = Console {
            stdout: Box::new(out.clone()),
            stderr: Box::new(std::io::sink()),
            stdin: Box::new(std::io::empty()),
            is_tty: [false; 3],
        };
        let trace =
            std::env::temp_dir().join(format!("retrace-demo-{}-{name}.rtrace", std::process::id()));
        let file = std::io::BufWriter::new(
            std::fs::File::create(&trace)
                .with_context(|| format!("creating {}", trace.display()))?,
        );
        let t = Instant::now();
        let rec = record_run(
            &elf,
            host(),
            console,
            None,
            file,
            retrace_trace::Header::new(0, 32, 1),
            &preset_dcaches(),
        )
        .with_context(|| format!("recording {name}"))?;
        let rec_s = t.elapsed().as_secs_f64();
        t_rec += rec_s;
        let output = String::from_utf8_lossy(&out.0.lock().unwrap()).to_string();
        let last_line = output.lines().last().unwrap_or("").to_string();
        if !args.json {
            println!(
                "{name}: {} instructions, {} branches; trace {} bytes ({:.2} bits/branch); recorded in {:.2} s ({:.0} MIPS)\n  program says: {last_line}",
                thousands(rec.run.instructions),
                thousands(rec.branches),
                thousands(rec.trace.file_bytes),
                rec.trace.file_bytes as f64 * 8.0 / rec.branches.max(1) as f64,
                rec_s,
                rec.run.instructions as f64 / rec_s.max(1e-9) / 1e6
            );
        }
        // All cores from the one trace.
        let t = Instant::now();
        let mut estimates = Vec::new();
        for fidelity in [Fidelity::Fast, Fidelity::Control] {
            let group: Vec<CoreModel> = cores
                .iter()
                .filter(|c| fidelity_for(c) == fidelity)
                .cloned()
                .collect();
            let got = estimate_trace(
                &program.table,
                Addr(elf.entry),
                &trace,
                &group,
                fidelity,
                None,
            )
            .with_context(|| format!("estimating {name}"))?;
            for (c, (e, _)) in group.iter().zip(got) {
                estimates.push((c.name.clone(), fidelity, e));
            }
        }
        let est_s = t.elapsed().as_secs_f64();
        t_est += est_s;
        let _ = std::fs::remove_file(&trace);
        for core in &cores {
            let t = Instant::now();
            let (_, obs) = run_cycle_level(&elf, host(), Console::null(), None, core, &[])
                .with_context(|| format!("cycle-level run of {name}"))?;
            let ref_s = t.elapsed().as_secs_f64();
            t_ref += ref_s;
            let reference = obs.core().cycles();
            let (_, fidelity, e) = estimates
                .iter()
                .find(|(n, _, _)| *n == core.name)
                .expect("estimated");
            let err = (e.cycles as f64 - reference as f64) * 100.0 / reference.max(1) as f64;
            worst = worst.max(err.abs());
            pairs += 1;
            rows.push(serde_json::json!({
                "program": name, "core": core.name, "fidelity": fidelity.to_string(),
                "instructions": rec.run.instructions, "reference_cycles": reference,
                "estimated_cycles": e.cycles, "error_percent": err, "reference_seconds": ref_s,
            }));
            if !args.json {
                println!(
                    "  {:<10} {:<8} reference {:>14} cycles ({:>6.2} s)   estimate {:>14} cycles   error {:+.4}%",
                    core.name,
                    fidelity.to_string(),
                    thousands(reference),
                    ref_s,
                    thousands(e.cycles),
                    err
                );
            }
        }
        if !args.json {
            println!(
                "  all {} estimates from the one trace: {:.2} s\n",
                cores.len(),
                est_s
            );
        }
    }
    if args.json {
        println!("{}", serde_json::Value::Array(rows));
    } else {
        println!(
            "{pairs} program × core pairs: largest error {worst:.4}%. Cycle-level engine {t_ref:.2} s in all; \
             recording {t_rec:.2} s; every estimate from the recordings {t_est:.2} s ({:.1}× less than the cycle-level runs).",
            t_ref / t_est.max(1e-9)
        );
    }
    Ok(ExitCode::SUCCESS)
}
