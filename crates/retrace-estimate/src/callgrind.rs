//! A profile in callgrind's format (valgrind's "Callgrind Format
//! Specification"), so that KCachegrind, QCachegrind and
//! `callgrind_annotate` show retrace's estimated cycles per source line and
//! instruction, and the call graph with each call's inclusive cost.
//!
//! Two events, `Cycles` and `Instructions`; positions `instr line` (every
//! cost line names the instruction's address and its source line). A
//! function's cost lines are its instructions' ([`Profile::instructions`]);
//! code inlined from another file is marked with `fi=`, as callgrind marks
//! it. Each call site's calls of a function follow its own cost line, as
//! `cfl=`/`cfn=`/`calls=` and the calls' inclusive cost. The data-cache
//! term, estimated for the whole run and charged to no instruction, is the
//! cost of a function of its own, `(data cache, estimated)`, so the totals
//! are the estimate's.

use crate::annotate::Lines;
use crate::profile::{CallEdge, Profile};
use retrace_program::FunctionRanges;
use retrace_sim::functions::FunctionMap;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

/// What the file says about the run besides the profile.
pub struct Header<'a> {
    /// The program's command line (`cmd:`).
    pub command: &'a str,
    /// The core and fidelity, for `desc:`.
    pub core: &'a str,
    /// The estimated data-cache term, in cycles (0 without one).
    pub dcache_cycles: u64,
}

/// The name shown for code outside every function.
const UNKNOWN: &str = "???";

/// `profile` as a callgrind profile, functions from `functions` (the ranges
/// the profile was made with), source lines from `lines`.
pub fn callgrind(
    profile: &Profile,
    functions: &FunctionRanges,
    lines: &Lines,
    header: &Header<'_>,
) -> String {
    let map = FunctionMap::new(&functions.ranges);
    let mut by_function: BTreeMap<Option<usize>, Vec<u64>> = BTreeMap::new();
    for &pc in profile.instructions.keys() {
        by_function.entry(map.lookup(pc)).or_default().push(pc);
    }
    let mut calls_at: HashMap<u64, Vec<&CallEdge>> = HashMap::new();
    for c in &profile.calls {
        calls_at.entry(c.site).or_default().push(c);
    }
    let position = |pc: u64| match lines.get(pc) {
        Some(s) => (s.file.as_str(), s.line),
        None => (UNKNOWN, 0),
    };
    let name = |f: Option<usize>| f.map_or(UNKNOWN, |f| functions.names[f].as_str());
    // A function's file: its entry's, as callgrind names a function by the
    // file it starts in.
    let file_of = |f: Option<usize>, first: u64| {
        let at = f.map_or(first, |f| functions.ranges[f].0);
        lines
            .get(at)
            .or(lines.get(first))
            .map_or(UNKNOWN, |s| s.file.as_str())
    };
    let (cycles, insns) = profile
        .instructions
        .values()
        .fold((0, 0), |(c, i), v| (c + v.cycles, i + v.executions));

    let mut o = String::new();
    let _ = writeln!(o, "# callgrind format");
    let _ = writeln!(o, "version: 1");
    let _ = writeln!(o, "creator: retrace {}", env!("CARGO_PKG_VERSION"));
    let _ = writeln!(o, "cmd: {}", header.command);
    let _ = writeln!(o, "desc: Core: {}", header.core);
    let _ = writeln!(
        o,
        "desc: Cycles are estimated by replaying a recorded branch history"
    );
    let _ = writeln!(o, "positions: instr line");
    let _ = writeln!(o, "events: Cycles Instructions");
    let _ = writeln!(o, "summary: {} {insns}", cycles + header.dcache_cycles);
    for (&f, pcs) in &by_function {
        let file = file_of(f, pcs[0]);
        let _ = writeln!(o, "\nfl={file}\nfn={}", name(f));
        let mut current = file;
        for &pc in pcs {
            let cost = profile.instructions[&pc];
            let (file, line) = position(pc);
            if file != current {
                let _ = writeln!(o, "fi={file}");
                current = file;
            }
            let _ = writeln!(o, "{pc:#x} {line} {} {}", cost.cycles, cost.executions);
            for c in calls_at.get(&pc).into_iter().flatten() {
                let entry = functions.ranges[c.callee].0;
                let (callee_file, callee_line) =
                    (file_of(Some(c.callee), entry), position(entry).1);
                let _ = writeln!(o, "cfl={callee_file}\ncfn={}", name(Some(c.callee)));
                let _ = writeln!(o, "calls={} {entry:#x} {callee_line}", c.calls);
                let _ = writeln!(o, "{pc:#x} {line} {} {}", c.cycles, c.instructions);
            }
        }
    }
    if header.dcache_cycles > 0 {
        let _ = writeln!(
            o,
            "\nfl={UNKNOWN}\nfn=(data cache, estimated)\n0 0 {} 0",
            header.dcache_cycles
        );
    }
    o
}
