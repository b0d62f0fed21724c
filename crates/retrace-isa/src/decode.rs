//! The decoder: one 16- or 32-bit encoding in, one [`Inst`] out.
//!
//! Decoding matches on the major opcode, then `funct3`/`funct7`, so the
//! common path is a couple of jumps and a few shifts with no allocation.
//! Everything that is not a valid RV32/RV64 IMAFDC + Zicsr + Zifencei (+ the
//! privileged `mret`/`sret`/`wfi`/`sfence.vma`) encoding returns a
//! [`DecodeError`]: [`DecodeError::Illegal`] for reserved and illegal
//! encodings (including forms that exist only for the other XLEN), and
//! [`DecodeError::Unsupported`] for valid encodings of standard extensions
//! retrace does not implement (Zfh, Q, V, B, …) — a simulator reports the two
//! differently, and the disassembler prints neither.
//!
//! HINT encodings (e.g. `addi x0, x1, 5`, `c.li x0, 3`, `c.slli a0, 0`) are
//! legal instructions that change no architectural state other than the pc,
//! so they decode to their base operation with the same fields.
//!
//! Fields the ISA manual says implementations must ignore (`rd`, `rs1` and
//! reserved `fm` values of `fence`; `rd`, `rs1` and the immediate of
//! `fence.i`) are accepted, as hardware and QEMU accept them, and kept in the
//! [`Inst`] so that [`crate::encode`] reproduces the exact word.
//!
//! F and D operations keep their rounding mode (`rm`) in `imm`; the two
//! reserved values (5 and 6) make the word illegal, as on hardware. The
//! FMA and OP-FP opcodes decode through the table in `fp.rs`.

use crate::bits::{self, gather};
use crate::fp;
use crate::inst::{Inst, Op, Xlen};
use std::fmt;

/// Why an encoding did not decode. Every variant carries the offending bits
/// (for a compressed encoding, the 16 bits zero-extended).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DecodeError {
    /// A reserved or illegal encoding for this XLEN (including the all-zero
    /// 16-bit word and RV64-only forms on RV32 and vice versa).
    Illegal {
        /// The encoding.
        bits: u32,
        /// Its length in bytes (2 or 4).
        len: u8,
    },
    /// A valid encoding of a standard extension that retrace does not
    /// implement, such as `flh` (Zfh) or `sh1add` (Zba).
    Unsupported {
        /// The encoding.
        bits: u32,
        /// Its length in bytes (2 or 4).
        len: u8,
        /// Name of the extension, as in the ISA manual (`"F"`, `"Zbb"`, …).
        extension: &'static str,
    },
    /// An encoding of the 48-bit, 64-bit or longer formats (its low bits
    /// say so); no extension retrace implements uses them. `bits` holds the
    /// first 32 bits.
    TooLong {
        /// The first 32 bits of the encoding.
        bits: u32,
    },
}

impl DecodeError {
    /// The offending encoding (16-bit encodings zero-extended; the first 32
    /// bits of longer ones).
    pub fn bits(&self) -> u32 {
        match *self {
            DecodeError::Illegal { bits, .. }
            | DecodeError::Unsupported { bits, .. }
            | DecodeError::TooLong { bits } => bits,
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            DecodeError::Illegal { bits, len: 2 } => {
                write!(f, "illegal instruction 0x{bits:04x}")
            }
            DecodeError::Illegal { bits, .. } => write!(f, "illegal instruction 0x{bits:08x}"),
            DecodeError::Unsupported {
                bits,
                len,
                extension,
            } => {
                let width = if len == 2 { 4 } else { 8 };
                write!(
                    f,
                    "instruction 0x{bits:0width$x} belongs to the {extension} extension, which is not supported"
                )
            }
            DecodeError::TooLong { bits } => write!(
                f,
                "instruction starting 0x{bits:08x} uses an encoding longer than 32 bits, which is not supported"
            ),
        }
    }
}

impl std::error::Error for DecodeError {}

/// Length in bytes of the instruction whose first 16 bits are `low_half`:
/// 2 for a compressed encoding (low two bits not `11`), 4 otherwise.
///
/// The longer formats (48-bit and up) also report 4; [`decode`] rejects
/// them with [`DecodeError::TooLong`], so a caller that fetches 4 bytes and
/// decodes never runs past an instruction it accepted.
#[inline]
pub fn inst_len(low_half: u16) -> usize {
    if low_half & 3 == 3 {
        4
    } else {
        2
    }
}

/// Decodes one instruction.
///
/// `bits` holds the instruction as read from memory, little-endian: if its
/// low two bits are not `11` it is a 16-bit compressed encoding in the low
/// half (the upper half is ignored), which decodes to the operation it
/// expands to with `len == 2` and `raw` = the 16 bits. Never panics.
///
/// ```
/// use retrace_isa::{decode, Op, Xlen};
/// let i = decode(0x4505, Xlen::Rv32).unwrap(); // c.li a0, 1
/// assert_eq!((i.op, i.rd, i.rs1, i.imm, i.len), (Op::Addi, 10, 0, 1, 2));
/// assert!(decode(0x0000, Xlen::Rv32).is_err()); // the defined-illegal word
/// ```
#[inline]
pub fn decode(bits: u32, xlen: Xlen) -> Result<Inst, DecodeError> {
    if bits & 3 != 3 {
        decode16(bits as u16, xlen)
    } else if bits & 0x1c == 0x1c {
        Err(DecodeError::TooLong { bits })
    } else {
        decode32(bits, xlen)
    }
}

#[inline(always)]
fn rd(w: u32) -> u8 {
    ((w >> 7) & 31) as u8
}
#[inline(always)]
fn rs1(w: u32) -> u8 {
    ((w >> 15) & 31) as u8
}
#[inline(always)]
fn rs2(w: u32) -> u8 {
    ((w >> 20) & 31) as u8
}

#[inline(always)]
fn mk(op: Op, rd: u8, rs1: u8, rs2: u8, imm: i32, raw: u32, len: u8) -> Inst {
    Inst {
        op,
        rd,
        rs1,
        rs2,
        len,
        imm,
        raw,
    }
}

fn decode32(w: u32, xlen: Xlen) -> Result<Inst, DecodeError> {
    use Op::*;
    let rv64 = xlen == Xlen::Rv64;
    let f3 = (w >> 12) & 7;
    let f7 = w >> 25;
    let (d, s1, s2) = (rd(w), rs1(w), rs2(w));
    let i4 = |op| Ok(mk(op, d, s1, 0, gather(w, &bits::I), w, 4));
    let r4 = |op| Ok(mk(op, d, s1, s2, 0, w, 4));
    let bad = || Err(unknown32(w, xlen));
    match (w >> 2) & 0x1f {
        // LOAD
        0x00 => i4(match f3 {
            0 => Lb,
            1 => Lh,
            2 => Lw,
            3 if rv64 => Ld,
            4 => Lbu,
            5 => Lhu,
            6 if rv64 => Lwu,
            _ => return bad(),
        }),
        // LOAD-FP
        0x01 => i4(match f3 {
            2 => Flw,
            3 => Fld,
            _ => return bad(),
        }),
        // STORE-FP
        0x09 => {
            let op = match f3 {
                2 => Fsw,
                3 => Fsd,
                _ => return bad(),
            };
            Ok(mk(op, 0, s1, s2, gather(w, &bits::S), w, 4))
        }
        // MADD, MSUB, NMSUB, NMADD, OP-FP
        0x10..=0x14 => decode_fp(w, xlen).ok_or_else(|| unknown32(w, xlen)),
        // MISC-MEM
        0x03 => match f3 {
            0 => {
                let imm = (w >> 20) as i32;
                Ok(match w {
                    0x8330_000f => mk(FenceTso, 0, 0, 0, 0, w, 4),
                    0x0100_000f => mk(Pause, 0, 0, 0, 0, w, 4),
                    _ => mk(Fence, d, s1, 0, imm, w, 4),
                })
            }
            1 => i4(FenceI),
            _ => bad(),
        },
        // OP-IMM
        0x04 => match f3 {
            0 => i4(Addi),
            2 => i4(Slti),
            3 => i4(Sltiu),
            4 => i4(Xori),
            6 => i4(Ori),
            7 => i4(Andi),
            _ => {
                // Shifts: the shift amount is 6 bits on RV64, 5 on RV32;
                // the bits above it select logical/arithmetic and must
                // otherwise be zero (shamt[5] set on RV32 is reserved).
                let (shamt, hi) = if rv64 {
                    ((w >> 20) & 0x3f, w >> 26)
                } else {
                    ((w >> 20) & 0x1f, w >> 25)
                };
                let arith = if rv64 { 0x10 } else { 0x20 };
                let op = match (f3, hi) {
                    (1, 0) => Slli,
                    (5, 0) => Srli,
                    (5, h) if h == arith => Srai,
                    _ => return bad(),
                };
                Ok(mk(op, d, s1, 0, shamt as i32, w, 4))
            }
        },
        // AUIPC
        0x05 => Ok(mk(Auipc, d, 0, 0, gather(w, &bits::U), w, 4)),
        // OP-IMM-32
        0x06 if rv64 => match (f3, f7) {
            (0, _) => i4(Addiw),
            (1, 0) => Ok(mk(Slliw, d, s1, 0, s2 as i32, w, 4)),
            (5, 0) => Ok(mk(Srliw, d, s1, 0, s2 as i32, w, 4)),
            (5, 0x20) => Ok(mk(Sraiw, d, s1, 0, s2 as i32, w, 4)),
            _ => bad(),
        },
        // STORE
        0x08 => {
            let op = match f3 {
                0 => Sb,
                1 => Sh,
                2 => Sw,
                3 if rv64 => Sd,
                _ => return bad(),
            };
            Ok(mk(op, 0, s1, s2, gather(w, &bits::S), w, 4))
        }
        // AMO
        0x0b => {
            const W: [Option<Op>; 32] = amo_row(false);
            const D: [Option<Op>; 32] = amo_row(true);
            let row = match f3 {
                2 => &W,
                3 if rv64 => &D,
                _ => return bad(),
            };
            match row[(w >> 27) as usize] {
                // lr has no rs2; a non-zero rs2 field is reserved.
                Some(LrW | LrD) if s2 != 0 => bad(),
                Some(op) => Ok(mk(op, d, s1, s2, ((w >> 25) & 3) as i32, w, 4)),
                None => bad(),
            }
        }
        // OP
        0x0c => r4(match (f7, f3) {
            (0, 0) => Add,
            (0, 1) => Sll,
            (0, 2) => Slt,
            (0, 3) => Sltu,
            (0, 4) => Xor,
            (0, 5) => Srl,
            (0, 6) => Or,
            (0, 7) => And,
            (0x20, 0) => Sub,
            (0x20, 5) => Sra,
            (1, 0) => Mul,
            (1, 1) => Mulh,
            (1, 2) => Mulhsu,
            (1, 3) => Mulhu,
            (1, 4) => Div,
            (1, 5) => Divu,
            (1, 6) => Rem,
            (1, 7) => Remu,
            _ => return bad(),
        }),
        // LUI
        0x0d => Ok(mk(Lui, d, 0, 0, gather(w, &bits::U), w, 4)),
        // OP-32
        0x0e if rv64 => r4(match (f7, f3) {
            (0, 0) => Addw,
            (0, 1) => Sllw,
            (0, 5) => Srlw,
            (0x20, 0) => Subw,
            (0x20, 5) => Sraw,
            (1, 0) => Mulw,
            (1, 4) => Divw,
            (1, 5) => Divuw,
            (1, 6) => Remw,
            (1, 7) => Remuw,
            _ => return bad(),
        }),
        // BRANCH
        0x18 => {
            let op = match f3 {
                0 => Beq,
                1 => Bne,
                4 => Blt,
                5 => Bge,
                6 => Bltu,
                7 => Bgeu,
                _ => return bad(),
            };
            Ok(mk(op, 0, s1, s2, gather(w, &bits::B), w, 4))
        }
        // JALR
        0x19 if f3 == 0 => i4(Jalr),
        // JAL
        0x1b => Ok(mk(Jal, d, 0, 0, gather(w, &bits::J), w, 4)),
        // SYSTEM
        0x1c => {
            let csr = (w >> 20) as i32;
            match f3 {
                0 => match w {
                    0x0000_0073 => Ok(mk(Ecall, 0, 0, 0, 0, w, 4)),
                    0x0010_0073 => Ok(mk(Ebreak, 0, 0, 0, 0, w, 4)),
                    0x1020_0073 => Ok(mk(Sret, 0, 0, 0, 0, w, 4)),
                    0x3020_0073 => Ok(mk(Mret, 0, 0, 0, 0, w, 4)),
                    0x1050_0073 => Ok(mk(Wfi, 0, 0, 0, 0, w, 4)),
                    _ if f7 == 0x09 && d == 0 => Ok(mk(SfenceVma, 0, s1, s2, 0, w, 4)),
                    _ => bad(),
                },
                1 => Ok(mk(Csrrw, d, s1, 0, csr, w, 4)),
                2 => Ok(mk(Csrrs, d, s1, 0, csr, w, 4)),
                3 => Ok(mk(Csrrc, d, s1, 0, csr, w, 4)),
                5 => Ok(mk(Csrrwi, d, s1, 0, csr, w, 4)),
                6 => Ok(mk(Csrrsi, d, s1, 0, csr, w, 4)),
                7 => Ok(mk(Csrrci, d, s1, 0, csr, w, 4)),
                _ => bad(),
            }
        }
        _ => bad(),
    }
}

/// An F/D operation on the FMA or OP-FP opcodes, by the table in `fp.rs`.
fn decode_fp(w: u32, xlen: Xlen) -> Option<Inst> {
    let e = fp::lookup(w)?;
    if e.op.is_rv64_only() && xlen != Xlen::Rv64 {
        return None;
    }
    let rm = (w >> 12) & 7;
    if e.shape.has_rm() && !fp::valid_rm(rm) {
        return None;
    }
    let imm = match e.shape {
        fp::Shape::Fma => ((w >> 27) << 3 | rm) as i32,
        s if s.has_rm() => rm as i32,
        _ => 0,
    };
    let s2 = if e.shape.has_rs2() { rs2(w) } else { 0 };
    Some(mk(e.op, rd(w), rs1(w), s2, imm, w, 4))
}

/// One row of the AMO opcode map, indexed by `funct5` (`inst[31:27]`).
const fn amo_row(double: bool) -> [Option<Op>; 32] {
    use Op::*;
    let mut row = [None; 32];
    let ops: [(usize, Op, Op); 11] = [
        (0x02, LrW, LrD),
        (0x03, ScW, ScD),
        (0x01, AmoswapW, AmoswapD),
        (0x00, AmoaddW, AmoaddD),
        (0x04, AmoxorW, AmoxorD),
        (0x0c, AmoandW, AmoandD),
        (0x08, AmoorW, AmoorD),
        (0x10, AmominW, AmominD),
        (0x14, AmomaxW, AmomaxD),
        (0x18, AmominuW, AmominuD),
        (0x1c, AmomaxuW, AmomaxuD),
    ];
    let mut i = 0;
    while i < ops.len() {
        row[ops[i].0] = Some(if double { ops[i].2 } else { ops[i].1 });
        i += 1;
    }
    row
}

/// Decodes a 16-bit compressed encoding to the instruction it expands to.
fn decode16(h: u16, xlen: Xlen) -> Result<Inst, DecodeError> {
    use Op::*;
    let w = h as u32;
    let rv64 = xlen == Xlen::Rv64;
    // Full register fields (CR/CI/CSS) and the 3-bit x8..x15 fields.
    let r_hi = rd(w);
    let r_lo = ((w >> 2) & 31) as u8;
    let rs1p = 8 + ((w >> 7) & 7) as u8;
    let rs2p = 8 + ((w >> 2) & 7) as u8;
    let c = |op, rd, rs1, rs2, imm| Ok(mk(op, rd, rs1, rs2, imm, w, 2));
    let illegal = || Err(DecodeError::Illegal { bits: w, len: 2 });
    let unsupported = |extension| {
        Err(DecodeError::Unsupported {
            bits: w,
            len: 2,
            extension,
        })
    };
    match (w & 3, w >> 13) {
        // ---- quadrant 0
        (0, 0) => match gather(w, &bits::CADDI4SPN) {
            // nzuimm == 0 is reserved; this includes the all-zero word.
            0 => illegal(),
            imm => c(Addi, rs2p, 2, 0, imm),
        },
        (0, 1) => c(Fld, rs2p, rs1p, 0, gather(w, &bits::CLD)),
        (0, 2) => c(Lw, rs2p, rs1p, 0, gather(w, &bits::CLW)),
        (0, 3) if rv64 => c(Ld, rs2p, rs1p, 0, gather(w, &bits::CLD)),
        (0, 3) => c(Flw, rs2p, rs1p, 0, gather(w, &bits::CLW)),
        (0, 4) => match ((w >> 10) & 7, (w >> 6) & 1) {
            // c.lbu, c.lhu/c.lh, c.sb, c.sh
            (0, _) | (1, _) | (2, _) | (3, 0) => unsupported("Zcb"),
            _ => illegal(),
        },
        (0, 5) => c(Fsd, 0, rs1p, rs2p, gather(w, &bits::CLD)),
        (0, 6) => c(Sw, 0, rs1p, rs2p, gather(w, &bits::CLW)),
        (0, 7) if rv64 => c(Sd, 0, rs1p, rs2p, gather(w, &bits::CLD)),
        (0, 7) => c(Fsw, 0, rs1p, rs2p, gather(w, &bits::CLW)),

        // ---- quadrant 1
        (1, 0) => c(Addi, r_hi, r_hi, 0, gather(w, &bits::CI6)),
        (1, 1) if rv64 => match r_hi {
            0 => illegal(),
            _ => c(Addiw, r_hi, r_hi, 0, gather(w, &bits::CI6)),
        },
        (1, 1) => c(Jal, 1, 0, 0, gather(w, &bits::CJ)),
        (1, 2) => c(Addi, r_hi, 0, 0, gather(w, &bits::CI6)),
        (1, 3) if r_hi == 2 => match gather(w, &bits::CADDI16SP) {
            0 => illegal(),
            imm => c(Addi, 2, 2, 0, imm),
        },
        (1, 3) => match gather(w, &bits::CLUI) {
            0 => illegal(),
            imm => c(Lui, r_hi, 0, 0, imm),
        },
        (1, 4) => {
            let shamt = gather(w, &bits::CSHAMT);
            match (w >> 10) & 3 {
                // shamt[5] set on RV32 is reserved for custom use.
                0 | 1 if !rv64 && shamt >= 32 => illegal(),
                0 => c(Srli, rs1p, rs1p, 0, shamt),
                1 => c(Srai, rs1p, rs1p, 0, shamt),
                2 => c(Andi, rs1p, rs1p, 0, gather(w, &bits::CI6)),
                _ => {
                    let op = match ((w >> 12) & 1, (w >> 5) & 3) {
                        (0, 0) => Sub,
                        (0, 1) => Xor,
                        (0, 2) => Or,
                        (0, 3) => And,
                        (1, 0) if rv64 => Subw,
                        (1, 1) if rv64 => Addw,
                        (1, 0 | 1) => return illegal(),
                        // c.mul; c.zext.b, c.sext.b, c.zext.h, c.sext.h, c.zext.w, c.not
                        (_, 2) => return unsupported("Zcb"),
                        _ if (w >> 2) & 7 <= 5 => return unsupported("Zcb"),
                        _ => return illegal(),
                    };
                    c(op, rs1p, rs1p, rs2p, 0)
                }
            }
        }
        (1, 5) => c(Jal, 0, 0, 0, gather(w, &bits::CJ)),
        (1, 6) => c(Beq, 0, rs1p, 0, gather(w, &bits::CB)),
        (1, 7) => c(Bne, 0, rs1p, 0, gather(w, &bits::CB)),

        // ---- quadrant 2
        (2, 0) => match gather(w, &bits::CSHAMT) {
            s if !rv64 && s >= 32 => illegal(),
            s => c(Slli, r_hi, r_hi, 0, s),
        },
        (2, 1) => c(Fld, r_hi, 2, 0, gather(w, &bits::CLDSP)),
        (2, 2) if r_hi == 0 => illegal(),
        (2, 2) => c(Lw, r_hi, 2, 0, gather(w, &bits::CLWSP)),
        (2, 3) if !rv64 => c(Flw, r_hi, 2, 0, gather(w, &bits::CLWSP)),
        (2, 3) if r_hi == 0 => illegal(),
        (2, 3) => c(Ld, r_hi, 2, 0, gather(w, &bits::CLDSP)),
        (2, 4) => match ((w >> 12) & 1, r_hi, r_lo) {
            (0, 0, 0) => illegal(),             // c.jr x0
            (0, s, 0) => c(Jalr, 0, s, 0, 0),   // c.jr
            (0, d, s) => c(Add, d, 0, s, 0),    // c.mv
            (1, 0, 0) => c(Ebreak, 0, 0, 0, 0), // c.ebreak
            (1, s, 0) => c(Jalr, 1, s, 0, 0),   // c.jalr
            (_, d, s) => c(Add, d, d, s, 0),    // c.add
        },
        (2, 5) => c(Fsd, 0, 2, r_lo, gather(w, &bits::CSDSP)),
        (2, 6) => c(Sw, 0, 2, r_lo, gather(w, &bits::CSWSP)),
        (2, 7) if rv64 => c(Sd, 0, 2, r_lo, gather(w, &bits::CSDSP)),
        (2, 7) => c(Fsw, 0, 2, r_lo, gather(w, &bits::CSWSP)),
        _ => illegal(),
    }
}

/// Valid encodings of standard extensions retrace does not implement, as
/// `(mask, match, rv64 only, extension)`. Consulted only after the main
/// decoder failed, so its length costs nothing on the hot path.
const UNSUPPORTED32: &[(u32, u32, bool, &str)] = &[
    // Floating point beyond F and D: loads/stores by width, fused
    // multiply-add and OP-FP by fmt.
    (0x0000_707f, 0x0000_1007, false, "Zfh"),
    (0x0000_707f, 0x0000_4007, false, "Q"),
    (0x0000_007f, 0x0000_0007, false, "V"),
    (0x0000_707f, 0x0000_1027, false, "Zfh"),
    (0x0000_707f, 0x0000_4027, false, "Q"),
    (0x0000_007f, 0x0000_0027, false, "V"),
    (0x0600_0073, 0x0400_0043, false, "Zfh"),
    (0x0600_0073, 0x0600_0043, false, "Q"),
    (0x0600_007f, 0x0400_0053, false, "Zfh"),
    (0x0600_007f, 0x0600_0053, false, "Q"),
    (0x0000_007f, 0x0000_0057, false, "V"),
    // Zba
    (0xfe00_707f, 0x2000_2033, false, "Zba"),
    (0xfe00_707f, 0x2000_4033, false, "Zba"),
    (0xfe00_707f, 0x2000_6033, false, "Zba"),
    (0xfe00_707f, 0x0800_003b, true, "Zba"),
    (0xfe00_707f, 0x2000_203b, true, "Zba"),
    (0xfe00_707f, 0x2000_403b, true, "Zba"),
    (0xfe00_707f, 0x2000_603b, true, "Zba"),
    (0xfc00_707f, 0x0800_101b, true, "Zba"),
    // Zbb
    (0xfe00_707f, 0x4000_4033, false, "Zbb"),
    (0xfe00_707f, 0x4000_6033, false, "Zbb"),
    (0xfe00_707f, 0x4000_7033, false, "Zbb"),
    (0xfe00_407f, 0x0a00_4033, false, "Zbb"),
    (0xfe00_707f, 0x6000_1033, false, "Zbb"),
    (0xfe00_707f, 0x6000_5033, false, "Zbb"),
    (0xfe00_707f, 0x6000_103b, true, "Zbb"),
    (0xfe00_707f, 0x6000_503b, true, "Zbb"),
    (0xfc00_707f, 0x6000_5013, false, "Zbb"),
    (0xfe00_707f, 0x6000_501b, true, "Zbb"),
    (0xfff0_707f, 0x6000_1013, false, "Zbb"),
    (0xfff0_707f, 0x6010_1013, false, "Zbb"),
    (0xfff0_707f, 0x6020_1013, false, "Zbb"),
    (0xfff0_707f, 0x6040_1013, false, "Zbb"),
    (0xfff0_707f, 0x6050_1013, false, "Zbb"),
    (0xfff0_707f, 0x6000_101b, true, "Zbb"),
    (0xfff0_707f, 0x6010_101b, true, "Zbb"),
    (0xfff0_707f, 0x6020_101b, true, "Zbb"),
    (0xfff0_707f, 0x2870_5013, false, "Zbb"),
    (0xfff0_707f, 0x6980_5013, false, "Zbb"),
    (0xfff0_707f, 0x6b80_5013, true, "Zbb"),
    (0xfff0_707f, 0x0800_4033, false, "Zbb"),
    (0xfff0_707f, 0x0800_403b, true, "Zbb"),
    // Zbc
    (0xfe00_707f, 0x0a00_1033, false, "Zbc"),
    (0xfe00_707f, 0x0a00_2033, false, "Zbc"),
    (0xfe00_707f, 0x0a00_3033, false, "Zbc"),
    // Zbs
    (0xfe00_707f, 0x4800_1033, false, "Zbs"),
    (0xfe00_707f, 0x4800_5033, false, "Zbs"),
    (0xfe00_707f, 0x2800_1033, false, "Zbs"),
    (0xfe00_707f, 0x6800_1033, false, "Zbs"),
    (0xfc00_707f, 0x4800_1013, false, "Zbs"),
    (0xfc00_707f, 0x4800_5013, false, "Zbs"),
    (0xfc00_707f, 0x2800_1013, false, "Zbs"),
    (0xfc00_707f, 0x6800_1013, false, "Zbs"),
    // Zicond
    (0xfe00_707f, 0x0e00_5033, false, "Zicond"),
    (0xfe00_707f, 0x0e00_7033, false, "Zicond"),
    // Zicbom / Zicboz (cbo.inval, cbo.clean, cbo.flush, cbo.zero)
    (!(0x1f << 15), 0x0000_200f, false, "Zicbom"),
    (!(0x1f << 15), 0x0010_200f, false, "Zicbom"),
    (!(0x1f << 15), 0x0020_200f, false, "Zicbom"),
    (!(0x1f << 15), 0x0040_200f, false, "Zicboz"),
    // Zacas
    (0xf800_707f, 0x2800_202f, false, "Zacas"),
    (0xf800_707f, 0x2800_302f, false, "Zacas"),
    // Privileged: hypervisor fences and loads/stores, Svinval, debug, Zawrs.
    (0xfe00_7fff, 0x2200_0073, false, "H"),
    (0xfe00_7fff, 0x6200_0073, false, "H"),
    (0x0000_707f, 0x0000_4073, false, "H"),
    (0xfe00_7fff, 0x1600_0073, false, "Svinval"),
    (0xfe00_7fff, 0x2600_0073, false, "Svinval"),
    (0xffff_ffff, 0x1800_0073, false, "Svinval"),
    (0xffff_ffff, 0x1810_0073, false, "Svinval"),
    (0xffff_ffff, 0x7b20_0073, false, "Sdext"),
    (0xffff_ffff, 0x00d0_0073, false, "Zawrs"),
    (0xffff_ffff, 0x01d0_0073, false, "Zawrs"),
];

/// The error for a 32-bit word the main decoder did not accept.
#[cold]
fn unknown32(w: u32, xlen: Xlen) -> DecodeError {
    for &(mask, value, rv64_only, extension) in UNSUPPORTED32 {
        if w & mask == value && (!rv64_only || xlen == Xlen::Rv64) {
            return DecodeError::Unsupported {
                bits: w,
                len: 4,
                extension,
            };
        }
    }
    DecodeError::Illegal { bits: w, len: 4 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn length_by_low_bits() {
        assert_eq!(inst_len(0x0001), 2);
        assert_eq!(inst_len(0x0013), 4);
        assert_eq!(
            decode(0x0000_001f, Xlen::Rv64),
            Err(DecodeError::TooLong { bits: 0x1f })
        );
        assert_eq!(
            decode(0xffff_ffff, Xlen::Rv64),
            Err(DecodeError::TooLong { bits: !0 })
        );
    }

    #[test]
    fn xlen_specific_forms() {
        // c.jal on RV32 is c.addiw on RV64.
        assert_eq!(decode(0x2005, Xlen::Rv32).unwrap().op, Op::Jal);
        assert_eq!(decode(0x2505, Xlen::Rv64).unwrap().op, Op::Addiw);
        assert!(decode(0x2001, Xlen::Rv64).is_err()); // c.addiw x0: reserved
                                                      // c.ld on RV64 is c.flw on RV32.
        assert_eq!(decode(0x6108, Xlen::Rv64).unwrap().op, Op::Ld);
        assert_eq!(decode(0x6108, Xlen::Rv32).unwrap().op, Op::Flw);
        // fcvt.l.s exists only on RV64.
        assert_eq!(decode(0xc025_7553, Xlen::Rv64).unwrap().op, Op::FcvtLS);
        assert!(matches!(
            decode(0xc025_7553, Xlen::Rv32),
            Err(DecodeError::Illegal { .. })
        ));
        // slli a0, a0, 32 needs RV64.
        assert_eq!(decode(0x0205_1513, Xlen::Rv64).unwrap().imm, 32);
        assert!(matches!(
            decode(0x0205_1513, Xlen::Rv32),
            Err(DecodeError::Illegal { .. })
        ));
        // addw is RV64 only.
        assert_eq!(decode(0x00b5_053b, Xlen::Rv64).unwrap().op, Op::Addw);
        assert!(decode(0x00b5_053b, Xlen::Rv32).is_err());
    }

    #[test]
    fn fp_fields_and_reserved_rounding_modes() {
        // fmadd.s fa0, fa1, fa2, fa3, rtz
        let i = decode(0x68c5_9543, Xlen::Rv32).unwrap();
        assert_eq!((i.op, i.rd, i.rs1, i.rs2), (Op::FmaddS, 10, 11, 12));
        assert_eq!((i.rs3(), i.rm()), (Some(13), Some(1)));
        // fadd.s fa0, fa0, fa1 with rm 5 or 6 (reserved) is illegal.
        assert_eq!(decode(0x00b5_7553, Xlen::Rv64).unwrap().rm(), Some(7));
        for w in [0x00b5_5553, 0x00b5_6553] {
            assert!(matches!(
                decode(w, Xlen::Rv64),
                Err(DecodeError::Illegal { .. })
            ));
        }
        // fsqrt.s with a non-zero rs2 field is no instruction.
        assert!(decode(0x5815_7553, Xlen::Rv64).is_err());
        // c.fldsp fs0, 8(sp): any rd, f0 included.
        let c = decode(0x2422, Xlen::Rv64).unwrap();
        assert_eq!((c.op, c.rd, c.rs1, c.imm), (Op::Fld, 8, 2, 8));
    }

    #[test]
    fn upper_half_of_a_compressed_word_is_ignored() {
        let a = decode(0x0000_8082, Xlen::Rv32).unwrap();
        let b = decode(0xdead_8082, Xlen::Rv32).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.raw, 0x8082);
    }

    #[test]
    fn unsupported_is_not_illegal() {
        assert!(matches!(
            decode(0x0005_1507, Xlen::Rv32), // flh fa0, 0(a0)
            Err(DecodeError::Unsupported {
                extension: "Zfh",
                ..
            })
        ));
        assert!(matches!(
            decode(0x20b5_2533, Xlen::Rv64), // sh1add a0, a0, a1
            Err(DecodeError::Unsupported {
                extension: "Zba",
                ..
            })
        ));
        assert!(matches!(
            decode(0x0000_000b, Xlen::Rv64),
            Err(DecodeError::Illegal { .. })
        ));
        assert_eq!(
            decode(0x0000, Xlen::Rv64).unwrap_err().to_string(),
            "illegal instruction 0x0000"
        );
    }
}
