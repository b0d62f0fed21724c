//! `retrace disasm`.

/// Arguments of `retrace disasm`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Entry point of `retrace disasm`.
pub fn main(_args: Args) -> anyhow::Result<std::process::ExitCode> {
    anyhow::bail!("`retrace disasm` is not built yet")
}
