//! # retrace-isa
//!
//! The one RISC-V decoder of retrace: RV32 and RV64 with the I, M, A, F, D,
//! C, Zicsr and Zifencei extensions (plus the privileged `mret`/`sret`/`wfi`/
//! `sfence.vma`). Every other part — the functional and cycle-level engines,
//! the CFG builder, the timing model, the disassembler — reads the same
//! [`Inst`] value produced here, so they cannot disagree about what an
//! encoding means.
//!
//! - [`decode`] turns a 16- or 32-bit encoding into an [`Inst`] or a
//!   [`DecodeError`] (illegal vs. unsupported extension), never panicking.
//! - [`Inst::flow`], [`Inst::class`], [`Inst::reads`], [`Inst::writes`] and
//!   [`Inst::mem`] answer what the CFG builder, simulator and timing model ask.
//! - [`encode`] is the exact inverse of [`decode`].
//! - [`disasm`] prints what GNU `objdump -d` prints; [`reg_name`] and
//!   [`csr::Csr::name`] give the register and CSR names it uses.
//!
//! ```
//! use retrace_isa::{decode, Xlen, Op, Flow};
//! // 0x00008067 is `jalr x0, 0(ra)`, i.e. `ret`.
//! let inst = decode(0x0000_8067, Xlen::Rv64).unwrap();
//! assert_eq!(inst.op, Op::Jalr);
//! assert_eq!(inst.flow(), Flow::Return);
//! assert_eq!(retrace_isa::disasm(&inst, 0x1000, Xlen::Rv64).to_string(), "ret");
//! ```
#![deny(missing_docs)]

mod bits;
pub mod csr;
mod decode;
mod disasm;
mod encode;
mod fnv;
mod fp;
mod inst;
pub mod objdump;
mod return_stack;

pub use decode::{decode, inst_len, DecodeError};
pub use disasm::{disasm, freg_name, reg_name, Disasm};
pub use encode::{encode, EncodeError};
pub use fnv::Fnv1a;
pub use inst::{Class, Flow, Inst, MemAccess, MemKind, Op, Xlen};
pub use return_stack::{ReturnStack, RETURN_STACK_BOUND};
