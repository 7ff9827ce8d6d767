//! `dyno machine`'s report as typed, schema-versioned data (`dyno.machine/1`, fields in
//! docs/machine.md), and the settings a machine run records in the results store.
//!
//! Serde writes a struct's fields in declaration order; these are declared in the order
//! the JSON document has always had (alphabetical), so its bytes do not change.

use crate::{Measurement, MetricId, MetricResult, Requirement, RequirementSet, Verdict};
use dyno_model::{Host, MedianInterval};
use serde::Serialize;
use serde_json::Value;
use std::time::Duration;

/// Version of the JSON document's layout; bumped when a field changes meaning.
pub const MACHINE_SCHEMA: &str = "dyno.machine/1";

/// The settings entry of a stored run that lists the minimums it was judged against.
pub const MINIMUMS_KEY: &str = "requirement_minimums";

/// How a machine run measured and judged.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MachineSettings {
    /// Directory of the disk benchmarks' files.
    pub base_path: String,
    /// The chain whose built-in requirement set judged the run (`--chain`, `--dev`).
    pub chain: Option<String>,
    /// Time limit of each disk benchmark.
    pub disk_duration_s: f64,
    /// Time limit of each extra metric.
    pub extra_duration_s: f64,
    /// Time limit of each BLAKE2-256 benchmark.
    pub hash_duration_s: f64,
    /// Time limit of the memory copy benchmark.
    pub memory_duration_s: f64,
    /// Threads of BLAKE2-256-Parallel.
    pub parallel_cores: usize,
    /// Repetitions of every metric.
    pub repeat: u32,
    /// The requirement set's name.
    pub requirements: String,
    /// Fault tolerance in percent.
    pub tolerance_percent: f64,
    /// Time limit of the SR25519 verification benchmark.
    pub verify_duration_s: f64,
}

/// One minimum as a stored run records it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoredMinimum {
    /// The metric's name.
    pub metric: &'static str,
    /// The minimum (a maximum for lower-is-better metrics).
    pub minimum: f64,
    /// Threads the requirement assumes.
    pub num_cores: Option<usize>,
    /// Whether only validators must meet it.
    pub validator_only: bool,
}

/// Every minimum of `set`, as a run records them under [`MINIMUMS_KEY`].
pub fn stored_minimums(set: &RequirementSet) -> Vec<StoredMinimum> {
    set.requirements
        .iter()
        .map(|r| StoredMinimum {
            metric: r.metric.name(),
            minimum: r.minimum,
            num_cores: r.num_cores,
            validator_only: r.validator_only,
        })
        .collect()
}

/// The settings a machine run records in the results store: the report's settings and
/// what a later report needs to judge the run again.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoredSettings {
    /// How the run measured and judged.
    #[serde(flatten)]
    pub settings: MachineSettings,
    /// The dyno build that measured.
    pub build: Value,
    /// The metrics measured, by name.
    pub metrics: Vec<&'static str>,
    /// The minimums judged against.
    pub requirement_minimums: Vec<StoredMinimum>,
    /// Warnings raised before measuring.
    pub warnings: Vec<String>,
}

/// One metric's scores and judgement.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricReport {
    /// Whether the score was rejected as a broken measurement.
    pub bad_result: Option<bool>,
    /// Substrate's category (CPU, Memory, Disk).
    pub category: &'static str,
    /// Interval of the median, when repeated.
    pub ci: Option<MedianInterval>,
    /// Coefficient of variation, when repeated.
    pub cv: Option<f64>,
    /// `higher-is-better` or `lower-is-better`.
    pub direction: &'static str,
    /// Wall time of each repetition.
    pub elapsed_s: Vec<f64>,
    /// The name the table prints.
    pub function: String,
    /// Timed iterations of each repetition.
    pub iterations: Vec<u64>,
    /// The metric's name.
    pub metric: &'static str,
    /// The requirement's minimum.
    pub minimum: Option<f64>,
    /// Whether the score meets it.
    pub passed: Option<bool>,
    /// The score relative to the minimum.
    pub relative: Option<f64>,
    /// Every repetition's score.
    pub samples: Vec<f64>,
    /// The median score.
    pub score: f64,
    /// Whether Substrate's benchmark has this metric.
    pub substrate: bool,
    /// Threads of the first repetition.
    pub threads: Option<usize>,
    /// The unit's symbol.
    pub unit: &'static str,
    /// Whether only validators must meet the minimum.
    pub validator_only: Option<bool>,
}

impl MetricReport {
    /// The report of one judged metric; `parallel_cores` names the parallel hash.
    pub fn new(m: &MetricResult, parallel_cores: usize) -> MetricReport {
        MetricReport {
            bad_result: m.judgement.map(|j| j.bad_result),
            category: m.id.category(),
            ci: m
                .interval
                .map(|(low, high, level)| MedianInterval { high, level, low }),
            cv: m.cv,
            direction: m.id.direction().as_str(),
            elapsed_s: m
                .repetitions
                .iter()
                .map(|x| x.elapsed.as_secs_f64())
                .collect(),
            function: m.id.display(parallel_cores),
            iterations: m.repetitions.iter().map(|x| x.iterations).collect(),
            metric: m.id.name(),
            minimum: m.requirement.as_ref().map(|q| q.minimum),
            passed: m.judgement.map(|j| j.passed),
            relative: m.judgement.map(|j| j.relative),
            samples: m.scores(),
            score: m.median,
            substrate: m.id.is_substrate(),
            threads: m.repetitions.first().map(|x| x.threads),
            unit: m.id.unit().symbol(),
            validator_only: m.requirement.as_ref().map(|q| q.validator_only),
        }
    }
}

/// Substrate's summary line as numbers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MachineSummary {
    /// Metrics rejected as broken measurements.
    pub bad_results: Vec<&'static str>,
    /// Metrics that failed.
    pub failed: usize,
    /// Metrics that passed.
    pub passed: usize,
    /// Fault tolerance in percent.
    pub tolerance_percent: f64,
    /// Metrics judged.
    pub total: usize,
}

/// `dyno machine`'s report (`dyno.machine/1`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MachineReport {
    /// Whether a debug build measured (the scores are then meaningless).
    pub debug_build: bool,
    /// The dyno build that measured.
    pub dyno: Value,
    /// The machine.
    pub host: Host,
    /// One entry per metric, in registry order.
    pub results: Vec<MetricReport>,
    /// The run in the results store, unless not saved.
    pub run_id: Option<i64>,
    /// [`MACHINE_SCHEMA`].
    pub schema: &'static str,
    /// How the run measured and judged.
    pub settings: MachineSettings,
    /// Substrate's summary line.
    pub summary: MachineSummary,
    /// `pass` or `fail`.
    pub verdict: &'static str,
    /// Warnings raised before measuring.
    pub warnings: Vec<String>,
}

impl MachineReport {
    /// The report of a judged run.
    pub fn new(
        settings: MachineSettings,
        host: Host,
        verdict: &Verdict,
        warnings: Vec<String>,
        run_id: Option<i64>,
        build: (Value, bool),
    ) -> MachineReport {
        let (dyno, debug_build) = build;
        MachineReport {
            debug_build,
            dyno,
            host,
            results: verdict
                .results
                .iter()
                .map(|m| MetricReport::new(m, settings.parallel_cores))
                .collect(),
            run_id,
            schema: MACHINE_SCHEMA,
            summary: MachineSummary {
                bad_results: verdict.bad_results.iter().map(|m| m.name()).collect(),
                failed: verdict.failed,
                passed: verdict.passed,
                tolerance_percent: verdict.tolerance,
                total: verdict.judged,
            },
            verdict: if verdict.meets_requirements() {
                "pass"
            } else {
                "fail"
            },
            warnings,
            settings,
        }
    }
}

/// A stored machine run judged again, with the rule and minimums it recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredJudgement {
    /// The requirement set the run was judged against.
    pub requirements: RequirementSet,
    /// Threads of BLAKE2-256-Parallel, for the metric's name.
    pub parallel_cores: usize,
    /// The verdict over the run's samples.
    pub verdict: Verdict,
}

/// The set a stored run was judged against, if it can be known: the minimums its
/// settings recorded under [`MINIMUMS_KEY`], else (runs from before that field) the
/// built-in set named in `requirements`, when it is one.
fn stored_requirements(settings: &Value) -> Option<RequirementSet> {
    let name = settings
        .get("requirements")
        .and_then(Value::as_str)
        .unwrap_or("unknown")
        .to_string();
    let Some(list) = settings.get(MINIMUMS_KEY).and_then(Value::as_array) else {
        return RequirementSet::builtin(&name).ok();
    };
    let requirements = list
        .iter()
        .map(|e| {
            Some(Requirement {
                metric: MetricId::parse(e.get("metric")?.as_str()?)?,
                minimum: e.get("minimum")?.as_f64()?,
                num_cores: e
                    .get("num_cores")
                    .and_then(Value::as_u64)
                    .map(|n| n as usize),
                validator_only: e
                    .get("validator_only")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            })
        })
        .collect::<Option<Vec<_>>>()?;
    Some(RequirementSet { name, requirements })
}

/// Judges a stored machine run again: its `settings`, the `metrics` it registered and
/// its `samples` (metric name, score). `None` when it was judged against a requirements
/// file whose minimums it did not record.
pub fn judge_stored(
    settings: &Value,
    metrics: &[&str],
    samples: &[(&str, f64)],
) -> Option<StoredJudgement> {
    let requirements = stored_requirements(settings)?;
    let tolerance = settings
        .get("tolerance_percent")
        .and_then(Value::as_f64)
        .unwrap_or(10.0);
    let parallel_cores = settings
        .get("parallel_cores")
        .and_then(Value::as_u64)
        .unwrap_or(8) as usize;
    let measured: Vec<(MetricId, Vec<Measurement>)> = metrics
        .iter()
        .filter_map(|m| MetricId::parse(m))
        .map(|id| {
            let scores = samples
                .iter()
                .filter(|(metric, _)| *metric == id.name())
                .map(|(_, score)| Measurement {
                    score: *score,
                    // Only the scores are judged; the loop counts stay in the samples' labels.
                    iterations: 0,
                    elapsed: Duration::ZERO,
                    threads: 1,
                })
                .collect();
            (id, scores)
        })
        .collect();
    let verdict = crate::evaluate(measured, &requirements, tolerance);
    Some(StoredJudgement {
        requirements,
        parallel_cores,
        verdict,
    })
}
