//! Topology generators and graph facts: who peers with whom.
//!
//! Links are undirected (a peer connection carries blocks both ways); each direction
//! gets its own shape (latency from the region matrix) in [`crate::shape`]. Nodes are
//! assigned to regions round robin, as Cardano's workbench does (node `i` lives in region
//! `i % regions` at index `i / regions`), so every generator sees the same placement.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use std::collections::{BTreeSet, VecDeque};

/// Which generator builds the peer graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TopologyKind {
    /// A path through every node.
    Line,
    /// A cycle through every node.
    Ring,
    /// A twisted torus: a ring plus a link to the node `w = ceil(sqrt(n))` positions on,
    /// which is a `w`-wide torus whose rows continue into each other; degree 4.
    Torus,
    /// Cardano's "torus dense": inside each region a ring plus two chords per node, and a
    /// link to the node with the same in-region index in every other region.
    DenseTorus,
    /// The edge list given in the file.
    Explicit,
}

impl TopologyKind {
    /// The name used in cluster files.
    pub fn name(self) -> &'static str {
        match self {
            TopologyKind::Line => "line",
            TopologyKind::Ring => "ring",
            TopologyKind::Torus => "torus",
            TopologyKind::DenseTorus => "dense_torus",
            TopologyKind::Explicit => "explicit",
        }
    }
}

/// An undirected peer graph over nodes `0..n`, no self-links, no duplicate links.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topology {
    adjacency: Vec<BTreeSet<usize>>,
}

/// The region of node `id` under round-robin placement.
pub fn region_of(id: usize, regions: usize) -> usize {
    id % regions.max(1)
}

/// The nodes of each region in index order, under round-robin placement.
pub fn region_members(n: usize, regions: usize) -> Vec<Vec<usize>> {
    let regions = regions.max(1);
    let mut members = vec![Vec::new(); regions];
    for id in 0..n {
        members[id % regions].push(id);
    }
    members
}

impl Topology {
    /// A graph with `n` nodes and the given links; self-links are dropped and duplicates
    /// merged (the cluster file rejects both before this is called).
    pub fn from_edges(n: usize, edges: impl IntoIterator<Item = (usize, usize)>) -> Self {
        let mut t = Topology {
            adjacency: vec![BTreeSet::new(); n],
        };
        for (a, b) in edges {
            t.link(a, b);
        }
        t
    }

    fn link(&mut self, a: usize, b: usize) {
        if a != b && a < self.adjacency.len() && b < self.adjacency.len() {
            self.adjacency[a].insert(b);
            self.adjacency[b].insert(a);
        }
    }

    /// Builds the graph of `kind` for `n` nodes over `regions` regions. `seed` shuffles
    /// the order nodes take along the generator's positions (within a region for the dense
    /// torus); without a seed nodes take their positions in id order.
    /// [`TopologyKind::Explicit`] yields a graph without links.
    pub fn generate(kind: TopologyKind, n: usize, regions: usize, seed: Option<u64>) -> Self {
        let mut t = Topology::from_edges(n, []);
        match kind {
            TopologyKind::Line | TopologyKind::Ring | TopologyKind::Torus => {
                let order = shuffled((0..n).collect(), seed);
                let steps: Vec<usize> = match kind {
                    TopologyKind::Torus if n > 4 => vec![1, torus_width(n)],
                    _ => vec![1],
                };
                let wrap = kind != TopologyKind::Line;
                for pos in 0..n {
                    for &s in &steps {
                        if wrap || pos + s < n {
                            t.link(order[pos], order[(pos + s) % n]);
                        }
                    }
                }
            }
            TopologyKind::DenseTorus => {
                let members: Vec<Vec<usize>> = region_members(n, regions)
                    .into_iter()
                    .enumerate()
                    .map(|(r, m)| shuffled(m, seed.map(|s| s.wrapping_add(r as u64))))
                    .collect();
                for m in &members {
                    let len = m.len();
                    let chord = chord_step(len);
                    for pos in 0..len {
                        t.link(m[pos], m[(pos + 1) % len]);
                        if let Some(k) = chord {
                            t.link(m[pos], m[(pos + k) % len]);
                        }
                    }
                }
                for (r, m) in members.iter().enumerate() {
                    for other in members.iter().skip(r + 1) {
                        for (a, b) in m.iter().zip(other) {
                            t.link(*a, *b);
                        }
                    }
                }
            }
            TopologyKind::Explicit => {}
        }
        t
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.adjacency.len()
    }

    /// True when the graph has no nodes.
    pub fn is_empty(&self) -> bool {
        self.adjacency.is_empty()
    }

    /// The peers of node `id`, ascending.
    pub fn peers(&self, id: usize) -> impl Iterator<Item = usize> + '_ {
        self.adjacency[id].iter().copied()
    }

    /// How many peers node `id` has.
    pub fn degree(&self, id: usize) -> usize {
        self.adjacency[id].len()
    }

    /// True when `a` and `b` are peers.
    pub fn linked(&self, a: usize, b: usize) -> bool {
        self.adjacency.get(a).is_some_and(|s| s.contains(&b))
    }

    /// Every link once, as `(low, high)`, ascending.
    pub fn edges(&self) -> Vec<(usize, usize)> {
        let mut edges = Vec::new();
        for (a, peers) in self.adjacency.iter().enumerate() {
            edges.extend(peers.iter().filter(|&&b| a < b).map(|&b| (a, b)));
        }
        edges
    }

    /// Hop counts from `source` to every node (`None`: unreachable).
    pub fn hops_from(&self, source: usize) -> Vec<Option<usize>> {
        let mut hops = vec![None; self.len()];
        if source >= self.len() {
            return hops;
        }
        hops[source] = Some(0);
        let mut queue = VecDeque::from([source]);
        while let Some(v) = queue.pop_front() {
            let next = hops[v].map(|h| h + 1);
            for w in self.peers(v) {
                if hops[w].is_none() {
                    hops[w] = next;
                    queue.push_back(w);
                }
            }
        }
        hops
    }

    /// Nodes that node 0 cannot reach (empty: the graph is connected).
    pub fn unreachable(&self) -> Vec<usize> {
        if self.is_empty() {
            return Vec::new();
        }
        self.hops_from(0)
            .iter()
            .enumerate()
            .filter(|(_, h)| h.is_none())
            .map(|(id, _)| id)
            .collect()
    }

    /// The longest shortest path in hops (`None` when disconnected or empty).
    pub fn diameter(&self) -> Option<usize> {
        let mut longest = 0;
        for id in 0..self.len() {
            for h in self.hops_from(id) {
                longest = longest.max(h?);
            }
        }
        (!self.is_empty()).then_some(longest)
    }
}

/// Width of the twisted torus for `n` nodes.
fn torus_width(n: usize) -> usize {
    (n as f64).sqrt().ceil() as usize
}

/// The chord of a dense-torus region of `len` nodes: about `sqrt(len)` positions on, so a
/// region of 18 has in-region diameter 3 and the 52-node cluster diameter 4 (Cardano's
/// figure). Small regions whose chord would repeat a ring link get none.
fn chord_step(len: usize) -> Option<usize> {
    let k = ((len as f64).sqrt().round() as usize).max(2);
    (len >= 5 && k + 1 < len && 2 * k != len).then_some(k)
}

fn shuffled(mut ids: Vec<usize>, seed: Option<u64>) -> Vec<usize> {
    if let Some(seed) = seed {
        ids.shuffle(&mut rand_pcg::Pcg64::seed_from_u64(seed));
    }
    ids
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const KINDS: [TopologyKind; 4] = [
        TopologyKind::Line,
        TopologyKind::Ring,
        TopologyKind::Torus,
        TopologyKind::DenseTorus,
    ];

    #[test]
    fn cardano_52_node_dense_torus() {
        let t = Topology::generate(TopologyKind::DenseTorus, 52, 3, None);
        let members = region_members(52, 3);
        assert_eq!(
            members.iter().map(Vec::len).collect::<Vec<_>>(),
            [18, 17, 17]
        );
        for id in 0..52 {
            let in_region = t.peers(id).filter(|&p| region_of(p, 3) == region_of(id, 3));
            assert_eq!(in_region.count(), 4, "node {id}");
            let cross = t.peers(id).filter(|&p| region_of(p, 3) != region_of(id, 3));
            // Index 17 exists only in the first region: it has no same-index partner.
            let expected = if id / 3 == 17 { 0 } else { 2 };
            assert_eq!(cross.count(), expected, "node {id}");
        }
        assert_eq!(t.diameter(), Some(4));
        // Same index in every region: node 0 (eu idx 0) with 1 and 2; node 3 with 4 and 5.
        assert!(t.linked(0, 1) && t.linked(0, 2) && t.linked(3, 4) && t.linked(3, 5));
        assert!(!t.linked(0, 4));
    }

    #[test]
    fn small_shapes_have_known_links() {
        let line = Topology::generate(TopologyKind::Line, 4, 1, None);
        assert_eq!(line.edges(), vec![(0, 1), (1, 2), (2, 3)]);
        let ring = Topology::generate(TopologyKind::Ring, 4, 1, None);
        assert_eq!(ring.edges(), vec![(0, 1), (0, 3), (1, 2), (2, 3)]);
        let torus = Topology::generate(TopologyKind::Torus, 9, 1, None);
        assert!(
            torus.linked(0, 3) && torus.linked(0, 1) && torus.linked(0, 8) && torus.linked(0, 6)
        );
        assert_eq!(torus.diameter(), Some(2));
        assert_eq!(line.diameter(), Some(3));
        assert_eq!(ring.diameter(), Some(2));
    }

    #[test]
    fn explicit_graph_reports_unreachable_nodes() {
        let t = Topology::from_edges(5, [(0, 1), (1, 2), (3, 4)]);
        assert_eq!(t.unreachable(), vec![3, 4]);
        assert_eq!(t.diameter(), None);
        assert_eq!(t.hops_from(0), vec![Some(0), Some(1), Some(2), None, None]);
    }

    #[test]
    fn a_seed_changes_the_order_but_not_the_shape() {
        let a = Topology::generate(TopologyKind::Ring, 20, 1, Some(1));
        let b = Topology::generate(TopologyKind::Ring, 20, 1, Some(2));
        assert_ne!(a, b);
        assert_eq!(a, Topology::generate(TopologyKind::Ring, 20, 1, Some(1)));
        assert!((0..20).all(|id| a.degree(id) == 2 && b.degree(id) == 2));
    }

    proptest! {
        #[test]
        fn generated_graphs_are_connected_symmetric_and_bounded(
            kind in 0..KINDS.len(), n in 1usize..70, regions in 1usize..5, seed in proptest::option::of(any::<u64>()),
        ) {
            let kind = KINDS[kind];
            let regions = regions.min(n);
            let t = Topology::generate(kind, n, regions, seed);
            prop_assert_eq!(t.len(), n);
            prop_assert!(t.unreachable().is_empty());
            for a in 0..n {
                prop_assert!(!t.linked(a, a));
                for b in t.peers(a) {
                    prop_assert!(t.linked(b, a));
                }
                let bound = match kind {
                    TopologyKind::Line | TopologyKind::Ring => 2,
                    TopologyKind::Torus => 4,
                    _ => 4 + (regions - 1),
                };
                prop_assert!(t.degree(a) <= bound, "degree {} > {}", t.degree(a), bound);
                if n >= 3 && kind == TopologyKind::Ring {
                    prop_assert_eq!(t.degree(a), 2);
                }
            }
            prop_assert_eq!(t.edges().len() * 2, (0..n).map(|a| t.degree(a)).sum::<usize>());
        }
    }
}
