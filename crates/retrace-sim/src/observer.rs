//! Observer hooks: how a recorder, a profiler or a timing model watches the
//! functional engine.
//!
//! The engine is generic over its observer, so every hook is a direct call
//! the compiler can inline, and the unit type `()` — whose hooks are all
//! empty and whose [`Observer::ENABLED`] is `false` — compiles to a run with
//! no observation cost at all. Hooks see retired instructions only, in
//! program order per hart, with the hart's id so one observer can follow
//! several harts.

use crate::csr::Cause;
use retrace_isa::{Flow, Inst};

/// Index of a hart in the machine (equal to its `mhartid`).
pub type HartId = usize;

/// One retired instruction.
#[derive(Clone, Copy, Debug)]
pub struct Retired<'a> {
    /// The hart that retired it.
    pub hart: HartId,
    /// Its address.
    pub pc: u64,
    /// The decoded instruction.
    pub inst: &'a Inst,
    /// The address of the next instruction this hart executes.
    pub next_pc: u64,
    /// The data address a load, store, LR/SC or AMO accessed.
    pub mem_addr: Option<u64>,
}

/// A trap taken to `mtvec` (or, without a handler, the one that stops the
/// run).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TrapEvent {
    /// The hart.
    pub hart: HartId,
    /// Address of the trapping instruction (`mepc`).
    pub pc: u64,
    /// The cause (`mcause`).
    pub cause: Cause,
    /// `mtval`.
    pub tval: u64,
    /// Where execution continues (`mtvec`), or `None` when the run stops.
    pub handler: Option<u64>,
}

/// Hooks called by the engines. All methods have empty defaults.
pub trait Observer {
    /// `false` only for observers that ignore every hook: the engine then
    /// skips computing the hooks' arguments (such as [`Inst::flow`]).
    const ENABLED: bool = true;

    /// `false` for observers that do not need [`Observer::retire`]: the
    /// engine then never calls it, and saves building its argument for
    /// every instruction (a recorder needs the branches, jumps and data
    /// accesses, and the run's count and last pc, which
    /// [`crate::Machine::last_pc`] gives).
    const RETIRE: bool = true;

    /// Every retired instruction, after it took effect (when
    /// [`Observer::RETIRE`]).
    #[inline(always)]
    fn retire(&mut self, _ev: &Retired<'_>) {}

    /// The data address a load, store, LR/SC or AMO accessed, as it
    /// executes (before its [`Observer::retire`]); not called for an
    /// observer that takes addresses in bulk ([`Observer::BULK_ADDRESSES`]).
    #[inline(always)]
    fn memory(&mut self, _hart: HartId, _addr: u64) {}

    /// `true` for observers that take data addresses in bulk, through
    /// [`Observer::addresses`], instead of one [`Observer::memory`] call
    /// each: the engine then logs them itself, which costs its loop much
    /// less than a call per access that updates the observer.
    const BULK_ADDRESSES: bool = false;

    /// The data addresses hart `hart` accessed since the last call, in
    /// order (only when [`Observer::BULK_ADDRESSES`]): every few thousand,
    /// and when a run or a turn of a hart ends. The observer may take the
    /// vector's contents or its buffer; the engine clears it after.
    #[inline(always)]
    fn addresses(&mut self, _hart: HartId, _log: &mut Vec<u64>) {}

    /// A conditional branch retired (`taken` = went to `target`).
    #[inline(always)]
    fn branch(&mut self, _hart: HartId, _pc: u64, _inst: &Inst, _taken: bool, _target: u64) {}

    /// A `jal` or `jalr` retired. `flow` says whether it was a direct jump,
    /// a call, a return or another indirect jump; `target` is where it went.
    #[inline(always)]
    fn jump(&mut self, _hart: HartId, _pc: u64, _inst: &Inst, _flow: Flow, _target: u64) {}

    /// A trap (exception or `ecall` into a handler, or the fatal one).
    #[inline(always)]
    fn trap(&mut self, _ev: &TrapEvent) {}

    /// `mret` returned from a trap handler to `target`.
    #[inline(always)]
    fn trap_return(&mut self, _hart: HartId, _pc: u64, _target: u64) {}

    /// A semihosting request `op` (the value of `a0`) at `pc`, and what it
    /// returned in `a0`.
    #[inline(always)]
    fn semihost(&mut self, _hart: HartId, _pc: u64, _op: u64, _result: u64) {}

    /// Polled between blocks of straight-line code; return `false` to stop
    /// the run (it ends with [`crate::StopReason::Observer`]).
    #[inline(always)]
    fn keep_going(&mut self) -> bool {
        true
    }
}

/// No observer: every hook is empty.
impl Observer for () {
    const ENABLED: bool = false;
}

/// Forward every hook to the observer behind the reference.
impl<O: Observer> Observer for &mut O {
    const ENABLED: bool = O::ENABLED;
    const RETIRE: bool = O::RETIRE;
    const BULK_ADDRESSES: bool = O::BULK_ADDRESSES;
    #[inline(always)]
    fn memory(&mut self, hart: HartId, addr: u64) {
        (**self).memory(hart, addr)
    }
    #[inline(always)]
    fn addresses(&mut self, hart: HartId, log: &mut Vec<u64>) {
        (**self).addresses(hart, log)
    }
    #[inline(always)]
    fn retire(&mut self, ev: &Retired<'_>) {
        (**self).retire(ev)
    }
    #[inline(always)]
    fn branch(&mut self, hart: HartId, pc: u64, inst: &Inst, taken: bool, target: u64) {
        (**self).branch(hart, pc, inst, taken, target)
    }
    #[inline(always)]
    fn jump(&mut self, hart: HartId, pc: u64, inst: &Inst, flow: Flow, target: u64) {
        (**self).jump(hart, pc, inst, flow, target)
    }
    #[inline(always)]
    fn trap(&mut self, ev: &TrapEvent) {
        (**self).trap(ev)
    }
    #[inline(always)]
    fn trap_return(&mut self, hart: HartId, pc: u64, target: u64) {
        (**self).trap_return(hart, pc, target)
    }
    #[inline(always)]
    fn semihost(&mut self, hart: HartId, pc: u64, op: u64, result: u64) {
        (**self).semihost(hart, pc, op, result)
    }
    #[inline(always)]
    fn keep_going(&mut self) -> bool {
        (**self).keep_going()
    }
}
