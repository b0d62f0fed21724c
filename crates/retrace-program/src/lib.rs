//! # retrace-program
#![deny(missing_docs)]
