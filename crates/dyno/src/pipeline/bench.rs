//! `dyno pipeline bench`: the reference leader pipeline under load, its summary, its
//! diagnosis, and `--sweep` over tile counts.

use crate::db::{self, StoreArgs};
use crate::{build_info, interrupt};
use anyhow::Context as _;
use clap::Args;
use dyno_pipeline::{
    BenchConfig, BenchOptions, BenchOverrides, BenchSession, Invocation, Progress, Sinks, Sweep,
};
use dyno_tiles::node_log::NodeLog;
use dyno_tiles::node_metrics::NodeMetrics;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use super::{parse_seconds_or_zero, SummaryFormat};

/// Arguments of `dyno pipeline bench`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["config", "workload"])))]
pub struct BenchArgs {
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

impl BenchArgs {
    /// The same arguments run as a node (`dyno node --workload ...`): until Ctrl-C or
    /// SIGTERM, or for `--duration` when one was given.
    pub fn into_node(mut self) -> BenchArgs {
        self.duration.get_or_insert(Duration::ZERO);
        self
    }

    /// The measured window: `--duration`, else the bench's 10 s.
    fn window(&self) -> Duration {
        self.duration.unwrap_or(Duration::from_secs(10))
    }
}

/// The config the arguments name (file or built-in workload) with their overrides,
/// and its origin for messages.
fn config(a: &BenchArgs) -> anyhow::Result<(BenchConfig, String)> {
    Ok(BenchConfig::resolve(&BenchOverrides {
        config: a.config.clone(),
        workload: a.workload.clone(),
        name: a.name.clone(),
        rate: a.rate,
        extra_work_per_tx: a.extra_work_per_tx,
        metrics_listen: a.metrics_listen.clone(),
        need_metrics: a.serve.is_some(),
    })?)
}

/// Runs `dyno pipeline bench`.
pub fn run(a: BenchArgs) -> anyhow::Result<ExitCode> {
    let (cfg, origin) = config(&a)?;
    let online = dyno_tango::sys::online_cpus()?;
    let cfgs = dyno_pipeline::sweep_configs(&cfg, a.sweep.as_ref(), &origin, &online)?;
    build_info::guard()?;
    super::clear_dead_workspaces(cfg.workspace.dir.as_deref());
    let mut log = match &a.node_log {
        Some(p) => Some(NodeLog::open(p).with_context(|| format!("--node-log {}", p.display()))?),
        None => None,
    };
    let node_metrics = Arc::new(NodeMetrics::default());
    let _server = match &cfg.metrics.listen {
        Some(addr) => {
            let node = Some(Arc::clone(&node_metrics));
            let s = super::serve_metrics(addr, &cfg.workspace, node, &origin)?;
            if let Some(listen) = a.serve {
                let watch = vec![format!("http://{}/metrics", s.addr())];
                crate::serve::start_beside(listen, &a.store.db, watch)?;
            }
            Some(s)
        }
        None => None,
    };
    let stop = interrupt::stop_flag();
    let opts = BenchOptions {
        duration: a.window(),
        audit: false,
        verify_ledger: !a.no_ledger_check,
    };
    let session = BenchSession::new(invocation(&a));
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
            SummaryFormat::Json => println!(
                "{}",
                serde_json::to_string_pretty(&serde_json::to_value(run.document())?)?
            ),
            SummaryFormat::Table => {
                print!("{}", dyno_pipeline::summary_text(&run.report, run.run_id))
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
        print!("{}", dyno_pipeline::sweep_table(&rows));
    }
    if failed_check {
        eprintln!(
            "error: a correctness check failed (conservation, fates or ledger); see the summary"
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// A bench's event on stderr, ignoring a closed stderr (a node's output piped into
/// `head`, say) instead of panicking in the middle of a run.
fn show_progress(p: Progress) {
    if let Some(line) = dyno_pipeline::progress_line(&p) {
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), "{line}");
    }
}

/// How this bench was asked for, stored with each run.
fn invocation(a: &BenchArgs) -> Invocation {
    Invocation {
        config: a.config.clone(),
        workload: a.workload.clone(),
        window: a.window(),
        command_line: std::env::args().collect(),
        tool_version: build_info::describe(),
        host: dyno_proc::host::probe(std::path::Path::new(".")),
    }
}
