//! Block propagation as Cardano reports it, computed from node events.
//!
//! Every figure is a difference between two logged wall-clock times in seconds; the
//! reference point of a block is the scheduled start of its slot (from the leader's
//! `slot_start`, or from genesis), so a late leader shows up in every later figure.
//! Each metric is then a distribution over blocks (forging loop, adoption fractions) or
//! over (block, peer) pairs (peer metrics), summarised with nearest-rank centiles as
//! Cardano does.

use crate::events::{Event, EventKind};
use dyno_stats::{quantile_sorted, QuantileMethod};
use std::collections::{BTreeMap, BTreeSet};

/// The adoption fractions Cardano samples the spread of a block at.
pub const FRACTIONS: [f64; 8] = [0.50, 0.80, 0.90, 0.92, 0.94, 0.96, 0.98, 1.00];

/// How many of `nodes` make up `fraction` of them (at least one).
pub fn nodes_needed(fraction: f64, nodes: usize) -> usize {
    // The epsilon keeps 0.8 * 10 (8.000000000000002 in binary) at 8 nodes, not 9.
    ((fraction * nodes as f64 - 1e-9).ceil() as usize).clamp(1, nodes.max(1))
}

/// Which family a metric belongs to (its table in the report).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    /// On the block's leader, one value per block.
    Forging,
    /// On every other node, one value per (block, node).
    Peer,
    /// Across nodes, one value per block.
    Adoption,
    /// Across nodes, from the leader's announcement, one value per block: what the
    /// network took, the leader's own wait (slot start to announced) taken off.
    Network,
    /// On leaders, one value per slot they started.
    Slot,
}

/// The forging loop of one block on its leader, seconds (`None`: an event is missing).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct ForgingLoop {
    /// Loop start after the scheduled slot start (slot-start lateness).
    pub loop_start_s: Option<f64>,
    /// Slot start to leadership checked.
    pub leadership_check_s: Option<f64>,
    /// Leadership checked to ledger ticked.
    pub ledger_ticking_s: Option<f64>,
    /// Ticked to mempool snapshot.
    pub mempool_snapshot_s: Option<f64>,
    /// Leadership checked to forged.
    pub leadership_to_forged_s: Option<f64>,
    /// Forged to announced.
    pub forged_to_announced_s: Option<f64>,
    /// Forged to adopted on the leader.
    pub forged_to_self_adopted_s: Option<f64>,
    /// Scheduled slot start to announced.
    pub slot_start_to_announced_s: Option<f64>,
}

/// One non-leader node's view of one block, seconds.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct PeerTiming {
    /// The node.
    pub node: String,
    /// Scheduled slot start to the first header received.
    pub first_notice_s: Option<f64>,
    /// First header to the body request.
    pub notice_to_fetch_s: Option<f64>,
    /// Body request to body received.
    pub fetch_s: Option<f64>,
    /// Body received to announced onwards.
    pub fetched_to_announced_s: Option<f64>,
    /// Body received to adopted.
    pub fetched_to_adopted_s: Option<f64>,
}

/// Everything measured about one block.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct BlockPropagation {
    /// Block hash, hex.
    pub block: String,
    /// Slot.
    pub slot: u64,
    /// The node that forged it.
    pub leader: String,
    /// Scheduled slot start, Unix ns.
    pub slot_start_ns: u64,
    /// The leader's forging loop.
    pub forging: ForgingLoop,
    /// Every other node that saw the block.
    pub peers: Vec<PeerTiming>,
    /// (node, seconds from slot start to adoption), earliest first; the leader included.
    pub adoption_s: Vec<(String, f64)>,
    /// Time by which each of [`FRACTIONS`] of all nodes had adopted it (`None`: too few did).
    pub fractions: Vec<Option<f64>>,
}

/// The propagation analysis of one run.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Analysis {
    /// Nodes counted for adoption fractions (the cluster's size, or every node seen).
    pub node_count: usize,
    /// Every block forged, in slot order.
    pub blocks: Vec<BlockPropagation>,
    /// Every `slot_start` of every leader: logged minus scheduled time, seconds.
    pub slot_start_lateness_s: Vec<f64>,
    /// Forged blocks left out because no slot start could be found for them.
    pub blocks_without_slot_start: usize,
    /// What a block's times count from: `"slot start"`, or `"first sighting"` for
    /// events extracted from logs without slots.
    pub measured_from: &'static str,
    /// Metric keys the logs cannot give (a log extractor without the events they need).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unavailable: Vec<String>,
}

/// A named distribution of one metric.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Distribution {
    /// Stable key (`adoption_0.80`, `forging.mempool_snapshot`).
    pub key: String,
    /// Cardano's name for it.
    pub label: String,
    /// Its family.
    pub family: Family,
    /// Values in seconds, ascending.
    pub values_s: Vec<f64>,
    /// Blocks (or block-peer pairs) without a value.
    pub missing: usize,
    /// False when the logs do not record the events this metric needs.
    pub available: bool,
}

/// Summary of a [`Distribution`]: nearest-rank centiles, seconds.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Summary {
    /// Values.
    pub count: usize,
    /// Mean.
    pub mean_s: f64,
    /// Smallest.
    pub min_s: f64,
    /// Median.
    pub p50_s: f64,
    /// 90th centile.
    pub p90_s: f64,
    /// 99th centile.
    pub p99_s: f64,
    /// Largest.
    pub max_s: f64,
}

impl Distribution {
    fn new(
        key: impl Into<String>,
        label: impl Into<String>,
        family: Family,
        all: Vec<Option<f64>>,
    ) -> Self {
        let missing = all.iter().filter(|v| v.is_none()).count();
        let mut values_s: Vec<f64> = all.into_iter().flatten().collect();
        values_s.sort_by(f64::total_cmp);
        Distribution {
            key: key.into(),
            label: label.into(),
            family,
            values_s,
            missing,
            available: true,
        }
    }

    /// Centiles and mean, `None` when no value was measured.
    pub fn summary(&self) -> Option<Summary> {
        let v = &self.values_s;
        let q = |p| quantile_sorted(v, p, QuantileMethod::NearestRank);
        (!v.is_empty()).then(|| Summary {
            count: v.len(),
            mean_s: v.iter().sum::<f64>() / v.len() as f64,
            min_s: v[0],
            p50_s: q(0.50),
            p90_s: q(0.90),
            p99_s: q(0.99),
            max_s: v[v.len() - 1],
        })
    }
}

type ForgingField = fn(&ForgingLoop) -> Option<f64>;
type PeerField = fn(&PeerTiming) -> Option<f64>;

/// The forging-loop metrics: key, Cardano's label, field.
const FORGING: [(&str, &str, ForgingField); 8] = [
    ("loop_start", "loop start after slot start", |f| {
        f.loop_start_s
    }),
    ("leadership_check", "leadership check", |f| {
        f.leadership_check_s
    }),
    ("ledger_ticking", "ledger ticking", |f| f.ledger_ticking_s),
    ("mempool_snapshot", "mempool snapshot", |f| {
        f.mempool_snapshot_s
    }),
    ("leadership_to_forged", "leadership to forged", |f| {
        f.leadership_to_forged_s
    }),
    ("forged_to_announced", "forged to announced", |f| {
        f.forged_to_announced_s
    }),
    ("forged_to_self_adopted", "forged to self-adopted", |f| {
        f.forged_to_self_adopted_s
    }),
    ("slot_start_to_announced", "slot start to announced", |f| {
        f.slot_start_to_announced_s
    }),
];

/// The peer metrics: key, Cardano's label, field.
const PEER: [(&str, &str, PeerField); 5] = [
    ("first_notice", "first notice", |p| p.first_notice_s),
    ("notice_to_fetch", "notice to fetch request", |p| {
        p.notice_to_fetch_s
    }),
    ("fetch", "fetch duration", |p| p.fetch_s),
    ("fetched_to_announced", "fetched to announced", |p| {
        p.fetched_to_announced_s
    }),
    ("fetched_to_adopted", "fetched to adopted", |p| {
        p.fetched_to_adopted_s
    }),
];

impl Analysis {
    /// Every metric as a distribution: forging loop, peer metrics, adoption per fraction,
    /// slot-start lateness.
    pub fn distributions(&self) -> Vec<Distribution> {
        let mut out = Vec::new();
        for (key, label, field) in FORGING {
            let all = self.blocks.iter().map(|b| field(&b.forging)).collect();
            out.push(Distribution::new(
                format!("forging.{key}"),
                label,
                Family::Forging,
                all,
            ));
        }
        for (key, label, field) in PEER {
            let all = self
                .blocks
                .iter()
                .flat_map(|b| b.peers.iter().map(field))
                .collect();
            out.push(Distribution::new(
                format!("peer.{key}"),
                label,
                Family::Peer,
                all,
            ));
        }
        for (i, f) in FRACTIONS.iter().enumerate() {
            let all = self.blocks.iter().map(|b| b.fractions[i]).collect();
            let label = format!("adopted on {:.0}% of nodes", f * 100.0);
            out.push(Distribution::new(
                format!("adoption_{f:.2}"),
                label,
                Family::Adoption,
                all,
            ));
        }
        for (i, f) in FRACTIONS.iter().enumerate() {
            let all = self
                .blocks
                .iter()
                .map(|b| Some(b.fractions[i]? - b.forging.slot_start_to_announced_s?))
                .collect();
            let label = format!("announced to adopted on {:.0}% of nodes", f * 100.0);
            out.push(Distribution::new(
                format!("announced_to_adoption_{f:.2}"),
                label,
                Family::Network,
                all,
            ));
        }
        let lateness = self
            .slot_start_lateness_s
            .iter()
            .map(|&v| Some(v))
            .collect();
        out.push(Distribution::new(
            "slot_start_lateness",
            "slot-start lateness",
            Family::Slot,
            lateness,
        ));
        let no_announce = self
            .unavailable
            .iter()
            .any(|k| k == "forging.slot_start_to_announced");
        for d in &mut out {
            let network = d.family == Family::Network;
            if self.unavailable.contains(&d.key) || (network && no_announce) {
                d.available = false;
                d.values_s.clear();
                d.missing = 0;
            }
        }
        out
    }
}

/// First time each (node, event, key) happened.
#[derive(Default)]
struct Index<'a> {
    by_slot: BTreeMap<(&'a str, &'static str, u64), u64>,
    by_block: BTreeMap<(&'a str, &'static str, &'a str), u64>,
    scheduled: BTreeMap<(&'a str, u64), u64>,
    genesis: BTreeMap<&'a str, (u64, u64)>,
}

impl<'a> Index<'a> {
    fn first<K: Ord>(map: &mut BTreeMap<K, u64>, key: K, ts: u64) {
        map.entry(key)
            .and_modify(|t| *t = (*t).min(ts))
            .or_insert(ts);
    }

    fn build(events: &'a [Event]) -> (Self, Vec<(&'a str, u64, &'a str)>) {
        let mut ix = Index::default();
        let mut forged = Vec::new();
        for e in events {
            let n = e.node.as_str();
            let t = e.ts_ns;
            match &e.what {
                EventKind::Started {
                    genesis_time_ns,
                    slot_ns,
                } => {
                    ix.genesis.insert(n, (*genesis_time_ns, *slot_ns));
                }
                EventKind::SlotStart { slot, scheduled_ns } => {
                    Self::first(&mut ix.by_slot, (n, "slot_start", *slot), t);
                    ix.scheduled.insert((n, *slot), *scheduled_ns);
                }
                EventKind::LeadershipChecked { slot, leader: true } => {
                    Self::first(&mut ix.by_slot, (n, "leadership_checked", *slot), t)
                }
                EventKind::LeadershipChecked { leader: false, .. } => {}
                EventKind::Ticked { slot } => Self::first(&mut ix.by_slot, (n, "ticked", *slot), t),
                EventKind::Snapshot { slot } => {
                    Self::first(&mut ix.by_slot, (n, "snapshot", *slot), t)
                }
                EventKind::Forged { slot, block } => {
                    Self::first(&mut ix.by_block, (n, "forged", block), t);
                    forged.push((n, *slot, block.as_str()));
                }
                EventKind::Announced { block, .. } => {
                    Self::first(&mut ix.by_block, (n, "announced", block), t)
                }
                EventKind::HeaderReceived { block, .. } => {
                    Self::first(&mut ix.by_block, (n, "header", block), t)
                }
                EventKind::FetchRequested { block, .. } => {
                    Self::first(&mut ix.by_block, (n, "fetch_requested", block), t)
                }
                EventKind::FetchCompleted { block, .. } => {
                    Self::first(&mut ix.by_block, (n, "fetch_completed", block), t)
                }
                EventKind::Adopted { block, .. } => {
                    Self::first(&mut ix.by_block, (n, "adopted", block), t)
                }
            }
        }
        forged.sort_by_key(|&(n, slot, block)| (slot, block, n));
        forged.dedup_by_key(|f| f.2);
        (ix, forged)
    }

    fn slot(&self, node: &'a str, event: &'static str, slot: u64) -> Option<u64> {
        self.by_slot.get(&(node, event, slot)).copied()
    }

    fn block(&self, node: &'a str, event: &'static str, block: &'a str) -> Option<u64> {
        self.by_block.get(&(node, event, block)).copied()
    }

    fn slot_start(&self, leader: &'a str, slot: u64) -> Option<u64> {
        if let Some(&s) = self.scheduled.get(&(leader, slot)) {
            return Some(s);
        }
        let (genesis, slot_ns) = self
            .genesis
            .get(leader)
            .or_else(|| self.genesis.values().next())?;
        Some(genesis + slot * slot_ns)
    }
}

/// `later - earlier` in seconds, when both happened (negative when logged out of order).
fn span(earlier: Option<u64>, later: Option<u64>) -> Option<f64> {
    Some((i128::from(later?) - i128::from(earlier?)) as f64 / 1e9)
}

/// Analyses the events of every node of a run. `expected_nodes` is the cluster's size:
/// a node that logged nothing still counts against the adoption fractions.
pub fn analyse(events: &[Event], expected_nodes: usize) -> Analysis {
    let (ix, forged) = Index::build(events);
    let nodes: BTreeSet<&str> = events.iter().map(|e| e.node.as_str()).collect();
    let node_count = expected_nodes.max(nodes.len());
    let mut blocks = Vec::new();
    let mut without = 0;
    for (leader, slot, block) in forged {
        let Some(start) = ix.slot_start(leader, slot) else {
            without += 1;
            continue;
        };
        blocks.push(block_propagation(
            &ix, &nodes, node_count, leader, slot, block, start,
        ));
    }
    let mut lateness: Vec<f64> = ix
        .by_slot
        .iter()
        .filter(|((_, event, _), _)| *event == "slot_start")
        .filter_map(|(&(node, _, slot), &ts)| {
            span(ix.scheduled.get(&(node, slot)).copied(), Some(ts))
        })
        .collect();
    lateness.sort_by(f64::total_cmp);
    Analysis {
        node_count,
        blocks,
        slot_start_lateness_s: lateness,
        blocks_without_slot_start: without,
        measured_from: "slot start",
        unavailable: Vec::new(),
    }
}

/// One block's figures, measured from `start` (its slot start, or its reference time).
fn block_propagation<'a>(
    ix: &Index<'a>,
    nodes: &BTreeSet<&'a str>,
    node_count: usize,
    leader: &'a str,
    slot: u64,
    block: &'a str,
    start: u64,
) -> BlockPropagation {
    let s = Some(start);
    let at = |node, event| ix.block(node, event, block);
    let slot_start = ix.slot(leader, "slot_start", slot);
    let checked = ix.slot(leader, "leadership_checked", slot);
    let ticked = ix.slot(leader, "ticked", slot);
    let forged_at = at(leader, "forged");
    let announced = at(leader, "announced");
    let forging = ForgingLoop {
        loop_start_s: span(s, slot_start),
        leadership_check_s: span(slot_start, checked),
        ledger_ticking_s: span(checked, ticked),
        mempool_snapshot_s: span(ticked, ix.slot(leader, "snapshot", slot)),
        leadership_to_forged_s: span(checked, forged_at),
        forged_to_announced_s: span(forged_at, announced),
        forged_to_self_adopted_s: span(forged_at, at(leader, "adopted")),
        slot_start_to_announced_s: span(s, announced),
    };
    let mut peers = Vec::new();
    let mut adoption_s = Vec::new();
    for &node in nodes {
        if let Some(t) = span(s, at(node, "adopted")) {
            adoption_s.push((node.to_string(), t));
        }
        if node == leader {
            continue;
        }
        let header = at(node, "header");
        let requested = at(node, "fetch_requested");
        let completed = at(node, "fetch_completed");
        let timing = PeerTiming {
            node: node.to_string(),
            first_notice_s: span(s, header),
            notice_to_fetch_s: span(header, requested),
            fetch_s: span(requested, completed),
            fetched_to_announced_s: span(completed, at(node, "announced")),
            fetched_to_adopted_s: span(completed, at(node, "adopted")),
        };
        let saw_it = header.is_some() || requested.is_some() || completed.is_some();
        if saw_it || at(node, "adopted").is_some() {
            peers.push(timing);
        }
    }
    adoption_s.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
    let fractions = FRACTIONS
        .iter()
        .map(|&f| adoption_s.get(nodes_needed(f, node_count) - 1).map(|a| a.1))
        .collect();
    BlockPropagation {
        block: block.to_string(),
        slot,
        leader: leader.to_string(),
        slot_start_ns: start,
        forging,
        peers,
        adoption_s,
        fractions,
    }
}

/// A block's reference: (forged, time, node, slot).
type Reference<'a> = (bool, u64, &'a str, u64);

/// Analyses events extracted from nodes' own logs ([`crate::extract`]), which have no
/// slot starts: a block is measured from its forging when a `forged` rule saw it, else
/// from its first sighting on any node, whose node then stands as its leader (the
/// proposer sees its own block first). `unavailable` names the metrics the rule set
/// cannot measure; they are reported as such, not as zero.
pub fn analyse_extracted(
    events: &[Event],
    expected_nodes: usize,
    unavailable: &[String],
) -> Analysis {
    let (ix, _) = Index::build(events);
    let nodes: BTreeSet<&str> = events.iter().map(|e| e.node.as_str()).collect();
    let node_count = expected_nodes.max(nodes.len());
    // Per block: (forged?, earliest time, its node, slot); a forging beats any sighting.
    let mut reference: BTreeMap<&str, Reference> = BTreeMap::new();
    for e in events {
        let (slot, block, forged) = match &e.what {
            EventKind::Forged { slot, block } => (*slot, block.as_str(), true),
            EventKind::FetchRequested {
                slot: Some(slot),
                block,
            }
            | EventKind::HeaderReceived { slot, block }
            | EventKind::FetchCompleted { slot, block }
            | EventKind::Announced { slot, block }
            | EventKind::Adopted { slot, block } => (*slot, block.as_str(), false),
            _ => continue,
        };
        let candidate = (forged, e.ts_ns, e.node.as_str(), slot);
        reference
            .entry(block)
            .and_modify(|r| {
                if (candidate.0 && !r.0) || (candidate.0 == r.0 && candidate.1 < r.1) {
                    *r = candidate;
                }
            })
            .or_insert(candidate);
    }
    let forged_any = reference.values().any(|r| r.0);
    let mut order: Vec<(&str, Reference)> = reference.into_iter().collect();
    order.sort_by_key(|&(block, (_, ts, _, slot))| (slot, ts, block));
    let blocks = order
        .into_iter()
        .map(|(block, (_, start, leader, slot))| {
            block_propagation(&ix, &nodes, node_count, leader, slot, block, start)
        })
        .collect();
    Analysis {
        node_count,
        blocks,
        slot_start_lateness_s: Vec::new(),
        blocks_without_slot_start: 0,
        measured_from: if forged_any {
            "forging"
        } else {
            "first sighting"
        },
        unavailable: unavailable.to_vec(),
    }
}

#[cfg(test)]
mod tests;
