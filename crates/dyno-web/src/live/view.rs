//! What the live page shows of one endpoint, computed from two scrapes a second apart:
//! per-tile busy and backpressure shares over that second, TPS, chain height and blocks
//! adopted.

use super::prom::PromSample;
use std::collections::BTreeMap;
use std::time::Instant;

/// One scrape of one endpoint.
#[derive(Debug, Clone)]
pub(crate) struct Reading {
    /// When it was taken.
    pub at: Instant,
    /// Its samples.
    pub samples: Vec<PromSample>,
}

impl Reading {
    /// The sum of the samples named `name` whose labels include every pair of `labels`.
    fn sum(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let mut found = None;
        for s in self.samples.iter().filter(|s| s.name == name) {
            if labels.iter().all(|(k, v)| s.label(k) == Some(v)) {
                *found.get_or_insert(0.0) += s.value;
            }
        }
        found
    }
}

/// One tile's line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TileView {
    /// `verify:0`.
    pub name: String,
    /// In its run loop.
    pub up: bool,
    /// Share of the loop's time doing work or housekeeping (not caught up, not waiting
    /// for credits), over the last interval, else since the start.
    pub busy: Option<f64>,
    /// Share of the loop's time waiting for credits, same interval.
    pub backpressure: Option<f64>,
    /// Waiting for credits right now.
    pub in_backpressure: bool,
}

/// The node's figures, when the endpoint has them.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct NodeView {
    /// Transactions per second (the node's own gauge, else the rate of its counters).
    pub tps: Option<f64>,
    /// Height of the chosen tip.
    pub height: Option<f64>,
    /// Blocks adopted since the start.
    pub adopted: Option<f64>,
    /// Blocks adopted per second over the last [`super::recent::ADOPTION_WINDOW_S`]
    /// seconds (set from the live page's memory: one scrape apart, a block every few
    /// slots reads as spikes).
    pub adopted_rate: Option<f64>,
    /// Blocks produced: a pipeline bench's blocks, a node's forged blocks (0 on a relay).
    pub blocks: Option<f64>,
}

/// One endpoint's view.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TargetView {
    /// The endpoint's name (its URL unless it was given one).
    pub name: String,
    /// Why it could not be read, if it could not.
    pub error: Option<String>,
    /// Tiles, by name.
    pub tiles: Vec<TileView>,
    /// The node's figures.
    pub node: NodeView,
}

/// The rate of counter `name` (summed over `labels`) between two readings.
fn rate(prev: Option<&Reading>, now: &Reading, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let prev = prev?;
    let dt = now.at.duration_since(prev.at).as_secs_f64();
    let d = now.sum(name, labels)? - prev.sum(name, labels)?;
    // A counter that went down means the endpoint restarted: no rate this time.
    (dt > 0.0 && d >= 0.0).then(|| d / dt)
}

/// Per-tile time by bucket: tile -> bucket -> seconds.
fn tile_times(r: &Reading) -> BTreeMap<String, BTreeMap<String, f64>> {
    let mut out: BTreeMap<String, BTreeMap<String, f64>> = BTreeMap::new();
    for s in r
        .samples
        .iter()
        .filter(|s| s.name == "dyno_tile_time_seconds_total")
    {
        if let (Some(t), Some(b)) = (s.label("tile"), s.label("bucket")) {
            *out.entry(t.into())
                .or_default()
                .entry(b.into())
                .or_default() += s.value;
        }
    }
    out
}

/// Busy and backpressure shares of one tile from its bucket times (deltas or totals).
fn shares(times: &BTreeMap<String, f64>) -> (Option<f64>, Option<f64>) {
    let total: f64 = times.values().sum();
    if total <= 0.0 {
        return (None, None);
    }
    let get = |b: &str| times.get(b).copied().unwrap_or(0.0);
    let backp = get("backp") / total;
    let busy = 1.0 - (get("wait") + get("backp")) / total;
    (Some(busy.clamp(0.0, 1.0)), Some(backp.clamp(0.0, 1.0)))
}

/// The view of `now`, with rates and shares over the interval since `prev` where the
/// endpoint was read then too.
pub(crate) fn view(name: &str, prev: Option<&Reading>, now: &Reading) -> TargetView {
    let times_now = tile_times(now);
    let times_prev = prev.map(tile_times).unwrap_or_default();
    let flag = |name: &str, tile: &str| now.sum(name, &[("tile", tile)]).is_some_and(|v| v >= 1.0);
    let tiles = times_now
        .iter()
        .map(|(tile, t)| {
            let delta: Option<BTreeMap<String, f64>> = times_prev.get(tile).map(|p| {
                t.iter()
                    .map(|(b, v)| (b.clone(), v - p.get(b).copied().unwrap_or(0.0)))
                    .collect()
            });
            let (busy, backpressure) = match delta.as_ref().map(shares) {
                Some((Some(b), Some(p))) => (Some(b), Some(p)),
                _ => shares(t),
            };
            TileView {
                name: tile.clone(),
                up: flag("dyno_tile_up", tile),
                busy,
                backpressure,
                in_backpressure: flag("dyno_tile_in_backpressure", tile),
            }
        })
        .collect();
    let tps = now
        .sum("dyno_node_tps", &[])
        .or_else(|| rate(prev, now, "dyno_node_transactions_total", &[]))
        .or_else(|| {
            rate(
                prev,
                now,
                "dyno_node_client_transactions_total",
                &[("fate", "executed")],
            )
        });
    let node = NodeView {
        tps,
        height: now.sum("dyno_node_height", &[]),
        adopted: now.sum("dyno_node_blocks_adopted_total", &[]),
        adopted_rate: None,
        // A bench's pipeline counts the blocks it made; a node, those it forged.
        blocks: now
            .sum("dyno_node_blocks_total", &[])
            .or_else(|| now.sum("dyno_node_blocks_forged_total", &[])),
    };
    TargetView {
        name: name.to_string(),
        error: None,
        tiles,
        node,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::live::prom::parse_exposition;
    use std::time::Duration;

    fn reading(at: Instant, text: &str) -> Reading {
        Reading {
            at,
            samples: parse_exposition(text).unwrap(),
        }
    }

    fn tile(wait: f64, backp: f64, finish: f64) -> String {
        format!(
            "dyno_tile_up{{tile=\"verify:0\"}} 1\n\
             dyno_tile_in_backpressure{{tile=\"verify:0\"}} 0\n\
             dyno_tile_time_seconds_total{{tile=\"verify:0\",bucket=\"wait\"}} {wait}\n\
             dyno_tile_time_seconds_total{{tile=\"verify:0\",bucket=\"backp\"}} {backp}\n\
             dyno_tile_time_seconds_total{{tile=\"verify:0\",bucket=\"finish\"}} {finish}\n"
        )
    }

    #[test]
    fn blocks_produced_are_a_benchs_blocks_or_a_nodes_forged_ones() {
        let t0 = Instant::now();
        let bench = reading(t0, "dyno_node_blocks_total 12\n");
        assert_eq!(view("b", None, &bench).node.blocks, Some(12.0));
        let producer = reading(
            t0,
            "dyno_node_blocks_forged_total 4\ndyno_node_blocks_adopted_total 9\n",
        );
        assert_eq!(view("n0", None, &producer).node.blocks, Some(4.0));
        let nothing = reading(t0, "dyno_node_height 3\n");
        assert_eq!(view("x", None, &nothing).node.blocks, None);
    }

    #[test]
    fn shares_cover_the_last_interval_once_there_is_one() {
        let t0 = Instant::now();
        let first = reading(t0, &tile(10.0, 0.0, 0.0));
        let v = view("u", None, &first);
        // Since the start: all caught up.
        assert_eq!(
            (v.tiles[0].busy, v.tiles[0].backpressure),
            (Some(0.0), Some(0.0))
        );
        assert!(v.tiles[0].up && !v.tiles[0].in_backpressure);
        // Over the next second: 0.5 s of work, 0.25 s waiting for credits, 0.25 s idle.
        let second = reading(t0 + Duration::from_secs(1), &tile(10.25, 0.25, 0.5));
        let v = view("u", Some(&first), &second);
        assert_eq!(
            (v.tiles[0].busy, v.tiles[0].backpressure),
            (Some(0.5), Some(0.25))
        );
    }

    #[test]
    fn tps_from_the_gauge_else_from_the_counters_and_adoption_rates() {
        let t0 = Instant::now();
        let a = reading(
            t0,
            "dyno_node_transactions_total 100\ndyno_node_blocks_adopted_total 3\n",
        );
        let b = reading(
            t0 + Duration::from_secs(2),
            "dyno_node_transactions_total 2100\ndyno_node_blocks_adopted_total 7\ndyno_node_height 9\n",
        );
        let v = view("u", Some(&a), &b);
        assert_eq!(v.node.tps, Some(1000.0));
        assert_eq!((v.node.adopted, v.node.height), (Some(7.0), Some(9.0)));
        assert_eq!(view("u", None, &b).node.tps, None);
        let gauge = reading(t0, "dyno_node_tps 1999.5\n");
        assert_eq!(view("u", None, &gauge).node.tps, Some(1999.5));
        // A counter that went backwards (the endpoint restarted) gives no rate.
        assert_eq!(view("u", Some(&b), &a).node.tps, None);
    }
}
