//! The bench: builds genesis and the layout in a shared workspace (so `dyno pipeline
//! monitor` can watch it), drives load for the measured window, drains the pipeline,
//! and accounts for every generated transaction.
//!
//! Shutdown is in two steps so that "left in flight" means what it says: benchg stops
//! first, the other tiles run until every link is caught up and pack holds nothing (at
//! most [`DRAIN_LIMIT`]), then they stop. Time shares and link counters cover the
//! measured window only (snapshots at its start and end).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{Scope, ScopedJoinHandle};
use std::time::{Duration, Instant};

use dyno_tango::affinity::CpuSlot;
use dyno_tango::dcache::Dcache;
use dyno_tango::fseq::{Fseq, FSEQ_FOOTPRINT};
use dyno_tango::link::{Consumer, Producer};
use dyno_tango::mcache::Mcache;
use dyno_tango::metrics::{ConsumerMetrics, LinkMetrics, TileMetrics};
use dyno_tango::region::Region;
use dyno_tango::snapshot::Snapshot;
use dyno_tango::tile::{mark_failed, InLink, OutLink, Stem, StemOptions, Tile};
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
    Bank, BankStats, Benchg, Dedup, Pack, Poh, PohStats, Shared, Store, Verify, MAX_ENV,
};

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

struct LinkParts {
    name: String,
    mcache: Mcache,
    dcache: Dcache,
    metrics: Region,
    fseqs: Vec<Fseq>,
    slow: Vec<Option<Region>>,
}

fn new_link(ws: &mut Workspace, name: &str, depth: u64, mtu: usize) -> Result<LinkParts> {
    let m = ws.alloc(ObjectKind::Mcache, name, Mcache::footprint(depth))?;
    Mcache::new(&m, depth, 0)?;
    let d = ws.alloc(ObjectKind::Dcache, name, Dcache::footprint(mtu, depth))?;
    Dcache::new(&d, mtu, depth)?;
    let lm = ws.alloc(ObjectKind::LinkMetrics, name, LinkMetrics::FOOTPRINT)?;
    LinkMetrics::new(&lm)?;
    Ok(LinkParts {
        name: name.to_string(),
        mcache: Mcache::join(&m)?,
        dcache: Dcache::join(&d)?,
        metrics: lm,
        fseqs: Vec::new(),
        slow: Vec::new(),
    })
}

fn consumer(ws: &mut Workspace, l: &mut LinkParts, tile: &str, reliable: bool) -> Result<InLink> {
    let edge = format!("{}@{tile}", l.name);
    let cm = ws.alloc(
        ObjectKind::ConsumerMetrics,
        &edge,
        ConsumerMetrics::FOOTPRINT,
    )?;
    ConsumerMetrics::new(&cm)?;
    let fseq = if reliable {
        let f = ws.alloc(ObjectKind::Fseq, &edge, FSEQ_FOOTPRINT)?;
        Fseq::new(&f, 0)?;
        let f = Fseq::join(&f)?;
        l.fseqs.push(f.clone());
        l.slow.push(Some(cm.clone()));
        Some(f)
    } else {
        None
    };
    Ok(InLink {
        consumer: Consumer::new(l.mcache.clone(), l.dcache.clone(), fseq),
        metrics: Some(cm),
    })
}

fn producer(l: LinkParts) -> OutLink {
    OutLink {
        producer: Producer::new(l.mcache, l.dcache, l.fseqs),
        metrics: Some(l.metrics),
        slow: l.slow,
    }
}

/// Raises every flag when dropped during a panic.
struct StopOnUnwind<'a>(&'a [&'a AtomicBool]);

impl Drop for StopOnUnwind<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            for f in self.0 {
                f.store(true, Ordering::SeqCst);
            }
        }
    }
}

/// Marks the tile failed and raises `failed` if its thread unwinds.
struct FailGuard<'a> {
    failed: &'a AtomicBool,
    metrics: Region,
}

impl Drop for FailGuard<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let _ = mark_failed(&self.metrics);
            self.failed.store(true, Ordering::SeqCst);
        }
    }
}

struct Ctl<'a> {
    failed: &'a AtomicBool,
}

fn spawn<'s, 'e: 's, T: Tile + 's>(
    s: &'s Scope<'s, 'e>,
    ctl: &'s Ctl<'e>,
    mut stem: Stem<T>,
    slot: CpuSlot,
    metrics: Region,
    stop: &'s AtomicBool,
    done: Option<&'s AtomicBool>,
) -> ScopedJoinHandle<'s, Result<Stem<T>>> {
    s.spawn(move || {
        let _guard = FailGuard {
            failed: ctl.failed,
            metrics: metrics.clone(),
        };
        let cpu = match slot {
            CpuSlot::Pinned(cpu) => {
                if let Err(e) = dyno_tango::sys::pin_current_thread(cpu) {
                    let _ = mark_failed(&metrics);
                    ctl.failed.store(true, Ordering::SeqCst);
                    return Err(e.into());
                }
                cpu as u64
            }
            CpuSlot::Floating => u64::MAX,
        };
        TileMetrics::join(&metrics)?
            .cpu
            .store(cpu, Ordering::Relaxed);
        stem.run(stop);
        if let Some(d) = done {
            d.store(true, Ordering::SeqCst);
        }
        Ok(stem)
    })
}

fn joined<T>(name: &str, h: ScopedJoinHandle<'_, Result<T>>) -> Result<T> {
    h.join().map_err(|_| {
        Error::Tango(dyno_tango::Error::Tile {
            tile: name.to_string(),
            reason: "panicked".into(),
        })
    })?
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

/// The tiles of one run, wired, ready to start (in affinity order).
struct Stems {
    benchg: Stem<Benchg>,
    verify: Vec<Stem<Verify>>,
    dedup: Stem<Dedup>,
    pack: Stem<Pack>,
    banks: Vec<Stem<Bank>>,
    poh: Stem<Poh>,
    store: Option<Stem<Store>>,
}

/// Creates every link in `ws` and wraps each tile in its stem; `tile_metrics` are in
/// affinity order.
#[allow(clippy::too_many_arguments)]
fn build_stems(
    cfg: &BenchConfig,
    ws: &mut Workspace,
    tile_metrics: &[Region],
    benchg: Benchg,
    shared: &Arc<Shared>,
    start_hash: [u8; 32],
    ledger_file: Option<std::fs::File>,
    audit: bool,
) -> Result<Stems> {
    let (nv, nb) = (cfg.layout.verify_tile_count, cfg.layout.bank_tile_count);
    let depth = cfg.layout.link_depth;
    let small = depth.min(256);
    let max_txs = cfg.pack.max_txs_per_microblock;
    let mut ingress = new_link(ws, "benchg->verify", depth, MAX_ENV)?;
    let mut verify_in = Vec::new();
    for i in 0..nv {
        verify_in.push(consumer(
            ws,
            &mut ingress,
            &format!("verify:{i}"),
            cfg.layout.ingress_reliable,
        )?);
    }
    let mut dedup_in = Vec::new();
    let mut verify_out = Vec::new();
    for i in 0..nv {
        let mut l = new_link(ws, &format!("verify:{i}->dedup"), depth, MAX_ENV)?;
        dedup_in.push(consumer(ws, &mut l, "dedup:0", true)?);
        verify_out.push(producer(l));
    }
    let mut l = new_link(ws, "dedup->pack", depth, MAX_ENV)?;
    let pack_in = consumer(ws, &mut l, "pack:0", true)?;
    let dedup_out = producer(l);
    let mut l = new_link(ws, "pack->bank", small, Pack::mtu(max_txs))?;
    let mut bank_in = Vec::new();
    for i in 0..nb {
        bank_in.push(consumer(ws, &mut l, &format!("bank:{i}"), true)?);
    }
    let pack_out = producer(l);
    let mut poh_in = Vec::new();
    let mut bank_out = Vec::new();
    for i in 0..nb {
        let mut l = new_link(ws, &format!("bank:{i}->poh"), small, Bank::mtu(max_txs))?;
        poh_in.push(consumer(ws, &mut l, "poh:0", true)?);
        bank_out.push(producer(l));
    }
    let (poh_out, store_in) = if cfg.store.enabled {
        let mut l = new_link(ws, "poh->store", depth.min(1024), Poh::mtu(max_txs))?;
        let c = consumer(ws, &mut l, "store:0", true)?;
        (vec![producer(l)], Some(c))
    } else {
        (Vec::new(), None)
    };

    let idle = cfg
        .tango_layout()
        .idle_strategy()
        .map_err(|reason| Error::Config {
            origin: "layout".into(),
            reason,
        })?;
    let sopts = StemOptions {
        idle,
        lazy_ns: cfg
            .layout
            .lazy_ns
            .unwrap_or_else(|| StemOptions::lazy_for_depth(depth)),
        accounting: true,
    };
    let m = |i: usize| Some(tile_metrics[i].clone());
    let mut k = 0;
    let mut next = || {
        k += 1;
        k - 1
    };
    let benchg_stem = Stem::new(
        benchg,
        Vec::new(),
        vec![producer(ingress)],
        m(next()),
        sopts.clone(),
    );
    let verify_stems: Vec<_> = verify_in
        .into_iter()
        .zip(verify_out)
        .enumerate()
        .map(|(i, (inp, out))| {
            let v = Verify::new(i, nv, cfg.verify.batch, audit);
            Stem::new(v, vec![inp], vec![out], m(next()), sopts.clone())
        })
        .collect();
    let dedup_stem = Stem::new(
        Dedup::new(cfg.dedup.depth, audit),
        dedup_in,
        vec![dedup_out],
        m(next()),
        sopts.clone(),
    );
    let pack_stem = Stem::new(
        Pack::new(&cfg.pack, nb, shared.clone(), audit),
        vec![pack_in],
        vec![pack_out],
        m(next()),
        sopts.clone(),
    );
    let bank_stems: Vec<_> = bank_in
        .into_iter()
        .zip(bank_out)
        .enumerate()
        .map(|(i, (inp, out))| {
            Stem::new(
                Bank::new(i, shared.clone(), audit).with_extra_work(cfg.bank.extra_work_per_tx),
                vec![inp],
                vec![out],
                m(next()),
                sopts.clone(),
            )
        })
        .collect();
    let poh_stem = Stem::new(
        Poh::new(&cfg.poh, start_hash, shared.clone(), cfg.store.enabled),
        poh_in,
        poh_out,
        m(next()),
        sopts.clone(),
    );
    let store_stem = store_in.zip(ledger_file).map(|(inp, f)| {
        Stem::new(
            Store::new(f, shared.clone()),
            vec![inp],
            Vec::new(),
            m(next()),
            sopts.clone(),
        )
    });

    ws.mark_ready();
    Ok(Stems {
        benchg: benchg_stem,
        verify: verify_stems,
        dedup: dedup_stem,
        pack: pack_stem,
        banks: bank_stems,
        poh: poh_stem,
        store: store_stem,
    })
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

/// Runs the bench of `cfg`: validates everything first (affinity against the online
/// CPUs, the ledger directory), signs the pool, runs for `opts.duration` (or until
/// `stop`), drains, and reports.
pub fn run_bench(
    cfg: &BenchConfig,
    opts: &BenchOptions,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(Progress),
) -> Result<BenchReport> {
    let tango = cfg.tango_layout();
    let online = dyno_tango::sys::online_cpus()?;
    let plan = tango.plan(&online)?;
    let names = tango.tile_names();
    let (nv, nb) = (cfg.layout.verify_tile_count, cfg.layout.bank_tile_count);
    let ledger_path = if cfg.store.enabled {
        let dir = cfg.store.dir.clone().unwrap_or_else(std::env::temp_dir);
        let p = dir.join(format!("dyno-ledger-{}.bin", cfg.workspace.name));
        Some(p)
    } else {
        None
    };
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
    let shared = Arc::new(Shared::new(&genesis, nb));
    progress(Progress::Presigning {
        count: cfg.bench.presign,
    });
    let pool_warning = pool_shortfall(
        cfg.bench.presign,
        cfg.bench.rate,
        nv,
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
    let mut tile_metrics = Vec::new();
    for t in &names {
        let r = ws.alloc(ObjectKind::TileMetrics, t, TileMetrics::FOOTPRINT)?;
        TileMetrics::new(&r)?;
        tile_metrics.push(r);
    }
    let Stems {
        benchg: benchg_stem,
        verify: verify_stems,
        dedup: dedup_stem,
        pack: pack_stem,
        banks: bank_stems,
        poh: poh_stem,
        store: store_stem,
    } = build_stems(
        cfg,
        &mut ws,
        &tile_metrics,
        benchg,
        &shared,
        genesis.hash,
        ledger_file,
        opts.audit,
    )?;

    let failed = AtomicBool::new(false);
    let gen_stop = AtomicBool::new(false);
    let gen_done = AtomicBool::new(false);
    let inner = AtomicBool::new(false);
    let ctl = Ctl { failed: &failed };
    let mut warnings = plan.warnings.clone();
    warnings.extend(pool_warning);
    let mut tps = Vec::new();
    let (mut snap0, mut snap1) = (None, None);
    let (mut window_s, mut drain_s, mut landed_window, mut pack_backlog) = (0.0, 0.0, 0, 0);
    let slots = &plan.slots;

    let outcome = std::thread::scope(|s| {
        // If anything below panics (a progress callback writing to a closed pipe, say),
        // the tiles must still stop, or the scope would wait for them forever.
        let _stop_on_unwind = StopOnUnwind(&[&gen_stop, &inner]);
        let ctl = &ctl;
        let tm = |i: usize| tile_metrics[i].clone();
        let mut k = 0;
        let mut next = || {
            k += 1;
            k - 1
        };
        let i = next();
        let hb = spawn(
            s,
            ctl,
            benchg_stem,
            slots[i],
            tm(i),
            &gen_stop,
            Some(&gen_done),
        );
        let hv: Vec<_> = verify_stems
            .into_iter()
            .map(|st| {
                let i = next();
                spawn(s, ctl, st, slots[i], tm(i), &inner, None)
            })
            .collect();
        let i = next();
        let hd = spawn(s, ctl, dedup_stem, slots[i], tm(i), &inner, None);
        let i = next();
        let hp = spawn(s, ctl, pack_stem, slots[i], tm(i), &inner, None);
        let hk: Vec<_> = bank_stems
            .into_iter()
            .map(|st| {
                let i = next();
                spawn(s, ctl, st, slots[i], tm(i), &inner, None)
            })
            .collect();
        let i = next();
        let hpoh = spawn(s, ctl, poh_stem, slots[i], tm(i), &inner, None);
        let hs = store_stem.map(|st| {
            let i = next();
            spawn(s, ctl, st, slots[i], tm(i), &inner, None)
        });
        progress(Progress::Started {
            tiles: names.clone(),
            workspace: cfg.workspace.name.clone(),
        });

        // The measured window.
        let t0 = Instant::now();
        snap0 = Some(Snapshot::read(&ws));
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
        snap1 = Some(Snapshot::read(&ws));
        window_s = t0.elapsed().as_secs_f64();
        landed_window = shared.landed.load(Ordering::Relaxed);
        pack_backlog = shared.pack_held.load(Ordering::Relaxed);

        // Drain: benchg first, then everything once caught up twice in a row.
        progress(Progress::Draining);
        gen_stop.store(true, Ordering::SeqCst);
        let d0 = Instant::now();
        let mut prev: Option<Vec<u64>> = None;
        while d0.elapsed() < DRAIN_LIMIT && !failed.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(3));
            if !gen_done.load(Ordering::SeqCst) {
                continue;
            }
            let now = drained(&ws, &shared);
            if now.is_some() && now == prev {
                break;
            }
            prev = now;
        }
        drain_s = d0.elapsed().as_secs_f64();
        if d0.elapsed() >= DRAIN_LIMIT {
            warnings.push(format!(
                "the pipeline did not drain within {} s; what it held is counted as in flight",
                DRAIN_LIMIT.as_secs()
            ));
        }
        inner.store(true, Ordering::SeqCst);
        gen_stop.store(true, Ordering::SeqCst);
        let b = joined("benchg:0", hb);
        let v: Vec<_> = hv
            .into_iter()
            .enumerate()
            .map(|(i, h)| joined(&format!("verify:{i}"), h))
            .collect();
        let d = joined("dedup:0", hd);
        let p = joined("pack:0", hp);
        let k: Vec<_> = hk
            .into_iter()
            .enumerate()
            .map(|(i, h)| joined(&format!("bank:{i}"), h))
            .collect();
        let poh = joined("poh:0", hpoh);
        let st = hs.map(|h| joined("store:0", h));
        (b, v, d, p, k, poh, st)
    });
    let (b, v, d, p, k, poh, st) = outcome;
    let benchg = b?.into_tile().stats;
    let mut verify = Vec::new();
    for r in v {
        let stem = r?;
        let seq = stem.inputs()[0].consumer.seq();
        let mut t = stem.into_tile();
        t.settle(seq);
        verify.push(t.stats);
    }
    let dedup = d?.into_tile().stats;
    let pack = p?.into_tile().stats;
    let banks: Vec<BankStats> = k
        .into_iter()
        .map(|r| r.map(|s| s.into_tile().stats))
        .collect::<Result<_>>()?;
    let poh: PohStats = poh?.into_tile().stats;
    if let Some(st) = st {
        let mut store = st?.into_tile();
        store.flush();
        if let Some(e) = store.error {
            warnings.push(format!("store: {e}"));
        }
    }

    let mut fates = Fates {
        generated: benchg.generated,
        executed: banks.iter().map(|b| b.executed).sum(),
        failed: banks.iter().map(|b| b.failed).sum(),
        invalid_signature: verify.iter().map(|v| v.invalid).sum(),
        duplicate: dedup.duplicates,
        overrun_ingress: verify.iter().map(|v| v.overrun).sum(),
        pack_dropped: pack.dropped,
        in_flight: 0,
    };
    fates.in_flight = fates.generated.saturating_sub(fates.settled());
    if fates.settled() > fates.generated {
        warnings.push(format!(
            "accounting error: {} fates for {} generated transactions",
            fates.settled(),
            fates.generated
        ));
    }
    let fees: u128 = banks.iter().map(|b| b.fees).sum();
    let final_total = shared.store.total() + fees;
    let (mut le, mut lp) = (Histogram::default(), Histogram::default());
    for b in &banks {
        le.merge(&b.exec_latency);
    }
    lp.merge(&poh.poh_latency);
    let ledger_check = match (&ledger_path, opts.verify_ledger) {
        (Some(p), true) => Some(
            verify_ledger(p, genesis.hash)
                .map(Into::into)
                .map_err(|e| e.to_string()),
        ),
        _ => None,
    };
    let window = match (&snap1, &snap0) {
        (Some(a), Some(b)) => a.delta(b),
        _ => Snapshot::read(&ws),
    };
    let throughput = throughput(&tps, landed_window, window_s);
    let diagnosis = diagnose(&window, &benchg, online.len(), cfg.bench.rate, pack_backlog);
    let report = BenchReport {
        tiles: names,
        verify_tiles: nv,
        bank_tiles: nb,
        cpus_online: online.len(),
        window_s,
        drain_s,
        tps: throughput,
        latency_exec: Latency::of(&le),
        latency_poh: Latency::of(&lp),
        fates,
        presigned: benchg.presigned,
        pool_exhausted_after_s: benchg.pool_exhausted_ns.map(|ns| ns as f64 / 1e9),
        conserved: final_total == genesis.total(),
        genesis_total: genesis.total(),
        final_total,
        poh_hash_rate: if poh.hash_ns == 0 {
            0.0
        } else {
            poh.hashes as f64 / (poh.hash_ns as f64 / 1e9)
        },
        poh_ticks: poh.ticks,
        poh_slots: poh.slots,
        ledger: ledger_path,
        ledger_check,
        warnings,
        window,
        diagnosis,
        audit: opts.audit.then(|| Audit {
            benchg: benchg.clone(),
            verify,
            dedup,
            pack,
            banks,
            genesis_hash: genesis.hash,
        }),
    };
    Ok(report)
}
