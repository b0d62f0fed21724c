//! Ground-truth simulation: processors whose true timing is known, run
//! through the same files-to-timeline path as real traces, to measure each
//! estimator's error.
//!
//! Real time is an integer count of attoseconds. Each processor has a start
//! counter value (its counter reads it at real time 0), a schedule of
//! frequency changes at counter values — a change happens between two
//! cycles, so at an integer count — and a drift in parts per billion: its
//! oscillator runs at `nominal × (1 + drift)` while its history records only
//! the nominal frequency, as a real power manager would. Processor 0 is the
//! reference; it starts at counter 0 and does not drift, so its virtual time
//! *is* real time and every corrected event can be compared with the real
//! instant it happened.
//!
//! The exchange runs in real time: each message takes a delay drawn from a
//! base, an exponential jitter and rare outliers (an interrupt, a cache
//! miss), optionally slower in one direction than the other.

use crate::correct::{synchronise, Corrector, SyncRow};
use crate::history::{FrequencyHistory, Histories};
use crate::rng::Rng;
use crate::sync::{DriftModel, OffsetEstimator, OffsetTrack};
use crate::time::{Hz, ProcessorId, VirtualTime, ATTOS_PER_NANOSECOND, ATTOS_PER_SECOND};
use crate::Result;
use serde::Serialize;

const PPB: i128 = 1_000_000_000;

/// The P-states processors switch between (MHz): a spread like a laptop
/// CPU's, none a divisor of 10¹⁸ attoseconds except by accident, so that
/// virtual-time arithmetic is exercised with inexact intervals.
const P_STATES_MHZ: [u64; 8] = [400, 800, 1_100, 1_700, 2_100, 2_400, 3_300, 3_700];

/// Message delays of the exchange.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Delays {
    /// Fixed part of a reference→responder message (ns).
    pub forward_ns: f64,
    /// Fixed part of a responder→reference message (ns); differs from
    /// `forward_ns` for an asymmetric path.
    pub backward_ns: f64,
    /// Mean of the exponential jitter added to every message (ns).
    pub jitter_ns: f64,
    /// Probability that a message is an outlier.
    pub outlier_probability: f64,
    /// An outlier adds a uniform delay up to this (ns).
    pub outlier_ns: f64,
    /// Time a side takes between reading its counter and replying (ns, uniform 0..this).
    pub turnaround_ns: f64,
}

/// What one simulated world looks like.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Scenario {
    /// Short name for reports.
    pub name: &'static str,
    /// Processors, reference included.
    pub processors: u32,
    /// Frequency changes per processor.
    pub changes: usize,
    /// Largest start counter value of a responder (0: all start together).
    pub max_start_counter: u64,
    /// Largest drift magnitude (parts per billion; 0: none).
    pub max_drift_ppb: i64,
    /// Message delays.
    pub delays: Delays,
    /// Rounds per synchronisation.
    pub rounds: usize,
    /// Synchronisations per responder, spread evenly over the run.
    pub sessions: usize,
    /// Events per processor, at random instants.
    pub events: usize,
    /// Length of the run (seconds of real time).
    pub duration_s: f64,
}

impl Scenario {
    /// Frequency changes only: counters start together, no drift, no sync.
    pub fn dvfs_only(processors: u32, changes: usize) -> Scenario {
        Scenario {
            name: "dvfs-only",
            processors,
            changes,
            max_start_counter: 0,
            max_drift_ppb: 0,
            delays: Delays::symmetric(),
            rounds: 0,
            sessions: 0,
            events: 2_000,
            duration_s: 2.0,
        }
    }

    /// Start offsets and symmetric, jittery delays; one synchronisation.
    pub fn symmetric(processors: u32) -> Scenario {
        Scenario {
            name: "symmetric",
            max_start_counter: 5_000_000_000,
            rounds: 64,
            sessions: 1,
            changes: 200,
            ..Scenario::dvfs_only(processors, 0)
        }
    }

    /// Start offsets, a slower return path and outliers.
    pub fn asymmetric(processors: u32) -> Scenario {
        Scenario {
            name: "asymmetric",
            delays: Delays::asymmetric(),
            ..Scenario::symmetric(processors)
        }
    }

    /// Symmetric delays with drift up to ±50 ppm, re-synchronised 8 times.
    pub fn drift(processors: u32) -> Scenario {
        Scenario {
            name: "drift",
            max_drift_ppb: 50_000,
            sessions: 8,
            ..Scenario::symmetric(processors)
        }
    }
}

impl Delays {
    /// Same distribution both ways: base 80 ns, jitter 40 ns, 2 % outliers up to 5 µs.
    pub fn symmetric() -> Delays {
        Delays {
            forward_ns: 80.0,
            backward_ns: 80.0,
            jitter_ns: 40.0,
            outlier_probability: 0.02,
            outlier_ns: 5_000.0,
            turnaround_ns: 30.0,
        }
    }

    /// The return path 60 ns slower, and 5 % outliers up to 20 µs.
    pub fn asymmetric() -> Delays {
        Delays {
            backward_ns: 140.0,
            outlier_probability: 0.05,
            outlier_ns: 20_000.0,
            ..Delays::symmetric()
        }
    }

    fn draw(&self, rng: &mut Rng, base_ns: f64) -> i128 {
        let mut ns = base_ns + rng.exponential(self.jitter_ns);
        if rng.chance(self.outlier_probability) {
            ns += rng.unit() * self.outlier_ns;
        }
        (ns * ATTOS_PER_NANOSECOND as f64) as i128
    }

    fn turnaround(&self, rng: &mut Rng) -> i128 {
        (rng.unit() * self.turnaround_ns * ATTOS_PER_NANOSECOND as f64) as i128
    }
}

/// The true timing of one processor: segments of constant frequency with
/// the real time and counter value at which each begins.
#[derive(Clone, Debug)]
struct TrueClock {
    /// Real time (attoseconds) at which each segment begins.
    real_starts: Vec<i128>,
    /// Counter value at which each segment begins.
    counter_starts: Vec<u64>,
    hz: Vec<u64>,
    drift_ppb: i128,
}

impl TrueClock {
    /// The counter value at real time `t` (≥ 0): whole cycles only.
    fn counter_at(&self, t: i128) -> u64 {
        let k = self
            .real_starts
            .partition_point(|&s| s <= t)
            .saturating_sub(1);
        let elapsed = (t - self.real_starts[k]).max(0);
        let cycles = elapsed * self.hz[k] as i128 * (PPB + self.drift_ppb)
            / (ATTOS_PER_SECOND as i128 * PPB);
        self.counter_starts[k] + cycles as u64
    }

    /// The processor's own virtual time at real time `t`, without rounding
    /// to a whole cycle: its history's time at the segment start, plus the
    /// elapsed real time scaled by the drift (virtual time assumes nominal
    /// frequency, the counter runs `1 + drift` faster).
    fn continuous_virtual_time(&self, history: &FrequencyHistory, t: i128) -> i128 {
        let k = self
            .real_starts
            .partition_point(|&s| s <= t)
            .saturating_sub(1);
        let at_start = history
            .virtual_time(self.counter_starts[k])
            .expect("in history")
            .attos();
        at_start + (t - self.real_starts[k]) * (PPB + self.drift_ppb) / PPB
    }

    fn history(&self, processor: ProcessorId) -> FrequencyHistory {
        let hz = |k: usize| Hz::new(self.hz[k]).expect("P-states are positive");
        let mut history = FrequencyHistory::new(processor, self.counter_starts[0], hz(0));
        for k in 1..self.hz.len() {
            history
                .push_change(self.counter_starts[k], hz(k))
                .expect("increasing by construction");
        }
        history
    }
}

fn random_clock(rng: &mut Rng, scenario: &Scenario, is_reference: bool) -> TrueClock {
    let duration = (scenario.duration_s * ATTOS_PER_SECOND as f64) as i128;
    let start = if is_reference {
        0
    } else {
        rng.range(0, scenario.max_start_counter)
    };
    let drift_ppb = if is_reference || scenario.max_drift_ppb == 0 {
        0
    } else {
        let max = scenario.max_drift_ppb as u64;
        rng.range(0, 2 * max) as i128 - max as i128
    };
    let pick = |rng: &mut Rng| {
        P_STATES_MHZ[rng.range(0, P_STATES_MHZ.len() as u64 - 1) as usize] * 1_000_000
    };
    let mut clock = TrueClock {
        real_starts: vec![0],
        counter_starts: vec![start],
        hz: vec![pick(rng)],
        drift_ppb,
    };
    // Changes at random counter values, on average evenly over the run,
    // continuing one extra interval past the end so events near it are covered.
    let mean_interval_s = scenario.duration_s / (scenario.changes as f64 + 1.0);
    let mut real = 0i128;
    for _ in 0..scenario.changes {
        let hz = *clock.hz.last().expect("non-empty") as i128;
        let rate = hz * (PPB + drift_ppb);
        let seconds = mean_interval_s * (0.5 + rng.unit());
        let cycles = ((seconds * hz as f64) as i128).max(1);
        // The real time of cycle boundary `counter + cycles`, rounded up to
        // a whole attosecond so that `counter_at` there reads exactly it.
        let elapsed = (cycles * ATTOS_PER_SECOND as i128 * PPB + rate - 1) / rate;
        real += elapsed;
        let counter = clock.counter_starts.last().expect("non-empty") + cycles as u64;
        clock.real_starts.push(real);
        clock.counter_starts.push(counter);
        clock.hz.push(pick(rng));
    }
    debug_assert!(real <= 2 * duration);
    clock
}

/// The error of one estimator in one trial.
#[derive(Clone, Debug, Default, Serialize)]
pub struct EstimatorTrial {
    /// `|estimate − truth|` of each offset estimate (ns), one per responder and session.
    pub offset_errors_ns: Vec<f64>,
    /// The bound each estimate reported (ns), parallel to `offset_errors_ns`.
    pub bounds_ns: Vec<f64>,
    /// `|corrected − true|` of every event (ns).
    pub event_errors_ns: Vec<f64>,
}

/// Outcome of one simulated trial.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Trial {
    /// Per estimator (in [`OffsetEstimator::ALL`] order).
    pub estimators: Vec<EstimatorTrial>,
    /// Largest `|corrected − true|` over all events divided by the cycle
    /// length of the processor at that event: below 1 means within one tick.
    pub max_error_ticks: f64,
}

/// Run one trial of `scenario` with drift model `drift`.
pub fn run_trial(scenario: &Scenario, seed: u64, drift: DriftModel) -> Result<Trial> {
    let mut rng = Rng::new(seed);
    let clocks: Vec<TrueClock> = (0..scenario.processors)
        .map(|p| random_clock(&mut rng.fork(), scenario, p == 0))
        .collect();
    let mut histories = Histories::new();
    for (p, clock) in clocks.iter().enumerate() {
        histories.insert(clock.history(ProcessorId(p as u32)));
    }
    let duration = (scenario.duration_s * ATTOS_PER_SECOND as f64) as i128;

    // The exchanges, and the true offset at each session's middle.
    let mut rows = Vec::new();
    let mut exchange_rng = rng.fork();
    let mut true_offsets: Vec<(u32, u64, i128)> = Vec::new();
    for responder in 1..scenario.processors {
        for session in 0..scenario.sessions {
            let begin = duration * (2 * session as i128 + 1) / (2 * scenario.sessions as i128);
            let mut t = begin;
            let mut answer_times = Vec::new();
            for _ in 0..scenario.rounds {
                let (row, answered) = exchange(
                    &mut exchange_rng,
                    &scenario.delays,
                    &clocks,
                    responder,
                    &mut t,
                );
                rows.push(SyncRow {
                    session: session as u64,
                    ..row
                });
                answer_times.push(answered);
                // Rounds follow each other after a short pause.
                t += 500 * ATTOS_PER_NANOSECOND;
            }
            let middle = answer_times.iter().sum::<i128>() / answer_times.len().max(1) as i128;
            let reference_time = clocks[0].continuous_virtual_time(histories.by_index(0), middle);
            let own = clocks[responder as usize]
                .continuous_virtual_time(histories.by_index(responder as usize), middle);
            true_offsets.push((responder, session as u64, reference_time - own));
        }
    }

    // Events at random real instants.
    let mut event_rng = rng.fork();
    let mut events: Vec<(ProcessorId, u64, i128, u64)> = Vec::new();
    for (p, clock) in clocks.iter().enumerate() {
        for _ in 0..scenario.events {
            let t = event_rng.range(0, duration as u64) as i128;
            let counter = clock.counter_at(t);
            let k = clock.counter_starts.partition_point(|&c| c <= counter) - 1;
            events.push((ProcessorId(p as u32), counter, t, clock.hz[k]));
        }
    }
    // The reference's virtual time is real time up to the history's rounding.
    let reference_origin = 0i128;

    let mut trial = Trial::default();
    for estimator in OffsetEstimator::ALL {
        let mut outcome = EstimatorTrial::default();
        let corrector_tracks: Vec<(ProcessorId, OffsetTrack)> = if rows.is_empty() {
            (1..scenario.processors)
                .map(|p| (ProcessorId(p), OffsetTrack::constant(0)))
                .collect()
        } else {
            let sync = synchronise(&histories, &rows, estimator, drift)?;
            for &(responder, session, truth) in &true_offsets {
                let estimate =
                    &sync.responders[&ProcessorId(responder)].estimates[session as usize];
                outcome
                    .offset_errors_ns
                    .push((estimate.offset - truth).abs() as f64 / 1e9);
                outcome.bounds_ns.push(estimate.bound as f64 / 1e9);
            }
            sync.responders
                .iter()
                .map(|(&p, r)| (p, r.track.clone()))
                .collect()
        };
        let corrector = Corrector::with_tracks(&histories, ProcessorId(0), corrector_tracks);
        let mut pass = corrector.pass();
        for &(processor, counter, truth, hz) in &events {
            let corrected: VirtualTime = pass.correct(processor, counter)?;
            let error = (corrected.attos() - reference_origin - truth).abs();
            outcome.event_errors_ns.push(error as f64 / 1e9);
            let tick = Hz::new(hz).expect("positive").tick_attos() as f64;
            trial.max_error_ticks = trial.max_error_ticks.max(error as f64 / tick);
        }
        trial.estimators.push(outcome);
    }
    Ok(trial)
}

/// One round between processor 0 and `responder` starting at real time
/// `*t`; advances `*t` past it and returns the row and when B was read.
fn exchange(
    rng: &mut Rng,
    delays: &Delays,
    clocks: &[TrueClock],
    responder: u32,
    t: &mut i128,
) -> (SyncRow, i128) {
    let reference = &clocks[0];
    let other = &clocks[responder as usize];
    let a_up = reference.counter_at(*t);
    let answered = *t + delays.draw(rng, delays.forward_ns);
    let b_up = other.counter_at(answered);
    let heard = answered + delays.turnaround(rng) + delays.draw(rng, delays.backward_ns);
    let c_up = reference.counter_at(heard);
    let swapped = heard + delays.turnaround(rng);
    let a = other.counter_at(swapped);
    let echoed = swapped + delays.draw(rng, delays.backward_ns);
    let b = reference.counter_at(echoed);
    let back = echoed + delays.turnaround(rng) + delays.draw(rng, delays.forward_ns);
    let c = other.counter_at(back);
    *t = back;
    let row = SyncRow {
        reference: ProcessorId(0),
        responder: ProcessorId(responder),
        session: 0,
        counters: [a_up, b_up, c_up, a, b, c],
        location: None,
    };
    (row, answered)
}

/// Summary of one estimator over many trials.
#[derive(Clone, Debug, Serialize)]
pub struct EstimatorSummary {
    /// The estimator.
    pub estimator: OffsetEstimator,
    /// Fraction of offset estimates within their reported bound.
    pub within_bound: f64,
    /// Mean `|offset error|` (ns).
    pub mean_offset_error_ns: f64,
    /// 99th percentile of `|offset error|` (ns).
    pub p99_offset_error_ns: f64,
    /// Mean reported bound (ns).
    pub mean_bound_ns: f64,
    /// 99th percentile of `|event error|` (ns).
    pub p99_event_error_ns: f64,
    /// Largest `|event error|` (ns).
    pub max_event_error_ns: f64,
}

/// Summary of a scenario over many trials.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// The scenario.
    pub scenario: Scenario,
    /// The drift model used.
    pub drift: DriftModel,
    /// Trials run.
    pub trials: u64,
    /// First seed; trial `i` uses `seed + i`.
    pub seed: u64,
    /// Per estimator.
    pub estimators: Vec<EstimatorSummary>,
    /// Largest event error in ticks of the event's own processor.
    pub max_error_ticks: f64,
}

/// Run `trials` trials of `scenario` with seeds `seed`, `seed + 1`, ….
pub fn run(scenario: &Scenario, seed: u64, trials: u64, drift: DriftModel) -> Result<Summary> {
    let mut all: Vec<EstimatorTrial> = vec![EstimatorTrial::default(); OffsetEstimator::ALL.len()];
    let mut max_error_ticks: f64 = 0.0;
    for i in 0..trials {
        let trial = run_trial(scenario, seed.wrapping_add(i), drift)?;
        max_error_ticks = max_error_ticks.max(trial.max_error_ticks);
        for (sum, one) in all.iter_mut().zip(trial.estimators) {
            sum.offset_errors_ns.extend(one.offset_errors_ns);
            sum.bounds_ns.extend(one.bounds_ns);
            sum.event_errors_ns.extend(one.event_errors_ns);
        }
    }
    let estimators = OffsetEstimator::ALL
        .iter()
        .zip(&mut all)
        .map(|(&estimator, t)| {
            let count = t.offset_errors_ns.len().max(1) as f64;
            let within = t
                .offset_errors_ns
                .iter()
                .zip(&t.bounds_ns)
                .filter(|(e, b)| e <= b)
                .count();
            EstimatorSummary {
                estimator,
                within_bound: if t.offset_errors_ns.is_empty() {
                    1.0
                } else {
                    within as f64 / count
                },
                mean_offset_error_ns: t.offset_errors_ns.iter().sum::<f64>() / count,
                p99_offset_error_ns: percentile(&mut t.offset_errors_ns, 0.99),
                mean_bound_ns: t.bounds_ns.iter().sum::<f64>() / count,
                p99_event_error_ns: percentile(&mut t.event_errors_ns, 0.99),
                max_event_error_ns: percentile(&mut t.event_errors_ns, 1.0),
            }
        })
        .collect();
    Ok(Summary {
        scenario: *scenario,
        drift,
        trials,
        seed,
        estimators,
        max_error_ticks,
    })
}

/// The `q` quantile (nearest rank) of `values`; 0 when empty.
pub fn percentile(values: &mut [f64], q: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let rank = ((q * values.len() as f64).ceil() as usize).clamp(1, values.len());
    values[rank - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn true_clock_reads_its_change_points_exactly() {
        let scenario = Scenario {
            max_drift_ppb: 40_000,
            ..Scenario::dvfs_only(2, 50)
        };
        let clock = random_clock(&mut Rng::new(3), &scenario, false);
        for k in 1..clock.hz.len() {
            assert_eq!(
                clock.counter_at(clock.real_starts[k]),
                clock.counter_starts[k]
            );
            assert_eq!(
                clock.counter_at(clock.real_starts[k] - 1),
                clock.counter_starts[k] - 1
            );
        }
    }

    #[test]
    fn dvfs_only_is_exact_within_a_tick() {
        let summary = run(&Scenario::dvfs_only(3, 1_000), 1, 3, DriftModel::Piecewise).unwrap();
        assert!(summary.max_error_ticks < 1.0, "{summary:?}");
    }

    #[test]
    fn symmetric_estimates_stay_within_their_bounds() {
        let summary = run(&Scenario::symmetric(3), 11, 20, DriftModel::Piecewise).unwrap();
        for e in &summary.estimators {
            assert_eq!(e.within_bound, 1.0, "{e:?}");
        }
    }
}
