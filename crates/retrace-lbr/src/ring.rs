//! The shared-memory cyclic buffer between the writer and the branch control
//! program (JP2024157581A claim 5: slots, a write pointer and a read pointer).
//!
//! The layout is fixed and mirrors `struct retrace_lbr_header` in
//! `runtime/retrace_lbr_rt.c` (whose `_Static_assert`s pin the same
//! offsets): a 4096-byte header whose write index, read index and the
//! writer's report sit on separate cache lines, then `2^capacity_log2`
//! slots of two little-endian `u64` (previous site, this site), or a
//! switch value ([`VALUE_TAG`] | call site, value) before the pair it decides.
//!
//! One writer, one reader. The writer fills slots and stores `write_idx`
//! with release order; the reader loads it with acquire order, so the slots
//! below it are complete; the reader stores `read_idx` with release order
//! after reading the slots, so the writer (acquire) never overwrites a slot
//! still being read. Indexes only grow; a slot is `idx & mask`.

use crate::Error;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};

/// "RTLRRING" read as a little-endian u64.
pub const MAGIC: u64 = 0x474e_4952_524c_5452;
/// The layout version the runtime checks.
pub const VERSION: u32 = 1;
/// Bytes before the first slot.
pub const HEADER_BYTES: usize = 4096;
/// Bytes of one slot.
pub const SLOT_BYTES: usize = 16;

const OFF_WRITE: usize = 64;
const OFF_READ: usize = 128;
const OFF_STATE: usize = 192;
const OFF_WRITER_PAIRS: usize = 200;
const OFF_WAITS: usize = 208;
const OFF_FOREIGN: usize = 216;
const OFF_LATE: usize = 224;
const OFF_PID: usize = 232;
const OFF_LOAD_REF: usize = 240;
const OFF_WRITER_VALUES: usize = 248;

/// The bit that marks a slot as a switch value, (tag | call site, value),
/// rather than a pair (the runtime's `RETRACE_LBR_VALUE_TAG`).
pub const VALUE_TAG: u64 = 1 << 63;
/// Where a pair's `from` keeps the outcomes of the comparisons its block
/// made (the runtime's `RETRACE_LBR_REL_SHIFT`; 15 bits, see
/// [`crate::recording::PairCount::relations`]).
pub const REL_SHIFT: u32 = 48;
/// The address bits of a pair's `from`.
pub const ADDR_MASK: u64 = (1 << REL_SHIFT) - 1;

/// The writer's state word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriterState {
    /// The runtime never mapped the buffer (not a writer, or it failed).
    NotAttached,
    /// Attached and writing.
    Attached,
    /// The exit handler ran: every pair is published and counted.
    Finished,
}

/// What the writer reported in the header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriterReport {
    /// Attach state.
    pub state: WriterState,
    /// Pairs the writer wrote (valid once finished).
    pub pairs: u64,
    /// Times the writer found the buffer full and waited.
    pub waits: u64,
    /// Blocks run by threads other than the writing one (not recorded).
    pub foreign_calls: u64,
    /// Blocks run after the exit handler (not recorded).
    pub late_calls: u64,
    /// The writer's process id.
    pub pid: u64,
    /// Run-time address of `retrace_lbr_runtime_version` (load bias of a PIE).
    pub load_ref: u64,
    /// Switch-value slots the writer wrote (valid once finished).
    pub values: u64,
}

/// A mapped buffer, created by the reader side.
pub struct Ring {
    base: *mut u8,
    len: usize,
    mask: u64,
    fd: OwnedFd,
}

// SAFETY: the mapping is shared memory accessed only through atomics (the
// indexes and report) and through slots whose ownership the protocol hands
// over with acquire/release; `Ring` itself has no thread-affine state.
unsafe impl Send for Ring {}
unsafe impl Sync for Ring {}

impl Ring {
    /// Create a buffer of `2^capacity_log2` slots in an anonymous memory file
    /// (memfd) whose descriptor the writer inherits.
    pub fn create(capacity_log2: u32) -> Result<Ring, Error> {
        if !(4..=28).contains(&capacity_log2) {
            return Err(Error::Config(format!(
                "buffer capacity 2^{capacity_log2} slots is outside 2^4..2^28"
            )));
        }
        let len = HEADER_BYTES + (SLOT_BYTES << capacity_log2);
        // SAFETY: plain syscalls; results checked.
        let fd = unsafe { libc::memfd_create(c"retrace-lbr".as_ptr(), 0) };
        if fd < 0 {
            return Err(Error::os("memfd_create"));
        }
        // SAFETY: fd is a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: as above.
        if unsafe { libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) } != 0 {
            return Err(Error::os("ftruncate of the branch buffer"));
        }
        // SAFETY: mapping a file we sized; checked for MAP_FAILED.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(Error::os("mmap of the branch buffer"));
        }
        let ring = Ring {
            base: base.cast(),
            len,
            mask: (1u64 << capacity_log2) - 1,
            fd,
        };
        // SAFETY: the header is inside the mapping and 8-aligned; nobody
        // else has the descriptor yet.
        unsafe {
            (ring.base as *mut u64).write(MAGIC);
            (ring.base.add(8) as *mut u32).write(VERSION);
            (ring.base.add(12) as *mut u32).write(capacity_log2);
        }
        Ok(ring)
    }

    /// The descriptor to hand to the writer (its number goes in `RETRACE_LBR_FD`).
    pub fn fd(&self) -> &OwnedFd {
        &self.fd
    }

    /// Slots in the buffer.
    pub fn capacity(&self) -> u64 {
        self.mask + 1
    }

    fn word(&self, offset: usize) -> &AtomicU64 {
        debug_assert!(offset.is_multiple_of(8) && offset < HEADER_BYTES);
        // SAFETY: in bounds, aligned, and the mapping lives as long as self.
        unsafe { AtomicU64::from_ptr(self.base.add(offset) as *mut u64) }
    }

    /// The writer's published index (acquire: the slots below it are complete).
    pub fn write_index(&self) -> u64 {
        self.word(OFF_WRITE).load(Ordering::Acquire)
    }

    /// Give slots below `idx` back to the writer (release: our reads are done).
    pub fn set_read_index(&self, idx: u64) {
        self.word(OFF_READ).store(idx, Ordering::Release)
    }

    /// The pair in slot `idx & mask`. Only valid for `idx` below a loaded
    /// write index and not below the read index.
    #[inline]
    pub fn slot(&self, idx: u64) -> (u64, u64) {
        let at = HEADER_BYTES + SLOT_BYTES * (idx & self.mask) as usize;
        // SAFETY: in bounds; the protocol makes the writer leave this slot
        // alone until we publish a read index above idx. Volatile because
        // another process writes the memory.
        unsafe {
            let p = self.base.add(at) as *const u64;
            (p.read_volatile(), p.add(1).read_volatile())
        }
    }

    /// The writer's report (its state word is loaded with acquire order so
    /// the counts stored before it are visible).
    pub fn writer_report(&self) -> WriterReport {
        let state = match self.word(OFF_STATE).load(Ordering::Acquire) {
            0 => WriterState::NotAttached,
            1 => WriterState::Attached,
            _ => WriterState::Finished,
        };
        let get = |o| self.word(o).load(Ordering::Relaxed);
        WriterReport {
            state,
            pairs: get(OFF_WRITER_PAIRS),
            waits: get(OFF_WAITS),
            foreign_calls: get(OFF_FOREIGN),
            late_calls: get(OFF_LATE),
            pid: get(OFF_PID),
            load_ref: get(OFF_LOAD_REF),
            values: get(OFF_WRITER_VALUES),
        }
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: unmapping our own mapping once.
        unsafe {
            libc::munmap(self.base.cast(), self.len);
        }
    }
}
