//! Pieces several subcommands share: loading programs, cores and traces with
//! the right error messages and exit statuses, and the program's host setup.

use crate::status::{tag, Status, WithStatus};
use anyhow::anyhow;
use retrace_estimate::Fidelity;
use retrace_program::{Elf, Program};
use retrace_sim::HostConfig;
use retrace_timing::{core_with_overrides, preset, CoreModel, Override, PRESETS};
use std::path::Path;

/// Load `path` as a RISC-V ELF program, with bad-input errors.
pub fn load_elf(path: &std::path::Path) -> anyhow::Result<Elf> {
    load_elf_bytes(path).map(|(elf, _)| elf)
}

/// [`load_elf`], and the file's bytes (its debugging information, say,
/// which [`Elf`] does not keep).
pub fn load_elf_bytes(path: &std::path::Path) -> anyhow::Result<(Elf, Vec<u8>)> {
    let shown = path.display();
    let bytes = std::fs::read(path)
        .map_err(|e| anyhow!("cannot read program {shown}: {e}; check the path"))
        .status(Status::BadInput)?;
    let elf = Elf::parse(&bytes).map_err(|e| {
        tag(
            anyhow!("cannot load program {shown}: {e}; retrace runs RISC-V ELF executables"),
            Status::BadInput,
        )
    })?;
    Ok((elf, bytes))
}

/// Resolve `--core`: a preset name, or a path to a TOML core description.
pub fn load_core(spec: &str) -> anyhow::Result<CoreModel> {
    let result = if looks_like_file(spec) {
        CoreModel::from_file(Path::new(spec)).map_err(|e| anyhow!("{e}"))
    } else {
        preset(spec).map_err(|e| anyhow!("{e}"))
    };
    result.map_err(|e| tag(e, Status::BadInput))
}

/// `--set KEY=VALUE`: changes to the cores a command is given.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct CoreSets {
    /// Change a field of the core description (every --core of the
    /// command): KEY=VALUE, KEY a field as in a core TOML file with tables
    /// joined by dots (docs/TIMING.md), e.g. `--set icache.size=4096`,
    /// `--set branch.predictor=gshare --set branch.history_bits=8`,
    /// `--set dcache=none`. Repeatable; applied in order.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_set)]
    pub set: Vec<Override>,
}

fn parse_set(text: &str) -> Result<Override, String> {
    Override::parse(text).map_err(|e| e.to_string())
}

/// [`load_core`] with `--set` overrides applied to the core's TOML (the
/// preset's text or the file): the result is read and checked as a file
/// with those fields would be, and named after them
/// (`rocket[icache.size=4096]`).
pub fn load_core_with(spec: &str, sets: &[Override]) -> anyhow::Result<CoreModel> {
    // Unknown presets and unreadable or invalid files get load_core's
    // message, overrides or not.
    let core = load_core(spec)?;
    if sets.is_empty() {
        return Ok(core);
    }
    let (text, origin) = match PRESETS.iter().find(|(name, _)| *name == spec) {
        Some((_, text)) if !looks_like_file(spec) => (text.to_string(), format!("preset {spec}")),
        _ => (
            std::fs::read_to_string(spec).map_err(|e| {
                tag(
                    anyhow!("{spec}: cannot read core description: {e}"),
                    Status::BadInput,
                )
            })?,
            spec.to_string(),
        ),
    };
    core_with_overrides(&text, &origin, sets).map_err(|e| tag(anyhow!("{e}"), Status::BadInput))
}

fn looks_like_file(spec: &str) -> bool {
    spec.ends_with(".toml") || spec.contains('/')
}

/// `cycles` at `hz` in seconds, and the frequency in MHz, for reports.
pub fn target_time(cycles: u64, hz: Option<u64>) -> (Option<f64>, Option<f64>) {
    match hz {
        Some(hz) if hz > 0 => (Some(hz as f64 / 1e6), Some(cycles as f64 / hz as f64)),
        _ => (None, None),
    }
}

/// A duration for people, in the unit that keeps it readable:
/// `1.234 s`, `12.35 ms`, `850.0 µs`, `42.00 ns`.
pub fn duration_text(seconds: f64) -> String {
    let (value, unit) = if seconds >= 1.0 {
        (seconds, "s")
    } else if seconds >= 1e-3 {
        (seconds * 1e3, "ms")
    } else if seconds >= 1e-6 {
        (seconds * 1e6, "µs")
    } else {
        (seconds * 1e9, "ns")
    };
    let decimals = if value >= 100.0 {
        1
    } else if value >= 10.0 {
        2
    } else {
        3
    };
    format!("{value:.decimals$} {unit}")
}

/// Refuse a core that cannot run programs of the ELF's width.
pub fn check_xlen(core: &CoreModel, elf: &Elf, shown: &str) -> anyhow::Result<()> {
    if core.supports(elf.xlen) {
        return check_float(core, elf, shown);
    }
    let supports = match (core.rv32, core.rv64) {
        (true, false) => "RV32 only",
        (false, true) => "RV64 only",
        _ => "RV32 and RV64",
    };
    Err(tag(
        anyhow!(
            "core {} supports {supports}, but {shown} is an RV{} program; pick another core (`retrace cores` lists them)",
            core.name,
            elf.xlen.bits()
        ),
        Status::BadInput,
    ))
}

/// Refuse a program built for a floating-point extension the core does
/// not implement (the core's `float`), naming the extension and the
/// `-march`/`-mabi` that build the program without it.
fn check_float(core: &CoreModel, elf: &Elf, shown: &str) -> anyhow::Result<()> {
    let (Some(unit), Some(built)) = (core.float, elf.extensions()) else {
        return Ok(());
    };
    let Some(missing) = built.chars().find(|&e| !unit.implements(e)) else {
        return Ok(());
    };
    let name = if missing == 'f' {
        "F (single-precision floating point)"
    } else {
        "D (double-precision floating point)"
    };
    // Without the extension: without D, or without F and D; the ABI
    // passes floating point in integer registers without F, in F's
    // registers with F only.
    let keep: String = built
        .chars()
        .filter(|&e| unit.implements(e) && (e == 'i' || e == 'e' || "mafdc".contains(e)))
        .collect();
    let bits = elf.xlen.bits();
    let base = if bits == 32 { "ilp32" } else { "lp64" };
    let abi = match unit {
        retrace_timing::FloatUnit::Single => format!("{base}f"),
        _ => base.to_string(),
    };
    Err(tag(
        anyhow!(
            "{shown} is built for rv{bits}{built} and uses the {name} extension, which core {} does not have (its float = \"{}\"); build the program with -march=rv{bits}{keep} -mabi={abi}, or pick a core with it (`retrace cores`)",
            core.name,
            unit.name()
        ),
        Status::BadInput,
    ))
}

/// The cores of several harts from repeated `--core`-style options: one
/// for every hart, or one per hart in hart order (a heterogeneous system),
/// each checked against the ELF's width. `option` names the flag in the
/// message.
pub fn hart_cores(
    specs: &[String],
    sets: &[Override],
    harts: usize,
    elf: &Elf,
    shown: &str,
    option: &str,
) -> anyhow::Result<Vec<CoreModel>> {
    if specs.len() != 1 && specs.len() != harts {
        return Err(tag(
            anyhow!(
                "{} {option} for {harts} harts: give one {option} for every hart, or one per hart in hart order",
                specs.len()
            ),
            Status::BadInput,
        ));
    }
    specs
        .iter()
        .map(|spec| {
            let core = load_core_with(spec, sets)?;
            check_xlen(&core, elf, shown)?;
            Ok(core)
        })
        .collect()
}

/// Parse a clock frequency given in MHz (`--mhz`): a decimal number with
/// at most six places (whole hertz), from 0.001 (1 kHz) to 100,000
/// (100 GHz); the result is in hertz.
pub fn parse_mhz(text: &str) -> Result<u64, String> {
    let bad = || {
        format!("`{text}` is not a frequency in MHz; give a number from 0.001 to 100000, e.g. 100 or 62.5")
    };
    let t = text.trim();
    let (whole, frac) = t.split_once('.').unwrap_or((t, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if (whole.is_empty() && frac.is_empty()) || !digits(whole) || !digits(frac) || frac.len() > 6 {
        return Err(bad());
    }
    let whole: u64 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| bad())?
    };
    let frac: u64 = format!("{frac:0<6}").parse().map_err(|_| bad())?;
    let hz = whole
        .checked_mul(1_000_000)
        .and_then(|w| w.checked_add(frac))
        .ok_or_else(bad)?;
    if !retrace_sim::sync::HZ_RANGE.contains(&hz) {
        return Err(bad());
    }
    Ok(hz)
}

/// The starting frequencies of several harts from repeated `--mhz`: none
/// (every hart at 100 MHz), one for every hart, or one per hart.
pub fn hart_frequencies(hz: &[u64], harts: usize) -> anyhow::Result<Vec<u64>> {
    if hz.len() > 1 && hz.len() != harts {
        return Err(tag(
            anyhow!(
                "{} --mhz for {harts} harts: give one --mhz for every hart, or one per hart in hart order",
                hz.len()
            ),
            Status::BadInput,
        ));
    }
    Ok(hz.to_vec())
}

/// Analyse a program (CFG, partial programs), with a bad-input error.
pub fn analyse(elf: &Elf, shown: &str) -> anyhow::Result<Program> {
    Program::analyse(elf).map_err(|e| tag(anyhow!("cannot analyse {shown}: {e}"), Status::BadInput))
}

/// The host configuration of a program run with `args`, without host files
/// or host time (recordings must repeat).
pub fn host(shown: &str, args: &[String]) -> HostConfig {
    HostConfig {
        cmdline: HostConfig::qemu_cmdline(shown, args),
        ..HostConfig::default()
    }
}

/// The data-cache geometries of the built-in presets: what `record`
/// measures by default so that `estimate` can use measured miss rates.
pub use retrace_estimate::compare::preset_dcaches;

/// `--fidelity`: how much of the core's behaviour the replay simulates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FidelityArg {
    /// Partial-program times with boundary terms and static branch
    /// prediction.
    Fast,
    /// Also the branch predictor, return stack and I-cache.
    Control,
}

impl From<FidelityArg> for Fidelity {
    fn from(f: FidelityArg) -> Fidelity {
        match f {
            FidelityArg::Fast => Fidelity::Fast,
            FidelityArg::Control => Fidelity::Control,
        }
    }
}

/// The program's own command-line arguments, after `--`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ProgramArgs {
    /// Arguments passed to the program (its command line, as QEMU builds it).
    #[arg(last = true, value_name = "ARGS")]
    pub args: Vec<String>,
}

/// Serialise anything by its `Display` text (fidelities, stop reasons).
pub fn display<T: std::fmt::Display, S: serde::Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(v)
}

/// Format a count with thousands separators, for tables.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Map a replay failure to a one-line bad-input error naming the trace.
pub fn replay_error(trace: &Path, e: retrace_estimate::ReplayError) -> anyhow::Error {
    tag(anyhow!("trace {}: {e}", trace.display()), Status::BadInput)
}

/// Open a trace's header and check it belongs to `elf`.
pub fn check_trace(trace: &Path, elf: &Elf, shown: &str) -> anyhow::Result<retrace_trace::Header> {
    // The header only: the replay reads (and validates) the rest.
    let h = retrace_trace::TraceReader::header_of(trace).map_err(|e| {
        tag(
            anyhow!("cannot read trace {}: {e}", trace.display()),
            Status::BadInput,
        )
    })?;
    if h.identity != elf.identity() {
        return Err(tag(
            anyhow!(
                "trace {} records program {:?} (identity {:016x}), not {shown} (identity {:016x}); record this program with `retrace record`",
                trace.display(),
                h.program,
                h.identity,
                elf.identity()
            ),
            Status::BadInput,
        ));
    }
    Ok(h)
}

/// Refuse an output path that cannot name a file: one ending in `/` names
/// a directory (as POSIX `open(2)` says). Commands that write their output
/// at the end (`record`) check this first, not after the work.
pub fn check_output_name(path: &Path, what: &str) -> anyhow::Result<()> {
    let ends_in_separator = path
        .as_os_str()
        .as_encoded_bytes()
        .last()
        .is_some_and(|&b| std::path::is_separator(b as char));
    if ends_in_separator {
        return Err(tag(
            anyhow!(
                "cannot create {what} {}: a path ending in a slash names a directory; give a file name",
                path.display()
            ),
            Status::BadInput,
        ));
    }
    Ok(())
}

/// Create (or truncate) the output file `path` for writing, as POSIX
/// `open(2)` would: a path that ends in `/` names a directory, so it is
/// refused on every platform, and the failure is one line saying what to
/// do.
pub fn create_output(path: &Path, what: &str) -> anyhow::Result<std::fs::File> {
    let shown = path.display();
    check_output_name(path, what)?;
    std::fs::File::create(path).map_err(|e| {
        tag(
            anyhow!("cannot create {what} {shown}: {e}; check that the directory exists and is writable"),
            Status::BadInput,
        )
    })
}

/// The name a unit enum variant serialises as (`kebab-case` names in
/// reports), for a flat CSV cell.
pub fn name_of_serialized<T: serde::Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

/// Quote `word` for a POSIX shell when it needs it, so that a command
/// shown to be copied runs as shown.
pub fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=,+@%".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// Whether `core` predicts branches in a way a misprediction can cost:
/// without that (`ideal`, `picorv32`: a taken branch simply costs more), a
/// misprediction count means nothing and reports show none.
pub fn predicts(core: &CoreModel) -> bool {
    core.branch.mispredict_penalty > 0
}

/// The exit status of a run that stopped for `stop` before its end
/// (`src/status.rs`): a denied request 123, a runaway 124, anything else
/// (a fault, an unsupported request) 126.
pub fn stop_status(stop: &retrace_sim::StopReason) -> Status {
    use retrace_sim::StopReason;
    match stop {
        StopReason::Denied { .. } => Status::Denied,
        StopReason::Runaway { .. } => Status::Runaway,
        _ => Status::Fault,
    }
}

/// A bias threshold of the aggregation gates (`--if-else-bias`): a number
/// of cycles at or above 0; anything else is a usage error.
pub fn parse_threshold(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(v) if v >= 0.0 => Ok(v),
        _ => Err(format!(
            "{text:?} is not a bias threshold: give a number of cycles at or above 0, like 0 or 1e6"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_pick_a_readable_unit() {
        assert_eq!(duration_text(1.5), "1.500 s");
        assert_eq!(duration_text(0.012345), "12.35 ms");
        assert_eq!(duration_text(0.00085), "850.0 µs");
        assert_eq!(duration_text(4.2e-8), "42.00 ns");
        assert_eq!(target_time(1000, Some(1_000_000)), (Some(1.0), Some(0.001)));
        assert_eq!(target_time(1000, None), (None, None));
    }

    #[test]
    fn mhz_are_decimal_and_whole_hertz() {
        assert_eq!(parse_mhz("100"), Ok(100_000_000));
        assert_eq!(parse_mhz("62.5"), Ok(62_500_000));
        assert_eq!(parse_mhz(".001"), Ok(1_000));
        assert_eq!(parse_mhz("100000"), Ok(100_000_000_000));
        for bad in [
            "",
            ".",
            "0",
            "0.0001",
            "1.0000001",
            "100001",
            "-5",
            "1e3",
            "x",
            "99999999999999999999",
        ] {
            assert!(parse_mhz(bad).is_err(), "{bad}");
        }
    }
}
