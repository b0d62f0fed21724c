//! The encoder: the exact inverse of [`crate::decode`].
//!
//! 32-bit encodings are built from a per-operation format and match value
//! (the fixed opcode/funct bits), with every field range-checked:
//!
//! ```text
//!  31        25 24   20 19   15 14  12 11    7 6      0
//! ┌────────────┬───────┬───────┬──────┬───────┬────────┐
//! │   funct7   │  rs2  │  rs1  │funct3│  rd   │ opcode │  R
//! │     imm[11:0]      │  rs1  │funct3│  rd   │ opcode │  I (also CSR, fence)
//! │ imm[11:5]  │  rs2  │  rs1  │funct3│imm4:0 │ opcode │  S
//! │imm[12|10:5]│  rs2  │  rs1  │funct3│imm4:1|11 opcode│  B
//! │           imm[31:12]             │  rd   │ opcode │  U
//! │     imm[20|10:1|11|19:12]        │  rd   │ opcode │  J
//! └────────────┴───────┴───────┴──────┴───────┴────────┘
//! ```
//!
//! Immediates go through the same layout tables the decoder reads
//! (`bits.rs`). For a compressed instruction (`len == 2`) the encoder lists
//! every 16-bit form that can express the fields, and uses `raw` only to
//! choose between forms when more than one fits (`c.li x0, 1` and
//! `c.addi x0, 1` both expand to `addi x0, x0, 1`); the bits themselves are
//! always built from the fields.

use crate::bits::{self, scatter, Layout};
use crate::fp;
use crate::inst::{Inst, Op, Xlen};
use std::fmt;

/// Why an [`Inst`] cannot be encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EncodeError {
    /// The operation does not exist for this XLEN (`ld` on RV32).
    WrongXlen {
        /// The operation.
        op: Op,
        /// The XLEN asked for.
        xlen: Xlen,
    },
    /// `len` is neither 2 nor 4.
    Length {
        /// The length found.
        len: u8,
    },
    /// A register number above 31 (or, for the `*i` CSR forms, an
    /// immediate above 31 in `rs1`).
    Register {
        /// The operation.
        op: Op,
        /// The offending value.
        reg: u8,
    },
    /// The immediate does not fit the format (range or alignment), or a
    /// shift amount is not below XLEN.
    Immediate {
        /// The operation.
        op: Op,
        /// The offending immediate.
        imm: i32,
    },
    /// A field this operation does not use is not zero.
    UnusedField {
        /// The operation.
        op: Op,
    },
    /// `len == 2` but no compressed form expresses these fields.
    NotCompressible {
        /// The operation.
        op: Op,
    },
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            EncodeError::WrongXlen { op, xlen } => {
                write!(f, "{} does not exist on {xlen:?}", op.mnemonic())
            }
            EncodeError::Length { len } => write!(f, "instruction length {len} is not 2 or 4"),
            EncodeError::Register { op, reg } => {
                write!(
                    f,
                    "{}: register or field value {reg} out of range",
                    op.mnemonic()
                )
            }
            EncodeError::Immediate { op, imm } => {
                write!(f, "{}: immediate {imm} cannot be encoded", op.mnemonic())
            }
            EncodeError::UnusedField { op } => {
                write!(
                    f,
                    "{}: a field the instruction does not use is set",
                    op.mnemonic()
                )
            }
            EncodeError::NotCompressible { op } => {
                write!(
                    f,
                    "{}: no compressed form has these operands",
                    op.mnemonic()
                )
            }
        }
    }
}

impl std::error::Error for EncodeError {}

/// Encodes `inst` for `xlen`: the 32-bit word, or for `len == 2` the 16-bit
/// compressed encoding zero-extended.
///
/// For every word `w` that [`crate::decode`] accepts,
/// `encode(&decode(w)?, xlen) == w` (for compressed words: the low 16 bits
/// of `w`, the upper half being no part of the instruction).
///
/// ```
/// use retrace_isa::{decode, encode, Xlen};
/// let i = decode(0x0285_0513, Xlen::Rv64).unwrap(); // addi a0, a0, 40
/// assert_eq!(encode(&i, Xlen::Rv64), Ok(0x0285_0513));
/// ```
pub fn encode(inst: &Inst, xlen: Xlen) -> Result<u32, EncodeError> {
    let op = inst.op;
    if op.is_rv64_only() && xlen != Xlen::Rv64 {
        return Err(EncodeError::WrongXlen { op, xlen });
    }
    for reg in [inst.rd, inst.rs1, inst.rs2] {
        if reg > 31 {
            return Err(EncodeError::Register { op, reg });
        }
    }
    match inst.len {
        4 => encode32(inst, xlen),
        2 => encode16(inst, xlen),
        len => Err(EncodeError::Length { len }),
    }
}

/// How the fields of a 32-bit instruction are placed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fmt {
    /// rd, rs1, rs2.
    R,
    /// rd, rs1, 12-bit signed immediate.
    I,
    /// rd, rs1, shift amount below XLEN.
    Shift,
    /// rd, rs1, shift amount below 32 (the `*W` shifts).
    ShiftW,
    /// rs1, rs2, 12-bit signed offset.
    S,
    /// rs1, rs2, 13-bit even offset.
    B,
    /// rd, upper immediate.
    U,
    /// rd, 21-bit even offset.
    J,
    /// rd, rs1 (register or 5-bit immediate), CSR number.
    Csr,
    /// rd, rs1, rs2, `aq`/`rl`.
    Amo,
    /// rd, rs1, `aq`/`rl` (no rs2).
    Lr,
    /// rd, rs1 (ignored fields), 12-bit `fm`/`pred`/`succ`.
    FenceBits,
    /// rs1, rs2.
    Sfence,
    /// No fields.
    Fixed,
    /// An F/D operation on the FMA or OP-FP opcodes: format and bits come
    /// from the table in `fp.rs`.
    Fp,
}

/// The format and fixed bits (opcode, funct3, funct7, …) of each operation.
fn op32(op: Op) -> (Fmt, u32) {
    use Fmt::*;
    use Op::*;
    match op {
        Lui => (U, 0x37),
        Auipc => (U, 0x17),
        Jal => (J, 0x6f),
        Jalr => (I, 0x67),
        Beq => (B, 0x0063),
        Bne => (B, 0x1063),
        Blt => (B, 0x4063),
        Bge => (B, 0x5063),
        Bltu => (B, 0x6063),
        Bgeu => (B, 0x7063),
        Lb => (I, 0x0003),
        Lh => (I, 0x1003),
        Lw => (I, 0x2003),
        Ld => (I, 0x3003),
        Lbu => (I, 0x4003),
        Lhu => (I, 0x5003),
        Lwu => (I, 0x6003),
        Sb => (S, 0x0023),
        Sh => (S, 0x1023),
        Sw => (S, 0x2023),
        Sd => (S, 0x3023),
        Addi => (I, 0x0013),
        Slti => (I, 0x2013),
        Sltiu => (I, 0x3013),
        Xori => (I, 0x4013),
        Ori => (I, 0x6013),
        Andi => (I, 0x7013),
        Slli => (Shift, 0x1013),
        Srli => (Shift, 0x5013),
        Srai => (Shift, 0x4000_5013),
        Add => (R, 0x0033),
        Sub => (R, 0x4000_0033),
        Sll => (R, 0x1033),
        Slt => (R, 0x2033),
        Sltu => (R, 0x3033),
        Xor => (R, 0x4033),
        Srl => (R, 0x5033),
        Sra => (R, 0x4000_5033),
        Or => (R, 0x6033),
        And => (R, 0x7033),
        Addiw => (I, 0x001b),
        Slliw => (ShiftW, 0x101b),
        Srliw => (ShiftW, 0x501b),
        Sraiw => (ShiftW, 0x4000_501b),
        Addw => (R, 0x003b),
        Subw => (R, 0x4000_003b),
        Sllw => (R, 0x103b),
        Srlw => (R, 0x503b),
        Sraw => (R, 0x4000_503b),
        Op::Fence => (Fmt::FenceBits, 0x000f),
        FenceTso => (Fixed, 0x8330_000f),
        Pause => (Fixed, 0x0100_000f),
        FenceI => (I, 0x100f),
        Ecall => (Fixed, 0x0000_0073),
        Ebreak => (Fixed, 0x0010_0073),
        Mret => (Fixed, 0x3020_0073),
        Sret => (Fixed, 0x1020_0073),
        Wfi => (Fixed, 0x1050_0073),
        SfenceVma => (Sfence, 0x1200_0073),
        Csrrw => (Csr, 0x1073),
        Csrrs => (Csr, 0x2073),
        Csrrc => (Csr, 0x3073),
        Csrrwi => (Csr, 0x5073),
        Csrrsi => (Csr, 0x6073),
        Csrrci => (Csr, 0x7073),
        Mul => (R, 0x0200_0033),
        Mulh => (R, 0x0200_1033),
        Mulhsu => (R, 0x0200_2033),
        Mulhu => (R, 0x0200_3033),
        Div => (R, 0x0200_4033),
        Divu => (R, 0x0200_5033),
        Rem => (R, 0x0200_6033),
        Remu => (R, 0x0200_7033),
        Mulw => (R, 0x0200_003b),
        Divw => (R, 0x0200_403b),
        Divuw => (R, 0x0200_503b),
        Remw => (R, 0x0200_603b),
        Remuw => (R, 0x0200_703b),
        LrW => (Lr, 0x1000_202f),
        ScW => (Amo, 0x1800_202f),
        AmoswapW => (Amo, 0x0800_202f),
        AmoaddW => (Amo, 0x0000_202f),
        AmoxorW => (Amo, 0x2000_202f),
        AmoandW => (Amo, 0x6000_202f),
        AmoorW => (Amo, 0x4000_202f),
        AmominW => (Amo, 0x8000_202f),
        AmomaxW => (Amo, 0xa000_202f),
        AmominuW => (Amo, 0xc000_202f),
        AmomaxuW => (Amo, 0xe000_202f),
        LrD => (Lr, 0x1000_302f),
        ScD => (Amo, 0x1800_302f),
        AmoswapD => (Amo, 0x0800_302f),
        AmoaddD => (Amo, 0x0000_302f),
        AmoxorD => (Amo, 0x2000_302f),
        AmoandD => (Amo, 0x6000_302f),
        AmoorD => (Amo, 0x4000_302f),
        AmominD => (Amo, 0x8000_302f),
        AmomaxD => (Amo, 0xa000_302f),
        AmominuD => (Amo, 0xc000_302f),
        AmomaxuD => (Amo, 0xe000_302f),
        Flw => (I, 0x2007),
        Fld => (I, 0x3007),
        Fsw => (S, 0x2027),
        Fsd => (S, 0x3027),
        // The other F/D operations (the loads and stores above use I and S).
        #[allow(unreachable_patterns)]
        crate::fp_ops!() => (Fmt::Fp, 0),
    }
}

/// An F/D operation from its row of the table in `fp.rs`.
fn encode_fp(i: &Inst) -> Result<u32, EncodeError> {
    let op = i.op;
    let e = fp::entry(op).ok_or(EncodeError::UnusedField { op })?;
    let imm = i.imm;
    let (rs2, imm_max) = match e.shape {
        fp::Shape::Fma => (i.rs2, 255),
        fp::Shape::Rm3 => (i.rs2, 7),
        fp::Shape::Rm2 => (0, 7),
        fp::Shape::R3 => (i.rs2, 0),
        fp::Shape::R2 => (0, 0),
    };
    if rs2 != i.rs2 {
        return Err(EncodeError::UnusedField { op });
    }
    if !(0..=imm_max).contains(&imm) || (e.shape.has_rm() && !fp::valid_rm(imm as u32 & 7)) {
        return Err(EncodeError::Immediate { op, imm });
    }
    let imm = imm as u32;
    let fields = match e.shape {
        fp::Shape::Fma => (imm >> 3) << 27 | (imm & 7) << 12,
        _ => imm << 12,
    };
    Ok(e.base | u32::from(i.rd) << 7 | u32::from(i.rs1) << 15 | u32::from(rs2) << 20 | fields)
}

fn encode32(i: &Inst, xlen: Xlen) -> Result<u32, EncodeError> {
    use Fmt::*;
    let op = i.op;
    let (fmt, base) = op32(op);
    if fmt == Fp {
        return encode_fp(i);
    }
    let (rd, rs1, rs2) = (i.rd as u32, i.rs1 as u32, i.rs2 as u32);
    let imm = i.imm;
    // Which of (rd, rs1, rs2, imm) the format uses; the rest must be zero.
    let uses = match fmt {
        R => (true, true, true, false),
        I | Shift | ShiftW | Csr | FenceBits => (true, true, false, true),
        S | B => (false, true, true, true),
        U | J => (true, false, false, true),
        Amo => (true, true, true, true),
        Lr => (true, true, false, true),
        Sfence => (false, true, true, false),
        Fixed => (false, false, false, false),
        Fp => (true, true, true, true),
    };
    let unused = (!uses.0 && rd != 0)
        || (!uses.1 && rs1 != 0)
        || (!uses.2 && rs2 != 0)
        || (!uses.3 && imm != 0);
    if unused {
        return Err(EncodeError::UnusedField { op });
    }
    let bad_imm = Err(EncodeError::Immediate { op, imm });
    let place = |l: &Layout| -> Result<u32, EncodeError> {
        if l.fits(imm) {
            Ok(scatter(imm, l))
        } else {
            Err(EncodeError::Immediate { op, imm })
        }
    };
    let regs = base | rd << 7 | rs1 << 15 | rs2 << 20;
    Ok(match fmt {
        R | Sfence | Fixed | Fp => regs,
        I => regs | place(&bits::I)?,
        S => regs | place(&bits::S)?,
        B => regs | place(&bits::B)?,
        U => regs | place(&bits::U)?,
        J => regs | place(&bits::J)?,
        Shift | ShiftW => {
            let limit = if fmt == ShiftW {
                32
            } else {
                xlen.bits() as i32
            };
            if !(0..limit).contains(&imm) {
                return bad_imm;
            }
            regs | (imm as u32) << 20
        }
        Csr | FenceBits => regs | place(&bits::CSR)?,
        Amo | Lr => {
            if !(0..4).contains(&imm) {
                return bad_imm;
            }
            regs | (imm as u32) << 25
        }
    })
}

/// Identifies which compressed form a 16-bit word uses: quadrant and
/// funct3, plus bit 12 in quadrant 2 row 4 where `c.mv` and `c.add` both
/// expand to `add`.
fn form_key(bits: u32) -> u32 {
    let key = bits & 0xe003;
    if key == 0x8002 {
        key | (bits & 0x1000)
    } else {
        key
    }
}

/// Builds a candidate encoding when `$cond` holds; `?` inside `$bits`
/// rejects the candidate (register outside x8–x15, immediate out of range).
macro_rules! form {
    ($cond:expr, $bits:expr) => {
        if $cond {
            build(|| Some($bits))
        } else {
            None
        }
    };
}

/// Runs a candidate's builder; a function rather than an inline closure call
/// so that `?` inside the builder rejects only that candidate.
#[inline(always)]
fn build(f: impl FnOnce() -> Option<u32>) -> Option<u32> {
    f()
}

fn encode16(i: &Inst, xlen: Xlen) -> Result<u32, EncodeError> {
    use Op::*;
    let op = i.op;
    let rv64 = xlen == Xlen::Rv64;
    let (d, s1, s2, imm) = (i.rd as u32, i.rs1 as u32, i.rs2 as u32, i.imm);
    // The 3-bit register fields name x8..x15.
    let p = |r: u32| (8..16).contains(&r).then(|| r - 8);
    let fit = |l: &Layout| l.fits(imm).then(|| scatter(imm, l));
    // Shift amounts: 6 bits on RV64, 5 on RV32 (shamt[5] is reserved there).
    let shamt = || {
        let limit = if rv64 { 64 } else { 32 };
        (0..limit)
            .contains(&imm)
            .then(|| scatter(imm, &bits::CSHAMT))
    };
    let none = None;
    let cands: [Option<u32>; 4] = match op {
        Addi => [
            form!(s1 == 2 && imm != 0, p(d)? << 2 | fit(&bits::CADDI4SPN)?),
            form!(d == s1, 0x0001 | d << 7 | fit(&bits::CI6)?),
            form!(s1 == 0, 0x4001 | d << 7 | fit(&bits::CI6)?),
            form!(
                d == 2 && s1 == 2 && imm != 0,
                0x6101 | fit(&bits::CADDI16SP)?
            ),
        ],
        Addiw => [
            form!(
                rv64 && d == s1 && d != 0,
                0x2001 | d << 7 | fit(&bits::CI6)?
            ),
            none,
            none,
            none,
        ],
        Lui => [
            form!(d != 2 && imm != 0, 0x6001 | d << 7 | fit(&bits::CLUI)?),
            none,
            none,
            none,
        ],
        Lw => [
            form!(true, 0x4000 | p(s1)? << 7 | p(d)? << 2 | fit(&bits::CLW)?),
            form!(s1 == 2 && d != 0, 0x4002 | d << 7 | fit(&bits::CLWSP)?),
            none,
            none,
        ],
        Ld => [
            form!(true, 0x6000 | p(s1)? << 7 | p(d)? << 2 | fit(&bits::CLD)?),
            form!(s1 == 2 && d != 0, 0x6002 | d << 7 | fit(&bits::CLDSP)?),
            none,
            none,
        ],
        Sw => [
            form!(
                d == 0,
                0xc000 | p(s1)? << 7 | p(s2)? << 2 | fit(&bits::CLW)?
            ),
            form!(d == 0 && s1 == 2, 0xc002 | s2 << 2 | fit(&bits::CSWSP)?),
            none,
            none,
        ],
        Sd => [
            form!(
                d == 0,
                0xe000 | p(s1)? << 7 | p(s2)? << 2 | fit(&bits::CLD)?
            ),
            form!(d == 0 && s1 == 2, 0xe002 | s2 << 2 | fit(&bits::CSDSP)?),
            none,
            none,
        ],
        Jal => [
            form!(d == 0, 0xa001 | fit(&bits::CJ)?),
            form!(d == 1 && !rv64, 0x2001 | fit(&bits::CJ)?),
            none,
            none,
        ],
        Jalr => [
            form!(d == 0 && s1 != 0 && imm == 0, 0x8002 | s1 << 7),
            form!(d == 1 && s1 != 0 && imm == 0, 0x9002 | s1 << 7),
            none,
            none,
        ],
        Beq | Bne => {
            let base = if op == Beq { 0xc001 } else { 0xe001 };
            [
                form!(d == 0 && s2 == 0, base | p(s1)? << 7 | fit(&bits::CB)?),
                none,
                none,
                none,
            ]
        }
        Srli | Srai | Andi => {
            let (base, imm_bits) = match op {
                Srli => (0x8001, shamt()),
                Srai => (0x8401, shamt()),
                _ => (0x8801, fit(&bits::CI6)),
            };
            [
                form!(d == s1, base | p(d)? << 7 | imm_bits?),
                none,
                none,
                none,
            ]
        }
        Slli => [form!(d == s1, 0x0002 | d << 7 | shamt()?), none, none, none],
        Sub | Xor | Or | And | Subw | Addw => {
            let (base, word_op) = match op {
                Sub => (0x8c01, false),
                Xor => (0x8c21, false),
                Or => (0x8c41, false),
                And => (0x8c61, false),
                Subw => (0x9c01, true),
                _ => (0x9c21, true),
            };
            [
                form!(
                    d == s1 && (!word_op || rv64),
                    base | p(d)? << 7 | p(s2)? << 2
                ),
                none,
                none,
                none,
            ]
        }
        Add => [
            form!(s1 == 0 && s2 != 0, 0x8002 | d << 7 | s2 << 2),
            form!(d == s1 && s2 != 0, 0x9002 | d << 7 | s2 << 2),
            none,
            none,
        ],
        Ebreak => [Some(0x9002), none, none, none],
        // The FP loads and stores: single precision only on RV32 (RV64
        // gives those encodings to c.ld/c.sd and their sp forms).
        Flw => [
            form!(!rv64, 0x6000 | p(s1)? << 7 | p(d)? << 2 | fit(&bits::CLW)?),
            form!(!rv64 && s1 == 2, 0x6002 | d << 7 | fit(&bits::CLWSP)?),
            none,
            none,
        ],
        Fld => [
            form!(true, 0x2000 | p(s1)? << 7 | p(d)? << 2 | fit(&bits::CLD)?),
            form!(s1 == 2, 0x2002 | d << 7 | fit(&bits::CLDSP)?),
            none,
            none,
        ],
        Fsw => [
            form!(
                !rv64 && d == 0,
                0xe000 | p(s1)? << 7 | p(s2)? << 2 | fit(&bits::CLW)?
            ),
            form!(
                !rv64 && d == 0 && s1 == 2,
                0xe002 | s2 << 2 | fit(&bits::CSWSP)?
            ),
            none,
            none,
        ],
        Fsd => [
            form!(
                d == 0,
                0xa000 | p(s1)? << 7 | p(s2)? << 2 | fit(&bits::CLD)?
            ),
            form!(d == 0 && s1 == 2, 0xa002 | s2 << 2 | fit(&bits::CSDSP)?),
            none,
            none,
        ],
        _ => [none; 4],
    };
    // Fields a compressed form has no room for must be zero; the candidates
    // above only read the fields their form holds, so check the rest here.
    let holds_imm = !matches!(op, Add | Sub | Xor | Or | And | Subw | Addw | Ebreak);
    let holds_rd = !matches!(op, Sw | Sd | Fsw | Fsd | Beq | Bne | Ebreak);
    let holds_rs1 = !matches!(op, Jal | Lui | Ebreak);
    let holds_rs2 = matches!(
        op,
        Sw | Sd | Fsw | Fsd | Add | Sub | Xor | Or | And | Subw | Addw
    );
    if (!holds_imm && imm != 0)
        || (!holds_rd && d != 0)
        || (!holds_rs1 && s1 != 0)
        || (!holds_rs2 && s2 != 0)
    {
        return Err(EncodeError::UnusedField { op });
    }
    let want = form_key(i.raw);
    let mut fits = cands.iter().flatten().copied();
    let first = fits.clone().next();
    fits.find(|&c| form_key(c) == want)
        .or(first)
        .ok_or(EncodeError::NotCompressible { op })
}
