//! The streaming trace reader: validates the header, then one segment at a
//! time (checksum, sequence number, structure) as the consumer asks for
//! items, and the trailer at the end. Memory use is one segment.

use crate::format::STREAM_SLOTS;
use crate::format::{
    decode_varint, Cursor, Header, StreamKind, Totals, TraceError, FORMAT_VERSION, MAGIC,
    MAX_SEGMENT_RAW, SEGMENT_HEADER_LEN, SEGMENT_MID_GAP, SEGMENT_TAG, TRAILER_LEN, TRAILER_TAG,
};
use crate::format::{decode_walk_block, trailer_has_walk, WALK_BLOCK_LEN, WALK_TAG};
use crate::format::{DcacheMeasurement, MEASUREMENTS_TAG, MEASUREMENT_LEN};
use std::io::{Read, Seek};

#[derive(Default)]
struct HartStreams {
    bits: Vec<u64>,
    bit_count: u64,
    bit_pos: u64,
    records: [Vec<u8>; STREAM_SLOTS],
    record_pos: [usize; STREAM_SLOTS],
    record_left: [u64; STREAM_SLOTS],
}

impl HartStreams {
    /// Empty every stream, keeping the buffers for the next segment.
    fn clear(&mut self) {
        self.bits.clear();
        self.bit_count = 0;
        self.bit_pos = 0;
        for r in &mut self.records {
            r.clear();
        }
        self.record_pos = Default::default();
        self.record_left = Default::default();
    }

    /// What is left unread, if anything; `ignore` is a record stream whose
    /// items someone else reads (see [`TraceReader::follow_hart`]).
    /// Whether anything is left unread (but the `ignore` stream): the
    /// question [`HartStreams::leftover`] answers in words, without the
    /// words — asked on the replay's hot path.
    fn has_leftover(&self, ignore: Option<StreamKind>) -> bool {
        self.bit_pos < self.bit_count
            || StreamKind::ALL
                .iter()
                .any(|&k| Some(k) != ignore && self.record_left[k.index()] > 0)
    }

    fn leftover(&self, ignore: Option<StreamKind>) -> Option<String> {
        if self.bit_pos < self.bit_count {
            return Some(format!(
                "{} branch bits left unread",
                self.bit_count - self.bit_pos
            ));
        }
        StreamKind::ALL
            .iter()
            .filter(|&&k| Some(k) != ignore)
            .find_map(|k| {
                let left = self.record_left[k.index()];
                (left > 0).then(|| format!("{left} {k} left unread"))
            })
    }
}

/// The items of a record stream spelled as varints, read one after the
/// other ([`TraceReader::collect_records`]); it ends at the first that is
/// not whole.
pub struct Varints<'a>(pub &'a [u8]);

impl Iterator for Varints<'_> {
    type Item = u64;

    #[inline]
    fn next(&mut self) -> Option<u64> {
        // Most items are below 128: one byte, no loop.
        if let Some((&b, rest)) = self.0.split_first() {
            if b < 0x80 {
                self.0 = rest;
                return Some(u64::from(b));
            }
        }
        let (v, n) = decode_varint(self.0)?;
        self.0 = &self.0[n..];
        Some(v)
    }
}

/// The length of the first `count` varints of `bytes`, checked as
/// [`decode_varint`] checks each (`None`: the bytes end inside one, or one
/// is longer than [`crate::MAX_VARINT_LEN`] bytes). A varint ends at each byte
/// below 128, so they are counted without being decoded.
fn varints_len(bytes: &[u8], count: u64) -> Option<usize> {
    let (mut left, mut run) = (count, 0usize);
    if left == 0 {
        return Some(0);
    }
    // Eight bytes at a time while the count does not end among them: the
    // bytes below 128 are the high bits clear, counted at once; a varint
    // too long shows as a run of continuation bytes before the word's
    // first end, or the whole word.
    let mut at = 0;
    for word in bytes.chunks_exact(8) {
        let w = u64::from_le_bytes(word.try_into().unwrap_or_default());
        let ends = !w & 0x8080_8080_8080_8080;
        let c = u64::from(ends.count_ones());
        if ends == 0 {
            run += 8;
            if run >= crate::MAX_VARINT_LEN {
                return None;
            }
        } else if c >= left {
            break;
        } else {
            if run + (ends.trailing_zeros() / 8) as usize >= crate::MAX_VARINT_LEN {
                return None;
            }
            run = (ends.leading_zeros() / 8) as usize;
            left -= c;
        }
        at += 8;
    }
    for (i, &b) in bytes.iter().enumerate().skip(at) {
        if b < 0x80 {
            left -= 1;
            if left == 0 {
                return Some(i + 1);
            }
            run = 0;
        } else {
            run += 1;
            if run == crate::MAX_VARINT_LEN {
                return None;
            }
        }
    }
    None
}

/// Reads a trace from any `Read`; see the crate documentation.
pub struct TraceReader<R: Read> {
    input: R,
    offset: u64,
    header: Header,
    harts: Vec<HartStreams>,
    /// Sequence number of the segment currently loaded (`u32::MAX`: none yet).
    segment: u32,
    /// The loaded segment was closed before an event other than a branch
    /// bit ([`SEGMENT_MID_GAP`]): once drained, the next must be loaded
    /// before a peek may answer "nothing before the next bit".
    mid_gap: bool,
    /// Segments loaded after a mid-gap one: the replay's clock of those
    /// closes, which end an aggregated loop's execution on both sides.
    mid_gap_crossings: u64,
    totals: Option<(Totals, u32)>,
    dcache: Vec<DcacheMeasurement>,
    /// The walk block's figure, once read.
    walk: Option<u64>,
    /// Buffers reused from segment to segment: the stored (compressed)
    /// payload, the decompressed one, and the decompression context. A
    /// fresh megabyte per segment would cost the replay more in page faults
    /// than the decompression itself.
    stored: Vec<u8>,
    raw: Vec<u8>,
    zstd: Option<zstd::bulk::Decompressor<'static>>,
    /// Read one hart's streams only ([`TraceReader::follow_hart`]).
    follow: Option<u16>,
    /// Keep only the streams of this kind, every hart's (the others are
    /// checked and passed by): [`TraceReader::collect_records`] wants one
    /// kind, and copying the rest of every segment cost it more than the
    /// copy it keeps.
    only: Option<StreamKind>,
    /// Segments decompressed by other readers of the same trace, and where
    /// this one leaves those it decompresses ([`TraceReader::sharing`]).
    cache: Option<SegmentCache>,
    /// With `only`: keep the streams of that kind where
    /// they are in the segment (`kept`, per hart: where and how long), not
    /// copied ([`TraceReader::collect_records`]).
    by_reference: bool,
    kept: Vec<(usize, usize)>,
    /// The segment loaded last, when it came from the cache.
    loaded: Option<std::sync::Arc<Vec<u8>>>,
    /// Only fill the cache with the segments numbered `part` modulo
    /// `parts`, parsing none ([`SegmentCache::warm`]).
    warm: Option<(u32, u32)>,
    /// Moves the input on by so many bytes without reading them, when it
    /// can seek (a reader that shares a [`SegmentCache`]): how it passes a
    /// segment whose stored bytes another reader of the trace has read and
    /// checked already.
    skip: Option<fn(&mut R, u64) -> std::io::Result<()>>,
}

/// [`TraceReader::skip`] of an input that can seek.
fn seek_on<R: Seek>(input: &mut R, n: u64) -> std::io::Result<()> {
    // A segment's stored length is a `u32`.
    input.seek_relative(n as i64)
}

/// A piece of one hart's record stream ([`TraceReader::collect_records`]):
/// bytes of a decompressed segment, which it keeps alive.
#[derive(Clone)]
pub struct RecordChunk {
    segment: std::sync::Arc<Vec<u8>>,
    start: usize,
    end: usize,
}

impl std::ops::Deref for RecordChunk {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.segment[self.start..self.end]
    }
}

/// Decompressed segments shared by several readers of one trace: the
/// replay of several harts follows each hart with a reader of its own
/// ([`TraceReader::follow_hart`]), and with a cache between them each
/// segment is decompressed once, not once per hart. The stored bytes of a
/// segment in the cache were read and checked (the checksum) by the reader
/// that put it there, from the same trace: a reader that finds it there
/// checks the header fields, seeks past the stored bytes without reading
/// them, and parses the decompressed ones itself. Of the readers that fill
/// the cache in parallel ([`SegmentCache::warm`]), each likewise passes by
/// the segments of the others' parts unread, so that each segment's stored
/// bytes are read and checked once in all, not once per reader.
/// The cache keeps segments up to a budget of decompressed bytes, then
/// keeps no more (the readers decompress the rest themselves): memory
/// that grows with the run, up to that bound.
#[derive(Clone)]
pub struct SegmentCache(std::sync::Arc<std::sync::Mutex<CachedSegments>>);

struct CachedSegments {
    /// By segment number.
    segments: Vec<Option<CachedSegment>>,
    /// Decompressed bytes held, and the most it may hold.
    bytes: usize,
    budget: usize,
}

/// A segment as its header describes it, and its decompressed bytes.
#[derive(Clone)]
struct CachedSegment {
    stored_len: u32,
    crc: u32,
    raw: std::sync::Arc<Vec<u8>>,
}

impl SegmentCache {
    /// A cache that holds at most `budget` decompressed bytes.
    pub fn new(budget: usize) -> SegmentCache {
        SegmentCache(std::sync::Arc::new(std::sync::Mutex::new(CachedSegments {
            segments: Vec::new(),
            bytes: 0,
            budget,
        })))
    }

    fn get(&self, seq: u32, stored_len: u32, crc: u32) -> Option<std::sync::Arc<Vec<u8>>> {
        let c = self.0.lock().ok()?;
        match c.segments.get(seq as usize) {
            Some(Some(s)) if (s.stored_len, s.crc) == (stored_len, crc) => Some(s.raw.clone()),
            _ => None,
        }
    }

    fn put(&self, seq: u32, stored_len: u32, crc: u32, raw: Vec<u8>) {
        let Ok(mut c) = self.0.lock() else {
            return;
        };
        let i = seq as usize;
        if c.bytes + raw.len() > c.budget || c.segments.get(i).is_some_and(Option::is_some) {
            return;
        }
        if c.segments.len() <= i {
            c.segments.resize(i + 1, None);
        }
        c.bytes += raw.len();
        c.segments[i] = Some(CachedSegment {
            stored_len,
            crc,
            raw: std::sync::Arc::new(raw),
        });
    }

    /// Decompress into the cache the segments of the trace `input` whose
    /// numbers are `part` modulo `parts` (while its budget lasts), parsing
    /// none: `parts` threads, each with its part, fill it in parallel
    /// before the readers that share it read on. An error stops the
    /// warming only; the readers check every segment they read anyway.
    pub fn warm<R: Read + Seek>(&self, input: R, part: u32, parts: u32) -> Result<(), TraceError> {
        let mut reader = TraceReader::unloaded(input, Some(self.clone()))?;
        reader.warm = Some((part, parts.max(1)));
        reader.skip = Some(seek_on::<R>);
        while reader.totals.is_none() {
            reader.load_next()?;
        }
        Ok(())
    }
}

impl TraceReader<std::io::BufReader<std::fs::File>> {
    /// Open a trace file and read its header.
    pub fn open(path: &std::path::Path) -> Result<Self, TraceError> {
        let f = std::fs::File::open(path)?;
        TraceReader::new(std::io::BufReader::with_capacity(1 << 16, f))
    }

    /// Only the header of the trace file at `path` (validated), without
    /// reading any segment: what a command checks before it commits to a
    /// replay.
    pub fn header_of(path: &std::path::Path) -> Result<Header, TraceError> {
        let mut f = std::io::BufReader::with_capacity(4096, std::fs::File::open(path)?);
        Ok(read_header(&mut f)?.0)
    }
}

impl<R: Read> TraceReader<R> {
    /// Start reading: validates magic, version and header checksum.
    pub fn new(input: R) -> Result<Self, TraceError> {
        TraceReader::start(input, None, None, None, None)
    }

    /// [`TraceReader::new`], sharing decompressed segments with the other
    /// readers of this trace that use `cache` (see [`SegmentCache`]), and
    /// following hart `follow` from the first segment on when given
    /// ([`TraceReader::follow_hart`]).
    pub fn sharing(input: R, cache: &SegmentCache, follow: Option<u16>) -> Result<Self, TraceError>
    where
        R: Seek,
    {
        TraceReader::start(input, Some(cache.clone()), follow, None, Some(seek_on::<R>))
    }

    /// [`TraceReader::sharing`], for [`TraceReader::collect_records`] of `kind` and nothing else:
    /// from the first segment on it keeps only the streams of that kind,
    /// and where they are, not copied. (A reader that loads its first
    /// segment whole copies every stream of it, which on a multi-hart
    /// trace is megabytes of fresh memory the collection never reads.)
    pub fn sharing_only(
        input: R,
        cache: &SegmentCache,
        kind: StreamKind,
    ) -> Result<Self, TraceError>
    where
        R: Seek,
    {
        TraceReader::start(
            input,
            Some(cache.clone()),
            None,
            Some(kind),
            Some(seek_on::<R>),
        )
    }

    fn start(
        input: R,
        cache: Option<SegmentCache>,
        follow: Option<u16>,
        only: Option<StreamKind>,
        skip: Option<fn(&mut R, u64) -> std::io::Result<()>>,
    ) -> Result<Self, TraceError> {
        let mut reader = TraceReader::unloaded(input, cache)?;
        reader.skip = skip;
        reader.only = only;
        reader.by_reference = only.is_some();
        if let Some(hart) = follow {
            reader = reader.follow_hart(hart)?;
        }
        // Load the first segment now, so that `peek_record` sees items
        // recorded before the first branch bit.
        reader.load_next()?;
        Ok(reader)
    }

    /// A reader past the header, no segment loaded yet.
    fn unloaded(mut input: R, cache: Option<SegmentCache>) -> Result<Self, TraceError> {
        let (header, offset) = read_header(&mut input)?;
        Ok(TraceReader {
            input,
            offset,
            harts: (0..header.harts).map(|_| HartStreams::default()).collect(),
            segment: u32::MAX,
            mid_gap: false,
            mid_gap_crossings: 0,
            totals: None,
            dcache: Vec::new(),
            walk: None,
            stored: Vec::new(),
            raw: Vec::new(),
            zstd: None,
            follow: None,
            only: None,
            by_reference: false,
            kept: vec![(0, 0); usize::from(header.harts)],
            loaded: None,
            header,
            cache,
            warm: None,
            skip: None,
        })
    }
}

/// Read and validate the header: magic, version, fields, checksum. Returns
/// it with the offset of what follows.
fn read_header<R: Read>(input: &mut R) -> Result<(Header, u64), TraceError> {
    let mut fixed = [0u8; 12];
    let got = read_full(input, &mut fixed)?;
    if got < 8 || fixed[..8] != MAGIC {
        return Err(TraceError::NotATrace);
    }
    if got < 12 {
        return Err(truncated(got as u64, "header"));
    }
    let version = u16::from_le_bytes([fixed[8], fixed[9]]);
    if version != FORMAT_VERSION {
        return Err(TraceError::UnsupportedVersion {
            found: version,
            supported: FORMAT_VERSION,
        });
    }
    let len = usize::from(u16::from_le_bytes([fixed[10], fixed[11]]));
    let mut rest = vec![0u8; len + 4];
    if read_full(input, &mut rest)? < rest.len() {
        return Err(truncated(12, "header"));
    }
    let mut whole = fixed.to_vec();
    whole.extend_from_slice(&rest[..len]);
    let crc = u32::from_le_bytes(rest[len..].try_into().unwrap());
    if crc != crc32fast::hash(&whole) {
        return Err(corrupt(0, "header checksum mismatch".into()));
    }
    let header = Header::decode(&rest[..len])
        .ok_or_else(|| corrupt(12, "malformed header fields".into()))?;
    Ok((header, (12 + len + 4) as u64))
}

impl<R: Read> TraceReader<R> {
    /// Read through the rest of the trace without consuming its items,
    /// validating every segment and the trailer: the precise error (segment,
    /// offset) for a damaged file.
    pub fn validate(mut self) -> Result<Totals, TraceError> {
        while self.totals.is_none() {
            self.load_next()?;
        }
        Ok(self.totals.unwrap().0)
    }

    /// Bytes the reader holds in buffers now (their capacity): the stored
    /// and the decompressed segment and each hart's streams — what
    /// `docs/FORMATS.md` means by the reader's memory, which depends on the
    /// largest segment read so far, not on the length of the run.
    pub fn buffered_bytes(&self) -> usize {
        let harts: usize = self
            .harts
            .iter()
            .map(|h| 8 * h.bits.capacity() + h.records.iter().map(Vec::capacity).sum::<usize>())
            .sum();
        self.stored.capacity() + self.raw.capacity() + harts
    }

    /// The trace's header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Sequence number of the loaded segment, for messages.
    pub fn segment(&self) -> u32 {
        self.segment
    }

    fn hart(&self, hart: u16) -> Result<usize, TraceError> {
        if hart < self.header.harts {
            Ok(usize::from(hart))
        } else {
            Err(self.no_such_hart(hart))
        }
    }

    /// The next branch bit of `hart` (1 = taken); `None` at the end of the
    /// trace.
    #[inline]
    pub fn next_bit(&mut self, hart: u16) -> Result<Option<bool>, TraceError> {
        // The replay's hottest call: the common case is a bit of the loaded
        // segment, with nothing to validate.
        if let Some(h) = self.harts.get_mut(usize::from(hart)) {
            if h.bit_pos < h.bit_count {
                let p = h.bit_pos;
                h.bit_pos += 1;
                if let Some(w) = h.bits.get((p >> 6) as usize) {
                    return Ok(Some((w >> (p & 63)) & 1 == 1));
                }
            }
        }
        self.next_bit_slow(hart)
    }

    /// The next branch bits of `hart` *within the loaded segment*, without
    /// consuming them: up to 64, the next bit in bit 0, and how many are
    /// valid (the bits above them are 0). A replay that memoises stretches
    /// of the walk keys them on this window; 0 valid bits means the segment
    /// has none left (the next one is loaded by [`TraceReader::next_bit`]).
    #[inline]
    pub fn bit_window(&self, hart: u16) -> (u64, u32) {
        let Some(h) = self.harts.get(usize::from(hart)) else {
            return (0, 0);
        };
        let p = h.bit_pos;
        let valid = (h.bit_count.saturating_sub(p)).min(64) as u32;
        if valid == 0 {
            return (0, 0);
        }
        let (word, shift) = ((p >> 6) as usize, p & 63);
        let mut w = h.bits.get(word).copied().unwrap_or(0) >> shift;
        if shift != 0 {
            w |= h.bits.get(word + 1).copied().unwrap_or(0) << (64 - shift);
        }
        if valid < 64 {
            w &= (1u64 << valid) - 1;
        }
        (w, valid)
    }

    /// Consume `n` bits of [`TraceReader::bit_window`] (no more than it
    /// reported valid).
    #[inline]
    pub fn skip_bits(&mut self, hart: u16, n: u32) {
        if let Some(h) = self.harts.get_mut(usize::from(hart)) {
            debug_assert!(h.bit_pos + u64::from(n) <= h.bit_count);
            h.bit_pos = (h.bit_pos + u64::from(n)).min(h.bit_count);
        }
    }

    /// The unread bytes of `hart`'s `kind` record stream within the loaded
    /// segment (varints, as [`TraceReader::next_record`] decodes them).
    #[inline]
    pub fn record_bytes(&self, hart: u16, kind: StreamKind) -> &[u8] {
        match self.harts.get(usize::from(hart)) {
            Some(h) if h.record_left[kind.index()] > 0 => {
                &h.records[kind.index()][h.record_pos[kind.index()]..]
            }
            _ => &[],
        }
    }

    /// Whether `hart`'s `kind` record stream has items left before the
    /// next branch bit: in the loaded segment, or — when that segment is
    /// drained and was closed mid-gap — in the next one, which this loads
    /// ([`TraceReader::cross_mid_gap`]).
    #[inline(always)]
    pub fn has_records(&mut self, hart: u16, kind: StreamKind) -> Result<bool, TraceError> {
        let has = |r: &Self| {
            r.harts
                .get(usize::from(hart))
                .is_some_and(|h| h.record_left[kind.index()] > 0)
        };
        if has(self) {
            return Ok(true);
        }
        Ok(self.cross_mid_gap()? && has(self))
    }

    /// If the loaded segment was closed mid-gap (before an event other
    /// than a branch bit) and every stream of it is drained, load the next
    /// one: the consumer has reached the instant the writer closed it, so
    /// what comes next is there. `true` when it loaded one. Costs one test
    /// for every other segment.
    #[inline(always)]
    pub fn cross_mid_gap(&mut self) -> Result<bool, TraceError> {
        if !self.mid_gap {
            return Ok(false);
        }
        // A follower treats every segment as closed mid-gap, and asks at
        // nearly every step of its replay: while its hart has branch bits
        // left, the segment is not drained (the common answer, without a
        // call).
        if let Some(h) = self.follow.and_then(|f| self.harts.get(usize::from(f))) {
            if h.bit_pos < h.bit_count {
                return Ok(false);
            }
        }
        self.cross_mid_gap_slow()
    }

    #[cold]
    #[inline(never)]
    fn cross_mid_gap_slow(&mut self) -> Result<bool, TraceError> {
        if self.totals.is_some() || self.has_leftover() {
            return Ok(false);
        }
        self.load_next()?;
        Ok(self.totals.is_none())
    }

    /// How many mid-gap closes the consumer has crossed so far: a loop
    /// execution in progress at one ends there (the writer ended it there).
    #[inline]
    pub fn mid_gap_crossings(&self) -> u64 {
        self.mid_gap_crossings
    }

    /// How many items `hart`'s `kind` record stream has left in the loaded
    /// segment (0 for a hart the trace does not have).
    #[inline]
    pub fn records_left(&self, hart: u16, kind: StreamKind) -> u64 {
        self.harts
            .get(usize::from(hart))
            .map_or(0, |h| h.record_left[kind.index()])
    }

    /// Consume the first `bytes` bytes of [`TraceReader::record_bytes`],
    /// which hold `records` complete records.
    #[inline]
    pub fn skip_records(&mut self, hart: u16, kind: StreamKind, bytes: usize, records: u64) {
        if let Some(h) = self.harts.get_mut(usize::from(hart)) {
            let k = kind.index();
            debug_assert!(records <= h.record_left[k]);
            debug_assert!(h.record_pos[k] + bytes <= h.records[k].len());
            h.record_pos[k] = (h.record_pos[k] + bytes).min(h.records[k].len());
            h.record_left[k] = h.record_left[k].saturating_sub(records);
        }
    }

    #[cold]
    fn next_bit_slow(&mut self, hart: u16) -> Result<Option<bool>, TraceError> {
        self.hart(hart)?;
        if !self.advance(hart, StreamKind::Branches)? {
            return Ok(None);
        }
        self.next_bit(hart)
    }

    /// The next varint item of a record stream of `hart`; `None` at the end.
    pub fn next_record(&mut self, hart: u16, kind: StreamKind) -> Result<Option<u64>, TraceError> {
        let i = self.hart(hart)?;
        let k = kind.index();
        if self.harts[i].record_left[k] == 0 && !self.advance(hart, kind)? {
            return Ok(None);
        }
        let h = &mut self.harts[i];
        let mut c = Cursor {
            buf: &h.records[k],
            pos: h.record_pos[k],
        };
        let v = c.varint().ok_or_else(|| TraceError::Corrupt {
            offset: self.offset,
            what: format!("bad varint in {kind} of segment {}", self.segment),
        })?;
        h.record_pos[k] = c.pos;
        h.record_left[k] -= 1;
        Ok(Some(v))
    }

    /// The next varint item of a record stream of `hart`, without consuming
    /// it; `None` when none comes before the next branch bit. Segments close
    /// before a branch bit, or — when records grew large with no bit to
    /// close before — mid-gap, before another event ([`SEGMENT_MID_GAP`]);
    /// a mid-gap segment that is drained makes this load the next
    /// ([`TraceReader::cross_mid_gap`]). So a consumer that asks between two
    /// bits sees every item recorded before the next bit, and `None` means
    /// "not before the next branch", which is what a replay needs to test
    /// for a sparse event (a return escape) without reading ahead.
    ///
    /// Inlined, with its errors built out of line: a replay peeks at the
    /// escape stream at every return.
    #[inline]
    pub fn peek_record(&mut self, hart: u16, kind: StreamKind) -> Result<Option<u64>, TraceError> {
        let k = kind.index();
        if self
            .harts
            .get(usize::from(hart))
            .is_some_and(|h| h.record_left[k] == 0)
        {
            self.cross_mid_gap()?;
        }
        let Some(h) = self.harts.get(usize::from(hart)) else {
            return Err(self.no_such_hart(hart));
        };
        if h.record_left[k] == 0 {
            return Ok(None);
        }
        match decode_varint(h.records[k].get(h.record_pos[k]..).unwrap_or(&[])) {
            Some((v, _)) => Ok(Some(v)),
            None => Err(self.bad_varint(kind)),
        }
    }

    #[cold]
    fn no_such_hart(&self, hart: u16) -> TraceError {
        TraceError::NoSuchHart {
            hart,
            harts: self.header.harts,
        }
    }

    #[cold]
    fn bad_varint(&self, kind: StreamKind) -> TraceError {
        TraceError::Corrupt {
            offset: self.offset,
            what: format!("bad varint in {kind} of segment {}", self.segment),
        }
    }

    /// Load the next segment because `hart`'s `kind` stream ran dry. Every
    /// other stream of the current segment must have been consumed: the
    /// recorder closed the segment at one instant, so a faithful replay
    /// drains all of it before needing anything from the next.
    fn advance(&mut self, hart: u16, kind: StreamKind) -> Result<bool, TraceError> {
        if let Some((h, left)) = self.leftover() {
            return Err(TraceError::Desync {
                segment: self.segment,
                what: format!("hart {hart} needs more {kind} while hart {h} has {left}"),
            });
        }
        loop {
            if self.totals.is_some() {
                return Ok(false);
            }
            self.load_next()?;
            let h = &self.harts[usize::from(hart)];
            let has = match kind {
                StreamKind::Branches => h.bit_count > 0,
                _ => h.record_left[kind.index()] > 0,
            };
            if has {
                return Ok(true);
            }
            // A segment without items of this stream: its other streams
            // must then be empty for this consumer too, or we are out of step.
            if let Some((h, left)) = self.leftover() {
                return Err(TraceError::Desync {
                    segment: self.segment,
                    what: format!("hart {hart} needs more {kind} while hart {h} has {left}"),
                });
            }
        }
    }

    /// Read the next segment or the trailer.
    fn load_next(&mut self) -> Result<(), TraceError> {
        let at = self.offset;
        let mut tag = [0u8; 1];
        if read_full(&mut self.input, &mut tag)? == 0 {
            return Err(truncated(at, "no trailer after the last segment"));
        }
        match tag[0] {
            SEGMENT_TAG => self.load_segment(at),
            MEASUREMENTS_TAG => self.load_measurements(at),
            WALK_TAG => {
                let mut b = [0u8; WALK_BLOCK_LEN];
                b[0] = WALK_TAG;
                if read_full(&mut self.input, &mut b[1..])? < WALK_BLOCK_LEN - 1 {
                    return Err(truncated(at, "walk block"));
                }
                self.offset += WALK_BLOCK_LEN as u64;
                match decode_walk_block(&b) {
                    Some(w) if self.walk.is_none() => {
                        self.walk = Some(w);
                        Ok(())
                    }
                    _ => Err(corrupt(
                        at,
                        "walk block checksum mismatch (or a second one)".into(),
                    )),
                }
            }
            TRAILER_TAG => {
                let mut t = [0u8; TRAILER_LEN];
                t[0] = TRAILER_TAG;
                if read_full(&mut self.input, &mut t[1..])? < TRAILER_LEN - 1 {
                    return Err(truncated(at, "trailer"));
                }
                self.offset += TRAILER_LEN as u64;
                let (mut totals, segments) = Totals::decode(&t)
                    .ok_or_else(|| corrupt(at, "trailer checksum or end magic mismatch".into()))?;
                if trailer_has_walk(&t) != self.walk.is_some() {
                    return Err(corrupt(
                        at,
                        "the trailer and the walk block disagree on whether there is one".into(),
                    ));
                }
                totals.walk_instructions = self.walk;
                let seen = self.segment.wrapping_add(1);
                if segments != seen {
                    return Err(corrupt(
                        at,
                        format!("trailer counts {segments} segments, the file has {seen}"),
                    ));
                }
                if let Some(m) = self
                    .dcache
                    .iter()
                    .find(|m| m.accesses > totals.instructions)
                {
                    return Err(corrupt(
                        at,
                        format!(
                            "the measurements block counts {} data accesses for a {}×{} B cache in a run of {} instructions (at most one each)",
                            m.accesses, m.ways, m.line, totals.instructions
                        ),
                    ));
                }
                self.totals = Some((totals, segments));
                Ok(())
            }
            other => Err(corrupt(
                at,
                format!(
                    "unknown record tag 0x{other:02x} after segment {}",
                    self.segment
                ),
            )),
        }
    }

    fn load_measurements(&mut self, at: u64) -> Result<(), TraceError> {
        let mut head = [0u8; 4];
        head[0] = MEASUREMENTS_TAG;
        if read_full(&mut self.input, &mut head[1..])? < 3 {
            return Err(truncated(at, "measurements block"));
        }
        let n = usize::from(u16::from_le_bytes([head[2], head[3]]));
        let mut body = vec![0u8; n * MEASUREMENT_LEN + 4];
        if read_full(&mut self.input, &mut body)? < body.len() {
            return Err(truncated(at, "measurements block"));
        }
        let mut whole = head.to_vec();
        whole.extend_from_slice(&body[..n * MEASUREMENT_LEN]);
        let crc = u32::from_le_bytes(body[n * MEASUREMENT_LEN..].try_into().unwrap());
        if crc != crc32fast::hash(&whole) || !self.dcache.is_empty() {
            return Err(corrupt(at, "measurements block checksum mismatch".into()));
        }
        let mut c = Cursor { buf: &body, pos: 0 };
        for i in 0..n {
            let (size, ways, line) = (c.u32(), c.u32(), c.u32());
            let (accesses, misses) = (c.u64(), c.u64());
            let m = DcacheMeasurement {
                size: size.unwrap_or(0),
                ways: ways.unwrap_or(0),
                line: line.unwrap_or(0),
                accesses: accesses.unwrap_or(0),
                misses: misses.unwrap_or(0),
            };
            // A checksum proves the bytes are the writer's, not that the
            // writer was sane: every field an estimate uses is checked.
            if let Some(why) = m.implausible() {
                return Err(corrupt(
                    at,
                    format!("measurement {i} of the measurements block: {why}"),
                ));
            }
            self.dcache.push(m);
        }
        self.offset += whole.len() as u64 + 4;
        Ok(())
    }

    /// Data-cache measurements stored by the recorder (available once the
    /// reader has reached the end of the trace).
    pub fn dcache(&self) -> &[DcacheMeasurement] {
        &self.dcache
    }

    fn load_segment(&mut self, at: u64) -> Result<(), TraceError> {
        let seq_expected = self.segment.wrapping_add(1);
        let mut head = [0u8; SEGMENT_HEADER_LEN];
        head[0] = SEGMENT_TAG;
        if read_full(&mut self.input, &mut head[1..])? < SEGMENT_HEADER_LEN - 1 {
            return Err(truncated(at, &format!("header of segment {seq_expected}")));
        }
        let le32 = |r: std::ops::Range<usize>| u32::from_le_bytes(head[r].try_into().unwrap());
        let (codec, flags, seq, raw_len, stored_len, crc) = (
            head[1],
            head[2],
            le32(4..8),
            le32(8..12),
            le32(12..16),
            le32(16..20),
        );
        if seq != seq_expected {
            return Err(corrupt(
                at,
                format!("segment number {seq} where {seq_expected} was expected"),
            ));
        }
        if flags & !SEGMENT_MID_GAP != 0 || head[3] != 0 {
            return Err(corrupt(
                at,
                format!("segment {seq} has flags this retrace does not know (written by a newer retrace?)"),
            ));
        }
        if raw_len > MAX_SEGMENT_RAW || stored_len > MAX_SEGMENT_RAW || codec > 1 {
            return Err(corrupt(at, format!("implausible header of segment {seq}")));
        }
        let cached = self
            .cache
            .as_ref()
            .and_then(|c| c.get(seq, stored_len, crc));
        // Passed by unread: a segment in the cache (its stored bytes read
        // and checked by the reader that put it there), and when warming,
        // another part's segment (its part's reader checks it).
        let passed_by = match self.warm {
            Some((part, parts)) => seq % parts != part || cached.is_some(),
            None => cached.is_some(),
        };
        if let (true, Some(skip)) = (passed_by, self.skip) {
            skip(&mut self.input, u64::from(stored_len))?;
            return match (self.warm, cached) {
                (None, Some(raw)) => {
                    let parsed = self.parse_loaded(at, seq, flags, stored_len, &raw);
                    self.loaded = Some(raw);
                    parsed
                }
                _ => {
                    self.offset += (SEGMENT_HEADER_LEN + stored_len as usize) as u64;
                    self.segment = seq;
                    Ok(())
                }
            };
        }
        // Read into the buffer's spare room, not zeroed first: a reader
        // that follows one hart of many may read every segment.
        let mut stored = std::mem::take(&mut self.stored);
        stored.clear();
        stored.reserve(stored_len as usize);
        (&mut self.input)
            .take(u64::from(stored_len))
            .read_to_end(&mut stored)?;
        if stored.len() < stored_len as usize {
            return Err(truncated(at, &format!("payload of segment {seq}")));
        }
        if crc32fast::hash(&stored) != crc {
            return Err(corrupt(at, format!("checksum mismatch in segment {seq}")));
        }
        if let Some((part, parts)) = self.warm {
            // Another part's segment, or one in the cache: passed by.
            self.offset += (SEGMENT_HEADER_LEN + stored_len as usize) as u64;
            self.segment = seq;
            self.stored = stored;
            if seq % parts != part || cached.is_some() {
                return Ok(());
            }
            let raw = self.decompress(at, seq, codec, raw_len, Vec::new())?;
            if let Some(c) = &self.cache {
                c.put(seq, stored_len, crc, raw);
            }
            return Ok(());
        }
        if let Some(raw) = cached {
            self.stored = stored;
            let parsed = self.parse_loaded(at, seq, flags, stored_len, &raw);
            self.loaded = Some(raw);
            return parsed;
        }
        self.stored = stored;
        self.loaded = None;
        let raw = std::mem::take(&mut self.raw);
        let raw = self.decompress(at, seq, codec, raw_len, raw)?;
        if let Some(c) = &self.cache {
            c.put(seq, stored_len, crc, raw.clone());
        }
        let parsed = self.parse_loaded(at, seq, flags, stored_len, &raw);
        self.raw = raw;
        parsed
    }

    /// The payload of segment `seq` just read (`self.stored`), read at
    /// `at`, decompressed by `codec` into `raw`, checked to be `raw_len`
    /// bytes.
    fn decompress(
        &mut self,
        at: u64,
        seq: u32,
        codec: u8,
        raw_len: u32,
        mut raw: Vec<u8>,
    ) -> Result<Vec<u8>, TraceError> {
        raw.clear();
        match codec {
            0 => raw.extend_from_slice(&self.stored),
            _ => {
                // Capacity exactly the declared size: a payload that would
                // decompress to more is an error, not an allocation.
                raw.reserve_exact(raw_len as usize);
                let dctx = match &mut self.zstd {
                    Some(d) => d,
                    None => self.zstd.insert(zstd::bulk::Decompressor::new()?),
                };
                dctx.decompress_to_buffer(&self.stored[..], &mut raw)
                    .map_err(|e| corrupt(at, format!("segment {seq} does not decompress: {e}")))?;
            }
        }
        if raw.len() != raw_len as usize {
            return Err(corrupt(at, format!("segment {seq} has the wrong size")));
        }
        Ok(raw)
    }

    /// Take in segment `seq` (its decompressed bytes `raw`), read at `at`.
    fn parse_loaded(
        &mut self,
        at: u64,
        seq: u32,
        flags: u8,
        stored_len: u32,
        raw: &[u8],
    ) -> Result<(), TraceError> {
        self.offset += (SEGMENT_HEADER_LEN + stored_len as usize) as u64;
        self.segment = seq;
        if self.mid_gap {
            self.mid_gap_crossings += 1;
        }
        // A reader of one hart's streams may cross into the next segment
        // whenever that hart's are drained (see `follow_hart`).
        self.mid_gap = flags & SEGMENT_MID_GAP != 0 || self.follow.is_some();
        for h in &mut self.harts {
            h.clear();
        }
        self.kept.fill((0, 0));
        self.parse_segment(raw)
            .map_err(|what| corrupt(at, format!("segment {seq}: {what}")))
    }

    fn parse_segment(&mut self, raw: &[u8]) -> Result<(), String> {
        let mut c = Cursor { buf: raw, pos: 0 };
        while c.pos < raw.len() {
            let hart = c.varint().ok_or("bad hart number")?;
            let tag = c.u8().ok_or("missing stream kind")?;
            let count = c.varint().ok_or("bad item count")?;
            let len = c.varint().ok_or("bad stream length")? as usize;
            let bytes = c.bytes(len).ok_or("stream longer than its segment")?;
            let h = self.harts.get_mut(hart as usize).ok_or(format!(
                "stream for hart {hart}, the header declares {}",
                self.header.harts
            ))?;
            let kind = StreamKind::from_tag(tag).ok_or(format!(
                "unknown stream kind {tag} (written by a newer retrace?)"
            ))?;
            match kind {
                StreamKind::Branches => {
                    if !len.is_multiple_of(8) || count.div_ceil(64) != (len / 8) as u64 {
                        return Err(format!("{count} branch bits do not fit {len} bytes"));
                    }
                }
                _ => {
                    if count > len as u64 {
                        return Err(format!("{count} {kind} cannot fit {len} bytes"));
                    }
                }
            }
            // A follower keeps its hart's streams but the synchronisation
            // events (see `follow_hart`); the others' are only checked.
            let kept = match self.follow {
                Some(f) => u64::from(f) == hart && kind != StreamKind::Sync,
                None => self.only.is_none_or(|k| k == kind),
            };
            if !kept {
                continue;
            }
            if self.by_reference && kind != StreamKind::Branches {
                self.kept[hart as usize] = (c.pos - len, len);
                h.record_left[kind.index()] = count;
                continue;
            }
            match kind {
                StreamKind::Branches => {
                    h.bits.clear();
                    h.bits.extend(
                        bytes
                            .chunks_exact(8)
                            .map(|w| u64::from_le_bytes(w.try_into().unwrap())),
                    );
                    h.bit_count = count;
                }
                _ => {
                    h.records[kind.index()].clear();
                    h.records[kind.index()].extend_from_slice(bytes);
                    h.record_left[kind.index()] = count;
                }
            }
        }
        Ok(())
    }

    /// Read only `hart`'s streams, and not its synchronisation events (a
    /// multi-hart replay reads those up front: [`TraceReader::collect_records`]):
    /// the other harts' streams are skipped, so each hart of a multi-hart
    /// trace can be replayed at its own pace by a reader of its own.
    ///
    /// The writer closes a segment before the next branch bit of *any*
    /// hart, so the items one hart recorded between two of its own bits
    /// may straddle a close. A follower therefore treats every segment as
    /// closed mid-gap: once its hart's streams are drained, a peek loads
    /// the next segment before it answers "nothing before the next bit".
    /// Every item of the drained segment preceded everything in the next,
    /// so nothing is read out of order.
    pub fn follow_hart(mut self, hart: u16) -> Result<Self, TraceError> {
        if hart >= self.header.harts {
            return Err(self.no_such_hart(hart));
        }
        self.follow = Some(hart);
        self.mid_gap = true;
        Ok(self)
    }

    /// The first stream with items left unread, and its hart: every hart's
    /// streams, or the followed hart's but its synchronisation events.
    /// Whether a stream the consumer reads still has items (see
    /// [`TraceReader::leftover`]).
    fn has_leftover(&self) -> bool {
        match self.follow {
            Some(f) => self.harts[usize::from(f)].has_leftover(Some(StreamKind::Sync)),
            None => self.harts.iter().any(|s| s.has_leftover(None)),
        }
    }

    fn leftover(&self) -> Option<(usize, String)> {
        match self.follow {
            Some(f) => {
                let h = usize::from(f);
                self.harts[h]
                    .leftover(Some(StreamKind::Sync))
                    .map(|left| (h, left))
            }
            None => self
                .harts
                .iter()
                .enumerate()
                .find_map(|(h, s)| s.leftover(None).map(|left| (h, left))),
        }
    }

    /// Every item of record stream `kind`, per hart in the order recorded,
    /// read through to the trailer (consumes the reader; the other streams
    /// are skipped): what a multi-hart replay needs of the synchronisation
    /// events before it starts, since each hart's turn depends on the
    /// others'. Each hart's items come as the varints the trace spells
    /// them in, checked, in pieces, one per segment, in order (run
    /// together, the stream): a reader made by
    /// [`TraceReader::sharing_only`] copies nothing of a segment it finds
    /// in the cache, and its pieces are where the cache keeps the segment
    /// (the rest are copies).
    pub fn collect_records(
        mut self,
        kind: StreamKind,
    ) -> Result<(Vec<Vec<RecordChunk>>, Totals), TraceError> {
        let mut out = vec![Vec::new(); self.harts.len()];
        // The segment loaded already was kept whole (or only this kind,
        // [`TraceReader::sharing_only`]); from the next on, only this kind.
        // A reader that kept it whole keeps copies from then on too.
        if self.only != Some(kind) {
            self.by_reference = false;
        }
        self.only = Some(kind);
        let k = kind.index();
        loop {
            for (h, s) in self.harts.iter().enumerate() {
                // Where the stream is, and the cached segment it is in
                // when a piece can share it.
                let (start, kept_len) = self.kept[h];
                let (bytes, cached) = match (self.by_reference, &self.loaded) {
                    (true, Some(raw)) => (&raw[start..][..kept_len], Some(raw)),
                    (true, None) => (&self.raw[start..][..kept_len], None),
                    (false, _) => (&s.records[k][s.record_pos[k]..], None),
                };
                let len =
                    varints_len(bytes, s.record_left[k]).ok_or_else(|| self.bad_varint(kind))?;
                if len == 0 {
                    continue;
                }
                out[h].push(match cached {
                    Some(raw) => RecordChunk {
                        segment: raw.clone(),
                        start,
                        end: start + len,
                    },
                    None => RecordChunk {
                        segment: std::sync::Arc::new(bytes[..len].to_vec()),
                        start: 0,
                        end: len,
                    },
                });
            }
            for s in &mut self.harts {
                s.clear();
            }
            self.kept.fill((0, 0));
            if let Some((t, _)) = self.totals {
                return Ok((out, t));
            }
            self.load_next()?;
        }
    }

    /// After the consumer is done: checks that nothing recorded is left
    /// unread, reads the trailer, and returns the recorded totals.
    pub fn finish(self) -> Result<Totals, TraceError> {
        self.finish_all().map(|(t, _)| t)
    }

    /// [`TraceReader::finish`], also returning the data-cache measurements.
    pub fn finish_all(mut self) -> Result<(Totals, Vec<DcacheMeasurement>), TraceError> {
        if let Some((h, left)) = self.leftover() {
            return Err(TraceError::Desync {
                segment: self.segment,
                what: format!("the replay ended but hart {h} has {left}"),
            });
        }
        while self.totals.is_none() {
            self.load_next()?;
            if let Some((h, left)) = self.leftover() {
                return Err(TraceError::Desync {
                    segment: self.segment,
                    what: format!("the replay ended but hart {h} has {left}"),
                });
            }
        }
        let mut extra = [0u8; 1];
        if read_full(&mut self.input, &mut extra)? != 0 {
            return Err(corrupt(self.offset, "data after the trailer".into()));
        }
        Ok((self.totals.unwrap().0, self.dcache))
    }
}

fn read_full<R: Read>(r: &mut R, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

fn truncated(offset: u64, what: &str) -> TraceError {
    TraceError::Truncated {
        offset,
        what: what.to_string(),
    }
}

fn corrupt(offset: u64, what: String) -> TraceError {
    TraceError::Corrupt { offset, what }
}

/// A copy of the complete trace `trace` with every record stream passed
/// through `edit(hart, kind, items)` first, segment by segment (branch bits
/// are copied as they are): how tests damage a trace in a controlled way —
/// one code event's bytes, one trap's count — where flipping bits of the
/// compressed file would only break a checksum. Segments are stored again
/// with fresh checksums; header, measurements and trailer are kept.
pub fn rewrite_records(
    trace: &[u8],
    mut edit: impl FnMut(u16, StreamKind, &mut Vec<u64>),
) -> Result<Vec<u8>, TraceError> {
    let mut input = trace;
    let (_, start) = read_header(&mut input)?;
    let mut out = trace[..start as usize].to_vec();
    let mut c = Cursor {
        buf: trace,
        pos: start as usize,
    };
    let bad = |at: usize, what: &str| corrupt(at as u64, what.to_string());
    loop {
        let at = c.pos;
        match c.u8().ok_or_else(|| bad(at, "no trailer"))? {
            SEGMENT_TAG => {
                let head = c
                    .bytes(SEGMENT_HEADER_LEN - 1)
                    .ok_or_else(|| bad(at, "segment header"))?;
                let le32 = |i: usize| u32::from_le_bytes(head[i - 1..i + 3].try_into().unwrap());
                let (codec, seq, raw_len, stored_len) = (head[0], le32(4), le32(8), le32(12));
                let stored = c
                    .bytes(stored_len as usize)
                    .ok_or_else(|| bad(at, "segment payload"))?;
                let raw = match codec {
                    0 => stored.to_vec(),
                    _ => zstd::bulk::decompress(stored, raw_len.min(MAX_SEGMENT_RAW) as usize)
                        .map_err(|e| bad(at, &format!("segment {seq}: {e}")))?,
                };
                let mut s = Cursor { buf: &raw, pos: 0 };
                let mut new = Vec::with_capacity(raw.len());
                while s.pos < raw.len() {
                    let (hart, tag) = (s.varint(), s.u8());
                    let (count, len) = (s.varint(), s.varint());
                    let (Some(hart), Some(tag), Some(count), Some(len)) = (hart, tag, count, len)
                    else {
                        return Err(bad(at, "stream header"));
                    };
                    let body = s
                        .bytes(len as usize)
                        .ok_or_else(|| bad(at, "stream body"))?;
                    let kind = StreamKind::from_tag(tag).ok_or_else(|| bad(at, "stream kind"))?;
                    crate::format::put_varint(&mut new, hart);
                    new.push(tag);
                    if kind == StreamKind::Branches {
                        crate::format::put_varint(&mut new, count);
                        crate::format::put_varint(&mut new, len);
                        new.extend_from_slice(body);
                        continue;
                    }
                    let mut b = Cursor { buf: body, pos: 0 };
                    let mut items = Vec::new();
                    for _ in 0..count {
                        items.push(b.varint().ok_or_else(|| bad(at, "record"))?);
                    }
                    edit(hart as u16, kind, &mut items);
                    let mut enc = Vec::new();
                    for &v in &items {
                        crate::format::put_varint(&mut enc, v);
                    }
                    crate::format::put_varint(&mut new, items.len() as u64);
                    crate::format::put_varint(&mut new, enc.len() as u64);
                    new.extend_from_slice(&enc);
                }
                let packed = zstd::bulk::compress(&new, 3).map_err(TraceError::Io)?;
                let (codec, stored) = if packed.len() < new.len() {
                    (1u8, packed)
                } else {
                    (0, new.clone())
                };
                let mut h = [0u8; SEGMENT_HEADER_LEN];
                h[0] = SEGMENT_TAG;
                h[1] = codec;
                h[4..8].copy_from_slice(&seq.to_le_bytes());
                h[8..12].copy_from_slice(&(new.len() as u32).to_le_bytes());
                h[12..16].copy_from_slice(&(stored.len() as u32).to_le_bytes());
                h[16..20].copy_from_slice(&crc32fast::hash(&stored).to_le_bytes());
                out.extend_from_slice(&h);
                out.extend_from_slice(&stored);
            }
            MEASUREMENTS_TAG => {
                let head = c.bytes(3).ok_or_else(|| bad(at, "measurements"))?;
                let n = usize::from(u16::from_le_bytes([head[1], head[2]]));
                c.bytes(n * MEASUREMENT_LEN + 4)
                    .ok_or_else(|| bad(at, "measurements"))?;
                out.extend_from_slice(&trace[at..c.pos]);
            }
            WALK_TAG => {
                c.bytes(WALK_BLOCK_LEN - 1)
                    .ok_or_else(|| bad(at, "walk block"))?;
                out.extend_from_slice(&trace[at..c.pos]);
            }
            TRAILER_TAG => {
                c.bytes(TRAILER_LEN - 1).ok_or_else(|| bad(at, "trailer"))?;
                out.extend_from_slice(&trace[at..c.pos]);
                return Ok(out);
            }
            _ => return Err(bad(at, "unknown record tag")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_are_counted_as_decoded() {
        // 1, 300, 2^63 (ten bytes), 0.
        let mut bytes = vec![1u8, 0xac, 0x02];
        bytes.extend([0x80; 9]);
        bytes.push(0x01);
        bytes.push(0);
        let mut at = 0;
        for count in 0..=4u64 {
            assert_eq!(varints_len(&bytes, count), Some(at));
            if count < 4 {
                at += decode_varint(&bytes[at..]).unwrap().1;
            }
        }
        // The bytes end inside one, or one is eleven bytes long.
        assert_eq!(varints_len(&bytes, 5), None);
        assert_eq!(varints_len(&[0x80; 11], 1), None);
        assert_eq!(decode_varint(&[0x80; 11]), None);
        assert_eq!(varints_len(&[0x80, 0x80], 1), None);
        // Items read one at a time agree.
        let items: Vec<u64> = Varints(&bytes).collect();
        assert_eq!(items, [1, 300, 1 << 63, 0]);
    }

    /// [`varints_len`] one byte at a time, as the reference.
    fn varints_len_bytewise(bytes: &[u8], count: u64) -> Option<usize> {
        let (mut left, mut run) = (count, 0usize);
        if left == 0 {
            return Some(0);
        }
        for (i, &b) in bytes.iter().enumerate() {
            if b < 0x80 {
                left -= 1;
                if left == 0 {
                    return Some(i + 1);
                }
                run = 0;
            } else {
                run += 1;
                if run == crate::MAX_VARINT_LEN {
                    return None;
                }
            }
        }
        None
    }

    proptest::proptest! {
        /// Counted a word at a time, the same lengths and refusals: over
        /// bytes mostly at or above 128 (long runs, varints too long) and
        /// every count up to past their end.
        #[test]
        fn varints_counted_by_words_as_by_bytes(
            bytes in proptest::collection::vec(
                proptest::prop_oneof![3 => 0x80u8..=0xff, 1 => 0u8..0x80],
                0..80,
            ),
        ) {
            for count in 0..=bytes.len() as u64 + 1 {
                proptest::prop_assert_eq!(
                    varints_len(&bytes, count),
                    varints_len_bytewise(&bytes, count),
                    "count {}", count
                );
            }
        }
    }
}
