//! Recording from host code against recording interpreted: every bundled
//! program (one hart, and the multi-hart examples on 2 and 8 harts), with
//! and without data-cache measurement, and with budgets that end the run
//! inside host code, must leave the same trace, byte for byte. The
//! interpreted recording is the reference: the recorder paired with
//! [`Interpreted`], which keeps the engine from running host code. The
//! engine's polls of the observer between stretches of host code (one per
//! block when interpreted) also show that host code did run.

use retrace_program::Elf;
use retrace_sim::observer::{Interpreted, Observer};
use retrace_sim::record::record_run_harts;
use retrace_sim::{Console, HostConfig};
use retrace_testkit::programs::{elf_files, program_dir};
use retrace_timing::CacheModel;

/// The trace of `elf` on `harts` harts, the recorder watched by `watcher`
/// as well, and the instructions retired.
fn trace<O: Observer>(
    elf: &Elf,
    harts: usize,
    name: &str,
    dcaches: &[CacheModel],
    max: Option<u64>,
    watcher: &mut O,
) -> (Vec<u8>, u64) {
    let host = HostConfig {
        cmdline: name.to_string(),
        ..HostConfig::default()
    };
    let mut out = Vec::new();
    let rec = record_run_harts(
        elf,
        host,
        Console::null(),
        max,
        &mut out,
        retrace_trace::Header::new(0, elf.xlen.bits() as u8, harts as u16),
        dcaches,
        watcher,
        harts,
        None,
    )
    .unwrap_or_else(|e| panic!("{name}: {e}"));
    (out, rec.run.instructions)
}

/// Counts the engine's polls ([`Observer::keep_going`]): one per block
/// interpreted, one per entry into host code, which runs many.
#[derive(Default)]
struct Polls(u64);

impl Observer for Polls {
    const RETIRE: bool = false;
    const HOST_CODE: bool = true;
    fn keep_going(&mut self) -> bool {
        self.0 += 1;
        true
    }
}

/// The engine's polls, interpreted and from host code, over the runs of
/// one test.
#[derive(Default)]
struct Totals {
    interpreted: u64,
    host: u64,
}

impl Totals {
    /// Host code must have run most of the instructions: with it the
    /// engine polls at least `factor` times less often than interpreted.
    fn check(&self, factor: u64) {
        assert!(
            self.host * factor < self.interpreted,
            "host code did not run: {} polls from host code against {} interpreted",
            self.host,
            self.interpreted
        );
    }
}

/// Record both ways and compare; the run's instruction count.
fn both_ways(
    elf: &Elf,
    harts: usize,
    name: &str,
    dcaches: &[CacheModel],
    max: Option<u64>,
    totals: &mut Totals,
) -> u64 {
    let mut interpreted_polls = (Interpreted, Polls::default());
    let (interpreted, n) = trace(elf, harts, name, dcaches, max, &mut interpreted_polls);
    let mut host_polls = Polls::default();
    let (host, m) = trace(elf, harts, name, dcaches, max, &mut host_polls);
    totals.interpreted += interpreted_polls.1 .0;
    totals.host += host_polls.0;
    assert_eq!(n, m, "{name} on {harts} hart(s), budget {max:?}");
    assert!(
        interpreted == host,
        "{name} on {harts} hart(s), budget {max:?}, {} data caches: traces differ ({} and {} bytes)",
        dcaches.len(),
        interpreted.len(),
        host.len()
    );
    n
}

/// Two geometries, so that the measured miss rates are in the trace.
fn dcaches() -> Vec<CacheModel> {
    [(32 << 10, 8, 64), (4 << 10, 2, 32)]
        .map(|(size, ways, line)| CacheModel {
            size,
            ways,
            line,
            miss_penalty: 10,
        })
        .to_vec()
}

fn elf(path: &std::path::Path) -> (Elf, String) {
    let elf = Elf::parse(&std::fs::read(path).unwrap()).unwrap();
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    (elf, name)
}

#[test]
fn every_bundled_program_records_the_same_from_host_code() {
    let files = elf_files(&program_dir());
    assert!(files.len() >= 20, "bundled programs missing");
    let caches = dcaches();
    let mut totals = Totals::default();
    for path in files {
        let (elf, name) = elf(&path);
        let t = &mut totals;
        let all = both_ways(&elf, 1, &name, &caches, None, t);
        both_ways(&elf, 1, &name, &[], None, t);
        // Budgets that end the run inside host code (odd, so that they
        // fall inside blocks).
        if all > 10_000 {
            both_ways(&elf, 1, &name, &caches, Some(all / 3 + 7), t);
            both_ways(&elf, 1, &name, &[], Some(all - 1_001), t);
        }
    }
    totals.check(4);
}

#[test]
fn every_multi_hart_example_records_the_same_from_host_code() {
    let files = elf_files(&program_dir().join("mp"));
    assert!(files.len() >= 10, "multi-hart examples missing");
    let caches = dcaches();
    let mut totals = Totals::default();
    for path in files {
        let (elf, name) = elf(&path);
        let t = &mut totals;
        for harts in [2, 8] {
            let all = both_ways(&elf, harts, &name, &caches, None, t);
            both_ways(&elf, harts, &name, &[], None, t);
            both_ways(&elf, harts, &name, &[], Some(all * 5 / 7 + 3), t);
        }
    }
    // Every synchronisation call (every few dozen instructions in some
    // examples) ends an entry into host code: 3.6 times fewer polls.
    totals.check(2);
}
