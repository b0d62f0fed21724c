//! Offset synchronisation: how far a responder's clock is behind the reference's.
//!
//! A round is the patent's exchange. The reference reads **A**, signals the
//! responder, which reads **B** and replies; the reference reads **C**. Then
//! the roles swap: the responder reads **a**, the reference **b**, the
//! responder **c**. The offset to add to the responder's times is
//!
//! ```text
//! d = (C − c)/4 + (A − a)/4 − (B − b)/2
//! ```
//!
//! Why it works, and what it cannot see: write δ for the true offset, D₁/D₂
//! for the one-way delays reference→responder / responder→reference of the
//! first exchange, E₁/E₂ for those of the second, and P, P′ for the time each
//! side takes between reading and replying. Then
//! `d − δ = (D₂ − D₁ + E₂ − E₁ + P − P′) / 4`: the turnaround times cancel as
//! far as they are equal, and delays that are the same in both directions
//! cancel, but a path that is always slower one way biases `d` by half the
//! difference — no two-way exchange can observe that. Because every delay is
//! positive, `|d − δ| ≤ ((C − A) + (c − a)) / 4`: half the round trip, the
//! error bound every estimate carries here. Reading a counter also rounds
//! down to its tick, which adds at most one tick to the bound.
//!
//! Values are plain integers in any one unit: counter ticks when both
//! processors count at one fixed rate (the patent's setting), attoseconds of
//! virtual time otherwise (see [`crate::correct`]).

use crate::error::{Error, Result};
use crate::time::div_round;
use serde::Serialize;

/// One synchronisation round: the six reads of the patent's exchange, all in
/// one unit (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct SyncRound {
    /// **A**: the reference, before it signals the responder.
    pub reference_asks: i128,
    /// **B**: the responder, on receiving the reference's signal.
    pub responder_answers: i128,
    /// **C**: the reference, on receiving the reply.
    pub reference_hears: i128,
    /// **a**: the responder, before it signals the reference.
    pub responder_asks: i128,
    /// **b**: the reference, on receiving the responder's signal.
    pub reference_answers: i128,
    /// **c**: the responder, on receiving the reply.
    pub responder_hears: i128,
    /// The longest counter tick of the two processors during the round, in
    /// the same unit (0 when the values are exact). Added to the bound.
    pub resolution: i128,
}

impl SyncRound {
    /// A round from the patent's letters `[A, B, C, a, b, c]`, exact values.
    pub fn from_letters([a_up, b_up, c_up, a, b, c]: [i128; 6]) -> SyncRound {
        SyncRound {
            reference_asks: a_up,
            responder_answers: b_up,
            reference_hears: c_up,
            responder_asks: a,
            reference_answers: b,
            responder_hears: c,
            resolution: 0,
        }
    }

    /// `4 d = (C − c) + (A − a) − 2 (B − b)`, exact.
    pub fn offset_times_four(&self) -> i128 {
        (self.reference_hears - self.responder_hears) + (self.reference_asks - self.responder_asks)
            - 2 * (self.responder_answers - self.reference_answers)
    }

    /// This round's offset `d`, rounded to the nearest unit.
    pub fn offset(&self) -> i128 {
        div_round(self.offset_times_four(), 4)
    }

    /// Both round trips, `(C − A) + (c − a)`; the error bound is a quarter of it.
    pub fn round_trips(&self) -> i128 {
        (self.reference_hears - self.reference_asks) + (self.responder_hears - self.responder_asks)
    }

    /// This round's error bound: half the mean round trip, plus the resolution.
    pub fn bound(&self) -> i128 {
        (self.round_trips() + 3) / 4 + self.resolution
    }

    /// Check that each side's reads are in exchange order (a negative round
    /// trip means the values were swapped or mislabelled).
    pub fn check(&self) -> Result<(), String> {
        if self.reference_hears < self.reference_asks {
            return Err(format!(
                "C ({}) is before A ({}): the reference's round trip is negative",
                self.reference_hears, self.reference_asks
            ));
        }
        if self.responder_hears < self.responder_asks {
            return Err(format!(
                "c ({}) is before a ({}): the responder's round trip is negative",
                self.responder_hears, self.responder_asks
            ));
        }
        Ok(())
    }
}

/// How to combine the rounds of one synchronisation into one offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum OffsetEstimator {
    /// The patent's method: the average of `d` over all rounds.
    Mean,
    /// The average over the rounds with the smallest round trips (the
    /// fastest eighth, at least one): a round delayed by an interrupt or a
    /// cache miss has a large round trip and usually a large error, so
    /// leaving it out removes the outliers that dominate the mean.
    MinRtt,
}

impl OffsetEstimator {
    /// Every estimator, in the order reports list them.
    pub const ALL: [OffsetEstimator; 2] = [OffsetEstimator::Mean, OffsetEstimator::MinRtt];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            OffsetEstimator::Mean => "mean",
            OffsetEstimator::MinRtt => "min-rtt",
        }
    }

    /// The estimator called `name`.
    pub fn from_name(name: &str) -> Option<OffsetEstimator> {
        OffsetEstimator::ALL.into_iter().find(|e| e.name() == name)
    }
}

/// An offset with what is known about its error.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct OffsetEstimate {
    /// The offset `d` to add to the responder's values.
    pub offset: i128,
    /// The error bound: `|d − true offset| ≤ bound` if delays are positive
    /// and the clocks do not drift within a round.
    pub bound: i128,
    /// Standard deviation of the per-round offsets that were used.
    pub spread: f64,
    /// Rounds that went into the estimate.
    pub rounds_used: usize,
    /// Rounds offered.
    pub rounds_total: usize,
    /// When, on the responder's clock, the estimate holds (the mean of the
    /// used rounds' **B**): the abscissa for drift fitting.
    pub at: i128,
}

/// Fraction of rounds kept by [`OffsetEstimator::MinRtt`]: one in `MIN_RTT_KEEP_ONE_IN`.
const MIN_RTT_KEEP_ONE_IN: usize = 8;

/// Estimate the offset from `rounds` with `estimator`.
pub fn estimate(rounds: &[SyncRound], estimator: OffsetEstimator) -> Result<OffsetEstimate> {
    if rounds.is_empty() {
        return Err(Error::NoRounds);
    }
    let used: Vec<&SyncRound> = match estimator {
        OffsetEstimator::Mean => rounds.iter().collect(),
        OffsetEstimator::MinRtt => {
            let mut by_round_trip: Vec<&SyncRound> = rounds.iter().collect();
            by_round_trip.sort_by_key(|r| r.round_trips());
            let keep = rounds.len().div_ceil(MIN_RTT_KEEP_ONE_IN).max(1);
            by_round_trip.truncate(keep);
            by_round_trip
        }
    };
    let count = used.len() as i128;
    // Sum 4d exactly and divide once, so averaging adds no rounding per round.
    let sum_times_four = checked_sum(used.iter().map(|r| r.offset_times_four()))?;
    let offset = div_round(sum_times_four, 4 * count);
    // The mean of per-round bounds bounds the mean of per-round errors.
    // (Rounded up, so the bound never shrinks below the truth.)
    let bound_sum = checked_sum(used.iter().map(|r| r.bound()))?;
    let bound = (bound_sum + count - 1).div_euclid(count);
    let at = div_round(
        checked_sum(used.iter().map(|r| r.responder_answers))?,
        count,
    );
    let spread = if used.len() < 2 {
        0.0
    } else {
        let mean = sum_times_four as f64 / 4.0 / count as f64;
        let squares: f64 = used
            .iter()
            .map(|r| {
                let deviation = r.offset_times_four() as f64 / 4.0 - mean;
                deviation * deviation
            })
            .sum();
        (squares / (count - 1) as f64).sqrt()
    };
    Ok(OffsetEstimate {
        offset,
        bound,
        spread,
        rounds_used: used.len(),
        rounds_total: rounds.len(),
        at,
    })
}

/// Sum that reports overflow (values near 2⁶⁴ seconds, summed over many
/// rounds, could pass `i128`) instead of wrapping or panicking.
fn checked_sum(values: impl Iterator<Item = i128>) -> Result<i128> {
    let mut sum: i128 = 0;
    for value in values {
        sum = sum.checked_add(value).ok_or_else(|| {
            Error::InvalidArgument("sync round values too large to average".into())
        })?;
    }
    Ok(sum)
}

/// How offsets measured at several re-synchronisations become an offset at
/// any time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum DriftModel {
    /// One offset for all time: the mean of the estimates (no drift).
    Constant,
    /// Straight lines between consecutive re-synchronisations, extended past
    /// the first and the last: follows drift that changes with temperature
    /// or frequency, as re-synchronising "periodically" intends.
    Piecewise,
    /// One least-squares line through all estimates, each weighted by the
    /// inverse square of its bound: for a steady drift and noisy estimates.
    Fit,
}

impl DriftModel {
    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            DriftModel::Constant => "constant",
            DriftModel::Piecewise => "piecewise",
            DriftModel::Fit => "fit",
        }
    }

    /// The model called `name`.
    pub fn from_name(name: &str) -> Option<DriftModel> {
        [DriftModel::Constant, DriftModel::Piecewise, DriftModel::Fit]
            .into_iter()
            .find(|m| m.name() == name)
    }
}

/// The offset of one responder as a function of the responder's own time.
#[derive(Clone, Debug)]
pub struct OffsetTrack {
    /// Knots `(at, offset)`, sorted by `at`, at distinct times.
    knots: Vec<(i128, i128)>,
    /// Slope after each knot (offset units per time unit); for `Fit`, one slope.
    slopes: Vec<f64>,
    model: DriftModel,
}

impl OffsetTrack {
    /// A constant offset.
    pub fn constant(offset: i128) -> OffsetTrack {
        OffsetTrack {
            knots: vec![(0, offset)],
            slopes: vec![0.0],
            model: DriftModel::Constant,
        }
    }

    /// The track through `estimates` under `model`.
    pub fn new(estimates: &[OffsetEstimate], model: DriftModel) -> Result<OffsetTrack> {
        if estimates.is_empty() {
            return Err(Error::NoRounds);
        }
        let mut sorted: Vec<&OffsetEstimate> = estimates.iter().collect();
        sorted.sort_by_key(|e| e.at);
        let track = match model {
            DriftModel::Constant => {
                let sum = checked_sum(sorted.iter().map(|e| e.offset))?;
                OffsetTrack::constant(div_round(sum, sorted.len() as i128))
            }
            DriftModel::Piecewise => {
                // Estimates at the same instant are averaged into one knot.
                let mut knots: Vec<(i128, i128)> = Vec::new();
                let mut index = 0;
                while index < sorted.len() {
                    let at = sorted[index].at;
                    let same: Vec<i128> = sorted[index..]
                        .iter()
                        .take_while(|e| e.at == at)
                        .map(|e| e.offset)
                        .collect();
                    index += same.len();
                    knots.push((
                        at,
                        div_round(checked_sum(same.iter().copied())?, same.len() as i128),
                    ));
                }
                let mut slopes: Vec<f64> = knots
                    .windows(2)
                    .map(|w| (w[1].1 - w[0].1) as f64 / (w[1].0 - w[0].0) as f64)
                    .collect();
                // The last knot continues the last segment's line.
                slopes.push(slopes.last().copied().unwrap_or(0.0));
                OffsetTrack {
                    knots,
                    slopes,
                    model,
                }
            }
            DriftModel::Fit => {
                let weight = |e: &OffsetEstimate| 1.0 / (e.bound.max(1) as f64).powi(2);
                let total: f64 = sorted.iter().map(|e| weight(e)).sum();
                // Centre the times on an integer so f64 only sees differences.
                let centre = sorted[0].at;
                let mean_t = sorted
                    .iter()
                    .map(|e| weight(e) * (e.at - centre) as f64)
                    .sum::<f64>()
                    / total;
                let mean_d = sorted
                    .iter()
                    .map(|e| weight(e) * e.offset as f64)
                    .sum::<f64>()
                    / total;
                let (mut sxy, mut sxx) = (0.0, 0.0);
                for e in &sorted {
                    let x = (e.at - centre) as f64 - mean_t;
                    sxy += weight(e) * x * (e.offset as f64 - mean_d);
                    sxx += weight(e) * x * x;
                }
                let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
                let knot_at = centre + mean_t.round() as i128;
                OffsetTrack {
                    knots: vec![(knot_at, mean_d.round() as i128)],
                    slopes: vec![slope],
                    model,
                }
            }
        };
        Ok(track)
    }

    /// The model this track follows.
    pub fn model(&self) -> DriftModel {
        self.model
    }

    /// The offset to add to a responder value `at` (same unit as the estimates).
    #[inline]
    pub fn offset_at(&self, at: i128) -> i128 {
        // The segment whose start is the last knot at or before `at` (the
        // first segment for times before every knot).
        let index = self
            .knots
            .partition_point(|&(knot_at, _)| knot_at <= at)
            .saturating_sub(1);
        self.offset_in(index, at)
    }

    /// [`OffsetTrack::offset_at`] starting the search at `*segment`, which is
    /// updated: values in increasing order cost O(1) each.
    #[inline]
    pub fn offset_near(&self, at: i128, segment: &mut usize) -> i128 {
        let last = self.knots.len() - 1;
        let mut index = (*segment).min(last);
        if index > 0 && at < self.knots[index].0 {
            index = self
                .knots
                .partition_point(|&(knot_at, _)| knot_at <= at)
                .saturating_sub(1);
        } else {
            while index < last && self.knots[index + 1].0 <= at {
                index += 1;
            }
        }
        *segment = index;
        self.offset_in(index, at)
    }

    #[inline]
    fn offset_in(&self, index: usize, at: i128) -> i128 {
        let (knot_at, offset) = self.knots[index];
        let slope = self.slopes[index];
        if slope == 0.0 {
            return offset;
        }
        // f64 for the drift term only: it is a product of an estimated slope
        // and a time difference, uncertain far beyond f64's 16 digits, while
        // the offset itself stays an exact integer.
        offset + f64_to_i128(i128_to_f64(at - knot_at) * slope)
    }
}

/// `x as f64` without the software routine Rust uses for `i128`: split into
/// two 64-bit halves, each converted by one instruction (error ≤ 1 ulp).
#[inline]
fn i128_to_f64(x: i128) -> f64 {
    if let Ok(small) = i64::try_from(x) {
        return small as f64;
    }
    ((x >> 64) as i64 as f64) * 18_446_744_073_709_551_616.0 + (x as u64 as f64)
}

/// Round to the nearest integer (halves away from zero). Adding ±½ and
/// truncating is one conversion instruction where `f64::round` is a library
/// call on baseline x86-64.
#[inline]
fn f64_to_i128(x: f64) -> i128 {
    let shifted = x + 0.5f64.copysign(x);
    if shifted.abs() < 9.0e18 {
        shifted as i64 as i128
    } else {
        shifted as i128
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_round_gives_fifty() {
        let round = SyncRound::from_letters([75, 125, 225, 275, 425, 425]);
        assert_eq!(round.offset(), 50);
        assert_eq!(round.offset_times_four(), 200);
        for estimator in OffsetEstimator::ALL {
            let e = estimate(&[round], estimator).unwrap();
            assert_eq!(e.offset, 50);
            // Round trips 150 and 150: a bound of 75 ticks.
            assert_eq!(e.bound, 75);
        }
        assert_eq!(
            875 + estimate(&[round], OffsetEstimator::Mean).unwrap().offset,
            925
        );
    }

    #[test]
    fn min_rtt_ignores_a_slow_round() {
        let mut rounds = vec![SyncRound::from_letters([0, 100, 20, 1_000, 920, 1_020]); 8];
        // A round delayed one way by 10 000 units: its d is off by 2 500.
        rounds.push(SyncRound::from_letters([
            0, 10_100, 10_020, 1_000, 920, 1_020,
        ]));
        let mean = estimate(&rounds, OffsetEstimator::Mean).unwrap();
        let fast = estimate(&rounds, OffsetEstimator::MinRtt).unwrap();
        assert_eq!(fast.offset, -90);
        assert!(mean.offset < -300, "{mean:?}");
        assert!(fast.bound < mean.bound);
        assert_eq!(fast.rounds_used, 2);
        assert_eq!(mean.rounds_used, 9);
    }

    #[test]
    fn negative_round_trip_is_reported() {
        let round = SyncRound::from_letters([100, 0, 50, 0, 0, 0]);
        assert!(round
            .check()
            .unwrap_err()
            .contains("C (50) is before A (100)"));
    }

    #[test]
    fn drift_tracks_interpolate_and_fit() {
        let at = |at: i128, offset: i128| OffsetEstimate {
            offset,
            bound: 10,
            spread: 0.0,
            rounds_used: 1,
            rounds_total: 1,
            at,
        };
        let points = [at(0, 100), at(1_000, 200), at(2_000, 400)];
        let piecewise = OffsetTrack::new(&points, DriftModel::Piecewise).unwrap();
        assert_eq!(piecewise.offset_at(500), 150);
        assert_eq!(piecewise.offset_at(1_500), 300);
        assert_eq!(piecewise.offset_at(3_000), 600);
        assert_eq!(piecewise.offset_at(-1_000), 0);
        let mut segment = 0;
        for at in [-1_000, 500, 1_500, 3_000, 500, -1_000, 2_000] {
            assert_eq!(
                piecewise.offset_near(at, &mut segment),
                piecewise.offset_at(at),
                "{at}"
            );
        }
        let fit = OffsetTrack::new(&points[..2], DriftModel::Fit).unwrap();
        assert_eq!(fit.offset_at(2_000), 300);
        let constant = OffsetTrack::new(&points, DriftModel::Constant).unwrap();
        assert_eq!(constant.offset_at(12_345), 233);
    }

    #[test]
    fn fast_conversions_match_the_plain_ones() {
        for x in [
            0i128,
            -5,
            1 << 70,
            -(1 << 90) + 12_345,
            i64::MAX as i128 + 1,
            987_654_321_987_654_321_987,
        ] {
            let fast = i128_to_f64(x);
            assert!((fast - x as f64).abs() <= (x as f64).abs() * 1e-15, "{x}");
        }
        assert_eq!(f64_to_i128(2.5), 3);
        assert_eq!(f64_to_i128(-1e20), -100_000_000_000_000_000_000);
    }
}
