//! The walker's view of real programs: the machine-level partial-program
//! table as a [`Graph`], and a recorded trace as a [`History`].
//!
//! Which ends read what from the trace is the recording protocol, mirrored
//! by the recorder in `retrace-sim` (documented in `docs/FORMATS.md`):
//! indirect calls and jumps, `ecall`, plain `ebreak` (trap entries) and
//! `mret`/`sret` read a target from the indirect stream; returns consult the
//! escape stream; semihosting `ebreak`s continue after themselves.

use crate::walk::{Exit, Graph, History, ReplayError};
use retrace_program::{Addr, End, PpId, PpTable};
use retrace_trace::{StreamKind, TraceReader};
use rustc_hash::FxHashMap;
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
        self.insts(id)
            .nth(k as usize)
            .map(|(pc, _)| pc.get())
            .unwrap_or(u64::MAX)
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
    pub(crate) reader: TraceReader<R>,
    hart: u16,
    /// Per indirect site, the targets seen so far, in order of first use.
    sites: FxHashMap<u64, Vec<u64>>,
    /// Direct-mapped cache of (site, one-byte index) → target.
    recent: Box<[(u64, u8, u64)]>,
}

/// Slots of [`TraceHistory`]'s recent-target cache.
const RECENT_TARGETS: usize = 1024;

impl<R: Read> TraceHistory<R> {
    /// Read `hart`'s streams of a trace.
    pub fn new(reader: TraceReader<R>, hart: u16) -> Self {
        TraceHistory {
            reader,
            hart,
            sites: FxHashMap::default(),
            recent: vec![(u64::MAX, 0, 0); RECENT_TARGETS].into_boxed_slice(),
        }
    }

    /// The reader, to finish it (trailer totals) after the walk.
    pub fn into_reader(self) -> TraceReader<R> {
        self.reader
    }

    /// The next item of a record stream, which must be there.
    fn next(&mut self, kind: StreamKind, what: &'static str) -> Result<u64, ReplayError> {
        self.reader
            .next_record(self.hart, kind)?
            .ok_or(ReplayError::HistoryExhausted {
                what,
                instructions: 0,
            })
    }
}

impl<R: Read> History for TraceHistory<R> {
    #[inline]
    fn bit(&mut self) -> Result<Option<bool>, ReplayError> {
        Ok(self.reader.next_bit(self.hart)?)
    }

    fn indirect(&mut self, site: u64) -> Result<u64, ReplayError> {
        // The common record: one byte, a target this site used before.
        if let Some(&b) = self
            .reader
            .record_bytes(self.hart, StreamKind::Indirect)
            .first()
        {
            if b != 0 && b < 0x80 {
                let slot = target_slot(site, b);
                let (s, v, target) = self.recent[slot];
                if s == site && v == b {
                    self.reader
                        .skip_records(self.hart, StreamKind::Indirect, 1, 1);
                    return Ok(target);
                }
            }
        }
        let v = self.next(StreamKind::Indirect, "an indirect target")?;
        if v == 0 {
            let target = self.next(StreamKind::Indirect, "an indirect target address")?;
            self.sites.entry(site).or_default().push(target);
            Ok(target)
        } else {
            let table = self.sites.entry(site).or_default();
            let target = table.get(v as usize - 1).copied();
            if let (Some(t), Ok(b)) = (target, u8::try_from(v)) {
                // Site tables only grow: (site, index) names one target forever.
                let slot = target_slot(site, b);
                self.recent[slot] = (site, b, t);
            }
            target.ok_or_else(|| ReplayError::BadTarget {
                what: format!(
                    "target #{v} of the indirect site, which has only {} known targets",
                    table.len()
                ),
                addr: site,
            })
        }
    }

    fn escape(&mut self, matched: u64) -> Result<Option<u64>, ReplayError> {
        match self.reader.peek_record(self.hart, StreamKind::Escapes)? {
            Some(delta) if delta == matched => {
                self.next(StreamKind::Escapes, "an escape record")?;
                Ok(Some(self.next(StreamKind::Escapes, "an escape target")?))
            }
            Some(delta) if delta < matched => Err(ReplayError::Totals {
                what: format!(
                    "an escape was recorded after {delta} matching returns, the replay has seen {matched}"
                ),
            }),
            _ => Ok(None),
        }
    }
}

/// The recent-target slot of (site, index): consecutive indices of one site
/// in consecutive slots.
#[inline]
fn target_slot(site: u64, index: u8) -> usize {
    ((site >> 1) as usize)
        .wrapping_mul(0x9e37)
        .wrapping_add(usize::from(index))
        % RECENT_TARGETS
}
