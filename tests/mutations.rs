//! The mutation suite: every input format retrace reads — ELF executables,
//! traces, core descriptions (TOML), clock files (frequency histories,
//! synchronisation rounds, events; CSV and JSON) — fed valid files with
//! random damage (bit flips, overwritten bytes, cuts, insertions, pieces
//! of the file spliced elsewhere), and each reader and what follows it
//! (analysis, a bounded run, an estimate, a correction) must answer with a
//! result or an error, never a panic or a hang.
//!
//! First every file of the crash corpus `tests/corpus/FORMAT/` is replayed:
//! inputs that once broke a reader (or came close), kept so they never
//! break one again. A failing mutation prints the input's bytes; save them
//! there under a name that says what they hit.
//!
//! `RETRACE_MUTATION_CASES` sets the cases per format (default 1000: under
//! ten seconds in all on two cores; CI runs the default); proptest keeps
//! the seeds of past failures in `tests/mutations.proptest-regressions`.
//!
//! What it has found so far: a trap handler that traps itself ran forever
//! whatever `--max-insns` said (`corpus/elf/handler-traps-itself.elf`).

use proptest::prelude::*;
use retrace_clock::formats::{self, BadRows, ReadOptions};
use retrace_estimate::{estimate_trace, Fidelity};
use retrace_program::{Addr, Elf, Program};
use retrace_sim::record::record_run;
use retrace_sim::{Console, HostConfig, Machine, MachineConfig};
use retrace_testkit::programs::{example_program, root};
use retrace_timing::{preset, CoreModel};
use retrace_trace::{Header, TraceReader};
use std::path::Path;
use std::sync::OnceLock;

/// One kind of damage.
#[derive(Clone, Debug)]
enum Damage {
    /// Flip bit `bit` of the byte at `at`.
    Flip { at: prop::sample::Index, bit: u8 },
    /// Overwrite the byte at `at`.
    Set { at: prop::sample::Index, value: u8 },
    /// Cut the input at `at`.
    Cut { at: prop::sample::Index },
    /// Insert `bytes` at `at`.
    Insert {
        at: prop::sample::Index,
        bytes: Vec<u8>,
    },
    /// Copy `len` bytes from `from` over the bytes at `to`.
    Splice {
        from: prop::sample::Index,
        to: prop::sample::Index,
        len: usize,
    },
    /// Put an extreme value (0, all ones, a sign bit) at `at`, 4 or 8
    /// bytes wide: the lengths, counts and addresses readers must check.
    Extreme {
        at: prop::sample::Index,
        which: u8,
        wide: bool,
    },
}

fn damage() -> impl Strategy<Value = Damage> {
    let at = any::<prop::sample::Index>;
    prop_oneof![
        (at(), 0u8..8).prop_map(|(at, bit)| Damage::Flip { at, bit }),
        (at(), any::<u8>()).prop_map(|(at, value)| Damage::Set { at, value }),
        at().prop_map(|at| Damage::Cut { at }),
        (at(), prop::collection::vec(any::<u8>(), 1..16))
            .prop_map(|(at, bytes)| Damage::Insert { at, bytes }),
        (at(), at(), 1usize..64).prop_map(|(from, to, len)| Damage::Splice { from, to, len }),
        (at(), 0u8..4, any::<bool>()).prop_map(|(at, which, wide)| Damage::Extreme {
            at,
            which,
            wide
        }),
    ]
}

/// `input` with every damage of `list` applied in turn.
fn damaged(input: &[u8], list: &[Damage]) -> Vec<u8> {
    let mut b = input.to_vec();
    for d in list {
        if b.is_empty() {
            break;
        }
        let n = b.len();
        match d {
            Damage::Flip { at, bit } => b[at.index(n)] ^= 1 << bit,
            Damage::Set { at, value } => b[at.index(n)] = *value,
            Damage::Cut { at } => b.truncate(at.index(n)),
            Damage::Insert { at, bytes } => {
                let i = at.index(n + 1);
                b.splice(i..i, bytes.iter().copied());
            }
            Damage::Splice { from, to, len } => {
                let (from, to) = (from.index(n), to.index(n));
                let len = (*len).min(n - from).min(n - to);
                let piece = b[from..from + len].to_vec();
                b[to..to + len].copy_from_slice(&piece);
            }
            Damage::Extreme { at, which, wide } => {
                let v: u64 = [0, u64::MAX, 1 << 63, 1 << 31][*which as usize];
                let bytes = v.to_le_bytes();
                let w = if *wide { 8 } else { 4 };
                let i = at.index(n);
                let w = w.min(n - i);
                b[i..i + w].copy_from_slice(&bytes[..w]);
            }
        }
    }
    b
}

fn cases() -> u32 {
    std::env::var("RETRACE_MUTATION_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000)
}

/// The corpus files of one format.
fn corpus(format: &str) -> Vec<(String, Vec<u8>)> {
    let dir = root().join("tests/corpus").join(format);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{}: empty corpus", dir.display());
    files
        .into_iter()
        .map(|p| (p.display().to_string(), std::fs::read(&p).unwrap()))
        .collect()
}

// ----- what each format's input goes through --------------------------------

/// Parse, analyse, and run a few thousand instructions (the machine loads
/// what the ELF says; host files are off limits by default).
fn through_elf(bytes: &[u8]) {
    let Ok(elf) = Elf::parse(bytes) else { return };
    let _ = Program::analyse(&elf);
    if let Ok(mut m) = Machine::new(
        &elf,
        &MachineConfig::default(),
        HostConfig::default(),
        Console::null(),
    ) {
        m.run(Some(20_000), &mut ());
    }
}

/// The base of the trace cases: a short program, its table and its trace.
struct TraceBase {
    elf: Elf,
    program: Program,
    trace: Vec<u8>,
}

fn trace_base() -> &'static TraceBase {
    static BASE: OnceLock<TraceBase> = OnceLock::new();
    BASE.get_or_init(|| {
        let elf = Elf::parse(&example_program("nqueens-rv32-O2.elf").bytes()).unwrap();
        let program = Program::analyse(&elf).unwrap();
        let mut trace = Vec::new();
        let host = HostConfig {
            cmdline: "4 1".into(),
            ..HostConfig::default()
        };
        let geometries: Vec<_> = preset("rocket").unwrap().dcache.into_iter().collect();
        let mut header = Header::new(0, 32, 1);
        header.program = "nqueens-rv32-O2.elf".into();
        record_run(
            &elf,
            host,
            Console::null(),
            Some(1_000_000),
            &mut trace,
            header,
            &geometries,
        )
        .unwrap();
        TraceBase {
            elf,
            program,
            trace,
        }
    })
}

/// Read every record, then estimate on a context-free and a rocket core.
fn through_trace(bytes: &[u8]) {
    if let Ok(mut r) = TraceReader::new(bytes) {
        while let Ok(Some(_)) = r.next_bit(0) {}
        let _ = r.finish_all();
    }
    let base = trace_base();
    let cores = [preset("inorder5").unwrap(), preset("rocket").unwrap()];
    for fidelity in [Fidelity::Fast, Fidelity::Control] {
        let _ = estimate_trace(
            &base.program.table,
            Addr(base.elf.entry),
            bytes,
            &cores,
            fidelity,
            None,
        );
    }
}

/// Load the description and, when it loads, estimate the base trace on it.
fn through_toml(bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    let Ok(core) = CoreModel::from_toml(&text, "mutated.toml") else {
        return;
    };
    let base = trace_base();
    if core.supports(retrace_isa::Xlen::Rv32) {
        let _ = estimate_trace(
            &base.program.table,
            Addr(base.elf.entry),
            &base.trace[..],
            std::slice::from_ref(&core),
            Fidelity::Control,
            None,
        );
    }
}

/// Parse as every clock format, strictly and skipping bad rows, and
/// correct the events of the corpus's history and rounds.
fn through_clock(bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    for bad_rows in [BadRows::Fail, BadRows::Skip] {
        for width in [None, Some(retrace_clock::CounterWidth::new(32).unwrap())] {
            let options = ReadOptions { bad_rows, width };
            for name in ["x.csv", "x.json", "x.jsonl", "x.txt"] {
                let path = Path::new(name);
                let history = formats::parse_history(&text, path, options);
                let sync = formats::parse_sync(&text, path, options);
                if let Ok(e) = formats::parse_events(&text, path, options) {
                    if let (Ok(h), Ok(s)) = (&history, &sync) {
                        correct(h, s, &e);
                    }
                    let (h, s) = clock_base();
                    correct(h, s, &e);
                }
            }
        }
    }
}

fn correct(h: &formats::HistoryFile, s: &formats::SyncFile, e: &formats::EventFile) {
    for estimator in [
        retrace_clock::OffsetEstimator::Mean,
        retrace_clock::OffsetEstimator::MinRtt,
    ] {
        for drift in [
            retrace_clock::DriftModel::Constant,
            retrace_clock::DriftModel::Piecewise,
            retrace_clock::DriftModel::Fit,
        ] {
            let Ok(sync) = retrace_clock::synchronise(&h.histories, &s.rows, estimator, drift)
            else {
                continue;
            };
            let corrector = retrace_clock::Corrector::new(&h.histories, &sync);
            let mut pass = corrector.pass();
            for ev in &e.events {
                let _ = pass.correct(ev.processor, ev.counter);
            }
        }
    }
}

/// A valid history and set of rounds for events to be corrected against.
fn clock_base() -> &'static (formats::HistoryFile, formats::SyncFile) {
    static BASE: OnceLock<(formats::HistoryFile, formats::SyncFile)> = OnceLock::new();
    BASE.get_or_init(|| {
        let options = ReadOptions {
            bad_rows: BadRows::Fail,
            width: None,
        };
        (
            formats::parse_history(CLOCK_HISTORY, Path::new("h.csv"), options).unwrap(),
            formats::parse_sync(CLOCK_SYNC, Path::new("s.csv"), options).unwrap(),
        )
    })
}

const CLOCK_HISTORY: &str =
    "processor,counter,mhz\n1,0,100\n1,100000000,50\n2,0,25\n2,50000000,100\n";
const CLOCK_SYNC: &str = "reference,responder,A,B,C,a,b,c\n1,2,2000,4000,2100,4300,2200,4500\n";

// ----- the valid inputs the mutations start from ----------------------------

fn elf_inputs() -> Vec<Vec<u8>> {
    ["nqueens-rv32-O2.elf", "crc32-rv64-Os.elf"]
        .iter()
        .map(|n| example_program(n).bytes())
        .collect()
}

fn toml_inputs() -> Vec<Vec<u8>> {
    retrace_timing::PRESETS
        .iter()
        .map(|(_, text)| text.as_bytes().to_vec())
        .collect()
}

fn clock_inputs() -> Vec<Vec<u8>> {
    corpus("clock").into_iter().map(|(_, b)| b).collect()
}

/// Ends the whole test process, naming `format`, if it is still running
/// after five minutes: a reader that hangs on some input is a failure to
/// report, not a CI job to time out.
fn watchdog(format: &'static str) {
    std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_secs(300));
        eprintln!("mutations: the {format} cases still run after 300 s: a reader hangs");
        std::process::exit(101);
    });
}

fn run_mutations(inputs: Vec<Vec<u8>>, through: fn(&[u8])) {
    let config = ProptestConfig {
        cases: cases(),
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::Direct(
                "tests/mutations.proptest-regressions",
            ),
        )),
        ..ProptestConfig::default()
    };
    let mut runner = proptest::test_runner::TestRunner::new(config);
    let strategy = (
        prop::sample::select((0..inputs.len()).collect::<Vec<_>>()),
        prop::collection::vec(damage(), 1..8),
    );
    let result = runner.run(&strategy, |(which, list)| {
        let input = damaged(&inputs[which], &list);
        through(&input);
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

fn replay_corpus(format: &str, through: fn(&[u8])) {
    for (name, bytes) in corpus(format) {
        let r = std::panic::catch_unwind(|| through(&bytes));
        assert!(r.is_ok(), "corpus file {name} panicked");
    }
}

#[test]
fn elf_files() {
    watchdog("elf");
    replay_corpus("elf", through_elf);
    run_mutations(elf_inputs(), through_elf);
}

#[test]
fn traces() {
    watchdog("trace");
    replay_corpus("trace", through_trace);
    run_mutations(vec![trace_base().trace.clone()], through_trace);
}

#[test]
fn core_descriptions() {
    watchdog("toml");
    replay_corpus("toml", through_toml);
    run_mutations(toml_inputs(), through_toml);
}

#[test]
fn clock_files() {
    watchdog("clock");
    replay_corpus("clock", through_clock);
    run_mutations(clock_inputs(), through_clock);
}
