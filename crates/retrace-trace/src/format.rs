//! Byte-level layout shared by the writer and the reader: magic, version,
//! header, stream kinds, trailer, varints, errors. `docs/FORMATS.md` is the
//! prose version of this file; keep them in step.

use std::fmt;

/// The first 8 bytes of every trace. The high first byte and the `\n` catch
/// text-mode transfers, as PNG's signature does.
pub const MAGIC: [u8; 8] = *b"\x89RTRACE\n";
/// The last 8 bytes of a complete trace.
pub const END_MAGIC: [u8; 8] = *b"RTRACEND";
/// The format version this code writes and reads.
pub const FORMAT_VERSION: u16 = 1;
/// Tag byte of a segment.
pub const SEGMENT_TAG: u8 = b'S';
/// Tag byte of the trailer.
pub const TRAILER_TAG: u8 = b'T';
/// Tag byte of the optional measurements block (before the trailer).
pub const MEASUREMENTS_TAG: u8 = b'M';
/// Tag of the walk block (a trace recorded with fixed sites: the
/// instructions its replay walks).
pub const WALK_TAG: u8 = b'G';
/// Bytes of the walk block: tag, 3 reserved, the walk's instructions (u64),
/// 4 reserved, CRC-32 of the 16 bytes before it.
pub const WALK_BLOCK_LEN: usize = 20;
/// Trailer byte 1, bit 0: a walk block comes right before the trailer.
pub const TRAILER_HAS_WALK: u8 = 1;
/// Segment header flag (byte 2): the writer closed the segment before an
/// event other than a branch bit (its records had grown large with no bit
/// to close before). A reader that has drained such a segment must load
/// the next before it answers that a stream has nothing more before the
/// next bit. No other flag is defined; a reader refuses unknown ones.
pub const SEGMENT_MID_GAP: u8 = 1;
/// Size of a segment's fixed header.
pub const SEGMENT_HEADER_LEN: usize = 20;
/// Size of the trailer including the end magic.
pub const TRAILER_LEN: usize = 68;
/// Largest raw segment a reader accepts (guards allocations on corrupt input).
pub const MAX_SEGMENT_RAW: u32 = 64 << 20;

/// What a stream inside a segment carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum StreamKind {
    /// One bit per executed conditional branch, 1 = taken, packed
    /// least-significant bit first into little-endian 64-bit words.
    Branches = 1,
    /// Indirect jumps and calls: per event a varint, the 1-based index into
    /// that site's table of seen targets, or 0 followed by a varint target
    /// address that is appended to the table.
    Indirect = 2,
    /// Returns that did not go where the shadow return stack said: per event
    /// a varint count of matching returns since the previous escape, then a
    /// varint target address.
    Escapes = 3,
    /// Per-loop trip counts (aggregation), varints.
    LoopCounts = 4,
    /// Synchronisation events of multi-hart programs, varints.
    Sync = 5,
    /// Traps taken in the middle of a partial program (exceptions): per
    /// trap a varint count of instructions executed since the previous one
    /// (or since the start), then the handler as an indirect record of the
    /// hart's one table of handlers (an index from 1, or 0 and the
    /// address). See [`crate::protocol`].
    Traps = 6,
    /// Code the program's file does not hold, learnt as the run executed
    /// it (code copied into RAM, patched in place, built in a data array):
    /// per event a varint count of instructions executed since the
    /// previous one (or since the start), a varint address, a varint
    /// length `n`, then `n` varints of one byte each — the bytes memory
    /// held there. See [`crate::protocol`].
    Code = 7,
    /// Aggregated loops (US patent 8,448,140, embodiment 2): the plan (a layout
    /// version, the number of aggregated continue tests, then per test the
    /// address as the difference from the previous one and 1 when the taken
    /// outcome continues the loop), then runs of executions as varint
    /// triples `(loop, count, repeats)`. See [`crate::protocol::loops`].
    LoopRuns = 8,
}

/// Slots of per-stream arrays, indexed by [`StreamKind`] tag − 1 (one more
/// than the kinds there are when a tag is unused).
pub(crate) const STREAM_SLOTS: usize = 8;

impl StreamKind {
    /// The kind for a tag byte, if known.
    pub fn from_tag(tag: u8) -> Option<StreamKind> {
        Some(match tag {
            1 => StreamKind::Branches,
            2 => StreamKind::Indirect,
            3 => StreamKind::Escapes,
            4 => StreamKind::LoopCounts,
            5 => StreamKind::Sync,
            6 => StreamKind::Traps,
            7 => StreamKind::Code,
            8 => StreamKind::LoopRuns,
            _ => return None,
        })
    }
    /// Every kind.
    pub const ALL: [StreamKind; 8] = [
        StreamKind::Branches,
        StreamKind::Indirect,
        StreamKind::Escapes,
        StreamKind::LoopCounts,
        StreamKind::Sync,
        StreamKind::Traps,
        StreamKind::Code,
        StreamKind::LoopRuns,
    ];
    pub(crate) fn index(self) -> usize {
        self as usize - 1
    }
}

impl fmt::Display for StreamKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StreamKind::Branches => "branch bits",
            StreamKind::Indirect => "indirect targets",
            StreamKind::Escapes => "return escapes",
            StreamKind::LoopCounts => "loop counts",
            StreamKind::Sync => "sync events",
            StreamKind::Traps => "traps",
            StreamKind::Code => "code events",
            StreamKind::LoopRuns => "loop runs",
        })
    }
}

/// Everything a trace says about the run before its streams.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// Identity hash of the program's loaded contents (`Elf::identity`).
    pub identity: u64,
    /// Register width, 32 or 64.
    pub xlen: u8,
    /// Number of harts with streams.
    pub harts: u16,
    /// Recording option flags (reserved; 0).
    pub options: u32,
    /// The program path as given to the recorder: for messages, and the
    /// command line a program recorded without arguments saw.
    pub program: String,
    /// The program's arguments (after its name).
    pub args: Vec<String>,
}

impl Header {
    /// A header with no name, arguments or options.
    pub fn new(identity: u64, xlen: u8, harts: u16) -> Header {
        Header {
            identity,
            xlen,
            harts,
            options: 0,
            program: String::new(),
            args: Vec::new(),
        }
    }

    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut body = Vec::new();
        body.extend_from_slice(&self.identity.to_le_bytes());
        body.push(self.xlen);
        body.push(0);
        body.extend_from_slice(&self.harts.to_le_bytes());
        body.extend_from_slice(&self.options.to_le_bytes());
        put_str(&mut body, &self.program);
        // Arguments are informational (and used to re-run for a check); keep
        // as many whole ones as fit the header's 16-bit length.
        let mut args = Vec::new();
        let mut kept = 0u16;
        for a in &self.args {
            let before = args.len();
            put_str(&mut args, a);
            if body.len() + 2 + args.len() > MAX_HEADER_BODY || kept == u16::MAX {
                args.truncate(before);
                break;
            }
            kept += 1;
        }
        body.extend_from_slice(&kept.to_le_bytes());
        body.extend_from_slice(&args);
        let mut out = Vec::with_capacity(body.len() + 16);
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(&(body.len() as u16).to_le_bytes());
        out.extend_from_slice(&body);
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// Parse a header body (after magic, version and length).
    pub(crate) fn decode(body: &[u8]) -> Option<Header> {
        let mut c = Cursor { buf: body, pos: 0 };
        let identity = c.u64()?;
        let xlen = c.u8()?;
        c.u8()?;
        let harts = c.u16()?;
        let options = c.u32()?;
        let program = c.str()?;
        let argc = c.u16()?;
        let mut args = Vec::new();
        for _ in 0..argc {
            args.push(c.str()?);
        }
        if c.pos != body.len() || (xlen != 32 && xlen != 64) || harts == 0 {
            return None;
        }
        Some(Header {
            identity,
            xlen,
            harts,
            options,
            program,
            args,
        })
    }
}

/// Longest string stored in a header (program name, each argument).
const MAX_HEADER_STR: usize = 4096;
/// Header bodies stay below the 16-bit length field with room to spare.
const MAX_HEADER_BODY: usize = 60_000;

fn put_str(out: &mut Vec<u8>, s: &str) {
    // Cut at a character boundary so the stored text stays valid UTF-8.
    let mut n = s.len().min(MAX_HEADER_STR);
    while !s.is_char_boundary(n) {
        n -= 1;
    }
    let bytes = &s.as_bytes()[..n];
    out.extend_from_slice(&(bytes.len() as u16).to_le_bytes());
    out.extend_from_slice(bytes);
}

/// Totals of the recorded run, kept in the trailer so the replay can check
/// that it consumed exactly what was recorded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Instructions retired (all harts).
    pub instructions: u64,
    /// Conditional branches executed (= branch bits).
    pub branches: u64,
    /// Indirect-target records.
    pub indirect: u64,
    /// Return-escape records.
    pub escapes: u64,
    /// The program's exit code (-1 when it did not exit by itself).
    pub exit_code: i64,
    /// Address of the last instruction executed: the replay must end there.
    pub last_pc: u64,
    /// Instructions the replay walks, when it is not `instructions`: a
    /// recording with fixed sites (lossy aggregation), whose replay takes
    /// one way through each where the run took either (the walk block).
    pub walk_instructions: Option<u64>,
}

impl Totals {
    pub(crate) fn encode(&self, segments: u32) -> [u8; TRAILER_LEN] {
        let mut t = [0u8; TRAILER_LEN];
        t[0] = TRAILER_TAG;
        if self.walk_instructions.is_some() {
            t[1] = TRAILER_HAS_WALK;
        }
        t[4..8].copy_from_slice(&segments.to_le_bytes());
        t[8..16].copy_from_slice(&self.instructions.to_le_bytes());
        t[16..24].copy_from_slice(&self.branches.to_le_bytes());
        t[24..32].copy_from_slice(&self.indirect.to_le_bytes());
        t[32..40].copy_from_slice(&self.escapes.to_le_bytes());
        t[40..48].copy_from_slice(&self.exit_code.to_le_bytes());
        t[48..56].copy_from_slice(&self.last_pc.to_le_bytes());
        let crc = crc32fast::hash(&t[..56]);
        t[56..60].copy_from_slice(&crc.to_le_bytes());
        t[60..68].copy_from_slice(&END_MAGIC);
        t
    }

    /// Parse a trailer; `None` when its checksum or magic is wrong.
    pub(crate) fn decode(t: &[u8; TRAILER_LEN]) -> Option<(Totals, u32)> {
        let le64 = |r: std::ops::Range<usize>| u64::from_le_bytes(t[r].try_into().unwrap());
        let crc = u32::from_le_bytes(t[56..60].try_into().unwrap());
        if t[0] != TRAILER_TAG || crc != crc32fast::hash(&t[..56]) || t[60..68] != END_MAGIC {
            return None;
        }
        let segments = u32::from_le_bytes(t[4..8].try_into().unwrap());
        Some((
            Totals {
                instructions: le64(8..16),
                branches: le64(16..24),
                indirect: le64(24..32),
                escapes: le64(32..40),
                exit_code: le64(40..48) as i64,
                last_pc: le64(48..56),
                walk_instructions: None,
            },
            segments,
        ))
    }
}

/// Everything that can be wrong with a trace.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceError {
    /// Reading or writing failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The file does not start with the trace magic.
    #[error("not a retrace trace (bad magic at offset 0); record one with `retrace record`")]
    NotATrace,
    /// Written by another version of the format.
    #[error("trace format version {found} is not supported (this retrace reads version {supported}); re-record the trace with this retrace")]
    UnsupportedVersion {
        /// Version in the file.
        found: u16,
        /// Version this code reads.
        supported: u16,
    },
    /// A checksum or structure check failed.
    #[error("corrupt trace: {what} at byte offset {offset}")]
    Corrupt {
        /// Byte offset of the damaged part.
        offset: u64,
        /// What is wrong, naming the segment.
        what: String,
    },
    /// The file ends early.
    #[error("truncated trace: {what} at byte offset {offset}; the recording was cut short — record again")]
    Truncated {
        /// Where the data stopped.
        offset: u64,
        /// What was being read.
        what: String,
    },
    /// The consumer asked for items in an order the recording does not have:
    /// the trace belongs to another program or run, or was damaged.
    #[error("trace does not match the replay in segment {segment}: {what}")]
    Desync {
        /// Segment sequence number.
        segment: u32,
        /// What did not match.
        what: String,
    },
    /// The recording protocol needed an item the trace does not have (see
    /// [`crate::protocol`]): the history ended before the replay did.
    #[error("the trace ends early: hart {hart} needs {what} and the trace has none left")]
    Exhausted {
        /// Hart whose stream ran out.
        hart: u16,
        /// What was needed.
        what: &'static str,
    },
    /// An indirect record names a target that its site's table does not
    /// have: the trace does not fit the program, or was damaged.
    #[error("hart {hart}: target #{index} of the indirect site at {site:#x}, which has only {known} known targets")]
    UnknownTarget {
        /// Hart of the record.
        hart: u16,
        /// Address of the jumping instruction.
        site: u64,
        /// The 1-based index recorded.
        index: u64,
        /// Targets the site's table holds.
        known: usize,
    },
    /// A trap record names a handler that the hart's table of handlers does
    /// not have: the trace was damaged.
    #[error("hart {hart}: trap handler #{index}, of only {known} known handlers")]
    UnknownHandler {
        /// Hart of the record.
        hart: u16,
        /// The 1-based index recorded.
        index: u64,
        /// Handlers the table holds.
        known: usize,
    },
    /// A trap was recorded after fewer instructions than the replay has
    /// already executed: the replay is out of step with the recording.
    #[error("hart {hart}: a trap was recorded after {recorded} instructions, the replay has executed {executed}")]
    TrapBehind {
        /// Hart of the record.
        hart: u16,
        /// The instruction count at the recorded trap.
        recorded: u64,
        /// The replay's own count.
        executed: u64,
    },
    /// A code event was recorded after fewer instructions than the replay
    /// has already executed: the replay is out of step with the recording.
    #[error("hart {hart}: code was recorded after {recorded} instructions, the replay has executed {executed}")]
    CodeBehind {
        /// Hart of the record.
        hart: u16,
        /// The instruction count at the recorded code event.
        recorded: u64,
        /// The replay's own count.
        executed: u64,
    },
    /// An escape was recorded after fewer matching returns than the replay
    /// has already seen since the previous one: the replay is out of step.
    #[error("hart {hart}: an escape was recorded after {recorded} matching returns, the replay has seen {matched}")]
    EscapeBehind {
        /// Hart of the record.
        hart: u16,
        /// The count in the escape record.
        recorded: u64,
        /// The replay's own count.
        matched: u64,
    },
    /// A stream item was asked for a hart the trace does not have.
    #[error("trace has {harts} hart(s); hart {hart} was asked for")]
    NoSuchHart {
        /// Hart asked for.
        hart: u16,
        /// Harts in the trace.
        harts: u16,
    },
}

/// Append `v` as an LEB128 varint.
#[inline]
pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Longest varint spelling of a `u64`: 10 bytes of 7 bits.
pub const MAX_VARINT_LEN: usize = 10;

/// The LEB128 varint at the start of `bytes`: its value and how many bytes
/// it takes; `None` when `bytes` ends inside it or it runs past
/// [`MAX_VARINT_LEN`] bytes. Bits beyond 64 in a tenth byte are dropped, as
/// they always have been: every reader of the format decodes through here,
/// so the container, the replay's fast paths and the tests cannot disagree
/// on what a record says or how long it is.
#[inline]
pub fn decode_varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for (i, &b) in bytes.iter().take(MAX_VARINT_LEN).enumerate() {
        v |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

/// A bounds-checked little-endian reader over a byte slice.
pub(crate) struct Cursor<'a> {
    pub buf: &'a [u8],
    pub pos: usize,
}

impl Cursor<'_> {
    pub fn bytes(&mut self, n: usize) -> Option<&[u8]> {
        let end = self.pos.checked_add(n)?;
        let s = self.buf.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }
    pub fn u8(&mut self) -> Option<u8> {
        Some(self.bytes(1)?[0])
    }
    pub fn u16(&mut self) -> Option<u16> {
        Some(u16::from_le_bytes(self.bytes(2)?.try_into().ok()?))
    }
    pub fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.bytes(4)?.try_into().ok()?))
    }
    pub fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.bytes(8)?.try_into().ok()?))
    }
    pub fn str(&mut self) -> Option<String> {
        let n = self.u16()? as usize;
        String::from_utf8(self.bytes(n)?.to_vec()).ok()
    }
    pub fn varint(&mut self) -> Option<u64> {
        let (v, n) = decode_varint(self.buf.get(self.pos..)?)?;
        self.pos += n;
        Some(v)
    }
}

/// Whether the trailer says a walk block comes right before it (then a
/// reader learns [`Totals::walk_instructions`] from it:
/// [`decode_walk_block`]).
pub fn trailer_has_walk(bytes: &[u8; TRAILER_LEN]) -> bool {
    bytes[1] & TRAILER_HAS_WALK != 0
}

/// Encode the walk block.
pub(crate) fn encode_walk_block(walk: u64) -> [u8; WALK_BLOCK_LEN] {
    let mut b = [0u8; WALK_BLOCK_LEN];
    b[0] = WALK_TAG;
    b[4..12].copy_from_slice(&walk.to_le_bytes());
    let crc = crc32fast::hash(&b[..16]);
    b[16..20].copy_from_slice(&crc.to_le_bytes());
    b
}

/// Parse a walk block: the instructions the replay walks, or `None` when
/// the bytes are not one.
pub fn decode_walk_block(b: &[u8; WALK_BLOCK_LEN]) -> Option<u64> {
    let crc = u32::from_le_bytes(b[16..20].try_into().unwrap());
    (b[0] == WALK_TAG && crc == crc32fast::hash(&b[..16]))
        .then(|| u64::from_le_bytes(b[4..12].try_into().unwrap()))
}

/// Parse the last [`TRAILER_LEN`] bytes of a trace: its totals, or `None`
/// when they are not a valid trailer. Lets a consumer learn the totals
/// before streaming the trace (the replay stops at the recorded instruction
/// count).
pub fn decode_trailer(bytes: &[u8; TRAILER_LEN]) -> Option<Totals> {
    Totals::decode(bytes).map(|(t, _)| t)
}

/// A data-cache geometry measured during recording: the statistics that the
/// replay cannot derive from branch history (see `docs/FORMATS.md`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DcacheMeasurement {
    /// Capacity in bytes.
    pub size: u32,
    /// Associativity.
    pub ways: u32,
    /// Line size in bytes.
    pub line: u32,
    /// Loads, stores and AMOs.
    pub accesses: u64,
    /// Of which missed.
    pub misses: u64,
}

impl DcacheMeasurement {
    /// Why this measurement cannot be a real one, if it cannot: a
    /// geometry no cache has (sizes powers of two, lines of at least 4
    /// bytes, at least `ways × line` bytes) or more misses than accesses.
    pub fn implausible(&self) -> Option<String> {
        let (size, ways, line) = (self.size, self.ways, self.line);
        if !(size.is_power_of_two() && ways.is_power_of_two() && line.is_power_of_two())
            || line < 4
            || u64::from(size) < u64::from(ways) * u64::from(line)
        {
            return Some(format!(
                "cache geometry size {size}, ways {ways}, line {line} is not one a cache can have"
            ));
        }
        if self.misses > self.accesses {
            return Some(format!(
                "{} misses out of {} accesses",
                self.misses, self.accesses
            ));
        }
        None
    }

    /// Misses per access (0 when there were no accesses).
    pub fn miss_rate(&self) -> f64 {
        if self.accesses == 0 {
            0.0
        } else {
            self.misses as f64 / self.accesses as f64
        }
    }
}

/// Encode the measurements block: tag, reserved, count, entries, CRC-32.
pub(crate) fn encode_measurements(m: &[DcacheMeasurement]) -> Vec<u8> {
    let mut out = vec![MEASUREMENTS_TAG, 0];
    out.extend_from_slice(&(m.len() as u16).to_le_bytes());
    for d in m {
        out.extend_from_slice(&d.size.to_le_bytes());
        out.extend_from_slice(&d.ways.to_le_bytes());
        out.extend_from_slice(&d.line.to_le_bytes());
        out.extend_from_slice(&d.accesses.to_le_bytes());
        out.extend_from_slice(&d.misses.to_le_bytes());
    }
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Bytes of one measurement entry.
pub(crate) const MEASUREMENT_LEN: usize = 28;
