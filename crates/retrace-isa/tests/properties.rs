//! Properties of the decoder and encoder over arbitrary words.
//!
//! The round trip is exact: for every word `w` that decodes,
//! `encode(decode(w)) == w`. The only bits that are no part of an
//! instruction are the upper 16 bits of a word holding a compressed
//! instruction. Fields the ISA tells implementations to ignore (`rd`/`rs1`/
//! reserved `fm` of `fence`, `rd`/`rs1`/`imm` of `fence.i`) are kept in the
//! decoded `Inst`, so they round-trip too instead of being don't-cares.

use proptest::prelude::*;
use retrace_isa::{decode, disasm, encode, Op, Xlen};

const XLENS: [Xlen; 2] = [Xlen::Rv32, Xlen::Rv64];

/// The major opcodes of the extensions retrace decodes: a random word with
/// one of these in its low 7 bits decodes far more often than a random word.
const OPCODES: &[u32] = &[
    0x03, 0x0f, 0x13, 0x17, 0x1b, 0x23, 0x2f, 0x33, 0x37, 0x3b, 0x63, 0x67, 0x6f, 0x73,
    // F and D: LOAD-FP, STORE-FP, the four FMA opcodes, OP-FP.
    0x07, 0x27, 0x43, 0x47, 0x4b, 0x4f, 0x53,
];

fn word() -> impl Strategy<Value = u32> {
    prop_oneof![
        any::<u32>(),
        (any::<u32>(), prop::sample::select(OPCODES)).prop_map(|(w, op)| (w & !0x7f) | op),
        // compressed words with junk in the upper half
        any::<u32>().prop_map(|w| if w & 3 == 3 { w & !1 } else { w }),
    ]
}

/// Checks the round trip for one word, returning a description on failure.
fn roundtrip(w: u32, xlen: Xlen) -> Result<(), String> {
    let Ok(inst) = decode(w, xlen) else {
        return Ok(());
    };
    let expected = if inst.len == 2 { w & 0xffff } else { w };
    match encode(&inst, xlen) {
        Ok(e) if e == expected => match decode(e, xlen) {
            Ok(again) if again == inst => Ok(()),
            other => Err(format!("{w:#x} {xlen:?}: {inst:?} re-decoded as {other:?}")),
        },
        other => Err(format!("{w:#x} {xlen:?}: {inst:?} encoded as {other:x?}")),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(50_000))]

    #[test]
    fn decode_never_panics(w in any::<u32>()) {
        for xlen in XLENS {
            if let Ok(inst) = decode(w, xlen) {
                // printing is part of "handles any word"
                prop_assert!(!disasm(&inst, 0x8000_0000, xlen).to_string().is_empty());
            }
        }
    }

    #[test]
    fn encode_decode_roundtrip(w in word()) {
        for xlen in XLENS {
            if let Err(e) = roundtrip(w, xlen) {
                prop_assert!(false, "{}", e);
            }
        }
    }
}

/// Every F/D operation on the FMA and OP-FP opcodes, with every register
/// in every field and every rounding mode: the encodings the random words
/// above reach rarely (OP-FP rows need an exact `funct7`/`rs2`).
#[test]
fn every_fp_operation_roundtrips() {
    let mut failures = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    let bases: Vec<u32> = (0..32u32)
        .flat_map(|f5| (0..4u32).map(move |fmt| f5 << 27 | fmt << 25 | 0x53))
        .chain((0..16u32).map(|k| 0x43 | (k & 3) << 2 | (k >> 2) << 25))
        .collect();
    for base in bases {
        for rm in 0..8u32 {
            for r in 0..32u32 {
                // Vary rs2 both as a register and as an operation selector.
                for rs2 in [0, 1, 2, 3, r] {
                    let w = base | r << 7 | rm << 12 | (31 - r) << 15 | rs2 << 20;
                    let w = if base & 0x7f != 0x53 { w | r << 27 } else { w };
                    for xlen in XLENS {
                        if let Ok(i) = decode(w, xlen) {
                            seen.insert(i.op);
                        }
                        if let Err(e) = roundtrip(w, xlen) {
                            failures.push(e);
                        }
                    }
                }
            }
        }
    }
    let missed: Vec<Op> = Op::ALL
        .iter()
        .copied()
        .filter(|op| op.fp_extension().is_some() && op.mem().is_none() && !seen.contains(op))
        .collect();
    assert!(missed.is_empty(), "never decoded: {missed:?}");
    assert!(
        failures.is_empty(),
        "{} failures, first 50:\n{}",
        failures.len(),
        failures[..failures.len().min(50)].join("\n")
    );
}

/// All 2^16 halfwords, for both XLENs: the compressed space is small enough
/// to check completely, and it is where the encoder must choose a form.
#[test]
fn every_compressed_word_roundtrips() {
    let mut failures = Vec::new();
    let mut decoded = 0;
    for h in 0..=0xffffu32 {
        if h & 3 == 3 {
            continue;
        }
        for xlen in XLENS {
            decoded += decode(h, xlen).is_ok() as usize;
            if let Err(e) = roundtrip(h | 0xabcd_0000, xlen) {
                failures.push(e);
            }
        }
    }
    assert!(decoded > 60_000, "only {decoded} compressed words decoded");
    assert!(
        failures.is_empty(),
        "{} failures, first 50:\n{}",
        failures.len(),
        failures[..failures.len().min(50)].join("\n")
    );
}
