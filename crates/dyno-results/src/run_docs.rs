//! `dyno results list` and `dyno results show` as typed, schema-versioned reports
//! (`dyno.results.list/1`, `dyno.results.show/1`, docs/output.md), and the statistics of
//! one stored metric that `show` and `report` print.
//!
//! As in [`crate::FleetReport`], fields are declared in the JSON documents' (alphabetical)
//! order, so their bytes do not change.

use dyno_model::{format_timestamp, MedianInterval, RunInfo, Subject};
use dyno_stats::{ConfidenceInterval, Summary};
use dyno_store::{RunId, RunSummary, StoredRun};
use serde::Serialize;

/// The JSON schema of `dyno results list`.
pub const LIST_SCHEMA: &str = "dyno.results.list/1";
/// The JSON schema of `dyno results show`.
pub const SHOW_SCHEMA: &str = "dyno.results.show/1";

/// One metric of a stored run, summarised the way `results show` and `results report`
/// print it: the raw values, their summary, and the median's 95% interval (two or more).
#[derive(Debug, Clone, PartialEq)]
pub struct MetricStats {
    /// The raw samples, in repetition order.
    pub values: Vec<f64>,
    /// Quantiles, CV and friends.
    pub summary: Summary,
    /// Distribution-free interval of the median, with the level it really reaches.
    pub ci: Option<ConfidenceInterval>,
}

/// The statistics of `metric` in `run`; `None` when it has no (non-NaN) samples.
pub fn metric_stats(run: &StoredRun, metric: &str) -> Option<MetricStats> {
    let values: Vec<f64> = run
        .samples
        .iter()
        .filter(|s| s.metric == metric)
        .map(|s| s.value)
        .collect();
    let summary = dyno_stats::summarize(&values)?;
    let ci = (values.len() > 1)
        .then(|| dyno_stats::median_ci(&values, 0.95).ok())
        .flatten();
    Some(MetricStats {
        values,
        summary,
        ci,
    })
}

/// The coefficient of variation as every table of stored runs shows it: `-` for one
/// sample (no spread to speak of), `0.00 %` when every sample is the same value (a metric
/// that is always zero included: no spread, though its mean is zero), `- (mean 0)` when
/// the samples spread around a mean of zero (the ratio has no value), else the CV in
/// percent with two decimals. Never `NaN %`.
pub fn cv_text(summary: &Summary) -> String {
    if summary.n < 2 {
        return "-".into();
    }
    if summary.min == summary.max {
        return "0.00 %".into();
    }
    if summary.cv.is_finite() {
        format!("{:.2} %", summary.cv * 100.0)
    } else {
        "- (mean 0)".into()
    }
}

/// The median of `run`'s samples of `metric`; `None` when it has none.
pub fn median_of(run: &StoredRun, metric: &str) -> Option<f64> {
    metric_stats(run, metric).map(|s| s.summary.median)
}

/// One run in `dyno results list`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ListedRun {
    /// Command that made the run.
    pub command: String,
    /// End (RFC 3339), when it finished.
    pub finished_at: Option<String>,
    /// Host name it ran on.
    pub hostname: String,
    /// Run id in this store.
    pub id: RunId,
    /// Number of samples stored.
    pub samples: u64,
    /// Start (RFC 3339).
    pub started_at: String,
    /// `running`, `complete`, `incomplete` or `failed`.
    pub status: &'static str,
    /// What it measured.
    pub subject: Subject,
    /// The run's globally unique id.
    pub uuid: String,
}

/// `dyno results list`'s report (`dyno.results.list/1`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunList {
    /// The runs, newest first.
    pub runs: Vec<ListedRun>,
    /// [`LIST_SCHEMA`].
    pub schema: &'static str,
}

impl RunList {
    /// The report of `runs`.
    pub fn new(runs: &[RunSummary]) -> RunList {
        RunList {
            runs: runs
                .iter()
                .map(|r| ListedRun {
                    command: r.command.clone(),
                    finished_at: r.finished_at.map(format_timestamp),
                    hostname: r.hostname.clone(),
                    id: r.id,
                    samples: r.samples,
                    started_at: format_timestamp(r.started_at),
                    status: r.status.as_str(),
                    subject: r.subject.clone(),
                    uuid: r.uuid.clone(),
                })
                .collect(),
            schema: LIST_SCHEMA,
        }
    }
}

/// One metric in `dyno results show`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShownMetric {
    /// The median's interval (two or more samples).
    pub ci: Option<MedianInterval>,
    /// Coefficient of variation (two or more samples).
    pub cv: Option<f64>,
    /// `higher-is-better` or `lower-is-better`.
    pub direction: &'static str,
    /// Largest sample.
    pub max: f64,
    /// Median.
    pub median: f64,
    /// The metric's name.
    pub metric: String,
    /// Smallest sample.
    pub min: f64,
    /// Number of samples.
    pub n: usize,
    /// The samples, in repetition order.
    pub samples: Vec<f64>,
    /// The unit's symbol.
    pub unit: &'static str,
}

/// `dyno results show`'s report (`dyno.results.show/1`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunShow {
    /// End (RFC 3339), when it finished.
    pub finished_at: Option<String>,
    /// Run id in this store.
    pub id: RunId,
    /// Everything recorded at the start (its start as RFC 3339 in the document).
    #[serde(serialize_with = "info_with_rfc3339_start")]
    pub info: RunInfo,
    /// Every metric with samples, in registration order.
    pub metrics: Vec<ShownMetric>,
    /// [`SHOW_SCHEMA`].
    pub schema: &'static str,
    /// `running`, `complete`, `incomplete` or `failed`.
    pub status: &'static str,
}

impl RunShow {
    /// The report of `run`.
    pub fn new(run: &StoredRun) -> RunShow {
        let metrics = run
            .metrics
            .iter()
            .filter_map(|m| {
                let stats = metric_stats(run, &m.name)?;
                let sum = stats.summary;
                Some(ShownMetric {
                    ci: stats.ci.map(|c| MedianInterval {
                        high: c.high,
                        level: c.achieved,
                        low: c.low,
                    }),
                    cv: (sum.n >= 2).then_some(sum.cv),
                    direction: m.direction.as_str(),
                    max: sum.max,
                    median: sum.median,
                    metric: m.name.clone(),
                    min: sum.min,
                    n: sum.n,
                    samples: stats.values,
                    unit: m.unit.symbol(),
                })
            })
            .collect();
        RunShow {
            finished_at: run.finished_at.map(format_timestamp),
            id: run.id,
            info: run.info.clone(),
            metrics,
            schema: SHOW_SCHEMA,
            status: run.status.as_str(),
        }
    }
}

/// A run's info with its start as RFC 3339, like `results list`, not the store's Unix
/// seconds.
fn info_with_rfc3339_start<S: serde::Serializer>(info: &RunInfo, s: S) -> Result<S::Ok, S::Error> {
    let mut v = serde_json::to_value(info).map_err(serde::ser::Error::custom)?;
    v["started_at"] = format_timestamp(info.started_at).into();
    v.serialize(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cv_is_never_nan_not_even_for_a_metric_that_is_always_zero() {
        let cv = |v: &[f64]| cv_text(&dyno_stats::summarize(v).unwrap());
        assert_eq!(cv(&[0.0, 0.0, 0.0]), "0.00 %");
        assert_eq!(cv(&[5.0, 5.0]), "0.00 %");
        assert_eq!(cv(&[-1.0, 1.0]), "- (mean 0)");
        assert_eq!(cv(&[7.0]), "-");
        assert_eq!(cv(&[1.0, 3.0]), "70.71 %");
    }
}
