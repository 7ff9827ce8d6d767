//! `dyno`: a dynamometer for blockchain nodes.
//!
//! The binary parses arguments, calls the command crates, shows progress and prints
//! results. Measuring, judging, storing and rendering live in the libraries.

mod build_info;
mod cli_error;
mod compare;
mod db;
mod interrupt;
mod machine;
mod pipeline;
mod progress;
mod results;
mod run_report;
mod tune;

use clap::{Parser, Subcommand};
use cli_error::CliError;
use std::process::ExitCode;

/// A dynamometer for blockchain nodes: how fast are this machine, this build, this
/// pipeline layout, this release?
#[derive(Debug, Parser)]
#[command(name = "dyno", version, about, long_about = None, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Benchmark this machine against a chain's hardware requirements (Substrate-compatible scores).
    Machine(Box<machine::MachineArgs>),
    /// Compare releases under fixed workloads: a verdict per metric and an HTML report.
    Compare(Box<compare::CompareArgs>),
    /// Tile pipelines: run a layout, watch it live, serve its metrics.
    #[command(subcommand)]
    Pipeline(pipeline::PipelineCommand),
    /// What was measured before: list, show, export and delete stored runs.
    #[command(subcommand)]
    Results(results::ResultsCommand),
    /// Find the fastest build profile of a Rust project on this CPU.
    #[command(subcommand)]
    Tune(tune::TuneCommand),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Machine(args) => machine::run(*args),
        Command::Compare(a) => compare::run(*a),
        Command::Pipeline(cmd) => pipeline::run(cmd),
        Command::Results(cmd) => results::run(cmd),
        Command::Tune(cmd) => tune::run(cmd),
    };
    match outcome {
        Ok(code) => code,
        Err(err) => {
            let code = CliError::exit_code(&err);
            eprintln!("error: {err:#}");
            ExitCode::from(code)
        }
    }
}
