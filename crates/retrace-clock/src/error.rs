//! The crate's error type: every variant names the offending value and, when
//! it came from a file, the file and line.

use crate::time::ProcessorId;
use std::fmt;
use std::path::PathBuf;

/// Where an input row came from: a file (or `-` for standard input) and a
/// 1-based line number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    /// The file name as the user gave it.
    pub file: PathBuf,
    /// 1-based line number.
    pub line: u64,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file.display(), self.line)
    }
}

/// Prints `file:line: ` before a message when the location is known.
struct At<'a>(&'a Option<Location>);

impl fmt::Display for At<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(location) => write!(f, "{location}: "),
            None => Ok(()),
        }
    }
}

/// Everything that can go wrong in `retrace-clock`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file could not be read or written. The message includes what
    /// the operating system said, so the error has no separate source
    /// (an error chain would print it twice).
    #[error("{}: {error}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        error: std::io::Error,
    },
    /// A line that is not a row of the expected format.
    #[error("{}malformed row: {reason}", At(at))]
    Malformed {
        /// Where.
        at: Option<Location>,
        /// What is wrong with it.
        reason: String,
    },
    /// A frequency that is zero or negative.
    #[error(
        "{}processor {processor}: frequency must be positive, got {value}",
        At(at)
    )]
    BadFrequency {
        /// Where.
        at: Option<Location>,
        /// Whose history.
        processor: ProcessorId,
        /// The value as written.
        value: String,
    },
    /// A frequency change at a counter value below the previous change.
    #[error(
        "{}processor {processor}: history rows out of order: counter {counter} after {previous}",
        At(at)
    )]
    UnsortedHistory {
        /// Where.
        at: Option<Location>,
        /// Whose history.
        processor: ProcessorId,
        /// The counter value of this row.
        counter: u64,
        /// The counter value of the row before it.
        previous: u64,
    },
    /// Two frequency changes at the same counter value.
    #[error(
        "{}processor {processor}: duplicate history row at counter {counter}",
        At(at)
    )]
    DuplicateHistoryRow {
        /// Where.
        at: Option<Location>,
        /// Whose history.
        processor: ProcessorId,
        /// The repeated counter value.
        counter: u64,
    },
    /// A processor that has no frequency history.
    #[error("{}processor {processor} has no frequency history", At(at))]
    UnknownProcessor {
        /// Where.
        at: Option<Location>,
        /// The processor.
        processor: ProcessorId,
    },
    /// A counter value before the first row of its processor's history.
    #[error(
        "{}processor {processor}: counter {counter} is before the history starts at {start}",
        At(at)
    )]
    BeforeStart {
        /// Where.
        at: Option<Location>,
        /// The processor.
        processor: ProcessorId,
        /// The counter value.
        counter: u64,
        /// The first counter value the history covers.
        start: u64,
    },
    /// A counter value wider than the declared counter width.
    #[error(
        "{}processor {processor}: counter {counter} does not fit in {bits} bits",
        At(at)
    )]
    CounterTooWide {
        /// Where.
        at: Option<Location>,
        /// The processor.
        processor: ProcessorId,
        /// The counter value.
        counter: u64,
        /// The declared width.
        bits: u32,
    },
    /// Unwrapping a narrow counter ran past 2⁶⁴.
    #[error("{}processor {processor}: unwrapped counter passes 2^64", At(at))]
    CounterOverflow {
        /// Where.
        at: Option<Location>,
        /// The processor.
        processor: ProcessorId,
    },
    /// A synchronisation round whose reads are not in the order the exchange
    /// makes them (the round trip `C − A` or `c − a` is negative).
    #[error("{}sync round {reference}↔{responder}: {reason}", At(at))]
    InvalidRound {
        /// Where.
        at: Option<Location>,
        /// The reference processor.
        reference: ProcessorId,
        /// The responder.
        responder: ProcessorId,
        /// What is inconsistent.
        reason: String,
    },
    /// An offset estimate was asked of no rounds.
    #[error("no synchronisation rounds to estimate an offset from")]
    NoRounds,
    /// Sync rows name more than one reference processor.
    #[error(
        "{}sync rows name two reference processors: {first} and {second}",
        At(at)
    )]
    TwoReferences {
        /// Where the second one appears.
        at: Option<Location>,
        /// The first reference seen.
        first: ProcessorId,
        /// The other one.
        second: ProcessorId,
    },
    /// An event of a processor that was never synchronised with the reference.
    #[error(
        "{}processor {processor} has no synchronisation rounds with reference {reference}",
        At(at)
    )]
    NotSynchronised {
        /// Where.
        at: Option<Location>,
        /// The processor.
        processor: ProcessorId,
        /// The reference processor.
        reference: ProcessorId,
    },
    /// An ftrace / `perf script` history whose timestamps are seconds, not
    /// counter values: the whole file is on a clock that needs no
    /// frequency correction.
    #[error("{}timestamp {stamp} {}", At(at), crate::formats::SECONDS_ADVICE)]
    TimestampInSeconds {
        /// Where the first one is.
        at: Option<Location>,
        /// The timestamp as written.
        stamp: String,
    },
    /// An argument outside what the function supports.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
}

/// Matches `$error` against every variant: those that carry a file location
/// bind it as `$at` and give `$located`; the rest give `$unlocated`. One list
/// of the located variants for every accessor.
macro_rules! match_location {
    ($error:expr, $at:ident => $located:expr, _ => $unlocated:expr) => {
        match $error {
            Error::Malformed { at: $at, .. }
            | Error::BadFrequency { at: $at, .. }
            | Error::UnsortedHistory { at: $at, .. }
            | Error::DuplicateHistoryRow { at: $at, .. }
            | Error::UnknownProcessor { at: $at, .. }
            | Error::BeforeStart { at: $at, .. }
            | Error::CounterTooWide { at: $at, .. }
            | Error::CounterOverflow { at: $at, .. }
            | Error::InvalidRound { at: $at, .. }
            | Error::TwoReferences { at: $at, .. }
            | Error::NotSynchronised { at: $at, .. }
            | Error::TimestampInSeconds { at: $at, .. } => $located,
            Error::Io { .. } | Error::NoRounds | Error::InvalidArgument(_) => $unlocated,
        }
    };
}

impl Error {
    /// The location of the offending row, if it came from a file.
    pub fn location(&self) -> Option<&Location> {
        match_location!(self, at => at.as_ref(), _ => None)
    }

    /// The same error, located at `location` (replacing any location it had).
    pub fn at(mut self, location: Location) -> Error {
        match_location!(&mut self, at => *at = Some(location), _ => {});
        self
    }

    /// A short stable name of the kind of problem, used to count skipped rows.
    pub fn kind(&self) -> &'static str {
        match self {
            Error::Io { .. } => "io",
            Error::Malformed { .. } => "malformed",
            Error::BadFrequency { .. } => "bad-frequency",
            Error::UnsortedHistory { .. } => "unsorted-history",
            Error::DuplicateHistoryRow { .. } => "duplicate-history-row",
            Error::UnknownProcessor { .. } => "unknown-processor",
            Error::BeforeStart { .. } => "before-start",
            Error::CounterTooWide { .. } => "counter-too-wide",
            Error::CounterOverflow { .. } => "counter-overflow",
            Error::InvalidRound { .. } => "invalid-round",
            Error::NoRounds => "no-rounds",
            Error::TwoReferences { .. } => "two-references",
            Error::NotSynchronised { .. } => "not-synchronised",
            Error::TimestampInSeconds { .. } => "timestamp-in-seconds",
            Error::InvalidArgument(_) => "invalid-argument",
        }
    }
}

/// Result with the crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
