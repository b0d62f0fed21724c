//! The synchronisation events of a multi-hart recording (stream kind 5):
//! per hart, in that hart's own order, each call it made of the
//! synchronisation API — where (the hart's instruction count before the
//! `ecall`), which call, on which object (handle and the descriptor's
//! parameter), and the call's place in the run's global order — and, last,
//! where the hart's run ended. With each hart's branch history these fix
//! where every hart's execution meets the others' (US patent 8,448,140,
//! embodiment 7); the replay simulates the objects itself, so what a call
//! returned or whether it blocked is not recorded: that depends on the
//! schedule, which the replay works out anew for the cores it times.
//!
//! The items of one event (docs/FORMATS.md, "Synchronisation events"):
//! a varint n, the instructions the hart executed since its previous event
//! (or since the start); a varint code, the call number (0–255) or
//! [`END`]; for a call, a varint gap (its global sequence number minus one
//! more than the hart's previous call's, or minus 0 for its first) and a
//! varint k — 0 for a call on no object, 1 for an object new to this hart
//! followed by its handle and its parameter, k ≥ 2 for the hart's
//! (k − 1)-th object in order of first use; then, for the calls whose
//! argument the replay needs ([`carries_value`]: `set_hz`, call 9, the
//! hart's new clock frequency), a varint: the value; for the end, a
//! varint: the address of the hart's last instruction. Before its end a
//! hart may have, with n = 0 and the code [`DCACHE`], a data-cache
//! measurement of its own (private) cache for one geometry: varints size,
//! ways, line, accesses, misses — what the replay of several harts needs
//! for each hart's data-cache term.

use crate::{DcacheMeasurement, TraceError};

/// The code of a hart's end record.
pub const END: u64 = 256;

/// The code of a hart's data-cache measurement.
pub const DCACHE: u64 = 257;

/// The call `set_hz`: the hart's clock runs at the value (hertz) from the
/// end of the call on.
pub const SET_HZ: u8 = 9;

/// Whether call `op`'s event carries its value (`a1`): only where the
/// replay needs it to time the run, not to know what happened.
pub fn carries_value(op: u8) -> bool {
    op == SET_HZ
}

/// One synchronisation call of one hart, as recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyncCall {
    /// Instructions the hart had executed before the call's `ecall`.
    pub at: u64,
    /// The call number (the low byte of `a7`).
    pub op: u8,
    /// Its place among all harts' calls of the run, from 0.
    pub seq: u64,
    /// The object: its handle and its descriptor's parameter (`None` for
    /// calls on no object).
    pub object: Option<(u64, u32)>,
    /// The call's value, for calls that [carry one](carries_value); 0 for
    /// the others.
    pub value: u64,
}

/// One hart's synchronisation events, decoded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HartSync {
    /// Its calls, in its order.
    pub calls: Vec<SyncCall>,
    /// Instructions it executed in the whole run (as the replay counts:
    /// retired, and `ecall`s/`ebreak`s that entered a handler).
    pub instructions: u64,
    /// Address of its last instruction executed.
    pub last_pc: u64,
    /// Its own data cache's misses, per geometry measured.
    pub dcache: Vec<DcacheMeasurement>,
}

/// One hart's side of the encoding: the count and sequence number of its
/// previous event, and its objects in order of first use.
#[derive(Clone, Debug, Default)]
pub struct SyncEncoder {
    at: u64,
    next_seq: u64,
    objects: Vec<u64>,
}

impl SyncEncoder {
    /// The items of `call` (see the module documentation).
    pub fn call(&mut self, call: &SyncCall) -> Vec<u64> {
        let mut items = vec![
            call.at.saturating_sub(self.at),
            u64::from(call.op),
            call.seq.saturating_sub(self.next_seq),
        ];
        self.at = call.at;
        self.next_seq = call.seq + 1;
        match call.object {
            None => items.push(0),
            Some((addr, param)) => match self.objects.iter().position(|&o| o == addr) {
                Some(i) => items.push(i as u64 + 2),
                None => {
                    self.objects.push(addr);
                    items.extend([1, addr, u64::from(param)]);
                }
            },
        }
        if carries_value(call.op) {
            items.push(call.value);
        }
        items
    }

    /// The items of a measurement of the hart's data cache.
    pub fn dcache(&self, m: &DcacheMeasurement) -> [u64; 7] {
        [
            0,
            DCACHE,
            u64::from(m.size),
            u64::from(m.ways),
            u64::from(m.line),
            m.accesses,
            m.misses,
        ]
    }

    /// The items of the hart's end record: it executed `instructions` in
    /// all, the last at `last_pc`.
    pub fn end(&mut self, instructions: u64, last_pc: u64) -> [u64; 3] {
        let n = instructions.saturating_sub(self.at);
        self.at = instructions;
        [n, END, last_pc]
    }
}

/// Decode hart `hart`'s items (all of its stream, in order). A stream
/// that does not end with exactly one end record, counts that go
/// backwards or an object number beyond the table are refused.
pub fn decode(hart: u16, items: &[u64]) -> Result<HartSync, TraceError> {
    let mut calls = Vec::new();
    let rest =
        SyncEvents::new(hart, items.iter().copied()).each_call(|call, _| calls.push(call))?;
    Ok(HartSync {
        calls,
        instructions: rest.instructions,
        last_pc: rest.last_pc,
        dcache: rest.dcache,
    })
}

/// What a hart's stream holds besides its calls ([`SyncEvents::each_call`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamRest {
    /// Instructions it executed in the whole run.
    pub instructions: u64,
    /// Address of its last instruction executed.
    pub last_pc: u64,
    /// Its own data cache's misses, per geometry measured.
    pub dcache: Vec<DcacheMeasurement>,
}

/// One event of a hart's stream ([`SyncEvents`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncEvent {
    /// A call, and for a call on an object, the object's number among the
    /// hart's objects in order of first use (from 0).
    Call(SyncCall, Option<usize>),
    /// A measurement of the hart's data cache.
    Dcache(DcacheMeasurement),
    /// The hart's end: instructions it executed in all, the address of
    /// the last.
    End {
        /// Instructions executed in the whole run.
        instructions: u64,
        /// Address of the last instruction executed.
        last_pc: u64,
    },
}

/// A hart's events decoded one at a time from its items, checked as
/// [`decode`] checks them: what a replay of many calls reads without
/// holding every call decoded.
pub struct SyncEvents<I: Iterator<Item = u64>> {
    hart: u16,
    items: I,
    at: u64,
    next_seq: u64,
    objects: Vec<(u64, u32)>,
    ended: bool,
}

impl<I: Iterator<Item = u64>> SyncEvents<I> {
    /// Hart `hart`'s events in `items` (all of its stream, in order).
    pub fn new(hart: u16, items: I) -> SyncEvents<I> {
        SyncEvents {
            hart,
            items,
            at: 0,
            next_seq: 0,
            objects: Vec::new(),
            ended: false,
        }
    }

    #[cold]
    fn bad(&self, what: String) -> TraceError {
        TraceError::Corrupt {
            offset: 0,
            what: format!("hart {}'s synchronisation events: {what}", self.hart),
        }
    }

    #[inline]
    fn item(&mut self, what: &str) -> Result<u64, TraceError> {
        match self.items.next() {
            Some(v) => Ok(v),
            None => Err(self.ends_inside(what)),
        }
    }

    #[cold]
    fn ends_inside(&self, what: &str) -> TraceError {
        self.bad(format!("the stream ends inside an event ({what})"))
    }

    /// Every event of the stream: each call to `call` (with its object's
    /// number, as [`SyncEvent::Call`] gives it), the rest returned.
    #[inline]
    pub fn each_call(
        mut self,
        mut call: impl FnMut(SyncCall, Option<usize>),
    ) -> Result<StreamRest, TraceError> {
        let mut rest = StreamRest::default();
        while let Some(event) = self.next_event()? {
            match event {
                SyncEvent::Call(c, number) => call(c, number),
                SyncEvent::Dcache(m) => rest.dcache.push(m),
                SyncEvent::End {
                    instructions,
                    last_pc,
                } => {
                    rest.instructions = instructions;
                    rest.last_pc = last_pc;
                }
            }
        }
        Ok(rest)
    }

    /// The next event; `None` after the end record (and only if nothing
    /// follows it).
    #[inline]
    pub fn next_event(&mut self) -> Result<Option<SyncEvent>, TraceError> {
        if self.ended {
            return Ok(None);
        }
        let Some(n) = self.items.next() else {
            return Err(self.bad("no end record: the recording of this hart is incomplete".into()));
        };
        self.at = match self.at.checked_add(n) {
            Some(at) => at,
            None => return Err(self.bad("instruction count overflows".into())),
        };
        let at = self.at;
        let code = self.item("call")?;
        if code == END {
            let last_pc = self.item("last pc")?;
            if self.items.next().is_some() {
                return Err(self.bad("items after the end record".into()));
            }
            self.ended = true;
            return Ok(Some(SyncEvent::End {
                instructions: at,
                last_pc,
            }));
        }
        if code == DCACHE {
            let mut field = |what| {
                let v = self.item(what)?;
                u32::try_from(v)
                    .map_err(|_| self.bad(format!("data-cache {what} {v} is above 2^32")))
            };
            let (size, ways, line) = (field("size")?, field("ways")?, field("line")?);
            let m = DcacheMeasurement {
                size,
                ways,
                line,
                accesses: self.item("accesses")?,
                misses: self.item("misses")?,
            };
            if let Some(why) = m.implausible() {
                return Err(self.bad(format!("data-cache measurement: {why}")));
            }
            if m.accesses > at {
                return Err(self.bad(format!(
                    "{} data accesses in {at} instructions (at most one each)",
                    m.accesses
                )));
            }
            return Ok(Some(SyncEvent::Dcache(m)));
        }
        let op = u8::try_from(code).map_err(|_| self.bad(format!("unknown event code {code}")))?;
        let gap = self.item("sequence")?;
        let seq = self
            .next_seq
            .checked_add(gap)
            .ok_or_else(|| self.bad("sequence number overflows".into()))?;
        self.next_seq = seq + 1;
        let (object, number) = match self.item("object")? {
            0 => (None, None),
            1 => {
                let addr = self.item("handle")?;
                let param = self.item("parameter")?;
                let param = u32::try_from(param).map_err(|_| {
                    self.bad(format!("object {addr:#x} has a parameter above 2^32"))
                })?;
                self.objects.push((addr, param));
                (Some((addr, param)), Some(self.objects.len() - 1))
            }
            k => {
                let i = usize::try_from(k - 2)
                    .ok()
                    .filter(|&i| i < self.objects.len())
                    .ok_or_else(|| {
                        self.bad(format!(
                            "object #{} of only {} known objects",
                            k - 1,
                            self.objects.len()
                        ))
                    })?;
                (Some(self.objects[i]), Some(i))
            }
        };
        let value = if carries_value(op) {
            self.item("value")?
        } else {
            0
        };
        let call = SyncCall {
            at,
            op,
            seq,
            object,
            value,
        };
        Ok(Some(SyncEvent::Call(call, number)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_round_trip_and_damage_is_refused() {
        let calls = [
            SyncCall {
                at: 10,
                op: 2,
                seq: 0,
                object: Some((0x8020_0000, 4)),
                value: 0,
            },
            SyncCall {
                at: 10,
                op: SET_HZ,
                seq: 3,
                object: None,
                value: 250_000_000,
            },
            SyncCall {
                at: 99,
                op: 3,
                seq: 7,
                object: Some((0x8020_0000, 4)),
                value: 0,
            },
        ];
        let mut e = SyncEncoder::default();
        let mut items: Vec<u64> = calls.iter().flat_map(|c| e.call(c)).collect();
        // The object named by number the second time.
        assert_eq!(items.last(), Some(&2));
        let m = DcacheMeasurement {
            size: 16384,
            ways: 4,
            line: 64,
            accesses: 40,
            misses: 3,
        };
        items.extend(e.dcache(&m));
        let mut implausible = items.clone();
        items.extend(e.end(150, 0x8000_0040));
        let got = decode(1, &items).unwrap();
        assert_eq!(got.dcache, [m]);
        // More misses than accesses.
        let n = implausible.len();
        implausible[n - 1] = 41;
        implausible.extend(e.end(150, 0x8000_0040));
        let err = decode(1, &implausible).unwrap_err();
        assert!(err.to_string().contains("41 misses out of 40"), "{err}");
        assert_eq!(got.calls, calls);
        assert_eq!((got.instructions, got.last_pc), (150, 0x8000_0040));

        let e = decode(1, &items[..items.len() - 3]).unwrap_err();
        assert!(e.to_string().contains("no end record"), "{e}");
        let mut bad = items.clone();
        let k = bad.len() - 11;
        bad[k] = 9;
        let e = decode(1, &bad).unwrap_err();
        assert!(e.to_string().contains("object #8 of only 1"), "{e}");
        let mut extra = items.clone();
        extra.push(0);
        assert!(decode(1, &extra).is_err());
        assert!(decode(1, &[]).is_err());
    }
}
