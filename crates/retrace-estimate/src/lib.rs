//! # retrace-estimate
//!
//! US patent 8,448,140's estimator: replay a recorded branch history over the
//! partial-program table and sum the target core's time of each executed
//! partial program — without running the program again.
//!
//! - [`walk`] is the replay itself, generic over the graph (the machine-level
//!   [`retrace_program::PpTable`], or the patent's symbolic table in the
//!   tests), the history ([`TraceHistory`] over a `.rtrace` file) and what is
//!   done with each executed partial program ([`Visit`]).
//! - [`Estimator`] is the visitor that times them for one core at a
//!   [`Fidelity`]; [`estimate_trace`] runs the whole thing for a trace, read
//!   from a file or from memory ([`TraceSource`]).
//! - [`system`] replays a multi-hart trace, a core per hart, the harts
//!   meeting at their synchronisation calls (US patent 8,448,140's
//!   multiprocessor estimation).
//! - [`annotate`] is `retrace annotate`'s view: per instruction and per
//!   source line, what a replay charged (the profile's per-instruction
//!   costs, [`Profile::instructions`]).
//! - [`callgrind`] writes a profile in callgrind's format.
//! - [`compare`] is the pipeline that judges an estimate: the cycle-level
//!   engine for reference, a recording in memory, the estimates from it.
#![deny(missing_docs)]

pub mod aggregate;
pub mod annotate;
pub mod callgrind;
pub mod compare;
mod control_span;
mod estimator;
mod machine;
pub mod mca;
mod profile;
mod run;
pub mod sample_profile;
mod source;
mod span;
mod static_pp;
pub mod system;
mod walk;

pub use estimator::{Estimate, Estimator, Fidelity};
pub use machine::{TraceHistory, INVALID};
pub use profile::{BranchProfile, CallEdge, FunctionProfile, PpProfile, Profile, Profiler};
pub use run::{
    estimate_trace, estimate_trace_stepwise, profile_trace, profile_trace_with, read_totals,
    replay_check, Profiling,
};
pub use source::{read_totals_from, TraceSource};
pub use span::SpanStats;
pub use static_pp::{PpCost, StaticCycles};
pub use walk::{walk, Exit, Graph, History, Leave, ReplayError, Visit, WalkStats};
