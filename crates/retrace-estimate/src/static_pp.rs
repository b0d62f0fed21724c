//! Static cycles of partial programs on one core: each path issued into an
//! idle pipeline by the same [`PathTimer`] the replay uses (caches hitting,
//! branches predicted by the core's static rule), so the figures read as
//! "what this path costs on its own" — what `retrace pp --core` shows.

use retrace_program::{Addr, End, PpId, PpTable};
use retrace_timing::{static_prediction, CoreModel, Events, PathTimer, SignatureId};

/// One partial program's static cycles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PpCost {
    /// Cycles when it falls through (or does not end in a conditional
    /// branch).
    pub cycles: u64,
    /// Cycles when its final conditional branch is taken.
    pub taken: Option<u64>,
}

/// Static cycles of some partial programs on one core.
#[derive(Clone, Debug)]
pub struct StaticCycles {
    /// The core's name.
    pub core: String,
    /// Per PP index; `None` for PPs not asked for.
    costs: Vec<Option<PpCost>>,
}

impl StaticCycles {
    /// Time the partial programs `ids` of `table` on `core`.
    pub fn new(core: &CoreModel, table: &PpTable, ids: &[PpId]) -> StaticCycles {
        let mut timer = PathTimer::new(core);
        let mut costs = vec![None; table.len()];
        for &id in ids {
            let insts: Vec<_> = table.insts(id).map(|(pc, i)| (pc.get(), i)).collect();
            let traps = table.get(id).end.traps();
            let mut time = |last: Events| {
                let n = insts.len();
                let path = insts.iter().enumerate().map(|(k, (pc, i))| {
                    (*pc, i, if k + 1 == n { last } else { Events::default() })
                });
                let (cycles, exit) = timer.time(SignatureId::IDLE, path);
                // An `ecall` that enters a handler pays the trap, as it
                // does in the replay.
                cycles + if traps { timer.trap(exit) } else { 0 }
            };
            let branch = match (table.get(id).end, insts.last()) {
                (End::Branch { .. }, Some((pc, b))) => Some((b.is_backward_branch(), {
                    // The fall-through's length, as the replay reads it.
                    let after = Addr(b.fallthrough(*pc));
                    table
                        .code()
                        .read_data(after, 1)
                        .map_or(0, |x| if x & 3 == 3 { 4 } else { 2 })
                })),
                _ => None,
            };
            let cost = match branch {
                Some((backward, fallthrough_len)) => {
                    // The core's static prediction decides which direction
                    // pays the misprediction penalty.
                    let predicted = static_prediction(core.branch.predictor, backward);
                    let ev = |taken: bool| Events {
                        taken,
                        mispredict: predicted != taken,
                        fallthrough_len,
                        ..Events::default()
                    };
                    PpCost {
                        cycles: time(ev(false)),
                        taken: Some(time(ev(true))),
                    }
                }
                None => PpCost {
                    cycles: time(Events::default()),
                    taken: None,
                },
            };
            costs[id.index()] = Some(cost);
        }
        StaticCycles {
            core: core.name.clone(),
            costs,
        }
    }

    /// The cost of `id`, if it was timed.
    pub fn get(&self, id: PpId) -> Option<PpCost> {
        self.costs.get(id.index()).copied().flatten()
    }
}
