//! The analysis on the example programs in `programs/bin/` (built by
//! `programs/build.sh` and committed): stripped files by recursive descent,
//! and randomly mutated code that must never make the analysis panic or
//! produce an inconsistent table. (Every example analysing consistently is
//! `every_program.rs`, one trial per program.)

mod common;

use common::inconsistencies;
use proptest::prelude::*;
use retrace_program::{Addr, Code, Elf, Program};
use retrace_testkit::programs::example_program;

fn bin(name: &str) -> Elf {
    Elf::parse(&example_program(name).bytes()).unwrap()
}

#[test]
fn stripped_file_is_analysed_by_recursive_descent() {
    let elf = bin("crc32-rv32-O2.elf");
    let full = Program::analyse(&elf).unwrap();
    let stripped = Program::from_code(Code::from_elf(&elf).unwrap(), Addr(elf.entry), &[]).unwrap();
    assert!(inconsistencies(&stripped.table).is_empty());
    // Every function the run can reach by direct calls is found, `main`
    // among them, and every PP start of the stripped table is one of the
    // full table's (which also starts PPs at symbols nothing calls).
    let main = elf.symbol_named("main").unwrap().addr;
    assert!(stripped.function_at(Addr(main)).is_some());
    for (_, p) in stripped.table.iter() {
        assert!(
            full.table.lookup(p.start).is_some(),
            "{} only when stripped",
            p.start
        );
    }
    assert!(stripped.table.len() * 2 > full.table.len());
}

/// The code sections of one example, as `(address, bytes)`.
fn sections(name: &str) -> (Elf, Vec<(Addr, Vec<u8>)>) {
    let elf = bin(name);
    let s = elf
        .code_sections
        .iter()
        .map(|s| (Addr(s.addr), s.data.clone()))
        .collect();
    (elf, s)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn mutated_code_never_panics_and_stays_consistent(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..64),
        rv64 in any::<bool>(),
    ) {
        let (elf, mut regions) = sections(if rv64 { "crc32-rv64-O2.elf" } else { "crc32-rv32-O2.elf" });
        for (at, v) in edits {
            let k = at.index(regions.len());
            let r = &mut regions[k].1;
            let i = at.index(r.len());
            r[i] = v;
        }
        let code = Code::from_regions(elf.xlen, regions).unwrap();
        if let Ok(p) = Program::from_code(code, Addr(elf.entry), &elf.symbols) {
            let bad = inconsistencies(&p.table);
            prop_assert!(bad.is_empty(), "{:?}", bad);
            for f in 0..p.functions.len() {
                let id = retrace_program::FuncId(f as u32);
                let _ = p.loops(id);
                let _ = p.regions(id);
            }
        }
    }

    #[test]
    fn random_bytes_never_panic(
        bytes in proptest::collection::vec(any::<u8>(), 2..2048),
        rv64 in any::<bool>(),
        entry in 0u64..2048,
    ) {
        let xlen = if rv64 { retrace_isa::Xlen::Rv64 } else { retrace_isa::Xlen::Rv32 };
        let code = Code::from_regions(xlen, vec![(Addr(0x8000_0000), bytes)]).unwrap();
        if let Ok(mut p) = Program::from_code(code, Addr(0x8000_0000 + entry), &[]) {
            let bad = inconsistencies(&p.table);
            prop_assert!(bad.is_empty(), "{:?}", bad);
            for f in 0..p.functions.len() {
                let id = retrace_program::FuncId(f as u32);
                let _ = p.loops(id);
                let _ = p.regions(id);
                let _ = retrace_program::dot::function_dot(&p, id);
            }
            let _ = p.table.ensure(Addr(0x8000_0000 + (entry ^ 6)));
            prop_assert!(inconsistencies(&p.table).is_empty());
        }
    }
}

/// The table is made from what the segments load, not from the section
/// headers: a file whose executable sections claim other addresses (an
/// edited or damaged section table; the loaded bytes are unchanged) gets
/// the same table. It used to be built from the sections, so such a file
/// recorded fine and then failed to estimate for a wrong reason.
#[test]
fn code_comes_from_the_loaded_segments_not_the_section_headers() {
    let name = "crc32-rv32-O2.elf";
    let mut bytes = example_program(name).bytes();
    let original = Program::analyse(&Elf::parse(&bytes).unwrap()).unwrap();
    // ELF32: e_shoff at 0x20, e_shentsize at 0x2e, e_shnum at 0x30; a
    // section header's sh_flags at +8 and sh_addr at +12.
    let le32 = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    let le16 = |b: &[u8], at: usize| u16::from_le_bytes(b[at..at + 2].try_into().unwrap());
    let (shoff, shentsize, shnum) = (
        le32(&bytes, 0x20) as usize,
        le16(&bytes, 0x2e) as usize,
        le16(&bytes, 0x30) as usize,
    );
    let mut moved = 0;
    for i in 0..shnum {
        let sh = shoff + i * shentsize;
        const SHF_EXECINSTR: u32 = 4;
        if le32(&bytes, sh + 8) & SHF_EXECINSTR != 0 {
            let addr = le32(&bytes, sh + 12) + 0x10_0000;
            bytes[sh + 12..sh + 16].copy_from_slice(&addr.to_le_bytes());
            moved += 1;
        }
    }
    assert!(moved > 0);
    let elf = Elf::parse(&bytes).unwrap();
    assert_ne!(elf.code_sections[0].addr, bin(name).code_sections[0].addr);
    let edited = Program::analyse(&elf).unwrap();
    assert_eq!(edited.table.len(), original.table.len());
    assert!(edited.table.lookup(Addr(elf.entry)).is_some());
    for (_, p) in original.table.iter() {
        assert!(edited.table.lookup(p.start).is_some(), "{} lost", p.start);
    }
}
