//! Aggregated loops in the recording protocol (`protocol::loops`): what
//! the recorder counts at aggregated continue tests, the replay gets back
//! outcome for outcome — the patent's ambiguous case (executions of 8, 8, 4)
//! included, across segment boundaries, and with traps in the middle of an
//! execution; and a trace recorded with a plan carries it.

use proptest::prelude::*;
use retrace_trace::protocol::loops::{LoopDecoder, LoopEncoder, Plan};
use retrace_trace::protocol::regions::{PpCount, Region, RegionKind};
use retrace_trace::protocol::{Encoder, HartDecoder};
use retrace_trace::{Header, Totals, TraceReader, TraceWriter};

#[derive(Clone, Copy, Debug)]
enum Ev {
    Branch(u64, bool),
    Trap,
    /// An indirect jump at a site to a target (a loop body's call through
    /// a table): records, and no bit.
    Indirect(u64, u64),
}

const LOOP_A: u64 = 0x100;
const LOOP_B: u64 = 0x180;
const OTHER: u64 = 0x200;
/// Loop A continues when taken, loop B when not taken.
const PLAN: [(u64, bool); 2] = [(LOOP_A, true), (LOOP_B, false)];

/// One execution of an aggregated loop: `count` continues and the exit.
fn execution(site: u64, count: u64) -> Vec<Ev> {
    let cont = PLAN.iter().find(|p| p.0 == site).unwrap().1;
    let mut v = vec![Ev::Branch(site, cont); count as usize];
    v.push(Ev::Branch(site, !cont));
    v
}

/// Record `events`, replay them; returns (bits written, loop stats runs).
fn round_trip(events: &[Ev]) -> (u64, u64) {
    let (bits, runs, _) = round_trip_segments(events);
    (bits, runs)
}

/// [`round_trip`], with the segments written too.
fn round_trip_segments(events: &[Ev]) -> (u64, u64, u32) {
    let mut buf = Vec::new();
    let w = TraceWriter::new(&mut buf, &Header::new(1, 64, 1)).unwrap();
    let mut enc = Encoder::new(w, 1);
    let mut loops = LoopEncoder::new(&mut enc, &PLAN);
    for (n, e) in events.iter().enumerate() {
        match *e {
            Ev::Branch(site, taken) => loops.branch(&mut enc, 0, site, taken),
            Ev::Trap => {
                loops.trap(&mut enc, 0);
                enc.trap(0, n as u64, 0x8000);
            }
            Ev::Indirect(site, target) => enc.indirect(0, site, target),
        }
    }
    loops.finish(&mut enc);
    let stats = loops.stats(&enc);
    let bits = enc.branches();
    let segments = enc.finish(Totals::default(), &[]).unwrap().segments;

    let mut r = TraceReader::new(&buf[..]).unwrap();
    let mut dec = LoopDecoder::read_plan(&mut r, 0).unwrap().expect("a plan");
    assert_eq!(dec.plan(), &PLAN);
    let mut hd = HartDecoder::new(0);
    for (n, e) in events.iter().enumerate() {
        match *e {
            Ev::Branch(site, taken) => {
                assert_eq!(dec.branch(&mut r, site).unwrap(), Some(taken), "event {n}")
            }
            Ev::Trap => {
                dec.trap(&r).unwrap();
                assert_eq!(hd.next_trap(&mut r, n as u64).unwrap(), Some(n as u64));
                hd.trap(&mut r).unwrap();
            }
            Ev::Indirect(site, target) => {
                assert_eq!(hd.indirect(&mut r, site).unwrap(), target, "event {n}")
            }
        }
    }
    dec.finish(&r).unwrap();
    r.finish().unwrap();
    // Every branch is a bit or a test given from the counts.
    let branches = events
        .iter()
        .filter(|e| matches!(e, Ev::Branch(..)))
        .count() as u64;
    assert_eq!(stats.tests + bits, branches);
    assert_eq!(dec.tests(), stats.tests);
    (bits, stats.runs, segments)
}

#[test]
fn executions_8_8_4_replay_exactly() {
    // US patent 8,448,140: a shared de-duplicated stream writes [02,8],[02,4] and
    // gives the second execution a count of 4. Per-loop runs: (8, ×2),
    // (4, ×1), and every execution gets its own count back.
    let mut ev = Vec::new();
    for c in [8, 8, 4] {
        ev.extend(execution(LOOP_A, c));
        ev.push(Ev::Branch(OTHER, true));
    }
    let (bits, runs) = round_trip(&ev);
    assert_eq!(bits, 3, "only the outer branch writes bits");
    assert_eq!(runs, 2);
}

#[test]
fn a_constant_count_is_one_run() {
    let mut ev = Vec::new();
    for _ in 0..1000 {
        ev.extend(execution(LOOP_B, 16));
        ev.push(Ev::Branch(OTHER, false));
    }
    assert_eq!(round_trip(&ev), (1000, 1));
}

#[test]
fn runs_split_at_segment_boundaries() {
    // More than a segment of bits (8 Mi) between executions whose counts
    // change: each segment holds the runs of its own window.
    let mut ev = Vec::new();
    for i in 0..2_200u64 {
        ev.extend(execution(LOOP_A, i % 3));
        ev.extend(execution(LOOP_B, 5));
        ev.extend(std::iter::repeat_n(Ev::Branch(OTHER, i % 2 == 0), 4000));
    }
    let (bits, _) = round_trip(&ev);
    assert_eq!(bits, 2_200 * 4000);
}

#[test]
fn mid_gap_closes_cut_executions_on_both_sides() {
    // Aggregated loops whose bodies call through a table, and no other
    // branch: no bit at all, so segments close mid-gap (their records grew
    // past a few MiB), in the middle of executions. The recorder ends the
    // execution in progress at such a close and the replay ends it where
    // it crosses the close, so every outcome comes back.
    let mut ev = Vec::new();
    let mut i = 0u64;
    for e in 0..3_500u64 {
        let (site, count) = if e % 3 == 0 {
            (LOOP_B, 7)
        } else {
            (LOOP_A, 1_000 + e % 5)
        };
        for step in execution(site, count) {
            ev.push(step);
            // A new target each time: six bytes of records per call.
            i += 1;
            ev.push(Ev::Indirect(0x4000, 0x8000_0000 + i * 2));
        }
    }
    let (bits, _, segments) = round_trip_segments(&ev);
    assert_eq!(bits, 0);
    assert!(segments >= 3, "{segments} segments");
}

#[test]
fn a_trap_ends_an_execution_and_the_next_branch_is_a_bit() {
    let mut ev = vec![
        Ev::Branch(LOOP_A, true),
        Ev::Branch(LOOP_A, true),
        Ev::Trap,
        // The handler's first branch, at an aggregated site: a bit.
        Ev::Branch(LOOP_B, true),
    ];
    ev.extend(execution(LOOP_B, 3));
    // Back in loop A after the handler returned: a new execution.
    ev.extend(execution(LOOP_A, 1));
    let (bits, _) = round_trip(&ev);
    assert_eq!(bits, 1);
}

#[test]
fn the_run_may_end_inside_an_execution() {
    let mut ev = execution(LOOP_A, 2);
    ev.extend([Ev::Branch(LOOP_A, true), Ev::Branch(LOOP_A, true)]);
    assert_eq!(round_trip(&ev).0, 0);
}

#[test]
fn a_trace_without_a_plan_has_none() {
    let mut buf = Vec::new();
    let w = TraceWriter::new(&mut buf, &Header::new(1, 64, 1)).unwrap();
    let mut enc = Encoder::new(w, 1);
    enc.branch(0, true);
    enc.finish(Totals::default(), &[]).unwrap();
    let mut r = TraceReader::new(&buf[..]).unwrap();
    assert!(LoopDecoder::read_plan(&mut r, 0).unwrap().is_none());
}

fn event() -> impl Strategy<Value = Vec<Ev>> {
    let one = prop_oneof![
        (0u64..12).prop_map(|c| execution(LOOP_A, c)),
        (0u64..12).prop_map(|c| execution(LOOP_B, c)),
        (0u64..5).prop_map(|c| {
            // An execution cut short by a trap.
            let mut v = vec![Ev::Branch(LOOP_A, true); c as usize];
            v.push(Ev::Trap);
            v
        }),
        any::<bool>().prop_map(|b| vec![Ev::Branch(OTHER, b)]),
        any::<bool>().prop_map(|b| vec![Ev::Branch(LOOP_B, b)]),
        (0u64..4).prop_map(|t| vec![Ev::Indirect(0x4000, 0x8000 + 2 * t)]),
    ];
    prop::collection::vec(one, 0..60).prop_map(|v| v.concat())
}

proptest! {
    #[test]
    fn any_sequence_round_trips(ev in event()) {
        round_trip(&ev);
    }
}

/// Fixed sites (lossy if-else aggregation): nothing is written for them,
/// the replay gets the fixed outcome every time, they do not end a loop
/// execution in progress, and the trace carries the walk's instruction
/// count in its walk block (instructions ± each site's delta whenever the
/// run went the other way).
#[test]
fn fixed_sites_write_nothing_and_carry_the_walk() {
    use retrace_trace::protocol::loops::{FixedSite, PROBABILITY_UNIT};
    const IF_A: u64 = 0x140;
    const IF_B: u64 = 0x300;
    let fixed = [
        FixedSite {
            site: IF_A,
            outcome: true,
            taken_ppm: 750_000,
            walk_delta: -2,
        },
        FixedSite {
            site: IF_B,
            outcome: false,
            taken_ppm: 100_000,
            walk_delta: 5,
        },
    ];
    let mut buf = Vec::new();
    let w = TraceWriter::new(&mut buf, &Header::new(1, 64, 1)).unwrap();
    let mut enc = Encoder::new(w, 1);
    let mut loops = LoopEncoder::with_fixed(&mut enc, &PLAN, &fixed);
    // A loop execution with an if-else inside its body (type 3 made type
    // 1/2 by the fixed site), then branches elsewhere.
    let mut ev = Vec::new();
    for k in 0..40u64 {
        for _ in 0..3 {
            ev.push((LOOP_A, true));
            ev.push((IF_A, k % 4 != 0));
        }
        ev.push((LOOP_A, false));
        ev.push((IF_B, k % 10 == 0));
        ev.push((OTHER, k % 2 == 0));
    }
    for &(site, taken) in &ev {
        loops.branch(&mut enc, 0, site, taken);
    }
    loops.finish(&mut enc);
    let stats = loops.stats(&enc);
    assert_eq!(stats.fixed, 40 * 3 + 40);
    // IF_A went the other way when k % 4 == 0 (10 × 3 times, −2 each), IF_B
    // when k % 10 == 0 (4 times, +5 each).
    assert_eq!(stats.fixed_other, 30 + 4);
    assert_eq!(stats.walk_adjust, -60 + 20);
    assert_eq!(enc.branches(), 40, "only OTHER writes bits");
    let totals = Totals {
        instructions: 10_000,
        ..Totals::default()
    };
    enc.finish(totals, &[]).unwrap();

    let t: [u8; retrace_trace::TRAILER_LEN] = buf[buf.len() - retrace_trace::TRAILER_LEN..]
        .try_into()
        .unwrap();
    assert!(retrace_trace::trailer_has_walk(&t));
    let mut r = TraceReader::new(&buf[..]).unwrap();
    let mut dec = LoopDecoder::read_plan(&mut r, 0).unwrap().expect("a plan");
    assert_eq!(dec.plan(), &PLAN);
    assert_eq!(
        dec.fixed(),
        &[(IF_A, true, 750_000), (IF_B, false, 100_000)][..]
    );
    for &(site, taken) in &ev {
        let want = match site {
            IF_A => true,
            IF_B => false,
            _ => taken,
        };
        assert_eq!(dec.branch(&mut r, site).unwrap(), Some(want));
    }
    assert_eq!(dec.fixed_visits(), &[120, 40]);
    dec.finish(&r).unwrap();
    let got = r.finish().unwrap();
    assert_eq!(got.walk_instructions, Some(10_000 - 40));
    assert_eq!(got.instructions, 10_000);
    assert!(u64::from(fixed[0].taken_ppm) <= PROBABILITY_UNIT);
    // The whole file validates, and a damaged walk block is refused.
    TraceReader::new(&buf[..]).unwrap().validate().unwrap();
    let at = buf.len() - retrace_trace::TRAILER_LEN - retrace_trace::WALK_BLOCK_LEN + 5;
    let mut bad = buf.clone();
    bad[at] ^= 1;
    assert!(TraceReader::new(&bad[..]).unwrap().validate().is_err());
}

/// A plan with collapsed regions, from proptest's numbers.
fn region_plan() -> impl Strategy<Value = Plan> {
    let pp = (0x100u64..0x10_0000, any::<i32>(), any::<i32>()).prop_map(|(start, f, t)| PpCount {
        start,
        fall: i64::from(f),
        taken: i64::from(t),
    });
    let kind = prop_oneof![
        (0x100u64..0x10_0000).prop_map(|entry| RegionKind::Function { entry }),
        (
            prop::collection::btree_set(0x100u64..0x10_0000, 1..8),
            any::<bool>(),
            any::<prop::sample::Index>()
        )
            .prop_map(|(sites, leave, i)| {
                let sites: Vec<u64> = sites.into_iter().collect();
                RegionKind::Nest {
                    exit: sites[i.index(sites.len())],
                    sites,
                    leave,
                }
            }),
    ];
    let region = (kind, 1u64..1_000_000, prop::collection::vec(pp, 0..6))
        .prop_map(|(kind, entries, pps)| Region { kind, entries, pps });
    prop::collection::vec(region, 1..5).prop_map(|regions| Plan {
        loops: PLAN.to_vec(),
        fixed: Vec::new(),
        regions,
    })
}

/// The trace bytes of an empty run recorded with `plan`.
fn trace_with(plan: &Plan) -> Vec<u8> {
    let mut buf = Vec::new();
    let w = TraceWriter::new(&mut buf, &Header::new(1, 64, 1)).unwrap();
    let mut enc = Encoder::new(w, 1);
    let mut loops = LoopEncoder::with_plan(&mut enc, plan);
    loops.collapsed(&mut enc, 7);
    loops.finish(&mut enc);
    enc.finish(
        Totals {
            instructions: 100,
            ..Totals::default()
        },
        &[],
    )
    .unwrap();
    buf
}

proptest! {
    #[test]
    fn plans_with_regions_round_trip(plan in region_plan()) {
        let buf = trace_with(&plan);
        let mut r = TraceReader::new(&buf[..]).unwrap();
        let mut dec = LoopDecoder::read_plan(&mut r, 0).unwrap().expect("a plan");
        prop_assert_eq!(dec.plan(), &PLAN[..]);
        prop_assert_eq!(dec.regions(), &plan.regions[..]);
        dec.finish(&r).unwrap();
        // A collapsed extent of 7 instructions: the replay walks 7 fewer.
        let totals = r.finish().unwrap();
        prop_assert_eq!(totals.walk_instructions, Some(93));
    }

    #[test]
    fn damaged_region_plans_are_refused_or_read(plan in region_plan(), at in any::<prop::sample::Index>(), byte in any::<u8>()) {
        // Whatever a damaged plan says, reading it never panics: it is
        // refused (checksums, bounds) or read as some plan.
        let mut buf = trace_with(&plan);
        let i = at.index(buf.len());
        buf[i] ^= byte | 1;
        if let Ok(mut r) = TraceReader::new(&buf[..]) {
            let _ = LoopDecoder::read_plan(&mut r, 0);
        }
    }
}
