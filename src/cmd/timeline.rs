//! `retrace estimate --timeline FILE`: the estimated run as Chrome Trace
//! Event JSON, which Perfetto and `chrome://tracing` open.
//!
//! For a trace of several harts: one process, the system; a thread track
//! per hart with a slice for each stretch of one function and each wait in
//! a synchronisation call, an instant for each call, and a counter track
//! per hart with its clock frequency.
//!
//! For a trace of one hart (and for `retrace run --core --timeline`, the
//! cycle-level engine's own): a process per core, whose one track holds
//! the call stack over time — a slice for each frame of a function, from
//! the call that opened it to the return that closed it, nested as the
//! calls were ([`retrace_sim::functions::FrameSpan`]).
//!
//! The replay counts each hart's time in its own cycles; every timestamp
//! here is that counter put through `retrace-clock`'s virtual time (a
//! frequency history per hart, docs/CLOCK.md), so harts at different and
//! changing frequencies share one time axis, in microseconds as the format
//! wants them.

use crate::status::{tag, Status};
use anyhow::anyhow;
use retrace_clock::{FrequencyHistory, Hz, ProcessorId};
use retrace_estimate::system::{Doing, HartTimeline, SystemEstimate};
use retrace_sim::frequency::HartClock;
use retrace_sim::functions::SpanLog;
use retrace_sim::sync::SyncOp;
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;

/// A hart's frequency history, as `retrace-clock` keeps it.
fn history(h: usize, clock: &HartClock) -> anyhow::Result<FrequencyHistory> {
    let hz = |hz: u64| Hz::new(hz).ok_or_else(|| anyhow!("hart {h} runs at 0 Hz"));
    let mut history = FrequencyHistory::new(ProcessorId(h as u32), 0, hz(clock.start_hz())?);
    for &(at, to) in clock.changes() {
        history.push_change(at, hz(to)?)?;
    }
    Ok(history)
}

/// Microseconds of virtual time at hart counter value `counter`.
fn micros(history: &FrequencyHistory, counter: u64) -> anyhow::Result<f64> {
    Ok(history.virtual_time(counter)?.0 as f64 / 1e12)
}

/// The timeline's events: see the module documentation. `names[f]` names
/// function `f` of the replay's ranges; `cores[h]` is hart `h`'s core.
pub fn events(
    title: &str,
    cores: &[String],
    est: &SystemEstimate,
    timelines: &[HartTimeline],
    names: &[String],
) -> anyhow::Result<Value> {
    let mut events = vec![json!({
        "ph": "M", "name": "process_name", "pid": 1, "tid": 0,
        "args": { "name": title },
    })];
    for (h, (line, clock)) in timelines.iter().zip(&est.clocks).enumerate() {
        let history = history(h, clock)?;
        let core = &cores[h % cores.len()];
        events.push(json!({
            "ph": "M", "name": "thread_name", "pid": 1, "tid": h,
            "args": { "name": format!("hart {h} ({core})") },
        }));
        events.push(json!({
            "ph": "M", "name": "thread_sort_index", "pid": 1, "tid": h,
            "args": { "sort_index": h },
        }));
        for s in &line.slices {
            let ts = micros(&history, s.start)?;
            let dur = micros(&history, s.end)? - ts;
            let cycles = s.end - s.start;
            events.push(match s.what {
                Doing::Function(f) => json!({
                    "ph": "X", "cat": "run", "pid": 1, "tid": h, "ts": ts, "dur": dur,
                    "name": names.get(f).map_or("(outside any function)", String::as_str),
                    "args": { "cycles": cycles, "first_cycle": s.start },
                }),
                Doing::Wait { op, object } => json!({
                    "ph": "X", "cat": "wait", "pid": 1, "tid": h, "ts": ts, "dur": dur,
                    "name": format!("wait: {} {object:#x}", SyncOp(op)),
                    "args": { "cycles": cycles, "first_cycle": s.start, "call": SyncOp(op).to_string(), "object": format!("{object:#x}") },
                }),
            });
        }
        for &(at, op, object) in &line.calls {
            let mut args = json!({ "cycle": at });
            if object != 0 {
                args["object"] = json!(format!("{object:#x}"));
            }
            events.push(json!({
                "ph": "i", "s": "t", "cat": "sync", "pid": 1, "tid": h,
                "ts": micros(&history, at)?, "name": SyncOp(op).to_string(), "args": args,
            }));
        }
        let counter = format!("hart {h} MHz");
        let mut points = vec![(0, clock.start_hz())];
        points.extend_from_slice(clock.changes());
        for (at, hz) in points {
            events.push(json!({
                "ph": "C", "pid": 1, "name": counter, "ts": micros(&history, at)?,
                "args": { "MHz": hz as f64 / 1e6 },
            }));
        }
    }
    Ok(json!({ "traceEvents": events, "displayTimeUnit": "ns" }))
}

/// One core's run for a one-hart timeline.
pub struct CoreRun<'a> {
    /// The core's name.
    pub core: &'a str,
    /// Its clock, in hertz.
    pub hz: u64,
    /// Its frames' lives, in its cycles.
    pub spans: &'a SpanLog,
    /// The run's cycles on it (the timeline's end).
    pub cycles: u64,
}

/// The one-hart timeline: a process per core in `runs`, its frames nested
/// on one track, in virtual time at the core's clock. `names[f]` names
/// function `f`.
pub fn one_hart_events(title: &str, runs: &[CoreRun], names: &[String]) -> anyhow::Result<Value> {
    let mut events = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        let pid = i + 1;
        let hz = Hz::new(run.hz).ok_or_else(|| anyhow!("core {} runs at 0 Hz", run.core))?;
        let history = FrequencyHistory::new(ProcessorId(0), 0, hz);
        events.push(json!({
            "ph": "M", "name": "process_name", "pid": pid, "tid": 0,
            "args": { "name": format!("{title} on {}", run.core) },
        }));
        events.push(json!({
            "ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0,
            "args": { "sort_index": i },
        }));
        events.push(json!({
            "ph": "M", "name": "thread_name", "pid": pid, "tid": 0,
            "args": { "name": format!("hart 0 ({}, {} cycles)", run.core, run.cycles) },
        }));
        for s in run.spans.spans() {
            let ts = micros(&history, s.start)?;
            events.push(json!({
                "ph": "X", "cat": "function", "pid": pid, "tid": 0, "ts": ts,
                "dur": micros(&history, s.end)? - ts,
                "name": names.get(s.function).map_or("(unknown function)", String::as_str),
                "args": { "cycles": s.end - s.start, "first_cycle": s.start, "depth": s.depth },
            }));
        }
    }
    Ok(json!({ "traceEvents": events, "displayTimeUnit": "ns" }))
}

/// The note for spans a timeline left out, if any: how many, the shortest
/// kept, and the option that keeps more.
pub fn left_out_note(core: &str, spans: &SpanLog) -> Option<String> {
    (spans.left_out() > 0).then(|| {
        format!(
            "retrace: note: the timeline on {core} keeps the {} frames of at least {} cycles; {} shorter ones are left out (--timeline-spans N keeps about N)",
            spans.kept(),
            spans.min_cycles(),
            spans.left_out()
        )
    })
}

/// Write the timeline to `path`.
pub fn write(path: &Path, timeline: &Value) -> anyhow::Result<()> {
    let fail = |e: std::io::Error| {
        tag(
            anyhow!(
                "cannot write the timeline to {}: {e}; check the path",
                path.display()
            ),
            Status::BadInput,
        )
    };
    let file = std::fs::File::create(path).map_err(fail)?;
    let mut out = std::io::BufWriter::new(file);
    serde_json::to_writer(&mut out, timeline).map_err(|e| anyhow!("writing the timeline: {e}"))?;
    out.flush().map_err(fail)
}
