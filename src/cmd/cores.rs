//! `retrace cores`: the built-in core presets and their key parameters.

use retrace_timing::{preset, CoreModel, PredictorKind, TimingClass, PRESETS};
use std::process::ExitCode;

/// Arguments of `retrace cores`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Print one preset's full TOML description (a starting point for your own core).
    #[arg(long, value_name = "NAME")]
    pub show: Option<String>,
}

fn predictor(m: &CoreModel) -> String {
    match m.branch.predictor {
        PredictorKind::NotTaken => "not-taken".into(),
        PredictorKind::Btfn => "btfn".into(),
        PredictorKind::Bimodal { entries } => format!("bimodal {entries}"),
        PredictorKind::Gshare {
            entries,
            history_bits,
        } => format!("gshare {entries}/{history_bits}"),
    }
}

fn cache(c: &Option<retrace_timing::CacheModel>) -> String {
    match c {
        Some(c) => format!(
            "{}K/{}w/{}B +{}",
            c.size / 1024,
            c.ways,
            c.line,
            c.miss_penalty
        ),
        None => "-".into(),
    }
}

/// Entry point of `retrace cores`.
pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    if let Some(name) = args.show {
        let Some((_, text)) = PRESETS.iter().find(|(n, _)| *n == name) else {
            preset(&name).map_err(|e| {
                crate::status::tag(anyhow::anyhow!("{e}"), crate::status::Status::BadInput)
            })?;
            unreachable!("preset() accepts only known names");
        };
        print!("{text}");
        return Ok(ExitCode::SUCCESS);
    }
    let models: Vec<CoreModel> = PRESETS
        .iter()
        .map(|(n, _)| preset(n).expect("presets parse"))
        .collect();
    if args.json {
        let list: Vec<_> = models
            .iter()
            .map(|m| {
                let lat: serde_json::Map<String, serde_json::Value> = TimingClass::ALL
                    .iter()
                    .map(|c| (c.key().to_string(), m.latency.get(*c).into()))
                    .collect();
                let occ: serde_json::Map<String, serde_json::Value> = TimingClass::ALL
                    .iter()
                    .map(|c| (c.key().to_string(), m.occupancy.get(*c).into()))
                    .collect();
                serde_json::json!({
                    "name": m.name, "description": m.description, "rv32": m.rv32, "rv64": m.rv64,
                    "latency": lat, "occupancy": occ, "predictor": predictor(m),
                    "mispredict_penalty": m.branch.mispredict_penalty, "taken_penalty": m.branch.taken_penalty,
                    "ras_depth": m.branch.ras_depth, "icache": cache(&m.icache), "dcache": cache(&m.dcache),
                    "context_free": m.is_context_free(),
                })
            })
            .collect();
        println!("{}", serde_json::Value::Array(list));
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{:<10} {:<8} {:>4} {:>4} {:>4} {:>4} {:<12} {:>4} {:>3} {:<16} {:<16}",
        "core", "xlen", "alu", "lw", "mul", "div", "predictor", "miss", "ras", "icache", "dcache"
    );
    for m in &models {
        let xlen = match (m.rv32, m.rv64) {
            (true, true) => "32,64",
            (true, false) => "32",
            _ => "64",
        };
        let l = |c| m.latency.get(c).max(m.occupancy.get(c));
        println!(
            "{:<10} {:<8} {:>4} {:>4} {:>4} {:>4} {:<12} {:>4} {:>3} {:<16} {:<16}",
            m.name,
            xlen,
            l(TimingClass::Alu),
            l(TimingClass::LoadWord),
            l(TimingClass::Mul),
            l(TimingClass::Div),
            predictor(m),
            m.branch.mispredict_penalty,
            m.branch.ras_depth,
            cache(&m.icache),
            cache(&m.dcache)
        );
    }
    println!();
    for m in &models {
        println!("{:<10} {}", m.name, m.description);
    }
    println!("\nCycles are max(latency, occupancy) per class; `retrace cores --show NAME` prints a preset's TOML, every field documented in docs/TIMING.md.");
    Ok(ExitCode::SUCCESS)
}
