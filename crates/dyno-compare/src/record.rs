//! Executions in the results store: one stored run per execution (command `compare`,
//! subject kind `release`), its series as samples (repetition = point index, label
//! `{"t": seconds, "kind": ...}`), and the comparison it belongs to in its settings, so
//! `dyno compare report` can rebuild every verdict from the store alone.

use crate::execution::{Execution, Outcome, Series, SeriesKind};
use crate::spec::{ComparisonFile, WorkloadSpec};
use dyno_model::{Host, RunInfo, RunStatus, Sample, Subject, SubjectKind};
use dyno_store::{RunFilter, RunId, Store, StoreError, StoredRun};
use serde::{Deserialize, Serialize};

/// What every run of one comparison shares.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComparisonMeta {
    /// Unique id of the comparison (`cmp-<unix ms>-<pid>`).
    pub id: String,
    /// Subject names; the first is the baseline.
    pub subjects: Vec<String>,
    /// Workload names.
    pub workloads: Vec<String>,
    /// Rounds planned.
    pub rounds: u32,
    /// Noise band.
    pub noise_band: f64,
    /// Family-wise alpha.
    pub alpha: f64,
    /// Seed.
    pub seed: u64,
    /// Hash of everything that decides the plan and the measurements (the validated
    /// file, selected workloads and rounds): a run with the same fingerprint continues
    /// this comparison. Empty for comparisons stored before resuming existed.
    #[serde(default)]
    pub fingerprint: String,
    /// The comparison file as given on the command line.
    #[serde(default)]
    pub file: String,
    /// The file's `test`, so a report judges as the run did (`None`: the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test: Option<crate::spec::TestKind>,
    /// The file's `primary` metrics, so a report judges as the run did (empty: the
    /// default family).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub primary: Vec<String>,
    /// Each workload's unit of work (`work`), by workload name.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub work: std::collections::BTreeMap<String, crate::work::WorkUnit>,
    /// The precision target and budget (`rounds` is then `max_rounds`), as the newest
    /// session of the comparison ran it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequential: Option<crate::spec::Sequential>,
    /// The commit each git subject was built from, by subject name: stored with its runs
    /// (subject attribute `git_commit`), so a change point between two of them in `dyno
    /// results trend` says which `dyno compare bisect` would search it.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub commits: std::collections::BTreeMap<String, String>,
}

impl ComparisonMeta {
    /// The meta of a comparison about to run.
    pub fn new(cfg: &ComparisonFile) -> Self {
        ComparisonMeta {
            id: format!(
                "cmp-{}-{}",
                (dyno_model::now_unix() * 1000.0) as u64,
                std::process::id()
            ),
            subjects: cfg.subjects.iter().map(|s| s.name.clone()).collect(),
            workloads: cfg.workloads.iter().map(|w| w.name.clone()).collect(),
            rounds: cfg.rounds,
            noise_band: cfg.noise_band,
            alpha: cfg.alpha,
            seed: cfg.seed,
            fingerprint: fingerprint(cfg),
            file: String::new(),
            test: cfg.test,
            primary: cfg.primary.clone(),
            work: cfg
                .workloads
                .iter()
                .filter_map(|w| Some((w.name.clone(), w.work.clone()?)))
                .collect(),
            sequential: cfg.sequential,
            commits: cfg
                .subjects
                .iter()
                .filter_map(|s| Some((s.name.clone(), s.git.as_ref()?.commit.clone())))
                .collect(),
        }
    }

    /// Executions the comparison plans.
    pub fn planned(&self) -> usize {
        self.rounds as usize * self.subjects.len() * self.workloads.len()
    }
}

/// A stable hash (FNV-1a, 64 bits) of the validated comparison as JSON: the same file,
/// seed, rounds and workloads give the same fingerprint on every machine and version of
/// Rust (unlike `DefaultHasher`). With a precision target the rounds are its budget, not
/// part of what is measured: they are hashed as 0 (which no fixed comparison has).
pub fn fingerprint(cfg: &ComparisonFile) -> String {
    let text = if cfg.sequential.is_some() {
        let mut c = cfg.clone();
        c.rounds = 0;
        serde_json::to_string(&c)
    } else {
        serde_json::to_string(cfg)
    };
    digest(&text.unwrap_or_default())
}

/// FNV-1a of `text` in hex: stable across builds and platforms, unlike std's hasher.
pub fn digest(text: &str) -> String {
    let h = text.bytes().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100000001b3)
    });
    format!("{h:016x}")
}

/// What a new `dyno compare run` of a file should do with what the store holds.
#[derive(Debug, Clone, PartialEq)]
pub enum Resume {
    /// Nothing to continue: a new comparison.
    Fresh,
    /// An unfinished comparison of the same file, seed and settings: continue it.
    Continue(Box<Loaded>),
    /// The newest unfinished comparison of this file was made from different contents or
    /// settings: a new comparison starts (the old one stays stored).
    Changed {
        /// The old comparison's id.
        id: String,
        /// Its executions done.
        done: usize,
        /// Its executions planned.
        planned: usize,
    },
}

/// The slots a loaded comparison has done: every stored execution but the interrupted
/// ones (an execution cut short by Ctrl-C is run again).
pub fn done_slots(loaded: &Loaded) -> std::collections::HashSet<crate::runner::Slot> {
    let index = |names: &[String], n: &str| names.iter().position(|x| x == n);
    loaded
        .executions
        .iter()
        .filter(|e| e.outcome != Outcome::Interrupted)
        .filter_map(|e| {
            Some(crate::runner::Slot {
                round: e.round,
                workload: index(&loaded.meta.workloads, &e.workload)?,
                subject: index(&loaded.meta.subjects, &e.subject)?,
            })
        })
        .collect()
}

/// Finds the comparison a run of `cfg` from `file` continues: the newest stored
/// comparison of the same fingerprint with executions still to do. A newer unfinished
/// comparison of the same file with another fingerprint is reported as `Changed`.
pub fn find_resumable(
    store: &Store,
    cfg: &ComparisonFile,
    file: &str,
) -> Result<Resume, LoadError> {
    let wanted = fingerprint(cfg);
    let mut seen = std::collections::HashSet::new();
    for found in stored_runs(store)?.rev() {
        let (run, s) = found?;
        let id = run.id;
        if s.comparison.fingerprint.is_empty() || !seen.insert(s.comparison.id.clone()) {
            continue;
        }
        let same_file = s.comparison.file == file;
        if s.comparison.fingerprint != wanted && !same_file {
            continue;
        }
        let loaded = load(store, &[id])?;
        let done = done_slots(&loaded).len();
        let planned = loaded.meta.planned();
        if done >= planned {
            // The newest comparison of this file or fingerprint is finished: a new run
            // is a new comparison.
            return Ok(Resume::Fresh);
        }
        if s.comparison.fingerprint == wanted {
            return Ok(Resume::Continue(Box::new(loaded)));
        }
        return Ok(Resume::Changed {
            id: s.comparison.id,
            done,
            planned,
        });
    }
    Ok(Resume::Fresh)
}

/// Every stored run of every comparison, oldest first, with its settings (a
/// `compare` run whose settings are not a comparison's is left out): what finding a
/// comparison to continue and loading one both walk through. Runs are read one at a
/// time, as the caller asks for them.
fn stored_runs(
    store: &Store,
) -> Result<
    impl DoubleEndedIterator<Item = Result<(StoredRun, Settings), StoreError>> + '_,
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
        Ok(run) => settings(&run).map(|s| Ok((run, s))),
    }))
}

/// The comparison settings stored with a run, when it is a comparison's.
fn settings(run: &StoredRun) -> Option<Settings> {
    serde_json::from_value(run.info.settings.clone()).ok()
}

#[derive(Debug, Serialize, Deserialize)]
struct Settings {
    comparison: ComparisonMeta,
    workload: WorkloadSpec,
    round: u32,
    outcome: Outcome,
    warnings: Vec<String>,
    kinds: std::collections::BTreeMap<String, SeriesKind>,
    /// Seconds of the comparison when this execution ended, every session together
    /// (what a time budget counts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    elapsed_s: Option<f64>,
    /// Series stored under another name (series name -> stored name): levels read as
    /// rates or peaks keep their per-second points there, so the series' own name holds
    /// the one value per execution that compare judges.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    stored_as: std::collections::BTreeMap<String, String>,
    /// Metrics stored as one value per execution, as compare judges them (not series).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    judged: Vec<String>,
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
    workload: &WorkloadSpec,
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
    let judged: Vec<crate::execution::RunValue> = if exec.outcome == Outcome::Complete {
        let mut seen: std::collections::HashSet<String> =
            exec.series.iter().map(stored_name).collect();
        crate::work::execution_values(&exec.series, meta.work.get(&exec.workload))
            .into_iter()
            .filter(|v| seen.insert(v.metric.name.clone()))
            .collect()
    } else {
        Vec::new()
    };
    let settings = Settings {
        comparison: meta.clone(),
        workload: workload.clone(),
        round: exec.round,
        outcome: exec.outcome.clone(),
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
        Outcome::Interrupted => RunStatus::Incomplete,
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
    /// Workload specs by name.
    pub workloads: Vec<WorkloadSpec>,
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
        let s = match (run.info.command.as_str(), settings(&run)) {
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
    for found in stored_runs(store)? {
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
            started_at: run.info.started_at,
            command_line: run.info.command_line.clone(),
            series,
            outcome: s.outcome,
            warnings: s.warnings,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executor::Executor;
    use crate::mock::SyntheticExecutor;
    use std::sync::atomic::AtomicBool;

    #[test]
    fn executions_round_trip_through_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("r.db")).unwrap();
        let cfg = crate::verdict::tests::file(2);
        let meta = ComparisonMeta::new(&cfg);
        let mut ex = SyntheticExecutor::new(5);
        let stop = AtomicBool::new(false);
        let mut made = Vec::new();
        let mut ids = Vec::new();
        for round in 0..2 {
            for s in &cfg.subjects {
                let e = ex.execute(s, &cfg.workloads[0], round, &stop);
                ids.push(
                    save(
                        &mut store,
                        &meta,
                        &cfg.workloads[0],
                        &Host::default(),
                        "test",
                        &e,
                        None,
                    )
                    .unwrap(),
                );
                made.push(e);
            }
        }
        ex.failing.push("b".into());
        let failed = ex.execute(&cfg.subjects[1], &cfg.workloads[0], 2, &stop);
        save(
            &mut store,
            &meta,
            &cfg.workloads[0],
            &Host::default(),
            "test",
            &failed,
            None,
        )
        .unwrap();
        made.push(failed);
        let loaded = load(&store, &ids[2..3]).unwrap();
        assert_eq!(loaded.meta, meta);
        assert_eq!(loaded.executions, made);
        assert_eq!(loaded.workloads, vec![cfg.workloads[0].clone()]);
        assert_eq!(store.run(ids[0]).unwrap().status, RunStatus::Complete);
    }

    fn store_executions(
        store: &mut Store,
        cfg: &ComparisonFile,
        meta: &ComparisonMeta,
        slots: &[crate::runner::Slot],
        outcome_of_last: Outcome,
    ) {
        let mut ex = SyntheticExecutor::new(5);
        let stop = AtomicBool::new(false);
        for (i, slot) in slots.iter().enumerate() {
            let mut e = ex.execute(
                &cfg.subjects[slot.subject],
                &cfg.workloads[slot.workload],
                slot.round,
                &stop,
            );
            if i + 1 == slots.len() {
                e.outcome = outcome_of_last.clone();
            }
            save(
                store,
                meta,
                &cfg.workloads[slot.workload],
                &Host::default(),
                "test",
                &e,
                Some(i as f64),
            )
            .unwrap();
        }
    }

    #[test]
    fn an_interrupted_comparison_is_found_again_and_a_changed_file_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("r.db")).unwrap();
        let cfg = crate::verdict::tests::file(3);
        assert_eq!(
            find_resumable(&store, &cfg, "cmp.toml").unwrap(),
            Resume::Fresh
        );
        let mut meta = ComparisonMeta::new(&cfg);
        meta.file = "cmp.toml".into();
        let plan = crate::runner::schedule(3, cfg.subjects.len(), cfg.workloads.len(), cfg.seed);
        // Three executions, the last cut short by Ctrl-C.
        store_executions(&mut store, &cfg, &meta, &plan[..3], Outcome::Interrupted);
        let Resume::Continue(loaded) = find_resumable(&store, &cfg, "cmp.toml").unwrap() else {
            panic!("not resumable");
        };
        assert_eq!(loaded.meta.id, meta.id);
        let done = done_slots(&loaded);
        assert_eq!(done, plan[..2].iter().copied().collect());
        // The same file with another seed: a new comparison, and the old one is named.
        let mut other = cfg.clone();
        other.seed += 1;
        match find_resumable(&store, &other, "cmp.toml").unwrap() {
            Resume::Changed { id, done, planned } => {
                assert_eq!((id, done, planned), (meta.id.clone(), 2, plan.len()));
            }
            r => panic!("{r:?}"),
        }
        // Another file with other contents knows nothing of it.
        assert_eq!(
            find_resumable(&store, &other, "other.toml").unwrap(),
            Resume::Fresh
        );
        // Finished: a new run starts afresh.
        store_executions(&mut store, &cfg, &meta, &plan[2..], Outcome::Complete);
        assert_eq!(
            find_resumable(&store, &cfg, "cmp.toml").unwrap(),
            Resume::Fresh
        );
    }
}
