//! Cycle estimation during replay, at two fidelities:
//!
//! - [`Fidelity::Fast`] — US patent 8,448,140's method: the sum of partial-program
//!   times, each taken from a memo keyed by (pipeline signature at entry,
//!   partial program, outcome of its end), so interlocks that span
//!   boundaries are counted exactly. Branches cost what the core's *static*
//!   prediction gives (dynamic predictors fall back to backward-taken /
//!   forward-not-taken), returns are assumed predicted, caches hit. Exact on
//!   context-free cores.
//! - [`Fidelity::Control`] — additionally drives, during replay, the same
//!   branch predictor, return-address stack and instruction cache that the
//!   cycle-level engine drives, and adds the outcome (mispredicted or not,
//!   which line fetches missed) to the memo key. Exact on every core whose
//!   state depends only on the instruction stream.
//!
//! The memo is organised as a graph of *nodes*, one per (entry signature,
//! partial program) seen, each with an edge per end outcome that remembers
//! its cycles and the node it leads to. In steady state a replayed partial
//! program costs one node visit — no hashing, no pipeline — which is what
//! makes the replay fast; the hash table and the pipeline are consulted only
//! the first time a node is left with an outcome (or, under `control`, on
//! an I-cache miss, whose pattern is part of the key).
//!
//! Data-cache effects cannot come from branch bits. They are estimated as
//! `memory accesses × miss rate × miss penalty`, with the miss rate the
//! recorder measured for the core's data-cache geometry during the one
//! functional run (or one the caller gives). A miss in the timing model
//! blocks the pipeline for its penalty and shifts everything after it by
//! the same amount, so the term is exact when the rate is the run's own; the
//! error left (0.001% at most on the example programs) is what `retrace
//! compare` reports.

use crate::walk::{Graph, Leave, Visit};
use retrace_isa::{Flow, Inst};
use retrace_program::{Addr, PpId, PpTable};
use retrace_timing::{
    loaded_after, CoreModel, CpiAccount, CpiStack, Events, Frontend, PathTimer, SignatureId,
};
use rustc_hash::FxHashMap;

/// How much of the core's behaviour the replay simulates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fidelity {
    /// Static timing of partial programs plus boundary terms.
    Fast,
    /// Plus everything control flow decides: predictor, RAS, I-cache.
    Control,
}

impl std::str::FromStr for Fidelity {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "fast" => Ok(Fidelity::Fast),
            "control" => Ok(Fidelity::Control),
            _ => Err(format!("unknown fidelity `{s}`: use fast or control")),
        }
    }
}

impl std::fmt::Display for Fidelity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Fidelity::Fast => "fast",
            Fidelity::Control => "control",
        })
    }
}

/// Memo key: everything a partial program's time depends on.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct Key {
    entry: SignatureId,
    pp: PpId,
    end: EndOutcome,
    /// Which of the partial program's line fetches missed the I-cache.
    fetch_misses: u64,
}

/// How a partial program's end instruction went, as far as its time
/// depends on it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
struct EndOutcome {
    /// A conditional branch was taken.
    taken: bool,
    /// A conditional branch or a return was mispredicted.
    mispredicted: bool,
}

impl EndOutcome {
    /// The node edge for this outcome ([`Node::edges`]).
    #[inline(always)]
    fn edge(self) -> usize {
        usize::from(self.taken) | usize::from(self.mispredicted) << 1
    }
}

/// "No node yet".
pub(crate) const NO_NODE: u32 = u32::MAX;

/// Slots of the estimator's recent-node cache.
const RECENT_NODES: usize = 4096;

/// One way of leaving a node: for one end outcome, the cycles and the node
/// entered next (valid for the partial program `next_pp`).
#[derive(Clone, Copy)]
struct Edge {
    cycles: u64,
    next: u32,
    next_pp: PpId,
    /// The pipeline signature after the partial program: the node entered
    /// next is (this, successor). A return or an indirect jump leaves the
    /// same way to many successors; the time is the same, only the next
    /// node differs.
    exit_sig: SignatureId,
    visits: u64,
}

const NO_EDGE: Edge = Edge {
    cycles: 0,
    next: NO_NODE,
    next_pp: PpId(u32::MAX),
    exit_sig: SignatureId::IDLE,
    visits: 0,
};

/// Running totals of an estimate that a memoised stretch of the replay
/// adds in one go (`crate::span`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Counters {
    pub cycles: u64,
    pub instructions: u64,
    pub mem_ops: u64,
    pub mispredicts: u64,
}

impl Counters {
    /// `self − earlier`, field by field.
    pub fn since(self, earlier: Counters) -> Counters {
        Counters {
            cycles: self.cycles - earlier.cycles,
            instructions: self.instructions - earlier.instructions,
            mem_ops: self.mem_ops - earlier.mem_ops,
            mispredicts: self.mispredicts - earlier.mispredicts,
        }
    }
}

/// A partial program entered with a given pipeline signature.
#[derive(Clone, Copy)]
struct Node {
    pp: PpId,
    sig: SignatureId,
    /// Indexed by [`EndOutcome::edge`], all fetches hitting.
    edges: [Edge; 4],
}

/// How a node's partial program ends, as its [`QuickNode`] keeps it: the
/// ends `crate::span::step_one` takes without the walker's general step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum QuickExit {
    /// Nothing learnt yet.
    #[default]
    Unknown,
    /// A conditional branch: one branch bit picks the way out.
    Branch,
    /// A fall-through or a direct jump.
    Continue,
    /// A direct call: its return point is pushed.
    Call,
    /// A return that is not the escape's.
    Return,
}

/// One way out of a [`QuickNode`]: a copy of the node's edge for one end
/// outcome (`NO_NODE` in `next`: not learnt yet).
#[derive(Clone, Copy)]
pub(crate) struct QuickOut {
    pub cycles: u64,
    /// Steps the quick loop took this way, not counted in the edge's
    /// `visits` ([`Estimator::per_pp`] adds them).
    pub visits: u64,
    pub next: u32,
    pub next_pp: PpId,
    /// What the step adds to the mispredictions (0 or 1).
    pub mispredicts: u32,
    /// The edge's index in [`Node::edges`].
    pub edge: u8,
}

const NO_QUICK_OUT: QuickOut = QuickOut {
    cycles: 0,
    visits: 0,
    next: NO_NODE,
    next_pp: PpId(u32::MAX),
    mispredicts: 0,
    edge: 0,
};

/// Everything a `fast` step of one node needs, in one record indexed like
/// [`Estimator::nodes`]: how its partial program ends (the walker's side),
/// its length and memory operations (the facts' side), and per branch
/// outcome (0 not taken, 1 taken; 0 for the other ends) the cycles, the
/// misprediction and the next node (the edge's side). The record is a
/// copy of what the three tables say, learnt from a step that read them,
/// and valid while the walker's code epoch it was learnt in lasts.
#[derive(Clone, Copy)]
pub(crate) struct QuickNode {
    pub pp: PpId,
    pub exit: QuickExit,
    pub len: u32,
    pub mem_ops: u32,
    /// A call's return point.
    pub ret: PpId,
    pub out: [QuickOut; 2],
}

const NO_QUICK: QuickNode = QuickNode {
    pp: PpId(u32::MAX),
    exit: QuickExit::Unknown,
    len: 0,
    mem_ops: 0,
    ret: PpId(u32::MAX),
    out: [NO_QUICK_OUT; 2],
};

/// What the quick loop (`crate::span`) changes of an estimator.
pub(crate) struct QuickParts<'a> {
    pub quick: &'a mut [QuickNode],
    pub node: &'a mut u32,
    pub cycles: &'a mut u64,
    pub result: &'a mut Estimate,
}

/// Per-partial-program facts computed once.
#[derive(Clone, Default)]
struct PpFacts {
    /// Instruction index and pc where the path enters a new I-cache line.
    line_starts: Box<[(u32, u64)]>,
    /// Loads, stores and AMOs on the path.
    mem_ops: u32,
    /// Instructions on the path.
    len: u32,
    /// Address of the end instruction.
    last: u64,
    /// The end is a branch whose target lies before it.
    backward: bool,
    /// The address after the end instruction (a call's return address).
    after: u64,
    /// The end instruction enters a trap handler (an `ecall`, a plain
    /// `ebreak`): the path's time includes the trap.
    traps: bool,
    /// For an end that is a conditional branch: the length of the
    /// instruction at its fall-through address, read from the loaded code as
    /// the cycle-level engine reads it (0 = none there): picorv32 waits for
    /// its prefetch when the branch is taken ([`Events::fallthrough_len`]).
    fallthrough_len: u8,
    ready: bool,
}

/// Results of an estimate.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Estimate {
    /// Estimated cycles (data-cache term included).
    pub cycles: u64,
    /// Cycles before the data-cache term.
    pub control_cycles: u64,
    /// Estimated data-cache miss cycles.
    pub dcache_cycles: u64,
    /// Instructions replayed.
    pub instructions: u64,
    /// Conditional branches and returns mispredicted (as the fidelity sees
    /// them).
    pub mispredicts: u64,
    /// I-cache misses (control fidelity).
    pub icache_misses: u64,
    /// Loads, stores and AMOs replayed.
    pub mem_ops: u64,
    /// Distinct memo entries (a measure of the state crossing boundaries).
    pub memo_entries: u64,
    /// How much of the replay came from memoised stretches.
    pub memoised: crate::span::SpanStats,
    /// Distinct pipeline signatures.
    pub signatures: u64,
    /// Whether the data-cache term rests on a miss rate (measured at
    /// recording or given); `false` when the core has a data cache the
    /// trace has no measurement for, and the term is 0.
    pub dcache_measured: bool,
    /// The replay's deepest return stack: calls nested at most, capped at
    /// the recording protocol's bound
    /// (`retrace_trace::protocol::RETURN_STACK_BOUND`).
    pub max_depth: usize,
    /// Return points the replay's stack dropped at that bound (0 unless
    /// calls nested deeper): when not 0, `max_depth` is the bound, not the
    /// run's deepest nesting.
    pub stack_dropped: u64,
    /// Cycles added for fixed if-else sites (lossy aggregation, US patent 8,448,140's
    /// embodiment 3): per visit, the probability-weighted time of the two
    /// ways less the time of the way the replay took; included in
    /// `cycles`. 0 for a trace without fixed sites.
    pub lossy_cycles: f64,
}

impl Estimate {
    /// Whether two estimates of one trace agree on everything the replay
    /// computes, leaving out how much of it came from memoised stretches
    /// ([`Estimate::memoised`]): the memoised and the step-by-step replay
    /// ([`crate::estimate_trace_stepwise`]) must agree so.
    pub fn same_results(&self, other: &Estimate) -> bool {
        Estimate {
            memoised: other.memoised,
            ..*self
        } == *other
    }
}

/// Estimates cycles of one core while the walker replays.
pub struct Estimator {
    timer: PathTimer,
    fidelity: Fidelity,
    dcache_miss_rate: f64,
    sig: SignatureId,
    /// The node being executed (`NO_NODE` before the first and after a slow
    /// step that did not create one).
    node: u32,
    cycles: u64,
    memo: FxHashMap<Key, (u64, SignatureId)>,
    nodes: Vec<Node>,
    node_ids: FxHashMap<(SignatureId, PpId), u32>,
    /// Direct-mapped cache in front of `node_ids`: a return or an
    /// indirect jump leaves one node for many successors, and the working
    /// set of (signature, partial program) pairs is small.
    recent_nodes: Box<[(SignatureId, PpId, u32)]>,
    /// Predictor, return stack and I-cache: the whole front end under
    /// `control`, a stateless one under `fast`.
    frontend: Frontend,
    facts: Vec<PpFacts>,
    scratch: Vec<(u64, Inst, Events)>,
    /// The fetch misses of the partial program being timed when its path
    /// touches more than 64 I-cache lines (bit `k % 64` of word `k / 64`:
    /// the `k`-th line fetch missed): [`Estimator::fetch`]'s mask has one
    /// bit per line only up to 64, and then just says whether any missed.
    long_misses: Vec<u64>,
    /// The fetch-miss mask of the last partial program timed (with
    /// `long_misses`): what [`Estimator::prefix_cycles`] splits.
    last_misses: u64,
    /// Prefix cycles without I-cache misses, by (entry signature, partial
    /// program, instructions) ([`Estimator::prefix_cycles`]).
    prefixes: FxHashMap<(SignatureId, PpId, u32), u64>,
    /// Executions and cycles of partial programs outside the node graph
    /// (slow steps), indexed by [`PpId`].
    extra: Vec<(u64, u64)>,
    result: Estimate,
    span_stats: crate::span::SpanStats,
    /// Whether to note the `ecall`s replayed ([`Estimator::noting_ecalls`]).
    noting: bool,
    /// The `ecall`s noted; their consumer drains them.
    ecalls: Vec<Ecall>,
    /// What the node graph does not remember, for per-instruction costs
    /// ([`Estimator::attributing`]); `None` (nothing logged) unless asked.
    log: Option<Box<AttributionLog>>,
    /// Whether the front end's doings go to `journal` (a stretch being
    /// recorded for reuse at `control`: `crate::control_span`).
    journaling: bool,
    journal: Box<Journal>,
    /// Per node, its quick record (`fast` only; [`QuickNode`]).
    quick: Vec<QuickNode>,
    /// The walker's code epoch `quick` was learnt in.
    quick_epoch: u64,
}

/// A pop in a list of return-stack operations (a pushed return address is
/// never odd).
pub(crate) const RAS_POP: u64 = u64::MAX;

/// What the front end met during a stretch of the replay: everything a
/// `control` stretch's time and its effect on the front end depend on.
#[derive(Default)]
pub(crate) struct Journal {
    /// Predictor counters read, in first-read order, with their value then.
    pub slots: Vec<(u32, u8)>,
    /// Every conditional branch: the counter it read (its index in
    /// `slots`) and its outcome.
    pub branches: Vec<(u32, bool)>,
    /// Per counter, the journal generation that last read it, and its
    /// index in `slots` then.
    marks: Vec<(u32, u32)>,
    generation: u32,
    /// The pc of every I-cache line fetch, in order.
    pub fetches: Vec<u64>,
    /// Return-stack operations in order: a return address pushed (a
    /// call), or [`RAS_POP`] (a return).
    pub ras: Vec<u64>,
}

/// The data-cache term of an estimator: memory operations times the miss
/// rate times the miss penalty, rounded (0 without a data cache).
#[derive(Clone, Copy, Debug)]
pub(crate) struct DcacheTerm {
    rate: f64,
    /// The miss penalty; `None` without a data cache.
    penalty: Option<u32>,
}

impl DcacheTerm {
    /// The term after `mem_ops` memory operations.
    #[inline]
    pub fn cycles(self, mem_ops: u64) -> u64 {
        match self.penalty {
            Some(p) => (mem_ops as f64 * self.rate * f64::from(p)).round() as u64,
            None => 0,
        }
    }
}

/// An `ecall` the replay executed (it ends its partial program): where,
/// and the core's cycles just before it and once it and its trap are
/// done. The replay of several harts meets the harts' synchronisation
/// calls through these (`crate::system`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ecall {
    /// Instructions executed before it.
    pub at: u64,
    /// Cycles before it (before the data-cache term).
    pub before: u64,
    /// Cycles after it and its trap (before the data-cache term).
    pub after: u64,
    /// Memory operations before it (and after: it is none).
    pub mem_ops: u64,
}

/// A step outside the node graph, as far as its per-instruction costs
/// depend on it: entry signature, partial program, instructions run, end
/// outcome, fetch-miss mask, a long path's misses (`long_misses`), and the
/// registers in flight at entry that a load wrote.
type SlowKey = (
    SignatureId,
    PpId,
    u32,
    EndOutcome,
    u64,
    Option<Box<[u64]>>,
    u32,
);

/// A node step whose entry had registers in flight that a load wrote:
/// entry signature, partial program, end edge, those registers.
type LoadedKey = (SignatureId, PpId, usize, u32);

/// The steps of a replay that the node graph does not count, logged for
/// [`Estimator::per_instruction`].
#[derive(Default)]
struct AttributionLog {
    /// Steps outside the node graph, with how often each happened.
    slow: FxHashMap<SlowKey, u64>,
    /// Cycles of traps (exceptions) not yet charged to an instruction.
    pending_trap: u64,
    /// Node steps entered with registers in flight that a load wrote, with
    /// how often each happened: their CPI stacks tell a wait for such a
    /// register as load-use, which the signature does not say (it holds
    /// what the timing needs, and the timing does not care).
    loaded_steps: FxHashMap<LoadedKey, u64>,
    /// Registers last written by a load, as the replay goes (bit per
    /// register); only those in flight at a step's entry matter.
    loaded: u32,
    /// Per signature id, the registers it has in flight (bit per register),
    /// filled as signatures are met.
    in_flight: Vec<u32>,
    /// Per partial program, how its whole path changes `loaded`: bits
    /// kept, bits set ([`path_loads`]). Here and not in the partial
    /// programs' facts, which a plain replay reads at every step.
    loads: FxHashMap<PpId, (u32, u32)>,
    /// Each partial program's instructions as they were when it first ran:
    /// the table decodes the code as it is now, and code written at run
    /// time may since have replaced them (the partial program retired).
    code: FxHashMap<PpId, Box<[(Addr, Inst)]>>,
}

impl Estimator {
    /// An estimator for `model` at `fidelity`. `dcache_miss_rate` is used
    /// only when the model has a data cache.
    pub fn new(model: &CoreModel, fidelity: Fidelity, dcache_miss_rate: f64) -> Estimator {
        let control = fidelity == Fidelity::Control;
        Estimator {
            timer: PathTimer::new(model),
            fidelity,
            dcache_miss_rate,
            sig: SignatureId::IDLE,
            node: NO_NODE,
            cycles: 0,
            memo: FxHashMap::default(),
            nodes: Vec::new(),
            node_ids: FxHashMap::default(),
            recent_nodes: vec![(SignatureId(u32::MAX), PpId(u32::MAX), NO_NODE); RECENT_NODES]
                .into_boxed_slice(),
            frontend: if control {
                Frontend::new(model)
            } else {
                Frontend::stateless(model)
            },
            facts: Vec::new(),
            scratch: Vec::new(),
            long_misses: Vec::new(),
            last_misses: 0,
            prefixes: FxHashMap::default(),
            extra: Vec::new(),
            result: Estimate::default(),
            span_stats: Default::default(),
            noting: false,
            ecalls: Vec::new(),
            log: None,
            journaling: false,
            journal: Box::default(),
            quick: Vec::new(),
            quick_epoch: 0,
        }
    }

    /// Log what [`Estimator::per_instruction`] needs as the replay goes: the
    /// steps outside the node graph (those with I-cache misses, cut short
    /// or last), the traps, and which registers in flight a load wrote
    /// (for the CPI stacks' load-use part). A replay that does not ask
    /// pays one test of a field per node step.
    pub fn attributing(mut self) -> Estimator {
        self.log = Some(Box::default());
        self
    }

    /// Cycles of exceptions' traps since the last call (0 unless
    /// [`Estimator::attributing`]): its caller knows which instruction
    /// issued last, which they are charged to.
    pub(crate) fn take_trap_cycles(&mut self) -> u64 {
        self.log
            .as_mut()
            .map_or(0, |l| std::mem::take(&mut l.pending_trap))
    }

    /// Per instruction address: executions, cycles, mispredictions and
    /// I-cache misses of the replay so far, by the rule of
    /// `retrace_sim::attribution` (an instruction is charged the cycles by
    /// which it advances the issue clock), added into `out`. Each (entry
    /// signature, partial program, outcome) the replay met is timed once
    /// more, instruction by instruction, and weighted by its visits. Needs
    /// [`Estimator::attributing`]; exceptions' traps are not included
    /// ([`Estimator::take_trap_cycles`]).
    pub fn per_instruction(
        &mut self,
        out: &mut FxHashMap<u64, retrace_sim::attribution::InstructionCost>,
    ) {
        let Some(log) = self.log.take() else {
            return;
        };
        let nodes: Vec<(SignatureId, PpId, [u64; 4])> = self
            .nodes
            .iter()
            .filter(|n| n.pp != crate::machine::INVALID)
            .map(|n| (n.sig, n.pp, n.edges.map(|e| e.visits)))
            .collect();
        // A node's visits entered with registers a load wrote in flight
        // are charged apart, with those registers; the rest with none.
        let mut loaded: FxHashMap<(SignatureId, PpId, usize), Vec<(u32, u64)>> =
            FxHashMap::default();
        for (&(sig, pp, edge, regs), &v) in &log.loaded_steps {
            loaded.entry((sig, pp, edge)).or_default().push((regs, v));
        }
        for (sig, pp, visits) in nodes {
            for (edge, &v) in visits.iter().enumerate() {
                if v == 0 {
                    continue;
                }
                let apart = loaded.get(&(sig, pp, edge)).map_or(&[][..], |l| &l[..]);
                let plain = v.saturating_sub(apart.iter().map(|&(_, n)| n).sum::<u64>());
                let end = EndOutcome {
                    taken: edge & 1 != 0,
                    mispredicted: edge & 2 != 0,
                };
                let len = self.facts[pp.index()].len;
                // Node steps never miss: a long path's misses are all 0.
                let lines = self.facts[pp.index()].line_starts.len();
                self.long_misses.clear();
                self.long_misses.resize(lines.div_ceil(64), 0);
                for (regs, v) in [(0, plain)].into_iter().chain(apart.iter().copied()) {
                    if v != 0 {
                        self.charge_path(&log, (sig, pp, len, end, 0, regs), v, out);
                    }
                }
            }
        }
        for ((sig, pp, n, end, mask, long, regs), &v) in &log.slow {
            if let Some(long) = long {
                self.long_misses.clear();
                self.long_misses.extend_from_slice(long);
            }
            self.charge_path(&log, (*sig, *pp, *n, *end, *mask, *regs), v, out);
        }
        self.log = Some(log);
    }

    /// Add `visits` times the per-instruction costs of `n` instructions of
    /// `pp` entered with signature `sig`, ending `end`, with the fetch
    /// misses `mask` (and `long_misses`) and the registers in flight that a
    /// load wrote `regs`, to `out`.
    fn charge_path(
        &mut self,
        log: &AttributionLog,
        (sig, pp, n, end, mask, regs): (SignatureId, PpId, u32, EndOutcome, u64, u32),
        visits: u64,
        out: &mut FxHashMap<u64, retrace_sim::attribution::InstructionCost>,
    ) {
        let insts = log.code.get(&pp).map_or(&[][..], |c| &c[..]);
        self.events_of(insts.iter().copied(), pp, n, end, mask);
        let model = self.timer.model();
        let mut pipeline = retrace_timing::Pipeline::from_signature(self.timer.signature(sig));
        let mut acct = CpiAccount::with_loaded(regs);
        let mut before = 0;
        for (pc, inst, ev) in &self.scratch {
            acct.stack = CpiStack::default();
            pipeline.issue_accounting(model, *pc, inst, *ev, &mut acct);
            let c = out.entry(*pc).or_default();
            c.executions += visits;
            c.cycles += (pipeline.cycle() - before) * visits;
            c.mispredicts += u64::from(ev.mispredict) * visits;
            c.icache_misses += u64::from(ev.fetch_miss) * visits;
            c.cpi.add_times(&acct.stack, visits);
            before = pipeline.cycle();
        }
        // A path that ends by trapping (an `ecall`) includes the trap, which
        // its last instruction is charged.
        let f = &self.facts[pp.index()];
        if n == f.len && f.traps {
            if let Some((pc, _, _)) = self.scratch.last() {
                acct.stack = CpiStack::default();
                pipeline.trap_accounting(model, &mut acct);
                let c = out.entry(*pc).or_default();
                c.cycles += (pipeline.cycle() - before) * visits;
                c.cpi.add_times(&acct.stack, visits);
            }
        }
    }

    /// The registers in flight at signature `sig` that a load wrote, as the
    /// replay has it now (attributing only).
    fn loaded_in_flight(&mut self, sig: SignatureId) -> u32 {
        let Some(log) = &mut self.log else {
            return 0;
        };
        let i = sig.0 as usize;
        if i >= log.in_flight.len() {
            let timer = &self.timer;
            let from = log.in_flight.len();
            log.in_flight
                .extend((from..=i).map(|k| timer.signature(SignatureId(k as u32)).registers()));
        }
        log.loaded & log.in_flight[i]
    }

    /// Log a node step of `pp` left by `edge` (attributing only): with
    /// registers a load wrote in flight at its entry, apart; then follow
    /// which registers the path leaves written by a load.
    #[cold]
    #[inline(never)]
    fn log_node_step(&mut self, pp: PpId, edge: usize) {
        let sig = self.nodes[self.node as usize].sig;
        let regs = self.loaded_in_flight(sig);
        if let Some(log) = &mut self.log {
            let loads = log.loads.get(&pp).copied().unwrap_or((u32::MAX, 0));
            if regs != 0 {
                *log.loaded_steps.entry((sig, pp, edge, regs)).or_default() += 1;
            }
            log.loaded = log.loaded & loads.0 | loads.1;
        }
    }

    /// Start on another history (another hart's) with what this estimator
    /// has learnt: the times of partial programs, the node graph and the
    /// prefix times stay, for they depend on the core and the code alone;
    /// the pipeline is idle again, the front end fresh (predictor, return
    /// stack and I-cache are each hart's own), the totals 0 and the
    /// data-cache term at `dcache_miss_rate`.
    pub(crate) fn restart(&mut self, dcache_miss_rate: f64) {
        let model = self.timer.model();
        self.frontend = match self.fidelity {
            Fidelity::Control => Frontend::new(model),
            Fidelity::Fast => Frontend::stateless(model),
        };
        if let Some(log) = &mut self.log {
            // The pipeline is idle again: nothing a load wrote is in flight.
            log.loaded = 0;
        }
        self.dcache_miss_rate = dcache_miss_rate;
        self.sig = SignatureId::IDLE;
        self.node = NO_NODE;
        self.cycles = 0;
        self.result = Estimate::default();
        self.last_misses = 0;
        self.extra.clear();
        self.ecalls.clear();
    }

    /// Note every `ecall` replayed from now on ([`Estimator::ecalls`]).
    pub(crate) fn noting_ecalls(mut self) -> Estimator {
        self.noting = true;
        self
    }

    /// The `ecall`s noted and not yet taken, in order (empty when not
    /// noting).
    #[inline]
    pub(crate) fn ecalls(&mut self) -> &mut Vec<Ecall> {
        &mut self.ecalls
    }

    /// Set the data-cache miss rate (e.g. once the trace's measurements have
    /// been read, at its end).
    pub fn set_dcache_miss_rate(&mut self, rate: f64) {
        self.dcache_miss_rate = rate;
    }

    /// Record how much of the replay came from memoised stretches.
    pub(crate) fn set_span_stats(&mut self, stats: crate::span::SpanStats) {
        self.span_stats = stats;
    }

    /// Cycles so far, before the data-cache term.
    pub fn cycles(&self) -> u64 {
        self.cycles
    }

    /// The fidelity.
    pub fn fidelity(&self) -> Fidelity {
        self.fidelity
    }

    /// The core.
    pub fn model(&self) -> &CoreModel {
        self.timer.model()
    }

    /// Executions and cycles of every partial program, indexed by [`PpId`]
    /// (for profiles).
    pub fn per_pp(&self) -> Vec<(u64, u64)> {
        let mut v = self.extra.clone();
        // A node of code that cannot execute (a jump's target whose fetch
        // faulted) is entered but never left: it has no visits.
        for n in self
            .nodes
            .iter()
            .filter(|n| n.pp != crate::machine::INVALID)
        {
            let i = n.pp.index();
            if i >= v.len() {
                v.resize(i + 1, (0, 0));
            }
            for e in &n.edges {
                v[i].0 += e.visits;
                v[i].1 += e.visits * e.cycles;
            }
        }
        for (q, n) in self.quick.iter().zip(&self.nodes) {
            for o in &q.out {
                let i = n.pp.index();
                if o.visits != 0 && i < v.len() {
                    v[i].0 += o.visits;
                    v[i].1 += o.visits * o.cycles;
                }
            }
        }
        v
    }

    /// The data-cache term so far: the memory operations walked so far
    /// times the miss rate and the miss penalty (0 without a data cache).
    pub fn dcache_cycles(&self) -> u64 {
        self.dcache_term().cycles(self.result.mem_ops)
    }

    /// The data-cache term, as a function of the memory operations.
    #[inline]
    pub(crate) fn dcache_term(&self) -> DcacheTerm {
        DcacheTerm {
            rate: self.dcache_miss_rate,
            penalty: self.model().dcache.as_ref().map(|dc| dc.miss_penalty),
        }
    }

    /// The estimate so far (complete after the walk).
    pub fn estimate(&self) -> Estimate {
        let mut e = self.result;
        e.control_cycles = self.cycles;
        e.dcache_cycles = self.dcache_cycles();
        e.cycles = e.control_cycles + e.dcache_cycles;
        e.memo_entries = self.memo.len() as u64;
        e.memoised = self.span_stats;
        e.signatures = self.timer.signature_count() as u64;
        e
    }

    /// The node about to execute and its partial program, when the
    /// estimator is inside its node graph (`crate::span` memoises stretches
    /// of the replay from such a node). Only [`Fidelity::Fast`] estimators
    /// qualify: under `control` the time also depends on predictor and
    /// cache state that a node does not capture.
    #[inline]
    pub(crate) fn current_node(&self) -> Option<(u32, PpId)> {
        if self.fidelity != Fidelity::Fast
            || self.frontend.icache().is_some()
            || self.node == NO_NODE
        {
            return None;
        }
        Some((self.node, self.nodes[self.node as usize].pp))
    }

    /// The node about to execute and its partial program, for a memoised
    /// stretch at `control` (`crate::control_span`): the estimator is in its
    /// node graph, at [`Fidelity::Control`], neither noting `ecall`s nor
    /// logging for attribution (both replay step by step).
    #[inline]
    pub(crate) fn current_control_node(&self) -> Option<(u32, PpId)> {
        if self.fidelity != Fidelity::Control
            || self.node == NO_NODE
            || self.noting
            || self.log.is_some()
        {
            return None;
        }
        Some((self.node, self.nodes[self.node as usize].pp))
    }

    /// I-cache misses so far.
    #[inline]
    pub(crate) fn icache_misses(&self) -> u64 {
        self.result.icache_misses
    }

    /// Start journaling the front end's doings ([`Journal`]), afresh.
    pub(crate) fn begin_journal(&mut self) {
        let j = &mut self.journal;
        j.slots.clear();
        j.branches.clear();
        j.fetches.clear();
        j.ras.clear();
        j.generation = j.generation.wrapping_add(1);
        if j.generation == 0 {
            j.marks.iter_mut().for_each(|m| m.0 = 0);
            j.generation = 1;
        }
        self.journaling = true;
    }

    /// Stop journaling; the journal stays readable until the next start.
    pub(crate) fn end_journal(&mut self) -> &Journal {
        self.journaling = false;
        &self.journal
    }

    /// The journal so far.
    pub(crate) fn journal(&self) -> &Journal {
        &self.journal
    }

    /// Journal what the front end is about to do for `pp`, left `how`:
    /// the counter its branch reads (first read only, with its value),
    /// its line fetches, its return-stack operation.
    #[cold]
    #[inline(never)]
    fn journal_pp(&mut self, pp: PpId, how: Leave) {
        let f = &self.facts[pp.index()];
        let j = &mut self.journal;
        if self.frontend.icache().is_some() {
            j.fetches.extend(f.line_starts.iter().map(|&(_, pc)| pc));
        }
        match how {
            Leave::Branch(taken) => {
                if let Some(p) = self.frontend.predictor() {
                    if let Some(slot) = p.slot(f.last) {
                        if j.marks.len() <= slot {
                            j.marks.resize(slot + 1, (0, 0));
                        }
                        if j.marks[slot].0 != j.generation {
                            j.marks[slot] = (j.generation, j.slots.len() as u32);
                            j.slots.push((slot as u32, p.counter(slot)));
                        }
                        j.branches.push((j.marks[slot].1, taken));
                    }
                }
            }
            Leave::Call => j.ras.push(f.after),
            Leave::Return { .. } => j.ras.push(RAS_POP),
            Leave::Indirect | Leave::Continue => {}
        }
    }

    /// The predictor's global history (0 without one): with the trace's
    /// bits it decides which counters a stretch reads.
    #[inline]
    pub(crate) fn predictor_history(&self) -> u64 {
        self.frontend.predictor().map_or(0, |p| p.history())
    }

    /// The counter at `slot` (0 without a dynamic predictor).
    #[inline]
    pub(crate) fn counter(&self, slot: u32) -> u8 {
        self.frontend
            .predictor()
            .map_or(0, |p| p.counter(slot as usize))
    }

    /// The line of `pc` (itself without an I-cache).
    #[inline]
    pub(crate) fn line_of(&self, pc: u64) -> u64 {
        self.frontend.icache().map_or(pc, |c| c.line_of(pc))
    }

    /// Lines the I-cache has filled so far (0 without one).
    #[inline]
    pub(crate) fn icache_fills(&self) -> u64 {
        self.frontend.icache().map_or(0, |c| c.misses)
    }

    /// Whether every line of `pcs` is in the I-cache (true without one).
    #[inline]
    pub(crate) fn icache_holds(&self, pcs: &[u64]) -> bool {
        match self.frontend.icache() {
            Some(c) => pcs.iter().all(|&pc| c.holds(pc)),
            None => true,
        }
    }

    /// Leave the front end as a memoised stretch leaves it: each counter
    /// it read set to its value after it (`post(slot, value before)`),
    /// the global history `history`, its return-stack operations done
    /// (`ras`: a return address pushed, or [`RAS_POP`]) and its lines
    /// fetched (each in the order of its last fetch: when all hit, that
    /// leaves the LRU order the whole fetch sequence leaves).
    pub(crate) fn apply_frontend(
        &mut self,
        slots: impl Iterator<Item = (u32, [u8; 4])>,
        history: u64,
        ras: &[u64],
        lines: &[u64],
    ) {
        if let Some(p) = self.frontend.predictor_mut() {
            for (slot, post) in slots {
                let v = p.counter(slot as usize);
                p.set_counter(slot as usize, post[usize::from(v & 3)]);
            }
            p.set_history(history);
        }
        for &op in ras {
            if op == RAS_POP {
                self.frontend.ret(|| 0);
            } else {
                self.frontend.call(op);
            }
        }
        for &pc in lines {
            let missed = self.frontend.fetch_misses(pc);
            debug_assert!(!missed, "a stretch is applied only when its lines are held");
        }
        self.last_misses = 0;
    }

    /// Nodes so far (node numbers are below this).
    #[inline]
    pub(crate) fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// How many `ecall`s are noted and not yet taken.
    #[inline]
    pub(crate) fn ecalls_noted(&self) -> usize {
        self.ecalls.len()
    }

    /// The `ecall`s noted after the first `from`, relative to the running
    /// totals `start` (what a memoised stretch from there holds).
    pub(crate) fn ecalls_since(&self, from: usize, start: &Counters) -> Box<[Ecall]> {
        self.ecalls[from..]
            .iter()
            .map(|e| Ecall {
                at: e.at - start.instructions,
                before: e.before - start.cycles,
                after: e.after - start.cycles,
                mem_ops: e.mem_ops - start.mem_ops,
            })
            .collect()
    }

    /// The running totals.
    #[inline]
    pub(crate) fn counters(&self) -> Counters {
        Counters {
            cycles: self.cycles,
            instructions: self.result.instructions,
            mem_ops: self.result.mem_ops,
            mispredicts: self.result.mispredicts,
        }
    }

    /// Add a memoised stretch of the replay that ends before `node`
    /// executes. Per-partial-program visits ([`Estimator::per_pp`]) do not
    /// include such stretches; profiles replay step by step.
    #[inline]
    pub(crate) fn add_stretch(&mut self, delta: &Counters, node: u32) {
        self.cycles += delta.cycles;
        self.result.instructions += delta.instructions;
        self.result.mem_ops += delta.mem_ops;
        self.result.mispredicts += delta.mispredicts;
        self.node = node;
    }

    /// Whether [`Estimator::step_cached`] may time partial programs: a
    /// `fast` estimator (its front end has no state: no predictor counters,
    /// return stack or I-cache) that neither notes `ecall`s, nor logs for
    /// attribution, nor journals.
    #[inline]
    pub(crate) fn steps_cached(&self) -> bool {
        self.fidelity == Fidelity::Fast && !self.noting && self.log.is_none() && !self.journaling
    }

    /// [`Estimator::current_node`] of an estimator that
    /// [`Estimator::steps_cached`] (a `fast` one: no I-cache), without
    /// asking again what that already says.
    #[inline(always)]
    pub(crate) fn cached_node(&self) -> Option<(u32, PpId)> {
        debug_assert!(self.steps_cached() && self.frontend.icache().is_none());
        self.nodes
            .get(self.node as usize)
            .map(|n| (self.node, n.pp))
    }

    /// [`Visit::pp`] for the common case of a `fast` replay (only when
    /// [`Estimator::steps_cached`]): the estimator is at `pp`'s node, whose
    /// edge for this end leads to `next`. Adds what `Visit::pp` would and
    /// returns `true`; otherwise changes nothing and returns `false` (the
    /// caller then calls `Visit::pp`). Cheaper than `Visit::pp` because it
    /// asks nothing but the node, the edge and the partial program's facts.
    #[inline(always)]
    pub(crate) fn step_cached(&mut self, pp: PpId, how: Leave, next: PpId) -> bool {
        debug_assert!(self.steps_cached());
        let node = self.node;
        let Some(n) = self.nodes.get_mut(node as usize) else {
            return false;
        };
        if n.pp != pp {
            return false;
        }
        let Some(f) = self.facts.get(pp.index()) else {
            return false;
        };
        if !f.ready {
            return false;
        }
        // The stateless front end: a branch gets its static prediction, a
        // return is never mispredicted (as in `time_pp`).
        let end = match how {
            Leave::Branch(taken) => EndOutcome {
                taken,
                mispredicted: self.frontend.branch(f.last, f.backward, taken),
            },
            _ => EndOutcome::default(),
        };
        let e = &mut n.edges[end.edge()];
        if e.next == NO_NODE || e.next_pp != next {
            return false;
        }
        e.visits += 1;
        self.cycles += e.cycles;
        self.node = e.next;
        self.result.instructions += u64::from(f.len);
        self.result.mem_ops += u64::from(f.mem_ops);
        self.result.mispredicts += u64::from(end.mispredicted && f.len > 0);
        true
    }

    /// The quick records and what the quick loop changes, for the
    /// walker's code epoch `epoch` (records of an earlier epoch are
    /// dropped, their steps counted into the edges' visits).
    #[inline(always)]
    pub(crate) fn quick_parts(&mut self, epoch: u64) -> QuickParts<'_> {
        if epoch != self.quick_epoch {
            self.drop_quick(epoch);
        }
        QuickParts {
            quick: &mut self.quick,
            node: &mut self.node,
            cycles: &mut self.cycles,
            result: &mut self.result,
        }
    }

    #[cold]
    fn drop_quick(&mut self, epoch: u64) {
        for (q, n) in self.quick.iter().zip(self.nodes.iter_mut()) {
            for o in &q.out {
                n.edges[usize::from(o.edge)].visits += o.visits;
            }
        }
        self.quick.clear();
        self.quick_epoch = epoch;
    }

    /// Learn `from`'s quick record for the step just taken from it (only
    /// when [`Estimator::steps_cached`]): its partial program ended
    /// `exit` (a call returning to `ret`), `len` instructions long by the
    /// walker, left `how` for `next`, in the walker's code epoch `epoch`.
    /// Learns nothing unless the step went along `from`'s edge to the node
    /// the estimator is now at.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn learn_quick(
        &mut self,
        from: u32,
        how: Leave,
        exit: QuickExit,
        ret: PpId,
        len: u32,
        next: PpId,
        epoch: u64,
    ) {
        if exit == QuickExit::Unknown || !self.steps_cached() {
            return;
        }
        if epoch != self.quick_epoch {
            self.drop_quick(epoch);
        }
        let Some(n) = self.nodes.get(from as usize) else {
            return;
        };
        let pp = n.pp;
        let Some(f) = self.facts.get(pp.index()) else {
            return;
        };
        if !f.ready || f.len != len {
            return;
        }
        let (b, end) = match how {
            Leave::Branch(taken) => (
                usize::from(taken),
                EndOutcome {
                    taken,
                    mispredicted: self.frontend.branch(f.last, f.backward, taken),
                },
            ),
            _ => (0, EndOutcome::default()),
        };
        let k = end.edge();
        let e = n.edges[k];
        if e.next == NO_NODE || e.next_pp != next || e.next != self.node {
            return;
        }
        let mem_ops = f.mem_ops;
        let mispredicts = u32::from(end.mispredicted && f.len > 0);
        if self.quick.len() < self.nodes.len() {
            self.quick.resize(self.nodes.len(), NO_QUICK);
        }
        let q = &mut self.quick[from as usize];
        if q.exit != exit || q.pp != pp {
            // The node's steps so far go to its edges before the record
            // is made anew.
            let n = &mut self.nodes[from as usize];
            for o in &q.out {
                n.edges[usize::from(o.edge)].visits += o.visits;
            }
            *q = QuickNode {
                pp,
                exit,
                len,
                mem_ops,
                ret,
                out: [NO_QUICK_OUT; 2],
            };
        }
        let o = &mut q.out[b];
        debug_assert!(o.visits == 0 || usize::from(o.edge) == k);
        *o = QuickOut {
            cycles: e.cycles,
            visits: o.visits,
            next: e.next,
            next_pp: next,
            mispredicts,
            edge: k as u8,
        };
    }

    #[inline]
    fn facts(&mut self, table: &PpTable, pp: PpId) -> &PpFacts {
        let i = pp.index();
        if i < self.facts.len() && self.facts[i].ready {
            return &self.facts[i];
        }
        self.learn(table, pp)
    }

    #[cold]
    fn learn(&mut self, table: &PpTable, pp: PpId) -> &PpFacts {
        let i = pp.index();
        if i >= self.facts.len() {
            let n = table.len().max(i + 1);
            self.facts.resize(n, PpFacts::default());
        }
        let mut lines = Vec::new();
        let mut mem_ops = 0;
        let mut prev = u64::MAX;
        for (k, (pc, inst)) in table.insts(pp).enumerate() {
            if let Some(ic) = self.frontend.icache() {
                let line = ic.line_of(pc.get());
                if line != prev {
                    lines.push((k as u32, pc.get()));
                    prev = line;
                }
            }
            mem_ops += u32::from(inst.mem().is_some());
        }
        if let Some(log) = &mut self.log {
            let code: Box<[(Addr, Inst)]> = table.insts(pp).collect();
            log.loads
                .insert(pp, path_loads(code.iter().map(|(_, i)| i)));
            log.code.insert(pp, code);
        }
        let p = table.get(pp);
        let end = table.end_inst(pp);
        let after = end.map(|e| e.fallthrough(p.last.get())).unwrap_or(0);
        let fallthrough_len = match end.map(|e| e.flow()) {
            Some(Flow::CondBranch) => {
                table
                    .code()
                    .read_data(Addr(after), 1)
                    .map_or(0, |b| if b & 3 == 3 { 4 } else { 2 })
            }
            _ => 0,
        };
        self.facts[i] = PpFacts {
            line_starts: lines.into_boxed_slice(),
            mem_ops,
            len: p.len,
            last: p.last.get(),
            backward: end.is_some_and(|e| e.is_backward_branch()),
            after,
            traps: p.end.traps(),
            fallthrough_len,
            ready: true,
        };
        &self.facts[i]
    }

    /// Fetch the first `n` instructions' lines through the I-cache; returns
    /// the miss mask (bit k: the k-th line fetch missed). A path of more
    /// than 64 lines keeps its misses in `long_misses` instead, and the
    /// mask is then 1 when any missed: folding lines past the 64th into one
    /// bit once charged a miss to every late line when one of them missed
    /// (tens of cycles on AES's unrolled rounds).
    #[inline]
    fn fetch(&mut self, pp: PpId, n: u32) -> u64 {
        if self.frontend.icache().is_none() {
            return 0;
        }
        let lines = &self.facts[pp.index()].line_starts;
        let long = lines.len() > 64;
        if long {
            self.long_misses.clear();
            self.long_misses.resize(lines.len().div_ceil(64), 0);
        }
        let mut mask = 0u64;
        for (k, &(idx, pc)) in lines.iter().enumerate() {
            if idx >= n {
                break;
            }
            if self.frontend.fetch_misses(pc) {
                if long {
                    self.long_misses[k / 64] |= 1 << (k % 64);
                    mask = 1;
                } else {
                    mask |= 1 << k;
                }
            }
        }
        mask
    }

    /// How many line fetches missed, from [`Estimator::fetch`]'s mask.
    fn miss_count(&self, pp: PpId, mask: u64) -> u64 {
        if self.facts[pp.index()].line_starts.len() > 64 {
            self.long_misses
                .iter()
                .map(|w| u64::from(w.count_ones()))
                .sum()
        } else {
            u64::from(mask.count_ones())
        }
    }

    /// Fill `scratch` with the first `n` instructions of `pp` and their
    /// events: the line fetches that missed (`fetch_misses`, or
    /// `long_misses` for a path of more than 64 lines) and, when the whole
    /// path runs, `end`'s outcome on its end instruction.
    fn path_events(
        &mut self,
        table: &PpTable,
        pp: PpId,
        n: u32,
        end: EndOutcome,
        fetch_misses: u64,
    ) {
        self.events_of(table.insts(pp), pp, n, end, fetch_misses);
    }

    /// [`Estimator::path_events`] over `insts`, the partial program's
    /// instructions (as they were when it ran: see [`AttributionLog::code`]).
    fn events_of(
        &mut self,
        insts: impl Iterator<Item = (Addr, Inst)>,
        pp: PpId,
        n: u32,
        end: EndOutcome,
        fetch_misses: u64,
    ) {
        let long = self.facts[pp.index()].line_starts.len() > 64;
        let whole = n == self.facts[pp.index()].len;
        self.scratch.clear();
        let lines = &self.facts[pp.index()].line_starts;
        let mut line_k = 0usize;
        let fallthrough_len = self.facts[pp.index()].fallthrough_len;
        for (k, (pc, inst)) in insts.take(n as usize).enumerate() {
            let mut ev = Events::default();
            while line_k < lines.len() && lines[line_k].0 as usize <= k {
                if lines[line_k].0 as usize == k {
                    ev.fetch_miss = if long {
                        self.long_misses[line_k / 64] >> (line_k % 64) & 1 != 0
                    } else {
                        fetch_misses >> line_k & 1 != 0
                    };
                }
                line_k += 1;
            }
            if k + 1 == n as usize && whole {
                ev.taken = end.taken;
                ev.mispredict = end.mispredicted;
                ev.fallthrough_len = fallthrough_len;
            }
            self.scratch.push((pc.get(), inst, ev));
        }
    }

    /// Time `n` instructions of `pp` from the current signature with the
    /// given end outcome and fetch misses (memo, then pipeline); all of a
    /// path that ends by trapping (an `ecall`) includes the trap.
    fn time_path(
        &mut self,
        table: &PpTable,
        pp: PpId,
        n: u32,
        end: EndOutcome,
        fetch_misses: u64,
    ) -> u64 {
        let long = self.facts[pp.index()].line_starts.len() > 64;
        // The end instruction's outcome applies when the whole path ran;
        // the result is memoised only then, and only when the misses fit
        // the key's mask. (The two were one flag once, and a path of more
        // than 64 lines lost its branch's taken and mispredict cycles.)
        let whole = n == self.facts[pp.index()].len;
        let full = whole && !long;
        let key = Key {
            entry: self.sig,
            pp,
            end,
            fetch_misses,
        };
        if full {
            if let Some(&(c, next)) = self.memo.get(&key) {
                self.sig = next;
                return c;
            }
        }
        self.path_events(table, pp, n, end, fetch_misses);
        let (mut c, mut next) = self
            .timer
            .time(self.sig, self.scratch.iter().map(|(pc, i, e)| (*pc, i, *e)));
        if n == self.facts[pp.index()].len && self.facts[pp.index()].traps {
            c += self.timer.trap(next);
            next = SignatureId::IDLE;
        }
        if full {
            self.memo.insert(key, (c, next));
        }
        self.sig = next;
        c
    }

    /// The node for (current signature, `pp`), created if new.
    #[inline]
    fn node_for(&mut self, pp: PpId) -> u32 {
        let sig = self.sig;
        let slot = (pp.0.wrapping_mul(0x9e37_79b9) ^ sig.0) as usize % RECENT_NODES;
        let (s, p, n) = self.recent_nodes[slot];
        if s == sig && p == pp {
            return n;
        }
        let n = self.node_for_slow(sig, pp);
        self.recent_nodes[slot] = (sig, pp, n);
        n
    }

    fn node_for_slow(&mut self, sig: SignatureId, pp: PpId) -> u32 {
        if let Some(&n) = self.node_ids.get(&(sig, pp)) {
            return n;
        }
        let n = self.nodes.len() as u32;
        self.nodes.push(Node {
            pp,
            sig,
            edges: [NO_EDGE; 4],
        });
        self.node_ids.insert((sig, pp), n);
        n
    }

    /// A step outside the node graph (I-cache misses, or the last partial
    /// program): counted per partial program.
    fn slow_step(&mut self, table: &PpTable, pp: PpId, n: u32, end: EndOutcome, misses: u64) {
        if self.log.is_some() {
            let long = (self.facts[pp.index()].line_starts.len() > 64)
                .then(|| self.long_misses.clone().into_boxed_slice());
            let loaded = self.loaded_in_flight(self.sig);
            let whole = n == self.facts[pp.index()].len;
            let log = self.log.as_mut().expect("attributing");
            let loads = match log.loads.get(&pp) {
                Some(&l) if whole => l,
                _ => {
                    let code = log.code.get(&pp).map_or(&[][..], |c| &c[..]);
                    path_loads(code.iter().take(n as usize).map(|(_, i)| i))
                }
            };
            *log.slow
                .entry((self.sig, pp, n, end, misses, long, loaded))
                .or_default() += 1;
            log.loaded = log.loaded & loads.0 | loads.1;
        }
        let c = self.time_path(table, pp, n, end, misses);
        self.cycles += c;
        let i = pp.index();
        if i >= self.extra.len() {
            self.extra.resize(i + 1, (0, 0));
        }
        self.extra[i].0 += 1;
        self.extra[i].1 += c;
        let mem: u32 = if n == self.facts[i].len {
            self.facts[i].mem_ops
        } else {
            table
                .insts(pp)
                .take(n as usize)
                .map(|(_, inst)| u32::from(inst.mem().is_some()))
                .sum()
        };
        self.result.mem_ops += u64::from(mem);
        self.result.mispredicts += u64::from(end.mispredicted && n == self.facts[i].len);
        self.node = NO_NODE;
    }
}

impl Estimator {
    /// Time the whole of `pp`, left `how` for `next` ([`Visit::pp`]).
    #[inline]
    fn time_pp(&mut self, table: &PpTable, pp: PpId, how: Leave, next: PpId) {
        let f = self.facts(table, pp);
        let (len, last, backward, after, mem_ops) = (f.len, f.last, f.backward, f.after, f.mem_ops);
        if self.journaling {
            self.journal_pp(pp, how);
        }
        self.result.instructions += u64::from(len);
        let misses = if self.frontend.icache().is_some() {
            self.fetch(pp, len)
        } else {
            0
        };
        self.last_misses = misses;
        let mut end = EndOutcome::default();
        match how {
            Leave::Branch(taken) => {
                end = EndOutcome {
                    taken,
                    mispredicted: self.frontend.branch(last, backward, taken),
                };
            }
            Leave::Call => self.frontend.call(after),
            Leave::Return { .. } => {
                end.mispredicted = self.frontend.ret(|| table.start(next));
            }
            Leave::Indirect | Leave::Continue => {}
        }
        if misses != 0 {
            self.result.icache_misses += self.miss_count(pp, misses);
            // A cached edge moves to its next node without setting `sig`:
            // the pipeline state this step starts from is the node's.
            if self.node != NO_NODE {
                self.sig = self.nodes[self.node as usize].sig;
            }
            return self.slow_step(table, pp, len, end, misses);
        }
        self.result.mem_ops += u64::from(mem_ops);
        self.result.mispredicts += u64::from(end.mispredicted && len > 0);
        // The node graph: one visit per replayed partial program.
        if self.node == NO_NODE || self.nodes[self.node as usize].pp != pp {
            // The walk went on elsewhere than the last edge named (the
            // code changed under it): the pipeline state is that node's.
            if self.node != NO_NODE {
                self.sig = self.nodes[self.node as usize].sig;
            }
            self.node = self.node_for(pp);
        }
        let node = self.node as usize;
        if self.log.is_some() {
            // Out of line: the plain replay's step stays as it was.
            self.log_node_step(pp, end.edge());
        }
        let edge = self.nodes[node].edges[end.edge()];
        if edge.next != NO_NODE {
            let next_node = if edge.next_pp == next {
                edge.next
            } else {
                // Left the same way before, to another successor (a return,
                // an indirect jump): same time, another next node.
                self.sig = edge.exit_sig;
                self.node_for(next)
            };
            let e = &mut self.nodes[node].edges[end.edge()];
            e.visits += 1;
            e.next = next_node;
            e.next_pp = next;
            self.cycles += e.cycles;
            self.node = next_node;
            return;
        }
        // First time this node leaves this way.
        self.sig = self.nodes[node].sig;
        let c = self.time_path(table, pp, len, end, 0);
        self.cycles += c;
        let exit_sig = self.sig;
        let next_node = self.node_for(next);
        let e = &mut self.nodes[node].edges[end.edge()];
        e.cycles = c;
        e.next = next_node;
        e.next_pp = next;
        e.exit_sig = exit_sig;
        e.visits += 1;
        self.node = next_node;
    }

    /// Note the `ecall` that ends `pp`, just timed from signature `entry`
    /// after `before` cycles: the cycles before it are its prefix's.
    #[cold]
    fn note_ecall(&mut self, table: &PpTable, pp: PpId, entry: SignatureId, before: u64) {
        let len = self.facts[pp.index()].len;
        let prefix = match len {
            0 | 1 => 0,
            _ => self.prefix_cycles(table, pp, entry, len - 1),
        };
        let ecall = Ecall {
            at: self.result.instructions - 1,
            before: before + prefix,
            after: self.cycles,
            mem_ops: self.result.mem_ops,
        };
        self.ecalls.push(ecall);
    }
}

impl Visit<PpTable> for Estimator {
    #[inline]
    fn pp(&mut self, table: &PpTable, pp: PpId, how: Leave, next: PpId) {
        if !self.noting {
            return self.time_pp(table, pp, how, next);
        }
        let (entry, before) = (self.entry_signature(pp), self.cycles);
        self.time_pp(table, pp, how, next);
        if self.facts[pp.index()].traps {
            self.note_ecall(table, pp, entry, before);
        }
    }

    fn last(&mut self, table: &PpTable, pp: PpId, executed: u32) {
        if executed == 0 || pp == crate::machine::INVALID {
            return;
        }
        // The run ended inside or at the end of this partial program: its end
        // instruction's control outcome is unknown and did not happen.
        self.prefix(table, pp, executed);
    }

    fn trap(&mut self, table: &PpTable, pp: PpId, executed: u32) {
        if executed > 0 && pp != crate::machine::INVALID {
            // What ran before the trapping instruction, which did not.
            self.prefix(table, pp, executed);
        } else if self.node != NO_NODE {
            self.sig = self.nodes[self.node as usize].sig;
        }
        let c = self.timer.trap(self.sig);
        self.cycles += c;
        if let Some(log) = &mut self.log {
            log.pending_trap += c;
            // Nothing is in flight after a trap: which register a load
            // wrote no longer matters.
            log.loaded = 0;
        }
        if let Some(e) = self.extra.get_mut(pp.index()) {
            e.1 += c;
        }
        self.sig = SignatureId::IDLE;
        self.node = NO_NODE;
    }

    fn cut(&mut self, table: &PpTable, pp: PpId, executed: u32) {
        // The code changed under the partial program: what ran of it is
        // timed, and the pipeline goes on from there (no cost of its own:
        // the cycle-level engine sees nothing but the next instruction).
        if executed > 0 && pp != crate::machine::INVALID {
            self.prefix(table, pp, executed);
        } else if self.node != NO_NODE {
            self.sig = self.nodes[self.node as usize].sig;
            self.node = NO_NODE;
        }
    }
}

impl Estimator {
    /// The first `executed` (> 0) instructions of `pp`, without its end's
    /// control outcome: the partial program was left before its end (a
    /// trap) or the run ended there. Leaves the estimator outside its node
    /// graph, at the signature after them.
    fn prefix(&mut self, table: &PpTable, pp: PpId, executed: u32) {
        self.facts(table, pp);
        if self.node != NO_NODE {
            self.sig = self.nodes[self.node as usize].sig;
        }
        let misses = self.fetch(pp, executed);
        self.last_misses = misses;
        self.result.icache_misses += self.miss_count(pp, misses);
        self.result.instructions += u64::from(executed);
        self.slow_step(table, pp, executed, EndOutcome::default(), misses);
    }
}

/// What a per-function profile needs to split a partial program whose
/// instructions lie in more than one function (a tail call `j f` inside
/// it, a fall-through into the next symbol): the cycles of its first
/// instructions, as the cycle-level engine's clock would show them.
impl Estimator {
    /// The pipeline signature `pp` is about to be timed from: call before
    /// [`Visit::pp`] (or `trap`, `last`) for that partial program.
    pub(crate) fn entry_signature(&self, pp: PpId) -> SignatureId {
        if self.node != NO_NODE && self.nodes[self.node as usize].pp == pp {
            self.nodes[self.node as usize].sig
        } else {
            self.sig
        }
    }

    /// Whether the partial program just timed missed the I-cache (its
    /// prefixes' times then depend on which lines did).
    pub(crate) fn last_step_missed(&self) -> bool {
        self.last_misses != 0
    }

    /// Cycles of the first `k` instructions of the partial program just
    /// timed (`k` below its length), entered with signature `entry`, with
    /// the line fetches that missed in that step. Without misses they
    /// depend on (`entry`, `pp`, `k`) alone and are remembered: a profile
    /// asks at every function boundary, the replay of several harts at
    /// every synchronisation call.
    pub(crate) fn prefix_cycles(
        &mut self,
        table: &PpTable,
        pp: PpId,
        entry: SignatureId,
        k: u32,
    ) -> u64 {
        debug_assert!(k < self.facts[pp.index()].len);
        let missed = self.last_step_missed();
        if !missed {
            if let Some(&c) = self.prefixes.get(&(entry, pp, k)) {
                return c;
            }
        }
        self.path_events(table, pp, k, EndOutcome::default(), self.last_misses);
        let c = self
            .timer
            .cycles(entry, self.scratch.iter().map(|(pc, i, e)| (*pc, i, *e)));
        if !missed {
            self.prefixes.insert((entry, pp, k), c);
        }
        c
    }
}

/// How a path changes which registers were last written by a load, as
/// `(kept, set)`: after it, `loaded & kept | set`. Each bit is either
/// untouched by the path or fixed by its last write, so the two masks are
/// the bookkeeping applied to none and to all registers.
fn path_loads<'a>(insts: impl Iterator<Item = &'a Inst> + Clone) -> (u32, u32) {
    let set = loaded_after(0, insts.clone());
    let all = loaded_after(u32::MAX, insts);
    (all & !set, set)
}
