//! Recording from host code against recording interpreted: every bundled
//! program (one hart, and the multi-hart examples on 2 and 8 harts), with
//! and without data-cache measurement, and with budgets that end the run
//! inside host code, must leave the same trace, byte for byte. The
//! interpreted recording is the reference: the recorder paired with
//! [`Interpreted`], which keeps the engine from running host code.

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

/// Record both ways and compare; the run's instruction count.
fn both_ways(elf: &Elf, harts: usize, name: &str, dcaches: &[CacheModel], max: Option<u64>) -> u64 {
    let (interpreted, n) = trace(elf, harts, name, dcaches, max, &mut Interpreted);
    let (host, m) = trace(elf, harts, name, dcaches, max, &mut ());
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
    for path in files {
        let (elf, name) = elf(&path);
        let all = both_ways(&elf, 1, &name, &caches, None);
        both_ways(&elf, 1, &name, &[], None);
        // Budgets that end the run inside host code (odd, so that they
        // fall inside blocks).
        if all > 10_000 {
            both_ways(&elf, 1, &name, &caches, Some(all / 3 + 7));
            both_ways(&elf, 1, &name, &[], Some(all - 1_001));
        }
    }
}

#[test]
fn every_multi_hart_example_records_the_same_from_host_code() {
    let files = elf_files(&program_dir().join("mp"));
    assert!(files.len() >= 10, "multi-hart examples missing");
    let caches = dcaches();
    for path in files {
        let (elf, name) = elf(&path);
        for harts in [2, 8] {
            let all = both_ways(&elf, harts, &name, &caches, None);
            both_ways(&elf, harts, &name, &[], None);
            both_ways(&elf, harts, &name, &[], Some(all * 5 / 7 + 3));
        }
    }
}
