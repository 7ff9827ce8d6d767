//! The sessions of `dyno cluster`: `check` as a typed report, and `run` as a measured
//! launch whose figures go to the results store.
//!
//! The binary parses the arguments, calls these, and renders what they return; the
//! mapping of a run to stored samples and the schemas of the JSON bodies live here, so
//! another front end (a scheduler, `dyno serve`) stores and reports a run the same way.

use crate::faults::Fault;
use crate::launch::{Launch, Progress, RunOutcome};
use crate::render::ClusterReport;
use crate::shape::predict;
use crate::{ClusterError, ClusterSpec, NodeCommand, NodeCommandError, NodeSpec, Region, Role};
use dyno_model::{Direction, Metric, RunInfo, RunStatus, Sample, Subject, SubjectKind, Unit};
use dyno_store::{RunId, Store, StoreError};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Instant;

/// The JSON schema of `dyno cluster check --format json`.
pub const CHECK_SCHEMA: &str = "dyno.cluster.check/1";

/// What `dyno cluster check` finds: the topology and the propagation it predicts from
/// each producer, with and without extra cross-region latency.
#[derive(Debug, Clone, Serialize)]
pub struct CheckReport {
    /// Always [`CHECK_SCHEMA`].
    pub schema: &'static str,
    /// The cluster's name.
    pub cluster: String,
    /// Every node.
    pub nodes: Vec<NodeSpec>,
    /// Every region.
    pub regions: Vec<Region>,
    /// The topology's links, as node index pairs.
    pub links: Vec<(usize, usize)>,
    /// The longest shortest path, hops (`None`: not connected).
    pub diameter_hops: Option<usize>,
    /// What may make the cluster's numbers meaningless on this machine.
    pub warnings: Vec<String>,
    /// Milliseconds added to every cross-region link for the delayed prediction.
    pub inject_cross_ms: f64,
    /// The prediction from each producer.
    pub predicted: Vec<PredictedFrom>,
    /// The fault schedule.
    pub faults: Vec<Fault>,
    /// Whether the cluster fits this machine (the caller fills it in: what a node costs
    /// is the node's own to say).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fit: Option<crate::capacity::Fit>,
    /// The fewest and the most peers a node has (the table's; not in the JSON body).
    #[serde(skip)]
    pub peers_per_node: (usize, usize),
}

/// The propagation predicted from one producer.
#[derive(Debug, Clone, Serialize)]
pub struct PredictedFrom {
    /// The producer's name.
    pub producer: String,
    /// Seconds until every node has its block.
    pub full_adoption_s: f64,
    /// The same with `inject_cross_ms` added to every cross-region link.
    pub full_adoption_delayed_s: f64,
    /// Hops to the node reached last.
    pub hops: usize,
    /// Of which cross a region boundary.
    pub cross_region_hops: usize,
    /// The producer's region (the table's; not in the JSON body).
    #[serde(skip)]
    pub region: String,
    /// Its stake; `None` for a relay (the table's).
    #[serde(skip)]
    pub stake: Option<u64>,
    /// Milliseconds until 50%, 80% and 100% of the nodes have its block, and 100% with
    /// the extra latency (the table's, unrounded; not in the JSON body).
    #[serde(skip)]
    pub adoption_ms: [f64; 4],
}

/// Checks `spec` on a machine of `cores` cores and predicts its propagation, also with
/// `inject_cross_ms` more on every cross-region link.
pub fn check(spec: &ClusterSpec, inject_cross_ms: f64, cores: usize) -> CheckReport {
    let predicted = spec
        .producers()
        .map(|p| {
            let (base, delayed) = (predict(spec, p, 0.0), predict(spec, p, inject_cross_ms));
            let node = &spec.nodes[p];
            PredictedFrom {
                producer: node.name.clone(),
                full_adoption_s: base.full_adoption_ms() / 1e3,
                full_adoption_delayed_s: delayed.full_adoption_ms() / 1e3,
                hops: base.hops,
                cross_region_hops: base.cross_region_hops,
                region: spec.regions[node.region].name.clone(),
                stake: match node.role {
                    Role::Producer { stake } => Some(stake),
                    Role::Relay => None,
                },
                adoption_ms: [
                    base.adoption_ms(0.5),
                    base.adoption_ms(0.8),
                    base.full_adoption_ms(),
                    delayed.full_adoption_ms(),
                ],
            }
        })
        .collect();
    let degrees: Vec<usize> = (0..spec.nodes.len())
        .map(|i| spec.topology.degree(i))
        .collect();
    CheckReport {
        schema: CHECK_SCHEMA,
        cluster: spec.name.clone(),
        nodes: spec.nodes.clone(),
        regions: spec.regions.clone(),
        links: spec.topology.edges(),
        diameter_hops: spec.topology.diameter(),
        warnings: spec.warnings(cores),
        inject_cross_ms,
        predicted,
        faults: spec.faults.clone(),
        fit: None,
        peers_per_node: (
            degrees.iter().min().copied().unwrap_or(0),
            degrees.iter().max().copied().unwrap_or(0),
        ),
    }
}

/// What `dyno compare` changes of a cluster file per release and workload when it runs a
/// cluster subject as a child `dyno cluster check|run` (its hidden flags): every subject
/// runs the same load for the same time, each with its own node.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides {
    /// The node command replacing the file's `node.command`.
    pub node_command: Option<Vec<String>>,
    /// Refuse a cluster file with its own `node.command` (compare's `node_binary`
    /// replaces the reference node, so there must be one).
    pub reference_only: bool,
    /// Transactions per second, replacing the file's `workload.rate_tps`.
    pub rate_tps: Option<f64>,
    /// Warm-up seconds, replacing the file's `cluster.warmup_s`.
    pub warmup_s: Option<u64>,
    /// Measured seconds, replacing the file's `cluster.duration_s`.
    pub duration_s: Option<u64>,
}

/// Why a release's overrides do not fit a cluster file.
#[derive(Debug, thiserror::Error)]
pub enum OverrideError {
    /// The node command cannot replace the file's.
    #[error(transparent)]
    NodeCommand(#[from] NodeCommandError),
    /// The file runs its own node, which a `node_binary` cannot replace.
    #[error("{} runs its own node.command; `node_binary` replaces the reference node (use `node_command`)", file.display())]
    NotReference {
        /// The cluster file.
        file: PathBuf,
    },
}

impl Overrides {
    /// `spec` with the release's node command and the workload's rate and times.
    pub fn apply(&self, spec: ClusterSpec) -> Result<ClusterSpec, OverrideError> {
        let mut spec = match &self.node_command {
            Some(argv) => spec.with_node_command(argv.clone())?,
            None => spec,
        };
        if self.reference_only && spec.command != NodeCommand::Reference {
            return Err(OverrideError::NotReference { file: spec.path });
        }
        spec.workload.rate_tps = self.rate_tps.unwrap_or(spec.workload.rate_tps);
        spec.warmup_s = self.warmup_s.unwrap_or(spec.warmup_s);
        spec.duration_s = self.duration_s.unwrap_or(spec.duration_s);
        Ok(spec)
    }
}

/// Where a run of `spec` keeps its configs, node logs and outputs: `dir` when given,
/// else `cluster-runs/<name>-<unix seconds>`.
pub fn run_dir(spec: &ClusterSpec, dir: Option<&Path>) -> PathBuf {
    match dir {
        Some(d) => d.to_path_buf(),
        None => {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            PathBuf::from("cluster-runs").join(format!("{}-{now}", spec.name))
        }
    }
}

/// Each node's metrics endpoint as `NAME=URL`, as a live view (`dyno serve --watch`)
/// takes it.
pub fn watch_urls(spec: &ClusterSpec) -> Vec<String> {
    (0..spec.nodes.len())
        .map(|id| {
            let port = spec.ports(id).2;
            format!("{}=http://127.0.0.1:{port}/metrics", spec.nodes[id].name)
        })
        .collect()
}

/// A cluster run with what dyno itself spent measuring it.
#[derive(Debug)]
pub struct MeasuredRun {
    /// What the launcher did and found.
    pub outcome: RunOutcome,
    /// CPU seconds the dyno process itself used (launcher, /proc sampler over every node,
    /// reading logs, analysis): what the figures pay for being measured on the same cores.
    pub own_cpu_s: Option<f64>,
    /// The run's wall time, seconds.
    pub wall_s: f64,
}

/// Runs the cluster with `launch` until its window ends or `stop` is set, measuring
/// what dyno itself costs meanwhile.
pub fn run(
    spec: &ClusterSpec,
    launch: &Launch,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(Progress),
) -> Result<MeasuredRun, ClusterError> {
    let (cpu_before, wall) = (dyno_proc::procfs::own_cpu_seconds(), Instant::now());
    let outcome = launch.run(spec, stop, progress)?;
    let own_cpu_s = cpu_before
        .zip(dyno_proc::procfs::own_cpu_seconds())
        .map(|(a, b)| b - a);
    Ok(MeasuredRun {
        outcome,
        own_cpu_s,
        wall_s: wall.elapsed().as_secs_f64(),
    })
}

/// The stored metric of a run's start-up: seconds from the first node's start to the
/// last node's readiness (one sample).
pub const STARTUP_METRIC: &str = "startup_s";

/// The stored metrics of what a run's faults did, one sample per fault (labelled with the
/// fault's index in the file, and the node for a node's way back), for the run's page:
/// seconds from the fault's end until adoption on 80% of nodes was back at its pre-fault
/// pace, until every node up agreed again, and until each struck node was back at the
/// tip. A recovery that did not happen within the run has no sample.
pub const FAULT_METRICS: [&str; 3] = [
    "fault.adoption_recovered_s",
    "fault.converged_s",
    "fault.back_at_tip_s",
];

impl MeasuredRun {
    /// What may make the run's figures meaningless: the launcher's warnings, then nodes
    /// that saturated the `cores` of this machine.
    pub fn warnings(&self, cores: usize) -> Vec<String> {
        let outcome = &self.outcome;
        let saturation = crate::resources::saturation_warning(&outcome.resources, cores);
        outcome
            .warnings
            .iter()
            .chain(&saturation)
            .cloned()
            .collect()
    }
}

/// What the store records about who ran a cluster, besides the run itself.
#[derive(Debug, Clone)]
pub struct Provenance {
    /// The cluster file as given (stored absolute).
    pub cluster_file: PathBuf,
    /// dyno's command line.
    pub command_line: Vec<String>,
    /// dyno's version.
    pub tool_version: String,
    /// dyno's build (profile, features...), as JSON.
    pub build: serde_json::Value,
    /// Whether dyno is a debug build (the figures are then not release figures).
    pub debug_build: bool,
}

/// An error storing a run: the step that failed and the store's error.
#[derive(Debug, thiserror::Error)]
#[error("{what}")]
pub struct StoreRunError {
    /// The step.
    pub what: &'static str,
    /// The store's error.
    #[source]
    pub source: StoreError,
}

fn step(what: &'static str) -> impl FnOnce(StoreError) -> StoreRunError {
    move |source| StoreRunError { what, source }
}

/// Begins the run in the store before anything starts, as an incomplete run (its
/// writer, this process, is recorded: a run killed outright reads as incomplete), with
/// the start time and what is known before the launch; `dir` is the run directory.
pub fn begin(
    store: &mut Store,
    spec: &ClusterSpec,
    dir: &Path,
    who: &Provenance,
) -> Result<RunId, StoreRunError> {
    let command = match &spec.command {
        NodeCommand::Reference => "dyno node run".to_string(),
        NodeCommand::Argv(argv) => argv.join(" "),
    };
    let info = RunInfo {
        command: "cluster run".into(),
        subject: Subject::new(SubjectKind::Release, spec.name.clone())
            .with("node_command", command)
            .with("nodes", spec.nodes.len().to_string())
            .with("topology", spec.topology_kind.name().to_string()),
        // The run directory is not made yet: its filesystem is its nearest ancestor's.
        host: dyno_proc::host::probe(
            dir.ancestors()
                .find(|d| d.is_dir())
                .unwrap_or(Path::new(".")),
        ),
        started_at: dyno_model::now_unix(),
        command_line: who.command_line.clone(),
        tool_version: who.tool_version.clone(),
        settings: start_settings(spec, dir, who),
    };
    store
        .begin_run(&info, &[])
        .map_err(step("recording the run in the results store"))
}

/// Records the measured window as soon as it is known ([`Progress::Window`]): from then
/// on `dyno cluster report RUN` can read the run's logs, even if it is killed.
pub fn checkpoint_window(
    store: &mut Store,
    id: RunId,
    spec: &ClusterSpec,
    dir: &Path,
    who: &Provenance,
    (slots, window_ns): (&std::ops::Range<u64>, &std::ops::Range<u64>),
) -> Result<(), StoreRunError> {
    let mut settings = start_settings(spec, dir, who);
    settings["slots"] = serde_json::json!([slots.start, slots.end]);
    settings["window_ns"] = serde_json::json!([window_ns.start, window_ns.end]);
    store
        .update_settings(id, &settings)
        .map_err(step("recording the run's window"))
}

/// Completes the run [`begin`] stored: one metric per propagation figure (seconds, lower
/// is better), one sample per block (or block and peer), each node's CPU and memory per
/// slot (the node a label, the slot the repetition), in the settings what `dyno cluster
/// report RUN` needs to read the run again, and its status.
pub fn finish(
    store: &mut Store,
    id: RunId,
    spec: &ClusterSpec,
    run: &MeasuredRun,
    who: &Provenance,
) -> Result<(), StoreRunError> {
    let outcome = &run.outcome;
    let report = ClusterReport::new(&outcome.analysis, Some(spec));
    let mut metrics: Vec<Metric> = report
        .metrics
        .iter()
        .map(|m| Metric::new(m.key.clone(), Unit::Seconds, Direction::LowerIsBetter))
        .collect();
    metrics.extend([
        Metric::new("node.cpu_percent", Unit::Percent, Direction::LowerIsBetter),
        Metric::new("node.rss_bytes", Unit::Bytes, Direction::LowerIsBetter),
        Metric::new("node.rss_anon_bytes", Unit::Bytes, Direction::LowerIsBetter),
        Metric::new(STARTUP_METRIC, Unit::Seconds, Direction::LowerIsBetter),
    ]);
    if outcome.fault_report.is_some() {
        metrics
            .extend(FAULT_METRICS.map(|m| Metric::new(m, Unit::Seconds, Direction::LowerIsBetter)));
    }
    for m in &metrics {
        store
            .add_metric(id, m)
            .map_err(step("recording the run's metrics"))?;
    }
    let mut samples: Vec<Sample> = report
        .metrics
        .iter()
        .flat_map(|m| {
            m.values_s.iter().enumerate().map(|(i, v)| Sample {
                metric: m.key.clone(),
                repetition: i as u32,
                value: *v,
            })
        })
        .collect();
    samples.push(Sample {
        metric: STARTUP_METRIC.to_string(),
        repetition: 0,
        value: outcome.startup.ready_s,
    });
    store
        .add_samples(id, &samples)
        .map_err(step("storing the samples"))?;
    store
        .add_labeled_samples(id, &node_costs(outcome))
        .map_err(step("storing the nodes' CPU and memory"))?;
    if let Some(faults) = &outcome.fault_report {
        store
            .add_labeled_samples(id, &fault_recoveries(faults))
            .map_err(step("storing what the faults did"))?;
    }
    store
        .update_settings(id, &final_settings(spec, run, &report, who))
        .map_err(step("recording the run's settings"))?;
    let status = if outcome.complete {
        RunStatus::Complete
    } else {
        RunStatus::Incomplete
    };
    store
        .finish_run(id, status)
        .map_err(step("finishing the run"))
}

/// Marks the run [`begin`] stored as failed (the launch itself failed: nothing measured).
pub fn fail(store: &mut Store, id: RunId) -> Result<(), StoreRunError> {
    store
        .finish_run(id, RunStatus::Failed)
        .map_err(step("finishing the run"))
}

/// What the stored run's settings hold before the launch: the files, the shape of the
/// run and who ran it.
fn start_settings(spec: &ClusterSpec, dir: &Path, who: &Provenance) -> serde_json::Value {
    // Before the launch the run directory does not exist yet: made absolute from here.
    let absolute = |p: &Path| {
        std::fs::canonicalize(p)
            .unwrap_or_else(|_| std::env::current_dir().map_or(p.to_path_buf(), |cwd| cwd.join(p)))
    };
    serde_json::json!({
        "cluster_file": absolute(&who.cluster_file).display().to_string(),
        "run_dir": absolute(dir).display().to_string(),
        "slot_ms": spec.slot_ms,
        "duration_s": spec.duration_s,
        "warmup_s": spec.warmup_s,
        "rate_tps": spec.workload.rate_tps,
        "debug_build": who.debug_build,
        "build": who.build,
        // The faults as the file scheduled them (kind, node ids, slots) and the node
        // names the ids stand for, for the run's page.
        "faults": spec.faults,
        "node_names": spec.nodes.iter().map(|n| n.name.as_str()).collect::<Vec<_>>(),
    })
}

/// The stored run's settings once it has ended: [`start_settings`] with what the run
/// found.
fn final_settings(
    spec: &ClusterSpec,
    run: &MeasuredRun,
    report: &ClusterReport,
    who: &Provenance,
) -> serde_json::Value {
    let outcome = &run.outcome;
    let missing: BTreeMap<_, _> = report
        .metrics
        .iter()
        .map(|m| (m.key.clone(), m.missing))
        .collect();
    let mut settings = start_settings(spec, &outcome.dir, who);
    let found = serde_json::json!({
        "blocks": report.blocks,
        "slots": [outcome.slots.start, outcome.slots.end],
        "window_ns": [outcome.window_ns.start, outcome.window_ns.end],
        "missing": missing,
        "problems": outcome.problems,
        "dyno_cpu_s": run.own_cpu_s,
        "dyno_wall_s": run.wall_s,
        "startup": outcome.startup,
    });
    if let (Some(s), serde_json::Value::Object(found)) = (settings.as_object_mut(), found) {
        s.extend(found);
    }
    settings
}

/// What each fault did ([`FAULT_METRICS`]), labelled with the fault (and the node).
fn fault_recoveries(
    faults: &crate::fault_analysis::FaultReport,
) -> Vec<(Sample, serde_json::Value)> {
    let mut out = Vec::new();
    let mut push = |metric: &str, value: Option<f64>, label: serde_json::Value| {
        if let Some(value) = value {
            let repetition = out.len() as u32;
            let metric = metric.to_string();
            out.push((
                Sample {
                    metric,
                    repetition,
                    value,
                },
                label,
            ));
        }
    };
    for f in &faults.faults {
        let fault = serde_json::json!({ "fault": f.record.index });
        push(FAULT_METRICS[0], f.adoption_recovered_s, fault.clone());
        push(FAULT_METRICS[1], f.converged_s, fault);
        for n in &f.nodes_recovered {
            let label = serde_json::json!({ "fault": f.record.index, "node": n.node });
            push(FAULT_METRICS[2], n.back_at_tip_s, label);
        }
    }
    out
}

/// Each node's CPU and memory per slot of the window, labelled with the node.
fn node_costs(outcome: &RunOutcome) -> Vec<(Sample, serde_json::Value)> {
    let mut cost = Vec::new();
    for r in &outcome.resources {
        let label = serde_json::json!({ "node": r.node });
        let slots = r
            .cpu_percent
            .iter()
            .zip(&r.rss_bytes)
            .zip(&r.rss_anon_bytes);
        for (i, ((cpu, rss), anon)) in slots.enumerate() {
            for (metric, value) in [
                ("node.cpu_percent", *cpu),
                ("node.rss_bytes", *rss),
                ("node.rss_anon_bytes", *anon),
            ] {
                let sample = Sample {
                    metric: metric.to_string(),
                    repetition: i as u32,
                    value,
                };
                cost.push((sample, label.clone()));
            }
        }
    }
    cost
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::EXAMPLE;

    fn example() -> ClusterSpec {
        ClusterSpec::parse(Path::new("cluster.toml"), EXAMPLE).unwrap()
    }

    #[test]
    fn what_each_fault_did_is_stored_labelled_and_a_recovery_that_never_came_is_left_out() {
        use crate::fault_analysis::fixtures::{report, restart};
        let report = report(vec![
            restart(0, &[("n1", Some(0.4))], Some(0.9), None),
            restart(1, &[("n2", None), ("n3", Some(1.5))], None, None),
        ]);
        let stored: Vec<(String, f64, String)> = fault_recoveries(&report)
            .into_iter()
            .map(|(s, l)| (s.metric, s.value, l.to_string()))
            .collect();
        assert_eq!(
            stored,
            vec![
                (
                    "fault.adoption_recovered_s".into(),
                    0.9,
                    r#"{"fault":0}"#.into()
                ),
                (
                    "fault.back_at_tip_s".into(),
                    0.4,
                    r#"{"fault":0,"node":"n1"}"#.into()
                ),
                (
                    "fault.back_at_tip_s".into(),
                    1.5,
                    r#"{"fault":1,"node":"n3"}"#.into()
                ),
            ]
        );
    }

    #[test]
    fn overrides_replace_the_load_the_times_and_the_node() {
        let spec = Overrides {
            node_command: Some(vec!["/bin/node".into(), "--id".into(), "{id}".into()]),
            rate_tps: Some(5.0),
            warmup_s: Some(2),
            duration_s: Some(7),
            ..Overrides::default()
        }
        .apply(example())
        .unwrap();
        assert_eq!(spec.workload.rate_tps, 5.0);
        assert_eq!((spec.warmup_s, spec.duration_s), (2, 7));
        assert_eq!(
            spec.command,
            NodeCommand::Argv(vec!["/bin/node".into(), "--id".into(), "{id}".into()])
        );
        // None given: the file's own.
        let same = Overrides::default().apply(example()).unwrap();
        assert_eq!((same.warmup_s, same.duration_s), (30, 300));
        assert_eq!(same.workload.rate_tps, 20.0);
    }

    #[test]
    fn a_node_binary_is_refused_for_a_file_that_runs_its_own_node() {
        let reference_only = Overrides {
            reference_only: true,
            ..Overrides::default()
        };
        assert!(reference_only.apply(example()).is_ok());
        let own = Overrides {
            node_command: Some(vec!["/bin/node".into()]),
            ..Overrides::default()
        }
        .apply(example())
        .unwrap();
        let err = reference_only.apply(own).unwrap_err();
        assert_eq!(
            err.to_string(),
            "cluster.toml runs its own node.command; `node_binary` replaces the reference node (use `node_command`)"
        );
        let empty = Overrides {
            node_command: Some(Vec::new()),
            ..Overrides::default()
        };
        assert!(matches!(
            empty.apply(example()),
            Err(OverrideError::NodeCommand(NodeCommandError::Empty))
        ));
    }

    #[test]
    fn runs_go_to_the_given_directory_or_one_named_after_the_cluster() {
        let spec = example();
        assert_eq!(
            run_dir(&spec, Some(Path::new("here"))),
            PathBuf::from("here")
        );
        let default = run_dir(&spec, None);
        let name = default.file_name().unwrap().to_string_lossy().into_owned();
        assert_eq!(default.parent(), Some(Path::new("cluster-runs")));
        let seconds = name.strip_prefix(&format!("{}-", spec.name)).unwrap();
        assert!(seconds.parse::<u64>().unwrap() > 1_600_000_000, "{name}");
    }

    #[test]
    fn every_node_is_watched_on_its_own_metrics_port() {
        let spec = example();
        let urls = watch_urls(&spec);
        assert_eq!(urls.len(), spec.nodes.len());
        // base_port 31000, three ports per node, metrics the third.
        assert_eq!(
            urls[0],
            format!("{}=http://127.0.0.1:31002/metrics", spec.nodes[0].name)
        );
        assert_eq!(
            urls[2],
            format!("{}=http://127.0.0.1:31008/metrics", spec.nodes[2].name)
        );
    }

    #[test]
    fn the_check_gives_the_range_of_peers_per_node() {
        let spec = example();
        let report = check(&spec, 0.0, 64);
        let degrees: Vec<usize> = (0..spec.nodes.len())
            .map(|i| spec.topology.degree(i))
            .collect();
        let (min, max) = report.peers_per_node;
        assert!(min <= max && min > 0);
        assert!(degrees.contains(&min) && degrees.contains(&max));
        assert!(degrees.iter().all(|d| (min..=max).contains(d)));
        let json = serde_json::to_value(&report).unwrap();
        assert!(
            json.get("peers_per_node").is_none(),
            "the JSON body is unchanged"
        );
    }
}
