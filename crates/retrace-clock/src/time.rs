//! The units of the crate: processor ids, frequencies and virtual time.
//!
//! Virtual time is an integer count of attoseconds (10⁻¹⁸ s). Integers, not
//! floats, because a history of a million frequency changes is a sum of a
//! million terms: in `f64` the rounding of each term accumulates, in integers
//! each term is rounded once to the nearest attosecond, so after `n` changes
//! the error is at most `n / 2` attoseconds — after 10⁶ changes half a
//! femtosecond, a thousandth of one cycle of a 2 GHz counter. An `i128` of
//! attoseconds spans ±1.7 × 10²⁰ s, far beyond any counter's range
//! (2⁶⁴ cycles at 1 Hz is 1.8 × 10¹⁹ s).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::ops::{Add, Sub};

/// Attoseconds in one second.
pub const ATTOS_PER_SECOND: u64 = 1_000_000_000_000_000_000;

/// Attoseconds in one nanosecond.
pub const ATTOS_PER_NANOSECOND: i128 = 1_000_000_000;

/// Identifies a processor (a CPU, a hart, a core) in histories, sync rounds and events.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ProcessorId(pub u32);

impl fmt::Display for ProcessorId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A clock frequency in hertz; never zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct Hz(pub(crate) u64);

impl Hz {
    /// `hz` hertz, or `None` for zero (a stopped counter has no time scale).
    pub const fn new(hz: u64) -> Option<Hz> {
        if hz == 0 {
            None
        } else {
            Some(Hz(hz))
        }
    }

    /// `mhz` megahertz; `None` for zero or on overflow.
    pub const fn from_mhz(mhz: u64) -> Option<Hz> {
        match mhz.checked_mul(1_000_000) {
            Some(hz) => Hz::new(hz),
            None => None,
        }
    }

    /// The frequency in hertz.
    pub const fn get(self) -> u64 {
        self.0
    }

    /// Length of one cycle in attoseconds, rounded up (the resolution of a
    /// counter running at this frequency).
    pub const fn tick_attos(self) -> u64 {
        ATTOS_PER_SECOND.div_ceil(self.0)
    }
}

impl fmt::Display for Hz {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} Hz", self.0)
    }
}

/// A point on the common clock: signed attoseconds since the reference
/// processor's counter read zero.
///
/// Signed because a responder's corrected event may precede that origin.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct VirtualTime(pub i128);

impl VirtualTime {
    /// Whole seconds.
    pub const fn from_secs(secs: i64) -> VirtualTime {
        VirtualTime(secs as i128 * ATTOS_PER_SECOND as i128)
    }

    /// The time in attoseconds.
    pub const fn attos(self) -> i128 {
        self.0
    }

    /// The time in seconds, rounded to `f64` (for display and statistics only).
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / ATTOS_PER_SECOND as f64
    }

    /// An exact decimal display in nanoseconds with nine fractional digits
    /// (attosecond resolution), e.g. `3000000000.000000000`.
    pub fn display_ns(self) -> DisplayNs {
        DisplayNs(self.0)
    }
}

impl fmt::Display for VirtualTime {
    /// Seconds, exactly: `3.000000000000000000 s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.0 < 0 { "-" } else { "" };
        let magnitude = self.0.unsigned_abs();
        let per = ATTOS_PER_SECOND as u128;
        write!(f, "{sign}{}.{:018} s", magnitude / per, magnitude % per)
    }
}

/// A signed span of virtual time in attoseconds (an offset, an error, a bound).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct TimeDelta(pub i128);

impl TimeDelta {
    /// The span in attoseconds.
    pub const fn attos(self) -> i128 {
        self.0
    }

    /// The span in nanoseconds, rounded to `f64` (for display and statistics only).
    pub fn as_nanos_f64(self) -> f64 {
        self.0 as f64 / ATTOS_PER_NANOSECOND as f64
    }

    /// Absolute value.
    pub const fn abs(self) -> TimeDelta {
        TimeDelta(self.0.abs())
    }

    /// An exact decimal display in nanoseconds with nine fractional digits.
    pub fn display_ns(self) -> DisplayNs {
        DisplayNs(self.0)
    }
}

impl Add<TimeDelta> for VirtualTime {
    type Output = VirtualTime;
    fn add(self, rhs: TimeDelta) -> VirtualTime {
        VirtualTime(self.0 + rhs.0)
    }
}

impl Sub for VirtualTime {
    type Output = TimeDelta;
    fn sub(self, rhs: VirtualTime) -> TimeDelta {
        TimeDelta(self.0 - rhs.0)
    }
}

impl fmt::Display for TimeDelta {
    /// Nanoseconds, exactly: `50.000000000 ns`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ns", self.display_ns())
    }
}

/// Exact decimal nanoseconds of an attosecond count; see [`VirtualTime::display_ns`].
#[derive(Clone, Copy, Debug)]
pub struct DisplayNs(i128);

impl fmt::Display for DisplayNs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.0 < 0 { "-" } else { "" };
        let magnitude = self.0.unsigned_abs();
        let per = ATTOS_PER_NANOSECOND as u128;
        write!(f, "{sign}{}.{:09}", magnitude / per, magnitude % per)
    }
}

/// Divide rounding to the nearest integer, halves away from zero; `den > 0`.
pub(crate) fn div_round(num: i128, den: i128) -> i128 {
    debug_assert!(den > 0);
    let half = den / 2;
    if num >= 0 {
        (num + half) / den
    } else {
        -((-num + half) / den)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displays_are_exact_decimals() {
        assert_eq!(
            VirtualTime::from_secs(3).to_string(),
            "3.000000000000000000 s"
        );
        assert_eq!(
            VirtualTime(-1_500_000_000).display_ns().to_string(),
            "-1.500000000"
        );
        assert_eq!(
            TimeDelta(50 * ATTOS_PER_NANOSECOND).to_string(),
            "50.000000000 ns"
        );
    }

    #[test]
    fn rounding_division_is_symmetric() {
        assert_eq!(div_round(7, 2), 4);
        assert_eq!(div_round(-7, 2), -4);
        assert_eq!(div_round(5, 4), 1);
        assert_eq!(div_round(-5, 4), -1);
    }

    #[test]
    fn zero_hertz_is_not_a_frequency() {
        assert_eq!(Hz::new(0), None);
        assert_eq!(Hz::from_mhz(100).unwrap().get(), 100_000_000);
        assert_eq!(Hz::new(3).unwrap().tick_attos(), 333_333_333_333_333_334);
    }
}
