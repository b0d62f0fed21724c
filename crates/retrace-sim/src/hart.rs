//! One hardware thread: registers, pc, privilege mode, CSRs, statistics.
//!
//! Registers are kept as 64-bit values for both XLENs. On RV32 every value is
//! kept sign-extended from bit 31 (the way RV64 keeps the results of `*W`
//! instructions), so signed and unsigned comparisons work unchanged, and
//! addresses are taken from the low 32 bits.

use crate::csr::{Csrs, Priv};
use crate::fpu::FpState;

/// Counters of one hart's run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HartStats {
    /// Instructions retired.
    pub instructions: u64,
    /// Conditional branches retired.
    pub branches: u64,
    /// Of those, taken.
    pub taken: u64,
    /// Traps taken (exceptions and `ecall`s).
    pub traps: u64,
    /// Of those, taken with no instruction retired since the previous trap
    /// (a handler that traps at once). Each counts against the instruction
    /// budget as one instruction: such a loop retires nothing, and must
    /// still end at `--max-insns`.
    pub idle_traps: u64,
    /// Semihosting requests.
    pub semihost_calls: u64,
}

/// The architectural state of one hart.
#[derive(Clone, Debug)]
pub struct Hart {
    /// `mhartid`.
    pub id: usize,
    /// Integer registers; `x[0]` is always 0.
    pub x: [u64; 32],
    /// Floating-point registers and `fcsr`.
    pub fp: FpState,
    /// Address of the next instruction.
    pub pc: u64,
    /// Current privilege mode.
    pub privilege: Priv,
    /// Machine-mode CSRs.
    pub csr: Csrs,
    /// Statistics (and the retired-instruction count behind `minstret`).
    pub stats: HartStats,
    /// Address of the last instruction executed (retired, or an `ecall` /
    /// `ebreak` that entered a handler); kept while an observer watches.
    pub last_pc: u64,
    /// `stats.instructions` when the hart last took a trap (`None`
    /// before the first): how [`HartStats::idle_traps`] are told.
    pub retired_at_last_trap: Option<u64>,
}

impl Hart {
    /// A hart in M-mode at `pc` with all registers zero.
    pub fn new(id: usize, pc: u64) -> Hart {
        Hart {
            id,
            x: [0; 32],
            fp: FpState::default(),
            pc,
            privilege: Priv::Machine,
            csr: Csrs::default(),
            stats: HartStats::default(),
            last_pc: 0,
            retired_at_last_trap: None,
        }
    }

    /// Register `r` (ABI register numbers `0..32`).
    pub fn reg(&self, r: usize) -> u64 {
        self.x[r & 31]
    }
}
