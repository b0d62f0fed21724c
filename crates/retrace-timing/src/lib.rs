//! # retrace-timing
//!
//! Models of target cores, and the one set of timing rules that both of
//! retrace's time-keepers use:
//!
//! - the **cycle-level engine** feeds every retired instruction to
//!   [`CoreState::step`], which consults the live branch predictor,
//!   return-address stack and caches and advances the [`Pipeline`];
//! - the **replay** times a whole partial program at once with
//!   [`PathTimer`], from a [`Signature`] of the pipeline state at its entry,
//!   with the dynamic events (mispredictions, cache misses) supplied by the
//!   same predictor and cache structures, and memoises the answer.
//!
//! Both end in [`Pipeline::issue`], so the two can only disagree where state
//! crosses a partial-program boundary — and that state is exactly what a
//! [`Signature`] captures.
//!
//! A core is described by a [`CoreModel`], read from TOML (every field is
//! documented in `docs/TIMING.md`) or taken from a built-in preset
//! ([`preset`], [`PRESETS`]).
//!
//! ```
//! use retrace_timing::{preset, CoreState, Resolved};
//! use retrace_isa::{decode, Xlen};
//! let model = preset("ideal").unwrap();
//! let mut core = CoreState::new(&model);
//! let add = decode(0x00b5_0533, Xlen::Rv32).unwrap(); // add a0, a0, a1
//! core.step(0x8000_0000, &add, Resolved::fall_through(0x8000_0004));
//! assert_eq!(core.cycles(), 1);
//! ```
#![deny(missing_docs)]

mod cache;
mod core;
mod cpi;
mod frontend;
mod model;
mod overrides;
mod path;
mod pipeline;
mod predict;
mod presets;

pub use crate::core::{CoreState, CoreStats, Resolved};
pub use cache::Cache;
pub use cpi::{loaded_after, CpiAccount, CpiPart, CpiStack, CPI_PARTS};
pub use frontend::Frontend;
pub use model::{
    BranchModel, CacheModel, ClassTable, CoreModel, FetchModel, FloatUnit, LateAlu, ModelError,
    PipeTable, Pipes, PredictorKind, TimingClass, Unit,
};
pub use overrides::{
    core_with_overrides, grid, Axis, Override, OverrideError, OverrideValue, MAX_AXIS_POINTS,
};
pub use path::{Events, PathTimer, Signature, SignatureId};
pub use pipeline::Pipeline;
pub use predict::{static_prediction, BranchPredictor, ReturnStack};
pub use presets::{preset, PresetError, PRESETS};
