//! [`Addr`], an instruction or data address in the target's address space.
//!
//! A distinct type rather than a bare `u64` so that an address cannot be
//! mixed up with an instruction count, a byte offset or a [`crate::PpId`]
//! (gimli's `DebugInfoOffset` vs `UnitOffset` argument). It is always 64
//! bits wide: an RV32 address is stored zero-extended, so one type serves
//! both register widths and the hot replay loop never branches on XLEN.

use std::fmt;

/// An address in the simulated program's address space (zero-extended on
/// RV32).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Addr(pub u64);

impl Addr {
    /// The address `bytes` further on (wrapping, as the pc does).
    #[inline]
    pub fn offset(self, bytes: u64) -> Addr {
        Addr(self.0.wrapping_add(bytes))
    }

    /// The raw value.
    #[inline]
    pub fn get(self) -> u64 {
        self.0
    }
}

impl From<u64> for Addr {
    #[inline]
    fn from(v: u64) -> Addr {
        Addr(v)
    }
}

impl From<Addr> for u64 {
    #[inline]
    fn from(a: Addr) -> u64 {
        a.0
    }
}

impl fmt::Display for Addr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

impl fmt::LowerHex for Addr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::LowerHex::fmt(&self.0, f)
    }
}
