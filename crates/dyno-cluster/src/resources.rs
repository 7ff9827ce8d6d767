//! What the nodes cost: CPU % of one core and RSS per node and slot, from dyno-proc's
//! /proc sampler, and Cardano's "CPU 85% spans" (runs of consecutive slots at or above 85%
//! of a core).

/// CPU share (percent of one core) at or above which a slot counts towards a span.
pub const SPAN_THRESHOLD_PERCENT: f64 = dyno_exec::CPU_SPAN_THRESHOLD;

/// Share of all cores at or above which a slot counts as saturated.
pub const SATURATED_SHARE: f64 = 0.9;

/// A warning when the nodes together kept the machine's cores busy: their summed CPU per
/// slot at or above [`SATURATED_SHARE`] of `cores` in a tenth of the slots or more. Nodes
/// then waited for a core, and the lateness and adoption figures include that wait.
pub fn saturation_warning(resources: &[NodeResources], cores: usize) -> Option<String> {
    let slots = resources.iter().map(|r| r.cpu_percent.len()).min()?;
    if slots == 0 || cores == 0 {
        return None;
    }
    let totals: Vec<f64> = (0..slots)
        .map(|i| resources.iter().map(|r| r.cpu_percent[i]).sum::<f64>() / 100.0)
        .collect();
    let saturated = totals
        .iter()
        .filter(|&&t| t >= SATURATED_SHARE * cores as f64)
        .count();
    if saturated * 10 < slots {
        return None;
    }
    let mean = totals.iter().sum::<f64>() / slots as f64;
    Some(format!(
        "the {} nodes used {mean:.2} of {cores} cores on average and at least {:.0}% of all \
         cores in {saturated} of {slots} slots: nodes waited for a core, which shows up as \
         slot-start lateness and slower adoption",
        resources.len(),
        SATURATED_SHARE * 100.0
    ))
}

/// The nodes' cost sampled once per slot: a slot's figures are the difference between
/// its two /proc readings, and only slots inside the measured window are kept.
pub struct CostSampler {
    sampler: dyno_proc::ProcSampler,
    previous: Vec<Option<dyno_proc::ProcReading>>,
    sampled_slot: Option<u64>,
    window_ns: std::ops::Range<u64>,
    /// What was kept, by node id (the order of the pids given).
    pub resources: Vec<NodeResources>,
}

impl CostSampler {
    /// A sampler of `pids` (node `i`'s process is `pids[i]`), named `names`, keeping the
    /// slots that start inside `window_ns` (Unix ns).
    pub fn new(pids: &[u32], names: &[String], window_ns: std::ops::Range<u64>) -> Self {
        CostSampler {
            sampler: dyno_proc::ProcSampler::many(pids),
            previous: vec![None; pids.len()],
            sampled_slot: None,
            window_ns,
            resources: names
                .iter()
                .map(|n| NodeResources {
                    node: n.clone(),
                    cpu_percent: Vec::new(),
                    rss_bytes: Vec::new(),
                    rss_anon_bytes: Vec::new(),
                })
                .collect(),
        }
    }

    /// Reads every node once per `slot` (a call in a slot already read does nothing).
    pub fn sample(&mut self, now_ns: u64, slot: u64) {
        if self.sampled_slot == Some(slot) {
            return;
        }
        self.sampled_slot = Some(slot);
        let keep = self.window_ns.contains(&now_ns);
        for (i, reading) in self.sampler.read_all().into_iter().enumerate() {
            let Ok(reading) = reading else { continue };
            if let (Some(prev), true) = (&self.previous[i], keep) {
                let s = dyno_proc::sample_between(prev, &reading, self.sampler.clk_tck());
                self.resources[i].cpu_percent.push(s.cpu_percent);
                self.resources[i].rss_bytes.push(s.rss_bytes);
                self.resources[i].rss_anon_bytes.push(s.anon_rss_bytes);
            }
            self.previous[i] = Some(reading);
        }
    }

    /// The nodes' processes now: a node whose pid changed (restarted) is read afresh,
    /// its first slot only a baseline. The sampler is kept (a new one would restart the
    /// clock its readings are timed on, and every node's next interval with it).
    pub fn follow(&mut self, pids: &[u32]) {
        for (i, p) in pids.iter().enumerate() {
            if self.sampler.pids().get(i) != Some(p) {
                self.previous[i] = None;
                self.sampler.replace(i, *p);
            }
        }
    }
}

#[cfg(test)]
mod cost_tests {
    use super::*;

    #[test]
    fn a_restarted_process_keeps_every_nodes_interval_on_one_clock() {
        let me = std::process::id();
        let names = vec!["n0".to_string(), "n1".to_string()];
        let mut c = CostSampler::new(&[me, me], &names, 0..u64::MAX);
        // Busy between readings, so CPU ticks grow and a wrongly timed interval shows.
        let spin = || {
            let t = std::time::Instant::now();
            let mut x = 0u64;
            while t.elapsed() < std::time::Duration::from_millis(40) {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
        };
        c.sample(1, 0);
        spin();
        // n1 "restarted" (here: the same process under the same pid, swapped in).
        c.follow(&[me, me]);
        c.previous[1] = None;
        c.sample(2, 1);
        spin();
        c.sample(3, 2);
        // n0 has two intervals, n1 one; no interval is timed across two clocks, so no
        // CPU share is beyond this machine's cores.
        assert_eq!(c.resources[0].cpu_percent.len(), 2);
        assert_eq!(c.resources[1].cpu_percent.len(), 1);
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        for r in &c.resources {
            for v in &r.cpu_percent {
                assert!((0.0..=100.0 * cores * 1.5).contains(v), "{v}");
            }
        }
    }
}

/// One node's readings, one per slot of the measured window.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct NodeResources {
    /// Node name.
    pub node: String,
    /// CPU % of one core (the node's whole process tree), per slot.
    pub cpu_percent: Vec<f64>,
    /// Resident set size in bytes at the end of each slot.
    pub rss_bytes: Vec<f64>,
    /// Of which anonymous (RssAnon), bytes, at the end of each slot: the node's own
    /// memory. The rest is file pages of the binary and its libraries, which every node
    /// of the cluster shares (one copy in memory however many nodes run).
    pub rss_anon_bytes: Vec<f64>,
}

impl NodeResources {
    /// Lengths (in slots) of the maximal runs of slots at or above
    /// [`SPAN_THRESHOLD_PERCENT`].
    pub fn cpu_85_spans(&self) -> Vec<usize> {
        spans(&self.cpu_percent, SPAN_THRESHOLD_PERCENT)
    }
}

/// Lengths of the maximal runs of `values` at or above `threshold` (dyno-stats', which
/// `dyno compare` counts seconds with).
pub use dyno_stats::spans_at_or_above as spans;

/// A node's summary for tables and JSON.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ResourceSummary {
    /// Node name.
    pub node: String,
    /// Slots sampled.
    pub slots: usize,
    /// Mean CPU % of one core.
    pub cpu_mean_percent: f64,
    /// Highest CPU % in a slot.
    pub cpu_max_percent: f64,
    /// Largest RSS, bytes.
    pub rss_max_bytes: f64,
    /// Largest anonymous RSS (the node's own memory), bytes.
    pub rss_anon_max_bytes: f64,
    /// CPU 85% spans, in slots.
    pub cpu_85_spans: Vec<usize>,
}

impl From<&NodeResources> for ResourceSummary {
    fn from(r: &NodeResources) -> Self {
        let n = r.cpu_percent.len();
        ResourceSummary {
            node: r.node.clone(),
            slots: n,
            cpu_mean_percent: if n == 0 {
                0.0
            } else {
                r.cpu_percent.iter().sum::<f64>() / n as f64
            },
            cpu_max_percent: r.cpu_percent.iter().copied().fold(0.0, f64::max),
            rss_max_bytes: r.rss_bytes.iter().copied().fold(0.0, f64::max),
            rss_anon_max_bytes: r.rss_anon_bytes.iter().copied().fold(0.0, f64::max),
            cpu_85_spans: r.cpu_85_spans(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saturation_is_measured_not_predicted() {
        let node = |cpu: &[f64]| NodeResources {
            node: "n".into(),
            cpu_percent: cpu.to_vec(),
            rss_bytes: vec![0.0; cpu.len()],
            rss_anon_bytes: vec![0.0; cpu.len()],
        };
        // 52 idle nodes at 2% of a core each: 1.04 of 2 cores, no warning.
        let idle: Vec<NodeResources> = (0..52).map(|_| node(&[2.0; 10])).collect();
        assert_eq!(saturation_warning(&idle, 2), None);
        // Two nodes at 95% each in 3 of 10 slots: 1.9 of 2 cores there.
        let mut cpu = [10.0; 10];
        cpu[2..5].fill(95.0);
        let busy = vec![node(&cpu), node(&cpu)];
        let w = saturation_warning(&busy, 2).expect("saturated");
        assert!(w.contains("in 3 of 10 slots"), "{w}");
        // One saturated slot in twenty is below a tenth.
        let mut cpu = [10.0; 20];
        cpu[0] = 100.0;
        assert_eq!(saturation_warning(&[node(&cpu), node(&cpu)], 2), None);
        assert_eq!(saturation_warning(&[], 2), None);
    }

    #[test]
    fn spans_are_maximal_runs_at_or_above_the_threshold() {
        assert_eq!(
            spans(&[90.0, 85.0, 10.0, 99.0, 0.0, 86.0, 87.0, 88.0], 85.0),
            vec![2, 1, 3]
        );
        assert!(spans(&[], 85.0).is_empty());
        assert!(spans(&[84.9, 10.0], 85.0).is_empty());
    }

    #[test]
    fn a_summary_of_known_readings() {
        let r = NodeResources {
            node: "n1".into(),
            cpu_percent: vec![50.0, 90.0, 100.0, 20.0],
            rss_bytes: vec![1e6, 3e6, 2e6, 2e6],
            rss_anon_bytes: vec![4e5, 5e5, 9e5, 6e5],
        };
        let s = ResourceSummary::from(&r);
        assert_eq!(
            (
                s.slots,
                s.cpu_mean_percent,
                s.cpu_max_percent,
                s.rss_max_bytes,
                s.rss_anon_max_bytes
            ),
            (4, 65.0, 100.0, 3e6, 9e5)
        );
        assert_eq!(s.cpu_85_spans, vec![2]);
    }
}

/// Follows the nodes' event logs while they run and counts the blocks every node has
/// adopted, for progress. Reads only what was appended since the last call, in chunks; a
/// line cut by a concurrent write is kept until its end arrives, a line over dyno-proc's
/// line cap is skipped.
#[derive(Debug)]
pub struct AdoptionWatch {
    logs: Vec<(std::path::PathBuf, u64, dyno_proc::lines::LineSplitter)>,
    adopted_by: std::collections::HashMap<String, usize>,
    nodes: usize,
}

impl AdoptionWatch {
    /// Watches these node logs (they may not exist yet).
    pub fn new(logs: Vec<std::path::PathBuf>) -> Self {
        let nodes = logs.len();
        AdoptionWatch {
            logs: logs
                .into_iter()
                .map(|p| (p, 0, Default::default()))
                .collect(),
            adopted_by: std::collections::HashMap::new(),
            nodes,
        }
    }

    /// Reads what the logs gained and returns how many blocks every node has adopted.
    pub fn blocks_adopted_everywhere(&mut self) -> usize {
        use std::io::{Read, Seek, SeekFrom};
        let mut chunk = vec![0u8; 64 * 1024];
        for (path, offset, lines) in &mut self.logs {
            let Ok(mut file) = std::fs::File::open(&*path) else {
                continue;
            };
            if file.seek(SeekFrom::Start(*offset)).is_err() {
                continue;
            }
            while let Ok(n @ 1..) = file.read(&mut chunk) {
                *offset += n as u64;
                let adopted_by = &mut self.adopted_by;
                let _ = lines.push(&chunk[..n], |line| {
                    count_adoption(adopted_by, line);
                    Ok::<(), ()>(())
                });
            }
        }
        self.adopted_by
            .values()
            .filter(|&&n| n >= self.nodes)
            .count()
    }
}

/// Counts one event-log line if it is an adoption.
fn count_adoption(adopted_by: &mut std::collections::HashMap<String, usize>, line: &[u8]) {
    // Cheap filter first: most lines are not adoptions.
    let needle = b"\"adopted\"";
    if !line.windows(needle.len()).any(|w| w == needle) {
        return;
    }
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(line) else {
        return;
    };
    if v["event"] == "adopted" {
        if let Some(block) = v["block"].as_str() {
            *adopted_by.entry(block.to_string()).or_default() += 1;
        }
    }
}

#[cfg(test)]
mod watch_tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn counts_blocks_adopted_by_every_node_across_partial_writes() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.jsonl"), dir.path().join("b.jsonl"));
        let line = |block: &str| {
            format!("{{\"kind\":\"event\",\"event\":\"adopted\",\"ts_ns\":1,\"node\":\"x\",\"slot\":1,\"block\":\"{block}\"}}\n")
        };
        std::fs::write(&a, line("b1") + &line("b2")).unwrap();
        let mut watch = AdoptionWatch::new(vec![a.clone(), b.clone()]);
        assert_eq!(watch.blocks_adopted_everywhere(), 0);
        // Half a line, then the rest: counted once, when complete.
        let full = line("b1");
        std::fs::write(&b, &full[..20]).unwrap();
        assert_eq!(watch.blocks_adopted_everywhere(), 0);
        std::fs::OpenOptions::new()
            .append(true)
            .open(&b)
            .unwrap()
            .write_all(&full.as_bytes()[20..])
            .unwrap();
        assert_eq!(watch.blocks_adopted_everywhere(), 1);
        assert_eq!(watch.blocks_adopted_everywhere(), 1);
    }
}
