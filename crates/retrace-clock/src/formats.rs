//! Files: frequency histories, sync rounds and events in; corrected events out.
//!
//! Inputs are CSV with a header row, JSON (an array of objects or one object
//! per line), and for histories also Linux ftrace / `perf script` text with
//! `cpu_frequency` or `policy_frequency` events. `docs/FORMATS.md` ("Clock
//! files") is the user-facing description of every column.
//!
//! Every row that cannot be used is an [`Error`] carrying the file and line.
//! With [`BadRows::Skip`] such rows are left out and counted in [`Skipped`]
//! instead — never dropped without a count. A JSON array that is not valid
//! JSON cannot be resynchronised and always fails.

use crate::correct::SyncRow;
use crate::error::{Error, Location, Result};
use crate::history::{CounterWidth, FrequencyHistory, Histories, Unwrapper};
use crate::time::{Hz, ProcessorId, VirtualTime, ATTOS_PER_NANOSECOND};
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

/// What to do with a row that cannot be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum BadRows {
    /// Stop at the first bad row with its error.
    #[default]
    Fail,
    /// Leave the row out and count it.
    Skip,
}

/// How to read input files.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReadOptions {
    /// Fail or skip on bad rows.
    pub bad_rows: BadRows,
    /// Counter width, when the counters wrap around (e.g. 32 bits).
    pub width: Option<CounterWidth>,
}

/// Rows left out under [`BadRows::Skip`], by kind, with the first few messages.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Skipped {
    /// Rows left out.
    pub total: u64,
    /// Rows left out per kind of problem ([`Error::kind`]).
    pub by_kind: BTreeMap<&'static str, u64>,
    /// The first messages (at most [`Skipped::EXAMPLES`]).
    pub examples: Vec<String>,
}

impl Skipped {
    /// How many messages are kept as examples.
    pub const EXAMPLES: usize = 5;

    /// Count `error` as one skipped row.
    pub fn record(&mut self, error: &Error) {
        self.total += 1;
        *self.by_kind.entry(error.kind()).or_default() += 1;
        if self.examples.len() < Self::EXAMPLES {
            self.examples.push(error.to_string());
        }
    }

    /// Add the counts of `other`.
    pub fn merge(&mut self, other: &Skipped) {
        self.total += other.total;
        for (kind, count) in &other.by_kind {
            *self.by_kind.entry(kind).or_default() += count;
        }
        for example in &other.examples {
            if self.examples.len() < Self::EXAMPLES {
                self.examples.push(example.clone());
            }
        }
    }

    /// Apply `policy` to a row's result: `Ok(Some)` to use, `Ok(None)` when
    /// skipped, `Err` to stop.
    pub fn handle<T>(&mut self, policy: BadRows, row: Result<T>) -> Result<Option<T>> {
        match row {
            Ok(value) => Ok(Some(value)),
            Err(error) if policy == BadRows::Skip && is_row_error(&error) => {
                self.record(&error);
                Ok(None)
            }
            Err(error) => Err(error),
        }
    }
}

/// Errors about one row, which skipping can step over (not I/O, not arguments).
fn is_row_error(error: &Error) -> bool {
    !matches!(
        error,
        Error::Io { .. }
            | Error::InvalidArgument(_)
            | Error::NoRounds
            | Error::TimestampInSeconds { .. }
    )
}

/// Read a whole file (or standard input for `-`).
pub fn read_text(path: &Path) -> Result<String> {
    let io = |error| Error::Io {
        path: path.to_path_buf(),
        error,
    };
    if path == Path::new("-") {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text).map_err(io)?;
        return Ok(text);
    }
    std::fs::read_to_string(path).map_err(io)
}

/// The syntax of a history file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HistoryFormat {
    /// CSV with `processor,counter,hz` (or `khz`, `mhz`).
    Csv,
    /// JSON objects with the same fields.
    Json,
    /// ftrace / `perf script` lines with `cpu_frequency` or `policy_frequency`.
    Ftrace,
}

impl HistoryFormat {
    /// Guess from the text: JSON if it opens with `[` or `{`, ftrace if a
    /// frequency event appears, CSV otherwise.
    pub fn detect(text: &str) -> HistoryFormat {
        let first = text.trim_start().chars().next();
        if matches!(first, Some('[' | '{')) {
            HistoryFormat::Json
        } else if text.contains("cpu_frequency:") || text.contains("policy_frequency:") {
            HistoryFormat::Ftrace
        } else {
            HistoryFormat::Csv
        }
    }
}

/// A parsed history file.
#[derive(Clone, Debug, Default)]
pub struct HistoryFile {
    /// The histories.
    pub histories: Histories,
    /// Rows left out.
    pub skipped: Skipped,
    /// Lines of an ftrace file that carry no frequency event (other events).
    pub other_lines: u64,
}

/// Parse a history file of any [`HistoryFormat`] (detected).
pub fn parse_history(text: &str, file: &Path, options: ReadOptions) -> Result<HistoryFile> {
    let mut builder = HistoryBuilder::new(options.width);
    let mut skipped = Skipped::default();
    let mut other_lines = 0;
    let located = |line: u64| Location {
        file: file.to_path_buf(),
        line,
    };
    match HistoryFormat::detect(text) {
        HistoryFormat::Ftrace => {
            for (index, line) in text.lines().enumerate() {
                let at = located(index as u64 + 1);
                let event = match ftrace_event(line) {
                    Ok(None) => {
                        other_lines += 1;
                        continue;
                    }
                    Ok(Some(event)) => Ok(event),
                    Err(reason) => Err(Error::Malformed {
                        at: Some(at.clone()),
                        reason,
                    }),
                };
                let Some((stamp, changes)) = skipped.handle(options.bad_rows, event)? else {
                    continue;
                };
                let counter = match stamp {
                    Stamp::Counter(counter) => counter,
                    // The whole file is on that clock: not a bad row to skip.
                    Stamp::Seconds(stamp) => {
                        return Err(Error::TimestampInSeconds {
                            at: Some(at),
                            stamp: stamp.to_string(),
                        })
                    }
                };
                for (processor, hz) in changes {
                    let row = builder
                        .add(processor, counter, hz)
                        .map_err(|e| e.at(at.clone()));
                    skipped.handle(options.bad_rows, row)?;
                }
            }
        }
        format => {
            let columns = ["processor", "counter", "hz", "khz", "mhz"];
            for_each_row(
                text,
                file,
                format == HistoryFormat::Json,
                &columns,
                |line, row| {
                    let parsed = row.and_then(|values| {
                        let processor = ProcessorId(required_number(&values, 0, "processor")?);
                        let counter = required_number(&values, 1, "counter")?;
                        let hz = frequency_of(&values, processor)?;
                        builder.add(processor, counter, hz)
                    });
                    // The location is built only for a bad row: a path
                    // copied for every good one cost a fifth of the load.
                    skipped.handle(options.bad_rows, parsed.map_err(|e| e.at(located(line))))?;
                    Ok(())
                },
            )?;
        }
    }
    Ok(HistoryFile {
        histories: builder.finish(),
        skipped,
        other_lines,
    })
}

/// Collects history rows per processor; the first row of a processor is its start.
struct HistoryBuilder {
    width: Option<CounterWidth>,
    histories: BTreeMap<ProcessorId, (FrequencyHistory, Unwrapper)>,
    order: Vec<ProcessorId>,
}

impl HistoryBuilder {
    fn new(width: Option<CounterWidth>) -> HistoryBuilder {
        HistoryBuilder {
            width,
            histories: BTreeMap::new(),
            order: Vec::new(),
        }
    }

    fn add(&mut self, processor: ProcessorId, raw_counter: u64, hz: Hz) -> Result<()> {
        match self.histories.get_mut(&processor) {
            Some((history, unwrapper)) => {
                // Unwrap on a copy so that a refused row does not count as a wrap.
                let mut trial = *unwrapper;
                let counter = trial.unwrap(processor, raw_counter)?;
                history.push_change(counter, hz)?;
                *unwrapper = trial;
            }
            None => {
                let mut unwrapper = Unwrapper::new(self.width);
                let counter = unwrapper.unwrap(processor, raw_counter)?;
                self.histories.insert(
                    processor,
                    (FrequencyHistory::new(processor, counter, hz), unwrapper),
                );
                self.order.push(processor);
            }
        }
        Ok(())
    }

    fn finish(mut self) -> Histories {
        let mut histories = Histories::new();
        for processor in self.order {
            let (history, _) = self
                .histories
                .remove(&processor)
                .expect("every id in order");
            histories.insert(history);
        }
        histories
    }
}

/// A frequency change read from a trace: `(processor, counter value, new frequency)`.
pub type FrequencyChange = (ProcessorId, u64, Hz);

/// The timestamp of an ftrace / `perf script` line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stamp<'a> {
    /// An integer: a counter value (trace clock `x86-tsc`, `counter`).
    Counter(u64),
    /// A decimal number: seconds (the default trace clocks), as written.
    Seconds(&'a str),
}

/// Why a history of decimal-second timestamps is refused, after the
/// timestamp itself.
pub const SECONDS_ADVICE: &str = "is in seconds (the default trace clocks stamp \
    events with time, not cycles), so there is nothing for frequency correction \
    to do; record with a cycle-counter trace clock \
    (`echo x86-tsc > /sys/kernel/tracing/trace_clock`, or `counter`) so that \
    timestamps are counter values";

/// One frequency event of an ftrace / `perf script` line: `Ok(None)` for a
/// line without one, else the `(processor, counter, frequency)` changes it
/// carries (a `policy_frequency` with `policy_cpus` applies to each CPU).
///
/// The timestamp is the counter: an integer timestamp (trace clock
/// `x86-tsc`, `counter`) is used as it is. A decimal one is seconds (the
/// default clocks): already time, which a frequency history cannot
/// correct, so it is an error ([`SECONDS_ADVICE`]).
pub fn parse_ftrace_line(line: &str) -> Result<Option<Vec<FrequencyChange>>, String> {
    match ftrace_event(line)? {
        None => Ok(None),
        Some((Stamp::Counter(counter), changes)) => Ok(Some(
            changes
                .into_iter()
                .map(|(processor, hz)| (processor, counter, hz))
                .collect(),
        )),
        Some((Stamp::Seconds(stamp), _)) => Err(format!("timestamp {stamp} {SECONDS_ADVICE}")),
    }
}

/// A frequency event's timestamp and `(processor, frequency)` changes.
type FtraceEvent<'a> = (Stamp<'a>, Vec<(ProcessorId, Hz)>);

fn ftrace_event(line: &str) -> Result<Option<FtraceEvent<'_>>, String> {
    let tokens: Vec<&str> = line.split_whitespace().collect();
    let Some(event_index) = tokens.iter().position(|t| {
        let name = t.strip_suffix(':').unwrap_or("");
        let name = name.rsplit(':').next().unwrap_or(name);
        name == "cpu_frequency" || name == "policy_frequency"
    }) else {
        return Ok(None);
    };
    let stamp = event_index
        .checked_sub(1)
        .map(|i| tokens[i].trim_end_matches(':'))
        .ok_or("no timestamp before the event name")?;
    let stamp = if stamp.contains('.') {
        parse_decimal_scaled(stamp, 9)
            .map_err(|reason| format!("timestamp {stamp:?}: {reason}"))?;
        Stamp::Seconds(stamp)
    } else {
        Stamp::Counter(
            stamp
                .parse::<u64>()
                .map_err(|_| format!("timestamp {stamp:?} is not a number"))?,
        )
    };
    let mut khz = None;
    let mut cpu = None;
    let mut policy_cpus = None;
    for pair in &tokens[event_index + 1..] {
        let Some((key, value)) = pair.split_once('=') else {
            continue;
        };
        match key {
            "state" | "frequency" => {
                let value: i128 = value
                    .parse()
                    .map_err(|_| format!("frequency {value:?} is not a number"))?;
                khz = Some(value);
            }
            "cpu_id" | "policy_cpu" => {
                cpu = Some(
                    value
                        .parse::<u32>()
                        .map_err(|_| format!("cpu {value:?} is not a number"))?,
                )
            }
            "policy_cpus" => policy_cpus = Some(parse_cpu_mask(value)?),
            _ => {}
        }
    }
    let khz = khz.ok_or("no state= (frequency in kHz)")?;
    let cpu = cpu.ok_or("no cpu_id=")?;
    let hz = u64::try_from(khz)
        .ok()
        .and_then(|k| k.checked_mul(1_000))
        .and_then(Hz::new)
        .ok_or_else(|| format!("frequency must be positive, got {khz} kHz"))?;
    let cpus = policy_cpus
        .filter(|c: &Vec<u32>| !c.is_empty())
        .unwrap_or_else(|| vec![cpu]);
    Ok(Some((
        stamp,
        cpus.into_iter().map(|c| (ProcessorId(c), hz)).collect(),
    )))
}

/// A kernel `%*pb` CPU mask: hexadecimal, 32-bit groups separated by commas.
fn parse_cpu_mask(mask: &str) -> Result<Vec<u32>, String> {
    let digits: String = mask.chars().filter(|&c| c != ',').collect();
    if digits.is_empty() || digits.len() > 1024 || !digits.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(format!(
            "policy_cpus {mask:?} is not a hexadecimal CPU mask"
        ));
    }
    let mut cpus = Vec::new();
    for (position, digit) in digits.chars().rev().enumerate() {
        let nibble = digit.to_digit(16).expect("checked hex digit");
        for bit in 0..4 {
            if nibble & (1 << bit) != 0 {
                cpus.push((position * 4 + bit) as u32);
            }
        }
    }
    Ok(cpus)
}

/// Parse a non-negative decimal `12.345` as an integer times `10^scale`,
/// exactly; more fractional digits than `scale` must be zeros.
fn parse_decimal_scaled(text: &str, scale: u32) -> Result<u64, String> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let all_digits = |s: &str| s.chars().all(|c| c.is_ascii_digit());
    if whole.is_empty() || !all_digits(whole) || !all_digits(fraction) {
        return Err("not a decimal number".into());
    }
    let (kept, dropped) = fraction.split_at(fraction.len().min(scale as usize));
    if dropped.chars().any(|c| c != '0') {
        return Err(format!("more than {scale} decimal places"));
    }
    let too_big = || "too large".to_string();
    let whole: u64 = whole.parse().map_err(|_| too_big())?;
    let kept_value: u64 = if kept.is_empty() {
        0
    } else {
        kept.parse().map_err(|_| too_big())?
    };
    let kept_scaled = kept_value * 10u64.pow(scale - kept.len() as u32);
    whole
        .checked_mul(10u64.pow(scale))
        .and_then(|w| w.checked_add(kept_scaled))
        .ok_or_else(too_big)
}

/// The frequency of a history row from whichever of `hz`, `khz`, `mhz` it has.
fn frequency_of(values: &[Option<String>], processor: ProcessorId) -> Result<Hz> {
    let given: Vec<(usize, &str)> = [(2, "hz"), (3, "khz"), (4, "mhz")]
        .into_iter()
        .filter(|&(index, _)| values[index].is_some())
        .collect();
    let (index, unit) = match given.as_slice() {
        [one] => *one,
        [] => return Err(malformed("no frequency: give hz, khz or mhz")),
        _ => return Err(malformed("more than one of hz, khz, mhz")),
    };
    let text = values[index].as_deref().expect("filtered on presence");
    let bad = || Error::BadFrequency {
        at: None,
        processor,
        value: format!("{text} {unit}"),
    };
    if text.starts_with('-') {
        return Err(bad());
    }
    let scale = match unit {
        "hz" => 0,
        "khz" => 3,
        _ => 6,
    };
    let hz = parse_decimal_scaled(text, scale)
        .map_err(|reason| malformed(format!("{unit} {text:?}: {reason}")))?;
    Hz::new(hz).ok_or_else(bad)
}

fn malformed(reason: impl Into<String>) -> Error {
    Error::Malformed {
        at: None,
        reason: reason.into(),
    }
}

fn required_number<T: std::str::FromStr>(
    values: &[Option<String>],
    index: usize,
    name: &str,
) -> Result<T> {
    let text = values[index]
        .as_deref()
        .ok_or_else(|| malformed(format!("no {name}")))?;
    text.parse()
        .map_err(|_| malformed(format!("{name} {text:?} is not a valid number")))
}

/// Call `each(line, values)` for every data row of a CSV or JSON file, with
/// the row's values for `columns` (by name; `None` when absent). A file that
/// cannot be read at all (no header, a broken JSON array) is an error.
fn for_each_row(
    text: &str,
    file: &Path,
    json: bool,
    columns: &[&str],
    mut each: impl FnMut(u64, Result<Vec<Option<String>>>) -> Result<()>,
) -> Result<()> {
    let located = |line: u64| {
        Some(Location {
            file: file.to_path_buf(),
            line,
        })
    };
    if json {
        return for_each_json_row(text, file, columns, each);
    }
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .comment(Some(b'#'))
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes());
    let mut header: Option<Vec<Option<usize>>> = None;
    let mut header_len = 0;
    // One record reused for every row: an allocation per row was most of
    // the cost of reading a large file.
    let mut record = csv::StringRecord::new();
    loop {
        match reader.read_record(&mut record) {
            Ok(true) => {}
            Ok(false) => break,
            Err(error) => {
                let line = error.position().map_or(0, |p| p.line());
                each(
                    line,
                    Err(Error::Malformed {
                        at: located(line),
                        reason: error.to_string(),
                    }),
                )?;
                continue;
            }
        };
        let line = record.position().map_or(0, |p| p.line());
        if record.iter().all(str::is_empty) {
            continue;
        }
        let Some(positions) = &header else {
            let names: Vec<&str> = record.iter().collect();
            header = Some(
                columns
                    .iter()
                    .map(|c| names.iter().position(|n| n == c))
                    .collect(),
            );
            header_len = names.len();
            continue;
        };
        if record.len() != header_len {
            each(
                line,
                Err(malformed(format!(
                    "{} fields where the header has {header_len}",
                    record.len()
                ))),
            )?;
            continue;
        }
        let values = positions
            .iter()
            .map(|p| {
                p.and_then(|i| record.get(i))
                    .filter(|v| !v.is_empty())
                    .map(str::to_string)
            })
            .collect();
        each(line, Ok(values))?;
    }
    if header.is_none() {
        return Err(Error::Malformed {
            at: located(1),
            reason: format!(
                "no header row (expected columns like {})",
                columns.join(",")
            ),
        });
    }
    Ok(())
}

/// JSON: an array of objects, or one object per line (JSON Lines).
fn for_each_json_row(
    text: &str,
    file: &Path,
    columns: &[&str],
    mut each: impl FnMut(u64, Result<Vec<Option<String>>>) -> Result<()>,
) -> Result<()> {
    // Rows arrive in file order, so the line of each is counted on from the
    // previous one: counting from the start every time made loading
    // quadratic in the file's length.
    let lines = std::cell::RefCell::new(LineCounter::new(text));
    let line_of = |offset: usize| lines.borrow_mut().line_of(offset);
    let located = |offset: usize| {
        Some(Location {
            file: file.to_path_buf(),
            line: line_of(offset),
        })
    };
    let values_of = |value: serde_json::Value| -> Result<Vec<Option<String>>> {
        let serde_json::Value::Object(object) = value else {
            return Err(malformed("not a JSON object"));
        };
        Ok(columns
            .iter()
            .map(|c| match object.get(*c) {
                None | Some(serde_json::Value::Null) => None,
                Some(serde_json::Value::String(s)) => Some(s.clone()),
                Some(other) => Some(other.to_string()),
            })
            .collect())
    };
    let start = text.len() - text.trim_start().len();
    if !text[start..].starts_with('[') {
        let mut offset = 0;
        for line in text.split_inclusive('\n') {
            let body = line.trim();
            let line_number = line_of(offset);
            offset += line.len();
            if body.is_empty() {
                continue;
            }
            let row = serde_json::from_str::<serde_json::Value>(body)
                .map_err(|e| malformed(format!("not JSON: {e}")))
                .and_then(values_of);
            each(line_number, row)?;
        }
        return Ok(());
    }
    // Walk the array one element at a time so each knows its line.
    let mut offset = start + 1;
    let skip_space = |offset: &mut usize| {
        while text[*offset..].starts_with(|c: char| c.is_ascii_whitespace()) {
            *offset += 1;
        }
    };
    skip_space(&mut offset);
    if text[offset..].starts_with(']') {
        return Ok(());
    }
    loop {
        skip_space(&mut offset);
        let mut stream =
            serde_json::Deserializer::from_str(&text[offset..]).into_iter::<serde_json::Value>();
        let value = match stream.next() {
            Some(Ok(value)) => value,
            Some(Err(e)) => {
                return Err(Error::Malformed {
                    at: located(offset),
                    reason: format!("bad JSON: {e}"),
                })
            }
            None => {
                return Err(Error::Malformed {
                    at: located(offset),
                    reason: "JSON array ends early".into(),
                })
            }
        };
        let element_start = offset;
        offset += stream.byte_offset();
        each(line_of(element_start), values_of(value))?;
        skip_space(&mut offset);
        match text[offset..].chars().next() {
            Some(',') => offset += 1,
            Some(']') => break,
            _ => {
                return Err(Error::Malformed {
                    at: located(offset),
                    reason: "expected `,` or `]` after an array element".into(),
                })
            }
        }
    }
    Ok(())
}

/// Line numbers of byte offsets in a text, for offsets asked in increasing
/// order (as a reader walks a file): each question counts only the newlines
/// since the previous one. An earlier offset is counted from the start.
struct LineCounter<'t> {
    text: &'t [u8],
    offset: usize,
    line: u64,
}

impl<'t> LineCounter<'t> {
    fn new(text: &'t str) -> Self {
        LineCounter {
            text: text.as_bytes(),
            offset: 0,
            line: 1,
        }
    }

    /// The 1-based line that the byte at `offset` is on.
    fn line_of(&mut self, offset: usize) -> u64 {
        let offset = offset.min(self.text.len());
        if offset < self.offset {
            self.offset = 0;
            self.line = 1;
        }
        let newlines = self.text[self.offset..offset]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        self.line += newlines as u64;
        self.offset = offset;
        self.line
    }
}

/// True when the text looks like JSON (opens with `[` or `{`).
fn looks_like_json(text: &str) -> bool {
    matches!(text.trim_start().chars().next(), Some('[' | '{'))
}

/// A parsed sync file.
#[derive(Clone, Debug, Default)]
pub struct SyncFile {
    /// The rounds, in file order.
    pub rows: Vec<SyncRow>,
    /// Rows left out.
    pub skipped: Skipped,
}

/// Parse a sync file: columns `reference,responder,A,B,C,a,b,c` and an
/// optional `session`.
pub fn parse_sync(text: &str, file: &Path, options: ReadOptions) -> Result<SyncFile> {
    let columns = [
        "reference",
        "responder",
        "session",
        "A",
        "B",
        "C",
        "a",
        "b",
        "c",
    ];
    let mut rows = Vec::new();
    let mut skipped = Skipped::default();
    let mut unwrappers: BTreeMap<ProcessorId, Unwrapper> = BTreeMap::new();
    for_each_row(
        text,
        file,
        looks_like_json(text),
        &columns,
        |line, values| {
            let location = Location {
                file: file.to_path_buf(),
                line,
            };
            let row = values.and_then(|values| {
                let reference = ProcessorId(required_number(&values, 0, "reference")?);
                let responder = ProcessorId(required_number(&values, 1, "responder")?);
                if reference == responder {
                    return Err(malformed(format!(
                        "processor {reference} synchronised with itself"
                    )));
                }
                let session = match values[2] {
                    Some(_) => required_number(&values, 2, "session")?,
                    None => 0,
                };
                let mut counters = [0u64; 6];
                for (k, counter) in counters.iter_mut().enumerate() {
                    *counter = required_number(&values, 3 + k, columns[3 + k])?;
                }
                // A, C, b are the reference's reads; B, a, c the responder's.
                // Unwrap on copies, committed only when the whole row is good.
                let mut by_reference = *unwrappers
                    .entry(reference)
                    .or_insert(Unwrapper::new(options.width));
                let mut by_responder = *unwrappers
                    .entry(responder)
                    .or_insert(Unwrapper::new(options.width));
                for k in [0, 2, 4] {
                    counters[k] = by_reference.unwrap(reference, counters[k])?;
                }
                for k in [1, 3, 5] {
                    counters[k] = by_responder.unwrap(responder, counters[k])?;
                }
                unwrappers.insert(reference, by_reference);
                unwrappers.insert(responder, by_responder);
                Ok(SyncRow {
                    reference,
                    responder,
                    session,
                    counters,
                    location: Some(location.clone()),
                })
            });
            if let Some(row) = skipped.handle(options.bad_rows, row.map_err(|e| e.at(location)))? {
                rows.push(row);
            }
            Ok(())
        },
    )?;
    Ok(SyncFile { rows, skipped })
}

/// One trace event as read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventRow {
    /// The processor whose counter stamped it.
    pub processor: ProcessorId,
    /// The counter value (unwrapped when a width was given).
    pub counter: u64,
    /// Whatever the trace says about the event, passed through.
    pub payload: String,
    /// 1-based line in the events file.
    pub line: u64,
}

/// A parsed events file.
#[derive(Clone, Debug, Default)]
pub struct EventFile {
    /// The events, in file order.
    pub events: Vec<EventRow>,
    /// Rows left out.
    pub skipped: Skipped,
}

/// Parse an events file: columns `processor,counter` and an optional `payload`.
pub fn parse_events(text: &str, file: &Path, options: ReadOptions) -> Result<EventFile> {
    let columns = ["processor", "counter", "payload"];
    let mut events = Vec::new();
    let mut skipped = Skipped::default();
    let mut unwrappers: BTreeMap<ProcessorId, Unwrapper> = BTreeMap::new();
    for_each_row(
        text,
        file,
        looks_like_json(text),
        &columns,
        |line, values| {
            let row = values.and_then(|mut values| {
                let processor = ProcessorId(required_number(&values, 0, "processor")?);
                let raw: u64 = required_number(&values, 1, "counter")?;
                let unwrapper = unwrappers
                    .entry(processor)
                    .or_insert(Unwrapper::new(options.width));
                let counter = unwrapper.unwrap(processor, raw)?;
                Ok(EventRow {
                    processor,
                    counter,
                    payload: values[2].take().unwrap_or_default(),
                    line,
                })
            });
            let located = row.map_err(|e| {
                e.at(Location {
                    file: file.to_path_buf(),
                    line,
                })
            });
            if let Some(event) = skipped.handle(options.bad_rows, located)? {
                events.push(event);
            }
            Ok(())
        },
    )?;
    Ok(EventFile { events, skipped })
}

/// Output formats of corrected events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    /// `processor,counter,time_ns,payload`.
    Csv,
    /// An array of objects with the same fields; `time_ns` an exact decimal.
    Json,
    /// Chrome Trace Event JSON (opens in Perfetto and `chrome://tracing`).
    Chrome,
}

impl OutputFormat {
    /// The format called `name` (`csv`, `json`, `chrome`).
    pub fn from_name(name: &str) -> Option<OutputFormat> {
        match name {
            "csv" => Some(OutputFormat::Csv),
            "json" => Some(OutputFormat::Json),
            "chrome" => Some(OutputFormat::Chrome),
            _ => None,
        }
    }
}

/// An event with its corrected time.
#[derive(Clone, Copy, Debug)]
pub struct Corrected<'e> {
    /// The event as read.
    pub event: &'e EventRow,
    /// Its time on the reference's clock.
    pub time: VirtualTime,
}

/// Write corrected events as CSV.
pub fn write_csv(out: impl Write, events: &[Corrected<'_>]) -> std::io::Result<()> {
    let mut writer = csv::Writer::from_writer(out);
    writer.write_record(["processor", "counter", "time_ns", "payload"])?;
    for c in events {
        writer.write_record([
            c.event.processor.to_string(),
            c.event.counter.to_string(),
            c.time.display_ns().to_string(),
            c.event.payload.clone(),
        ])?;
    }
    writer.flush()
}

/// Write corrected events as a JSON array. `time_ns` is written as an exact
/// decimal number (JSON numbers are text; readers that parse to `f64` round).
pub fn write_json(mut out: impl Write, events: &[Corrected<'_>]) -> std::io::Result<()> {
    writeln!(out, "[")?;
    for (index, c) in events.iter().enumerate() {
        let separator = if index + 1 < events.len() { "," } else { "" };
        writeln!(
            out,
            "{{\"processor\":{},\"counter\":{},\"time_ns\":{},\"payload\":{}}}{separator}",
            c.event.processor,
            c.event.counter,
            c.time.display_ns(),
            json_string(&c.event.payload),
        )?;
    }
    writeln!(out, "]")
}

fn json_string(text: &str) -> String {
    serde_json::to_string(text).expect("a string always serialises")
}

/// A frequency change on the reference's clock, for the Chrome counter tracks.
#[derive(Clone, Copy, Debug)]
pub struct FrequencyPoint {
    /// Whose frequency.
    pub processor: ProcessorId,
    /// When it took effect.
    pub time: VirtualTime,
    /// The new frequency.
    pub hz: Hz,
}

/// Write Chrome Trace Event JSON: one process, a thread track per processor
/// with each event as an instant, and a counter track per processor with its
/// frequency in MHz. Times are microseconds from the earliest time written
/// (Perfetto's JSON importer expects non-negative `ts`); the origin is in
/// `otherData.origin_ns`.
pub fn write_chrome(
    mut out: impl Write,
    events: &[Corrected<'_>],
    frequencies: &[FrequencyPoint],
) -> std::io::Result<()> {
    let origin = events
        .iter()
        .map(|c| c.time)
        .chain(frequencies.iter().map(|f| f.time))
        .min()
        .unwrap_or_default();
    // Microseconds with six decimals (picoseconds): Perfetto reads `ts` as
    // a double of microseconds, so finer digits would be noise.
    let ts = |t: VirtualTime| {
        let attos = (t.0 - origin.0).max(0) as u128;
        let picos = (attos + 500_000) / 1_000_000;
        format!("{}.{:06}", picos / 1_000_000, picos % 1_000_000)
    };
    let mut processors: Vec<ProcessorId> = events
        .iter()
        .map(|c| c.event.processor)
        .chain(frequencies.iter().map(|f| f.processor))
        .collect();
    processors.sort_unstable();
    processors.dedup();
    writeln!(out, "{{\"displayTimeUnit\":\"ns\",")?;
    writeln!(
        out,
        "\"otherData\":{{\"origin_ns\":\"{}\"}},",
        origin.display_ns()
    )?;
    writeln!(out, "\"traceEvents\":[")?;
    writeln!(
        out,
        "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"tid\":0,\"args\":{{\"name\":\"retrace clock\"}}}}"
    )?;
    for p in &processors {
        writeln!(
            out,
            ",{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":{p},\"args\":{{\"name\":\"processor {p}\"}}}}"
        )?;
        writeln!(
            out,
            ",{{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":1,\"tid\":{p},\"args\":{{\"sort_index\":{p}}}}}"
        )?;
    }
    for f in frequencies {
        // Megahertz as an exact decimal (kHz resolution is what ftrace gives).
        let mhz = format!("{}.{:06}", f.hz.get() / 1_000_000, f.hz.get() % 1_000_000);
        writeln!(
            out,
            ",{{\"ph\":\"C\",\"name\":\"processor {} MHz\",\"pid\":1,\"ts\":{},\"args\":{{\"MHz\":{mhz}}}}}",
            f.processor,
            ts(f.time)
        )?;
    }
    for c in events {
        let name = if c.event.payload.is_empty() {
            "event"
        } else {
            &c.event.payload
        };
        writeln!(
            out,
            ",{{\"ph\":\"i\",\"s\":\"t\",\"name\":{},\"pid\":1,\"tid\":{},\"ts\":{},\"args\":{{\"counter\":{},\"time_ns\":\"{}\"}}}}",
            json_string(name),
            c.event.processor,
            ts(c.time),
            c.event.counter,
            c.time.display_ns()
        )?;
    }
    writeln!(out, "]}}")
}

/// Nanoseconds of an attosecond count as `f64` (for summaries).
pub fn attos_to_ns(attos: i128) -> f64 {
    attos as f64 / ATTOS_PER_NANOSECOND as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn file() -> PathBuf {
        PathBuf::from("h.csv")
    }

    #[test]
    fn csv_history_with_comments_and_units() {
        let text = "# JP5267566B2\nprocessor,counter,mhz\n1,0,100\n1,100000000,50\n\n1,150000000,150\n2,0,25\n";
        let parsed = parse_history(text, &file(), ReadOptions::default()).unwrap();
        let p1 = parsed.histories.get(ProcessorId(1)).unwrap();
        assert_eq!(p1.changes(), 2);
        assert_eq!(
            p1.virtual_time(300_000_000).unwrap(),
            VirtualTime::from_secs(3)
        );
        assert_eq!(parsed.histories.len(), 2);
    }

    #[test]
    fn bad_history_rows_name_file_and_line() {
        let cases = [
            (
                "processor,counter,hz\n1,0,10\n1,5,0\n",
                "h.csv:3: processor 1: frequency must be positive, got 0 hz",
            ),
            (
                "processor,counter,hz\n1,0,10\n1,5,-3\n",
                "h.csv:3: processor 1: frequency must be positive, got -3 hz",
            ),
            (
                "processor,counter,hz\n1,0,10\n1,5,20\n1,4,30\n",
                "h.csv:4: processor 1: history rows out of order: counter 4 after 5",
            ),
            (
                "processor,counter,hz\n1,0,10\n1,0,20\n",
                "h.csv:3: processor 1: duplicate history row at counter 0",
            ),
            (
                "processor,counter,hz\n1,0,10\n1,x,20\n",
                "h.csv:3: malformed row: counter \"x\" is not a valid number",
            ),
            (
                "processor,counter,hz\n1,0\n",
                "h.csv:2: malformed row: 2 fields where the header has 3",
            ),
        ];
        for (text, message) in cases {
            let error = parse_history(text, &file(), ReadOptions::default()).unwrap_err();
            assert_eq!(error.to_string(), message);
        }
    }

    #[test]
    fn skipping_counts_every_bad_row() {
        let text = "processor,counter,hz\n1,0,10\n1,5,0\n1,9,7\n1,8,3\nnonsense\n";
        let options = ReadOptions {
            bad_rows: BadRows::Skip,
            width: None,
        };
        let parsed = parse_history(text, &file(), options).unwrap();
        assert_eq!(parsed.skipped.total, 3);
        assert_eq!(parsed.skipped.by_kind["bad-frequency"], 1);
        assert_eq!(parsed.skipped.by_kind["unsorted-history"], 1);
        assert_eq!(parsed.skipped.by_kind["malformed"], 1);
        assert_eq!(parsed.histories.get(ProcessorId(1)).unwrap().changes(), 1);
    }

    #[test]
    fn ftrace_and_perf_script_lines() {
        // Trace clock x86-tsc: integer timestamps are counter values.
        let text = "\
# tracer: nop
          <idle>-0       [001] d..2.  5150460574000: cpu_frequency: state=2100000 cpu_id=1
         swapper     0 [000]  5150460600000: power:cpu_frequency: state=800000 cpu_id=0
    kworker/0:1-12    [000] ..... 5151000000000: sched_switch: prev=a next=b
          <idle>-0       [002] d..2.  5152000000000: policy_frequency: state=1200000 cpu_id=2 policy_cpus=c
";
        let parsed = parse_history(text, &PathBuf::from("t.txt"), ReadOptions::default()).unwrap();
        assert_eq!(parsed.other_lines, 2);
        let cpu1 = parsed.histories.get(ProcessorId(1)).unwrap();
        assert_eq!(cpu1.start(), 5_150_460_574_000);
        assert_eq!(
            cpu1.frequency_at(cpu1.start()).unwrap().get(),
            2_100_000_000
        );
        assert_eq!(
            parsed.histories.get(ProcessorId(3)).unwrap().start(),
            5_152_000_000_000
        );
        assert_eq!(parsed.histories.len(), 4);
        // The other spelling proposed for the newer event.
        let policy = parse_ftrace_line(
            "k-1 [003] 99: power:policy_frequency: frequency=900000 policy_cpu=3",
        );
        assert_eq!(
            policy,
            Ok(Some(vec![(
                ProcessorId(3),
                99,
                Hz::new(900_000_000).unwrap()
            )]))
        );
        let bad = "x-1 [000] 12: cpu_frequency: state=0 cpu_id=0\n";
        let error =
            parse_history(bad, &PathBuf::from("t.txt"), ReadOptions::default()).unwrap_err();
        assert_eq!(
            error.to_string(),
            "t.txt:1: malformed row: frequency must be positive, got 0 kHz"
        );
    }

    #[test]
    fn decimal_second_timestamps_are_refused_even_when_skipping() {
        // ftrace's default clock: seconds. They are time already; reading
        // them as counter values would divide time by a frequency.
        let text = "\
# tracer: nop
          <idle>-0       [001] d..2.  1234.567890: cpu_frequency: state=2100000 cpu_id=1
          <idle>-0       [001] d..2.  1235.000000: cpu_frequency: state=800000 cpu_id=1
";
        for bad_rows in [BadRows::Fail, BadRows::Skip] {
            let options = ReadOptions {
                bad_rows,
                ..ReadOptions::default()
            };
            let error = parse_history(text, &PathBuf::from("t.txt"), options).unwrap_err();
            assert_eq!(error.kind(), "timestamp-in-seconds");
            let message = error.to_string();
            assert!(
                message.starts_with("t.txt:2: timestamp 1234.567890 is in seconds"),
                "{message}"
            );
            assert!(message.contains("trace_clock"), "{message}");
        }
        assert!(parse_ftrace_line(text.lines().nth(1).unwrap())
            .unwrap_err()
            .contains("is in seconds"));
    }

    #[test]
    fn line_counter_counts_on_and_back() {
        let mut lines = LineCounter::new("a\nb\n\nc");
        assert_eq!(lines.line_of(0), 1);
        assert_eq!(lines.line_of(2), 2);
        assert_eq!(lines.line_of(5), 4);
        // An earlier offset is counted again from the start.
        assert_eq!(lines.line_of(1), 1);
        assert_eq!(lines.line_of(4), 3);
        // Past the end: the last line.
        assert_eq!(lines.line_of(99), 4);
    }

    #[test]
    fn json_array_and_lines_know_their_lines() {
        let array = "[\n {\"processor\":1,\"counter\":0,\"hz\":100},\n {\"processor\":1,\"counter\":0,\"hz\":100}\n]";
        let error =
            parse_history(array, &PathBuf::from("h.json"), ReadOptions::default()).unwrap_err();
        assert_eq!(error.location().unwrap().line, 3);
        let lines = "{\"processor\":1,\"counter\":875,\"payload\":\"x\"}\n{\"processor\":2,\"counter\":\"7\"}\n";
        let parsed = parse_events(lines, &PathBuf::from("e.json"), ReadOptions::default()).unwrap();
        assert_eq!(
            parsed.events[1],
            EventRow {
                processor: ProcessorId(2),
                counter: 7,
                payload: String::new(),
                line: 2
            }
        );
    }

    #[test]
    fn sync_rows_need_every_letter() {
        let text = "reference,responder,A,B,C,a,b,c\n1,2,75,125,225,275,425,425\n1,2,75,125,225,275,425,\n";
        let error = parse_sync(text, &PathBuf::from("s.csv"), ReadOptions::default()).unwrap_err();
        assert_eq!(error.to_string(), "s.csv:3: malformed row: no c");
    }

    #[test]
    fn narrow_counters_unwrap_in_histories_and_events() {
        let width = Some(CounterWidth::new(8).unwrap());
        let options = ReadOptions {
            bad_rows: BadRows::Fail,
            width,
        };
        // 1 Hz: one tick is one second. Changes at 200, then 300 (wrapped to 44).
        let history = "processor,counter,hz\n0,10,1\n0,200,2\n0,44,4\n";
        let parsed = parse_history(history, &file(), options).unwrap();
        let h = parsed.histories.get(ProcessorId(0)).unwrap();
        assert_eq!(
            h.rows().map(|(c, _)| c).collect::<Vec<_>>(),
            vec![10, 200, 300]
        );
        let events = "processor,counter\n0,250\n0,4\n0,60\n";
        let parsed = parse_events(events, &file(), options).unwrap();
        let counters: Vec<u64> = parsed.events.iter().map(|e| e.counter).collect();
        assert_eq!(counters, vec![250, 260, 316]);
        // 316: 200 s + 100 cycles at 2 Hz + 16 cycles at 4 Hz.
        assert_eq!(
            h.virtual_time(316).unwrap(),
            VirtualTime(254 * 1_000_000_000_000_000_000)
        );
    }

    #[test]
    fn decimal_parsing_is_exact() {
        assert_eq!(parse_decimal_scaled("2.4", 6), Ok(2_400_000));
        assert_eq!(
            parse_decimal_scaled("5150.460574", 9),
            Ok(5_150_460_574_000)
        );
        assert!(parse_decimal_scaled("1.0000001", 6).is_err());
        assert!(parse_decimal_scaled("1e3", 0).is_err());
        assert_eq!(parse_cpu_mask("00000000,00000003"), Ok(vec![0, 1]));
    }
}
