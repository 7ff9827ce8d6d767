//! `dyno pipeline bench`: the reference leader pipeline under load, its summary, its
//! diagnosis, and `--sweep` over tile counts.

use crate::db::{self, StoreArgs};
use crate::{build_info, interrupt};
use anyhow::Context as _;
use clap::Args;
use dyno_pipeline::bench::{BenchReport, Latency};
use dyno_pipeline::{BenchConfig, BenchOptions, BenchSession, Invocation, Progress};
use dyno_tiles::node_log::NodeLog;
use dyno_tiles::node_metrics::NodeMetrics;
use std::fmt::Write as _;
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
    #[arg(long, value_name = "SPEC", value_parser = parse_sweep)]
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

/// Tile counts to sweep: `(kind, low, high)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sweep(Vec<(String, usize, usize)>);

fn parse_sweep(s: &str) -> Result<Sweep, String> {
    let mut out = Vec::new();
    for part in s.split(',') {
        let (kind, range) = part
            .split_once('=')
            .ok_or_else(|| format!("`{part}`: expected KIND=LOW..HIGH, e.g. verify=1..2"))?;
        if kind != "verify" && kind != "bank" {
            return Err(format!(
                "`{kind}`: only verify and bank tile counts can be swept"
            ));
        }
        let (lo, hi) = range.split_once("..").unwrap_or((range, range));
        let num = |x: &str| {
            x.parse::<usize>()
                .ok()
                .filter(|n| (1..=64).contains(n))
                .ok_or_else(|| format!("`{part}`: counts must be numbers in 1..=64"))
        };
        let (lo, hi) = (num(lo)?, num(hi)?);
        if lo > hi {
            return Err(format!("`{part}`: {lo} > {hi}"));
        }
        out.push((kind.to_string(), lo, hi));
    }
    Ok(Sweep(out))
}

impl Sweep {
    /// Every (verify, bank) pair, starting from the config's counts.
    fn layouts(&self, base: (usize, usize)) -> Vec<(usize, usize)> {
        let range = |k: &str, d: usize| {
            self.0
                .iter()
                .find(|(kind, ..)| kind == k)
                .map_or(d..=d, |&(_, lo, hi)| lo..=hi)
        };
        range("verify", base.0)
            .flat_map(|v| range("bank", base.1).map(move |b| (v, b)))
            .collect()
    }
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
    let (mut cfg, origin) = match (&a.config, &a.workload) {
        (Some(path), _) => (BenchConfig::from_file(path)?, path.display().to_string()),
        (None, Some(name)) => (
            BenchConfig::workload(name, a.rate)?,
            format!("workload {name}"),
        ),
        (None, None) => unreachable!("clap requires --config or --workload"),
    };
    // A built-in workload already took --rate (and sized its pre-signed pool by it).
    if let (Some(rate), Some(_)) = (a.rate, &a.config) {
        cfg.bench.rate = rate;
    }
    if let Some(name) = &a.name {
        cfg.workspace.name = name.clone();
    }
    if let Some(n) = a.extra_work_per_tx {
        cfg.bank.extra_work_per_tx = n;
        cfg.validate("--extra-work-per-tx")?;
    }
    if let Some(addr) = &a.metrics_listen {
        cfg.metrics.listen = Some(addr.clone());
    }
    if a.serve.is_some() && cfg.metrics.listen.is_none() {
        cfg.metrics.listen = Some("127.0.0.1:0".into());
    }
    Ok((cfg, origin))
}

/// One config per layout of the sweep (or the one layout), every one validated (config
/// and affinity) before the first runs.
fn layouts(a: &BenchArgs, cfg: &BenchConfig, origin: &str) -> anyhow::Result<Vec<BenchConfig>> {
    let base = (cfg.layout.verify_tile_count, cfg.layout.bank_tile_count);
    let layouts = match &a.sweep {
        Some(s) => s.layouts(base),
        None => vec![base],
    };
    let online = dyno_tango::sys::online_cpus()?;
    let mut cfgs = Vec::new();
    for &(v, b) in &layouts {
        let mut c = cfg.clone();
        c.layout.verify_tile_count = v;
        c.layout.bank_tile_count = b;
        c.validate(origin)?;
        c.tango_layout()
            .plan(&online)
            .with_context(|| format!("{origin}: layout verify={v}, bank={b}"))?;
        cfgs.push(c);
    }
    Ok(cfgs)
}

/// Runs `dyno pipeline bench`.
pub fn run(a: BenchArgs) -> anyhow::Result<ExitCode> {
    let (cfg, origin) = config(&a)?;
    let cfgs = layouts(&a, &cfg, &origin)?;
    if cfg!(debug_assertions) && std::env::var_os("DYNO_ALLOW_DEBUG_BUILD").is_none() {
        anyhow::bail!(
            "this is a debug build of dyno: its pipeline figures would be meaningless; \
             build with `cargo build --release -p dyno` (or set DYNO_ALLOW_DEBUG_BUILD=1 to try anyway)"
        );
    }
    let mut log = match &a.node_log {
        Some(p) => Some(NodeLog::open(p).with_context(|| format!("--node-log {}", p.display()))?),
        None => None,
    };
    let node_metrics = Arc::new(NodeMetrics::default());
    let _server = match &cfg.metrics.listen {
        Some(addr) => {
            let s = super::http::MetricsServer::start(
                addr,
                &cfg.workspace.name,
                cfg.workspace.dir.clone(),
                Some(Arc::clone(&node_metrics)),
            )
            .with_context(|| format!("{origin}: metrics.listen = \"{addr}\""))?;
            eprintln!("metrics: http://{}/metrics", s.addr());
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
        let mut on_progress = |p: Progress| {
            node_metrics.observe(&p);
            // Seconds go to the log and the terminal, blocks to the log only.
            let logged = log.as_mut().is_some_and(|l| l.write(&p));
            if !logged || matches!(p, Progress::Second { .. }) {
                show_progress(p);
            }
        };
        let mut run = session
            .run(c, &opts, stop, busy, &mut on_progress)
            .with_context(|| format!("bench of {origin}"))?;
        if let Some(e) = log.as_mut().and_then(NodeLog::take_error) {
            run.report.warnings.insert(0, e);
        }
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
            SummaryFormat::Table => print!("{}", summary(&run.report, run.run_id)),
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
        print!("{}", sweep_table(&rows));
    }
    if failed_check {
        eprintln!(
            "error: a correctness check failed (conservation, fates or ledger); see the summary"
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// `eprintln!` that ignores a closed stderr (a node's output piped into `head`, say)
/// instead of panicking in the middle of a run.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

fn show_progress(p: Progress) {
    match p {
        Progress::Presigning { count } => say!(
            "signing {count} transactions before the measured window (benchg signs live once they run out)"
        ),
        Progress::Started { tiles, workspace } => say!(
            "running {} tiles ({}); watch with: dyno pipeline monitor --name {workspace}",
            tiles.len(),
            tiles.join(" ")
        ),
        Progress::Second { t, tps, .. } => say!("{t:6.1} s  {tps:>10.0} TPS"),
        Progress::Block { .. } => {}
        Progress::Draining => say!("stopping benchg; draining the pipeline"),
        Progress::Warning(w) => say!("warning: {w}"),
    }
}

fn ms(ns: u64) -> String {
    format!("{:.2} ms", ns as f64 / 1e6)
}

fn latency(l: &Latency) -> String {
    if l.count == 0 {
        return "no samples".into();
    }
    format!(
        "p50 {}, p90 {}, p99 {}, max {}",
        ms(l.p50),
        ms(l.p90),
        ms(l.p99),
        ms(l.max)
    )
}

fn summary(r: &BenchReport, run_id: Option<i64>) -> String {
    let mut o = String::new();
    let f = &r.fates;
    let _ = writeln!(
        o,
        "layout: {} verify, {} bank ({} tiles on {} CPUs online), window {:.1} s, drained in {:.2} s",
        r.verify_tiles,
        r.bank_tiles,
        r.tiles.len(),
        r.cpus_online,
        r.window_s,
        r.drain_s
    );
    let _ = writeln!(
        o,
        "TPS (executed + failed, per second): median {:.0}, min {:.0}, max {:.0} over {} s; whole window {:.0}",
        r.tps.median,
        r.tps.min,
        r.tps.max,
        r.tps.per_second.len(),
        r.tps.overall
    );
    let _ = writeln!(
        o,
        "latency generation -> execution: {}",
        latency(&r.latency_exec)
    );
    let _ = writeln!(
        o,
        "latency generation -> PoH:       {}",
        latency(&r.latency_poh)
    );
    let _ = writeln!(
        o,
        "fates: {} generated = {} executed + {} failed + {} invalid signature + {} duplicate + {} overrun at ingress + {} dropped by pack + {} in flight at shutdown",
        f.generated, f.executed, f.failed, f.invalid_signature, f.duplicate, f.overrun_ingress, f.pack_dropped, f.in_flight
    );
    let _ = writeln!(
        o,
        "conservation: balances + fees = {} (genesis {}): {}",
        r.final_total,
        r.genesis_total,
        if r.conserved { "ok" } else { "VIOLATED" }
    );
    match (&r.ledger, &r.ledger_check) {
        (None, _) => {
            let _ = writeln!(o, "ledger: store disabled");
        }
        (Some(p), Some(Ok(s))) => {
            let _ = writeln!(
                o,
                "ledger: {} ({} entries: {} ticks, {} microblocks, {} transactions); hash chain verifies from genesis",
                p.display(),
                s.entries,
                s.ticks,
                s.microblocks,
                s.records
            );
        }
        (Some(p), Some(Err(e))) => {
            let _ = writeln!(o, "ledger: {}: CHAIN DOES NOT VERIFY: {e}", p.display());
        }
        (Some(p), None) => {
            let _ = writeln!(o, "ledger: {} (not checked)", p.display());
        }
    }
    let _ = writeln!(
        o,
        "poh: {:.2} M hashes/s while hashing, {} ticks, {} slots",
        r.poh_hash_rate / 1e6,
        r.poh_ticks,
        r.poh_slots
    );
    let _ = match r.pool_exhausted_after_s {
        Some(s) => writeln!(
            o,
            "benchg: {} pre-signed before the window; the pool ran out after {s:.1} s and benchg signed live after that",
            r.presigned
        ),
        None => writeln!(o, "benchg: {} pre-signed before the window; signing never competed with the tiles", r.presigned),
    };
    let _ = writeln!(o, "bottleneck: {}", r.diagnosis.summary);
    for n in &r.diagnosis.notes {
        let _ = writeln!(o, "  note: {n}");
    }
    for w in &r.warnings {
        let _ = writeln!(o, "  warning: {w}");
    }
    let _ = writeln!(
        o,
        "{:<10} {:>7} {:>7} {:>7} {:>7} {:>7}",
        "tile", "finish", "backp", "wait", "hkeep", "ovrn"
    );
    for t in &r.window.tiles {
        let s = t.time_ns.shares();
        let _ = writeln!(
            o,
            "{:<10} {:>6.1}% {:>6.1}% {:>6.1}% {:>6.1}% {:>6.1}%",
            t.name,
            100.0 * s[7],
            100.0 * s[1],
            100.0 * s[2],
            100.0 * s[0],
            100.0 * (s[3] + s[4])
        );
    }
    if let Some(id) = run_id {
        let _ = writeln!(o, "Saved as run {id} (dyno results show {id}).");
    }
    o
}

fn sweep_table(rows: &[(usize, usize, BenchReport)]) -> String {
    let mut o = String::from("\nverify  bank  TPS median  TPS min  TPS max  bottleneck\n");
    for (v, b, r) in rows {
        let _ = writeln!(
            o,
            "{v:>6}  {b:>4}  {:>10.0}  {:>7.0}  {:>7.0}  {}",
            r.tps.median, r.tps.min, r.tps.max, r.diagnosis.bottleneck
        );
    }
    o
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweeps_parse_and_expand() {
        let s = parse_sweep("verify=1..2,bank=1..2").unwrap();
        assert_eq!(s.layouts((1, 1)), [(1, 1), (1, 2), (2, 1), (2, 2)]);
        assert_eq!(parse_sweep("verify=3").unwrap().layouts((1, 2)), [(3, 2)]);
        for bad in ["pack=1..2", "verify=2..1", "verify=0..1", "verify"] {
            assert!(parse_sweep(bad).is_err(), "{bad}");
        }
    }
}
