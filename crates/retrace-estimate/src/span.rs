//! Memoised stretches of the replay ("spans"): US patent 8,448,140's memo taken from
//! one partial program to a whole stretch of the walk.
//!
//! At `fast` fidelity everything the replay does from a node of the
//! estimator's graph — a partial program entered with a given pipeline
//! signature — is decided by the history it then reads: the branch bits,
//! the indirect-target records (a site's target table only grows, so a
//! record names the same target forever), and the return stack, as long as
//! the stretch pops only what it pushed itself and meets no escape. So the
//! outcome of a stretch (cycles, instructions, memory operations,
//! mispredictions, the node it ends before, the return points it leaves
//! pushed, and — when the estimator notes them — the `ecall`s inside it
//! with their cycles, which the replay of several harts meets its harts'
//! synchronisation calls at) is a function of
//!
//! > (start node, the next records of known targets in the indirect
//! > stream, the branch bits it reads),
//!
//! and is recorded the first time, looked up every other time. A stretch
//! ends before the branch bit or indirect record that its windows (32 bits,
//! 16 record bytes) do not hold, before a return below its own calls, before
//! an escape or a new indirect target, before a partial program that a trap
//! or a code event cuts (or that one follows), and before the run's last
//! partial program — all of which the step-by-step walker then handles. A
//! code event changes the graph the stretches ran through: the memo is
//! emptied at each one. The key does not
//! hold the traps stream: a stretch is replayed only when no trap is due
//! before its end, and then the stream plays no part in it. The windows
//! never reach past the loaded trace segment; because a segment closes only
//! before a branch bit, every record a stretch reads is in it.
//!
//! The replay of several harts shares one memo between the harts on one
//! core ([`Spans::shared`]): a record names a target by its number in the
//! hart's own table of the site's targets, so a stretch that read records
//! keeps the targets they named and serves another hart once that hart's
//! tables are found to name the same.
//!
//! Programs whose control flow repeats (an interpreter running a loop of
//! bytecodes, any loop nest) replay a whole stretch — tens to hundreds of
//! partial programs — per lookup. Where it does not repeat (branches on
//! random data) 32-bit windows keep missing: after [`TRIAL`] tries with
//! fewer than [`MIN_HIT_PERCENT`] percent hits a start node halves its bit
//! window (32, 16, 8 bits), and below 8 bits it stops starting stretches
//! and the walker steps through it: narrower windows repeat soon whatever
//! the data, but their stretches are too short to be worth a lookup, and
//! every miss before the node gives up records a stretch, which costs more
//! than stepping through it.
//!
//! The return stack's bound does not change that. A stretch never holds
//! more than the bound of its own return points (it ends before a call
//! that would push one more), so at the bound its calls drop only entries
//! that were on the stack before it — which it never looks at — and how
//! many depends only on the depth it starts at and the deepest it goes:
//! applying a stretch drops those and then pushes what it left
//! ([`ReturnStack::apply_stretch`](retrace_trace::protocol::ReturnStack::apply_stretch)),
//! exactly what the step-by-step walk does at any depth, near the bound
//! or not.
//!
//! The result is the step-by-step estimate exactly; `tests/exact.rs`
//! checks it against the cycle-level engine and against the step-by-step
//! replay on every example program.

use crate::estimator::{Counters, Ecall, Estimator, QuickExit, NO_NODE};
use crate::machine::TraceHistory;
use crate::walk::{Exit, History, Leave, ReplayError, Visit, WalkStats, Walker};
use retrace_program::{PpId, PpTable};
use retrace_trace::decode_varint;
use retrace_trace::protocol::{known_target_len, one_byte_index};
use rustc_hash::FxHashMap;
use std::io::Read;

/// Bytes of the indirect stream a stretch may read (its key holds them).
const INDIRECT_WINDOW: usize = 16;
/// Partial programs in one stretch at most.
pub(crate) const MAX_PPS: u32 = 4096;
/// A stretch shorter than this is not worth a lookup.
pub(crate) const MIN_PPS: u32 = 3;
/// Tries before a start node's hit rate is judged. Short: a try that
/// misses walks and records a whole stretch, which costs two to four times
/// stepping through it, so where stretches do not repeat (random data
/// deciding the branches) every try until the node gives up is a loss;
/// where they do repeat, 64 tries find it as well as 1024 did.
pub const TRIAL: u32 = 64;
/// A start node keeps starting stretches while at least this share of its
/// tries hit.
pub const MIN_HIT_PERCENT: u32 = 25;
/// Stretches remembered at most (about 150 bytes each with their key).
const MAX_SPANS: usize = 1 << 19;
/// Branch bits a stretch may read at first (its key holds them); halved
/// per start node while its stretches do not repeat.
pub(crate) const BIT_WINDOW: u32 = 32;
/// The smallest bit window tried (at `control`, `crate::control_span`).
pub(crate) const MIN_BIT_WINDOW: u32 = 4;
/// The smallest bit window `fast` tries. A stretch of fewer than 8 branch
/// bits covers a handful of partial programs, and looking it up (the key's
/// windows, a hash probe, the checks before applying it) costs about as
/// much as stepping through them: below 8 bits a node steps.
pub(crate) const FAST_MIN_BIT_WINDOW: u32 = 8;
/// Tries after which a `fast` start node that has found nothing at its
/// window narrows it, without waiting for the whole [`TRIAL`]. A node
/// whose futures repeat among *K* patterns misses its first *K* tries and
/// then hits, so this must outlast the warm-up it cuts short: 16 narrowed
/// nodes that would have hit (`hashtab` +23% host instructions, `sort` up
/// to half again at the narrower windows), 32 keeps every program measured
/// and saves those whose branches follow random data 5–6%
/// (docs/PERFORMANCE.md).
pub(crate) const FAST_FRUITLESS_TRIAL: u32 = 32;

/// A memoised stretch of the walk.
struct Span {
    /// What it does to the walk.
    walk: StretchWalk,
    /// What the estimator adds.
    delta: Counters,
    /// Return points left pushed, bottom first.
    pushes: Box<[PpId]>,
    /// The `ecall`s inside, relative to its start, when the estimator
    /// notes them (the replay of several harts meets its harts'
    /// synchronisation calls at them).
    ecalls: Box<[Ecall]>,
    /// In a memo that several harts share: the indirect records it read,
    /// as (site, record, the target the record named).
    targets: Box<[(u64, u64, u64)]>,
    /// Bit `h`: hart `h`'s tables name those targets too (see
    /// [`Spans::shared`]).
    checked: u64,
    /// Where the walk continues: the partial program and the estimator's
    /// node for it.
    end_pp: PpId,
    end_node: u32,
}

/// What determines a stretch: where it starts and the history it may read.
/// A stretch ends when it would read past either window, so the key
/// determines it; one that ended earlier (a return, an escape, …) has a key
/// more specific than it needed.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    /// The estimator's node it starts from.
    node: u32,
    /// The next bytes of the indirect stream, little-endian
    /// ([`indirect_window`]).
    indirect: u128,
    /// How many of those bytes are valid.
    pub(crate) indirect_valid: u32,
    /// The next branch bits, the first in bit 0 ([`bit_window`]).
    bits: u32,
    /// How many of those bits are valid.
    pub(crate) bits_valid: u32,
}

impl Key {
    /// The key of the stretch from `node` with a bit window of `window`
    /// bits, at the history's current position.
    #[inline]
    pub(crate) fn at<R: Read>(history: &TraceHistory<R>, node: u32, window: u32) -> Key {
        let (bits, bits_valid) = bit_window(history, window);
        let (indirect, indirect_valid) = indirect_window(history.indirect_bytes());
        Key {
            node,
            indirect,
            indirect_valid,
            bits,
            bits_valid,
        }
    }
}

/// Counters for `retrace estimate`'s report on how much the memo helped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SpanStats {
    /// Stretches replayed from the memo.
    pub hits: u64,
    /// Partial programs inside them.
    pub pps_memoised: u64,
    /// Stretches recorded.
    pub recorded: u64,
    /// Partial programs replayed in all (memoised or not).
    pub pps: u64,
}

/// The memo and its per-node hit accounting.
#[derive(Default)]
pub(crate) struct Spans {
    /// Several harts' histories use it ([`Spans::shared`]).
    shared: bool,
    memo: FxHashMap<Key, Span>,
    /// The walker's code epoch the memo's stretches ran in.
    epoch: u64,
    /// Per node: tries, hits and bit window.
    starts: FastStartNodes,
    pub(crate) stats: SpanStats,
}

/// The indirect window: the records at the start of `bytes` that name
/// known targets, as far as they fit [`INDIRECT_WINDOW`] bytes, as a
/// little-endian number, and how many bytes. A stretch reads no other
/// record (a new target is the walker's), so the window holds no more of
/// the stream than can decide a stretch: a record of a new target ahead
/// leaves it empty.
#[inline]
fn indirect_window(bytes: &[u8]) -> (u128, u32) {
    // The common record is one byte, a known target's number below 128
    // ([`one_byte_index`]): those first, then any longer ones.
    let head = &bytes[..bytes.len().min(INDIRECT_WINDOW)];
    let mut n = match <[u8; INDIRECT_WINDOW]>::try_from(head) {
        // A whole window: its one-byte records found a word at a time.
        Ok(w) => one_byte_records(u128::from_le_bytes(w)),
        Err(_) => head
            .iter()
            .position(|&b| one_byte_index(&[b]).is_none())
            .unwrap_or(head.len()),
    };
    if n == INDIRECT_WINDOW {
        return (u128::from_le_bytes(head.try_into().unwrap()), n as u32);
    }
    while let Some(len) = known_target_len(&bytes[n..]) {
        if n + len > INDIRECT_WINDOW {
            break;
        }
        n += len;
    }
    let mut w = [0u8; INDIRECT_WINDOW];
    w[..n].copy_from_slice(&bytes[..n]);
    (u128::from_le_bytes(w), n as u32)
}

/// How many of the bytes of `w` (little-endian), from the first, are
/// one-byte records of known targets (1 to 127, [`one_byte_index`]).
#[inline]
fn one_byte_records(w: u128) -> usize {
    const LOW: u128 = u128::from_le_bytes([0x01; INDIRECT_WINDOW]);
    const HIGH: u128 = u128::from_le_bytes([0x80; INDIRECT_WINDOW]);
    // A byte's high bit is set when the byte is 0x80 or above, or (for the
    // lowest such byte, which has none of those below it to borrow from)
    // when it is 0.
    let bad = (w & HIGH) | (w.wrapping_sub(LOW) & !w & HIGH);
    (bad.trailing_zeros() / 8) as usize
}

/// The bit window: the next [`BIT_WINDOW`] bits (or fewer, at the end of
/// the loaded segment) and how many.
#[inline]
fn bit_window<R: Read>(history: &TraceHistory<R>, window: u32) -> (u32, u32) {
    let (bits, valid) = history.bit_window();
    let n = valid.min(window);
    ((bits & ((1u64 << n) - 1)) as u32, n)
}

/// A start node's memo accounting.
#[derive(Clone, Copy)]
struct StartNode {
    tries: u32,
    hits: u32,
    /// Its bit window; 0 when it no longer starts stretches.
    window: u32,
}

/// Per start node, the bit window it starts stretches with, judged every
/// `TRIES` tries: a node whose stretches are found less often than
/// [`MIN_HIT_PERCENT`] tries a narrower window, and below `MIN_WINDOW`
/// bits starts none. With `FRUITLESS` (not 0), a node that has found
/// nothing in its first `FRUITLESS` tries at a window is judged then.
#[derive(Default)]
pub(crate) struct StartNodes<
    const TRIES: u32,
    const MIN_WINDOW: u32 = MIN_BIT_WINDOW,
    const FRUITLESS: u32 = 0,
>(Vec<StartNode>);

/// `fast`'s start nodes.
type FastStartNodes = StartNodes<TRIAL, FAST_MIN_BIT_WINDOW, FAST_FRUITLESS_TRIAL>;

impl<const TRIES: u32, const MIN_WINDOW: u32, const FRUITLESS: u32>
    StartNodes<TRIES, MIN_WINDOW, FRUITLESS>
{
    /// The bit window `node` starts stretches with (0: it does not), among
    /// `nodes` nodes.
    #[inline]
    pub(crate) fn window(&mut self, node: u32, nodes: usize) -> u32 {
        if self.0.len() < nodes {
            let fresh = StartNode {
                tries: 0,
                hits: 0,
                window: BIT_WINDOW,
            };
            self.0.resize(nodes, fresh);
        }
        self.0[node as usize].window
    }

    /// [`StartNodes::window`] without making room: a node not seen yet
    /// has the first window.
    #[inline(always)]
    pub(crate) fn peek(&self, node: u32) -> u32 {
        self.0.get(node as usize).map_or(BIT_WINDOW, |t| t.window)
    }

    /// Count a try from `node` that found a stretch (`hit`) or not.
    #[inline]
    pub(crate) fn count_try(&mut self, node: u32, hit: bool) {
        let t = &mut self.0[node as usize];
        t.tries += 1;
        t.hits += u32::from(hit);
        let fruitless = FRUITLESS > 0 && t.tries == FRUITLESS && t.hits == 0;
        if t.tries >= TRIES || fruitless {
            if t.hits * 100 < t.tries * MIN_HIT_PERCENT {
                // Not repeating at this width: try a narrower window, or
                // give up below the narrowest.
                t.window = if t.window > MIN_WINDOW {
                    t.window / 2
                } else {
                    0
                };
            }
            t.tries = 0;
            t.hits = 0;
        }
    }
}

impl Spans {
    /// A memo for the replays of several harts, one after the other, on
    /// one core (`crate::system`). An indirect record names a target by
    /// its number in the hart's own table of the site's targets, so the
    /// same bytes may mean other targets to another hart: a stretch that
    /// read records keeps the targets they named, and serves a hart only
    /// once that hart's tables are found to name the same (tables only
    /// grow, so once is enough).
    pub(crate) fn shared() -> Spans {
        Spans {
            shared: true,
            ..Spans::default()
        }
    }
}

/// What [`span_step`] did.
pub(crate) enum SpanStep {
    /// It applied a memoised stretch, or walked one (and remembered it).
    Moved,
    /// The walk ended inside a stretch it walked.
    Finished,
    /// Nothing: the walker is to take the next step itself.
    Nothing,
}

/// From where the walk `w` stands, apply the memoised stretch that starts
/// there, or walk and remember one. The `ecall`s inside an applied
/// stretch, when the estimator notes them, go to `ecalls` with the
/// estimator's totals before the stretch (the `ecall`s are relative to
/// them); those of a stretch walked are noted by the estimator itself.
pub(crate) fn span_step<R: Read>(
    table: &mut PpTable,
    history: &mut TraceHistory<R>,
    est: &mut Estimator,
    spans: &mut Spans,
    w: &mut Walker<PpId>,
    ecalls: &mut impl FnMut(&Counters, &[Ecall]),
) -> Result<SpanStep, ReplayError> {
    if w.code_epoch != spans.epoch {
        // Stretches recorded before ran through code that has changed.
        spans.epoch = w.code_epoch;
        spans.memo.clear();
    }
    let limit = w.limit;
    let Some((node, pp)) = est.current_node() else {
        return Ok(SpanStep::Nothing);
    };
    // A stretch starts where the estimator's node is the walker's.
    let window = spans.starts.window(node, est.node_count());
    if pp != w.cur || window == 0 {
        return Ok(SpanStep::Nothing);
    }
    if replay_span(spans, w, history, est, node, window, limit, ecalls) {
        return Ok(SpanStep::Moved);
    }
    if spans.memo.len() < MAX_SPANS {
        return Ok(record_span(spans, w, table, history, est, node, window, limit)?.into());
    }
    Ok(SpanStep::Nothing)
}

/// Replay the whole trace with `est` (a `fast` estimator), memoising
/// stretches. Equivalent to `walk(table, history, est, entry, limit)`.
pub(crate) fn walk_spans<R: Read>(
    table: &mut PpTable,
    history: &mut TraceHistory<R>,
    est: &mut Estimator,
    spans: &mut Spans,
    entry: PpId,
    limit: u64,
) -> Result<WalkStats, ReplayError> {
    let mut w = Walker::new(entry, limit);
    loop {
        let finished = match span_step(table, history, est, spans, &mut w, &mut |_, _| {})? {
            SpanStep::Moved => continue,
            SpanStep::Finished => true,
            SpanStep::Nothing => {
                if est.steps_cached() && step_run(table, history, est, spans, &mut w)? {
                    continue;
                }
                w.step(table, history, est)?
            }
        };
        if finished {
            w.finish_code(table, history)?;
            return Ok(w.stats());
        }
    }
}

/// Step the walk `w` through partial programs that neither start a
/// stretch nor need more of the walker than their end's outcome, until
/// the next one that does: at least one, when it returns `true`; none
/// (the walker is to step) when `false`. Where the control flow does not
/// repeat, most of a `fast` replay is here.
///
/// Each partial program is what [`Walker::step`] would do with it,
/// asking the history the same things in the same order (so the trace's
/// segments are read exactly as the walker reads them): a branch bit for a
/// conditional branch, whether the next return is the escape's, whether
/// a trap or code event falls inside or right after it. It leaves to the
/// walker a partial program that reads an indirect record, meets an
/// escape, a trap or a code event, ends the run, leads to code that
/// cannot execute, or is not yet in the walker's cache; the estimator
/// times it from its node's edge ([`Estimator::step_cached`]) or, the
/// first time, as the walker would have it do. It stops before a partial
/// program whose node starts stretches, which [`span_step`] then tries as
/// it would have: the stretches tried and found are those of a replay
/// without this loop.
fn step_run<R: Read>(
    table: &PpTable,
    history: &mut TraceHistory<R>,
    est: &mut Estimator,
    spans: &mut Spans,
    w: &mut Walker<PpId>,
) -> Result<bool, ReplayError> {
    let mut moved = false;
    loop {
        let (quick, at_start) = quick_run(history, est, &spans.starts, w)?;
        moved |= quick;
        if at_start {
            break;
        }
        // A step the quick records do not have: the general one, which
        // then teaches the node's record.
        let cur = w.cur;
        let from = est.cached_node().filter(|&(_, pp)| pp == cur);
        let exit = w.cached_exit(table, cur);
        let Some(how) = step_one_how::<R, false, true>(table, history, est, w)? else {
            break;
        };
        moved = true;
        learn_quick(est, w, from, exit, how);
        if let Some((node, pp)) = est.cached_node() {
            if pp == w.cur && spans.starts.peek(node) != 0 {
                break;
            }
        }
    }
    Ok(moved)
}

/// Teach the quick record of `from` (the estimator's node before the
/// step, when its partial program was the walker's) the step just taken:
/// its partial program ended `exit` (the walker's cached exit and length)
/// and was left `how`.
#[inline]
fn learn_quick(
    est: &mut Estimator,
    w: &Walker<PpId>,
    from: Option<(u32, PpId)>,
    exit: Option<(Exit<PpId>, u32)>,
    how: Leave,
) {
    let (Some((node, pp)), Some((exit, len))) = (from, exit) else {
        return;
    };
    let (kind, ret) = match exit {
        Exit::Branch { .. } => (QuickExit::Branch, pp),
        Exit::Continue(_) => (QuickExit::Continue, pp),
        Exit::Call { ret, .. } => (QuickExit::Call, ret),
        Exit::Return => (QuickExit::Return, pp),
        _ => return,
    };
    est.learn_quick(node, how, kind, ret, len, w.cur, w.code_epoch);
}

/// [`step_run`]'s inner loop: step the walk `w` through partial programs
/// whose nodes' quick records (`crate::estimator::QuickNode`) know the way out, one record
/// read per partial program, until a partial program they do not know,
/// the run's last one, or one whose node starts stretches. Returns
/// whether it moved, and whether it stopped because the next node starts
/// stretches.
///
/// What [`step_one`] asks the history per partial program is asked here
/// once: it runs only while the loaded segment has branch bits left
/// (taken from one 64-bit window) and holds no trap record or code event,
/// so the trap and code tests answer "none" throughout, no segment loads,
/// and the returns before the next escape only count down.
#[inline(always)]
fn quick_run<R: Read>(
    history: &mut TraceHistory<R>,
    est: &mut Estimator,
    starts: &FastStartNodes,
    w: &mut Walker<PpId>,
) -> Result<(bool, bool), ReplayError> {
    let p = est.quick_parts(w.code_epoch);
    let mut node = *p.node;
    match p.quick.get(node as usize) {
        Some(q) if q.exit != QuickExit::Unknown && q.pp == w.cur => {}
        _ => return Ok((false, false)),
    }
    let (word, valid) = history.bit_window();
    if valid == 0 || history.events_recorded()? {
        return Ok((false, false));
    }
    let mut returns = history.returns_before_escape(w.matched).unwrap_or(0);
    let p = est.quick_parts(w.code_epoch);
    // The totals in locals, added once after the loop.
    let (first, limit) = (w.stats.instructions, w.limit);
    let (mut done, mut cur, mut used, mut pps) = (first, w.cur, 0u32, 0u64);
    let (mut cycles, mut mem_ops, mut mispredicts) = (0u64, 0u64, 0u64);
    let mut at_start = false;
    while used < valid {
        let Some(q) = p.quick.get_mut(node as usize) else {
            break;
        };
        // The node entered is always the walker's partial program's (its
        // edge's next node was made for it).
        debug_assert!(q.exit == QuickExit::Unknown || q.pp == cur);
        let end = done + u64::from(q.len);
        if end >= limit {
            break;
        }
        let b = match q.exit {
            QuickExit::Branch => ((word >> used) & 1) as usize,
            QuickExit::Unknown => break,
            _ => 0,
        };
        let o = &mut q.out[b];
        if o.next == NO_NODE {
            break;
        }
        match q.exit {
            QuickExit::Branch => used += 1,
            QuickExit::Call => w.push(q.ret),
            QuickExit::Return => {
                if returns == 0 || w.stack.as_slice().last() != Some(&o.next_pp) {
                    break;
                }
                returns -= 1;
                w.matched += 1;
                w.stack.pop();
            }
            _ => {}
        }
        o.visits += 1;
        cycles += o.cycles;
        mem_ops += u64::from(q.mem_ops);
        mispredicts += u64::from(o.mispredicts);
        pps += 1;
        done = end;
        cur = o.next_pp;
        node = o.next;
        if starts.peek(node) != 0 {
            at_start = true;
            break;
        }
    }
    *p.node = node;
    *p.cycles += cycles;
    p.result.instructions += done - first;
    p.result.mem_ops += mem_ops;
    p.result.mispredicts += mispredicts;
    w.stats.bits += u64::from(used);
    w.stats.pps += pps;
    w.stats.instructions = done;
    w.cur = cur;
    history.skip(used, 0, 0);
    Ok((pps != 0, at_start))
}

/// One step of [`step_run`], and of the `control` replay
/// (`crate::control_span`) outside its stretches: `true` when it executed
/// the walker's partial program as [`Walker::step`] would have, `false`
/// when it left it, untouched, to `Walker::step`. Never the run's last
/// partial program. `CHECKED`: [`StretchStart::next_exit`] has just found
/// that the partial program is not the run's last and that no trap or
/// code event falls inside or right after it, which this then does not
/// ask again. `CACHED`: the estimator [`Estimator::steps_cached`], and
/// times it from its node's edge where it can.
#[inline(always)]
pub(crate) fn step_one<R: Read, const CHECKED: bool, const CACHED: bool>(
    table: &PpTable,
    history: &mut TraceHistory<R>,
    est: &mut Estimator,
    w: &mut Walker<PpId>,
) -> Result<bool, ReplayError> {
    Ok(step_one_how::<R, CHECKED, CACHED>(table, history, est, w)?.is_some())
}

/// [`step_one`], saying how the partial program was left (`None`: it was
/// left to the walker).
#[inline(always)]
fn step_one_how<R: Read, const CHECKED: bool, const CACHED: bool>(
    table: &PpTable,
    history: &mut TraceHistory<R>,
    est: &mut Estimator,
    w: &mut Walker<PpId>,
) -> Result<Option<Leave>, ReplayError> {
    let none = crate::machine::INVALID;
    let cur = w.cur;
    let Some((exit, len)) = w.cached_exit(table, cur) else {
        return Ok(None);
    };
    let done = w.stats.instructions;
    let end = done + u64::from(len);
    if !CHECKED
        && (end >= w.limit
            || history.next_code(done)?.is_some_and(|at| at <= end)
            || history.next_trap(done)?.is_some_and(|at| at <= end))
    {
        return Ok(None);
    }
    let (how, next) = match exit {
        Exit::Branch { taken, not_taken } => {
            if taken == none || not_taken == none {
                return Ok(None);
            }
            let Some(b) = history.bit()? else {
                return Ok(None);
            };
            w.stats.bits += 1;
            (Leave::Branch(b), if b { taken } else { not_taken })
        }
        Exit::Continue(next) if next != none => (Leave::Continue, next),
        Exit::Call { target, ret } if target != none => {
            w.push(ret);
            (Leave::Call, target)
        }
        Exit::Return => {
            // Not the escape's return, and to a partial program that can
            // execute.
            match (
                history.returns_before_escape(w.matched),
                w.stack.as_slice().last(),
            ) {
                (Some(n), Some(&top)) if n > 0 && top != none => {}
                _ => return Ok(None),
            }
            w.matched += 1;
            let top = w.stack.pop().unwrap_or(none);
            (Leave::Return { escaped: false }, top)
        }
        _ => return Ok(None),
    };
    w.stats.pps += 1;
    w.stats.instructions = end;
    if !(CACHED && est.step_cached(cur, how, next)) {
        est.pp(table, cur, how, next);
    }
    w.cur = next;
    Ok(Some(how))
}

/// The bit of `history`'s hart in [`Span::checked`] (0 for harts past 63:
/// a stretch is then checked at every use).
#[inline]
fn hart_bit<R: Read>(history: &TraceHistory<R>) -> u64 {
    1u64.checked_shl(u32::from(history.hart())).unwrap_or(0)
}

/// Look the stretch from `node` up and apply it; `false` on a miss.
#[allow(clippy::too_many_arguments)]
#[inline]
fn replay_span<R: Read>(
    spans: &mut Spans,
    w: &mut Walker<PpId>,
    history: &mut TraceHistory<R>,
    est: &mut Estimator,
    node: u32,
    window: u32,
    limit: u64,
    ecalls: &mut impl FnMut(&Counters, &[Ecall]),
) -> bool {
    let Some(s) = spans.memo.get_mut(&Key::at(history, node, window)) else {
        spans.starts.count_try(node, false);
        return false;
    };
    let hart = hart_bit(history);
    if s.checked & hart == 0 {
        // Recorded by another hart's replay: its records must name the
        // same targets in this hart's tables, else it is not this hart's
        // stretch.
        if !s
            .targets
            .iter()
            .all(|&(site, record, target)| history.known_target(site, record) == Some(target))
        {
            spans.starts.count_try(node, false);
            return false;
        }
        s.checked |= hart;
    }
    match s.walk.fits(w, history, limit, s.delta.instructions) {
        Ok(()) => {}
        Err(Unfit::Event) => return false,
        Err(Unfit::Bounds) => {
            spans.starts.count_try(node, false);
            return false;
        }
    }
    s.walk
        .apply(w, history, s.delta.instructions, &s.pushes, s.end_pp);
    if !s.ecalls.is_empty() {
        ecalls(&est.counters(), &s.ecalls);
    }
    est.add_stretch(&s.delta, s.end_node);
    spans.stats.hits += 1;
    spans.stats.pps_memoised += s.walk.pps;
    spans.starts.count_try(node, true);
    true
}

/// How recording a stretch ended (here and in `crate::control_span`).
pub(crate) enum Recorded {
    /// The walk ended inside.
    Finished,
    /// At least one partial program executed.
    Stepped,
    /// The first partial program could not be part of a stretch.
    Nothing,
}

impl From<Recorded> for SpanStep {
    fn from(r: Recorded) -> SpanStep {
        match r {
            Recorded::Finished => SpanStep::Finished,
            Recorded::Stepped => SpanStep::Moved,
            Recorded::Nothing => SpanStep::Nothing,
        }
    }
}

/// Where a stretch being recorded began. The rules for extending a
/// stretch measure from here; `fast`'s stretches and those of
/// `crate::control_span` share them.
pub(crate) struct StretchStart {
    /// Indirect-target bytes left unread.
    rest: usize,
    /// How many returns the stretch may match: the next one after those is
    /// the one the next escape is recorded for.
    escapes: u64,
    pub(crate) matched: u64,
    pub(crate) stats: WalkStats,
    depth: usize,
    dropped: u64,
}

impl StretchStart {
    /// The walker's position, or `None` where the next return is the
    /// escape's (no stretch starts there).
    pub(crate) fn at<R: Read>(
        w: &Walker<PpId>,
        history: &mut TraceHistory<R>,
    ) -> Option<StretchStart> {
        Some(StretchStart {
            rest: history.indirect_bytes().len(),
            escapes: history.returns_before_escape(w.matched)?,
            matched: w.matched,
            stats: w.stats(),
            depth: w.stack.len(),
            dropped: w.stack.dropped(),
        })
    }

    /// Indirect-target bytes the stretch has read so far.
    pub(crate) fn consumed<R: Read>(&self, history: &TraceHistory<R>) -> usize {
        self.rest - history.indirect_bytes().len()
    }

    /// The stretch's own return points still on the stack: what it pushed
    /// beyond the start depth, plus what the bound dropped below it.
    pub(crate) fn own(&self, w: &Walker<PpId>) -> usize {
        w.stack.len() + (w.stack.dropped() - self.dropped) as usize - self.depth
    }

    /// What the stretch from here to the walker's position, `depth` deep,
    /// did to the walk.
    pub(crate) fn walk<R: Read>(
        &self,
        w: &Walker<PpId>,
        history: &TraceHistory<R>,
        depth: usize,
    ) -> StretchWalk {
        let st = w.stats();
        StretchWalk {
            bits_used: (st.bits - self.stats.bits) as u32,
            indirect_bytes: self.consumed(history) as u32,
            indirect_records: (st.indirect - self.stats.indirect) as u32,
            returns: w.matched - self.matched,
            pps: st.pps - self.stats.pps,
            depth: depth as u32,
        }
    }

    /// How the walker's next partial program ends, if the stretch may take
    /// it: the stretch ends before the run's last partial program (ending
    /// at `limit`), one whose end cannot execute, one a trap cuts or
    /// follows, and before it would read past `key`'s windows.
    #[inline]
    pub(crate) fn next_exit<R: Read>(
        &self,
        w: &mut Walker<PpId>,
        table: &PpTable,
        history: &mut TraceHistory<R>,
        limit: u64,
        key: &Key,
    ) -> Result<Option<Exit<PpId>>, ReplayError> {
        let (exit, len) = match w.cached_exit(table, w.cur) {
            Some(hit) => hit,
            None => match w.exit_of(table, w.cur) {
                Ok(e) => e,
                Err(_) => return Ok(None),
            },
        };
        let done = w.stats.instructions;
        if done + u64::from(len) >= limit
            || history
                .next_trap(done)?
                .is_some_and(|at| at <= done + u64::from(len))
            || history
                .next_code(done)?
                .is_some_and(|at| at <= done + u64::from(len))
        {
            return Ok(None);
        }
        let room = match exit {
            Exit::Branch { .. } => w.stats.bits - self.stats.bits < u64::from(key.bits_valid),
            Exit::Indirect { .. } | Exit::IndirectCall { .. } => {
                // The next record must lie inside the window, and must name
                // a known target: a new one grows the site's table, which a
                // replay of the stretch would not, so it is the walker's.
                match known_target_len(history.indirect_bytes()) {
                    Some(n) => self.consumed(history) + n <= key.indirect_valid as usize,
                    None => false,
                }
            }
            // A return pops a call of the stretch's own, and is not the one
            // the next escape is recorded for.
            Exit::Return => self.own(w) > 0 && w.matched - self.matched < self.escapes,
            Exit::Call { .. } | Exit::Continue(_) => true,
            Exit::Stop => false,
        };
        // A call with the stack full of the stretch's own return points
        // would drop one of them: the walker's.
        let call = matches!(exit, Exit::Call { .. } | Exit::IndirectCall { .. });
        Ok((room && !(call && self.own(w) >= w.stack.bound())).then_some(exit))
    }
}

/// What a stretch does to the walk: the history it reads, the returns it
/// matches, the partial programs it executes and how deep it goes.
#[derive(Clone, Copy)]
pub(crate) struct StretchWalk {
    /// Branch bits it reads.
    bits_used: u32,
    /// Bytes and records of the indirect stream it reads.
    indirect_bytes: u32,
    indirect_records: u32,
    /// Returns that matched the stack (they advance the escape count).
    returns: u64,
    /// Partial programs executed.
    pub(crate) pps: u64,
    /// Deepest return stack inside, relative to the start: its own return
    /// points at the deepest (at most the stack's bound).
    depth: u32,
}

/// Why a memoised stretch cannot be applied where the walker is.
pub(crate) enum Unfit {
    /// A trap or a code event falls inside it, or the walker's next return
    /// is the escape's: not a miss of the memo.
    Event,
    /// It would run past the run's end or past the next escape.
    Bounds,
}

impl StretchWalk {
    /// Whether the stretch, `instructions` long, may be applied where the
    /// walker is, ending before instruction `limit`.
    #[inline]
    pub(crate) fn fits<R: Read>(
        &self,
        w: &Walker<PpId>,
        history: &mut TraceHistory<R>,
        limit: u64,
        instructions: u64,
    ) -> Result<(), Unfit> {
        let done = w.stats.instructions;
        // The escape count the stretch's returns must stay below (`None`:
        // the trace is damaged or out of step, which the walker reports).
        let Some(escapes) = history.returns_before_escape(w.matched) else {
            return Err(Unfit::Event);
        };
        // No trap may fall inside the stretch (one right after it is the
        // walker's, at its next step).
        match history.next_trap(done) {
            Ok(None) => {}
            Ok(Some(at)) if at >= done + instructions => {}
            _ => return Err(Unfit::Event),
        }
        // Nor a code event, up to its end included (the walker applies one
        // at a partial program's start, before its successor is executed).
        match history.next_code(done) {
            Ok(None) => {}
            Ok(Some(at)) if at > done + instructions => {}
            _ => return Err(Unfit::Event),
        }
        if instructions >= limit.saturating_sub(done) || self.returns > escapes {
            return Err(Unfit::Bounds);
        }
        Ok(())
    }

    /// Move the walker and the history over the stretch, `instructions`
    /// long, leaving `pushes` on the return stack and the walk at `end`.
    #[inline]
    pub(crate) fn apply<R: Read>(
        &self,
        w: &mut Walker<PpId>,
        history: &mut TraceHistory<R>,
        instructions: u64,
        pushes: &[PpId],
        end: PpId,
    ) {
        history.skip(
            self.bits_used,
            self.indirect_bytes as usize,
            u64::from(self.indirect_records),
        );
        let st = &mut w.stats;
        st.pps += self.pps;
        st.instructions += instructions;
        st.bits += u64::from(self.bits_used);
        st.indirect += u64::from(self.indirect_records);
        let deepest = (w.stack.len() + self.depth as usize).min(w.stack.bound());
        st.max_depth = st.max_depth.max(deepest);
        w.matched += self.returns;
        w.stack.apply_stretch(pushes, self.depth as usize);
        w.cur = end;
    }
}

/// [`record_span`]'s steps that the quick records know, taken as its
/// loop would take them ([`StretchStart::next_exit`]'s rules, then
/// [`step_one`]), one record read per partial program; `pps` and `depth`
/// count on as that loop counts. It stops, leaving the rest to that loop,
/// at the first partial program the records do not know or the rules
/// would end the stretch at, and under the same conditions on the
/// history as [`quick_run`].
///
/// Its step is [`quick_run`]'s written out again, on purpose: the two
/// loops sharing one inlined step function and a struct of totals cost
/// 12–15% more host instructions on the programs that do not repeat
/// (callgrind, `estimate --fidelity fast`: isadec-rv64 267 M → 300 M,
/// dhry-rv32 455 M → 524 M), the totals no longer all in registers.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn quick_record<R: Read>(
    start: &StretchStart,
    key: &Key,
    history: &mut TraceHistory<R>,
    est: &mut Estimator,
    w: &mut Walker<PpId>,
    limit: u64,
    pps: &mut u32,
    depth: &mut usize,
) -> Result<(), ReplayError> {
    let p = est.quick_parts(w.code_epoch);
    let mut node = *p.node;
    match p.quick.get(node as usize) {
        Some(q) if q.exit != QuickExit::Unknown && q.pp == w.cur => {}
        _ => return Ok(()),
    }
    let (word, valid) = history.bit_window();
    if valid == 0 || history.events_recorded()? {
        return Ok(());
    }
    let mut returns = history.returns_before_escape(w.matched).unwrap_or(0);
    let p = est.quick_parts(w.code_epoch);
    // The branch bits the key's window has left for the stretch.
    let bit_room = u64::from(key.bits_valid).saturating_sub(w.stats.bits - start.stats.bits);
    let (first, mut done, mut cur, mut used) =
        (w.stats.instructions, w.stats.instructions, w.cur, 0u32);
    let (mut cycles, mut mem_ops, mut mispredicts, mut steps) = (0u64, 0u64, 0u64, 0u32);
    let (mut n, mut deepest) = (*pps, *depth);
    while n < MAX_PPS && used < valid {
        let Some(q) = p.quick.get_mut(node as usize) else {
            break;
        };
        debug_assert!(q.exit == QuickExit::Unknown || q.pp == cur);
        let end = done + u64::from(q.len);
        if end >= limit {
            break;
        }
        let (room, b) = match q.exit {
            QuickExit::Branch => (u64::from(used) < bit_room, ((word >> used) & 1) as usize),
            QuickExit::Return => (
                start.own(w) > 0 && w.matched - start.matched < start.escapes,
                0,
            ),
            QuickExit::Call => (start.own(w) < w.stack.bound(), 0),
            QuickExit::Continue => (true, 0),
            QuickExit::Unknown => (false, 0),
        };
        if !room {
            break;
        }
        let o = &mut q.out[b];
        if o.next == NO_NODE {
            break;
        }
        match q.exit {
            QuickExit::Branch => used += 1,
            QuickExit::Call => w.push(q.ret),
            QuickExit::Return => {
                if returns == 0 || w.stack.as_slice().last() != Some(&o.next_pp) {
                    break;
                }
                returns -= 1;
                w.matched += 1;
                w.stack.pop();
            }
            _ => {}
        }
        o.visits += 1;
        cycles += o.cycles;
        mem_ops += u64::from(q.mem_ops);
        mispredicts += u64::from(o.mispredicts);
        steps += 1;
        done = end;
        cur = o.next_pp;
        node = o.next;
        n += 1;
        deepest = deepest.max(start.own(w));
    }
    *p.node = node;
    *p.cycles += cycles;
    p.result.instructions += done - first;
    p.result.mem_ops += mem_ops;
    p.result.mispredicts += mispredicts;
    w.stats.bits += u64::from(used);
    w.stats.pps += u64::from(steps);
    w.stats.instructions = done;
    w.cur = cur;
    (*pps, *depth) = (n, deepest);
    history.skip(used, 0, 0);
    Ok(())
}

/// Walk step by step from `node` while the stretch's rules allow (ending
/// before instruction `limit`), and remember the stretch.
#[allow(clippy::too_many_arguments)]
fn record_span<R: Read>(
    spans: &mut Spans,
    w: &mut Walker<PpId>,
    table: &mut PpTable,
    history: &mut TraceHistory<R>,
    est: &mut Estimator,
    node: u32,
    window: u32,
    limit: u64,
) -> Result<Recorded, ReplayError> {
    let key = Key::at(history, node, window);
    let Some(start) = StretchStart::at(w, history) else {
        return Ok(Recorded::Nothing);
    };
    let mut targets = Vec::new();
    let before = est.counters();
    let ecalls0 = est.ecalls_noted();
    let mut depth = 0usize;
    let mut pps = 0u32;
    let cached = est.steps_cached();
    while pps < MAX_PPS {
        if cached {
            quick_record(&start, &key, history, est, w, limit, &mut pps, &mut depth)?;
            if pps >= MAX_PPS {
                break;
            }
        }
        let Some(exit) = start.next_exit(w, table, history, limit, &key)? else {
            break;
        };
        // In a shared memo, the target of each record read (see
        // `Spans::shared`).
        let read = match exit {
            Exit::Indirect { site } | Exit::IndirectCall { site, .. } if spans.shared => {
                decode_varint(history.indirect_bytes()).map(|(record, _)| (site, record))
            }
            _ => None,
        };
        // `next_exit` has left out the run's last partial program, so
        // only the walker's own step can end the walk.
        if cached {
            let cur = w.cur;
            let from = est.cached_node().filter(|&(_, pp)| pp == cur);
            let cached_exit = w.cached_exit(table, cur);
            match step_one_how::<R, true, true>(table, history, est, w)? {
                Some(how) => learn_quick(est, w, from, cached_exit, how),
                None => {
                    if w.step(table, history, est)? {
                        return Ok(Recorded::Finished);
                    }
                }
            }
        } else if w.step(table, history, est)? {
            return Ok(Recorded::Finished);
        }
        if let Some((site, record)) = read {
            match history.known_target(site, record) {
                Some(target) => targets.push((site, record, target)),
                None => return Ok(Recorded::Stepped),
            }
        }
        pps += 1;
        depth = depth.max(start.own(w));
    }
    if pps == 0 {
        return Ok(Recorded::Nothing);
    }
    let Some((end_node, end_pp)) = est.current_node() else {
        return Ok(Recorded::Stepped);
    };
    debug_assert_eq!(end_pp, w.cur);
    if pps < MIN_PPS {
        return Ok(Recorded::Stepped);
    }
    let span = Span {
        walk: start.walk(w, history, depth),
        delta: est.counters().since(before),
        pushes: w.stack.as_slice()[w.stack.len() - start.own(w)..].into(),
        ecalls: est.ecalls_since(ecalls0, &before),
        targets: targets.into(),
        checked: hart_bit(history),
        end_pp,
        end_node,
    };
    // A stretch cut short by the escape or the run's end is still what
    // the key determines, as far as it goes: any stretch recorded under a
    // key is a valid one for it.
    if let std::collections::hash_map::Entry::Vacant(slot) = spans.memo.entry(key) {
        slot.insert(span);
        spans.stats.recorded += 1;
    }
    Ok(Recorded::Stepped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_byte_records_are_counted_a_word_at_a_time_as_byte_by_byte() {
        let bytes_of = |seed: u64| -> [u8; INDIRECT_WINDOW] {
            let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
            std::array::from_fn(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // Mostly one-byte records, now and then 0 or a long one.
                match x % 8 {
                    0 => 0,
                    1 => 0x80 | (x >> 8) as u8,
                    _ => 1 + (x >> 8) as u8 % 127,
                }
            })
        };
        for seed in 0..5000 {
            let b = bytes_of(seed);
            let want = b
                .iter()
                .position(|&b| one_byte_index(&[b]).is_none())
                .unwrap_or(INDIRECT_WINDOW);
            assert_eq!(one_byte_records(u128::from_le_bytes(b)), want, "{b:?}");
        }
        assert_eq!(one_byte_records(u128::from_le_bytes([5; 16])), 16);
        assert_eq!(one_byte_records(0), 0);
    }

    /// The windows a node goes through when its tries hit as `hit` says
    /// (try number from 0 at each window), one entry per window change.
    fn windows<N: Default, F: Fn(&mut N, u32, bool), W: Fn(&mut N) -> u32>(
        count_try: F,
        window: W,
        hit: impl Fn(u32) -> bool,
    ) -> Vec<(u32, u32)> {
        let mut nodes = N::default();
        let mut seen = vec![(0, window(&mut nodes))];
        let mut at_window = 0;
        for t in 1..=1000 {
            count_try(&mut nodes, 0, hit(at_window));
            at_window += 1;
            let w = window(&mut nodes);
            if w != seen.last().unwrap().1 {
                seen.push((t, w));
                at_window = 0;
            }
        }
        seen
    }

    #[test]
    fn a_fast_start_node_that_finds_nothing_is_judged_after_32_tries() {
        let fast = |hit: fn(u32) -> bool| {
            windows(
                |n: &mut FastStartNodes, node, h| n.count_try(node, h),
                |n| n.window(0, 1),
                hit,
            )
        };
        // Nothing ever: 32 tries at each window, then no stretches.
        assert_eq!(fast(|_| false), [(0, 32), (32, 16), (64, 8), (96, 0)]);
        // One hit among its first 32 tries: the whole trial of 64 (and a
        // quarter of them is not reached).
        assert_eq!(fast(|t| t == 31), [(0, 32), (64, 16), (128, 8), (192, 0)]);
        // Hits after a warm-up of 31 misses, on every try after: kept.
        assert_eq!(fast(|t| t >= 31), [(0, 32)]);
        // `control`'s start nodes wait for their whole trial.
        let control = windows(
            |n: &mut StartNodes<TRIAL>, node, h| n.count_try(node, h),
            |n| n.window(0, 1),
            |_| false,
        );
        assert_eq!(control, [(0, 32), (64, 16), (128, 8), (192, 4), (256, 0)]);
    }
}
