//! `dyno pipeline bench`: the reference leader pipeline under load for a measured
//! window, its summary, its diagnosis, and `--sweep` over tile counts (the run itself is
//! [`crate::leader`]'s, shared with `dyno node`).

use crate::leader::{LeaderArgs, Window};
use clap::Args;
use std::process::ExitCode;
use std::time::Duration;

/// Arguments of `dyno pipeline bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(flatten)]
    leader: LeaderArgs,
}

/// The window of a bench without `--duration`.
const DEFAULT_WINDOW: Duration = Duration::from_secs(10);

/// Runs `dyno pipeline bench`.
pub fn run(a: BenchArgs) -> anyhow::Result<ExitCode> {
    crate::leader::run(a.leader, Window::Measured(DEFAULT_WINDOW))
}
