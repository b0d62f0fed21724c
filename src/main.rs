//! `retrace`: the command-line front of the retrace toolkit.
//!
//! This binary only parses arguments, shows progress and prints results; the
//! work lives in the library crates under `crates/` (see `DESIGN.md`). Each
//! subcommand is one module under `cmd/`.

mod cmd;
mod html;
mod progress;
mod report;
mod status;

use clap::Parser;

fn main() -> std::process::ExitCode {
    // Rust ignores SIGPIPE, so `retrace … | head` would make the next print
    // panic. Like other Unix tools, end quietly when the reader goes away.
    #[cfg(unix)]
    // SAFETY: restoring a signal's default disposition at start-up, before
    // any other thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = cmd::Cli::parse();
    match cmd::dispatch(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("retrace: error: {err:#}");
            status::of_error(&err).into()
        }
    }
}
