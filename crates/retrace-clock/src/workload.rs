//! Synthetic workloads for measuring correction speed.
//!
//! The shape of a real multi-processor trace: events from several
//! processors interleaved in time order, each processor's counter values
//! increasing, its history full of frequency changes, and offsets that drift
//! between re-synchronisations.

use crate::correct::Corrector;
use crate::history::{FrequencyHistory, Histories};
use crate::rng::Rng;
use crate::sync::{DriftModel, OffsetEstimate, OffsetTrack};
use crate::time::{Hz, ProcessorId, VirtualTime};
use crate::Result;
use serde::Serialize;
use std::time::Instant;

/// Histories, offset tracks and events, ready to correct.
#[derive(Clone, Debug)]
pub struct Workload {
    /// One history per processor.
    pub histories: Histories,
    /// The reference processor (0).
    pub reference: ProcessorId,
    /// Offset tracks of the responders (piecewise, 8 re-synchronisations).
    pub tracks: Vec<(ProcessorId, OffsetTrack)>,
    /// Events `(processor, counter)` in trace order.
    pub events: Vec<(ProcessorId, u64)>,
}

/// Counter range each processor's history and events span.
const SPAN_CYCLES: u64 = 1_000_000_000_000;

/// A workload of `processors` processors with `changes` frequency changes
/// each and `events` events in all, from `seed`.
pub fn synthetic(processors: u32, changes: usize, events: usize, seed: u64) -> Workload {
    let mut rng = Rng::new(seed);
    let mut histories = Histories::new();
    let mut tracks = Vec::new();
    for p in 0..processors {
        let mhz = |rng: &mut Rng| Hz::from_mhz(rng.range(400, 4_000)).expect("positive");
        let mut history = FrequencyHistory::new(ProcessorId(p), 0, mhz(&mut rng));
        let mut counters: Vec<u64> = (0..changes)
            .map(|_| rng.range(1, SPAN_CYCLES - 1))
            .collect();
        counters.sort_unstable();
        counters.dedup();
        for counter in counters {
            history
                .push_change(counter, mhz(&mut rng))
                .expect("sorted and distinct");
        }
        histories.insert(history);
        if p != 0 {
            let estimates: Vec<OffsetEstimate> = (0..8)
                .map(|k| OffsetEstimate {
                    offset: rng.range(0, 1 << 50) as i128,
                    bound: 100_000_000_000,
                    spread: 0.0,
                    rounds_used: 1,
                    rounds_total: 1,
                    at: k * 40 * crate::ATTOS_PER_SECOND as i128,
                })
                .collect();
            let track = OffsetTrack::new(&estimates, DriftModel::Piecewise).expect("non-empty");
            tracks.push((ProcessorId(p), track));
        }
    }
    // Each processor advances by a random step; processors take turns at random.
    let mean_step = SPAN_CYCLES / (events as u64 / processors as u64 + 1);
    let mut next = vec![0u64; processors as usize];
    let events = (0..events)
        .map(|_| {
            let p = rng.range(0, processors as u64 - 1) as usize;
            next[p] += rng.range(0, 2 * mean_step);
            (ProcessorId(p as u32), next[p])
        })
        .collect();
    Workload {
        histories,
        reference: ProcessorId(0),
        tracks,
        events,
    }
}

/// How fast a workload was corrected.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Throughput {
    /// Events corrected.
    pub events: usize,
    /// Wall-clock seconds for the correction alone.
    pub seconds: f64,
    /// Events per second of wall-clock time.
    pub events_per_second: f64,
    /// CPU seconds the correcting thread used (Linux), which other work on
    /// a shared machine does not inflate.
    pub cpu_seconds: Option<f64>,
    /// Events per CPU second (Linux).
    pub events_per_cpu_second: Option<f64>,
    /// A sum of all corrected times, so the work cannot be optimised away
    /// and two runs can be compared.
    pub checksum: i128,
}

/// Correct every event of `workload` once into a preallocated vector.
pub fn measure(workload: &Workload) -> Result<Throughput> {
    let corrector = Corrector::with_tracks(
        &workload.histories,
        workload.reference,
        workload.tracks.clone(),
    );
    // Touch the output once before timing: the first write to fresh pages
    // is the kernel's page-fault cost, not correction.
    let mut out: Vec<VirtualTime> = vec![VirtualTime::default(); workload.events.len()];
    out.clear();
    let cpu_started = thread_cpu_seconds();
    let started = Instant::now();
    corrector.correct_all(workload.events.iter().copied(), &mut out)?;
    let seconds = started.elapsed().as_secs_f64();
    let cpu_seconds = thread_cpu_seconds()
        .zip(cpu_started)
        .map(|(end, start)| end - start);
    let checksum = out.iter().fold(0i128, |sum, t| sum.wrapping_add(t.attos()));
    Ok(Throughput {
        events: out.len(),
        seconds,
        events_per_second: out.len() as f64 / seconds,
        cpu_seconds,
        events_per_cpu_second: cpu_seconds.map(|cpu| out.len() as f64 / cpu),
        checksum,
    })
}

/// Input file syntaxes whose loading [`measure_loading`] times.
pub const LOAD_FORMATS: [&str; 5] = [
    "events-csv",
    "events-json",
    "events-jsonl",
    "history-csv",
    "history-ftrace",
];

/// How fast one input syntax loaded.
#[derive(Clone, Debug, Serialize)]
pub struct LoadThroughput {
    /// Which ([`LOAD_FORMATS`]).
    pub format: &'static str,
    /// Rows parsed.
    pub rows: usize,
    /// Bytes of text parsed.
    pub bytes: usize,
    /// Wall-clock seconds of the parse alone (the fastest of the runs).
    pub seconds: f64,
    /// Rows per second.
    pub rows_per_second: f64,
}

/// The text of `rows` rows in `format` (one of [`LOAD_FORMATS`]): events
/// from two processors with payloads, or frequency changes.
pub fn load_text(format: &str, rows: usize) -> String {
    use std::fmt::Write;
    let mut t = String::with_capacity(rows * 48);
    match format {
        "events-csv" => {
            t.push_str("processor,counter,payload\n");
            for i in 0..rows {
                let _ = writeln!(t, "{},{},event {i}", i % 2, i * 10);
            }
        }
        "events-json" | "events-jsonl" => {
            let lines = format == "events-jsonl";
            if !lines {
                t.push('[');
            }
            for i in 0..rows {
                if !lines && i > 0 {
                    t.push(',');
                }
                let _ = write!(
                    t,
                    r#"{{"processor":{},"counter":{},"payload":"event {i}"}}"#,
                    i % 2,
                    i * 10
                );
                if lines {
                    t.push('\n');
                }
            }
            if !lines {
                t.push_str("]\n");
            }
        }
        "history-csv" => {
            t.push_str("processor,counter,khz\n");
            for i in 0..rows {
                let _ = writeln!(
                    t,
                    "{},{},{}",
                    i % 2,
                    (i / 2) * 1000,
                    400_000 + (i % 7) * 100_000
                );
            }
        }
        "history-ftrace" => {
            t.push_str("# tracer: nop\n");
            for i in 0..rows {
                let _ = writeln!(
                    t,
                    "          <idle>-0       [00{}] d..2. {}: cpu_frequency: state={} cpu_id={}",
                    i % 2,
                    1000 + i * 10,
                    400_000 + (i % 7) * 100_000,
                    i % 2
                );
            }
        }
        other => panic!("unknown load format {other}"),
    }
    t
}

/// Parse `rows` rows of each of [`LOAD_FORMATS`], `runs` times each, and
/// report the fastest parse of each: the loading half of `clock correct`,
/// which must keep up with the correction (at least a million rows a
/// second; reading JSON once rescanned the text for every row's line
/// number and took minutes for 80,000 rows).
pub fn measure_loading(rows: usize, runs: u32) -> Result<Vec<LoadThroughput>> {
    use crate::formats::{parse_events, parse_history, ReadOptions};
    let options = ReadOptions::default();
    let path = std::path::Path::new("bench");
    let mut out = Vec::new();
    for format in LOAD_FORMATS {
        let text = load_text(format, rows);
        let mut best = f64::INFINITY;
        for _ in 0..runs.max(1) {
            let started = Instant::now();
            if format.starts_with("events") {
                let events = parse_events(&text, path, options)?.events.len();
                debug_assert_eq!(events, rows, "{format}");
            } else {
                let histories = parse_history(&text, path, options)?.histories.len();
                debug_assert_eq!(histories, 2.min(rows), "{format}");
            }
            best = best.min(started.elapsed().as_secs_f64());
        }
        out.push(LoadThroughput {
            format,
            rows,
            bytes: text.len(),
            seconds: best,
            rows_per_second: rows as f64 / best.max(1e-9),
        });
    }
    Ok(out)
}

/// CPU time of the calling thread.
#[cfg(target_os = "linux")]
fn thread_cpu_seconds() -> Option<f64> {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec, which `now` is.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    (status == 0).then_some(now.tv_sec as f64 + now.tv_nsec as f64 * 1e-9)
}

#[cfg(not(target_os = "linux"))]
fn thread_cpu_seconds() -> Option<f64> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The load benchmark's texts are valid files of their syntax: every
    /// row is read, none skipped.
    #[test]
    fn load_texts_parse_in_full() {
        use crate::formats::{parse_events, parse_history, ReadOptions};
        let path = std::path::Path::new("t");
        for format in LOAD_FORMATS {
            let text = load_text(format, 1000);
            if format.starts_with("events") {
                let f = parse_events(&text, path, ReadOptions::default()).unwrap();
                assert_eq!((f.events.len(), f.skipped.total), (1000, 0), "{format}");
            } else {
                let f = parse_history(&text, path, ReadOptions::default()).unwrap();
                assert_eq!((f.histories.len(), f.skipped.total), (2, 0), "{format}");
            }
        }
        let rates = measure_loading(1000, 1).unwrap();
        assert_eq!(rates.len(), LOAD_FORMATS.len());
        assert!(rates
            .iter()
            .all(|r| r.rows == 1000 && r.rows_per_second > 0.0));
    }

    #[test]
    fn small_workload_corrects_every_event() {
        let workload = synthetic(3, 100, 10_000, 1);
        assert_eq!(workload.histories.by_index(1).changes(), 100);
        let first = measure(&workload).unwrap();
        assert_eq!(first.events, 10_000);
        assert_eq!(first.checksum, measure(&workload).unwrap().checksum);
    }
}
