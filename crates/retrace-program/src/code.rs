//! The decoded-code view: a program's executable bytes and a cache of their
//! decodings.
//!
//! Every analysis in this crate (function discovery, CFGs, the
//! partial-program table, jump-table recognition) reads instructions through
//! one [`Code`], so each reachable instruction is decoded exactly once, by
//! the one decoder in `retrace-isa`. The cache is dense — one slot per
//! 2-byte position of each executable region — because instructions are
//! looked up by pc far more often than they are decoded, and a slot index
//! is a subtraction and a shift.
//!
//! Regions come from the ELF's executable sections; a file without section
//! headers falls back to its executable segments. The view also keeps a copy
//! of every loaded segment so that read-only data (jump tables) can be read.
//!
//! Code the program writes or places at run time (a function copied into
//! RAM, an instruction patched in place) enters the view through
//! [`Code::patch`], which adds or rewrites regions and forgets the
//! decodings of the bytes it changed.

use crate::error::{ProgramError, Warning};
use crate::{Addr, Elf};
use retrace_isa::{decode, DecodeError, Inst, Xlen};

/// `slli x0, x0, 0x1f`, the first instruction of the RISC-V semihosting
/// sequence (always uncompressed, so the three words are recognisable).
pub const SEMIHOST_PRE: u32 = 0x01f0_1013;
/// `ebreak`, uncompressed.
pub const SEMIHOST_EBREAK: u32 = 0x0010_0073;
/// `srai x0, x0, 7`, the last instruction of the semihosting sequence.
pub const SEMIHOST_POST: u32 = 0x4070_5013;

#[derive(Clone, Copy, Debug)]
enum Slot {
    Unknown,
    Ok(Inst),
    Bad(DecodeError),
    Truncated,
}

#[derive(Clone, Debug)]
struct Region {
    base: u64,
    bytes: Vec<u8>,
    slots: Vec<Slot>,
}

/// A program's executable code with a decode cache. See the module docs.
#[derive(Clone, Debug)]
pub struct Code {
    xlen: Xlen,
    regions: Vec<Region>,
    data: Vec<(u64, Vec<u8>)>,
    decoded: usize,
    warnings: Vec<Warning>,
}

impl Code {
    /// The code of an ELF file: what its executable `PT_LOAD` segments put
    /// in memory — the bytes the machine runs, as QEMU loads them — not
    /// what the section headers say (which a stripped or edited file may
    /// contradict; the disassembler still follows sections, as objdump
    /// does). A segment is decoded at its load address (`p_paddr`, where
    /// the machine places it) and, when it is linked to run elsewhere
    /// (`p_vaddr`, code the start-up copies into RAM), there too.
    pub fn from_elf(elf: &Elf) -> Result<Code, ProgramError> {
        let mut regions: Vec<(Addr, Vec<u8>)> = Vec::new();
        for s in elf
            .segments
            .iter()
            .filter(|s| s.flags.x() && !s.data.is_empty())
        {
            regions.push((Addr(s.paddr), s.data.clone()));
            if s.vaddr != s.paddr {
                regions.push((Addr(s.vaddr), s.data.clone()));
            }
        }
        let mut code = Code::from_regions(elf.xlen, regions)?;
        code.data = elf
            .segments
            .iter()
            .map(|s| (s.vaddr, s.data.clone()))
            .collect();
        Ok(code)
    }

    /// Code made of the given `(address, bytes)` regions (tests, raw
    /// images). Overlapping regions are cut so that the first one wins.
    pub fn from_regions(
        xlen: Xlen,
        mut regions: Vec<(Addr, Vec<u8>)>,
    ) -> Result<Code, ProgramError> {
        regions.sort_by_key(|r| r.0);
        let mut out: Vec<Region> = Vec::new();
        for (base, mut bytes) in regions {
            let mut base = base.0;
            if let Some(prev) = out.last() {
                let prev_end = prev.base.saturating_add(prev.bytes.len() as u64);
                if base < prev_end {
                    let cut = (prev_end - base).min(bytes.len() as u64) as usize;
                    bytes.drain(..cut);
                    base = prev_end;
                }
            }
            // Instructions are 2-byte aligned: an odd region start is
            // rounded up so that slot arithmetic stays exact.
            if base & 1 == 1 && !bytes.is_empty() {
                bytes.remove(0);
                base += 1;
            }
            if bytes.is_empty() || base.checked_add(bytes.len() as u64).is_none() {
                continue;
            }
            let slots = vec![Slot::Unknown; bytes.len().div_ceil(2)];
            out.push(Region { base, bytes, slots });
        }
        if out.is_empty() {
            return Err(ProgramError::NoCode);
        }
        let data = out.iter().map(|r| (r.base, r.bytes.clone())).collect();
        Ok(Code {
            xlen,
            regions: out,
            data,
            decoded: 0,
            warnings: Vec::new(),
        })
    }

    /// Register width.
    pub fn xlen(&self) -> Xlen {
        self.xlen
    }

    /// The executable regions as `(start, length in bytes)`.
    pub fn regions(&self) -> impl Iterator<Item = (Addr, u64)> + '_ {
        self.regions
            .iter()
            .map(|r| (Addr(r.base), r.bytes.len() as u64))
    }

    /// How many distinct instructions have been decoded so far.
    pub fn decoded(&self) -> usize {
        self.decoded
    }

    /// Whether `addr` lies in an executable region.
    pub fn contains(&self, addr: Addr) -> bool {
        self.region(addr).is_some()
    }

    #[inline]
    fn region(&self, addr: Addr) -> Option<usize> {
        let i = self.regions.partition_point(|r| r.base <= addr.0);
        let r = self.regions.get(i.checked_sub(1)?)?;
        (addr.0 - r.base < r.bytes.len() as u64).then_some(i - 1)
    }

    /// The instruction at `addr` if it has been decoded already. This is
    /// the lookup the replay uses: every instruction on a partial
    /// program's path is decoded when the partial program is made.
    #[inline]
    pub fn get(&self, addr: Addr) -> Option<Inst> {
        let r = &self.regions[self.region(addr)?];
        let off = addr.0 - r.base;
        if off & 1 != 0 {
            return None;
        }
        match r.slots[(off / 2) as usize] {
            Slot::Ok(i) => Some(i),
            _ => None,
        }
    }

    /// The decoded instructions of straight-line code: `count` of them from
    /// `start`, each at the previous one's fall-through, ending early at
    /// the first address with none. What [`Code::get`] would give one by
    /// one, with the region looked up once instead of per instruction —
    /// the walk `--check` makes over every executed instruction.
    pub fn straight_line(
        &self,
        start: Addr,
        count: u32,
    ) -> impl Iterator<Item = (Addr, Inst)> + '_ {
        let mask = self.xlen.mask();
        let mut pc = start;
        let mut region = self.region(start);
        (0..count).map_while(move |_| {
            let mut r = &self.regions[region?];
            if pc.0.wrapping_sub(r.base) >= r.bytes.len() as u64 {
                region = self.region(pc);
                r = &self.regions[region?];
            }
            let off = pc.0 - r.base;
            if off & 1 != 0 {
                return None;
            }
            let Slot::Ok(inst) = r.slots[(off / 2) as usize] else {
                return None;
            };
            let here = pc;
            pc = Addr(inst.fallthrough(pc.0) & mask);
            Some((here, inst))
        })
    }

    /// Decodes the instruction at `addr` (once; later calls hit the cache).
    pub fn decode_at(&mut self, addr: Addr) -> Result<Inst, ProgramError> {
        if addr.0 & 1 != 0 {
            return Err(ProgramError::Misaligned { addr });
        }
        let ri = self.region(addr).ok_or(ProgramError::NotCode { addr })?;
        let r = &mut self.regions[ri];
        let off = (addr.0 - r.base) as usize;
        let slot = off / 2;
        match r.slots[slot] {
            Slot::Ok(i) => return Ok(i),
            Slot::Bad(error) => return Err(ProgramError::Illegal { addr, error }),
            Slot::Truncated => return Err(ProgramError::Truncated { addr }),
            Slot::Unknown => {}
        }
        let lo = u16::from_le_bytes([r.bytes[off], *r.bytes.get(off + 1).unwrap_or(&0)]);
        let len = retrace_isa::inst_len(lo);
        if off + len > r.bytes.len() {
            r.slots[slot] = Slot::Truncated;
            return Err(ProgramError::Truncated { addr });
        }
        let mut word = [0u8; 4];
        word[..len].copy_from_slice(&r.bytes[off..off + len]);
        match decode(u32::from_le_bytes(word), self.xlen) {
            Ok(inst) => {
                r.slots[slot] = Slot::Ok(inst);
                self.decoded += 1;
                // An instruction that overlaps another decoded one means a
                // branch into the middle of an instruction (or data taken
                // for code): legal for the machine, suspicious for us.
                let overlaps_next =
                    inst.len == 4 && matches!(r.slots.get(slot + 1), Some(Slot::Ok(_)));
                let overlaps_prev =
                    slot > 0 && matches!(r.slots[slot - 1], Slot::Ok(p) if p.len == 4);
                if overlaps_prev {
                    self.warnings.push(Warning::MidInstruction {
                        addr,
                        inside: Addr(addr.0 - 2),
                    });
                }
                if overlaps_next {
                    self.warnings.push(Warning::MidInstruction {
                        addr: Addr(addr.0 + 2),
                        inside: addr,
                    });
                }
                Ok(inst)
            }
            Err(error) => {
                r.slots[slot] = Slot::Bad(error);
                Err(ProgramError::Illegal { addr, error })
            }
        }
    }

    /// The raw 32-bit little-endian word at `addr` in the code, if all four
    /// bytes are code.
    pub fn raw_word(&self, addr: Addr) -> Option<u32> {
        let r = &self.regions[self.region(addr)?];
        let off = (addr.0 - r.base) as usize;
        let b = r.bytes.get(off..off.checked_add(4)?)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// Whether the instruction at `addr` is the `ebreak` of the semihosting
    /// sequence `slli x0,x0,0x1f; ebreak; srai x0,x0,7`.
    pub fn is_semihost_ebreak(&self, addr: Addr) -> bool {
        self.raw_word(addr) == Some(SEMIHOST_EBREAK)
            && addr.0 >= 4
            && self.raw_word(Addr(addr.0 - 4)) == Some(SEMIHOST_PRE)
            && self.raw_word(addr.offset(4)) == Some(SEMIHOST_POST)
    }

    /// Reads `n` (≤ 8) little-endian bytes of loaded data at `addr` (any
    /// loaded segment, e.g. a jump table in `.rodata`).
    pub fn read_data(&self, addr: Addr, n: usize) -> Option<u64> {
        let n = n.min(8);
        for (base, bytes) in &self.data {
            if addr.0 >= *base {
                let off = usize::try_from(addr.0 - base).ok()?;
                if let Some(b) = bytes.get(off..off.checked_add(n)?) {
                    let mut w = [0u8; 8];
                    w[..n].copy_from_slice(b);
                    return Some(u64::from_le_bytes(w));
                }
            }
        }
        None
    }

    /// The code byte at `a`, if `a` lies in an executable region.
    fn byte(&self, a: u64) -> Option<u8> {
        let r = &self.regions[self.region(Addr(a))?];
        r.bytes.get((a - r.base) as usize).copied()
    }

    /// Whether the view holds exactly `bytes` at `addr`: every byte code,
    /// and equal. What a recorder asks of each block the machine is about
    /// to execute.
    pub fn holds(&self, addr: Addr, bytes: &[u8]) -> bool {
        if let Some(i) = self.region(addr) {
            let r = &self.regions[i];
            let off = (addr.0 - r.base) as usize;
            if let Some(have) = r.bytes.get(off..off.saturating_add(bytes.len())) {
                return have == bytes;
            }
        }
        self.differs(addr, bytes).is_none()
    }

    /// The part of `bytes` at `addr` the view does not hold (not code, or
    /// other bytes): the offsets of its first differing byte and one past
    /// its last; `None` when it holds them all.
    pub fn differs(&self, addr: Addr, bytes: &[u8]) -> Option<(usize, usize)> {
        let mut first = None;
        let mut end = 0;
        for (i, &b) in bytes.iter().enumerate() {
            if self.byte(addr.0.wrapping_add(i as u64)) != Some(b) {
                first.get_or_insert(i);
                end = i + 1;
            }
        }
        first.map(|f| (f, end))
    }

    /// Make the view hold `bytes` at `addr` as code: rewrite the regions
    /// they overlap, add what no region covered (merged with the regions it
    /// touches, so an instruction may span the seam), and forget every
    /// decoding that covers a changed byte. Returns the changed addresses,
    /// `[lo, hi)`, or `None` when the view held the bytes already. An odd
    /// `addr` drops the first byte (regions start at even addresses).
    pub fn patch(&mut self, addr: Addr, bytes: &[u8]) -> Option<(Addr, Addr)> {
        let (mut a, mut bytes) = (addr.0, bytes);
        if a & 1 == 1 && !bytes.is_empty() {
            a += 1;
            bytes = &bytes[1..];
        }
        let end = a.checked_add(bytes.len() as u64)?;
        let (first, last) = self.differs(Addr(a), bytes)?;
        let (lo, hi) = (a + first as u64, a + last as u64);
        // The regions that overlap or touch [a, end), merged with the new
        // bytes into one.
        let from = self
            .regions
            .partition_point(|r| r.base + (r.bytes.len() as u64) < a);
        let to = self.regions.partition_point(|r| r.base <= end);
        let merged = &self.regions[from..to.max(from)];
        let base = merged.first().map_or(a, |r| r.base.min(a));
        let top = merged
            .last()
            .map_or(end, |r| (r.base + r.bytes.len() as u64).max(end));
        let mut region = Region {
            base,
            bytes: vec![0; (top - base) as usize],
            slots: vec![Slot::Unknown; ((top - base) as usize).div_ceil(2)],
        };
        for r in merged {
            let off = (r.base - base) as usize;
            region.bytes[off..off + r.bytes.len()].copy_from_slice(&r.bytes);
            let s = off / 2;
            let n = r.slots.len().min(region.slots.len() - s);
            region.slots[s..s + n].copy_from_slice(&r.slots[..n]);
        }
        let off = (a - base) as usize;
        region.bytes[off..off + bytes.len()].copy_from_slice(bytes);
        // A decoding at slot k covers up to 4 bytes from base + 2k.
        for (k, slot) in region.slots.iter_mut().enumerate() {
            let at = base + 2 * k as u64;
            if at < hi && at + 4 > lo {
                *slot = Slot::Unknown;
            }
        }
        self.regions.splice(from..to.max(from), [region]);
        Some((Addr(lo), Addr(hi)))
    }

    /// Takes the warnings found while decoding (instructions overlapping
    /// other instructions).
    pub fn take_warnings(&mut self) -> Vec<Warning> {
        std::mem::take(&mut self.warnings)
    }
}
