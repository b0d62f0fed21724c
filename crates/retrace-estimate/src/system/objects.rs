//! The synchronisation objects as the unit simulates them, two ways.
//!
//! [`SyncState`] is the reference: the engine's own rules, every error
//! they give and the description of a deadlock. [`Flat`] is the unit's
//! fast path: the same rules for the calls a sound recording makes, over
//! flat per-object states — a count, a limit, a holder and the waiting
//! harts in first-come lists threaded through one word per hart (a hart
//! waits on one object at a time) — so a call is a few loads and stores,
//! not a walk through the engine's general state with its queues of
//! words. Anything else (a call the rules refuse, an object whose
//! descriptor they would refuse, a call on no object that needs one,
//! harts left waiting at the end) it does not decide: it *gives up*, and
//! the unit orders the calls again with the reference, which then gives
//! the result or the error. Until it gives up, the two agree call for
//! call (`the_flat_objects_do_what_the_engine_s_rules_do` below checks
//! it on random calls).
//!
//! Neither keeps the words sent through channels: the unit needs only
//! whether a call completes and whose calls it completes, not what they
//! return (the recording fixes that).

use super::calls::NONE;
use retrace_sim::sync::{Kind, SyncError, SyncOp, SyncState, HZ_RANGE, MAX_CAPACITY};

/// Hart `h`'s call `op` (on object `o`, [`NONE`] for none; `number`, its
/// state's number for the reference; `handle` and `param`, its descriptor)
/// with `value`: whether it completed, the harts whose calls it completed
/// put in `woken` in order (cleared first). `Err(Some(e))`: the rules
/// refuse it; `Err(None)`: [`Flat`] gives up.
pub(super) trait Objects {
    /// For `harts` harts, no objects yet.
    fn new(harts: usize) -> Self;

    #[allow(clippy::too_many_arguments)]
    fn call(
        &mut self,
        h: usize,
        op: SyncOp,
        o: u32,
        number: u32,
        handle: u64,
        param: u32,
        value: u64,
        woken: &mut Vec<(usize, u64)>,
    ) -> Result<bool, Option<SyncError>>;

    /// With harts left waiting: why none can go on (`None`: ask the
    /// reference).
    fn deadlock(&self) -> Option<String>;
}

impl Objects for SyncState {
    fn new(harts: usize) -> Self {
        SyncState::new(harts)
    }

    #[inline]
    fn call(
        &mut self,
        h: usize,
        op: SyncOp,
        _o: u32,
        number: u32,
        handle: u64,
        param: u32,
        value: u64,
        woken: &mut Vec<(usize, u64)>,
    ) -> Result<bool, Option<SyncError>> {
        self.replay_numbered_call_into(h, op, number, handle, param, value, woken)
            .map_err(Some)
    }

    fn deadlock(&self) -> Option<String> {
        Some(SyncState::deadlock(self).to_string())
    }
}

/// No hart: the end of a list of waiting harts, a mutex nobody holds.
const NOBODY: u32 = u32::MAX;

/// An object not yet opened (its first call opens it).
const UNOPENED: u8 = 0;

/// One object's state.
#[derive(Clone, Copy)]
struct Obj {
    /// Its [`Kind`] as a number, or [`UNOPENED`].
    kind: u8,
    /// A channel's capacity, a barrier's parties.
    limit: u64,
    /// A channel's words queued, a semaphore's count, a barrier's
    /// arrivals.
    count: u64,
    /// A mutex's holder, or [`NOBODY`].
    owner: u32,
    /// Lists of waiting harts, first and last: `[0]` a channel's receivers
    /// and every other object's waiters, `[1]` a channel's senders.
    head: [u32; 2],
    tail: [u32; 2],
}

const FRESH: Obj = Obj {
    kind: UNOPENED,
    limit: 0,
    count: 0,
    owner: NOBODY,
    head: [NOBODY; 2],
    tail: [NOBODY; 2],
};

/// The unit's objects, flat (see the module documentation).
pub(super) struct Flat {
    /// By the object's number.
    objects: Vec<Obj>,
    /// Per hart waiting in a list, the hart after it.
    next: Vec<u32>,
    harts: usize,
}

impl Flat {
    #[inline(always)]
    fn push(next: &mut [u32], obj: &mut Obj, q: usize, h: usize) {
        next[h] = NOBODY;
        match obj.tail[q] {
            NOBODY => obj.head[q] = h as u32,
            t => next[t as usize] = h as u32,
        }
        obj.tail[q] = h as u32;
    }

    #[inline(always)]
    fn pop(next: &[u32], obj: &mut Obj, q: usize) -> Option<usize> {
        match obj.head[q] {
            NOBODY => None,
            h => {
                obj.head[q] = next[h as usize];
                if obj.head[q] == NOBODY {
                    obj.tail[q] = NOBODY;
                }
                Some(h as usize)
            }
        }
    }

    /// Object `o`'s state opened by call `op` of `kind` at `handle`, as
    /// the engine's rules open it; `None` where they would refuse it.
    #[cold]
    #[inline(never)]
    fn open(&mut self, o: usize, kind: Kind, handle: u64, param: u32) -> Option<()> {
        if !handle.is_multiple_of(4) {
            return None;
        }
        if self.objects.len() <= o {
            self.objects.resize(o + 1, FRESH);
        }
        let obj = &mut self.objects[o];
        match kind {
            Kind::Channel => {
                if param == 0 || param > MAX_CAPACITY {
                    return None;
                }
                obj.limit = u64::from(param);
            }
            Kind::Barrier => {
                let parties = if param == 0 {
                    self.harts as u64
                } else {
                    u64::from(param)
                };
                if parties > self.harts as u64 {
                    return None;
                }
                obj.limit = parties;
            }
            Kind::Semaphore => obj.count = u64::from(param),
            Kind::Mutex => {}
        }
        obj.kind = kind as u8;
        Some(())
    }
}

impl Objects for Flat {
    fn new(harts: usize) -> Self {
        Flat {
            objects: Vec::new(),
            next: vec![NOBODY; harts],
            harts,
        }
    }

    #[inline(always)]
    fn call(
        &mut self,
        h: usize,
        op: SyncOp,
        o: u32,
        _number: u32,
        handle: u64,
        param: u32,
        value: u64,
        woken: &mut Vec<(usize, u64)>,
    ) -> Result<bool, Option<SyncError>> {
        woken.clear();
        let Some(kind) = op.object_kind() else {
            return match op {
                SyncOp::HARTS => Ok(true),
                SyncOp::HART_EXIT => Ok(false),
                SyncOp::SET_HZ if HZ_RANGE.contains(&value) => Ok(true),
                _ => Err(None),
            };
        };
        if o == NONE {
            return Err(None);
        }
        let o = o as usize;
        if self.objects.get(o).is_none_or(|x| x.kind == UNOPENED) {
            self.open(o, kind, handle, param).ok_or(None)?;
        }
        let next = &mut self.next;
        let obj = &mut self.objects[o];
        if obj.kind != kind as u8 {
            return Err(None);
        }
        let done = match op {
            SyncOp::SEND => {
                if let Some(r) = Flat::pop(next, obj, 0) {
                    woken.push((r, 0));
                    true
                } else if obj.count < obj.limit {
                    obj.count += 1;
                    true
                } else {
                    Flat::push(next, obj, 1, h);
                    false
                }
            }
            SyncOp::RECV => {
                if obj.count > 0 {
                    // Room now: the first waiting sender's word goes in.
                    match Flat::pop(next, obj, 1) {
                        Some(s) => woken.push((s, 0)),
                        None => obj.count -= 1,
                    }
                    true
                } else {
                    Flat::push(next, obj, 0, h);
                    false
                }
            }
            SyncOp::LOCK => match obj.owner {
                NOBODY => {
                    obj.owner = h as u32;
                    true
                }
                o if o as usize == h => return Err(None),
                _ => {
                    Flat::push(next, obj, 0, h);
                    false
                }
            },
            SyncOp::UNLOCK => {
                if obj.owner as usize != h {
                    return Err(None);
                }
                // The lock passes straight to the first waiter.
                obj.owner = match Flat::pop(next, obj, 0) {
                    Some(w) => {
                        woken.push((w, 0));
                        w as u32
                    }
                    None => NOBODY,
                };
                true
            }
            SyncOp::BARRIER => {
                if obj.count + 1 >= obj.limit {
                    while let Some(w) = Flat::pop(next, obj, 0) {
                        woken.push((w, 0));
                    }
                    obj.count = 0;
                    true
                } else {
                    Flat::push(next, obj, 0, h);
                    obj.count += 1;
                    false
                }
            }
            SyncOp::SEM_WAIT => {
                if obj.count > 0 {
                    obj.count -= 1;
                    true
                } else {
                    Flat::push(next, obj, 0, h);
                    false
                }
            }
            SyncOp::SEM_POST => {
                match Flat::pop(next, obj, 0) {
                    Some(w) => woken.push((w, 0)),
                    None => obj.count = obj.count.saturating_add(1),
                }
                true
            }
            _ => return Err(None),
        };
        Ok(done)
    }

    fn deadlock(&self) -> Option<String> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small generator of numbers, the same every run.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    #[test]
    fn the_flat_objects_do_what_the_engine_s_rules_do() {
        // Objects: (handle, param, kind). Some descriptors the rules
        // refuse (capacity 0, more parties than harts, a handle not
        // aligned), and calls of every kind on every object, so that
        // wrong kinds, relocks and unlocks by others happen too.
        let objects: [(u64, u32); 8] = [
            (0x1000, 1),
            (0x1010, 3),
            (0x1020, 0),
            (0x1030, 2),
            (0x1040, 0),
            (0x1050, 9),
            (0x1062, 1),
            (0x1070, 1),
        ];
        let ops = [
            SyncOp::SEND,
            SyncOp::RECV,
            SyncOp::LOCK,
            SyncOp::UNLOCK,
            SyncOp::BARRIER,
            SyncOp::SEM_WAIT,
            SyncOp::SEM_POST,
            SyncOp::HARTS,
            SyncOp::SET_HZ,
            SyncOp::HART_EXIT,
            SyncOp(42),
        ];
        let (mut agreed, mut gave_up) = (0u64, 0u64);
        for seed in 1..4000u64 {
            let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
            let harts = 2 + rng.below(4) as usize;
            // Each object is used with one kind mostly.
            let kinds: Vec<usize> = (0..objects.len()).map(|_| rng.below(4) as usize).collect();
            let (mut flat, mut reference) = (Flat::new(harts), SyncState::new(harts));
            let mut blocked = vec![false; harts];
            let (mut wf, mut wr) = (Vec::new(), Vec::new());
            for _ in 0..300 {
                let runnable: Vec<usize> = (0..harts).filter(|&h| !blocked[h]).collect();
                if runnable.is_empty() {
                    break;
                }
                let h = runnable[rng.below(runnable.len() as u64) as usize];
                let o = rng.below(objects.len() as u64) as usize;
                let (o, (handle, param)) = match rng.below(32) {
                    0 => (NONE, (0, 0)),
                    _ => (o as u32, objects[o]),
                };
                let op = match (o, rng.below(16)) {
                    (NONE, _) | (_, 0) => ops[rng.below(ops.len() as u64) as usize],
                    (o, _) => {
                        // The calls of the object's kind.
                        let pairs = [
                            [SyncOp::SEND, SyncOp::RECV],
                            [SyncOp::LOCK, SyncOp::UNLOCK],
                            [SyncOp::BARRIER, SyncOp::BARRIER],
                            [SyncOp::SEM_WAIT, SyncOp::SEM_POST],
                        ];
                        pairs[kinds[o as usize]][rng.below(2) as usize]
                    }
                };
                let value = match rng.below(4) {
                    0 => 10,
                    _ => 100_000_000,
                };
                // The reference's number for a call on no object: its own.
                let number = if o == NONE { objects.len() as u32 } else { o };
                let f = flat.call(h, op, o, number, handle, param, value, &mut wf);
                let r = Objects::call(
                    &mut reference,
                    h,
                    op,
                    o,
                    number,
                    handle,
                    param,
                    value,
                    &mut wr,
                );
                match f {
                    Ok(done) => {
                        agreed += 1;
                        assert_eq!(r, Ok(done), "seed {seed}: hart {h} {op} on {o}");
                        let ids = |w: &[(usize, u64)]| w.iter().map(|x| x.0).collect::<Vec<_>>();
                        assert_eq!(ids(&wf), ids(&wr), "seed {seed}: hart {h} {op} on {o}");
                        if !done {
                            blocked[h] = true;
                        }
                        for &(w, _) in &wf {
                            blocked[w] = false;
                        }
                        if op == SyncOp::HART_EXIT {
                            blocked[h] = true;
                        }
                    }
                    Err(e) => {
                        assert!(e.is_none());
                        gave_up += 1;
                        // It gives up where the rules refuse the call (and
                        // change nothing: the run goes on), or on a call on
                        // no object that needs one (the run ends).
                        if r.is_ok() {
                            assert!(
                                o == NONE && op.object_kind().is_some(),
                                "seed {seed}: hart {h} {op} on {o}: the rules give {r:?}"
                            );
                            break;
                        }
                    }
                }
            }
        }
        // The test reached both outcomes many times.
        assert!(
            agreed > 20_000 && gave_up > 1_000,
            "{agreed} calls agreed, {gave_up} given up"
        );
    }
}
