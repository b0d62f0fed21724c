//! Instruction builders: an [`Inst`] from its fields, or its encoding through
//! `retrace-isa`'s encoder (so a test cannot get a bit layout wrong by hand),
//! register numbers by ABI name, and the semihosting call sequence.

use retrace_isa::{encode, Inst, Op, Xlen};

/// `ra`.
pub const RA: u8 = 1;
/// `sp`.
pub const SP: u8 = 2;
/// `t0`.
pub const T0: u8 = 5;
/// `t1`.
pub const T1: u8 = 6;
/// `s0`.
pub const S0: u8 = 8;
/// `a0`.
pub const A0: u8 = 10;
/// `a1`.
pub const A1: u8 = 11;
/// `a2`.
pub const A2: u8 = 12;
/// `a3`.
pub const A3: u8 = 13;

/// `nop` (`addi x0, x0, 0`).
pub const NOP: u32 = 0x0000_0013;
/// `ret` (`jalr x0, 0(ra)`).
pub const RET: u32 = 0x0000_8067;
/// `ecall`.
pub const ECALL: u32 = 0x0000_0073;
/// `ebreak`.
pub const EBREAK: u32 = 0x0010_0073;
/// `slli x0, x0, 0x1f`: the marker before a semihosting `ebreak`.
pub const SEMI_PRE: u32 = 0x01f0_1013;
/// `srai x0, x0, 7`: the marker after a semihosting `ebreak`.
pub const SEMI_POST: u32 = 0x4070_5013;

/// A 4-byte instruction with the given fields (`raw` 0: no preferred
/// compressed form). For another length: `Inst { len: 2, ..inst(…) }`.
pub fn inst(op: Op, rd: u8, rs1: u8, rs2: u8, imm: i32) -> Inst {
    Inst {
        op,
        rd,
        rs1,
        rs2,
        len: 4,
        imm,
        raw: 0,
    }
}

/// The 32-bit encoding of [`inst`]`(op, rd, rs1, rs2, imm)`; panics naming
/// the operation when the fields do not fit.
pub fn word(xlen: Xlen, op: Op, rd: u8, rs1: u8, rs2: u8, imm: i32) -> u32 {
    encode(&inst(op, rd, rs1, rs2, imm), xlen)
        .unwrap_or_else(|e| panic!("{op:?} rd={rd} rs1={rs1} rs2={rs2} imm={imm}: {e:?}"))
}

/// Little-endian bytes of instruction words, as they sit in memory.
pub fn bytes(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// The semihosting call for operation `op` (its argument block already in
/// `a1`): `li a0, op; slli x0, x0, 0x1f; ebreak; srai x0, x0, 7`.
pub fn semihost(op: u32) -> [u32; 4] {
    [0x0000_0513 | (op << 20), SEMI_PRE, EBREAK, SEMI_POST]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_match_known_encodings() {
        assert_eq!(word(Xlen::Rv64, Op::Addi, A0, A0, 0, 1), 0x0015_0513);
        assert_eq!(word(Xlen::Rv64, Op::Bne, 0, A0, A1, -4), 0xfeb5_1ee3);
        assert_eq!(word(Xlen::Rv32, Op::Jalr, 0, RA, 0, 0), RET);
        assert_eq!(word(Xlen::Rv32, Op::Addi, 0, 0, 0, 0), NOP);
        assert_eq!(
            semihost(0x18)[0],
            word(Xlen::Rv32, Op::Addi, A0, 0, 0, 0x18)
        );
    }
}

/// A label's use, patched when [`Labelled::build`] lays the program out.
#[derive(Clone, Copy)]
enum Fix {
    /// A conditional branch `op rs1, rs2, label`.
    Branch(Op, u8, u8),
    /// `jal rd, label`.
    Jal(u8),
    /// `jal rd` to the label's address plus a byte offset.
    JalPast(u8, i32),
    /// `auipc rd, 0; addi rd, rd, label - here` (the programs are small).
    La(u8),
}

/// Just enough of an assembler for hand-written test programs: instructions
/// through the ISA's encoder, labels, and the few pseudo-instructions the
/// programs use; [`Labelled::build`] gives a one-segment ELF at the image's
/// base. Tests add their own routines (a trap handler, an exit sequence)
/// through extension traits.
pub struct Labelled {
    /// The register width the program is assembled for.
    pub xlen: Xlen,
    words: Vec<u32>,
    labels: std::collections::HashMap<&'static str, usize>,
    fixups: Vec<(usize, Fix, &'static str)>,
}

impl Labelled {
    /// An empty program for `xlen`.
    pub fn new(xlen: Xlen) -> Labelled {
        Labelled {
            xlen,
            words: Vec::new(),
            labels: std::collections::HashMap::new(),
            fixups: Vec::new(),
        }
    }

    /// One instruction.
    pub fn i(&mut self, op: Op, rd: u8, rs1: u8, rs2: u8, imm: i32) -> &mut Labelled {
        self.words.push(word(self.xlen, op, rd, rs1, rs2, imm));
        self
    }

    /// A raw word (an instruction that does not decode, or data).
    pub fn raw(&mut self, w: u32) -> &mut Labelled {
        self.words.push(w);
        self
    }

    /// Name the next instruction's address.
    pub fn label(&mut self, name: &'static str) -> &mut Labelled {
        assert!(
            self.labels.insert(name, self.words.len()).is_none(),
            "{name} twice"
        );
        self
    }

    fn fix(&mut self, fix: Fix, label: &'static str, words: usize) -> &mut Labelled {
        self.fixups.push((self.words.len(), fix, label));
        self.words.extend(std::iter::repeat_n(0, words));
        self
    }

    /// A conditional branch `op rs1, rs2, label`.
    pub fn b(&mut self, op: Op, rs1: u8, rs2: u8, label: &'static str) -> &mut Labelled {
        self.fix(Fix::Branch(op, rs1, rs2), label, 1)
    }

    /// `jal rd, label`.
    pub fn jal(&mut self, rd: u8, label: &'static str) -> &mut Labelled {
        self.fix(Fix::Jal(rd), label, 1)
    }

    /// `jal rd` to `offset` bytes past `label`.
    pub fn jal_past(&mut self, rd: u8, label: &'static str, offset: i32) -> &mut Labelled {
        self.fix(Fix::JalPast(rd, offset), label, 1)
    }

    /// `rd` = the address of `label` (`auipc; addi`).
    pub fn la(&mut self, rd: u8, label: &'static str) -> &mut Labelled {
        self.fix(Fix::La(rd), label, 2)
    }

    /// `rd` = the 32-bit `value` (sign-extended on RV64): `lui; addi`.
    pub fn li(&mut self, rd: u8, value: u32) -> &mut Labelled {
        let lo = ((value & 0xfff) as i32) << 20 >> 20;
        let hi = value.wrapping_sub(lo as u32) & 0xffff_f000;
        self.i(Op::Lui, rd, 0, 0, hi as i32)
            .i(Op::Addi, rd, rd, 0, lo)
    }

    /// `csrr rd, csr`.
    pub fn csrr(&mut self, rd: u8, csr: retrace_isa::csr::Csr) -> &mut Labelled {
        self.i(Op::Csrrs, rd, 0, 0, i32::from(csr))
    }

    /// `csrw csr, rs`.
    pub fn csrw(&mut self, csr: retrace_isa::csr::Csr, rs: u8) -> &mut Labelled {
        self.i(Op::Csrrw, 0, rs, 0, i32::from(csr))
    }

    /// A store of the register width.
    pub fn store(&mut self, base: u8, value: u8, offset: i32) -> &mut Labelled {
        let op = if self.xlen == Xlen::Rv64 {
            Op::Sd
        } else {
            Op::Sw
        };
        self.i(op, 0, base, value, offset)
    }

    /// The program as an ELF image: every label resolved.
    pub fn build(mut self) -> Vec<u8> {
        for (at, fix, label) in std::mem::take(&mut self.fixups) {
            let to = *self
                .labels
                .get(label)
                .unwrap_or_else(|| panic!("no {label}"));
            let off = (to as i32 - at as i32) * 4;
            let x = self.xlen;
            match fix {
                Fix::Branch(op, rs1, rs2) => self.words[at] = word(x, op, 0, rs1, rs2, off),
                Fix::Jal(rd) => self.words[at] = word(x, Op::Jal, rd, 0, 0, off),
                Fix::JalPast(rd, extra) => self.words[at] = word(x, Op::Jal, rd, 0, 0, off + extra),
                Fix::La(rd) => {
                    self.words[at] = word(x, Op::Auipc, rd, 0, 0, 0);
                    self.words[at + 1] = word(x, Op::Addi, rd, rd, 0, off);
                }
            }
        }
        let image = match self.xlen {
            Xlen::Rv32 => crate::elf::ElfImage::riscv32(),
            Xlen::Rv64 => crate::elf::ElfImage::riscv64(),
        };
        image.build(&bytes(&self.words))
    }
}
