//! Write → read round trips, and the reader's answers to damaged input.

use proptest::prelude::*;
use retrace_testkit::Rng;
use retrace_trace::{Header, StreamKind, Totals, TraceError, TraceReader, TraceWriter};

/// A trace with `bits` branch bits (pattern from `seed`) and an indirect
/// record after every 1000th bit.
fn sample(bits: u64, seed: u64) -> (Vec<u8>, Vec<bool>, Vec<u64>) {
    let mut header = Header::new(0xfeed_beef, 64, 1);
    header.program = "sort-rv64-O2.elf".into();
    header.args = vec!["100".into()];
    let mut buf = Vec::new();
    let mut w = TraceWriter::new(&mut buf, &header).unwrap();
    let mut rng = Rng::new(seed);
    let (mut expect_bits, mut expect_recs) = (Vec::new(), Vec::new());
    for i in 0..bits {
        let x = rng.next_u64();
        let b = x & 1 == 1;
        w.branch(0, b);
        expect_bits.push(b);
        if i % 1000 == 999 {
            w.record(0, StreamKind::Indirect, x >> 40);
            expect_recs.push(x >> 40);
        }
    }
    let totals = Totals {
        instructions: bits * 7,
        branches: bits,
        indirect: expect_recs.len() as u64,
        escapes: 0,
        exit_code: 3,
        last_pc: 0x8000_0100,
        walk_instructions: None,
    };
    w.finish(&totals).unwrap();
    (buf, expect_bits, expect_recs)
}

/// Consume a trace the way its recorder produced it.
fn consume(buf: &[u8]) -> Result<(Vec<bool>, Vec<u64>, Totals), TraceError> {
    let mut r = TraceReader::new(buf)?;
    let (mut bits, mut recs) = (Vec::new(), Vec::new());
    while let Some(b) = r.next_bit(0)? {
        bits.push(b);
        if bits.len() % 1000 == 0 {
            recs.push(r.next_record(0, StreamKind::Indirect)?.unwrap_or(u64::MAX));
        }
    }
    let t = r.finish()?;
    Ok((bits, recs, t))
}

#[test]
fn roundtrip_across_many_segments() {
    // 20 Mi bits: three segments of 8 Mi bits.
    let (buf, bits, recs) = sample(20 << 20, 7);
    let (b2, r2, t) = consume(&buf).unwrap();
    assert_eq!(b2.len(), bits.len());
    assert!(b2 == bits, "bits differ");
    assert_eq!(r2, recs);
    assert_eq!(t.branches, 20 << 20);
    assert_eq!(t.exit_code, 3);
    // Random bits do not compress: ~1 bit per branch plus framing.
    assert!(buf.len() < (20 << 20) / 8 + 200_000, "{} bytes", buf.len());
}

/// Reading through windows (what a memoising replay does) gives the same
/// items as reading one by one, across segment boundaries.
#[test]
fn windows_read_what_single_items_read() {
    let (buf, bits, recs) = sample((8 << 20) + 5000, 11);
    let mut r = TraceReader::new(&buf[..]).unwrap();
    let (mut got_bits, mut got_recs) = (Vec::new(), Vec::new());
    let mut step = 1u32;
    loop {
        let (w, valid) = r.bit_window(0);
        if valid == 0 {
            // The segment is used up: the single-item call loads the next.
            match r.next_bit(0).unwrap() {
                Some(b) => got_bits.push(b),
                None => break,
            }
        } else {
            // Take an irregular number of bits from the window.
            step = step % 61 + 3;
            let n = step.min(valid);
            assert!(
                valid == 64 || w >> valid == 0,
                "bits beyond the valid ones are 0"
            );
            for k in 0..n {
                got_bits.push((w >> k) & 1 == 1);
            }
            r.skip_bits(0, n);
        }
        // Records are due after every 1000th bit; take them through the
        // byte window when one is due.
        while (got_recs.len() + 1) * 1000 <= got_bits.len() {
            let bytes = r.record_bytes(0, StreamKind::Indirect);
            assert!(!bytes.is_empty(), "record {} missing", got_recs.len());
            let (v, len) = retrace_trace::decode_varint(bytes).unwrap();
            r.skip_records(0, StreamKind::Indirect, len, 1);
            got_recs.push(v);
        }
    }
    assert!(got_bits == bits, "bits differ");
    assert_eq!(got_recs, recs);
    r.finish().unwrap();
}

#[test]
fn dcache_measurements_roundtrip() {
    let mut buf = Vec::new();
    let mut w = TraceWriter::new(&mut buf, &Header::new(1, 32, 1)).unwrap();
    w.branch(0, true);
    let m = retrace_trace::DcacheMeasurement {
        size: 16384,
        ways: 4,
        line: 64,
        accesses: 1000,
        misses: 37,
    };
    let totals = Totals {
        instructions: 5000,
        ..Totals::default()
    };
    w.finish_with(&totals, &[m]).unwrap();
    let mut r = TraceReader::new(&buf[..]).unwrap();
    assert_eq!(r.next_bit(0).unwrap(), Some(true));
    let (_, d) = r.finish_all().unwrap();
    assert_eq!(d, vec![m]);
    assert!((d[0].miss_rate() - 0.037).abs() < 1e-12);
}

/// A measurements block with a valid checksum but figures no run can have
/// (more misses than accesses once printed 1.86e15 cycles) is refused,
/// naming what is wrong.
#[test]
fn implausible_measurements_are_refused() {
    let good = retrace_trace::DcacheMeasurement {
        size: 16384,
        ways: 4,
        line: 64,
        accesses: 1000,
        misses: 37,
    };
    let cases = [
        (
            retrace_trace::DcacheMeasurement {
                misses: 1001,
                ..good
            },
            "1001 misses out of 1000 accesses",
        ),
        (
            retrace_trace::DcacheMeasurement { line: 2, ..good },
            "cache geometry",
        ),
        (
            retrace_trace::DcacheMeasurement { size: 3000, ..good },
            "cache geometry",
        ),
        (
            retrace_trace::DcacheMeasurement { size: 64, ..good },
            "cache geometry",
        ),
        (
            retrace_trace::DcacheMeasurement {
                accesses: 1 << 40,
                ..good
            },
            "data accesses",
        ),
    ];
    for (m, why) in cases {
        let mut buf = Vec::new();
        let mut w = TraceWriter::new(&mut buf, &Header::new(1, 32, 1)).unwrap();
        w.branch(0, true);
        let totals = Totals {
            instructions: 5000,
            ..Totals::default()
        };
        w.finish_with(&totals, &[m]).unwrap();
        let mut r = TraceReader::new(&buf[..]).unwrap();
        assert_eq!(r.next_bit(0).unwrap(), Some(true));
        let err = r.finish_all().unwrap_err().to_string();
        assert!(err.contains(why), "{m:?}: {err}");
    }
}

#[test]
fn header_survives() {
    let (buf, _, _) = sample(10, 1);
    let r = TraceReader::new(&buf[..]).unwrap();
    assert_eq!(r.header().identity, 0xfeed_beef);
    assert_eq!(r.header().xlen, 64);
    assert_eq!(r.header().program, "sort-rv64-O2.elf");
    assert_eq!(r.header().args, vec!["100".to_string()]);
}

#[test]
fn not_a_trace_and_wrong_version() {
    assert!(matches!(
        TraceReader::new(&b"\x7fELF...."[..]),
        Err(TraceError::NotATrace)
    ));
    let (mut buf, _, _) = sample(10, 1);
    buf[8] = 9;
    let e = TraceReader::new(&buf[..]).err().unwrap();
    assert!(
        matches!(e, TraceError::UnsupportedVersion { found: 9, .. }),
        "{e}"
    );
}

#[test]
fn truncation_is_named() {
    let (buf, _, _) = sample(5000, 3);
    for cut in [buf.len() - 1, buf.len() - 60, buf.len() / 2, 40] {
        let e = consume(&buf[..cut]).expect_err("truncated trace accepted");
        let msg = e.to_string();
        assert!(
            matches!(e, TraceError::Truncated { .. }),
            "cut at {cut}: {msg}"
        );
        assert!(msg.contains("offset"), "{msg}");
    }
}

#[test]
fn corruption_is_caught_by_checksums() {
    let (buf, _, _) = sample(5000, 3);
    // Flip one byte in the first segment's payload.
    let mut bad = buf.clone();
    let header_len = 12 + u16::from_le_bytes([buf[10], buf[11]]) as usize + 4;
    bad[header_len + 25] ^= 0x40;
    let e = consume(&bad).err().unwrap();
    assert!(
        e.to_string().contains("checksum mismatch in segment 0"),
        "{e}"
    );
}

#[test]
fn replay_that_stops_early_is_a_desync() {
    let (buf, _, _) = sample(5000, 3);
    let mut r = TraceReader::new(&buf[..]).unwrap();
    r.next_bit(0).unwrap();
    let e = r.finish().err().unwrap();
    assert!(matches!(e, TraceError::Desync { .. }), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let _ = consume(&bytes);
    }

    #[test]
    fn mutated_traces_never_panic(seed in any::<u64>(), pos in any::<usize>(), val in any::<u8>(), cut in any::<usize>()) {
        let (mut buf, _, _) = sample(3000, seed);
        let p = pos % buf.len();
        buf[p] = val;
        let c = cut % (buf.len() + 1);
        let _ = consume(&buf[..c]);
    }

    #[test]
    fn roundtrip_any_length(n in 0u64..5000, seed in any::<u64>()) {
        let (buf, bits, recs) = sample(n, seed);
        let (b2, r2, t) = consume(&buf).unwrap();
        prop_assert_eq!(b2, bits);
        prop_assert_eq!(r2, recs);
        prop_assert_eq!(t.branches, n);
    }
}
