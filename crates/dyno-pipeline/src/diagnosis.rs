//! Naming the bottleneck from the time shares and link counters of the measured window,
//! the way an operator reads `dyno pipeline monitor`:
//!
//! * verify tiles losing frags at ingress (overrun) -> verify is the limit;
//! * else, from the end of the pipeline backwards, the first tile kind that is not itself
//!   backpressured while the kind feeding it is (or, for bank, while pack's queue grows):
//!   a slow tile backpressures everything before it, so the most downstream one is the
//!   cause and the others are symptoms;
//! * benchg paced by `rate` and mostly waiting -> the offered load is the limit;
//! * otherwise benchg itself (generating or signing) is the limit.

use dyno_tango::metrics::Bucket;
use dyno_tango::snapshot::Snapshot;
use serde::{Deserialize, Serialize};

use dyno_tiles::tiles::BenchgStats;

/// Busy share of one tile kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KindShare {
    /// Tile kind.
    pub kind: String,
    /// Tiles of the kind.
    pub tiles: usize,
    /// Mean share of loop time doing work (0..=1).
    pub busy: f64,
    /// Mean share of loop time backpressured (0..=1).
    pub backpressured: f64,
}

/// The verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Diagnosis {
    /// The limiting tile kind, or `benchg` (generator) or `load` (offered rate).
    pub bottleneck: String,
    /// One line: what limits, the evidence, what to change.
    pub summary: String,
    /// Further observations.
    pub notes: Vec<String>,
    /// Busy shares per kind, in pipeline order.
    pub shares: Vec<KindShare>,
}

const KINDS: [&str; 7] = ["benchg", "verify", "dedup", "pack", "bank", "poh", "store"];

fn advice(kind: &str) -> &'static str {
    match kind {
        "verify" => "add verify tiles (layout.verify_tile_count) or cores",
        "bank" => "add bank tiles (layout.bank_tile_count), fund more accounts or lower contention, or add cores",
        "pack" => "pack is a single tile: lower contention (fewer conflicts to skip) or give it a faster core",
        "dedup" => "dedup is a single tile: give it its own core",
        "poh" => "lower poh.hashes_per_tick or give poh its own core",
        "store" => "put store.dir on faster storage (/dev/shm), or disable the store to see the pipeline's ceiling",
        _ => "",
    }
}

fn pct(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}

/// Share of loop time backpressured above which a producer counts as held back.
const HELD_BACK: f64 = 0.2;

/// Transactions waiting in pack above which its banks count as behind.
pub const PACK_BACKLOG: u64 = 4096;

/// The most downstream kind that its upstream waits on. A slow tile backpressures every
/// tile before it, so the search starts at the end of the pipeline; pack buffers
/// instead of backpressuring, so a bank that cannot keep up shows as pack's backlog.
fn held_back(shares: &[KindShare], pack_backlog: u64) -> Option<(KindShare, String)> {
    let get = |k: &str| shares.iter().find(|s| s.kind == k).cloned();
    let waits = |up: &str| get(up).filter(|u| u.backpressured > HELD_BACK);
    for (kind, upstream) in [
        ("store", "poh"),
        ("poh", "bank"),
        ("bank", "pack"),
        ("pack", "dedup"),
        ("dedup", "verify"),
        ("verify", "benchg"),
    ] {
        let Some(k) = get(kind) else { continue };
        if k.backpressured > HELD_BACK {
            continue;
        }
        if kind == "bank" && pack_backlog >= PACK_BACKLOG {
            return Some((
                k,
                format!("pack holds {pack_backlog} transactions waiting for the banks"),
            ));
        }
        if let Some(u) = waits(upstream) {
            return Some((
                k,
                format!(
                    "{upstream} backpressured {} of its time",
                    pct(u.backpressured)
                ),
            ));
        }
    }
    None
}

/// Time shares of each kind of tile in the window, averaged over its tiles.
fn kind_shares(w: &Snapshot) -> Vec<KindShare> {
    KINDS
        .iter()
        .filter_map(|&kind| {
            let tiles: Vec<_> = w
                .tiles
                .iter()
                .filter(|t| t.name.split(':').next() == Some(kind))
                .collect();
            if tiles.is_empty() {
                return None;
            }
            let mean = |b: Bucket| {
                tiles
                    .iter()
                    .map(|t| t.time_ns.shares()[b as usize])
                    .sum::<f64>()
                    / tiles.len() as f64
            };
            Some(KindShare {
                kind: kind.to_string(),
                tiles: tiles.len(),
                busy: mean(Bucket::Finish),
                backpressured: mean(Bucket::Backpressure),
            })
        })
        .collect()
}

/// What a reader of the figures should know besides the bottleneck: shared CPUs, a pool
/// that ran out, the slowest consumer.
fn notes(w: &Snapshot, benchg: &BenchgStats, cpus: usize) -> Vec<String> {
    let mut notes = Vec::new();
    let ntiles = w.tiles.len();
    if ntiles > cpus {
        notes.push(format!(
            "{ntiles} tiles share {cpus} CPUs: a busy share includes time a tile was descheduled, so several tiles can look busy; the tile that upstream waits on is the limit"
        ));
    }
    if let Some(ns) = benchg.pool_exhausted_ns {
        notes.push(format!(
            "benchg's pre-signed pool ran out {:.1} s after start; it signed {} transactions live, competing with the tiles for CPU",
            ns as f64 / 1e9,
            benchg.signed_live
        ));
    }
    let slowest = w
        .consumers
        .iter()
        .filter(|c| c.slow > 0)
        .max_by_key(|c| c.slow);
    if let Some(c) = slowest {
        notes.push(format!(
            "{} on {} was the slowest consumer of a backpressured producer {} times",
            c.tile, c.link, c.slow
        ));
    }
    notes
}

fn describe(s: &KindShare) -> String {
    format!(
        "{}: {} tile{} at {} busy",
        s.kind,
        s.tiles,
        if s.tiles == 1 { "" } else { "s" },
        pct(s.busy)
    )
}

/// The limiting kind and the sentence that says why, checked in order: benchg signing
/// live, overruns at ingress, the most downstream kind held back, the offered load,
/// and else the generator itself.
fn bottleneck(
    w: &Snapshot,
    shares: &[KindShare],
    benchg: &BenchgStats,
    rate: u64,
    pack_backlog: u64,
) -> (String, String) {
    let get = |k: &str| shares.iter().find(|s| s.kind == k);
    let gen = get("benchg").cloned().unwrap_or(KindShare {
        kind: "benchg".into(),
        tiles: 1,
        busy: 0.0,
        backpressured: 0.0,
    });
    let ingress_lost: u64 = w
        .consumers
        .iter()
        .filter(|c| c.link == "benchg->verify")
        .map(|c| c.counters.ovrnp + c.counters.ovrnr)
        .sum();
    // A pool that ran out while benchg ran flat out (or could not keep the pace): benchg
    // signing live competes with the tiles for CPU, and then the overruns and backlogs
    // it causes downstream say "verify" while the generator is the limit.
    let signing_live = benchg.pool_exhausted_ns.is_some()
        && benchg.signed_live > 0
        && (rate == 0 || gen.busy >= 0.5);
    if signing_live {
        (
            "benchg".to_string(),
            format!(
                "benchg signing live: its pre-signed pool ({}) ran out and it signed {} transactions during the run, competing with the tiles for CPU; raise bench.presign to at least the run's transactions (rate x duration)",
                benchg.presigned, benchg.signed_live
            ),
        )
    } else if ingress_lost > 0 {
        let v = get("verify").cloned().unwrap_or(gen.clone());
        (
            "verify".to_string(),
            format!(
                "{}, benchg->verify overruns {ingress_lost} in the window: {}",
                describe(&v),
                advice("verify")
            ),
        )
    } else if let Some((b, why)) = held_back(shares, pack_backlog) {
        (
            b.kind.clone(),
            format!("{}, {why}: {}", describe(&b), advice(&b.kind)),
        )
    } else if rate > 0 && gen.busy < 0.5 {
        (
            "load".to_string(),
            format!(
                "the offered load (bench.rate = {rate}/s) is the limit: benchg busy {} and never held back; raise bench.rate",
                pct(gen.busy)
            ),
        )
    } else {
        (
            "benchg".to_string(),
            format!(
                "the load generator is the limit: benchg busy {}, backpressured {}; presign more (bench.presign) or give benchg its own core",
                pct(gen.busy),
                pct(gen.backpressured)
            ),
        )
    }
}

/// Diagnoses the window `w` (a snapshot delta); `pack_backlog` is what pack held at its
/// end.
pub fn diagnose(
    w: &Snapshot,
    benchg: &BenchgStats,
    cpus: usize,
    rate: u64,
    pack_backlog: u64,
) -> Diagnosis {
    let shares = kind_shares(w);
    let (bottleneck, summary) = bottleneck(w, &shares, benchg, rate, pack_backlog);
    Diagnosis {
        bottleneck,
        summary,
        notes: notes(w, benchg, cpus),
        shares,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyno_tango::link::ConsumerCounters;
    use dyno_tango::snapshot::{ConsumerSnapshot, TileSnapshot, TimeSplit};

    fn tile(name: &str, finish: u64, backp: u64) -> TileSnapshot {
        TileSnapshot {
            name: name.into(),
            pid: 1,
            tid: 1,
            cpu: None,
            heartbeat_ns: 0,
            state: "run".into(),
            alive: true,
            in_backpressure: false,
            backpressure_count: 0,
            ctx_voluntary: 0,
            ctx_involuntary: 0,
            loops: 1,
            time_ns: TimeSplit {
                finish,
                backp,
                wait: 100 - finish - backp,
                ..Default::default()
            },
        }
    }

    fn window(tiles: &[(&str, u64, u64)], ingress_lost: u64) -> Snapshot {
        Snapshot {
            workspace: "w".into(),
            pid: 1,
            creator_alive: true,
            generation: 1,
            taken_ns: 0,
            since_ns: None,
            tiles: tiles.iter().map(|&(n, f, b)| tile(n, f, b)).collect(),
            links: Vec::new(),
            consumers: vec![ConsumerSnapshot {
                link: "benchg->verify".into(),
                tile: "verify:0".into(),
                reliable: false,
                counters: ConsumerCounters {
                    frags: 1,
                    bytes: 1,
                    filt1: 0,
                    filt2: 0,
                    ovrnp: ingress_lost,
                    ovrnr: 0,
                },
                slow: 0,
                rx_seq: 0,
            }],
        }
    }

    const PIPE: [&str; 7] = [
        "benchg:0", "verify:0", "dedup:0", "pack:0", "bank:0", "poh:0", "store:0",
    ];

    fn pipe(shares: [(u64, u64); 7]) -> Vec<(&'static str, u64, u64)> {
        PIPE.iter()
            .zip(shares)
            .map(|(n, (f, b))| (*n, f, b))
            .collect()
    }

    #[test]
    fn names_the_most_downstream_tile_its_upstream_waits_on() {
        let g = BenchgStats::default();
        // Store slow: poh, bank, ... all backpressured; store is the cause.
        let w = window(
            &pipe([
                (1, 98),
                (10, 80),
                (5, 80),
                (5, 0),
                (5, 80),
                (5, 90),
                (99, 0),
            ]),
            0,
        );
        assert_eq!(diagnose(&w, &g, 16, 0, 0).bottleneck, "store");
        // Verify slow: only benchg waits.
        let w = window(
            &pipe([(1, 98), (99, 0), (1, 0), (1, 0), (1, 0), (3, 0), (1, 0)]),
            0,
        );
        let d = diagnose(&w, &g, 16, 0, 0);
        assert_eq!(d.bottleneck, "verify");
        assert!(
            d.summary.contains("benchg backpressured 98.0%"),
            "{}",
            d.summary
        );
        // Bank slow: pack buffers instead of backpressuring.
        let w = window(
            &pipe([(1, 98), (50, 0), (5, 0), (20, 0), (99, 0), (3, 0), (1, 0)]),
            0,
        );
        assert_eq!(diagnose(&w, &g, 16, 0, 60_000).bottleneck, "bank");
        // Overruns at ingress name verify whatever else.
        let w = window(
            &pipe([(99, 0), (99, 0), (5, 0), (5, 0), (5, 0), (5, 0), (5, 0)]),
            7,
        );
        assert!(diagnose(&w, &g, 16, 0, 0).summary.contains("overruns 7"));
        // Nobody held back: the generator (or the offered rate) is the limit.
        let w = window(
            &pipe([(99, 0), (30, 0), (5, 0), (5, 0), (5, 0), (5, 0), (5, 0)]),
            0,
        );
        assert_eq!(diagnose(&w, &g, 16, 0, 0).bottleneck, "benchg");
        let w = window(
            &pipe([(10, 0), (30, 0), (5, 0), (5, 0), (5, 0), (5, 0), (5, 0)]),
            0,
        );
        assert_eq!(diagnose(&w, &g, 16, 1000, 0).bottleneck, "load");
    }

    #[test]
    fn a_pool_that_ran_out_names_benchg_signing_live_not_verify() {
        // Overruns at ingress and verify busy, as when a 1M pool ran out inside the window
        // of 5 batch-verify tiles: the generator signing live is named, not verify.
        let live = BenchgStats {
            presigned: 1_000_000,
            signed_live: 250_000,
            pool_exhausted_ns: Some(7_000_000_000),
            ..BenchgStats::default()
        };
        let w = window(
            &pipe([(99, 0), (99, 0), (5, 0), (5, 0), (5, 0), (5, 0), (5, 0)]),
            7,
        );
        let d = diagnose(&w, &live, 16, 0, 0);
        assert_eq!(d.bottleneck, "benchg");
        assert!(
            d.summary.starts_with("benchg signing live"),
            "{}",
            d.summary
        );
        assert!(d.summary.contains("250000"), "{}", d.summary);
        // A paced run whose generator kept up while signing live: not the limit.
        let idle = window(
            &pipe([(10, 0), (30, 0), (5, 0), (5, 0), (5, 0), (5, 0), (5, 0)]),
            0,
        );
        assert_eq!(diagnose(&idle, &live, 16, 1000, 0).bottleneck, "load");
    }

    #[test]
    fn a_pool_too_small_for_the_window_is_warned_about_before_the_start() {
        use crate::bench::pool_shortfall;
        // Paced: rate x duration.
        assert!(pool_shortfall(100_000, 10_000, 1, 10.0).is_none());
        let w = pool_shortfall(50_000, 10_000, 1, 10.0).unwrap();
        assert!(w.contains("lasts 5.0 s of the 10 s window"), "{w}");
        assert!(w.contains("at least 100000"), "{w}");
        // Flat out: the verify tiles' planned rate.
        let w = pool_shortfall(1_000_000, 0, 8, 10.0).unwrap();
        assert!(w.contains("at least 1600000"), "{w}");
        assert!(w.contains("flat out with 8 verify tiles"), "{w}");
        assert!(pool_shortfall(1_600_000, 0, 8, 10.0).is_none());
        // Until stopped: nothing to size against.
        assert!(pool_shortfall(1, 0, 5, 0.0).is_none());
    }
}
