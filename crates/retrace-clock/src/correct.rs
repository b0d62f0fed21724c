//! Correction: trace events `(processor, counter value, payload)` onto the
//! reference processor's virtual time.
//!
//! The reference's own values only go through its frequency history. A
//! responder's value goes through its history and then gets the offset its
//! synchronisation rounds measured at that moment. Sync rounds are read as
//! counter values too and go through the same histories first, so the
//! offset is in virtual time and stays right when the two processors run at
//! different, changing frequencies (the seed measures `d` in cycles with
//! frequencies held fixed; this is the same quantity divided by the clock).

use crate::error::{Error, Location, Result};
use crate::history::{Cursor, Histories};
use crate::sync::{estimate, DriftModel, OffsetEstimate, OffsetEstimator, OffsetTrack, SyncRound};
use crate::time::{ProcessorId, VirtualTime};
use std::collections::BTreeMap;

/// One synchronisation round as recorded: raw counter values of each side.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyncRow {
    /// The reference processor (reads A, C, b).
    pub reference: ProcessorId,
    /// The responder (reads B, a, c).
    pub responder: ProcessorId,
    /// Which re-synchronisation the round belongs to; rounds with the same
    /// value are combined into one estimate.
    pub session: u64,
    /// Counter values `[A, B, C, a, b, c]`.
    pub counters: [u64; 6],
    /// Where the row came from, for error messages.
    pub location: Option<Location>,
}

/// The outcome of synchronising every responder with the reference.
#[derive(Clone, Debug)]
pub struct Synchronisation {
    /// The reference processor.
    pub reference: ProcessorId,
    /// Per responder: one estimate per re-synchronisation session, in time
    /// order, and the offset track through them.
    pub responders: BTreeMap<ProcessorId, ResponderSync>,
}

/// The synchronisation of one responder.
#[derive(Clone, Debug)]
pub struct ResponderSync {
    /// One estimate per session, sorted by time.
    pub estimates: Vec<OffsetEstimate>,
    /// The offset at any time.
    pub track: OffsetTrack,
}

/// Convert sync rows to virtual time through `histories` and estimate each
/// responder's offset per session with `estimator`, joined by `drift`.
///
/// Rows must name one reference processor.
pub fn synchronise(
    histories: &Histories,
    rows: &[SyncRow],
    estimator: OffsetEstimator,
    drift: DriftModel,
) -> Result<Synchronisation> {
    let first = rows.first().ok_or(Error::NoRounds)?;
    let reference = first.reference;
    let mut sessions: BTreeMap<(ProcessorId, u64), Vec<SyncRound>> = BTreeMap::new();
    for row in rows {
        let locate = |e: Error| match &row.location {
            Some(location) => e.at(location.clone()),
            None => e,
        };
        if row.reference != reference {
            return Err(locate(Error::TwoReferences {
                at: None,
                first: reference,
                second: row.reference,
            }));
        }
        let round = round_in_virtual_time(histories, row).map_err(locate)?;
        sessions
            .entry((row.responder, row.session))
            .or_default()
            .push(round);
    }
    let mut estimates: BTreeMap<ProcessorId, Vec<OffsetEstimate>> = BTreeMap::new();
    for ((responder, _session), rounds) in &sessions {
        estimates
            .entry(*responder)
            .or_default()
            .push(estimate(rounds, estimator)?);
    }
    let mut responders = BTreeMap::new();
    for (responder, mut list) in estimates {
        list.sort_by_key(|e| e.at);
        let track = OffsetTrack::new(&list, drift)?;
        responders.insert(
            responder,
            ResponderSync {
                estimates: list,
                track,
            },
        );
    }
    Ok(Synchronisation {
        reference,
        responders,
    })
}

fn round_in_virtual_time(histories: &Histories, row: &SyncRow) -> Result<SyncRound> {
    let [a_up, b_up, c_up, a, b, c] = row.counters;
    let reference = histories
        .get(row.reference)
        .ok_or(Error::UnknownProcessor {
            at: None,
            processor: row.reference,
        })?;
    let responder = histories
        .get(row.responder)
        .ok_or(Error::UnknownProcessor {
            at: None,
            processor: row.responder,
        })?;
    let on_reference = |v: u64| reference.virtual_time(v).map(VirtualTime::attos);
    let on_responder = |v: u64| responder.virtual_time(v).map(VirtualTime::attos);
    let resolution = reference
        .frequency_at(a_up)?
        .tick_attos()
        .max(responder.frequency_at(b_up)?.tick_attos());
    let round = SyncRound {
        reference_asks: on_reference(a_up)?,
        responder_answers: on_responder(b_up)?,
        reference_hears: on_reference(c_up)?,
        responder_asks: on_responder(a)?,
        reference_answers: on_reference(b)?,
        responder_hears: on_responder(c)?,
        resolution: resolution as i128,
    };
    round.check().map_err(|reason| Error::InvalidRound {
        at: None,
        reference: row.reference,
        responder: row.responder,
        reason,
    })?;
    Ok(round)
}

/// What to do with each processor's values: the reference's need no offset.
#[derive(Clone, Debug)]
enum Alignment {
    Reference,
    Offset(OffsetTrack),
    NotSynchronised,
}

/// Puts counter values of any processor on the reference's virtual time.
#[derive(Clone, Debug)]
pub struct Corrector<'a> {
    histories: &'a Histories,
    reference: ProcessorId,
    /// Indexed like `histories`.
    alignments: Vec<Alignment>,
}

impl<'a> Corrector<'a> {
    /// A corrector for `histories`, with the offsets of `sync`.
    pub fn new(histories: &'a Histories, sync: &Synchronisation) -> Corrector<'a> {
        let tracks = sync.responders.iter().map(|(&p, r)| (p, r.track.clone()));
        Corrector::with_tracks(histories, sync.reference, tracks)
    }

    /// A corrector from explicit offset tracks per responder.
    pub fn with_tracks(
        histories: &'a Histories,
        reference: ProcessorId,
        tracks: impl IntoIterator<Item = (ProcessorId, OffsetTrack)>,
    ) -> Corrector<'a> {
        let mut alignments = vec![Alignment::NotSynchronised; histories.len()];
        for (processor, track) in tracks {
            if let Some(index) = histories.index_of(processor) {
                alignments[index] = Alignment::Offset(track);
            }
        }
        if let Some(index) = histories.index_of(reference) {
            alignments[index] = Alignment::Reference;
        }
        Corrector {
            histories,
            reference,
            alignments,
        }
    }

    /// The reference processor.
    pub fn reference(&self) -> ProcessorId {
        self.reference
    }

    /// A correction pass that remembers each processor's place in its
    /// history: values in time order per processor cost O(1) each.
    pub fn pass(&self) -> CorrectionPass<'_, 'a> {
        CorrectionPass {
            corrector: self,
            cursors: vec![Cursor::default(); self.histories.len()],
            offset_segments: vec![0; self.histories.len()],
        }
    }

    /// Correct a batch of `(processor, counter)` values into `out`.
    pub fn correct_all(
        &self,
        values: impl IntoIterator<Item = (ProcessorId, u64)>,
        out: &mut Vec<VirtualTime>,
    ) -> Result<()> {
        let mut pass = self.pass();
        for (processor, counter) in values {
            out.push(pass.correct(processor, counter)?);
        }
        Ok(())
    }
}

/// One walk through a batch of events; see [`Corrector::pass`].
#[derive(Debug)]
pub struct CorrectionPass<'c, 'a> {
    corrector: &'c Corrector<'a>,
    cursors: Vec<Cursor>,
    /// Per processor, the segment of its offset track the last value fell in.
    offset_segments: Vec<usize>,
}

impl CorrectionPass<'_, '_> {
    /// The reference time of `counter` read on `processor`.
    #[inline]
    pub fn correct(&mut self, processor: ProcessorId, counter: u64) -> Result<VirtualTime> {
        let corrector = self.corrector;
        // A `let … else` rather than `ok_or`: an eagerly built error is
        // dropped on every call, which showed in profiles of this loop.
        let Some(index) = corrector.histories.index_of(processor) else {
            return Err(Error::UnknownProcessor {
                at: None,
                processor,
            });
        };
        let history = corrector.histories.by_index(index);
        let own = self.cursors[index].virtual_time(history, counter)?;
        match &corrector.alignments[index] {
            Alignment::Reference => Ok(own),
            Alignment::Offset(track) => {
                let offset = track.offset_near(own.0, &mut self.offset_segments[index]);
                // Saturating: an extrapolated drift far outside any real trace
                // must not overflow.
                Ok(VirtualTime(own.0.saturating_add(offset)))
            }
            Alignment::NotSynchronised => Err(Error::NotSynchronised {
                at: None,
                processor,
                reference: corrector.reference,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::FrequencyHistory;
    use crate::time::Hz;

    #[test]
    fn seed_offset_in_virtual_time() {
        // Both counters at 1 Hz: a tick is a second and virtual time is the
        // patent's arithmetic on counter values.
        let one_hz = Hz::new(1).unwrap();
        let mut histories = Histories::new();
        histories.insert(FrequencyHistory::new(ProcessorId(1), 0, one_hz));
        histories.insert(FrequencyHistory::new(ProcessorId(2), 0, one_hz));
        let row = SyncRow {
            reference: ProcessorId(1),
            responder: ProcessorId(2),
            session: 0,
            counters: [75, 125, 225, 275, 425, 425],
            location: None,
        };
        let sync = synchronise(
            &histories,
            &[row],
            OffsetEstimator::Mean,
            DriftModel::Piecewise,
        )
        .unwrap();
        let estimate = sync.responders[&ProcessorId(2)].estimates[0];
        assert_eq!(estimate.offset, VirtualTime::from_secs(50).attos());
        let corrector = Corrector::new(&histories, &sync);
        let mut pass = corrector.pass();
        assert_eq!(
            pass.correct(ProcessorId(2), 875).unwrap(),
            VirtualTime::from_secs(925)
        );
        assert_eq!(
            pass.correct(ProcessorId(1), 825).unwrap(),
            VirtualTime::from_secs(825)
        );
        assert!(matches!(
            pass.correct(ProcessorId(9), 1),
            Err(Error::UnknownProcessor {
                processor: ProcessorId(9),
                ..
            })
        ));
    }
}
