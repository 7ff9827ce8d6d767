//! Writing runs: begin, register metrics, add samples, finish, delete, reap.
//!
//! Every write is one immediate transaction committed before the method returns, so
//! what a method accepted survives the process dying right after.

use crate::error::StoreError;
use crate::sqlite::Sqlite;
use crate::writer::Writer;
use crate::RunId;
use dyno_model::{Host, Metric, RunInfo, RunStatus, Sample, Subject};
use rusqlite::{params, OptionalExtension, Transaction, TransactionBehavior};
use std::collections::HashSet;

impl Sqlite {
    /// Records the start of a run with the metrics it will measure; its status is
    /// `running` until [`Store::finish_run`]. The calling process is recorded as the
    /// run's writer (see [`Store::reap_dead_runs`]).
    pub fn begin_run(&mut self, info: &RunInfo, metrics: &[Metric]) -> Result<RunId, StoreError> {
        let path = self.path.clone();
        let sql = |e| StoreError::sqlite(&path, e);
        let tx = self.write_tx()?;
        let host_id = upsert_host(&tx, &info.host).map_err(sql)?;
        let subject_id = upsert_subject(&tx, &info.subject).map_err(sql)?;
        let writer = Writer::current();
        tx.execute(
            "INSERT INTO runs (command, subject_id, host_id, started_at, status, command_line,
                               tool_version, settings, writer_host, writer_pid, writer_token,
                               uuid)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            params![
                info.command,
                subject_id,
                host_id,
                info.started_at,
                RunStatus::Running.as_str(),
                to_json(&crate::url::redact_command_line(&info.command_line)),
                info.tool_version,
                to_json(&info.settings),
                writer.host,
                writer.pid,
                writer.token,
                new_uuid(),
            ],
        )
        .map_err(sql)?;
        let run = tx.last_insert_rowid();
        for metric in metrics {
            register_metric(&tx, &path, run, metric)?;
        }
        tx.commit().map_err(sql)?;
        Ok(run)
    }

    /// Registers one more metric with a run. Registering the same metric again is a
    /// no-op; the same name with another unit or direction is [`StoreError::MetricConflict`].
    pub fn add_metric(&mut self, run: RunId, metric: &Metric) -> Result<(), StoreError> {
        let path = self.path.clone();
        let tx = self.write_tx()?;
        require_run(&tx, &path, run)?;
        register_metric(&tx, &path, run, metric)?;
        tx.commit().map_err(|e| StoreError::sqlite(&path, e))
    }

    /// Adds samples to a run in one transaction, committed on return. Every sample's
    /// metric must be registered with the run; otherwise nothing is added. A NaN value is
    /// kept (stored as SQL NULL, read back as NaN).
    pub fn add_samples(&mut self, run: RunId, samples: &[Sample]) -> Result<(), StoreError> {
        self.insert_samples(run, samples.iter().map(|s| (s, None)))
    }

    /// Like [`Store::add_samples`], with a JSON value of extra dimensions per sample (a
    /// tune variant and round, a workload phase...). `null` means no labels.
    pub fn add_labeled_samples(
        &mut self,
        run: RunId,
        samples: &[(Sample, serde_json::Value)],
    ) -> Result<(), StoreError> {
        self.insert_samples(
            run,
            samples
                .iter()
                .map(|(s, l)| (s, (!l.is_null()).then(|| l.to_string()))),
        )
    }

    /// Replaces a run's settings (a run stored as it goes learns some of them late).
    pub fn update_settings(
        &mut self,
        run: RunId,
        settings: &serde_json::Value,
    ) -> Result<(), StoreError> {
        let changed = self
            .conn
            .execute(
                "UPDATE runs SET settings = ?1 WHERE id = ?2",
                params![to_json(settings), run],
            )
            .map_err(self.sql())?;
        match changed {
            0 => Err(StoreError::UnknownRun(run)),
            _ => Ok(()),
        }
    }

    /// Records how a run ended and when (now). `status` must not be `Running`.
    pub fn finish_run(&mut self, run: RunId, status: RunStatus) -> Result<(), StoreError> {
        if status == RunStatus::Running {
            return Err(StoreError::FinishAsRunning(run));
        }
        let changed = self
            .conn
            .execute(
                "UPDATE runs SET status = ?1, finished_at = ?2 WHERE id = ?3",
                params![status.as_str(), dyno_model::now_unix(), run],
            )
            .map_err(self.sql())?;
        match changed {
            0 => Err(StoreError::UnknownRun(run)),
            _ => Ok(()),
        }
    }

    /// Deletes a run with its metrics and samples, and the host and subject rows no
    /// other run uses.
    pub fn delete_run(&mut self, id: RunId) -> Result<(), StoreError> {
        let path = self.path.clone();
        let sql = |e| StoreError::sqlite(&path, e);
        let tx = self.write_tx()?;
        require_run(&tx, &path, id)?;
        tx.execute("DELETE FROM samples WHERE run_id = ?1", [id])
            .map_err(sql)?;
        tx.execute("DELETE FROM run_metrics WHERE run_id = ?1", [id])
            .map_err(sql)?;
        tx.execute("DELETE FROM sample_batches WHERE run_id = ?1", [id])
            .map_err(sql)?;
        tx.execute("DELETE FROM runs WHERE id = ?1", [id])
            .map_err(sql)?;
        tx.execute_batch(
            "DELETE FROM subjects WHERE id NOT IN (SELECT subject_id FROM runs);
             DELETE FROM hosts WHERE id NOT IN (SELECT host_id FROM runs);",
        )
        .map_err(sql)?;
        tx.commit().map_err(sql)
    }

    /// Marks `incomplete` every `running` run whose writing process is known to be dead
    /// (same host, process gone; see the crate docs). Returns the runs it marked.
    ///
    /// Nothing does this implicitly: `list_runs` and `run` already *report* such runs as
    /// incomplete, and this persists it (for a `dyno results reap`, or before resuming).
    pub fn reap_dead_runs(&mut self) -> Result<Vec<RunId>, StoreError> {
        let path = self.path.clone();
        let sql = |e| StoreError::sqlite(&path, e);
        let tx = self.write_tx()?;
        let dead: Vec<RunId> = {
            let mut stmt = tx
                .prepare(
                    "SELECT id, writer_host, writer_pid, writer_token FROM runs
                     WHERE status = 'running' ORDER BY id",
                )
                .map_err(sql)?;
            let rows = stmt
                .query_map([], |r| {
                    Ok((r.get::<_, RunId>(0)?, crate::query::writer_of(r, 1)?))
                })
                .map_err(sql)?;
            let mut dead = Vec::new();
            for row in rows {
                let (id, writer) = row.map_err(sql)?;
                if writer.is_some_and(|w| w.is_dead()) {
                    dead.push(id);
                }
            }
            dead
        };
        for id in &dead {
            tx.execute(
                "UPDATE runs SET status = ?1 WHERE id = ?2 AND status = 'running'",
                params![RunStatus::Incomplete.as_str(), id],
            )
            .map_err(sql)?;
        }
        tx.commit().map_err(sql)?;
        Ok(dead)
    }

    fn insert_samples<'s>(
        &mut self,
        run: RunId,
        samples: impl Iterator<Item = (&'s Sample, Option<String>)>,
    ) -> Result<(), StoreError> {
        let path = self.path.clone();
        let sql = |e| StoreError::sqlite(&path, e);
        let tx = self.write_tx()?;
        require_run(&tx, &path, run)?;
        let known: HashSet<String> = {
            let mut stmt = tx
                .prepare_cached("SELECT name FROM run_metrics WHERE run_id = ?1")
                .map_err(sql)?;
            let names = stmt
                .query_map([run], |r| r.get::<_, String>(0))
                .map_err(sql)?;
            names.collect::<Result<_, _>>().map_err(sql)?
        };
        {
            let mut insert = tx
                .prepare_cached(
                    "INSERT INTO samples (run_id, metric, repetition, value, labels)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .map_err(sql)?;
            for (sample, labels) in samples {
                if !known.contains(&sample.metric) {
                    return Err(StoreError::UnknownMetric {
                        run,
                        metric: sample.metric.clone(),
                    });
                }
                // SQLite has no NaN: it would store NULL anyway; say so explicitly.
                let value = (!sample.value.is_nan()).then_some(sample.value);
                // Raw binding: this loop is the hot path of every command.
                insert.raw_bind_parameter(1, run).map_err(sql)?;
                insert.raw_bind_parameter(2, &sample.metric).map_err(sql)?;
                insert
                    .raw_bind_parameter(3, sample.repetition)
                    .map_err(sql)?;
                insert.raw_bind_parameter(4, value).map_err(sql)?;
                insert.raw_bind_parameter(5, &labels).map_err(sql)?;
                insert.raw_execute().map_err(sql)?;
            }
        }
        tx.commit().map_err(sql)
    }

    /// An immediate write transaction: takes the write lock now (waiting up to the busy
    /// timeout), so it never fails half-way on a lock upgrade.
    fn write_tx(&mut self) -> Result<Transaction<'_>, StoreError> {
        let path = self.path.clone();
        self.conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| StoreError::sqlite(&path, e))
    }
}

/// A fresh globally unique run id (UUID version 4, lower-case hex with dashes).
pub(crate) fn new_uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// Serialising model values to JSON cannot fail (string keys, no custom serialisers).
pub(crate) fn to_json<T: serde::Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).expect("model values serialise to JSON")
}

pub(crate) fn require_run(
    tx: &Transaction<'_>,
    path: &std::path::Path,
    run: RunId,
) -> Result<(), StoreError> {
    let exists = tx
        .query_row("SELECT 1 FROM runs WHERE id = ?1", [run], |_| Ok(()))
        .optional()
        .map_err(|e| StoreError::sqlite(path, e))?;
    exists.ok_or(StoreError::UnknownRun(run))
}

pub(crate) fn register_metric(
    tx: &Transaction<'_>,
    path: &std::path::Path,
    run: RunId,
    metric: &Metric,
) -> Result<(), StoreError> {
    let sql = |e| StoreError::sqlite(path, e);
    let existing: Option<(String, String)> = tx
        .query_row(
            "SELECT unit, direction FROM run_metrics WHERE run_id = ?1 AND name = ?2",
            params![run, metric.name],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()
        .map_err(sql)?;
    match existing {
        Some((unit, direction))
            if unit == metric.unit.symbol() && direction == metric.direction.as_str() =>
        {
            Ok(())
        }
        Some(_) => Err(StoreError::MetricConflict {
            run,
            metric: metric.name.clone(),
        }),
        None => {
            tx.execute(
                "INSERT INTO run_metrics (run_id, position, name, unit, direction)
                 VALUES (?1, (SELECT coalesce(max(position) + 1, 0) FROM run_metrics
                              WHERE run_id = ?1), ?2, ?3, ?4)",
                params![
                    run,
                    metric.name,
                    metric.unit.symbol(),
                    metric.direction.as_str()
                ],
            )
            .map_err(sql)?;
            Ok(())
        }
    }
}

/// The id of `host`, inserting it when no host with the same JSON is stored.
pub(crate) fn upsert_host(tx: &Transaction<'_>, host: &Host) -> rusqlite::Result<i64> {
    let json = serde_json::to_string(host).expect("a Host serialises to JSON");
    let fingerprint = format!("{:016x}", fnv1a64(json.as_bytes()));
    let found = tx
        .query_row(
            "SELECT id FROM hosts WHERE fingerprint = ?1 AND json = ?2",
            params![fingerprint, json],
            |r| r.get(0),
        )
        .optional()?;
    if let Some(id) = found {
        return Ok(id);
    }
    tx.execute(
        "INSERT INTO hosts (fingerprint, hostname, cpu_model, json) VALUES (?1, ?2, ?3, ?4)",
        params![fingerprint, host.hostname, host.cpu_model, json],
    )?;
    Ok(tx.last_insert_rowid())
}

/// The id of `subject`, inserting it when new.
pub(crate) fn upsert_subject(tx: &Transaction<'_>, subject: &Subject) -> rusqlite::Result<i64> {
    let attributes =
        serde_json::to_string(&subject.attributes).expect("a string map serialises to JSON");
    tx.execute(
        "INSERT INTO subjects (kind, name, attributes) VALUES (?1, ?2, ?3)
         ON CONFLICT (kind, name, attributes) DO NOTHING",
        params![subject.kind.as_str(), subject.name, attributes],
    )?;
    tx.query_row(
        "SELECT id FROM subjects WHERE kind = ?1 AND name = ?2 AND attributes = ?3",
        params![subject.kind.as_str(), subject.name, attributes],
        |r| r.get(0),
    )
}

/// 64-bit FNV-1a: a stable, dependency-free fingerprint. Collisions only cost a second
/// row lookup, since equality is decided on the JSON itself.
pub(crate) fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::fnv1a64;

    #[test]
    fn fnv1a_matches_reference_vectors() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }
}
