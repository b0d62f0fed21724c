//! `retrace run`.

/// Arguments of `retrace run`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Entry point of `retrace run`.
pub fn main(_args: Args) -> anyhow::Result<std::process::ExitCode> {
    anyhow::bail!("`retrace run` is not built yet")
}
