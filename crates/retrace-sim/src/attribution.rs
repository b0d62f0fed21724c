//! Cycles per instruction address, the cycle-level engine's way: the
//! reference that the replay's per-instruction attribution
//! (`retrace-estimate`'s profile, `retrace annotate`) is checked against.
//!
//! The rule, which the replay follows too: an instruction is charged the
//! cycles by which it advances the core's issue clock — the clock after it
//! issued minus the clock after the instruction before it — so a stall
//! (an operand not ready, a fetch miss) lands on the instruction that
//! waited, and a branch or jump penalty on the instruction that paid it.
//! A trap's cycles (draining the pipeline, entering the handler) go to the
//! last instruction issued before it: the `ecall` itself, or the
//! instruction before one that faulted. The parts so sum to the run's
//! cycles exactly.
//!
//! Each instruction's cycles are also split by cause, as the accounting
//! form of the timing rule splits them (`retrace_timing::CpiStack`): so
//! the stacks of functions and lines are sums of instructions' stacks,
//! and sum to their cycles.

use crate::cycle::CycleObserver;
use crate::observer::{Observer, Retired, TrapEvent};
use crate::sync::SyncEvent;
use retrace_isa::Inst;
use retrace_timing::CpiStack;
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

/// What one instruction address cost over a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InstructionCost {
    /// Times it executed.
    pub executions: u64,
    /// Cycles charged to it (see the module's rule).
    pub cycles: u64,
    /// Times it was mispredicted (a conditional branch's direction, a
    /// return's target).
    pub mispredicts: u64,
    /// Times its fetch missed the instruction cache.
    pub icache_misses: u64,
    /// Its cycles by cause; the parts sum to `cycles`.
    pub cpi: CpiStack,
}

impl InstructionCost {
    /// Add `other`'s counts to these.
    pub fn add(&mut self, other: &InstructionCost) {
        self.executions += other.executions;
        self.cycles += other.cycles;
        self.mispredicts += other.mispredicts;
        self.icache_misses += other.icache_misses;
        self.cpi.add(&other.cpi);
    }
}

/// Costs per instruction address, in address order.
pub type PerInstruction = BTreeMap<u64, InstructionCost>;

/// A [`CycleObserver`] that also charges every instruction what it cost.
/// Slower than the plain observer (a table update per instruction): for
/// checking the replay and for small runs.
pub struct AttributingObserver {
    inner: CycleObserver,
    costs: FxHashMap<u64, InstructionCost>,
    /// The last instruction issued, which a trap is charged to.
    last_pc: Option<u64>,
    /// Cycles, mispredictions and I-cache misses when the last charge was
    /// made.
    seen: (u64, u64, u64),
    /// The core's CPI stack when the last charge was made.
    seen_cpi: CpiStack,
}

impl AttributingObserver {
    /// Watch a run with `inner` (not yet run), charging each instruction
    /// its part; its core keeps a CPI stack from now on.
    pub fn new(inner: CycleObserver) -> AttributingObserver {
        AttributingObserver {
            inner: inner.accounting(),
            costs: FxHashMap::default(),
            last_pc: None,
            seen: (0, 0, 0),
            seen_cpi: CpiStack::default(),
        }
    }

    /// The cycle-level observer inside.
    pub fn inner(&self) -> &CycleObserver {
        &self.inner
    }

    /// Close the inner observer's frames ([`CycleObserver::finish`]).
    pub fn finish(&mut self) {
        self.inner.finish();
    }

    /// The costs so far, per instruction address.
    pub fn per_instruction(&self) -> PerInstruction {
        self.costs.iter().map(|(&pc, &c)| (pc, c)).collect()
    }

    /// Charge what the core did since the last charge to `pc`.
    fn charge(&mut self, pc: u64, executed: bool) {
        let core = self.inner.core();
        let s = core.stats();
        let now = (
            core.cycles(),
            s.mispredicts + s.return_mispredicts,
            s.icache_misses,
        );
        let c = self.costs.entry(pc).or_default();
        c.executions += u64::from(executed);
        c.cycles += now.0 - self.seen.0;
        c.mispredicts += now.1 - self.seen.1;
        c.icache_misses += now.2 - self.seen.2;
        let cpi = core.cpi().copied().unwrap_or_default();
        c.cpi.add(&cpi.since(&self.seen_cpi));
        self.seen = now;
        self.seen_cpi = cpi;
    }

    /// Charge a trap's cycles to the last instruction issued.
    fn charge_trap(&mut self) {
        if let Some(pc) = self.last_pc {
            self.charge(pc, false);
        }
    }
}

impl Observer for AttributingObserver {
    fn branch(&mut self, hart: usize, pc: u64, inst: &Inst, taken: bool, target: u64) {
        self.inner.branch(hart, pc, inst, taken, target);
    }

    fn retire(&mut self, ev: &Retired<'_>) {
        self.inner.retire(ev);
        self.charge(ev.pc, true);
        self.last_pc = Some(ev.pc);
    }

    fn trap(&mut self, ev: &TrapEvent) {
        self.inner.trap(ev);
        self.charge_trap();
    }

    fn sync(&mut self, ev: &SyncEvent) {
        self.inner.sync(ev);
        self.charge_trap();
    }
}
