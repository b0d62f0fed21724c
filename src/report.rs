//! Typed reports: every command's result is one `Serialize` value, rendered
//! as text for people, or as JSON or CSV for machines from that same value,
//! so the three can never disagree about a figure or a field name.
//!
//! The machine formats are chosen the same way in every command:
//! `--format text|json|csv` ([`FormatArgs`], flattened into each command's
//! arguments). `--json` stays as a hidden spelling of `--format json`,
//! because scripts written against earlier versions use it.

use anyhow::Context;
use clap::ValueEnum;
use serde::Serialize;

/// How a command prints its result.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Tables and sentences for people.
    #[default]
    Text,
    /// One JSON value.
    Json,
    /// Comma-separated values with a header line: the report's rows.
    Csv,
}

/// The output-format options every reporting command shares.
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct FormatArgs {
    /// Output format: text for people; json or csv for machines.
    #[arg(long, value_enum, default_value_t = Format::Text, value_name = "FORMAT")]
    pub format: Format,
    /// The same as --format json (kept for existing scripts).
    #[arg(long, hide = true)]
    pub json: bool,
}

impl FormatArgs {
    /// The format asked for.
    pub fn get(&self) -> Format {
        if self.json {
            Format::Json
        } else {
            self.format
        }
    }
}

/// A command's result.
pub trait Report: Serialize {
    /// The report as text for people.
    fn text(&self) -> String;

    /// The report's rows as CSV ([`csv_of`] of flat records; a report
    /// that is one flat record is its own single row).
    fn csv(&self) -> anyhow::Result<String>;

    /// The report in `format`, ending in a newline.
    fn render(&self, format: Format) -> anyhow::Result<String> {
        match format {
            Format::Text => Ok(self.text()),
            Format::Json => {
                let mut s = serde_json::to_string(self).context("rendering JSON")?;
                s.push('\n');
                Ok(s)
            }
            Format::Csv => self.csv(),
        }
    }
}

/// Rows as CSV with a header line taken from the row type's field names.
pub fn csv_of<T: Serialize>(rows: &[T]) -> anyhow::Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    for r in rows {
        w.serialize(r).context("rendering CSV")?;
    }
    let bytes = w.into_inner().context("rendering CSV")?;
    String::from_utf8(bytes).context("rendering CSV")
}

/// Writes to stdout; a closed pipe (`| head`) ends the output quietly.
pub fn emit(s: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(s.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

/// Render `report` in `format` and write it to stdout.
pub fn print<R: Report>(report: &R, format: Format) -> anyhow::Result<()> {
    emit(&report.render(format)?)
}

/// Serialise a `u64` address as `"0x…"`, as every report spells addresses.
pub fn hex<S: serde::Serializer>(a: &u64, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(&format_args!("{a:#x}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Row {
        name: String,
        n: u64,
    }

    #[test]
    fn csv_quotes_what_needs_quoting() {
        let rows = [Row {
            name: "a,\"b\"".into(),
            n: 3,
        }];
        assert_eq!(csv_of(&rows).unwrap(), "name,n\n\"a,\"\"b\"\"\",3\n");
    }
}
