//! A metric's history: one value per complete run, oldest first, for change-point
//! detection (`dyno results trend`) and dashboards.
//!
//! Each run's value is the median of its samples of the metric: a run is one point of
//! the history, however many repetitions it measured. The median is computed here from
//! the stored samples (never stored), because every reader of a history wants the same
//! one number per run and the samples of a whole history are too many to ship.

use crate::error::StoreError;
use crate::filter::{Dialect, Param, RunFilter, Sql};
use crate::fleet::common_metric;
use crate::query::{decode_json, decode_subject};
use crate::sqlite::Sqlite;
use crate::RunId;
use dyno_model::{Metric, Subject};
use rusqlite::OptionalExtension;
use std::path::Path;

/// Which runs' values of a metric make up a history.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HistoryQuery {
    /// The metric, exactly as stored (`Sr25519Verify`, `tps`...).
    pub metric: String,
    /// Which runs: command (`machine`, `compare`...), host and subject substrings, start
    /// time bounds, and `limit` = at most this many points (the newest).
    pub runs: RunFilter,
    /// Only runs whose settings name this workload: `settings.workload` equal to it (as
    /// `dyno pipeline bench` stores it) or `settings.workload.name` equal to it (as
    /// `dyno compare` does).
    pub workload: Option<String>,
}

/// One run's value of the metric.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryPoint {
    /// The run (id in this store).
    pub run: RunId,
    /// The run's globally unique id.
    pub run_uuid: String,
    /// Start, seconds since the Unix epoch.
    pub started_at: f64,
    /// The command that made the run.
    pub command: String,
    /// What the run measured.
    pub subject: Subject,
    /// Host name it ran on.
    pub hostname: String,
    /// The workload named in the run's settings, if any (see [`HistoryQuery::workload`]).
    pub workload: Option<String>,
    /// The median of the run's samples of the metric (NaN samples left out).
    pub value: f64,
    /// How many samples that median is of.
    pub samples: usize,
    /// The metric with its unit and direction, as the run registered it.
    pub metric: Metric,
}

/// The history query in one dialect: runs that are complete, registered the metric and
/// match the filter, oldest first. Columns: id, uuid, command, subject kind, name and
/// attributes, host name, start, settings, unit, direction.
pub(crate) fn history_sql(dialect: Dialect, query: &HistoryQuery) -> Sql {
    let mut sql = Sql::new(
        dialect,
        "SELECT r.id, r.uuid, r.command, su.kind, su.name, su.attributes, h.hostname,
                r.started_at, r.settings, m.unit, m.direction
         FROM runs r
         JOIN subjects su ON su.id = r.subject_id
         JOIN hosts h ON h.id = r.host_id
         JOIN run_metrics m ON m.run_id = r.id",
    );
    let p = sql.bind(Param::Text(query.metric.clone()));
    sql.text
        .push_str(&format!(" AND m.name = {p} WHERE r.status = 'complete'"));
    sql.and_runs_match(&query.runs);
    sql.text.push_str(" ORDER BY r.started_at, r.id");
    sql
}

/// One row of [`history_sql`], decoded, before its samples are read.
pub(crate) struct HistoryRow {
    pub run: RunId,
    pub uuid: String,
    pub command: String,
    /// Subject kind, name, attributes (JSON).
    pub subject: (String, String, String),
    pub hostname: String,
    pub started_at: f64,
    pub settings: String,
    /// Unit, direction.
    pub metric: (String, String),
}

/// The points of `rows` whose runs match the workload, with `values(run)` the run's
/// samples of the metric; runs without a sample other than NaN are left out, then all
/// but the newest `limit`. Fails when the runs disagree on the metric's unit.
pub(crate) fn points(
    store: &Path,
    query: &HistoryQuery,
    rows: Vec<HistoryRow>,
    mut values: impl FnMut(RunId) -> Result<Vec<f64>, StoreError>,
) -> Result<Vec<HistoryPoint>, StoreError> {
    let metric = common_metric(store, &query.metric, rows.iter().map(|r| r.metric.clone()))?;
    let Some(metric) = metric else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for row in rows {
        let settings: serde_json::Value = decode_json(store, &row.settings, "settings")?;
        let workload = workload_of(&settings);
        if query.workload.is_some() && workload != query.workload {
            continue;
        }
        let mut samples = values(row.run)?;
        samples.retain(|v| !v.is_nan());
        let Some(value) = median(&mut samples) else {
            continue;
        };
        let (kind, name, attributes) = row.subject;
        out.push(HistoryPoint {
            run: row.run,
            run_uuid: row.uuid,
            started_at: row.started_at,
            command: row.command,
            subject: decode_subject(store, &kind, name, &attributes)?,
            hostname: row.hostname,
            workload,
            value,
            samples: samples.len(),
            metric: metric.clone(),
        });
    }
    if let Some(limit) = query.runs.limit {
        out.drain(..out.len().saturating_sub(limit));
    }
    Ok(out)
}

/// `settings.workload` when it is a string, else `settings.workload.name`.
fn workload_of(settings: &serde_json::Value) -> Option<String> {
    let w = settings.get("workload")?;
    w.as_str()
        .or_else(|| w.get("name").and_then(|n| n.as_str()))
        .map(str::to_string)
}

/// The median of non-NaN values (the mean of the middle two for an even count).
fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len() % 2 == 1 {
        values[mid]
    } else {
        values[mid - 1] / 2.0 + values[mid] / 2.0
    })
}

/// Answers "no point" apart from "no such metric": `Ok` when `points` is not empty or
/// some sample in the store has the metric (`exists`), [`StoreError::NoSuchMetric`]
/// otherwise.
pub(crate) fn known(
    store: &Path,
    query: &HistoryQuery,
    points: Vec<HistoryPoint>,
    exists: impl FnOnce() -> Result<bool, StoreError>,
) -> Result<Vec<HistoryPoint>, StoreError> {
    if points.is_empty() && !exists()? {
        return Err(StoreError::NoSuchMetric {
            path: store.to_path_buf(),
            metric: query.metric.clone(),
        });
    }
    Ok(points)
}

/// Whether any sample has the metric, in both dialects (parameter 1).
pub(crate) const METRIC_EXISTS: &str = "SELECT 1 FROM samples WHERE metric = {P1} LIMIT 1";

/// Every metric name some run registered, sorted.
pub(crate) const METRIC_NAMES: &str = "SELECT DISTINCT name FROM run_metrics ORDER BY name";

impl Sqlite {
    pub(crate) fn metric_history(
        &self,
        query: &HistoryQuery,
    ) -> Result<Vec<HistoryPoint>, StoreError> {
        let sql = history_sql(Dialect::Sqlite, query);
        let mut stmt = self.conn.prepare(&sql.text).map_err(self.sql())?;
        let rows = stmt
            .query_map(rusqlite::params_from_iter(sql.sqlite_params()), |r| {
                Ok(HistoryRow {
                    run: r.get(0)?,
                    uuid: r.get(1)?,
                    command: r.get(2)?,
                    subject: (r.get(3)?, r.get(4)?, r.get(5)?),
                    hostname: r.get(6)?,
                    started_at: r.get(7)?,
                    settings: r.get(8)?,
                    metric: (r.get(9)?, r.get(10)?),
                })
            })
            .map_err(self.sql())?
            .collect::<Result<Vec<_>, _>>()
            .map_err(self.sql())?;
        let mut values = self
            .conn
            .prepare_cached("SELECT value FROM samples WHERE run_id = ?1 AND metric = ?2")
            .map_err(self.sql())?;
        let found = points(&self.path, query, rows, |run| {
            values
                .query_map(rusqlite::params![run, query.metric], |r| {
                    Ok(r.get::<_, Option<f64>>(0)?.unwrap_or(f64::NAN))
                })
                .and_then(|rows| rows.collect())
                .map_err(|e| StoreError::sqlite(&self.path, e))
        })?;
        known(&self.path, query, found, || {
            self.conn
                .query_row(
                    &METRIC_EXISTS.replace("{P1}", "?1"),
                    [&query.metric],
                    |_| Ok(()),
                )
                .optional()
                .map(|r| r.is_some())
                .map_err(self.sql())
        })
    }

    pub(crate) fn metric_names(&self) -> Result<Vec<String>, StoreError> {
        let mut stmt = self.conn.prepare(METRIC_NAMES).map_err(self.sql())?;
        let names = stmt
            .query_map([], |r| r.get(0))
            .map_err(self.sql())?
            .collect::<Result<Vec<String>, _>>()
            .map_err(self.sql())?;
        Ok(names)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_run_value_is_the_median() {
        assert_eq!(median(&mut []), None);
        assert_eq!(median(&mut [3.0]), Some(3.0));
        assert_eq!(median(&mut [5.0, 1.0, 3.0]), Some(3.0));
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(
            median(&mut [f64::MAX, f64::MAX]),
            Some(f64::MAX),
            "no overflow"
        );
    }

    #[test]
    fn workloads_are_read_from_either_shape_of_settings() {
        let bench = serde_json::json!({ "workload": "value", "rate": 1000 });
        let compare = serde_json::json!({ "workload": { "name": "transfers", "rate": 5 } });
        let none = serde_json::json!({ "workload": null });
        assert_eq!(workload_of(&bench).as_deref(), Some("value"));
        assert_eq!(workload_of(&compare).as_deref(), Some("transfers"));
        assert_eq!(workload_of(&none), None);
        assert_eq!(workload_of(&serde_json::json!({})), None);
    }

    #[test]
    fn the_query_filters_runs_like_the_run_list() {
        let q = HistoryQuery {
            metric: "tps".into(),
            runs: RunFilter {
                command: Some("compare".into()),
                subject: Some("v1".into()),
                ..RunFilter::default()
            },
            workload: None,
        };
        let sql = history_sql(Dialect::Postgres, &q);
        assert!(sql.text.contains("m.name = $1 WHERE r.status = 'complete'"));
        assert!(sql
            .text
            .contains("r.command = $2 AND strpos(su.name, $3) > 0"));
        assert!(sql.text.ends_with("ORDER BY r.started_at, r.id"));
        assert_eq!(sql.params.len(), 3);
    }
}
