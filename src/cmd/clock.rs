//! `retrace clock …`: seed 002's clock correction.

/// The `clock` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum Command {}

/// Entry point of `retrace clock`.
pub fn main(cmd: Command) -> anyhow::Result<std::process::ExitCode> {
    match cmd {}
}
