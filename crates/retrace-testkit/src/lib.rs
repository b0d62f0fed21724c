//! # retrace-testkit
//!
//! The helpers retrace's tests share, in one place instead of a copy per
//! crate: a minimal ELF writer ([`elf`]), instruction builders ([`asm`]), one
//! seeded generator ([`rng`]), discovery of the example programs
//! ([`programs`]), the external-tool policy of `RETRACE_REQUIRE_TOOLS`
//! ([`tools`]), golden files with `RETRACE_BLESS=1` ([`golden`]), and a thin
//! layer over `libtest-mimic` for sweeps that run as one trial per row
//! ([`trials`]).
//!
//! It depends on `retrace-isa` only (for encoding): a library crate whose
//! own unit tests used a kit that depends on that same crate would link two
//! copies of its types.
//!
//! ```
//! use retrace_testkit::{asm, elf::ElfImage};
//! use retrace_isa::{Op, Xlen};
//! let words = [asm::word(Xlen::Rv64, Op::Addi, asm::A0, 0, 0, 7)];
//! let file = ElfImage::riscv64().build(&asm::bytes(&words));
//! assert_eq!(&file[..4], b"\x7fELF");
//! ```
#![deny(missing_docs)]

pub mod asm;
pub mod elf;
pub mod golden;
pub mod programs;
pub mod rng;
pub mod tools;
pub mod trials;

pub use rng::Rng;
