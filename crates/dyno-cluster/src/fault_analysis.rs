//! What a run's faults did: per fault, how long the struck nodes took to be back at the
//! tip and the network to agree again, and when block adoption was back to its
//! pre-fault pace; forks and their depth; blocks some node never adopted; adoption
//! during faults against outside them.
//!
//! It reads the chain events of the reference node's log (`started`, `adopted` with its
//! `height`, `caught_up`) besides the propagation analysis. Every figure is structure
//! first (did the node reach the tip, did a fork happen and resolve) and a time second.

pub use crate::chain_events::{read_chain_events, ChainEvent, RunFacts, Timed};
use crate::error::ClusterError;
use crate::faults::FaultRecord;
use crate::propagation::{Analysis, Distribution, Family, Summary, FRACTIONS};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;

/// The adoption fraction the fault figures follow (80% of nodes, the headline's).
pub const FOLLOWED_FRACTION: f64 = 0.80;

/// Adoption is back to its pre-fault pace at the first block after the fault whose
/// adoption at [`FOLLOWED_FRACTION`] is within this factor of the pre-fault median.
pub const RECOVERED_WITHIN: f64 = 1.10;

/// A struck node's way back.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeRecovery {
    /// The node.
    pub node: String,
    /// Seconds from the fault's end until its chain was as high as every other node's
    /// (`None`: not within the run).
    pub back_at_tip_s: Option<f64>,
    /// The range sync that brought it back, if it logged one after the fault began.
    pub synced_blocks: Option<u64>,
    /// Range requests that sync took.
    pub sync_rounds: Option<u64>,
}

/// What one fault did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FaultOutcome {
    /// The fault and when it really started and ended.
    #[serde(flatten)]
    pub record: FaultRecord,
    /// For restart, pause, resume, upgrade and partition: each struck node's way back.
    pub nodes_recovered: Vec<NodeRecovery>,
    /// Seconds from the fault's end until the first block forged after it was on every
    /// node that was up (the network agrees again); `None`: not within the run, or the
    /// fault lasted to the end.
    pub converged_s: Option<f64>,
    /// Median adoption at 80% of nodes over the window's blocks before the fault.
    pub pre_fault_p50_s: Option<f64>,
    /// Seconds from the fault's end to the start of the first later block adopted by
    /// 80% of nodes within 10% of that median.
    pub adoption_recovered_s: Option<f64>,
    /// Blocks of the window forged while it held.
    pub blocks_during: usize,
    /// Of those, blocks some node never adopted.
    pub blocks_not_everywhere: usize,
    /// For a byzantine fault: what the lying node did and what the honest ones did
    /// about it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub byzantine: Option<crate::byzantine_analysis::ByzantineOutcome>,
}

/// A node leaving one chain for another: `depth` of its blocks were abandoned.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reorg {
    /// The node.
    pub node: String,
    /// When, Unix ns.
    pub ts_ns: u64,
    /// Slot of the first block of the chain it switched to.
    pub slot: u64,
    /// Blocks of its old chain it abandoned.
    pub depth: u64,
}

/// Competing chains in the run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Forks {
    /// Heights at which nodes adopted different blocks.
    pub contested_heights: usize,
    /// Every switch of a node from one chain to another.
    pub reorgs: Vec<Reorg>,
    /// The deepest switch (0: none).
    pub max_depth: u64,
    /// Every contested height was settled by the run's end: every node up at the end
    /// adopted one same block forged after the last fault ended.
    pub resolved: bool,
}

/// Everything the report says of the faults.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FaultReport {
    /// One per scheduled fault, in file order.
    pub faults: Vec<FaultOutcome>,
    /// Competing chains.
    pub forks: Forks,
    /// Blocks of the window some node never adopted.
    pub blocks_not_everywhere: usize,
    /// Adoption at 80% of nodes, over blocks forged while a fault held.
    pub adoption_during_faults: Option<Summary>,
    /// The same over the window's other blocks.
    pub adoption_outside_faults: Option<Summary>,
    /// Fault windows as slot ranges (end exclusive), for plots.
    pub windows: Vec<(u64, u64)>,
}

/// Analyses the faults of a run.
pub fn analyse_faults(
    records: &[FaultRecord],
    analysis: &Analysis,
    events: &[Timed],
    run: &RunFacts,
) -> FaultReport {
    let f80 = FRACTIONS
        .iter()
        .position(|f| *f == FOLLOWED_FRACTION)
        .expect("0.80 is a fraction");
    let windows: Vec<(u64, u64)> = records
        .iter()
        .map(|r| {
            (
                r.at_slot,
                r.end_slot.unwrap_or(run.end_slot).max(r.at_slot + 1),
            )
        })
        .collect();
    let during = |slot: u64| windows.iter().any(|(a, b)| (*a..*b).contains(&slot));
    let summary = |values: Vec<Option<f64>>| {
        let missing = values.iter().filter(|v| v.is_none()).count();
        let mut values_s: Vec<f64> = values.into_iter().flatten().collect();
        values_s.sort_by(f64::total_cmp);
        Distribution {
            key: "adoption_0.80".into(),
            label: "adopted on 80% of nodes".into(),
            family: Family::Adoption,
            values_s,
            missing,
            available: true,
        }
        .summary()
    };
    let (inside, outside): (Vec<_>, Vec<_>) = analysis.blocks.iter().partition(|b| during(b.slot));
    let everywhere = analysis.node_count;
    let faults = records
        .iter()
        .map(|r| {
            // A byzantine fault's reactions are counted until the next one starts.
            let next = records
                .iter()
                .filter(|x| {
                    x.at_slot > r.at_slot && crate::byzantine_analysis::is_byzantine(&x.kind)
                })
                .filter_map(|x| x.start_ns)
                .min();
            one_fault(r, analysis, events, run, (f80, next))
        })
        .collect();
    FaultReport {
        faults,
        forks: forks(events, run, records),
        blocks_not_everywhere: analysis
            .blocks
            .iter()
            .filter(|b| b.adoption_s.len() < everywhere)
            .count(),
        adoption_during_faults: summary(inside.iter().map(|b| b.fractions[f80]).collect()),
        adoption_outside_faults: summary(outside.iter().map(|b| b.fractions[f80]).collect()),
        windows,
    }
}

/// The fault report of a run of `spec` from its reference-node logs; `None` when the
/// file schedules no fault or the nodes are read through `[extract]` rules (their logs
/// have no heights and no syncs).
pub fn of_run(
    spec: &crate::file::ClusterSpec,
    records: &[FaultRecord],
    analysis: &Analysis,
    node_logs: &[PathBuf],
    genesis_time_ns: u64,
    end_slot: u64,
) -> Result<Option<FaultReport>, ClusterError> {
    if records.is_empty() || spec.extract.is_some() {
        return Ok(None);
    }
    let events = read_chain_events(node_logs)?;
    let gone: Vec<String> = spec
        .faults
        .iter()
        .filter(|f| f.kind == crate::faults::FaultKind::Kill)
        .flat_map(|f| f.nodes.iter().map(|&n| spec.nodes[n].name.clone()))
        .collect();
    let run = RunFacts {
        nodes: spec.nodes.iter().map(|n| n.name.clone()).collect(),
        genesis_time_ns,
        slot_ns: spec.slot_ms * 1_000_000,
        end_slot,
        gone: &gone,
    };
    Ok(Some(analyse_faults(records, analysis, &events, &run)))
}

/// The fault report of a run read back from its run directory (`cluster report RUN`):
/// the records `cluster run` kept in `faults.json`, the genesis and the node logs;
/// `None` when the directory has no `faults.json`.
pub fn of_run_dir(
    spec: &crate::file::ClusterSpec,
    dir: &std::path::Path,
    analysis: &Analysis,
    end_slot: u64,
) -> Result<Option<FaultReport>, ClusterError> {
    let path = dir.join("faults.json");
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(None);
    };
    let records: Vec<FaultRecord> = serde_json::from_str(&text).map_err(|e| ClusterError::Log {
        path: path.clone(),
        line: e.line(),
        message: e.to_string(),
    })?;
    let genesis = crate::run_dir::genesis_time_ns(&dir.join("genesis.toml"))?;
    let logs: Vec<PathBuf> = spec
        .nodes
        .iter()
        .map(|n| dir.join(format!("{}.jsonl", n.name)))
        .filter(|p| p.exists())
        .collect();
    of_run(spec, &records, analysis, &logs, genesis, end_slot)
}

fn one_fault(
    r: &FaultRecord,
    analysis: &Analysis,
    events: &[Timed],
    run: &RunFacts,
    (f80, next_byzantine_ns): (usize, Option<u64>),
) -> FaultOutcome {
    let slot_start = |s: u64| run.genesis_time_ns + s * run.slot_ns;
    let end_slot = r.end_slot;
    let end_ns = r.end_ns.or(end_slot.map(slot_start));
    // The nodes a fault takes off the network and gives back: restarted, paused,
    // upgraded, cut off.
    let returns = ["restart", "pause", "upgrade", "resume", "partition"].contains(&r.kind.as_str());
    let nodes_recovered = if returns {
        r.nodes
            .iter()
            .map(|n| node_recovery(n, r.start_ns.unwrap_or(0), end_ns, events))
            .collect()
    } else {
        Vec::new()
    };
    let pre: Vec<f64> = analysis
        .blocks
        .iter()
        .filter(|b| b.slot < r.at_slot)
        .filter_map(|b| b.fractions[f80])
        .collect();
    let pre_fault_p50_s = (!pre.is_empty()).then(|| median(pre));
    let adoption_recovered_s = match (pre_fault_p50_s, end_slot, end_ns) {
        (Some(p50), Some(end), Some(end_ns)) => analysis
            .blocks
            .iter()
            .filter(|b| b.slot >= end)
            .find(|b| b.fractions[f80].is_some_and(|a| a <= p50 * RECOVERED_WITHIN))
            .map(|b| seconds(slot_start(b.slot).saturating_sub(end_ns))),
        _ => None,
    };
    let within: Vec<_> = analysis
        .blocks
        .iter()
        .filter(|b| b.slot >= r.at_slot && end_slot.is_none_or(|e| b.slot < e))
        .collect();
    let byzantine = crate::byzantine_analysis::outcome(
        r,
        events,
        run,
        (end_ns, next_byzantine_ns),
        &within,
        (pre_fault_p50_s, f80),
    );
    FaultOutcome {
        byzantine,
        record: r.clone(),
        nodes_recovered,
        converged_s: end_slot
            .zip(end_ns)
            .and_then(|(end, end_ns)| converged(end, end_ns, events, run)),
        pre_fault_p50_s,
        adoption_recovered_s,
        blocks_during: within.len(),
        blocks_not_everywhere: within
            .iter()
            .filter(|b| b.adoption_s.len() < analysis.node_count)
            .count(),
    }
}

/// When `node` was first back at the tip after `end_ns`: its chain as high as every
/// other node's, and the same block as any node at that height (a node on a fork of
/// equal height is not at the tip).
fn node_recovery(node: &str, start_ns: u64, end_ns: Option<u64>, events: &[Timed]) -> NodeRecovery {
    let mut tips: HashMap<&str, (u64, &str)> = HashMap::new();
    let mut back = None;
    for e in events {
        match &e.what {
            ChainEvent::Started => {
                tips.insert(&e.node, (0, ""));
            }
            ChainEvent::Adopted { height, block, .. } => {
                tips.insert(&e.node, (*height, block));
            }
            ChainEvent::CaughtUp { .. } | ChainEvent::Byzantine(_) => {}
        }
        let Some(end) = end_ns.filter(|end| e.ts_ns >= *end) else {
            continue;
        };
        let Some(&(height, block)) = tips.get(node).filter(|t| t.0 > 0) else {
            continue;
        };
        let at_tip = tips
            .iter()
            .filter(|(n, _)| **n != node)
            .all(|(_, &(h, b))| h < height || (h == height && b == block));
        if at_tip {
            back = Some(seconds(e.ts_ns - end));
            break;
        }
    }
    let sync = events.iter().find_map(|e| match e.what {
        ChainEvent::CaughtUp { blocks, rounds } if e.node == node && e.ts_ns >= start_ns => {
            Some((blocks, rounds))
        }
        _ => None,
    });
    NodeRecovery {
        node: node.to_string(),
        back_at_tip_s: back,
        synced_blocks: sync.map(|s| s.0),
        sync_rounds: sync.map(|s| s.1),
    }
}

/// Seconds from `end_ns` until every node up adopted the first block forged at or
/// after slot `end` that they all adopted.
fn converged(end: u64, end_ns: u64, events: &[Timed], run: &RunFacts) -> Option<f64> {
    let up: HashSet<&str> = run
        .nodes
        .iter()
        .map(String::as_str)
        .filter(|n| !run.gone.iter().any(|g| g == n))
        .collect();
    let mut by_block: BTreeMap<(u64, &str), HashMap<&str, u64>> = BTreeMap::new();
    for e in events {
        if let ChainEvent::Adopted { block, slot, .. } = &e.what {
            if *slot >= end {
                by_block
                    .entry((*slot, block))
                    .or_default()
                    .entry(&e.node)
                    .or_insert(e.ts_ns);
            }
        }
    }
    by_block.values().find_map(|by| {
        up.iter()
            .all(|n| by.contains_key(n))
            .then(|| by.values().max().copied())
            .flatten()
            .map(|last| seconds(last.saturating_sub(end_ns)))
    })
}

fn forks(events: &[Timed], run: &RunFacts, records: &[FaultRecord]) -> Forks {
    let mut at_height: HashMap<u64, HashSet<&str>> = HashMap::new();
    let mut tip: HashMap<&str, u64> = HashMap::new();
    let mut reorgs = Vec::new();
    for e in events {
        match &e.what {
            ChainEvent::Started => {
                tip.remove(e.node.as_str());
            }
            ChainEvent::Adopted {
                block,
                slot,
                height,
            } => {
                at_height.entry(*height).or_default().insert(block);
                if let Some(&old) = tip.get(e.node.as_str()) {
                    // Blocks of a switch are adopted oldest first: the first one sits
                    // just above the fork point.
                    if *height <= old {
                        reorgs.push(Reorg {
                            node: e.node.clone(),
                            ts_ns: e.ts_ns,
                            slot: *slot,
                            depth: old - height + 1,
                        });
                    }
                }
                tip.insert(&e.node, *height);
            }
            ChainEvent::CaughtUp { .. } | ChainEvent::Byzantine(_) => {}
        }
    }
    let last_end = records
        .iter()
        .map(|r| r.end_slot.unwrap_or(0).max(r.at_slot))
        .max()
        .unwrap_or(0);
    let last_end_ns = run.genesis_time_ns + last_end * run.slot_ns;
    Forks {
        contested_heights: at_height.values().filter(|b| b.len() > 1).count(),
        max_depth: reorgs.iter().map(|r| r.depth).max().unwrap_or(0),
        reorgs,
        resolved: converged(last_end, last_end_ns, events, run).is_some(),
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[(v.len() - 1) / 2]
}

fn seconds(ns: u64) -> f64 {
    ns as f64 / 1e9
}

#[cfg(test)]
pub(crate) mod fixtures;
#[cfg(test)]
mod tests;
