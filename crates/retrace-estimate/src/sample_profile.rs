//! A recorded run as an LLVM sample profile (the AutoFDO text format that
//! `clang -fprofile-sample-use` reads), so that a RISC-V program can be
//! compiled with profile-guided optimisation from retrace's exact branch
//! history — and the gain estimated on a core the user does not have.
//!
//! The replay gives each partial program's executions; every instruction
//! on its path ran that often. Sample profiles name code by function and
//! line offset from the function's first line (`retrace_program::lines`,
//! from the program's DWARF; inlined code counts at its call site), so
//! the profile of one build applies to any build of the same source. Per
//! function:
//!
//! ```text
//! name:TOTAL:HEAD
//!  OFFSET: COUNT [CALLEE:COUNT …]
//! ```
//!
//! where a line's count is the most any of its instructions executed (the
//! executions of the line's hottest block), TOTAL the sum of the line
//! counts, HEAD the function's entries, and a call line lists the direct
//! callees with their calls from it.

use crate::profile::Profile;
use retrace_program::lines::{locate, LinesError, SourceLine};
use retrace_program::{End, PpTable};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One function's lines.
#[derive(Default)]
struct FunctionSamples {
    /// Per line offset: its count, and its direct callees with calls.
    lines: BTreeMap<u32, (u64, BTreeMap<String, u64>)>,
}

/// The sample profile of `profile` (a replay of the program whose table is
/// `table`, its ELF file `elf`): see the module documentation. Functions
/// are ordered by their total, hottest first.
pub fn sample_profile(
    profile: &Profile,
    table: &PpTable,
    elf: &[u8],
) -> Result<String, LinesError> {
    // Every executed instruction's count, and each call site's callee.
    let mut executed: BTreeMap<u64, u64> = BTreeMap::new();
    let mut calls: Vec<(u64, u64, u64)> = Vec::new();
    for p in &profile.hottest {
        // Partial programs the replay added to its own copy of the table
        // (code reached only at run time) are not in `table`.
        if p.pp.index() >= table.len() {
            continue;
        }
        let mut last = 0;
        for (addr, _) in table.insts(p.pp) {
            *executed.entry(addr.get()).or_default() += p.executed;
            last = addr.get();
        }
        if let End::Call {
            target: Some(t), ..
        } = table.get(p.pp).end
        {
            calls.push((last, table.get(t).start.get(), p.executed));
        }
    }
    // One pass over the DWARF: the executed addresses, then the callees'
    // entries.
    let addrs: Vec<u64> = executed.keys().copied().collect();
    let wanted: Vec<u64> = addrs
        .iter()
        .copied()
        .chain(calls.iter().map(|c| c.1))
        .collect();
    let mut lines: Vec<Option<SourceLine>> = locate(elf, &wanted)?
        .into_iter()
        .map(|l| l.function_line)
        .collect();
    let entries = lines.split_off(addrs.len());
    let mut functions: BTreeMap<String, FunctionSamples> = BTreeMap::new();
    for ((_, count), line) in executed.iter().zip(&lines) {
        let Some(SourceLine { function, offset }) = line else {
            continue;
        };
        let slot = functions
            .entry(function.clone())
            .or_default()
            .lines
            .entry(*offset)
            .or_default();
        slot.0 = slot.0.max(*count);
    }
    let at = |addr: u64| {
        addrs
            .binary_search(&addr)
            .ok()
            .and_then(|i| lines[i].as_ref())
    };
    for ((site, _, count), callee) in calls.iter().zip(&entries) {
        let (Some(line), Some(callee)) = (at(*site), callee) else {
            continue;
        };
        let slot = functions
            .entry(line.function.clone())
            .or_default()
            .lines
            .entry(line.offset)
            .or_default();
        *slot.1.entry(callee.function.clone()).or_default() += count;
    }
    let heads: BTreeMap<&str, u64> = profile
        .functions
        .iter()
        .map(|f| (f.name.as_str(), f.calls))
        .collect();
    let mut ordered: Vec<(u64, &String, &FunctionSamples)> = functions
        .iter()
        .map(|(name, f)| (f.lines.values().map(|l| l.0).sum(), name, f))
        .filter(|(total, _, _)| *total > 0)
        .collect();
    ordered.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    let mut out = String::new();
    for (total, name, f) in ordered {
        let head = heads.get(name.as_str()).copied().unwrap_or(0);
        let _ = writeln!(out, "{name}:{total}:{head}");
        for (offset, (count, callees)) in &f.lines {
            let _ = write!(out, " {offset}: {count}");
            for (callee, n) in callees {
                let _ = write!(out, " {callee}:{n}");
            }
            out.push('\n');
        }
    }
    Ok(out)
}
