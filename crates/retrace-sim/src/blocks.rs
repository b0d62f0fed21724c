//! The straight-line blocks a run executes, with how often: each run of
//! instructions from where control arrived to the next control transfer
//! (branch, jump, call, return, `ecall`/`ebreak`, `mret`) is one block,
//! keyed by its first address and its instructions' encodings, so code
//! rewritten at run time counts as another block.
//!
//! This is what `retrace mca` compares against LLVM's scheduling models:
//! a block here is exactly a sequence of instructions `llvm-mca` can time
//! (it knows nothing of control flow), entered at its first instruction.
//! A block cut by an exception (its faulting instruction does not retire)
//! is not counted.

use crate::observer::{Observer, Retired, TrapEvent};
use crate::{Console, HostConfig, LoadError, Machine, MachineConfig, RunResult};
use retrace_isa::{Flow, Inst};
use retrace_program::Elf;
use rustc_hash::FxHashMap;

/// One straight-line block and how often it ran to its end.
#[derive(Clone, Debug)]
pub struct Block {
    /// Its instructions with their addresses, in order; the last one is
    /// the control transfer that ends it.
    pub insts: Vec<(u64, Inst)>,
    /// Times it was executed from its first instruction to its last.
    pub executions: u64,
}

impl Block {
    /// Its first instruction's address.
    pub fn start(&self) -> u64 {
        self.insts.first().map_or(0, |&(pc, _)| pc)
    }

    /// Instructions it retired over the run: executions × length.
    pub fn instructions(&self) -> u64 {
        self.executions.saturating_mul(self.insts.len() as u64)
    }
}

/// Counts the blocks of a run, for every hart.
#[derive(Debug, Default)]
pub struct BlockCounter {
    /// Per hart: the block in progress, and the address its next
    /// instruction must have to continue it.
    open: Vec<(Vec<(u64, Inst)>, u64)>,
    index: FxHashMap<(u64, u64), usize>,
    blocks: Vec<Block>,
}

impl BlockCounter {
    /// A counter that has seen nothing.
    pub fn new() -> BlockCounter {
        BlockCounter::default()
    }

    /// The blocks seen, in the order first completed.
    pub fn into_blocks(self) -> Vec<Block> {
        self.blocks
    }

    fn close(&mut self, hart: usize) {
        let insts = &self.open[hart].0;
        // FNV-1a over the encodings: with the start, the block's key.
        let hash = insts.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, (_, i)| {
            (h ^ u64::from(i.raw)).wrapping_mul(0x0000_0100_0000_01b3)
        });
        let key = (insts[0].0, hash);
        match self.index.get(&key) {
            Some(&k) => self.blocks[k].executions += 1,
            None => {
                self.index.insert(key, self.blocks.len());
                self.blocks.push(Block {
                    insts: insts.clone(),
                    executions: 1,
                });
            }
        }
        self.open[hart].0.clear();
    }
}

impl Observer for BlockCounter {
    fn retire(&mut self, ev: &Retired<'_>) {
        if self.open.len() <= ev.hart {
            self.open.resize_with(ev.hart + 1, Default::default);
        }
        let (insts, expect) = &mut self.open[ev.hart];
        // Anything but the next instruction in line (after a trap's handler
        // returned, say) starts a new block: the old one was cut.
        if !insts.is_empty() && ev.pc != *expect {
            insts.clear();
        }
        insts.push((ev.pc, *ev.inst));
        *expect = ev.next_pc;
        if ev.inst.flow() != Flow::Next {
            self.close(ev.hart);
        }
    }

    fn trap(&mut self, ev: &TrapEvent) {
        // An exception cuts the block (its instruction does not retire); an
        // `ecall`/`ebreak` has already closed its own.
        if let Some((insts, _)) = self.open.get_mut(ev.hart) {
            insts.clear();
        }
    }
}

/// Run `elf` in the functional engine (its console discarded) and count its
/// blocks: how the run ended, and every block with its executions.
pub fn count_blocks(
    elf: &Elf,
    host: HostConfig,
    max_insns: Option<u64>,
) -> Result<(RunResult, Vec<Block>), LoadError> {
    let mut machine = Machine::new(elf, &MachineConfig::default(), host, Console::null())?;
    let mut counter = BlockCounter::new();
    let run = machine.run(max_insns, &mut counter);
    Ok((run, counter.into_blocks()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use retrace_isa::{decode, Xlen};

    fn inst(bits: u32) -> Inst {
        decode(bits, Xlen::Rv64).unwrap()
    }

    fn retire(c: &mut BlockCounter, pc: u64, bits: u32, next: u64) {
        let i = inst(bits);
        c.retire(&Retired {
            hart: 0,
            pc,
            inst: &i,
            next_pc: next,
            mem_addr: None,
        });
    }

    #[test]
    fn a_loop_body_is_one_block_counted_per_iteration() {
        let mut c = BlockCounter::new();
        // 0x100: addi a0,a0,1 ; 0x104: bne a0,a1,-4 (back to 0x100)
        for k in 0..3 {
            retire(&mut c, 0x100, 0x0015_0513, 0x104);
            let next = if k < 2 { 0x100 } else { 0x108 };
            retire(&mut c, 0x104, 0xfeb5_1ee3, next);
        }
        let blocks = c.into_blocks();
        assert_eq!(blocks.len(), 1);
        assert_eq!(blocks[0].start(), 0x100);
        assert_eq!(blocks[0].insts.len(), 2);
        assert_eq!(blocks[0].executions, 3);
        assert_eq!(blocks[0].instructions(), 6);
    }

    #[test]
    fn a_jump_into_the_middle_is_another_block_and_a_cut_one_is_dropped() {
        let mut c = BlockCounter::new();
        retire(&mut c, 0x100, 0x0015_0513, 0x104);
        // Not the next in line: the block at 0x100 was cut (a trap).
        retire(&mut c, 0x200, 0x0015_0513, 0x204);
        retire(&mut c, 0x204, 0x0000_8067, 0x300); // ret
        let blocks = c.into_blocks();
        assert_eq!(blocks.len(), 1);
        assert_eq!(blocks[0].start(), 0x200);
        assert_eq!(blocks[0].insts.len(), 2);
    }
}
