//! `dyno load`: the load generator as its own process (Firedancer's benchg + benchs,
//! Cardano's tx-generator): valid transfers for a genesis, over QUIC, to one node or
//! spread over many, paced or flat out.

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;
use dyno_node::genesis::GenesisFile;
use dyno_node::load::{connect, run_load, sign_transfers, LoadPlan};

use crate::interrupt;
use crate::pipeline::SummaryFormat;

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
    let pool = match (a.pool, a.rate) {
        (Some(p), _) => p,
        (None, 0) => 200_000,
        (None, r) => (r as f64 * a.duration).ceil() as usize + 1,
    };
    if pool == 0 || pool > 50_000_000 {
        anyhow::bail!("--pool {pool}: must be in 1..=50000000 (or lower --rate/--duration)");
    }
    let plan = LoadPlan {
        targets: a.targets.clone(),
        rate: a.rate,
        duration: Duration::from_secs_f64(a.duration),
        pool,
        datagrams: a.datagrams,
        // A cluster's load targets every node: a quarter of the cores per target would
        // be thousands of threads there, so the default is shared over the targets.
        connections: a.connections.map_or_else(
            || {
                let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
                (cores / 4 / a.targets.len().max(1)).max(1)
            },
            usize::from,
        ),
        nonce: dyno_node::log::now_ns(),
    };
    let stop = interrupt::stop_flag();
    eprintln!("signing {pool} transfers on every core ...");
    let txs = sign_transfers(&g, pool, plan.nonce);
    let clients = connect(&g, &plan).context("--target")?;
    eprintln!(
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
        eprintln!(
            "t={:>4.0}s offered {:>7}/s accepted {:>7}/s refused {:>6}/s send errors {}",
            s.t, s.sent, s.accepted, s.refused, s.errors
        )
    });
    let mut out = std::io::stdout().lock();
    match a.format {
        SummaryFormat::Json => writeln!(
            out,
            "{}",
            crate::json_doc::with_schema("dyno.load.summary/1", &r)?
        )?,
        SummaryFormat::Table => {
            writeln!(
                out,
                "sent {} in {:.2} s = {:.1} tx/s (asked {}), send errors {}{}",
                r.sent,
                r.elapsed_s,
                r.achieved_tps,
                if r.rate == 0 {
                    "flat out".into()
                } else {
                    r.rate.to_string()
                },
                r.errors,
                r.first_error
                    .as_ref()
                    .map_or(String::new(), |e| format!(" (first: {e})"))
            )?;
            if r.rate > 0 {
                writeln!(
                    out,
                    "pacing error (batch lateness): p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
                    r.pacing_p50_s * 1e3,
                    r.pacing_p99_s * 1e3,
                    r.pacing_max_s * 1e3
                )?;
            }
            if r.pool_exhausted {
                writeln!(
                    out,
                    "the pool of {} signed transfers ran out before the duration",
                    r.signed
                )?;
            }
            for t in &r.targets {
                writeln!(
                    out,
                    "{}: sent {}, taken by the node {}",
                    t.target,
                    t.sent,
                    match (t.taken, t.refused) {
                        (Some(n), Some(r)) =>
                            format!("{n} ({} accepted, {r} refused: queue full)", n - r),
                        _ => format!("unknown ({})", t.close_error.as_deref().unwrap_or("")),
                    }
                )?;
            }
        }
    }
    if r.sent == 0 && r.errors > 0 {
        anyhow::bail!(
            "nothing could be sent: {}",
            r.first_error.unwrap_or_default()
        );
    }
    Ok(interrupt::signalled_exit_code().map_or(ExitCode::SUCCESS, ExitCode::from))
}
