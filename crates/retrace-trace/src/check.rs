//! The summary of an executed instruction sequence that `--check` compares
//! between the replay and the functional engine: a count and an FNV-1a hash
//! of every pc in order. Both sides build it with this one type.

/// A count and an FNV-1a hash of an executed pc sequence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PcSequence {
    /// Instructions in the sequence.
    pub instructions: u64,
    /// FNV-1a over each pc as 8 little-endian bytes.
    pub hash: u64,
}

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
            hash: 0xcbf2_9ce4_8422_2325,
        }
    }

    /// Append one executed pc.
    #[inline]
    pub fn push(&mut self, pc: u64) {
        for b in pc.to_le_bytes() {
            self.hash ^= u64::from(b);
            self.hash = self.hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
        self.instructions += 1;
    }
}
