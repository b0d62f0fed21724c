//! # retrace-clock
//!
//! Puts the cycle counters of many processors on one clock (JP5267566B2).
//! Each processor's counter advances at its own, changing frequency and
//! started at its own moment; a trace stamped with those counters is not
//! comparable across processors until both are corrected:
//!
//! - [`history`]: a processor's frequency changes turn a counter value into
//!   *virtual time* — seconds, at one rate for every processor — exactly,
//!   by binary search over running sums;
//! - [`sync`]: rounds of the patent's two-way exchange measure the start offset
//!   between a responder and the reference, with an error bound, several
//!   estimators and drift across re-synchronisations;
//! - [`correct`]: events `(processor, counter value, payload)` onto the
//!   reference's virtual time;
//! - [`formats`]: history, sync and event files (CSV, JSON, Linux ftrace and
//!   `perf script` text) and outputs (CSV, JSON, Chrome Trace Event JSON);
//! - [`simulate`]: a ground-truth simulation that measures each estimator's
//!   error; [`probe`]: the same exchange between two CPUs of this host.
//!
//! The patent's worked example, end to end:
//!
//! ```
//! use retrace_clock::{FrequencyHistory, Hz, ProcessorId, VirtualTime};
//! use retrace_clock::sync::{estimate, OffsetEstimator, SyncRound};
//!
//! let mhz = |m| Hz::from_mhz(m).unwrap();
//! // Processor 1: 100 MHz, then 50 MHz from 100 M cycles, 150 MHz from 150 M.
//! let mut p1 = FrequencyHistory::new(ProcessorId(1), 0, mhz(100));
//! p1.push_change(100_000_000, mhz(50))?;
//! p1.push_change(150_000_000, mhz(150))?;
//! assert_eq!(p1.virtual_time(300_000_000)?, VirtualTime::from_secs(3));
//!
//! // Processor 2: 25 MHz, then 100 MHz, then 150 MHz; it reads 50 M at the
//! // instant processor 1 reads 150 M.
//! let mut p2 = FrequencyHistory::new(ProcessorId(2), 0, mhz(25));
//! p2.push_change(50_000_000, mhz(100))?;
//! p2.push_change(150_000_000, mhz(150))?;
//! assert_eq!(p2.virtual_time(50_000_000)?, p1.virtual_time(150_000_000)?);
//!
//! // One sync round A, B, C, a, b, c gives d = 50: the responder's 875 is 925.
//! let round = SyncRound::from_letters([75, 125, 225, 275, 425, 425]);
//! let d = estimate(&[round], OffsetEstimator::Mean)?;
//! assert_eq!((d.offset, d.bound), (50, 75));
//! assert_eq!(875 + d.offset, 925);
//! # Ok::<(), retrace_clock::Error>(())
//! ```
#![deny(missing_docs)]

pub mod correct;
mod error;
pub mod formats;
pub mod history;
pub mod probe;
mod rng;
pub mod simulate;
pub mod sync;
mod time;
pub mod workload;

pub use correct::{synchronise, Corrector, SyncRow, Synchronisation};
pub use error::{Error, Location, Result};
pub use history::{CounterWidth, FrequencyHistory, Histories};
pub use sync::{DriftModel, OffsetEstimate, OffsetEstimator, OffsetTrack, SyncRound};
pub use time::{Hz, ProcessorId, TimeDelta, VirtualTime, ATTOS_PER_NANOSECOND, ATTOS_PER_SECOND};
