//! Collapsed regions (US patent 8,448,140, embodiments 4 and 5; lossy): whole loop
//! nests and whole function calls that a recording writes nothing for and
//! a replay steps over, charging their mean time instead.
//!
//! A *region* is either
//! - a **function**: every call to its entry, from the call to the return
//!   that comes back to the call's return address (callees, tail calls and
//!   all included) — the patent's function aggregated by frequency;
//! - a **nest**: a loop nest with one way out (seed conditions X1/X2), from
//!   the first conditional branch the run meets inside it (the *entry*
//!   branch: the walk reaches it straight from the loop header) to the
//!   outermost continue test's leaving outcome.
//!
//! Its *extent* is what the run executes between those two points. The
//! recorder writes nothing for an extent (no bits, no targets, no escapes;
//! an indirect call into a function region still writes its target, which
//! the replay needs to know the callee) and the replay does not walk it:
//! at a call into a function region it goes on at the return address, at a
//! nest's entry branch it goes on where the nest's exit leads. Whether an
//! event is inside an extent is decided by one state machine,
//! [`RegionTracker`], that the recorder, the planner's profile and the
//! local-error measure all run, so they cannot disagree on where an extent
//! starts or ends.
//!
//! A region's time comes with the plan: from a profile run, the number of
//! times each partial program (by start address) ran inside the region's
//! extents, each way it was left (fall-through or taken), over the number
//! of extents — so that on any core the mean extent costs `Σ C_i T_i /
//! C_entry` (the patent's formula for functions; for a nest it expands the
//! patent's `(T33 + r×T35 + (1−r)×T36) × C_mean` to every partial program).
//! The counts can be negative: the replay leaves a nest's entry branch
//! as if it fell through, so the profile adds the entry branch's real way
//! and takes the fall-through away.

use rustc_hash::FxHashMap;

/// What kind of region, and where it starts and ends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RegionKind {
    /// Calls to the function at `entry`.
    Function {
        /// The function's entry address.
        entry: u64,
    },
    /// A loop nest.
    Nest {
        /// Every conditional branch in the nest (sorted): the first one met
        /// from outside is the entry branch.
        sites: Vec<u64>,
        /// The outermost loop's continue test.
        exit: u64,
        /// The outcome of `exit` that leaves the nest (`true`: taken).
        leave: bool,
    },
}

/// A partial program's executions inside a region's extents, over all
/// extents of the profile: left by falling through (or by its only way)
/// and left taken.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PpCount {
    /// The partial program's start address.
    pub start: u64,
    /// Executions left by the fall-through (or the only way out).
    pub fall: i64,
    /// Executions left by a taken branch.
    pub taken: i64,
}

/// One collapsed region of a plan, with the profile that times it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Region {
    /// Where it is.
    pub kind: RegionKind,
    /// Extents in the profile (the patent's `C_entry`; at least 1).
    pub entries: u64,
    /// Partial programs run inside the extents, by start address.
    pub pps: Vec<PpCount>,
}

/// An open extent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Open {
    region: u32,
    /// Calls made inside and not returned from.
    depth: u32,
    /// A function region's expected return address.
    ret: u64,
}

/// What an event did to a hart's position relative to the regions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Outside every extent, before and after: record as usual.
    Outside,
    /// An extent of region `.0` starts with this event (which belongs to
    /// it: nothing is recorded for it).
    Enter(u32),
    /// Inside an extent: nothing recorded.
    Inside,
    /// The extent of region `.0` ends with this event (which belongs to
    /// it).
    Leave(u32),
    /// A nest's entry branch that is also its exit: an extent of nothing
    /// but that branch.
    Through(u32),
}

/// A return at an extent's own level that does not go where the region's
/// extent ends (a `longjmp` out of a collapsed function, a `return` out of
/// a collapsed nest): the region cannot be collapsed in this run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Strayed {
    /// The region.
    pub region: u32,
    /// Where the return went.
    pub target: u64,
}

/// One hart's position relative to the regions of a plan; see the module
/// documentation.
#[derive(Clone, Debug, Default)]
pub struct RegionTracker {
    entries: FxHashMap<u64, u32>,
    sites: FxHashMap<u64, u32>,
    /// Per region, a nest's exit test and leaving outcome.
    exits: Vec<Option<(u64, bool)>>,
    open: Option<Open>,
}

impl RegionTracker {
    /// A tracker for `regions` (indexed as given), outside every extent.
    pub fn new(regions: &[Region]) -> RegionTracker {
        let mut t = RegionTracker::default();
        for (i, r) in regions.iter().enumerate() {
            let i = i as u32;
            match &r.kind {
                RegionKind::Function { entry } => {
                    t.entries.entry(*entry).or_insert(i);
                    t.exits.push(None);
                }
                RegionKind::Nest { sites, exit, leave } => {
                    for &s in sites {
                        t.sites.entry(s).or_insert(i);
                    }
                    t.exits.push(Some((*exit, *leave)));
                }
            }
        }
        t
    }

    /// Whether the plan has no regions.
    pub fn is_empty(&self) -> bool {
        self.exits.is_empty()
    }

    /// The region whose extent the hart is in.
    pub fn inside(&self) -> Option<u32> {
        self.open.map(|o| o.region)
    }

    /// Forget the open extent (the profile's answer to an event it cannot
    /// place in one).
    pub fn abandon(&mut self) {
        self.open = None;
    }

    /// The function region entered at `target`, if any.
    pub fn function_at(&self, target: u64) -> Option<u32> {
        self.entries.get(&target).copied()
    }

    /// The nest region whose branch `site` is, if any.
    pub fn nest_at(&self, site: u64) -> Option<u32> {
        self.sites.get(&site).copied()
    }

    /// A call (direct or indirect) to `target` that returns to `ret`.
    #[inline]
    pub fn call(&mut self, target: u64, ret: u64) -> Step {
        if let Some(o) = &mut self.open {
            o.depth += 1;
            return Step::Inside;
        }
        match self.entries.get(&target) {
            Some(&region) => {
                self.open = Some(Open {
                    region,
                    depth: 0,
                    ret,
                });
                Step::Enter(region)
            }
            None => Step::Outside,
        }
    }

    /// A return to `target`.
    #[inline]
    pub fn ret(&mut self, target: u64) -> Result<Step, Strayed> {
        let Some(o) = &mut self.open else {
            return Ok(Step::Outside);
        };
        if o.depth > 0 {
            o.depth -= 1;
            return Ok(Step::Inside);
        }
        let region = o.region;
        if self.exits[region as usize].is_none() && target == o.ret {
            self.open = None;
            return Ok(Step::Leave(region));
        }
        Err(Strayed { region, target })
    }

    /// A conditional branch at `site`, taken or not.
    #[inline]
    pub fn branch(&mut self, site: u64, taken: bool) -> Step {
        match self.open {
            Some(o) => {
                if o.depth == 0 && self.exits[o.region as usize] == Some((site, taken)) {
                    self.open = None;
                    Step::Leave(o.region)
                } else {
                    Step::Inside
                }
            }
            None => match self.sites.get(&site) {
                None => Step::Outside,
                Some(&region) => {
                    if self.exits[region as usize] == Some((site, taken)) {
                        Step::Through(region)
                    } else {
                        self.open = Some(Open {
                            region,
                            depth: 0,
                            ret: 0,
                        });
                        Step::Enter(region)
                    }
                }
            },
        }
    }
}

/// ZigZag: a signed count as an unsigned varint.
pub(super) fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// The inverse of [`zigzag`].
pub(super) fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn function(entry: u64) -> Region {
        Region {
            kind: RegionKind::Function { entry },
            entries: 1,
            pps: vec![],
        }
    }

    fn nest() -> Region {
        Region {
            kind: RegionKind::Nest {
                sites: vec![0x200, 0x210, 0x220],
                exit: 0x220,
                leave: false,
            },
            entries: 1,
            pps: vec![],
        }
    }

    #[test]
    fn a_function_extent_runs_from_its_call_to_the_matching_return() {
        let mut t = RegionTracker::new(&[function(0x100)]);
        assert_eq!(t.call(0x500, 0x14), Step::Outside);
        assert_eq!(t.call(0x100, 0x18), Step::Enter(0));
        assert_eq!(t.branch(0x104, true), Step::Inside);
        assert_eq!(t.call(0x500, 0x108), Step::Inside);
        assert_eq!(t.ret(0x108), Ok(Step::Inside));
        assert_eq!(t.ret(0x18), Ok(Step::Leave(0)));
        assert_eq!(t.ret(0x30), Ok(Step::Outside));
        assert_eq!(t.inside(), None);
    }

    #[test]
    fn a_return_elsewhere_strays() {
        let mut t = RegionTracker::new(&[function(0x100)]);
        t.call(0x100, 0x18);
        assert_eq!(
            t.ret(0x40),
            Err(Strayed {
                region: 0,
                target: 0x40
            })
        );
    }

    #[test]
    fn a_nest_extent_runs_from_its_first_branch_to_the_exit() {
        let mut t = RegionTracker::new(&[nest()]);
        assert_eq!(t.branch(0x300, true), Step::Outside);
        assert_eq!(t.branch(0x210, true), Step::Enter(0));
        assert_eq!(t.branch(0x220, true), Step::Inside);
        assert_eq!(t.branch(0x200, false), Step::Inside);
        assert_eq!(t.branch(0x220, false), Step::Leave(0));
        // Straight to the exit, leaving: an extent of that branch alone.
        assert_eq!(t.branch(0x220, false), Step::Through(0));
        assert_eq!(t.inside(), None);
        // A return out of a nest strays.
        t.branch(0x200, true);
        assert!(t.ret(0x40).is_err());
    }

    #[test]
    fn the_exit_test_inside_a_call_does_not_leave() {
        let mut t = RegionTracker::new(&[nest()]);
        t.branch(0x200, true);
        t.call(0x900, 0x204);
        assert_eq!(t.branch(0x220, false), Step::Inside);
        assert_eq!(t.ret(0x204), Ok(Step::Inside));
        assert_eq!(t.branch(0x220, false), Step::Leave(0));
    }

    #[test]
    fn zigzag_round_trips() {
        for v in [0, 1, -1, 2, -2, i64::MAX, i64::MIN, 12345, -98765] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
    }
}
