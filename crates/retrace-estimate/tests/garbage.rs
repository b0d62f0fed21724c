//! Traces that are valid containers for the right program but whose
//! history is nonsense (random bits, indirect records, escapes and traps),
//! or a
//! real history with one item changed: the replay must answer with an error
//! or an estimate, never panic, and the memoised `fast` replay must answer
//! exactly as the step-by-step one — also when it has memoised much of the
//! run before the history stops making sense.

use proptest::prelude::*;
use retrace_estimate::{estimate_trace, estimate_trace_stepwise, Fidelity};
use retrace_program::{Addr, Elf, Program};
use retrace_testkit::programs::example_program;
use retrace_testkit::Rng;
use retrace_trace::protocol::NEW_TARGET;
use retrace_trace::{Header, StreamKind, Totals, TraceWriter};

fn program() -> (Elf, Program) {
    load("bytevm-rv32-O2")
}

fn load(name: &str) -> (Elf, Program) {
    let elf = Elf::parse(&example_program(name).bytes()).unwrap();
    let program = Program::analyse(&elf).unwrap();
    (elf, program)
}

/// A trace for `elf` with `bits` branch bits from `seed`, an indirect
/// record (small index, sometimes 0 and an address) every `every` bits, the
/// odd escape and the odd trap, claiming `instructions` instructions.
fn garbage(elf: &Elf, seed: u64, bits: u32, every: u32, instructions: u64) -> Vec<u8> {
    let mut header = Header::new(elf.identity(), 32, 1);
    header.program = "bytevm-rv32-O2.elf".into();
    let mut buf = Vec::new();
    let mut w = TraceWriter::new(&mut buf, &header).unwrap();
    let mut rng = Rng::new(seed);
    let mut next = || rng.next_u64();
    let (mut indirect, mut escapes) = (0, 0);
    for i in 0..bits {
        let r = next();
        if i % every.max(1) == 0 {
            let v = r % 6;
            w.record(0, StreamKind::Indirect, v);
            indirect += 1;
            if v == 0 {
                w.record(0, StreamKind::Indirect, elf.entry + (r >> 40) % 0x4000 * 2);
                indirect += 1;
            }
        }
        if r % 997 == 0 {
            w.record(0, StreamKind::Escapes, r % 5);
            w.record(0, StreamKind::Escapes, elf.entry + (r >> 30) % 0x4000 * 2);
            escapes += 1;
        }
        if r % 499 == 1 {
            // A trap some instructions on, to a handler numbered 0 to 2 (0:
            // a new one, somewhere in the code).
            w.record(0, StreamKind::Traps, (r >> 20) % 40);
            w.record(0, StreamKind::Traps, (r >> 10) % 3);
            if (r >> 10) % 3 == 0 {
                w.record(0, StreamKind::Traps, elf.entry + (r >> 30) % 0x4000 * 2);
            }
        }
        w.branch(0, r & 0x100 != 0);
    }
    let totals = Totals {
        instructions,
        branches: u64::from(bits),
        indirect,
        escapes,
        exit_code: 0,
        last_pc: elf.entry,
        walk_instructions: None,
    };
    w.finish(&totals).unwrap();
    buf
}

/// A real run's streams (one segment's worth), to mutate.
struct Streams {
    bits: Vec<bool>,
    indirect: Vec<u64>,
    escapes: Vec<u64>,
    traps: Vec<u64>,
    totals: Totals,
}

fn record(elf: &Elf, name: &str) -> Streams {
    let host = retrace_sim::HostConfig {
        cmdline: retrace_sim::HostConfig::qemu_cmdline(&format!("{name}.elf"), &[]),
        ..Default::default()
    };
    let mut buf = Vec::new();
    let header = Header::new(0, 32, 1);
    retrace_sim::record::record_run(
        elf,
        host,
        retrace_sim::Console::null(),
        None,
        &mut buf,
        header,
        &[],
    )
    .unwrap();
    let mut r = retrace_trace::TraceReader::new(&buf[..]).unwrap();
    let mut s = Streams {
        bits: Vec::new(),
        indirect: Vec::new(),
        escapes: Vec::new(),
        traps: Vec::new(),
        totals: Totals::default(),
    };
    // One segment: each stream can be drained on its own.
    while r.peek_record(0, StreamKind::Indirect).unwrap().is_some() {
        let v = r.next_record(0, StreamKind::Indirect).unwrap().unwrap();
        s.indirect.push(v);
    }
    while r.peek_record(0, StreamKind::Escapes).unwrap().is_some() {
        let v = r.next_record(0, StreamKind::Escapes).unwrap().unwrap();
        s.escapes.push(v);
    }
    while let Some(b) = r.next_bit(0).unwrap() {
        s.bits.push(b);
    }
    s.totals = r.finish().unwrap();
    s
}

fn write(elf: &Elf, s: &Streams) -> Vec<u8> {
    let mut buf = Vec::new();
    let mut w = TraceWriter::new(&mut buf, &Header::new(elf.identity(), 32, 1)).unwrap();
    for &v in &s.indirect {
        w.record(0, StreamKind::Indirect, v);
    }
    for &v in &s.escapes {
        w.record(0, StreamKind::Escapes, v);
    }
    for &v in &s.traps {
        w.record(0, StreamKind::Traps, v);
    }
    for &b in &s.bits {
        w.branch(0, b);
    }
    w.finish(&s.totals).unwrap();
    buf
}

/// Both replays of `trace`: they must agree, and neither may panic.
fn agree(elf: &Elf, program: &Program, trace: &[u8], tag: u64) -> Result<bool, TestCaseError> {
    let path = std::env::temp_dir().join(format!(
        "retrace-garbage-{}-{tag:x}.rtrace",
        std::process::id()
    ));
    std::fs::write(&path, trace).unwrap();
    let cores = [retrace_timing::preset("rocket").unwrap()];
    let entry = Addr(elf.entry);
    let memo = estimate_trace(&program.table, entry, &path, &cores, Fidelity::Fast, None);
    let step = estimate_trace_stepwise(&program.table, entry, &path, &cores, Fidelity::Fast, None);
    let _ = std::fs::remove_file(&path);
    match (memo, step) {
        (Ok(m), Ok(s)) => {
            let (m, s) = (m[0].0, s[0].0);
            prop_assert!(m.same_results(&s), "memoised {:?}, step by step {:?}", m, s);
            Ok(true)
        }
        (Err(m), Err(s)) => {
            prop_assert_eq!(m.to_string(), s.to_string());
            Ok(false)
        }
        (m, s) => {
            prop_assert!(
                false,
                "memoised {:?} vs step by step {:?}",
                m.map(|_| ()),
                s.map(|_| ())
            );
            unreachable!()
        }
    }
}

#[test]
fn real_history_replays_and_memo_agrees() {
    let (elf, program) = load("crc32-rv32-O2");
    let s = record(&elf, "crc32-rv32-O2");
    assert!(s.bits.len() > 100_000, "{} bits", s.bits.len());
    assert!(
        agree(&elf, &program, &write(&elf, &s), 0).unwrap(),
        "the unchanged history replays"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn one_changed_item_never_panics_and_memo_agrees(
        pos in any::<prop::sample::Index>(),
        what in 0u8..5,
        value in 0u64..8,
    ) {
        use std::sync::OnceLock;
        static RUN: OnceLock<(Elf, Program, Streams)> = OnceLock::new();
        let (elf, program, streams) = RUN.get_or_init(|| {
            let (elf, program) = load("crc32-rv32-O2");
            let s = record(&elf, "crc32-rv32-O2");
            (elf, program, s)
        });
        let mut s = Streams {
            bits: streams.bits.clone(),
            indirect: streams.indirect.clone(),
            escapes: streams.escapes.clone(),
            traps: Vec::new(),
            totals: streams.totals,
        };
        match what {
            // Flip a branch bit somewhere in the run.
            0 | 1 => {
                let i = pos.index(s.bits.len());
                s.bits[i] = !s.bits[i];
            }
            // Change an indirect record, or add an escape.
            2 if !s.indirect.is_empty() => {
                let i = pos.index(s.indirect.len());
                s.indirect[i] = value;
            }
            // Add a trap somewhere in the run, to the program's entry: the
            // memoised replay must not carry a stretch across it.
            4 => {
                let at = pos.index(s.totals.instructions as usize) as u64;
                s.traps = vec![at, NEW_TARGET, elf.entry];
            }
            _ => {
                s.escapes.push(value);
                s.escapes.push(elf.entry + value * 2);
                s.totals.escapes += 1;
            }
        }
        agree(elf, program, &write(elf, &s), pos.index(1 << 30) as u64)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn nonsense_history_never_panics_and_memo_agrees(
        seed in any::<u64>(),
        bits in 0u32..20_000,
        every in 1u32..40,
        instructions in 0u64..400_000,
    ) {
        let (elf, program) = program();
        let trace = garbage(&elf, seed, bits, every, instructions);
        agree(&elf, &program, &trace, seed)?;
    }
}
