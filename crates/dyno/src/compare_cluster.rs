//! Clusters as `dyno compare` subjects: the cluster files checked before anything starts,
//! and an [`Executor`] that runs a whole cluster per execution.
//!
//! The executor lives here, in the binary, rather than in either library: dyno-compare
//! judges executions from any [`Executor`] without knowing what a cluster is, and
//! dyno-cluster launches and analyses clusters without knowing about rounds or verdicts.
//! The binary is where both are linked anyway, so data flows one way (cluster launcher ->
//! this adapter -> compare's rounds and verdicts) and neither library grows a dependency
//! on the other.

use anyhow::Context as _;
use dyno_cluster::launch::{Launch, RunOutcome};
use dyno_cluster::propagation::FRACTIONS;
use dyno_cluster::{ClusterSpec, NodeCommand};
use dyno_compare::{ComparisonFile, Execution, Executor, Outcome, Series, SeriesKind};
use dyno_compare::{SubjectSpec, WorkloadSpec};
use dyno_model::{Direction, Metric, Unit};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// The adoption fractions compared (of the eight the cluster report shows): the median
/// node, most nodes, and every node.
const COMPARED_FRACTIONS: [f64; 3] = [0.50, 0.80, 1.00];

/// Reads every cluster subject's cluster file with its release's override applied. A
/// refusal names the comparison file's key and line, then the cluster file's own
/// diagnostic (file:line:column, key, snippet); nothing has started yet.
pub fn load_clusters(
    cfg: &ComparisonFile,
    file: &Path,
) -> anyhow::Result<BTreeMap<String, (ClusterSpec, Option<PathBuf>)>> {
    let mut out = BTreeMap::new();
    let text = || std::fs::read_to_string(file).unwrap_or_default();
    let at = |i: usize, key: &str, message: String| {
        let mut d = dyno_model::ConfigDiagnostic::at_key(
            file,
            &text(),
            &format!("subject[{i}].{key}"),
            message,
        );
        d.snippet.clear();
        d.to_string()
    };
    for (i, s) in cfg.subjects.iter().enumerate() {
        let Some(c) = &s.cluster else { continue };
        let spec = ClusterSpec::load(&c.file).map_err(|e| {
            anyhow::Error::new(e).context(at(
                i,
                "cluster",
                format!("the cluster file {} is refused", c.file.display()),
            ))
        })?;
        let spec = match &c.node_command {
            Some(argv) => spec
                .with_node_command(argv.clone())
                .map_err(|why| anyhow::anyhow!(at(i, "node_command", why)))?,
            None => spec,
        };
        if c.node_binary.is_some() && spec.command != NodeCommand::Reference {
            anyhow::bail!(at(
                i,
                "node_binary",
                format!(
                    "{} runs its own node.command; `node_binary` replaces the reference node (use `node_command`)",
                    c.file.display()
                )
            ));
        }
        out.insert(s.name.clone(), (spec, c.node_binary.clone()));
    }
    Ok(out)
}

/// Runs a whole cluster per execution through dyno-cluster's launcher.
pub struct ClusterExecutor {
    clusters: BTreeMap<String, (ClusterSpec, Option<PathBuf>)>,
    /// This dyno, which runs the reference node unless a subject gives `node_binary`.
    dyno: PathBuf,
    /// Where each execution's run directory goes; complete runs are removed.
    runs: PathBuf,
}

impl ClusterExecutor {
    /// An executor for the clusters [`load_clusters`] read.
    pub fn new(clusters: BTreeMap<String, (ClusterSpec, Option<PathBuf>)>) -> anyhow::Result<Self> {
        let dyno = std::env::current_exe().context("locating the dyno executable")?;
        let runs =
            std::env::temp_dir().join(format!("dyno-compare-clusters-{}", std::process::id()));
        std::fs::create_dir_all(&runs).with_context(|| format!("creating {}", runs.display()))?;
        Ok(ClusterExecutor {
            clusters,
            dyno,
            runs,
        })
    }
}

impl Drop for ClusterExecutor {
    fn drop(&mut self) {
        // Only when empty: a failed execution's logs are kept and named in its warnings.
        let _ = std::fs::remove_dir(&self.runs);
    }
}

/// The cluster file with the workload's rate and window: a comparison runs every subject
/// under the same load for the same time, whatever each cluster file says.
fn under_workload(spec: &ClusterSpec, w: &WorkloadSpec) -> ClusterSpec {
    let mut spec = spec.clone();
    spec.workload.rate_tps = w.rate;
    spec.warmup_s = w.warmup_s.ceil() as u64;
    spec.duration_s = (w.measure_s.ceil() as u64).max(1);
    spec
}

impl Executor for ClusterExecutor {
    fn execute(
        &mut self,
        subject: &SubjectSpec,
        workload: &WorkloadSpec,
        round: u32,
        stop: &AtomicBool,
    ) -> Execution {
        let started_at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let mut exec = Execution {
            subject: subject.name.clone(),
            workload: workload.name.clone(),
            round,
            started_at,
            command_line: Vec::new(),
            series: Vec::new(),
            outcome: Outcome::Complete,
            warnings: Vec::new(),
        };
        let Some((spec, binary)) = self.clusters.get(&subject.name) else {
            exec.outcome = failed(format!("subject `{}` is not a cluster", subject.name));
            return exec;
        };
        let spec = under_workload(spec, workload);
        exec.command_line = command_line(&spec, binary.as_deref().unwrap_or(&self.dyno));
        let dir = self.runs.join(format!(
            "r{round}-{}-{}",
            dns_safe(&subject.name),
            dns_safe(&workload.name)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        let launch = Launch {
            dyno: binary.clone().unwrap_or_else(|| self.dyno.clone()),
            dir: dir.clone(),
        };
        match launch.run(&spec, stop, &mut |_| {}) {
            Err(e) => exec.outcome = failed(e.to_string()),
            Ok(run) => {
                exec.warnings.extend(run.warnings.iter().cloned());
                if run.complete {
                    exec.series = series(&run, spec.slot_ms as f64 / 1000.0);
                    if exec
                        .series
                        .iter()
                        .all(|s| !s.metric.name.contains("adoption"))
                    {
                        exec.warnings.push(format!(
                            "no block was adopted in the measured window ({} blocks seen): lengthen measure_s or check the nodes' logs",
                            run.analysis.blocks.len()
                        ));
                    }
                } else if stop.load(Ordering::SeqCst) {
                    exec.outcome = Outcome::Interrupted;
                } else {
                    exec.outcome = Outcome::Failed {
                        reason: run.problems.join("; "),
                        last_lines: Vec::new(),
                    };
                }
            }
        }
        // A failed run's configs and logs are what the user needs to see why; a complete
        // or interrupted one's are not (its execution is stored, or is run again).
        if !matches!(exec.outcome, Outcome::Failed { .. }) {
            let _ = std::fs::remove_dir_all(&dir);
        } else if dir.exists() {
            exec.warnings.push(format!(
                "the run's configs and logs are kept in {}",
                dir.display()
            ));
        }
        exec
    }
}

fn failed(reason: String) -> Outcome {
    Outcome::Failed {
        reason,
        last_lines: Vec::new(),
    }
}

fn dns_safe(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// What the execution ran, for the record: the cluster file and its node command.
fn command_line(spec: &ClusterSpec, dyno: &Path) -> Vec<String> {
    let mut out = vec![
        "cluster".to_string(),
        spec.path.display().to_string(),
        "--".into(),
    ];
    match &spec.command {
        NodeCommand::Reference => {
            out.extend([dyno.display().to_string(), "node".into(), "run".into()])
        }
        NodeCommand::Argv(argv) => out.extend(argv.iter().cloned()),
    }
    out
}

fn seconds(name: &str) -> Metric {
    Metric::new(name, Unit::Seconds, Direction::LowerIsBetter)
}

/// The compared metrics of one cluster run. Per-block times are observations (the run's
/// value is their median, p50 over the blocks) at the block's slot start; the p90 is
/// nearest-rank, as the cluster report and Cardano give centiles;
/// adoption also gets its p90 over the blocks as a one-point series. CPU and RSS are the
/// mean over nodes per slot, a per-node figure as Cardano reports it, so the number of
/// metrics (and Holm's correction) does not grow with the node count.
fn series(run: &RunOutcome, slot_s: f64) -> Vec<Series> {
    let a = &run.analysis;
    let t0 = run.window_ns.start;
    let at = |ns: u64| (ns as f64 - t0 as f64) / 1e9;
    let mut out = Vec::new();
    let mut observed = |name: String, points: Vec<(f64, f64)>, p90: bool| {
        if points.is_empty() {
            return;
        }
        if p90 {
            let values: Vec<f64> = points.iter().map(|p| p.1).collect();
            if let Some(v) =
                dyno_stats::quantile(&values, 0.90, dyno_stats::QuantileMethod::NearestRank)
            {
                out.push(Series {
                    metric: seconds(&format!("{name}_p90")),
                    kind: SeriesKind::Gauge,
                    points: vec![(0.0, v)],
                });
            }
        }
        out.push(Series {
            metric: seconds(&name),
            kind: SeriesKind::Observations,
            points,
        });
    };
    for f in COMPARED_FRACTIONS {
        let key = format!("adoption_{f:.2}");
        let Some(i) = FRACTIONS.iter().position(|&x| x == f) else {
            continue;
        };
        if a.unavailable.contains(&key) {
            continue;
        }
        let points = a
            .blocks
            .iter()
            .filter_map(|b| Some((at(b.slot_start_ns), b.fractions[i]?)))
            .collect();
        observed(format!("cluster:{key}_s"), points, true);
    }
    if !a.unavailable.iter().any(|k| k == "peer.fetch") {
        let points = a
            .blocks
            .iter()
            .flat_map(|b| {
                b.peers
                    .iter()
                    .filter_map(move |p| Some((at(b.slot_start_ns), p.fetch_s?)))
            })
            .collect();
        observed("cluster:fetch_s".into(), points, false);
    }
    if !a
        .unavailable
        .iter()
        .any(|k| k == "forging.slot_start_to_announced")
    {
        let points = a
            .blocks
            .iter()
            .filter_map(|b| Some((at(b.slot_start_ns), b.forging.slot_start_to_announced_s?)))
            .collect();
        observed("cluster:slot_start_to_announced_s".into(), points, false);
    }
    let slots = run
        .resources
        .iter()
        .map(|r| r.cpu_percent.len().min(r.rss_bytes.len()))
        .min()
        .unwrap_or(0);
    let nodes = run.resources.len() as f64;
    if slots > 0 {
        let mean_per_slot =
            |pick: &dyn Fn(&dyno_cluster::resources::NodeResources, usize) -> f64| {
                (0..slots)
                    .map(|s| {
                        (
                            s as f64 * slot_s,
                            run.resources.iter().map(|r| pick(r, s)).sum::<f64>() / nodes,
                        )
                    })
                    .collect::<Vec<_>>()
            };
        out.push(Series {
            metric: Metric::new(
                "cluster:node_cpu_percent",
                Unit::Percent,
                Direction::LowerIsBetter,
            ),
            // Each slot's CPU is a rate over that slot: the window's CPU time over its
            // length is their time-weighted mean (points at the slots' ends).
            kind: SeriesKind::Rate,
            points: mean_per_slot(&|r, s| r.cpu_percent[s])
                .into_iter()
                .map(|(t, v)| (t + slot_s, v))
                .collect(),
        });
        out.push(Series {
            metric: Metric::new(
                "cluster:node_rss_bytes",
                Unit::Bytes,
                Direction::LowerIsBetter,
            ),
            kind: SeriesKind::Gauge,
            points: mean_per_slot(&|r, s| r.rss_bytes[s]),
        });
    }
    out.extend(fault_series(run.fault_report.as_ref()));
    out
}

/// What a run's faults did, when its cluster file has a schedule, so "does release B
/// recover from a partition faster than A" gets a verdict: per fault, seconds from its
/// end until the network agreed again (`cluster:fault_converged_s`) and until adoption was
/// back at its pre-fault p50 (`cluster:fault_adoption_recovered_s`); per struck node,
/// seconds back at the tip (`cluster:fault_back_at_tip_s`); observations, so the
/// execution's value is their median. Blocks some node never adopted and the deepest
/// fork are one value each. A recovery that did not happen within the run leaves no
/// value (the cluster report of the run says so).
fn fault_series(report: Option<&dyno_cluster::fault_analysis::FaultReport>) -> Vec<Series> {
    let Some(r) = report else {
        return Vec::new();
    };
    let observed = |name: &str, values: Vec<f64>| {
        (!values.is_empty()).then(|| Series {
            metric: seconds(name),
            kind: SeriesKind::Observations,
            points: values.into_iter().map(|v| (0.0, v)).collect(),
        })
    };
    let count = |name: &str, value: f64| Series {
        metric: Metric::new(name, Unit::Count, Direction::LowerIsBetter),
        kind: SeriesKind::Gauge,
        points: vec![(0.0, value)],
    };
    let faults = &r.faults;
    [
        observed(
            "cluster:fault_converged_s",
            faults.iter().filter_map(|f| f.converged_s).collect(),
        ),
        observed(
            "cluster:fault_adoption_recovered_s",
            faults
                .iter()
                .filter_map(|f| f.adoption_recovered_s)
                .collect(),
        ),
        observed(
            "cluster:fault_back_at_tip_s",
            faults
                .iter()
                .flat_map(|f| f.nodes_recovered.iter().filter_map(|n| n.back_at_tip_s))
                .collect(),
        ),
        Some(count(
            "cluster:blocks_not_everywhere",
            r.blocks_not_everywhere as f64,
        )),
        Some(count("cluster:fork_max_depth", r.forks.max_depth as f64)),
    ]
    .into_iter()
    .flatten()
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyno_cluster::fault_analysis::{FaultOutcome, FaultReport, Forks, NodeRecovery};
    use dyno_cluster::faults::FaultRecord;

    fn outcome(converged: Option<f64>, back: &[Option<f64>]) -> FaultOutcome {
        FaultOutcome {
            record: FaultRecord {
                index: 0,
                kind: "restart".into(),
                what: "restart n1".into(),
                nodes: vec!["n1".into()],
                at_slot: 10,
                end_slot: Some(14),
                start_ns: Some(1),
                end_ns: Some(2),
            },
            nodes_recovered: back
                .iter()
                .map(|&b| NodeRecovery {
                    node: "n1".into(),
                    back_at_tip_s: b,
                    synced_blocks: None,
                    sync_rounds: None,
                })
                .collect(),
            converged_s: converged,
            pre_fault_p50_s: Some(0.1),
            adoption_recovered_s: converged.map(|c| c * 2.0),
            blocks_during: 4,
            blocks_not_everywhere: 1,
        }
    }

    #[test]
    fn faults_become_compared_metrics_and_a_run_without_them_adds_none() {
        assert!(fault_series(None).is_empty());
        let report = FaultReport {
            faults: vec![
                outcome(Some(0.5), &[Some(0.7)]),
                outcome(None, &[None, Some(1.5)]),
            ],
            forks: Forks {
                contested_heights: 3,
                reorgs: Vec::new(),
                max_depth: 9,
                resolved: true,
            },
            blocks_not_everywhere: 2,
            adoption_during_faults: None,
            adoption_outside_faults: None,
            windows: Vec::new(),
        };
        let s = fault_series(Some(&report));
        let get = |n: &str| s.iter().find(|x| x.metric.name == n).unwrap();
        let values = |n: &str| get(n).points.iter().map(|p| p.1).collect::<Vec<_>>();
        // A recovery that did not happen leaves no value rather than a zero.
        assert_eq!(values("cluster:fault_converged_s"), [0.5]);
        assert_eq!(values("cluster:fault_adoption_recovered_s"), [1.0]);
        assert_eq!(values("cluster:fault_back_at_tip_s"), [0.7, 1.5]);
        assert_eq!(values("cluster:blocks_not_everywhere"), [2.0]);
        assert_eq!(values("cluster:fork_max_depth"), [9.0]);
        assert_eq!(
            get("cluster:fault_back_at_tip_s").kind,
            SeriesKind::Observations
        );
        // dyno's own measurements of the network: the default primary family.
        assert!(s
            .iter()
            .all(|x| dyno_compare::family::default_primary(&x.metric)));
    }
}
