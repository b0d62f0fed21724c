//! Loop detection on the example programs against the loops their C
//! sources contain, checked by hand from `programs/src/*.c` and
//! `riscv64-unknown-elf-objdump -d` of the binaries.
//!
//! At -O0 every C loop is one natural loop whose header is the condition
//! block GCC places after the body (`j cond; body: …; cond: b<cc> body`),
//! so the nest and the flags follow the source directly. The -O2 `first`
//! of nqueens is the interesting case: `safe()` is inlined (its early
//! `return 0` becomes extra exit branches) and the `continue` path is
//! duplicated into a loop of its own.

use retrace_program::{Elf, Program, RegionKind};
use std::path::Path;

/// What a test expects of one loop, outer loops first, then by header.
#[derive(Debug, PartialEq, Eq)]
struct Expect {
    /// Header offset from the function entry.
    header: Option<u64>,
    depth: u32,
    blocks: usize,
    exit_branches: usize,
    branches: u32,
    calls: u32,
    z1: bool,
    x1: bool,
    x2: bool,
}

#[allow(clippy::too_many_arguments)]
fn e(
    header: Option<u64>,
    depth: u32,
    blocks: usize,
    exit_branches: usize,
    branches: u32,
    calls: u32,
    z1: bool,
    x1: bool,
    x2: bool,
) -> Expect {
    Expect {
        header,
        depth,
        blocks,
        exit_branches,
        branches,
        calls,
        z1,
        x1,
        x2,
    }
}

fn load(name: &str) -> Program {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("programs/bin")
        .join(name);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Program::analyse(&Elf::parse(&bytes).unwrap()).unwrap()
}

/// Compares a function's loops with the expectation; returns every
/// difference (headers are compared only where the expectation has one).
fn diff(p: &Program, func: &str, want: &[Expect]) -> Vec<String> {
    let f = p.function_named(func).unwrap();
    let entry = p.function(f).entry.0;
    let nest = p.loops(f);
    let mut got: Vec<_> = nest.loops.iter().collect();
    got.sort_by_key(|l| (l.depth, l.header_addr));
    let mut out = Vec::new();
    if got.len() != want.len() {
        out.push(format!(
            "{func}: {} loops, expected {}",
            got.len(),
            want.len()
        ));
    }
    for (l, w) in got.iter().zip(want) {
        let g = Expect {
            header: w.header.map(|_| l.header_addr.0 - entry),
            depth: l.depth,
            blocks: l.body.len(),
            exit_branches: l.exit_branches.len(),
            branches: l.branches,
            calls: l.calls,
            z1: l.z1,
            x1: l.x1,
            x2: l.x2,
        };
        if &g != w {
            out.push(format!(
                "{func}: loop at +{:#x}: got {g:?}, expected {w:?}",
                l.header_addr.0 - entry
            ));
        }
    }
    out
}

/// crc32 at -O0, for one XLEN. Headers are given for RV32 only (the RV64
/// code has other offsets, the same shape).
fn crc32_o0(name: &str, rv32: bool) -> Vec<String> {
    let p = load(name);
    let h = |x: u64| rv32.then_some(x);
    let mut bad = Vec::new();
    // make_table: for i < 256 { for k < 8 { c = (c & 1) ? … : … } }.
    // Outer: its test, the inner test and the ?: — 3 branches, one exit.
    bad.extend(diff(
        &p,
        "make_table",
        &[
            e(h(0x70), 1, 8, 1, 3, 0, false, true, true),
            e(h(0x4a), 2, 5, 1, 2, 0, false, true, true),
        ],
    ));
    // crc_bitwise: for i < n { for k < 8 { branch-free body } }.
    bad.extend(diff(
        &p,
        "crc_bitwise",
        &[
            e(h(0x7a), 1, 5, 1, 2, 0, false, true, true),
            e(h(0x66), 2, 2, 1, 1, 0, true, true, true),
        ],
    ));
    // crc_table: while (n--) { branch-free body }.
    bad.extend(diff(
        &p,
        "crc_table",
        &[e(h(0x52), 1, 2, 1, 1, 0, true, true, true)],
    ));
    // adler32: while (n > 0) { min(); while (block--) { … } mod; mod }.
    bad.extend(diff(
        &p,
        "adler32",
        &[
            e(h(0x9c), 1, 7, 1, 3, 0, false, true, true),
            e(h(0x6e), 2, 2, 1, 1, 0, true, true, true),
        ],
    ));
    // If-else regions: the ?: in make_table's inner loop, the min() in
    // adler32's outer loop.
    let f = p.function_named("make_table").unwrap();
    let r = p.regions(f);
    if !(r.len() == 1 && r[0].kind == RegionKind::IfThenElse && r[0].in_loop.is_some()) {
        bad.push(format!("{name}: make_table regions {r:?}"));
    }
    let f = p.function_named("adler32").unwrap();
    let r = p.regions(f);
    if !(r.len() == 1 && r[0].kind == RegionKind::IfThen && r[0].in_loop.is_some()) {
        bad.push(format!("{name}: adler32 regions {r:?}"));
    }
    bad
}

#[test]
fn crc32_o0_loops_match_the_source() {
    let mut bad = crc32_o0("crc32-rv32-O0.elf", true);
    bad.extend(crc32_o0("crc32-rv64-O0.elf", false));
    assert!(bad.is_empty(), "\n{}", bad.join("\n"));
}

#[test]
fn nqueens_o2_loops_and_recursion() {
    let p = load("nqueens-rv32-O2.elf");
    let mut bad = Vec::new();
    // count_bits: while (free_) { … count_bits(…) } — one exit, but a call.
    bad.extend(diff(
        &p,
        "count_bits",
        &[e(Some(0x2e), 1, 2, 1, 1, 1, false, true, true)],
    ));
    // first: for col { ++tries; if (!safe) continue; …; if (first(…)) return 1; }
    // L0 (the for loop): exits at col == n (twice, once per copy of the
    // increment) and at `return 1`. L1: the `continue` copy. L2: safe()'s
    // loop, whose `return 0`s are three more exits.
    bad.extend(diff(
        &p,
        "first",
        &[
            e(Some(0x2c), 1, 11, 3, 8, 1, false, false, false),
            e(Some(0x36), 2, 7, 2, 5, 0, false, false, false),
            e(Some(0x48), 3, 4, 4, 4, 0, false, false, true),
        ],
    ));
    for f in ["count_bits", "first"] {
        let id = p.function_named(f).unwrap();
        if !p.call_graph.recursive[id.index()] {
            bad.push(format!("{f} is not marked recursive"));
        }
    }
    let main = p.function_named("main").unwrap();
    if p.call_graph.recursive[main.index()] {
        bad.push("main is marked recursive".into());
    }
    assert!(bad.is_empty(), "\n{}", bad.join("\n"));
}
