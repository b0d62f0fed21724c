//! Functional-engine behaviour on hand-assembled RV64 programs: exact
//! instruction budgets, self-modifying code, observer hooks, LR/SC and
//! traps into a handler.

use retrace_program::Elf;
use retrace_sim::{
    Cause, Console, HostConfig, Machine, MachineConfig, Observer, Retired, StopReason,
};

use retrace_sim::cycle::CycleObserver;
use retrace_testkit::asm::bytes;
use retrace_testkit::elf::{ElfImage, BASE};
use retrace_testkit::programs::example_program;

/// A minimal RV64 executable holding `code` at [`BASE`], writable.
fn elf64(code: &[u32]) -> Elf {
    Elf::parse(&ElfImage::riscv64().build(&bytes(code))).unwrap()
}

fn machine(code: &[u32]) -> Machine {
    machine_for(&elf64(code))
}

fn machine_for(elf: &Elf) -> Machine {
    Machine::new(
        elf,
        &MachineConfig::default(),
        HostConfig::default(),
        Console::null(),
    )
    .unwrap()
}

/// addi a0, a0, 1; bne a0, a1, -4 ... an endless counting loop.
const COUNT_LOOP: [u32; 2] = [0x0015_0513, 0xfeb5_1ee3];

#[test]
fn budget_is_exact_and_runs_resume() {
    let mut m = machine(&COUNT_LOOP);
    m.harts[0].x[11] = u64::MAX; // never equal: loop forever
    let r = m.run(Some(1001), &mut ());
    assert_eq!(r.stop, StopReason::Runaway { limit: 1001 });
    assert_eq!(r.instructions, 1001);
    assert_eq!(m.harts[0].x[10], 501); // 501 addi, 500 bne
    let r = m.run(Some(1), &mut ());
    assert_eq!(r.instructions, 1002);
    assert_eq!(m.harts[0].pc, BASE);
}

#[derive(Default)]
struct Counter {
    retired: u64,
    branches: u64,
    taken: u64,
    mem: Vec<u64>,
    traps: Vec<Cause>,
}

impl Observer for Counter {
    fn retire(&mut self, ev: &Retired<'_>) {
        self.retired += 1;
        if let Some(a) = ev.mem_addr {
            self.mem.push(a);
        }
    }
    fn branch(&mut self, _: usize, _: u64, _: &retrace_isa::Inst, taken: bool, _: u64) {
        self.branches += 1;
        self.taken += u64::from(taken);
    }
    fn trap(&mut self, ev: &retrace_sim::TrapEvent) {
        self.traps.push(ev.cause);
    }
}

#[test]
fn observer_sees_every_instruction_and_branch() {
    let mut m = machine(&COUNT_LOOP);
    m.harts[0].x[11] = 10;
    let mut c = Counter::default();
    let r = m.run(Some(19), &mut c);
    assert_eq!(r.instructions, 19);
    assert_eq!(c.retired, 19);
    assert_eq!((c.branches, c.taken), (9, 9));
    assert_eq!(r.harts[0].branches, 9);
}

#[test]
fn store_over_code_is_executed_fresh() {
    // 0: auipc t0, 0
    // 4: lui t1, 0x00500 ; 8: addi t1, t1, 0x513   -> t1 = 0x00500513 (li a0, 5)
    // c: jal x0, +8 (to 0x14)  -- executes 0x10 first time? no: skip
    // 10: li a0, 1  (to be overwritten with li a0, 5)
    // 14: sw t1, 16(t0) ; 18: j -8 (to 0x10) ; 1c: never
    let code = [
        0x0000_0297,
        0x0050_0337,
        0x5133_0313,
        0x0080_006f,
        0x0010_0513,
        0x0062_a823,
        0xff9f_f06f,
    ];
    let mut m = machine(&code);
    // Decode the victim once first, so the cache holds the old instruction.
    m.harts[0].pc = BASE + 0x10;
    m.run(Some(1), &mut ());
    assert_eq!(m.harts[0].x[10], 1);
    m.harts[0].pc = BASE;
    // auipc, lui, addi, jal, sw, j, li
    let r = m.run(Some(7), &mut ());
    assert_eq!(r.instructions, 8);
    assert_eq!(m.harts[0].x[10], 5, "stale decoded instruction executed");
    assert!(r.cache_flushes >= 1);
}

/// auipc a0, 1 (a0 = BASE + 0x1000); li a1, 7;
/// sc.w a2, a1, (a0)   -> fails (no reservation): a2 = 1;
/// lr.w a3, (a0); sc.w a4, a1, (a0) -> succeeds: a4 = 0; lw a5, 0(a0) = 7.
const LR_SC: [u32; 6] = [
    0x0000_1517,
    0x0070_0593,
    0x18b5_262f,
    0x1005_26af,
    0x18b5_272f,
    0x0005_2783,
];

#[test]
fn lr_sc_pairs_and_fails_without_reservation() {
    let mut m = machine(&LR_SC);
    let mut c = Counter::default();
    m.run(Some(6), &mut c);
    let x = &m.harts[0].x;
    assert_eq!((x[12], x[13], x[14], x[15]), (1, 0, 0, 7));
    assert_eq!(c.mem, vec![BASE + 0x1000; 4]);
}

#[test]
fn traps_go_to_the_handler_or_stop_the_run() {
    // 0: auipc t0, 0; 4: addi t0, t0, 16; 8: csrw mtvec, t0; c: illegal
    // 10: csrr a0, mcause; 14: csrr a1, mepc; 18: j .
    let code = [
        0x0000_0297,
        0x0102_8293,
        0x3052_9073,
        0xffff_ffff,
        0x3420_2573,
        0x3410_25f3,
        0x0000_006f,
    ];
    let mut m = machine(&code);
    let mut c = Counter::default();
    m.run(Some(6), &mut c);
    assert_eq!(m.harts[0].x[10], 2);
    assert_eq!(m.harts[0].x[11], BASE + 0xc);
    assert_eq!(c.traps, vec![Cause::ILLEGAL_INSTRUCTION]);
    // Without the handler the run stops with the cause.
    let mut m = machine(&code[3..]);
    let r = m.run(None, &mut ());
    match r.stop {
        StopReason::Fault(f) => {
            assert_eq!(
                (f.cause, f.pc, f.tval),
                (Cause::ILLEGAL_INSTRUCTION, BASE, 0xffff_ffff)
            )
        }
        other => panic!("unexpected stop {other:?}"),
    }
}

/// `mstatus.FS` is Off at reset (as on QEMU with `-bios none`): until
/// the program enables the FP unit, an FP word, at the start of a block or
/// after other instructions, compressed or not, stops the run with an
/// illegal-instruction fault carrying the word.
#[test]
fn fp_instructions_trap_as_illegal() {
    // flw fa0, 0(a0); fadd.s fa0, fa0, fa1; fmadd.d; c.fld fa0, 0(a0) (+ c.nop)
    for (word, tval) in [
        (0x0005_2507u32, 0x0005_2507u64),
        (0x00b5_7553, 0x00b5_7553),
        (0x1a20_f043, 0x1a20_f043),
        (0x0001_2108, 0x2108),
    ] {
        for lead in [0usize, 2] {
            let mut code = vec![0x0000_0013; lead]; // nop
            code.push(word);
            let mut m = machine(&code);
            let r = m.run(None, &mut ());
            match r.stop {
                StopReason::Fault(f) => assert_eq!(
                    (f.cause, f.pc, f.tval, r.instructions),
                    (
                        Cause::ILLEGAL_INSTRUCTION,
                        BASE + 4 * lead as u64,
                        tval,
                        lead as u64
                    ),
                    "{word:#x}"
                ),
                other => panic!("{word:#x}: unexpected stop {other:?}"),
            }
        }
    }
}

/// A handler that traps itself retires nothing, ever: each such idle trap
/// counts against the instruction budget, so the run still ends as a
/// runaway instead of spinning forever (it once did, whatever
/// `--max-insns` said). Traps with instructions retired between them do
/// not count: the budget stays one of instructions.
#[test]
fn a_handler_that_traps_itself_ends_as_a_runaway() {
    // 0: auipc t0, 0; 4: addi t0, t0, 12; 8: csrw mtvec, t0;
    // c: the handler — an illegal instruction, or an ecall
    for handler in [0xffff_ffff, 0x0000_0073] {
        let code = [0x0000_0297, 0x00c2_8293, 0x3052_9073, handler];
        let mut m = machine(&code);
        let r = m.run(Some(1000), &mut ());
        assert!(
            matches!(r.stop, StopReason::Runaway { limit: 1000 }),
            "{handler:#x}: {:?}",
            r.stop
        );
        assert_eq!(r.instructions, 3, "{handler:#x}");
        // The first trap follows the three instructions; every later one
        // is idle.
        assert_eq!(m.harts[0].stats.idle_traps, 997, "{handler:#x}");
        assert_eq!(m.harts[0].stats.traps, 998, "{handler:#x}");
    }
}

/// Data addresses one [`Observer::memory`] call at a time.
#[derive(Default)]
struct EachAddress(Vec<u64>);

impl Observer for EachAddress {
    fn memory(&mut self, _: usize, addr: u64) {
        self.0.push(addr);
    }
}

/// Data addresses in bulk ([`Observer::BULK_ADDRESSES`]); `calls` counts
/// the hand-overs.
#[derive(Clone, Default)]
struct BulkAddresses {
    seen: Vec<u64>,
    calls: usize,
}

impl Observer for BulkAddresses {
    const BULK_ADDRESSES: bool = true;
    fn memory(&mut self, _: usize, _: u64) {
        panic!("a bulk observer must not get addresses one at a time");
    }
    fn addresses(&mut self, _: usize, log: &mut Vec<u64>) {
        assert!(!log.is_empty(), "empty hand-over");
        self.seen.extend_from_slice(log);
        self.calls += 1;
    }
}

/// The addresses `elf` accesses, both ways, with the run cut into turns of
/// `turn` instructions (a hand-over at the end of each).
fn addresses_both_ways(elf: &Elf, turn: u64) -> (Vec<u64>, BulkAddresses) {
    let mut each = EachAddress::default();
    let r = machine_for(elf).run(None, &mut each);
    let mut bulk = BulkAddresses::default();
    let mut m = machine_for(elf);
    let mut done = 0;
    loop {
        let part = m.run(Some(turn), &mut bulk);
        done += 1;
        if !matches!(part.stop, StopReason::Runaway { .. }) {
            assert_eq!(part.instructions, r.instructions);
            break;
        }
        assert!(done < 1_000_000, "run does not end");
    }
    (each.0, bulk)
}

#[test]
fn bulk_addresses_match_one_at_a_time() {
    // LR/SC and a load: every kind of access, in a run shorter than a log.
    let mut each = EachAddress::default();
    machine(&LR_SC).run(Some(6), &mut each);
    let mut bulk = BulkAddresses::default();
    machine(&LR_SC).run(Some(6), &mut bulk);
    assert_eq!(bulk.seen, each.0);
    assert_eq!(bulk.calls, 1);

    // A real program (with AMOs in its runtime), long enough for many
    // full logs, in turns that end mid-log and mid-block.
    for name in ["nqueens-rv64-O2.elf", "crc32-rv32-O2.elf"] {
        let elf = Elf::parse(&example_program(name).bytes()).unwrap();
        let (each, bulk) = addresses_both_ways(&elf, 1_000_003);
        assert!(each.len() > 1 << 19, "{name}: {} accesses", each.len());
        assert_eq!(bulk.seen.len(), each.len(), "{name}");
        assert!(bulk.seen == each, "{name}: the bulk log differs");
        assert!(
            bulk.calls > each.len() >> 16,
            "{name}: {} hand-overs",
            bulk.calls
        );
    }
}

/// One run watched by a pair and by a list of observers gives each part
/// what it gets watching a run alone: the per-address part its addresses
/// (in a batch, when the other part takes them in bulk), the bulk parts
/// theirs (each, though a part may take the buffer), the cycle-level cores
/// their cycles.
#[test]
fn observers_watching_one_run_see_what_they_see_alone() {
    let elf = Elf::parse(&example_program("crc32-rv32-O2.elf").bytes()).unwrap();
    let (each_alone, bulk_alone) = addresses_both_ways(&elf, u64::MAX);

    let mut pair = (EachAddress::default(), BulkAddresses::default());
    let mut pair_of_bulk = (BulkAddresses::default(), vec![BulkAddresses::default(); 2]);
    machine_for(&elf).run(None, &mut pair);
    machine_for(&elf).run(None, &mut pair_of_bulk);
    assert!(pair.0 .0 == each_alone, "per-address part of a bulk pair");
    assert!(pair.1.seen == bulk_alone.seen, "bulk part of a pair");
    assert!(pair_of_bulk.0.seen == bulk_alone.seen, "first bulk part");
    for b in &pair_of_bulk.1 {
        assert!(b.seen == bulk_alone.seen, "bulk part of a list");
    }

    let names = ["ideal", "inorder5", "rocket"];
    let alone: Vec<u64> = names
        .iter()
        .map(|n| {
            let mut obs = CycleObserver::new(&retrace_timing::preset(n).unwrap(), &[]);
            machine_for(&elf).run(None, &mut obs);
            obs.core().cycles()
        })
        .collect();
    let mut together = (
        EachAddress::default(),
        names
            .iter()
            .map(|n| CycleObserver::new(&retrace_timing::preset(n).unwrap(), &[]))
            .collect::<Vec<_>>(),
    );
    machine_for(&elf).run(None, &mut together);
    let cycles: Vec<u64> = together.1.iter().map(|o| o.core().cycles()).collect();
    assert_eq!(cycles, alone);
    assert!(together.0 .0 == each_alone);
}

/// `beq x0, x0, .+4` is taken (its condition holds) though it lands on its
/// own fall-through. The cycle-level engine once inferred "taken" from
/// leaving the fall-through path and so counted it not taken, unlike the
/// recorder and the replay: on a not-taken predictor it saw no mispredicts.
#[test]
fn cycle_level_engine_counts_a_branch_to_its_fallthrough_as_taken() {
    const BEQ_ZERO_ZERO_NEXT: u32 = 0x0000_0263; // beq x0, x0, .+4
    const J_SELF: u32 = 0x0000_006f; // j .
    let mut m = machine(&[BEQ_ZERO_ZERO_NEXT, BEQ_ZERO_ZERO_NEXT, J_SELF]);
    let model = retrace_timing::preset("inorder5").unwrap();
    assert_eq!(
        model.branch.predictor,
        retrace_timing::PredictorKind::NotTaken
    );
    let mut obs = CycleObserver::new(&model, &[]);
    m.run(Some(2), &mut obs);
    assert_eq!(m.harts[0].stats.taken, 2);
    let stats = obs.core().stats();
    assert_eq!((stats.branches, stats.mispredicts), (2, 2));
}
