//! The recorded synchronisation calls as the unit reads them: every
//! hart's calls decoded once into flat records of 16 bytes — where the
//! call falls in the hart's busy cycles (once the hart's replay has
//! reached it), its place in the recorded run's order and its class (the
//! object and the call, numbered).
//!
//! A run of `table` makes 1.6 million calls: what the unit does per call
//! is what the replay costs, so whatever it would look up by handle is
//! numbered here first, and the records stay small — the unit reads them
//! once, in each hart's order. Each hart's events decode on their own
//! ([`decode_hart`]), on the thread that replays the hart, with the
//! classes numbered the hart's own way; [`number`] then gives the objects
//! and classes their numbers for the run (a few per hart, not per call).
//!
//! Whether a call met its object in the recorded order is a question of
//! its rank among its class's calls. The harts' calls are not merged to
//! rank them: while every class's calls come to the unit in increasing
//! places, each is met at its rank (every call is met in the end, so the
//! k-th met is the k-th placed), and the unit needs no ranks. Only when
//! a class's calls come out of order are they ranked ([`ranks`]) and the
//! calls ordered again, counting the calls met out of rank.

use retrace_sim::sync::SyncOp;
use retrace_trace::protocol::sync::{SyncEvents, DCACHE, END, SET_HZ};
use retrace_trace::{decode_varint, DcacheMeasurement, TraceError, Varints};
use rustc_hash::{FxHashMap, FxHashSet};

/// "None" for an object.
pub(super) const NONE: u32 = u32::MAX;

/// One recorded call, in 8 bytes: the unit reads 1.6 million of them on
/// `table`, and the memory they take is paid for in page faults and
/// cache misses. Its fields are differences from the hart's call before
/// it, so the records are read in the hart's order ([`Cursor`]): the gap
/// to it (instructions until the hart's replay reaches the call, then
/// busy cycles from the end of the call before it, [`HartCalls::reached`])
/// and its place after the one before. A call whose gap, place, trap or
/// class does not fit its field here (a gap of 2^20, a place 2^16 beyond
/// the hart's call before it, an `ecall` and trap of 2^12 cycles, 2^16
/// classes on one hart) is *wide*: its fields are then in
/// [`HartCalls::wide`] in full, found by its index.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Call {
    /// The gap (its low [`GAP_BITS`]) and the busy cycles its `ecall` and
    /// the trap take (above them; 0 until the call is reached).
    gap_trap: u32,
    /// Its place in the run after the place after the hart's call before
    /// it (the first hart's first call in place 0 has 0).
    place: u16,
    /// Its class among the hart's own ([`HartCalls::classes`]); [`WIDE`]:
    /// the call is wide.
    class: u16,
}

/// Bits of [`Call::gap_trap`] that hold the gap; the trap's are the rest.
const GAP_BITS: u32 = 20;

/// [`Call::class`] of a wide call.
const WIDE: u16 = u16::MAX;

impl Call {
    /// A call `gap` after the one before, `place` after it and of `class`,
    /// its trap taking `trap`: `None` if a field does not fit.
    #[inline(always)]
    fn fitting(gap: u64, trap: u32, place: u64, class: u32) -> Option<Call> {
        let fits = gap < 1 << GAP_BITS
            && trap < 1 << (32 - GAP_BITS)
            && place <= u64::from(u16::MAX)
            && class < u32::from(WIDE);
        fits.then_some(Call {
            gap_trap: gap as u32 | trap << GAP_BITS,
            place: place as u16,
            class: class as u16,
        })
    }

    #[inline(always)]
    fn gap(self) -> u64 {
        u64::from(self.gap_trap & ((1 << GAP_BITS) - 1))
    }

    #[inline(always)]
    fn trap(self) -> u32 {
        self.gap_trap >> GAP_BITS
    }
}

/// A call's fields in full ([`Cursor::next`]).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct FullCall {
    /// Until the hart's replay reaches the call, the instructions the hart
    /// executed before its `ecall` (what the replay finds it by); then its
    /// busy cycles before the `ecall` (the data-cache term included).
    pub before: u64,
    /// Its place among all harts' calls in the recorded run, from 0.
    pub place: u64,
    /// Busy cycles its `ecall` and the trap take.
    pub trap: u32,
    /// Its class among the hart's own ([`HartCalls::classes`]).
    pub class: u32,
}

impl FullCall {
    /// Busy cycles once its `ecall` and the trap are done.
    #[inline]
    pub fn after(&self) -> u64 {
        self.before + u64::from(self.trap)
    }
}

/// Where a reading of a hart's records stands: the call it reads next,
/// and what that call's fields are differences from — the end of the call
/// before it (busy cycles once its `ecall` and trap are done, or the
/// instructions before its `ecall` until the replay reaches it) and the
/// place after that call's.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Cursor {
    k: usize,
    end: u64,
    place: u64,
}

impl Cursor {
    /// The next call in full, and on to the one after it. A call not yet
    /// reached reads as its instructions.
    #[inline(always)]
    pub fn next(&mut self, calls: &HartCalls) -> FullCall {
        let (k, c) = (self.k, calls.calls[self.k]);
        let call = match c.class {
            WIDE => calls.wide_call(k),
            class => FullCall {
                before: self.end.wrapping_add(c.gap()),
                place: self.place + u64::from(c.place),
                trap: c.trap(),
                class: u32::from(class),
            },
        };
        *self = Cursor {
            k: k + 1,
            end: call.before.wrapping_add(u64::from(call.trap)),
            place: call.place + 1,
        };
        call
    }

    /// The next call's `before` ([`FullCall::before`]), if there is one.
    #[inline(always)]
    pub fn before(&self, calls: &HartCalls) -> Option<u64> {
        let c = calls.calls.get(self.k)?;
        Some(match c.class {
            WIDE => calls.wide_call(self.k).before,
            _ => self.end.wrapping_add(c.gap()),
        })
    }
}

/// One hart's recorded events.
#[derive(Default)]
pub(super) struct HartCalls {
    /// Its calls, in its order ([`Cursor`] reads them).
    pub calls: Vec<Call>,
    /// The wide calls in full, by the call's index ([`Call`]).
    wide: FxHashMap<usize, FullCall>,
    /// Where the calls pushed so far end (instructions and place), for
    /// the next one's differences.
    pushed: Cursor,
    /// The calls reached so far ([`HartCalls::reached`]) and where they
    /// end, for the next one's differences.
    reaching: Cursor,
    /// The values of its `set_hz` calls, in order.
    pub values: Vec<u64>,
    /// Instructions it executed in the whole run.
    pub instructions: u64,
    /// Address of its last instruction.
    pub last_pc: u64,
    /// Its own data cache's misses, per geometry measured.
    pub dcache: Vec<DcacheMeasurement>,
    /// Its objects in order of first use: handle and the descriptor's
    /// parameter.
    pub objects: Vec<(u64, u32)>,
    /// Its classes in order of first use: the object (among its own, or
    /// [`NONE`]) and the call.
    pub classes: Classes,
}

impl HartCalls {
    /// Wide call `k`.
    #[cold]
    #[inline(never)]
    fn wide_call(&self, k: usize) -> FullCall {
        self.wide[&k]
    }

    /// Its calls, in order and in full (a call not reached with its
    /// instructions as `before`).
    pub fn iter(&self) -> impl Iterator<Item = FullCall> + '_ {
        let mut at = Cursor::default();
        (0..self.calls.len()).map(move |_| at.next(self))
    }

    /// The instructions before the `ecall` of the next call to be reached
    /// ([`HartCalls::reached`]), if there is one, `prev_at` being those of
    /// the call before it (0 for the first).
    #[inline(always)]
    pub fn next_to_reach(&self, prev_at: u64) -> Option<u64> {
        let k = self.reaching.k;
        let c = self.calls.get(k)?;
        Some(match c.class {
            WIDE => self.wide_call(k).before,
            _ => prev_at.wrapping_add(c.gap()),
        })
    }

    /// A call after `at` instructions, in `place`, of `class`.
    #[inline]
    fn push(&mut self, at: u64, place: u64, class: u32) {
        let k = self.calls.len();
        let fitting = at
            .checked_sub(self.pushed.end)
            .zip(place.checked_sub(self.pushed.place))
            .and_then(|(gap, p)| Call::fitting(gap, 0, p, class));
        let c = match fitting {
            Some(c) => c,
            None => self.widen(k, at, 0, place, class),
        };
        self.calls.push(c);
        self.pushed = Cursor {
            k: k + 1,
            end: at,
            place: place + 1,
        };
    }

    /// Call `k`, with these fields in full, made wide: its record.
    #[cold]
    #[inline(never)]
    fn widen(&mut self, k: usize, before: u64, trap: u32, place: u64, class: u32) -> Call {
        let call = FullCall {
            before,
            place,
            trap,
            class,
        };
        self.wide.insert(k, call);
        Call {
            gap_trap: 0,
            place: 0,
            class: WIDE,
        }
    }

    /// The next call to be reached ([`HartCalls::next_to_reach`]), call
    /// `k`, was reached: `before`, its busy cycles before the `ecall`,
    /// which with the trap take `trap`. Its gap becomes the busy cycles
    /// since the end of the call before it.
    #[inline(always)]
    pub fn reached(&mut self, k: usize, before: u64, trap: u32) {
        debug_assert_eq!(k, self.reaching.k);
        let c = self.calls[k];
        let gap = before.wrapping_sub(self.reaching.end);
        if c.class != WIDE
            && before >= self.reaching.end
            && gap < 1 << GAP_BITS
            && trap < 1 << (32 - GAP_BITS)
        {
            self.calls[k].gap_trap = gap as u32 | trap << GAP_BITS;
            self.reaching = Cursor {
                k: k + 1,
                end: before + u64::from(trap),
                place: self.reaching.place + u64::from(c.place) + 1,
            };
        } else {
            self.reached_wide(k, before, trap);
        }
    }

    /// [`HartCalls::reached`] for a call that is wide or becomes so.
    #[cold]
    #[inline(never)]
    fn reached_wide(&mut self, k: usize, before: u64, trap: u32) {
        // Its place and class (its gap is still in instructions, which
        // this reading takes as cycles: its `before` is not used).
        let mut reaching = self.reaching;
        let call = reaching.next(self);
        self.calls[k] = self.widen(k, before, trap, call.place, call.class);
        self.reaching = Cursor {
            k: k + 1,
            end: before + u64::from(trap),
            place: call.place + 1,
        };
    }
}

/// Hart `hart`'s synchronisation events (`chunks`, their varints in
/// pieces, in order: one per segment of the trace), decoded. The common
/// stream — one-byte items, nothing out of the ordinary, each call within
/// one piece (the writer closes a segment between events, never inside
/// one) — is read by [`decode_plain`], a loop over each piece's bytes;
/// anything it does not take (a damaged stream among others) goes, run
/// together, to the protocol's checked decoder, which gives the same
/// records or says what is wrong.
pub(super) fn decode_hart<C: std::ops::Deref<Target = [u8]>>(
    hart: u16,
    chunks: &[C],
) -> Result<HartCalls, TraceError> {
    if let Some(out) = decode_plain(chunks) {
        return Ok(out);
    }
    // Rare (a damaged trace): the copy costs nothing that matters.
    let all: Vec<u8> = chunks.iter().flat_map(|c| c.iter().copied()).collect();
    decode_checked(hart, &all)
}

/// The next varint of `bytes` from `*i` (`None`: the bytes end inside it,
/// or it is longer than a varint may be).
#[inline(always)]
fn varint(bytes: &[u8], i: &mut usize) -> Option<u64> {
    let b = *bytes.get(*i)?;
    if b < 0x80 {
        *i += 1;
        return Some(u64::from(b));
    }
    let (v, n) = decode_varint(&bytes[*i..])?;
    *i += n;
    Some(v)
}

/// [`decode_checked`] for a stream that passes every check, in pieces
/// each of which ends with a call: the same records, or `None` where the
/// checked decoder might refuse the stream (or read it in any other way
/// than the protocol's plain one), or a call runs on into the next piece.
fn decode_plain<C: std::ops::Deref<Target = [u8]>>(chunks: &[C]) -> Option<HartCalls> {
    let mut out = HartCalls {
        calls: Vec::with_capacity(chunks.iter().map(|c| c.len()).sum::<usize>() / 4),
        ..HartCalls::default()
    };
    let (mut at, mut next_seq) = (0u64, 0u64);
    for (n, bytes) in chunks.iter().enumerate() {
        // Nothing may follow the end record.
        if decode_plain_piece(bytes, &mut out, &mut at, &mut next_seq)? {
            return (n + 1 == chunks.len()).then_some(out);
        }
    }
    None
}

/// The calls of one piece of [`decode_plain`]'s stream into `out`, on
/// from `*at` instructions and `*next_seq` places: `Some(true)` if the end
/// record ends it, `Some(false)` if a call does, `None` as
/// [`decode_plain`].
#[inline(always)]
fn decode_plain_piece(
    bytes: &[u8],
    out: &mut HartCalls,
    at_: &mut u64,
    next_seq_: &mut u64,
) -> Option<bool> {
    let (mut i, mut at, mut next_seq) = (0usize, *at_, *next_seq_);
    while i < bytes.len() {
        // The common call in four one-byte varints — the gap in
        // instructions, the call (not `set_hz`, whose value follows), the
        // gap in places and an object met before or none — read as one
        // word: the same record as below, with one bounds check and one
        // test of the bytes' high bits instead of four of each.
        if let Some(&[gap, op, place, k]) = bytes.get(i..i + 4) {
            let word = u32::from_le_bytes([gap, op, place, k]);
            let object = match k {
                0 => Some(NONE),
                1 => None,
                k => Some(u32::from(k - 2)).filter(|&o| (o as usize) < out.objects.len()),
            };
            if let (0, false, Some(object)) = (word & 0x8080_8080, op == SET_HZ, object) {
                at = at.checked_add(u64::from(gap))?;
                let seq = next_seq.checked_add(u64::from(place))?;
                next_seq = seq.checked_add(1)?;
                let class = out.classes.of(object, op);
                out.push(at, seq, class);
                i += 4;
                continue;
            }
        }
        at = at.checked_add(varint(bytes, &mut i)?)?;
        let code = varint(bytes, &mut i)?;
        if code == END {
            out.last_pc = varint(bytes, &mut i)?;
            out.instructions = at;
            return (i == bytes.len()).then_some(true);
        }
        if code == DCACHE {
            let mut field = || u32::try_from(varint(bytes, &mut i)?).ok();
            let (size, ways, line) = (field()?, field()?, field()?);
            let m = DcacheMeasurement {
                size,
                ways,
                line,
                accesses: varint(bytes, &mut i)?,
                misses: varint(bytes, &mut i)?,
            };
            if m.implausible().is_some() || m.accesses > at {
                return None;
            }
            out.dcache.push(m);
            continue;
        }
        let op = u8::try_from(code).ok()?;
        let seq = next_seq.checked_add(varint(bytes, &mut i)?)?;
        next_seq = seq.checked_add(1)?;
        let object = match varint(bytes, &mut i)? {
            0 => NONE,
            1 => {
                let handle = varint(bytes, &mut i)?;
                let param = u32::try_from(varint(bytes, &mut i)?).ok()?;
                out.objects.push((handle, param));
                out.objects.len() as u32 - 1
            }
            k => {
                let o = usize::try_from(k - 2)
                    .ok()
                    .filter(|&o| o < out.objects.len())?;
                o as u32
            }
        };
        if op == SET_HZ {
            out.values.push(varint(bytes, &mut i)?);
        }
        let class = out.classes.of(object, op);
        out.push(at, seq, class);
    }
    (*at_, *next_seq_) = (at, next_seq);
    Some(false)
}

/// Hart `hart`'s synchronisation events decoded by the protocol's checked
/// decoder.
fn decode_checked(hart: u16, bytes: &[u8]) -> Result<HartCalls, TraceError> {
    // Four bytes a call at least.
    let mut out = HartCalls {
        calls: Vec::with_capacity(bytes.len() / 4),
        ..HartCalls::default()
    };
    let rest = SyncEvents::new(hart, Varints(bytes)).each_call(|call, number| {
        let object = match (call.object, number) {
            (Some(object), Some(i)) => {
                if i == out.objects.len() {
                    out.objects.push(object);
                }
                i as u32
            }
            _ => NONE,
        };
        if call.op == SET_HZ {
            out.values.push(call.value);
        }
        let class = out.classes.of(object, call.op);
        out.push(call.at, call.seq, class);
    })?;
    out.instructions = rest.instructions;
    out.last_pc = rest.last_pc;
    out.dcache = rest.dcache;
    Ok(out)
}

/// The objects and classes of calls of the run, numbered.
pub(super) struct Numbers {
    /// Handle and the descriptor's parameter of each object (as the first
    /// hart to use it gave them).
    pub objects: Vec<(u64, u32)>,
    /// Per class: its object (or [`NONE`]) and its call.
    pub classes: Vec<(u32, SyncOp)>,
    /// Per hart, the numbers of its own classes.
    pub of_hart: Vec<Vec<u32>>,
}

/// Number the objects and classes of every hart's calls for the run.
pub(super) fn number(harts: &[HartCalls]) -> Numbers {
    let mut ids: FxHashMap<u64, u32> = FxHashMap::default();
    let (mut objects, mut classes) = (Vec::new(), Classes::default());
    let of_hart = harts
        .iter()
        .map(|hart| {
            let own: Vec<u32> = hart
                .objects
                .iter()
                .map(|&(handle, param)| {
                    *ids.entry(handle).or_insert_with(|| {
                        objects.push((handle, param));
                        objects.len() as u32 - 1
                    })
                })
                .collect();
            hart.classes
                .classes
                .iter()
                .map(|&(o, op)| {
                    let o = own.get(o as usize).copied().unwrap_or(NONE);
                    classes.of(o, op.0)
                })
                .collect()
        })
        .collect();
    Numbers {
        objects,
        classes: classes.classes,
        of_hart,
    }
}

/// Per hart, each call's rank among its class's calls in the recorded
/// run's order (`numbers`: the run's classes).
pub(super) fn ranks(harts: &[HartCalls], numbers: &Numbers) -> Vec<Vec<u64>> {
    let mut all: Vec<(u32, u64, u32, u32)> = harts
        .iter()
        .zip(&numbers.of_hart)
        .enumerate()
        .flat_map(|(h, (hart, of))| {
            hart.iter()
                .enumerate()
                .map(move |(k, c)| (of[c.class as usize], c.place, h as u32, k as u32))
        })
        .collect();
    all.sort_unstable();
    let mut out: Vec<Vec<u64>> = harts.iter().map(|h| vec![0; h.calls.len()]).collect();
    let (mut class, mut rank) = (NONE, 0u64);
    for (c, _, h, k) in all {
        if c != class {
            (class, rank) = (c, 0);
        }
        out[h as usize][k as usize] = rank;
        rank += 1;
    }
    out
}

/// The places of the calls met so far, to refuse two calls in one place
/// (the trace is damaged). A run's calls take the places from 0 on, one
/// each: those below the number of calls are bits, any others (a damaged
/// trace that lacks calls) a set.
pub(super) struct Places {
    seen: Vec<u64>,
    beyond: FxHashSet<u64>,
}

impl Places {
    /// For a run of `calls` calls.
    pub fn new(calls: usize) -> Places {
        Places {
            seen: vec![0; calls.div_ceil(64)],
            beyond: FxHashSet::default(),
        }
    }

    /// Hart `hart`'s call in `place` is met.
    #[inline]
    pub fn meet(&mut self, hart: usize, place: u64) -> Result<(), TraceError> {
        let bit = 1u64 << (place % 64);
        let fresh = match self.seen.get_mut((place / 64) as usize) {
            Some(w) => {
                let fresh = *w & bit == 0;
                *w |= bit;
                fresh
            }
            None => self.beyond.insert(place),
        };
        match fresh {
            true => Ok(()),
            false => Err(twice(hart, place)),
        }
    }
}

/// Hart `hart`'s call in `place`, where another call was met.
#[cold]
#[inline(never)]
fn twice(hart: usize, place: u64) -> TraceError {
    TraceError::Corrupt {
        offset: 0,
        what: format!(
            "hart {hart}'s synchronisation events: two calls in place {place} of the run's order"
        ),
    }
}

/// Calls numbered below this have their classes found in a flat table
/// (the API's calls are 0 to 9); any other in a list per object.
const FLAT_OPS: usize = 16;

/// Classes of calls, numbered in order of first appearance: a hart's own
/// (its objects numbered its way) or the run's.
#[derive(Default)]
pub(super) struct Classes {
    /// Per class: its object (or [`NONE`]) and its call.
    pub classes: Vec<(u32, SyncOp)>,
    /// Per object (and one more, first, for calls on none), per call below
    /// [`FLAT_OPS`]: its class plus one (0: none yet). One load a call.
    flat: Vec<u32>,
    /// Per object (likewise), its classes of the other calls.
    ids: Vec<Vec<(u8, u32)>>,
}

impl Classes {
    /// The class of call `op` on `object` (or on none), made if new.
    #[inline(always)]
    fn of(&mut self, object: u32, op: u8) -> u32 {
        let i = match object {
            NONE => 0,
            o => o as usize + 1,
        };
        // The common case, one load: a call below `FLAT_OPS` whose class
        // was made before.
        if usize::from(op) < FLAT_OPS {
            if let Some(&c) = self.flat.get(i * FLAT_OPS + usize::from(op)) {
                if c != 0 {
                    return c - 1;
                }
            }
        }
        self.of_rest(i, object, op)
    }

    /// [`Classes::of`] for a class yet to be made, or a call numbered
    /// `FLAT_OPS` or above; `i` is the object's slot.
    #[cold]
    #[inline(never)]
    fn of_rest(&mut self, i: usize, object: u32, op: u8) -> u32 {
        if usize::from(op) < FLAT_OPS {
            let slot = i * FLAT_OPS + usize::from(op);
            if self.flat.len() <= slot {
                self.flat.resize((i + 1) * FLAT_OPS, 0);
            }
            let c = self.classes.len() as u32;
            self.classes.push((object, SyncOp(op)));
            self.flat[slot] = c + 1;
            return c;
        }
        if self.ids.len() <= i {
            self.ids.resize(i + 1, Vec::new());
        }
        if let Some(&(_, c)) = self.ids[i].iter().find(|&&(o, _)| o == op) {
            return c;
        }
        let c = self.classes.len() as u32;
        self.classes.push((object, SyncOp(op)));
        self.ids[i].push((op, c));
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use retrace_trace::protocol::sync::{SyncCall, SyncEncoder};

    /// Hart events spelled as varints, each call `(at, op, place, object)`.
    fn events(calls: &[(u64, u8, u64, Option<u64>)]) -> Vec<u8> {
        let mut e = SyncEncoder::default();
        let mut items: Vec<u64> = calls
            .iter()
            .flat_map(|&(at, op, seq, object)| {
                e.call(&SyncCall {
                    at,
                    op,
                    seq,
                    object: object.map(|o| (o, 1)),
                    value: 0,
                })
            })
            .collect();
        let last = calls.last().map_or(0, |c| c.0 + 1);
        items.extend(e.end(last, 0x8000_0000));
        leb128(items)
    }

    /// Items as the trace spells them: LEB128.
    fn leb128(items: Vec<u64>) -> Vec<u8> {
        let mut bytes = Vec::new();
        for mut v in items {
            while v >= 0x80 {
                bytes.push(v as u8 | 0x80);
                v >>= 7;
            }
            bytes.push(v as u8);
        }
        bytes
    }

    #[test]
    fn each_call_is_ranked_in_its_class_by_its_place_in_the_run() {
        // Sends (2) and receives (3) on one channel, and a call on none.
        let harts = [
            events(&[(5, 2, 0, Some(0x100)), (9, 2, 3, Some(0x100))]),
            events(&[
                (4, 3, 1, Some(0x100)),
                (6, 0, 2, None),
                (8, 3, 4, Some(0x100)),
            ]),
        ];
        let harts: Vec<HartCalls> = harts
            .iter()
            .enumerate()
            .map(|(h, e)| decode_hart(h as u16, &[&e[..]]).unwrap())
            .collect();
        let numbers = number(&harts);
        let ranks = ranks(&harts, &numbers);
        let got = |h: usize| -> Vec<(u64, u64, u32, u64)> {
            harts[h]
                .iter()
                .zip(&ranks[h])
                .map(|(c, &r)| (c.before, c.place, numbers.of_hart[h][c.class as usize], r))
                .collect()
        };
        let (send, recv, harts_call) = (0, 1, 2);
        assert_eq!(got(0), [(5, 0, send, 0), (9, 3, send, 1)]);
        assert_eq!(
            got(1),
            [(4, 1, recv, 0), (6, 2, harts_call, 0), (8, 4, recv, 1)]
        );
        assert_eq!(numbers.objects, [(0x100, 1)]);
        assert_eq!(numbers.classes[recv as usize], (0, SyncOp(3)));
        assert_eq!(numbers.classes[harts_call as usize], (NONE, SyncOp(0)));
    }

    /// Everything a hart's decoded events hold, to compare two decodings.
    fn summary(h: &HartCalls) -> String {
        let calls: Vec<_> = h
            .iter()
            .map(|c| (c.before, c.place, c.trap, c.class))
            .collect();
        format!(
            "{calls:?} {:?} {} {} {:?} {:?} {:?}",
            h.values, h.instructions, h.last_pc, h.dcache, h.objects, h.classes.classes
        )
    }

    #[test]
    fn the_plain_decoder_reads_what_the_checked_one_reads_and_leaves_it_the_rest() {
        // Objects new and known, a call on none, a set_hz with its value,
        // long gaps and counts (varints of several bytes), a data-cache
        // measurement before the end.
        let calls = [
            (5, 2, 0, Some(0x100), 0),
            (900, SET_HZ, 3, None, 250_000_000),
            (901, 3, 70_000, Some(0x200), 0),
            (1 << 40, 2, 70_001, Some(0x100), 0),
            (1 << 40, 20, 70_002, Some(0x200), 0),
        ];
        let mut e = SyncEncoder::default();
        let mut items: Vec<u64> = calls
            .iter()
            .flat_map(|&(at, op, seq, object, value)| {
                e.call(&SyncCall {
                    at,
                    op,
                    seq,
                    object: object.map(|o| (o, 4)),
                    value,
                })
            })
            .collect();
        items.extend(e.dcache(&DcacheMeasurement {
            size: 16384,
            ways: 4,
            line: 64,
            accesses: 40,
            misses: 3,
        }));
        items.extend(e.end((1 << 40) + 7, 0x8000_0000));
        let bytes = leb128(items);
        let plain = decode_plain(&[&bytes[..]]).expect("a plain stream");
        let checked = decode_checked(3, &bytes).unwrap();
        assert_eq!(summary(&plain), summary(&checked));
        assert_eq!(plain.classes.classes.len(), 4);
        // Damaged: cut anywhere, or with a byte after the end. The plain
        // decoder leaves each to the checked one, which refuses it.
        for cut in 0..bytes.len() {
            assert!(decode_plain(&[&bytes[..cut]]).is_none());
            assert!(decode_hart(3, &[&bytes[..cut]]).is_err());
        }
        let mut longer = bytes.clone();
        longer.push(1);
        assert!(decode_plain(&[&longer[..]]).is_none());
        assert!(decode_hart(3, &[&longer[..]]).is_err());
        // Mostly calls of one byte a field (read four bytes at a time)
        // among others: objects new and known, none, `set_hz`, calls
        // beyond the flat table's, gaps of one byte and of more.
        let mut e = SyncEncoder::default();
        let (mut at, mut seq, mut items) = (0u64, 0u64, Vec::new());
        for i in 0..400u64 {
            at += [1, 7, 127, 128, 300][(i % 5) as usize] * u64::from(i % 7 != 3);
            seq += 1 + [0, 0, 126, 127][(i % 4) as usize];
            let op = [2u8, 3, SET_HZ, 20, 1][(i % 11 % 5) as usize];
            let object = [Some(0x100), Some(0x200), None, Some(0x300 + i)][(i % 13 % 4) as usize];
            items.extend(e.call(&SyncCall {
                at,
                op,
                seq,
                object: object.map(|o| (o, 4)),
                value: 100_000_000 + i,
            }));
        }
        items.extend(e.end(at + 1, 0x8000_0000));
        let bytes = leb128(items);
        let plain = decode_plain(&[&bytes[..]]).expect("a plain stream");
        assert_eq!(
            summary(&plain),
            summary(&decode_checked(3, &bytes).unwrap())
        );
        for cut in 0..bytes.len() {
            assert!(decode_plain(&[&bytes[..cut]]).is_none());
        }
    }

    #[test]
    fn a_stream_in_pieces_reads_as_the_whole_one() {
        // Calls of every kind (as above), in pieces of 1 to 40 calls, the
        // end record in the last, as one segment after another holds them.
        let mut e = SyncEncoder::default();
        let (mut at, mut seq, mut calls) = (0u64, 0u64, Vec::new());
        for i in 0..300u64 {
            at += [1, 7, 127, 128, 300][(i % 5) as usize] * u64::from(i % 7 != 3);
            seq += 1 + [0, 0, 126, 127][(i % 4) as usize];
            let op = [2u8, 3, SET_HZ, 20, 1][(i % 11 % 5) as usize];
            let object = [Some(0x100), Some(0x200), None, Some(0x300 + i)][(i % 13 % 4) as usize];
            calls.push(leb128(e.call(&SyncCall {
                at,
                op,
                seq,
                object: object.map(|o| (o, 4)),
                value: 100_000_000 + i,
            })));
        }
        calls.push(leb128(e.end(at + 1, 0x8000_0000).to_vec()));
        let whole = calls.concat();
        let expected = summary(&decode_plain(&[&whole[..]]).expect("a plain stream"));
        let (mut pieces, mut left) = (Vec::new(), &calls[..]);
        while !left.is_empty() {
            let n = (pieces.len() * 7 % 40 + 1).min(left.len());
            pieces.push(left[..n].concat());
            left = &left[n..];
        }
        assert!(pieces.len() > 10);
        let plain = decode_plain(&pieces).expect("pieces that end with calls");
        assert_eq!(summary(&plain), expected);
        // Cut inside a call (or with an empty piece after the end): the
        // plain decoder leaves it to the checked one, which reads the
        // pieces run together.
        for cut in 1..whole.len() {
            let pieces = [&whole[..cut], &whole[cut..]];
            let ends_a_call = decode_plain(&pieces).is_some();
            let boundary = calls
                .iter()
                .scan(0, |end, c| {
                    *end += c.len();
                    Some(*end)
                })
                .any(|end| end == cut);
            assert_eq!(ends_a_call, boundary, "cut at {cut}");
            assert_eq!(summary(&decode_hart(3, &pieces).unwrap()), expected);
        }
        let mut after_end = pieces.clone();
        after_end.push(vec![1]);
        assert!(decode_plain(&after_end).is_none());
        assert!(decode_hart(3, &after_end).is_err());
    }

    #[test]
    fn calls_whose_fields_do_not_fit_keep_them_whole() {
        let mut hart = HartCalls::default();
        // Fits; a place 2^40 on; a class beyond 2^16; fits, then its trap
        // does not; a gap of 2^20 instructions, then fits; fits, then its
        // busy gap does not; fits, then its busy cycles are before the end
        // of the call before it; fits both times.
        let pushed = [
            (10, 7, 3),
            (20, 1 << 40, 4),
            (30, (1 << 40) + 1, 70_000),
            (40, (1 << 40) + 2, 5),
            (40 + (1 << 20), (1 << 40) + 3, 6),
            (41 + (1 << 20), (1 << 40) + 4, 6),
            (42 + (1 << 20), (1 << 40) + 5, 6),
            (43 + (1 << 20), (1 << 40) + 6, 6),
        ];
        let reached = [
            (100, 12),
            (200, 13),
            (300, 1 << 20),
            (400 + (1 << 20), 1 << 12),
            (500 + (1 << 21), 14),
            (600 + (1 << 22), 15),
            (598 + (1 << 22), 16),
            (700 + (1 << 22), (1 << 12) - 1),
        ];
        for &(at, place, class) in &pushed {
            hart.push(at, place, class);
        }
        let mut prev_at = 0;
        for (k, (&(b, t), &(at, _, _))) in reached.iter().zip(&pushed).enumerate() {
            assert_eq!(hart.next_to_reach(prev_at), Some(at), "call {k}");
            hart.reached(k, b, t);
            prev_at = at;
        }
        assert_eq!(hart.next_to_reach(prev_at), None);
        let got: Vec<(u64, u64, u32, u32, u64)> = hart
            .iter()
            .map(|c| (c.before, c.place, c.trap, c.class, c.after()))
            .collect();
        let want: Vec<(u64, u64, u32, u32, u64)> = reached
            .iter()
            .zip(&pushed)
            .map(|(&(b, t), &(_, p, c))| (b, p, t, c, b + u64::from(t)))
            .collect();
        assert_eq!(got, want);
        assert_eq!(hart.wide.len(), 6);
    }

    #[test]
    fn the_records_read_back_what_was_pushed_and_reached() {
        // Random calls, some fields small and some not, a prefix of them
        // reached: every call reads back in full (those not reached with
        // their place and class), and the replay finds each by its
        // instructions.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut draw = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        for _ in 0..300 {
            let n = draw(40) as usize;
            let (mut at, mut place, mut busy) = (0u64, 0u64, 0u64);
            let mut calls = Vec::new();
            for _ in 0..n {
                let big = |v: u64, d: &mut dyn FnMut(u64) -> u64| match d(6) {
                    0 => v << 18,
                    1 => v << 40,
                    _ => v,
                };
                at += big(draw(90), &mut draw);
                place += big(draw(12), &mut draw);
                let class = big(draw(9), &mut draw) as u32 % 100_000;
                let trap = big(draw(40), &mut draw) as u32 % (1 << 24);
                // Now and then before the call before it ends.
                busy = match draw(8) {
                    0 => busy.saturating_sub(draw(5)),
                    _ => busy + big(draw(300), &mut draw),
                };
                calls.push((at, place, class, busy, trap));
                busy += u64::from(trap);
                place += 1;
            }
            let mut hart = HartCalls::default();
            for &(at, place, class, _, _) in &calls {
                hart.push(at, place, class);
            }
            let reach = draw(n as u64 + 1) as usize;
            let mut prev_at = 0;
            for (k, &(at, _, _, before, trap)) in calls[..reach].iter().enumerate() {
                assert_eq!(hart.next_to_reach(prev_at), Some(at));
                hart.reached(k, before, trap);
                prev_at = at;
            }
            if reach < n {
                assert_eq!(hart.next_to_reach(prev_at), Some(calls[reach].0));
            }
            let got: Vec<FullCall> = hart.iter().collect();
            assert_eq!(got.len(), n);
            for (k, (c, &(_, place, class, before, trap))) in got.iter().zip(&calls).enumerate() {
                assert_eq!((c.place, c.class), (place, class), "call {k}");
                if k < reach {
                    assert_eq!((c.before, c.trap), (before, trap), "call {k}");
                }
            }
            // The unit's reading: a cursor, and the next call's `before`.
            let mut cursor = Cursor::default();
            for &(_, _, _, before, _) in &calls[..reach] {
                assert_eq!(cursor.before(&hart), Some(before));
                assert_eq!(cursor.next(&hart).before, before);
            }
        }
    }

    #[test]
    fn two_calls_in_one_place_are_refused() {
        let mut places = Places::new(3);
        places.meet(0, 1).unwrap();
        places.meet(1, 0).unwrap();
        let e = places.meet(1, 1).err().unwrap().to_string();
        assert!(e.contains("two calls in place 1"), "{e}");
        // Beyond the run's calls (a damaged trace lacks some): still one
        // call a place.
        places.meet(0, 1000).unwrap();
        let e = places.meet(1, 1000).err().unwrap().to_string();
        assert!(e.contains("two calls in place 1000"), "{e}");
    }
}
