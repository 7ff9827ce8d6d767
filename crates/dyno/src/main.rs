//! `dyno`: a dynamometer for blockchain nodes.
//!
//! The binary parses arguments, calls the command crates, shows progress and prints
//! results. Measuring, judging, storing and rendering live in the libraries.

// Standard output and error go through out.rs's macros: a closed or full stream is
// handled there, never a panic.
#![deny(clippy::print_stdout, clippy::print_stderr)]

#[macro_use]
mod out;

mod bisect;
mod build_info;
mod cli;
mod cli_error;
mod cluster;
mod compare;
mod db;
mod interrupt;
mod json_doc;
mod leader;
mod load;
mod machine;
mod node;
mod pipeline;
mod progress;
mod results;
mod run_report;
mod serve;
mod term;
mod tune;

use clap::{Parser, Subcommand};
use cli_error::CliError;
use std::process::ExitCode;

/// A dynamometer for blockchain nodes: how fast are this machine, this build, this
/// pipeline layout, this release?
#[derive(Debug, Parser)]
#[command(name = "dyno", version, about, long_about = None, propagate_version = true)]
struct Cli {
    /// When to colour tables: auto (a terminal, and NO_COLOR unset), always or never.
    #[arg(
        long,
        global = true,
        value_enum,
        default_value = "auto",
        value_name = "WHEN"
    )]
    color: term::ColorChoice,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Benchmark this machine against a chain's hardware requirements (Substrate-compatible scores).
    Machine(Box<machine::MachineArgs>),
    /// The reference node: on a network (`dyno node run`), its genesis file, or alone with its load inside.
    Node(Box<node::NodeArgs>),
    /// Send transactions to nodes over QUIC at a fixed rate or flat out.
    Load(Box<load::LoadArgs>),
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
    /// Clusters of nodes over emulated regions: cluster files, propagation reports, exports.
    #[command(subcommand)]
    Cluster(cluster::ClusterCommand),
    /// Browse the results store in a web browser (runs, histories, comparisons, fleet),
    /// and watch running pipelines and nodes live.
    Serve(Box<serve::ServeArgs>),
    /// Print a shell completion script: `dyno completions bash > /etc/bash_completion.d/dyno`.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff) made from the command-line definition: `dyno man | man -l -`.
    Man {
        /// Write dyno.1 and one page per subcommand (dyno-machine.1, ...) into DIR instead.
        #[arg(long, value_name = "DIR")]
        dir: Option<std::path::PathBuf>,
    },
}

/// `dyno completions` and `dyno man`: generated from the same definition as the parser,
/// so they cannot drift from it.
fn generated_docs(command: &Command) -> Option<anyhow::Result<ExitCode>> {
    use anyhow::Context as _;
    use clap::CommandFactory as _;
    let mut cmd = Cli::command();
    match command {
        Command::Completions { shell } => {
            // clap_complete panics when its writer fails: it writes into memory first.
            let mut script = Vec::new();
            clap_complete::generate(*shell, &mut cmd, "dyno", &mut script);
            Some(
                std::io::Write::write_all(&mut out::stdout(), &script)
                    .map_err(anyhow::Error::from)
                    .map(|()| ExitCode::SUCCESS),
            )
        }
        Command::Man { dir: Some(dir) } => Some(
            std::fs::create_dir_all(dir)
                .and_then(|()| clap_mangen::generate_to(cmd, dir))
                .with_context(|| format!("--dir {}", dir.display()))
                .map(|()| ExitCode::SUCCESS),
        ),
        Command::Man { dir: None } => Some(
            clap_mangen::Man::new(cmd)
                .render(&mut out::stdout())
                .map_err(anyhow::Error::from)
                .map(|()| ExitCode::SUCCESS),
        ),
        _ => None,
    }
}

fn main() -> ExitCode {
    // SIGPIPE stays ignored (the Rust runtime's choice): out.rs ends a closed stdout
    // quietly, and a dyno that owns children never dies between two writes.
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage(&e),
    };
    term::set_color_choice(cli.color);
    if let Some(outcome) = generated_docs(&cli.command) {
        return finish(outcome);
    }
    if matches!(
        cli.command,
        Command::Compare(_) | Command::Cluster(_) | Command::Tune(_) | Command::Pipeline(_)
    ) {
        // What these commands start, and whatever escapes it, comes back to dyno.
        dyno_proc::reaper::become_subreaper();
    }
    let outcome = match cli.command {
        Command::Machine(args) => machine::run(*args),
        Command::Node(a) => node::run(*a),
        Command::Load(a) => load::run(*a),
        Command::Compare(a) => compare::run(*a),
        Command::Pipeline(cmd) => pipeline::run(cmd),
        Command::Results(cmd) => results::run(cmd),
        Command::Tune(cmd) => tune::run(cmd),
        Command::Cluster(cmd) => cluster::run(cmd),
        Command::Serve(a) => serve::run(*a),
        Command::Completions { .. } | Command::Man { .. } => unreachable!("handled above"),
    };
    finish(outcome)
}

/// `--help`, `--version` (standard output, as clap prints them) or a usage error
/// (standard error, exit 2), with standard output's rules of out.rs.
fn usage(e: &clap::Error) -> ExitCode {
    if !e.use_stderr() {
        let text = e.render();
        let text = if term::color_stdout() {
            text.ansi().to_string()
        } else {
            text.to_string()
        };
        return finish(
            out!("{text}")
                .map_err(anyhow::Error::from)
                .map(|()| ExitCode::SUCCESS),
        );
    }
    let _ = e.print();
    ExitCode::from(cli_error::USAGE)
}

fn finish(outcome: anyhow::Result<ExitCode>) -> ExitCode {
    match outcome {
        Ok(code) => code,
        Err(err) => {
            let code = CliError::exit_code(&err);
            errln!("error: {err:#}");
            ExitCode::from(code)
        }
    }
}
