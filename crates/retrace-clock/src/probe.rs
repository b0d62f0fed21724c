//! The host probe: the patent's exchange between two CPUs of this machine.
//!
//! Two threads, each pinned to one CPU, pass a sequence number through one
//! shared cache line and read the time-stamp counter (`rdtscp` on x86-64;
//! a monotonic clock elsewhere) at each step of the A, B, C / a, b, c
//! exchange. On a machine whose TSC is constant and synchronised across
//! CPUs (`constant_tsc`, `nonstop_tsc`), the true offset is 0, so whatever
//! the estimators report is their error on real hardware, and the round
//! trip is the cost of moving a cache line between the two cores.

use crate::error::{Error, Result};
use crate::simulate::percentile;
use crate::sync::{estimate, OffsetEstimate, OffsetEstimator, SyncRound};
use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// What to run.
#[derive(Clone, Copy, Debug)]
pub struct ProbeConfig {
    /// The reference's CPU and the responder's CPU.
    pub cpus: (usize, usize),
    /// Number of rounds.
    pub rounds: usize,
}

/// An estimator's result, in counter ticks and nanoseconds.
#[derive(Clone, Debug, Serialize)]
pub struct ProbeEstimate {
    /// The estimator.
    pub estimator: OffsetEstimator,
    /// The estimate in counter ticks.
    pub ticks: OffsetEstimate,
    /// Offset (ns).
    pub offset_ns: f64,
    /// Error bound (ns).
    pub bound_ns: f64,
    /// Spread of the rounds used (ns).
    pub spread_ns: f64,
}

/// A distribution summary in ticks and nanoseconds.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Distribution {
    /// Smallest (ns).
    pub min_ns: f64,
    /// Median (ns).
    pub median_ns: f64,
    /// 99th percentile (ns).
    pub p99_ns: f64,
    /// Largest (ns).
    pub max_ns: f64,
}

/// Whether the probe's two threads ran pinned to their CPUs.
///
/// Serialised as `true` when they did, and as `{"not_pinned": "why"}` when
/// they did not, so that a reader tests one field either way.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pinning {
    /// Both threads were pinned.
    Pinned,
    /// At least one thread was not; why not.
    NotPinned(String),
}

impl Serialize for Pinning {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self {
            Pinning::Pinned => s.serialize_bool(true),
            Pinning::NotPinned(why) => {
                let mut map = s.serialize_map(Some(1))?;
                map.serialize_entry("not_pinned", why)?;
                map.end()
            }
        }
    }
}

/// What the probe measured.
#[derive(Clone, Debug, Serialize)]
pub struct ProbeReport {
    /// `rdtscp` or `monotonic clock`.
    pub counter: &'static str,
    /// Counter ticks per second, measured against the OS monotonic clock.
    pub ticks_per_second: f64,
    /// The two CPUs.
    pub cpus: (usize, usize),
    /// Whether both threads were pinned (else why not).
    pub pinned: Pinning,
    /// CPU flags that promise a usable TSC (Linux `/proc/cpuinfo`).
    pub tsc_flags: Vec<String>,
    /// Rounds run.
    pub rounds: usize,
    /// One estimate per estimator.
    pub estimates: Vec<ProbeEstimate>,
    /// The round trips `C − A` and `c − a` of every round.
    pub round_trip: Distribution,
    /// Reads that went backwards on the same thread (must be 0).
    pub backward_steps: u64,
    /// Rounds where a read on one CPU is outside the interval the other
    /// CPU's reads put around it (B outside [A, C] or b outside [a, c]):
    /// impossible if the counters agree; each one proves an offset.
    pub causality_violations: u64,
}

/// One cache line, so the two threads share exactly one line and nothing else.
#[repr(align(64))]
struct Line(AtomicU64);

/// Run the probe.
pub fn run(config: ProbeConfig) -> Result<ProbeReport> {
    if config.rounds == 0 {
        return Err(Error::InvalidArgument(
            "the probe needs at least one round".into(),
        ));
    }
    let rounds = config.rounds;
    let line = Line(AtomicU64::new(0));
    let started = Instant::now();
    let first_read = read_counter();
    let (reference, responder) = std::thread::scope(|scope| {
        let line = &line;
        let reference = scope.spawn(move || {
            let pinned = pin_to(config.cpus.0);
            let mut reads = Vec::with_capacity(rounds);
            for k in 0..rounds as u64 {
                let base = 4 * k;
                let asked = read_counter();
                line.0.store(base + 1, Ordering::Release);
                wait_for(line, base + 2);
                let heard = read_counter();
                wait_for(line, base + 3);
                let answered = read_counter();
                line.0.store(base + 4, Ordering::Release);
                reads.push([asked, heard, answered]);
            }
            (pinned, reads)
        });
        let responder = scope.spawn(move || {
            let pinned = pin_to(config.cpus.1);
            let mut reads = Vec::with_capacity(rounds);
            for k in 0..rounds as u64 {
                let base = 4 * k;
                wait_for(line, base + 1);
                let answered = read_counter();
                line.0.store(base + 2, Ordering::Release);
                let asked = read_counter();
                line.0.store(base + 3, Ordering::Release);
                wait_for(line, base + 4);
                let heard = read_counter();
                reads.push([answered, asked, heard]);
            }
            (pinned, reads)
        });
        (reference.join(), responder.join())
    });
    let (pinned_reference, reference) = reference.expect("the probe thread does not panic");
    let (pinned_responder, responder) = responder.expect("the probe thread does not panic");
    // Calibrate over at least 200 ms so the rate is good to ~10⁻⁵.
    let elapsed = started.elapsed();
    if elapsed < Duration::from_millis(200) {
        std::thread::sleep(Duration::from_millis(200) - elapsed);
    }
    let last_read = read_counter();
    let seconds = started.elapsed().as_secs_f64();
    let ticks_per_second = (last_read - first_read) as f64 / seconds;
    let ns_per_tick = 1e9 / ticks_per_second;

    let mut sync_rounds = Vec::with_capacity(rounds);
    let mut round_trips = Vec::with_capacity(2 * rounds);
    let mut causality_violations = 0;
    for (&[a_up, c_up, b], &[b_up, a, c]) in reference.iter().zip(&responder) {
        let round = SyncRound {
            reference_asks: a_up as i128,
            responder_answers: b_up as i128,
            reference_hears: c_up as i128,
            responder_asks: a as i128,
            reference_answers: b as i128,
            responder_hears: c as i128,
            resolution: 1,
        };
        round_trips.push((c_up - a_up) as f64 * ns_per_tick);
        round_trips.push((c - a) as f64 * ns_per_tick);
        let reference_read_inside = a <= b && b <= c;
        if !(a_up <= b_up && b_up <= c_up && reference_read_inside) {
            causality_violations += 1;
        }
        sync_rounds.push(round);
    }
    let backward = |reads: &[[u64; 3]]| {
        reads
            .iter()
            .flatten()
            .zip(reads.iter().flatten().skip(1))
            .filter(|(x, y)| y < x)
            .count()
    };
    let backward_steps = (backward(&reference) + backward(&responder)) as u64;
    let estimates = OffsetEstimator::ALL
        .iter()
        .map(|&estimator| {
            let ticks = estimate(&sync_rounds, estimator)?;
            Ok(ProbeEstimate {
                estimator,
                offset_ns: ticks.offset as f64 * ns_per_tick,
                bound_ns: ticks.bound as f64 * ns_per_tick,
                spread_ns: ticks.spread * ns_per_tick,
                ticks,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let round_trip = Distribution {
        min_ns: percentile(&mut round_trips, 0.0),
        median_ns: percentile(&mut round_trips, 0.5),
        p99_ns: percentile(&mut round_trips, 0.99),
        max_ns: percentile(&mut round_trips, 1.0),
    };
    Ok(ProbeReport {
        counter: COUNTER_NAME,
        ticks_per_second,
        cpus: config.cpus,
        pinned: match pinned_reference.and(pinned_responder) {
            Ok(()) => Pinning::Pinned,
            Err(why) => Pinning::NotPinned(why),
        },
        tsc_flags: tsc_flags(),
        rounds,
        estimates,
        round_trip,
        backward_steps,
        causality_violations,
    })
}

/// Spin until the shared line reaches `value`; yield now and then, so that
/// two threads on one CPU (or a CPU shared with other work) still progress.
#[inline]
fn wait_for(line: &Line, value: u64) {
    let mut spins = 0u32;
    while line.0.load(Ordering::Acquire) < value {
        std::hint::spin_loop();
        spins += 1;
        if spins.is_multiple_of(100_000) {
            std::thread::yield_now();
        }
    }
}

#[cfg(target_arch = "x86_64")]
const COUNTER_NAME: &str = "rdtscp";
#[cfg(not(target_arch = "x86_64"))]
const COUNTER_NAME: &str = "monotonic clock";

#[cfg(target_arch = "x86_64")]
#[inline]
fn read_counter() -> u64 {
    if has_rdtscp() {
        let mut processor = 0u32;
        // SAFETY: RDTSCP exists on this CPU (checked through CPUID once) and
        // only reads the time-stamp counter and IA32_TSC_AUX.
        unsafe { core::arch::x86_64::__rdtscp(&mut processor) }
    } else {
        monotonic_ns()
    }
}

#[cfg(target_arch = "x86_64")]
fn has_rdtscp() -> bool {
    use std::sync::OnceLock;
    static HAS: OnceLock<bool> = OnceLock::new();
    *HAS.get_or_init(|| {
        // CPUID leaf 0x8000_0001, EDX bit 27: RDTSCP.
        #[allow(unused_unsafe)]
        // SAFETY: CPUID is available on every x86-64 processor.
        let max_extended = unsafe { core::arch::x86_64::__cpuid(0x8000_0000) }.eax;
        max_extended >= 0x8000_0001 && {
            #[allow(unused_unsafe)]
            // SAFETY: as above; the leaf exists (checked against the maximum).
            let leaf = unsafe { core::arch::x86_64::__cpuid(0x8000_0001) };
            leaf.edx & (1 << 27) != 0
        }
    })
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn read_counter() -> u64 {
    monotonic_ns()
}

/// Nanoseconds of the OS monotonic clock since the first call.
fn monotonic_ns() -> u64 {
    use std::sync::OnceLock;
    static BASE: OnceLock<Instant> = OnceLock::new();
    BASE.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

#[cfg(target_os = "linux")]
fn pin_to(cpu: usize) -> std::result::Result<(), String> {
    // SAFETY: cpu_set_t is plain data; CPU_SET writes within it for
    // cpu < CPU_SETSIZE (checked); sched_setaffinity(0, …) affects only the
    // calling thread.
    unsafe {
        if cpu >= libc::CPU_SETSIZE as usize {
            return Err(format!("CPU {cpu} is beyond the affinity mask"));
        }
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(format!("CPU {cpu}: {}", std::io::Error::last_os_error()));
        }
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn pin_to(_cpu: usize) -> std::result::Result<(), String> {
    Err("thread pinning is implemented for Linux only".into())
}

/// The TSC-related flags of the first CPU in `/proc/cpuinfo` (empty elsewhere).
fn tsc_flags() -> Vec<String> {
    let Ok(cpuinfo) = std::fs::read_to_string("/proc/cpuinfo") else {
        return Vec::new();
    };
    let Some(flags) = cpuinfo.lines().find(|l| l.starts_with("flags")) else {
        return Vec::new();
    };
    flags
        .split_whitespace()
        .filter(|f| {
            matches!(
                *f,
                "rdtscp" | "constant_tsc" | "nonstop_tsc" | "tsc_reliable" | "tsc_known_freq"
            )
        })
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinning_serialises_as_true_or_why_not() {
        assert_eq!(serde_json::to_string(&Pinning::Pinned).unwrap(), "true");
        assert_eq!(
            serde_json::to_string(&Pinning::NotPinned("no CPU 9".into())).unwrap(),
            r#"{"not_pinned":"no CPU 9"}"#
        );
    }

    #[test]
    fn a_short_probe_is_consistent() {
        let report = run(ProbeConfig {
            cpus: (0, 0),
            rounds: 50,
        })
        .unwrap();
        assert_eq!(report.rounds, 50);
        assert_eq!(report.backward_steps, 0);
        assert_eq!(report.estimates.len(), 2);
        assert!(report.round_trip.min_ns >= 0.0);
        assert!(report.ticks_per_second > 1e6, "{}", report.ticks_per_second);
    }
}
