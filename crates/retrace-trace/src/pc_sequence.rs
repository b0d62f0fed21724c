//! The summary of an executed instruction sequence that `--check` compares
//! between the replay and the functional engine: a count and an
//! order-sensitive hash of every pc and instruction word. Both sides build
//! it with this one type. The words matter where a program writes its own
//! code: a replay that ran a stale `nop` where the run executed a `div`
//! has the run's pcs, not its instructions.

/// A count and an order-sensitive hash of an executed sequence of (pc,
/// instruction word).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PcSequence {
    /// Instructions in the sequence.
    pub instructions: u64,
    /// Each pc folded in by one rotate, xor and multiply (FxHash's step):
    /// a word at a time, where a byte-wise hash cost the check about a
    /// sixth of its replay. Not a stored format: both sides of one check
    /// compute it in one build.
    pub hash: u64,
}

/// The empty sequence's hash (any non-zero value: a pc of 0 then still
/// changes it).
const SEED: u64 = 0xcbf2_9ce4_8422_2325;
/// FxHash's odd multiplier.
const MULTIPLIER: u64 = 0x517c_c1b7_2722_0a95;

impl Default for PcSequence {
    fn default() -> Self {
        PcSequence::new()
    }
}

impl PcSequence {
    /// The empty sequence.
    pub const fn new() -> PcSequence {
        PcSequence {
            instructions: 0,
            hash: SEED,
        }
    }

    /// Append one executed instruction: its pc and its encoding (`raw`:
    /// the 16 bits of a compressed one), folded in as one word — for a
    /// given pc, distinct words give distinct values.
    #[inline]
    pub fn push(&mut self, pc: u64, raw: u32) {
        let v = pc ^ u64::from(raw).rotate_left(32);
        self.hash = (self.hash.rotate_left(5) ^ v).wrapping_mul(MULTIPLIER);
        self.instructions += 1;
    }
}
