//! Cycle estimation during replay, at two fidelities:
//!
//! - [`Fidelity::Fast`] — seed 000's method: the sum of partial-program
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
//! Data-cache effects cannot come from branch bits. They are estimated as
//! `memory accesses × miss rate × miss penalty`, with a miss rate the caller
//! supplies (measured once, e.g. by a cycle-level run); the error this leaves
//! is what `retrace compare` reports.

use crate::walk::{Graph, Leave, Visit};
use retrace_isa::Inst;
use retrace_program::{PpId, PpTable};
use retrace_timing::static_prediction as predict_static;
use retrace_timing::{
    BranchPredictor, Cache, CoreModel, Events, PathTimer, ReturnStack, SignatureId,
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
    /// bit 0: taken; bit 1: mispredicted.
    outcome: u8,
    /// Which of the partial program's line fetches missed the I-cache.
    fetch_misses: u64,
}

/// A memo entry kept inline with its partial program: the replay's hot
/// path finds most answers here without hashing.
#[derive(Clone, Copy)]
struct Recent {
    entry: SignatureId,
    outcome: u8,
    fetch_misses: u64,
    cycles: u64,
    next: SignatureId,
}

const NO_RECENT: Recent = Recent {
    entry: SignatureId(u32::MAX),
    outcome: 0,
    fetch_misses: 0,
    cycles: 0,
    next: SignatureId(0),
};

/// Per-partial-program facts computed once.
#[derive(Clone)]
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
    /// The two most recent memo entries (most recent first).
    recent: [Recent; 2],
    ready: bool,
}

impl Default for PpFacts {
    fn default() -> Self {
        PpFacts {
            line_starts: Box::new([]),
            mem_ops: 0,
            len: 0,
            last: 0,
            backward: false,
            after: 0,
            recent: [NO_RECENT; 2],
            ready: false,
        }
    }
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
    /// Conditional branches mispredicted (as the fidelity sees them).
    pub mispredicts: u64,
    /// I-cache misses (control fidelity).
    pub icache_misses: u64,
    /// Loads, stores and AMOs replayed.
    pub mem_ops: u64,
    /// Distinct memo entries (a measure of the state crossing boundaries).
    pub memo_entries: u64,
    /// Distinct pipeline signatures.
    pub signatures: u64,
    /// Whether the data-cache term rests on a miss rate (measured at
    /// recording or given); `false` when the core has a data cache the
    /// trace has no measurement for, and the term is 0.
    pub dcache_measured: bool,
}

/// Estimates cycles of one core while the walker replays.
pub struct Estimator {
    timer: PathTimer,
    fidelity: Fidelity,
    dcache_miss_rate: f64,
    sig: SignatureId,
    cycles: u64,
    memo: FxHashMap<Key, (u64, SignatureId)>,
    predictor: Option<BranchPredictor>,
    ras: Option<ReturnStack>,
    icache: Option<Cache>,
    facts: Vec<PpFacts>,
    scratch: Vec<(Inst, Events)>,
    /// Executions of each partial program (indexed by [`PpId`]).
    pub counts: Vec<u64>,
    /// Cycles spent in each partial program.
    pub pp_cycles: Vec<u64>,
    result: Estimate,
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
            cycles: 0,
            memo: FxHashMap::default(),
            predictor: (control && model.branch.predictor.is_dynamic())
                .then(|| BranchPredictor::new(model.branch.predictor)),
            ras: (control && model.branch.ras_depth > 0)
                .then(|| ReturnStack::new(model.branch.ras_depth)),
            icache: if control {
                model.icache.as_ref().map(Cache::new)
            } else {
                None
            },
            facts: Vec::new(),
            scratch: Vec::new(),
            counts: Vec::new(),
            pp_cycles: Vec::new(),
            result: Estimate::default(),
        }
    }

    /// Set the data-cache miss rate (e.g. once the trace's measurements have
    /// been read, at its end).
    pub fn set_dcache_miss_rate(&mut self, rate: f64) {
        self.dcache_miss_rate = rate;
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

    /// The estimate so far (complete after the walk).
    pub fn estimate(&self) -> Estimate {
        let mut e = self.result;
        e.control_cycles = self.cycles;
        e.dcache_cycles = match &self.model().dcache {
            Some(dc) => (e.mem_ops as f64 * self.dcache_miss_rate * f64::from(dc.miss_penalty))
                .round() as u64,
            None => 0,
        };
        e.cycles = e.control_cycles + e.dcache_cycles;
        e.memo_entries = self.memo.len() as u64;
        e.signatures = self.timer.signature_count() as u64;
        e
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
            self.counts.resize(n, 0);
            self.pp_cycles.resize(n, 0);
        }
        if !self.facts[i].ready {
            let mut lines = Vec::new();
            let mut mem_ops = 0;
            let mut prev = u64::MAX;
            for (k, (pc, inst)) in table.insts(pp).enumerate() {
                if let Some(ic) = &self.icache {
                    let line = ic.line_of(pc.get());
                    if line != prev {
                        lines.push((k as u32, pc.get()));
                        prev = line;
                    }
                }
                mem_ops += u32::from(inst.mem().is_some());
            }
            let p = table.get(pp);
            let end = table.end_inst(pp);
            self.facts[i] = PpFacts {
                line_starts: lines.into_boxed_slice(),
                mem_ops,
                len: p.len,
                last: p.last.get(),
                backward: end.map(|e| e.imm < 0).unwrap_or(false),
                after: end.map(|e| e.fallthrough(p.last.get())).unwrap_or(0),
                recent: [NO_RECENT; 2],
                ready: true,
            };
        }
        &self.facts[i]
    }

    /// Fetch the first `n` instructions' lines through the I-cache; returns
    /// the miss mask (bit k: the k-th line fetch missed).
    #[inline]
    fn fetch(&mut self, pp: PpId, n: u32) -> u64 {
        let Some(ic) = &mut self.icache else { return 0 };
        let mut mask = 0u64;
        for (k, &(idx, pc)) in self.facts[pp.index()].line_starts.iter().enumerate() {
            if idx >= n {
                break;
            }
            if !ic.access(pc) {
                // Paths that touch more than 64 lines fold into the top bit;
                // the memo is then bypassed for them (see `time`).
                mask |= 1 << k.min(63);
            }
        }
        mask
    }

    /// Time `n` instructions of `pp` from the current signature with the
    /// given end outcome and fetch misses.
    #[inline]
    fn time(&mut self, table: &PpTable, pp: PpId, n: u32, outcome: u8, fetch_misses: u64) -> u64 {
        let f = &mut self.facts[pp.index()];
        let full = n == f.len && f.line_starts.len() <= 64;
        if full {
            for k in 0..2 {
                let r = f.recent[k];
                if r.entry == self.sig && r.outcome == outcome && r.fetch_misses == fetch_misses {
                    f.recent.swap(0, k);
                    self.sig = r.next;
                    return r.cycles;
                }
            }
        }
        self.time_slow(table, pp, n, outcome, fetch_misses, full)
    }

    /// [`Estimator::time`] past the inline entries: the memo table, and on a
    /// miss the pipeline itself.
    #[cold]
    fn time_slow(
        &mut self,
        table: &PpTable,
        pp: PpId,
        n: u32,
        outcome: u8,
        fetch_misses: u64,
        full: bool,
    ) -> u64 {
        let key = Key {
            entry: self.sig,
            pp,
            outcome,
            fetch_misses,
        };
        if full {
            if let Some(&(c, next)) = self.memo.get(&key) {
                self.remember(pp, key, c, next);
                self.sig = next;
                return c;
            }
        }
        self.scratch.clear();
        let lines = &self.facts[pp.index()].line_starts;
        let mut line_k = 0usize;
        for (k, (_, inst)) in table.insts(pp).take(n as usize).enumerate() {
            let mut ev = Events::default();
            while line_k < lines.len() && lines[line_k].0 as usize <= k {
                if lines[line_k].0 as usize == k {
                    ev.fetch_miss = fetch_misses & (1 << line_k.min(63)) != 0;
                }
                line_k += 1;
            }
            if k + 1 == n as usize && n == table.get(pp).len {
                ev.taken = outcome & 1 != 0;
                ev.mispredict = outcome & 2 != 0;
            }
            self.scratch.push((inst, ev));
        }
        let (c, next) = self
            .timer
            .time(self.sig, self.scratch.iter().map(|(i, e)| (i, *e)));
        if full {
            self.memo.insert(key, (c, next));
            self.remember(pp, key, c, next);
        }
        self.sig = next;
        c
    }

    #[inline]
    fn remember(&mut self, pp: PpId, key: Key, cycles: u64, next: SignatureId) {
        let f = &mut self.facts[pp.index()];
        f.recent[1] = f.recent[0];
        f.recent[0] = Recent {
            entry: key.entry,
            outcome: key.outcome,
            fetch_misses: key.fetch_misses,
            cycles,
            next,
        };
    }

    #[inline]
    fn account(&mut self, pp: PpId, cycles: u64, n: u32) {
        self.cycles += cycles;
        let i = pp.index();
        self.counts[i] += 1;
        self.pp_cycles[i] += cycles;
        self.result.instructions += u64::from(n);
        self.result.mem_ops += u64::from(self.facts[i].mem_ops);
    }
}

impl Visit<PpTable> for Estimator {
    fn pp(&mut self, table: &PpTable, pp: PpId, how: Leave, next: PpId) {
        let f = self.facts(table, pp);
        let (len, last, backward, after) = (f.len, f.last, f.backward, f.after);
        let misses = self.fetch(pp, len);
        let mut outcome = 0u8;
        match how {
            Leave::Branch(taken) => {
                let predicted = match &mut self.predictor {
                    Some(p) => p.predict_and_update(last, backward, taken),
                    None => predict_static(self.model().branch.predictor, backward),
                };
                outcome = u8::from(taken) | (u8::from(predicted != taken) << 1);
                self.result.mispredicts += u64::from(predicted != taken);
            }
            Leave::Call => {
                if let Some(ras) = &mut self.ras {
                    ras.push(after);
                }
            }
            Leave::Return { .. } => {
                if let Some(ras) = &mut self.ras {
                    let target = table.start(next);
                    outcome = u8::from(ras.pop() != Some(target)) << 1;
                }
            }
            Leave::Indirect | Leave::Continue => {}
        }
        self.result.icache_misses += u64::from(misses.count_ones());
        let c = self.time(table, pp, len, outcome, misses);
        self.account(pp, c, len);
    }

    fn last(&mut self, table: &PpTable, pp: PpId, executed: u32) {
        if executed == 0 || pp == crate::machine::INVALID {
            return;
        }
        self.facts(table, pp);
        let misses = self.fetch(pp, executed);
        self.result.icache_misses += u64::from(misses.count_ones());
        // The run ended inside or at the end of this partial program: its end
        // instruction's control outcome is unknown and did not happen.
        let c = self.time(table, pp, executed, 0, misses);
        self.cycles += c;
        let i = pp.index();
        self.counts[i] += 1;
        self.pp_cycles[i] += c;
        self.result.instructions += u64::from(executed);
        let mem: u32 = table
            .insts(pp)
            .take(executed as usize)
            .map(|(_, inst)| u32::from(inst.mem().is_some()))
            .sum();
        self.result.mem_ops += u64::from(mem);
    }
}
