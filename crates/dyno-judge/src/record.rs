//! Executions in the results store: one stored run per execution (command `compare`,
//! subject kind `release`), its series as samples (repetition = point index, label
//! `{"t": seconds}`), and its [`ExecutionRecord`] (the comparison it belongs to, the
//! workload, how it ended) in its settings, so a comparison is re-judged from the store
//! alone. The one definition of the stored form: dyno-compare writes executions with
//! [`save`], the judge reads them with [`load`].

use crate::values::RunValue;
use dyno_exec::{Execution, Outcome, Series, SeriesKind};
use dyno_model::{Host, RunInfo, RunStatus, Sample, Subject, SubjectKind};
use dyno_store::{RunFilter, RunId, Store, StoreError, StoredRun};
use serde::{Deserialize, Serialize};

use crate::comparison::{ComparisonMeta, Workload};

/// Every stored run of every comparison, oldest first, with its record (a `compare` run
/// whose settings are not a comparison's is left out): what finding a comparison to
/// continue (dyno-compare) and loading one both walk through. Runs are read one at a
/// time, as the caller asks for them.
pub fn comparison_runs(
    store: &Store,
) -> Result<
    impl DoubleEndedIterator<Item = Result<(StoredRun, ExecutionRecord), StoreError>> + '_,
    StoreError,
> {
    let filter = RunFilter {
        command: Some("compare".into()),
        ..RunFilter::default()
    };
    let mut ids: Vec<RunId> = store
        .list_runs(&filter)?
        .into_iter()
        .map(|r| r.id)
        .collect();
    ids.sort_unstable();
    Ok(ids.into_iter().filter_map(|id| match store.run(id) {
        Err(e) => Some(Err(e)),
        Ok(run) => record_of(&run).map(|s| Ok((run, s))),
    }))
}

/// The record stored with a run, when it is a comparison's.
pub fn record_of(run: &StoredRun) -> Option<ExecutionRecord> {
    serde_json::from_value(run.info.settings.clone()).ok()
}

/// What a comparison's run holds in its settings besides its samples: the comparison
/// it belongs to, the workload, how the execution ended, how its series are read and
/// where each is stored. The stored form of an execution, written by [`save`] and read
/// by [`load`] (and by dyno-compare when it looks for a comparison to continue).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecutionRecord {
    /// The comparison.
    pub comparison: ComparisonMeta,
    /// The workload it ran under.
    pub workload: Workload,
    /// Its round, zero-based.
    pub round: u32,
    /// Which window of its round's start (zero-based; absent in stores from before a
    /// start could hold several).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub window: u32,
    /// Where and in which order its node was started (absent: one at a time, unpinned
    /// or pinned as the file said).
    #[serde(default, skip_serializing_if = "is_unplaced")]
    pub placement: dyno_exec::Placement,
    /// When its measured window opened and closed, seconds since the Unix epoch (absent:
    /// never opened, or stored before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_at: Option<(f64, f64)>,
    /// How it ended.
    pub outcome: Outcome,
    /// What the rest of the machine used during its window (absent: not measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disturbance: Option<dyno_exec::Disturbance>,
    /// Its warnings.
    pub warnings: Vec<String>,
    /// How each series is read, by series name.
    pub kinds: std::collections::BTreeMap<String, SeriesKind>,
    /// Seconds of the comparison when this execution ended, every session together
    /// (what a time budget counts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elapsed_s: Option<f64>,
    /// Series stored under another name (series name -> stored name): levels read as
    /// rates or peaks keep their per-second points there, so the series' own name holds
    /// the one value per execution that compare judges.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub stored_as: std::collections::BTreeMap<String, String>,
    /// Metrics stored as one value per execution, as compare judges them (not series).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub judged: Vec<String>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn is_unplaced(p: &dyno_exec::Placement) -> bool {
    *p == dyno_exec::Placement::default()
}

/// The suffix of the name a rate's or peak's per-second points are stored under, so the
/// series' own name holds its per-execution value (`cpu_percent_1s` beside
/// `cpu_percent`).
pub const PER_SECOND_SUFFIX: &str = "_1s";

/// Writes one execution as one run; returns its id. `elapsed_s` is the comparison's time
/// when it ended, every session together.
///
/// Besides its series (one sample per point), a complete execution stores every value
/// compare judges it by as one sample of that metric: CPU over the window (not a median
/// of seconds), counters' rates, the costs per unit of work. So a metric's history
/// (`dyno results trend`, `dyno serve`) reads what compare judged. A rate's or peak's
/// per-second points move to `<name>_1s` to leave their name to that value.
pub fn save(
    store: &mut Store,
    meta: &ComparisonMeta,
    workload: &Workload,
    host: &Host,
    tool_version: &str,
    exec: &Execution,
    elapsed_s: Option<f64>,
) -> Result<RunId, StoreError> {
    let mut subject = Subject::new(SubjectKind::Release, exec.subject.clone())
        .with("command", exec.command_line.join(" "));
    if let Some(commit) = meta.commits.get(&exec.subject) {
        subject = subject
            .with(dyno_results::GIT_COMMIT, commit.clone())
            .with(dyno_results::COMPARISON_FILE, meta.file.clone());
    }
    let stored_as: std::collections::BTreeMap<String, String> = exec
        .series
        .iter()
        .filter(|s| matches!(s.kind, SeriesKind::Rate | SeriesKind::Peak))
        .map(|s| {
            (
                s.metric.name.clone(),
                format!("{}{PER_SECOND_SUFFIX}", s.metric.name),
            )
        })
        .collect();
    let stored_name = |s: &Series| {
        stored_as
            .get(&s.metric.name)
            .cloned()
            .unwrap_or_else(|| s.metric.name.clone())
    };
    let judged: Vec<RunValue> = if exec.outcome == Outcome::Complete {
        let mut seen: std::collections::HashSet<String> =
            exec.series.iter().map(stored_name).collect();
        crate::work::execution_values(&exec.series, meta.work.get(&exec.workload))
            .into_iter()
            .filter(|v| seen.insert(v.metric.name.clone()))
            .collect()
    } else {
        Vec::new()
    };
    let settings = ExecutionRecord {
        comparison: meta.clone(),
        workload: workload.clone(),
        round: exec.round,
        window: exec.window,
        placement: exec.placement.clone(),
        window_at: exec.window_at,
        outcome: exec.outcome.clone(),
        disturbance: exec.disturbance.clone(),
        warnings: exec.warnings.clone(),
        kinds: exec
            .series
            .iter()
            .map(|s| (s.metric.name.clone(), s.kind))
            .collect(),
        elapsed_s,
        stored_as: stored_as.clone(),
        judged: judged.iter().map(|v| v.metric.name.clone()).collect(),
    };
    let info = RunInfo {
        command: "compare".into(),
        subject,
        host: host.clone(),
        started_at: exec.started_at,
        command_line: exec.command_line.clone(),
        tool_version: tool_version.into(),
        settings: serde_json::to_value(&settings).unwrap_or_default(),
    };
    let metrics: Vec<_> = exec
        .series
        .iter()
        .map(|s| dyno_model::Metric {
            name: stored_name(s),
            ..s.metric.clone()
        })
        .chain(judged.iter().map(|v| v.metric.clone()))
        .collect();
    let id = store.begin_run(&info, &metrics)?;
    let samples: Vec<(Sample, serde_json::Value)> = exec
        .series
        .iter()
        .flat_map(|s| {
            let name = stored_name(s);
            s.points.iter().enumerate().map(move |(i, &(t, value))| {
                (
                    Sample {
                        metric: name.clone(),
                        repetition: i as u32,
                        value,
                    },
                    serde_json::json!({ "t": t }),
                )
            })
        })
        .chain(judged.iter().map(|v| {
            (
                Sample {
                    metric: v.metric.name.clone(),
                    repetition: 0,
                    value: v.value,
                },
                serde_json::json!({ "per": "execution" }),
            )
        }))
        .collect();
    store.add_labeled_samples(id, &samples)?;
    let status = match exec.outcome {
        Outcome::Complete => RunStatus::Complete,
        Outcome::Failed { .. } => RunStatus::Failed,
        Outcome::Interrupted | Outcome::Disturbed { .. } => RunStatus::Incomplete,
    };
    store.finish_run(id, status)?;
    Ok(id)
}

/// What `dyno compare report` needs: the comparison, its executions and its host.
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    /// The comparison.
    pub meta: ComparisonMeta,
    /// Its executions, in the order they ran.
    pub executions: Vec<Execution>,
    /// Its workloads, in the order first stored.
    pub workloads: Vec<Workload>,
    /// Host of the first run.
    pub host: Host,
    /// The run ids.
    pub runs: Vec<RunId>,
    /// Seconds the comparison has taken, every session together (0 for comparisons
    /// stored before this was kept).
    pub elapsed_s: f64,
}

/// Why a comparison cannot be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A run id is not a `dyno compare` run.
    #[error("run {0} is not a `dyno compare` run")]
    NotCompare(RunId),
    /// Runs of different comparisons were given.
    #[error("runs {0} and {1} belong to different comparisons ({2} and {3})")]
    Mixed(RunId, RunId, String, String),
}

/// Loads the whole comparison that the given runs belong to (any one run of it is enough).
pub fn load(store: &Store, runs: &[RunId]) -> Result<Loaded, LoadError> {
    let mut meta: Option<(RunId, ComparisonMeta)> = None;
    for &id in runs {
        let run = store.run(id)?;
        let s = match (run.info.command.as_str(), record_of(&run)) {
            ("compare", Some(s)) => s,
            _ => return Err(LoadError::NotCompare(id)),
        };
        match &meta {
            Some((first, m)) if m.id != s.comparison.id => {
                return Err(LoadError::Mixed(*first, id, m.id.clone(), s.comparison.id))
            }
            Some(_) => {}
            None => meta = Some((id, s.comparison)),
        }
    }
    let Some((_, meta)) = meta else {
        return Err(LoadError::NotCompare(0));
    };
    let mut out = Loaded {
        meta: meta.clone(),
        executions: Vec::new(),
        workloads: Vec::new(),
        host: Host::default(),
        runs: Vec::new(),
        elapsed_s: 0.0,
    };
    for found in comparison_runs(store)? {
        let (run, s) = found?;
        let id = run.id;
        if s.comparison.id != meta.id {
            continue;
        }
        if out.runs.is_empty() {
            out.host = run.info.host.clone();
        }
        out.runs.push(id);
        if !out.workloads.iter().any(|w| w.name == s.workload.name) {
            out.workloads.push(s.workload.clone());
        }
        let labeled = store.labeled_samples(id)?;
        out.elapsed_s = out.elapsed_s.max(s.elapsed_s.unwrap_or(0.0));
        let series_name = |stored: &str| {
            s.stored_as
                .iter()
                .find(|(_, as_)| *as_ == stored)
                .map_or_else(|| stored.to_string(), |(name, _)| name.clone())
        };
        let series = run
            .metrics
            .iter()
            .filter(|m| !s.judged.contains(&m.name))
            .map(|m| Series {
                metric: dyno_model::Metric {
                    name: series_name(&m.name),
                    ..m.clone()
                },
                kind: s
                    .kinds
                    .get(&series_name(&m.name))
                    .copied()
                    .unwrap_or(SeriesKind::Gauge),
                points: labeled
                    .iter()
                    .filter(|(smp, _)| smp.metric == m.name)
                    .map(|(smp, label)| {
                        let t = label
                            .as_ref()
                            .and_then(|l| l.get("t"))
                            .and_then(|t| t.as_f64())
                            .unwrap_or(smp.repetition as f64);
                        (t, smp.value)
                    })
                    .collect(),
            })
            .collect();
        out.executions.push(Execution {
            subject: run.info.subject.name.clone(),
            workload: s.workload.name.clone(),
            round: s.round,
            window: s.window,
            placement: s.placement,
            window_at: s.window_at,
            started_at: run.info.started_at,
            command_line: run.info.command_line.clone(),
            series,
            outcome: s.outcome,
            warnings: s.warnings,
            disturbance: s.disturbance,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic::Synthetic;

    #[test]
    fn executions_round_trip_through_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("r.db")).unwrap();
        let mut workload = Workload::new("value", 1000.0, 0.0, 20.0);
        workload
            .run
            .insert("args".into(), serde_json::json!(["--tps", "{rate}"]));
        let meta = ComparisonMeta::of(&["a", "b"], std::slice::from_ref(&workload), 2);
        let mut ex = Synthetic::new(5);
        let mut made = ex.comparison(&["a", "b"], std::slice::from_ref(&workload), 2);
        ex.failing.push("b".into());
        made.push(ex.execution("b", "value", 1000.0, 2));
        let ids: Vec<RunId> = made
            .iter()
            .map(|e| {
                save(
                    &mut store,
                    &meta,
                    &workload,
                    &Host::default(),
                    "test",
                    e,
                    None,
                )
                .unwrap()
            })
            .collect();
        let loaded = load(&store, &ids[2..3]).unwrap();
        assert_eq!(loaded.meta, meta);
        assert_eq!(loaded.executions, made);
        assert_eq!(loaded.workloads, vec![workload]);
        assert_eq!(loaded.runs, ids);
        assert_eq!(store.run(ids[0]).unwrap().status, RunStatus::Complete);
        assert_eq!(store.run(ids[4]).unwrap().status, RunStatus::Failed);
    }
}
