//! Control and status register state, trap causes and privilege modes.
//!
//! Trap causes are an open newtype with named constants (the `gimli`
//! style): an unknown value still prints. CSR numbers are the same kind of
//! type, [`retrace_isa::csr::Csr`], kept with the decoder and disassembler
//! so there is one list of them.

use std::fmt;

/// A synchronous exception cause (`mcause` value; retrace raises no
/// interrupts).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Cause(pub u64);

macro_rules! causes {
    ($( $name:ident = $num:literal, $text:literal; )*) => {
        impl Cause {
            $( #[doc = $text] pub const $name: Cause = Cause($num); )*
            /// A description as in the privileged specification.
            pub fn describe(self) -> Option<&'static str> {
                match self.0 { $( $num => Some($text), )* _ => None }
            }
        }
    };
}

causes! {
    FETCH_MISALIGNED = 0, "instruction address misaligned";
    FETCH_ACCESS = 1, "instruction access fault";
    ILLEGAL_INSTRUCTION = 2, "illegal instruction";
    BREAKPOINT = 3, "breakpoint";
    LOAD_MISALIGNED = 4, "load address misaligned";
    LOAD_ACCESS = 5, "load access fault";
    STORE_MISALIGNED = 6, "store/AMO address misaligned";
    STORE_ACCESS = 7, "store/AMO access fault";
    ECALL_U = 8, "environment call from U-mode";
    ECALL_S = 9, "environment call from S-mode";
    ECALL_M = 11, "environment call from M-mode";
}

impl Cause {
    /// An `ecall` or `ebreak`: the trapping instruction ends a partial
    /// program and counts as executed, going to the handler (observers see
    /// it retire there), unlike a fault, which abandons its instruction.
    pub fn is_call(self) -> bool {
        matches!(
            self,
            Cause::ECALL_M | Cause::ECALL_S | Cause::ECALL_U | Cause::BREAKPOINT
        )
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.describe() {
            Some(n) => f.write_str(n),
            None => write!(f, "exception {}", self.0),
        }
    }
}

/// Privilege mode. retrace implements M and U (no S-mode, no paging).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Priv {
    /// User mode.
    User = 0,
    /// Machine mode.
    Machine = 3,
}

/// `mstatus` bits that retrace models.
pub(crate) mod mstatus {
    pub const MIE: u64 = 1 << 3;
    pub const MPIE: u64 = 1 << 7;
    pub const MPP: u64 = 3 << 11;
    pub const MPRV: u64 = 1 << 17;
    pub const TW: u64 = 1 << 21;
    /// The FP unit's state: Off (0; F/D instructions and the FP CSRs are
    /// illegal), Initial, Clean, Dirty (3). Off at reset, as on QEMU's virt
    /// machine with `-bios none`; picolibc's start-up code sets Initial.
    pub const FS: u64 = 3 << 13;
    /// Writable bits; the rest read as zero (no S-mode, no V state).
    pub const WRITABLE: u64 = MIE | MPIE | MPP | FS | MPRV | TW;
    /// `UXL` = 2 (64-bit U-mode), read-only, RV64 only.
    pub const UXL64: u64 = 2 << 32;
}

/// The machine-mode CSR state of one hart.
#[derive(Clone, Debug)]
pub struct Csrs {
    /// `mstatus` (modelled bits only).
    pub mstatus: u64,
    /// `mtvec`.
    pub mtvec: u64,
    /// `mepc`.
    pub mepc: u64,
    /// `mcause`.
    pub mcause: u64,
    /// `mtval`.
    pub mtval: u64,
    /// `mscratch`.
    pub mscratch: u64,
    /// `mie` (stored; retrace raises no interrupts).
    pub mie: u64,
    /// `mip` software-writable bits (stored only).
    pub mip: u64,
    /// `medeleg` (stored; without S-mode nothing is delegated).
    pub medeleg: u64,
    /// `mideleg` (stored).
    pub mideleg: u64,
    /// `mcounteren`: which counters U-mode may read.
    pub mcounteren: u64,
    /// `mcountinhibit` (stored).
    pub mcountinhibit: u64,
    /// `pmpcfg0..15` (stored; PMP is not enforced).
    pub pmpcfg: [u64; 16],
    /// `pmpaddr0..63` (stored).
    pub pmpaddr: [u64; 64],
    /// `mcycle` minus the retired-instruction count (so writes stick).
    pub cycle_offset: u64,
    /// `minstret` minus the retired-instruction count.
    pub instret_offset: u64,
}

impl Default for Csrs {
    fn default() -> Self {
        Csrs {
            mstatus: 0,
            mtvec: 0,
            mepc: 0,
            mcause: 0,
            mtval: 0,
            mscratch: 0,
            mie: 0,
            mip: 0,
            medeleg: 0,
            mideleg: 0,
            mcounteren: 0,
            mcountinhibit: 0,
            pmpcfg: [0; 16],
            pmpaddr: [0; 64],
            cycle_offset: 0,
            instret_offset: 0,
        }
    }
}
