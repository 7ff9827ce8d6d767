//! A `dyno machine` session: begin the run in the results store, measure every metric
//! `repeat` times, interleaved, storing each sample as soon as it is measured, and finish
//! the run. The caller chooses the metrics, shows progress and renders the report.
//!
//! Interleaving (every metric once per repetition) spreads slow drift of the machine over
//! all metrics instead of landing on one; storing each sample at once keeps what was
//! measured when a later step fails or is interrupted.

use crate::{
    measure, stored_minimums, Context, Durations, HwError, MachineOutcome, MachineSettings,
    Measurement, MetricId, RequirementSet, StoredSettings,
};
use dyno_model::{Host, RunInfo, RunStatus, Sample, Subject, SubjectKind};
use dyno_store::{RunId, Store};
use serde::Serialize;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// What the caller shows while the session measures.
pub trait StepProgress {
    /// Step `label` starts; the remaining steps take about `remaining`.
    fn step(&mut self, label: &str, remaining: Duration);
    /// The step finished.
    fn done(&mut self);
}

/// What one session measures.
#[derive(Debug, Clone)]
pub struct MeasurePlan {
    /// The metrics, in the order each repetition runs them.
    pub metrics: Vec<MetricId>,
    /// Repetitions of every metric.
    pub repeat: u32,
    /// Time limits.
    pub durations: Durations,
    /// Where and with how many threads.
    pub context: Context,
}

/// Every metric with its measurements, in the plan's order.
pub type Measured = Vec<(MetricId, Vec<Measurement>)>;

/// The labels stored with each sample: what a score was computed from.
#[derive(Debug, Clone, PartialEq, Serialize)]
struct SampleLabels {
    elapsed_s: f64,
    iterations: u64,
    threads: usize,
}

/// What a `dyno machine` run measures and judges with, as its flags give it.
#[derive(Debug, Clone)]
pub struct MachineRequest {
    /// The metrics, in the order each repetition runs them.
    pub metrics: Vec<MetricId>,
    /// Time limits.
    pub durations: Durations,
    /// Directory of the disk benchmarks' files.
    pub base_path: PathBuf,
    /// Threads of BLAKE2-256-Parallel.
    pub parallel_cores: usize,
    /// Repetitions of every metric.
    pub repeat: u32,
    /// Fault tolerance in percent.
    pub tolerance: f64,
    /// The chain whose built-in requirement set judges the run, if one was named.
    pub chain: Option<String>,
}

impl MachineRequest {
    /// How the run measures and judges against the set named `requirements`, as the
    /// report and the store show it.
    pub fn settings(&self, requirements: &str) -> MachineSettings {
        let d = &self.durations;
        MachineSettings {
            base_path: self.base_path.display().to_string(),
            chain: self.chain.clone(),
            disk_duration_s: d.disk.as_secs_f64(),
            extra_duration_s: d.extra.as_secs_f64(),
            hash_duration_s: d.hash.as_secs_f64(),
            memory_duration_s: d.memory.as_secs_f64(),
            parallel_cores: self.parallel_cores,
            repeat: self.repeat,
            requirements: requirements.to_string(),
            tolerance_percent: self.tolerance,
            verify_duration_s: d.verify.as_secs_f64(),
        }
    }

    /// The session's plan on a machine with `cores_online` cores.
    pub fn plan(&self, cores_online: usize) -> MeasurePlan {
        MeasurePlan {
            metrics: self.metrics.clone(),
            repeat: self.repeat,
            durations: self.durations,
            context: Context {
                base_path: self.base_path.clone(),
                parallel_cores: self.parallel_cores,
                cores_online: cores_online.max(1),
            },
        }
    }

    /// What the run records at its start: the settings, the dyno build, the metrics,
    /// the minimums of `requirements` (so a later report judges against what the run saw)
    /// and the warnings.
    pub fn stored_settings(
        &self,
        requirements: &RequirementSet,
        build: serde_json::Value,
        warnings: &[String],
    ) -> StoredSettings {
        StoredSettings {
            settings: self.settings(&requirements.name),
            build,
            metrics: self.metrics.iter().map(|m| m.name()).collect(),
            requirement_minimums: stored_minimums(requirements),
            warnings: warnings.to_vec(),
        }
    }
}

/// A whole `dyno machine` run, from its request to its judged outcome: the run begun in
/// the results store (when there is one) with what it measures and why, every sample
/// stored as it is measured ([`measure_all`]), the run finished `complete`, then judged
/// against the requirements.
#[derive(Debug)]
pub struct MachineRun<'a> {
    /// What to measure.
    pub request: &'a MachineRequest,
    /// The set that judges it.
    pub requirements: &'a RequirementSet,
    /// The machine.
    pub host: Host,
    /// Warnings about the measurement, shown and stored.
    pub warnings: Vec<String>,
    /// The dyno build as JSON, and whether it is a debug build.
    pub build: (serde_json::Value, bool),
    /// The command line, stored with the run.
    pub command_line: Vec<String>,
    /// The dyno that measures, as the store names it.
    pub tool_version: String,
}

/// Why a machine run has no outcome.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The store refused to begin or to finish the run.
    #[error(transparent)]
    Store(HwError),
    /// A step failed or was interrupted ([`measure_all`] marked the run).
    #[error("the machine run stopped")]
    Stopped {
        /// The step's error.
        source: HwError,
        /// The run holding the samples measured before it, when stored.
        kept: Option<RunId>,
    },
}

impl MachineRun<'_> {
    /// Measures and judges, recording in `store` when given; `progress` sees every step.
    pub fn measure(
        self,
        mut store: Option<&mut Store>,
        stop: &AtomicBool,
        progress: &mut dyn StepProgress,
    ) -> Result<MachineOutcome, RunError> {
        let request = self.request;
        let run_id = match store.as_deref_mut() {
            Some(s) => Some(
                begin_run(
                    s,
                    &self.host,
                    &request.metrics,
                    &request.stored_settings(
                        self.requirements,
                        self.build.0.clone(),
                        &self.warnings,
                    ),
                    self.command_line,
                    self.tool_version,
                )
                .map_err(RunError::Store)?,
            ),
            None => None,
        };
        let plan = request.plan(self.host.cores_online);
        let measured = measure_all(&plan, stop, store.as_deref_mut().zip(run_id), progress)
            .map_err(|source| RunError::Stopped {
                source,
                kept: run_id,
            })?;
        if let (Some(s), Some(id)) = (store, run_id) {
            finish_run(s, id, RunStatus::Complete).map_err(RunError::Store)?;
        }
        Ok(MachineOutcome {
            settings: request.settings(&self.requirements.name),
            verdict: crate::evaluate(measured, self.requirements, request.tolerance),
            host: self.host,
            warnings: self.warnings,
            run_id,
            build: self.build,
        })
    }
}

/// Records the start of a machine run of `host` measuring `metrics`.
pub fn begin_run(
    store: &mut Store,
    host: &Host,
    metrics: &[MetricId],
    settings: &StoredSettings,
    command_line: Vec<String>,
    tool_version: String,
) -> Result<RunId, HwError> {
    let subject = Subject::new(SubjectKind::Machine, host.hostname.clone())
        .with("cpu_model", host.cpu_model.clone())
        .with("cores_online", host.cores_online.to_string());
    let info = RunInfo {
        command: "machine".into(),
        subject,
        host: host.clone(),
        started_at: dyno_model::now_unix(),
        command_line,
        tool_version,
        settings: serde_json::to_value(settings)
            .map_err(|e| HwError::Failed(format!("encoding the run's settings: {e}")))?,
    };
    let defs: Vec<_> = metrics.iter().map(|m| m.metric()).collect();
    store.begin_run(&info, &defs).map_err(|e| HwError::Store {
        what: "recording the run in the results store",
        source: e,
    })
}

/// The label of one step: the metric's name, with the repetition when repeated.
fn step_label(plan: &MeasurePlan, rep: u32, id: MetricId) -> String {
    let name = id.display(plan.context.parallel_cores);
    if plan.repeat > 1 {
        format!("{name} (repetition {}/{})", rep + 1, plan.repeat)
    } else {
        name
    }
}

/// Measures every metric of `plan`, repetition by repetition, storing each sample in
/// `store`'s run as soon as it is measured. A failed or interrupted step ends the
/// session with [`HwError::Step`], naming it, after marking the run `incomplete` (the stop
/// flag ended it: what was measured is kept) or `failed`; a finished session leaves the
/// run for the caller to finish `complete` ([`finish_run`]) once it has judged it.
pub fn measure_all(
    plan: &MeasurePlan,
    stop: &AtomicBool,
    mut store: Option<(&mut Store, RunId)>,
    progress: &mut dyn StepProgress,
) -> Result<Measured, HwError> {
    let result = measure_steps(
        plan,
        stop,
        store.as_mut().map(|(s, run)| (&mut **s, *run)),
        progress,
    );
    if let (Err(e), Some((s, run))) = (&result, store) {
        let status = if e.is_interrupted() {
            RunStatus::Incomplete
        } else {
            RunStatus::Failed
        };
        // The step's error is the one to report; a store that refuses this too is
        // reported by the run staying `running` until reaped.
        let _ = s.finish_run(run, status);
    }
    result
}

fn measure_steps(
    plan: &MeasurePlan,
    stop: &AtomicBool,
    mut store: Option<(&mut Store, RunId)>,
    progress: &mut dyn StepProgress,
) -> Result<Measured, HwError> {
    let d = &plan.durations;
    let steps: Vec<(u32, MetricId)> = (0..plan.repeat)
        .flat_map(|rep| plan.metrics.iter().map(move |m| (rep, *m)))
        .collect();
    // Preparation (signing, filling 64 MiB files) adds roughly this much per step.
    let cost = |m: MetricId| d.for_metric(m).as_secs_f64() + if m.is_disk() { 1.5 } else { 0.3 };
    let mut remaining: f64 = steps.iter().map(|(_, m)| cost(*m)).sum();
    let mut results: Measured = plan.metrics.iter().map(|m| (*m, Vec::new())).collect();
    for (rep, id) in steps {
        let label = step_label(plan, rep, id);
        progress.step(&label, Duration::from_secs_f64(remaining));
        let m = measure(id, &plan.context, d, stop).map_err(|e| HwError::Step {
            label: label.clone(),
            source: Box::new(e),
        })?;
        if let Some((s, run)) = store.as_mut() {
            store_sample(s, *run, id, rep, &m)?;
        }
        results
            .iter_mut()
            .find(|(m, _)| *m == id)
            .expect("every step's metric is in the result list")
            .1
            .push(m);
        remaining -= cost(id);
        progress.done();
    }
    Ok(results)
}

fn store_sample(
    store: &mut Store,
    run: RunId,
    id: MetricId,
    rep: u32,
    m: &Measurement,
) -> Result<(), HwError> {
    let sample = Sample {
        metric: id.name().to_string(),
        repetition: rep,
        value: m.score,
    };
    let labels = SampleLabels {
        elapsed_s: m.elapsed.as_secs_f64(),
        iterations: m.iterations,
        threads: m.threads,
    };
    let labels = serde_json::to_value(labels).expect("sample labels serialise");
    store
        .add_labeled_samples(run, &[(sample, labels)])
        .map_err(|e| HwError::Store {
            what: "storing a sample",
            source: e,
        })
}

/// Records how the run ended: `complete`, or after a failed step `incomplete` (stopped)
/// or `failed`.
pub fn finish_run(store: &mut Store, run: RunId, status: RunStatus) -> Result<(), HwError> {
    store.finish_run(run, status).map_err(|e| HwError::Store {
        what: "recording the end of the run",
        source: e,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Steps(u32);
    impl StepProgress for Steps {
        fn step(&mut self, _: &str, _: Duration) {}
        fn done(&mut self) {
            self.0 += 1;
        }
    }

    fn request(dir: &std::path::Path) -> MachineRequest {
        MachineRequest {
            metrics: vec![MetricId::Blake2256],
            durations: Durations::uniform(Duration::from_millis(20)),
            base_path: dir.to_path_buf(),
            parallel_cores: 1,
            repeat: 2,
            tolerance: 10.0,
            chain: None,
        }
    }

    fn run<'a>(request: &'a MachineRequest, set: &'a RequirementSet) -> MachineRun<'a> {
        MachineRun {
            request,
            requirements: set,
            host: Host {
                hostname: "bench-01".into(),
                cores_online: 1,
                ..Host::default()
            },
            warnings: vec!["a warning".into()],
            build: (serde_json::json!({ "version": "test" }), false),
            command_line: vec!["dyno".into(), "machine".into()],
            tool_version: "dyno test".into(),
        }
    }

    #[test]
    fn a_stored_run_is_begun_filled_finished_and_judged() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("r.db")).unwrap();
        let (request, set) = (
            request(dir.path()),
            RequirementSet::builtin("substrate").unwrap(),
        );
        let mut steps = Steps(0);
        let stop = AtomicBool::new(false);
        let outcome = run(&request, &set)
            .measure(Some(&mut store), &stop, &mut steps)
            .unwrap();
        assert_eq!(steps.0, 2);
        let id = outcome.run_id.expect("stored");
        let stored = store.run(id).unwrap();
        assert_eq!(stored.status, RunStatus::Complete);
        assert_eq!(stored.samples.len(), 2);
        assert_eq!(stored.info.settings["warnings"][0], "a warning");
        assert_eq!(outcome.verdict.results.len(), 1);
        assert_eq!(outcome.settings.requirements, set.name);
        // Without a store nothing is recorded, and the outcome names no run.
        let unsaved = run(&request, &set)
            .measure(None, &stop, &mut Steps(0))
            .unwrap();
        assert_eq!(unsaved.run_id, None);
    }

    #[test]
    fn an_interrupted_run_is_kept_incomplete_and_named() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("r.db")).unwrap();
        let (request, set) = (
            request(dir.path()),
            RequirementSet::builtin("substrate").unwrap(),
        );
        let stop = AtomicBool::new(true);
        let err = run(&request, &set)
            .measure(Some(&mut store), &stop, &mut Steps(0))
            .unwrap_err();
        let RunError::Stopped { source, kept } = err else {
            panic!("{err:?}");
        };
        assert!(source.is_interrupted(), "{source:?}");
        let id = kept.expect("the run is named");
        assert_eq!(store.run(id).unwrap().status, RunStatus::Incomplete);
    }
}
