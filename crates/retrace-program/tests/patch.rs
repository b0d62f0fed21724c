//! Code written at run time in the partial-program table (`PpTable::patch`,
//! `Code::patch`): partial programs that read a changed byte are retired and
//! rebuilt under new ids, the others keep theirs and are pointed at the new
//! ones, and code placed where there was none becomes reachable.

mod common;

use common::*;
use retrace_program::{Addr, End, PpTable};

/// `div a0, a0, a0`.
const DIV: u32 = 0x02a5_4533;

/// ```text
/// 0x1000  li   a0, 10
/// 0x1004  nop                  <- loop (patched into a div)
/// 0x1008  addi a0, a0, -1
/// 0x100c  bnez a0, 0x1004
/// 0x1010  j    0x2000          (no code there yet)
/// ```
fn program() -> Vec<u32> {
    vec![
        addi(A0, 0, 10),
        NOP,
        addi(A0, A0, -1),
        bne(A0, 0, -8),
        jal(0, 0xff0),
    ]
}

fn table() -> PpTable {
    let mut t = analyse(&program(), &[]).table;
    t.seal();
    t
}

#[test]
fn a_patched_instruction_retires_the_partial_programs_that_read_it() {
    let mut t = table();
    let entry = t.lookup(Addr(0x1000)).unwrap();
    let lp = t.lookup(Addr(0x1004)).unwrap();
    assert_eq!(t.insts(lp).next().unwrap().1.op, retrace_isa::Op::Addi);
    let changed = t.patch(Addr(0x1004), &DIV.to_le_bytes());
    assert_eq!(changed, Some((Addr(0x1004), Addr(0x1008))));
    // Both paths read 0x1004: retired (start, end and length stay; they
    // are never walked again).
    assert!(t.is_retired(entry) && t.is_retired(lp));
    assert_eq!(t.get(lp).len, 3);
    // New ids at the same addresses, reading the div.
    let lp2 = t.ensure(Addr(0x1004)).unwrap();
    assert_ne!(lp2, lp);
    assert_eq!(t.insts(lp2).next().unwrap().1.op, retrace_isa::Op::Div);
    // The new loop's branch goes back to the new loop, not the retired one.
    match t.get(lp2).end {
        End::Branch { taken, .. } => assert_eq!(taken, Some(lp2)),
        e => panic!("{e:?}"),
    }
    // Patching the same bytes again changes nothing.
    assert_eq!(t.patch(Addr(0x1004), &DIV.to_le_bytes()), None);
    assert!(!t.is_retired(lp2));
}

#[test]
fn code_placed_where_there_was_none_becomes_a_successor() {
    let mut t = table();
    // The jump at 0x1010 leads nowhere executable: its PP ends in a fault.
    let tail = t.lookup(Addr(0x1010)).unwrap();
    assert!(matches!(t.get(tail).end, End::Fault { .. }));
    assert!(t.ensure(Addr(0x2000)).is_err());
    let placed: Vec<u8> = [addi(A0, A0, 1), RET]
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .collect();
    assert!(t.patch(Addr(0x2000), &placed).is_some());
    // The path through the jump read 0x2000: rebuilt, it now ends at the ret.
    assert!(t.is_retired(tail));
    let tail2 = t.ensure(Addr(0x1010)).unwrap();
    assert_eq!(t.get(tail2).end, End::Return);
    assert_eq!(t.get(tail2).len, 3);
    // Partial programs elsewhere keep their ids.
    let entry = t.lookup(Addr(0x1000)).unwrap();
    assert!(!t.is_retired(entry));
    assert!(t.code().holds(Addr(0x2000), &placed));
}

#[test]
fn a_patch_touching_a_region_merges_with_it() {
    let mut c = code(&program());
    let before: Vec<u8> = program().iter().flat_map(|w| w.to_le_bytes()).collect();
    // Straddles the region's end: 4 bytes over the j, 4 after it.
    let mut bytes = NOP.to_le_bytes().to_vec();
    bytes.extend(RET.to_le_bytes());
    assert_eq!(
        c.patch(Addr(0x1010), &bytes),
        Some((Addr(0x1010), Addr(0x1018)))
    );
    assert_eq!(c.regions().count(), 1);
    assert!(c.holds(Addr(0x1000), &before[..16]));
    assert!(c.holds(Addr(0x1010), &bytes));
    assert_eq!(c.decode_at(Addr(0x1014)).unwrap().op, retrace_isa::Op::Jalr);
    // An odd address drops its first byte.
    assert_eq!(c.patch(Addr(0x1001), &[0xaa]), None);
}
