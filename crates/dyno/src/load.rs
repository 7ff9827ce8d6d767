//! `dyno load`: the load generator as its own process (Firedancer's benchg + benchs,
//! Cardano's tx-generator): valid transfers for a genesis, over QUIC, to one node or
//! spread over many, paced or flat out.

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use dyno_node::genesis::GenesisFile;
use dyno_node::load::{connect, run_load, sign_transfers, LoadPlan};

use crate::cli::SummaryFormat;
use crate::cli_error::CliError;
use crate::interrupt;

/// Arguments of `dyno load`.
#[derive(Debug, Args)]
pub struct LoadArgs {
    /// The genesis file the nodes run (its accounts sign the transfers).
    #[arg(long, value_name = "FILE")]
    genesis: PathBuf,
    /// A node's QUIC ingress address (repeat to spread the load round robin).
    #[arg(long = "target", value_name = "ADDR", required = true)]
    targets: Vec<SocketAddr>,
    /// Transactions per second; 0 = flat out.
    #[arg(long, value_name = "TPS", default_value_t = 100)]
    rate: u64,
    /// How long to send, in seconds.
    #[arg(long, value_name = "SECONDS", value_parser = parse_positive, default_value = "10")]
    duration: f64,
    /// Transactions to sign before sending (default: rate x duration; flat out: 200000).
    #[arg(long, value_name = "N")]
    pool: Option<usize>,
    /// One QUIC datagram per transaction instead of one stream (losses are reported).
    #[arg(long)]
    datagrams: bool,
    /// QUIC connections per target, each with a sender thread of its own (default: a
    /// quarter of the cores shared over the targets, at least 1 each; one connection
    /// sends what one core encrypts).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=256))]
    connections: Option<u16>,
    /// Output format of the summary.
    #[arg(long, value_enum, default_value = "table")]
    format: SummaryFormat,
}

fn parse_positive(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("must be a positive number of seconds, got `{s}`")),
    }
}

/// Runs `dyno load`.
pub fn run(a: LoadArgs) -> anyhow::Result<ExitCode> {
    let g = GenesisFile::from_file(&a.genesis)?.load();
    let plan = LoadPlan::sized(
        a.targets.clone(),
        a.rate,
        a.duration,
        a.pool,
        a.datagrams,
        a.connections.map(usize::from),
        dyno_node::log::now_ns(),
    )?;
    let pool = plan.pool;
    let stop = interrupt::stop_flag();
    errln!("signing {pool} transfers on every core ...");
    let txs = sign_transfers(&g, pool, plan.nonce);
    // A target that does not answer is the network's state, not the input (exit 3).
    let clients = connect(&g, &plan).map_err(|e| CliError::Runtime(format!("--target: {e}")))?;
    errln!(
        "sending to {} target(s) over {} connection(s) each at {} for {} s",
        plan.targets.len(),
        plan.connections,
        if a.rate == 0 {
            "full speed".to_string()
        } else {
            format!("{} tx/s", a.rate)
        },
        a.duration
    );
    let r = run_load(&plan, clients, &txs, stop, &mut |s| {
        errln!(
            "t={:>4.0}s offered {:>7}/s accepted {:>7}/s refused {:>6}/s send errors {}",
            s.t,
            s.sent,
            s.accepted,
            s.refused,
            s.errors
        )
    });
    let mut out = crate::out::stdout();
    match a.format {
        SummaryFormat::Json => writeln!(
            out,
            "{}",
            crate::json_doc::with_schema("dyno.load.summary/1", &r)?
        )?,
        SummaryFormat::Table => write!(out, "{}", r.text())?,
    }
    if r.sent == 0 && r.errors > 0 {
        return Err(CliError::Runtime(format!(
            "nothing could be sent: {}",
            r.first_error.unwrap_or_default()
        ))
        .into());
    }
    Ok(interrupt::signalled_exit_code().map_or(ExitCode::SUCCESS, ExitCode::from))
}
