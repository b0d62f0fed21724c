//! The summary of an executed instruction sequence that `--check` compares
//! between the replay and the functional engine: a count and an FNV-1a hash
//! of every pc in order. Both sides build it with this one type.

use retrace_isa::Fnv1a;

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
            hash: Fnv1a::new().finish(),
        }
    }

    /// Append one executed pc.
    #[inline]
    pub fn push(&mut self, pc: u64) {
        let mut hash = Fnv1a::resume(self.hash);
        hash.u64(pc);
        self.hash = hash.finish();
        self.instructions += 1;
    }
}
