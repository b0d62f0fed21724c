//! The recording protocol: the rules that turn one hart's execution into
//! trace streams ([`Encoder`]) and the streams back into that execution's
//! choices ([`HartDecoder`]). The recorder (`retrace-sim`) and the replay
//! (`retrace-estimate`) both go through this module, so each rule is written
//! once; `docs/FORMATS.md` ("Recording protocol") states them in prose.
//!
//! Per hart, independently of every other hart:
//!
//! - **branch**: one bit per conditional branch, 1 = taken;
//! - **indirect** (indirect jumps and calls, trap entries, trap returns; the
//!   *site* is the address of the instruction): the site's targets are
//!   numbered from 1 in the order they first occur; a target seen before is
//!   written as its number, a new one as 0 followed by the address, which
//!   takes the next number;
//! - **calls** push the return address on a shadow return stack; a
//!   **return** pops it, and when the popped address is the real target
//!   counts one more *matched* return; otherwise it writes an **escape** —
//!   the matched count since the previous escape, then the target — resets
//!   the count and [unwinds](ReturnStack::unwind) the stack to the target
//!   (`longjmp`). The stack is a [`ReturnStack`]: it holds at most
//!   [`RETURN_STACK_BOUND`] entries, and a call onto a full one drops the
//!   oldest, so a return past the bound finds the stack empty and escapes;
//! - **traps** in the middle of a partial program (an exception: its
//!   instruction does not execute, the handler runs instead): the number of
//!   instructions executed since the previous trap (or the start), then the
//!   handler, numbered in the hart's one table of handlers as a site's
//!   targets are. The replay peeks at the next trap's count to know where
//!   to cut the partial program it is in. (An `ecall` or `ebreak` that
//!   traps ends its partial program, and is an indirect event instead.)
//! - **code** the program's file does not hold (copied into RAM, patched
//!   in place, built in a data array), recorded when the run is about to
//!   execute it: the number of instructions executed since the previous
//!   code event (or the start), the address, the length and the bytes.
//!   The replay peeks at the next event's count as at a trap's, and from
//!   that count on reads the program's code with those bytes in place.
//!
//! The decoder keeps the same per-site tables, built only from the trace;
//! the replay keeps its own [`ReturnStack`] (of partial programs, with the
//! same bound, so it drops the same entries at the same calls) and asks
//! [`HartDecoder::escape`] at every return.
//!
//! ```
//! use retrace_trace::protocol::{Encoder, HartDecoder, ReturnStack};
//! use retrace_trace::{Header, Totals, TraceReader, TraceWriter};
//! let mut buf = Vec::new();
//! let writer = TraceWriter::new(&mut buf, &Header::new(1, 64, 1)).unwrap();
//! let mut enc = Encoder::new(writer, 1);
//! enc.call(0, 0x1004);
//! enc.indirect(0, 0x2000, 0x3000);
//! enc.branch(0, true);
//! enc.ret(0, 0x5000); // not where the call returns to: an escape
//! enc.trap(0, 12, 0x8000_0100); // a fault after 12 instructions
//! enc.finish(Totals::default(), &[]).unwrap();
//!
//! let mut r = TraceReader::new(&buf[..]).unwrap();
//! let mut dec = HartDecoder::new(0);
//! let mut stack = ReturnStack::new();
//! stack.push(0x1004u64);
//! assert_eq!(dec.indirect(&mut r, 0x2000).unwrap(), 0x3000);
//! assert_eq!(dec.branch(&mut r).unwrap(), Some(true));
//! stack.pop();
//! let target = dec.escape(&mut r, 0).unwrap().unwrap();
//! stack.unwind(target, |&a| a);
//! assert_eq!(target, 0x5000);
//! assert_eq!(dec.next_trap(&mut r, 10).unwrap(), Some(12));
//! assert_eq!(dec.trap(&mut r).unwrap(), 0x8000_0100);
//! assert_eq!(dec.next_trap(&mut r, 12).unwrap(), None);
//! ```

pub mod loops;
pub mod regions;
pub mod sync;

use crate::format::decode_varint;
use crate::WriteSummary;
use crate::{DcacheMeasurement, StreamKind, Totals, TraceError, TraceReader, TraceWriter};
use rustc_hash::FxHashMap;
use std::io::{Read, Write};

/// The record an indirect event writes for a target its site has not used
/// before, ahead of the target's address.
pub const NEW_TARGET: u64 = 0;

/// Slots of an encoder hart's recent-target cache (a power of two).
const ENCODER_RECENT: usize = 256;
/// Slots of a decoder's recent-target cache.
const DECODER_RECENT: usize = 1024;

/// The return stack of both sides, with its bound and its unwind rule: one
/// implementation in `retrace-isa`, which the partial-program table checker
/// (`retrace pp --check`) follows too.
pub use retrace_isa::{ReturnStack, RETURN_STACK_BOUND};

/// The index at the start of an indirect stream's unread bytes when it is a
/// whole one-byte record naming a known target (1 to 127): the common
/// record, which a replay resolves from a cache without decoding.
#[inline]
pub fn one_byte_index(bytes: &[u8]) -> Option<u8> {
    match bytes.first() {
        Some(&b) if b != NEW_TARGET as u8 && b < 0x80 => Some(b),
        _ => None,
    }
}

/// Length in bytes of the indirect record at the start of `bytes` when it
/// names a target its site has used before — reading it leaves the site's
/// table as it was; `None` for a new target (in any spelling of 0) or when
/// `bytes` ends inside the record.
#[inline]
pub fn known_target_len(bytes: &[u8]) -> Option<usize> {
    match decode_varint(bytes) {
        Some((v, n)) if v != NEW_TARGET => Some(n),
        _ => None,
    }
}

/// Events an encoder wrote, besides branch bits (the trailer's totals).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Events {
    /// Indirect events: jumps, calls, trap entries and returns.
    pub indirect: u64,
    /// Return escapes.
    pub escapes: u64,
}

/// One hart's recording state.
struct HartEncoder {
    /// Index (1-based) of each (site, target) pair seen.
    targets: FxHashMap<(u64, u64), u64>,
    /// Number of targets seen per site.
    site_len: FxHashMap<u64, u64>,
    /// A direct-mapped cache in front of `targets`: indirect jumps repeat
    /// (a comparator called from qsort, an interpreter's dispatch), and this
    /// keeps the common case to one compare.
    recent: Box<[(u64, u64, u64); ENCODER_RECENT]>,
    /// The shadow return stack: return addresses of calls not returned from
    /// (the latest [`ReturnStack::bound`] of them).
    stack: ReturnStack<u64>,
    /// Returns that matched `stack` since the last escape.
    matched: u64,
    /// Instructions executed before the previous trap (0 before the first).
    trap_at: u64,
    /// Trap handlers in the order they were first entered.
    handlers: Vec<u64>,
    /// Instructions executed before the previous code event.
    code_at: u64,
    events: Events,
}

impl HartEncoder {
    fn new(stack_bound: usize) -> HartEncoder {
        HartEncoder {
            targets: FxHashMap::default(),
            site_len: FxHashMap::default(),
            recent: Box::new([(u64::MAX, u64::MAX, 0); ENCODER_RECENT]),
            stack: ReturnStack::with_bound(stack_bound),
            matched: 0,
            trap_at: 0,
            handlers: Vec::new(),
            code_at: 0,
            events: Events::default(),
        }
    }
}

/// Writes the protocol's records for every hart of a run through one
/// [`TraceWriter`]; see the module documentation.
pub struct Encoder<W: Write> {
    writer: TraceWriter<W>,
    harts: Vec<HartEncoder>,
    /// Aggregated loops' state ([`loops`]), kept here because a segment's
    /// close ends the executions in progress and writes the pending runs.
    loops: loops::LoopState,
}

impl<W: Write> Encoder<W> {
    /// Encode `harts` harts into `writer` (which has written the header).
    pub fn new(writer: TraceWriter<W>, harts: usize) -> Encoder<W> {
        Encoder::with_stack_bound(writer, harts, RETURN_STACK_BOUND)
    }

    /// [`Encoder::new`] with return stacks of `bound` entries instead of
    /// [`RETURN_STACK_BOUND`]: for tests that reach the bound in a few
    /// events. A trace so written fits only a replay with the same bound.
    pub fn with_stack_bound(writer: TraceWriter<W>, harts: usize, bound: usize) -> Encoder<W> {
        Encoder {
            writer,
            harts: (0..harts).map(|_| HartEncoder::new(bound)).collect(),
            loops: loops::LoopState::default(),
        }
    }

    /// The deepest any hart's return stack is now, and the return addresses
    /// dropped at the bound so far, over all harts.
    pub fn stack_depth(&self) -> (usize, u64) {
        self.harts.iter().fold((0, 0), |(d, n), h| {
            (d.max(h.stack.len()), n + h.stack.dropped())
        })
    }

    /// A conditional branch of `hart`, taken or not.
    #[inline(always)]
    pub fn branch(&mut self, hart: u16, taken: bool) {
        if self.writer.closes_before_next_bit() {
            // The segment closes before this bit: the aggregated loops'
            // pending runs go into it first.
            self.loops.flush(&mut self.writer);
        }
        self.writer.branch(hart, taken);
    }

    /// Before each event other than a branch bit: where the writer may
    /// close a segment whose records grew large with no bit to close
    /// before ([`TraceWriter::event_boundary`]). The aggregated loops'
    /// executions in progress end there and their runs are written first,
    /// as the replay ends them where it crosses that close.
    #[inline(always)]
    fn event(&mut self) {
        if self.writer.closes_before_next_bit() {
            self.event_full();
        }
    }

    #[cold]
    #[inline(never)]
    fn event_full(&mut self) {
        if self.writer.closes_at_event_boundary() {
            self.loops.cut(&mut self.writer);
            self.writer.event_boundary();
        }
    }

    /// A direct call of `hart` that will return to `return_addr`.
    #[inline]
    pub fn call(&mut self, hart: u16, return_addr: u64) {
        self.harts[usize::from(hart)].stack.push(return_addr);
    }

    /// An indirect call of `hart` at `site` to `target`, returning to
    /// `return_addr`.
    #[inline]
    pub fn indirect_call(&mut self, hart: u16, site: u64, target: u64, return_addr: u64) {
        self.call(hart, return_addr);
        self.indirect(hart, site, target);
    }

    /// A trap entry of `hart` at `site` by an instruction that ends its
    /// partial program (`ecall`, a breakpoint) to `handler`: an indirect
    /// event, site = the trapping instruction. A trap in the middle of a
    /// partial program is [`Encoder::trap`].
    #[inline]
    pub fn trap_entry(&mut self, hart: u16, site: u64, handler: u64) {
        self.indirect(hart, site, handler);
    }

    /// A trap return of `hart` (`mret`, `sret`) at `site` to `target`: an
    /// indirect event.
    #[inline]
    pub fn trap_return(&mut self, hart: u16, site: u64, target: u64) {
        self.indirect(hart, site, target);
    }

    /// A trap of `hart` in the middle of a partial program (an exception:
    /// the trapping instruction does not execute) after the hart executed
    /// `executed` instructions in all, to `handler`. `executed` counts what
    /// the replay walks — retired instructions, and the `ecall`s and
    /// `ebreak`s that entered a handler — and never decreases from one trap
    /// to the next. Writes to the traps stream the count since the previous
    /// trap, then the handler's number in the hart's table of handlers (0
    /// and the address for a new one).
    pub fn trap(&mut self, hart: u16, executed: u64, handler: u64) {
        self.event();
        let h = &mut self.harts[usize::from(hart)];
        debug_assert!(executed >= h.trap_at, "traps out of order");
        let since = executed.saturating_sub(h.trap_at);
        h.trap_at = executed;
        self.writer.record(hart, StreamKind::Traps, since);
        match h.handlers.iter().position(|&a| a == handler) {
            Some(i) => self.writer.record(hart, StreamKind::Traps, i as u64 + 1),
            None => {
                h.handlers.push(handler);
                self.writer.record(hart, StreamKind::Traps, NEW_TARGET);
                self.writer.record(hart, StreamKind::Traps, handler);
            }
        }
    }

    /// Code of `hart`'s run that the replay cannot know from the program's
    /// file: from the moment `hart` has executed `executed` instructions
    /// (counted as [`Encoder::trap`] counts them, never decreasing), memory
    /// at `addr` holds `bytes`. Writes to the code stream the count since
    /// the previous code event, the address, the length and each byte.
    pub fn code(&mut self, hart: u16, executed: u64, addr: u64, bytes: &[u8]) {
        self.event();
        let h = &mut self.harts[usize::from(hart)];
        debug_assert!(executed >= h.code_at, "code events out of order");
        let since = executed.saturating_sub(h.code_at);
        h.code_at = executed;
        self.writer.record(hart, StreamKind::Code, since);
        self.writer.record(hart, StreamKind::Code, addr);
        self.writer
            .record(hart, StreamKind::Code, bytes.len() as u64);
        for &b in bytes {
            self.writer.record(hart, StreamKind::Code, u64::from(b));
        }
    }

    /// Items of `hart`'s synchronisation-event stream ([`sync`]: the
    /// recorder of a multi-hart run writes one event per call, and each
    /// hart's end).
    pub fn sync_items(&mut self, hart: u16, items: &[u64]) {
        self.event();
        for &v in items {
            self.writer.record(hart, StreamKind::Sync, v);
        }
    }

    /// An indirect jump or call of `hart` at `site` to `target` (without the
    /// call's push; see [`Encoder::indirect_call`]).
    #[inline]
    pub fn indirect(&mut self, hart: u16, site: u64, target: u64) {
        self.event();
        let h = &mut self.harts[usize::from(hart)];
        h.events.indirect += 1;
        let slot =
            ((site >> 1) ^ (target >> 1).wrapping_mul(0x9e37_79b9)) as usize % ENCODER_RECENT;
        let r = h.recent[slot];
        if r.0 == site && r.1 == target {
            self.writer.record(hart, StreamKind::Indirect, r.2);
            return;
        }
        if let Some(&i) = h.targets.get(&(site, target)) {
            h.recent[slot] = (site, target, i);
            self.writer.record(hart, StreamKind::Indirect, i);
        } else {
            let n = h.site_len.entry(site).or_insert(0);
            *n += 1;
            h.targets.insert((site, target), *n);
            self.writer.record(hart, StreamKind::Indirect, NEW_TARGET);
            self.writer.record(hart, StreamKind::Indirect, target);
        }
    }

    /// A return of `hart` to `target`; `true` when it escaped (went
    /// elsewhere than the shadow stack said).
    #[inline]
    pub fn ret(&mut self, hart: u16, target: u64) -> bool {
        let h = &mut self.harts[usize::from(hart)];
        if h.stack.pop() == Some(target) {
            h.matched += 1;
            return false;
        }
        let matched = std::mem::take(&mut h.matched);
        h.stack.unwind(target, |&a| a);
        h.events.escapes += 1;
        self.event();
        self.writer.record(hart, StreamKind::Escapes, matched);
        self.writer.record(hart, StreamKind::Escapes, target);
        true
    }

    /// Events written so far, over all harts.
    pub fn events(&self) -> Events {
        self.harts.iter().fold(Events::default(), |a, h| Events {
            indirect: a.indirect + h.events.indirect,
            escapes: a.escapes + h.events.escapes,
        })
    }

    /// Branch bits written so far, over all harts.
    pub fn branches(&self) -> u64 {
        self.writer.branches()
    }

    /// Finish the trace: `totals` with the branch, indirect and escape
    /// counts filled in from what was encoded, and `dcache` measurements
    /// before the trailer.
    pub fn finish(
        self,
        mut totals: Totals,
        dcache: &[DcacheMeasurement],
    ) -> Result<WriteSummary, TraceError> {
        let events = self.events();
        totals.branches = self.writer.branches();
        totals.indirect = events.indirect;
        totals.escapes = events.escapes;
        if self.loops.lossy {
            let adjust = self.loops.stats.walk_adjust;
            totals.walk_instructions = Some(totals.instructions.saturating_add_signed(adjust));
        }
        self.writer.finish_with(&totals, dcache)
    }
}

/// One hart's side of the replay: reads that hart's streams from a
/// [`TraceReader`] (shared with the other harts' decoders) as the replay
/// meets the events; see the module documentation.
pub struct HartDecoder {
    hart: u16,
    /// Per indirect site, the targets seen so far, in order of first use.
    sites: FxHashMap<u64, Vec<u64>>,
    /// Direct-mapped cache of (site, one-byte index) → target.
    recent: Box<[(u64, u8, u64)]>,
    /// Instructions executed before the previous trap (0 before the first).
    trap_at: u64,
    /// Trap handlers in the order they were first entered.
    handlers: Vec<u64>,
    /// Instructions executed before the previous code event.
    code_at: u64,
}

impl HartDecoder {
    /// A decoder of `hart`'s streams, with empty target tables.
    pub fn new(hart: u16) -> HartDecoder {
        HartDecoder {
            hart,
            sites: FxHashMap::default(),
            recent: vec![(u64::MAX, 0, 0); DECODER_RECENT].into_boxed_slice(),
            trap_at: 0,
            handlers: Vec::new(),
            code_at: 0,
        }
    }

    /// The hart this decoder reads.
    #[inline]
    pub fn hart(&self) -> u16 {
        self.hart
    }

    /// The next conditional branch: taken or not; `None` when the trace has
    /// no more branch bits.
    #[inline]
    pub fn branch<R: Read>(&self, r: &mut TraceReader<R>) -> Result<Option<bool>, TraceError> {
        r.next_bit(self.hart)
    }

    /// The next item of a record stream, which must be there.
    fn next<R: Read>(
        &self,
        r: &mut TraceReader<R>,
        kind: StreamKind,
        what: &'static str,
    ) -> Result<u64, TraceError> {
        r.next_record(self.hart, kind)?
            .ok_or(TraceError::Exhausted {
                hart: self.hart,
                what,
            })
    }

    /// The target of the next indirect event, at `site` (an indirect jump
    /// or call, a trap entry or return).
    #[inline]
    pub fn indirect<R: Read>(
        &mut self,
        r: &mut TraceReader<R>,
        site: u64,
    ) -> Result<u64, TraceError> {
        // The common record: one byte, a target this site used before.
        if let Some(b) = one_byte_index(r.record_bytes(self.hart, StreamKind::Indirect)) {
            let slot = target_slot(site, b);
            let (s, v, target) = self.recent[slot];
            if s == site && v == b {
                r.skip_records(self.hart, StreamKind::Indirect, 1, 1);
                return Ok(target);
            }
        }
        self.indirect_slow(r, site)
    }

    fn indirect_slow<R: Read>(
        &mut self,
        r: &mut TraceReader<R>,
        site: u64,
    ) -> Result<u64, TraceError> {
        let v = self.next(r, StreamKind::Indirect, "an indirect target")?;
        if v == NEW_TARGET {
            let target = self.next(r, StreamKind::Indirect, "an indirect target address")?;
            self.sites.entry(site).or_default().push(target);
            return Ok(target);
        }
        let table = self.sites.entry(site).or_default();
        let target = table.get(v as usize - 1).copied();
        if let (Some(t), Ok(b)) = (target, u8::try_from(v)) {
            // Site tables only grow: (site, index) names one target forever.
            self.recent[target_slot(site, b)] = (site, b, t);
        }
        target.ok_or(TraceError::UnknownTarget {
            hart: self.hart,
            site,
            index: v,
            known: table.len(),
        })
    }

    /// At a return, `matched` returns having matched the replay's stack since
    /// the previous escape: the target if this return escaped (the replay
    /// then resets its count and applies [`ReturnStack::unwind`]), `None` if it went to
    /// the stack's top. Looks only at the loaded segment, which holds every
    /// escape recorded before the next branch bit.
    #[inline]
    pub fn escape<R: Read>(
        &mut self,
        r: &mut TraceReader<R>,
        matched: u64,
    ) -> Result<Option<u64>, TraceError> {
        match r.peek_record(self.hart, StreamKind::Escapes)? {
            Some(recorded) if recorded == matched => {
                self.next(r, StreamKind::Escapes, "an escape record")?;
                Ok(Some(self.next(
                    r,
                    StreamKind::Escapes,
                    "an escape target",
                )?))
            }
            Some(recorded) if recorded < matched => Err(TraceError::EscapeBehind {
                hart: self.hart,
                recorded,
                matched,
            }),
            _ => Ok(None),
        }
    }

    /// The hart's instruction count (as [`Encoder::trap`] counts it) at
    /// which its next trap in the middle of a partial program is taken —
    /// the instruction after that many does not execute — if the loaded
    /// segment records one; the replay has executed `executed` instructions
    /// and an announced trap before that is an error (the replay is out of
    /// step). `None` when none comes before the next branch bit
    /// ([`TraceReader::peek_record`]), so a replay that asks again after
    /// each branch bit it reads never misses one.
    #[inline]
    pub fn next_trap<R: Read>(
        &self,
        r: &mut TraceReader<R>,
        executed: u64,
    ) -> Result<Option<u64>, TraceError> {
        match r.peek_record(self.hart, StreamKind::Traps)? {
            None => Ok(None),
            Some(since) => {
                let at = self.trap_at.saturating_add(since);
                if at < executed {
                    return Err(TraceError::TrapBehind {
                        hart: self.hart,
                        recorded: at,
                        executed,
                    });
                }
                Ok(Some(at))
            }
        }
    }

    /// Whether the loaded segment holds a trap record not yet taken: the
    /// cheap test a replay makes at every partial program before it asks
    /// [`HartDecoder::next_trap`] (almost every segment of almost every
    /// run has none).
    #[inline(always)]
    pub fn trap_recorded<R: Read>(&self, r: &mut TraceReader<R>) -> Result<bool, TraceError> {
        r.has_records(self.hart, StreamKind::Traps)
    }

    /// Take the trap [`HartDecoder::next_trap`] announced: consume its
    /// records and return the handler's address.
    pub fn trap<R: Read>(&mut self, r: &mut TraceReader<R>) -> Result<u64, TraceError> {
        let since = self.next(r, StreamKind::Traps, "a trap")?;
        self.trap_at = self.trap_at.saturating_add(since);
        let index = self.next(r, StreamKind::Traps, "a trap handler")?;
        if index == NEW_TARGET {
            let handler = self.next(r, StreamKind::Traps, "a trap handler address")?;
            self.handlers.push(handler);
            return Ok(handler);
        }
        usize::try_from(index - 1)
            .ok()
            .and_then(|i| self.handlers.get(i).copied())
            .ok_or(TraceError::UnknownHandler {
                hart: self.hart,
                index,
                known: self.handlers.len(),
            })
    }

    /// Whether the loaded segment holds a code event not yet taken: the
    /// cheap test before [`HartDecoder::next_code`].
    #[inline(always)]
    pub fn code_recorded<R: Read>(&self, r: &mut TraceReader<R>) -> Result<bool, TraceError> {
        r.has_records(self.hart, StreamKind::Code)
    }

    /// The instruction count at which the next code event takes effect, if
    /// the loaded segment records one (as [`HartDecoder::next_trap`]: a
    /// replay that asks after every branch bit never misses one); the
    /// replay has executed `executed` instructions, and an event before
    /// that is an error.
    #[inline]
    pub fn next_code<R: Read>(
        &self,
        r: &mut TraceReader<R>,
        executed: u64,
    ) -> Result<Option<u64>, TraceError> {
        match r.peek_record(self.hart, StreamKind::Code)? {
            None => Ok(None),
            Some(since) => {
                let at = self.code_at.saturating_add(since);
                if at < executed {
                    return Err(TraceError::CodeBehind {
                        hart: self.hart,
                        recorded: at,
                        executed,
                    });
                }
                Ok(Some(at))
            }
        }
    }

    /// Take the code event [`HartDecoder::next_code`] announced: its
    /// address and bytes. The length is checked against the records the
    /// segment holds before anything is allocated for it.
    pub fn code<R: Read>(&mut self, r: &mut TraceReader<R>) -> Result<(u64, Vec<u8>), TraceError> {
        let since = self.next(r, StreamKind::Code, "a code event")?;
        self.code_at = self.code_at.saturating_add(since);
        let addr = self.next(r, StreamKind::Code, "a code address")?;
        let len = self.next(r, StreamKind::Code, "a code length")?;
        let left = r.records_left(self.hart, StreamKind::Code);
        if len > left {
            return Err(TraceError::Corrupt {
                offset: 0,
                what: format!(
                    "a code event at {addr:#x} of {len} bytes, with {left} records left in its segment"
                ),
            });
        }
        let mut bytes = Vec::with_capacity(len as usize);
        for _ in 0..len {
            let b = self.next(r, StreamKind::Code, "a code byte")?;
            let b = u8::try_from(b).map_err(|_| TraceError::Corrupt {
                offset: 0,
                what: format!("a code byte of value {b} in the event at {addr:#x}"),
            })?;
            bytes.push(b);
        }
        Ok((addr, bytes))
    }

    /// How many more returns, `matched` having matched since the previous
    /// escape, go to the stack's top before the next escape recorded in the
    /// loaded segment (`u64::MAX` when none is recorded there): the
    /// returns a replay may take without asking [`HartDecoder::escape`].
    /// `None` when the trace is damaged or out of step; `escape` then says
    /// how.
    #[inline]
    pub fn returns_before_escape<R: Read>(
        &self,
        r: &mut TraceReader<R>,
        matched: u64,
    ) -> Option<u64> {
        match r.peek_record(self.hart, StreamKind::Escapes) {
            Ok(None) => Some(u64::MAX),
            Ok(Some(recorded)) if recorded >= matched => Some(recorded - matched),
            _ => None,
        }
    }

    /// The unread bytes of this hart's indirect stream in the loaded
    /// segment: what a replay that memoises stretches keys them on.
    #[inline]
    pub fn indirect_bytes<'r, R: Read>(&self, r: &'r TraceReader<R>) -> &'r [u8] {
        r.record_bytes(self.hart, StreamKind::Indirect)
    }

    /// The target record `index` names at indirect `site` in this hart's
    /// table, if the hart has seen that many (site tables only grow, so
    /// the answer never changes once given): what a memoised stretch that
    /// another hart's replay recorded checks before this hart's uses it.
    #[inline]
    pub fn known_target(&self, site: u64, index: u64) -> Option<u64> {
        if let Ok(b) = u8::try_from(index) {
            let (s, v, target) = self.recent[target_slot(site, b)];
            if (s, v) == (site, b) {
                return Some(target);
            }
        }
        let i = usize::try_from(index.checked_sub(1)?).ok()?;
        self.sites.get(&site)?.get(i).copied()
    }

    /// Consume `bytes` bytes holding `records` indirect records that each
    /// named a known target ([`known_target_len`]): a memoised stretch that
    /// read them once already, so the tables need nothing new.
    #[inline]
    pub fn skip_known_indirect<R: Read>(&self, r: &mut TraceReader<R>, bytes: usize, records: u64) {
        r.skip_records(self.hart, StreamKind::Indirect, bytes, records);
    }
}

/// The recent-target slot of (site, index): consecutive indices of one site
/// in consecutive slots.
#[inline]
fn target_slot(site: u64, index: u8) -> usize {
    ((site >> 1) as usize)
        .wrapping_mul(0x9e37)
        .wrapping_add(usize::from(index))
        % DECODER_RECENT
}
