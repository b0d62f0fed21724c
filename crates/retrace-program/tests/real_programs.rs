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
