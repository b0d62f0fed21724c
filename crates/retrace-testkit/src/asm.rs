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
