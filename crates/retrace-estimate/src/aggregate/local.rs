//! The local timing error (US patent 8,448,140, embodiment 6's concern): lossy
//! aggregation keeps a run's total close while single calls of a function
//! take the average time of its branches instead of their own. Per call of
//! every function, `|estimated duration − reference duration| / reference
//! duration`, where the reference is the plain (unaggregated) replay of the
//! same run on the same core, and a call's duration runs from its callee's
//! first instruction to the return that leaves it, callees included.
//!
//! Fixed if-else sites keep every call and return of the run (their ways
//! hold none). Collapsed regions do not: a collapsed function's call is
//! one call of its mean duration, and the calls made inside any collapsed
//! extent are not made at all, so the plain replay leaves those out
//! (tracking the same regions). Then the calls of the two replays
//! correspond one to one, in order; [`compare`] checks that they do.

use super::collapse::track;
use crate::estimator::Estimator;
use crate::walk::{Leave, Visit};
use retrace_program::{PpId, PpTable};
use retrace_trace::protocol::regions::{Region, RegionKind, RegionTracker, Step};
use rustc_hash::FxHashMap;

/// One call: the callee's entry address and its duration in cycles
/// (`None` while it has not returned, or if it never did).
pub type Call = (u64, Option<f64>);

/// A visitor that times every call, around an [`Estimator`]. Lossy cycles
/// of fixed sites are added where the replay visits them.
pub struct CallTimer {
    /// The estimator timing the replay.
    pub estimator: Estimator,
    /// Per fixed site, the cycles a visit adds.
    lossy: FxHashMap<u64, f64>,
    lossy_so_far: f64,
    /// Open calls: index into `calls`, start time.
    stack: Vec<(usize, f64)>,
    /// Every call, in the order made.
    pub calls: Vec<Call>,
    /// Per collapsed region of the replayed trace: a function's entry
    /// (`None` for a nest), and the cycles of one extent.
    collapsed: Vec<(Option<u64>, f64)>,
    /// For a plain replay compared with one that collapses regions: where
    /// the walk is relative to those.
    skip: Option<RegionTracker>,
}

impl CallTimer {
    /// Time calls with `estimator`. `lossy` gives each fixed site's cycles
    /// per visit, `regions` and `extent_cycles` the replayed trace's
    /// collapsed regions and the cycles of one extent of each (all empty
    /// for a plain replay); `skip` the regions whose extents' calls to
    /// leave out (for a plain replay compared with a collapsing one).
    pub fn new(
        estimator: Estimator,
        lossy: FxHashMap<u64, f64>,
        regions: &[Region],
        extent_cycles: Vec<f64>,
        skip: &[Region],
    ) -> CallTimer {
        CallTimer {
            estimator,
            lossy,
            lossy_so_far: 0.0,
            stack: Vec::new(),
            calls: Vec::new(),
            collapsed: regions
                .iter()
                .zip(extent_cycles)
                .map(|(r, c)| match r.kind {
                    RegionKind::Function { entry } => (Some(entry), c),
                    RegionKind::Nest { .. } => (None, c),
                })
                .collect(),
            skip: (!skip.is_empty()).then(|| RegionTracker::new(skip)),
        }
    }

    fn now(&self) -> f64 {
        self.estimator.cycles() as f64 + self.lossy_so_far
    }
}

impl Visit<PpTable> for CallTimer {
    fn pp(&mut self, table: &PpTable, pp: PpId, how: Leave, next: PpId) {
        self.estimator.pp(table, pp, how, next);
        if matches!(how, Leave::Branch(_)) && !self.lossy.is_empty() {
            if let Some(c) = self.lossy.get(&table.get(pp).last.get()) {
                self.lossy_so_far += c;
            }
        }
        // Inside a collapsed extent, calls are not the other replay's.
        let inside = match &mut self.skip {
            Some(t) => match track(t, table, pp, how, next) {
                Ok(step) => step == Step::Inside,
                Err(_) => {
                    t.abandon();
                    false
                }
            },
            None => false,
        };
        if inside {
            return;
        }
        match how {
            Leave::Call => {
                self.stack.push((self.calls.len(), self.now()));
                let callee = if next == crate::machine::INVALID {
                    0
                } else {
                    table.get(next).start.get()
                };
                self.calls.push((callee, None));
            }
            Leave::Return { .. } => {
                if let Some((i, start)) = self.stack.pop() {
                    self.calls[i].1 = Some(self.now() - start);
                }
            }
            _ => {}
        }
    }
    fn collapsed(&mut self, _: &PpTable, region: u32) {
        let Some(&(function, cycles)) = self.collapsed.get(region as usize) else {
            return;
        };
        self.lossy_so_far += cycles;
        if let Some(entry) = function {
            // The call just made went to the function (the walk went on at
            // the return point) and returns at once, after the mean time.
            if let Some((i, start)) = self.stack.pop() {
                self.calls[i] = (entry, Some(self.now() - start));
            }
        }
    }
    fn last(&mut self, table: &PpTable, pp: PpId, executed: u32) {
        self.estimator.last(table, pp, executed);
    }
    fn trap(&mut self, table: &PpTable, pp: PpId, executed: u32) {
        self.estimator.trap(table, pp, executed);
    }
    fn cut(&mut self, table: &PpTable, pp: PpId, executed: u32) {
        self.estimator.cut(table, pp, executed);
    }
}

/// Local error figures: relative errors of calls' durations.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LocalError {
    /// Calls compared (both durations known, reference above 0).
    pub calls: u64,
    /// Mean relative error.
    pub mean: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest.
    pub max: f64,
    /// Per callee entry address, the same figures, by mean error, largest
    /// first.
    pub functions: Vec<(u64, LocalError)>,
}

fn summarise(mut errs: Vec<f64>) -> LocalError {
    if errs.is_empty() {
        return LocalError::default();
    }
    errs.sort_unstable_by(f64::total_cmp);
    let n = errs.len();
    let p99 = errs[((n as f64 * 0.99).ceil() as usize).clamp(1, n) - 1];
    LocalError {
        calls: n as u64,
        mean: errs.iter().sum::<f64>() / n as f64,
        p99,
        max: errs[n - 1],
        functions: Vec::new(),
    }
}

/// Compare the calls of an aggregated replay with the reference's. An
/// error when the two replays did not make the same calls in the same
/// order (then the aggregation changed more than time: a bug).
pub fn compare(reference: &[Call], aggregated: &[Call]) -> Result<LocalError, String> {
    if reference.len() != aggregated.len() {
        return Err(format!(
            "the plain replay made {} calls, the aggregated one {}",
            reference.len(),
            aggregated.len()
        ));
    }
    let mut all = Vec::new();
    let mut per: FxHashMap<u64, Vec<f64>> = FxHashMap::default();
    for (k, (r, a)) in reference.iter().zip(aggregated).enumerate() {
        if r.0 != a.0 {
            return Err(format!(
                "call {k} went to {:#x} in the plain replay, to {:#x} in the aggregated one",
                r.0, a.0
            ));
        }
        if let (Some(rd), Some(ad)) = (r.1, a.1) {
            if rd > 0.0 {
                let e = (ad - rd).abs() / rd;
                all.push(e);
                per.entry(r.0).or_default().push(e);
            }
        }
    }
    let mut out = summarise(all);
    out.functions = per.into_iter().map(|(f, e)| (f, summarise(e))).collect();
    out.functions
        .sort_by(|a, b| b.1.mean.total_cmp(&a.1.mean).then(a.0.cmp(&b.0)));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_calls_have_no_error() {
        let calls = vec![(0x100, Some(50.0)), (0x200, Some(10.0)), (0x100, None)];
        let e = compare(&calls, &calls).unwrap();
        assert_eq!((e.calls, e.mean, e.p99, e.max), (2, 0.0, 0.0, 0.0));
    }

    #[test]
    fn errors_are_relative_to_the_reference_per_call_and_function() {
        let r = vec![
            (0x100, Some(100.0)),
            (0x100, Some(100.0)),
            (0x200, Some(10.0)),
        ];
        let a = vec![
            (0x100, Some(110.0)),
            (0x100, Some(90.0)),
            (0x200, Some(15.0)),
        ];
        let e = compare(&r, &a).unwrap();
        assert_eq!(e.calls, 3);
        assert!((e.mean - (0.1 + 0.1 + 0.5) / 3.0).abs() < 1e-12);
        assert_eq!(e.max, 0.5);
        assert_eq!(e.p99, 0.5);
        assert_eq!(e.functions[0].0, 0x200);
        assert!((e.functions[1].1.mean - 0.1).abs() < 1e-12);
    }

    #[test]
    fn different_calls_are_refused() {
        let r = vec![(0x100, Some(1.0))];
        assert!(compare(&r, &[(0x104, Some(1.0))]).is_err());
        assert!(compare(&r, &[]).is_err());
    }
}
