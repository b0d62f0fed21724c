//! Timing a whole instruction path at once — a partial program, for the
//! replay — from a [`Signature`] of the pipeline state at its entry.
//!
//! Because [`Pipeline::issue`] only ever compares times with each other, the
//! pipeline is translation-invariant: its future depends on the register
//! ready times *relative to* the issue clock, and on a dual-issue core on
//! which pipes the issue group still open has taken, nothing else. A
//! signature is exactly that, so "cycles of path P entered in state S (with events E)"
//! is a pure function that the replay memoises, and summing memoised path
//! times gives the cycle-level engine's total to the cycle.

use crate::model::CoreModel;
use crate::pipeline::Pipeline;
use retrace_isa::Inst;
use std::collections::HashMap;

/// Run-time events of one instruction that the pipeline cannot know from the
/// instruction alone. The cycle-level engine takes them from live predictor
/// and cache state; the replay from the same structures or from the model's
/// static assumptions (fidelity `fast`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Events {
    /// The instruction fetch missed the instruction cache.
    pub fetch_miss: bool,
    /// The load/store/AMO missed the data cache.
    pub data_miss: bool,
    /// The conditional branch was taken.
    pub taken: bool,
    /// The conditional branch (direction) or return (return-address stack)
    /// was mispredicted.
    pub mispredict: bool,
    /// For a conditional branch: the length in bytes of the instruction at
    /// its fall-through address, which a taken branch may wait for
    /// ([`crate::FetchModel::taken_branch_split_fallthrough_penalty`]); 0
    /// when unknown (then nothing is charged). A fact of the code, not of the
    /// run, but known only to whoever holds the code.
    pub fallthrough_len: u8,
}

/// Registers whose values are still in flight (and non-pipelined units still
/// busy), with the cycles until each is ready, relative to the issue clock;
/// sorted by slot ([`crate::Pipeline::signature`]). On a dual-issue core a
/// last entry, slot 66, holds the pipes of an issue group still open.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Signature(pub Box<[(u8, u32)]>);

impl Signature {
    /// The integer registers (`x1`–`x31`) in flight, as a bit set (bit `r`
    /// for `xr`): FP registers, units and the issue group left out.
    pub fn registers(&self) -> u32 {
        self.0
            .iter()
            .filter(|&&(slot, _)| slot < 32)
            .fold(0, |m, &(r, _)| m | 1 << r)
    }
}

/// An interned [`Signature`]: a small integer for memo keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SignatureId(pub u32);

impl SignatureId {
    /// The idle pipeline (nothing in flight): the state at program start.
    pub const IDLE: SignatureId = SignatureId(0);
}

/// Times instruction paths from interned entry signatures.
#[derive(Debug)]
pub struct PathTimer {
    model: CoreModel,
    signatures: Vec<Signature>,
    ids: HashMap<Signature, SignatureId>,
}

impl PathTimer {
    /// A timer for one core; [`SignatureId::IDLE`] is pre-interned.
    pub fn new(model: &CoreModel) -> PathTimer {
        let mut t = PathTimer {
            model: model.clone(),
            signatures: Vec::new(),
            ids: HashMap::new(),
        };
        let idle = t.intern(Signature::default());
        debug_assert_eq!(idle, SignatureId::IDLE);
        t
    }

    /// The core being timed.
    pub fn model(&self) -> &CoreModel {
        &self.model
    }

    /// Number of distinct signatures seen (a measure of how much pipeline
    /// state crosses path boundaries).
    pub fn signature_count(&self) -> usize {
        self.signatures.len()
    }

    /// The signature behind an id.
    pub fn signature(&self, id: SignatureId) -> &Signature {
        &self.signatures[id.0 as usize]
    }

    fn intern(&mut self, sig: Signature) -> SignatureId {
        if let Some(&id) = self.ids.get(&sig) {
            return id;
        }
        let id = SignatureId(self.signatures.len() as u32);
        self.signatures.push(sig.clone());
        self.ids.insert(sig, id);
        id
    }

    /// Issue `path` (each instruction with its address and events) into a
    /// pipeline in state `entry`; returns the cycles it took and the state
    /// at its end. The addresses matter to cores that charge instructions
    /// spanning two fetch words ([`crate::FetchModel`]); they are static, so
    /// no fetch state crosses a path's boundary.
    pub fn time<'a>(
        &mut self,
        entry: SignatureId,
        path: impl IntoIterator<Item = (u64, &'a Inst, Events)>,
    ) -> (u64, SignatureId) {
        let mut pipeline = Pipeline::from_signature(&self.signatures[entry.0 as usize]);
        for (pc, inst, ev) in path {
            pipeline.issue(&self.model, pc, inst, ev);
        }
        let exit = self.intern(pipeline.signature());
        (pipeline.cycle(), exit)
    }

    /// The cycles [`PathTimer::time`] would give, without interning the
    /// state at the end (for a path's prefix, whose end state no path
    /// starts from: per-function profiles split a partial program there).
    pub fn cycles<'a>(
        &self,
        entry: SignatureId,
        path: impl IntoIterator<Item = (u64, &'a Inst, Events)>,
    ) -> u64 {
        let mut pipeline = Pipeline::from_signature(&self.signatures[entry.0 as usize]);
        for (pc, inst, ev) in path {
            pipeline.issue(&self.model, pc, inst, ev);
        }
        pipeline.cycle()
    }

    /// The cycles of entering a trap handler from a pipeline in state
    /// `entry` ([`Pipeline::trap`]); the state after it is always
    /// [`SignatureId::IDLE`].
    pub fn trap(&self, entry: SignatureId) -> u64 {
        let mut pipeline = Pipeline::from_signature(&self.signatures[entry.0 as usize]);
        pipeline.trap(&self.model);
        debug_assert!(pipeline.signature().0.is_empty());
        pipeline.cycle()
    }
}
