//! Frequency histories: from a processor's counter value to virtual time.
//!
//! A history starts at a counter value with a default frequency; each change
//! is `(counter value at the change, new frequency)`. JP5267566B2 defines the
//! virtual time of a counter value as the sum, over the intervals before it,
//! of `cycles / frequency`, plus the cycles since the last change divided by
//! the current frequency; before the first change the default frequency
//! applies from counter zero. A [`FrequencyHistory`] keeps that sum at every
//! change (the patent's "running sum" variant), so a lookup is one binary
//! search and one division, and a [`Cursor`] walks a sorted batch in one pass.
//!
//! The origin — counter zero at the default frequency — is a convention: if
//! the processor ran at another frequency before the history starts, every
//! value is off by the same constant, which offset synchronisation removes.

use crate::error::{Error, Result};
use crate::time::{Hz, ProcessorId, VirtualTime, ATTOS_PER_SECOND};

/// One interval of constant frequency.
#[derive(Clone, Copy, Debug)]
struct Segment {
    /// Frequency in hertz over the interval.
    hz: u64,
    /// `10¹⁸ / hz` and `10¹⁸ mod hz`: attoseconds per cycle split so that a
    /// conversion needs only 64-bit division on its fast path.
    whole_attos_per_cycle: u64,
    rem_attos_per_cycle: u64,
    /// Virtual time (attoseconds) at the interval's first counter value.
    time_at_start: u128,
}

impl Segment {
    fn new(hz: Hz, time_at_start: u128) -> Segment {
        Segment {
            hz: hz.get(),
            whole_attos_per_cycle: ATTOS_PER_SECOND / hz.get(),
            rem_attos_per_cycle: ATTOS_PER_SECOND % hz.get(),
            time_at_start,
        }
    }

    /// `floor(cycles × 10¹⁸ / hz)`, exactly.
    #[inline]
    fn attos_of(&self, cycles: u64) -> u128 {
        let whole = cycles as u128 * self.whole_attos_per_cycle as u128;
        // cycles × rem < cycles × hz; when that fits 64 bits, one hardware
        // division does, which is the common case (deltas below ~2⁶⁴/hz cycles).
        let fraction = match cycles.checked_mul(self.rem_attos_per_cycle) {
            Some(product) => (product / self.hz) as u128,
            None => cycles as u128 * self.rem_attos_per_cycle as u128 / self.hz as u128,
        };
        whole + fraction
    }
}

/// The frequency history of one processor.
#[derive(Clone, Debug)]
pub struct FrequencyHistory {
    processor: ProcessorId,
    /// First counter value of each segment; `starts[0]` is the history's start.
    starts: Vec<u64>,
    segments: Vec<Segment>,
}

impl FrequencyHistory {
    /// A history that starts at counter value `start` running at `default_hz`.
    pub fn new(processor: ProcessorId, start: u64, default_hz: Hz) -> FrequencyHistory {
        let origin = Segment::new(default_hz, 0);
        let time_at_start = origin.attos_of(start);
        FrequencyHistory {
            processor,
            starts: vec![start],
            segments: vec![Segment::new(default_hz, time_at_start)],
        }
    }

    /// Append a change to `hz` at counter value `counter`, which must be above
    /// every earlier row of this history.
    pub fn push_change(&mut self, counter: u64, hz: Hz) -> Result<()> {
        let previous = *self.starts.last().expect("a history has a start");
        if counter == previous {
            return Err(Error::DuplicateHistoryRow {
                at: None,
                processor: self.processor,
                counter,
            });
        }
        if counter < previous {
            return Err(Error::UnsortedHistory {
                at: None,
                processor: self.processor,
                counter,
                previous,
            });
        }
        let last = self.segments.last().expect("a history has a segment");
        // Round each interval to the nearest attosecond (not down), so the
        // rounding errors of many intervals do not add up in one direction.
        let cycles = counter - previous;
        let exact_num = cycles as u128 * ATTOS_PER_SECOND as u128;
        let interval = (exact_num + last.hz as u128 / 2) / last.hz as u128;
        let time = last.time_at_start + interval;
        self.starts.push(counter);
        self.segments.push(Segment::new(hz, time));
        Ok(())
    }

    /// The processor this history belongs to.
    pub fn processor(&self) -> ProcessorId {
        self.processor
    }

    /// The first counter value the history covers.
    pub fn start(&self) -> u64 {
        self.starts[0]
    }

    /// Number of frequency changes after the start.
    pub fn changes(&self) -> usize {
        self.starts.len() - 1
    }

    /// The rows of the history: the start with its default frequency, then
    /// every change, as `(counter value, frequency)`.
    pub fn rows(&self) -> impl Iterator<Item = (u64, Hz)> + '_ {
        self.starts
            .iter()
            .zip(&self.segments)
            .map(|(&start, segment)| (start, Hz(segment.hz)))
    }

    /// The frequency in force at `counter` (the default before the first change).
    pub fn frequency_at(&self, counter: u64) -> Result<Hz> {
        let index = self.segment_of(counter)?;
        Ok(Hz(self.segments[index].hz))
    }

    /// The virtual time of a counter value: O(log n) in the number of changes.
    pub fn virtual_time(&self, counter: u64) -> Result<VirtualTime> {
        let index = self.segment_of(counter)?;
        Ok(self.time_in(index, counter))
    }

    /// A cursor for converting many values, fastest when they come in order.
    pub fn cursor(&self) -> Cursor {
        Cursor { segment: 0 }
    }

    /// Convert a sorted or unsorted slice of counter values into `out`; a
    /// sorted slice costs one pass over the history.
    pub fn virtual_times(&self, counters: &[u64], out: &mut Vec<VirtualTime>) -> Result<()> {
        let mut cursor = self.cursor();
        out.reserve(counters.len());
        for &counter in counters {
            out.push(cursor.virtual_time(self, counter)?);
        }
        Ok(())
    }

    fn segment_of(&self, counter: u64) -> Result<usize> {
        if counter < self.starts[0] {
            return Err(Error::BeforeStart {
                at: None,
                processor: self.processor,
                counter,
                start: self.starts[0],
            });
        }
        Ok(self.starts.partition_point(|&start| start <= counter) - 1)
    }

    #[inline]
    fn time_in(&self, index: usize, counter: u64) -> VirtualTime {
        let segment = &self.segments[index];
        let attos = segment.time_at_start + segment.attos_of(counter - self.starts[index]);
        // At most 2⁶⁴ cycles of 10¹⁸ as each: below 2¹²⁷, so the cast is exact.
        VirtualTime(attos as i128)
    }
}

/// Remembers where in a history the last lookup landed, so that values in
/// increasing order are converted in amortised O(1) each.
#[derive(Clone, Copy, Debug, Default)]
pub struct Cursor {
    segment: usize,
}

impl Cursor {
    /// The virtual time of `counter` in `history` (the history this cursor was made for).
    #[inline]
    pub fn virtual_time(
        &mut self,
        history: &FrequencyHistory,
        counter: u64,
    ) -> Result<VirtualTime> {
        let starts = &history.starts;
        let mut index = self.segment.min(starts.len() - 1);
        if counter < starts[index] {
            index = history.segment_of(counter)?;
        } else {
            // Walk forward a few segments (the usual case: the next value is
            // in this segment or the next), then fall back to binary search.
            let mut steps = 0;
            while index + 1 < starts.len() && starts[index + 1] <= counter {
                index += 1;
                steps += 1;
                if steps == 4 {
                    index += starts[index..].partition_point(|&start| start <= counter) - 1;
                    break;
                }
            }
        }
        self.segment = index;
        Ok(history.time_in(index, counter))
    }
}

/// A declared counter width narrower than 64 bits: values wrap around modulo
/// `2^bits` and are unwrapped by their order in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CounterWidth(u32);

impl CounterWidth {
    /// A width of `bits` (1 to 64).
    pub fn new(bits: u32) -> Result<CounterWidth> {
        if (1..=64).contains(&bits) {
            Ok(CounterWidth(bits))
        } else {
            Err(Error::InvalidArgument(format!(
                "counter width must be 1 to 64 bits, got {bits}"
            )))
        }
    }

    /// The width in bits.
    pub fn bits(self) -> u32 {
        self.0
    }
}

/// Turns a processor's wrapping counter readings, in time order, into a
/// monotonic 64-bit count: a reading below the previous one means the
/// counter wrapped once. This assumes consecutive readings are less than one
/// wrap period apart (2³² cycles are 1.4 s at 3 GHz).
#[derive(Clone, Copy, Debug)]
pub struct Unwrapper {
    width: Option<CounterWidth>,
    previous_raw: Option<u64>,
    wraps: u64,
}

impl Unwrapper {
    /// An unwrapper for counters of `width` (`None`: 64-bit, never wraps).
    pub fn new(width: Option<CounterWidth>) -> Unwrapper {
        Unwrapper {
            width,
            previous_raw: None,
            wraps: 0,
        }
    }

    /// The unwrapped value of the next reading `raw` of `processor`.
    pub fn unwrap(&mut self, processor: ProcessorId, raw: u64) -> Result<u64> {
        let bits = match self.width {
            Some(width) if width.bits() < 64 => width.bits(),
            _ => return Ok(raw),
        };
        if raw >> bits != 0 {
            return Err(Error::CounterTooWide {
                at: None,
                processor,
                counter: raw,
                bits,
            });
        }
        if self.previous_raw.is_some_and(|previous| raw < previous) {
            self.wraps += 1;
        }
        let value = self
            .wraps
            .checked_mul(1u64 << bits)
            .and_then(|base| base.checked_add(raw))
            .ok_or(Error::CounterOverflow {
                at: None,
                processor,
            })?;
        self.previous_raw = Some(raw);
        Ok(value)
    }
}

/// The frequency histories of all processors, looked up by id.
#[derive(Clone, Debug, Default)]
pub struct Histories {
    histories: Vec<FrequencyHistory>,
    /// `dense[id]` is the index of processor `id` in `histories`, for ids
    /// below [`Histories::DENSE_LIMIT`]: events look their processor up once
    /// each, and a vector index is several times faster than a hash map.
    dense: Vec<u32>,
}

impl Histories {
    const DENSE_LIMIT: u32 = 1 << 16;
    const ABSENT: u32 = u32::MAX;

    /// An empty set.
    pub fn new() -> Histories {
        Histories::default()
    }

    /// Add or replace the history of its processor.
    pub fn insert(&mut self, history: FrequencyHistory) {
        let id = history.processor();
        if let Some(index) = self.index_of(id) {
            self.histories[index] = history;
            return;
        }
        self.histories.push(history);
        self.reindex();
    }

    fn reindex(&mut self) {
        let max_dense = self
            .histories
            .iter()
            .map(|h| h.processor().0)
            .filter(|&id| id < Self::DENSE_LIMIT)
            .max();
        self.dense = vec![Self::ABSENT; max_dense.map_or(0, |m| m as usize + 1)];
        for (index, history) in self.histories.iter().enumerate() {
            let id = history.processor().0;
            if id < Self::DENSE_LIMIT {
                self.dense[id as usize] = index as u32;
            }
        }
    }

    /// The position of `processor` in [`Histories::iter`], if it has a history.
    #[inline]
    pub fn index_of(&self, processor: ProcessorId) -> Option<usize> {
        if processor.0 < Self::DENSE_LIMIT {
            match self.dense.get(processor.0 as usize) {
                Some(&index) if index != Self::ABSENT => Some(index as usize),
                _ => None,
            }
        } else {
            self.histories
                .iter()
                .position(|h| h.processor() == processor)
        }
    }

    /// The history of `processor`.
    pub fn get(&self, processor: ProcessorId) -> Option<&FrequencyHistory> {
        self.index_of(processor).map(|index| &self.histories[index])
    }

    /// The history at a position from [`Histories::index_of`].
    pub fn by_index(&self, index: usize) -> &FrequencyHistory {
        &self.histories[index]
    }

    /// All histories, in the order they were first inserted.
    pub fn iter(&self) -> impl Iterator<Item = &FrequencyHistory> {
        self.histories.iter()
    }

    /// Number of processors.
    pub fn len(&self) -> usize {
        self.histories.len()
    }

    /// True when no processor has a history.
    pub fn is_empty(&self) -> bool {
        self.histories.is_empty()
    }

    /// The virtual time of `counter` on `processor`.
    pub fn virtual_time(&self, processor: ProcessorId, counter: u64) -> Result<VirtualTime> {
        self.get(processor)
            .ok_or(Error::UnknownProcessor {
                at: None,
                processor,
            })?
            .virtual_time(counter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mhz(m: u64) -> Hz {
        Hz::from_mhz(m).unwrap()
    }

    #[test]
    fn seed_processor_one_reads_three_seconds_at_300m_cycles() {
        let mut history = FrequencyHistory::new(ProcessorId(1), 0, mhz(100));
        history.push_change(100_000_000, mhz(50)).unwrap();
        history.push_change(150_000_000, mhz(150)).unwrap();
        assert_eq!(
            history.virtual_time(300_000_000).unwrap(),
            VirtualTime::from_secs(3)
        );
        assert_eq!(
            history.virtual_time(150_000_000).unwrap(),
            VirtualTime::from_secs(2)
        );
    }

    #[test]
    fn cursor_agrees_with_binary_search_in_any_order() {
        let mut history = FrequencyHistory::new(ProcessorId(0), 10, mhz(7));
        for k in 1..100u64 {
            history
                .push_change(10 + k * 1_000 + k * k, Hz::new(1_000 + 37 * k).unwrap())
                .unwrap();
        }
        let values: Vec<u64> = (0..20_000u64).map(|i| 10 + (i * 7_919) % 120_000).collect();
        let mut cursor = history.cursor();
        for &v in &values {
            assert_eq!(
                cursor.virtual_time(&history, v).unwrap(),
                history.virtual_time(v).unwrap()
            );
        }
        let mut sorted = values.clone();
        sorted.sort_unstable();
        let mut batch = Vec::new();
        history.virtual_times(&sorted, &mut batch).unwrap();
        for (&v, &t) in sorted.iter().zip(&batch) {
            assert_eq!(t, history.virtual_time(v).unwrap());
        }
    }

    #[test]
    fn rows_out_of_order_or_repeated_are_refused() {
        let mut history = FrequencyHistory::new(ProcessorId(4), 100, mhz(1));
        assert!(matches!(
            history.push_change(100, mhz(2)),
            Err(Error::DuplicateHistoryRow { counter: 100, .. })
        ));
        history.push_change(200, mhz(2)).unwrap();
        assert!(matches!(
            history.push_change(150, mhz(3)),
            Err(Error::UnsortedHistory {
                counter: 150,
                previous: 200,
                ..
            })
        ));
        assert!(matches!(
            history.virtual_time(99),
            Err(Error::BeforeStart { start: 100, .. })
        ));
    }

    #[test]
    fn huge_deltas_take_the_wide_path_exactly() {
        let history = FrequencyHistory::new(ProcessorId(0), 0, Hz::new(3).unwrap());
        let v = u64::MAX;
        let expected = v as u128 * ATTOS_PER_SECOND as u128 / 3;
        assert_eq!(history.virtual_time(v).unwrap().attos() as u128, expected);
    }

    #[test]
    fn narrow_counters_unwrap_by_order() {
        let mut unwrapper = Unwrapper::new(Some(CounterWidth::new(8).unwrap()));
        let p = ProcessorId(0);
        let got: Vec<u64> = [250, 255, 3, 100, 2]
            .iter()
            .map(|&r| unwrapper.unwrap(p, r).unwrap())
            .collect();
        assert_eq!(got, vec![250, 255, 259, 356, 514]);
        assert!(matches!(
            unwrapper.unwrap(p, 256),
            Err(Error::CounterTooWide { bits: 8, .. })
        ));
    }

    #[test]
    fn lookup_by_id_handles_sparse_and_large_ids() {
        let mut all = Histories::new();
        all.insert(FrequencyHistory::new(ProcessorId(3), 0, mhz(1)));
        all.insert(FrequencyHistory::new(ProcessorId(1 << 20), 0, mhz(2)));
        assert_eq!(all.index_of(ProcessorId(3)), Some(0));
        assert_eq!(all.index_of(ProcessorId(1 << 20)), Some(1));
        assert_eq!(all.index_of(ProcessorId(2)), None);
        assert_eq!(all.index_of(ProcessorId(7)), None);
    }
}
