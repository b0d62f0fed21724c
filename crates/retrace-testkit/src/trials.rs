//! Sweeps as one trial per row, on `libtest-mimic`: a test target with
//! `harness = false` builds a list of [`Trial`]s (say one per example
//! program × core) and hands it to [`run`]. Each trial shows up as its own
//! test, so a failure names its row (`exact::sort-rv32-O2::rocket`),
//! `cargo test -- NAME` selects rows, and libtest's own thread pool
//! (`--test-threads`) runs them in parallel.

use crate::tools::{self, Tools};
pub use libtest_mimic::{Arguments, Completion, Failed, Trial};

/// Runs `trials` with the command line's options and exits with libtest's
/// status. `cleanup` runs after the last trial (say, to remove a scratch
/// directory) and before the exit.
pub fn run(trials: Vec<Trial>, cleanup: impl FnOnce()) -> ! {
    let args = Arguments::from_args();
    let conclusion = libtest_mimic::run(&args, trials);
    cleanup();
    conclusion.exit()
}

/// A trial that needs external tools: without them it is reported as
/// ignored with the reason, or fails under `RETRACE_REQUIRE_TOOLS=1`.
pub fn needing(
    name: impl Into<String>,
    needs: Tools,
    body: impl FnOnce() -> Result<(), Failed> + Send + 'static,
) -> Trial {
    Trial::ignorable_test(name, move || match needs.missing() {
        None => body().map(|()| Completion::Completed),
        Some(reason) => skip(reason),
    })
}

/// `Ok` when `problems` is empty, else a failure listing them all (every
/// failing check of a row, not just the first).
pub fn all_ok(problems: Vec<String>) -> Result<(), Failed> {
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("{} problems:\n{}", problems.len(), problems.join("\n")).into())
    }
}

/// The end of an [`Trial::ignorable_test`] whose precondition is missing
/// (a tool, a library): ignored with `reason`, or a failure under
/// `RETRACE_REQUIRE_TOOLS=1`.
pub fn skip(reason: impl Into<String>) -> Result<Completion, Failed> {
    let reason = reason.into();
    if tools::required() {
        Err(format!("{reason}, and RETRACE_REQUIRE_TOOLS=1").into())
    } else {
        Ok(Completion::ignored_with(reason))
    }
}
