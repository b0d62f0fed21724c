//! The in-order, single-issue pipeline: a register scoreboard and an issue
//! clock. [`Pipeline::issue`] is *the* timing rule of retrace — the
//! cycle-level engine and the replay's path timing both end here.

use crate::model::{BranchModel, CoreModel, TimingClass};
use crate::path::{Events, Signature};
use retrace_isa::{Flow, Inst};

/// Pipeline state: the cycle at which the next instruction may issue, and
/// for each register the cycle at which its newest value may be consumed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pipeline {
    cycle: u64,
    ready: [u64; 32],
}

impl Default for Pipeline {
    fn default() -> Self {
        Pipeline::new()
    }
}

impl Pipeline {
    /// An idle pipeline at cycle 0.
    pub fn new() -> Pipeline {
        Pipeline {
            cycle: 0,
            ready: [0; 32],
        }
    }

    /// The cycle at which the next instruction may issue: the elapsed time.
    pub fn cycle(&self) -> u64 {
        self.cycle
    }

    /// Issue one instruction.
    ///
    /// It issues when the issue stage is free (after a fetch stall on an
    /// instruction-cache miss) and every register it reads is ready; its
    /// result is ready `latency` cycles later (plus a data-cache miss); the
    /// next instruction may issue `occupancy` cycles later, plus any
    /// data-cache miss stall and control-flow penalty.
    #[inline]
    pub fn issue(&mut self, model: &CoreModel, inst: &Inst, ev: Events) {
        let class = TimingClass::of(inst);
        let mut start = self.cycle;
        if ev.fetch_miss {
            if let Some(ic) = &model.icache {
                start += u64::from(ic.miss_penalty);
            }
        }
        for r in inst.reads().into_iter().flatten() {
            start = start.max(self.ready[usize::from(r)]);
        }
        let mem_stall = match (&model.dcache, ev.data_miss) {
            (Some(dc), true) => u64::from(dc.miss_penalty),
            _ => 0,
        };
        if let Some(rd) = inst.writes() {
            self.ready[usize::from(rd)] = start + u64::from(model.latency.get(class)) + mem_stall;
        }
        self.cycle = start
            + u64::from(model.occupancy.get(class))
            + mem_stall
            + u64::from(control_penalty(&model.branch, inst.flow(), ev));
    }

    /// The state that matters for the future, relative to the current cycle:
    /// registers whose values are not yet ready.
    pub fn signature(&self) -> Signature {
        let pending = self
            .ready
            .iter()
            .enumerate()
            .filter(|(_, &r)| r > self.cycle)
            .map(|(reg, &r)| (reg as u8, (r - self.cycle) as u32))
            .collect();
        Signature(pending)
    }

    /// A pipeline at cycle 0 in the state a signature describes.
    pub fn from_signature(sig: &Signature) -> Pipeline {
        let mut p = Pipeline::new();
        for &(reg, rel) in sig.0.iter() {
            p.ready[usize::from(reg)] = u64::from(rel);
        }
        p
    }
}

/// Extra cycles that control flow costs after an instruction issues.
#[inline]
fn control_penalty(b: &BranchModel, flow: Flow, ev: Events) -> u32 {
    match flow {
        Flow::CondBranch => {
            (if ev.taken { b.taken_penalty } else { 0 })
                + (if ev.mispredict {
                    b.mispredict_penalty
                } else {
                    0
                })
        }
        Flow::Jump | Flow::Call => b.jal_penalty,
        Flow::Return if b.ras_depth > 0 => {
            if ev.mispredict {
                b.mispredict_penalty
            } else {
                b.return_penalty
            }
        }
        Flow::Return | Flow::IndirectJump | Flow::IndirectCall => b.jalr_penalty,
        _ => 0,
    }
}
