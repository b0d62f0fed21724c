//! `retrace estimate` of a trace of several harts (`retrace record --harts
//! N`): the multiprocessor replay of US patent 8,448,140
//! (`retrace_estimate::system`), a core per hart, reporting the makespan,
//! each hart's busy and wait cycles and the contention on each
//! synchronisation object.

use super::common::{analyse, display, hart_cores, hart_frequencies, replay_error, thousands};
use super::estimate::Args;
use super::run::HartsReport;
use crate::report::{hex, print, Report};
use crate::status::{tag, Status};
use anyhow::anyhow;
use retrace_estimate::system::estimate_system_timeline;
use retrace_estimate::Fidelity;
use retrace_program::{Addr, Elf, FunctionRanges};
use retrace_sim::clocked::HartTime;
use retrace_sim::frequency::HartClock;
use serde::Serialize;
use std::process::ExitCode;

/// Contention on one object.
#[derive(Serialize)]
struct ResourceRow {
    #[serde(serialize_with = "hex")]
    object: u64,
    kind: String,
    calls: u64,
    waits: u64,
    wait_cycles: u64,
}

/// What `retrace estimate` of several harts reports.
#[derive(Serialize)]
struct SystemReport {
    program: String,
    trace: String,
    #[serde(serialize_with = "display")]
    fidelity: Fidelity,
    #[serde(flatten)]
    harts: HartsReport,
    resources: Vec<ResourceRow>,
    /// Synchronisation calls replayed.
    calls: u64,
    /// Calls that met their object in another order than recorded (0:
    /// every call returns what it did in the recording, and the replay is
    /// exact).
    reordered: u64,
    /// Per hart, the miss rate of its own data cache the recording
    /// measured, which the data-cache term used (null: its core has no
    /// data cache, or the trace has no measurement for its geometry).
    dcache_miss_rates: Vec<Option<f64>>,
}

impl Report for SystemReport {
    fn text(&self) -> String {
        use std::fmt::Write as _;
        let mut out = self.harts.text();
        if !self.resources.is_empty() {
            let _ = writeln!(
                out,
                "  {:>12} {:>10} {:>10} {:>10} {:>16}",
                "object", "kind", "calls", "waits", "wait cycles"
            );
        }
        for r in &self.resources {
            let _ = writeln!(
                out,
                "  {:>12} {:>10} {:>10} {:>10} {:>16}",
                format!("{:#x}", r.object),
                r.kind,
                thousands(r.calls),
                thousands(r.waits),
                thousands(r.wait_cycles)
            );
        }
        let rates: Vec<String> = self
            .dcache_miss_rates
            .iter()
            .enumerate()
            .filter_map(|(h, r)| r.map(|r| format!("hart {h} {:.2}%", 100.0 * r)))
            .collect();
        if !rates.is_empty() {
            let _ = writeln!(
                out,
                "  data caches: each hart's measured miss rate — {}",
                rates.join(", ")
            );
        }
        let _ = match self.reordered {
            0 => writeln!(
                out,
                "  {} synchronisation calls, each object's in the order recorded",
                thousands(self.calls)
            ),
            n => writeln!(
                out,
                "  {} synchronisation calls, {} of them met their object in another order than recorded: each hart runs its recorded path, which it may not take on these cores, so this is an estimate (record with --schedule-core on these cores for an exact replay)",
                thousands(self.calls),
                thousands(n)
            ),
        };
        out
    }

    fn csv(&self) -> anyhow::Result<String> {
        self.harts.csv()
    }
}

/// `retrace estimate PROG TRACE --core …` for a trace of `harts` harts.
pub fn main(args: &Args, elf: &Elf, shown: &str, harts: usize) -> anyhow::Result<ExitCode> {
    let refuse = |what: &str| {
        Err(tag(
            anyhow!(
                "{what} applies to a trace of one hart; {} holds {harts}",
                args.trace.display()
            ),
            Status::BadInput,
        ))
    };
    if args.check {
        return refuse("--check");
    }
    if args.dcache_miss_rate.is_some() {
        return refuse("--dcache-miss-rate");
    }
    let cores = hart_cores(&args.cores, &args.sets.set, harts, elf, shown, "--core")?;
    let program = analyse(elf, shown)?;
    let fidelity = Fidelity::from(args.fidelity);
    let hz = hart_frequencies(&args.mhz, harts)?;
    let functions = args
        .timeline
        .as_ref()
        .map(|_| FunctionRanges::of_program(&program));
    let source = crate::progress::WatchedTrace::new(&args.trace, "replaying");
    let (est, lines) = estimate_system_timeline(
        &program.table,
        Addr(elf.entry),
        &source,
        &cores,
        &hz,
        fidelity,
        functions.as_ref().map(|f| &f.ranges[..]),
    )
    .map_err(|e| replay_error(&args.trace, e))?;
    source.finish();
    if let (Some(path), Some(FunctionRanges { names, .. })) = (&args.timeline, &functions) {
        let names_of_cores: Vec<String> = cores.iter().map(|c| c.name.clone()).collect();
        let title = format!("retrace estimate: {shown} ({fidelity})");
        let events = super::timeline::events(&title, &names_of_cores, &est, &lines, names)?;
        super::timeline::write(path, &events)?;
    }
    let times: Vec<HartTime> = est
        .harts
        .iter()
        .map(|h| HartTime {
            busy: h.busy,
            wait: h.wait,
            instructions: h.instructions,
            time: h.time,
        })
        .collect();
    let clocks: Vec<&HartClock> = est.clocks.iter().collect();
    let report = SystemReport {
        program: shown.to_string(),
        trace: args.trace.display().to_string(),
        fidelity,
        harts: HartsReport::new(&cores, &times, &clocks),
        resources: est
            .resources
            .iter()
            .map(|r| ResourceRow {
                object: r.object,
                kind: r.kind.clone(),
                calls: r.calls,
                waits: r.waits,
                wait_cycles: r.wait_cycles,
            })
            .collect(),
        calls: est.calls,
        reordered: est.reordered,
        dcache_miss_rates: est
            .dcache
            .iter()
            .map(|m| m.map(|m| m.miss_rate()))
            .collect(),
    };
    let unmeasured: Vec<String> = (0..harts)
        .filter(|&h| cores[h % cores.len()].dcache.is_some() && est.dcache[h].is_none())
        .map(|h| h.to_string())
        .collect();
    if !unmeasured.is_empty() {
        eprintln!(
            "retrace: note: the trace has no miss rate of hart {}'s data cache geometry, so its data-cache term is 0; record again with this retrace (it measures every preset's geometry per hart)",
            unmeasured.join(", ")
        );
    }
    print(&report, args.output.get())?;
    Ok(ExitCode::SUCCESS)
}
