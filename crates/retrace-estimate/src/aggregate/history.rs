//! The replay side of embodiment 2: a trace recorded with aggregated loops
//! holds no bits for their continue tests, only each execution's trip
//! count ([`retrace_trace::protocol::loops`]). [`AggregatedHistory`] gives
//! the walk those tests' outcomes back from the counts, so the walk, and
//! every visitor of it, sees exactly the partial programs of the
//! unaggregated replay — the estimate is the same by construction, on every
//! core and at every fidelity.
//!
//! The walk asks for "the next branch bit" without saying where the branch
//! is; which site it is comes from the visitor's side: [`Tracked`] wraps
//! the walk's visitor and, each time a partial program is left, tells the
//! history (through a shared [`SiteTracker`]) the address of the branch
//! that ends the next one. After a trap the walk continues at a handler
//! without a visit; the protocol writes the first branch after a trap as a
//! bit for that reason, so the history needs no site then.

use crate::machine::TraceHistory;
use crate::walk::{Exit, Graph, History, Leave, ReplayError, Visit};
use retrace_program::{Addr, PpTable};
use retrace_trace::protocol::loops::LoopDecoder;
use retrace_trace::protocol::regions::{Region, RegionKind};
use retrace_trace::TraceReader;
use rustc_hash::FxHashMap;
use std::cell::Cell;
use std::io::Read;
use std::rc::Rc;

/// Where the branch the walk asks for next is: shared by [`Tracked`]
/// (which sets it) and [`AggregatedHistory`] (which reads it).
#[derive(Clone, Debug, Default)]
pub struct SiteTracker(Rc<Cell<u64>>);

/// No branch ends the next partial program.
const NO_SITE: u64 = u64::MAX;

/// A trace's history with its aggregated loops' tests given back from the
/// counts; a trace recorded without aggregation reads as
/// [`TraceHistory`] does.
pub struct AggregatedHistory<R: Read> {
    inner: TraceHistory<R>,
    loops: Option<LoopDecoder>,
    site: SiteTracker,
    /// The plan's collapsed regions, as the walk looks them up (set by
    /// [`AggregatedHistory::check_plan`]).
    collapse: Option<Collapse>,
}

/// Collapsed regions by where the walk meets them, and how often it did.
#[derive(Clone, Debug, Default)]
struct Collapse {
    /// Function regions by entry address.
    functions: FxHashMap<u64, u32>,
    /// Nest regions by branch site: the region and where its way out
    /// starts.
    nests: FxHashMap<u64, (u32, u64)>,
    /// Per region, extents stepped over.
    visits: Vec<u64>,
}

impl<R: Read> AggregatedHistory<R> {
    /// The history of `inner`'s hart, with the aggregation plan the trace
    /// starts with, if any (read now: `inner` must be freshly opened).
    pub fn new(mut inner: TraceHistory<R>) -> Result<Self, ReplayError> {
        let (reader, hart) = inner.reader_mut();
        let loops = LoopDecoder::read_plan(reader, hart)?;
        Ok(AggregatedHistory {
            inner,
            loops,
            site: SiteTracker::default(),
            collapse: None,
        })
    }

    /// The trace's plan: each aggregated continue test and the outcome that
    /// continues; `None` for a trace recorded without aggregation.
    pub fn plan(&self) -> Option<&[(u64, bool)]> {
        self.loops.as_ref().map(LoopDecoder::plan)
    }

    /// Check the plan against the program: every aggregated site must be a
    /// conditional branch of `table`'s code. A trace of another program (or
    /// a plan damaged in transit) is refused here, before it could steer
    /// the walk.
    pub fn check_plan(&mut self, table: &PpTable) -> Result<(), ReplayError> {
        for &(site, _) in self.plan().unwrap_or(&[]) {
            let branch = table
                .code()
                .get(Addr(site))
                .is_some_and(|i| i.class() == retrace_isa::Class::Branch);
            if !branch {
                return Err(ReplayError::BadTarget {
                    what: "an aggregated loop's continue test (the trace's plan) that is no conditional branch of this program".into(),
                    addr: site,
                });
            }
        }
        let fixed = self.fixed();
        if !fixed.is_empty() {
            let cands = super::ifelse::candidates(table);
            for &(site, _, _) in fixed {
                if cands.binary_search_by_key(&site, |c| c.site).is_err() {
                    return Err(ReplayError::BadTarget {
                        what: "a fixed if-else site (the trace's plan) that is no branch of this program whose two ways join".into(),
                        addr: site,
                    });
                }
            }
        }
        let regions = self.regions();
        if !regions.is_empty() {
            self.collapse = Some(collapse_map(table, regions)?);
        }
        Ok(())
    }

    /// The plan's collapsed regions (empty for a trace without).
    pub fn regions(&self) -> &[Region] {
        self.loops.as_ref().map_or(&[], LoopDecoder::regions)
    }

    /// Per collapsed region, the extents the walk stepped over so far.
    pub fn region_visits(&self) -> &[u64] {
        self.collapse.as_ref().map_or(&[], |c| &c.visits)
    }

    /// The plan's fixed sites (lossy if-else aggregation): address, the
    /// outcome the replay takes, the taken probability in parts per
    /// million. Empty for a trace without.
    pub fn fixed(&self) -> &[(u64, bool, u32)] {
        self.loops.as_ref().map_or(&[], LoopDecoder::fixed)
    }

    /// Per fixed site, the outcomes given so far.
    pub fn fixed_visits(&self) -> &[u64] {
        self.loops.as_ref().map_or(&[], LoopDecoder::fixed_visits)
    }

    /// The plain history, for a replay that reads the trace's bits itself
    /// (memoised stretches); only right when [`AggregatedHistory::plan`]
    /// is `None`.
    pub(crate) fn inner_mut(&mut self) -> &mut TraceHistory<R> {
        &mut self.inner
    }

    /// The tracker a [`Tracked`] visitor must set for this history.
    pub fn tracker(&self) -> SiteTracker {
        self.site.clone()
    }

    /// Branch outcomes given from the counts: the branches walked that the
    /// trace holds no bits for.
    pub fn synthesized(&self) -> u64 {
        self.loops.as_ref().map_or(0, LoopDecoder::tests)
    }

    /// After the walk: checks that every recorded loop run was used, and
    /// gives the reader back to be finished.
    pub fn finish(mut self) -> Result<TraceReader<R>, ReplayError> {
        if let Some(l) = &mut self.loops {
            l.finish(self.inner.reader_mut().0)?;
        }
        Ok(self.inner.into_reader())
    }
}

/// Check a plan's regions against the program and index them for the
/// walk: a function region's entry must be code; a nest's branches must be
/// conditional branches, and its exit's leaving way gives where the walk
/// goes on.
fn collapse_map(table: &PpTable, regions: &[Region]) -> Result<Collapse, ReplayError> {
    let code = table.code();
    let branch = |site: u64| {
        code.get(Addr(site))
            .filter(|i| i.class() == retrace_isa::Class::Branch)
            .ok_or_else(|| ReplayError::BadTarget {
                what: "a collapsed nest's branch (the trace's plan) that is no conditional branch of this program".into(),
                addr: site,
            })
    };
    let mut c = Collapse {
        visits: vec![0; regions.len()],
        ..Collapse::default()
    };
    for (i, r) in regions.iter().enumerate() {
        let i = i as u32;
        if let Some(p) = r.pps.iter().find(|p| code.get(Addr(p.start)).is_none()) {
            return Err(ReplayError::BadTarget {
                what: "a collapsed region's partial program (the trace's plan) that starts at no code of this program".into(),
                addr: p.start,
            });
        }
        match &r.kind {
            RegionKind::Function { entry } => {
                if code.get(Addr(*entry)).is_none() {
                    return Err(ReplayError::BadTarget {
                        what: "a collapsed function (the trace's plan) whose entry is no code of this program".into(),
                        addr: *entry,
                    });
                }
                c.functions.entry(*entry).or_insert(i);
            }
            RegionKind::Nest { sites, exit, leave } => {
                let inst = branch(*exit)?;
                let resume = if *leave {
                    inst.direct_target(*exit).unwrap_or(0)
                } else {
                    inst.fallthrough(*exit)
                };
                for &s in sites {
                    branch(s)?;
                    c.nests.entry(s).or_insert((i, resume));
                }
            }
        }
    }
    Ok(c)
}

impl<R: Read> History for AggregatedHistory<R> {
    const COLLAPSES: bool = true;

    #[inline]
    fn collapse_call(&mut self, target: u64) -> Option<u32> {
        let c = self.collapse.as_mut()?;
        let r = *c.functions.get(&target)?;
        c.visits[r as usize] += 1;
        Some(r)
    }

    #[inline]
    fn collapse_branch(&mut self, site: u64) -> Option<(u32, u64)> {
        let c = self.collapse.as_mut()?;
        let (r, resume) = *c.nests.get(&site)?;
        c.visits[r as usize] += 1;
        Some((r, resume))
    }

    #[inline]
    fn bit(&mut self) -> Result<Option<bool>, ReplayError> {
        match &mut self.loops {
            None => self.inner.bit(),
            Some(l) => Ok(l.branch(self.inner.reader_mut().0, self.site.0.get())?),
        }
    }

    #[inline]
    fn indirect(&mut self, site: u64) -> Result<u64, ReplayError> {
        self.inner.indirect(site)
    }

    fn escape(&mut self, matched: u64) -> Result<Option<u64>, ReplayError> {
        self.inner.escape(matched)
    }

    #[inline]
    fn next_trap(&mut self, executed: u64) -> Result<Option<u64>, ReplayError> {
        self.inner.next_trap(executed)
    }

    fn trap(&mut self) -> Result<u64, ReplayError> {
        if let Some(l) = &mut self.loops {
            l.trap(self.inner.reader_mut().0)?;
        }
        self.inner.trap()
    }

    #[inline]
    fn next_code(&mut self, executed: u64) -> Result<Option<u64>, ReplayError> {
        self.inner.next_code(executed)
    }

    fn code(&mut self) -> Result<(u64, Vec<u8>), ReplayError> {
        // A code event ends the loop execution in progress as a trap does
        // (the recorder's rule), and the next branch is a bit.
        if let Some(l) = &mut self.loops {
            l.trap(self.inner.reader_mut().0)?;
        }
        self.inner.code()
    }
}

/// A visitor that also tells a [`SiteTracker`] which branch ends the
/// partial program the walk goes to next.
pub struct Tracked<'v, V> {
    visit: &'v mut V,
    site: SiteTracker,
    /// Per partial program (by [`Graph::index`]): the address of the
    /// branch ending it, or [`NO_SITE`]; `None` until first needed.
    sites: Vec<Option<u64>>,
}

impl<'v, V> Tracked<'v, V> {
    /// `visit`, telling `site` where the walk's branches are, the walk
    /// starting at `entry` of `graph`.
    pub fn new<G: Graph>(site: SiteTracker, visit: &'v mut V, graph: &G, entry: G::Id) -> Self {
        let mut t = Tracked {
            visit,
            site,
            sites: Vec::new(),
        };
        let s = t.site_of(graph, entry);
        t.site.0.set(s);
        t
    }

    fn site_of<G: Graph>(&mut self, graph: &G, id: G::Id) -> u64 {
        let i = graph.index(id);
        if i == usize::MAX {
            return NO_SITE;
        }
        if let Some(Some(s)) = self.sites.get(i) {
            return *s;
        }
        let s = match graph.exit(id) {
            Ok(Exit::Branch { .. }) => graph.pc_at(id, graph.len(id).saturating_sub(1)),
            _ => NO_SITE,
        };
        if i >= self.sites.len() {
            self.sites.resize(i + 1, None);
        }
        self.sites[i] = Some(s);
        s
    }
}

impl<G: Graph, V: Visit<G>> Visit<G> for Tracked<'_, V> {
    #[inline]
    fn pp(&mut self, graph: &G, pp: G::Id, how: Leave, next: G::Id) {
        self.visit.pp(graph, pp, how, next);
        let s = self.site_of(graph, next);
        self.site.0.set(s);
    }

    fn last(&mut self, graph: &G, pp: G::Id, executed: u32) {
        self.visit.last(graph, pp, executed);
    }

    fn trap(&mut self, graph: &G, pp: G::Id, executed: u32) {
        self.visit.trap(graph, pp, executed);
        // The handler's partial program is not known here: the protocol's
        // next branch is a bit.
        self.site.0.set(NO_SITE);
    }

    fn collapsed(&mut self, graph: &G, region: u32) {
        self.visit.collapsed(graph, region);
    }

    fn cut(&mut self, graph: &G, pp: G::Id, executed: u32) {
        self.visit.cut(graph, pp, executed);
        // As after a trap: the code event made the next branch a bit.
        self.site.0.set(NO_SITE);
    }
}
