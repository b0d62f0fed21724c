//! `retrace cores`: the built-in core presets and their key parameters.

use crate::report::{csv_of, print, FormatArgs, Report};
use retrace_timing::{preset, CoreModel, PredictorKind, TimingClass, Unit, PRESETS};
use serde::Serialize;
use std::collections::BTreeMap;
use std::process::ExitCode;

/// Arguments of `retrace cores`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Output format (csv: one row per core, without the per-class tables).
    #[command(flatten)]
    pub output: FormatArgs,
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

/// The FP extensions a core says it has: `-` when unsaid (any program
/// runs), else `none`, `F` or `FD`.
fn fpu(m: &CoreModel) -> &'static str {
    match m.float {
        None => "-",
        Some(retrace_timing::FloatUnit::None) => "none",
        Some(retrace_timing::FloatUnit::Single) => "F",
        Some(retrace_timing::FloatUnit::Double) => "FD",
    }
}

/// The classes that occupy a unit taking one operation at a time, with
/// the cycles each keeps it from the next (`[busy]`; 1 is pipelined and
/// left out).
fn busy(m: &CoreModel) -> BTreeMap<&'static str, u32> {
    TimingClass::ALL
        .iter()
        .filter(|&&c| Unit::of(c, m).is_some() && m.busy.get(c) > 1)
        .map(|&c| (c.key(), m.busy.get(c)))
        .collect()
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
    let report = CoresReport {
        cores: models.iter().map(CoreEntry::new).collect(),
        models,
    };
    print(&report, args.output.get())?;
    Ok(ExitCode::SUCCESS)
}

/// One core preset: its key parameters, and per instruction class the
/// latency and occupancy.
#[derive(Serialize)]
pub struct CoreEntry {
    name: String,
    description: String,
    rv32: bool,
    rv64: bool,
    /// `none`, `single` or `double`; absent when the core does not say.
    float: Option<&'static str>,
    latency: BTreeMap<&'static str, u32>,
    occupancy: BTreeMap<&'static str, u32>,
    /// Classes on a unit that takes one operation at a time: the cycles
    /// before the unit takes the next (`[busy]`).
    busy: BTreeMap<&'static str, u32>,
    /// While the FP divider is busy, no FP operation issues.
    fp_blocks_all: bool,
    /// Instructions issued per cycle at most (1 or 2).
    issue_width: u32,
    /// On a dual-issue core, per class the pipes it may issue on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pipes: Option<BTreeMap<&'static str, &'static str>>,
    /// The classes that may execute late (`late_alu`), when any may.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    late_alu: Vec<&'static str>,
    /// How many stages after issue they execute late, when any may.
    #[serde(skip_serializing_if = "Option::is_none")]
    late_alu_stages: Option<u32>,
    predictor: String,
    mispredict_penalty: u32,
    taken_penalty: u32,
    ras_depth: u32,
    trap_penalty: u32,
    icache: String,
    dcache: String,
    context_free: bool,
}

impl CoreEntry {
    fn new(m: &CoreModel) -> CoreEntry {
        let per_class = |get: &dyn Fn(TimingClass) -> u32| {
            TimingClass::ALL
                .iter()
                .map(|c| (c.key(), get(*c)))
                .collect()
        };
        CoreEntry {
            name: m.name.clone(),
            description: m.description.clone(),
            rv32: m.rv32,
            rv64: m.rv64,
            float: m.float.map(|f| f.name()),
            latency: per_class(&|c| m.latency.get(c)),
            occupancy: per_class(&|c| m.occupancy.get(c)),
            busy: busy(m),
            fp_blocks_all: m.fp_blocks_all,
            issue_width: m.issue_width,
            pipes: (m.issue_width > 1).then(|| {
                TimingClass::ALL
                    .iter()
                    .map(|c| (c.key(), m.pipes.get(*c).name()))
                    .collect()
            }),
            late_alu: m.late_alu.classes().map(|c| c.key()).collect(),
            late_alu_stages: (m.late_alu.stages > 0).then_some(m.late_alu.stages),
            predictor: predictor(m),
            mispredict_penalty: m.branch.mispredict_penalty,
            taken_penalty: m.branch.taken_penalty,
            ras_depth: m.branch.ras_depth,
            trap_penalty: m.trap_penalty,
            icache: cache(&m.icache),
            dcache: cache(&m.dcache),
            context_free: m.is_context_free(),
        }
    }
}

/// A core as a flat CSV record: everything but the per-class tables.
#[derive(Serialize)]
struct CoreCsvRow<'a> {
    name: &'a str,
    description: &'a str,
    rv32: bool,
    rv64: bool,
    float: &'a str,
    /// `CLASS=CYCLES` for each class of [`CoreEntry::busy`], space-separated.
    busy: String,
    fp_blocks_all: bool,
    issue_width: u32,
    /// The classes of [`CoreEntry::late_alu`], space-separated.
    late_alu: String,
    /// [`CoreEntry::late_alu_stages`], 0 for none.
    late_alu_stages: u32,
    predictor: &'a str,
    mispredict_penalty: u32,
    taken_penalty: u32,
    ras_depth: u32,
    trap_penalty: u32,
    icache: &'a str,
    dcache: &'a str,
    context_free: bool,
}

/// What `retrace cores` reports: the presets (a JSON array).
#[derive(Serialize)]
#[serde(transparent)]
pub struct CoresReport {
    cores: Vec<CoreEntry>,
    #[serde(skip)]
    models: Vec<CoreModel>,
}

impl Report for CoresReport {
    fn text(&self) -> String {
        use std::fmt::Write as _;
        let mut o = String::new();
        let _ = writeln!(
            o,
            "{:<12} {:<6} {:<4} {:>5} {:>4} {:>4} {:>4} {:>4} {:<15} {:>4} {:>3} {:<16} {:<16}",
            "core",
            "xlen",
            "fpu",
            "issue",
            "alu",
            "lw",
            "mul",
            "div",
            "predictor",
            "miss",
            "ras",
            "icache",
            "dcache"
        );
        for m in &self.models {
            let xlen = match (m.rv32, m.rv64) {
                (true, true) => "32,64",
                (true, false) => "32",
                _ => "64",
            };
            let l = |c| m.latency.get(c).max(m.occupancy.get(c));
            let _ = writeln!(
                o,
                "{:<12} {:<6} {:<4} {:>5} {:>4} {:>4} {:>4} {:>4} {:<15} {:>4} {:>3} {:<16} {:<16}",
                m.name,
                xlen,
                fpu(m),
                m.issue_width,
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
        let _ = writeln!(o);
        for m in &self.models {
            let _ = writeln!(o, "{:<12} {}", m.name, m.description);
        }
        let busy_cores: Vec<_> = self.models.iter().filter(|m| !busy(m).is_empty()).collect();
        if !busy_cores.is_empty() {
            let _ = writeln!(
                o,
                "\nUnits that take one operation at a time ([busy]: cycles before the next may start):"
            );
            for m in busy_cores {
                let list: Vec<String> = busy(m).iter().map(|(k, v)| format!("{k} {v}")).collect();
                let all = if m.fp_blocks_all {
                    "; no FP operation issues meanwhile"
                } else {
                    ""
                };
                let _ = writeln!(o, "{:<12} {}{all}", m.name, list.join(", "));
            }
        }
        let late_cores: Vec<_> = self
            .models
            .iter()
            .filter(|m| m.late_alu.stages > 0)
            .collect();
        if !late_cores.is_empty() {
            let _ = writeln!(
                o,
                "\nEarly/late execution (late_alu: may issue before its operands are ready, then executes that many stages later):"
            );
            for m in late_cores {
                let list: Vec<&str> = m.late_alu.classes().map(|c| c.key()).collect();
                let _ = writeln!(
                    o,
                    "{:<12} {}, {} stages",
                    m.name,
                    list.join(", "),
                    m.late_alu.stages
                );
            }
        }
        let _ = writeln!(
            o,
            "\nfpu: the FP extensions a core implements (- when it does not say)."
        );
        let _ = writeln!(o, "Cycles are max(latency, occupancy) per class; issue is the instructions issued per cycle at most (a dual-issue core's pipes per class are in --format json); `retrace cores --show NAME` prints a preset's TOML, every field documented in docs/TIMING.md.");
        o
    }

    fn csv(&self) -> anyhow::Result<String> {
        let rows: Vec<CoreCsvRow<'_>> = self
            .cores
            .iter()
            .map(|c| CoreCsvRow {
                name: &c.name,
                description: &c.description,
                rv32: c.rv32,
                rv64: c.rv64,
                float: c.float.unwrap_or(""),
                busy: c
                    .busy
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(" "),
                fp_blocks_all: c.fp_blocks_all,
                issue_width: c.issue_width,
                late_alu: c.late_alu.join(" "),
                late_alu_stages: c.late_alu_stages.unwrap_or(0),
                predictor: &c.predictor,
                mispredict_penalty: c.mispredict_penalty,
                taken_penalty: c.taken_penalty,
                ras_depth: c.ras_depth,
                trap_penalty: c.trap_penalty,
                icache: &c.icache,
                dcache: &c.dcache,
                context_free: c.context_free,
            })
            .collect();
        csv_of(&rows)
    }
}
