//! A core in motion: pipeline plus predictor, return-address stack and
//! caches, advanced one retired instruction at a time. This is what the
//! cycle-level engine drives.

use crate::cache::Cache;
use crate::cpi::{CpiAccount, CpiStack};
use crate::frontend::Frontend;
use crate::model::CoreModel;
use crate::path::Events;
use crate::pipeline::{Costs, OpTable, Pipeline};
use retrace_isa::{Flow, Inst};

/// What the functional execution of one instruction decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// Address of the next instruction executed.
    pub next_pc: u64,
    /// For a conditional branch: whether it was taken.
    pub taken: bool,
    /// For a load/store/AMO: the address accessed.
    pub mem_addr: u64,
    /// For a conditional branch: the length in bytes of the instruction at
    /// its fall-through address (2 or 4), read from the code; 0 when
    /// unknown. See [`crate::Events::fallthrough_len`].
    pub fallthrough_len: u8,
}

impl Resolved {
    /// An instruction that continued at `next_pc` without a memory access.
    pub fn fall_through(next_pc: u64) -> Resolved {
        Resolved {
            next_pc,
            taken: false,
            mem_addr: 0,
            fallthrough_len: 0,
        }
    }
}

/// Event counts of a cycle-level run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CoreStats {
    /// Instructions retired.
    pub instructions: u64,
    /// Conditional branches retired.
    pub branches: u64,
    /// Conditional branches whose direction was mispredicted.
    pub mispredicts: u64,
    /// Returns the return-address stack predicted wrongly.
    pub return_mispredicts: u64,
    /// Instruction-cache hits and misses.
    pub icache_hits: u64,
    /// Instruction-cache misses.
    pub icache_misses: u64,
    /// Data-cache hits.
    pub dcache_hits: u64,
    /// Data-cache misses.
    pub dcache_misses: u64,
    /// Trap handlers entered (exceptions, and `ecall`s/`ebreak`s that
    /// trapped).
    pub traps: u64,
}

/// The complete timing state of one core.
#[derive(Clone, Debug)]
pub struct CoreState {
    model: CoreModel,
    pipeline: Pipeline,
    frontend: Frontend,
    dcache: Option<Cache>,
    stats: CoreStats,
    /// The model's per-operation facts and costs, tabulated once so a step
    /// does not re-derive timing class, register use and flow.
    ops: OpTable,
    costs: Costs,
    /// The CPI stack so far, when asked for ([`CoreState::accounting`]).
    account: Option<Box<CpiAccount>>,
}

impl CoreState {
    /// A core at reset: idle pipeline, cold predictor and caches.
    pub fn new(model: &CoreModel) -> CoreState {
        CoreState {
            model: model.clone(),
            pipeline: Pipeline::new(),
            frontend: Frontend::new(model),
            dcache: model.dcache.as_ref().map(Cache::new),
            stats: CoreStats::default(),
            ops: OpTable::new(model),
            costs: Costs::of(model),
            account: None,
        }
    }

    /// Keep a CPI stack as the core runs ([`CoreState::cpi`]): each step
    /// then takes the accounting form of the timing rule.
    pub fn accounting(mut self) -> CoreState {
        self.account = Some(Box::default());
        self
    }

    /// The CPI stack so far (`None` unless [`CoreState::accounting`]).
    pub fn cpi(&self) -> Option<&CpiStack> {
        self.account.as_ref().map(|a| &a.stack)
    }

    /// The model this core follows.
    pub fn model(&self) -> &CoreModel {
        &self.model
    }

    /// Cycles elapsed so far.
    pub fn cycles(&self) -> u64 {
        self.pipeline.cycle()
    }

    /// Event counts so far.
    pub fn stats(&self) -> CoreStats {
        let mut s = self.stats;
        if let Some(c) = self.frontend.icache() {
            s.icache_hits = c.hits;
            s.icache_misses = c.misses;
        }
        if let Some(c) = &self.dcache {
            s.dcache_hits = c.hits;
            s.dcache_misses = c.misses;
        }
        s
    }

    /// Account for one retired instruction at `pc`; returns its control
    /// flow (callers that attribute time to functions need it too).
    // Inlined into the cycle-level engine's loop, where it runs for every
    // instruction.
    #[inline(always)]
    pub fn step(&mut self, pc: u64, inst: &Inst, outcome: Resolved) -> Flow {
        let facts = self.ops.get(inst.op);
        let flow = facts.flow(inst);
        let mut ev = Events {
            fetch_miss: self.frontend.fetch_misses(pc),
            ..Events::default()
        };
        if facts.mem {
            if let Some(dc) = &mut self.dcache {
                ev.data_miss = !dc.access(outcome.mem_addr);
            }
        }
        match flow {
            Flow::CondBranch => {
                ev.taken = outcome.taken;
                ev.fallthrough_len = outcome.fallthrough_len;
                ev.mispredict = self
                    .frontend
                    .branch(pc, inst.is_backward_branch(), outcome.taken);
                self.stats.branches += 1;
                self.stats.mispredicts += u64::from(ev.mispredict);
            }
            Flow::Call | Flow::IndirectCall => self.frontend.call(inst.fallthrough(pc)),
            Flow::Return => {
                ev.mispredict = self.frontend.ret(|| outcome.next_pc);
                self.stats.return_mispredicts += u64::from(ev.mispredict);
            }
            _ => {}
        }
        self.stats.instructions += 1;
        match &mut self.account {
            None => self
                .pipeline
                .issue_op(&self.costs, facts, pc, inst, flow, ev, &mut ()),
            Some(a) => self
                .pipeline
                .issue_op_accounting(&self.costs, facts, pc, inst, flow, ev, a),
        }
        flow
    }

    /// Enter a trap handler ([`Pipeline::trap`]): after the `ecall` or
    /// `ebreak` that trapped has been stepped, or in place of the faulting
    /// instruction, which is not. The predictor, the return-address stack
    /// and the caches are untouched; the handler's first instruction is
    /// fetched like any other.
    pub fn trap(&mut self) {
        self.stats.traps += 1;
        match &mut self.account {
            None => self.pipeline.trap_op(&self.costs, &mut ()),
            Some(a) => self.pipeline.trap_op(&self.costs, &mut **a),
        }
    }
}
