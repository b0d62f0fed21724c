//! The front end of a core: its branch predictor, return-address stack and
//! instruction cache, and the one policy for when each is consulted.
//!
//! The cycle-level engine ([`crate::CoreState::step`]) and the replay
//! (`retrace-estimate`'s estimator) both drive a core's front end. They used
//! to write the policy out twice — which predictor answers, whether a
//! return consults the stack, whether a fetch can miss — and now both call
//! this type, so they cannot drift apart.

use crate::cache::Cache;
use crate::model::{CoreModel, PredictorKind};
use crate::predict::{static_prediction, BranchPredictor, ReturnStack};

/// Branch predictor, return-address stack and I-cache of one core.
#[derive(Clone, Debug)]
pub struct Frontend {
    kind: PredictorKind,
    /// The dynamic predictor; `None` when predictions need no run-time
    /// state (static kinds, or a stateless front end).
    predictor: Option<BranchPredictor>,
    /// `None`: returns are taken as predicted (no stack, or stateless).
    ras: Option<ReturnStack>,
    /// `None`: every fetch hits.
    icache: Option<Cache>,
}

impl Frontend {
    /// The core's whole front end, cold: what the cycle-level engine runs
    /// and the `control` replay drives.
    pub fn new(model: &CoreModel) -> Frontend {
        let b = &model.branch;
        Frontend {
            kind: b.predictor,
            predictor: b
                .predictor
                .is_dynamic()
                .then(|| BranchPredictor::new(b.predictor)),
            ras: (b.ras_depth > 0).then(|| ReturnStack::new(b.ras_depth)),
            icache: model.icache.as_ref().map(Cache::new),
        }
    }

    /// A front end without run-time state, as the `fast` replay assumes:
    /// branches get the static prediction ([`static_prediction`]), returns
    /// are predicted, fetches hit.
    pub fn stateless(model: &CoreModel) -> Frontend {
        Frontend {
            kind: model.branch.predictor,
            predictor: None,
            ras: None,
            icache: None,
        }
    }

    /// A conditional branch at `pc` (to a lower address when `backward`,
    /// [`retrace_isa::Inst::is_backward_branch`]) went `taken`: predict it,
    /// train the predictor, and return whether it was mispredicted.
    #[inline(always)]
    pub fn branch(&mut self, pc: u64, backward: bool, taken: bool) -> bool {
        let predicted = match &mut self.predictor {
            Some(p) => p.predict_and_update(pc, backward, taken),
            None => static_prediction(self.kind, backward),
        };
        predicted != taken
    }

    /// A call (direct or indirect) whose return address is `return_addr`.
    #[inline(always)]
    pub fn call(&mut self, return_addr: u64) {
        if let Some(ras) = &mut self.ras {
            ras.push(return_addr);
        }
    }

    /// A return to `target()`; returns whether the return-address stack
    /// mispredicted it (never, without a stack). The target is asked for
    /// only when there is a stack to compare it with: finding it costs the
    /// replay a lookup.
    #[inline(always)]
    pub fn ret(&mut self, target: impl FnOnce() -> u64) -> bool {
        match &mut self.ras {
            Some(ras) => ras.pop() != Some(target()),
            None => false,
        }
    }

    /// Fetch the instruction at `pc`; returns whether it missed the I-cache.
    #[inline(always)]
    pub fn fetch_misses(&mut self, pc: u64) -> bool {
        match &mut self.icache {
            Some(ic) => !ic.access(pc),
            None => false,
        }
    }

    /// The I-cache, if fetches can miss.
    pub fn icache(&self) -> Option<&Cache> {
        self.icache.as_ref()
    }

    /// The dynamic predictor, if branches are predicted with run-time
    /// state. The replay memoises stretches keyed by the counters they
    /// read, and sets the counters they leave on reuse.
    pub fn predictor(&self) -> Option<&BranchPredictor> {
        self.predictor.as_ref()
    }

    /// The dynamic predictor, to set counters a memoised stretch left.
    pub fn predictor_mut(&mut self) -> Option<&mut BranchPredictor> {
        self.predictor.as_mut()
    }
}
