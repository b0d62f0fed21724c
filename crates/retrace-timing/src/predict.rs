//! Branch predictors and the return-address stack: state that depends only on
//! the control flow, so the `control` replay can drive the very same
//! structures as the cycle-level engine.

use crate::model::PredictorKind;

/// A conditional-branch predictor.
#[derive(Clone, Debug)]
pub struct BranchPredictor {
    kind: PredictorKind,
    counters: Vec<u8>,
    mask: u64,
    history: u64,
    history_mask: u64,
}

impl BranchPredictor {
    /// A predictor of this kind with every counter weakly not-taken.
    pub fn new(kind: PredictorKind) -> BranchPredictor {
        let (entries, history_bits) = match kind {
            PredictorKind::Bimodal { entries } => (entries, 0),
            PredictorKind::Gshare {
                entries,
                history_bits,
            } => (entries, history_bits),
            _ => (0, 0),
        };
        BranchPredictor {
            kind,
            counters: vec![1; entries as usize],
            mask: u64::from(entries.max(1)) - 1,
            history: 0,
            history_mask: (1u64 << history_bits) - 1,
        }
    }

    /// Predict the branch at `pc` (whose target lies before it when
    /// `backward`), then learn its real outcome. Returns the prediction.
    #[inline]
    pub fn predict_and_update(&mut self, pc: u64, backward: bool, taken: bool) -> bool {
        match self.kind {
            PredictorKind::NotTaken | PredictorKind::Btfn => static_prediction(self.kind, backward),
            PredictorKind::Bimodal { .. } => {
                let i = ((pc >> 1) & self.mask) as usize;
                train(&mut self.counters[i], taken)
            }
            PredictorKind::Gshare { .. } => {
                let i = (((pc >> 1) ^ self.history) & self.mask) as usize;
                let predicted = train(&mut self.counters[i], taken);
                self.history = ((self.history << 1) | u64::from(taken)) & self.history_mask;
                predicted
            }
        }
    }

    /// The counter a branch at `pc` would be predicted by now (it depends
    /// on the global history for gshare); `None` for static kinds.
    #[inline]
    pub fn slot(&self, pc: u64) -> Option<usize> {
        match self.kind {
            PredictorKind::Bimodal { .. } => Some(((pc >> 1) & self.mask) as usize),
            PredictorKind::Gshare { .. } => Some((((pc >> 1) ^ self.history) & self.mask) as usize),
            PredictorKind::NotTaken | PredictorKind::Btfn => None,
        }
    }

    /// The 2-bit counter at `slot` ([`BranchPredictor::slot`]).
    #[inline]
    pub fn counter(&self, slot: usize) -> u8 {
        self.counters[slot]
    }

    /// Set the counter at `slot` (to a value it reached by training).
    #[inline]
    pub fn set_counter(&mut self, slot: usize, value: u8) {
        self.counters[slot] = value & 3;
    }

    /// The global history (0 for kinds without one).
    #[inline]
    pub fn history(&self) -> u64 {
        self.history
    }

    /// Set the global history (to a value it reached by training).
    #[inline]
    pub fn set_history(&mut self, history: u64) {
        self.history = history & self.history_mask;
    }
}

/// Update a 2-bit saturating counter; returns what it predicted before.
#[inline]
fn train(counter: &mut u8, taken: bool) -> bool {
    let predicted = *counter >= 2;
    *counter = if taken {
        (*counter + 1).min(3)
    } else {
        counter.saturating_sub(1)
    };
    predicted
}

/// The prediction a core makes without run-time state. Dynamic predictors
/// fall back to backward-taken/forward-not-taken, their usual cold-start
/// behaviour: this is what the `fast` fidelity assumes for them.
#[inline]
pub fn static_prediction(kind: PredictorKind, backward: bool) -> bool {
    match kind {
        PredictorKind::NotTaken => false,
        _ => backward,
    }
}

/// A return-address stack of fixed depth; when full, a push overwrites the
/// oldest entry (as hardware circular stacks do).
#[derive(Clone, Debug)]
pub struct ReturnStack {
    entries: Vec<u64>,
    top: usize,
    len: usize,
}

impl ReturnStack {
    /// A stack of `depth` entries (0: none; every pop misses).
    pub fn new(depth: u32) -> ReturnStack {
        ReturnStack {
            entries: vec![0; depth as usize],
            top: 0,
            len: 0,
        }
    }

    /// Push a return address (at a call).
    #[inline]
    pub fn push(&mut self, addr: u64) {
        if self.entries.is_empty() {
            return;
        }
        self.top = (self.top + 1) % self.entries.len();
        self.entries[self.top] = addr;
        self.len = (self.len + 1).min(self.entries.len());
    }

    /// Pop the predicted return address (at a return); `None` when empty.
    #[inline]
    pub fn pop(&mut self) -> Option<u64> {
        if self.len == 0 {
            return None;
        }
        let addr = self.entries[self.top];
        self.top = (self.top + self.entries.len() - 1) % self.entries.len();
        self.len -= 1;
        Some(addr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bimodal_learns_a_loop() {
        let mut p = BranchPredictor::new(PredictorKind::Bimodal { entries: 16 });
        // Weakly not-taken at start: the first taken outcome is mispredicted,
        // then the counter reaches "weakly taken" and predicts taken.
        assert!(!p.predict_and_update(0x100, true, true));
        assert!(p.predict_and_update(0x100, true, true));
        assert!(p.predict_and_update(0x100, true, false));
        assert!(p.predict_and_update(0x100, true, true));
    }

    #[test]
    fn ras_overwrites_oldest() {
        let mut r = ReturnStack::new(2);
        r.push(1);
        r.push(2);
        r.push(3);
        assert_eq!(r.pop(), Some(3));
        assert_eq!(r.pop(), Some(2));
        assert_eq!(r.pop(), None);
    }
}
