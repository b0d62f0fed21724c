//! The walker's view of real programs: the machine-level partial-program
//! table as a [`Graph`], and a recorded trace as a [`History`].
//!
//! Which ends read what from the trace: indirect calls and jumps, `ecall`,
//! plain `ebreak` (trap entries) and `mret`/`sret` read a target from the
//! indirect stream; returns consult the escape stream; semihosting
//! `ebreak`s continue after themselves. Traps in the middle of a partial
//! program come from the traps stream, and code written at run time from
//! the code stream (the table takes it in: [`PpTable::patch`]). How a target or an escape is spelled
//! in the streams is the recording protocol, read through
//! [`retrace_trace::protocol::HartDecoder`] — the module the recorder writes
//! through.

use crate::walk::{Exit, Graph, History, ReplayError};
use retrace_program::{Addr, End, PpId, PpTable};
use retrace_trace::protocol::HartDecoder;
use retrace_trace::{TraceError, TraceReader};
use std::io::Read;

/// Stands for a successor the table could not provide (outside the code,
/// illegal): harmless until the replay actually goes there.
pub const INVALID: PpId = PpId(u32::MAX);

fn ok(id: Option<PpId>) -> PpId {
    id.unwrap_or(INVALID)
}

impl Graph for PpTable {
    type Id = PpId;

    fn exit(&self, id: PpId) -> Result<Exit<PpId>, ReplayError> {
        if id == INVALID {
            return Err(ReplayError::BadTarget {
                what: "a successor that is not executable code".into(),
                addr: 0,
            });
        }
        let pp = self.get(id);
        let site = pp.last.get();
        Ok(match pp.end {
            End::Branch { taken, not_taken } => Exit::Branch {
                taken: ok(taken),
                not_taken: ok(not_taken),
            },
            End::Call { target, ret } => Exit::Call {
                target: ok(target),
                ret: ok(ret),
            },
            End::IndirectCall { ret } => Exit::IndirectCall { site, ret: ok(ret) },
            End::Return => Exit::Return,
            End::IndirectJump | End::Ecall { .. } | End::TrapReturn => Exit::Indirect { site },
            End::Ebreak {
                semihosting: true,
                next,
            } => Exit::Continue(ok(next)),
            End::Ebreak { .. } => Exit::Indirect { site },
            End::Jump { target } => Exit::Continue(target),
            End::Fault { at } => {
                return Err(ReplayError::BadTarget {
                    what: "code that cannot execute".into(),
                    addr: at.get(),
                })
            }
        })
    }

    #[inline]
    fn len(&self, id: PpId) -> u32 {
        if id == INVALID {
            0
        } else {
            self.get(id).len
        }
    }

    #[inline]
    fn start(&self, id: PpId) -> u64 {
        if id == INVALID {
            u64::MAX
        } else {
            self.get(id).start.get()
        }
    }

    #[inline]
    fn index(&self, id: PpId) -> usize {
        if id == INVALID {
            usize::MAX
        } else {
            id.index()
        }
    }

    fn pc_at(&self, id: PpId, k: u32) -> u64 {
        if id == INVALID {
            return u64::MAX;
        }
        let pp = self.get(id);
        if k >= pp.len {
            return match pp.end {
                End::Fault { at } => at.get(),
                _ => u64::MAX,
            };
        }
        self.insts(id)
            .nth(k as usize)
            .map(|(pc, _)| pc.get())
            .unwrap_or(u64::MAX)
    }

    fn patch(&mut self, addr: u64, bytes: &[u8]) {
        PpTable::patch(self, Addr(addr), bytes);
    }

    fn unexecutable(&self) -> PpId {
        INVALID
    }

    fn resolve(&mut self, addr: u64) -> Result<PpId, ReplayError> {
        if let Some(id) = self.lookup(Addr(addr)) {
            return Ok(id);
        }
        self.ensure(Addr(addr)).map_err(|e| ReplayError::BadTarget {
            what: format!("a target the program cannot execute ({e})"),
            addr,
        })
    }
}

/// One hart's history in a trace file.
pub struct TraceHistory<R: Read> {
    reader: TraceReader<R>,
    decoder: HartDecoder,
}

impl<R: Read> TraceHistory<R> {
    /// Read `hart`'s streams of a trace.
    pub fn new(reader: TraceReader<R>, hart: u16) -> Self {
        TraceHistory {
            reader,
            decoder: HartDecoder::new(hart),
        }
    }

    /// The reader, to finish it (trailer totals) after the walk.
    pub fn into_reader(self) -> TraceReader<R> {
        self.reader
    }

    /// The reader and the hart read, for the aggregated loops' decoder
    /// (`crate::aggregate::history`), which reads streams of its own.
    pub(crate) fn reader_mut(&mut self) -> (&mut TraceReader<R>, u16) {
        (&mut self.reader, self.decoder.hart())
    }

    /// The hart whose streams it reads.
    #[inline]
    pub(crate) fn hart(&self) -> u16 {
        self.decoder.hart()
    }

    /// The next branch bits within the loaded segment, without consuming
    /// them: up to 64 and how many are valid ([`TraceReader::bit_window`]).
    #[inline]
    pub(crate) fn bit_window(&self) -> (u64, u32) {
        self.reader.bit_window(self.decoder.hart())
    }

    /// The unread bytes of the indirect stream in the loaded segment.
    #[inline]
    pub(crate) fn indirect_bytes(&self) -> &[u8] {
        self.decoder.indirect_bytes(&self.reader)
    }

    /// See [`HartDecoder::returns_before_escape`].
    #[inline]
    pub(crate) fn returns_before_escape(&mut self, matched: u64) -> Option<u64> {
        self.decoder
            .returns_before_escape(&mut self.reader, matched)
    }

    /// See [`HartDecoder::known_target`].
    #[inline]
    pub(crate) fn known_target(&self, site: u64, index: u64) -> Option<u64> {
        self.decoder.known_target(site, index)
    }

    /// Whether the loaded segment holds a trap record or a code event not
    /// yet taken: with none, [`History::next_trap`] and
    /// [`History::next_code`] answer `None` until the segment's branch
    /// bits run out (only then may the next segment load).
    #[inline]
    pub(crate) fn events_recorded(&mut self) -> Result<bool, ReplayError> {
        Ok(self.decoder.trap_recorded(&mut self.reader)?
            || self.decoder.code_recorded(&mut self.reader)?)
    }

    /// Consume what a memoised stretch read: `bits` branch bits and
    /// `indirect_records` indirect records of known targets in
    /// `indirect_bytes` bytes.
    #[inline]
    pub(crate) fn skip(&mut self, bits: u32, indirect_bytes: usize, indirect_records: u64) {
        self.reader.skip_bits(self.decoder.hart(), bits);
        self.decoder
            .skip_known_indirect(&mut self.reader, indirect_bytes, indirect_records);
    }
}

impl<R: Read> TraceHistory<R> {
    /// [`History::next_trap`] when the loaded segment holds trap records.
    #[cold]
    #[inline(never)]
    fn next_trap_recorded(&mut self, executed: u64) -> Result<Option<u64>, ReplayError> {
        self.decoder
            .next_trap(&mut self.reader, executed)
            .map_err(replay_error)
    }
}

/// The replay's words for what the protocol found wrong: the history ran
/// out, or does not fit the program or the replay.
fn replay_error(e: TraceError) -> ReplayError {
    match e {
        TraceError::Exhausted { what, .. } => ReplayError::HistoryExhausted {
            what,
            instructions: 0,
        },
        TraceError::UnknownTarget {
            site, index, known, ..
        } => ReplayError::BadTarget {
            what: format!(
                "target #{index} of the indirect site, which has only {known} known targets"
            ),
            addr: site,
        },
        TraceError::EscapeBehind {
            recorded, matched, ..
        } => ReplayError::Totals {
            what: format!(
                "an escape was recorded after {recorded} matching returns, the replay has seen {matched}"
            ),
        },
        TraceError::TrapBehind {
            recorded, executed, ..
        } => ReplayError::Totals {
            what: format!(
                "a trap was recorded after {recorded} instructions, the replay has executed {executed}"
            ),
        },
        TraceError::CodeBehind {
            recorded, executed, ..
        } => ReplayError::Totals {
            what: format!(
                "code was recorded after {recorded} instructions, the replay has executed {executed}"
            ),
        },
        e => ReplayError::Trace(e),
    }
}

impl<R: Read> History for TraceHistory<R> {
    #[inline]
    fn bit(&mut self) -> Result<Option<bool>, ReplayError> {
        Ok(self.decoder.branch(&mut self.reader)?)
    }

    #[inline]
    fn indirect(&mut self, site: u64) -> Result<u64, ReplayError> {
        self.decoder
            .indirect(&mut self.reader, site)
            .map_err(replay_error)
    }

    fn escape(&mut self, matched: u64) -> Result<Option<u64>, ReplayError> {
        self.decoder
            .escape(&mut self.reader, matched)
            .map_err(replay_error)
    }

    #[inline(always)]
    fn next_trap(&mut self, executed: u64) -> Result<Option<u64>, ReplayError> {
        // Asked at every partial program: the common answer without a call.
        if !self.decoder.trap_recorded(&mut self.reader)? {
            return Ok(None);
        }
        self.next_trap_recorded(executed)
    }

    fn trap(&mut self) -> Result<u64, ReplayError> {
        self.decoder.trap(&mut self.reader).map_err(replay_error)
    }

    #[inline(always)]
    fn next_code(&mut self, executed: u64) -> Result<Option<u64>, ReplayError> {
        // Asked at every partial program: the common answer without a call.
        if !self.decoder.code_recorded(&mut self.reader)? {
            return Ok(None);
        }
        self.next_code_recorded(executed)
    }

    fn code(&mut self) -> Result<(u64, Vec<u8>), ReplayError> {
        self.decoder.code(&mut self.reader).map_err(replay_error)
    }
}

impl<R: Read> TraceHistory<R> {
    /// [`History::next_code`] when the loaded segment holds code events.
    #[cold]
    #[inline(never)]
    fn next_code_recorded(&mut self, executed: u64) -> Result<Option<u64>, ReplayError> {
        self.decoder
            .next_code(&mut self.reader, executed)
            .map_err(replay_error)
    }
}
