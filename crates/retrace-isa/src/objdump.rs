//! objdump's address comments: the `# 80001234 <sym>` that
//! `riscv64-unknown-elf-objdump -d` appends when an instruction uses, as a
//! base, a register whose value it knows (an `auipc`/`lui` result, `gp`,
//! `tp`, `zero`).
//!
//! This is `maybe_print_address` of binutils' `riscv-dis.c` with its
//! per-register state kept as data: which operand form objdump printed is
//! decided from the instruction's fields (the same conditions that choose
//! the disassembler's aliases: `mv`, `li`, `nop`, `ret`, `sext.w`), never
//! by reading the printed text back.

use crate::{Inst, Op, Xlen};

/// The register state objdump carries from one instruction to the next.
#[derive(Clone, Debug)]
pub struct AddressComments {
    /// The "high part" each register was last given by `auipc`/`lui`,
    /// until an instruction uses it.
    hi: [Option<u64>; 32],
    /// `__global_pointer$`, when the file has it.
    gp: Option<u64>,
    xlen: Xlen,
}

impl AddressComments {
    /// The state at the start of a listing.
    pub fn new(xlen: Xlen, gp: Option<u64>) -> Self {
        AddressComments {
            hi: [None; 32],
            gp,
            xlen,
        }
    }

    /// `maybe_print_address`: the address `base + offset` if objdump knows
    /// `base`'s value (using up an `auipc`/`lui` high part).
    fn maybe(&mut self, base: u8, offset: i64, wide: bool) -> Option<u64> {
        let b = (base & 31) as usize;
        let mut addr = if let Some(hi) = self.hi[b].take() {
            (if base != 0 { hi } else { 0 }).wrapping_add(offset as u64)
        } else if base == 3 && self.gp.is_some() {
            self.gp.unwrap_or(0).wrapping_add(offset as u64)
        } else if base == 4 || base == 0 {
            offset as u64
        } else {
            return None;
        };
        if wide {
            addr = addr as i32 as i64 as u64;
        }
        if self.xlen == Xlen::Rv32 {
            addr &= 0xffff_ffff;
        }
        Some(addr)
    }

    /// Update the state for `inst` at `pc`; returns the address objdump
    /// comments the instruction with, if any.
    pub fn step(&mut self, inst: &Inst, pc: u64) -> Option<u64> {
        let imm = i64::from(inst.imm);
        let compressed = inst.len == 2;
        // Which operand forms objdump printed decides whether it looked at
        // an address: a `d,s,j` addi (not `mv`/`li`/`nop`), loads, stores,
        // jalr.
        match inst.op {
            Op::Auipc => {
                self.hi[inst.rd as usize & 31] = Some(pc.wrapping_add(imm as u64));
                None
            }
            Op::Lui => {
                self.hi[inst.rd as usize & 31] = Some(imm as u64);
                None
            }
            Op::Addi if compressed => {
                // c.addi prints through `Cj`; c.li, c.mv, c.addi16sp and
                // c.addi4spn use other operand forms.
                let form_cj = inst.raw & 0xe003 == 0x0001 && inst.rd != 0;
                form_cj.then(|| self.maybe(inst.rd, imm, false)).flatten()
            }
            // `li` (rs1 = zero), `mv` and `nop` (imm = 0) are aliases
            // without the `d,s,j` form.
            Op::Addi if inst.rs1 != 0 && imm != 0 => self.maybe(inst.rs1, imm, false),
            // c.addiw and addiw also print through `Cj`/`d,s,j`
            // (sign-extending the sum), except as `sext.w` (imm = 0).
            Op::Addiw if compressed && inst.rd != 0 && imm != 0 => self.maybe(inst.rd, imm, true),
            Op::Addiw if !compressed && inst.rs1 != 0 && imm != 0 => {
                self.maybe(inst.rs1, imm, true)
            }
            // Every 32-bit jalr form except `ret` prints its `s` operand,
            // which objdump checks for an address.
            Op::Jalr if !compressed && !is_ret(inst) => self.maybe(inst.rs1, imm, false),
            Op::Lb | Op::Lh | Op::Lw | Op::Ld | Op::Lbu | Op::Lhu | Op::Lwu if !compressed => {
                self.maybe(inst.rs1, imm, false)
            }
            Op::Sb | Op::Sh | Op::Sw | Op::Sd if !compressed => self.maybe(inst.rs1, imm, false),
            Op::Flw | Op::Fld | Op::Fsw | Op::Fsd if !compressed => {
                self.maybe(inst.rs1, imm, false)
            }
            _ => None,
        }
    }
}

/// `jalr x0, 0(ra)`, which objdump prints as `ret`.
fn is_ret(inst: &Inst) -> bool {
    inst.rd == 0 && inst.rs1 == 1 && inst.imm == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{decode, disasm};

    /// The field conditions above must be exactly the disassembler's
    /// choice of alias: check them against its text over every register
    /// pair and a spread of immediates, for the forms the text decided
    /// before.
    #[test]
    fn alias_conditions_match_the_disassembler() {
        for xlen in [Xlen::Rv32, Xlen::Rv64] {
            for rd in 0..32u32 {
                for rs1 in 0..32u32 {
                    for imm in [0i32, 1, -1, 4, 2047, -2048] {
                        let i = (imm as u32 & 0xfff) << 20 | rs1 << 15 | rd << 7;
                        let addi = i | 0x13;
                        let addiw = i | 0x1b;
                        let jalr = i | 0x67;
                        for word in [addi, addiw, jalr] {
                            let Ok(inst) = decode(word, xlen) else {
                                continue;
                            };
                            let text = disasm(&inst, 0, xlen).to_string();
                            let by_text = match inst.op {
                                Op::Addi => {
                                    !(text.starts_with("mv\t")
                                        || text.starts_with("li\t")
                                        || text == "nop")
                                }
                                Op::Addiw => !text.starts_with("sext.w"),
                                Op::Jalr => text != "ret",
                                _ => continue,
                            };
                            let by_fields = match inst.op {
                                Op::Addi => inst.rs1 != 0 && inst.imm != 0,
                                Op::Addiw => inst.imm != 0,
                                _ => !is_ret(&inst),
                            };
                            // Addi with rs1 = 0 is `li` either way; the
                            // text rule only applied with rs1 != 0.
                            let by_text = by_text && (inst.op != Op::Addi || inst.rs1 != 0);
                            assert_eq!(by_text, by_fields, "{text} ({word:08x})");
                        }
                    }
                }
            }
        }
    }
}
