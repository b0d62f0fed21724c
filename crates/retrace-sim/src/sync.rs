//! The synchronisation API: channels, mutexes, barriers and semaphores that
//! a multi-hart program reaches through environment calls, and the
//! scheduling state of each hart (runnable, blocked on a resource, exited).
//!
//! A call is an `ecall` with a number of [`CALL_BASE`]`..CALL_BASE + 0x100`
//! in `a7`, the object's handle in `a0`, the value in `a1`; the result comes
//! back in `a0` (docs/MULTIPROCESSOR.md has the table). The engine answers
//! these calls itself, whatever `mtvec` says: they are the environment's,
//! as semihosting is the host's.
//!
//! A handle is the address of an object *descriptor* the program declares
//! in its memory (`SYNC_CHANNEL(name, capacity)` and friends in
//! `programs/src/sync.h`): a magic word, the kind and one parameter. The
//! engine reads the descriptor the first time a handle is used and keeps
//! the object's state itself, so nothing the program writes later can
//! corrupt a queue or a lock, and two harts can never race to create one.
//!
//! Blocking is a matter of scheduling: a hart whose call cannot complete
//! stays at its `ecall` and is not run; the hart that frees the resource
//! completes the call on its behalf (hands it the word, the lock, the
//! barrier's release) and makes it runnable, in first-come order. The
//! waiting hart's `ecall` retires when it next runs, so every retirement
//! counts against the budget of the hart that retires it. Nothing here
//! depends on the host: the same program and hart count give the same
//! interleaving every run.
//!
//! Every call is a synchronisation point: observers hear of it through
//! [`crate::Observer::sync`] as a [`SyncEvent`] — when it is made (done at
//! once, or blocked) and when a blocked call completes (with the hart that
//! completed it) — which is what a recording of a multi-hart run needs to
//! replay the harts together (US patent 8,448,140, embodiment 7).

use crate::observer::HartId;
use retrace_isa::Inst;
use rustc_hash::FxHashMap as HashMap;
use std::collections::VecDeque;
use std::fmt;

/// The first call number of the API; the calls are `CALL_BASE + op`.
pub const CALL_BASE: u64 = 0x5359_0000;

/// The first word of every object descriptor.
pub const MAGIC: u32 = 0x5359_4e43;

/// Bytes of an object descriptor: magic, kind, parameter, reserved (four
/// little-endian 32-bit words).
pub const DESCRIPTOR_BYTES: u64 = 16;

/// Largest channel capacity a descriptor may ask for.
pub const MAX_CAPACITY: u32 = 1 << 20;

/// A call of the API: the low byte of `a7` (an open newtype, so an unknown
/// number still prints).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SyncOp(pub u8);

macro_rules! ops {
    ($( $name:ident = $num:literal, $text:literal, $kind:expr; )*) => {
        impl SyncOp {
            $( #[doc = $text] pub const $name: SyncOp = SyncOp($num); )*
            /// The call's name, as docs/MULTIPROCESSOR.md spells it.
            pub fn name(self) -> Option<&'static str> {
                match self.0 { $( $num => Some($text), )* _ => None }
            }
            /// The kind of object the call works on (`None` for calls on
            /// no object, and for unknown calls).
            pub fn object_kind(self) -> Option<Kind> {
                match self.0 { $( $num => $kind, )* _ => None }
            }
        }
    };
}

ops! {
    HARTS = 0, "harts", None;
    HART_EXIT = 1, "hart_exit", None;
    SEND = 2, "send", Some(Kind::Channel);
    RECV = 3, "recv", Some(Kind::Channel);
    LOCK = 4, "lock", Some(Kind::Mutex);
    UNLOCK = 5, "unlock", Some(Kind::Mutex);
    BARRIER = 6, "barrier", Some(Kind::Barrier);
    SEM_WAIT = 7, "sem_wait", Some(Kind::Semaphore);
    SEM_POST = 8, "sem_post", Some(Kind::Semaphore);
    SET_HZ = 9, "set_hz", None;
}

/// The clock frequencies a hart may ask for with [`SyncOp::SET_HZ`], in
/// hertz: 1 kHz to 100 GHz (beyond that, a cycle would be shorter than
/// the attosecond the time arithmetic counts in is precise to).
pub const HZ_RANGE: std::ops::RangeInclusive<u64> = 1_000..=100_000_000_000;

impl fmt::Display for SyncOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => f.write_str(n),
            None => write!(f, "call {}", self.0),
        }
    }
}

/// What kind of object a descriptor declares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A bounded FIFO of words; the parameter is its capacity (≥ 1).
    Channel = 1,
    /// A non-recursive lock.
    Mutex = 2,
    /// A barrier for a number of harts (the parameter; 0 = every hart).
    Barrier = 3,
    /// A counting semaphore; the parameter is its initial count.
    Semaphore = 4,
}

impl Kind {
    fn from_code(code: u32) -> Option<Kind> {
        Some(match code {
            1 => Kind::Channel,
            2 => Kind::Mutex,
            3 => Kind::Barrier,
            4 => Kind::Semaphore,
            _ => return None,
        })
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Kind::Channel => "channel",
            Kind::Mutex => "mutex",
            Kind::Barrier => "barrier",
            Kind::Semaphore => "semaphore",
        })
    }
}

/// How a call went, as an observer sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncOutcome {
    /// Completed at once; `result` is what the caller gets in `a0`.
    Done,
    /// The caller waits: it runs no more until another hart completes the
    /// call (a later [`SyncOutcome::Resumed`] event) — or never, if that
    /// never happens (a deadlock).
    Blocked,
    /// A call that blocked earlier has completed, by hart `by`'s call;
    /// `result` is what the caller gets. Its `ecall` retires when the
    /// caller next runs.
    Resumed {
        /// The hart whose call freed the resource.
        by: HartId,
    },
    /// The caller stopped for good ([`SyncOp::HART_EXIT`]).
    Exited,
}

/// One synchronisation event, for observers (a recorder logs these).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyncEvent {
    /// The hart that made the call.
    pub hart: HartId,
    /// Address of its `ecall`.
    pub pc: u64,
    /// Which call.
    pub op: SyncOp,
    /// The object's handle (0 for calls on no object).
    pub object: u64,
    /// The value passed (`a1`: the word sent), 0 when there is none.
    pub value: u64,
    /// What the call returns in `a0` (0 while blocked).
    pub result: u64,
    /// The object's descriptor parameter (capacity, parties as declared,
    /// initial count; 0 for calls on no object): what a recording needs
    /// to simulate the object again.
    pub param: u32,
    /// Instructions the hart had retired before the `ecall`.
    pub retired: u64,
    /// How it went.
    pub outcome: SyncOutcome,
}

/// A call the program made wrongly: the run stops with it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SyncError {
    /// The handle does not point at an object descriptor.
    #[error("bad handle {addr:#x} for {op}: {why}")]
    BadHandle {
        /// The handle.
        addr: u64,
        /// The call.
        op: SyncOp,
        /// What is wrong with it.
        why: &'static str,
    },
    /// The handle is an object of another kind.
    #[error("bad handle {addr:#x} for {op}: it is a {is}, not a {wanted}")]
    WrongKind {
        /// The handle.
        addr: u64,
        /// The call.
        op: SyncOp,
        /// What the handle is.
        is: Kind,
        /// What the call works on.
        wanted: Kind,
    },
    /// The descriptor's parameter is out of range.
    #[error("bad {kind} at {addr:#x}: {why}")]
    BadObject {
        /// The handle.
        addr: u64,
        /// Its kind.
        kind: Kind,
        /// What is wrong.
        why: String,
    },
    /// `set_hz` of a frequency outside [`HZ_RANGE`].
    #[error("set_hz of {hz} Hz: a hart's clock runs at 1 kHz to 100 GHz")]
    BadFrequency {
        /// The frequency asked for.
        hz: u64,
    },
    /// `unlock` of a mutex the caller does not hold.
    #[error("unlock of mutex {addr:#x}, which {}", match owner { Some(o) => format!("hart {o} holds"), None => "nobody holds".to_string() })]
    NotOwner {
        /// The handle.
        addr: u64,
        /// Who holds it.
        owner: Option<HartId>,
    },
    /// `lock` of a mutex the caller already holds (mutexes are not
    /// recursive: it would wait for itself for ever).
    #[error("lock of mutex {addr:#x}, which this hart already holds")]
    Relock {
        /// The handle.
        addr: u64,
    },
    /// A call number in the API's range that is not a call.
    #[error("unknown synchronisation call {:#x} (a7)", CALL_BASE + u64::from(op.0))]
    UnknownCall {
        /// The number's low byte.
        op: SyncOp,
    },
}

/// What a blocked hart waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wait {
    /// The call that blocked.
    pub op: SyncOp,
    /// The object.
    pub object: u64,
    /// Its kind.
    pub kind: Kind,
    /// The mutex's holder when the hart blocked on a lock.
    pub holder: Option<HartId>,
}

impl fmt::Display for Wait {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Wait { object, .. } = *self;
        match self.op {
            SyncOp::SEND => write!(f, "sends to full channel {object:#x}"),
            SyncOp::RECV => write!(f, "receives from empty channel {object:#x}"),
            SyncOp::LOCK => match self.holder {
                Some(o) => write!(f, "locks mutex {object:#x} held by hart {o}"),
                None => write!(f, "locks mutex {object:#x}"),
            },
            SyncOp::BARRIER => write!(f, "waits at barrier {object:#x}"),
            SyncOp::SEM_WAIT => write!(f, "waits on semaphore {object:#x}"),
            op => write!(f, "{op} on {} {object:#x}", self.kind),
        }
    }
}

/// Where a hart stands with the scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HartState {
    /// It may run.
    Runnable,
    /// Its call at `pc` waits for a resource.
    Blocked {
        /// What it waits for.
        wait: Wait,
        /// Address of the `ecall`.
        pc: u64,
    },
    /// It called [`SyncOp::HART_EXIT`].
    Exited,
}

/// No hart can run: every one that has not exited is blocked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deadlock {
    /// Each hart that has not exited, with what it waits for.
    pub blocked: Vec<(HartId, Wait)>,
    /// Harts that exited.
    pub exited: Vec<HartId>,
}

impl fmt::Display for Deadlock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.blocked.is_empty() {
            return write!(
                f,
                "every hart has stopped ({}) and none exited the program",
                hart_list(&self.exited)
            );
        }
        f.write_str("deadlock: ")?;
        for (i, (h, wait)) in self.blocked.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "hart {h} {wait}")?;
        }
        if !self.exited.is_empty() {
            write!(f, " (exited: {})", hart_list(&self.exited))?;
        }
        Ok(())
    }
}

fn hart_list(harts: &[HartId]) -> String {
    let names: Vec<String> = harts.iter().map(|h| format!("hart {h}")).collect();
    names.join(", ")
}

/// One object's state.
#[derive(Clone, Debug)]
enum State {
    Channel {
        capacity: usize,
        queue: VecDeque<u64>,
        /// Harts waiting to send, with their words, first come first.
        senders: VecDeque<(HartId, u64)>,
        receivers: VecDeque<HartId>,
    },
    Mutex {
        owner: Option<HartId>,
        waiters: VecDeque<HartId>,
    },
    Barrier {
        parties: usize,
        waiting: Vec<HartId>,
    },
    Semaphore {
        count: u64,
        waiters: VecDeque<HartId>,
    },
}

impl State {
    fn kind(&self) -> Kind {
        match self {
            State::Channel { .. } => Kind::Channel,
            State::Mutex { .. } => Kind::Mutex,
            State::Barrier { .. } => Kind::Barrier,
            State::Semaphore { .. } => Kind::Semaphore,
        }
    }
}

/// A blocked hart's call that is complete but not yet retired: it retires
/// when the hart next runs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pending {
    /// The `ecall`.
    pub inst: Inst,
    /// Its address.
    pub pc: u64,
    /// What it returns in `a0`.
    pub result: u64,
}

/// What a call did, for the engine to apply.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Step {
    /// The caller's result, or `None` when it blocked (or exited).
    pub result: Option<u64>,
    /// Blocked harts whose calls this one completed, with their results,
    /// in the order they were completed.
    pub woken: Vec<(HartId, u64)>,
}

/// The API's state: every object used so far and each hart's standing.
#[derive(Clone, Debug)]
pub struct SyncState {
    /// The objects used by handle, in the order they were opened.
    states: Vec<State>,
    /// Their indices in `states` by handle (FxHash).
    objects: HashMap<u64, usize>,
    /// In front of `objects`, for the lookup at every call (some programs
    /// call every few dozen instructions): per slot, a handle and its
    /// index + 1 (0: empty), the slot chosen by the handle's descriptor
    /// number, `handle / DESCRIPTOR_BYTES`, so that the objects a program
    /// declares together never share one.
    recent: [(u64, usize); RECENT],
    /// Each object's descriptor parameter, as read when it was opened.
    params: HashMap<u64, u32>,
    /// By the caller's numbers, for a replay that numbered the objects
    /// ([`SyncState::replay_numbered_call_into`]).
    numbered: Vec<Option<State>>,
    harts: Vec<HartState>,
    /// Per hart, a completed call waiting to retire.
    pending: Vec<Option<Pending>>,
    /// The harts one call completes, reused from call to call
    /// ([`SyncState::call_and_wake`]): a call that wakes a hart then
    /// allocates nothing.
    woken: Vec<(HartId, u64)>,
}

impl SyncState {
    /// `harts` harts, all runnable, no objects.
    pub fn new(harts: usize) -> SyncState {
        SyncState {
            states: Vec::new(),
            objects: HashMap::default(),
            recent: [(0, 0); RECENT],
            params: HashMap::default(),
            numbered: Vec::new(),
            harts: vec![HartState::Runnable; harts],
            pending: vec![None; harts],
            woken: Vec::new(),
        }
    }

    /// Hart `h`'s standing.
    pub fn state(&self, h: HartId) -> HartState {
        self.harts[h]
    }

    /// Whether hart `h` may run.
    #[inline(always)]
    pub fn runnable(&self, h: HartId) -> bool {
        matches!(self.harts[h], HartState::Runnable)
    }

    /// Why no hart can run (call when none can).
    pub fn deadlock(&self) -> Deadlock {
        let mut d = Deadlock {
            blocked: Vec::new(),
            exited: Vec::new(),
        };
        for (h, s) in self.harts.iter().enumerate() {
            match *s {
                HartState::Blocked { wait, .. } => d.blocked.push((h, wait)),
                HartState::Exited => d.exited.push(h),
                HartState::Runnable => {}
            }
        }
        d
    }

    /// The descriptor parameter of `object` (0 when it was never opened).
    pub fn param(&self, object: u64) -> u32 {
        self.params.get(&object).copied().unwrap_or(0)
    }

    /// A call replayed from a recording: hart `h` makes call `op` on
    /// `object`, whose descriptor declared `param`, with `value` (see
    /// [`SyncEvent`]; only calls whose value decides something need it).
    /// Returns whether it completed at once (`false`: it blocked, or the
    /// hart exited) and the harts whose blocked calls it completed, in
    /// order; those are runnable again. The replay of several harts
    /// (`retrace-estimate`) simulates the objects with this, by the very
    /// rules the engine runs them.
    pub fn replay_call(
        &mut self,
        h: HartId,
        op: SyncOp,
        object: u64,
        param: u32,
        value: u64,
    ) -> Result<(bool, Vec<HartId>), SyncError> {
        let mut woken = Vec::new();
        let done = self.replay_call_into(h, op, object, param, value, &mut woken)?;
        Ok((done, woken.into_iter().map(|(w, _)| w).collect()))
    }

    /// [`SyncState::replay_call`], the resumed harts (with the results
    /// their calls return) put in `woken`, which is cleared first: a
    /// replay of millions of calls reuses one buffer instead of
    /// allocating a list per call that resumes a hart.
    #[inline]
    pub fn replay_call_into(
        &mut self,
        h: HartId,
        op: SyncOp,
        object: u64,
        param: u32,
        value: u64,
        woken: &mut Vec<(HartId, u64)>,
    ) -> Result<bool, SyncError> {
        self.replay_at(h, op, None, object, param, value, woken)
    }

    /// [`SyncState::replay_call_into`] for a replay that has numbered the
    /// objects 0, 1, … (one number per handle, the same at every call):
    /// the object is found by its `number`, not looked up by handle, which
    /// is most of what a call costs the replay. A `SyncState` is used with
    /// numbers or with handles, not both.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn replay_numbered_call_into(
        &mut self,
        h: HartId,
        op: SyncOp,
        number: u32,
        object: u64,
        param: u32,
        value: u64,
        woken: &mut Vec<(HartId, u64)>,
    ) -> Result<bool, SyncError> {
        self.replay_at(h, op, Some(number as usize), object, param, value, woken)
    }

    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn replay_at(
        &mut self,
        h: HartId,
        op: SyncOp,
        number: Option<usize>,
        object: u64,
        param: u32,
        value: u64,
        woken: &mut Vec<(HartId, u64)>,
    ) -> Result<bool, SyncError> {
        let descriptor = |_| {
            let mut d = [0u8; DESCRIPTOR_BYTES as usize];
            d[..4].copy_from_slice(&MAGIC.to_le_bytes());
            d[4..8].copy_from_slice(&(op.object_kind()? as u32).to_le_bytes());
            d[8..12].copy_from_slice(&param.to_le_bytes());
            Some(d)
        };
        woken.clear();
        let result = self.call_at(h, 0, op, number, object, value, descriptor, woken)?;
        for &(w, _) in woken.iter() {
            self.harts[w] = HartState::Runnable;
        }
        Ok(result.is_some())
    }

    /// A completed call of hart `h` that has yet to retire.
    pub(crate) fn take_pending(&mut self, h: HartId) -> Option<Pending> {
        self.pending[h].take()
    }

    /// Hart `h`, blocked on its `ecall` `inst` at `pc`, had its call
    /// completed with `result`: it may run, and retires the call first.
    pub(crate) fn wake(&mut self, h: HartId, inst: Inst, result: u64) {
        wake(&mut self.harts, &mut self.pending, h, inst, result);
    }

    /// Hart `h` makes call `op` on `object` with `value`, at `pc`.
    /// `descriptor` reads the object's descriptor from memory (once per
    /// object). The caller applies the [`Step`]: the result to `h`, and
    /// [`SyncState::wake`] for each woken hart.
    pub(crate) fn call(
        &mut self,
        h: HartId,
        pc: u64,
        op: SyncOp,
        object: u64,
        value: u64,
        descriptor: impl FnOnce(u64) -> Option<[u8; DESCRIPTOR_BYTES as usize]>,
    ) -> Result<Step, SyncError> {
        let mut woken = Vec::new();
        let result = self.call_at(h, pc, op, None, object, value, descriptor, &mut woken)?;
        Ok(Step { result, woken })
    }

    /// [`SyncState::call`] with its [`Step`] applied: each hart it
    /// completes is woken ([`SyncState::wake`], with `inst` standing for
    /// the waiter's `ecall`, as every `ecall` decodes alike), in the order
    /// they were completed. Returns the caller's result (`None`: it
    /// blocked, or exited). Allocates nothing once the objects exist, for
    /// engines that report no events. A call that fails changes nothing:
    /// every error is found before any state is touched, so the same call
    /// made again fails the same way.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub(crate) fn call_and_wake(
        &mut self,
        h: HartId,
        pc: u64,
        op: SyncOp,
        object: u64,
        value: u64,
        descriptor: impl FnOnce(u64) -> Option<[u8; DESCRIPTOR_BYTES as usize]>,
        inst: Inst,
    ) -> Result<Option<u64>, SyncError> {
        // An object used before, of the call's kind: the rules applied
        // here, the harts they complete woken as they go, without the
        // general way's list of them (its order is theirs anyway).
        if let (Some(i), Some(wanted)) = (self.recent_index(object), op.object_kind()) {
            if self.states[i].kind() == wanted {
                let (harts, pending) = (&mut self.harts, &mut self.pending);
                let (result, holder) = rules(h, op, &mut self.states[i], object, value, |w, r| {
                    wake(harts, pending, w, inst, r)
                })?;
                if result.is_none() {
                    harts[h] = blocked(op, object, wanted, holder, pc);
                }
                return Ok(result);
            }
        }
        self.general_call_and_wake(h, pc, op, object, value, descriptor, inst)
    }

    /// A channel's common calls, decided before anything else: a send
    /// with room and no receiver waiting, a receive from a queue that no
    /// sender waits on, on a channel found in `recent`. Returns the
    /// result, the channel changed exactly as [`rules`] changes it in
    /// these cases; `None` (nothing changed) leaves the call to
    /// [`SyncState::call_and_wake`]. Pipelines call every few dozen
    /// instructions, nearly always one of these.
    #[inline(always)]
    pub(crate) fn channel_call(&mut self, op: SyncOp, object: u64, value: u64) -> Option<u64> {
        if op != SyncOp::SEND && op != SyncOp::RECV {
            return None;
        }
        let i = self.recent_index(object)?;
        let State::Channel {
            capacity,
            queue,
            senders,
            receivers,
        } = &mut self.states[i]
        else {
            return None;
        };
        if op == SyncOp::SEND {
            if receivers.is_empty() && queue.len() < *capacity {
                queue.push_back(value);
                return Some(0);
            }
            None
        } else if senders.is_empty() {
            queue.pop_front()
        } else {
            None
        }
    }

    /// [`SyncState::call_and_wake`] for a call on no object, on one not
    /// used before or not in `recent`, or on one of another kind.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn general_call_and_wake(
        &mut self,
        h: HartId,
        pc: u64,
        op: SyncOp,
        object: u64,
        value: u64,
        descriptor: impl FnOnce(u64) -> Option<[u8; DESCRIPTOR_BYTES as usize]>,
        inst: Inst,
    ) -> Result<Option<u64>, SyncError> {
        let mut woken = std::mem::take(&mut self.woken);
        woken.clear();
        let result = self.call_at(h, pc, op, None, object, value, descriptor, &mut woken);
        for &(w, r) in &woken {
            self.wake(w, inst, r);
        }
        self.woken = woken;
        result
    }

    /// [`SyncState::call`], the object found by its `number` when given
    /// ([`SyncState::replay_numbered_call_into`]), else by handle, and the
    /// woken harts with their results appended to `woken`; returns the
    /// caller's result (`None`: it blocked, or exited).
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn call_at(
        &mut self,
        h: HartId,
        pc: u64,
        op: SyncOp,
        number: Option<usize>,
        object: u64,
        value: u64,
        descriptor: impl FnOnce(u64) -> Option<[u8; DESCRIPTOR_BYTES as usize]>,
        woken: &mut Vec<(HartId, u64)>,
    ) -> Result<Option<u64>, SyncError> {
        let n = self.harts.len();
        let Some(wanted) = op.object_kind() else {
            return match op {
                SyncOp::HARTS => Ok(Some(n as u64)),
                SyncOp::HART_EXIT => {
                    self.harts[h] = HartState::Exited;
                    Ok(None)
                }
                // The clock is the timing's business (`crate::clocked`);
                // to the program it is a call that returns 0.
                SyncOp::SET_HZ if HZ_RANGE.contains(&value) => Ok(Some(0)),
                SyncOp::SET_HZ => Err(SyncError::BadFrequency { hz: value }),
                _ => Err(SyncError::UnknownCall { op }),
            };
        };
        let state = match number {
            None => {
                let i = match self.recent_index(object) {
                    Some(i) => i,
                    None => self.find(object, op, descriptor)?,
                };
                &mut self.states[i]
            }
            Some(i) => {
                if self.numbered.len() <= i {
                    self.numbered.resize_with(i + 1, || None);
                }
                let slot = &mut self.numbered[i];
                match slot {
                    Some(state) => state,
                    None => {
                        let (state, param) = open(object, op, descriptor, n)?;
                        self.params.insert(object, param);
                        slot.insert(state)
                    }
                }
            }
        };
        if state.kind() != wanted {
            return Err(SyncError::WrongKind {
                addr: object,
                op,
                is: state.kind(),
                wanted,
            });
        }
        let (result, holder) = rules(h, op, state, object, value, |w, r| woken.push((w, r)))?;
        if result.is_none() {
            self.harts[h] = blocked(op, object, wanted, holder, pc);
        }
        Ok(result)
    }
}

impl SyncState {
    /// The index in `states` of the object at `object`, opened now if it is
    /// new, and put in `recent`. An object that cannot be opened
    /// changes nothing.
    #[inline(never)]
    fn find(
        &mut self,
        object: u64,
        op: SyncOp,
        descriptor: impl FnOnce(u64) -> Option<[u8; DESCRIPTOR_BYTES as usize]>,
    ) -> Result<usize, SyncError> {
        let i = match self.objects.get(&object) {
            Some(&i) => i,
            None => {
                let (state, param) = open(object, op, descriptor, self.harts.len())?;
                self.params.insert(object, param);
                self.states.push(state);
                let i = self.states.len() - 1;
                self.objects.insert(object, i);
                i
            }
        };
        self.recent[recent_slot(object)] = (object, i + 1);
        Ok(i)
    }

    /// `object`'s index in `states` when `recent` holds it: the lookup
    /// every call starts with.
    #[inline(always)]
    fn recent_index(&self, object: u64) -> Option<usize> {
        match self.recent[recent_slot(object)] {
            (handle, i) if handle == object && i != 0 => Some(i - 1),
            _ => None,
        }
    }
}

/// [`SyncState::wake`] on the parts of the state it changes.
#[inline(always)]
fn wake(
    harts: &mut [HartState],
    pending: &mut [Option<Pending>],
    h: HartId,
    inst: Inst,
    result: u64,
) {
    if let HartState::Blocked { pc, .. } = harts[h] {
        harts[h] = HartState::Runnable;
        pending[h] = Some(Pending { inst, pc, result });
    }
}

/// The standing of a hart whose call `op` at `pc` on `object`, of kind
/// `kind`, blocked (on `holder`'s mutex, for a lock).
#[inline(always)]
fn blocked(op: SyncOp, object: u64, kind: Kind, holder: Option<HartId>, pc: u64) -> HartState {
    HartState::Blocked {
        wait: Wait {
            op,
            object,
            kind,
            holder,
        },
        pc,
    }
}

/// The API's rules: hart `h` makes call `op` on `state`, the object at
/// `object`, of the call's kind, with `value`. Returns the caller's result
/// (`None`: it blocks) and, for a lock that blocks, the mutex's holder;
/// each hart whose blocked call it completes goes to `wake` with that
/// call's result, in order. A wrong call is an error and changes nothing.
#[inline(always)]
fn rules(
    h: HartId,
    op: SyncOp,
    state: &mut State,
    object: u64,
    value: u64,
    mut wake: impl FnMut(HartId, u64),
) -> Result<(Option<u64>, Option<HartId>), SyncError> {
    let mut result = None;
    let mut holder = None;
    match (op, state) {
        (
            SyncOp::SEND,
            State::Channel {
                capacity,
                queue,
                senders,
                receivers,
            },
        ) => {
            if let Some(r) = receivers.pop_front() {
                wake(r, value);
                result = Some(0);
            } else if queue.len() < *capacity {
                queue.push_back(value);
                result = Some(0);
            } else {
                senders.push_back((h, value));
            }
        }
        (
            SyncOp::RECV,
            State::Channel {
                queue,
                senders,
                receivers,
                ..
            },
        ) => {
            if let Some(v) = queue.pop_front() {
                result = Some(v);
                // Room now: the first waiting sender's word goes in.
                if let Some((s, w)) = senders.pop_front() {
                    queue.push_back(w);
                    wake(s, 0);
                }
            } else {
                receivers.push_back(h);
            }
        }
        (SyncOp::LOCK, State::Mutex { owner, waiters }) => match *owner {
            None => {
                *owner = Some(h);
                result = Some(0);
            }
            Some(o) if o == h => return Err(SyncError::Relock { addr: object }),
            Some(o) => {
                holder = Some(o);
                waiters.push_back(h);
            }
        },
        (SyncOp::UNLOCK, State::Mutex { owner, waiters }) => {
            if *owner != Some(h) {
                return Err(SyncError::NotOwner {
                    addr: object,
                    owner: *owner,
                });
            }
            // The lock passes straight to the first waiter.
            *owner = waiters.pop_front();
            if let Some(w) = *owner {
                wake(w, 0);
            }
            result = Some(0);
        }
        (SyncOp::BARRIER, State::Barrier { parties, waiting }) => {
            if waiting.len() + 1 >= *parties {
                // The last to arrive releases the others and gets 1,
                // so that exactly one hart can do the serial part.
                for w in waiting.drain(..) {
                    wake(w, 0);
                }
                result = Some(1);
            } else {
                waiting.push(h);
            }
        }
        (SyncOp::SEM_WAIT, State::Semaphore { count, waiters }) => {
            if *count > 0 {
                *count -= 1;
                result = Some(0);
            } else {
                waiters.push_back(h);
            }
        }
        (SyncOp::SEM_POST, State::Semaphore { count, waiters }) => {
            match waiters.pop_front() {
                Some(w) => wake(w, 0),
                None => *count = count.saturating_add(1),
            }
            result = Some(0);
        }
        _ => unreachable!("the kind was checked against the call"),
    }
    Ok((result, holder))
}

/// Slots of [`SyncState`]'s cache of recently used objects.
const RECENT: usize = 32;

/// The slot of [`SyncState`]'s `recent` for handle `object`: its
/// descriptor number, so that objects declared together never share one.
#[inline(always)]
fn recent_slot(object: u64) -> usize {
    (object / DESCRIPTOR_BYTES) as usize % RECENT
}

/// The state of a new object, from the descriptor at `addr`.
fn open(
    addr: u64,
    op: SyncOp,
    descriptor: impl FnOnce(u64) -> Option<[u8; DESCRIPTOR_BYTES as usize]>,
    harts: usize,
) -> Result<(State, u32), SyncError> {
    let bad = |why| SyncError::BadHandle { addr, op, why };
    if !addr.is_multiple_of(4) {
        return Err(bad("not aligned to 4 bytes"));
    }
    let d = descriptor(addr).ok_or_else(|| bad("outside memory"))?;
    let word = |i: usize| u32::from_le_bytes([d[4 * i], d[4 * i + 1], d[4 * i + 2], d[4 * i + 3]]);
    if word(0) != MAGIC {
        return Err(bad(
            "no synchronisation object there (declare one with SYNC_CHANNEL, SYNC_MUTEX, SYNC_BARRIER or SYNC_SEMAPHORE)",
        ));
    }
    let kind = Kind::from_code(word(1)).ok_or_else(|| bad("the descriptor's kind is unknown"))?;
    let param = word(2);
    let bad_object = |why: String| SyncError::BadObject { addr, kind, why };
    let state = match kind {
        Kind::Channel => {
            if param == 0 || param > MAX_CAPACITY {
                return Err(bad_object(format!(
                    "capacity {param}; give 1 to {MAX_CAPACITY}"
                )));
            }
            State::Channel {
                capacity: param as usize,
                queue: VecDeque::new(),
                senders: VecDeque::new(),
                receivers: VecDeque::new(),
            }
        }
        Kind::Mutex => State::Mutex {
            owner: None,
            waiters: VecDeque::new(),
        },
        Kind::Barrier => {
            let parties = if param == 0 { harts } else { param as usize };
            if parties > harts {
                return Err(bad_object(format!(
                    "{parties} parties, but the machine has {harts} harts"
                )));
            }
            State::Barrier {
                parties,
                waiting: Vec::new(),
            }
        }
        Kind::Semaphore => State::Semaphore {
            count: u64::from(param),
            waiters: VecDeque::new(),
        },
    };
    Ok((state, param))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn desc(kind: Kind, param: u32) -> impl FnOnce(u64) -> Option<[u8; 16]> {
        move |_| {
            let mut d = [0u8; 16];
            d[..4].copy_from_slice(&MAGIC.to_le_bytes());
            d[4..8].copy_from_slice(&(kind as u32).to_le_bytes());
            d[8..12].copy_from_slice(&param.to_le_bytes());
            Some(d)
        }
    }

    const CH: u64 = 0x1000;

    #[test]
    fn a_full_channel_blocks_the_sender_until_a_receive_makes_room() {
        let mut s = SyncState::new(2);
        let c = |s: &mut SyncState, h, op, v| s.call(h, 0, op, CH, v, desc(Kind::Channel, 1));
        assert_eq!(c(&mut s, 0, SyncOp::SEND, 7).unwrap().result, Some(0));
        let blocked = c(&mut s, 0, SyncOp::SEND, 8).unwrap();
        assert_eq!(blocked.result, None);
        assert!(!s.runnable(0));
        let got = c(&mut s, 1, SyncOp::RECV, 0).unwrap();
        assert_eq!(got.result, Some(7));
        assert_eq!(got.woken, vec![(0, 0)]);
        // The blocked sender's word went in behind.
        assert_eq!(c(&mut s, 1, SyncOp::RECV, 0).unwrap().result, Some(8));
    }

    #[test]
    fn a_send_hands_its_word_to_a_waiting_receiver() {
        let mut s = SyncState::new(2);
        let c = |s: &mut SyncState, h, op, v| s.call(h, 0, op, CH, v, desc(Kind::Channel, 4));
        assert_eq!(c(&mut s, 1, SyncOp::RECV, 0).unwrap().result, None);
        let step = c(&mut s, 0, SyncOp::SEND, 42).unwrap();
        assert_eq!(step.woken, vec![(1, 42)]);
    }

    #[test]
    fn unlock_passes_the_mutex_to_the_first_waiter() {
        let mut s = SyncState::new(3);
        let c = |s: &mut SyncState, h, op| s.call(h, 0, op, CH, 0, desc(Kind::Mutex, 0));
        c(&mut s, 0, SyncOp::LOCK).unwrap();
        c(&mut s, 1, SyncOp::LOCK).unwrap();
        c(&mut s, 2, SyncOp::LOCK).unwrap();
        assert_eq!(
            s.deadlock().blocked[0].1.to_string(),
            "locks mutex 0x1000 held by hart 0"
        );
        assert_eq!(c(&mut s, 0, SyncOp::UNLOCK).unwrap().woken, vec![(1, 0)]);
        assert_eq!(
            c(&mut s, 0, SyncOp::UNLOCK),
            Err(SyncError::NotOwner {
                addr: CH,
                owner: Some(1)
            })
        );
        assert_eq!(
            c(&mut s, 1, SyncOp::LOCK),
            Err(SyncError::Relock { addr: CH })
        );
    }

    #[test]
    fn the_last_hart_at_a_barrier_releases_the_rest_and_gets_one() {
        let mut s = SyncState::new(3);
        let c = |s: &mut SyncState, h| s.call(h, 0, SyncOp::BARRIER, CH, 0, desc(Kind::Barrier, 0));
        assert_eq!(c(&mut s, 2).unwrap().result, None);
        assert_eq!(c(&mut s, 0).unwrap().result, None);
        let last = c(&mut s, 1).unwrap();
        assert_eq!(last.result, Some(1));
        assert_eq!(last.woken, vec![(2, 0), (0, 0)]);
    }

    #[test]
    fn bad_handles_are_named() {
        let mut s = SyncState::new(1);
        let e = s
            .call(0, 0, SyncOp::SEND, 0x1002, 0, desc(Kind::Channel, 1))
            .unwrap_err();
        assert!(e.to_string().contains("not aligned"), "{e}");
        let e = s.call(0, 0, SyncOp::SEND, CH, 0, |_| None).unwrap_err();
        assert_eq!(e.to_string(), "bad handle 0x1000 for send: outside memory");
        let e = s
            .call(0, 0, SyncOp::SEND, CH, 0, |_| Some([0; 16]))
            .unwrap_err();
        assert!(e.to_string().contains("no synchronisation object"), "{e}");
        s.call(0, 0, SyncOp::LOCK, CH, 0, desc(Kind::Mutex, 0))
            .unwrap();
        let e = s
            .call(0, 0, SyncOp::RECV, CH, 0, desc(Kind::Mutex, 0))
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "bad handle 0x1000 for recv: it is a mutex, not a channel"
        );
        let e = s
            .call(0, 0, SyncOp::BARRIER, 0x2000, 0, desc(Kind::Barrier, 2))
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "bad barrier at 0x2000: 2 parties, but the machine has 1 harts"
        );
        let e = s.call(0, 0, SyncOp(99), 0, 0, |_| None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown synchronisation call 0x53590063 (a7)"
        );
    }

    #[test]
    fn a_deadlock_names_every_blocked_hart() {
        let mut s = SyncState::new(3);
        s.call(0, 0, SyncOp::RECV, CH, 0, desc(Kind::Channel, 1))
            .unwrap();
        s.call(1, 0, SyncOp::SEM_WAIT, 0x2000, 0, desc(Kind::Semaphore, 0))
            .unwrap();
        s.call(2, 0, SyncOp::HART_EXIT, 0, 0, |_| None).unwrap();
        assert!((0..3).all(|h| !s.runnable(h)));
        assert_eq!(
            s.deadlock().to_string(),
            "deadlock: hart 0 receives from empty channel 0x1000, \
             hart 1 waits on semaphore 0x2000 (exited: hart 2)"
        );
    }
}
