//! Copying whole runs between stores (`dyno results push` and `pull`).
//!
//! A run travels as a [`RunRecord`]: everything stored about it, with its globally unique
//! id. The receiving store writes it in one transaction and only when no run with that
//! id is there yet, so copying twice stores it once, a copy interrupted half-way leaves
//! nothing of the run it was writing, and running the copy again finishes the job.

use crate::error::StoreError;
use crate::run::{register_metric, to_json, upsert_host, upsert_subject};
use crate::sqlite::Sqlite;
use crate::RunId;
use dyno_model::{Metric, RunInfo, RunStatus, Sample};
use rusqlite::{params, OptionalExtension, TransactionBehavior};

/// Everything stored about one run.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RunRecord {
    pub uuid: String,
    pub info: RunInfo,
    /// As reported (a run whose writer died travels as `incomplete`).
    pub status: RunStatus,
    pub finished_at: Option<f64>,
    pub metrics: Vec<Metric>,
    /// Samples with their labels as JSON text.
    pub samples: Vec<(Sample, Option<String>)>,
}

/// What copying several runs did ([`crate::Store::copy_runs`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CopyTally {
    /// Runs written.
    pub new: usize,
    /// Runs the receiving store already held.
    pub already_there: usize,
    /// Runs left out because they are still running.
    pub running: usize,
}

/// What copying one run did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Copied {
    /// The run was written; its id in the receiving store.
    New(RunId),
    /// A run with the same globally unique id was already there (its id there).
    AlreadyThere(RunId),
}

impl Copied {
    /// The run's id in the receiving store.
    pub fn id(self) -> RunId {
        match self {
            Copied::New(id) | Copied::AlreadyThere(id) => id,
        }
    }
}

/// Turns stored samples into the record's form.
pub(crate) fn labels_to_text(
    samples: Vec<(Sample, Option<serde_json::Value>)>,
) -> Vec<(Sample, Option<String>)> {
    samples
        .into_iter()
        .map(|(s, l)| (s, l.map(|v| v.to_string())))
        .collect()
}

impl Sqlite {
    /// The record of run `id`.
    pub(crate) fn record(&self, id: RunId) -> Result<RunRecord, StoreError> {
        // One pass over the samples (a pushed run may hold millions).
        let header = self.run_header(id)?;
        let uuid: String = self
            .conn
            .query_row("SELECT uuid FROM runs WHERE id = ?1", [id], |r| r.get(0))
            .map_err(self.sql())?;
        Ok(RunRecord {
            uuid,
            info: header.info,
            status: header.status,
            finished_at: header.finished_at,
            metrics: self.metrics_of(id)?,
            samples: labels_to_text(self.samples_of(id)?),
        })
    }

    /// Writes `record` unless a run with its uuid is stored.
    pub(crate) fn import(&mut self, record: &RunRecord) -> Result<Copied, StoreError> {
        let path = self.path.clone();
        let sql = |e| StoreError::sqlite(&path, e);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql)?;
        let existing: Option<RunId> = tx
            .query_row("SELECT id FROM runs WHERE uuid = ?1", [&record.uuid], |r| {
                r.get(0)
            })
            .optional()
            .map_err(sql)?;
        if let Some(id) = existing {
            return Ok(Copied::AlreadyThere(id));
        }
        let info = &record.info;
        let host_id = upsert_host(&tx, &info.host).map_err(sql)?;
        let subject_id = upsert_subject(&tx, &info.subject).map_err(sql)?;
        // A copied run has no writer here: nobody on this host is writing it.
        tx.execute(
            "INSERT INTO runs (command, subject_id, host_id, started_at, finished_at, status,
                               command_line, tool_version, settings, uuid)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![
                info.command,
                subject_id,
                host_id,
                info.started_at,
                record.finished_at,
                record.status.as_str(),
                to_json(&crate::url::redact_command_line(&info.command_line)),
                info.tool_version,
                to_json(&info.settings),
                record.uuid,
            ],
        )
        .map_err(sql)?;
        let run = tx.last_insert_rowid();
        for metric in &record.metrics {
            register_metric(&tx, &path, run, metric)?;
        }
        {
            let mut insert = tx
                .prepare_cached(
                    "INSERT INTO samples (run_id, metric, repetition, value, labels)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .map_err(sql)?;
            for (s, labels) in &record.samples {
                let value = (!s.value.is_nan()).then_some(s.value);
                insert
                    .execute(params![run, s.metric, s.repetition, value, labels])
                    .map_err(sql)?;
            }
        }
        tx.commit().map_err(sql)?;
        Ok(Copied::New(run))
    }
}
