//! US patent 8,448,140's aggregation (US patent 8,448,140, embodiments 2–6): collapsing
//! regions of the program so that fewer branch outcomes are recorded and
//! fewer partial programs replayed.
//!
//! - [`plan`]: which regions collapse — so far the loops of embodiment 2,
//!   chosen from the machine code (seed condition Z1) and classified by the
//!   patent's static trip-count rule;
//! - [`formula`]: the time of each aggregated kind of region, over numbers
//!   or over symbolic partial-program times (the patent's worked tables);
//! - [`history`]: the replay side of embodiment 2 — a [`crate::History`]
//!   that turns a trace's per-loop trip counts back into the branch
//!   outcomes the walk asks for, so an aggregated trace replays to exactly
//!   the partial-program sequence (and time) of the unaggregated one.
//!
//! - [`ifelse`]: embodiment 3, if-else sites by branch probability (lossy),
//!   gated by embodiment 6's if-else bias;
//! - [`collapse`]: embodiments 4 and 5, loop nests and functions collapsed
//!   by their mean time (lossy), nests gated by embodiment 6's loop bias;
//! - [`build`]: one level's whole plan, for `record` and the ladder alike;
//! - [`local`]: the local timing error — per call, the aggregated replay's
//!   duration against the plain one's.
//! - [`ladder`]: one program recorded and replayed at every level built,
//!   for `retrace aggregate`.
//!
//! The plan lives here rather than beside the partial-program table in
//! `retrace-program` because it is a decision about *recording and
//! replay* (which sites stop writing bits, what the replay reads instead),
//! and the lossy kinds will need a profile of an earlier replay, which only
//! this crate produces; the static facts it is built on (loops, Z1, the
//! trip-count test) stay in `retrace_program::loops`.

pub mod build;
pub mod collapse;
pub mod formula;
pub mod history;
pub mod ifelse;
pub mod ladder;
pub mod local;
pub mod plan;
#[cfg(test)]
mod seed;

pub use formula::{Sym, Time};
pub use history::{AggregatedHistory, SiteTracker, Tracked};
pub use plan::{AggLoop, Level, LoopPlan, LoopType};
