//! Changing a core description from the command line: `--set key=value`
//! overrides and the grids of a sweep (`--set key=A..B*2`,
//! `--set key=a,b,c`).
//!
//! An override edits the core's TOML *document* — the preset's text or the
//! user's file — before it is read, so every field the format has can be
//! set, and the result passes through the same reader and the same checks
//! as a file would: an unknown key, a value of the wrong type or out of
//! range is refused with the message the file would get. `icache=none`
//! removes a cache (or any optional table).

use crate::model::{CoreModel, ModelError};
use std::fmt;

/// One `key=value`: a dotted key into the core's TOML and the value to put
/// there.
#[derive(Clone, Debug, PartialEq)]
pub struct Override {
    /// The dotted key as given (`icache.size`).
    pub key: String,
    /// The value: a TOML value; a bare word is a string; `none` removes
    /// the key.
    pub value: OverrideValue,
}

/// What an override puts at its key.
#[derive(Clone, Debug, PartialEq)]
pub enum OverrideValue {
    /// A TOML value (number, string, boolean, array).
    Value(toml::Value),
    /// `none`: remove the key (a cache the core should not have).
    Remove,
}

impl fmt::Display for OverrideValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OverrideValue::Remove => f.write_str("none"),
            // Strings without quotes: `branch.predictor=gshare` reads back
            // as it was written.
            OverrideValue::Value(toml::Value::String(s)) => f.write_str(s),
            OverrideValue::Value(v) => write!(f, "{v}"),
        }
    }
}

impl fmt::Display for Override {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.key, self.value)
    }
}

/// What is wrong with a `--set`.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum OverrideError {
    /// Not of the form `key=value`.
    #[error("`--set {given}`: expected KEY=VALUE, e.g. `--set icache.size=4096` (keys are the core description's fields, docs/TIMING.md)")]
    Form {
        /// The text given.
        given: String,
    },
    /// The key goes through a value that is not a table
    /// (`latency.alu.x`), or is empty.
    #[error("`--set {given}`: `{key}` is not a field of a core description (its parts are TOML tables and fields, e.g. `branch.predictor`, `icache.size`)")]
    Key {
        /// The text given.
        given: String,
        /// The key.
        key: String,
    },
    /// A range or list of a sweep that does not describe values.
    #[error("`--set {given}`: {reason}")]
    Range {
        /// The text given.
        given: String,
        /// What is wrong.
        reason: String,
    },
    /// The core with the overrides applied is not a valid core.
    #[error("{0}")]
    Model(#[from] ModelError),
    /// The TOML reader refused the changed document (an unknown field, a
    /// value of the wrong type).
    #[error("{with}: {message}")]
    Rejected {
        /// The core and its overrides.
        with: String,
        /// What the reader said.
        message: String,
    },
}

/// Parse one value: TOML (`4096`, `"x"`, `true`, `[32, 64]`), else a bare
/// word as a string (`gshare`), `none` to remove.
fn parse_value(text: &str) -> OverrideValue {
    let text = text.trim();
    if text == "none" {
        return OverrideValue::Remove;
    }
    match toml::from_str::<toml::Table>(&format!("v = {text}")) {
        Ok(mut t) => match t.remove("v") {
            Some(v) => OverrideValue::Value(v),
            None => OverrideValue::Value(toml::Value::String(text.to_string())),
        },
        Err(_) => OverrideValue::Value(toml::Value::String(text.to_string())),
    }
}

/// Split `key=value` and check the key's spelling.
fn split(given: &str) -> Result<(&str, &str), OverrideError> {
    let Some((key, value)) = given.split_once('=') else {
        return Err(OverrideError::Form {
            given: given.to_string(),
        });
    };
    let key = key.trim();
    let well_formed = !key.is_empty()
        && key.split('.').all(|part| {
            !part.is_empty()
                && part
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        });
    if !well_formed {
        return Err(OverrideError::Key {
            given: given.to_string(),
            key: key.to_string(),
        });
    }
    Ok((key, value))
}

impl Override {
    /// Parse `key=value`.
    pub fn parse(given: &str) -> Result<Override, OverrideError> {
        let (key, value) = split(given)?;
        Ok(Override {
            key: key.to_string(),
            value: parse_value(value),
        })
    }
}

/// Apply `overrides` (in order) to the TOML document `text` and read the
/// core. The core's name gains the overrides, `rocket[icache.size=4096]`,
/// so reports tell variants apart; `origin` (the preset or file) leads
/// every error message.
pub fn core_with_overrides(
    text: &str,
    origin: &str,
    overrides: &[Override],
) -> Result<CoreModel, OverrideError> {
    if overrides.is_empty() {
        return Ok(CoreModel::from_toml(text, origin)?);
    }
    // The document itself must read before it is changed, so its own
    // errors keep their line and column.
    CoreModel::from_toml(text, origin)?;
    let mut doc: toml::Table = toml::from_str(text).map_err(|e| ModelError::Syntax {
        origin: origin.to_string(),
        line: 0,
        column: 0,
        message: e.message().to_string(),
    })?;
    for o in overrides {
        set(&mut doc, o)?;
    }
    let shown: Vec<String> = overrides.iter().map(Override::to_string).collect();
    let with = format!("{origin} with --set {}", shown.join(" --set "));
    let mut core = CoreModel::from_toml(&doc.to_string(), &with).map_err(|e| match e {
        // Line numbers of the rewritten document mean nothing to the user:
        // name the overrides instead.
        ModelError::Syntax { message, .. } => OverrideError::Rejected {
            with: with.clone(),
            message: message.trim().to_string(),
        },
        other => OverrideError::Model(other),
    })?;
    core.name = format!("{}[{}]", core.name, shown.join(","));
    Ok(core)
}

/// Put one override into the document.
fn set(doc: &mut toml::Table, o: &Override) -> Result<(), OverrideError> {
    let bad_key = || OverrideError::Key {
        given: o.to_string(),
        key: o.key.clone(),
    };
    let parts: Vec<&str> = o.key.split('.').collect();
    let (last, path) = parts.split_last().ok_or_else(bad_key)?;
    let mut table = doc;
    for part in path {
        let entry = table
            .entry(part.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        table = entry.as_table_mut().ok_or_else(bad_key)?;
    }
    match &o.value {
        OverrideValue::Remove => {
            table.remove(*last);
        }
        OverrideValue::Value(v) => {
            table.insert(last.to_string(), v.clone());
        }
    }
    Ok(())
}

/// One axis of a sweep: a key and the values it takes.
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    /// The dotted key.
    pub key: String,
    /// Its values, in order.
    pub values: Vec<OverrideValue>,
}

/// The most points one axis may have: a typo in a range (`1..1000000+1`)
/// is refused rather than run for hours.
pub const MAX_AXIS_POINTS: usize = 4096;

impl Axis {
    /// Parse `key=SPEC`, where SPEC is one value, a list `a,b,c`, a
    /// geometric range `A..B*F` (A, A·F, A·F², … up to B) or an arithmetic
    /// range `A..B+S` (A, A+S, … up to B). Ranges are of whole numbers.
    pub fn parse(given: &str) -> Result<Axis, OverrideError> {
        let (key, spec) = split(given)?;
        let range_error = |reason: String| OverrideError::Range {
            given: given.to_string(),
            reason,
        };
        let values = if let Some((from, rest)) = spec.split_once("..") {
            let (to, step, geometric) = if let Some((to, f)) = rest.split_once('*') {
                (to, f, true)
            } else if let Some((to, s)) = rest.split_once('+') {
                (to, s, false)
            } else {
                return Err(range_error(
                    "a range needs a step: A..B*F multiplies by F, A..B+S adds S (e.g. 512..16384*2)"
                        .into(),
                ));
            };
            let number = |t: &str, what: &str| {
                t.trim().parse::<i64>().map_err(|_| {
                    range_error(format!("{what} `{}` is not a whole number", t.trim()))
                })
            };
            let (from, to, step) = (
                number(from, "start")?,
                number(to, "end")?,
                number(step, "step")?,
            );
            if from > to {
                return Err(range_error(format!(
                    "the range starts at {from}, after its end {to}"
                )));
            }
            let mut values = Vec::new();
            let mut v = from;
            loop {
                values.push(OverrideValue::Value(toml::Value::Integer(v)));
                if values.len() > MAX_AXIS_POINTS {
                    return Err(range_error(format!(
                        "more than {MAX_AXIS_POINTS} values; give a larger step"
                    )));
                }
                let next = if geometric {
                    if step < 2 || from < 1 {
                        return Err(range_error(
                            "a geometric range A..B*F needs A ≥ 1 and F ≥ 2".into(),
                        ));
                    }
                    v.checked_mul(step)
                } else {
                    if step < 1 {
                        return Err(range_error("an arithmetic range A..B+S needs S ≥ 1".into()));
                    }
                    v.checked_add(step)
                };
                match next {
                    Some(n) if n <= to => v = n,
                    _ => break,
                }
            }
            values
        } else if spec.contains(',') && !spec.trim_start().starts_with('[') {
            let values: Vec<OverrideValue> = spec.split(',').map(parse_value).collect();
            if spec.split(',').any(|v| v.trim().is_empty()) {
                return Err(range_error("an empty value in the list".into()));
            }
            values
        } else {
            vec![parse_value(spec)]
        };
        Ok(Axis {
            key: key.to_string(),
            values,
        })
    }
}

/// The grid of a sweep: every combination of the axes' values, the first
/// axis varying slowest, as lists of overrides.
pub fn grid(axes: &[Axis]) -> Vec<Vec<Override>> {
    let mut points: Vec<Vec<Override>> = vec![Vec::new()];
    for axis in axes {
        points = points
            .into_iter()
            .flat_map(|p| {
                axis.values.iter().map(move |v| {
                    let mut q = p.clone();
                    q.push(Override {
                        key: axis.key.clone(),
                        value: v.clone(),
                    });
                    q
                })
            })
            .collect();
    }
    points
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::presets::PRESETS;

    fn rocket() -> &'static str {
        PRESETS.iter().find(|(n, _)| *n == "rocket").unwrap().1
    }

    fn with(sets: &[&str]) -> Result<CoreModel, OverrideError> {
        let o: Vec<Override> = sets.iter().map(|s| Override::parse(s).unwrap()).collect();
        core_with_overrides(rocket(), "preset rocket", &o)
    }

    #[test]
    fn an_override_changes_that_field_and_nothing_else() {
        let base = CoreModel::from_toml(rocket(), "preset rocket").unwrap();
        let c = with(&["icache.size=4096"]).unwrap();
        assert_eq!(c.icache.unwrap().size, 4096);
        assert_eq!(c.name, "rocket[icache.size=4096]");
        let mut back = c.clone();
        back.icache = base.icache;
        back.name = base.name.clone();
        assert_eq!(back, base);
    }

    #[test]
    fn bare_words_are_strings_and_none_removes() {
        let c = with(&[
            "branch.predictor=gshare",
            "branch.history_bits=8",
            "dcache=none",
        ])
        .unwrap();
        assert!(matches!(
            c.branch.predictor,
            crate::PredictorKind::Gshare {
                history_bits: 8,
                ..
            }
        ));
        assert!(c.dcache.is_none());
        let c = with(&["latency.mul=2", "trap_penalty=0"]).unwrap();
        assert_eq!(c.latency.get(crate::TimingClass::Mul), 2);
        assert_eq!(c.trap_penalty, 0);
    }

    #[test]
    fn wrong_overrides_are_refused_with_the_files_reasons() {
        let e = with(&["icache.size=1000"]).unwrap_err().to_string();
        assert!(
            e.contains("icache.size") && e.contains("power of two"),
            "{e}"
        );
        let e = with(&["icache.colour=3"]).unwrap_err().to_string();
        assert!(e.contains("colour") && e.contains("--set"), "{e}");
        let e = with(&["branch.predictor=oracle"]).unwrap_err().to_string();
        assert!(e.contains("oracle") && e.contains("gshare"), "{e}");
        let e = with(&["latency.alu.x=1"]).unwrap_err().to_string();
        assert!(e.contains("latency.alu.x"), "{e}");
        for bad in ["icache", "=4", "a..b=1", "x y=1"] {
            assert!(Override::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn axes_expand_ranges_and_lists() {
        let a = Axis::parse("icache.size=512..16384*2").unwrap();
        let sizes: Vec<String> = a.values.iter().map(|v| v.to_string()).collect();
        assert_eq!(sizes, ["512", "1024", "2048", "4096", "8192", "16384"]);
        let a = Axis::parse("branch.mispredict_penalty=1..7+3").unwrap();
        assert_eq!(a.values.len(), 3);
        let a = Axis::parse("branch.predictor=bimodal,gshare").unwrap();
        assert_eq!(a.values.len(), 2);
        let g = grid(&[
            Axis::parse("icache.size=512..16384*2").unwrap(),
            Axis::parse("branch.predictor=bimodal,gshare").unwrap(),
            Axis::parse("branch.history_bits=8").unwrap(),
        ]);
        assert_eq!(g.len(), 12);
        assert_eq!(g[1][0].to_string(), "icache.size=512");
        assert_eq!(g[1][1].to_string(), "branch.predictor=gshare");
        for bad in [
            "x=1..10",
            "x=10..1*2",
            "x=1..10*1",
            "x=0..10*2",
            "x=1..10+0",
            "x=a..b+1",
            "x=1..100000000+1",
            "x=1,,2",
        ] {
            assert!(Axis::parse(bad).is_err(), "{bad}");
        }
    }
}
