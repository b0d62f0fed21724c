//! The F and D extensions as data: one table of every operation on the
//! FMA (`MADD`…`NMADD`) and `OP-FP` major opcodes, with its operand shape,
//! the bits that identify it and which register file its `rd`/`rs1` name.
//!
//! The decoder finds a word's row by `word & shape.mask() == base`; the
//! encoder reads the same row back, so the two directions cannot disagree.
//! Double-precision rows are generated from the single-precision ones
//! (`fmt` = `inst[26:25]` is 0 for S and 1 for D) except for the two
//! conversions between the formats. The loads and stores (`flw`, `fsd` …)
//! use the ordinary I/S formats and live in the main decoder and encoder.

use crate::inst::Op;

/// Where the fields of an F/D operation go (beyond `opcode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    /// `rd`, `rs1`, `rs2`, rounding mode in `funct3`: `fadd.s`.
    Rm3,
    /// `rd`, `rs1`, rounding mode; `rs2` is part of the operation:
    /// `fsqrt.s`, `fcvt.*`.
    Rm2,
    /// `rd`, `rs1`, `rs2`; `funct3` is part of the operation: `fsgnj.s`,
    /// `feq.d`, `fmin.s`.
    R3,
    /// `rd`, `rs1`; `rs2` and `funct3` are part of the operation:
    /// `fmv.x.w`, `fclass.d`.
    R2,
    /// `rd`, `rs1`, `rs2`, `rs3` (`inst[31:27]`), rounding mode: `fmadd.s`.
    Fma,
}

impl Shape {
    /// The bits that identify the operation (the rest are fields).
    pub(crate) const fn mask(self) -> u32 {
        match self {
            Shape::Rm3 => 0xfe00_007f,
            Shape::Rm2 => 0xfff0_007f,
            Shape::R3 => 0xfe00_707f,
            Shape::R2 => 0xfff0_707f,
            Shape::Fma => 0x0600_007f,
        }
    }

    /// Whether `funct3` holds a rounding mode (kept in `Inst::imm`).
    pub(crate) const fn has_rm(self) -> bool {
        matches!(self, Shape::Rm3 | Shape::Rm2 | Shape::Fma)
    }

    /// Whether `rs2` is an operand.
    pub(crate) const fn has_rs2(self) -> bool {
        matches!(self, Shape::Rm3 | Shape::R3 | Shape::Fma)
    }
}

/// Which register files `rd` and `rs1` name (`rs2` and `rs3` are always FP
/// registers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Files {
    /// Both FP.
    Fp,
    /// `rd` integer, `rs1` FP: `fcvt.w.s`, `fmv.x.w`, `feq.s`, `fclass.s`.
    ToInt,
    /// `rd` FP, `rs1` integer: `fcvt.s.w`, `fmv.w.x`.
    FromInt,
}

/// One F/D operation of the table.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Entry {
    pub op: Op,
    pub shape: Shape,
    pub files: Files,
    /// The identifying bits (`word & shape.mask() == base`).
    pub base: u32,
}

/// The single-precision row and its double-precision twin (`base | 1 << 25`).
const PAIRS: [(Op, Op, Shape, Files, u32); 30] = {
    use Files::*;
    use Op::*;
    use Shape::*;
    [
        (FmaddS, FmaddD, Fma, Fp, 0x0000_0043),
        (FmsubS, FmsubD, Fma, Fp, 0x0000_0047),
        (FnmsubS, FnmsubD, Fma, Fp, 0x0000_004b),
        (FnmaddS, FnmaddD, Fma, Fp, 0x0000_004f),
        (FaddS, FaddD, Rm3, Fp, 0x0000_0053),
        (FsubS, FsubD, Rm3, Fp, 0x0800_0053),
        (FmulS, FmulD, Rm3, Fp, 0x1000_0053),
        (FdivS, FdivD, Rm3, Fp, 0x1800_0053),
        (FsqrtS, FsqrtD, Rm2, Fp, 0x5800_0053),
        (FsgnjS, FsgnjD, R3, Fp, 0x2000_0053),
        (FsgnjnS, FsgnjnD, R3, Fp, 0x2000_1053),
        (FsgnjxS, FsgnjxD, R3, Fp, 0x2000_2053),
        (FminS, FminD, R3, Fp, 0x2800_0053),
        (FmaxS, FmaxD, R3, Fp, 0x2800_1053),
        (FcvtWS, FcvtWD, Rm2, ToInt, 0xc000_0053),
        (FcvtWuS, FcvtWuD, Rm2, ToInt, 0xc010_0053),
        (FcvtLS, FcvtLD, Rm2, ToInt, 0xc020_0053),
        (FcvtLuS, FcvtLuD, Rm2, ToInt, 0xc030_0053),
        (FcvtSW, FcvtDW, Rm2, FromInt, 0xd000_0053),
        (FcvtSWu, FcvtDWu, Rm2, FromInt, 0xd010_0053),
        (FcvtSL, FcvtDL, Rm2, FromInt, 0xd020_0053),
        (FcvtSLu, FcvtDLu, Rm2, FromInt, 0xd030_0053),
        (FmvXW, FmvXD, R2, ToInt, 0xe000_0053),
        (FclassS, FclassD, R2, ToInt, 0xe000_1053),
        (FeqS, FeqD, R3, ToInt, 0xa000_2053),
        (FltS, FltD, R3, ToInt, 0xa000_1053),
        (FleS, FleD, R3, ToInt, 0xa000_0053),
        (FmvWX, FmvDX, R2, FromInt, 0xf000_0053),
        // Conversions between the formats have no twin; see `TABLE`.
        (FcvtSD, FcvtSD, Rm2, Fp, 0x4010_0053),
        (FcvtDS, FcvtDS, Rm2, Fp, 0x4200_0053),
    ]
};

/// Rows of [`PAIRS`] without a double-precision twin (the last two).
const SINGLES: usize = 2;

/// Every F/D operation on the FMA and OP-FP opcodes.
pub(crate) const TABLE: [Entry; 2 * PAIRS.len() - SINGLES] = {
    let mut t = [Entry {
        op: Op::FaddS,
        shape: Shape::Rm3,
        files: Files::Fp,
        base: 0,
    }; 2 * PAIRS.len() - SINGLES];
    let mut i = 0;
    let mut n = 0;
    while i < PAIRS.len() {
        let (s, d, shape, files, base) = PAIRS[i];
        t[n] = Entry {
            op: s,
            shape,
            files,
            base,
        };
        n += 1;
        if i < PAIRS.len() - SINGLES {
            t[n] = Entry {
                op: d,
                shape,
                files,
                base: base | 1 << 25,
            };
            n += 1;
        }
        i += 1;
    }
    t
};

/// The row of an F/D operation (`None` for loads, stores and integer ops).
pub(crate) fn entry(op: Op) -> Option<&'static Entry> {
    TABLE.iter().find(|e| e.op == op)
}

/// The row a 32-bit word on the FMA or OP-FP opcodes belongs to.
pub(crate) fn lookup(word: u32) -> Option<&'static Entry> {
    TABLE.iter().find(|e| word & e.shape.mask() == e.base)
}

/// Whether a rounding-mode field value is one the ISA defines (5 and 6
/// are reserved).
pub(crate) const fn valid_rm(rm: u32) -> bool {
    rm != 5 && rm != 6
}

/// The register files an F/D operation's fields name, loads and stores
/// included: `(rd, rs1, rs2 is FP, rs3 is FP)`, where `None` means the
/// field is not an operand and `Some(true)` an FP register.
pub(crate) fn operands(op: Op) -> Option<(Option<bool>, Option<bool>, bool, bool)> {
    match op {
        Op::Flw | Op::Fld => Some((Some(true), Some(false), false, false)),
        Op::Fsw | Op::Fsd => Some((None, Some(false), true, false)),
        _ => entry(op).map(|e| {
            let (rd, rs1) = match e.files {
                Files::Fp => (true, true),
                Files::ToInt => (false, true),
                Files::FromInt => (true, false),
            };
            (
                Some(rd),
                Some(rs1),
                e.shape.has_rs2(),
                e.shape == Shape::Fma,
            )
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every F/D operation (by class) has exactly one row or is a load or
    /// store; no two rows can match the same word.
    #[test]
    fn table_covers_every_fp_operation_once_and_rows_are_disjoint() {
        for &op in Op::ALL {
            let rows = TABLE.iter().filter(|e| e.op == op).count();
            let load_store = matches!(op, Op::Flw | Op::Fsw | Op::Fld | Op::Fsd);
            let want = usize::from(op.class().is_fp() && !load_store);
            assert_eq!(rows, want, "{op:?}");
        }
        for a in &TABLE {
            for b in &TABLE {
                let common = a.shape.mask() & b.shape.mask();
                let overlap = a.base & common == b.base & common;
                assert!(a.op == b.op || !overlap, "{:?} and {:?}", a.op, b.op);
            }
        }
    }
}
