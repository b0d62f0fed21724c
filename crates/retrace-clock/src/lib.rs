//! # retrace-clock
#![deny(missing_docs)]
