//! The bench: builds genesis and the layout in a shared workspace (so `dyno pipeline
//! monitor` can watch it), drives load for the measured window, drains the pipeline,
//! and accounts for every generated transaction.
//!
//! Shutdown is in two steps so that "left in flight" means what it says: benchg stops
//! first, the other tiles run until every link is caught up and pack holds nothing (at
//! most [`DRAIN_LIMIT`]), then they stop. Time shares and link counters cover the
//! measured window only (snapshots at its start and end).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dyno_tango::affinity::AffinityPlan;
use dyno_tango::metrics::TileMetrics;
use dyno_tango::region::Region;
use dyno_tango::snapshot::Snapshot;
use dyno_tango::workspace::{ObjectKind, Workspace, WorkspaceOptions};

use crate::bank::{fund_initial_accounts, Genesis};
use crate::config::BenchConfig;
use crate::diagnosis::diagnose;
use crate::error::{Error, Result};
use crate::report::throughput;
pub use crate::report::{Audit, BenchReport, Fates, Latency, LedgerSummaryView, Throughput};
use dyno_tiles::hist::Histogram;
use dyno_tiles::ledger::verify_ledger;
pub use dyno_tiles::progress::Progress;
use dyno_tiles::tiles::{
    BankStats, Benchg, BenchgStats, DedupStats, PackStats, PohStats, Shared, VerifyStats,
};

mod wiring;
use wiring::{build_stems, start_tiles, Ctl, Finished, Flags, Stems, StopOnUnwind};

/// Longest wait for the pipeline to drain after benchg stops.
pub const DRAIN_LIMIT: Duration = Duration::from_secs(5);

/// How to run.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// Measured window; zero = until `stop` (a node serving a fixed-rate load).
    pub duration: Duration,
    /// Keep per-transaction records for the correctness checks (tests; costs memory).
    pub audit: bool,
    /// Re-hash the ledger after the run to check its chain.
    pub verify_ledger: bool,
}

/// The links are caught up and pack holds nothing.
fn drained(ws: &Workspace, shared: &Shared) -> Option<Vec<u64>> {
    let snap = Snapshot::read(ws);
    let caught_up = snap.consumers.iter().all(|c| {
        snap.links
            .iter()
            .find(|l| l.name == c.link)
            .is_none_or(|l| l.tx_seq == c.rx_seq)
    });
    (caught_up && shared.pack_held.load(Ordering::Relaxed) == 0)
        .then(|| snap.links.iter().map(|l| l.tx_seq).collect())
}

/// Transactions per second one verify tile is planned to take when benchg runs flat out:
/// the bottom of Firedancer's 20-40k per verify tile (a 2-vCPU EPYC VM verifies about 14k
/// on one thread, 5 batch-verify tiles on 16 cores took 27k each). A faster machine can
/// still outrun the pool; the diagnosis then names benchg signing live.
pub const PLANNED_VERIFY_TPS: f64 = 20_000.0;

/// A warning when the pre-signed pool of `presign` transactions will not last a window of
/// `duration_s` seconds: at `rate` when paced, at [`PLANNED_VERIFY_TPS`] per verify tile
/// when flat out (`rate` 0). Once it runs out benchg signs live, competing with the
/// tiles for CPU, and becomes the bottleneck it is meant to measure (a 1M pool ran out
/// inside the window of 5 batch-verify tiles on 16 cores). No warning for a run until
/// stopped (`duration_s` 0).
pub fn pool_shortfall(
    presign: usize,
    rate: u64,
    verify_tiles: usize,
    duration_s: f64,
) -> Option<String> {
    if duration_s <= 0.0 {
        return None;
    }
    let (per_s, how) = if rate > 0 {
        (rate as f64, format!("at bench.rate = {rate}/s"))
    } else {
        (
            PLANNED_VERIFY_TPS * verify_tiles.max(1) as f64,
            format!(
                "flat out with {verify_tiles} verify tile{} (planned at {:.0}k TPS each)",
                if verify_tiles == 1 { "" } else { "s" },
                PLANNED_VERIFY_TPS / 1e3
            ),
        )
    };
    let needed = (per_s * duration_s).ceil() as usize;
    (presign < needed).then(|| {
        format!(
            "the pre-signed pool ({presign}) lasts {:.1} s of the {duration_s:.0} s window {how}: benchg will sign live after that and may become the limit; set bench.presign to at least {needed}",
            presign as f64 / per_s
        )
    })
}

/// Everything a run needs before its tiles start.
struct Prepared {
    online: Vec<usize>,
    plan: AffinityPlan,
    names: Vec<String>,
    genesis: Arc<Genesis>,
    shared: Arc<Shared>,
    ledger_path: Option<PathBuf>,
    ws: Workspace,
    tile_metrics: Vec<Region>,
    stems: Stems,
    pool_warning: Option<String>,
}

/// Checks the layout against the online CPUs, opens the ledger, funds genesis, signs
/// the pool (a warning when it will not last the window) and wires every tile into a
/// fresh workspace.
fn prepare(
    cfg: &BenchConfig,
    opts: &BenchOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<Prepared> {
    let tango = cfg.tango_layout();
    let online = dyno_tango::sys::online_cpus()?;
    let plan = tango.plan(&online)?;
    let ledger_path = cfg.store.enabled.then(|| {
        let dir = cfg.store.dir.clone().unwrap_or_else(std::env::temp_dir);
        dir.join(format!("dyno-ledger-{}.bin", cfg.workspace.name))
    });
    let ledger_file = match &ledger_path {
        Some(p) => Some(std::fs::File::create(p).map_err(|e| Error::Io {
            path: p.clone(),
            source: e,
        })?),
        None => None,
    };
    let genesis: Arc<Genesis> = Arc::new(fund_initial_accounts(
        cfg.genesis.fund_initial_accounts,
        cfg.genesis.balance,
        cfg.genesis.seed,
    ));
    let shared = Arc::new(Shared::new(&genesis, cfg.layout.bank_tile_count));
    progress(Progress::Presigning {
        count: cfg.bench.presign,
    });
    let pool_warning = pool_shortfall(
        cfg.bench.presign,
        cfg.bench.rate,
        cfg.layout.verify_tile_count,
        opts.duration.as_secs_f64(),
    );
    if let Some(w) = &pool_warning {
        progress(Progress::Warning(w.clone()));
    }
    let benchg = Benchg::new(
        &cfg.bench,
        genesis.clone(),
        shared.clone(),
        cfg.genesis.seed,
        opts.audit,
    );
    let mut ws = Workspace::create(&WorkspaceOptions {
        name: cfg.workspace.name.clone(),
        dir: cfg.workspace.dir.clone(),
        size: cfg.workspace.size_mb << 20,
    })?;
    let names = tango.tile_names();
    let mut tile_metrics = Vec::new();
    for t in &names {
        let r = ws.alloc(ObjectKind::TileMetrics, t, TileMetrics::FOOTPRINT)?;
        TileMetrics::new(&r)?;
        tile_metrics.push(r);
    }
    let stems = build_stems(
        cfg,
        &mut ws,
        &tile_metrics,
        benchg,
        &shared,
        genesis.hash,
        ledger_file,
        opts.audit,
    )?;
    Ok(Prepared {
        online,
        plan,
        names,
        genesis,
        shared,
        ledger_path,
        ws,
        tile_metrics,
        stems,
        pool_warning,
    })
}

/// What the measured window saw.
struct Window {
    /// Counters at its start and end.
    start: Snapshot,
    end: Snapshot,
    /// Transactions landed per second, second by second.
    tps: Vec<f64>,
    seconds: f64,
    /// Transactions landed by its end (since the start of the run).
    landed: u64,
    /// Transactions pack held at its end.
    pack_backlog: u64,
}

/// Runs the measured window (for `opts.duration`, or until `stop` or a tile fails),
/// reporting each block and each second.
fn measure(
    ws: &Workspace,
    shared: &Shared,
    cfg: &BenchConfig,
    opts: &BenchOptions,
    stop: &AtomicBool,
    failed: &AtomicBool,
    progress: &mut dyn FnMut(Progress),
) -> Window {
    let t0 = Instant::now();
    let start = Snapshot::read(ws);
    let mut tps = Vec::new();
    let (mut last_t, mut last_n) = (t0, shared.landed.load(Ordering::Relaxed));
    let telemetry = &shared.telemetry;
    let window_origin_s = t0.duration_since(shared.epoch).as_secs_f64();
    let mut last_latency = telemetry.latency.snapshot();
    let store = cfg.store.enabled;
    while (opts.duration.is_zero() || t0.elapsed() < opts.duration)
        && !stop.load(Ordering::Relaxed)
        && !failed.load(Ordering::Relaxed)
    {
        std::thread::sleep(Duration::from_millis(5));
        for block in telemetry.take_blocks(shared.now_ns(), store) {
            progress(Progress::Block {
                t: block.end_ns as f64 / 1e9 - window_origin_s,
                block,
            });
        }
        if last_t.elapsed() >= Duration::from_secs(1) {
            let (now, n) = (Instant::now(), shared.landed.load(Ordering::Relaxed));
            let rate = (n - last_n) as f64 / (now - last_t).as_secs_f64();
            tps.push(rate);
            let lat = telemetry.latency.snapshot();
            progress(Progress::Second {
                t: (now - t0).as_secs_f64(),
                tps: rate,
                latency: Latency::of(&lat.since(&last_latency)),
            });
            (last_t, last_n, last_latency) = (now, n, lat);
        }
    }
    Window {
        end: Snapshot::read(ws),
        start,
        tps,
        seconds: t0.elapsed().as_secs_f64(),
        landed: shared.landed.load(Ordering::Relaxed),
        pack_backlog: shared.pack_held.load(Ordering::Relaxed),
    }
}

/// Stops benchg and waits (at most [`DRAIN_LIMIT`]) until everything is caught up twice
/// in a row, then stops the other tiles; the drain's seconds, and a warning when the
/// pipeline did not drain.
fn drain(ws: &Workspace, shared: &Shared, flags: &Flags) -> (f64, Option<String>) {
    flags.gen_stop.store(true, Ordering::SeqCst);
    let d0 = Instant::now();
    let mut prev: Option<Vec<u64>> = None;
    while d0.elapsed() < DRAIN_LIMIT && !flags.failed.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(3));
        if !flags.gen_done.load(Ordering::SeqCst) {
            continue;
        }
        let now = drained(ws, shared);
        if now.is_some() && now == prev {
            break;
        }
        prev = now;
    }
    let drain_s = d0.elapsed().as_secs_f64();
    let warning = (d0.elapsed() >= DRAIN_LIMIT).then(|| {
        format!(
            "the pipeline did not drain within {} s; what it held is counted as in flight",
            DRAIN_LIMIT.as_secs()
        )
    });
    flags.inner.store(true, Ordering::SeqCst);
    flags.gen_stop.store(true, Ordering::SeqCst);
    (drain_s, warning)
}

/// The tiles' own accounts, once they stopped.
struct TileStats {
    benchg: BenchgStats,
    verify: Vec<VerifyStats>,
    dedup: DedupStats,
    pack: PackStats,
    banks: Vec<BankStats>,
    poh: PohStats,
}

impl Finished {
    /// The first tile that failed, or every tile's stats; the store's write error, if
    /// any, joins `warnings`.
    fn stats(self, warnings: &mut Vec<String>) -> Result<TileStats> {
        let benchg = self.benchg?.into_tile().stats;
        let mut verify = Vec::new();
        for r in self.verify {
            let stem = r?;
            let seq = stem.inputs()[0].consumer.seq();
            let mut t = stem.into_tile();
            t.settle(seq);
            verify.push(t.stats);
        }
        let dedup = self.dedup?.into_tile().stats;
        let pack = self.pack?.into_tile().stats;
        let banks: Vec<BankStats> = self
            .banks
            .into_iter()
            .map(|r| r.map(|s| s.into_tile().stats))
            .collect::<Result<_>>()?;
        let poh = self.poh?.into_tile().stats;
        if let Some(st) = self.store {
            let mut store = st?.into_tile();
            store.flush();
            if let Some(e) = store.error {
                warnings.push(format!("store: {e}"));
            }
        }
        Ok(TileStats {
            benchg,
            verify,
            dedup,
            pack,
            banks,
            poh,
        })
    }
}

/// Every generated transaction by fate; a warning when more fates than transactions
/// were counted.
fn fates(t: &TileStats) -> (Fates, Option<String>) {
    let mut fates = Fates {
        generated: t.benchg.generated,
        executed: t.banks.iter().map(|b| b.executed).sum(),
        failed: t.banks.iter().map(|b| b.failed).sum(),
        invalid_signature: t.verify.iter().map(|v| v.invalid).sum(),
        duplicate: t.dedup.duplicates,
        overrun_ingress: t.verify.iter().map(|v| v.overrun).sum(),
        pack_dropped: t.pack.dropped,
        in_flight: 0,
    };
    fates.in_flight = fates.generated.saturating_sub(fates.settled());
    let warning = (fates.settled() > fates.generated).then(|| {
        format!(
            "accounting error: {} fates for {} generated transactions",
            fates.settled(),
            fates.generated
        )
    });
    (fates, warning)
}

/// Runs the bench of `cfg`: validates everything first (affinity against the online
/// CPUs, the ledger directory), signs the pool, runs for `opts.duration` (or until
/// `stop`), drains, and reports.
pub fn run_bench(
    cfg: &BenchConfig,
    opts: &BenchOptions,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(Progress),
) -> Result<BenchReport> {
    let p = prepare(cfg, opts, progress)?;
    let flags = Flags::default();
    let ctl = Ctl {
        failed: &flags.failed,
    };
    let mut warnings = p.plan.warnings.clone();
    warnings.extend(p.pool_warning);
    let (window, drain_s, finished) = std::thread::scope(|s| {
        // If anything below panics (a progress callback writing to a closed pipe, say),
        // the tiles must still stop, or the scope would wait for them forever.
        let _stop_on_unwind = StopOnUnwind(&[&flags.gen_stop, &flags.inner]);
        let running = start_tiles(s, &ctl, p.stems, &p.plan.slots, &p.tile_metrics, &flags);
        progress(Progress::Started {
            tiles: p.names.clone(),
            workspace: cfg.workspace.name.clone(),
        });
        let window = measure(&p.ws, &p.shared, cfg, opts, stop, &flags.failed, progress);
        progress(Progress::Draining);
        let (drain_s, warning) = drain(&p.ws, &p.shared, &flags);
        warnings.extend(warning);
        (window, drain_s, running.join())
    });
    let stats = finished.stats(&mut warnings)?;
    let (fates, warning) = fates(&stats);
    warnings.extend(warning);
    let fees: u128 = stats.banks.iter().map(|b| b.fees).sum();
    let final_total = p.shared.store.total() + fees;
    let mut le = Histogram::default();
    for b in &stats.banks {
        le.merge(&b.exec_latency);
    }
    let ledger_check = match (&p.ledger_path, opts.verify_ledger) {
        (Some(path), true) => Some(
            verify_ledger(path, p.genesis.hash)
                .map(Into::into)
                .map_err(|e| e.to_string()),
        ),
        _ => None,
    };
    let delta = window.end.delta(&window.start);
    let diagnosis = diagnose(
        &delta,
        &stats.benchg,
        p.online.len(),
        cfg.bench.rate,
        window.pack_backlog,
    );
    let poh = &stats.poh;
    Ok(BenchReport {
        tiles: p.names,
        verify_tiles: cfg.layout.verify_tile_count,
        bank_tiles: cfg.layout.bank_tile_count,
        cpus_online: p.online.len(),
        window_s: window.seconds,
        drain_s,
        tps: throughput(&window.tps, window.landed, window.seconds),
        latency_exec: Latency::of(&le),
        latency_poh: Latency::of(&poh.poh_latency),
        fates,
        presigned: stats.benchg.presigned,
        pool_exhausted_after_s: stats.benchg.pool_exhausted_ns.map(|ns| ns as f64 / 1e9),
        conserved: final_total == p.genesis.total(),
        genesis_total: p.genesis.total(),
        final_total,
        poh_hash_rate: if poh.hash_ns == 0 {
            0.0
        } else {
            poh.hashes as f64 / (poh.hash_ns as f64 / 1e9)
        },
        poh_ticks: poh.ticks,
        poh_slots: poh.slots,
        ledger: p.ledger_path,
        ledger_check,
        warnings,
        window: delta,
        diagnosis,
        audit: opts.audit.then(|| Audit {
            benchg: stats.benchg.clone(),
            verify: stats.verify,
            dedup: stats.dedup,
            pack: stats.pack,
            banks: stats.banks,
            genesis_hash: p.genesis.hash,
        }),
    })
}
