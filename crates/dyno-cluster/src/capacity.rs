//! Whether a cluster fits this machine, checked before any node starts: its tasks (every
//! thread takes a pid) against `kernel.pid_max`, `kernel.threads-max`, the user's
//! RLIMIT_NPROC and the cgroup's `pids.max`, and its nodes' memory against what is
//! available and the cgroup's memory limit, each with what is in use now. A cluster that
//! cannot fit is refused with the arithmetic, instead of failing at its 780th node with
//! "Resource temporarily unavailable".
//!
//! What one node costs comes from the caller (the binary asks the reference node's own
//! config: `NodeConfig::threads`, and its measured memory); for a node command it is not
//! known, and the check counts one task per node and no memory.

use crate::file::{ClusterSpec, NodeCommand};
use dyno_proc::limits::{Headroom, HostLimits};
use serde::Serialize;

/// What one node costs the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct NodeCost {
    /// Threads (tasks) at its peak.
    pub threads: usize,
    /// Resident memory, bytes (an estimate: see where the caller takes it from).
    pub rss_bytes: u64,
}

/// Tasks of the launcher itself (`dyno cluster run`: its main thread, the signal
/// handler, a spare) and of the group guard (one `sh`).
pub const LAUNCHER_TASKS: u64 = 4;

/// The cluster's demand on the machine and whether it fits, limit by limit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fit {
    /// Tasks the cluster needs at its peak: nodes, launcher, load.
    pub tasks: u64,
    /// How `tasks` adds up, in words.
    pub tasks_sum: String,
    /// The nodes' memory, bytes (`None`: not known for a node command).
    pub memory_bytes: Option<u64>,
    /// How `memory_bytes` adds up, in words.
    pub memory_sum: String,
    /// One line per limit read: the need against what is left.
    pub checked: Vec<String>,
    /// The limits the cluster exceeds, each with the arithmetic (empty: it fits).
    pub refusals: Vec<String>,
}

impl Fit {
    /// True when no limit is exceeded.
    pub fn fits(&self) -> bool {
        self.refusals.is_empty()
    }

    /// The refusal as one message: every exceeded limit with its arithmetic.
    pub fn message(&self, spec: &ClusterSpec) -> String {
        format!(
            "{} nodes do not fit this machine: {}; make the cluster smaller (nodes.count) or \
             its nodes leaner (node.verify_tiles, node.forge = \"sequential\")",
            thousands(spec.nodes.len() as u64),
            self.refusals.join("; ")
        )
    }
}

/// Tasks of the load generator: `dyno load` signs on every core before it starts and
/// keeps a sender thread and a connection driver per target; a workload command is
/// counted as one process.
fn load_tasks(spec: &ClusterSpec, cores: usize) -> u64 {
    if spec.workload.rate_tps <= 0.0 {
        return 0;
    }
    match spec.workload.command {
        Some(_) => 1,
        None => 2 + cores as u64 + 2 * spec.workload.targets.len() as u64,
    }
}

/// Checks `spec` on a machine with `host`'s limits and `cores` cores, its nodes each
/// costing `node` (`None`: unknown, for a node command).
pub fn fit(spec: &ClusterSpec, node: Option<NodeCost>, host: &HostLimits, cores: usize) -> Fit {
    let n = spec.nodes.len() as u64;
    let per_node = node.map_or(1, |c| c.threads as u64);
    let load = load_tasks(spec, cores);
    let tasks = n * per_node + LAUNCHER_TASKS + load;
    let who = match (&spec.command, node) {
        (NodeCommand::Reference, Some(_)) => format!("{per_node} threads"),
        _ => "at least 1 task (a node command's threads are not known)".to_string(),
    };
    let tasks_sum = format!(
        "{} nodes x {who} + {} for dyno, its load and the group guard = {} tasks",
        thousands(n),
        thousands(LAUNCHER_TASKS + load),
        thousands(tasks)
    );
    let memory_bytes = node.map(|c| n * c.rss_bytes);
    let memory_sum = match node {
        Some(c) => format!(
            "{} nodes x {} = {}",
            thousands(n),
            mib(c.rss_bytes),
            mib(n * c.rss_bytes)
        ),
        None => "not estimated (a node command's memory is not known)".to_string(),
    };
    let mut checked = Vec::new();
    let mut refusals = Vec::new();
    let mut against =
        |h: &Option<Headroom>, need: u64, what: &str, sum: &str, fmt: fn(u64) -> String| {
            let Some(h) = h else { return };
            let line = format!(
                "{what}: {sum}, against {} of {} ({} in use now: {} left)",
                h.source,
                fmt(h.limit),
                fmt(h.used),
                fmt(h.left())
            );
            if need > h.left() {
                refusals.push(line.clone());
            }
            checked.push(line);
        };
    for h in [
        &host.pid_max,
        &host.threads_max,
        &host.nproc,
        &host.cgroup_pids,
    ] {
        against(h, tasks, "threads", &tasks_sum, thousands);
    }
    if let Some(need) = memory_bytes {
        for h in [&host.mem_available, &host.cgroup_memory] {
            against(h, need, "memory", &memory_sum, mib);
        }
    }
    Fit {
        tasks,
        tasks_sum,
        memory_bytes,
        memory_sum,
        checked,
        refusals,
    }
}

/// [`fit`] on this machine: its limits read now, its cores.
pub fn fit_here(spec: &ClusterSpec, node: Option<NodeCost>) -> Fit {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    fit(spec, node, &HostLimits::read(), cores)
}

/// [`fit_here`], or the refusal ([`crate::ClusterError::DoesNotFit`]) with the arithmetic of
/// every limit the cluster exceeds: what `check` and `run` do before anything starts.
pub fn refuse_unless_it_fits(
    spec: &ClusterSpec,
    node: Option<NodeCost>,
) -> Result<Fit, crate::ClusterError> {
    let f = fit_here(spec, node);
    if f.fits() {
        Ok(f)
    } else {
        Err(crate::ClusterError::DoesNotFit(f.message(spec)))
    }
}

/// `n` with a comma every three digits.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn mib(bytes: u64) -> String {
    let m = bytes as f64 / (1024.0 * 1024.0);
    if m >= 10_240.0 {
        format!("{:.1} GiB", m / 1024.0)
    } else {
        format!("{m:.1} MiB")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// The example cluster (its load on 3 targets) with `nodes` nodes.
    fn spec(nodes: usize) -> ClusterSpec {
        let text = crate::EXAMPLE.replace("count = 9", &format!("count = {nodes}"));
        ClusterSpec::parse(Path::new("c.toml"), &text).unwrap()
    }

    fn headroom(limit: u64, used: u64, source: &str) -> Option<Headroom> {
        Some(Headroom {
            limit,
            used,
            source: source.into(),
        })
    }

    #[test]
    fn the_issues_cluster_is_refused_with_its_arithmetic() {
        // 1,040 nodes of 31 threads against the kernel's 32,768 pids, 520 tasks running.
        let s = spec(1040);
        let host = HostLimits {
            pid_max: headroom(32_768, 520, "kernel.pid_max"),
            mem_available: headroom(100 << 30, 0, "MemAvailable in /proc/meminfo"),
            ..HostLimits::default()
        };
        let cost = NodeCost {
            threads: 31,
            rss_bytes: 16 << 20,
        };
        let f = fit(&s, Some(cost), &host, 16);
        // 1,040 x 31 = 32,240; dyno load: 2 + 16 cores + 2 x 3 targets = 24; +4.
        assert_eq!(f.tasks, 32_240 + 24 + 4);
        assert!(!f.fits());
        assert_eq!(f.refusals.len(), 1, "{:?}", f.refusals);
        assert_eq!(
            f.refusals[0],
            "threads: 1,040 nodes x 31 threads + 28 for dyno, its load and the group guard = \
             32,268 tasks, against kernel.pid_max of 32,768 (520 in use now: 32,248 left)"
        );
        assert!(f
            .message(&s)
            .starts_with("1,040 nodes do not fit this machine: threads: "));
        // The same nodes at 4 threads fit, with 16.2 GiB of memory.
        let lean = NodeCost {
            threads: 4,
            rss_bytes: 16 << 20,
        };
        let f = fit(&s, Some(lean), &host, 16);
        assert!(f.fits(), "{:?}", f.refusals);
        assert_eq!(f.checked.len(), 2);
        assert_eq!(f.memory_sum, "1,040 nodes x 16.0 MiB = 16.2 GiB");
    }

    #[test]
    fn every_limit_read_is_checked_and_memory_too() {
        let s = spec(100);
        let host = HostLimits {
            pid_max: headroom(4_194_304, 300, "kernel.pid_max"),
            threads_max: headroom(1_000_000, 300, "kernel.threads-max"),
            nproc: headroom(400, 300, "RLIMIT_NPROC (ulimit -u)"),
            cgroup_pids: headroom(10_000, 5, "/sys/fs/cgroup/pids.max"),
            mem_available: headroom(512 << 20, 0, "MemAvailable in /proc/meminfo"),
            cgroup_memory: None,
        };
        let f = fit(
            &s,
            Some(NodeCost {
                threads: 4,
                rss_bytes: 8 << 20,
            }),
            &host,
            2,
        );
        assert_eq!(f.checked.len(), 5);
        // 400 tasks for the user with 300 running cannot take 100 x 4 + 10; 800 MiB of
        // nodes do not fit in 512 MiB.
        assert_eq!(f.refusals.len(), 2, "{:?}", f.refusals);
        assert!(f.refusals[0].starts_with("threads: ") && f.refusals[0].contains("RLIMIT_NPROC"));
        assert!(f.refusals[1].starts_with("memory: 100 nodes x 8.0 MiB = 800.0 MiB"));
        // Nothing readable: nothing to refuse.
        assert!(fit(&s, None, &HostLimits::default(), 2).fits());
    }

    #[test]
    fn thousands_are_separated() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(4_194_304), "4,194,304");
    }
}
