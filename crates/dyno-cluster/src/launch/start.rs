//! Fast start: the nodes are started in parallel, a bounded number at a time, and their
//! readiness is polled from the launcher's one loop (no thread per node, no wait per
//! node in turn): a node is started as soon as an earlier one is ready, so the machine
//! always has [`at_once`] nodes starting and the start-up time is what the cores allow.

use super::{launch_error, Launch, Node};
use crate::error::ClusterError;
use crate::file::ClusterSpec;
use dyno_proc::{GroupGuard, GuardedChild, Probe};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long one readiness check of one node may take: its endpoint answers at once when
/// it is up, and a node not yet listening refuses at once.
const CHECK_TIMEOUT: Duration = Duration::from_millis(100);
/// Pause between rounds of checks in which no node became ready.
const ROUND_PAUSE: Duration = Duration::from_millis(10);

/// How the cluster started: what the run reports and stores as its start-up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Startup {
    /// Nodes started.
    pub nodes: usize,
    /// Of which answered ready.
    pub ready: usize,
    /// Most nodes starting (started, not yet ready) at once.
    pub at_once: usize,
    /// Seconds from the first node's start to the last node's readiness (to the failure,
    /// when a node never got ready).
    pub ready_s: f64,
    /// Seconds from the first node's start to the last node's start.
    pub spawned_s: f64,
    /// One node's time from its start to its readiness: median and largest, seconds.
    pub node_ready_p50_s: Option<f64>,
    /// The largest.
    pub node_ready_max_s: Option<f64>,
    /// Seconds from the last node's readiness to slot 0 (the genesis time fixed before
    /// any node started); negative when slot 0 began before every node was ready (the
    /// late nodes joined at the slot then current, inside the warm-up).
    pub slot0_after_ready_s: f64,
}

impl Startup {
    /// The sentence the terminal shows.
    pub fn line(&self) -> String {
        let each = match (self.node_ready_p50_s, self.node_ready_max_s) {
            (Some(p50), Some(max)) => {
                format!(" (a node ready {p50:.2} s after its start, p50; {max:.2} s the slowest)")
            }
            _ => String::new(),
        };
        let slot0 = if self.slot0_after_ready_s >= 0.0 {
            format!("slot 0 began {:.1} s later", self.slot0_after_ready_s)
        } else {
            format!(
                "slot 0 began {:.1} s before the last node was ready",
                -self.slot0_after_ready_s
            )
        };
        format!(
            "started {} of {} nodes in {:.1} s, up to {} at once{each}; {slot0}",
            self.ready, self.nodes, self.ready_s, self.at_once
        )
    }
}

/// Seconds from now to slot 0 that the launcher writes into the genesis: enough for
/// `nodes` nodes to start [`at_once`] at a time on `cores` cores, twice over, at
/// [`node_start_cpu_s`] each, plus 5 s.
pub fn start_in_s(nodes: usize, cores: usize) -> u64 {
    let cpu = nodes as f64 * node_start_cpu_s(nodes) / cores.max(1) as f64;
    5 + (2.0 * cpu).ceil() as u64
}

/// CPU seconds one reference node takes to start and answer ready (release build) in a
/// cluster of `nodes` (every node a validator of the genesis, whose keys a node derives
/// as it starts): at least [`NODE_START_CPU_S`], and 15 ms plus 17 us per validator past
/// that. Measured on the 2-core machine (docs/cluster.md, "Scale"): 0.01-0.02 s with 52
/// validators, 0.03 s with 1,040, 0.10 s with 5,000. A debug build takes longer, and its
/// late nodes join inside the warm-up.
pub fn node_start_cpu_s(nodes: usize) -> f64 {
    (0.015 + 17e-6 * nodes as f64).max(NODE_START_CPU_S)
}

/// The least CPU seconds [`start_in_s`] allows a node to start: three times what one
/// took with the genesis of a 1,040-node cluster, for a machine busier than the one
/// it was measured on.
pub const NODE_START_CPU_S: f64 = 0.05;

/// Nodes started at once on a machine of `cores` cores: enough to keep every core busy
/// while some nodes wait on their own I/O, few enough that thousands of nodes do not
/// start at the same moment and starve each other past their readiness timeout.
pub fn at_once(cores: usize) -> usize {
    (8 * cores).clamp(16, 512)
}

/// The nodes started and waited for, what went wrong, and how the start went.
pub(super) struct Started {
    pub(super) nodes: Vec<Node>,
    pub(super) problems: Vec<String>,
    pub(super) startup: Startup,
}

/// One node started and not yet ready.
struct Pending {
    /// Index into the started nodes.
    index: usize,
    probe: Probe,
    since: Instant,
}

impl Launch {
    /// Starts every node, [`at_once`] at a time, polling the starting ones' readiness in
    /// one loop; stops at the first node that exits or is not ready within the
    /// readiness timeout (the nodes started so far are returned, to be stopped).
    pub(super) fn start_nodes(
        &self,
        spec: &ClusterSpec,
        guard: &Option<Arc<GroupGuard>>,
        stop: &AtomicBool,
        progress: &mut dyn FnMut(super::Progress),
    ) -> Result<Started, ClusterError> {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let limit = at_once(cores).min(spec.nodes.len().max(1));
        let timeout = Duration::from_secs(spec.ready_timeout_s);
        let t0 = Instant::now();
        let mut nodes: Vec<Node> = Vec::with_capacity(spec.nodes.len());
        let mut pending: Vec<Pending> = Vec::new();
        let mut took: Vec<f64> = Vec::with_capacity(spec.nodes.len());
        let (mut problems, mut spawned_s, mut most) = (Vec::new(), 0.0, 0);
        while took.len() < spec.nodes.len() && problems.is_empty() {
            if stop.load(Ordering::SeqCst) {
                problems.push("interrupted while the nodes started".to_string());
                break;
            }
            while pending.len() < limit && nodes.len() < spec.nodes.len() {
                let id = nodes.len();
                pending.push(self.start_one(spec, id, guard, &mut nodes)?);
                spawned_s = t0.elapsed().as_secs_f64();
            }
            most = most.max(pending.len());
            let before = took.len();
            let mut i = 0;
            while i < pending.len() {
                let p = &pending[i];
                let node = &mut nodes[p.index];
                let name = &spec.nodes[node.id].name;
                if let Some(status) = node.child.exited() {
                    problems.push(format!(
                        "{name} not ready: exited ({status}) before it was ready; last output: {}",
                        node.child.last_lines().join(" | ")
                    ));
                    break;
                }
                match p.probe.check(Some(&node.child), CHECK_TIMEOUT) {
                    Ok(()) => {
                        took.push(p.since.elapsed().as_secs_f64());
                        pending.swap_remove(i);
                        progress(super::Progress::NodeReady {
                            ready: took.len(),
                            of: spec.nodes.len(),
                        });
                        continue;
                    }
                    Err(why) if p.since.elapsed() >= timeout => {
                        problems.push(format!(
                            "{name} not ready: not ready within {:.1} s (waiting for {}; last check: {why}); last output: {}",
                            p.since.elapsed().as_secs_f64(),
                            p.probe.describe(),
                            node.child.last_lines().join(" | ")
                        ));
                        break;
                    }
                    Err(_) => {}
                }
                i += 1;
            }
            if took.len() == before && problems.is_empty() {
                std::thread::sleep(ROUND_PAUSE);
            }
        }
        let ready = took.len();
        took.sort_by(f64::total_cmp);
        let startup = Startup {
            nodes: nodes.len(),
            ready,
            at_once: most,
            ready_s: t0.elapsed().as_secs_f64(),
            spawned_s,
            node_ready_p50_s: took.get(took.len().saturating_sub(1) / 2).copied(),
            node_ready_max_s: took.last().copied(),
            slot0_after_ready_s: 0.0,
        };
        Ok(Started {
            nodes,
            problems,
            startup,
        })
    }

    /// Starts node `id` and returns its pending readiness.
    fn start_one(
        &self,
        spec: &ClusterSpec,
        id: usize,
        guard: &Option<Arc<GroupGuard>>,
        nodes: &mut Vec<Node>,
    ) -> Result<Pending, ClusterError> {
        let name = &spec.nodes[id].name;
        let url = match &spec.ready_url {
            Some(url) => self.fill(spec, id, url),
            None => format!("http://127.0.0.1:{}/ready", spec.ports(id).2),
        };
        let probe = Probe::http(&url).map_err(|e| launch_error(e.to_string()))?;
        let child = GuardedChild::spawn(self.command(spec, id), &self.node_options(name, guard))
            .map_err(|e| launch_error(format!("{name}: {e}")))?;
        nodes.push(Node { id, child });
        Ok(Pending {
            index: nodes.len() - 1,
            probe,
            since: Instant::now(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slot_zero_leaves_time_for_every_node_to_start() {
        assert_eq!(start_in_s(3, 2), 5 + 1);
        assert_eq!(start_in_s(800, 2), 5 + 40);
        // 5,000 validators: 0.1 s of CPU a node.
        assert_eq!(start_in_s(5000, 16), 5 + 63);
    }

    #[test]
    fn nodes_start_a_bounded_number_at_a_time() {
        assert_eq!(at_once(1), 16);
        assert_eq!(at_once(2), 16);
        assert_eq!(at_once(16), 128);
        assert_eq!(at_once(1024), 512);
    }
}
