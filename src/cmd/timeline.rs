//! `retrace estimate --timeline FILE` for a trace of several harts: the
//! estimated run as Chrome Trace Event JSON, which Perfetto and
//! `chrome://tracing` open. One process, the system; a thread track per
//! hart with a slice for each stretch of one function and each wait in a
//! synchronisation call, an instant for each call, and a counter track per
//! hart with its clock frequency.
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
