//! The recorded synchronisation calls as the unit reads them: every
//! hart's calls decoded once into flat records of 24 bytes — where the
//! call falls in the hart's busy cycles (once the hart's replay has
//! reached it), its class (the object and the call, numbered) and its
//! rank among its class's calls in the recorded run's order.
//!
//! A run of `table` makes 1.6 million calls: what the unit does per call
//! is what the replay costs, so whatever it would look up by handle is
//! numbered here first, and the records stay small — the unit reads them
//! once, in each hart's order.

use retrace_sim::sync::SyncOp;
use retrace_trace::protocol::sync::{SyncCall, SyncEvent, SyncEvents, SET_HZ};
use retrace_trace::{DcacheMeasurement, TraceError, Varints};
use rustc_hash::FxHashMap;

/// "None" for an object.
pub(super) const NONE: u32 = u32::MAX;

/// One recorded call.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Call {
    /// Until the hart's replay reaches the call, the instructions the hart
    /// executed before its `ecall` (what the replay finds it by); then its
    /// busy cycles before the `ecall` (the data-cache term included).
    pub before: u64,
    /// Its rank among its class's calls in the recorded order (calls on
    /// an object).
    pub rank: u32,
    /// Busy cycles its `ecall` and the trap take.
    pub trap: u32,
    /// Its class: an index into [`Calls::classes`].
    pub class: u32,
}

impl Call {
    /// Busy cycles once its `ecall` and the trap are done.
    #[inline]
    pub fn after(&self) -> u64 {
        self.before + u64::from(self.trap)
    }
}

/// One hart's recorded events.
#[derive(Default)]
pub(super) struct HartCalls {
    /// Its calls, in its order.
    pub calls: Vec<Call>,
    /// The values of its `set_hz` calls, in order.
    pub values: Vec<u64>,
    /// Instructions it executed in the whole run.
    pub instructions: u64,
    /// Address of its last instruction.
    pub last_pc: u64,
    /// Its own data cache's misses, per geometry measured.
    pub dcache: Vec<DcacheMeasurement>,
}

/// Every hart's calls, and what their numbers stand for.
pub(super) struct Calls {
    /// Per hart.
    pub harts: Vec<HartCalls>,
    /// Handle and the descriptor's parameter of each object, in order of
    /// first appearance.
    pub objects: Vec<(u64, u32)>,
    /// Per class: its object (or [`NONE`]) and its call.
    pub classes: Vec<(u32, SyncOp)>,
}

/// Decode every hart's synchronisation events (`events[h]`, their
/// varints) in the recorded run's order of calls — each hart's in its
/// own order, the harts' merged by the calls' places — so that each call
/// on an object gets its rank in its class as it comes. Two calls in one
/// place are refused: the trace is damaged.
pub(super) fn decode(events: &[Vec<u8>]) -> Result<Calls, TraceError> {
    let n = events.len();
    let mut harts: Vec<HartCalls> = events
        .iter()
        .map(|bytes| {
            // Four bytes a call at least.
            HartCalls {
                calls: Vec::with_capacity(bytes.len() / 4),
                ..HartCalls::default()
            }
        })
        .collect();
    let mut decoders: Vec<_> = events
        .iter()
        .enumerate()
        .map(|(h, bytes)| SyncEvents::new(h as u16, Varints(bytes)))
        .collect();
    let mut numbers = Numbers::default();
    // Per hart: the objects by its own numbers (their numbers here), and
    // its next call, not yet taken.
    let mut own: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut next: Vec<Option<(SyncCall, Option<usize>)>> = vec![None; n];
    for h in 0..n {
        next[h] = next_call(&mut decoders[h], &mut harts[h])?;
    }
    let mut ranks: Vec<u32> = Vec::new();
    let mut last: Option<u64> = None;
    loop {
        // The call in the earliest place.
        let mut first: Option<(u64, usize)> = None;
        for (h, c) in next.iter().enumerate() {
            if let Some((c, _)) = c {
                if first.is_none_or(|(seq, _)| c.seq < seq) {
                    first = Some((c.seq, h));
                }
            }
        }
        let Some((seq, h)) = first else {
            break;
        };
        if last == Some(seq) {
            return Err(TraceError::Corrupt {
                offset: 0,
                what: format!(
                    "hart {h}'s synchronisation events: two calls in place {seq} of the run's order"
                ),
            });
        }
        last = Some(seq);
        let Some((call, number)) = next[h].take() else {
            unreachable!("the earliest is a call")
        };
        let object = match (call.object, number) {
            (Some((handle, param)), Some(i)) => {
                if i == own[h].len() {
                    own[h].push(numbers.object(handle, param));
                }
                own[h][i]
            }
            _ => NONE,
        };
        let class = numbers.class(object, call.op);
        if ranks.len() <= class as usize {
            ranks.resize(class as usize + 1, 0);
        }
        let rank = ranks[class as usize];
        ranks[class as usize] = rank.checked_add(1).ok_or_else(|| TraceError::Corrupt {
            offset: 0,
            what: "more than 2^32 calls of one kind on one object".into(),
        })?;
        if call.op == SET_HZ {
            harts[h].values.push(call.value);
        }
        harts[h].calls.push(Call {
            before: call.at,
            rank,
            trap: 0,
            class,
        });
        next[h] = next_call(&mut decoders[h], &mut harts[h])?;
    }
    Ok(Calls {
        harts,
        objects: numbers.objects,
        classes: numbers.classes,
    })
}

/// The place in the recorded run's order of hart `hart`'s call #`k`
/// (`events`: its events), for the report of the first call met out of
/// that order.
pub(super) fn place_of(hart: u16, events: &[u8], k: usize) -> Result<u64, TraceError> {
    let mut decoder = SyncEvents::new(hart, Varints(events));
    let mut out = HartCalls::default();
    for _ in 0..k {
        next_call(&mut decoder, &mut out)?;
    }
    Ok(next_call(&mut decoder, &mut out)?.map_or(0, |(c, _)| c.seq))
}

/// The hart's next call (`None` after its end), taking in the events
/// before it.
#[inline]
fn next_call(
    decoder: &mut SyncEvents<Varints<'_>>,
    hart: &mut HartCalls,
) -> Result<Option<(SyncCall, Option<usize>)>, TraceError> {
    loop {
        match decoder.next_event()? {
            Some(SyncEvent::Call(call, number)) => return Ok(Some((call, number))),
            Some(SyncEvent::Dcache(m)) => hart.dcache.push(m),
            Some(SyncEvent::End {
                instructions,
                last_pc,
            }) => {
                hart.instructions = instructions;
                hart.last_pc = last_pc;
            }
            None => return Ok(None),
        }
    }
}

/// The numbers of the objects and classes of calls.
#[derive(Default)]
struct Numbers {
    objects: Vec<(u64, u32)>,
    ids: FxHashMap<u64, u32>,
    classes: Vec<(u32, SyncOp)>,
    /// Per object (and one more for calls on none), its classes.
    class_ids: Vec<Vec<(u8, u32)>>,
}

impl Numbers {
    /// The number of the object with `handle` (its parameter as first
    /// seen), made if new.
    fn object(&mut self, handle: u64, param: u32) -> u32 {
        let next = self.objects.len() as u32;
        let id = *self.ids.entry(handle).or_insert(next);
        if id == next {
            self.objects.push((handle, param));
        }
        id
    }

    /// The class of call `op` on `object` (or on none), made if new.
    fn class(&mut self, object: u32, op: u8) -> u32 {
        let i = match object {
            NONE => 0,
            o => o as usize + 1,
        };
        if self.class_ids.len() <= i {
            self.class_ids.resize(i + 1, Vec::new());
        }
        if let Some(&(_, c)) = self.class_ids[i].iter().find(|&&(o, _)| o == op) {
            return c;
        }
        let c = self.classes.len() as u32;
        self.classes.push((object, SyncOp(op)));
        self.class_ids[i].push((op, c));
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use retrace_trace::protocol::sync::SyncEncoder;

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
        // LEB128, as the trace spells its items.
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
        let calls = decode(&harts).unwrap();
        let got = |h: usize| -> Vec<(u64, u32, u32)> {
            calls.harts[h]
                .calls
                .iter()
                .map(|c| (c.before, c.class, c.rank))
                .collect()
        };
        let (send, recv, harts_call) = (0, 1, 2);
        assert_eq!(got(0), [(5, send, 0), (9, send, 1)]);
        assert_eq!(got(1), [(4, recv, 0), (6, harts_call, 0), (8, recv, 1)]);
        assert_eq!(calls.objects, [(0x100, 1)]);
        assert_eq!(calls.classes[recv as usize], (0, SyncOp(3)));
        assert_eq!(calls.classes[harts_call as usize], (NONE, SyncOp(0)));
        assert_eq!(place_of(1, &harts[1], 2).unwrap(), 4);
    }

    #[test]
    fn two_calls_in_one_place_are_refused() {
        let harts = [
            events(&[(5, 2, 0, Some(0x100))]),
            events(&[(4, 3, 0, Some(0x100))]),
        ];
        let e = decode(&harts).err().unwrap().to_string();
        assert!(e.contains("two calls in place 0"), "{e}");
    }
}
