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

    #[test]
    fn small_workload_corrects_every_event() {
        let workload = synthetic(3, 100, 10_000, 1);
        assert_eq!(workload.histories.by_index(1).changes(), 100);
        let first = measure(&workload).unwrap();
        assert_eq!(first.events, 10_000);
        assert_eq!(first.checksum, measure(&workload).unwrap().checksum);
    }
}
