//! The seed's by-products of a replay (embodiment 1, step 5): cycles per
//! function, inclusive and exclusive, call counts, each branch's taken
//! probability, and the hottest partial programs — for one core.

use crate::estimator::Estimator;
use crate::walk::{Leave, Visit};
use retrace_program::{FuncId, PpId, PpTable, Program};
use rustc_hash::FxHashMap;

/// Per-function figures.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FunctionProfile {
    /// Function name.
    pub name: String,
    /// Cycles in its own partial programs.
    pub exclusive: u64,
    /// Cycles from entry to return, callees included (outermost
    /// activations, so recursion is not counted twice).
    pub inclusive: u64,
    /// Calls into it.
    pub calls: u64,
    /// Instructions executed in it.
    pub instructions: u64,
}

/// One conditional branch's statistics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BranchProfile {
    /// Address of the branch.
    pub pc: u64,
    /// Executions.
    pub executed: u64,
    /// Of which taken.
    pub taken: u64,
}

/// One partial program's share.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PpProfile {
    /// The partial program.
    pub pp: PpId,
    /// Its start address.
    pub start: u64,
    /// Executions.
    pub executed: u64,
    /// Cycles spent in it.
    pub cycles: u64,
}

/// The profile of a replay.
#[derive(Clone, Debug, Default)]
pub struct Profile {
    /// Functions with any activity, most exclusive cycles first.
    pub functions: Vec<FunctionProfile>,
    /// Branches, most executed first.
    pub branches: Vec<BranchProfile>,
    /// Partial programs, most cycles first.
    pub hottest: Vec<PpProfile>,
}

/// A visitor that times (through an [`Estimator`]) and profiles.
pub struct Profiler<'p> {
    /// The estimator doing the timing.
    pub estimator: Estimator,
    program: &'p Program,
    pp_function: Vec<Option<FuncId>>,
    branches: FxHashMap<u64, (u64, u64)>,
    frames: Vec<(usize, u64)>,
    active: Vec<u32>,
    inclusive: Vec<u64>,
    calls: Vec<u64>,
    cycles: u64,
}

impl<'p> Profiler<'p> {
    /// Profile `program` while `estimator` times it.
    pub fn new(estimator: Estimator, program: &'p Program) -> Profiler<'p> {
        let n = program.functions.len();
        Profiler {
            estimator,
            program,
            pp_function: Vec::new(),
            branches: FxHashMap::default(),
            frames: Vec::new(),
            active: vec![0; n],
            inclusive: vec![0; n],
            calls: vec![0; n],
            cycles: 0,
        }
    }

    fn function_of(&mut self, table: &PpTable, pp: PpId) -> Option<FuncId> {
        if pp == crate::machine::INVALID {
            return None;
        }
        let i = pp.index();
        if i >= self.pp_function.len() {
            // Resolve lazily: the table can grow during the replay.
            self.pp_function.resize(table.len().max(i + 1), None);
            for (id, p) in table.iter().skip(i) {
                self.pp_function[id.index()] = self.program.function_containing(p.start);
            }
        }
        self.pp_function[i]
    }

    fn leave(&mut self, f: usize, start: u64) {
        self.active[f] -= 1;
        if self.active[f] == 0 {
            self.inclusive[f] += self.cycles - start;
        }
    }

    fn elapsed(&self) -> u64 {
        self.estimator.cycles()
    }

    /// Build the profile after the walk (closes frames still open).
    pub fn finish(mut self, table: &PpTable) -> (Profile, Estimator) {
        self.cycles = self.elapsed();
        while let Some((f, start)) = self.frames.pop() {
            self.leave(f, start);
        }
        let n = self.program.functions.len();
        let mut funcs: Vec<FunctionProfile> = (0..n)
            .map(|f| FunctionProfile {
                name: self.program.functions[f].name.clone(),
                inclusive: self.inclusive[f],
                calls: self.calls[f],
                ..FunctionProfile::default()
            })
            .collect();
        let mut hottest = Vec::new();
        let per_pp = self.estimator.per_pp();
        for (id, p) in table.iter() {
            let i = id.index();
            let (executed, cycles) = per_pp.get(i).copied().unwrap_or((0, 0));
            if executed == 0 {
                continue;
            }
            if let Some(f) = self.pp_function.get(i).copied().flatten() {
                funcs[f.index()].exclusive += cycles;
                funcs[f.index()].instructions += executed * u64::from(p.len);
            }
            hottest.push(PpProfile {
                pp: id,
                start: p.start.get(),
                executed,
                cycles,
            });
        }
        funcs.retain(|f| f.exclusive > 0 || f.calls > 0);
        funcs.sort_by(|a, b| b.exclusive.cmp(&a.exclusive).then(a.name.cmp(&b.name)));
        hottest.sort_by(|a, b| b.cycles.cmp(&a.cycles).then(a.start.cmp(&b.start)));
        let mut branches: Vec<BranchProfile> = self
            .branches
            .iter()
            .map(|(&pc, &(executed, taken))| BranchProfile {
                pc,
                executed,
                taken,
            })
            .collect();
        branches.sort_by(|a, b| b.executed.cmp(&a.executed).then(a.pc.cmp(&b.pc)));
        (
            Profile {
                functions: funcs,
                branches,
                hottest,
            },
            self.estimator,
        )
    }
}

impl Visit<PpTable> for Profiler<'_> {
    fn pp(&mut self, table: &PpTable, pp: PpId, how: Leave, next: PpId) {
        self.estimator.pp(table, pp, how, next);
        self.cycles = self.elapsed();
        match how {
            Leave::Branch(taken) => {
                let e = self
                    .branches
                    .entry(table.get(pp).last.get())
                    .or_insert((0, 0));
                e.0 += 1;
                e.1 += u64::from(taken);
            }
            Leave::Call => {
                if let Some(f) = self.function_of(table, next) {
                    let f = f.index();
                    self.calls[f] += 1;
                    self.active[f] += 1;
                    self.frames.push((f, self.cycles));
                }
            }
            Leave::Return { .. } => {
                if let Some((f, start)) = self.frames.pop() {
                    self.leave(f, start);
                }
            }
            _ => {}
        }
        // Make sure the function of every executed PP is known for `finish`.
        self.function_of(table, pp);
    }

    fn last(&mut self, table: &PpTable, pp: PpId, executed: u32) {
        self.estimator.last(table, pp, executed);
        self.function_of(table, pp);
    }

    fn trap(&mut self, table: &PpTable, pp: PpId, executed: u32) {
        self.estimator.trap(table, pp, executed);
        self.function_of(table, pp);
    }

    fn cut(&mut self, table: &PpTable, pp: PpId, executed: u32) {
        self.estimator.cut(table, pp, executed);
        self.function_of(table, pp);
    }
}
