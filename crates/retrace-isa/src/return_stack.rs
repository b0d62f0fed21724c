//! The shadow return stack: the return points of the calls not yet returned
//! from, as the link-register convention ([`crate::Flow::Call`],
//! [`crate::Flow::Return`]) pairs calls with returns, and the two rules
//! every copy of it follows — its **bound** and its **unwind**.
//!
//! These are rules of the recording protocol (`retrace_trace::protocol`,
//! `docs/FORMATS.md`): the recorder's stack of return addresses and the
//! replay's stack of return-point partial programs must hold corresponding
//! entries at every moment, so they must drop and unwind exactly the same
//! entries. They live here, in the crate every other one depends on, so
//! that the partial-program table checker (`retrace-program`, which does
//! not depend on the trace crate) follows the very same code.
//!
//! - **Bound.** A stack holds at most [`ReturnStack::bound`] entries
//!   ([`RETURN_STACK_BOUND`] unless a test asks for fewer). A push onto a
//!   full stack drops the *oldest* (bottom) entry first. A program that
//!   calls without ever returning (a function that calls itself forever)
//!   then costs a fixed amount of memory instead of growing without limit;
//!   a return whose return point was dropped finds the stack empty, and
//!   the recorder writes it as an escape, which the format already has.
//! - **Unwind.** After an escape (a return that did not go to the top
//!   entry), if the target is on the stack, its topmost occurrence and
//!   every entry above it are removed (`longjmp` out of several frames);
//!   otherwise the stack stays as it is.
//!
//! ```
//! use retrace_isa::ReturnStack;
//! let mut s = ReturnStack::with_bound(3);
//! for a in [0x10u64, 0x20, 0x30, 0x40] {
//!     s.push(a); // the fourth push drops 0x10
//! }
//! assert_eq!(s.as_slice(), &[0x20, 0x30, 0x40]);
//! s.unwind(0x30, |&a| a); // an escape to 0x30
//! assert_eq!(s.as_slice(), &[0x20]);
//! assert_eq!((s.pop(), s.pop()), (Some(0x20), None));
//! ```

/// Entries a return stack holds at most: 65,536.
///
/// Big enough that real recursion does not reach it: a non-leaf RISC-V
/// function saves `ra` in a frame of at least 16 bytes (the ABI's stack
/// alignment), so 65,536 nested calls take at least 1 MiB of the program's
/// own stack — more than the bare-metal programs retrace runs give their
/// stack, and about 8,000 calls deeper than any example program goes. Small
/// enough to be cheap: at most 512 KiB of return addresses per hart in the
/// recorder, 256 KiB of return points per replay (twice that in the worst
/// case while [`ReturnStack`] moves its bottom; see there). And reaching it
/// is not an error: returns past the bound are escapes, a few bytes of
/// trace each.
pub const RETURN_STACK_BOUND: usize = 1 << 16;

/// A bounded return stack; see the module documentation.
///
/// Stored as a `Vec` whose live part starts at `base`: a push onto a full
/// stack moves `base` up by one instead of shifting every entry, and the
/// dead prefix is cut off in one move once it is as long as the bound, so
/// a push and a pop cost what they cost on a `Vec` (the live entries stay
/// one slice, which the replay extends in one copy) and dropping the oldest
/// entry costs O(1) amortised. Memory: at most twice the bound.
#[derive(Clone, Debug)]
pub struct ReturnStack<T> {
    buf: Vec<T>,
    /// Index in `buf` of the bottom entry.
    base: usize,
    bound: usize,
    /// Entries dropped at the bound so far.
    dropped: u64,
}

impl<T: Copy> Default for ReturnStack<T> {
    fn default() -> Self {
        ReturnStack::new()
    }
}

impl<T: Copy> ReturnStack<T> {
    /// An empty stack of the protocol's bound, [`RETURN_STACK_BOUND`].
    pub fn new() -> ReturnStack<T> {
        ReturnStack::with_bound(RETURN_STACK_BOUND)
    }

    /// An empty stack that holds at most `bound` entries (at least 1).
    /// Only tests choose a bound: a trace is recorded and replayed with
    /// [`RETURN_STACK_BOUND`], and a replay with another bound than its
    /// recording does not fit it.
    pub fn with_bound(bound: usize) -> ReturnStack<T> {
        ReturnStack {
            buf: Vec::new(),
            base: 0,
            bound: bound.max(1),
            dropped: 0,
        }
    }

    /// The most entries the stack holds.
    #[inline]
    pub fn bound(&self) -> usize {
        self.bound
    }

    /// Entries on the stack.
    #[inline]
    pub fn len(&self) -> usize {
        self.buf.len() - self.base
    }

    /// Whether the stack is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.buf.len() == self.base
    }

    /// Entries dropped at the bound since the stack was made.
    #[inline]
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// The entries, bottom first.
    #[inline]
    pub fn as_slice(&self) -> &[T] {
        &self.buf[self.base..]
    }

    /// The entries, bottom first, to rewrite in place (the replay re-points
    /// return points at partial programs rebuilt after code changed).
    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        &mut self.buf[self.base..]
    }

    /// Keep only the `n` bottom entries (no-op when `n >= len`); unlike
    /// dropping at the bound, this is not counted in [`ReturnStack::dropped`].
    pub fn truncate(&mut self, n: usize) {
        self.buf.truncate(self.base + n);
    }

    /// Push `x`, dropping the bottom entry first if the stack is full.
    #[inline]
    pub fn push(&mut self, x: T) {
        if self.len() == self.bound {
            self.drop_bottom(1);
        }
        self.buf.push(x);
    }

    /// Pop the top entry.
    #[inline]
    pub fn pop(&mut self) -> Option<T> {
        if self.buf.len() > self.base {
            self.buf.pop()
        } else {
            None
        }
    }

    /// Empty the stack (its drop count stays).
    pub fn clear(&mut self) {
        self.buf.clear();
        self.base = 0;
    }

    /// The unwind rule of an escape to `target`, entries compared by their
    /// `addr`: if `target` is on the stack, its topmost occurrence and every
    /// entry above it are removed; otherwise the stack stays as it is.
    #[inline]
    pub fn unwind(&mut self, target: u64, addr: impl Fn(&T) -> u64) {
        if let Some(pos) = self.as_slice().iter().rposition(|e| addr(e) == target) {
            self.buf.truncate(self.base + pos);
        }
    }

    /// What a stretch of pushes and pops that never popped below the
    /// current top does to the stack, in one step: at its deepest it stood
    /// `peak` entries above the current top, and it left `pushes` (bottom
    /// first) there. Pushing and popping one by one would have dropped
    /// `len + peak - bound` bottom entries (when positive) on the way up —
    /// not merely enough to make room for `pushes` — so exactly those are
    /// dropped. `peak` must be at least `pushes.len()` and at most the
    /// bound (a stretch that went deeper would have dropped entries of its
    /// own, which the caller must not summarise like this).
    pub fn apply_stretch(&mut self, pushes: &[T], peak: usize) {
        debug_assert!(pushes.len() <= peak && peak <= self.bound);
        let over = (self.len() + peak).saturating_sub(self.bound);
        if over > 0 {
            self.drop_bottom(over);
        }
        self.buf.extend_from_slice(pushes);
    }

    /// Drop the `n` (at most `len`) bottom entries.
    #[inline]
    fn drop_bottom(&mut self, n: usize) {
        debug_assert!(n <= self.len());
        self.base += n;
        self.dropped += n as u64;
        if self.base >= self.bound {
            // Cut the dead prefix off: one move of at most `bound` live
            // entries per `bound` entries dropped.
            self.buf.drain(..self.base);
            self.base = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plain model of the rules: a `Vec` that removes its first entry.
    fn model_push(v: &mut Vec<u64>, bound: usize, x: u64) {
        if v.len() == bound {
            v.remove(0);
        }
        v.push(x);
    }

    #[test]
    fn pushes_pops_and_unwinds_agree_with_the_plain_model() {
        for bound in [1usize, 2, 3, 7, 64] {
            let mut s = ReturnStack::with_bound(bound);
            let mut v = Vec::new();
            let mut dropped = 0u64;
            let mut x = 0x2545_f491_4f6c_dd1du64;
            for i in 0..20_000u64 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                match x % 8 {
                    0..=3 => {
                        dropped += u64::from(v.len() == bound);
                        model_push(&mut v, bound, i % 13);
                        s.push(i % 13);
                    }
                    4..=6 => assert_eq!(s.pop(), v.pop()),
                    _ => {
                        let t = (x >> 8) % 14;
                        if let Some(p) = v.iter().rposition(|&e| e == t) {
                            v.truncate(p);
                        }
                        s.unwind(t, |&e| e);
                    }
                }
                assert_eq!(s.as_slice(), &v[..], "bound {bound}, step {i}");
                assert!(s.len() <= bound);
                assert!(s.buf.len() < 2 * bound.max(1), "dead prefix cut off");
            }
            assert_eq!(s.dropped(), dropped);
        }
    }

    #[test]
    fn a_stretch_drops_what_its_deepest_point_dropped() {
        for bound in [4usize, 5, 9] {
            for len in 0..=bound {
                for peak in 0..=bound {
                    for kept in 0..=peak {
                        // Step by step: `peak` pushes, then pops down to `kept`.
                        let mut step = ReturnStack::with_bound(bound);
                        let mut batch = ReturnStack::with_bound(bound);
                        for i in 0..len as u64 {
                            step.push(i);
                            batch.push(i);
                        }
                        for j in 0..peak as u64 {
                            step.push(100 + j);
                        }
                        for _ in kept..peak {
                            step.pop();
                        }
                        let pushes: Vec<u64> = (0..kept as u64).map(|j| 100 + j).collect();
                        batch.apply_stretch(&pushes, peak);
                        assert_eq!(batch.as_slice(), step.as_slice(), "{bound} {len} {peak}");
                        assert_eq!(batch.dropped(), step.dropped());
                    }
                }
            }
        }
    }

    #[test]
    fn a_million_calls_that_never_return_stay_within_the_bound() {
        let mut s = ReturnStack::new();
        for i in 0..1_000_000u64 {
            s.push(i);
        }
        assert_eq!(s.len(), RETURN_STACK_BOUND);
        assert!(s.buf.capacity() <= 2 * RETURN_STACK_BOUND);
        assert_eq!(s.dropped(), 1_000_000 - RETURN_STACK_BOUND as u64);
        assert_eq!(s.pop(), Some(999_999));
    }
}
