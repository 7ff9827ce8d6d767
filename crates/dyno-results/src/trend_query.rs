//! Which history `dyno results trend` analyses: the metric and the filters as given, the
//! history they select from the store, and errors that name the flag at fault.

use crate::trend::{metric_suggestion, TrendFilters, MIN_POINTS};
use crate::ResultsError;
use dyno_model::format_timestamp;
use dyno_store::{HistoryPoint, HistoryQuery, RunFilter, Store, StoreError};

/// The metric and filters of a trend (`--metric`, `--subject`, `--host`, `--workload`,
/// `--kind`, `--since`, `--last`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TrendQuery {
    /// The metric, as stored.
    pub metric: String,
    /// Only runs whose subject name contains this text.
    pub subject: Option<String>,
    /// Only runs whose host name contains this text.
    pub host: Option<String>,
    /// Only runs whose settings name this workload.
    pub workload: Option<String>,
    /// Only runs of this command (as the store records it: `machine`, `cluster run`...).
    pub command: Option<String>,
    /// Only runs started on or after this time (seconds since the Unix epoch).
    pub since: Option<f64>,
    /// Only the newest N runs.
    pub last: Option<u64>,
}

impl TrendQuery {
    /// The history the query selects (oldest first, at least [`MIN_POINTS`] runs), or an
    /// error that names what is wrong: an unknown metric (with the closest stored names),
    /// filters that match no complete run, too short a history.
    pub fn history(&self, store: &Store) -> Result<Vec<HistoryPoint>, ResultsError> {
        let query = HistoryQuery {
            metric: self.metric.clone(),
            runs: RunFilter {
                command: self.command.clone(),
                host: self.host.clone(),
                subject: self.subject.clone(),
                since: self.since,
                until: None,
                limit: self.last.map(|n| n as usize),
            },
            workload: self.workload.clone(),
        };
        let points = match store.metric_history(&query) {
            Err(StoreError::NoSuchMetric { .. }) => {
                let names = store.metric_names()?;
                return Err(ResultsError::UnknownMetric {
                    metric: self.metric.clone(),
                    store: store.path().to_path_buf(),
                    suggestion: metric_suggestion(&self.metric, &names),
                });
            }
            other => other?,
        };
        if points.is_empty() {
            return Err(ResultsError::NoMatch {
                metric: self.metric.clone(),
                store: store.path().to_path_buf(),
                filters: self.described_filters(),
            });
        }
        if points.len() < MIN_POINTS {
            return Err(ResultsError::TooShort {
                metric: self.metric.clone(),
                points: points.len(),
            });
        }
        Ok(points)
    }

    /// The filters as the report's JSON document records them.
    pub fn filters(&self) -> TrendFilters {
        TrendFilters {
            command: self.command.clone(),
            host: self.host.clone(),
            last: self.last,
            since: self.since.map(format_timestamp),
            subject: self.subject.clone(),
            workload: self.workload.clone(),
        }
    }

    /// The filters given, for a message: ` (--host x, --kind machine)`; empty when none.
    pub fn described_filters(&self) -> String {
        let given: Vec<String> = [
            ("--subject", self.subject.clone()),
            ("--host", self.host.clone()),
            ("--workload", self.workload.clone()),
            ("--kind", self.command.clone()),
            ("--since", self.since.map(format_timestamp)),
        ]
        .into_iter()
        .filter_map(|(flag, v)| v.map(|v| format!("{flag} {v}")))
        .collect();
        if given.is_empty() {
            String::new()
        } else {
            format!(" ({})", given.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_are_described_in_flag_order() {
        let q = TrendQuery {
            metric: "tps".into(),
            host: Some("bench-01".into()),
            command: Some("cluster run".into()),
            since: Some(0.0),
            ..TrendQuery::default()
        };
        assert_eq!(
            q.described_filters(),
            " (--host bench-01, --kind cluster run, --since 1970-01-01T00:00:00Z)"
        );
        assert_eq!(TrendQuery::default().described_filters(), "");
        assert_eq!(q.filters().command.as_deref(), Some("cluster run"));
    }
}
