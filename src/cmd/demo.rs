//! `retrace demo`.

/// Arguments of `retrace demo`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Entry point of `retrace demo`.
pub fn main(_args: Args) -> anyhow::Result<std::process::ExitCode> {
    anyhow::bail!("`retrace demo` is not built yet")
}
