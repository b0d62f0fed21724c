//! The partial-program table on small hand-assembled programs: start and
//! end rules, successors, paths through direct jumps, semihosting, run-time
//! extension, loops and the checker.

mod common;

use common::*;
use retrace_program::{Addr, Checker, End, Mismatch, ProgramError, StartKind, TripCount, Warning};

/// ```text
/// 0x1000  li   a0, 10
/// 0x1004  addi a0, a0, -1      <- loop
/// 0x1008  bnez a0, 0x1004
/// 0x100c  jal  ra, 0x1018      call f
/// 0x1010  j    0x1010          spin
/// 0x1014  nop
/// 0x1018  ret                  f
/// ```
fn counted_loop() -> Vec<u32> {
    vec![
        addi(A0, 0, 10),
        addi(A0, A0, -1),
        bne(A0, 0, -4),
        jal(RA, 12),
        jal(0, 0),
        NOP,
        RET,
    ]
}

#[test]
fn loop_call_and_spin_make_the_expected_table() {
    let p = analyse(&counted_loop(), &[]);
    let t = &p.table;
    assert!(inconsistencies(t).is_empty(), "{:?}", inconsistencies(t));
    let id = |a: u64| {
        t.lookup(Addr(a))
            .unwrap_or_else(|| panic!("no PP at {a:#x}"))
    };
    let entry = t.get(id(0x1000));
    assert!(entry.starts.contains(StartKind::FunctionEntry));
    assert_eq!(entry.len, 3);
    assert_eq!(
        entry.end,
        End::Branch {
            taken: Some(id(0x1004)),
            not_taken: Some(id(0x100c))
        }
    );
    let body = t.get(id(0x1004));
    assert!(body.starts.contains(StartKind::Taken));
    assert_eq!((body.len, body.last), (2, Addr(0x1008)));
    assert_eq!(
        t.get(id(0x100c)).end,
        End::Call {
            target: Some(id(0x1018)),
            ret: Some(id(0x1010))
        }
    );
    assert!(t.get(id(0x1010)).starts.contains(StartKind::ReturnPoint));
    assert_eq!(t.get(id(0x1010)).end, End::Jump { target: id(0x1010) });
    assert_eq!(t.get(id(0x1018)).end, End::Return);
    // Nothing starts at the unreachable nop.
    assert_eq!(t.lookup(Addr(0x1014)), None);
    assert_eq!(t.len(), 5);
    let pcs: Vec<u64> = t.insts(id(0x1000)).map(|(pc, _)| pc.0).collect();
    assert_eq!(pcs, vec![0x1000, 0x1004, 0x1008]);
    // Stripped: the entry and the call target are the functions.
    let names: Vec<&str> = p.functions.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, vec!["fn_1000", "fn_1018"]);
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
}

#[test]
fn counted_loop_is_z1_with_a_constant_trip_count() {
    let p = analyse(&counted_loop(), &[]);
    let f = p.function_at(Addr(0x1000)).unwrap();
    let nest = p.loops(f);
    // The counted loop and the spin loop.
    assert_eq!(nest.loops.len(), 2, "{nest:?}");
    let l = nest
        .loops
        .iter()
        .find(|l| l.header_addr == Addr(0x1004))
        .unwrap();
    assert!(l.z1 && l.x1 && l.x2);
    assert_eq!(l.exit_branches, vec![Addr(0x1008)]);
    let trip = l.trip.unwrap();
    assert_eq!(trip.count, TripCount::Constant);
    let spin = nest
        .loops
        .iter()
        .find(|l| l.header_addr == Addr(0x1010))
        .unwrap();
    // No way out: not X1 (it has no continue test at all).
    assert!(!spin.x1 && !spin.z1);
    assert!(spin.exit_branches.is_empty());
}

#[test]
fn a_path_runs_through_direct_jumps_including_non_link_jal() {
    // 0x1000 j 0x1008; 0x1004 nop; 0x1008 jal a0, 0x1010; 0x100c nop;
    // 0x1010 ret
    let p = analyse(&[jal(0, 8), NOP, jal(A0, 8), NOP, RET], &[]);
    let t = &p.table;
    let id = t.lookup(Addr(0x1000)).unwrap();
    let pcs: Vec<u64> = t.insts(id).map(|(pc, _)| pc.0).collect();
    assert_eq!(pcs, vec![0x1000, 0x1008, 0x1010]);
    assert_eq!(t.runs(id).len(), 3);
    assert_eq!(t.get(id).end, End::Return);
    // `jal a0` is not a call: no PP at its "return point".
    assert_eq!(t.lookup(Addr(0x100c)), None);
    assert_eq!(t.len(), 1);
}

#[test]
fn semihosting_ebreak_continues_and_a_plain_one_may_not() {
    // sys_semihost: slli; ebreak; srai; ret. Then a plain ebreak followed by
    // the defined-illegal all-zero word.
    let p = analyse(
        &[SEMI_PRE, EBREAK, SEMI_POST, RET, EBREAK, 0],
        &[func("sys_semihost", 0x1000, 16), func("trap", 0x1010, 8)],
    );
    let t = &p.table;
    let semi = t.get(t.lookup(Addr(0x1000)).unwrap());
    let after = t.lookup(Addr(0x1008)).unwrap();
    assert_eq!(
        semi.end,
        End::Ebreak {
            semihosting: true,
            next: Some(after)
        }
    );
    assert_eq!(t.get(after).end, End::Return);
    let trap = t.get(t.lookup(Addr(0x1010)).unwrap());
    assert_eq!(
        trap.end,
        End::Ebreak {
            semihosting: false,
            next: None
        }
    );
    // A breakpoint followed by no code is normal (`__builtin_trap`): no
    // warning for it.
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    assert!(inconsistencies(t).is_empty());
}

#[test]
fn ensure_adds_run_time_targets_once_and_rejects_non_code() {
    let mut p = analyse(&counted_loop(), &[]);
    let t = &mut p.table;
    t.seal();
    let before = t.len();
    let nop = t.ensure(Addr(0x1014)).unwrap();
    assert_eq!(t.len(), before + 1);
    assert!(t.get(nop).dynamic);
    assert!(t.get(nop).starts.contains(StartKind::Indirect));
    // The nop falls into `ret`: one PP of two instructions overlapping f's.
    assert_eq!(t.get(nop).len, 2);
    assert_eq!(t.ensure(Addr(0x1014)).unwrap(), nop);
    assert_eq!(
        t.ensure(Addr(0x1018)).unwrap(),
        t.lookup(Addr(0x1018)).unwrap()
    );
    assert_eq!(t.len(), before + 1);
    assert_eq!(
        t.ensure(Addr(0x1001)),
        Err(ProgramError::Misaligned { addr: Addr(0x1001) })
    );
    assert_eq!(
        t.ensure(Addr(0x9000)),
        Err(ProgramError::NotCode { addr: Addr(0x9000) })
    );
    assert!(inconsistencies(t).is_empty());
}

#[test]
fn checker_follows_a_correct_run_and_reports_a_wrong_one() {
    let mut p = analyse(&counted_loop(), &[]);
    // The real execution: li, 10 iterations, call, ret, spin twice.
    let mut run: Vec<(u64, u64)> = vec![(0x1000, 0x1004)];
    for i in 0..10 {
        run.push((0x1004, 0x1008));
        run.push((0x1008, if i < 9 { 0x1004 } else { 0x100c }));
    }
    run.extend([
        (0x100c, 0x1018),
        (0x1018, 0x1010),
        (0x1010, 0x1010),
        (0x1010, 0x1010),
    ]);
    let mut c = Checker::new(&mut p.table);
    for &(pc, next) in &run {
        c.retire(pc, next);
    }
    let r = c.finish();
    assert_eq!(r.executed_instructions, run.len() as u64);
    assert_eq!(r.covered_instructions, run.len() as u64);
    assert_eq!(r.mismatches, 0, "{:?}", r.first_mismatches);
    assert_eq!(r.executed_partial_programs, 5);
    assert_eq!(r.return_escapes, 0);

    // A run that skips the loop body: the branch "goes" to 0x1010.
    let mut c = Checker::new(&mut p.table);
    c.retire(0x1000, 0x1004);
    c.retire(0x1004, 0x1008);
    c.retire(0x1008, 0x1010);
    c.retire(0x1010, 0x1010);
    let r = c.finish();
    assert_eq!(r.mismatches, 1);
    assert!(matches!(
        r.first_mismatches[0],
        Mismatch::BadSuccessor {
            at: Addr(0x1008),
            to: Addr(0x1010),
            ..
        }
    ));
}

#[test]
fn branch_outside_code_is_a_warning_and_an_unresolved_successor() {
    // beq a0, zero, +0x800 (outside); ret
    let p = analyse(&[beq(A0, 0, 0x800), RET], &[]);
    let t = &p.table;
    let e = t.get(t.lookup(Addr(0x1000)).unwrap());
    assert!(matches!(
        e.end,
        End::Branch {
            taken: None,
            not_taken: Some(_)
        }
    ));
    assert!(
        p.warnings.iter().any(|w| matches!(
            w,
            Warning::BadTarget {
                from: Addr(0x1000),
                to: Addr(0x1800),
                error: ProgramError::NotCode { .. }
            }
        )),
        "{:?}",
        p.warnings
    );
}

#[test]
fn branch_into_the_middle_of_an_instruction_is_reported() {
    // beq a0, zero, +6 lands in the middle of the addi at 0x1004.
    let p = analyse(&[beq(A0, 0, 6), addi(A0, A0, 0x7b), RET], &[]);
    assert!(
        p.warnings.iter().any(|w| matches!(
            w,
            Warning::MidInstruction {
                addr: Addr(0x1006),
                inside: Addr(0x1004)
            }
        )),
        "{:?}",
        p.warnings
    );
    assert!(inconsistencies(&p.table).is_empty());
}

#[test]
fn falling_into_an_illegal_word_ends_the_path_with_a_fault() {
    let p = analyse(&[NOP, NOP, 0xffff_ffff], &[]);
    let t = &p.table;
    let e = t.get(t.lookup(Addr(0x1000)).unwrap());
    assert_eq!(e.end, End::Fault { at: Addr(0x1008) });
    assert_eq!((e.len, e.last), (2, Addr(0x1004)));
    assert!(p.warnings.iter().any(|w| matches!(
        w,
        Warning::BadTarget {
            to: Addr(0x1008),
            error: ProgramError::Illegal { .. },
            ..
        }
    )));
    assert!(inconsistencies(t).is_empty());
}

#[test]
fn odd_symbols_are_reported() {
    let words = [NOP, NOP, RET, NOP, RET];
    let p = analyse(
        &words,
        &[
            // Claims 4 bytes but runs on to the ret at 0x1008.
            func("short", 0x1000, 4),
            // `a` and `b` overlap partially.
            func("a", 0x100c, 8),
            func("b", 0x1010, 8),
            func("zero", 0x1008, 0),
            func("nowhere", 0x8000, 4),
        ],
    );
    let has = |f: &dyn Fn(&Warning) -> bool| p.warnings.iter().any(f);
    assert!(
        has(&|w| matches!(
            w,
            Warning::FallsOffEnd {
                addr: Addr(0x1004),
                ..
            }
        )),
        "{:?}",
        p.warnings
    );
    assert!(has(&|w| matches!(
        w,
        Warning::OverlappingSymbols {
            first_addr: Addr(0x100c),
            second_addr: Addr(0x1010),
            ..
        }
    )));
    assert!(has(&|w| matches!(
        w,
        Warning::ZeroSizeSymbol {
            addr: Addr(0x1008),
            ..
        }
    )));
    assert!(has(&|w| matches!(
        w,
        Warning::SymbolOutsideCode {
            addr: Addr(0x8000),
            ..
        }
    )));
    // The short function keeps the code it falls into, up to the next
    // function's entry, which it then enters like a tail call.
    let f = p.function_named("short").unwrap();
    assert_eq!(p.cfg(f).instructions(), 2);
    assert!(p.cfg(f).blocks.iter().any(|b| b.term
        == retrace_program::Terminator::TailCall {
            target: Addr(0x1008)
        }));
    assert!(inconsistencies(&p.table).is_empty());
}

#[test]
fn entry_point_outside_code_is_an_error() {
    let err = retrace_program::Program::from_code(code(&[RET]), Addr(0x40), &[]).unwrap_err();
    assert_eq!(err, ProgramError::NotCode { addr: Addr(0x40) });
}

#[test]
fn indirect_call_pushes_a_return_point() {
    // jalr ra, 0(a0); ret
    let p = analyse(&[jalr(RA, A0, 0), RET], &[]);
    let t = &p.table;
    let e = t.get(t.lookup(Addr(0x1000)).unwrap());
    assert_eq!(
        e.end,
        End::IndirectCall {
            ret: t.lookup(Addr(0x1004))
        }
    );
    assert!(t.lookup(Addr(0x1004)).is_some());
    let f = p.function_at(Addr(0x1000)).unwrap();
    assert!(p.call_graph.indirect[f.index()]);
}
