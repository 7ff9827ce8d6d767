//! A two-kind example pipeline: one `source` tile publishing synthetic frags and one or
//! more `sink` tiles consuming them, built from a [`LayoutConfig`] in a shared workspace
//! (so `dyno pipeline monitor` can watch it) — the runtime behind `dyno pipeline run`.
//!
//! Every payload byte of frag `s` equals `s as u8` and its sig is `s`: sinks check every
//! payload (a mismatch is counted as `bad_payloads` and filtered after reading) and
//! split the load by `sig % sink_count` (the other sinks' frags are filtered before
//! reading), the way verify tiles share one ingress link.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::affinity::CpuSlot;
use crate::clock::{ns_per_tick, ticks};
use crate::config::{LayoutConfig, LinkConfig};
use crate::error::{Error, Result};
use crate::mcache::FragMeta;
use crate::metrics::TileMetrics;
use crate::region::Region;
use crate::snapshot::{Snapshot, TimeSplit};
use crate::sys;
use crate::tile::{mark_failed, FragOutcome, Outputs, Stem, Tile};
use crate::wiring::{pin_tile, LinkParts};
use crate::workspace::{ObjectKind, Workspace, WorkspaceOptions};

/// What one sink saw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SinkSummary {
    /// Tile name.
    pub tile: String,
    /// Frags read and checked.
    pub frags: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Frags left to other sinks (filtered before reading).
    pub filt1: u64,
    /// Frags whose payload failed the check (filtered after reading); must be 0.
    pub bad_payloads: u64,
    /// Frags lost, overrun while polling.
    pub ovrnp: u64,
    /// Frags lost, overrun while reading.
    pub ovrnr: u64,
    /// Loop time per bucket.
    pub time_ns: TimeSplit,
}

/// The result of a synthetic run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSummary {
    /// Wall time from the start of the tiles to their end, ns.
    pub elapsed_ns: u64,
    /// Frags published.
    pub published: u64,
    /// Payload bytes published.
    pub published_bytes: u64,
    /// Frags published per second.
    pub frags_per_sec: f64,
    /// Times the source entered backpressure.
    pub source_backpressure: u64,
    /// Source loop time per bucket.
    pub source_time_ns: TimeSplit,
    /// One entry per sink.
    pub sinks: Vec<SinkSummary>,
    /// Non-fatal findings (affinity lists more CPUs than tiles, ...).
    pub warnings: Vec<String>,
    /// The workspace metrics at the end of the run.
    pub snapshot: Snapshot,
}

struct SourceTile {
    frag: Vec<u8>,
    /// Frags to publish; 0 = unbounded.
    count: u64,
    sent: u64,
    /// Ticks between frags; 0 = flat out.
    interval: u64,
    next_due: u64,
}

impl Tile for SourceTile {
    fn after_credit(&mut self, out: &mut Outputs) -> bool {
        if self.count != 0 && self.sent >= self.count {
            return false;
        }
        if self.interval != 0 {
            let now = ticks();
            if now < self.next_due {
                return false;
            }
            self.next_due = self.next_due.max(now.saturating_sub(self.interval)) + self.interval;
        }
        let seq = out.producer(0).seq();
        self.frag.fill(seq as u8);
        if out.publish(0, seq, &self.frag, 0).is_ok() {
            self.sent += 1;
        }
        true
    }

    fn after_frag(&mut self, _: usize, _: &FragMeta, _: &[u8], _: &mut Outputs) -> FragOutcome {
        FragOutcome::Done
    }

    fn finished(&self) -> bool {
        self.count != 0 && self.sent >= self.count
    }
}

struct SinkTile {
    index: u64,
    sinks: u64,
    bad: u64,
}

impl Tile for SinkTile {
    fn before_frag(&mut self, _: usize, meta: &FragMeta) -> bool {
        meta.sig % self.sinks == self.index
    }

    fn after_frag(
        &mut self,
        _: usize,
        meta: &FragMeta,
        payload: &[u8],
        _: &mut Outputs,
    ) -> FragOutcome {
        if payload.iter().all(|&b| b == meta.seq as u8) {
            FragOutcome::Done
        } else {
            self.bad += 1;
            FragOutcome::Filtered
        }
    }
}

struct Built {
    ws: Workspace,
    source: Stem<SourceTile>,
    sinks: Vec<(String, Stem<SinkTile>)>,
    tile_metrics: Vec<Region>,
}

/// The source as `[synthetic]` says: frags of `frag_size` (at most the link's MTU), paced
/// to `rate` per second (0: flat out).
fn source_tile(cfg: &LayoutConfig, link: &LinkConfig) -> Result<SourceTile> {
    let syn = &cfg.synthetic;
    if syn.frag_size == 0 || syn.frag_size > link.mtu {
        return Err(Error::Config {
            origin: "layout".into(),
            reason: format!(
                "key synthetic.frag_size: {} must be in [1, link mtu {}]",
                syn.frag_size, link.mtu
            ),
        });
    }
    let interval = if syn.rate == 0 {
        0
    } else {
        ((1e9 / syn.rate as f64) / ns_per_tick()).max(1.0) as u64
    };
    Ok(SourceTile {
        frag: vec![0; syn.frag_size],
        count: syn.count,
        sent: 0,
        interval,
        next_due: ticks(),
    })
}

fn build(cfg: &LayoutConfig, link: &LinkConfig) -> Result<Built> {
    let mut ws = Workspace::create(&WorkspaceOptions {
        name: cfg.workspace.name.clone(),
        dir: cfg.workspace.dir.clone(),
        size: cfg.workspace.size_mb << 20,
    })?;
    let name = link.name();
    let sink_count = cfg.count("sink");
    let mut tile_metrics = Vec::new();
    for t in cfg.tile_names() {
        let r = ws.alloc(ObjectKind::TileMetrics, &t, TileMetrics::FOOTPRINT)?;
        TileMetrics::new(&r)?;
        tile_metrics.push(r);
    }
    let mut parts = LinkParts::new(&mut ws, &name, link.depth, link.mtu)?;
    let inputs = (0..sink_count)
        .map(|i| parts.consumer(&mut ws, &format!("sink:{i}"), link.reliable))
        .collect::<Result<Vec<_>>>()?;
    ws.mark_ready();
    let opts = cfg.stem_options(link.depth)?;
    let source = Stem::new(
        source_tile(cfg, link)?,
        Vec::new(),
        vec![parts.producer()],
        Some(tile_metrics[0].clone()),
        opts.clone(),
    );
    let sinks = inputs
        .into_iter()
        .enumerate()
        .map(|(i, input)| {
            let stem = Stem::new(
                SinkTile {
                    index: i as u64,
                    sinks: sink_count as u64,
                    bad: 0,
                },
                vec![input],
                Vec::new(),
                Some(tile_metrics[1 + i].clone()),
                opts.clone(),
            );
            (format!("sink:{i}"), stem)
        })
        .collect();
    Ok(Built {
        ws,
        source,
        sinks,
        tile_metrics,
    })
}

fn run_stem<T: Tile>(
    name: &str,
    mut stem: Stem<T>,
    slot: CpuSlot,
    m: &Region,
    stop: &AtomicBool,
) -> Result<Stem<T>> {
    if let Err(e) = pin_tile(slot, m) {
        let _ = mark_failed(m);
        stop.store(true, Ordering::Relaxed);
        return Err(Error::Tile {
            tile: name.to_string(),
            reason: e.to_string(),
        });
    }
    stem.run(stop);
    Ok(stem)
}

/// Runs the synthetic pipeline of `cfg` until `stop` is set or `synthetic.count` frags
/// were published and consumed (or lost, for unreliable sinks). Validates everything
/// (layout, affinity against the online CPUs) before starting a thread.
pub fn run_synthetic(cfg: &LayoutConfig, stop: &AtomicBool) -> Result<RunSummary> {
    let bad = |reason: String| Error::Config {
        origin: "layout".into(),
        reason,
    };
    let names = cfg.tile_names();
    if cfg.count("source") != 1
        || cfg.count("sink") == 0
        || names.len() != 1 + cfg.count("sink")
        || !names[0].starts_with("source")
    {
        return Err(bad("key layout.tiles: the synthetic pipeline needs kind \"source\" (count 1) first, then kind \"sink\" (count >= 1)".into()));
    }
    let link = cfg
        .links
        .iter()
        .find(|l| l.from == "source" && l.to == "sink")
        .cloned()
        .ok_or_else(|| {
            bad("key links: the synthetic pipeline needs a link from \"source\" to \"sink\"".into())
        })?;
    let plan = cfg.plan(&sys::online_cpus()?)?;
    let Built {
        ws,
        source,
        sinks,
        tile_metrics,
    } = build(cfg, &link)?;
    let inner = AtomicBool::new(false);
    let source_done = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let (source, sinks) = std::thread::scope(|s| {
        let src = {
            let (m, inner, done, slot) = (
                &tile_metrics[0],
                &inner,
                Arc::clone(&source_done),
                plan.slots[0],
            );
            s.spawn(move || {
                let r = run_stem("source:0", source, slot, m, inner);
                done.store(true, Ordering::Release);
                r
            })
        };
        let handles: Vec<_> = sinks
            .into_iter()
            .enumerate()
            .map(|(i, (name, stem))| {
                let (m, inner, slot) = (&tile_metrics[1 + i], &inner, plan.slots[1 + i]);
                s.spawn(move || run_stem(&name, stem, slot, m, inner))
            })
            .collect();
        supervise(&ws, stop, &inner, &source_done);
        let src = src.join();
        let sinks: Vec<_> = handles.into_iter().map(|h| h.join()).collect();
        (src, sinks)
    });
    let elapsed_ns = start.elapsed().as_nanos() as u64;
    let panicked = |tile: &str| Error::Tile {
        tile: tile.into(),
        reason: "panicked".into(),
    };
    let source = source.map_err(|_| panicked("source:0"))??;
    let mut sink_summaries = Vec::new();
    for (i, s) in sinks.into_iter().enumerate() {
        let name = format!("sink:{i}");
        let stem = s.map_err(|_| panicked(&name))??;
        let c = stem.inputs()[0].consumer.counters;
        sink_summaries.push(SinkSummary {
            tile: name,
            frags: c.frags,
            bytes: c.bytes,
            filt1: c.filt1,
            bad_payloads: stem.tile().bad,
            ovrnp: c.ovrnp,
            ovrnr: c.ovrnr,
            time_ns: ns_split(stem.ticks_by_bucket()),
        });
    }
    let p = source
        .outputs()
        .next()
        .expect("source has one output")
        .counters;
    Ok(RunSummary {
        elapsed_ns,
        published: p.frags,
        published_bytes: p.bytes,
        frags_per_sec: p.frags as f64 / (elapsed_ns.max(1) as f64 / 1e9),
        source_backpressure: source.backpressure_count(),
        source_time_ns: ns_split(source.ticks_by_bucket()),
        sinks: sink_summaries,
        warnings: plan.warnings,
        snapshot: Snapshot::read(&ws),
    })
}

fn ns_split(t: [u64; crate::metrics::BUCKETS]) -> TimeSplit {
    TimeSplit::from_array(t.map(crate::clock::ticks_to_ns))
}

/// Stops the tiles when asked, or once the source finished and every sink caught up with
/// it (given up after 2 s: an unreliable sink may have been overrun past the end).
fn supervise(ws: &Workspace, stop: &AtomicBool, inner: &AtomicBool, source_done: &AtomicBool) {
    let mut drain_since: Option<Instant> = None;
    while !inner.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(1));
        if stop.load(Ordering::Relaxed) {
            break;
        }
        if !source_done.load(Ordering::Acquire) {
            continue;
        }
        let since = *drain_since.get_or_insert_with(Instant::now);
        let snap = Snapshot::read(ws);
        let tx = snap.links.first().map_or(0, |l| l.tx_seq);
        if snap.consumers.iter().all(|c| c.rx_seq == tx) || since.elapsed() > Duration::from_secs(2)
        {
            break;
        }
    }
    inner.store(true, Ordering::Relaxed);
}
