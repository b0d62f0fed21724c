//! Loop detection on the example programs against the loops their C
//! sources contain, checked by hand from `programs/src/*.c` and
//! `riscv64-unknown-elf-objdump -d` of the binaries.
//!
//! The loops, if-else regions and recursion flags of the functions below
//! are rendered one line each and compared with `tests/golden/loops/`;
//! `RETRACE_BLESS=1` rewrites those files. A changed file is reviewed
//! against the reasoning here, which says why each number is what it is.
//!
//! At -O0 every C loop is one natural loop whose header is the condition
//! block GCC places after the body (`j cond; body: …; cond: b<cc> body`),
//! so the nest and the flags follow the source directly. The -O2 `first`
//! of nqueens is the interesting case: `safe()` is inlined (its early
//! `return 0` becomes extra exit branches) and the `continue` path is
//! duplicated into a loop of its own.

use retrace_program::{Elf, Program};
use retrace_testkit::golden;
use retrace_testkit::programs::{example_program, root};
use std::fmt::Write as _;

fn load(name: &str) -> Program {
    Program::analyse(&Elf::parse(&example_program(name).bytes()).unwrap()).unwrap()
}

/// A function's loops, outer loops first, then by header: header offset
/// from the function entry, depth, blocks, exit branches, branches, calls
/// and the Z1/X1/X2 flags.
fn loops(out: &mut String, p: &Program, func: &str) {
    let f = p.function_named(func).unwrap();
    let entry = p.function(f).entry.0;
    let nest = p.loops(f);
    let mut got: Vec<_> = nest.loops.iter().collect();
    got.sort_by_key(|l| (l.depth, l.header_addr));
    writeln!(out, "{func}: {} loops", got.len()).unwrap();
    for l in got {
        writeln!(
            out,
            "  loop +{:#x}: depth {}, {} blocks, {} exit branches, {} branches, {} calls, z1 {}, x1 {}, x2 {}",
            l.header_addr.0 - entry,
            l.depth,
            l.body.len(),
            l.exit_branches.len(),
            l.branches,
            l.calls,
            l.z1,
            l.x1,
            l.x2
        )
        .unwrap();
    }
}

/// A function's if-else regions: kind, and whether inside a loop.
fn regions(out: &mut String, p: &Program, func: &str) {
    let f = p.function_named(func).unwrap();
    let r = p.regions(f);
    writeln!(out, "{func}: {} regions", r.len()).unwrap();
    for r in r.iter() {
        writeln!(out, "  {:?}, in a loop: {}", r.kind, r.in_loop.is_some()).unwrap();
    }
}

fn recursive(out: &mut String, p: &Program, func: &str) {
    let id = p.function_named(func).unwrap();
    writeln!(
        out,
        "{func}: recursive {}",
        p.call_graph.recursive[id.index()]
    )
    .unwrap();
}

fn check(name: &str, out: &str) {
    golden::assert(&root().join(format!("tests/golden/loops/{name}.txt")), out);
}

/// crc32 at -O0, for both XLENs (the RV64 code has other offsets, the
/// same shape).
///
/// - make_table: for i < 256 { for k < 8 { c = (c & 1) ? … : … } }.
///   Outer: its test, the inner test and the ?: — 3 branches, one exit;
///   inner: 2 branches (its test and the ?:).
/// - crc_bitwise: for i < n { for k < 8 { branch-free body } }: the inner
///   loop is Z1 (one branch, no call).
/// - crc_table: while (n--) { branch-free body }: one Z1 loop.
/// - adler32: while (n > 0) { min(); while (block--) { … } mod; mod }:
///   outer 3 branches, inner Z1.
/// - If-else regions: the ?: in make_table's inner loop (if-then-else),
///   the min() in adler32's outer loop (if-then).
#[test]
fn crc32_o0_loops_match_the_source() {
    for name in ["crc32-rv32-O0", "crc32-rv64-O0"] {
        let p = load(name);
        let mut out = String::new();
        for f in ["make_table", "crc_bitwise", "crc_table", "adler32"] {
            loops(&mut out, &p, f);
        }
        for f in ["make_table", "adler32"] {
            regions(&mut out, &p, f);
        }
        check(name, &out);
    }
}

/// nqueens at -O2.
///
/// - count_bits: while (free_) { … count_bits(…) } — one exit, but a call.
/// - first: for col { ++tries; if (!safe) continue; …; if (first(…)) return 1; }
///   L0 (the for loop): exits at col == n (twice, once per copy of the
///   increment) and at `return 1`. L1: the `continue` copy. L2: safe()'s
///   loop, whose `return 0`s are three more exits.
/// - count_bits and first are recursive, main is not.
#[test]
fn nqueens_o2_loops_and_recursion() {
    let p = load("nqueens-rv32-O2");
    let mut out = String::new();
    for f in ["count_bits", "first"] {
        loops(&mut out, &p, f);
    }
    for f in ["count_bits", "first", "main"] {
        recursive(&mut out, &p, f);
    }
    check("nqueens-rv32-O2", &out);
}
