//! Where measured jobs go: the results store in production, memory in simulations.
//!
//! # Store layout
//! One store run per study and subject (variant or baseline): command `tune`, subject of
//! kind `build_variant` (baselines: `release`) whose attributes hold the study key, the
//! subject key (variant id and binary hash, so a rebuilt binary starts a fresh run), the
//! settings and the build facts. Each job (one benchmark of one subject in one round) is
//! written in ONE transaction: one sample per metric, `repetition` = round, labels
//! `{"round", "benchmark", "elapsed_s"}`. A failed job is one sample of the metric
//! `benchmark_failed` (value 1) with labels adding `"error"` and `"tail"` (the output's
//! last lines). A resumed study reads these back and replays its decisions from them.

use crate::error::TuneError;
use crate::extract::Reading;
use dyno_model::{Direction, Host, Metric, RunInfo, RunStatus, Sample, Subject, Unit};
use dyno_store::{RunFilter, RunId, Store};
use serde_json::json;

/// The metric of a failed job.
pub const FAILED_METRIC: &str = "benchmark_failed";

/// One measured job.
#[derive(Debug, Clone, PartialEq)]
pub struct JobRecord {
    /// Round, from 1.
    pub round: u32,
    /// Benchmark name.
    pub benchmark: String,
    /// Wall time of the job in seconds.
    pub elapsed_s: f64,
    /// What it measured.
    pub result: JobResult,
}

/// A job's result.
#[derive(Debug, Clone, PartialEq)]
pub enum JobResult {
    /// The metrics read from its output.
    Ok(Vec<Reading>),
    /// Non-zero exit, or nothing the extractor could read.
    Failed {
        /// Why.
        error: String,
        /// The output's last lines.
        tail: String,
    },
}

impl JobRecord {
    /// `true` for a failed job.
    pub fn failed(&self) -> bool {
        matches!(self.result, JobResult::Failed { .. })
    }
}

/// The identity of a race subject in the record.
#[derive(Debug, Clone, PartialEq)]
pub struct SubjectKey {
    /// Stable key: variant id and binary hash (baselines: name and hash).
    pub key: String,
    /// The model subject stored with its run.
    pub subject: Subject,
}

/// Keeps what was measured.
pub trait Recorder {
    /// Everything recorded before for each subject, in `subjects` order.
    fn load(&mut self, subjects: &[SubjectKey]) -> Result<Vec<Vec<JobRecord>>, TuneError>;
    /// Records one job of subject `subject` (index into the `load` list), atomically.
    fn record(&mut self, subject: usize, job: &JobRecord) -> Result<(), TuneError>;
    /// Marks the study's runs complete (or incomplete after an interruption).
    fn finish(&mut self, complete: bool) -> Result<(), TuneError>;
}

/// Keeps records in memory (simulations, tests).
#[derive(Debug, Default, Clone)]
pub struct MemoryRecorder {
    /// Records per subject.
    pub records: Vec<Vec<JobRecord>>,
}

impl Recorder for MemoryRecorder {
    fn load(&mut self, subjects: &[SubjectKey]) -> Result<Vec<Vec<JobRecord>>, TuneError> {
        self.records.resize(subjects.len(), Vec::new());
        Ok(self.records.clone())
    }
    fn record(&mut self, subject: usize, job: &JobRecord) -> Result<(), TuneError> {
        self.records[subject].push(job.clone());
        Ok(())
    }
    fn finish(&mut self, _complete: bool) -> Result<(), TuneError> {
        Ok(())
    }
}

/// Writes to (and resumes from) the results store; see the module docs for the layout.
pub struct StoreRecorder<'a> {
    store: &'a mut Store,
    study_key: String,
    host: Host,
    command_line: Vec<String>,
    tool_version: String,
    settings: serde_json::Value,
    subjects: Vec<SubjectKey>,
    runs: Vec<Option<RunId>>,
    metrics: Vec<Vec<String>>,
}

impl<'a> StoreRecorder<'a> {
    /// A recorder for the study `study_key` writing runs on `host`.
    pub fn new(
        store: &'a mut Store,
        study_key: &str,
        host: Host,
        command_line: Vec<String>,
        tool_version: &str,
        settings: serde_json::Value,
    ) -> Self {
        StoreRecorder {
            store,
            study_key: study_key.to_string(),
            host,
            command_line,
            tool_version: tool_version.to_string(),
            settings,
            subjects: Vec::new(),
            runs: Vec::new(),
            metrics: Vec::new(),
        }
    }
}

/// The runs of one study, by subject key: `(run id, subject key)`, oldest first, from
/// every host that ran it (a fleet store holds many).
pub fn study_runs(store: &Store, study_key: &str) -> Result<Vec<(RunId, String)>, TuneError> {
    study_runs_on(store, study_key, None)
}

/// The runs of one study made on the host named `hostname` (every host with `None`):
/// a race is resumed and reported per machine, since its rounds pair runs that shared
/// one machine's conditions and its speed is that machine's.
pub fn study_runs_on(
    store: &Store,
    study_key: &str,
    hostname: Option<&str>,
) -> Result<Vec<(RunId, String)>, TuneError> {
    let runs = store.list_runs(&RunFilter {
        command: Some("tune".into()),
        ..RunFilter::default()
    })?;
    let mut out: Vec<(RunId, String)> = runs
        .into_iter()
        .filter(|r| r.subject.attributes.get("study").map(String::as_str) == Some(study_key))
        .filter(|r| hostname.is_none_or(|h| r.hostname == h))
        .filter_map(|r| Some((r.id, r.subject.attributes.get("key")?.clone())))
        .collect();
    out.sort();
    Ok(out)
}

/// The hosts (by name) that ran the study, each once, in name order.
pub fn study_hosts(store: &Store, study_key: &str) -> Result<Vec<String>, TuneError> {
    let runs = store.list_runs(&RunFilter {
        command: Some("tune".into()),
        ..RunFilter::default()
    })?;
    let hosts: std::collections::BTreeSet<String> = runs
        .into_iter()
        .filter(|r| r.subject.attributes.get("study").map(String::as_str) == Some(study_key))
        .map(|r| r.hostname)
        .collect();
    Ok(hosts.into_iter().collect())
}

/// Reads the job records of one stored run.
pub fn read_run(store: &Store, run: RunId) -> Result<Vec<JobRecord>, TuneError> {
    let stored = store.run(run)?;
    let samples = store.labeled_samples(run)?;
    let mut jobs: Vec<JobRecord> = Vec::new();
    for (sample, labels) in samples {
        let Some(labels) = labels else { continue };
        let round = labels["round"].as_u64().unwrap_or(0) as u32;
        let benchmark = labels["benchmark"].as_str().unwrap_or_default().to_string();
        let elapsed_s = labels["elapsed_s"].as_f64().unwrap_or(0.0);
        let pos = jobs
            .iter()
            .position(|j| j.round == round && j.benchmark == benchmark);
        let i = match pos {
            Some(i) => i,
            None => {
                jobs.push(JobRecord {
                    round,
                    benchmark,
                    elapsed_s,
                    result: JobResult::Ok(Vec::new()),
                });
                jobs.len() - 1
            }
        };
        if sample.metric == FAILED_METRIC {
            jobs[i].result = JobResult::Failed {
                error: labels["error"].as_str().unwrap_or_default().to_string(),
                tail: labels["tail"].as_str().unwrap_or_default().to_string(),
            };
            continue;
        }
        let Some(metric) = stored.metrics.iter().find(|m| m.name == sample.metric) else {
            continue;
        };
        if let JobResult::Ok(readings) = &mut jobs[i].result {
            readings.push(Reading {
                metric: metric.clone(),
                value: sample.value,
            });
        }
    }
    // Replay needs jobs in the order they ran; the store orders by metric, so sort.
    jobs.sort_by_key(|j| j.round);
    Ok(jobs)
}

impl Recorder for StoreRecorder<'_> {
    fn load(&mut self, subjects: &[SubjectKey]) -> Result<Vec<Vec<JobRecord>>, TuneError> {
        self.subjects = subjects.to_vec();
        self.runs = vec![None; subjects.len()];
        self.metrics = vec![Vec::new(); subjects.len()];
        // Only this host's runs: another machine's rounds in a fleet store are neither
        // this race's to resume nor comparable with it.
        let runs = study_runs_on(self.store, &self.study_key, Some(&self.host.hostname))?;
        let mut out = vec![Vec::new(); subjects.len()];
        for (i, s) in subjects.iter().enumerate() {
            for (run, key) in runs.iter().filter(|(_, k)| *k == s.key) {
                let _ = key;
                out[i].extend(read_run(self.store, *run)?);
                self.runs[i] = Some(*run);
                self.metrics[i] = self
                    .store
                    .run(*run)?
                    .metrics
                    .into_iter()
                    .map(|m| m.name)
                    .collect();
            }
            out[i].sort_by_key(|j| j.round);
        }
        Ok(out)
    }

    fn record(&mut self, subject: usize, job: &JobRecord) -> Result<(), TuneError> {
        let metrics: Vec<Metric> = match &job.result {
            JobResult::Ok(r) => r.iter().map(|r| r.metric.clone()).collect(),
            JobResult::Failed { .. } => vec![Metric::new(
                FAILED_METRIC,
                Unit::Count,
                Direction::LowerIsBetter,
            )],
        };
        let run = match self.runs[subject] {
            Some(run) => run,
            None => {
                let mut subj = self.subjects[subject].subject.clone();
                subj.attributes
                    .insert("study".into(), self.study_key.clone());
                subj.attributes
                    .insert("key".into(), self.subjects[subject].key.clone());
                let info = RunInfo {
                    command: "tune".into(),
                    subject: subj,
                    host: self.host.clone(),
                    started_at: dyno_model::now_unix(),
                    command_line: self.command_line.clone(),
                    tool_version: self.tool_version.clone(),
                    settings: self.settings.clone(),
                };
                let run = self.store.begin_run(&info, &metrics)?;
                self.runs[subject] = Some(run);
                self.metrics[subject] = metrics.iter().map(|m| m.name.clone()).collect();
                run
            }
        };
        for m in &metrics {
            if !self.metrics[subject].contains(&m.name) {
                self.store.add_metric(run, m)?;
                self.metrics[subject].push(m.name.clone());
            }
        }
        let base =
            json!({ "round": job.round, "benchmark": job.benchmark, "elapsed_s": job.elapsed_s });
        let samples: Vec<(Sample, serde_json::Value)> = match &job.result {
            JobResult::Ok(readings) => readings
                .iter()
                .map(|r| {
                    let s = Sample {
                        metric: r.metric.name.clone(),
                        repetition: job.round,
                        value: r.value,
                    };
                    (s, base.clone())
                })
                .collect(),
            JobResult::Failed { error, tail } => {
                let mut labels = base.clone();
                labels["error"] = json!(error);
                labels["tail"] = json!(tail);
                let s = Sample {
                    metric: FAILED_METRIC.into(),
                    repetition: job.round,
                    value: 1.0,
                };
                vec![(s, labels)]
            }
        };
        self.store.add_labeled_samples(run, &samples)?;
        Ok(())
    }

    fn finish(&mut self, complete: bool) -> Result<(), TuneError> {
        let status = if complete {
            RunStatus::Complete
        } else {
            RunStatus::Incomplete
        };
        for run in self.runs.iter().flatten() {
            self.store.finish_run(*run, status)?;
        }
        Ok(())
    }
}

/// The `mode` setting (`racing` or `exhaustive`) of the study's newest run on host
/// `hostname`, if any.
pub fn study_mode(
    store: &Store,
    study_key: &str,
    hostname: &str,
) -> Result<Option<String>, TuneError> {
    let Some((run, _)) = study_runs_on(store, study_key, Some(hostname))?
        .into_iter()
        .last()
    else {
        return Ok(None);
    };
    let info = store.run(run)?.info;
    Ok(info.settings["mode"].as_str().map(str::to_string))
}
