//! Golden files: a test renders what it computed as text and compares it
//! with a file in the repository. With `RETRACE_BLESS=1` the file is
//! rewritten instead (as cranelift's `CRANELIFT_TEST_BLESS=1`), so an
//! intended change of output is one command and a reviewed diff, not a
//! hand edit of expected values.

use std::path::Path;

/// Whether `RETRACE_BLESS=1`.
pub fn blessing() -> bool {
    std::env::var("RETRACE_BLESS").is_ok_and(|v| v == "1")
}

/// Compares `actual` with the file at `path`. Under `RETRACE_BLESS=1`
/// writes `actual` there (when different) and succeeds. Otherwise a
/// difference is an error naming the first differing line and the switch.
pub fn check(path: &Path, actual: &str) -> Result<(), String> {
    let expected = std::fs::read_to_string(path).ok();
    if expected.as_deref() == Some(actual) {
        return Ok(());
    }
    if blessing() {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        std::fs::write(path, actual).map_err(|e| format!("{}: {e}", path.display()))?;
        eprintln!("blessed {}", path.display());
        return Ok(());
    }
    let Some(expected) = expected else {
        return Err(format!(
            "{} does not exist; run with RETRACE_BLESS=1 to write it",
            path.display()
        ));
    };
    Err(format!(
        "{} differs from the output (RETRACE_BLESS=1 rewrites it):\n{}",
        path.display(),
        diff(&expected, actual)
    ))
}

/// [`check`] for a `#[test]`: panics with its message.
pub fn assert(path: &Path, actual: &str) {
    if let Err(e) = check(path, actual) {
        panic!("{e}");
    }
}

/// The differing lines, each as `-expected` / `+actual` with its number;
/// at most 40 of them.
fn diff(expected: &str, actual: &str) -> String {
    let (e, a): (Vec<&str>, Vec<&str>) = (expected.lines().collect(), actual.lines().collect());
    let mut out = Vec::new();
    for i in 0..e.len().max(a.len()) {
        let (x, y) = (e.get(i), a.get(i));
        if x != y {
            if let Some(x) = x {
                out.push(format!("{:>5} -{x}", i + 1));
            }
            if let Some(y) = y {
                out.push(format!("{:>5} +{y}", i + 1));
            }
        }
        if out.len() >= 40 {
            out.push("      …".into());
            break;
        }
    }
    if out.is_empty() {
        out.push("(only line endings differ)".into());
    }
    out.join("\n")
}

/// Named values for one golden file, one `name: value` line each in the
/// order the test computes them: for tests whose expectations are numbers
/// (cycle counts, say) rather than a whole rendered output.
#[derive(Debug)]
pub struct Values {
    path: std::path::PathBuf,
    text: String,
}

impl Values {
    /// Values to be compared with the file at `path`.
    pub fn new(path: impl Into<std::path::PathBuf>) -> Values {
        Values {
            path: path.into(),
            text: String::new(),
        }
    }

    /// Adds the line `name: value`.
    pub fn add(&mut self, name: &str, value: impl std::fmt::Display) {
        use std::fmt::Write as _;
        writeln!(self.text, "{name}: {value}").unwrap();
    }

    /// [`check`] of the lines so far.
    pub fn check(&self) -> Result<(), String> {
        check(&self.path, &self.text)
    }

    /// [`assert`] of the lines so far.
    pub fn assert(&self) {
        assert(&self.path, &self.text)
    }
}
