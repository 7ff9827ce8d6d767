//! The reference leader pipeline (verify, dedup, pack, bank, poh, store) under its
//! in-process load: the run `dyno pipeline bench` measures for a window and `dyno node`
//! (no subcommand) runs until stopped, as `dyno compare` drives it. The flags both take
//! ([`LeaderArgs`]), the run, the tiles' metrics endpoint and the clearing of killed
//! runs' workspaces (the last two `dyno pipeline run` uses too) live here, in neither
//! command's module: each command says how long its run lasts ([`Window`]) and adds
//! only its own flags.

use crate::cli::{parse_seconds_or_zero, SummaryFormat};
use crate::db::{self, StoreArgs};
use crate::{build_info, interrupt};
use anyhow::Context as _;
use clap::Args;
use dyno_pipeline::{
    BenchConfig, BenchOptions, BenchOverrides, BenchSession, Invocation, PipelineEndpoint,
    Progress, Sinks, Sweep,
};
use dyno_tango::config::WorkspaceConfig;
use dyno_tiles::node_log::NodeLog;
use dyno_tiles::node_metrics::NodeMetrics;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// The flags of a leader pipeline run under in-process load, alike for `dyno pipeline
/// bench` and `dyno node`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["config", "workload"])))]
pub struct LeaderArgs {
    /// Bench config (TOML); see examples/pipeline/leader-2core.toml.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// A built-in fixed-rate workload instead of a config: `value` (transfers) or
    /// `script` (compute-heavy transactions, small blocks). See docs/pipeline-tuning.md, section 11.
    #[arg(long, value_name = "NAME")]
    workload: Option<String>,
    /// Workspace name (overrides the config's or workload's workspace.name), so that two
    /// nodes can run on one machine at once.
    #[arg(long, value_name = "NAME")]
    name: Option<String>,
    /// Transactions per second offered (overrides the config's or workload's rate).
    #[arg(long, value_name = "TPS")]
    rate: Option<u64>,
    /// Length of the measured window; 0 = run as a node until Ctrl-C or SIGTERM. Default:
    /// 10 s for `dyno pipeline bench`; `dyno node` runs until stopped unless given.
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds_or_zero)]
    duration: Option<Duration>,
    /// Append the node log to FILE as JSON lines: one line per second (TPS, latency
    /// centiles) and one per block (stage timings). `dyno compare` reads it.
    #[arg(long, value_name = "FILE")]
    node_log: Option<PathBuf>,
    /// Serve the tiles' Prometheus metrics on ADDR (e.g. 127.0.0.1:7932; overrides the
    /// config's metrics.listen).
    #[arg(long, value_name = "ADDR")]
    metrics_listen: Option<String>,
    /// Also serve the results store and a live view of this bench (tiles, TPS) on ADDR,
    /// as `dyno serve --watch` would; the metrics endpoint it watches is started on a free
    /// loopback port when --metrics-listen is not given.
    #[arg(long, value_name = "ADDR", value_parser = crate::serve::parse_listen)]
    serve: Option<std::net::SocketAddr>,
    /// Run one bench per layout, e.g. `verify=1..2,bank=1..2`, and print a TPS table.
    #[arg(long, value_name = "SPEC", value_parser = Sweep::parse)]
    sweep: Option<Sweep>,
    /// SHA-256 rounds of extra work per executed transaction (overrides the config's
    /// `bank.extra_work_per_tx`): a known slowdown that changes no state, for power studies.
    #[arg(long, value_name = "N")]
    extra_work_per_tx: Option<u64>,
    /// Skip re-hashing the ledger after the run.
    #[arg(long)]
    no_ledger_check: bool,
    /// Output format of the summary.
    #[arg(long, value_enum, default_value = "table")]
    format: SummaryFormat,
    #[command(flatten)]
    store: StoreArgs,
}

/// How long a run lasts when `--duration` is not given: the command's own default.
#[derive(Debug, Clone, Copy)]
pub enum Window {
    /// A measured window of this length (`dyno pipeline bench`: 10 s).
    Measured(Duration),
    /// Until Ctrl-C or SIGTERM (`dyno node`).
    UntilStopped,
}

impl LeaderArgs {
    /// The measured window: `--duration`, else the command's default (zero: until
    /// stopped).
    fn window(&self, default: Window) -> Duration {
        self.duration.unwrap_or(match default {
            Window::Measured(d) => d,
            Window::UntilStopped => Duration::ZERO,
        })
    }

    /// The config the arguments name (file or built-in workload) with their overrides,
    /// and its origin for messages.
    fn config(&self) -> anyhow::Result<(BenchConfig, String)> {
        Ok(BenchConfig::resolve(&BenchOverrides {
            config: self.config.clone(),
            workload: self.workload.clone(),
            name: self.name.clone(),
            rate: self.rate,
            extra_work_per_tx: self.extra_work_per_tx,
            metrics_listen: self.metrics_listen.clone(),
            need_metrics: self.serve.is_some(),
        })?)
    }

    /// How this run was asked for, stored with each of its runs.
    fn invocation(&self, window: Duration) -> Invocation {
        Invocation {
            config: self.config.clone(),
            workload: self.workload.clone(),
            window,
            command_line: std::env::args().collect(),
            tool_version: build_info::describe(),
            host: dyno_proc::host::probe(std::path::Path::new(".")),
        }
    }
}

/// Runs the leader pipeline under its load: every layout of `--sweep` (or the one
/// config) for the window, each summary printed and stored; exits 1 when a correctness
/// check failed.
pub fn run(a: LeaderArgs, default: Window) -> anyhow::Result<ExitCode> {
    let (cfg, origin) = a.config()?;
    let online = dyno_tango::sys::online_cpus()?;
    let cfgs = dyno_pipeline::sweep_configs(&cfg, a.sweep.as_ref(), &origin, &online)?;
    build_info::guard()?;
    clear_dead_workspaces(cfg.workspace.dir.as_deref());
    let mut log = match &a.node_log {
        Some(p) => Some(NodeLog::open(p).with_context(|| format!("--node-log {}", p.display()))?),
        None => None,
    };
    let node_metrics = Arc::new(NodeMetrics::default());
    let _server = match &cfg.metrics.listen {
        Some(addr) => {
            let node = Some(Arc::clone(&node_metrics));
            let s = serve_metrics(addr, &cfg.workspace, node, &origin)?;
            if let Some(listen) = a.serve {
                let watch = vec![format!("http://{}/metrics", s.addr())];
                crate::serve::start_beside(listen, &a.store.db, watch)?;
            }
            Some(s)
        }
        None => None,
    };
    let stop = interrupt::stop_flag();
    let window = a.window(default);
    let opts = BenchOptions {
        duration: window,
        audit: false,
        verify_ledger: !a.no_ledger_check,
    };
    let session = BenchSession::new(a.invocation(window));
    let mut rows = Vec::new();
    let mut failed_check = false;
    for c in &cfgs {
        // A busy machine moves the figures; the session says so in the summary.
        let busy = dyno_proc::host::cpu_busy_fraction(Duration::from_millis(300));
        let sinks = Sinks {
            log: log.as_mut(),
            metrics: Some(&node_metrics),
        };
        let mut run = session
            .run(c, &opts, stop, busy, sinks, &mut show_progress)
            .with_context(|| format!("bench of {origin}"))?;
        if let Some(mut store) = db::open_for_writing(&a.store)? {
            session.store(&mut store, c, &mut run)?;
        }
        failed_check |= run.report.check_failed();
        match a.format {
            // Through a Value, as every JSON document dyno prints: keys in order.
            SummaryFormat::Json => outln!(
                "{}",
                serde_json::to_string_pretty(&serde_json::to_value(run.document())?)?
            )?,
            SummaryFormat::Table => {
                out!("{}", dyno_pipeline::summary_text(&run.report, run.run_id))?
            }
        }
        rows.push((
            c.layout.verify_tile_count,
            c.layout.bank_tile_count,
            run.report,
        ));
        if stop.load(std::sync::atomic::Ordering::SeqCst) {
            break;
        }
    }
    if a.sweep.is_some() && a.format == SummaryFormat::Table {
        out!("{}", dyno_pipeline::sweep_table(&rows))?;
    }
    if failed_check {
        errln!(
            "error: a correctness check failed (conservation, fates or ledger); see the summary"
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// A run's event on stderr, ignoring a closed stderr (a node's output piped into
/// `head`, say) instead of panicking in the middle of a run.
fn show_progress(p: Progress) {
    if let Some(line) = dyno_pipeline::progress_line(&p) {
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), "{line}");
    }
}

/// Removes the workspaces that pipelines killed outright left in `dir` (their shared
/// memory stays until then), saying which.
pub fn clear_dead_workspaces(dir: Option<&std::path::Path>) {
    for stale in dyno_tango::workspace::clear_stale(dir) {
        errln!(
            "note: removed {} ({} MiB of shared memory), left by a pipeline (pid {}) that was killed",
            stale.path.display(),
            stale.bytes >> 20,
            stale.pid
        );
    }
}

/// Serves the tiles' metrics of workspace `ws` (and the node's, when given) on `addr`,
/// saying where; an error names `metrics.listen` of `origin`.
pub fn serve_metrics(
    addr: &str,
    ws: &WorkspaceConfig,
    node: Option<Arc<NodeMetrics>>,
    origin: &str,
) -> anyhow::Result<PipelineEndpoint> {
    let s = PipelineEndpoint::start(addr, &ws.name, ws.dir.clone(), node, build_info::LABELS)
        .with_context(|| format!("{origin}: metrics.listen = \"{addr}\""))?;
    errln!("metrics: http://{}/metrics", s.addr());
    Ok(s)
}
