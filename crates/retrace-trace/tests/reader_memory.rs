//! The reader's memory does not grow with the length of the run
//! (docs/FORMATS.md, "Closing rule"): it holds one segment — stored,
//! decompressed, and split into per-hart streams — and a segment closes at
//! about 1 MiB of branch bits per hart. Read a run of 100 million branches
//! (twelve segments) with records between them, and check the reader's
//! buffers after every segment.

use retrace_trace::{Header, StreamKind, Totals, TraceReader, TraceWriter};

/// A few MiB: three copies of a segment of 1 MiB of bits and the records
/// between them, with room for the buffers' growth by doubling.
const LIMIT: usize = 8 << 20;

#[test]
fn reader_memory_stays_a_few_mib_whatever_the_run_length() {
    const BITS: u64 = 100_000_000;
    let mut buf = Vec::new();
    let mut w = TraceWriter::new(&mut buf, &Header::new(1, 64, 1)).unwrap();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for i in 0..BITS {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        w.branch(0, x & 1 == 1);
        if i % 16 == 0 {
            w.record(0, StreamKind::Indirect, 1 + (x >> 60));
        }
    }
    let segments = w.finish(&Totals::default()).unwrap().segments;
    assert!(segments >= 10, "{segments} segments");

    let mut r = TraceReader::new(&buf[..]).unwrap();
    let mut most = 0;
    for i in 0..BITS {
        assert!(r.next_bit(0).unwrap().is_some(), "bit {i}");
        if i % 16 == 0 {
            assert!(r.next_record(0, StreamKind::Indirect).unwrap().is_some());
        }
        if i % (1 << 20) == 0 {
            most = most.max(r.buffered_bytes());
        }
    }
    most = most.max(r.buffered_bytes());
    eprintln!("{segments} segments, reader buffers at most {most} bytes");
    assert!(
        most <= LIMIT,
        "the reader held {most} bytes (limit {LIMIT}) for {segments} segments"
    );
    r.finish().unwrap();
}
