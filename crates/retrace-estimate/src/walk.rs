//! The replay walker: US patent 8,448,140's execution-trace replay (embodiment 1,
//! step 4), generic over the partial-program graph, the source of history
//! and what is done with each executed partial program.
//!
//! At a conditional-branch end it reads one bit and goes to the taken or
//! not-taken successor; at a call it pushes the return point and continues in
//! the callee; at a return it pops — unless the history says this return
//! *escaped* (went elsewhere than the stack said, e.g. `longjmp`), in which
//! case the target comes from the history and the stack is unwound to it; at
//! an indirect jump or call the target comes from the history. A trap in
//! the middle of a partial program (an exception) comes from the history
//! too, as the instruction count at which it is taken: the walker executes
//! the partial program only up to there and continues at the handler.
//!
//! What the history holds for each of these, the unwind rule and the
//! return stack's bound are the recording protocol
//! ([`retrace_trace::protocol`]), shared with the recorder: the walker's
//! stack is a [`ReturnStack`] of the protocol's bound, so it drops the same
//! return points at the same calls as the recorder's, and a return past
//! the bound is an escape on both sides.
//!
//! The same code walks the patent's symbolic table in the tests and the
//! machine-level table in production, so the patent's worked examples test
//! the real replay.

use retrace_trace::protocol::ReturnStack;

/// How a partial program ends, with successors (graph-independent form).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit<I> {
    /// Conditional branch: one history bit picks the successor.
    Branch {
        /// Successor for bit 1.
        taken: I,
        /// Successor for bit 0.
        not_taken: I,
    },
    /// Direct call.
    Call {
        /// The callee's first partial program.
        target: I,
        /// The return point, pushed.
        ret: I,
    },
    /// Indirect call at `site`: the target comes from the history.
    IndirectCall {
        /// Address of the calling instruction.
        site: u64,
        /// The return point, pushed.
        ret: I,
    },
    /// Return: pop (or an escape from the history).
    Return,
    /// Indirect jump (or trap entry/return) at `site`: target from the history.
    Indirect {
        /// Address of the jumping instruction.
        site: u64,
    },
    /// Continue at a statically known successor.
    Continue(I),
    /// The program ends here.
    Stop,
}

/// What the walker needs from a partial-program graph.
pub trait Graph {
    /// Partial-program identifier.
    type Id: Copy + Eq + std::fmt::Debug;
    /// How `id` ends.
    fn exit(&self, id: Self::Id) -> Result<Exit<Self::Id>, ReplayError>;
    /// Instructions on `id`'s path.
    fn len(&self, id: Self::Id) -> u32;
    /// Start address of `id` (to match escape targets against the stack).
    fn start(&self, id: Self::Id) -> u64;
    /// The partial program starting at `addr`, created if need be.
    fn resolve(&mut self, addr: u64) -> Result<Self::Id, ReplayError>;
    /// An id for an address the program cannot execute (its [`Graph::len`]
    /// is 0 and its [`Graph::exit`] an error): where the walk is when a
    /// jump's target faults at its fetch and a trap follows at once.
    fn unexecutable(&self) -> Self::Id;
    /// A dense index for `id` (`usize::MAX` for ids that are not in the
    /// graph), so the walker can cache exits in a vector.
    fn index(&self, id: Self::Id) -> usize;
    /// Address of the `k`-th instruction (0-based) on `id`'s path; for `k`
    /// = its length, where a path that cannot end would have gone on (the
    /// instruction that cannot execute).
    fn pc_at(&self, id: Self::Id, k: u32) -> u64;
    /// The code now holds `bytes` at `addr` (a code event): change the
    /// graph accordingly. Ids of unchanged partial programs stay valid;
    /// the others must be looked up again by address ([`Graph::resolve`]).
    /// A graph without code (the patent's) ignores it.
    fn patch(&mut self, _addr: u64, _bytes: &[u8]) {}
}

/// Where the walker's history comes from.
pub trait History {
    /// The next branch bit; `None` when the history is exhausted.
    fn bit(&mut self) -> Result<Option<bool>, ReplayError>;
    /// The target of the indirect jump/call at `site`.
    fn indirect(&mut self, site: u64) -> Result<u64, ReplayError>;
    /// If the next return escapes — `matched` returns having matched the
    /// stack since the previous escape — its target.
    fn escape(&mut self, matched: u64) -> Result<Option<u64>, ReplayError>;
    /// The instruction count at which the next trap is taken, the walk
    /// having executed `executed` instructions: `None` when none is due
    /// before the next branch bit (asked again at every partial program, so
    /// after every bit).
    fn next_trap(&mut self, executed: u64) -> Result<Option<u64>, ReplayError>;
    /// Take the trap [`History::next_trap`] announced: its handler's
    /// address.
    fn trap(&mut self) -> Result<u64, ReplayError>;
    /// The instruction count at which the next code event takes effect,
    /// the walk having executed `executed` instructions; `None` when none
    /// is due before the next branch bit (as [`History::next_trap`]).
    /// (No default: a history that wraps another must pass code events on.)
    fn next_code(&mut self, executed: u64) -> Result<Option<u64>, ReplayError>;
    /// Take the code event [`History::next_code`] announced: the address
    /// and the bytes memory holds there from then on.
    fn code(&mut self) -> Result<(u64, Vec<u8>), ReplayError>;

    /// Whether this kind of history may collapse regions (US patent 8,448,140,
    /// embodiments 4 and 5; `retrace_trace::protocol::regions`): when not,
    /// the walk never asks, and pays nothing for it.
    const COLLAPSES: bool = false;
    /// A call to `target`: `Some(region)` when it is a collapsed function,
    /// which the walk then steps over to the return point.
    fn collapse_call(&mut self, _target: u64) -> Option<u32> {
        None
    }
    /// The conditional branch at `site`: `Some((region, resume))` when it
    /// is the entry of a collapsed nest, which the walk then leaves as if
    /// it fell through, for the nest's way out at `resume`.
    fn collapse_branch(&mut self, _site: u64) -> Option<(u32, u64)> {
        None
    }
}

/// How a partial program was left.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Leave {
    /// Conditional branch, taken or not.
    Branch(bool),
    /// Call (direct or indirect).
    Call,
    /// Return; `escaped` when it did not go where the stack said.
    Return {
        /// The return went elsewhere than the stack's top.
        escaped: bool,
    },
    /// Indirect jump, trap entry or trap return.
    Indirect,
    /// Fall-through to a static successor.
    Continue,
}

/// What is done with the executed partial programs.
pub trait Visit<G: Graph> {
    /// `pp` executed completely and was left `how`, to `next`.
    fn pp(&mut self, graph: &G, pp: G::Id, how: Leave, next: G::Id);
    /// The run ended in `pp` after `executed` of its instructions (all of
    /// them when it ended at a stop).
    fn last(&mut self, graph: &G, pp: G::Id, executed: u32);
    /// A trap cut `pp` after `executed` of its instructions (the next one,
    /// if any, did not execute; 0 when it trapped at once, `pp` perhaps
    /// [`Graph::unexecutable`]); the walk continues at the handler, the
    /// next partial program visited.
    fn trap(&mut self, graph: &G, pp: G::Id, executed: u32);
    /// The code changed under `pp` after `executed` of its instructions
    /// (all of them when its end could not execute): they ran, and the walk
    /// goes on at the next pc in the changed code, with nothing in between
    /// (no end outcome, no trap).
    fn cut(&mut self, graph: &G, pp: G::Id, executed: u32);
    /// The walk stepped over an extent of collapsed region `region` right
    /// after the partial program it last reported ([`Visit::pp`]): a call
    /// into a collapsed function, or a collapsed nest's entry branch.
    fn collapsed(&mut self, _graph: &G, _region: u32) {}
}

/// Why a replay failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// The trace could not be read.
    #[error(transparent)]
    Trace(#[from] retrace_trace::TraceError),
    /// The history ran out before the run's recorded end.
    #[error("the trace ends early: {what} after {instructions} replayed instructions; it does not belong to this program or was cut")]
    HistoryExhausted {
        /// What was needed.
        what: &'static str,
        /// Instructions replayed so far.
        instructions: u64,
    },
    /// A successor the table cannot provide (jump outside code, illegal).
    #[error("replay reached {what} at {addr:#x}: the trace does not fit this program")]
    BadTarget {
        /// What kind of successor.
        what: String,
        /// The address.
        addr: u64,
    },
    /// A return with an empty stack and no escape recorded.
    #[error("return at {addr:#x} with an empty return stack and no escape in the trace: the trace does not fit this program")]
    EmptyStack {
        /// End address of the returning partial program.
        addr: u64,
    },
    /// A multi-hart trace the multiprocessor replay cannot take
    /// (`crate::system`): the message says what, where and what to do.
    #[error("{0}")]
    System(String),
    /// The totals recorded differ from what the replay produced.
    #[error("the trace's totals do not match the replay: {what}")]
    Totals {
        /// Which totals.
        what: String,
    },
}

/// Counts of a finished walk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WalkStats {
    /// Partial programs executed (the last, partial one included).
    pub pps: u64,
    /// Instructions executed.
    pub instructions: u64,
    /// Branch bits consumed.
    pub bits: u64,
    /// Indirect targets consumed.
    pub indirect: u64,
    /// Escapes consumed.
    pub escapes: u64,
    /// Traps taken in the middle of a partial program.
    pub traps: u64,
    /// Deepest return stack. Capped at the protocol's bound
    /// (`retrace_trace::protocol::RETURN_STACK_BOUND`): calls deeper than
    /// that are counted in [`WalkStats::dropped`] instead.
    pub max_depth: usize,
    /// Return points dropped from the bottom of a full return stack (calls
    /// nested deeper than the bound); 0 when the run never went that deep.
    pub dropped: u64,
    /// Address of the last instruction executed.
    pub last_pc: u64,
}

/// Slots of the walker's cache of resolved targets (a power of two).
const TARGET_SLOTS: usize = 1024;

/// Walk from `entry` until an [`Exit::Stop`] or until `instructions`
/// instructions have executed (the run's recorded total; `u64::MAX` for a
/// graph that ends with stops).
pub fn walk<G: Graph, H: History, V: Visit<G>>(
    graph: &mut G,
    history: &mut H,
    visit: &mut V,
    entry: G::Id,
    instructions: u64,
) -> Result<WalkStats, ReplayError> {
    let mut walker = Walker::new(entry, instructions);
    while !walker.step(graph, history, visit)? {}
    walker.finish_code(graph, history)?;
    Ok(walker.stats())
}

/// The walk's state between partial programs, advanced one partial program
/// at a time by [`Walker::step`]: what [`walk`] loops over, and what a
/// replay that memoises whole stretches of the walk (`crate::span`) moves
/// forward itself when it recognises one.
pub struct Walker<Id> {
    /// The partial program to execute next.
    pub(crate) cur: Id,
    /// Return points of the calls not yet returned from (the latest
    /// [`ReturnStack::bound`] of them).
    pub(crate) stack: ReturnStack<Id>,
    /// Returns that matched the stack since the last escape.
    pub(crate) matched: u64,
    /// Counts so far.
    pub(crate) stats: WalkStats,
    /// The run's recorded instruction count: the walk ends there.
    pub(crate) limit: u64,
    /// Exits and lengths, converted from the graph once per partial program
    /// (indexed by [`Graph::index`]).
    cache: Vec<Option<(Exit<Id>, u32)>>,
    /// Recently resolved targets of indirect jumps and escapes, direct-mapped
    /// by address: a function pointer or a dispatch table repeats its
    /// targets, and this spares the graph's lookup.
    targets: Vec<Option<(u64, Id)>>,
    /// Code events applied: what memoised stretches of the walk
    /// (`crate::span`) compare to know theirs still hold.
    pub(crate) code_epoch: u64,
    /// Where the walk would be, had the graph code there: the current
    /// partial program is [`Graph::unexecutable`], reached after `at`
    /// instructions (a code event due then may make it code).
    lost: Option<Lost<Id>>,
}

/// How the walk reached [`Graph::unexecutable`], to find its way again
/// after a code event at the same count.
#[derive(Clone, Copy, Debug)]
struct Lost<Id> {
    /// The walk's instruction count then.
    at: u64,
    /// The target address, when the walk had it (an indirect target).
    addr: Option<u64>,
    /// Else the partial program left, and how (a static successor).
    from: Option<(Id, Leave)>,
}

impl<Id: Copy + Eq + std::fmt::Debug> Walker<Id> {
    /// A walk from `entry` that ends after `instructions` instructions (or at
    /// a stop).
    pub fn new(entry: Id, instructions: u64) -> Self {
        Walker {
            cur: entry,
            stack: ReturnStack::new(),
            matched: 0,
            stats: WalkStats::default(),
            limit: instructions,
            cache: Vec::new(),
            targets: vec![None; TARGET_SLOTS],
            code_epoch: 0,
            lost: None,
        }
    }

    /// Counts so far (final once [`Walker::step`] returned `true`).
    pub fn stats(&self) -> WalkStats {
        WalkStats {
            dropped: self.stack.dropped(),
            ..self.stats
        }
    }

    /// How `id` ends and its length, from the cache. `len` is looked up
    /// before `exit`: the run may end inside a partial program whose end
    /// cannot execute (a fault), and that must not be an error.
    #[inline]
    fn len_of<G: Graph<Id = Id>>(&self, graph: &G, id: Id) -> (Option<Exit<Id>>, u32) {
        match self.cache.get(graph.index(id)).copied().flatten() {
            Some((exit, len)) => (Some(exit), len),
            None => (None, graph.len(id)),
        }
    }

    /// How `id` ends and its length, when the cache has them.
    #[inline(always)]
    pub(crate) fn cached_exit<G: Graph<Id = Id>>(
        &self,
        graph: &G,
        id: Id,
    ) -> Option<(Exit<Id>, u32)> {
        self.cache.get(graph.index(id)).copied().flatten()
    }

    /// How `id` ends (cached).
    #[inline]
    pub(crate) fn exit_of<G: Graph<Id = Id>>(
        &mut self,
        graph: &G,
        id: Id,
    ) -> Result<(Exit<Id>, u32), ReplayError> {
        let i = graph.index(id);
        if let Some(Some(hit)) = self.cache.get(i) {
            return Ok(*hit);
        }
        let (exit, len) = (graph.exit(id)?, graph.len(id));
        if i != usize::MAX {
            if i >= self.cache.len() {
                self.cache.resize(i + 1, None);
            }
            self.cache[i] = Some((exit, len));
        }
        Ok((exit, len))
    }

    fn resolve<G: Graph<Id = Id>>(&mut self, graph: &mut G, addr: u64) -> Result<Id, ReplayError> {
        let slot = (addr >> 1) as usize % TARGET_SLOTS;
        if let Some((a, id)) = self.targets[slot] {
            if a == addr {
                return Ok(id);
            }
        }
        let id = graph.resolve(addr)?;
        self.targets[slot] = Some((addr, id));
        Ok(id)
    }

    /// [`Walker::resolve`] a target that the walk goes to next; one the
    /// program cannot execute is an error unless nothing executes there:
    /// a trap is due at once (its fetch faulted), or the run ends (`last`).
    fn resolve_next<G: Graph<Id = Id>, H: History>(
        &mut self,
        graph: &mut G,
        history: &mut H,
        addr: u64,
        last: bool,
    ) -> Result<Id, ReplayError> {
        match self.resolve(graph, addr) {
            Ok(id) => Ok(id),
            Err(e) => {
                let now = self.stats.instructions;
                if last || history.next_trap(now)? == Some(now) {
                    Ok(graph.unexecutable())
                } else if history.next_code(now)? == Some(now) {
                    // Code the run placed there is recorded next.
                    self.lost = Some(Lost {
                        at: now,
                        addr: Some(addr),
                        from: None,
                    });
                    Ok(graph.unexecutable())
                } else {
                    Err(e)
                }
            }
        }
    }

    /// Take the code event due now: the graph takes in the new bytes, and
    /// every partial program the walk holds (the current one, the return
    /// points) is looked up again by its address.
    #[cold]
    #[inline(never)]
    fn apply_code<G: Graph<Id = Id>, H: History>(
        &mut self,
        graph: &mut G,
        history: &mut H,
    ) -> Result<(), ReplayError> {
        let (addr, bytes) = history.code()?;
        graph.patch(addr, &bytes);
        self.code_epoch += 1;
        self.cache.clear();
        self.targets.iter_mut().for_each(|t| *t = None);
        let none = graph.unexecutable();
        for i in 0..self.stack.len() {
            let e = self.stack.as_slice()[i];
            if e != none {
                self.stack.as_mut_slice()[i] = graph.resolve(graph.start(e)).unwrap_or(none);
            }
        }
        let now = self.stats.instructions;
        self.cur = if self.cur != none {
            graph.resolve(graph.start(self.cur)).unwrap_or(none)
        } else {
            match self.lost {
                Some(Lost {
                    at, addr: Some(a), ..
                }) if at == now => graph.resolve(a).unwrap_or(none),
                Some(Lost {
                    at,
                    from: Some((from, how)),
                    ..
                }) if at == now => match (graph.exit(from), how) {
                    (Ok(Exit::Branch { taken, not_taken }), Leave::Branch(b)) => {
                        if b {
                            taken
                        } else {
                            not_taken
                        }
                    }
                    (Ok(Exit::Call { target, .. }), Leave::Call) => target,
                    (Ok(Exit::Continue(next)), Leave::Continue) => next,
                    _ => none,
                },
                _ => none,
            }
        };
        Ok(())
    }

    /// A code event due after `k` (> 0) instructions of the current
    /// partial program: they execute, the code changes, and the walk goes
    /// on at the next pc. Returns `true` when the walk has ended there.
    fn cut_for_code<G: Graph<Id = Id>, H: History, V: Visit<G>>(
        &mut self,
        graph: &mut G,
        history: &mut H,
        visit: &mut V,
        k: u32,
    ) -> Result<bool, ReplayError> {
        let cur = self.cur;
        // Read before the code changes.
        let next_pc = graph.pc_at(cur, k);
        let st = &mut self.stats;
        st.pps += 1;
        st.instructions += u64::from(k);
        st.last_pc = graph.pc_at(cur, k - 1);
        visit.cut(graph, cur, k);
        let now = self.stats.instructions;
        self.cur = graph.unexecutable();
        self.lost = Some(Lost {
            at: now,
            addr: Some(next_pc),
            from: None,
        });
        self.apply_code(graph, history)?;
        if now == self.limit {
            self.finish_code(graph, history)?;
            return Ok(true);
        }
        Ok(false)
    }

    /// Take the code events recorded at the walk's end (the run decoded
    /// code, then stopped before running it).
    pub(crate) fn finish_code<G: Graph<Id = Id>, H: History>(
        &mut self,
        graph: &mut G,
        history: &mut H,
    ) -> Result<(), ReplayError> {
        while let Some(at) = history.next_code(self.stats.instructions)? {
            if at > self.limit {
                break;
            }
            self.apply_code(graph, history)?;
        }
        Ok(())
    }

    /// Whether the partial program `cur` cannot execute its end: its path
    /// runs into an instruction that cannot execute, or it is no code at
    /// all. A trap due right after its last instruction is then taken
    /// there.
    fn cannot_end<G: Graph<Id = Id>>(
        &mut self,
        graph: &G,
        cur: Id,
        cached: Option<Exit<Id>>,
    ) -> bool {
        cached.is_none() && self.exit_of(graph, cur).is_err()
    }

    /// Take the trap due after `executed` instructions of the current
    /// partial program: tell `visit`, read the handler and go there.
    /// Returns `true` when the walk has ended (the run stopped right after
    /// entering the handler).
    fn take_trap<G: Graph<Id = Id>, H: History, V: Visit<G>>(
        &mut self,
        graph: &mut G,
        history: &mut H,
        visit: &mut V,
        executed: u32,
    ) -> Result<bool, ReplayError> {
        let cur = self.cur;
        let st = &mut self.stats;
        st.traps += 1;
        if executed > 0 {
            st.pps += 1;
            st.instructions += u64::from(executed);
            st.last_pc = graph.pc_at(cur, executed - 1);
        }
        visit.trap(graph, cur, executed);
        let handler = history.trap()?;
        let end = self.stats.instructions == self.limit;
        self.cur = self.resolve_next(graph, history, handler, end)?;
        Ok(end)
    }

    /// Execute the current partial program: consume the history its end
    /// needs, tell `visit`, and move to its successor. Returns `true` when
    /// the walk has ended (a stop, or the recorded instruction count).
    #[inline]
    pub fn step<G: Graph<Id = Id>, H: History, V: Visit<G>>(
        &mut self,
        graph: &mut G,
        history: &mut H,
        visit: &mut V,
    ) -> Result<bool, ReplayError> {
        let cur = self.cur;
        let (cached, len) = self.len_of(graph, cur);
        let len64 = u64::from(len);
        // Code that changes before this partial program or inside it (a
        // trap due earlier comes first): apply it there.
        if let Some(at) = history.next_code(self.stats.instructions)? {
            let done = self.stats.instructions;
            if at <= done + len64 && at <= self.limit {
                let trap_first = history.next_trap(done)?.is_some_and(|t| t < at);
                let k = (at - done) as u32;
                if !trap_first && k == 0 {
                    self.apply_code(graph, history)?;
                    return Ok(false);
                }
                if !trap_first && (k < len || self.cannot_end(graph, cur, cached)) {
                    return self.cut_for_code(graph, history, visit, k);
                }
            }
        }
        // A trap inside this partial program (or before it, or right after
        // a path that cannot end): execute up to it, go to the handler.
        if let Some(at) = history.next_trap(self.stats.instructions)? {
            let done = self.stats.instructions;
            if at <= done + len64 && at <= self.limit {
                let k = (at - done) as u32;
                if k < len || self.cannot_end(graph, cur, cached) {
                    return self.take_trap(graph, history, visit, k);
                }
            }
        }
        let st = &mut self.stats;
        st.pps += 1;
        if st.instructions + len64 > self.limit {
            let executed = (self.limit - st.instructions) as u32;
            st.instructions = self.limit;
            if executed > 0 {
                st.last_pc = graph.pc_at(cur, executed - 1);
            }
            visit.last(graph, cur, executed);
            return Ok(true);
        }
        // The run's last partial program may have executed completely (a
        // run cut at a branch, a call, the exit request): its end consumed
        // history like any other, so it is walked like any other and the
        // walk stops after it.
        let final_pp = st.instructions + len64 == self.limit;
        st.instructions += len64;
        let exit = match cached {
            Some(exit) => exit,
            None => match self.exit_of(graph, cur) {
                Ok((exit, _)) => exit,
                // The run stopped right before an instruction that cannot
                // execute (its budget ran out there).
                Err(_) if final_pp => Exit::Stop,
                Err(e) => return Err(e),
            },
        };
        let instructions = self.stats.instructions;
        let exhausted = |what| ReplayError::HistoryExhausted { what, instructions };
        let mut collapsed = None;
        let (how, next) = match exit {
            Exit::Branch { taken, not_taken } => {
                let nest = if H::COLLAPSES {
                    history.collapse_branch(graph.pc_at(cur, len - 1))
                } else {
                    None
                };
                match nest {
                    Some((region, resume)) => {
                        // The nest's extent is stepped over: on where it
                        // leads, the entry branch left as a fall-through.
                        collapsed = Some(region);
                        (
                            Leave::Branch(false),
                            self.resolve_next(graph, history, resume, final_pp)?,
                        )
                    }
                    None => {
                        let b = history.bit()?.ok_or_else(|| exhausted("a branch bit"))?;
                        self.stats.bits += 1;
                        (Leave::Branch(b), if b { taken } else { not_taken })
                    }
                }
            }
            Exit::Call { target, ret } => {
                let addr = graph.start(target);
                self.call(
                    graph,
                    history,
                    addr,
                    Some(target),
                    ret,
                    final_pp,
                    &mut collapsed,
                )?
            }
            Exit::IndirectCall { site, ret } => {
                let addr = history.indirect(site)?;
                self.stats.indirect += 1;
                self.call(graph, history, addr, None, ret, final_pp, &mut collapsed)?
            }
            Exit::Return => {
                let top = self.stack.pop();
                match history.escape(self.matched)? {
                    Some(addr) => {
                        self.matched = 0;
                        self.stats.escapes += 1;
                        // The recorder unwound its shadow stack by the same
                        // rule (longjmp out of several frames).
                        self.stack.unwind(addr, |&id| graph.start(id));
                        (
                            Leave::Return { escaped: true },
                            self.resolve_next(graph, history, addr, final_pp)?,
                        )
                    }
                    None => {
                        self.matched += 1;
                        let next = top.ok_or_else(|| ReplayError::EmptyStack {
                            addr: graph.start(cur),
                        })?;
                        (Leave::Return { escaped: false }, next)
                    }
                }
            }
            Exit::Indirect { site } => {
                let addr = history.indirect(site)?;
                self.stats.indirect += 1;
                (
                    Leave::Indirect,
                    self.resolve_next(graph, history, addr, final_pp)?,
                )
            }
            Exit::Continue(next) => (Leave::Continue, next),
            Exit::Stop => {
                self.stats.last_pc = graph.pc_at(cur, len - 1);
                visit.last(graph, cur, len);
                return Ok(true);
            }
        };
        if next == graph.unexecutable() && !matches!(self.lost, Some(l) if l.at == instructions) {
            // Remember the way, should code come there (a code event).
            self.lost = Some(Lost {
                at: instructions,
                addr: None,
                from: Some((cur, how)),
            });
        }
        if final_pp {
            // Its end executed like any other (a branch to code that cannot
            // execute is still taken, and costs what it costs), and nothing
            // after it.
            self.stats.last_pc = graph.pc_at(cur, len - 1);
            visit.pp(graph, cur, how, next);
            if let Some(r) = collapsed {
                visit.collapsed(graph, r);
            }
            // A trap recorded at the run's total is the last thing the run
            // did: it entered the handler and stopped there.
            if history.next_trap(self.limit)? == Some(self.limit) {
                self.cur = next;
                self.take_trap(graph, history, visit, 0)?;
            }
            return Ok(true);
        }
        visit.pp(graph, cur, how, next);
        if let Some(r) = collapsed {
            visit.collapsed(graph, r);
        }
        self.cur = next;
        Ok(false)
    }

    /// A call to `addr` (`target` when the graph knows it) returning to
    /// `ret`: into the callee, or — a collapsed function, which the history
    /// says in `collapsed` — straight on at the return point.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn call<G: Graph<Id = Id>, H: History>(
        &mut self,
        graph: &mut G,
        history: &mut H,
        addr: u64,
        target: Option<Id>,
        ret: Id,
        final_pp: bool,
        collapsed: &mut Option<u32>,
    ) -> Result<(Leave, Id), ReplayError> {
        *collapsed = if H::COLLAPSES {
            history.collapse_call(addr)
        } else {
            None
        };
        if collapsed.is_some() {
            return Ok((Leave::Call, ret));
        }
        self.push(ret);
        let next = match target {
            Some(t) => t,
            None => self.resolve_next(graph, history, addr, final_pp)?,
        };
        Ok((Leave::Call, next))
    }

    #[inline]
    pub(crate) fn push(&mut self, ret: Id) {
        self.stack.push(ret);
        self.stats.max_depth = self.stats.max_depth.max(self.stack.len());
    }
}

/// US patent 8,448,140, embodiment 1: the reconstructed table of Fig. 4/5, the one
/// graph the patent's worked examples run on (here and in the aggregation
/// planner's tests).
#[cfg(test)]
pub(crate) mod seed_table {
    use super::{Exit, Graph, History, ReplayError};

    /// The patent's table. The call PP 6 is split at the call as the document
    /// splits its time: `T6a` before the call, `T6b` after the return.
    pub(crate) struct SeedTable;
    pub(crate) const NAMES: [&str; 13] = [
        "T1", "T2", "T3", "T4", "T5", "T6a", "T6b", "T7", "T8", "T9", "T10", "T11", "T12",
    ];
    pub(crate) fn id(name: &str) -> usize {
        NAMES.iter().position(|n| *n == name).unwrap()
    }

    impl Graph for SeedTable {
        type Id = usize;
        fn exit(&self, pp: usize) -> Result<Exit<usize>, ReplayError> {
            let branch = |t, f| Exit::Branch {
                taken: id(t),
                not_taken: id(f),
            };
            // Successors of each end command: branch(A) → T2/T3, branch(B) →
            // T4/T5, branch(C) → T6a/T7, branch(D) → T9/T10, branch(E) →
            // T11/T12.
            let a = branch("T2", "T3");
            Ok(match NAMES[pp] {
                "T1" | "T4" | "T7" | "T6b" => a,
                "T2" => branch("T4", "T5"),
                "T5" => branch("T6a", "T7"),
                "T6a" => Exit::Call {
                    target: id("T8"),
                    ret: id("T6b"),
                },
                "T8" | "T9" => branch("T9", "T10"),
                "T10" => branch("T11", "T12"),
                "T11" | "T12" => Exit::Return,
                "T3" => Exit::Stop,
                _ => unreachable!(),
            })
        }
        fn len(&self, _: usize) -> u32 {
            1
        }
        fn start(&self, pp: usize) -> u64 {
            pp as u64
        }
        fn resolve(&mut self, addr: u64) -> Result<usize, ReplayError> {
            Ok(addr as usize)
        }
        fn index(&self, pp: usize) -> usize {
            pp
        }
        fn pc_at(&self, pp: usize, _: u32) -> u64 {
            pp as u64
        }
        fn unexecutable(&self) -> usize {
            usize::MAX
        }
    }

    /// A history of branch bits only (the patent's); `.1` counts the bits asked for.
    pub(crate) struct Bits(pub(crate) Vec<bool>, pub(crate) usize);
    impl History for Bits {
        fn bit(&mut self) -> Result<Option<bool>, ReplayError> {
            self.1 += 1;
            Ok(self.0.get(self.1 - 1).copied())
        }
        fn indirect(&mut self, _: u64) -> Result<u64, ReplayError> {
            unreachable!("the seed table has no indirect jumps")
        }
        fn escape(&mut self, _: u64) -> Result<Option<u64>, ReplayError> {
            Ok(None)
        }
        fn next_trap(&mut self, _: u64) -> Result<Option<u64>, ReplayError> {
            Ok(None)
        }
        fn trap(&mut self) -> Result<u64, ReplayError> {
            unreachable!("the patent's histories have no traps")
        }
        fn next_code(&mut self, _: u64) -> Result<Option<u64>, ReplayError> {
            Ok(None)
        }
        fn code(&mut self) -> Result<(u64, Vec<u8>), ReplayError> {
            unreachable!("the patent's histories have no code events")
        }
    }
}

#[cfg(test)]
mod seed_tests {
    //! US patent 8,448,140, embodiment 1: the reconstructed table of Fig. 4/5 with
    //! symbolic times, replayed from the document's bit sequences.
    use super::*;

    use super::seed_table::{id, Bits, SeedTable, NAMES};

    /// Sums symbolic times: the estimate as a string of terms.
    struct Terms(Vec<&'static str>);
    impl Visit<SeedTable> for Terms {
        fn pp(&mut self, _: &SeedTable, pp: usize, _: Leave, _: usize) {
            self.0.push(NAMES[pp]);
        }
        fn last(&mut self, _: &SeedTable, pp: usize, _: u32) {
            self.0.push(NAMES[pp]);
        }
        fn trap(&mut self, _: &SeedTable, _: usize, _: u32) {
            unreachable!("the patent's histories have no traps")
        }
        fn cut(&mut self, _: &SeedTable, _: usize, _: u32) {
            unreachable!("the patent's histories have no code events")
        }
    }

    fn replay(bits: &str) -> (String, usize) {
        let mut h = Bits(bits.chars().map(|c| c == '1').collect(), 0);
        let mut terms = Terms(Vec::new());
        let st = walk(&mut SeedTable, &mut h, &mut terms, id("T1"), u64::MAX).unwrap();
        assert_eq!(st.bits as usize, h.1);
        (terms.0.join("+"), h.1)
    }

    #[test]
    fn seed_example_1110111010() {
        let (sum, used) = replay("1110111010");
        assert_eq!(sum, "T1+T2+T4+T2+T5+T6a+T8+T9+T9+T10+T11+T6b+T3");
        assert_eq!(used, 10, "all 10 bits used");
    }

    #[test]
    fn seed_example_10010111000() {
        let (sum, used) = replay("10010111000");
        assert_eq!(sum, "T1+T2+T5+T7+T2+T5+T6a+T8+T9+T9+T10+T12+T6b+T3");
        assert_eq!(used, 11);
    }

    #[test]
    fn seed_example_short_history_is_an_error() {
        // The document's second example without the trailing 0 stops short
        // of the final A test: the replay must say so, not invent a bit.
        let mut h = Bits("1001011100".chars().map(|c| c == '1').collect(), 0);
        let e = walk(&mut SeedTable, &mut h, &mut Terms(Vec::new()), 0, u64::MAX).unwrap_err();
        assert!(matches!(e, ReplayError::HistoryExhausted { .. }), "{e}");
    }
}
