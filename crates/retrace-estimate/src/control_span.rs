//! Memoised stretches of the replay at `control` fidelity: `crate::span`'s
//! memo, with the front end's state in the key.
//!
//! At `control` a stretch's time depends, beyond its start node and the
//! history it reads (`crate::span`'s key), on the front end it meets:
//!
//! - the branch predictor's counters its branches read. Which counters
//!   those are is decided by the path and, for a predictor with global
//!   history (gshare), by the history at its start, which is part of the
//!   key. A counter is read and trained by its own branches only, so what
//!   it predicts throughout the stretch follows from its value at the
//!   start and their outcomes: the stretch keeps, per counter, the start
//!   values under which it predicts as it did when recorded (often two or
//!   more of the four: a saturated counter and a weak one predict alike)
//!   and the value each leaves.
//! - the I-cache. Only stretches in which every fetch hit are remembered,
//!   and one is reused only when every line it fetches is in the cache:
//!   then every fetch hits again (a hit evicts nothing), and fetching its
//!   distinct lines once each, in the order of their last fetch, leaves
//!   the LRU order that its whole fetch sequence leaves.
//! - the return-address stack: not at all. A stretch pops only return
//!   points it pushed itself (it ends before a return below its own
//!   calls), and a fixed-depth stack drops its oldest entries first, so
//!   what each of its returns pops — its own return point, or nothing once
//!   its own have been dropped — follows from its own calls and returns
//!   whatever the stack held before. Its pushes and pops are done again on
//!   reuse.
//!
//! A stretch's effect on the front end — the counters' values after it,
//! the history, the return stack and the I-cache's LRU order — is applied
//! on reuse, so the replay goes on from the state the step-by-step walk
//! leaves, and the result is that walk's exactly (`tests/exact.rs` checks
//! it on every example program, and against the cycle-level engine).
//!
//! A key may hold several stretches, one per set of counter values met
//! (at most [`MAX_VARIANTS`]); where a start node's lookups keep missing,
//! its bit window narrows and then it stops starting stretches, as in
//! `crate::span`.

use crate::estimator::{Counters, Estimator};
use crate::machine::TraceHistory;
use crate::span::{self, Recorded, SpanStats, SpanStep, StartNodes, StretchStart, StretchWalk};
use crate::walk::{ReplayError, WalkStats, Walker};
use retrace_program::{PpId, PpTable};
use rustc_hash::{FxHashMap, FxHashSet};
use std::io::Read;

/// Stretches remembered per key at most (sets of counter values).
const MAX_VARIANTS: usize = 8;
/// Tries before a start node's hit rate is judged: fewer than
/// `crate::span`'s, for recording a stretch here costs more (the front
/// end is journaled, a stretch with a miss is thrown away), so a node
/// whose stretches do not repeat should stop trying sooner.
const TRIAL: u32 = 128;
/// "No stretch" in a chain of variants.
const NONE: u32 = u32::MAX;
/// Stretches remembered at most.
const MAX_SPANS: usize = 1 << 19;

/// `crate::span`'s key and the predictor's global history.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct Key {
    span: span::Key,
    history: u64,
}

/// A predictor counter a stretch reads.
#[derive(Clone, Copy)]
struct Counter {
    slot: u32,
    /// Bit `v`: with value `v` at the start the counter predicts every
    /// branch of the stretch as it did when the stretch was recorded.
    accept: u8,
    /// Its value after the stretch, by its value at the start.
    post: [u8; 4],
}

/// A range of one of [`ControlSpans`]' arenas.
#[derive(Clone, Copy)]
struct Slice {
    at: u32,
    len: u32,
}

impl Slice {
    #[inline]
    fn of<T>(self, arena: &[T]) -> &[T] {
        &arena[self.at as usize..(self.at + self.len) as usize]
    }

    fn push<T: Copy>(arena: &mut Vec<T>, items: &[T]) -> Slice {
        let at = arena.len() as u32;
        arena.extend_from_slice(items);
        Slice {
            at,
            len: items.len() as u32,
        }
    }
}

/// A memoised stretch at `control`.
struct Stretch {
    /// What it does to the walk.
    walk: StretchWalk,
    /// What the estimator adds.
    delta: Counters,
    /// Return points left pushed on the walker's stack, bottom first (in
    /// `ControlSpans::pushes`).
    pushes: Slice,
    /// Where the walk continues.
    end_pp: PpId,
    end_node: u32,
    /// Predictor counters it reads (in `ControlSpans::counters`).
    counters: Slice,
    /// The predictor's global history after it.
    history_after: u64,
    /// A pc in each I-cache line it fetches, in the order of their last
    /// fetch (in `ControlSpans::words`).
    lines: Slice,
    /// Its return-address-stack operations ([`crate::estimator::Journal`];
    /// in `ControlSpans::words`).
    ras: Slice,
    /// The I-cache's fill count when its lines were last found there: a
    /// hit evicts nothing, so while no line has been filled since, they
    /// still are, and the check is skipped.
    held_at: u64,
    /// The next stretch under the same key (`NONE`: the last).
    next: u32,
}

/// The memo of `control` stretches of one core's replay.
#[derive(Default)]
pub(crate) struct ControlSpans {
    /// Per key, its first stretch in `stretches` (the others follow by
    /// [`Stretch::next`]), and how many it has.
    memo: FxHashMap<Key, (u32, u32)>,
    stretches: Vec<Stretch>,
    /// The walker's code epoch the memo's stretches ran in.
    epoch: u64,
    starts: StartNodes<TRIAL>,
    /// The stretches' lists, in arenas (a few allocations instead of
    /// several per stretch).
    pushes: Vec<PpId>,
    counters: Vec<Counter>,
    words: Vec<u64>,
    /// Distinct lines, while a stretch is recorded.
    seen: FxHashSet<u64>,
    /// Buffers of the stretch being recorded.
    found: Vec<(u8, Counter)>,
    lines: Vec<u64>,
    pub(crate) stats: SpanStats,
}

/// Replay the whole trace with `est` (a `control` estimator), memoising
/// stretches. Equivalent to `walk(table, history, est, entry, limit)`.
pub(crate) fn walk_control_spans<R: Read>(
    table: &mut PpTable,
    history: &mut TraceHistory<R>,
    est: &mut Estimator,
    spans: &mut ControlSpans,
    entry: PpId,
    limit: u64,
) -> Result<WalkStats, ReplayError> {
    let mut w = Walker::new(entry, limit);
    loop {
        let finished = match control_step(table, history, est, spans, &mut w)? {
            SpanStep::Moved => continue,
            SpanStep::Finished => true,
            SpanStep::Nothing => {
                // The common partial programs without the walker's general
                // step; the estimator times them as the walker has it do.
                if span::step_one::<R, false, false>(table, history, est, &mut w)? {
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

/// From where the walk `w` stands, apply the memoised stretch that starts
/// there with the front end as it is, or walk and remember one.
fn control_step<R: Read>(
    table: &mut PpTable,
    history: &mut TraceHistory<R>,
    est: &mut Estimator,
    spans: &mut ControlSpans,
    w: &mut Walker<PpId>,
) -> Result<SpanStep, ReplayError> {
    if w.code_epoch != spans.epoch {
        // Stretches recorded before ran through code that has changed.
        spans.epoch = w.code_epoch;
        spans.memo.clear();
        spans.stretches.clear();
        spans.pushes.clear();
        spans.counters.clear();
        spans.words.clear();
    }
    let Some((node, pp)) = est.current_control_node() else {
        return Ok(SpanStep::Nothing);
    };
    // A stretch starts where the estimator's node is the walker's.
    let window = spans.starts.window(node, est.node_count());
    if pp != w.cur || window == 0 {
        return Ok(SpanStep::Nothing);
    }
    let key = Key {
        span: span::Key::at(history, node, window),
        history: est.predictor_history(),
    };
    let variants = match spans.memo.get(&key) {
        Some(&(first, n)) => {
            let arenas = (&spans.pushes[..], &spans.counters[..], &spans.words[..]);
            match replay(&mut spans.stretches, first, arenas, w, history, est) {
                Replayed::Applied(pps) => {
                    spans.stats.hits += 1;
                    spans.stats.pps_memoised += pps;
                    spans.starts.count_try(node, true);
                    return Ok(SpanStep::Moved);
                }
                // A trap or a code event inside: the walker's, and no
                // sign that the memo does not serve this node.
                Replayed::Blocked => return Ok(SpanStep::Nothing),
                Replayed::Missed => {}
            }
            n as usize
        }
        None => 0,
    };
    spans.starts.count_try(node, false);
    if variants >= MAX_VARIANTS || spans.memo.len() >= MAX_SPANS {
        return Ok(SpanStep::Nothing);
    }
    est.begin_journal();
    let r = record(spans, w, table, history, est, key);
    est.end_journal();
    Ok(r?.into())
}

enum Replayed {
    /// A stretch was applied: this many partial programs.
    Applied(u64),
    /// A stretch matches the front end, but a trap or a code event falls
    /// inside it.
    Blocked,
    /// None matches.
    Missed,
}

/// Apply the first stretch of the chain from `first` in `stretches` that
/// the front end and the history allow.
#[inline]
fn replay<R: Read>(
    stretches: &mut [Stretch],
    first: u32,
    (pushes, counters, words): (&[PpId], &[Counter], &[u64]),
    w: &mut Walker<PpId>,
    history: &mut TraceHistory<R>,
    est: &mut Estimator,
) -> Replayed {
    let fills = est.icache_fills();
    let mut i = first;
    loop {
        if i == NONE {
            return Replayed::Missed;
        }
        let s = &stretches[i as usize];
        if s.counters
            .of(counters)
            .iter()
            .all(|c| c.accept >> est.counter(c.slot) & 1 != 0)
            && (s.held_at == fills || est.icache_holds(s.lines.of(words)))
        {
            break;
        }
        i = s.next;
    }
    stretches[i as usize].held_at = fills;
    let s = &stretches[i as usize];
    if s.walk
        .fits(w, history, w.limit, s.delta.instructions)
        .is_err()
    {
        return Replayed::Blocked;
    }
    s.walk.apply(
        w,
        history,
        s.delta.instructions,
        s.pushes.of(pushes),
        s.end_pp,
    );
    est.apply_frontend(
        s.counters.of(counters).iter().map(|c| (c.slot, c.post)),
        s.history_after,
        s.ras.of(words),
        s.lines.of(words),
    );
    est.add_stretch(&s.delta, s.end_node);
    Replayed::Applied(s.walk.pps)
}

/// Walk step by step from the current node while the stretch's rules
/// allow (those of `crate::span`, and no I-cache miss), and remember the
/// stretch under `key`. The estimator journals its front end meanwhile.
fn record<R: Read>(
    spans: &mut ControlSpans,
    w: &mut Walker<PpId>,
    table: &mut PpTable,
    history: &mut TraceHistory<R>,
    est: &mut Estimator,
    key: Key,
) -> Result<Recorded, ReplayError> {
    let limit = w.limit;
    let Some(start) = StretchStart::at(w, history) else {
        return Ok(Recorded::Nothing);
    };
    let before = est.counters();
    let misses0 = est.icache_misses();
    let mut depth = 0usize;
    let mut pps = 0u32;
    while pps < span::MAX_PPS {
        if start
            .next_exit(w, table, history, limit, &key.span)?
            .is_none()
        {
            break;
        }
        // `next_exit` has left out the run's last partial program, so only
        // the walker's own step can end the walk.
        if !span::step_one::<R, true, false>(table, history, est, w)?
            && w.step(table, history, est)?
        {
            return Ok(Recorded::Finished);
        }
        if est.icache_misses() != misses0 {
            // Its time depends on which lines were missing: not kept.
            return Ok(Recorded::Stepped);
        }
        pps += 1;
        depth = depth.max(start.own(w));
    }
    if pps == 0 {
        return Ok(Recorded::Nothing);
    }
    let Some((end_node, end_pp)) = est.current_control_node() else {
        return Ok(Recorded::Stepped);
    };
    debug_assert_eq!(end_pp, w.cur);
    if pps < span::MIN_PPS {
        return Ok(Recorded::Stepped);
    }
    let j = est.journal();
    // Per counter read: the start values under which it predicts as it
    // did, and where each leaves it.
    let found = &mut spans.found;
    found.clear();
    found.extend(j.slots.iter().map(|&(slot, v)| {
        let counter = Counter {
            slot,
            accept: 0b1111,
            post: [0, 1, 2, 3],
        };
        (v, counter)
    }));
    for &(index, taken) in &j.branches {
        let (v, c) = &mut found[index as usize];
        let predicted = c.post[usize::from(*v)] >= 2;
        for (start, value) in c.post.iter_mut().enumerate() {
            if (*value >= 2) != predicted {
                c.accept &= !(1 << start);
            }
            *value = if taken {
                (*value + 1).min(3)
            } else {
                value.saturating_sub(1)
            };
        }
    }
    debug_assert!(found
        .iter()
        .all(|(v, c)| c.post[usize::from(*v)] == est.counter(c.slot)));
    let counters_at = spans.counters.len() as u32;
    spans.counters.extend(found.iter().map(|&(_, c)| c));
    let counters = Slice {
        at: counters_at,
        len: found.len() as u32,
    };
    // Distinct lines, in the order of their last fetch.
    spans.seen.clear();
    let lines = &mut spans.lines;
    lines.clear();
    lines.extend(
        j.fetches
            .iter()
            .rev()
            .filter(|&&pc| spans.seen.insert(est.line_of(pc))),
    );
    lines.reverse();
    let stretch = Stretch {
        walk: start.walk(w, history, depth),
        delta: est.counters().since(before),
        pushes: Slice::push(
            &mut spans.pushes,
            &w.stack.as_slice()[w.stack.len() - start.own(w)..],
        ),
        end_pp,
        end_node,
        counters,
        history_after: est.predictor_history(),
        lines: Slice::push(&mut spans.words, lines),
        ras: Slice::push(&mut spans.words, &j.ras),
        held_at: est.icache_fills(),
        next: NONE,
    };
    // The newest first: the front end is likelier to be as it is now.
    let at = spans.stretches.len() as u32;
    let chain = spans.memo.entry(key).or_insert((NONE, 0));
    spans.stretches.push(Stretch {
        next: chain.0,
        ..stretch
    });
    *chain = (at, chain.1 + 1);
    spans.stats.recorded += 1;
    Ok(Recorded::Stepped)
}
