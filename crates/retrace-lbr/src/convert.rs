//! Conversion (JP2024157581A claim 4): pairs of coverage sites back to the
//! machine branches of the binary, and the files real tools read.
//!
//! A pair (P, C) says: the block whose coverage call returns to P ran, and
//! the next instrumented block to run was the one whose call returns to C.
//! Between the two the processor executed P's block to its end, possibly
//! more uninstrumented code (callees without coverage, the rest of a
//! caller's block after a return), and C's block up to its call. [`Expander`]
//! finds that path in the disassembly: the path from P to C's call with
//! the fewest taken branches, never passing another coverage call. Its
//! taken branches are the LBR entries the hardware would have recorded; its
//! conditional branches passed over are the not-taken outcomes.
//!
//! What pairs cannot say is recorded, not hidden: a pair with more than one
//! possible path is *ambiguous* and takes the one with the fewest taken
//! branches (typically: a compiler-made branch around a move inside one
//! source-level block, which the coverage pass never saw; or a return from
//! a function called from several places); a pair with no path (the callback reached through
//! code objdump does not show, an indirect jump into a function other than
//! that of the next block) is
//! *unresolved* and left out of branch outputs.

use crate::disasm::{Code, Flow};
use crate::recording::Recording;
use crate::Error;
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt::Write as _;
use std::path::Path;

/// The machine path of one pair.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MachinePath {
    /// Taken branches in execution order: (source instruction, target).
    pub taken: Vec<(u64, u64)>,
    /// Conditional branches passed over (not taken), in order.
    pub not_taken: Vec<u64>,
    /// The coverage call that ends the path (C's block).
    pub end_call: u64,
    /// Another path between the same two sites exists.
    pub ambiguous: bool,
}

/// Why a pair has no path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Unresolved {
    /// The first pair of the run (no previous block).
    Entry,
    /// A site is not after a coverage call in the binary's .text.
    NotASite,
    /// No path with the allowed edges.
    NoPath,
}

/// A taken branch: (source instruction, target).
pub type Branch = (u64, u64);

/// An edge of the search: (next instruction index, taken branches it adds,
/// the branch).
type Edge = (usize, u32, Option<Branch>);

/// Where a search is going: C's coverage call; or, when the compiler
/// made the call of a function's last block a tail jump (the callback then
/// returns straight to the function's caller, so the site C is a return
/// address there), those tail jumps.
struct Goal {
    /// Instruction indexes that end the path.
    ends: Vec<usize>,
    /// Function of the first end and its entry.
    func: u32,
    entry: u64,
    /// Branches whose way the recorded `switch` value fixes: instruction
    /// index → the instruction it goes to ([`crate::dispatch::decide`]).
    forced: FxHashMap<usize, usize>,
    /// Where a return from the first site's function may go, when the
    /// pairs before this one say which call entered it
    /// ([`Expander::callers`]); every return site of its callers if None.
    returns_to: Option<rustc_hash::FxHashSet<u64>>,
    /// The first site's function.
    from_func: u32,
    /// Whether only functions whose address is taken return to indirect
    /// calls' return sites (a search without a path retries without).
    strict: bool,
}

/// Search state of one instruction.
#[derive(Clone, Copy)]
struct Seen {
    cost: u32,
    parent: usize,
    branch: Option<Branch>,
    done: bool,
}

/// Finds the machine path of pairs in one binary.
pub struct Expander<'a> {
    code: &'a Code,
    /// Return sites of direct calls, by callee function index.
    returns: FxHashMap<u32, Vec<u64>>,
    /// Return sites of indirect calls.
    indirect_returns: Vec<u64>,
    /// Functions an indirect call can enter, when the binary says which
    /// ([`Code::address_taken`], and the functions those tail-call):
    /// only they return to indirect calls' return sites.
    entered_indirectly: Option<rustc_hash::FxHashSet<u32>>,
    /// Most instructions looked at per search.
    pub budget: usize,
}

impl<'a> Expander<'a> {
    /// Index the calls of `code`.
    pub fn new(code: &'a Code) -> Expander<'a> {
        let mut returns: FxHashMap<u32, Vec<u64>> = FxHashMap::default();
        let mut indirect_returns = Vec::new();
        for insn in &code.insns {
            match insn.flow {
                Flow::Call(t) if Some(t) != code.callback => {
                    if let Some(callee) = code.insn(t) {
                        returns.entry(callee.func).or_default().push(insn.next);
                    }
                }
                Flow::CallIndirect => indirect_returns.push(insn.next),
                _ => {}
            }
        }
        // A tail call (a jump to another function's entry) makes the
        // callee return to its caller's callers.
        let tail: Vec<(u32, u32)> = code
            .insns
            .iter()
            .filter_map(|i| match i.flow {
                Flow::Jump(t) => code
                    .insn(t)
                    .filter(|c| c.func != i.func && code.functions[c.func as usize].entry == t)
                    .map(|c| (i.func, c.func)),
                _ => None,
            })
            .collect();
        let mut changed = true;
        while changed {
            changed = false;
            for &(caller, callee) in &tail {
                let from = returns.get(&caller).cloned().unwrap_or_default();
                let to = returns.entry(callee).or_default();
                for r in from {
                    if !to.contains(&r) {
                        to.push(r);
                        changed = true;
                    }
                }
            }
        }
        // An indirect tail call (`jmp *reg` where no jump table was found;
        // SQLite's `return p->xMethod(…)`) may enter any function, which
        // then returns to the tail caller's callers: return sites of every
        // function, as those of indirect calls are.
        let mut known: rustc_hash::FxHashSet<u64> = indirect_returns.iter().copied().collect();
        for i in &code.insns {
            if i.flow == Flow::JumpIndirect && !code.tables.contains_key(&i.addr) {
                for &r in returns.get(&i.func).map(Vec::as_slice).unwrap_or(&[]) {
                    if known.insert(r) {
                        indirect_returns.push(r);
                    }
                }
            }
        }
        let entered_indirectly = code.address_taken.as_ref().map(|taken| {
            let mut set: rustc_hash::FxHashSet<u32> = code
                .functions
                .iter()
                .enumerate()
                .filter(|(_, f)| taken.contains(&f.entry))
                .map(|(k, _)| k as u32)
                .collect();
            // An indirect tail call may enter any function.
            for i in &code.insns {
                if i.flow == Flow::JumpIndirect && !code.tables.contains_key(&i.addr) {
                    set.insert(i.func);
                }
            }
            let mut changed = true;
            while changed {
                changed = false;
                for &(caller, callee) in &tail {
                    if set.contains(&caller) && set.insert(callee) {
                        changed = true;
                    }
                }
            }
            set
        });
        Expander {
            code,
            returns,
            indirect_returns,
            entered_indirectly,
            budget: 100_000,
        }
    }

    /// The ways execution can leave instruction `u` on the way to `goal`
    /// without running another instrumented block.
    fn edges(&self, u: usize, goal: &Goal, out: &mut Vec<Edge>) {
        let code = self.code;
        let insn = code.insns[u];
        let at = |a: u64| code.at.get(&a).copied();
        let next = at(insn.next).filter(|_| insn.next != insn.addr);
        out.clear();
        if let Some(&to) = goal.forced.get(&u) {
            let branch = (insn.next != code.insns[to].addr || insn.flow == Flow::JumpIndirect)
                .then_some((insn.addr, code.insns[to].addr));
            out.push((to, u32::from(branch.is_some()), branch));
            return;
        }
        match insn.flow {
            // Another instrumented block: not on this pair's path.
            Flow::Call(t) | Flow::Jump(t) if Some(t) == code.callback => {}
            Flow::Next => out.extend(next.map(|n| (n, 0, None))),
            Flow::Cond(t) => {
                out.extend(next.map(|n| (n, 0, None)));
                out.extend(at(t).map(|n| (n, 1, Some((insn.addr, t)))));
            }
            // A tail call into code without coverage (a PLT entry: libc's
            // `free`) comes back as this function's return would.
            Flow::Jump(t)
                if code.insn(t).is_none_or(|c| {
                    c.func != insn.func && !code.functions[c.func as usize].instrumented
                }) =>
            {
                self.return_edges(insn, goal, out)
            }
            Flow::Jump(t) => out.extend(at(t).map(|n| (n, 1, Some((insn.addr, t))))),
            Flow::JumpIndirect if code.tables.contains_key(&insn.addr) => {
                for &t in &code.tables[&insn.addr] {
                    out.extend(at(t).map(|n| (n, 1, Some((insn.addr, t)))));
                }
            }
            Flow::JumpIndirect => {
                // A jump whose table was not found: land on the goal's
                // coverage call (the real target may be a few instructions
                // before it).
                if insn.func == goal.func {
                    for &e in &goal.ends {
                        out.push((e, 1, Some((insn.addr, code.insns[e].addr))));
                    }
                } else {
                    // An indirect tail call into the goal's function.
                    out.extend(at(goal.entry).map(|n| (n, 1, Some((insn.addr, goal.entry)))));
                }
            }
            Flow::Call(t) => {
                let instrumented = code
                    .insn(t)
                    .is_some_and(|c| code.functions[c.func as usize].instrumented);
                if instrumented {
                    out.extend(at(t).map(|n| (n, 1, Some((insn.addr, t)))));
                } else {
                    // An uninstrumented callee (libc) returns here.
                    out.extend(next.map(|n| (n, 0, None)));
                }
            }
            Flow::CallIndirect => {
                out.extend(next.map(|n| (n, 0, None)));
                out.extend(at(goal.entry).map(|n| (n, 1, Some((insn.addr, goal.entry)))));
            }
            Flow::Ret => self.return_edges(insn, goal, out),
            Flow::Stop => {}
        }
    }

    /// A return from `insn`'s function: to the return sites of its calls
    /// (only to those the pairs before say entered it, for the first
    /// site's function).
    fn return_edges(&self, insn: crate::disasm::Insn, goal: &Goal, out: &mut Vec<Edge>) {
        let direct = self
            .returns
            .get(&insn.func)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let only = goal
            .returns_to
            .as_ref()
            .filter(|_| insn.func == goal.from_func);
        let indirect: &[u64] = match &self.entered_indirectly {
            Some(set) if goal.strict && !set.contains(&insn.func) => &[],
            _ => &self.indirect_returns,
        };
        for &r in direct.iter().chain(indirect) {
            if only.is_some_and(|o| !o.contains(&r)) {
                continue;
            }
            out.extend(self.code.at.get(&r).map(|&n| (n, 1, Some((insn.addr, r)))));
        }
    }

    /// The return sites of the calls that the block of site `b` can make
    /// into the function of site `p` (directly, by an indirect call, or by
    /// a tail call that returns as it would): the code from `b` up to the
    /// next coverage call, within `b`'s function. An execution whose pair
    /// before (b, p) — or before the callee's second block — entered `p`'s
    /// function there returns to one of them: that is what a pair leaving
    /// the callee does not say and the pairs before it do.
    fn callers(&self, b: u64, p: u64) -> rustc_hash::FxHashSet<u64> {
        let code = self.code;
        let mut out = rustc_hash::FxHashSet::default();
        let (Some(&start), Some(pf)) = (code.at.get(&b), code.insn(p).map(|i| i.func)) else {
            return out;
        };
        let func = code.insns[start].func;
        let direct = self.returns.get(&pf).map(Vec::as_slice).unwrap_or(&[]);
        let mut seen = rustc_hash::FxHashSet::default();
        let mut stack = vec![start];
        while let Some(u) = stack.pop() {
            if !seen.insert(u) || seen.len() > 4096 {
                continue;
            }
            let insn = code.insns[u];
            if insn.func != func {
                continue;
            }
            let at = |a: u64| code.at.get(&a).copied();
            let next = at(insn.next).filter(|_| insn.next != insn.addr);
            match insn.flow {
                Flow::Call(t) | Flow::Jump(t) if Some(t) == code.callback => {}
                Flow::Next => stack.extend(next),
                Flow::Cond(t) => stack.extend(next.into_iter().chain(at(t))),
                Flow::Jump(t) => stack.extend(at(t)),
                Flow::JumpIndirect => {
                    for &t in code.tables.get(&insn.addr).into_iter().flatten() {
                        stack.extend(at(t));
                    }
                }
                Flow::Call(_) | Flow::CallIndirect => {
                    let r = insn.next;
                    if direct.contains(&r) || self.indirect_returns.contains(&r) {
                        out.insert(r);
                    }
                    stack.extend(next);
                }
                Flow::Ret | Flow::Stop => {}
            }
        }
        out
    }

    /// The instructions a path to site `to` ends at.
    fn goal(&self, to: u64) -> Option<Goal> {
        let code = self.code;
        let goal = |ends: Vec<usize>| {
            let first = *ends.first()?;
            let func = code.insns[first].func;
            Some(Goal {
                ends,
                func,
                entry: code.functions[func as usize].entry,
                forced: FxHashMap::default(),
                returns_to: None,
                from_func: u32::MAX,
                strict: true,
            })
        };
        if let Some(call) = code.call_before(to) {
            return goal(vec![code.at[&call.addr]]);
        }
        // A return address: the callee's last block tail-jumped to the callback.
        let i = *code.at.get(&to)?;
        let prev = code.insns.get(i.checked_sub(1)?)?;
        let callee = match prev.flow {
            Flow::Call(f) if prev.next == to => Some(code.insn(f)?.func),
            Flow::CallIndirect if prev.next == to => None,
            _ => return None,
        };
        let ends = code
            .insns
            .iter()
            .enumerate()
            .filter(|(_, j)| j.flow == Flow::Jump(code.callback.unwrap_or(u64::MAX)))
            .filter(|(_, j)| callee.is_none_or(|f| j.func == f))
            .map(|(k, _)| k)
            .collect();
        goal(ends)
    }

    /// Whether `goal` can be reached from any of the instructions `from`.
    /// One search over all of them: after a return, the others are every
    /// other return site of the function (thousands in a large program such
    /// as SQLite, whose indirect calls all count), and a search from each
    /// alone would walk the same code again and again.
    fn reaches(&self, from: Vec<usize>, goal: &Goal) -> bool {
        let mut seen = rustc_hash::FxHashSet::default();
        let mut stack = from;
        let mut edges = Vec::new();
        while let Some(u) = stack.pop() {
            if goal.ends.contains(&u) {
                return true;
            }
            if !seen.insert(u) || seen.len() > self.budget {
                continue;
            }
            self.edges(u, goal, &mut edges);
            stack.extend(edges.iter().map(|e| e.0));
        }
        false
    }

    /// The path from site `from` to site `to`.
    pub fn expand(&self, from: u64, to: u64) -> Result<MachinePath, Unresolved> {
        self.expand_with(from, to, Default::default())
    }

    /// The path from site `from` to site `to`, given what the pair
    /// recorded of `from`'s block (the value its `switch` dispatched on,
    /// how its comparisons came out): only the ways those lead are
    /// searched.
    pub fn expand_with(
        &self,
        from: u64,
        to: u64,
        ev: crate::dispatch::Evidence,
    ) -> Result<MachinePath, Unresolved> {
        self.expand_returning(from, to, ev, None)
    }

    /// [`Expander::expand_with`], a return from `from`'s function going
    /// only to `returns_to` if given.
    fn expand_returning(
        &self,
        from: u64,
        to: u64,
        ev: crate::dispatch::Evidence,
        returns_to: Option<rustc_hash::FxHashSet<u64>>,
    ) -> Result<MachinePath, Unresolved> {
        if from == 0 {
            return Err(Unresolved::Entry);
        }
        let code = self.code;
        let mut goal = self.goal(to).ok_or(Unresolved::NotASite)?;
        goal.forced = crate::dispatch::decide(code, from, ev);
        let start = *code.at.get(&from).ok_or(Unresolved::NotASite)?;
        goal.from_func = code.insns[start].func;
        goal.returns_to = returns_to;
        let found = self.search(start, &goal);
        if found.is_err() && self.entered_indirectly.is_some() {
            // The address of a function can be taken in ways the binary's
            // data does not show (computed): as if any could be entered
            // indirectly.
            goal.strict = false;
            return self.search(start, &goal);
        }
        found
    }

    /// Dijkstra from instruction `start` to `goal`.
    fn search(&self, start: usize, goal: &Goal) -> Result<MachinePath, Unresolved> {
        let code = self.code;

        // Dijkstra over instructions, cost = taken branches; ties broken
        // by address so the choice is deterministic.
        let mut seen: FxHashMap<usize, Seen> = FxHashMap::default();
        let mut heap = BinaryHeap::new();
        seen.insert(
            start,
            Seen {
                cost: 0,
                parent: usize::MAX,
                branch: None,
                done: false,
            },
        );
        heap.push(Reverse((0u32, code.insns[start].addr, start)));
        let mut pops = 0;
        let mut edges = Vec::with_capacity(16);
        while let Some(Reverse((cost, _, u))) = heap.pop() {
            let s = seen[&u];
            if s.done || s.cost != cost {
                continue;
            }
            seen.get_mut(&u).expect("seen").done = true;
            if goal.ends.contains(&u) {
                return Ok(self.path(&seen, goal, u));
            }
            pops += 1;
            if pops > self.budget || cost > 64 {
                break;
            }
            self.edges(u, goal, &mut edges);
            for &(v, w, branch) in &edges {
                let c = cost + w;
                match seen.get(&v) {
                    Some(sv) if sv.done || c >= sv.cost => {}
                    _ => {
                        seen.insert(
                            v,
                            Seen {
                                cost: c,
                                parent: u,
                                branch,
                                done: false,
                            },
                        );
                        heap.push(Reverse((c, code.insns[v].addr, v)));
                    }
                }
            }
        }
        Err(Unresolved::NoPath)
    }

    /// The path that ends at the goal, and whether any decision on it
    /// could have gone another way and still reached the goal.
    fn path(&self, seen: &FxHashMap<usize, Seen>, goal: &Goal, end: usize) -> MachinePath {
        let mut taken = Vec::new();
        let mut not_taken = Vec::new();
        let mut ambiguous = false;
        let mut edges = Vec::new();
        let mut v = end;
        loop {
            let Seen { parent, branch, .. } = seen[&v];
            if parent == usize::MAX {
                break;
            }
            match branch {
                Some(b) => taken.push(b),
                None => {
                    if let Flow::Cond(_) = self.code.insns[parent].flow {
                        not_taken.push(self.code.insns[parent].addr);
                    }
                }
            }
            // An indirect call is taken to enter the instrumented function
            // whose block comes next, not to pass over an uninstrumented
            // callee; so it is no fork for ambiguity.
            let entered = self.code.insns[parent].flow == Flow::CallIndirect && branch.is_some();
            if !ambiguous && !entered {
                self.edges(parent, goal, &mut edges);
                let others: Vec<usize> = edges.iter().map(|e| e.0).filter(|&o| o != v).collect();
                ambiguous = self.reaches(others, goal);
            }
            v = parent;
        }
        taken.reverse();
        not_taken.reverse();
        MachinePath {
            taken,
            not_taken,
            end_call: self.code.insns[end].addr,
            ambiguous,
        }
    }
}

/// One pair with its machine path.
#[derive(Clone, Debug)]
pub struct ConvertedPair {
    /// Previous site.
    pub from: u64,
    /// This site.
    pub to: u64,
    /// Occurrences (exact or estimated).
    pub count: u64,
    /// The machine path, or why there is none.
    pub path: Result<MachinePath, Unresolved>,
}

/// How much of the recording became machine branches, weighted by count.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ConversionStats {
    /// Distinct pairs.
    pub pairs: u64,
    /// Pair occurrences, without the run's first pair.
    pub occurrences: u64,
    /// Occurrences with a unique fewest-branch path.
    pub resolved: u64,
    /// Occurrences whose path was one of several.
    pub ambiguous: u64,
    /// Occurrences with no path (left out of branch outputs).
    pub unresolved: u64,
}

/// A recording matched with the binary it came from.
pub struct Converted<'a> {
    /// The recording.
    pub recording: &'a Recording,
    /// The binary's code.
    pub code: &'a Code,
    /// Every pair.
    pub pairs: Vec<ConvertedPair>,
    /// Totals.
    pub stats: ConversionStats,
}

/// Check that `binary` is the writer `rec` was recorded from.
pub fn check_binary(rec: &Recording, binary: &Path, bytes: &[u8]) -> Result<(), Error> {
    let hash = crate::recording::fnv_hex(bytes);
    if hash != rec.writer_hash {
        return Err(Error::BadInput(format!(
            "{} is not the binary this recording was made with (hash {hash}, recorded {}); convert with the writer that ran",
            binary.display(),
            rec.writer_hash
        )));
    }
    Ok(())
}

/// Find every pair's machine path.
///
/// A pair whose path returns from its first site's function to one of
/// several callers is split, where the recording counted the sites before
/// each pair (chains, `--exact` with `--analysed`): the sites before name
/// the block that entered the function, and each way in returns to the
/// calls that block makes ([`Expander::callers`]).
pub fn convert<'a>(rec: &'a Recording, code: &'a Code) -> Converted<'a> {
    let ex = Expander::new(code);
    let mut stats = ConversionStats {
        pairs: rec.pairs.len() as u64,
        ..Default::default()
    };
    let mut chains: FxHashMap<(u64, u64), Vec<&crate::recording::ChainCount>> =
        FxHashMap::default();
    for c in &rec.chains {
        chains.entry((c.from, c.to)).or_default().push(c);
    }
    let mut variants: FxHashMap<(u64, u64), usize> = FxHashMap::default();
    for p in &rec.pairs {
        *variants.entry((p.from, p.to)).or_insert(0) += 1;
    }
    let mut pairs = Vec::with_capacity(rec.pairs.len());
    for p in &rec.pairs {
        let ev = crate::dispatch::Evidence {
            value: p.value,
            relations: p.relations,
        };
        let path = ex.expand_with(p.from, p.to, ev);
        let mut split: Vec<(Result<MachinePath, Unresolved>, u64)> = Vec::new();
        if let (Ok(m), Some(cs), Some(1)) = (
            &path,
            chains.get(&(p.from, p.to)),
            variants.get(&(p.from, p.to)),
        ) {
            if m.ambiguous && ex.returns_from(p.from, m) {
                split = ex.by_callers(p.from, p.to, ev, cs, p.count);
            }
        }
        if split.is_empty() {
            split.push((path, p.count));
        }
        for (path, count) in split {
            match &path {
                Err(Unresolved::Entry) => {}
                Err(_) => stats.unresolved += count,
                Ok(m) if m.ambiguous => stats.ambiguous += count,
                Ok(_) => stats.resolved += count,
            }
            if p.from != 0 {
                stats.occurrences += count;
            }
            pairs.push(ConvertedPair {
                from: p.from,
                to: p.to,
                count,
                path,
            });
        }
    }
    Converted {
        recording: rec,
        code,
        pairs,
        stats,
    }
}

impl Expander<'_> {
    /// Whether `path` from site `from` returns from `from`'s function (a
    /// return, or a tail jump into uninstrumented code, to a return site).
    fn returns_from(&self, from: u64, path: &MachinePath) -> bool {
        let Some(f) = self.code.insn(from).map(|i| i.func) else {
            return false;
        };
        let sites = self.returns.get(&f).map(Vec::as_slice).unwrap_or(&[]);
        path.taken.iter().any(|&(src, dst)| {
            self.code
                .insn(src)
                .is_some_and(|i| i.func == f && matches!(i.flow, Flow::Ret | Flow::Jump(_)))
                && (sites.contains(&dst) || self.indirect_returns.contains(&dst))
        })
    }

    /// The paths of pair (`from`, `to`) split by the sites before it
    /// (`chains`): each way in returns to the calls of the block that
    /// entered `from`'s function — the calling site the recording's call
    /// stack names, or else the site just before, or the one before that
    /// when the site just before is in the function itself.
    /// Occurrences no chain accounts for keep the unconstrained path.
    fn by_callers(
        &self,
        from: u64,
        to: u64,
        ev: crate::dispatch::Evidence,
        chains: &[&crate::recording::ChainCount],
        count: u64,
    ) -> Vec<(Result<MachinePath, Unresolved>, u64)> {
        let func = |a: u64| self.code.insn(a).map(|i| i.func);
        let f = func(from);
        let mut groups: Vec<(Vec<u64>, u64)> = Vec::new();
        let mut accounted = 0u64;
        for c in chains {
            let b0 = c.before.first().copied().unwrap_or(0);
            // The call stack's frame, where the recording kept one; else
            // the sites before, which reach the call while the callee ran
            // no more than two blocks.
            let entered_by = if c.caller != 0 && func(c.caller) != f {
                Some(c.caller)
            } else if b0 != 0 && func(b0) != f {
                Some(b0)
            } else {
                c.before
                    .get(1)
                    .copied()
                    .filter(|&b1| b0 != 0 && b1 != 0 && func(b1) != f)
            };
            let mut key: Vec<u64> = entered_by
                .map(|b| self.callers(b, from).into_iter().collect())
                .unwrap_or_default();
            key.sort_unstable();
            accounted = accounted.saturating_add(c.count);
            match groups.iter_mut().find(|g| g.0 == key) {
                Some(g) => g.1 = g.1.saturating_add(c.count),
                None => groups.push((key, c.count)),
            }
        }
        if groups.iter().all(|g| g.0.is_empty()) || accounted > count {
            return Vec::new();
        }
        if count > accounted {
            match groups.iter_mut().find(|g| g.0.is_empty()) {
                Some(g) => g.1 += count - accounted,
                None => groups.push((Vec::new(), count - accounted)),
            }
        }
        let mut out: Vec<(Result<MachinePath, Unresolved>, u64)> = Vec::new();
        for (key, n) in groups {
            let only = (!key.is_empty()).then(|| key.into_iter().collect());
            let mut path = self.expand_returning(from, to, ev, only);
            if path.is_err() {
                // The calls found do not lead there (a way in the search
                // does not follow): as without the sites before.
                path = self.expand_with(from, to, ev);
            }
            match out.iter_mut().find(|o| o.0 == path) {
                Some(o) => o.1 += n,
                None => out.push((path, n)),
            }
        }
        out
    }
}

/// What a branch instruction is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BranchKind {
    /// Conditional jump.
    Conditional,
    /// Unconditional direct jump.
    Jump,
    /// Jump through a register or memory.
    IndirectJump,
    /// Direct call.
    Call,
    /// Call through a register or memory.
    IndirectCall,
    /// Return.
    Return,
}

impl BranchKind {
    /// The kind of a branch instruction; `None` for one that does not
    /// branch.
    pub(crate) fn of(flow: Flow) -> Option<BranchKind> {
        Some(match flow {
            Flow::Cond(_) => BranchKind::Conditional,
            Flow::Jump(_) => BranchKind::Jump,
            Flow::JumpIndirect => BranchKind::IndirectJump,
            Flow::Call(_) => BranchKind::Call,
            Flow::CallIndirect => BranchKind::IndirectCall,
            Flow::Ret => BranchKind::Return,
            _ => return None,
        })
    }
}

/// One target of a branch.
#[derive(Clone, Debug, Serialize)]
pub struct Target {
    /// Target address.
    pub to: String,
    /// `function+offset`.
    pub at: String,
    /// Times taken to it.
    pub count: u64,
}

/// One branch instruction of the binary with its outcomes.
#[derive(Clone, Debug, Serialize)]
pub struct BranchSite {
    /// Address.
    pub addr: String,
    /// `function+offset`.
    pub at: String,
    /// Kind.
    pub kind: BranchKind,
    /// Times executed (taken + not taken).
    pub executions: u64,
    /// Times taken.
    pub taken: u64,
    /// Taken ÷ executions.
    pub taken_probability: f64,
    /// Where it went, most frequent first.
    pub targets: Vec<Target>,
}

impl Converted<'_> {
    /// The paths' outcomes: taken branches (source → target → count) and
    /// conditional branches not taken (source → count), from resolved and
    /// ambiguous pairs.
    pub fn outcomes(&self) -> (FxHashMap<u64, FxHashMap<u64, u64>>, FxHashMap<u64, u64>) {
        let mut taken: FxHashMap<u64, FxHashMap<u64, u64>> = FxHashMap::default();
        let mut not_taken: FxHashMap<u64, u64> = FxHashMap::default();
        for p in &self.pairs {
            let Ok(path) = &p.path else { continue };
            for &(f, t) in &path.taken {
                *taken.entry(f).or_default().entry(t).or_insert(0) += p.count;
            }
            for &f in &path.not_taken {
                *not_taken.entry(f).or_insert(0) += p.count;
            }
        }
        (taken, not_taken)
    }

    /// Every executed branch instruction with its taken and not-taken counts
    /// (from resolved and ambiguous pairs), by address.
    pub fn branch_sites(&self) -> Vec<BranchSite> {
        let (taken, not_taken) = self.outcomes();
        sites(self.code, &taken, &not_taken)
    }

    /// `perf script -F ip,brstack`-style text for `llvm-profgen --perfscript`:
    /// one MMAP2 line for `binary`'s executable segment at its file
    /// addresses, then one sample line per pair occurrence (scaled so there
    /// are at most `max_samples` lines). A line holds the pair's taken
    /// branches, newest first, between two entries that bound the code the
    /// pair ran straight through: the oldest is the real return from the
    /// coverage callback to P, the newest starts at C's coverage call. That
    /// entry's target is the callback's return instruction rather than its
    /// entry, so `llvm-profgen` counts the call's line but records no call
    /// to the callback (which an uninstrumented build does not have).
    /// Every range between two entries is code that ran straight through
    /// and ends at a branch, as the tool checks.
    pub fn perfscript(
        &self,
        binary: &Path,
        bytes: &[u8],
        max_samples: u64,
    ) -> Result<String, Error> {
        let Some(cb_ret) = self.code.callback_ret else {
            return Err(Error::BadInput(format!(
                "{} has no __sanitizer_cov_trace_pc with a return in .text",
                binary.display()
            )));
        };
        let mut out = mmap_line(binary, bytes)?;
        let total: u64 = self
            .pairs
            .iter()
            .filter(|p| p.path.is_ok())
            .map(|p| p.count)
            .sum();
        let scale = if total > max_samples {
            max_samples as f64 / total as f64
        } else {
            1.0
        };
        for p in &self.pairs {
            let Ok(path) = &p.path else { continue };
            let lines = (p.count as f64 * scale).round() as u64;
            if lines == 0 {
                continue;
            }
            let mut line = String::new();
            let mut entry = |f: u64, t: u64| {
                let _ = write!(line, " {f:#x}/{t:#x}/P/-/-/0");
            };
            entry(path.end_call, cb_ret);
            for &(f, t) in path.taken.iter().rev() {
                entry(f, t);
            }
            entry(cb_ret, p.from);
            for _ in 0..lines {
                out.push_str(&line);
                out.push('\n');
            }
        }
        Ok(out)
    }

    /// BOLT's pre-aggregated profile (`perf2bolt -pa`) of the writer
    /// binary itself: what each pair's path did, aggregated over pairs.
    ///
    /// - `B <from> <to> <count> 0`: a taken branch of a path (the
    ///   mispredictions are unknown: 0). Besides the path's taken branches,
    ///   every pair also ran the return from the coverage callback to P
    ///   and C's call of the callback; those are real branches of the
    ///   writer, so they are written too (the callback is its hottest
    ///   function and the call graph should say so).
    /// - `F <start> <end> <count>`: code that ran straight through, from a
    ///   branch's target (or P) to the next branch's source (or C's call),
    ///   within one function. Ranges that would leave the function (a
    ///   path that passes over a call which does not return) are left out.
    ///
    /// Addresses are the binary's own (hexadecimal, no build-id prefix):
    /// BOLT takes them as-is, which is right for non-PIE executables and for
    /// PIE ones linked at 0. Lines are sorted; identical ones are merged.
    pub fn bolt_preaggregated(&self) -> Result<BoltProfile, Error> {
        let (Some(cb), Some(cb_ret)) = (self.code.callback, self.code.callback_ret) else {
            return Err(Error::BadInput(
                "the writer has no __sanitizer_cov_trace_pc with a return in .text".into(),
            ));
        };
        let mut branches: FxHashMap<(u64, u64), u64> = FxHashMap::default();
        let mut ranges: FxHashMap<(u64, u64), u64> = FxHashMap::default();
        let mut profile = BoltProfile::default();
        let func = |a: u64| self.code.insn(a).map(|i| i.func);
        // A straight-line range, counted if it stays in one function;
        // else the executions left out.
        let mut range = |start: u64, end: u64, n: u64| {
            if func(start).is_some() && func(start) == func(end) && start <= end {
                *ranges.entry((start, end)).or_insert(0) += n;
                0
            } else {
                n
            }
        };
        for p in &self.pairs {
            let Ok(path) = &p.path else { continue };
            let n = p.count;
            // The chain of taken branches this pair ran: the callback's
            // return to P, the path's own, C's call of the callback.
            let mut start = p.from;
            *branches.entry((cb_ret, p.from)).or_insert(0) += n;
            profile.callback_branches += n;
            for &(f, t) in &path.taken {
                *branches.entry((f, t)).or_insert(0) += n;
                profile.path_branches += n;
                profile.dropped_ranges += range(start, f, n);
                start = t;
            }
            let end = path.end_call;
            profile.dropped_ranges += range(start, end, n);
            // C's coverage call (or the tail jump to the callback).
            *branches.entry((end, cb)).or_insert(0) += n;
            profile.callback_branches += n;
        }
        profile.text = bolt_text(branches, ranges);
        Ok(profile)
    }
}

/// The branch sites of `code` with these outcomes (taken: source → target
/// → count; not taken: source → count), by address.
pub fn sites(
    code: &Code,
    taken: &FxHashMap<u64, FxHashMap<u64, u64>>,
    not_taken: &FxHashMap<u64, u64>,
) -> Vec<BranchSite> {
    let mut addrs: Vec<u64> = taken.keys().chain(not_taken.keys()).copied().collect();
    addrs.sort_unstable();
    addrs.dedup();
    addrs
        .into_iter()
        .map(|a| {
            let kind = code
                .insn(a)
                .and_then(|i| BranchKind::of(i.flow))
                .unwrap_or(BranchKind::Return);
            let mut targets: Vec<Target> = taken
                .get(&a)
                .map(|m| {
                    m.iter()
                        .map(|(&t, &n)| Target {
                            to: format!("{t:#x}"),
                            at: code.describe(t),
                            count: n,
                        })
                        .collect()
                })
                .unwrap_or_default();
            targets.sort_by(|x, y| y.count.cmp(&x.count).then(x.to.cmp(&y.to)));
            let t: u64 = targets.iter().map(|x| x.count).sum();
            let n = t + not_taken.get(&a).copied().unwrap_or(0);
            BranchSite {
                addr: format!("{a:#x}"),
                at: code.describe(a),
                kind,
                executions: n,
                taken: t,
                taken_probability: if n > 0 { t as f64 / n as f64 } else { 0.0 },
                targets,
            }
        })
        .collect()
}

/// The `MMAP2` line that opens a perfscript: `binary`'s executable segment
/// at its file addresses.
pub fn mmap_line(binary: &Path, bytes: &[u8]) -> Result<String, Error> {
    let (seg_addr, seg_len, seg_off) = exec_segment(binary, bytes)?;
    let abs = std::fs::canonicalize(binary).unwrap_or_else(|_| binary.to_path_buf());
    Ok(format!(
        "PERF_RECORD_MMAP2 1/1: [{seg_addr:#x}({seg_len:#x}) @ {seg_off:#x} 00:00 0 0]: r-xp {}\n",
        abs.display()
    ))
}

/// BOLT's pre-aggregated text: `B from to count 0` per taken branch, then
/// `F start end count` per straight-line range, each sorted.
pub fn bolt_text(branches: FxHashMap<Branch, u64>, ranges: FxHashMap<Branch, u64>) -> String {
    let mut text = String::new();
    let mut b: Vec<_> = branches.into_iter().collect();
    b.sort_unstable();
    let mut f: Vec<_> = ranges.into_iter().collect();
    f.sort_unstable();
    for ((from, to), n) in b {
        let _ = writeln!(text, "B {from:x} {to:x} {n} 0");
    }
    for ((from, to), n) in f {
        let _ = writeln!(text, "F {from:x} {to:x} {n}");
    }
    text
}

/// A BOLT pre-aggregated profile and what went into it.
#[derive(Clone, Debug, Default)]
pub struct BoltProfile {
    /// The profile text (`B` and `F` lines).
    pub text: String,
    /// Executions of the paths' taken branches (`B` lines not to or from
    /// the coverage callback); equal to the taken counts of
    /// [`Converted::branch_sites`].
    pub path_branches: u64,
    /// Executions of the calls of and returns from the coverage callback.
    pub callback_branches: u64,
    /// Straight-line ranges left out because they leave their function.
    pub dropped_ranges: u64,
}

/// The first executable segment of an ELF file: (address, size, file offset).
pub fn exec_segment(binary: &Path, bytes: &[u8]) -> Result<(u64, u64, u64), Error> {
    use object::{Object, ObjectSegment, SegmentFlags};
    let file = object::File::parse(bytes)
        .map_err(|_| Error::BadInput(format!("{} is not an ELF file", binary.display())))?;
    file.segments()
        .find(|s| matches!(s.flags(), SegmentFlags::Elf { p_flags } if p_flags & 1 != 0))
        .map(|s| (s.address(), s.size(), s.file_range().0))
        .ok_or_else(|| Error::BadInput(format!("{} has no executable segment", binary.display())))
}

/// The `llvm-profgen` to run: `LLVM_PROFGEN`, else the first of
/// `llvm-profgen`, `llvm-profgen-19` … `llvm-profgen-14` that runs.
pub fn find_profgen() -> Option<std::ffi::OsString> {
    if let Some(p) = std::env::var_os("LLVM_PROFGEN") {
        return Some(p);
    }
    let mut names = vec!["llvm-profgen".to_string()];
    names.extend((14..=19).rev().map(|v| format!("llvm-profgen-{v}")));
    names
        .into_iter()
        .map(Into::into)
        .find(|n: &std::ffi::OsString| {
            std::process::Command::new(n)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
}

/// An LLVM text sample profile of `binary` (for `clang
/// -fprofile-sample-use`), made by `llvm-profgen` from this recording's
/// branch stacks: `llvm-profgen` reads the binary's DWARF to turn the
/// address ranges into (function, line offset, discriminator) counts, so
/// the profile applies to any build of the same sources.
pub fn sample_profile(perfscript: &str, binary: &Path) -> Result<String, Error> {
    let tool = find_profgen().ok_or_else(|| {
        Error::Tool(
            "no llvm-profgen found (install Debian's llvm-14, or set LLVM_PROFGEN); \
             `--format perfscript` writes its input"
                .into(),
        )
    })?;
    let dir = tempfile::tempdir().map_err(|e| Error::io(Path::new("temporary directory"), e))?;
    let script = dir.path().join("branches.perfscript");
    std::fs::write(&script, perfscript).map_err(|e| Error::io(&script, e))?;
    let prof = dir.path().join("profile.txt");
    let out = std::process::Command::new(&tool)
        .arg(format!("--binary={}", binary.display()))
        .arg(format!("--perfscript={}", script.display()))
        .arg(format!("--output={}", prof.display()))
        .arg("--format=text")
        .output()
        .map_err(|e| Error::Tool(format!("cannot run {}: {e}", tool.to_string_lossy())))?;
    if !out.status.success() {
        return Err(Error::Tool(format!(
            "{} failed: {}",
            tool.to_string_lossy(),
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .next()
                .unwrap_or("")
        )));
    }
    std::fs::read_to_string(&prof).map_err(|e| Error::io(&prof, e))
}

/// How far sampled branch probabilities are from exact ones.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct ProbabilityError {
    /// Conditional branches compared.
    pub branches: usize,
    /// Mean |sampled − exact| taken probability, weighted by executions.
    pub weighted_mean: f64,
    /// The 95th percentile of that error, weighted by executions.
    pub p95: f64,
}

/// Compare the taken probabilities of conditional branches in a recording
/// that kept exact counts beside sampled ones (`record --check`).
pub fn probability_error(rec: &Recording, code: &Code) -> Option<ProbabilityError> {
    if rec.pairs.iter().any(|p| p.exact.is_none()) {
        return None;
    }
    let mut exact = rec.clone();
    for p in &mut exact.pairs {
        p.count = p.exact.unwrap_or(0);
    }
    let probs = |r: &Recording| -> FxHashMap<String, (u64, f64)> {
        convert(r, code)
            .branch_sites()
            .into_iter()
            .filter(|b| b.kind == BranchKind::Conditional)
            .map(|b| (b.addr, (b.executions, b.taken_probability)))
            .collect()
    };
    let sampled = probs(rec);
    let truth = probs(&exact);
    let mut rows: Vec<(f64, u64)> = truth
        .iter()
        .map(|(a, &(n, p))| {
            let q = sampled.get(a).map_or(0.0, |s| s.1);
            ((q - p).abs(), n)
        })
        .collect();
    let total: u64 = rows.iter().map(|r| r.1).sum();
    if total == 0 {
        return None;
    }
    let weighted_mean = rows.iter().map(|&(e, n)| e * n as f64).sum::<f64>() / total as f64;
    rows.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut acc = 0;
    let mut p95 = 0.0;
    for &(e, n) in &rows {
        acc += n;
        if acc as f64 >= 0.95 * total as f64 {
            p95 = e;
            break;
        }
    }
    Some(ProbabilityError {
        branches: rows.len(),
        weighted_mean,
        p95,
    })
}
