//! Where a replay reads its trace from: a file, or the bytes of a recording
//! held in memory.
//!
//! A replay passes over the trace more than once (the trailer's totals
//! first, then the segments), and [`crate::estimate_trace`] walks it once
//! per thread, so a source is something that can *open* independent readers
//! rather than one reader: a path opens the file again, bytes in memory give
//! a fresh cursor. Everything a reader needs is `Read + Seek`; the replay is
//! generic over it, so the file and the memory paths compile to the same
//! walk.

use retrace_trace::{
    decode_trailer, decode_walk_block, trailer_has_walk, Totals, TraceError, TRAILER_LEN,
    WALK_BLOCK_LEN,
};
use std::io::{BufReader, Cursor, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// A trace that can be read from the start as often as a replay needs.
pub trait TraceSource: Sync {
    /// One pass over the trace.
    type Reader<'a>: Read + Seek
    where
        Self: 'a;

    /// A reader positioned at the start of the trace.
    fn open(&self) -> Result<Self::Reader<'_>, TraceError>;
}

impl TraceSource for Path {
    type Reader<'a> = BufReader<std::fs::File>;

    fn open(&self) -> Result<Self::Reader<'_>, TraceError> {
        // The capacity `TraceReader::open` uses: segments are read in large
        // pieces, and a bigger buffer only copies more.
        Ok(BufReader::with_capacity(
            1 << 16,
            std::fs::File::open(self)?,
        ))
    }
}

impl TraceSource for PathBuf {
    type Reader<'a> = BufReader<std::fs::File>;

    fn open(&self) -> Result<Self::Reader<'_>, TraceError> {
        self.as_path().open()
    }
}

impl TraceSource for [u8] {
    type Reader<'a> = Cursor<&'a [u8]>;

    fn open(&self) -> Result<Self::Reader<'_>, TraceError> {
        Ok(Cursor::new(self))
    }
}

impl TraceSource for Vec<u8> {
    type Reader<'a> = Cursor<&'a [u8]>;

    fn open(&self) -> Result<Self::Reader<'_>, TraceError> {
        Ok(Cursor::new(self.as_slice()))
    }
}

/// The trailer's totals, read from the last bytes of `input`.
pub fn read_totals_from(mut input: impl Read + Seek) -> Result<Totals, TraceError> {
    let len = input.seek(SeekFrom::End(0))?;
    let trailer = TRAILER_LEN as u64;
    if len < trailer {
        return Err(TraceError::Truncated {
            offset: len,
            what: "no room for a trailer".into(),
        });
    }
    input.seek(SeekFrom::Start(len - trailer))?;
    let mut t = [0u8; TRAILER_LEN];
    input.read_exact(&mut t)?;
    let mut totals = decode_trailer(&t).ok_or_else(|| TraceError::Truncated {
        offset: len,
        what: "no valid trailer at the end of the file".into(),
    })?;
    if trailer_has_walk(&t) {
        // The walk block sits right before the trailer.
        let block = WALK_BLOCK_LEN as u64;
        let bad = || TraceError::Truncated {
            offset: len - trailer,
            what: "the trailer announces a walk block that is not before it".into(),
        };
        if len < trailer + block {
            return Err(bad());
        }
        input.seek(SeekFrom::Start(len - trailer - block))?;
        let mut b = [0u8; WALK_BLOCK_LEN];
        input.read_exact(&mut b)?;
        totals.walk_instructions = Some(decode_walk_block(&b).ok_or_else(bad)?);
    }
    Ok(totals)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_input_has_no_trailer() {
        let e = read_totals_from(Cursor::new(vec![0u8; 10])).unwrap_err();
        assert!(matches!(e, TraceError::Truncated { offset: 10, .. }), "{e}");
    }
}
