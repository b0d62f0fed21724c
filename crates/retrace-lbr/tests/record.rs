//! Recording end to end: the writer runtime, the buffer and the control
//! program must deliver every pair exactly once, in every mode and at any
//! speed of the reader.

mod common;

use retrace_lbr::control::Mode;
use retrace_lbr::record::{record, RecordOptions};
use retrace_lbr::Recording;
use rustc_hash::FxHashMap;
use std::time::Duration;

/// Into every site as many pairs lead as leave it, but the last one; one
/// pair comes from nowhere (the run's first block). A lost, repeated or
/// torn slot breaks this.
fn assert_chain(rec: &Recording) {
    let mut balance: FxHashMap<u64, i64> = FxHashMap::default();
    let mut starts = 0;
    for p in &rec.pairs {
        let n = p.count as i64;
        *balance.entry(p.to).or_insert(0) += n;
        if p.from == 0 {
            starts += n;
        } else {
            *balance.entry(p.from).or_insert(0) -= n;
        }
    }
    assert_eq!(starts, 1, "exactly one pair starts the run");
    let ends: Vec<_> = balance.iter().filter(|(_, &b)| b != 0).collect();
    assert_eq!(ends.len(), 1, "one site ends the chain, got {ends:x?}");
    assert_eq!(*ends[0].1, 1);
}

fn assert_complete(rec: &Recording) {
    assert!(rec.counts.writer_finished, "the writer's exit handler ran");
    assert_eq!(rec.counts.writer_pairs, rec.counts.reader_pairs);
    let sum: u64 = rec.pairs.iter().map(|p| p.exact.unwrap_or(p.count)).sum();
    assert_eq!(sum, rec.counts.reader_pairs);
    assert_eq!(rec.counts.foreign_calls, 0);
}

#[test]
fn stress_every_pair_arrives_once_through_small_and_large_buffers() {
    let Some(cc) = common::cc() else { return };
    let dir = tempfile::tempdir().unwrap();
    let driver = common::stress_driver(&cc, dir.path());
    for (log2, steps) in [(4u32, 2_000_000u64), (16, 20_000_000)] {
        let mut opts =
            RecordOptions::new(driver.clone(), vec![steps.to_string().into()], Mode::Exact);
        opts.capacity_log2 = log2;
        let rec = record(&opts).unwrap();
        assert_complete(&rec);
        // main's block does not exist (the driver is not instrumented):
        // one pair per step.
        assert_eq!(rec.counts.reader_pairs, steps, "2^{log2} slots");
        assert_chain(&rec);
        assert_eq!(
            rec.pairs.iter().filter(|p| p.from != 0).count() as u64,
            64 * 64
        );
    }
}

#[test]
fn a_throttled_reader_loses_no_pair() {
    let Some(cc) = common::cc() else { return };
    let dir = tempfile::tempdir().unwrap();
    let w = common::example_writer(&cc, dir.path(), "crc32");
    let args = vec!["512".into(), "4".into()];
    let fast = record(&RecordOptions::new(w.clone(), args.clone(), Mode::Exact)).unwrap();
    let mut slow = RecordOptions::new(w, args, Mode::Exact);
    slow.capacity_log2 = 6;
    slow.throttle = Some(Duration::from_micros(200));
    let slow = record(&slow).unwrap();
    assert_complete(&slow);
    assert!(
        slow.counts.writer_waits > 100,
        "the writer had to wait ({} times)",
        slow.counts.writer_waits
    );
    // The same deterministic run: the same pairs, the same counts.
    assert_eq!(slow.pairs, fast.pairs);
    assert_eq!(slow.exit, fast.exit);
}

#[test]
fn chains_add_up_to_the_pairs_and_join_them() {
    let Some(cc) = common::cc() else { return };
    let dir = tempfile::tempdir().unwrap();
    for (program, args) in [("sort", vec!["3000"]), ("dijkstra", vec![])] {
        let w = common::example_writer(&cc, dir.path(), program);
        let run = |chains: bool| {
            let mut opts = RecordOptions::new(
                w.clone(),
                args.iter().map(Into::into).collect(),
                Mode::Exact,
            );
            opts.chains = chains;
            record(&opts).unwrap()
        };
        let (without, with) = (run(false), run(true));
        assert!(
            without.chains.is_empty(),
            "{program}: chains only when asked"
        );
        // Counting chains counts the same pairs (the run is deterministic).
        assert_eq!(without.pairs, with.pairs, "{program}");
        assert_complete(&with);
        // Each pair's chains add up to its count, and the pair before each
        // chain's pair was recorded.
        let mut sums: std::collections::HashMap<(u64, u64), u64> = Default::default();
        for c in &with.chains {
            *sums.entry((c.from, c.to)).or_default() += c.count;
            assert_eq!(c.before.len(), retrace_lbr::control::CHAIN_BEFORE);
            if c.before[0] != 0 {
                assert!(
                    with.pairs
                        .iter()
                        .any(|p| (p.from, p.to) == (c.before[0], c.from)),
                    "{program}: {c:?} follows no recorded pair"
                );
            }
        }
        let mut counts: std::collections::HashMap<(u64, u64), u64> = Default::default();
        for p in &with.pairs {
            *counts.entry((p.from, p.to)).or_default() += p.count;
        }
        assert_eq!(sums, counts, "{program}");
        assert!(with.chains.len() >= with.pairs.len(), "{program}");
    }
}

#[test]
fn exact_mode_counts_what_the_writer_wrote_on_example_programs() {
    let Some(cc) = common::cc() else { return };
    let dir = tempfile::tempdir().unwrap();
    for (program, args) in [
        ("sort", vec!["3000"]),
        ("dijkstra", vec![]),
        ("hashtab", vec![]),
    ] {
        let w = common::example_writer(&cc, dir.path(), program);
        let plain = std::process::Command::new(&w).args(&args).output().unwrap();
        let rec = record(&RecordOptions::new(
            w,
            args.iter().map(Into::into).collect(),
            Mode::Exact,
        ))
        .unwrap();
        assert_complete(&rec);
        assert_chain(&rec);
        assert_eq!(
            Some(rec.exit),
            plain.status.code(),
            "{program} exits the same"
        );
        assert!(
            rec.counts.reader_pairs > 10_000,
            "{program}: {}",
            rec.counts.reader_pairs
        );
    }
}

#[test]
fn sampled_counts_follow_exact_counts() {
    let Some(cc) = common::cc() else { return };
    let dir = tempfile::tempdir().unwrap();
    let w = common::example_writer(&cc, dir.path(), "sort");
    let mut opts = RecordOptions::new(
        w,
        vec!["60000".into()],
        Mode::Blocks {
            spin: 64,
            also_exact: true,
        },
    );
    opts.period_ns = 20_000;
    let rec = match record(&opts) {
        Ok(r) => r,
        Err(retrace_lbr::Error::Perf(why)) => {
            assert!(!common::require_tools(), "sampling refused: {why}");
            eprintln!("skipping: {why}");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    assert_complete(&rec);
    let s = rec.sampling.as_ref().unwrap();
    assert_eq!(s.blocks as usize, rec.pairs.len());
    assert!(s.in_blocks > 1000, "samples in blocks: {}", s.in_blocks);
    // Σ|estimate − exact| over all pairs, as a share of all pairs.
    let exact: u64 = rec.pairs.iter().map(|p| p.exact.unwrap()).sum();
    assert_eq!(exact, rec.counts.reader_pairs);
    let err: f64 = rec
        .pairs
        .iter()
        .map(|p| (p.count as f64 - p.exact.unwrap() as f64).abs())
        .sum::<f64>()
        / exact as f64;
    eprintln!(
        "sampled vs exact: {:.2}% of pairs misattributed, {} samples",
        100.0 * err,
        s.in_blocks
    );
    assert!(err < 0.25, "sampling error {:.1}%", 100.0 * err);
}

#[test]
fn a_writer_tracing_comparisons_loses_no_pair_or_value() {
    let Some(cc) = common::cc() else { return };
    let dir = tempfile::tempdir().unwrap();
    let w = common::writer_with(
        &cc,
        dir.path(),
        "exprparse",
        &[common::programs().join("exprparse.c")],
        &["-O2", "-g"],
        true,
    );
    let fast = record(&RecordOptions::new(w.clone(), vec![], Mode::Exact)).unwrap();
    let mut opts = RecordOptions::new(w, vec![], Mode::Exact);
    opts.capacity_log2 = 6;
    opts.throttle = Some(Duration::from_micros(200));
    let slow = record(&opts).unwrap();
    for rec in [&fast, &slow] {
        assert_complete(rec);
        assert_chain(rec);
        assert!(
            rec.counts.reader_values > 0,
            "the lexer's switches report values"
        );
        assert_eq!(rec.counts.writer_values, rec.counts.reader_values);
        assert!(rec.pairs.iter().any(|p| p.value.is_some()));
        assert!(rec.pairs.iter().any(|p| p.relations.is_some()));
    }
    assert_eq!(slow.pairs, fast.pairs);
}
