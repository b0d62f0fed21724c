//! Several harts and the synchronisation API on hand-assembled RV64
//! programs: blocking and waking, the events observers see, exact budgets
//! across a wake-up, deadlocks and bad handles.

use retrace_isa::{Op, Xlen};
use retrace_program::Elf;
use retrace_sim::sync::{Kind, CALL_BASE, MAGIC};
use retrace_sim::{
    Console, HartState, HostConfig, Machine, MachineConfig, Observer, StopReason, SyncEvent,
    SyncOp, SyncOutcome,
};
use retrace_testkit::asm::{bytes, word, A0, A1, ECALL, S0};
use retrace_testkit::elf::{ElfImage, BASE};

/// Where the test programs keep their object descriptors.
const OBJECTS: u64 = BASE + 0x400;
const A7: u8 = 17;
const S1: u8 = 9;
const S2: u8 = 18;

fn w(op: Op, rd: u8, rs1: u8, rs2: u8, imm: i32) -> u32 {
    word(Xlen::Rv64, op, rd, rs1, rs2, imm)
}

/// `a0` = the descriptor `index` (16 bytes each at [`OBJECTS`]), `a7` =
/// the call `op`, then `ecall`: five instructions at `at`.
fn call(at: u64, index: u64, op: SyncOp) -> Vec<u32> {
    let target = OBJECTS + 16 * index;
    vec![
        w(Op::Auipc, A0, 0, 0, 0),
        w(Op::Addi, A0, A0, 0, (target - at) as i32),
        w(Op::Lui, A7, 0, 0, CALL_BASE as i32),
        w(Op::Addi, A7, A7, 0, i32::from(op.0)),
        ECALL,
    ]
}

/// A program of `code` (laid out from [`BASE`]) with descriptors of
/// `objects` (kind, parameter) at [`OBJECTS`].
fn program(code: &[u32], objects: &[(Kind, u32)]) -> Elf {
    let mut image = bytes(code);
    assert!(image.len() as u64 <= OBJECTS - BASE);
    image.resize((OBJECTS - BASE) as usize, 0);
    for &(kind, param) in objects {
        for v in [MAGIC, kind as u32, param, 0] {
            image.extend_from_slice(&v.to_le_bytes());
        }
    }
    Elf::parse(&ElfImage::riscv64().build(&image)).unwrap()
}

/// Code assembled at increasing addresses.
struct Code(Vec<u32>);

impl Code {
    fn at(&self) -> u64 {
        BASE + 4 * self.0.len() as u64
    }
    fn call(&mut self, index: u64, op: SyncOp) -> &mut Code {
        let c = call(self.at(), index, op);
        self.0.extend(c);
        self
    }
    fn push(&mut self, inst: u32) -> &mut Code {
        self.0.push(inst);
        self
    }
}

fn machine(elf: &Elf, harts: usize) -> Machine {
    let config = MachineConfig {
        harts,
        ..MachineConfig::default()
    };
    Machine::new(elf, &config, HostConfig::default(), Console::null()).unwrap()
}

#[derive(Default)]
struct Events(Vec<SyncEvent>);

impl Observer for Events {
    const RETIRE: bool = false;
    fn sync(&mut self, ev: &SyncEvent) {
        self.0.push(*ev);
    }
}

/// Hart 0 sends 5 and 6 into a channel of capacity 1; hart 1 receives
/// both into s1 and s2. Then each exits.
fn ping() -> Elf {
    let mut c = Code(Vec::new());
    c.push(w(Op::Addi, S0, A0, 0, 0)); // s0 = hart id
    let branch_at = c.0.len();
    c.push(0); // bnez s0, receiver (patched below)
    c.push(w(Op::Addi, A1, 0, 0, 5))
        .call(0, SyncOp::SEND)
        .push(w(Op::Addi, A1, 0, 0, 6))
        .call(0, SyncOp::SEND)
        .call(0, SyncOp::HART_EXIT);
    let receiver = c.0.len();
    c.0[branch_at] = w(Op::Bne, 0, S0, 0, 4 * (receiver - branch_at) as i32);
    c.call(0, SyncOp::RECV)
        .push(w(Op::Addi, S1, A0, 0, 0))
        .call(0, SyncOp::RECV)
        .push(w(Op::Addi, S2, A0, 0, 0))
        .call(0, SyncOp::HART_EXIT);
    program(&c.0, &[(Kind::Channel, 1)])
}

#[test]
fn a_full_channel_blocks_the_sender_and_a_receive_wakes_it() {
    let elf = ping();
    let mut m = machine(&elf, 2);
    let mut events = Events::default();
    let r = m.run(Some(1_000), &mut events);
    // Both harts exited, and nobody ended the program: no hart can run.
    let StopReason::Deadlock(d) = &r.stop else {
        panic!("{:?}", r.stop)
    };
    assert!(d.blocked.is_empty());
    assert_eq!(d.exited, vec![0, 1]);
    assert_eq!(
        (m.harts[1].x[S1 as usize], m.harts[1].x[S2 as usize]),
        (5, 6)
    );
    let seen: Vec<(usize, SyncOp, SyncOutcome, u64)> = events
        .0
        .iter()
        .map(|e| (e.hart, e.op, e.outcome, e.result))
        .collect();
    use SyncOutcome::*;
    assert_eq!(
        seen,
        vec![
            (0, SyncOp::SEND, Done, 0),
            (0, SyncOp::SEND, Blocked, 0),
            (1, SyncOp::RECV, Done, 5),
            (0, SyncOp::SEND, Resumed { by: 1 }, 0),
            (1, SyncOp::RECV, Done, 6),
            (1, SyncOp::HART_EXIT, Exited, 0),
            (0, SyncOp::HART_EXIT, Exited, 0),
        ]
    );
    // The blocked send retired once, when hart 0 ran again: hart 0
    // retired its id copy, branch, 2 × (li + 4 setup + ecall) and the exit's
    // 4 setup instructions; the exit's ecall does not retire.
    assert_eq!(m.harts[0].stats.instructions, 2 + 2 * 6 + 4);
    assert_eq!(events.0[1].retired, 2 + 6 + 1 + 4);
    assert_eq!(events.0[3].retired, events.0[1].retired);
    assert_eq!(m.hart_state(0), HartState::Exited);
}

#[test]
fn budgets_stay_exact_across_a_wake_up() {
    let elf = ping();
    let mut whole = machine(&elf, 2);
    let total = whole.run(None, &mut ()).instructions;
    for limit in 1..total {
        let mut m = machine(&elf, 2);
        let r = m.run(Some(limit), &mut ());
        assert_eq!(r.stop, StopReason::Runaway { limit }, "limit {limit}");
        assert_eq!(r.instructions, limit, "limit {limit}");
        let rest = m.run(None, &mut ());
        assert_eq!(rest.instructions, total, "resumed after {limit}");
    }
}

#[test]
fn a_deadlock_names_every_blocked_hart_and_what_it_waits_for() {
    // Each hart takes one mutex and then wants the other's.
    let mut c = Code(Vec::new());
    c.push(w(Op::Addi, S0, A0, 0, 0));
    let branch_at = c.0.len();
    c.push(0);
    c.call(0, SyncOp::LOCK)
        .call(1, SyncOp::BARRIER)
        .call(1, SyncOp::LOCK);
    let other = c.0.len();
    c.0[branch_at] = w(Op::Bne, 0, S0, 0, 4 * (other - branch_at) as i32);
    c.call(1, SyncOp::LOCK)
        .call(2, SyncOp::BARRIER)
        .call(0, SyncOp::LOCK);
    let elf = program(
        &c.0,
        &[(Kind::Mutex, 0), (Kind::Mutex, 0), (Kind::Barrier, 0)],
    );
    let mut m = machine(&elf, 2);
    let r = m.run(Some(10_000), &mut ());
    // Hart 0 used descriptor 1 as a barrier: a bad handle, found first.
    assert_eq!(r.stop.kind(), "sync");
    assert_eq!(
        r.stop.to_string(),
        format!(
            "bad handle {:#x} for barrier: it is a mutex, not a barrier (hart 0, pc {:#x})",
            OBJECTS + 16,
            BASE + 4 * 7 + 4 * 4
        )
    );

    let mut c = Code(Vec::new());
    c.push(w(Op::Addi, S0, A0, 0, 0));
    let branch_at = c.0.len();
    c.push(0);
    c.call(0, SyncOp::LOCK)
        .call(2, SyncOp::BARRIER)
        .call(1, SyncOp::LOCK);
    let other = c.0.len();
    c.0[branch_at] = w(Op::Bne, 0, S0, 0, 4 * (other - branch_at) as i32);
    c.call(1, SyncOp::LOCK)
        .call(2, SyncOp::BARRIER)
        .call(0, SyncOp::LOCK);
    let elf = program(
        &c.0,
        &[(Kind::Mutex, 0), (Kind::Mutex, 0), (Kind::Barrier, 0)],
    );
    let mut m = machine(&elf, 2);
    let r = m.run(Some(10_000), &mut ());
    assert_eq!(
        r.stop.to_string(),
        format!(
            "deadlock: hart 0 locks mutex {:#x} held by hart 1, hart 1 locks mutex {:#x} held by hart 0",
            OBJECTS + 16,
            OBJECTS
        )
    );
}

#[test]
fn bad_calls_stop_the_run_naming_the_hart_and_the_call() {
    // No descriptor where the handle points.
    let mut c = Code(Vec::new());
    c.call(3, SyncOp::SEND);
    let elf = program(&c.0, &[(Kind::Channel, 1)]);
    let r = machine(&elf, 1).run(Some(100), &mut ());
    assert_eq!(
        r.stop.to_string(),
        format!(
            "bad handle {:#x} for send: no synchronisation object there (declare one with \
             SYNC_CHANNEL, SYNC_MUTEX, SYNC_BARRIER or SYNC_SEMAPHORE) (hart 0, pc {:#x})",
            OBJECTS + 48,
            BASE + 16
        )
    );
    // An unlock by a hart that does not hold the mutex.
    let mut c = Code(Vec::new());
    c.call(0, SyncOp::UNLOCK);
    let elf = program(&c.0, &[(Kind::Mutex, 0)]);
    let r = machine(&elf, 1).run(Some(100), &mut ());
    assert!(
        r.stop
            .to_string()
            .starts_with(&format!("unlock of mutex {OBJECTS:#x}, which nobody holds")),
        "{}",
        r.stop
    );
    // A channel of capacity 0, and a call number that is not a call.
    let mut c = Code(Vec::new());
    c.call(0, SyncOp::RECV);
    let elf = program(&c.0, &[(Kind::Channel, 0)]);
    let r = machine(&elf, 1).run(Some(100), &mut ());
    assert!(r.stop.to_string().contains("capacity 0"), "{}", r.stop);
    let mut c = Code(Vec::new());
    c.call(0, SyncOp(0x7f));
    let elf = program(&c.0, &[(Kind::Channel, 1)]);
    let r = machine(&elf, 1).run(Some(100), &mut ());
    assert!(r
        .stop
        .to_string()
        .starts_with("unknown synchronisation call 0x5359007f"));
}

#[test]
fn harts_call_counts_every_hart_and_each_starts_with_its_id() {
    let mut c = Code(Vec::new());
    c.push(w(Op::Addi, S0, A0, 0, 0)).call(0, SyncOp::HARTS);
    c.push(w(Op::Addi, S1, A0, 0, 0)).call(0, SyncOp::HART_EXIT);
    let elf = program(&c.0, &[]);
    let mut m = machine(&elf, 5);
    m.run(Some(1_000), &mut ());
    for h in 0..5 {
        assert_eq!(m.harts[h].x[S0 as usize], h as u64);
        assert_eq!(m.harts[h].x[S1 as usize], 5);
    }
}

#[test]
fn more_than_64_harts_is_a_configuration_error() {
    let elf = program(&[ECALL], &[]);
    for harts in [0, 65] {
        let config = MachineConfig {
            harts,
            ..MachineConfig::default()
        };
        let e = Machine::new(&elf, &config, HostConfig::default(), Console::null()).unwrap_err();
        assert!(e.to_string().contains("1 to 64"), "{e}");
    }
}

// The multi-hart cycle-level engine (`retrace_sim::clocked`).

use retrace_sim::clocked::{run_by_clock, ClockedHarts, HartTime};
use retrace_sim::cycle::run_cycle_level;
use retrace_testkit::programs::{example_program, programs_in, root};
use retrace_timing::preset;

/// Hart 0 counts down from `k` and then sends; hart 1 receives at once,
/// and waits. Each exits after.
fn late_send(k: i32) -> Elf {
    const T0: u8 = 5;
    let mut c = Code(Vec::new());
    c.push(w(Op::Addi, S0, A0, 0, 0));
    let branch_at = c.0.len();
    c.push(0);
    c.push(w(Op::Addi, T0, 0, 0, k))
        .push(w(Op::Addi, T0, T0, 0, -1))
        .push(w(Op::Bne, 0, T0, 0, -4))
        .push(w(Op::Addi, A1, 0, 0, 9))
        .call(0, SyncOp::SEND)
        .call(0, SyncOp::HART_EXIT);
    let receiver = c.0.len();
    c.0[branch_at] = w(Op::Bne, 0, S0, 0, 4 * (receiver - branch_at) as i32);
    c.call(0, SyncOp::RECV)
        .push(w(Op::Addi, S1, A0, 0, 0))
        .call(0, SyncOp::HART_EXIT);
    program(&c.0, &[(Kind::Channel, 1)])
}

#[test]
fn a_blocked_hart_waits_until_the_hart_that_frees_it() {
    let k = 1000;
    let elf = late_send(k);
    let ideal = preset("ideal").unwrap();
    let mut m = machine(&elf, 2);
    let mut obs = ClockedHarts::new(&ideal, &[], 2);
    let r = run_by_clock(&mut m, Some(100_000), &mut obs);
    assert_eq!(r.stop.kind(), "deadlock", "{}", r.stop); // both exited
    assert_eq!(m.harts[1].x[S1 as usize], 9);
    // One cycle per instruction and free traps: hart 0 retires 2 + 1 + 2k
    // + 6 instructions by the end of its send, and 4 more; hart 1 blocks
    // after 6, resumes at hart 0's time, retires its ecall and 5 more.
    let k = k as u64;
    let sent = 2 + 1 + 2 * k + 6;
    assert_eq!(
        obs.times(),
        vec![
            HartTime {
                busy: sent + 4,
                wait: 0,
                instructions: sent + 4,
                // 10 ns a cycle at the default 100 MHz.
                time: u128::from(sent + 4) * 10_000_000_000,
            },
            HartTime {
                busy: 12,
                wait: sent - 6,
                instructions: 12,
                time: u128::from(sent + 6) * 10_000_000_000,
            },
        ]
    );
    assert_eq!(obs.makespan(), sent + 6);
}

#[test]
fn one_hart_by_clock_is_the_cycle_level_engine() {
    let prog = example_program("crc32-rv32-O2");
    let elf = Elf::parse(&prog.bytes()).unwrap();
    let core = preset("inorder5").unwrap();
    let (run, single) = run_cycle_level(
        &elf,
        HostConfig::default(),
        Console::null(),
        None,
        &core,
        &[],
    )
    .unwrap();
    let mut m = machine(&elf, 1);
    let mut obs = ClockedHarts::new(&core, &[], 1).reading_code(&elf);
    let clocked = run_by_clock(&mut m, None, &mut obs);
    assert_eq!(clocked.stop, run.stop);
    assert_eq!(obs.makespan(), single.core().cycles());
    assert_eq!(obs.times()[0].wait, 0);
}

#[test]
fn the_examples_end_the_same_by_clock_and_repeat_exactly() {
    let core = preset("inorder5").unwrap();
    for prog in programs_in(&root().join("programs/bin/mp"))
        .into_iter()
        .filter(|p| !p.name.ends_with("-atomic") && p.name.contains("rv64"))
    {
        let elf = Elf::parse(&prog.bytes()).unwrap();
        for harts in [2, 4, 8] {
            let functional = machine(&elf, harts).run(None, &mut ());
            let timed = || {
                let mut m = machine(&elf, harts);
                let mut obs = ClockedHarts::new(&core, &[], harts);
                let r = run_by_clock(&mut m, None, &mut obs);
                (r, obs.times(), obs.makespan())
            };
            let (r, times, makespan) = timed();
            let name = format!("{} on {harts} harts", prog.name);
            // The same end; the instruction counts may differ a little:
            // harts still on their way out when hart 0 exits the program
            // got further in one order than in the other.
            assert_eq!(r.stop, functional.stop, "{name}");
            let counted: u64 = times.iter().map(|t| t.instructions).sum();
            assert_eq!(counted, r.instructions, "{name}");
            assert_eq!(
                makespan,
                times.iter().map(HartTime::clock).max().unwrap(),
                "{name}"
            );
            assert!(
                times.iter().skip(1).any(|t| t.wait > 0),
                "{name}: nobody waited"
            );
            let (_, again, _) = timed();
            assert_eq!(times, again, "{name}: a second run differs");
        }
    }
}

#[test]
fn each_hart_runs_on_its_own_core_model() {
    // The late sender on a slower core makes the receiver wait longer; the
    // receiver's own busy cycles do not change with the sender's core.
    let elf = late_send(300);
    let (ideal, inorder5) = (preset("ideal").unwrap(), preset("inorder5").unwrap());
    let times = |models: &[&retrace_timing::CoreModel]| {
        let mut m = machine(&elf, 2);
        let mut obs = ClockedHarts::heterogeneous(models, &[]);
        run_by_clock(&mut m, Some(100_000), &mut obs);
        obs.times()
    };
    let same = times(&[&ideal, &ideal]);
    let mut m = machine(&elf, 2);
    let mut obs = ClockedHarts::new(&ideal, &[], 2);
    run_by_clock(&mut m, Some(100_000), &mut obs);
    assert_eq!(same, obs.times());
    let mixed = times(&[&inorder5, &ideal]);
    assert!(mixed[0].busy > same[0].busy, "{mixed:?} {same:?}");
    assert_eq!(mixed[1].busy, same[1].busy);
    assert_eq!(mixed[1].wait, same[1].wait + (mixed[0].busy - same[0].busy));
}
