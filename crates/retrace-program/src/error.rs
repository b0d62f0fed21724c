//! Errors and warnings of the program analysis.
//!
//! The analysis reads untrusted bytes, so nothing it finds is a panic. A
//! problem that makes the result unusable (no code at all, a start address
//! that cannot be decoded) is a [`ProgramError`]; a problem that the
//! analysis can work around conservatively (a zero-size symbol, a branch
//! into the middle of an instruction, a function that falls off its end) is
//! a [`Warning`] kept beside the result. Both carry the offending address.

use crate::Addr;
use retrace_isa::DecodeError;

/// Why an address could not be analysed, or why the analysis failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProgramError {
    /// The ELF file has no executable section or segment.
    #[error("the program has no executable code")]
    NoCode,
    /// The address lies outside every executable region.
    #[error("address {addr} is outside the program's code")]
    NotCode {
        /// The address.
        addr: Addr,
    },
    /// An odd address: RISC-V instructions are 2-byte aligned.
    #[error("address {addr} is not 2-byte aligned")]
    Misaligned {
        /// The address.
        addr: Addr,
    },
    /// The bytes at the address are not an instruction retrace executes.
    #[error("cannot decode the instruction at {addr}: {error}")]
    Illegal {
        /// The address.
        addr: Addr,
        /// What the decoder said.
        error: DecodeError,
    },
    /// A 4-byte instruction whose second half lies past the end of its code
    /// region.
    #[error("the instruction at {addr} runs past the end of its code region")]
    Truncated {
        /// The address.
        addr: Addr,
    },
    /// No function has this name.
    #[error("no function named `{name}`")]
    UnknownFunction {
        /// The name asked for.
        name: String,
    },
}

impl ProgramError {
    /// The address the error is about, if it is about one.
    pub fn addr(&self) -> Option<Addr> {
        match self {
            ProgramError::NotCode { addr }
            | ProgramError::Misaligned { addr }
            | ProgramError::Illegal { addr, .. }
            | ProgramError::Truncated { addr } => Some(*addr),
            _ => None,
        }
    }
}

/// Something odd the analysis found and worked around. Every warning names
/// the address it is about.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Warning {
    /// A function symbol of size 0: its extent is found by following its
    /// control flow instead.
    #[error("function symbol `{name}` at {addr} has size 0; its extent follows its control flow")]
    ZeroSizeSymbol {
        /// Symbol name.
        name: String,
        /// Its address.
        addr: Addr,
    },
    /// Two function symbols overlap without one containing the other.
    #[error("function symbols `{first}` at {first_addr} and `{second}` at {second_addr} overlap")]
    OverlappingSymbols {
        /// The symbol that starts first.
        first: String,
        /// Its address.
        first_addr: Addr,
        /// The other symbol.
        second: String,
        /// Its address.
        second_addr: Addr,
    },
    /// A function symbol that does not point into executable code; it is
    /// ignored.
    #[error("function symbol `{name}` at {addr} is not in executable code; ignored")]
    SymbolOutsideCode {
        /// Symbol name.
        name: String,
        /// Its address.
        addr: Addr,
    },
    /// Control flow from `from` leads to an address that cannot be
    /// executed; that successor is left unresolved (replay stops with an
    /// error if the program ever goes there).
    #[error("control flow from {from} leads to {to}, which cannot be executed: {error}")]
    BadTarget {
        /// The instruction whose successor this is.
        from: Addr,
        /// The successor address.
        to: Addr,
        /// Why it cannot be executed.
        error: ProgramError,
    },
    /// An instruction starts inside another decoded instruction (a branch
    /// into the middle of an instruction, or data decoded as code). Both
    /// decodings are kept: each path follows its own.
    #[error("instruction at {addr} starts inside the instruction at {inside}")]
    MidInstruction {
        /// The later-found instruction.
        addr: Addr,
        /// The instruction it overlaps.
        inside: Addr,
    },
    /// Execution falls through past the end of a function symbol.
    #[error("function `{function}` falls off its end at {addr}")]
    FallsOffEnd {
        /// The function.
        function: String,
        /// The first address past its end that execution reaches.
        addr: Addr,
    },
    /// A direct jump leaves its function's symbol for an address that is no
    /// function entry; the code there is counted as part of the function.
    #[error("function `{function}` jumps from {from} to {to}, outside its symbol")]
    JumpOutsideFunction {
        /// The function.
        function: String,
        /// The jump.
        from: Addr,
        /// Its target.
        to: Addr,
    },
}

impl Warning {
    /// The address the warning is chiefly about.
    pub fn addr(&self) -> Addr {
        match self {
            Warning::ZeroSizeSymbol { addr, .. }
            | Warning::SymbolOutsideCode { addr, .. }
            | Warning::MidInstruction { addr, .. }
            | Warning::FallsOffEnd { addr, .. } => *addr,
            Warning::OverlappingSymbols { second_addr, .. } => *second_addr,
            Warning::BadTarget { from, .. } | Warning::JumpOutsideFunction { from, .. } => *from,
        }
    }
}
