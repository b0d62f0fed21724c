//! Cycles per function: the one accounting that the cycle-level engine
//! (`retrace run --core`) and the replay's profile (`retrace profile`)
//! share, so that the two can only differ in the cycles they are fed.
//!
//! Both drive a [`FrameTracker`] with the same three events, each stamped
//! with the cycles (and instructions) elapsed at that moment:
//!
//! - [`FrameTracker::enter`]: the next instruction lies in another function
//!   (or in none) than the previous one — charged before it issues;
//! - [`FrameTracker::call`]: a call (`jal`/`jalr` linking `ra` or `t0`)
//!   retired, to the function of its target;
//! - [`FrameTracker::ret`]: a return retired, to the function of its target.
//!
//! The rule (also in `docs/TIMING.md`, "Per-function cycles"):
//!
//! - **exclusive** cycles of `f`: the cycles of the instructions whose pc
//!   lies in `f` (an instruction's cycles are how far it moves the core's
//!   clock; a trap's entry cost goes to the function that trapped);
//! - a **frame** is opened by a call, and *replaced* when execution moves to
//!   another function without a call or return — a tail call `j g`, a
//!   fall-through or jump into another symbol, a trap into a handler and the
//!   `mret` back: the frame left ends and `g`'s begins. A return closes the
//!   top frame; if it lands in a function other than the one now on top
//!   (a frame replaced below it, a `longjmp`), that frame becomes the
//!   landing function's, without counting a call;
//! - **inclusive** cycles of `f`: from the opening to the closing of its
//!   outermost frame, summed (recursion is counted once);
//! - **calls** of `f`: frames opened for it — calls, tail calls and other
//!   entries from another function, and the program's first function.
//!
//! The top frame always belongs to the function executing, so every cycle
//! charged exclusively to `f` falls inside one of `f`'s frames: exclusive ≤
//! inclusive for every function.
//!
//! A tracker can also keep each frame's life as a [`FrameSpan`] (function,
//! depth, first cycle, one past the last): the timeline of a run that
//! `retrace run --core --timeline` and `retrace estimate --timeline` write.
//! Both engines feed it the same events, so on a core the replay times
//! exactly their timelines are the same; [`SpanLog`] bounds its memory.

use std::collections::VecDeque;

/// Cycles of one function.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FunctionCycles {
    /// Cycles of instructions inside the function.
    pub exclusive: u64,
    /// Cycles from entry to exit, callees included (outermost frame only,
    /// so recursion is not counted twice).
    pub inclusive: u64,
    /// Frames opened for it: calls, tail calls and other entries from
    /// another function.
    pub calls: u64,
    /// Instructions inside it.
    pub instructions: u64,
}

/// Maps a pc to a function index through sorted `(start, end)` ranges.
#[derive(Clone, Debug, Default)]
pub struct FunctionMap {
    ranges: Vec<(u64, u64, usize)>,
}

impl FunctionMap {
    /// Functions as `(start, size)`, indexed by position in `funcs`.
    pub fn new(funcs: &[(u64, u64)]) -> FunctionMap {
        let mut ranges: Vec<_> = funcs
            .iter()
            .enumerate()
            .map(|(i, &(s, n))| (s, s + n.max(1), i))
            .collect();
        ranges.sort_unstable();
        FunctionMap { ranges }
    }

    /// The function containing `pc`.
    #[inline]
    pub fn lookup(&self, pc: u64) -> Option<usize> {
        self.range(pc).map(|r| r.2)
    }

    /// The `(start, end, function)` range containing `pc`.
    fn range(&self, pc: u64) -> Option<(u64, u64, usize)> {
        let i = self.ranges.partition_point(|r| r.0 <= pc);
        let r = *self.ranges.get(i.checked_sub(1)?)?;
        (pc < r.1).then_some(r)
    }

    /// The widest `[lo, hi)` around `pc` in which every address maps to the
    /// same function as `pc` (or to none): a function's range cut at the next
    /// function's start, or the gap between two functions.
    pub(crate) fn segment(&self, pc: u64) -> (u64, u64, Option<usize>) {
        let i = self.ranges.partition_point(|r| r.0 <= pc);
        let next = self.ranges.get(i).map_or(u64::MAX, |r| r.0);
        match i.checked_sub(1).map(|k| self.ranges[k]) {
            Some((start, end, f)) if pc < end => (start, end.min(next), Some(f)),
            Some((_, end, _)) => (end, next, None),
            None => (0, next, None),
        }
    }
}

/// Frames kept at most. A deeper stack (calls that never return) closes its
/// oldest frames, at the moment it grows past the bound, so memory stays
/// bounded whatever the run; both engines close the same ones. A function
/// still open in a younger frame keeps counting from its outermost entry.
pub const MAX_FRAMES: usize = 1 << 16;

/// One frame's life: a function from the call (or other entry) that opened
/// the frame to the return (or other exit) that closed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FrameSpan {
    /// The function, an index into the tracker's functions.
    pub function: usize,
    /// Frames open below it when it opened (0: outermost).
    pub depth: u32,
    /// The cycle at which it opened.
    pub start: u64,
    /// The cycle at which it closed (after `start`: empty frames are not
    /// kept).
    pub end: u64,
}

/// The frames' lives kept in bounded memory: every span of at least
/// [`SpanLog::min_cycles`] cycles. When more than twice `max` are held, the
/// bound doubles and the shorter ones go, so the log ends holding exactly
/// the spans at or above its final bound (fed the same spans in the same
/// order, two logs agree), and at most `2 × max` of them at any time.
#[derive(Clone, Debug)]
pub struct SpanLog {
    spans: Vec<FrameSpan>,
    max: usize,
    min_cycles: u64,
    left_out: u64,
}

impl SpanLog {
    /// A log that keeps about `max` spans (at least one).
    pub fn new(max: usize) -> SpanLog {
        SpanLog {
            spans: Vec::new(),
            max: max.max(1),
            min_cycles: 1,
            left_out: 0,
        }
    }

    fn push(&mut self, span: FrameSpan) {
        if span.end - span.start < self.min_cycles {
            self.left_out += 1;
            return;
        }
        self.spans.push(span);
        if self.spans.len() > 2 * self.max {
            while self.spans.len() > self.max {
                self.min_cycles = self.min_cycles.saturating_mul(2);
                let min = self.min_cycles;
                let before = self.spans.len();
                self.spans.retain(|s| s.end - s.start >= min);
                self.left_out += (before - self.spans.len()) as u64;
            }
        }
    }

    /// The spans kept, by first cycle (outer before inner at one cycle).
    pub fn spans(&self) -> Vec<FrameSpan> {
        let mut v = self.spans.clone();
        v.sort_by_key(|s| (s.start, s.depth, std::cmp::Reverse(s.end)));
        v
    }

    /// How many spans are kept.
    pub fn kept(&self) -> usize {
        self.spans.len()
    }

    /// The shortest span kept: shorter ones were left out.
    pub fn min_cycles(&self) -> u64 {
        self.min_cycles
    }

    /// Spans left out for being shorter than the bound (empty frames are
    /// not counted).
    pub fn left_out(&self) -> u64 {
        self.left_out
    }
}

/// Attributes cycles to functions from a stream of function changes, calls
/// and returns (see the module docs for the rule).
#[derive(Clone, Debug)]
pub struct FrameTracker {
    per_function: Vec<FunctionCycles>,
    /// Open frames, innermost last: each one's function (none for code
    /// outside every function) and the cycle it opened at.
    frames: VecDeque<(Option<usize>, u64)>,
    /// With a timeline: the frames' lives.
    log: Option<SpanLog>,
    /// Open frames per function, and when the outermost opened: inclusive
    /// counts from there to when the last closes (recursion once).
    active: Vec<u32>,
    outer_start: Vec<u64>,
    /// The function of the instruction executing, and the cycles and
    /// instructions when execution entered it.
    current: Option<usize>,
    since_cycles: u64,
    since_insns: u64,
}

impl FrameTracker {
    /// A tracker for `functions` functions, indexed `0..functions`.
    pub fn new(functions: usize) -> FrameTracker {
        FrameTracker {
            per_function: vec![FunctionCycles::default(); functions],
            frames: VecDeque::new(),
            log: None,
            active: vec![0; functions],
            outer_start: vec![0; functions],
            current: None,
            since_cycles: 0,
            since_insns: 0,
        }
    }

    /// Also keep the frames' lives, about `max` of the longest
    /// ([`SpanLog`]).
    pub fn logging_spans(mut self, max: usize) -> FrameTracker {
        self.log = Some(SpanLog::new(max));
        self
    }

    /// The frames' lives, when [`FrameTracker::logging_spans`] asked for
    /// them (complete after [`FrameTracker::finish`]).
    pub fn span_log(&self) -> Option<&SpanLog> {
        self.log.as_ref()
    }

    /// The figures so far (complete after [`FrameTracker::finish`]).
    pub fn per_function(&self) -> &[FunctionCycles] {
        &self.per_function
    }

    /// The function of the instruction executing (`None` outside every
    /// function, or before the first).
    #[inline]
    pub fn current(&self) -> Option<usize> {
        self.current
    }

    /// The next instruction lies in `func` (or outside every function),
    /// after `cycles` cycles and `insns` instructions. Calling it with the
    /// function already executing changes nothing.
    #[inline]
    pub fn enter(&mut self, func: Option<usize>, cycles: u64, insns: u64) {
        self.charge(cycles, insns);
        self.current = func;
        let Some(g) = func else { return };
        match self.frames.back() {
            Some(&(top, _)) if top == Some(g) => {}
            Some(_) => {
                // Moved to another function without a call or return (a tail
                // call): the frame left ends, `g`'s begins.
                let top = self.frames.pop_back().expect("a top frame");
                self.close(top, cycles);
                self.open(Some(g), cycles, true);
            }
            None => self.open(Some(g), cycles, true),
        }
    }

    /// A call retired after `cycles` cycles, to `callee`'s code (or to code
    /// outside every function).
    #[inline]
    pub fn call(&mut self, callee: Option<usize>, cycles: u64) {
        self.open(callee, cycles, true);
    }

    /// A return retired after `cycles` cycles, to `to`'s code (or to code
    /// outside every function).
    #[inline]
    pub fn ret(&mut self, to: Option<usize>, cycles: u64) {
        if let Some(top) = self.frames.pop_back() {
            self.close(top, cycles);
        }
        let Some(g) = to else { return };
        match self.frames.back() {
            Some(&(top, _)) if top == Some(g) => {}
            Some(_) => {
                let top = self.frames.pop_back().expect("a top frame");
                self.close(top, cycles);
                self.open(Some(g), cycles, false);
            }
            None => self.open(Some(g), cycles, false),
        }
    }

    /// The run ended after `cycles` cycles and `insns` instructions: charge
    /// the function executing and close every open frame (so functions that
    /// never returned — `main` calling `exit` — have inclusive cycles).
    /// Calling it again adds nothing.
    pub fn finish(&mut self, cycles: u64, insns: u64) {
        self.charge(cycles, insns);
        self.current = None;
        while let Some(top) = self.frames.pop_back() {
            self.close(top, cycles);
        }
    }

    #[inline]
    fn charge(&mut self, cycles: u64, insns: u64) {
        if let Some(f) = self.current {
            let pf = &mut self.per_function[f];
            pf.exclusive += cycles - self.since_cycles;
            pf.instructions += insns - self.since_insns;
        }
        self.since_cycles = cycles;
        self.since_insns = insns;
    }

    #[inline]
    fn open(&mut self, func: Option<usize>, cycles: u64, counted: bool) {
        if let Some(f) = func {
            self.per_function[f].calls += u64::from(counted);
            if self.active[f] == 0 {
                self.outer_start[f] = cycles;
            }
            self.active[f] += 1;
        }
        self.frames.push_back((func, cycles));
        if self.frames.len() > MAX_FRAMES {
            let (oldest, _) = self.frames.pop_front().expect("frames beyond the bound");
            // Not a span: the frames above it stay open, so it would not
            // nest on a timeline.
            self.close_frame(oldest, cycles);
        }
    }

    /// Close `frame`, just popped off the top of the stack, at `cycles`.
    #[inline]
    fn close(&mut self, frame: (Option<usize>, u64), cycles: u64) {
        if let (Some(log), (Some(function), start)) = (&mut self.log, frame) {
            if cycles > start {
                log.push(FrameSpan {
                    function,
                    depth: self.frames.len() as u32,
                    start,
                    end: cycles,
                });
            }
        }
        self.close_frame(frame.0, cycles);
    }

    #[inline]
    fn close_frame(&mut self, frame: Option<usize>, cycles: u64) {
        if let Some(f) = frame {
            self.active[f] -= 1;
            if self.active[f] == 0 {
                self.per_function[f].inclusive += cycles - self.outer_start[f];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const F: Option<usize> = Some(0);
    const G: Option<usize> = Some(1);
    const H: Option<usize> = Some(2);

    fn check_exclusive_within_inclusive(t: &FrameTracker) {
        for (i, f) in t.per_function().iter().enumerate() {
            assert!(f.exclusive <= f.inclusive, "function {i}: {f:?}");
        }
    }

    /// `f` calls `g`, `g` tail-calls `h` (`j h`), `h` returns to `f`: `h`
    /// is entered once and its cycles are inside its frame; `g`'s frame
    /// ends at the jump.
    #[test]
    fn a_tail_call_replaces_the_frame_and_counts_an_entry() {
        let mut t = FrameTracker::new(3);
        t.enter(F, 0, 0); // program start in f
        t.call(G, 10);
        t.enter(G, 10, 5);
        t.enter(H, 14, 7); // after `j h` in g
        t.ret(F, 20);
        t.enter(F, 20, 10);
        t.finish(25, 12);
        let p = t.per_function();
        assert_eq!(
            p[0],
            FunctionCycles {
                exclusive: 15,
                inclusive: 25,
                calls: 1,
                instructions: 7
            }
        );
        assert_eq!(
            p[1],
            FunctionCycles {
                exclusive: 4,
                inclusive: 4,
                calls: 1,
                instructions: 2
            }
        );
        assert_eq!(
            p[2],
            FunctionCycles {
                exclusive: 6,
                inclusive: 6,
                calls: 1,
                instructions: 3
            }
        );
        check_exclusive_within_inclusive(&t);
    }

    /// The span log sees every frame's life: the tail call `j h` ends g's
    /// frame and opens h's at one depth; spans nest in time.
    #[test]
    fn frames_lives_are_logged_and_nest() {
        let mut t = FrameTracker::new(3).logging_spans(100);
        t.enter(F, 0, 0);
        t.call(G, 10);
        t.enter(G, 10, 5);
        t.enter(H, 14, 7);
        t.ret(F, 20);
        t.enter(F, 20, 10);
        t.finish(25, 12);
        let span = |function, depth, start, end| FrameSpan {
            function,
            depth,
            start,
            end,
        };
        let log = t.span_log().expect("asked for");
        assert_eq!(
            log.spans(),
            vec![span(0, 0, 0, 25), span(1, 1, 10, 14), span(2, 1, 14, 20)]
        );
        assert_eq!((log.min_cycles(), log.left_out()), (1, 0));
    }

    /// Past twice its size the log doubles its bound until it holds at
    /// most its size: it ends with exactly the spans at or above the
    /// bound.
    #[test]
    fn the_span_log_keeps_the_longest_spans_in_bounded_memory() {
        let lengths: Vec<u64> = (1..=100).map(|i| (i * 37) % 101).collect();
        let run = |order: &[u64]| {
            let mut log = SpanLog::new(10);
            let mut at = 0;
            for &n in order {
                log.push(FrameSpan {
                    function: n as usize,
                    depth: 0,
                    start: at,
                    end: at + n,
                });
                at += n;
                assert!(log.spans.len() <= 20);
            }
            let mut kept: Vec<u64> = log.spans().iter().map(|s| s.end - s.start).collect();
            kept.sort_unstable();
            (kept, log.min_cycles(), log.left_out())
        };
        let (kept, min, left_out) = run(&lengths);
        assert!(min > 1 && kept.len() <= 20);
        let want: Vec<u64> = (min..=100).filter(|n| lengths.contains(n)).collect();
        assert_eq!(kept, want);
        assert_eq!(left_out, 100 - kept.len() as u64);
    }

    /// Recursion counts the outermost frame once; calls count every frame.
    #[test]
    fn recursion_is_counted_once_in_inclusive() {
        let mut t = FrameTracker::new(2);
        t.enter(G, 0, 0);
        t.call(F, 2);
        t.enter(F, 2, 1);
        t.call(F, 5); // f calls itself: no function change, no `enter`
        t.ret(F, 9);
        t.ret(G, 12);
        t.enter(G, 12, 8);
        t.finish(13, 9);
        let f = t.per_function()[0];
        assert_eq!((f.exclusive, f.inclusive, f.calls), (10, 10, 2));
        check_exclusive_within_inclusive(&t);
    }

    /// A return that lands below a replaced frame makes the landing
    /// function the top without counting a call; `enter` with the
    /// executing function changes nothing.
    #[test]
    fn a_return_to_another_function_takes_over_the_frame() {
        let mut t = FrameTracker::new(3);
        t.enter(F, 0, 0);
        t.call(G, 1);
        t.enter(G, 1, 1);
        t.call(H, 2);
        t.enter(H, 2, 2);
        t.ret(F, 3); // a longjmp-like return past g's frame into f
        t.enter(F, 3, 3);
        t.enter(F, 3, 3);
        t.finish(4, 4);
        let p = t.per_function();
        assert_eq!(p[0].calls, 1);
        assert_eq!((p[1].inclusive, p[1].calls), (2, 1));
        check_exclusive_within_inclusive(&t);
    }

    /// Calls that never return keep at most MAX_FRAMES frames, and the
    /// function's inclusive time still spans its exclusive time.
    #[test]
    fn frames_are_bounded() {
        let mut t = FrameTracker::new(1);
        t.enter(F, 0, 0);
        for c in 1..=(MAX_FRAMES as u64 + 10) {
            t.call(F, c);
        }
        assert_eq!(t.frames.len(), MAX_FRAMES);
        t.finish(1 << 40, 1);
        // The frames closed early do not cut the function's time short: it
        // counts from its outermost entry.
        let f = t.per_function()[0];
        assert_eq!((f.exclusive, f.inclusive), (1 << 40, 1 << 40));
        assert_eq!(f.calls, MAX_FRAMES as u64 + 11);
    }
}
