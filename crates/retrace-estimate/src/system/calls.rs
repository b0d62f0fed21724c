//! The recorded synchronisation calls as the unit reads them: each hart's
//! calls decoded once into flat records (the call, its object and the
//! object's class of calls as small numbers, and — once the hart's replay
//! has reached it — where it falls in the hart's busy cycles), and the
//! recorded order of every object's calls of each kind, which tells
//! whether the replay meets them in that order.
//!
//! A run of `table` makes 1.6 million calls: what the unit does per call
//! is what the replay costs, so everything it would look up by handle is
//! numbered here first.

use retrace_sim::sync::SyncOp;
use retrace_trace::protocol::sync::{SyncEvent, SyncEvents, SET_HZ};
use retrace_trace::{DcacheMeasurement, TraceError, Varints};
use rustc_hash::FxHashMap;

/// "None" for [`Call::object`] and [`Call::class`].
pub(super) const NONE: u32 = u32::MAX;

/// One recorded call.
#[derive(Clone, Copy, Debug)]
pub(super) struct Call {
    /// Busy cycles before its `ecall` (the data-cache term included), once
    /// the hart's replay has reached it.
    pub before: u64,
    /// Its place in the recorded run's order of calls.
    pub seq: u64,
    /// Busy cycles its `ecall` and the trap take.
    pub trap: u32,
    /// Its object: an index into [`Objects::list`], or [`NONE`].
    pub object: u32,
    /// Its object and call together: an index into [`RecordedOrder`], or
    /// [`NONE`].
    pub class: u32,
    /// The call number.
    pub op: u8,
}

impl Call {
    /// Busy cycles once its `ecall` and the trap are done.
    #[inline]
    pub fn after(&self) -> u64 {
        self.before + u64::from(self.trap)
    }

    /// The call.
    #[inline]
    pub fn op(&self) -> SyncOp {
        SyncOp(self.op)
    }
}

/// The objects the harts' calls name, numbered in order of first
/// appearance, and the classes of calls on them.
#[derive(Default)]
pub(super) struct Objects {
    /// Handle and the descriptor's parameter.
    pub list: Vec<(u64, u32)>,
    ids: FxHashMap<u64, u32>,
    /// Per object: the calls made on it and their classes.
    classes: Vec<Vec<(u8, u32)>>,
    /// Classes so far.
    pub class_count: u32,
}

impl Objects {
    /// The number of the object with `handle` (its parameter as first
    /// seen), made if new.
    fn id(&mut self, handle: u64, param: u32) -> u32 {
        let next = self.list.len() as u32;
        let id = *self.ids.entry(handle).or_insert(next);
        if id == next {
            self.list.push((handle, param));
            self.classes.push(Vec::new());
        }
        id
    }

    /// The class of call `op` on object `id`, made if new.
    fn class(&mut self, id: u32, op: u8) -> u32 {
        let classes = &mut self.classes[id as usize];
        if let Some(&(_, c)) = classes.iter().find(|&&(o, _)| o == op) {
            return c;
        }
        let c = self.class_count;
        self.class_count += 1;
        classes.push((op, c));
        c
    }
}

/// One hart's recorded events.
#[derive(Default)]
pub(super) struct HartCalls {
    /// Its calls, in its order.
    pub calls: Vec<Call>,
    /// Per call, the instructions the hart executed before its `ecall`
    /// (what the replay finds the call by).
    pub ats: Vec<u64>,
    /// The values of its `set_hz` calls, in order.
    pub values: Vec<u64>,
    /// Instructions it executed in the whole run.
    pub instructions: u64,
    /// Address of its last instruction.
    pub last_pc: u64,
    /// Its own data cache's misses, per geometry measured.
    pub dcache: Vec<DcacheMeasurement>,
}

/// Decode hart `hart`'s synchronisation events (their varints, `bytes`),
/// numbering the objects and classes in `objects`.
pub(super) fn decode_hart(
    hart: u16,
    bytes: &[u8],
    objects: &mut Objects,
    order: &mut RecordedOrder,
) -> Result<HartCalls, TraceError> {
    // Four bytes a call at least.
    let most = bytes.len() / 4;
    let mut out = HartCalls {
        calls: Vec::with_capacity(most),
        ats: Vec::with_capacity(most),
        ..HartCalls::default()
    };
    // The hart's objects, by its own numbers: their numbers in `objects`
    // and the class of the last call on each.
    let mut own: Vec<(u32, u8, u32)> = Vec::new();
    let mut events = SyncEvents::new(hart, Varints(bytes));
    while let Some(event) = events.next_event()? {
        match event {
            SyncEvent::Call(call, number) => {
                let (object, class) = match (call.object, number) {
                    (Some((handle, param)), Some(i)) => {
                        if i == own.len() {
                            own.push((objects.id(handle, param), u8::MAX, NONE));
                        }
                        let (id, op, class) = &mut own[i];
                        if *op != call.op || *class == NONE {
                            *op = call.op;
                            *class = objects.class(*id, call.op);
                        }
                        (*id, *class)
                    }
                    _ => (NONE, NONE),
                };
                if call.op == SET_HZ {
                    out.values.push(call.value);
                }
                let at = call.at;
                let call = Call {
                    before: 0,
                    seq: call.seq,
                    trap: 0,
                    object,
                    class,
                    op: call.op,
                };
                if class != NONE {
                    order.note(&call);
                }
                out.ats.push(at);
                out.calls.push(call);
            }
            SyncEvent::Dcache(m) => out.dcache.push(m),
            SyncEvent::End {
                instructions,
                last_pc,
            } => {
                out.instructions = instructions;
                out.last_pc = last_pc;
            }
        }
    }
    Ok(out)
}

/// Per class of calls (an object and a call), the calls' places in the
/// recorded run's order, sorted: the order in which the recorded run made
/// them, which the replay compares its own order with. What a call
/// returns depends on the calls of its kind on its object before it — a
/// receive gets the word of the send of its own rank, whoever sent it and
/// whenever; the k-th lock is the k-th to hold the mutex; the last arrival
/// at a barrier gets 1 — not on how sends and receives interleave.
///
/// The places are those of every call of the run, 0 up: laid out by
/// place, they give each call its rank in its class in one sweep. (In a
/// damaged trace they may not be; then each class's places are sorted.)
pub(super) struct RecordedOrder {
    order: Order,
    /// Per class, the calls the replay has met.
    met: Vec<u32>,
}

enum Order {
    /// By place: each call's class while the calls are noted, its rank in
    /// its class once [`RecordedOrder::finish`]ed ([`NONE`]: no call).
    Ranks(Vec<u32>),
    /// Class `c`'s places are `seqs[starts[c]..starts[c + 1]]`.
    Sorted { starts: Vec<usize>, seqs: Vec<u64> },
}

impl RecordedOrder {
    /// For a run whose calls are spelled in `bytes` bytes of events (each
    /// call takes four at least, so its place is below a quarter of that).
    pub fn new(bytes: usize) -> RecordedOrder {
        let places = (bytes / 4 + 1).min(NONE as usize);
        RecordedOrder {
            order: Order::Ranks(vec![NONE; places]),
            met: Vec::new(),
        }
    }

    /// A recorded call (one with a class), in any order.
    #[inline]
    fn note(&mut self, call: &Call) {
        if let Order::Ranks(by_place) = &mut self.order {
            match by_place.get_mut(call.seq as usize) {
                Some(slot) if *slot == NONE => *slot = call.class,
                // Not a place of the run's calls, or one taken twice:
                // each class's places are sorted instead.
                _ => {
                    self.order = Order::Sorted {
                        starts: Vec::new(),
                        seqs: Vec::new(),
                    }
                }
            }
        }
    }

    /// Every call of `harts` noted, in `classes` classes: the order is
    /// ready to be compared with.
    pub fn finish(&mut self, harts: &[HartCalls], classes: u32) {
        let classes = classes as usize;
        self.met = vec![0; classes];
        match &mut self.order {
            Order::Ranks(by_place) => {
                let mut next = vec![0u32; classes];
                for slot in by_place.iter_mut().filter(|s| **s != NONE) {
                    let class = *slot as usize;
                    *slot = next[class];
                    next[class] += 1;
                }
            }
            Order::Sorted { starts, seqs } => {
                let calls = || {
                    harts
                        .iter()
                        .flat_map(|h| &h.calls)
                        .filter(|c| c.class != NONE)
                };
                *starts = vec![0usize; classes + 1];
                for c in calls() {
                    starts[c.class as usize + 1] += 1;
                }
                for c in 1..=classes {
                    starts[c] += starts[c - 1];
                }
                let mut fill = starts.clone();
                *seqs = vec![0u64; starts[classes]];
                for c in calls() {
                    seqs[fill[c.class as usize]] = c.seq;
                    fill[c.class as usize] += 1;
                }
                for c in 0..classes {
                    seqs[starts[c]..starts[c + 1]].sort_unstable();
                }
            }
        }
    }

    /// The replay meets `call` next among the calls of its class: whether
    /// it is the one the recorded run made next.
    #[inline]
    pub fn in_order(&mut self, call: &Call) -> bool {
        let c = call.class as usize;
        let met = self.met[c];
        self.met[c] += 1;
        match &self.order {
            Order::Ranks(rank) => rank[call.seq as usize] == met,
            Order::Sorted { starts, seqs } => {
                let at = starts[c] + met as usize;
                at < starts[c + 1] && seqs[at] == call.seq
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(seq: u64, class: u32) -> Call {
        Call {
            before: 0,
            seq,
            trap: 0,
            object: 0,
            class,
            op: 2,
        }
    }

    fn order(harts: &[&[(u64, u32)]]) -> RecordedOrder {
        let harts: Vec<HartCalls> = harts
            .iter()
            .map(|calls| HartCalls {
                calls: calls.iter().map(|&(s, c)| call(s, c)).collect(),
                ..HartCalls::default()
            })
            .collect();
        // Five calls spelled in (at least) 20 bytes.
        let mut order = RecordedOrder::new(20);
        harts
            .iter()
            .flat_map(|h| &h.calls)
            .for_each(|c| order.note(c));
        order.finish(&harts, 2);
        order
    }

    #[test]
    fn calls_met_in_the_recorded_order_of_their_class_are_in_order() {
        // Class 0: places 0, 2, 3; class 1: 1, 4 (the run's every call).
        let mut o = order(&[&[(0, 0), (3, 0)], &[(1, 1), (2, 0), (4, 1)]]);
        assert!(o.in_order(&call(0, 0)));
        assert!(o.in_order(&call(1, 1)));
        // Place 3 met before place 2: both out of order.
        assert!(!o.in_order(&call(3, 0)));
        assert!(!o.in_order(&call(2, 0)));
        assert!(o.in_order(&call(4, 1)));
    }

    #[test]
    fn places_far_apart_or_repeated_are_sorted_alike() {
        // Far apart: not laid out by place.
        let mut o = order(&[&[(1_000_000, 0)], &[(7, 0), (9_000_000, 0)]]);
        assert!(o.in_order(&call(7, 0)));
        assert!(o.in_order(&call(1_000_000, 0)));
        assert!(!o.in_order(&call(5, 0)));
        // Repeated (a damaged trace): each copy in its turn.
        let mut o = order(&[&[(3, 0)], &[(3, 0)]]);
        assert!(o.in_order(&call(3, 0)));
        assert!(o.in_order(&call(3, 0)));
        assert!(!o.in_order(&call(3, 0)));
    }
}
