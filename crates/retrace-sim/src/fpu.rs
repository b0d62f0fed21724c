//! The F and D extensions: the floating-point registers, `fcsr`, and the
//! execution of every F/D operation except the loads and stores (which the
//! block executor does beside the integer ones).
//!
//! The arithmetic is Berkeley SoftFloat 3 with its RISC-V specialisation
//! (through `softfloat-wrapper`): the same rounding, the same exception
//! flags (tininess after rounding), the canonical NaN `0x7fc00000` /
//! `0x7ff8000000000000` for every NaN result, and the RISC-V values of an
//! out-of-range or NaN conversion to an integer. What SoftFloat does not
//! have is written here from "The RISC-V Instruction Set Manual, Volume I:
//! Unprivileged ISA" (chapters "F" and "D"): `fmin`/`fmax` (IEEE 754-2019
//! minimumNumber/maximumNumber with -0 < +0), `fclass`, the sign
//! injections, the moves and NaN-boxing. Each operation is written once,
//! generic over the format ([`Format`]); [`kind`] maps the S and D
//! operations of one row onto it.
//!
//! SoftFloat's flag bits are the RISC-V `fflags` bits (NX 1, UF 2, OF 4,
//! DZ 8, NV 16), so flags are accrued without translation.

use crate::csr::mstatus;
use retrace_isa::{Inst, Op};
use softfloat_wrapper::{ExceptionFlags, Float, RoundingMode, F32, F64};

/// The floating-point state of one hart.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FpState {
    /// `f0`–`f31`, 64 bits each (D is implemented): a single-precision
    /// value is NaN-boxed, its upper 32 bits all ones.
    pub f: [u64; 32],
    /// `fflags`: the accrued exception flags (NV DZ OF UF NX, bits 4..0).
    pub fflags: u8,
    /// `frm`: the dynamic rounding mode (any 3-bit value may be written;
    /// 5–7 make an instruction that uses it illegal).
    pub frm: u8,
}

/// An F/D instruction that must trap as illegal: `mstatus.FS` is Off, or
/// its rounding mode (or the dynamic one in `frm`) is reserved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Illegal;

/// Whether `mstatus.FS` lets F/D instructions and the FP CSRs execute.
#[inline(always)]
pub(crate) fn enabled(mstatus: u64) -> bool {
    mstatus & mstatus::FS != 0
}

/// A write to the FP state makes `mstatus.FS` Dirty (QEMU does this for
/// every instruction that writes an FP register, and for writes of the FP
/// CSRs; an instruction that only accrues flags leaves FS as it was).
#[inline(always)]
pub(crate) fn dirty(mstatus: &mut u64) {
    *mstatus |= mstatus::FS;
}

/// NaN-box a single-precision value.
#[inline(always)]
pub(crate) fn box_s(bits: u32) -> u64 {
    0xffff_ffff_0000_0000 | u64::from(bits)
}

/// The rounding mode `rm` selects (7: the dynamic one in `frm`).
fn rounding(rm: u8, frm: u8) -> Result<RoundingMode, Illegal> {
    let rm = if rm == 7 { frm } else { rm };
    Ok(match rm {
        0 => RoundingMode::TiesToEven,
        1 => RoundingMode::TowardZero,
        2 => RoundingMode::TowardNegative,
        3 => RoundingMode::TowardPositive,
        4 => RoundingMode::TiesToAway,
        _ => return Err(Illegal),
    })
}

/// A floating-point format as it sits in a 64-bit register.
trait Format: Float + Copy {
    /// The sign bit.
    const SIGN: u64;
    /// The exponent field.
    const EXP: u64;
    /// The fraction's top bit: set in a quiet NaN.
    const QUIET: u64;
    /// The register's value as this format; a single that is not NaN-boxed
    /// reads as the canonical NaN.
    fn unbox(reg: u64) -> Self;
    /// The register value holding `self`.
    fn boxed(self) -> u64;
    /// The bits of the format, widened.
    fn bits(self) -> u64;
    /// The value with bits `b` (truncated to the format).
    fn with_bits(b: u64) -> Self;
    /// The canonical NaN.
    fn canonical() -> Self {
        Self::with_bits(Self::EXP | Self::QUIET)
    }
    /// Exponent all ones and a fraction: the magnitude's bits exceed
    /// infinity's.
    fn is_nan(self) -> bool {
        self.bits() & !Self::SIGN > Self::EXP
    }
    fn is_snan(self) -> bool {
        self.is_nan() && self.bits() & Self::QUIET == 0
    }
}

impl Format for F32 {
    const SIGN: u64 = 1 << 31;
    const EXP: u64 = 0xff << 23;
    const QUIET: u64 = 1 << 22;
    fn unbox(reg: u64) -> Self {
        if reg >> 32 == 0xffff_ffff {
            F32::from_bits(reg as u32)
        } else {
            Self::canonical()
        }
    }
    fn boxed(self) -> u64 {
        box_s(self.to_bits())
    }
    fn bits(self) -> u64 {
        u64::from(self.to_bits())
    }
    fn with_bits(b: u64) -> Self {
        F32::from_bits(b as u32)
    }
}

impl Format for F64 {
    const SIGN: u64 = 1 << 63;
    const EXP: u64 = 0x7ff << 52;
    const QUIET: u64 = 1 << 51;
    fn unbox(reg: u64) -> Self {
        F64::from_bits(reg)
    }
    fn boxed(self) -> u64 {
        self.to_bits()
    }
    fn bits(self) -> u64 {
        self.to_bits()
    }
    fn with_bits(b: u64) -> Self {
        F64::from_bits(b)
    }
}

/// What an F/D operation does, whatever its format: one row of the ISA
/// manual's tables, for S and D alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Madd,
    Msub,
    Nmsub,
    Nmadd,
    Add,
    Sub,
    Mul,
    Div,
    Sqrt,
    Sgnj,
    Sgnjn,
    Sgnjx,
    Min,
    Max,
    ToW,
    ToWu,
    ToL,
    ToLu,
    FromW,
    FromWu,
    FromL,
    FromLu,
    MvToX,
    Class,
    Eq,
    Lt,
    Le,
    MvFromX,
    /// `fcvt.s.d` (format S) and `fcvt.d.s` (format D): the format is the
    /// destination's.
    Convert,
}

/// The operation and whether it is double precision, for every F/D
/// operation but the loads and stores.
fn kind(op: Op) -> Option<(Kind, bool)> {
    macro_rules! rows {
        ($($s:ident $d:ident => $k:ident,)*) => {
            match op {
                $(Op::$s => (Kind::$k, false), Op::$d => (Kind::$k, true),)*
                Op::FcvtSD => (Kind::Convert, false),
                Op::FcvtDS => (Kind::Convert, true),
                _ => return None,
            }
        };
    }
    Some(rows! {
        FmaddS FmaddD => Madd,
        FmsubS FmsubD => Msub,
        FnmsubS FnmsubD => Nmsub,
        FnmaddS FnmaddD => Nmadd,
        FaddS FaddD => Add,
        FsubS FsubD => Sub,
        FmulS FmulD => Mul,
        FdivS FdivD => Div,
        FsqrtS FsqrtD => Sqrt,
        FsgnjS FsgnjD => Sgnj,
        FsgnjnS FsgnjnD => Sgnjn,
        FsgnjxS FsgnjxD => Sgnjx,
        FminS FminD => Min,
        FmaxS FmaxD => Max,
        FcvtWS FcvtWD => ToW,
        FcvtWuS FcvtWuD => ToWu,
        FcvtLS FcvtLD => ToL,
        FcvtLuS FcvtLuD => ToLu,
        FcvtSW FcvtDW => FromW,
        FcvtSWu FcvtDWu => FromWu,
        FcvtSL FcvtDL => FromL,
        FcvtSLu FcvtDLu => FromLu,
        FmvXW FmvXD => MvToX,
        FclassS FclassD => Class,
        FeqS FeqD => Eq,
        FltS FltD => Lt,
        FleS FleD => Le,
        FmvWX FmvDX => MvFromX,
    })
}

impl Kind {
    /// Whether the instruction has a rounding-mode field (which, QEMU and
    /// the ISA manual agree, must name a valid mode even where the result
    /// is exact, as in `fcvt.d.s`).
    fn has_rm(self) -> bool {
        use Kind::*;
        !matches!(
            self,
            Sgnj | Sgnjn | Sgnjx | Min | Max | MvToX | Class | Eq | Lt | Le | MvFromX
        )
    }
}

/// Execute an F/D operation other than a load or store: reads and writes
/// `fp` and the integer registers `x`, and marks FS Dirty in `mstatus`
/// when it writes an FP register. `x[0]` may be written; the caller zeroes
/// it. Never inlined: integer code pays nothing for it.
#[inline(never)]
pub(crate) fn execute<const RV64: bool>(
    inst: &Inst,
    fp: &mut FpState,
    x: &mut [u64; 32],
    mstatus: &mut u64,
) -> Result<(), Illegal> {
    if !enabled(*mstatus) {
        return Err(Illegal);
    }
    let Some((kind, double)) = kind(inst.op) else {
        return Err(Illegal);
    };
    // The rounding mode sits in `imm`, below `rs3` for the fused ops.
    let rm = if kind.has_rm() {
        rounding((inst.imm & 7) as u8, fp.frm)?
    } else {
        RoundingMode::TiesToEven
    };
    ExceptionFlags::from_bits(0).set();
    let out = if double {
        run::<F64, RV64>(kind, inst, fp, x, rm)
    } else {
        run::<F32, RV64>(kind, inst, fp, x, rm)
    };
    let mut flags = ExceptionFlags::default();
    flags.get();
    fp.fflags |= flags.to_bits() & 0x1f;
    match out {
        Out::F(v) => {
            fp.f[(inst.rd & 31) as usize] = v;
            dirty(mstatus);
        }
        Out::X(v) => x[(inst.rd & 31) as usize] = sx::<RV64>(v),
    }
    Ok(())
}

/// Where a result goes.
enum Out {
    /// To FP register `rd`, as the register's 64 bits.
    F(u64),
    /// To integer register `rd`, before sign extension to the XLEN.
    X(u64),
}

/// Sign-extend from bit 31 on RV32 (how integer registers are kept).
#[inline(always)]
fn sx<const RV64: bool>(v: u64) -> u64 {
    if RV64 {
        v
    } else {
        v as i32 as i64 as u64
    }
}

fn run<T: Format, const RV64: bool>(
    kind: Kind,
    inst: &Inst,
    fp: &FpState,
    x: &[u64; 32],
    rm: RoundingMode,
) -> Out {
    let reg = |r: u8| fp.f[(r & 31) as usize];
    let a = T::unbox(reg(inst.rs1));
    let b = T::unbox(reg(inst.rs2));
    let c = || T::unbox(reg((inst.imm >> 3) as u8));
    let xa = x[(inst.rs1 & 31) as usize];
    let neg = |v: T| T::with_bits(v.bits() ^ T::SIGN);
    // Arithmetic results: SoftFloat's RISC-V specialisation already gives
    // the canonical NaN.
    let f = |v: T| Out::F(v.boxed());
    let bit = |v: bool| Out::X(u64::from(v));
    use Kind::*;
    match kind {
        // The fused forms negate operands, never the rounded result, so
        // that the one rounding sees the exact -(a*b)±c (directed modes
        // and the sign of an exact zero depend on it).
        Madd => f(a.fused_mul_add(b, c(), rm)),
        Msub => f(a.fused_mul_add(b, neg(c()), rm)),
        Nmsub => f(neg(a).fused_mul_add(b, c(), rm)),
        Nmadd => f(neg(a).fused_mul_add(b, neg(c()), rm)),
        Add => f(a.add(b, rm)),
        Sub => f(a.sub(b, rm)),
        Mul => f(a.mul(b, rm)),
        Div => f(a.div(b, rm)),
        Sqrt => f(a.sqrt(rm)),
        Sgnj => f(T::with_bits(a.bits() & !T::SIGN | b.bits() & T::SIGN)),
        Sgnjn => f(T::with_bits(a.bits() & !T::SIGN | !b.bits() & T::SIGN)),
        Sgnjx => f(T::with_bits(a.bits() ^ b.bits() & T::SIGN)),
        Min | Max => f(min_max(kind == Max, a, b)),
        ToW => Out::X(a.to_i32(rm, true) as i64 as u64),
        // The 32-bit result is sign-extended on RV64, unsigned or not.
        ToWu => Out::X(a.to_u32(rm, true) as i32 as i64 as u64),
        ToL => Out::X(a.to_i64(rm, true) as u64),
        ToLu => Out::X(a.to_u64(rm, true)),
        FromW => f(T::from_i32(xa as i32, rm)),
        FromWu => f(T::from_u32(xa as u32, rm)),
        FromL => f(T::from_i64(xa as i64, rm)),
        FromLu => f(T::from_u64(xa, rm)),
        // `fmv.x.w` moves the low 32 bits as they are, boxed or not.
        MvToX => Out::X(if T::SIGN == 1 << 31 {
            reg(inst.rs1) as u32 as i32 as i64 as u64
        } else {
            reg(inst.rs1)
        }),
        Class => Out::X(classify(a)),
        Eq => bit(a.eq(b)),
        Lt => bit(a.lt(b)),
        Le => bit(a.le(b)),
        MvFromX => f(T::with_bits(xa)),
        Convert => {
            let v = if T::SIGN == 1 << 31 {
                F64::unbox(reg(inst.rs1)).to_f32(rm).boxed()
            } else {
                F32::unbox(reg(inst.rs1)).to_f64(rm).boxed()
            };
            Out::F(v)
        }
    }
}

/// `fmin`/`fmax` (ISA manual, 2.2 and later: IEEE 754-2019
/// minimumNumber/maximumNumber): a NaN operand loses to a number, two NaNs
/// give the canonical NaN, a signalling NaN raises NV, and -0 is less than
/// +0.
fn min_max<T: Format>(max: bool, a: T, b: T) -> T {
    if a.is_snan() || b.is_snan() {
        let mut flags = ExceptionFlags::default();
        flags.get();
        ExceptionFlags::from_bits(flags.to_bits() | 0x10).set();
    }
    match (a.is_nan(), b.is_nan()) {
        (true, true) => T::canonical(),
        (true, false) => b,
        (false, true) => a,
        (false, false) => {
            // Ordered by a key on the bits: negatives reversed below the
            // positives, so -0 < +0 as the manual wants.
            let key = |v: T| {
                if v.bits() & T::SIGN != 0 {
                    !v.bits() & (T::SIGN | (T::SIGN - 1))
                } else {
                    v.bits() | T::SIGN
                }
            };
            let a_less = key(a) < key(b);
            if a_less != max {
                a
            } else {
                b
            }
        }
    }
}

/// `fclass`: one bit of ten (ISA manual, table "Format of result of FCLASS
/// instruction").
fn classify<T: Format>(v: T) -> u64 {
    let bits = v.bits();
    let neg = bits & T::SIGN != 0;
    let mag = bits & !T::SIGN;
    let exp = bits & T::EXP;
    let bit = if mag == T::EXP {
        if neg {
            0
        } else {
            7
        }
    } else if v.is_nan() {
        if v.is_snan() {
            8
        } else {
            9
        }
    } else if mag == 0 {
        if neg {
            3
        } else {
            4
        }
    } else if exp == 0 {
        if neg {
            2
        } else {
            5
        }
    } else if neg {
        1
    } else {
        6
    };
    1 << bit
}

/// An F/D instruction word that decodes (as on RV64, the wider set), as
/// objdump writes it: such a word traps only while `mstatus.FS` is Off or
/// for a reserved dynamic rounding mode. `None` for anything else.
pub fn disabled_instruction(word: u32) -> Option<String> {
    let inst = retrace_isa::decode(word, retrace_isa::Xlen::Rv64).ok()?;
    inst.op.is_fp().then(|| {
        retrace_isa::disasm(&inst, 0, retrace_isa::Xlen::Rv64)
            .to_string()
            .replace('\t', " ")
    })
}

/// The extension an instruction word belongs to when retrace does not
/// implement it: half and quad precision (the `fmt` field, 2 and 3, on the
/// FP opcodes; widths 1 and 4 of the FP loads and stores) and vectors (the
/// OP-V opcode and the other widths of LOAD-FP/STORE-FP). Named for the
/// message a program that uses one stops with.
pub fn unimplemented_extension(word: u32) -> Option<&'static str> {
    const HALF: &str = "Zfh extension (half-precision floating point)";
    const QUAD: &str = "Q extension (quad-precision floating point)";
    const VECTOR: &str = "V extension (vectors)";
    let by_fmt = || match word >> 25 & 3 {
        2 => Some(HALF),
        3 => Some(QUAD),
        _ => None,
    };
    match word & 0x7f {
        0x07 | 0x27 => match word >> 12 & 7 {
            1 => Some(HALF),
            4 => Some(QUAD),
            2 | 3 => None,
            _ => Some(VECTOR),
        },
        0x43 | 0x47 | 0x4b | 0x4f | 0x53 => by_fmt(),
        0x57 => Some(VECTOR),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fp_inst(op: Op, rm: i32) -> Inst {
        Inst {
            op,
            rd: 1,
            rs1: 2,
            rs2: 3,
            len: 4,
            imm: rm,
            raw: 0,
        }
    }

    /// Run `op` on singles `a`, `b` with rounding mode `rm`: the result
    /// register and the flags.
    fn single(op: Op, a: u32, b: u32, rm: i32) -> (u64, u8) {
        let mut fp = FpState::default();
        fp.f[2] = box_s(a);
        fp.f[3] = box_s(b);
        let mut x = [0; 32];
        let mut status = mstatus::FS;
        execute::<true>(&fp_inst(op, rm), &mut fp, &mut x, &mut status).unwrap();
        let out = if kind(op).is_some_and(|(k, _)| {
            matches!(k, Kind::Eq | Kind::Lt | Kind::Le | Kind::Class | Kind::ToW)
        }) {
            x[1]
        } else {
            fp.f[1]
        };
        (out, fp.fflags)
    }

    #[test]
    fn every_fp_operation_but_loads_and_stores_has_a_kind() {
        for &op in Op::ALL {
            let load_store = matches!(op, Op::Flw | Op::Fsw | Op::Fld | Op::Fsd);
            assert_eq!(kind(op).is_some(), op.is_fp() && !load_store, "{op:?}");
        }
    }

    #[test]
    fn arithmetic_rounds_and_flags_as_the_manual_says() {
        const ONE: u32 = 0x3f80_0000;
        const THREE: u32 = 0x4040_0000;
        // 1/3 rounds down to nearest, up toward +inf; inexact either way.
        assert_eq!(single(Op::FdivS, ONE, THREE, 0), (box_s(0x3eaa_aaab), 1));
        assert_eq!(single(Op::FdivS, ONE, THREE, 1), (box_s(0x3eaa_aaaa), 1));
        // 1/0: +inf and DZ.
        assert_eq!(single(Op::FdivS, ONE, 0, 0), (box_s(0x7f80_0000), 8));
        // 0/0: the canonical NaN and NV.
        assert_eq!(single(Op::FdivS, 0, 0, 0), (box_s(0x7fc0_0000), 16));
        // A signalling NaN in fmin: NV, and the number wins.
        assert_eq!(single(Op::FminS, 0x7f80_0001, ONE, 0), (box_s(ONE), 16));
        // -0 < +0.
        assert_eq!(single(Op::FminS, 0, 0x8000_0000, 0).0, box_s(0x8000_0000));
        assert_eq!(single(Op::FmaxS, 0x8000_0000, 0, 0).0, box_s(0));
        // A quiet NaN compared by feq: no flag; by flt: NV.
        assert_eq!(single(Op::FeqS, 0x7fc0_0000, ONE, 0), (0, 0));
        assert_eq!(single(Op::FltS, 0x7fc0_0000, ONE, 0), (0, 16));
        // NaN to a signed word: the largest, NV.
        assert_eq!(single(Op::FcvtWS, 0x7fc0_0000, 0, 0), (0x7fff_ffff, 16));
        assert_eq!(single(Op::FclassS, 0x8000_0001, 0, 0).0, 1 << 2);
    }

    #[test]
    fn reserved_rounding_modes_and_fs_off_are_illegal() {
        let mut fp = FpState::default();
        let mut x = [0; 32];
        let mut status = mstatus::FS;
        fp.frm = 5;
        let dynamic = fp_inst(Op::FaddS, 7);
        assert_eq!(
            execute::<true>(&dynamic, &mut fp, &mut x, &mut status),
            Err(Illegal)
        );
        // An instruction without a rounding mode ignores frm.
        let sgnj = fp_inst(Op::FsgnjS, 0);
        assert_eq!(execute::<true>(&sgnj, &mut fp, &mut x, &mut status), Ok(()));
        let mut off = 0;
        assert_eq!(
            execute::<true>(&sgnj, &mut fp, &mut x, &mut off),
            Err(Illegal)
        );
    }

    #[test]
    fn illegal_words_are_named() {
        // fadd.s ft0, ft1, ft2 (dynamic rounding).
        let text = disabled_instruction(0x0020_f053).unwrap();
        assert!(text.starts_with("fadd.s"), "{text}");
        assert_eq!(disabled_instruction(0x0000_0013), None);
        // fadd.q and fadd.h, flq, vadd.vv.
        assert!(unimplemented_extension(0x0620_f053)
            .unwrap()
            .starts_with("Q "));
        assert!(unimplemented_extension(0x0420_f053)
            .unwrap()
            .starts_with("Zfh"));
        assert!(unimplemented_extension(0x0000_4007)
            .unwrap()
            .starts_with("Q "));
        assert!(unimplemented_extension(0x0220_8057)
            .unwrap()
            .starts_with("V "));
        assert_eq!(unimplemented_extension(0x0020_f053), None);
    }

    /// A single that is not NaN-boxed reads as the canonical NaN.
    #[test]
    fn improperly_boxed_singles_are_the_canonical_nan() {
        let mut fp = FpState::default();
        fp.f[2] = 0x3f80_0000;
        fp.f[3] = box_s(0);
        let mut x = [0; 32];
        let mut status = mstatus::FS;
        execute::<true>(&fp_inst(Op::FsgnjS, 0), &mut fp, &mut x, &mut status).unwrap();
        assert_eq!(fp.f[1], box_s(0x7fc0_0000));
        assert_eq!(status & mstatus::FS, mstatus::FS);
    }
}
