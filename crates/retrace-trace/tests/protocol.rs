//! The recording protocol round trip: any sequence of execution events over
//! several harts, encoded by `protocol::Encoder` and read back by one
//! `protocol::HartDecoder` per hart (with the replay's own return stack),
//! gives the same sequence — per hart, in order — whatever the return
//! stacks' bound (the production one, or one of a few entries that calls
//! overflow all the time: both sides drop the same return points, and the
//! returns past the bound are escapes); the encoder's stacks never hold
//! more than the bound; and a trap is announced
//! (`HartDecoder::next_trap`) with its instruction count by the time it
//! happens, never with a wrong one before. And a damaged encoding
//! (truncated, a byte changed, records that were never an encoding) makes
//! the decoder answer with an error or some events, never a panic.

use proptest::prelude::*;
use retrace_trace::protocol::{Encoder, HartDecoder, ReturnStack, RETURN_STACK_BOUND};
use retrace_trace::{Header, StreamKind, Totals, TraceError, TraceReader, TraceWriter};

/// One event of one hart, as the recorder observes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Event {
    Branch(bool),
    Call {
        ret: u64,
    },
    IndirectCall {
        site: u64,
        target: u64,
        ret: u64,
    },
    Indirect {
        site: u64,
        target: u64,
    },
    TrapEntry {
        site: u64,
        handler: u64,
    },
    TrapReturn {
        site: u64,
        target: u64,
    },
    Return {
        target: u64,
    },
    /// A trap in the middle of a partial program after the hart executed
    /// `executed` instructions in all.
    Trap {
        executed: u64,
        handler: u64,
    },
    /// Code placed at `addr` after the hart executed `executed`
    /// instructions: `len` bytes made from `seed` ([`code_bytes`]).
    Code {
        executed: u64,
        addr: u64,
        seed: u64,
        len: u8,
    },
}

/// The bytes of a generated code event: `seed`'s bytes over and over.
fn code_bytes(seed: u64, len: u8) -> Vec<u8> {
    seed.to_le_bytes()
        .into_iter()
        .cycle()
        .take(usize::from(len))
        .collect()
}

/// Where a generated return goes: to the top of the stack (an ordinary
/// return), to a deeper entry (`longjmp` out of several frames), or to an
/// address that is not on the stack (stack switching).
#[derive(Clone, Copy, Debug)]
enum Ret {
    Top,
    Deeper(usize),
    Elsewhere(u64),
}

/// An event before returns are resolved against the stack (and traps
/// given their instruction count).
#[derive(Clone, Copy, Debug)]
enum Plan {
    Event(Event),
    Return(Ret),
    /// A trap `gap` instructions after the hart's previous one (0: two traps
    /// in a row, a handler that faults at once).
    Trap {
        gap: u64,
        handler: u64,
    },
    /// Code `gap` instructions after the hart's previous code event.
    Code {
        gap: u64,
        addr: u64,
        seed: u64,
        len: u8,
    },
}

/// Sites and targets from small sets, so that sites repeat targets (one-
/// and multi-byte indices) and meet new ones; some targets are large, so
/// that addresses take every varint length.
fn addr() -> impl Strategy<Value = u64> {
    prop_oneof![
        4 => (0u64..24).prop_map(|k| 0x8000_0000 + 2 * k),
        1 => any::<u64>(),
    ]
}

fn site() -> impl Strategy<Value = u64> {
    (0u64..6).prop_map(|k| 0x8000_1000 + 4 * k)
}

fn plan() -> impl Strategy<Value = Plan> {
    prop_oneof![
        6 => any::<bool>().prop_map(|b| Plan::Event(Event::Branch(b))),
        3 => addr().prop_map(|ret| Plan::Event(Event::Call { ret })),
        2 => (site(), addr(), addr())
            .prop_map(|(site, target, ret)| Plan::Event(Event::IndirectCall { site, target, ret })),
        3 => (site(), addr()).prop_map(|(site, target)| Plan::Event(Event::Indirect { site, target })),
        1 => (site(), addr())
            .prop_map(|(site, handler)| Plan::Event(Event::TrapEntry { site, handler })),
        1 => (site(), addr()).prop_map(|(site, target)| Plan::Event(Event::TrapReturn { site, target })),
        4 => Just(Plan::Return(Ret::Top)),
        1 => (1usize..4).prop_map(|k| Plan::Return(Ret::Deeper(k))),
        1 => addr().prop_map(|a| Plan::Return(Ret::Elsewhere(a))),
        2 => (prop_oneof![3 => 0u64..200, 1 => Just(0u64), 1 => any::<u32>().prop_map(u64::from)],
              prop_oneof![4 => (0u64..3).prop_map(|k| 0x8000_0100 + 0x40 * k), 1 => any::<u64>()])
            .prop_map(|(gap, handler)| Plan::Trap { gap, handler }),
        1 => (prop_oneof![3 => 0u64..200, 1 => Just(0u64)], addr(), any::<u64>(), any::<u8>())
            .prop_map(|(gap, addr, seed, len)| Plan::Code { gap, addr, seed, len }),
    ]
}

/// Per-hart event plans, interleaved in one run.
fn run() -> impl Strategy<Value = (u16, Vec<(u16, Plan)>)> {
    (1u16..=4).prop_flat_map(|harts| {
        (
            Just(harts),
            prop::collection::vec((0..harts, plan()), 0..300),
        )
    })
}

/// The unwind rule on the program's own call stack, which has no bound.
fn unwind(stack: &mut Vec<u64>, target: u64) {
    if let Some(pos) = stack.iter().rposition(|&a| a == target) {
        stack.truncate(pos);
    }
}

/// A return stack bound for a generated run: mostly one that its calls
/// overflow, sometimes the production one.
fn bound() -> impl Strategy<Value = usize> {
    prop_oneof![3 => 1usize..6, 1 => Just(RETURN_STACK_BOUND)]
}

/// Each hart's call stack as the program has it, to give generated returns
/// their targets.
struct Program {
    stacks: Vec<Vec<u64>>,
    /// Each hart's instruction count at its previous trap.
    executed: Vec<u64>,
    /// Each hart's instruction count at its previous code event.
    coded: Vec<u64>,
}

impl Program {
    fn new(harts: u16) -> Program {
        Program {
            stacks: vec![Vec::new(); usize::from(harts)],
            executed: vec![0; usize::from(harts)],
            coded: vec![0; usize::from(harts)],
        }
    }

    /// The concrete event for `plan` on `hart`.
    fn event(&mut self, hart: u16, plan: Plan) -> Event {
        let stack = &mut self.stacks[usize::from(hart)];
        let ev = match plan {
            Plan::Event(ev) => ev,
            Plan::Trap { gap, handler } => {
                let executed = &mut self.executed[usize::from(hart)];
                *executed += gap;
                Event::Trap {
                    executed: *executed,
                    handler,
                }
            }
            Plan::Code {
                gap,
                addr,
                seed,
                len,
            } => {
                let executed = &mut self.coded[usize::from(hart)];
                *executed += gap;
                Event::Code {
                    executed: *executed,
                    addr,
                    seed,
                    len,
                }
            }
            Plan::Return(r) => {
                let target = match r {
                    Ret::Top => stack.last().copied().unwrap_or(0x8000_0000),
                    Ret::Deeper(k) => stack.iter().rev().nth(k).copied().unwrap_or(0x8000_0002),
                    Ret::Elsewhere(a) => a,
                };
                Event::Return { target }
            }
        };
        match ev {
            Event::Call { ret } | Event::IndirectCall { ret, .. } => stack.push(ret),
            Event::Return { target } => {
                let top = stack.pop();
                if top != Some(target) {
                    unwind(stack, target);
                }
            }
            _ => {}
        }
        ev
    }
}

/// Resolve the returns of `plans` against each hart's call stack.
fn resolve(harts: u16, plans: &[(u16, Plan)]) -> Vec<(u16, Event)> {
    let mut program = Program::new(harts);
    plans
        .iter()
        .map(|&(hart, p)| (hart, program.event(hart, p)))
        .collect()
}

/// Tell the encoder that `ev` happened on `hart`.
fn encode_one<W: std::io::Write>(enc: &mut Encoder<W>, hart: u16, ev: Event) {
    match ev {
        Event::Branch(taken) => enc.branch(hart, taken),
        Event::Call { ret } => enc.call(hart, ret),
        Event::IndirectCall { site, target, ret } => enc.indirect_call(hart, site, target, ret),
        Event::Indirect { site, target } => enc.indirect(hart, site, target),
        Event::TrapEntry { site, handler } => enc.trap_entry(hart, site, handler),
        Event::TrapReturn { site, target } => enc.trap_return(hart, site, target),
        Event::Return { target } => {
            enc.ret(hart, target);
        }
        Event::Trap { executed, handler } => enc.trap(hart, executed, handler),
        Event::Code {
            executed,
            addr,
            seed,
            len,
        } => enc.code(hart, executed, addr, &code_bytes(seed, len)),
    }
}

/// Encode `events` into a trace of `harts` harts with return stacks of
/// `bound` entries; the trace, the counts its trailer holds (checked
/// against the encoder's own) and its segments. No stack holds more than
/// `bound` entries at any time.
fn encode(
    harts: u16,
    bound: usize,
    events: impl IntoIterator<Item = (u16, Event)>,
) -> (Vec<u8>, Totals, u32) {
    let mut buf = Vec::new();
    let writer = TraceWriter::new(&mut buf, &Header::new(7, 64, harts)).unwrap();
    let mut enc = Encoder::with_stack_bound(writer, usize::from(harts), bound);
    for (hart, ev) in events {
        encode_one(&mut enc, hart, ev);
        assert!(enc.stack_depth().0 <= bound, "{:?}", enc.stack_depth());
    }
    let events = enc.events();
    let counted = Totals {
        branches: enc.branches(),
        indirect: events.indirect,
        escapes: events.escapes,
        ..Totals::default()
    };
    let segments = enc.finish(Totals::default(), &[]).unwrap().segments;
    let totals = TraceReader::new(&buf[..]).unwrap().validate().unwrap();
    assert_eq!(totals, counted);
    (buf, totals, segments)
}

/// One hart's replay state: its decoder and the replay's own return stack
/// (of return addresses here; of partial programs in the real replay).
struct Replay {
    decoder: HartDecoder,
    stack: ReturnStack<u64>,
    matched: u64,
    escapes: u64,
}

/// Every hart's replay state.
struct Replays(Vec<Replay>);

impl Replays {
    fn new(harts: u16, bound: usize) -> Replays {
        Replays(
            (0..harts)
                .map(|h| Replay {
                    decoder: HartDecoder::new(h),
                    stack: ReturnStack::with_bound(bound),
                    matched: 0,
                    escapes: 0,
                })
                .collect(),
        )
    }

    /// What the trace says happened at the event of `hart` whose kind (and
    /// site, and return address) is `shape`'s — what the program tells the
    /// replay.
    fn step(
        &mut self,
        r: &mut TraceReader<&[u8]>,
        hart: u16,
        shape: Event,
    ) -> Result<Event, TraceError> {
        let h = &mut self.0[usize::from(hart)];
        Ok(match shape {
            Event::Branch(_) => {
                Event::Branch(h.decoder.branch(r)?.ok_or(TraceError::Exhausted {
                    hart,
                    what: "a branch bit",
                })?)
            }
            Event::Call { ret } => {
                h.stack.push(ret);
                Event::Call { ret }
            }
            Event::IndirectCall { site, ret, .. } => {
                let target = h.decoder.indirect(r, site)?;
                h.stack.push(ret);
                Event::IndirectCall { site, target, ret }
            }
            Event::Indirect { site, .. } => Event::Indirect {
                site,
                target: h.decoder.indirect(r, site)?,
            },
            Event::TrapEntry { site, .. } => Event::TrapEntry {
                site,
                handler: h.decoder.indirect(r, site)?,
            },
            Event::TrapReturn { site, .. } => Event::TrapReturn {
                site,
                target: h.decoder.indirect(r, site)?,
            },
            Event::Return { .. } => {
                let top = h.stack.pop();
                let target = match h.decoder.escape(r, h.matched)? {
                    Some(target) => {
                        h.matched = 0;
                        h.escapes += 1;
                        h.stack.unwind(target, |&a| a);
                        target
                    }
                    None => {
                        h.matched += 1;
                        top.ok_or(TraceError::Exhausted {
                            hart,
                            what: "a return address (the stack is empty)",
                        })?
                    }
                };
                Event::Return { target }
            }
            Event::Trap { .. } => {
                // Announced by now (nothing of this hart lies between the
                // event before and the trap), then taken.
                let executed = h.decoder.next_trap(r, 0)?.ok_or(TraceError::Exhausted {
                    hart,
                    what: "a trap (none announced)",
                })?;
                Event::Trap {
                    executed,
                    handler: h.decoder.trap(r)?,
                }
            }
            Event::Code { .. } => {
                let executed = h.decoder.next_code(r, 0)?.ok_or(TraceError::Exhausted {
                    hart,
                    what: "a code event (none announced)",
                })?;
                let (addr, bytes) = h.decoder.code(r)?;
                // Any bytes: the shape's seed and length stand for them.
                let (seed, len) = match shape {
                    Event::Code { seed, len, .. } if bytes == code_bytes(seed, len) => (seed, len),
                    _ => (u64::MAX, u8::MAX),
                };
                Event::Code {
                    executed,
                    addr,
                    seed,
                    len,
                }
            }
        })
    }

    /// Whatever `hart`'s decoder announces as its next trap is the next
    /// trap in `rest` (the hart's events still to come), with its count.
    fn announced_correctly(
        &self,
        r: &mut TraceReader<&[u8]>,
        hart: u16,
        rest: &[(u16, Event)],
    ) -> Result<bool, TraceError> {
        let announced = self.0[usize::from(hart)].decoder.next_trap(r, 0)?;
        let next = rest.iter().find_map(|&(h, e)| match e {
            Event::Trap { executed, .. } if h == hart => Some(executed),
            _ => None,
        });
        // And the next code event likewise.
        let code = self.0[usize::from(hart)].decoder.next_code(r, 0)?;
        let next_code = rest.iter().find_map(|&(h, e)| match e {
            Event::Code { executed, .. } if h == hart => Some(executed),
            _ => None,
        });
        Ok((announced.is_none() || announced == next) && (code.is_none() || code == next_code))
    }

    fn escapes(&self) -> u64 {
        self.0.iter().map(|h| h.escapes).sum()
    }
}

/// Decode along `shape` with return stacks of `bound` entries: the events
/// as decoded and the escapes met.
fn decode(
    r: &mut TraceReader<&[u8]>,
    harts: u16,
    bound: usize,
    shape: &[(u16, Event)],
) -> Result<(Vec<(u16, Event)>, u64), TraceError> {
    let mut replays = Replays::new(harts, bound);
    let mut out = Vec::with_capacity(shape.len());
    for (i, &(hart, ev)) in shape.iter().enumerate() {
        if !replays.announced_correctly(r, hart, &shape[i..])? {
            return Err(TraceError::Exhausted {
                hart,
                what: "the right trap (another one was announced)",
            });
        }
        out.push((hart, replays.step(r, hart, ev)?));
    }
    Ok((out, replays.escapes()))
}

fn per_hart(harts: u16, events: &[(u16, Event)]) -> Vec<Vec<Event>> {
    (0..harts)
        .map(|h| events.iter().filter(|e| e.0 == h).map(|e| e.1).collect())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn events_round_trip((harts, plans) in run(), bound in bound()) {
        let events = resolve(harts, &plans);
        let (buf, totals, _) = encode(harts, bound, events.iter().copied());
        let mut r = TraceReader::new(&buf[..]).unwrap();
        let (decoded, escapes) = decode(&mut r, harts, bound, &events).unwrap();
        prop_assert_eq!(per_hart(harts, &decoded), per_hart(harts, &events));
        prop_assert_eq!(escapes, totals.escapes);
        // Nothing recorded is left over.
        r.finish().unwrap();
    }

    #[test]
    fn damaged_encodings_do_not_panic(
        (harts, plans) in run(),
        cut in any::<prop::sample::Index>(),
        flip in any::<prop::sample::Index>(),
        mask in 1u8..=255,
        truncate in any::<bool>(),
        bound in bound(),
    ) {
        let events = resolve(harts, &plans);
        let (mut buf, _, _) = encode(harts, bound, events.iter().copied());
        if truncate {
            buf.truncate(cut.index(buf.len()));
        } else {
            let i = flip.index(buf.len());
            buf[i] ^= mask;
        }
        if let Ok(mut r) = TraceReader::new(&buf[..]) {
            if decode(&mut r, harts, bound, &events).is_ok() {
                let _ = r.finish();
            }
        }
    }

    /// Record streams that no encoder wrote — any indices, zeros, counts and
    /// addresses, for any hart — decoded along any plan.
    #[test]
    fn arbitrary_records_do_not_panic(
        (harts, plans) in run(),
        items in prop::collection::vec((0u16..4, 0u8..4, prop_oneof![0u64..4, any::<u64>()]), 0..100),
        bits in prop::collection::vec((0u16..4, any::<bool>()), 0..100),
    ) {
        let mut buf = Vec::new();
        let mut w = TraceWriter::new(&mut buf, &Header::new(7, 64, 4)).unwrap();
        for (hart, kind, v) in items {
            let kind = [StreamKind::Indirect, StreamKind::Escapes, StreamKind::Traps, StreamKind::Code][usize::from(kind)];
            w.record(hart, kind, v);
        }
        for (hart, b) in bits {
            w.branch(hart, b);
        }
        w.finish(&Totals::default()).unwrap();
        let events = resolve(harts, &plans);
        let mut r = TraceReader::new(&buf[..]).unwrap();
        if decode(&mut r, harts, 3, &events).is_ok() {
            let _ = r.finish();
        }
    }
}

/// A run long enough for several segments (a segment closes after 8 Mi
/// bits of one hart): the decoders cross segment boundaries with events of
/// every kind on both sides of them, and escapes peeked for in the segment
/// that holds them. Generated twice from one seed rather than kept.
/// Eleven million events of two harts (hart 1 has one in sixteen), made
/// the same way every time: enough bits for several segments.
fn two_harts_across_segments() -> impl Iterator<Item = (u16, Event)> {
    const EVENTS: usize = 11_000_000;
    {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut program = Program::new(2);
        std::iter::repeat_with(move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let r = x;
            let hart = u16::from(r & 0xf == 0);
            let a = 0x8000_0000 + (r >> 20) % 64 * 2;
            let site = 0x8000_1000 + (r >> 40) % 8 * 4;
            let plan = match (r >> 8) % 128 {
                0..=2 => Plan::Event(Event::Call { ret: a }),
                3 => Plan::Event(Event::IndirectCall {
                    site,
                    target: a,
                    ret: a + 0x100,
                }),
                4 | 5 => Plan::Event(Event::Indirect { site, target: a }),
                6..=8 => Plan::Return(Ret::Top),
                9 if (r >> 30).is_multiple_of(16) => Plan::Return(Ret::Elsewhere(a)),
                10 if (r >> 30).is_multiple_of(4) => Plan::Trap {
                    gap: (r >> 24) % 300,
                    handler: 0x8000_0100 + (r >> 50) % 2 * 0x40,
                },
                _ => Plan::Event(Event::Branch(r >> 63 == 1)),
            };
            (hart, program.event(hart, plan))
        })
        .take(EVENTS)
    }
}

#[test]
fn events_round_trip_across_segments() {
    let run = two_harts_across_segments;
    let (buf, totals, segments) = encode(2, RETURN_STACK_BOUND, run());
    assert!(
        segments >= 2 && totals.escapes > 0,
        "{segments} segments, {totals:?}"
    );
    let traps = run().filter(|e| matches!(e.1, Event::Trap { .. })).count();
    assert!(traps > 1000, "{traps} traps");
    let mut r = TraceReader::new(&buf[..]).unwrap();
    let mut replays = Replays::new(2, RETURN_STACK_BOUND);
    for (i, (hart, ev)) in run().enumerate() {
        let got = replays.step(&mut r, hart, ev).unwrap();
        assert_eq!(got, ev, "event {i} of hart {hart}");
    }
    assert_eq!(replays.escapes(), totals.escapes);
    r.finish().unwrap();
}

/// The same trace read one hart at a time, each by a reader that follows
/// its hart alone (`TraceReader::follow_hart`, as the replay of several
/// harts reads them): every hart's events come back in its order (a trap
/// asked for, and found announced, at its own event), though the segments
/// close before the other hart's bits; nothing of its streams is left over.
#[test]
fn each_hart_round_trips_on_a_reader_of_its_own() {
    let run = two_harts_across_segments;
    let (buf, totals, segments) = encode(2, RETURN_STACK_BOUND, run());
    assert!(segments >= 2, "{segments} segments");
    let mut escapes = 0;
    for hart in 0..2u16 {
        let mut r = TraceReader::new(&buf[..])
            .unwrap()
            .follow_hart(hart)
            .unwrap();
        let mut replays = Replays::new(2, RETURN_STACK_BOUND);
        let mine: Vec<(u16, Event)> = run().filter(|e| e.0 == hart).collect();
        for (i, &(_, ev)) in mine.iter().enumerate() {
            let got = replays.step(&mut r, hart, ev).unwrap();
            assert_eq!(got, ev, "event {i} of hart {hart}");
        }
        escapes += replays.escapes();
        r.finish().unwrap();
    }
    assert_eq!(escapes, totals.escapes);
}

/// A program that calls a million times without returning (a function
/// that calls itself forever, cut here) keeps neither side's return stack
/// deeper than the bound — before the bound they grew with every call,
/// without limit — and when it then returns through all those calls, the
/// first `RETURN_STACK_BOUND` returns match and every one past the bound is
/// an escape, on both sides alike.
#[test]
fn calls_deeper_than_the_bound_round_trip() {
    const CALLS: u64 = 1_000_000;
    let mut program = Program::new(1);
    let mut events: Vec<(u16, Event)> = (0..CALLS)
        .map(|i| {
            let ret = 0x8000_0000 + 4 * (i % 5000);
            (0, program.event(0, Plan::Event(Event::Call { ret })))
        })
        .collect();
    events.push((0, Event::Branch(true)));
    events.extend((0..CALLS).map(|_| (0, program.event(0, Plan::Return(Ret::Top)))));
    let (buf, totals, _) = encode(1, RETURN_STACK_BOUND, events.iter().copied());
    assert_eq!(totals.escapes, CALLS - RETURN_STACK_BOUND as u64);
    let mut r = TraceReader::new(&buf[..]).unwrap();
    let mut replays = Replays::new(1, RETURN_STACK_BOUND);
    for (i, &(hart, ev)) in events.iter().enumerate() {
        let got = replays.step(&mut r, hart, ev).unwrap();
        assert_eq!(got, ev, "event {i}");
        assert!(replays.0[0].stack.len() <= RETURN_STACK_BOUND);
    }
    assert_eq!(replays.escapes(), totals.escapes);
    r.finish().unwrap();
}

/// A run that writes records and not a single branch bit — an endless loop
/// of indirect calls through a table, returns that escape, traps — cut
/// after millions of events: segments close mid-gap (before an event other
/// than a bit) once their records pass a few MiB, so the trace has many
/// segments of bounded size, where one segment used to grow with the run
/// until the reader refused it. Every event decodes as recorded, each trap
/// announced before it is taken, and the reader holds a few MiB.
#[test]
fn a_run_without_branches_still_closes_segments() {
    const EVENTS: u64 = 3_000_000;
    let run = || {
        let mut program = Program::new(1);
        (0..EVENTS).map(move |i| {
            // Targets all over memory: a new one at almost every event, so
            // the records are long (a 0 and a five-byte address).
            let far = 0x8000_0000 + (i.wrapping_mul(0x9e37_79b9) % (1 << 30)) * 2;
            let plan = match i % 16 {
                0 => Plan::Event(Event::Call { ret: far }),
                1 => Plan::Return(Ret::Elsewhere(far + 2)),
                2 if i % 1024 == 2 => Plan::Trap {
                    gap: 7,
                    handler: 0x8000_0100,
                },
                _ => Plan::Event(Event::Indirect {
                    site: 0x8000_1000 + (i % 8) * 4,
                    target: far,
                }),
            };
            (0, program.event(0, plan))
        })
    };
    let (buf, totals, segments) = encode(1, RETURN_STACK_BOUND, run());
    assert_eq!(totals.branches, 0);
    assert!(segments >= 3, "{segments} segments for {} bytes", buf.len());
    let mut r = TraceReader::new(&buf[..]).unwrap();
    let mut replays = Replays::new(1, RETURN_STACK_BOUND);
    let events: Vec<_> = run().collect();
    let mut most = 0;
    for (i, &(hart, ev)) in events.iter().enumerate() {
        // Traps are announced before they are taken (checked at the event
        // before each one: scanning ahead from every event is quadratic).
        if matches!(events.get(i + 1), Some((_, Event::Trap { .. }))) {
            assert!(
                replays
                    .announced_correctly(&mut r, hart, &events[i + 1..])
                    .unwrap(),
                "event {i}"
            );
        }
        let got = replays.step(&mut r, hart, ev).unwrap();
        assert_eq!(got, ev, "event {i}");
        most = most.max(r.buffered_bytes());
    }
    assert_eq!(replays.escapes(), totals.escapes);
    r.finish().unwrap();
    assert!(most < 24 << 20, "the reader held {most} bytes");
}
