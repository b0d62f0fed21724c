//! # retrace-trace
//!
//! The `.rtrace` container: what a recording keeps of one run, so that the
//! replay can walk the partial-program table exactly as the program did.
//! The byte layout is specified in `docs/FORMATS.md` ("Trace files").
//!
//! A trace is a header (program identity, ISA, harts, recording options), a
//! sequence of **segments** and a **trailer** with totals. Each segment holds,
//! for every hart, the items each stream produced during one window of the
//! run — branch bits, indirect-target records, escape records, … — so a
//! reader that consumes streams in the order the recorder produced them never
//! needs more than one segment in memory, whatever the length of the run.
//! Segments are compressed with zstd on a background thread (the recording
//! thread only packs bits) and carry a CRC-32 of their stored bytes.
//!
//! What goes *into* the streams — which events write what, per hart — is the
//! recording protocol, [`protocol`]: one encoder that the recorder drives
//! and one decoder per hart that the replay asks.
//!
//! ```
//! use retrace_trace::{Header, StreamKind, Totals, TraceReader, TraceWriter};
//! let header = Header::new(0x1234, 32, 1);
//! let mut buf = Vec::new();
//! let mut w = TraceWriter::new(&mut buf, &header).unwrap();
//! for i in 0..1000 {
//!     w.branch(0, i % 3 == 0);
//! }
//! w.record(0, StreamKind::Indirect, 0x8000_0100);
//! w.finish(&Totals { instructions: 5000, branches: 1000, ..Totals::default() }).unwrap();
//!
//! let mut r = TraceReader::new(&buf[..]).unwrap();
//! assert_eq!(r.header().identity, 0x1234);
//! assert_eq!(r.next_bit(0).unwrap(), Some(true));
//! ```
#![deny(missing_docs)]

mod format;
mod pc_sequence;
pub mod protocol;
mod reader;
mod writer;

pub use format::{
    decode_trailer, decode_varint, decode_walk_block, trailer_has_walk, DcacheMeasurement, Header,
    StreamKind, Totals, TraceError, FORMAT_VERSION, MAGIC, MAX_VARINT_LEN, TRAILER_LEN,
    WALK_BLOCK_LEN,
};
pub use pc_sequence::PcSequence;
pub use reader::{rewrite_records, RecordChunk, SegmentCache, TraceReader, Varints};
pub use writer::{TraceWriter, WriteSummary};
