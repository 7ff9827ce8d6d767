//! Writing runs to PostgreSQL: the same operations as the SQLite backend, each one
//! transaction that [`Pg::transact`] may run again after a reconnect.

use super::{Fail, Pg};
use crate::error::StoreError;
use crate::run::{fnv1a64, new_uuid, to_json};
use crate::transfer::{Copied, RunRecord};
use crate::writer::Writer;
use crate::RunId;
use dyno_model::{Host, Metric, RunInfo, RunStatus, Sample, Subject};
use postgres::binary_copy::BinaryCopyInWriter;
use postgres::types::Type;
use postgres::Transaction;
use std::collections::HashSet;

impl Pg {
    pub(crate) fn begin_run(
        &self,
        info: &RunInfo,
        metrics: &[Metric],
    ) -> Result<RunId, StoreError> {
        let uuid = new_uuid();
        let writer = Writer::current();
        let command_line = to_json(&crate::url::redact_command_line(&info.command_line));
        let settings = to_json(&info.settings);
        self.transact(|tx| {
            let host_id = upsert_host(tx, &info.host)?;
            let subject_id = upsert_subject(tx, &info.subject)?;
            let inserted = tx.query_opt(
                "INSERT INTO runs (command, subject_id, host_id, started_at, status, command_line,
                                   tool_version, settings, writer_host, writer_pid,
                                   writer_token, uuid)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
                 ON CONFLICT (uuid) DO NOTHING RETURNING id",
                &[
                    &info.command,
                    &subject_id,
                    &host_id,
                    &info.started_at,
                    &RunStatus::Running.as_str(),
                    &command_line,
                    &info.tool_version,
                    &settings,
                    &writer.host,
                    &i64::from(writer.pid),
                    &writer.token,
                    &uuid,
                ],
            )?;
            let run: RunId = match inserted {
                Some(row) => row.get(0),
                // An earlier attempt committed but its answer was lost.
                None => run_by_uuid(tx, &uuid)?.expect("the conflicting run exists"),
            };
            for metric in metrics {
                register_metric(tx, run, metric)?;
            }
            Ok(run)
        })
    }

    pub(crate) fn add_metric(&self, run: RunId, metric: &Metric) -> Result<(), StoreError> {
        self.transact(|tx| {
            require_run(tx, run)?;
            register_metric(tx, run, metric)
        })
    }

    pub(crate) fn insert_samples(
        &self,
        run: RunId,
        samples: &[(&Sample, Option<String>)],
    ) -> Result<(), StoreError> {
        let batch = new_uuid();
        self.transact(|tx| {
            require_run(tx, run)?;
            let known: HashSet<String> = tx
                .query("SELECT name FROM run_metrics WHERE run_id = $1", &[&run])?
                .iter()
                .map(|r| r.get(0))
                .collect();
            if let Some((s, _)) = samples.iter().find(|(s, _)| !known.contains(&s.metric)) {
                return Err(StoreError::UnknownMetric {
                    run,
                    metric: s.metric.clone(),
                }
                .into());
            }
            let fresh = tx.execute(
                "INSERT INTO sample_batches (run_id, batch) VALUES ($1, $2)
                 ON CONFLICT DO NOTHING",
                &[&run, &batch],
            )?;
            if fresh == 0 {
                return Ok(()); // committed by an attempt whose answer was lost
            }
            copy_in(tx, run, samples.iter().map(|(s, l)| (*s, l.as_deref())))
        })
    }

    pub(crate) fn update_settings(
        &self,
        run: RunId,
        settings: &serde_json::Value,
    ) -> Result<(), StoreError> {
        let settings = to_json(settings);
        let changed = self.transact(|tx| {
            Ok(tx.execute(
                "UPDATE runs SET settings = $1 WHERE id = $2",
                &[&settings, &run],
            )?)
        })?;
        match changed {
            0 => Err(StoreError::UnknownRun(run)),
            _ => Ok(()),
        }
    }

    pub(crate) fn finish_run(&self, run: RunId, status: RunStatus) -> Result<(), StoreError> {
        if status == RunStatus::Running {
            return Err(StoreError::FinishAsRunning(run));
        }
        let now = dyno_model::now_unix();
        let changed = self.transact(|tx| {
            Ok(tx.execute(
                "UPDATE runs SET status = $1, finished_at = $2 WHERE id = $3",
                &[&status.as_str(), &now, &run],
            )?)
        })?;
        match changed {
            0 => Err(StoreError::UnknownRun(run)),
            _ => Ok(()),
        }
    }

    pub(crate) fn delete_run(&self, id: RunId) -> Result<(), StoreError> {
        self.transact(|tx| {
            require_run(tx, id)?;
            for table in ["samples", "run_metrics", "sample_batches"] {
                tx.execute(&format!("DELETE FROM {table} WHERE run_id = $1"), &[&id])?;
            }
            tx.execute("DELETE FROM runs WHERE id = $1", &[&id])?;
            tx.batch_execute(
                "DELETE FROM subjects WHERE id NOT IN (SELECT subject_id FROM runs);
                 DELETE FROM hosts WHERE id NOT IN (SELECT host_id FROM runs);",
            )?;
            Ok(())
        })
    }

    pub(crate) fn reap_dead_runs(&self) -> Result<Vec<RunId>, StoreError> {
        self.transact(|tx| {
            let rows = tx.query(
                "SELECT id, writer_host, writer_pid, writer_token FROM runs
                 WHERE status = 'running' ORDER BY id FOR UPDATE",
                &[],
            )?;
            let mut dead = Vec::new();
            for r in &rows {
                if super::read::writer_of(r, 1).is_some_and(|w| w.is_dead()) {
                    let id: RunId = r.get(0);
                    tx.execute(
                        "UPDATE runs SET status = $1 WHERE id = $2",
                        &[&RunStatus::Incomplete.as_str(), &id],
                    )?;
                    dead.push(id);
                }
            }
            Ok(dead)
        })
    }

    pub(crate) fn import(&self, record: &RunRecord) -> Result<Copied, StoreError> {
        let command_line = to_json(&crate::url::redact_command_line(&record.info.command_line));
        let settings = to_json(&record.info.settings);
        self.transact(|tx| {
            if let Some(id) = run_by_uuid(tx, &record.uuid)? {
                return Ok(Copied::AlreadyThere(id));
            }
            let info = &record.info;
            let host_id = upsert_host(tx, &info.host)?;
            let subject_id = upsert_subject(tx, &info.subject)?;
            let inserted = tx.query_opt(
                "INSERT INTO runs (command, subject_id, host_id, started_at, finished_at, status,
                                   command_line, tool_version, settings, uuid)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
                 ON CONFLICT (uuid) DO NOTHING RETURNING id",
                &[
                    &info.command,
                    &subject_id,
                    &host_id,
                    &info.started_at,
                    &record.finished_at,
                    &record.status.as_str(),
                    &command_line,
                    &info.tool_version,
                    &settings,
                    &record.uuid,
                ],
            )?;
            let Some(row) = inserted else {
                // Another pusher of the same run committed first.
                let id = run_by_uuid(tx, &record.uuid)?.expect("the conflicting run exists");
                return Ok(Copied::AlreadyThere(id));
            };
            let run: RunId = row.get(0);
            for metric in &record.metrics {
                register_metric(tx, run, metric)?;
            }
            copy_in(
                tx,
                run,
                record.samples.iter().map(|(s, l)| (s, l.as_deref())),
            )?;
            Ok(Copied::New(run))
        })
    }
}

fn run_by_uuid(tx: &mut Transaction<'_>, uuid: &str) -> Result<Option<RunId>, postgres::Error> {
    Ok(tx
        .query_opt("SELECT id FROM runs WHERE uuid = $1", &[&uuid])?
        .map(|r| r.get(0)))
}

fn require_run(tx: &mut Transaction<'_>, run: RunId) -> Result<(), Fail> {
    match tx.query_opt("SELECT 1 FROM runs WHERE id = $1", &[&run])? {
        Some(_) => Ok(()),
        None => Err(StoreError::UnknownRun(run).into()),
    }
}

fn register_metric(tx: &mut Transaction<'_>, run: RunId, metric: &Metric) -> Result<(), Fail> {
    let existing = tx.query_opt(
        "SELECT unit, direction FROM run_metrics WHERE run_id = $1 AND name = $2",
        &[&run, &metric.name],
    )?;
    match existing {
        Some(r)
            if r.get::<_, &str>(0) == metric.unit.symbol()
                && r.get::<_, &str>(1) == metric.direction.as_str() =>
        {
            Ok(())
        }
        Some(_) => Err(StoreError::MetricConflict {
            run,
            metric: metric.name.clone(),
        }
        .into()),
        None => {
            tx.execute(
                "INSERT INTO run_metrics (run_id, position, name, unit, direction)
                 VALUES ($1, (SELECT coalesce(max(position) + 1, 0) FROM run_metrics
                              WHERE run_id = $1), $2, $3, $4)",
                &[
                    &run,
                    &metric.name,
                    &metric.unit.symbol(),
                    &metric.direction.as_str(),
                ],
            )?;
            Ok(())
        }
    }
}

/// The id of `host`, inserting it when no host with the same JSON is stored. An advisory
/// lock on the fingerprint keeps two writers of the same new host from inserting it twice.
fn upsert_host(tx: &mut Transaction<'_>, host: &Host) -> Result<i64, postgres::Error> {
    let json = serde_json::to_string(host).expect("a Host serialises to JSON");
    let fingerprint = format!("{:016x}", fnv1a64(json.as_bytes()));
    tx.execute(
        "SELECT pg_advisory_xact_lock(1, hashtext($1))",
        &[&fingerprint],
    )?;
    if let Some(r) = tx.query_opt(
        "SELECT id FROM hosts WHERE fingerprint = $1 AND json = $2",
        &[&fingerprint, &json],
    )? {
        return Ok(r.get(0));
    }
    Ok(tx
        .query_one(
            "INSERT INTO hosts (fingerprint, hostname, cpu_model, json) VALUES ($1, $2, $3, $4)
             RETURNING id",
            &[&fingerprint, &host.hostname, &host.cpu_model, &json],
        )?
        .get(0))
}

fn upsert_subject(tx: &mut Transaction<'_>, subject: &Subject) -> Result<i64, postgres::Error> {
    let attributes =
        serde_json::to_string(&subject.attributes).expect("a string map serialises to JSON");
    let kind = subject.kind.as_str();
    tx.execute(
        "INSERT INTO subjects (kind, name, attributes) VALUES ($1, $2, $3)
         ON CONFLICT (kind, name, attributes) DO NOTHING",
        &[&kind, &subject.name, &attributes],
    )?;
    Ok(tx
        .query_one(
            "SELECT id FROM subjects WHERE kind = $1 AND name = $2 AND attributes = $3",
            &[&kind, &subject.name, &attributes],
        )?
        .get(0))
}

/// Sends samples with a binary `COPY`: no text to format here or to parse on the server
/// (doubles travel as their 8 bytes, so every value, -0.0 included, arrives exact). NaN is
/// stored as NULL, as in SQLite.
fn copy_in<'s>(
    tx: &mut Transaction<'_>,
    run: RunId,
    samples: impl Iterator<Item = (&'s Sample, Option<&'s str>)>,
) -> Result<(), Fail> {
    let mut samples = samples.peekable();
    if samples.peek().is_none() {
        return Ok(());
    }
    let sink = tx.copy_in(
        "COPY samples (run_id, metric, repetition, value, labels) FROM STDIN (FORMAT binary)",
    )?;
    let mut writer = BinaryCopyInWriter::new(
        sink,
        &[Type::INT8, Type::TEXT, Type::INT8, Type::FLOAT8, Type::TEXT],
    );
    for (s, labels) in samples {
        let value = (!s.value.is_nan()).then_some(s.value);
        writer.write(&[&run, &s.metric, &i64::from(s.repetition), &value, &labels])?;
    }
    writer.finish()?;
    Ok(())
}
