//! The streaming trace writer. The recording thread only appends bits and
//! varints to per-hart buffers; full segments go to a compressor thread
//! through a bounded channel (so memory stays bounded and nothing is dropped:
//! if compression falls behind, recording waits) and come back compressed to
//! be written in order.

use crate::format::{
    put_varint, Header, StreamKind, Totals, TraceError, SEGMENT_TAG, STREAM_SLOTS,
};
use std::io::Write;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

/// Bits per hart that close a segment (8 Mi bits = 1 MiB of branch history).
const SEGMENT_BITS: usize = 8 << 20;
/// Bytes in one record stream that close a segment.
const SEGMENT_RECORD_BYTES: usize = 1 << 20;
/// Record bytes buffered (over every hart and stream) at which a full
/// segment closes before the next event even though no branch bit came:
/// the mid-gap close, for runs that write records and no bits for long.
const MID_GAP_RECORD_BYTES: usize = 4 << 20;
/// zstd level: fast; branch bits compress well at any level.
const ZSTD_LEVEL: i32 = 3;

#[derive(Default)]
struct HartBuffers {
    words: Vec<u64>,
    word: u64,
    nbits: u32,
    records: [Vec<u8>; STREAM_SLOTS],
    record_counts: [u64; STREAM_SLOTS],
}

impl HartBuffers {
    /// Branch bits buffered (counted from the words rather than kept as a
    /// counter: one less store per branch on the recording thread).
    fn bit_count(&self) -> u64 {
        self.words.len() as u64 * 64 + u64::from(self.nbits)
    }

    fn is_empty(&self) -> bool {
        self.bit_count() == 0 && self.record_counts.iter().all(|&c| c == 0)
    }
}

struct Compressed {
    seq: u32,
    flags: u8,
    raw_len: u32,
    codec: u8,
    stored: Vec<u8>,
}

/// Sizes of a finished trace.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriteSummary {
    /// Segments written.
    pub segments: u32,
    /// Bytes of segment payload before compression.
    pub raw_bytes: u64,
    /// Bytes of the whole file.
    pub file_bytes: u64,
    /// Branch bits written.
    pub bits: u64,
}

/// Writes a trace to any `Write`; see the crate documentation.
pub struct TraceWriter<W: Write> {
    out: W,
    harts: Vec<HartBuffers>,
    seq: u32,
    to_compressor: Option<SyncSender<(u32, u8, Vec<u8>)>>,
    from_compressor: Receiver<Compressed>,
    compressor: Option<JoinHandle<()>>,
    summary: WriteSummary,
    error: Option<std::io::Error>,
    /// A buffer is full: close the segment before the next branch bit.
    segment_full: bool,
}

impl TraceWriter<std::io::BufWriter<std::fs::File>> {
    /// Create (or truncate) a trace file.
    pub fn create(path: &std::path::Path, header: &Header) -> Result<Self, TraceError> {
        let f = std::fs::File::create(path)?;
        TraceWriter::new(std::io::BufWriter::new(f), header)
    }
}

impl<W: Write> TraceWriter<W> {
    /// Start a trace: writes the header at once.
    pub fn new(mut out: W, header: &Header) -> Result<Self, TraceError> {
        let head = header.encode();
        out.write_all(&head)?;
        let (to_compressor, jobs) = sync_channel::<(u32, u8, Vec<u8>)>(2);
        let (done, from_compressor) = std::sync::mpsc::channel();
        let compressor = std::thread::Builder::new()
            .name("rtrace-zstd".into())
            .spawn(move || {
                for (seq, flags, raw) in jobs {
                    let packed = zstd::bulk::compress(&raw, ZSTD_LEVEL).ok();
                    let (codec, stored) = match packed {
                        Some(p) if p.len() < raw.len() => (1, p),
                        _ => (0, raw.clone()),
                    };
                    let c = Compressed {
                        seq,
                        flags,
                        raw_len: raw.len() as u32,
                        codec,
                        stored,
                    };
                    if done.send(c).is_err() {
                        return;
                    }
                }
            })?;
        Ok(TraceWriter {
            out,
            harts: (0..header.harts).map(|_| HartBuffers::default()).collect(),
            seq: 0,
            to_compressor: Some(to_compressor),
            from_compressor,
            compressor: Some(compressor),
            summary: WriteSummary {
                file_bytes: head.len() as u64,
                ..WriteSummary::default()
            },
            error: None,
            segment_full: false,
        })
    }

    /// Append one conditional-branch outcome of `hart` (1 = taken).
    ///
    /// A full segment closes here, *before* a bit: so everything recorded
    /// between two bits lies in the segment of the earlier bit, and a reader
    /// that has not yet asked for the next bit is still in the right segment
    /// to peek at record streams (see [`crate::TraceReader::peek_record`]).
    /// The one exception is [`TraceWriter::event_boundary`].
    #[inline]
    pub fn branch(&mut self, hart: u16, taken: bool) {
        if self.segment_full {
            self.flush_segment(0);
        }
        let h = &mut self.harts[usize::from(hart)];
        h.word |= u64::from(taken) << h.nbits;
        h.nbits += 1;
        if h.nbits == 64 {
            h.words.push(h.word);
            h.word = 0;
            h.nbits = 0;
            if h.words.len() * 64 >= SEGMENT_BITS {
                self.segment_full = true;
            }
        }
    }

    /// Whether the next branch bit closes the segment first: what a
    /// recorder that holds records back (aggregated loops' runs) must write
    /// before that bit.
    #[inline]
    pub fn closes_before_next_bit(&self) -> bool {
        self.segment_full
    }

    /// Whether [`TraceWriter::event_boundary`] would close the segment: it
    /// is full and its records have grown to [`MID_GAP_RECORD_BYTES`]
    /// without a branch bit to close it before. What an encoder that holds
    /// records back (aggregated loops' runs) must write first.
    #[inline]
    pub fn closes_at_event_boundary(&self) -> bool {
        self.segment_full && self.record_bytes() >= MID_GAP_RECORD_BYTES
    }

    /// Between two events (never inside one event's records): close the
    /// segment if [`TraceWriter::closes_at_event_boundary`]. The segment
    /// is marked [`SEGMENT_MID_GAP`](crate::format::SEGMENT_MID_GAP), so
    /// a reader that has drained it loads the next before it answers that a
    /// record stream has nothing more before the next bit. Without this, a
    /// run that writes records and no branch bits (an endless loop of
    /// indirect calls) would grow one segment without bound.
    #[inline]
    pub fn event_boundary(&mut self) {
        if self.segment_full {
            self.event_boundary_full();
        }
    }

    #[cold]
    #[inline(never)]
    fn event_boundary_full(&mut self) {
        if self.record_bytes() >= MID_GAP_RECORD_BYTES {
            self.flush_segment(crate::format::SEGMENT_MID_GAP);
        }
    }

    /// Record bytes buffered over every hart and stream.
    fn record_bytes(&self) -> usize {
        self.harts
            .iter()
            .flat_map(|h| h.records.iter().map(Vec::len))
            .sum()
    }

    /// Branch bits recorded so far, over all harts.
    pub fn branches(&self) -> u64 {
        self.summary.bits + self.harts.iter().map(HartBuffers::bit_count).sum::<u64>()
    }

    /// Append one varint item to a record stream of `hart`.
    #[inline]
    pub fn record(&mut self, hart: u16, kind: StreamKind, value: u64) {
        let h = &mut self.harts[usize::from(hart)];
        let buf = &mut h.records[kind.index()];
        put_varint(buf, value);
        h.record_counts[kind.index()] += 1;
        if buf.len() >= SEGMENT_RECORD_BYTES {
            self.segment_full = true;
        }
    }

    /// Pack the buffered items of every hart into one segment with `flags`
    /// in its header and hand it to the compressor.
    fn flush_segment(&mut self, flags: u8) {
        self.segment_full = false;
        if self.harts.iter().all(HartBuffers::is_empty) {
            return;
        }
        let mut raw = Vec::new();
        for (hart, h) in self.harts.iter_mut().enumerate() {
            let bit_count = h.bit_count();
            if bit_count > 0 {
                if h.nbits > 0 {
                    h.words.push(h.word);
                }
                put_varint(&mut raw, hart as u64);
                raw.push(StreamKind::Branches as u8);
                put_varint(&mut raw, bit_count);
                put_varint(&mut raw, (h.words.len() * 8) as u64);
                for w in &h.words {
                    raw.extend_from_slice(&w.to_le_bytes());
                }
                self.summary.bits += bit_count;
                h.words.clear();
                h.word = 0;
                h.nbits = 0;
            }
            for kind in StreamKind::ALL {
                let k = kind.index();
                if h.record_counts[k] == 0 {
                    continue;
                }
                put_varint(&mut raw, hart as u64);
                raw.push(kind as u8);
                put_varint(&mut raw, h.record_counts[k]);
                put_varint(&mut raw, h.records[k].len() as u64);
                raw.extend_from_slice(&h.records[k]);
                h.records[k].clear();
                h.record_counts[k] = 0;
            }
        }
        self.summary.raw_bytes += raw.len() as u64;
        let seq = self.seq;
        self.seq += 1;
        if let Some(tx) = &self.to_compressor {
            // Blocks while two segments are already queued: bounded memory.
            let _ = tx.send((seq, flags, raw));
        }
        while let Ok(c) = self.from_compressor.try_recv() {
            self.write_compressed(c);
        }
    }

    fn write_compressed(&mut self, c: Compressed) {
        if self.error.is_some() {
            return;
        }
        let mut head = [0u8; crate::format::SEGMENT_HEADER_LEN];
        head[0] = SEGMENT_TAG;
        head[1] = c.codec;
        head[2] = c.flags;
        head[4..8].copy_from_slice(&c.seq.to_le_bytes());
        head[8..12].copy_from_slice(&c.raw_len.to_le_bytes());
        head[12..16].copy_from_slice(&(c.stored.len() as u32).to_le_bytes());
        head[16..20].copy_from_slice(&crc32fast::hash(&c.stored).to_le_bytes());
        let r = self
            .out
            .write_all(&head)
            .and_then(|_| self.out.write_all(&c.stored));
        match r {
            Ok(()) => {
                self.summary.file_bytes += (head.len() + c.stored.len()) as u64;
                self.summary.segments += 1;
            }
            Err(e) => self.error = Some(e),
        }
    }

    /// Write the remaining items and the trailer; returns the sizes.
    pub fn finish(self, totals: &Totals) -> Result<WriteSummary, TraceError> {
        self.finish_with(totals, &[])
    }

    /// Like [`TraceWriter::finish`], with data-cache measurements stored
    /// before the trailer.
    pub fn finish_with(
        mut self,
        totals: &Totals,
        dcache: &[crate::DcacheMeasurement],
    ) -> Result<WriteSummary, TraceError> {
        self.flush_segment(0);
        drop(self.to_compressor.take());
        if let Some(h) = self.compressor.take() {
            let _ = h.join();
        }
        while let Ok(c) = self.from_compressor.recv() {
            self.write_compressed(c);
        }
        if let Some(e) = self.error.take() {
            return Err(e.into());
        }
        if self.summary.segments != self.seq {
            return Err(TraceError::Io(std::io::Error::other(
                "the trace compressor stopped early",
            )));
        }
        if !dcache.is_empty() {
            let block = crate::format::encode_measurements(dcache);
            self.out.write_all(&block)?;
            self.summary.file_bytes += block.len() as u64;
        }
        if let Some(walk) = totals.walk_instructions {
            let block = crate::format::encode_walk_block(walk);
            self.out.write_all(&block)?;
            self.summary.file_bytes += block.len() as u64;
        }
        let trailer = totals.encode(self.summary.segments);
        self.out.write_all(&trailer)?;
        self.out.flush()?;
        self.summary.file_bytes += trailer.len() as u64;
        Ok(self.summary)
    }
}
