//! `dyno node`: the reference node. `dyno node run` joins a network (genesis file, node
//! config, peers, QUIC ingress); `dyno node genesis` writes the shared genesis file;
//! `dyno node --workload value` (no subcommand) is the single-process node with its
//! load generator inside, run until stopped ([`crate::leader`], whose run `dyno pipeline
//! bench` measures for a window; `dyno compare` drives it).

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{Args, Subcommand};
use dyno_node::config::{LoadedConfig, NodeConfig};
use dyno_node::genesis::{parse_validators, GenesisFile};
use dyno_node::service::RunningNode;

use crate::cli::{parse_seconds_or_zero, SummaryFormat};
use crate::interrupt;
use crate::leader::{LeaderArgs, Window};

/// Arguments of `dyno node`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct NodeArgs {
    #[command(subcommand)]
    cmd: Option<NodeCommand>,
    /// Without a subcommand: the single-process node (in-process load generator), with
    /// the leader pipeline's flags, run until Ctrl-C or SIGTERM unless `--duration`.
    #[command(flatten)]
    local: LeaderArgs,
}

/// `dyno node` subcommands.
#[derive(Debug, Subcommand)]
pub enum NodeCommand {
    /// Run a node on the network its config file names (see docs/node.md).
    Run(RunArgs),
    /// Write a genesis file that the nodes and `dyno load` share.
    Genesis(GenesisArgs),
}

/// Arguments of `dyno node run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Node config (TOML); see examples/node/n1.toml.
    #[arg(long, value_name = "FILE")]
    config: PathBuf,
    /// Genesis file (overrides the config's `genesis`).
    #[arg(long, value_name = "FILE")]
    genesis: Option<PathBuf>,
    /// Peer listen address (overrides `peer_listen`).
    #[arg(long, value_name = "ADDR")]
    peer_listen: Option<SocketAddr>,
    /// QUIC ingress address (overrides `ingress_listen`).
    #[arg(long, value_name = "ADDR")]
    ingress_listen: Option<SocketAddr>,
    /// Metrics and /ready address (overrides `metrics_listen`).
    #[arg(long, value_name = "ADDR")]
    metrics_listen: Option<SocketAddr>,
    /// Event log (overrides `node_log`).
    #[arg(long, value_name = "FILE")]
    node_log: Option<PathBuf>,
    /// How this node forges its blocks (overrides `forge`): with the leader pipeline's
    /// tiles (the default) or with one sequential bank (the baseline).
    #[arg(long, value_enum)]
    forge: Option<ForgeArg>,
    /// When a leader cuts its block (overrides `forge_at`): across the whole slot (the
    /// default) or from the mempool at the slot's start, announced at once (Cardano's way).
    #[arg(long, value_enum)]
    forge_at: Option<ForgeAtArg>,
    /// Stop after this many seconds; 0 = until Ctrl-C or SIGTERM.
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds_or_zero, default_value = "0")]
    duration: Duration,
    /// No line per second on stderr.
    #[arg(long)]
    quiet: bool,
    /// Output format of the summary at the end.
    #[arg(long, value_enum, default_value = "table")]
    format: SummaryFormat,
}

/// `--forge`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum ForgeArg {
    /// verify -> dedup -> pack -> bank -> poh tiles.
    Tiles,
    /// One sequential bank on the node's loop.
    Sequential,
}

/// `--forge-at`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum ForgeAtArg {
    /// Fed across the slot up to a margin before its end.
    WholeSlot,
    /// The slot start's snapshot, announced as soon as it is forged.
    SlotStart,
}

/// Arguments of `dyno node genesis`.
#[derive(Debug, Args)]
pub struct GenesisArgs {
    /// File to write.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// Validators and stakes: `n1=1,n2=1` (repeatable).
    #[arg(
        long,
        value_name = "ID=STAKE,...",
        required = true,
        value_delimiter = ','
    )]
    validators: Vec<String>,
    /// Network name.
    #[arg(long, default_value = "devnet")]
    network: String,
    /// Seed of the account keys and the leader schedule.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Funded accounts.
    #[arg(long, default_value_t = 1024)]
    accounts: usize,
    /// Starting balance of each account.
    #[arg(long, default_value_t = dyno_pipeline::bank::DEFAULT_BALANCE)]
    balance: u64,
    /// Slot length in ms.
    #[arg(long, default_value_t = 1000)]
    slot_ms: u64,
    /// Most transactions in a block, for every node of the network (a node's config may
    /// lower it for its own blocks; followers refuse a block above it).
    #[arg(long, value_name = "N", default_value_t = dyno_node::genesis::DEFAULT_MAX_BLOCK_TXS,
          value_parser = clap::value_parser!(u32).range(1..=dyno_node::genesis::MAX_MAX_BLOCK_TXS as i64))]
    max_block_txs: u32,
    /// Slot 0 starts this many seconds from now (at most a day).
    #[arg(long, value_name = "SECONDS", default_value_t = 10,
          value_parser = clap::value_parser!(u64).range(0..=86_400))]
    start_in: u64,
    /// Replace an existing file.
    #[arg(long)]
    force: bool,
}

/// Runs `dyno node`.
pub fn run(a: NodeArgs) -> anyhow::Result<ExitCode> {
    match a.cmd {
        Some(NodeCommand::Run(r)) => run_node(r),
        Some(NodeCommand::Genesis(g)) => write_genesis(g),
        None => crate::leader::run(a.local, Window::UntilStopped),
    }
}

fn write_genesis(a: GenesisArgs) -> anyhow::Result<ExitCode> {
    let now_ms = dyno_node::log::now_ns() / 1_000_000;
    let g = GenesisFile {
        network: a.network,
        seed: a.seed,
        accounts: a.accounts,
        balance: a.balance,
        slot_ms: a.slot_ms,
        genesis_time_ms: now_ms + a.start_in * 1000,
        max_block_txs: a.max_block_txs,
        validators: parse_validators(&a.validators)?,
    };
    g.write_new(&a.out, a.force)?;
    outln!(
        "{}: network {}, {} validators, slot 0 starts in {} s, genesis hash {}",
        a.out.display(),
        g.network,
        g.validators.len(),
        a.start_in,
        g.hash()
    )?;
    Ok(ExitCode::SUCCESS)
}

fn load_config(a: &RunArgs) -> anyhow::Result<(LoadedConfig, Arc<dyno_node::genesis::Genesis>)> {
    let mut lc = NodeConfig::from_file(&a.config)?;
    let c = &mut lc.config;
    if let Some(g) = &a.genesis {
        c.genesis = g.clone();
    }
    if let Some(x) = a.peer_listen {
        c.peer_listen = x;
    }
    if a.ingress_listen.is_some() {
        c.ingress_listen = a.ingress_listen;
    }
    if a.metrics_listen.is_some() {
        c.metrics_listen = a.metrics_listen;
    }
    if a.node_log.is_some() {
        c.node_log = a.node_log.clone();
    }
    match a.forge {
        Some(ForgeArg::Tiles) => c.forge = dyno_node::node::ForgeMode::Tiles,
        Some(ForgeArg::Sequential) => c.forge = dyno_node::node::ForgeMode::Sequential,
        None => {}
    }
    match a.forge_at {
        Some(ForgeAtArg::WholeSlot) => c.forge_at = dyno_node::node::ForgeAt::WholeSlot,
        Some(ForgeAtArg::SlotStart) => c.forge_at = dyno_node::node::ForgeAt::SlotStart,
        None => {}
    }
    let genesis = Arc::new(GenesisFile::from_file(&c.genesis)?.load());
    lc.check(&genesis)?;
    Ok((lc, genesis))
}

fn run_node(a: RunArgs) -> anyhow::Result<ExitCode> {
    let (lc, genesis) = load_config(&a)?;
    // No signal thread: this loop waits for them (a cluster runs thousands of nodes).
    let stop = interrupt::stop_flag_waited();
    let cfg = &lc.config;
    let node = RunningNode::start(cfg, genesis.clone())?;
    errln!(
        "node {} of {} (genesis {:.16}): peers on {}, ingress {}, metrics {}, log {}",
        cfg.id,
        genesis.file.network,
        genesis.hash,
        node.peer_addr,
        node.ingress_addr.map_or("off".into(), |x| x.to_string()),
        node.metrics_addr.map_or("off".into(), |x| x.to_string()),
        cfg.node_log
            .as_ref()
            .map_or("off".into(), |p| p.display().to_string()),
    );
    let t0 = Instant::now();
    let mut next = Duration::from_secs(1);
    while !stop.load(Ordering::Relaxed) && (a.duration.is_zero() || t0.elapsed() < a.duration) {
        // Woken by a signal, the next status line, or the end of --duration; a quiet node
        // without a duration sleeps until a signal comes.
        let until_status = (!a.quiet).then(|| next.saturating_sub(t0.elapsed()));
        let until_end = (!a.duration.is_zero()).then(|| a.duration.saturating_sub(t0.elapsed()));
        interrupt::wait_for_signals(match (until_status, until_end) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, y) => x.or(y),
        });
        if t0.elapsed() >= next {
            next += Duration::from_secs(1);
            if let (false, Some(s)) = (a.quiet, node.status()) {
                let rejected: u64 = s.counters.rejected.values().sum();
                errln!(
                    "t={:>4.0}s height {} tip {:.12} forged {} (tiles {}) adopted {} rejected {} mempool {} executed {}",
                    t0.elapsed().as_secs_f64(),
                    s.height,
                    s.tip,
                    s.counters.forged,
                    s.counters.forged_by_tiles,
                    s.counters.adopted,
                    rejected,
                    s.mempool,
                    s.fates.executed + s.fates.failed,
                );
            }
        }
    }
    let ingress = node.ingress_counters();
    let s = node.stop();
    let mut out = crate::out::stdout();
    match a.format {
        SummaryFormat::Json => {
            let v = serde_json::json!({"schema": "dyno.node.summary/1", "status": s, "ingress": ingress.map(|c| serde_json::json!({
                "accepted": c.accepted, "dropped_full": c.dropped_full,
                "malformed": c.malformed, "oversized": c.oversized,
                "connections": c.connections, "unknown_clients": c.unknown_clients,
            }))});
            writeln!(out, "{v}")?;
        }
        SummaryFormat::Table => {
            let f = &s.fates;
            writeln!(
                out,
                "node {}: height {}, tip {}, state {}\nblocks: forged {} ({} by the tiles, {} by the sequential bank after the tiles failed), adopted {}, rejected {:?}\nclient transactions: received {}, executed {}, failed {}, duplicate {}, invalid signature {}, malformed {}, dropped full {}, in flight {}",
                cfg.id, s.height, s.tip, s.state_hash, s.counters.forged,
                s.counters.forged_by_tiles, s.counters.forge_fallbacks, s.counters.adopted,
                s.counters.rejected, f.received, f.executed, f.failed, f.duplicate,
                f.invalid_signature, f.malformed, f.dropped_full, f.in_flight
            )?;
            if let Some(why) = &s.counters.last_forge_fallback {
                writeln!(out, "last tile forge failure: {why}")?;
            }
            if let Some(c) = ingress {
                writeln!(
                    out,
                    "ingress: accepted {}, dropped full {} (refused before verification: mempool full {}, queue full {}), malformed {}, oversized {}, unknown clients {}",
                    c.accepted, c.dropped_full,
                    s.counters.ingress_refused.get("mempool_full").copied().unwrap_or(0),
                    s.counters.ingress_refused.get("queue_full").copied().unwrap_or(0),
                    c.malformed, c.oversized, c.unknown_clients
                )?;
            }
        }
    }
    Ok(interrupt::signalled_exit_code().map_or(ExitCode::SUCCESS, ExitCode::from))
}
