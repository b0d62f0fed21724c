//! A hart's clock in time: its cycle counter, the frequency it runs at and
//! the changes of that frequency (a hart asks for one with the
//! synchronisation API's `set_hz`), and the time each counter value stands
//! for.
//!
//! Harts at different frequencies meet in time, not in cycles: the
//! multi-hart cycle-level engine ([`crate::clocked`]) and the
//! multiprocessor replay (`retrace-estimate`'s `system`) order the harts'
//! calls by the time of their clocks, and a hart that waits for another
//! waits until the other's time — as many of its own cycles as that takes.
//!
//! Time is an integer count of attoseconds (10⁻¹⁸ s), by the convention of
//! Japanese patent JP5267566B2's virtual time as `retrace-clock`
//! computes it (docs/CLOCK.md): within a run of one frequency, `floor(cycles
//! × 10¹⁸ / hz)` after the run's start; at each change, the run before it
//! rounded once to the nearest attosecond and added to a running sum. This
//! module is the engine's ground truth and computes it on its own (no
//! shared code with `retrace-clock`), so that the replay's counters, put
//! through `retrace-clock`'s histories, can be checked against it to the
//! attosecond.

/// Attoseconds in a second.
const ATTOS_PER_SECOND: u128 = 1_000_000_000_000_000_000;

/// A hart's frequency when nothing says otherwise: 100 MHz.
pub const DEFAULT_HZ: u64 = 100_000_000;

/// A hart's cycle counter against time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HartClock {
    /// The frequency now, in hertz.
    hz: u64,
    /// Counter value and time at which the current frequency began.
    since: u64,
    since_time: u128,
    /// Attoseconds per cycle when the frequency divides 10¹⁸ (100 MHz,
    /// 1 GHz, 250 MHz …): a time is then one multiplication, not a
    /// 128-bit division — the replay asks at every call.
    period: Option<u128>,
    /// The frequency at counter 0.
    start_hz: u64,
    /// Every change: the counter value at which it took effect and the new
    /// frequency, in order.
    changes: Vec<(u64, u64)>,
}

impl HartClock {
    /// A clock at `hz` from counter 0 (time 0). `hz` must be at least 1.
    pub fn new(hz: u64) -> HartClock {
        let hz = hz.max(1);
        HartClock {
            hz,
            since: 0,
            since_time: 0,
            period: period(hz),
            start_hz: hz,
            changes: Vec::new(),
        }
    }

    /// The frequency now.
    pub fn hz(&self) -> u64 {
        self.hz
    }

    /// The frequency at counter 0.
    pub fn start_hz(&self) -> u64 {
        self.start_hz
    }

    /// The changes: `(counter value, new frequency)`, in order.
    pub fn changes(&self) -> &[(u64, u64)] {
        &self.changes
    }

    /// The time, in attoseconds, at which the counter reads `counter` (at
    /// or after the last change).
    pub fn time_at(&self, counter: u64) -> u128 {
        let cycles = u128::from(counter.saturating_sub(self.since));
        match self.period {
            Some(p) => self.since_time + cycles * p,
            None => self.since_time + cycles * ATTOS_PER_SECOND / u128::from(self.hz),
        }
    }

    /// The first counter value (at or after the last change) whose time
    /// is `time` or later.
    pub fn counter_reaching(&self, time: u128) -> u64 {
        if time <= self.since_time {
            return self.since;
        }
        let hz = u128::from(self.hz);
        // At least the exact quotient's ceiling minus one; floor() in
        // time_at makes it exact after at most a step or two.
        let guess = (time - self.since_time)
            .saturating_mul(hz)
            .div_ceil(ATTOS_PER_SECOND);
        let mut c = self
            .since
            .saturating_add(u64::try_from(guess).unwrap_or(u64::MAX));
        while c < u64::MAX && self.time_at(c) < time {
            c += 1;
        }
        while c > self.since && self.time_at(c - 1) >= time {
            c -= 1;
        }
        c
    }

    /// From counter value `counter` on (at or after the last change), the
    /// clock runs at `hz`. A change to the frequency it already runs at is
    /// no change; a second change at the counter value of the last one
    /// replaces it.
    pub fn set_hz(&mut self, counter: u64, hz: u64) {
        let hz = hz.max(1);
        if hz == self.hz {
            return;
        }
        let counter = counter.max(self.since);
        if counter == 0 {
            self.start_hz = hz;
        } else if counter == self.since && !self.changes.is_empty() {
            // The replaced frequency ran for no cycle.
            if let Some(last) = self.changes.last_mut() {
                last.1 = hz;
            }
        } else {
            // The run that ends here, rounded once to the nearest
            // attosecond.
            let cycles = u128::from(counter - self.since);
            let hz_now = u128::from(self.hz);
            self.since_time += (cycles * ATTOS_PER_SECOND + hz_now / 2) / hz_now;
            self.since = counter;
            self.changes.push((counter, hz));
        }
        self.hz = hz;
        self.period = period(hz);
    }
}

/// Attoseconds per cycle at `hz`, when whole.
fn period(hz: u64) -> Option<u128> {
    ATTOS_PER_SECOND
        .is_multiple_of(u128::from(hz))
        .then(|| ATTOS_PER_SECOND / u128::from(hz))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_follows_the_frequency_changes() {
        // 100 MHz for 100 M cycles, 50 MHz for 50 M, 150 MHz after: 3 s
        // at 300 M cycles (the virtual time worked example of docs/CLOCK.md).
        let mut c = HartClock::new(100_000_000);
        c.set_hz(100_000_000, 50_000_000);
        c.set_hz(150_000_000, 150_000_000);
        assert_eq!(c.time_at(300_000_000), 3 * ATTOS_PER_SECOND);
        assert_eq!(
            c.changes(),
            &[(100_000_000, 50_000_000), (150_000_000, 150_000_000)]
        );
        assert_eq!(c.counter_reaching(3 * ATTOS_PER_SECOND), 300_000_000);
        assert_eq!(c.counter_reaching(3 * ATTOS_PER_SECOND + 1), 300_000_001);
    }

    #[test]
    fn counter_reaching_is_the_least_counter_at_or_after_a_time() {
        // 3 MHz: a cycle is 333,333,333,333.3… as, so floor() matters.
        let mut c = HartClock::new(3_000_000);
        c.set_hz(7, 7_000_001);
        for t in [
            0u128,
            1,
            333_333_333_333,
            333_333_333_334,
            5 * ATTOS_PER_SECOND / 7,
        ] {
            let n = c.counter_reaching(t);
            assert!(n == 7 || c.time_at(n - 1) < t, "{t}: {n}");
            assert!(c.time_at(n) >= t, "{t}: {n}");
        }
    }

    #[test]
    fn a_change_to_the_same_frequency_is_none_and_one_at_the_same_counter_replaces() {
        let mut c = HartClock::new(100);
        c.set_hz(10, 100);
        assert!(c.changes().is_empty());
        c.set_hz(0, 50);
        assert_eq!((c.start_hz(), c.changes().len()), (50, 0));
        c.set_hz(10, 200);
        c.set_hz(10, 300);
        assert_eq!((c.changes(), c.hz()), (&[(10, 300)][..], 300));
        // 10 cycles at 50 Hz: 0.2 s.
        assert_eq!(c.time_at(10), ATTOS_PER_SECOND / 5);
    }
}
