//! Immediate layouts as data.
//!
//! RISC-V scatters immediate bits over the encoding differently in every
//! format. Each layout here is written once, as a table of segments copied
//! straight from the ISA manual's format diagrams, and the same table drives
//! both [`gather`] (decoding) and [`scatter`] (encoding), so the two
//! directions cannot disagree. The loops run over constant tables and are
//! unrolled by the compiler into the usual shift-and-mask sequences.

/// One contiguous run of immediate bits: `width` bits starting at bit `at`
/// of the encoding hold immediate bits `imm .. imm + width`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Seg {
    pub at: u8,
    pub width: u8,
    pub imm: u8,
}

const fn s(at: u8, width: u8, imm: u8) -> Seg {
    Seg { at, width, imm }
}

/// A complete immediate layout: its segments and whether the top immediate
/// bit is a sign bit.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Layout {
    pub segs: &'static [Seg],
    pub signed: bool,
}

impl Layout {
    /// Number of immediate bits (one past the highest bit the layout holds).
    pub const fn bits(&self) -> u32 {
        let mut top = 0;
        let mut i = 0;
        while i < self.segs.len() {
            let end = (self.segs[i].imm + self.segs[i].width) as u32;
            if end > top {
                top = end;
            }
            i += 1;
        }
        top
    }

    /// Mask of the immediate bits this layout can represent (e.g. the low
    /// bit of a branch offset is not representable).
    pub const fn imm_mask(&self) -> u32 {
        let mut m = 0u32;
        let mut i = 0;
        while i < self.segs.len() {
            m |= ((1u32 << self.segs[i].width) - 1) << self.segs[i].imm;
            i += 1;
        }
        m
    }

    /// Whether `imm` can be encoded exactly with this layout.
    pub fn fits(&self, imm: i32) -> bool {
        let bits = self.bits();
        let in_range = if self.signed {
            let lo = -(1i64 << (bits - 1));
            let hi = (1i64 << (bits - 1)) - 1;
            (lo..=hi).contains(&(imm as i64))
        } else {
            imm >= 0 && (imm as i64) < (1i64 << bits)
        };
        let width_mask = if bits >= 32 {
            u32::MAX
        } else {
            (1u32 << bits) - 1
        };
        let holes = (imm as u32) & !self.imm_mask() & width_mask;
        in_range && holes == 0
    }
}

/// Collects the immediate of `layout` from `word`, sign-extending if the
/// layout is signed.
#[inline(always)]
pub(crate) fn gather(word: u32, layout: &Layout) -> i32 {
    let mut v = 0u32;
    for seg in layout.segs {
        v |= ((word >> seg.at) & ((1u32 << seg.width) - 1)) << seg.imm;
    }
    if layout.signed {
        let shift = 32 - layout.bits();
        ((v << shift) as i32) >> shift
    } else {
        v as i32
    }
}

/// Places `imm` into the bit positions of `layout`. The caller checks
/// [`Layout::fits`] first; bits the layout cannot hold are dropped.
#[inline]
pub(crate) fn scatter(imm: i32, layout: &Layout) -> u32 {
    let imm = imm as u32;
    let mut w = 0u32;
    for seg in layout.segs {
        w |= ((imm >> seg.imm) & ((1u32 << seg.width) - 1)) << seg.at;
    }
    w
}

macro_rules! layouts {
    ($( $(#[$m:meta])* $name:ident = $signed:literal [ $( ($at:literal, $w:literal, $imm:literal) ),* ] ; )*) => {
        $( $(#[$m])* pub(crate) const $name: Layout = Layout { segs: &[ $( s($at, $w, $imm) ),* ], signed: $signed }; )*
    };
}

layouts! {
    // ---- 32-bit formats (ISA manual vol. I, "Base instruction formats").
    /// I-type: imm[11:0] = inst[31:20].
    I = true [(20, 12, 0)];
    /// S-type: imm[11:5] = inst[31:25], imm[4:0] = inst[11:7].
    S = true [(25, 7, 5), (7, 5, 0)];
    /// B-type: imm[12|10:5] = inst[31:25], imm[4:1|11] = inst[11:7].
    B = true [(31, 1, 12), (25, 6, 5), (8, 4, 1), (7, 1, 11)];
    /// U-type: imm[31:12] = inst[31:12].
    U = true [(12, 20, 12)];
    /// J-type: imm[20|10:1|11|19:12] = inst[31:12].
    J = true [(31, 1, 20), (21, 10, 1), (20, 1, 11), (12, 8, 12)];
    /// CSR number: inst[31:20], unsigned.
    CSR = false [(20, 12, 0)];

    // ---- 16-bit formats (ISA manual vol. I, "C" chapter, per instruction).
    /// c.addi / c.li / c.andi / c.addiw: imm[5] = inst[12], imm[4:0] = inst[6:2].
    CI6 = true [(12, 1, 5), (2, 5, 0)];
    /// c.slli / c.srli / c.srai: shamt[5] = inst[12], shamt[4:0] = inst[6:2].
    CSHAMT = false [(12, 1, 5), (2, 5, 0)];
    /// c.lui: imm[17] = inst[12], imm[16:12] = inst[6:2].
    CLUI = true [(12, 1, 17), (2, 5, 12)];
    /// c.addi16sp: imm[9] = inst[12], imm[4|6|8:7|5] = inst[6:2].
    CADDI16SP = true [(12, 1, 9), (6, 1, 4), (5, 1, 6), (3, 2, 7), (2, 1, 5)];
    /// c.addi4spn: nzuimm[5:4|9:6|2|3] = inst[12:5].
    CADDI4SPN = false [(11, 2, 4), (7, 4, 6), (6, 1, 2), (5, 1, 3)];
    /// c.lw / c.sw: uimm[5:3] = inst[12:10], uimm[2|6] = inst[6:5].
    CLW = false [(10, 3, 3), (6, 1, 2), (5, 1, 6)];
    /// c.ld / c.sd: uimm[5:3] = inst[12:10], uimm[7:6] = inst[6:5].
    CLD = false [(10, 3, 3), (5, 2, 6)];
    /// c.lwsp: uimm[5] = inst[12], uimm[4:2|7:6] = inst[6:2].
    CLWSP = false [(12, 1, 5), (4, 3, 2), (2, 2, 6)];
    /// c.ldsp: uimm[5] = inst[12], uimm[4:3|8:6] = inst[6:2].
    CLDSP = false [(12, 1, 5), (5, 2, 3), (2, 3, 6)];
    /// c.swsp: uimm[5:2|7:6] = inst[12:7].
    CSWSP = false [(9, 4, 2), (7, 2, 6)];
    /// c.sdsp: uimm[5:3|8:6] = inst[12:7].
    CSDSP = false [(10, 3, 3), (7, 3, 6)];
    /// c.j / c.jal: offset[11|4|9:8|10|6|7|3:1|5] = inst[12:2].
    CJ = true [(12, 1, 11), (11, 1, 4), (9, 2, 8), (8, 1, 10), (7, 1, 6), (6, 1, 7), (3, 3, 1), (2, 1, 5)];
    /// c.beqz / c.bnez: offset[8|4:3] = inst[12:10], offset[7:6|2:1|5] = inst[6:2].
    CB = true [(12, 1, 8), (10, 2, 3), (5, 2, 6), (3, 2, 1), (2, 1, 5)];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_hold_the_documented_ranges() {
        assert_eq!((I.bits(), B.bits(), J.bits(), U.bits()), (12, 13, 21, 32));
        assert!(B.fits(-4096) && B.fits(4094) && !B.fits(4096) && !B.fits(3));
        assert!(CADDI4SPN.fits(1020) && !CADDI4SPN.fits(1024) && !CADDI4SPN.fits(2));
        assert!(CADDI16SP.fits(-512) && CADDI16SP.fits(496) && !CADDI16SP.fits(8));
        assert!(U.fits(i32::MIN) && !U.fits(1));
    }

    #[test]
    fn scatter_inverts_gather_on_every_layout() {
        for l in [
            I, S, B, U, J, CSR, CI6, CSHAMT, CLUI, CADDI16SP, CADDI4SPN, CLW, CLD, CLWSP, CLDSP,
            CSWSP, CSDSP, CJ, CB,
        ] {
            let mut seen_bits = 0u32;
            for seg in l.segs {
                seen_bits |= ((1u32 << seg.width) - 1) << seg.at;
            }
            // every pattern over the layout's own bits survives the round trip
            for w in [0u32, u32::MAX, 0x5555_5555, 0xaaaa_aaaa, 0x1234_5678] {
                let w = w & seen_bits;
                let imm = gather(w, &l);
                assert!(l.fits(imm), "{l:?} {imm}");
                assert_eq!(scatter(imm, &l), w, "{l:?}");
            }
        }
    }
}
