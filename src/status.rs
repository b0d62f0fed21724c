//! Exit statuses of `retrace` itself.
//!
//! `retrace run` passes the simulated program's exit code through (0–255), so
//! retrace's own failures use a small documented band at the top of the range,
//! the same convention as `timeout(1)` and `env(1)`: a script that cares can
//! tell them apart, and `--json` output says which it was without ambiguity.
//! The table is repeated in the README.
//!
//! | status | meaning |
//! |---|---|
//! | 2 | command-line usage error (from clap) |
//! | 123 | the program asked for something it is not allowed (semihosting outside `--allow-dir`) |
//! | 124 | the program ran past `--max-insns` |
//! | 125 | retrace could not do the job: a missing, malformed or foreign input file (ELF, trace, TOML, CSV) |
//! | 126 | the simulated program faulted: illegal instruction, access outside memory, unhandled trap (and `record`: a trap handler that traps at its first instruction, which would loop forever) |
//! | 130, 143 | `record` stopped by SIGINT (Ctrl-C) or SIGTERM: no trace written, the old one kept |

use std::fmt;

/// A failure class with its documented exit status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// 123: semihosting request outside the allowed directory.
    Denied,
    /// 124: `--max-insns` reached.
    Runaway,
    /// 125: bad input or an I/O failure of retrace itself.
    BadInput,
    /// 126: the simulated program faulted.
    Fault,
    /// 128 + the signal's number: stopped by a signal (the shell's
    /// convention: 130 for SIGINT, 143 for SIGTERM).
    Interrupted(u8),
}

impl Status {
    /// The process exit status for this class.
    pub fn code(self) -> u8 {
        match self {
            Status::Denied => 123,
            Status::Runaway => 124,
            Status::BadInput => 125,
            Status::Fault => 126,
            Status::Interrupted(signal) => 128u8.saturating_add(signal),
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "exit status {}", self.code())
    }
}

impl std::error::Error for Status {}

/// Extension to tag an error with the status it should exit with.
pub trait WithStatus<T> {
    /// Attach `status` to the error of this result.
    fn status(self, status: Status) -> anyhow::Result<T>;
}

impl<T, E: Into<anyhow::Error>> WithStatus<T> for Result<T, E> {
    fn status(self, status: Status) -> anyhow::Result<T> {
        self.map_err(|e| tag(e.into(), status))
    }
}

/// Tag an error with an exit status (kept as the error's root context).
pub fn tag(err: anyhow::Error, status: Status) -> anyhow::Error {
    Tagged { status, err }.into()
}

#[derive(Debug)]
struct Tagged {
    status: Status,
    err: anyhow::Error,
}

impl fmt::Display for Tagged {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `{:#}` prints the whole chain on one line: "what: where: why".
        write!(f, "{:#}", self.err)
    }
}

impl std::error::Error for Tagged {}

/// The exit status for an error: its tag if it has one, else "bad input".
pub fn of_error(err: &anyhow::Error) -> u8 {
    err.chain()
        .find_map(|e| e.downcast_ref::<Tagged>().map(|t| t.status.code()))
        .unwrap_or(Status::BadInput.code())
}
