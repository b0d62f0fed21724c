//! # retrace-sim
#![deny(missing_docs)]
