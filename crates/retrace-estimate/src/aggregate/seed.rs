//! The patent's formulas checked against the replay of its own table
//! (US patent 8,448,140, the reconstructed Fig. 4/5 table that `walk`'s tests
//! replay): each aggregated time must be what the real walker adds up for
//! the partial programs it stands for.

use super::formula::*;
use crate::walk::seed_table::{id, Bits, SeedTable, NAMES};
use crate::walk::{walk, Leave, Visit};

/// The executed partial programs, in order, and how each branch went.
#[derive(Default)]
struct Trace {
    terms: Vec<&'static str>,
    /// `(pp ending at the branch, outcome)`.
    branches: Vec<(&'static str, bool)>,
}
impl Visit<SeedTable> for Trace {
    fn pp(&mut self, _: &SeedTable, pp: usize, how: Leave, _: usize) {
        self.terms.push(NAMES[pp]);
        if let Leave::Branch(b) = how {
            self.branches.push((NAMES[pp], b));
        }
    }
    fn last(&mut self, _: &SeedTable, pp: usize, _: u32) {
        self.terms.push(NAMES[pp]);
    }
    fn trap(&mut self, _: &SeedTable, _: usize, _: u32) {
        unreachable!("the patent's histories have no traps")
    }
    fn cut(&mut self, _: &SeedTable, _: usize, _: u32) {
        unreachable!("the patent's histories have no code events")
    }
}

fn replay(bits: &str) -> Trace {
    let mut t = Trace::default();
    let mut h = Bits(bits.chars().map(|c| c == '1').collect(), 0);
    walk(&mut SeedTable, &mut h, &mut t, id("T1"), u64::MAX).unwrap();
    t
}

/// Outcomes of branch D (the loop's continue test, ending T8 and T9).
fn d_outcomes(t: &Trace) -> (u64, u64) {
    let d = t
        .branches
        .iter()
        .filter(|(pp, _)| matches!(*pp, "T8" | "T9"));
    let taken = d.clone().filter(|(_, b)| *b).count() as u64;
    (taken, d.count() as u64)
}

const EPS: f64 = 1e-12;

#[test]
fn type_1_loop_is_t9_times_m_plus_t10() {
    // 1110111010: func1's loop on D runs M = 2 times, then leaves.
    let t = replay("1110111010");
    let whole = Sym::sum(t.terms.iter().copied());
    let before = Sym::sum(["T1", "T2", "T4", "T2", "T5", "T6a", "T8"]);
    let after = Sym::sum(["T11", "T6b", "T3"]);
    let aggregated = before + loop_time(Sym::t("T9"), Sym::t("T10"), 2.0) + after;
    assert_eq!(
        whole, aggregated,
        "replay {whole} vs aggregated {aggregated}"
    );
    // The formula's M is the loop's mean trip count s/(1−s) from its test.
    let (taken, executed) = d_outcomes(&t);
    let s = probability(taken, executed);
    assert!(
        (mean_trip(s) - 2.0).abs() < EPS,
        "s/(1-s) = {}",
        mean_trip(s)
    );
    assert_eq!(
        loop_time(Sym::t("T9"), Sym::t("T10"), 2.0).to_string(),
        "T10 + 2·T9"
    );
}

#[test]
fn if_else_is_j_t45_plus_one_minus_j_t46() {
    let j = 0.25;
    let t = if_else(j, Sym::t("T45"), Sym::t("T46"));
    assert_eq!(t.coefficient("T45"), 0.25);
    assert_eq!(t.coefficient("T46"), 0.75);
    // Numbers: 0.25 × 8 + 0.75 × 4.
    assert_eq!(if_else(j, 8.0, 4.0), 5.0);
}

#[test]
fn type_3_loop_is_t21_plus_if_else_times_k_plus_t22() {
    // (T21 + h×T23 + (1−h)×T24) × K + T22 with h = 0.75, K = 10.
    let (h, k) = (0.75, 10.0);
    let body = Sym::t("T21") + if_else(h, Sym::t("T23"), Sym::t("T24"));
    let t = loop_time(body, Sym::t("T22"), k);
    for (name, c) in [("T21", 10.0), ("T23", 7.5), ("T24", 2.5), ("T22", 1.0)] {
        assert!((t.coefficient(name) - c).abs() < EPS, "{name} in {t}");
    }
}

#[test]
fn nested_loops_by_mean_trip_count_innermost_out() {
    // T_L5 = (T33 + r×T35 + (1−r)×T36) × C_L5mean, s5 = 3/4 → 3 trips;
    // T_L4 = (T31 + T_L5) × C_L4mean, s4 = 2/3 → 2 trips.
    let r = 0.5;
    let t_l5 = nested_loop(
        Sym::t("T33") + if_else(r, Sym::t("T35"), Sym::t("T36")),
        mean_trip(0.75),
    );
    let t_l4 = nested_loop(Sym::t("T31") + t_l5.clone(), mean_trip(2.0 / 3.0));
    let want = Sym::t("T33") * 3.0 + Sym::t("T35") * 1.5 + Sym::t("T36") * 1.5;
    assert!(t_l5.approx_eq(&want, 1e-9), "T_L5 = {t_l5}");
    let want = Sym::t("T31") * 2.0 + want * 2.0;
    assert!(t_l4.approx_eq(&want, 1e-9), "T_L4 = {t_l4}");
}

#[test]
fn function_mean_is_sum_of_counts_times_times_over_entries() {
    // Two runs, each calling func1 once: its E branch true in the first,
    // false in the second. C_i from the replays, C_entry = C(T8).
    let runs = [replay("1110111010"), replay("10010111000")];
    let func1 = ["T8", "T9", "T10", "T11", "T12"];
    let count = |name: &str| -> u64 {
        runs.iter()
            .map(|r| r.terms.iter().filter(|t| **t == name).count() as u64)
            .sum()
    };
    let mean = function_mean(func1.iter().map(|n| (count(n), Sym::t(n))), count("T8"));
    // = T8 + (T9×2 + T10) + (j×T11 + (1−j)×T12) with j = P(E) = 1/2: the
    // other formulas, composed, give the same mean call.
    let e: Vec<bool> = runs
        .iter()
        .flat_map(|r| r.branches.iter().filter(|(pp, _)| *pp == "T10"))
        .map(|(_, b)| *b)
        .collect();
    let j = probability(e.iter().filter(|b| **b).count() as u64, e.len() as u64);
    let composed = Sym::t("T8")
        + loop_time(Sym::t("T9"), Sym::t("T10"), 2.0)
        + if_else(j, Sym::t("T11"), Sym::t("T12"));
    assert_eq!(mean, composed, "{mean} vs {composed}");
    // Numbers: T_i = i cycles.
    let secs = |n: &str| n[1..].parse::<f64>().unwrap();
    let numeric = function_mean(func1.iter().map(|n| (count(n), secs(n))), count("T8"));
    assert_eq!(numeric, 8.0 + 2.0 * 9.0 + 10.0 + 0.5 * 11.0 + 0.5 * 12.0);
}

#[test]
fn bias_gates() {
    // |T_true − T_false| × M_C.
    assert_eq!(if_else_bias(10.0, 4.0, 100), 600.0);
    assert_eq!(if_else_bias(4.0, 10.0, 100), 600.0);
    // At or above the threshold: kept unaggregated.
    assert_eq!(keep_unaggregated(600.0, 600.0), Ok(true));
    assert_eq!(keep_unaggregated(600.0, 601.0), Ok(false));
    // Var(trip counts) × N × T_mean: 8, 8, 4 has mean 20/3 and variance
    // 32/9; a constant count has none.
    let b = loop_bias(&[8, 8, 4], 5.0);
    assert!((b - 32.0 / 9.0 * 3.0 * 5.0).abs() < 1e-9, "{b}");
    assert_eq!(loop_bias(&[8, 8, 8], 5.0), 0.0);
    assert_eq!(loop_bias(&[], 5.0), 0.0);
    // Thresholds that are no threshold are errors.
    assert!(keep_unaggregated(1.0, -1.0).is_err());
    assert!(keep_unaggregated(1.0, f64::NAN).is_err());
    let e = keep_unaggregated(1.0, -1.0).unwrap_err().to_string();
    assert!(!e.contains('\n'), "{e}");
}
