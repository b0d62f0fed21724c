//! # retrace-lbr
//!
//! Software branch records for CPUs without a Last Branch Record, after
//! JP2024157581A (Fujitsu): collect the branch history that profile-guided
//! optimisers expect from LBR hardware, on x86-64 Linux, from native
//! programs.
//!
//! - [`runtime`]: the *writer* — the program built with
//!   `-fsanitize-coverage=trace-pc` and linked with retrace's C runtime,
//!   which writes (previous site, this site) pairs into
//! - [`ring`]: a shared-memory cyclic buffer (slots, write and read
//!   pointers; the writer waits when it is full, so no pair is lost);
//! - [`control`]: the *branch control program* — a thread pinned to
//!   another CPU that reads each pair and runs its *code block* (found in a
//!   hash table, made from a template on a miss), or counts pairs exactly;
//! - [`sample`]: *acquisition* — instruction-address sampling of that
//!   thread with `perf_event_open` (software cpu-clock);
//! - [`record`]: the whole run, into a [`Recording`] (`.lbr` file);
//! - [`disasm`] and [`convert`]: *conversion* — pairs back to machine
//!   branches of the binary, written as `perf script` branch stacks for
//!   `llvm-profgen`, an LLVM text sample profile, or branch probabilities
//!   per site (JSON);
//! - [`correspond`]: those branches mapped onto the *analysed* program
//!   (the ordinary build of the same sources, without coverage) through
//!   both binaries' DWARF, and the same outputs in its addresses.
//!
//! ```no_run
//! use retrace_lbr::record::{record, RecordOptions};
//! use retrace_lbr::control::Mode;
//! let opts = RecordOptions::new("./crc32.writer".into(), vec![], Mode::Exact);
//! let rec = record(&opts)?;
//! assert_eq!(rec.counts.reader_pairs, rec.counts.writer_pairs);
//! # Ok::<(), retrace_lbr::Error>(())
//! ```
#![deny(missing_docs)]

pub mod control;
pub mod convert;
pub mod correspond;
pub mod disasm;
pub mod dispatch;
pub mod record;
pub mod recording;
pub mod ring;
pub mod runtime;
pub mod sample;

pub use recording::Recording;

use std::path::Path;

/// Everything that can go wrong, each with the value that caused it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An operating-system call failed.
    #[error("{what}: {err}")]
    Os {
        /// The call.
        what: &'static str,
        /// errno.
        err: std::io::Error,
    },
    /// A file could not be read or written.
    #[error("{}: {err}", path.display())]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// The failure.
        err: std::io::Error,
    },
    /// The program given as writer lacks the runtime.
    #[error("{0}")]
    NotWriter(String),
    /// A file is not what it should be (not ELF, not a `.lbr`, truncated).
    #[error("{0}")]
    BadInput(String),
    /// Sampling is not available.
    #[error("{0}")]
    Perf(String),
    /// An external tool (compiler, objdump) failed.
    #[error("{0}")]
    Tool(String),
    /// An option is out of range.
    #[error("{0}")]
    Config(String),
    /// The counts of the two sides disagree (would mean a lost pair).
    #[error("{0}")]
    Lost(String),
}

impl Error {
    pub(crate) fn os(what: &'static str) -> Error {
        Error::Os {
            what,
            err: std::io::Error::last_os_error(),
        }
    }
    pub(crate) fn io(path: &Path, err: std::io::Error) -> Error {
        Error::Io {
            path: path.to_path_buf(),
            err,
        }
    }
}
