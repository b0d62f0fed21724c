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
use crate::sync::SyncEvent;
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
    /// Instructions the hart retired before the trap (its `minstret`
    /// without the program's writes to it): the trapping instruction is not
    /// among them, nor are the `ecall`s and `ebreak`s that entered a handler
    /// before it (they do not retire, though observers see them execute).
    pub retired: u64,
}

/// Code the engine is about to execute, just decoded (for the first time,
/// or again after a store to decoded code or `fence.i` emptied its cache of
/// decodings): what a recorder compares with the code the replay will
/// believe, to record what the program's file does not say.
#[derive(Clone, Copy, Debug)]
pub struct CodeEvent<'a> {
    /// The hart about to execute it.
    pub hart: HartId,
    /// Instructions the hart retired before it (as [`TrapEvent::retired`]).
    pub retired: u64,
    /// The decoded block's first address.
    pub pc: u64,
    /// Its length in bytes.
    pub len: u64,
    /// Where [`CodeEvent::window`] starts.
    pub base: u64,
    /// Memory around the block as it is now: the aligned kibibytes that
    /// hold the block and the four bytes after it (where a call returns), clipped
    /// to memory.
    pub window: &'a [u8],
}

impl CodeEvent<'_> {
    /// The block's bytes (inside the window).
    pub fn block(&self) -> &[u8] {
        let off = (self.pc - self.base) as usize;
        &self.window[off..off + self.len as usize]
    }
}

/// The closing branches and jumps of a stretch of host code, in order
/// ([`Observer::host_exits`]).
pub struct HostExits<'a> {
    /// What the translated blocks left (`crate::translate::ExitRecord`).
    pub(crate) records: &'a [crate::translate::ExitRecord],
}

/// One closing branch or jump of host code, with what the interpreter
/// hands [`Observer::branch`] or [`Observer::jump`].
#[derive(Clone, Copy, Debug)]
pub enum HostExit<'a> {
    /// A conditional branch.
    Branch {
        /// Its address.
        pc: u64,
        /// The instruction.
        inst: &'a Inst,
        /// Whether it went to `target`.
        taken: bool,
        /// Where it goes when taken.
        target: u64,
    },
    /// A `jal` or `jalr`.
    Jump {
        /// Its address.
        pc: u64,
        /// The instruction.
        inst: &'a Inst,
        /// `inst.flow()`.
        flow: Flow,
        /// Where it went.
        target: u64,
        /// The address after it.
        fall: u64,
    },
}

impl<'a> HostExits<'a> {
    /// How many there are.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Each of them, in order.
    #[inline(always)]
    pub fn iter(&self) -> impl Iterator<Item = HostExit<'a>> + 'a {
        self.records.iter().map(|&[word, to]| {
            use crate::translate::{ExitKind, ExitSite};
            // SAFETY: the first word of an exit record is the address of
            // an `ExitSite` the translator keeps, which outlives its code
            // and so the records, plus three bits.
            let site = unsafe { &*((word & !7) as *const ExitSite) };
            let (inst, pc) = (&site.inst, site.pc);
            match word >> 1 & 3 {
                ExitKind::BRANCH => HostExit::Branch {
                    pc,
                    inst,
                    taken: word & 1 != 0,
                    target: site.target,
                },
                kind => HostExit::Jump {
                    pc,
                    inst,
                    flow: site.flow,
                    // A `jalr`'s target is the record's second word.
                    target: if kind == ExitKind::JAL {
                        site.target
                    } else {
                        to
                    },
                    fall: site.fall,
                },
            }
        })
    }

    /// Hand each to `obs`'s [`Observer::branch`] or [`Observer::jump`] of
    /// hart `hart`, as the interpreter would have.
    #[inline(always)]
    pub fn tell<O: Observer + ?Sized>(&self, hart: HartId, obs: &mut O) {
        for e in self.iter() {
            match e {
                HostExit::Branch {
                    pc,
                    inst,
                    taken,
                    target,
                } => obs.branch(hart, pc, inst, taken, target),
                HostExit::Jump {
                    pc,
                    inst,
                    flow,
                    target,
                    ..
                } => obs.jump(hart, pc, inst, flow, target),
            }
        }
    }
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

    /// `true` for observers that may watch a run in host code (the hot
    /// blocks the engine translates with Cranelift): ones that need no [`Observer::retire`] and
    /// take data addresses in bulk ([`Observer::BULK_ADDRESSES`]; the
    /// engine ignores this otherwise), and that accept, for the stretches
    /// host code runs (thousands of instructions), their
    /// [`Observer::branch`] and [`Observer::jump`] calls in a batch after
    /// the fact — in order and with the interpreter's arguments, before any
    /// other hook on that hart — and [`Observer::keep_going`] polled only
    /// between those stretches. A recorder qualifies; an observer that
    /// times or counts instructions as they go does not.
    const HOST_CODE: bool = false;

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

    /// The closing branches and jumps hart `hart` ran in host code, in
    /// order, after the fact (only when [`Observer::HOST_CODE`]). By
    /// default each goes to [`Observer::branch`] or [`Observer::jump`]
    /// ([`HostExits::tell`]); an observer may take them in a batch itself,
    /// as long as it ends up where those calls would have left it.
    #[inline(always)]
    fn host_exits(&mut self, hart: HartId, exits: &HostExits<'_>) {
        exits.tell(hart, self);
    }

    /// A trap (exception or `ecall` into a handler, or the fatal one). An
    /// `ecall` or `ebreak` that enters a handler is seen executing first
    /// ([`Observer::retire`] with the handler as its next pc), then its
    /// trap; an exception's instruction is not seen at all, and the next
    /// [`Observer::retire`] is the handler's first instruction.
    #[inline(always)]
    fn trap(&mut self, _ev: &TrapEvent) {}

    /// `mret` returned from a trap handler to `target`.
    #[inline(always)]
    fn trap_return(&mut self, _hart: HartId, _pc: u64, _target: u64) {}

    /// A semihosting request `op` (the value of `a0`) at `pc`, and what it
    /// returned in `a0`.
    #[inline(always)]
    fn semihost(&mut self, _hart: HartId, _pc: u64, _op: u64, _result: u64) {}

    /// A call of the synchronisation API ([`crate::sync`]): made (done at
    /// once, blocked, or the hart exited), or completed for a hart that was
    /// blocked. A call done at once is seen executing ([`Observer::retire`],
    /// going on after itself) just before this event, as an `ecall` that
    /// enters a handler is seen before its trap; a blocked one executes when
    /// its hart next runs, after its `Resumed` event.
    #[inline(always)]
    fn sync(&mut self, _ev: &SyncEvent) {}

    /// Polled between blocks of straight-line code; return `false` to stop
    /// the run (it ends with [`crate::StopReason::Observer`]).
    #[inline(always)]
    fn keep_going(&mut self) -> bool {
        true
    }

    /// `false` for observers that do not need [`Observer::code`]: the
    /// engine then does not build its argument.
    const CODE: bool = false;

    /// A block of code was decoded, before its first instruction executes
    /// (when [`Observer::CODE`]).
    #[inline(always)]
    fn code(&mut self, _ev: &CodeEvent<'_>) {}
}

/// No observer: every hook is empty.
impl Observer for () {
    const ENABLED: bool = false;
}

/// Watches nothing, but keeps a run interpreted: paired with an observer
/// that may watch host code ([`Observer::HOST_CODE`]), such as a recorder,
/// it makes the interpreter run everything, the reference that host code
/// must match (`tests/record_host.rs`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Interpreted;

impl Observer for Interpreted {
    const RETIRE: bool = false;
}

/// Forward every hook to the observer behind the reference.
impl<O: Observer> Observer for &mut O {
    const ENABLED: bool = O::ENABLED;
    const RETIRE: bool = O::RETIRE;
    const HOST_CODE: bool = O::HOST_CODE;
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
    fn host_exits(&mut self, hart: HartId, exits: &HostExits<'_>) {
        (**self).host_exits(hart, exits)
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
    fn sync(&mut self, ev: &SyncEvent) {
        (**self).sync(ev)
    }
    #[inline(always)]
    fn keep_going(&mut self) -> bool {
        (**self).keep_going()
    }
    const CODE: bool = O::CODE;
    #[inline(always)]
    fn code(&mut self, ev: &CodeEvent<'_>) {
        (**self).code(ev)
    }
}

/// Two observers watching one run: every hook goes to both, the first one
/// first. One functional pass can so feed a recorder and cycle-level
/// cores together, where separate runs would execute the program again
/// for each.
///
/// When either part takes data addresses in bulk, so does the pair; a part
/// that takes them one at a time then gets its [`Observer::memory`] calls
/// late, in a batch before the bulk part's, instead of ahead of each
/// instruction's [`Observer::retire`]. The pair stops the run as soon as
/// either part's [`Observer::keep_going`] says so.
impl<A: Observer, B: Observer> Observer for (A, B) {
    const ENABLED: bool = A::ENABLED || B::ENABLED;
    const RETIRE: bool = (A::ENABLED && A::RETIRE) || (B::ENABLED && B::RETIRE);
    // Both parts must accept it (a part that watches nothing does). A part
    // that takes addresses one at a time would get them late in host code
    // too, as it does from the interpreter: it must also say so itself.
    const HOST_CODE: bool = (!A::ENABLED || A::HOST_CODE) && (!B::ENABLED || B::HOST_CODE);
    const BULK_ADDRESSES: bool =
        (A::ENABLED && A::BULK_ADDRESSES) || (B::ENABLED && B::BULK_ADDRESSES);
    #[inline(always)]
    fn memory(&mut self, hart: HartId, addr: u64) {
        self.0.memory(hart, addr);
        self.1.memory(hart, addr);
    }
    #[inline(always)]
    fn addresses(&mut self, hart: HartId, log: &mut Vec<u64>) {
        // One at a time to the parts that want that, then the log to the
        // bulk parts (which may take its buffer: the first gets a copy).
        if A::ENABLED && !A::BULK_ADDRESSES {
            log.iter().for_each(|&a| self.0.memory(hart, a));
        }
        if B::ENABLED && !B::BULK_ADDRESSES {
            log.iter().for_each(|&a| self.1.memory(hart, a));
        }
        match (A::BULK_ADDRESSES, B::BULK_ADDRESSES) {
            (true, true) => {
                self.0.addresses(hart, &mut log.clone());
                self.1.addresses(hart, log);
            }
            (true, false) => self.0.addresses(hart, log),
            (false, true) => self.1.addresses(hart, log),
            (false, false) => {}
        }
    }
    #[inline(always)]
    fn retire(&mut self, ev: &Retired<'_>) {
        if A::ENABLED && A::RETIRE {
            self.0.retire(ev);
        }
        if B::ENABLED && B::RETIRE {
            self.1.retire(ev);
        }
    }
    #[inline(always)]
    fn branch(&mut self, hart: HartId, pc: u64, inst: &Inst, taken: bool, target: u64) {
        self.0.branch(hart, pc, inst, taken, target);
        self.1.branch(hart, pc, inst, taken, target);
    }
    #[inline(always)]
    fn jump(&mut self, hart: HartId, pc: u64, inst: &Inst, flow: Flow, target: u64) {
        self.0.jump(hart, pc, inst, flow, target);
        self.1.jump(hart, pc, inst, flow, target);
    }
    #[inline(always)]
    fn host_exits(&mut self, hart: HartId, exits: &HostExits<'_>) {
        // Each part all of them in turn: the parts' states are apart.
        if A::ENABLED {
            self.0.host_exits(hart, exits);
        }
        if B::ENABLED {
            self.1.host_exits(hart, exits);
        }
    }
    #[inline(always)]
    fn trap(&mut self, ev: &TrapEvent) {
        self.0.trap(ev);
        self.1.trap(ev);
    }
    #[inline(always)]
    fn trap_return(&mut self, hart: HartId, pc: u64, target: u64) {
        self.0.trap_return(hart, pc, target);
        self.1.trap_return(hart, pc, target);
    }
    #[inline(always)]
    fn semihost(&mut self, hart: HartId, pc: u64, op: u64, result: u64) {
        self.0.semihost(hart, pc, op, result);
        self.1.semihost(hart, pc, op, result);
    }
    #[inline(always)]
    fn sync(&mut self, ev: &SyncEvent) {
        self.0.sync(ev);
        self.1.sync(ev);
    }
    #[inline(always)]
    fn keep_going(&mut self) -> bool {
        // Both are polled: a part may count its polls.
        let a = self.0.keep_going();
        let b = self.1.keep_going();
        a && b
    }
    const CODE: bool = (A::ENABLED && A::CODE) || (B::ENABLED && B::CODE);
    #[inline(always)]
    fn code(&mut self, ev: &CodeEvent<'_>) {
        if A::ENABLED && A::CODE {
            self.0.code(ev);
        }
        if B::ENABLED && B::CODE {
            self.1.code(ev);
        }
    }
}

/// Any number of observers of one kind watching one run (several
/// cycle-level cores, say), each hook going to each in order; as for a
/// pair, one functional pass instead of one per observer.
impl<O: Observer> Observer for Vec<O> {
    const ENABLED: bool = O::ENABLED;
    const RETIRE: bool = O::RETIRE;
    const HOST_CODE: bool = O::HOST_CODE;
    const BULK_ADDRESSES: bool = O::BULK_ADDRESSES;
    #[inline(always)]
    fn memory(&mut self, hart: HartId, addr: u64) {
        self.iter_mut().for_each(|o| o.memory(hart, addr));
    }
    #[inline(always)]
    fn addresses(&mut self, hart: HartId, log: &mut Vec<u64>) {
        // Each may take the buffer: all but the last get a copy.
        if let Some((last, rest)) = self.split_last_mut() {
            for o in rest {
                o.addresses(hart, &mut log.clone());
            }
            last.addresses(hart, log);
        }
    }
    #[inline(always)]
    fn retire(&mut self, ev: &Retired<'_>) {
        self.iter_mut().for_each(|o| o.retire(ev));
    }
    #[inline(always)]
    fn branch(&mut self, hart: HartId, pc: u64, inst: &Inst, taken: bool, target: u64) {
        self.iter_mut()
            .for_each(|o| o.branch(hart, pc, inst, taken, target));
    }
    #[inline(always)]
    fn jump(&mut self, hart: HartId, pc: u64, inst: &Inst, flow: Flow, target: u64) {
        self.iter_mut()
            .for_each(|o| o.jump(hart, pc, inst, flow, target));
    }
    #[inline(always)]
    fn host_exits(&mut self, hart: HartId, exits: &HostExits<'_>) {
        self.iter_mut().for_each(|o| o.host_exits(hart, exits));
    }
    #[inline(always)]
    fn trap(&mut self, ev: &TrapEvent) {
        self.iter_mut().for_each(|o| o.trap(ev));
    }
    #[inline(always)]
    fn trap_return(&mut self, hart: HartId, pc: u64, target: u64) {
        self.iter_mut()
            .for_each(|o| o.trap_return(hart, pc, target));
    }
    #[inline(always)]
    fn semihost(&mut self, hart: HartId, pc: u64, op: u64, result: u64) {
        self.iter_mut()
            .for_each(|o| o.semihost(hart, pc, op, result));
    }
    #[inline(always)]
    fn sync(&mut self, ev: &SyncEvent) {
        self.iter_mut().for_each(|o| o.sync(ev));
    }
    #[inline(always)]
    fn keep_going(&mut self) -> bool {
        // Every one polled (not `all`, which stops at the first `false`):
        // a part may count its polls.
        let mut go = true;
        for o in self.iter_mut() {
            go &= o.keep_going();
        }
        go
    }
    const CODE: bool = O::CODE;
    #[inline(always)]
    fn code(&mut self, ev: &CodeEvent<'_>) {
        self.iter_mut().for_each(|o| o.code(ev));
    }
}
