//! Per-link shape and the propagation the topology predicts.
//!
//! The prediction is what the injected-delay check measures against: a block spreads from
//! its producer along shortest paths. A hop from `v` to `w` is the header/fetch exchange
//! the nodes log: the header travels `v -> w`, the body request `w -> v`, the body
//! `v -> w`, so it costs three one-way latencies (`2 lat(v,w) + lat(w,v)`) plus a per-hop
//! processing constant (validation, adoption, announcing). Bandwidth is not in the
//! prediction: blocks at the reference load are small next to a 100 Mbit/s link.

use crate::file::ClusterSpec;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// One direction of one peer link.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LinkShape {
    /// Sending node id.
    pub from: usize,
    /// Receiving node id.
    pub to: usize,
    /// One-way latency from the region matrix, milliseconds.
    pub latency_ms: f64,
    /// Link bandwidth, megabits per second.
    pub bandwidth_mbit: f64,
    /// True when the link leaves its region.
    pub cross_region: bool,
}

/// Every directed link of the cluster with its shape, ordered by (from, to).
pub fn link_shapes(spec: &ClusterSpec) -> Vec<LinkShape> {
    let mut shapes = Vec::new();
    for from in 0..spec.nodes.len() {
        for to in spec.topology.peers(from) {
            let (rf, rt) = (spec.nodes[from].region, spec.nodes[to].region);
            shapes.push(LinkShape {
                from,
                to,
                latency_ms: spec.regions[rf].latency_ms[rt],
                bandwidth_mbit: spec.bandwidth_mbit,
                cross_region: rf != rt,
            });
        }
    }
    shapes
}

/// Predicted spread of a block from one producer.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Prediction {
    /// The producer.
    pub producer: usize,
    /// Predicted arrival at each node (milliseconds after forging), by node id.
    pub arrival_ms: Vec<f64>,
    /// The node reached last.
    pub farthest: usize,
    /// Hops on the path to the farthest node.
    pub hops: usize,
    /// How many of those hops cross a region boundary.
    pub cross_region_hops: usize,
}

impl Prediction {
    /// Predicted time until every node has the block, milliseconds after forging.
    pub fn full_adoption_ms(&self) -> f64 {
        self.arrival_ms[self.farthest]
    }

    /// Predicted time until a `fraction` of the nodes have it (the producer counts).
    pub fn adoption_ms(&self, fraction: f64) -> f64 {
        let mut sorted = self.arrival_ms.clone();
        sorted.sort_by(f64::total_cmp);
        let k = crate::propagation::nodes_needed(fraction, sorted.len());
        sorted[k.max(1) - 1]
    }
}

#[derive(PartialEq)]
struct Frontier(f64, usize);

impl Eq for Frontier {}

impl PartialOrd for Frontier {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Frontier {
    // Reversed: BinaryHeap is a max-heap and the nearest node must come out first.
    fn cmp(&self, other: &Self) -> Ordering {
        other.0.total_cmp(&self.0).then(other.1.cmp(&self.1))
    }
}

/// Shortest-path spread from `producer` (Dijkstra over the header/fetch exchange plus
/// `hop_processing_ms`). `extra_cross_ms` is added to every cross-region link, each way:
/// the injected delay (a crossing then costs three times it).
pub fn predict(spec: &ClusterSpec, producer: usize, extra_cross_ms: f64) -> Prediction {
    let n = spec.nodes.len();
    let mut arrival = vec![f64::INFINITY; n];
    let mut via: Vec<Option<usize>> = vec![None; n];
    arrival[producer] = 0.0;
    let mut heap = BinaryHeap::from([Frontier(0.0, producer)]);
    while let Some(Frontier(t, v)) = heap.pop() {
        if t > arrival[v] {
            continue;
        }
        for w in spec.topology.peers(v) {
            let (rv, rw) = (spec.nodes[v].region, spec.nodes[w].region);
            let extra = if rv == rw { 0.0 } else { extra_cross_ms };
            let there = spec.regions[rv].latency_ms[rw] + extra;
            let back = spec.regions[rw].latency_ms[rv] + extra;
            let cost = 2.0 * there + back + spec.hop_processing_ms;
            if t + cost < arrival[w] {
                arrival[w] = t + cost;
                via[w] = Some(v);
                heap.push(Frontier(t + cost, w));
            }
        }
    }
    let farthest = (0..n)
        .max_by(|&a, &b| arrival[a].total_cmp(&arrival[b]).then(b.cmp(&a)))
        .unwrap_or(producer);
    let (mut hops, mut cross) = (0, 0);
    let mut at = farthest;
    while let Some(prev) = via[at] {
        hops += 1;
        cross += usize::from(spec.nodes[prev].region != spec.nodes[at].region);
        at = prev;
    }
    Prediction {
        producer,
        arrival_ms: arrival,
        farthest,
        hops,
        cross_region_hops: cross,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn spec(edit: &[(&str, &str)]) -> ClusterSpec {
        let mut text = include_str!("example.toml").to_string();
        for (from, to) in edit {
            assert!(text.contains(from));
            text = text.replacen(from, to, 1);
        }
        ClusterSpec::parse(Path::new("c.toml"), &text).unwrap()
    }

    #[test]
    fn links_take_the_latency_of_their_regions() {
        let s = spec(&[]);
        let shapes = link_shapes(&s);
        assert_eq!(shapes.len(), 2 * s.topology.edges().len());
        let l = shapes.iter().find(|l| l.from == 0 && l.to == 2).unwrap();
        assert_eq!((l.latency_ms, l.cross_region), (145.0, true));
        let l = shapes.iter().find(|l| l.from == 0 && l.to == 3).unwrap();
        assert_eq!((l.latency_ms, l.cross_region), (1.0, false));
        assert!(shapes.iter().all(|l| l.bandwidth_mbit == 100.0));
    }

    #[test]
    fn a_line_predicts_the_sum_of_its_hops() {
        // A line 0-1-2-3-4-5 over regions eu, us, ap, eu, us, ap: every hop crosses.
        let s = spec(&[
            ("count = 9", "count = 6"),
            ("kind = \"dense_torus\"", "kind = \"line\""),
            ("targets = [0, 1, 2]", ""),
        ]);
        let p = predict(&s, 0, 0.0);
        // Each hop is three one-way latencies + 5: eu->us 3x45, us->ap 3x100, ap->eu 3x145...
        assert_eq!(p.arrival_ms, vec![0.0, 140.0, 445.0, 885.0, 1025.0, 1330.0]);
        assert_eq!((p.farthest, p.hops, p.cross_region_hops), (5, 5, 5));
        assert_eq!(p.full_adoption_ms(), 1330.0);
        assert_eq!(p.adoption_ms(0.5), 445.0);
        let delayed = predict(&s, 0, 100.0);
        assert_eq!(delayed.full_adoption_ms() - p.full_adoption_ms(), 1500.0);
    }

    #[test]
    fn the_torus_routes_around_the_slow_link() {
        let s = spec(&[]);
        // From n0 (eu) to n2 (ap): direct 3x145 + 5 = 440 beats via us (140 + 305 = 445).
        let p = predict(&s, 0, 0.0);
        assert_eq!(p.arrival_ms[2], 440.0);
        // With 100 ms more on every cross link, the one direct crossing wins clearly.
        assert_eq!(predict(&s, 0, 100.0).arrival_ms[2], 740.0);
        // Every node is one crossing away at most from n0's region: the full-adoption
        // delta is one crossing's three injected delays.
        let d = predict(&s, 0, 100.0).full_adoption_ms() - p.full_adoption_ms();
        assert_eq!(d, 300.0);
        assert_eq!(p.cross_region_hops, 1);
    }
}
