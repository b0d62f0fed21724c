//! # retrace-program
//!
//! What retrace knows about a program without running it. For now: loading a
//! RISC-V ELF executable ([`Elf`]) — its register width, entry point, load
//! segments, executable sections, symbols, HTIF addresses and identity hash.
//!
//! ```no_run
//! let bytes = std::fs::read("prog.elf").unwrap();
//! let elf = retrace_program::Elf::parse(&bytes).unwrap();
//! println!("entry {:#x}, {} segments, identity {:016x}", elf.entry, elf.segments.len(), elf.identity());
//! ```
#![deny(missing_docs)]

pub mod elf;
pub use elf::{CodeSection, Elf, ElfError, Segment, SegmentFlags, Symbol};
