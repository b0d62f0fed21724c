//! The time of each aggregated kind of region (US patent 8,448,140, embodiments
//! 2–6), over any [`Time`]: plain numbers (cycles), or [`Sym`], a linear
//! combination of named partial-program times such as the patent's `T9`, so
//! that the patent's worked formulas can be checked term by term against the
//! replay of its own table.
//!
//! | region | time | |
//! |---|---|---|
//! | loop of type 1 / 2 (embodiment 2) | `T_body × M + T_exit` | [`loop_time`] |
//! | if-else (embodiment 3) | `j × T_true + (1 − j) × T_false` | [`if_else`] |
//! | loop with if-else body (type 3 → 1/2) | `(T21 + h×T23 + (1−h)×T24) × K + T22` | [`loop_time`] of [`if_else`] |
//! | nested loop (embodiment 4) | `T_body × s/(1−s)` | [`nested_loop`], [`mean_trip`] |
//! | function (embodiment 5) | `Σ C_i T_i / C_entry` | [`function_mean`] |
//!
//! and embodiment 6's two bias measures, [`if_else_bias`] and
//! [`loop_bias`], with the gate [`keep_unaggregated`].

use std::collections::BTreeMap;
use std::fmt;
use std::ops::{Add, Mul};

/// A time the formulas can combine: a sum of times, scaled by a count or
/// a probability.
pub trait Time: Clone + Add<Output = Self> + Mul<f64, Output = Self> {
    /// No time.
    fn zero() -> Self;
}

impl Time for f64 {
    fn zero() -> f64 {
        0.0
    }
}

/// A symbolic time: `Σ coefficient × name`, e.g. `2·T9 + T10`. Terms are
/// kept by name, so two sums are equal when every name has the same
/// coefficient (`T9 + T9 == 2·T9`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sym(BTreeMap<String, f64>);

impl Sym {
    /// The time of one named partial program.
    pub fn t(name: &str) -> Sym {
        Sym(BTreeMap::from([(name.to_string(), 1.0)]))
    }

    /// The sum of named times, one term per name given (repeats add up):
    /// what a replay of a symbolic table adds.
    pub fn sum<'a>(names: impl IntoIterator<Item = &'a str>) -> Sym {
        names.into_iter().fold(Sym::zero(), |s, n| s + Sym::t(n))
    }

    /// The coefficient of `name` (0 when absent).
    pub fn coefficient(&self, name: &str) -> f64 {
        self.0.get(name).copied().unwrap_or(0.0)
    }

    /// Whether the two sums agree on every coefficient to within `eps`.
    pub fn approx_eq(&self, other: &Sym, eps: f64) -> bool {
        let names = self.0.keys().chain(other.0.keys());
        names
            .into_iter()
            .all(|n| (self.coefficient(n) - other.coefficient(n)).abs() <= eps)
    }
}

impl Add for Sym {
    type Output = Sym;
    fn add(mut self, rhs: Sym) -> Sym {
        for (n, c) in rhs.0 {
            *self.0.entry(n).or_insert(0.0) += c;
        }
        self.0.retain(|_, c| *c != 0.0);
        self
    }
}

impl Mul<f64> for Sym {
    type Output = Sym;
    fn mul(mut self, k: f64) -> Sym {
        for c in self.0.values_mut() {
            *c *= k;
        }
        self.0.retain(|_, c| *c != 0.0);
        self
    }
}

impl Time for Sym {
    fn zero() -> Sym {
        Sym::default()
    }
}

impl fmt::Display for Sym {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("0");
        }
        for (i, (n, c)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(" + ")?;
            }
            if *c == 1.0 {
                write!(f, "{n}")?;
            } else {
                write!(f, "{c}·{n}")?;
            }
        }
        Ok(())
    }
}

/// A loop of type 1 or 2 (embodiment 2): `M` passes through the body
/// (each ending at the continue test, which continues) and one exit —
/// `T_body × M + T_exit`, the patent's `T9×M + T10`.
pub fn loop_time<T: Time>(body: T, exit: T, trips: f64) -> T {
    body * trips + exit
}

/// An if-else aggregated by its branch probability (embodiment 3):
/// `j × T_true + (1 − j) × T_false`, the patent's `j×T45 + (1−j)×T46`, with
/// `j = P(branch true)`.
pub fn if_else<T: Time>(j: f64, t_true: T, t_false: T) -> T {
    t_true * j + t_false * (1.0 - j)
}

/// The probability that a branch is true: `#true / #executed` (0 for a
/// branch never executed).
pub fn probability(taken: u64, executed: u64) -> f64 {
    if executed == 0 {
        0.0
    } else {
        taken as f64 / executed as f64
    }
}

/// A loop's mean trip count from its continue probability `s` (embodiment
/// 4): `s / (1 − s)` — the true count over the false count of its
/// continue test. Infinite for `s = 1` (a loop that never left).
pub fn mean_trip(s: f64) -> f64 {
    s / (1.0 - s)
}

/// A nested loop aggregated by its mean trip count (embodiment 4):
/// `T_body × C_mean`, the patent's `T_L5 = (T33 + r×T35 + (1−r)×T36) ×
/// C_L5mean` and, one level out, `T_L4 = (T31 + T_L5) × C_L4mean`.
pub fn nested_loop<T: Time>(body: T, mean_trips: f64) -> T {
    body * mean_trips
}

/// A function aggregated by frequency (embodiment 5): its total time
/// `Σ C_i × T_i` over its partial programs (executed `C_i` times) per call,
/// `C_entry` being the executions of its first partial program.
pub fn function_mean<T: Time>(terms: impl IntoIterator<Item = (u64, T)>, entries: u64) -> T {
    let total = terms
        .into_iter()
        .fold(T::zero(), |s, (c, t)| s + t * c as f64);
    total * (1.0 / entries.max(1) as f64)
}

/// Embodiment 6's if-else bias `g(C) = |T_true − T_false| × M_C`, `M_C`
/// the branch's executions: the time the average misplaces.
pub fn if_else_bias(t_true: f64, t_false: f64, executions: u64) -> f64 {
    (t_true - t_false).abs() * executions as f64
}

/// Embodiment 6's loop bias `Var(trip counts) × N × T_mean`: the variance of
/// the counts of the loop's `N` executions (population variance), times
/// `N`, times the mean time of one pass through the body.
pub fn loop_bias(trip_counts: &[u64], t_mean: f64) -> f64 {
    let n = trip_counts.len();
    if n == 0 {
        return 0.0;
    }
    let mean = trip_counts.iter().map(|&c| c as f64).sum::<f64>() / n as f64;
    let var = trip_counts
        .iter()
        .map(|&c| (c as f64 - mean).powi(2))
        .sum::<f64>()
        / n as f64;
    var * n as f64 * t_mean
}

/// Why a bias threshold cannot be used.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("bias threshold {0} is not a number at or above 0; give one like 0 or 1e6")]
pub struct BadThreshold(pub f64);

/// Embodiment 6's gate: a region whose bias is at or above `threshold`
/// stays unaggregated (local timing matters there). A negative or NaN
/// threshold is an error, never a silent "aggregate everything".
pub fn keep_unaggregated(bias: f64, threshold: f64) -> Result<bool, BadThreshold> {
    if threshold.is_nan() || threshold < 0.0 {
        return Err(BadThreshold(threshold));
    }
    Ok(bias >= threshold)
}
