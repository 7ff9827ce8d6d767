//! Reading runs back: the filtered list and one run in full.

use crate::error::StoreError;
use crate::filter::{Dialect, RunFilter, Sql};
use crate::sqlite::Sqlite;
use crate::writer::Writer;
use crate::RunId;
use dyno_model::{Direction, Host, Metric, RunInfo, RunStatus, Sample, Subject, SubjectKind, Unit};
use rusqlite::{OptionalExtension, Row};
use std::path::Path;

/// One line of the run list.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSummary {
    /// Run id (local to this store).
    pub id: RunId,
    /// The run's globally unique id (a UUID), the same in every store it was copied to.
    pub uuid: String,
    /// Command that made the run.
    pub command: String,
    /// What it measured.
    pub subject: Subject,
    /// Host name it ran on.
    pub hostname: String,
    /// Start, seconds since the Unix epoch.
    pub started_at: f64,
    /// End, when it finished.
    pub finished_at: Option<f64>,
    /// Status; a `running` run whose writer died is reported `incomplete`.
    pub status: RunStatus,
    /// Number of samples stored.
    pub samples: u64,
}

/// One run in full, as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredRun {
    /// Run id.
    pub id: RunId,
    /// Everything recorded at the start.
    pub info: RunInfo,
    /// Status; a `running` run whose writer died is reported `incomplete`.
    pub status: RunStatus,
    /// End, when it finished.
    pub finished_at: Option<f64>,
    /// Metrics in registration order.
    pub metrics: Vec<Metric>,
    /// Samples ordered by metric registration order, then repetition, then insertion.
    pub samples: Vec<Sample>,
}

/// The run list's columns, for both dialects; the filter's conditions follow.
pub(crate) const LIST_RUNS: &str =
    "SELECT r.id, r.command, su.kind, su.name, su.attributes, h.hostname, r.started_at,
            r.finished_at, r.status, r.writer_host, r.writer_pid, r.writer_token,
            (SELECT count(*) FROM samples s WHERE s.run_id = r.id), r.uuid
     FROM runs r
     JOIN subjects su ON su.id = r.subject_id
     JOIN hosts h ON h.id = r.host_id
     WHERE 1 = 1";

/// One run's header in one dialect: what `begin_run` recorded (columns 0-8: command,
/// subject kind, name and attributes, host, start, command line, tool version, settings),
/// its status, end and writer (9-13), and its uuid (14).
pub(crate) fn run_header_sql(dialect: Dialect) -> String {
    format!(
        "SELECT r.command, su.kind, su.name, su.attributes, h.json, r.started_at,
                r.command_line, r.tool_version, r.settings, r.status, r.finished_at,
                r.writer_host, r.writer_pid, r.writer_token, r.uuid
         FROM runs r
         JOIN subjects su ON su.id = r.subject_id
         JOIN hosts h ON h.id = r.host_id
         WHERE r.id = {}",
        dialect.placeholder(1)
    )
}

/// The run list in one dialect: runs matching `filter`, newest first (by start time,
/// then id), at most its `limit`.
pub(crate) fn list_runs_sql(dialect: Dialect, filter: &RunFilter) -> Sql {
    let mut sql = Sql::new(dialect, LIST_RUNS);
    sql.and_runs_match(filter);
    sql.text.push_str(" ORDER BY r.started_at DESC, r.id DESC");
    sql.limit(filter.limit);
    sql
}

impl Sqlite {
    /// Runs matching `filter`, newest first (by start time, then id).
    pub fn list_runs(&self, filter: &RunFilter) -> Result<Vec<RunSummary>, StoreError> {
        let sql = list_runs_sql(Dialect::Sqlite, filter);
        let args = sql.sqlite_params();
        let mut stmt = self.conn.prepare(&sql.text).map_err(self.sql())?;
        let rows = stmt
            .query_map(rusqlite::params_from_iter(args), |r| {
                Ok((
                    r.get::<_, RunId>(0)?,
                    r.get::<_, String>(1)?,
                    (
                        r.get::<_, String>(2)?,
                        r.get::<_, String>(3)?,
                        r.get::<_, String>(4)?,
                    ),
                    r.get::<_, String>(5)?,
                    r.get::<_, f64>(6)?,
                    r.get::<_, Option<f64>>(7)?,
                    r.get::<_, String>(8)?,
                    writer_of(r, 9)?,
                    r.get::<_, i64>(12)?,
                    r.get::<_, String>(13)?,
                ))
            })
            .map_err(self.sql())?;
        let mut out = Vec::new();
        for row in rows {
            let (
                id,
                command,
                (kind, name, attrs),
                hostname,
                started_at,
                finished_at,
                status,
                w,
                n,
                uuid,
            ) = row.map_err(self.sql())?;
            out.push(RunSummary {
                id,
                uuid,
                command,
                subject: self.decode_subject(&kind, name, &attrs)?,
                hostname,
                started_at,
                finished_at,
                status: self.effective_status(&status, w)?,
                samples: n as u64,
            });
        }
        Ok(out)
    }

    /// One run with its metrics and samples; [`StoreError::UnknownRun`] if missing.
    pub fn run(&self, id: RunId) -> Result<StoredRun, StoreError> {
        let header = self.run_header(id)?;
        let metrics = self.metrics_of(id)?;
        let samples = self.samples_of(id)?.into_iter().map(|(s, _)| s).collect();
        Ok(StoredRun {
            id,
            info: header.info,
            status: header.status,
            finished_at: header.finished_at,
            metrics,
            samples,
        })
    }

    /// The samples of a run with their labels (`None` for samples added without), in
    /// the order of [`StoredRun::samples`].
    pub fn labeled_samples(
        &self,
        id: RunId,
    ) -> Result<Vec<(Sample, Option<serde_json::Value>)>, StoreError> {
        self.run_header(id)?;
        self.samples_of(id)
    }

    pub(crate) fn run_header(&self, id: RunId) -> Result<Header, StoreError> {
        let row = self
            .conn
            .query_row(&run_header_sql(Dialect::Sqlite), [id], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    [r.get::<_, String>(1)?, r.get(2)?, r.get(3)?, r.get(4)?],
                    r.get::<_, f64>(5)?,
                    [r.get::<_, String>(6)?, r.get(7)?, r.get(8)?, r.get(9)?],
                    r.get::<_, Option<f64>>(10)?,
                    writer_of(r, 11)?,
                ))
            })
            .optional()
            .map_err(self.sql())?
            .ok_or(StoreError::UnknownRun(id))?;
        let (command, [kind, name, attrs, host], started_at, rest, finished_at, writer) = row;
        let [command_line, tool_version, settings, status] = rest;
        let info = RunInfo {
            command,
            subject: self.decode_subject(&kind, name, &attrs)?,
            host: self.decode_json::<Host>(&host, "host")?,
            started_at,
            command_line: self.decode_json(&command_line, "command line")?,
            tool_version,
            settings: self.decode_json(&settings, "settings")?,
        };
        Ok(Header {
            info,
            status: self.effective_status(&status, writer)?,
            finished_at,
        })
    }

    pub(crate) fn metrics_of(&self, id: RunId) -> Result<Vec<Metric>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT name, unit, direction FROM run_metrics WHERE run_id = ?1 ORDER BY position",
            )
            .map_err(self.sql())?;
        let rows = stmt
            .query_map([id], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })
            .map_err(self.sql())?;
        let mut out = Vec::new();
        for row in rows {
            let (name, unit, direction) = row.map_err(self.sql())?;
            let unit = Unit::parse(&unit).ok_or_else(|| self.corrupt(format!("unit {unit:?}")))?;
            let direction = Direction::parse(&direction)
                .ok_or_else(|| self.corrupt(format!("direction {direction:?}")))?;
            out.push(Metric::new(name, unit, direction));
        }
        Ok(out)
    }

    pub(crate) fn samples_of(
        &self,
        id: RunId,
    ) -> Result<Vec<(Sample, Option<serde_json::Value>)>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT s.metric, s.repetition, s.value, s.labels
                 FROM samples s
                 JOIN run_metrics m ON m.run_id = s.run_id AND m.name = s.metric
                 WHERE s.run_id = ?1
                 ORDER BY m.position, s.repetition, s.rowid",
            )
            .map_err(self.sql())?;
        let rows = stmt
            .query_map([id], |r| {
                Ok((
                    Sample {
                        metric: r.get(0)?,
                        repetition: r.get(1)?,
                        value: r.get::<_, Option<f64>>(2)?.unwrap_or(f64::NAN),
                    },
                    r.get::<_, Option<String>>(3)?,
                ))
            })
            .map_err(self.sql())?;
        let mut out = Vec::new();
        for row in rows {
            let (sample, labels) = row.map_err(self.sql())?;
            let labels = match labels {
                Some(text) => Some(self.decode_json(&text, "sample labels")?),
                None => None,
            };
            out.push((sample, labels));
        }
        Ok(out)
    }

    fn effective_status(
        &self,
        stored: &str,
        writer: Option<Writer>,
    ) -> Result<RunStatus, StoreError> {
        effective_status(&self.path, stored, writer)
    }

    fn decode_subject(&self, kind: &str, name: String, attrs: &str) -> Result<Subject, StoreError> {
        decode_subject(&self.path, kind, name, attrs)
    }

    fn decode_json<T: serde::de::DeserializeOwned>(
        &self,
        text: &str,
        what: &str,
    ) -> Result<T, StoreError> {
        decode_json(&self.path, text, what)
    }

    pub(crate) fn corrupt(&self, detail: String) -> StoreError {
        corrupt(&self.path, detail)
    }
}

/// The status to report for a stored status: `running` with a dead writer is `incomplete`.
pub(crate) fn effective_status(
    store: &Path,
    stored: &str,
    writer: Option<Writer>,
) -> Result<RunStatus, StoreError> {
    let status =
        RunStatus::parse(stored).ok_or_else(|| corrupt(store, format!("run status {stored:?}")))?;
    Ok(match (status, writer) {
        (RunStatus::Running, Some(w)) if w.is_dead() => RunStatus::Incomplete,
        (s, _) => s,
    })
}

pub(crate) fn decode_subject(
    store: &Path,
    kind: &str,
    name: String,
    attrs: &str,
) -> Result<Subject, StoreError> {
    Ok(Subject {
        kind: SubjectKind::parse(kind)
            .ok_or_else(|| corrupt(store, format!("subject kind {kind:?}")))?,
        name,
        attributes: decode_json(store, attrs, "subject attributes")?,
    })
}

pub(crate) fn decode_json<T: serde::de::DeserializeOwned>(
    store: &Path,
    text: &str,
    what: &str,
) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|e| corrupt(store, format!("{what}: {e}")))
}

pub(crate) fn decode_metric(
    store: &Path,
    name: String,
    unit: &str,
    direction: &str,
) -> Result<Metric, StoreError> {
    let unit = Unit::parse(unit).ok_or_else(|| corrupt(store, format!("unit {unit:?}")))?;
    let direction = Direction::parse(direction)
        .ok_or_else(|| corrupt(store, format!("direction {direction:?}")))?;
    Ok(Metric::new(name, unit, direction))
}

pub(crate) fn corrupt(store: &Path, detail: String) -> StoreError {
    StoreError::Corrupt {
        path: store.to_path_buf(),
        detail,
    }
}

pub(crate) struct Header {
    pub info: RunInfo,
    pub status: RunStatus,
    pub finished_at: Option<f64>,
}

/// The writer recorded in columns `at..at + 3` (host, pid, token), if any.
pub(crate) fn writer_of(r: &Row<'_>, at: usize) -> rusqlite::Result<Option<Writer>> {
    let host: Option<String> = r.get(at)?;
    let pid: Option<u32> = r.get(at + 1)?;
    let token: Option<String> = r.get(at + 2)?;
    Ok(host.zip(pid).map(|(host, pid)| Writer { host, pid, token }))
}
