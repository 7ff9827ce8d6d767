//! Reading runs back from PostgreSQL: the run list, one run, copies, exports and the
//! fleet question. Same answers as the SQLite backend, in PostgreSQL's dialect.

use super::{Fail, Pg};
use crate::error::StoreError;
use crate::export::{checked_ids, export_header_sql, export_rows, Row, RowSink};
use crate::filter::Dialect;
use crate::filter::RunFilter;
use crate::fleet::{common_metric, newest_per_machine_sql, FleetQuery, FleetRuns, MachineRun};
use crate::history::{history_sql, known, points, HistoryPoint, HistoryQuery, HistoryRow};
use crate::history::{METRIC_EXISTS, METRIC_NAMES};
use crate::query::{decode_json, decode_metric, decode_subject, effective_status};
use crate::query::{list_runs_sql, run_header_sql, RunSummary, StoredRun};
use crate::transfer::RunRecord;
use crate::writer::Writer;
use crate::{ExportFormat, RunId};
use dyno_model::{Host, Metric, RunInfo, Sample};
use postgres::types::ToSql;
use postgres::Transaction;
use std::io::Write;

impl Pg {
    pub(crate) fn list_runs(&self, filter: &RunFilter) -> Result<Vec<RunSummary>, StoreError> {
        let sql = list_runs_sql(Dialect::Postgres, filter);
        let args = sql.postgres_params();
        let refs: Vec<&(dyn ToSql + Sync)> = args.iter().map(|a| a.as_ref()).collect();
        let rows = self.transact(|tx| Ok(tx.query(&sql.text, &refs)?))?;
        let mut out = Vec::with_capacity(rows.len());
        for r in &rows {
            out.push(RunSummary {
                id: r.get(0),
                command: r.get(1),
                subject: decode_subject(&self.shown, r.get(2), r.get(3), r.get(4))?,
                hostname: r.get(5),
                started_at: r.get(6),
                finished_at: r.get(7),
                status: effective_status(&self.shown, r.get(8), writer_of(r, 9))?,
                samples: r.get::<_, i64>(12) as u64,
                uuid: r.get(13),
            });
        }
        Ok(out)
    }

    pub(crate) fn run(&self, id: RunId) -> Result<StoredRun, StoreError> {
        let record = self.record(id)?;
        Ok(StoredRun {
            id,
            info: record.info,
            status: record.status,
            finished_at: record.finished_at,
            metrics: record.metrics,
            samples: record.samples.into_iter().map(|(s, _)| s).collect(),
        })
    }

    pub(crate) fn labeled_samples(
        &self,
        id: RunId,
    ) -> Result<Vec<(Sample, Option<serde_json::Value>)>, StoreError> {
        let record = self.record(id)?;
        record
            .samples
            .into_iter()
            .map(|(s, l)| match l {
                Some(text) => Ok((s, Some(decode_json(&self.shown, &text, "sample labels")?))),
                None => Ok((s, None)),
            })
            .collect()
    }

    /// Everything stored about run `id`, read in one transaction.
    pub(crate) fn record(&self, id: RunId) -> Result<RunRecord, StoreError> {
        let (header, metric_rows, sample_rows) = self.transact(|tx| {
            let header = tx
                .query_opt(&run_header_sql(Dialect::Postgres), &[&id])?
                .ok_or(Fail::Store(StoreError::UnknownRun(id)))?;
            let metrics = tx.query(
                "SELECT name, unit, direction FROM run_metrics WHERE run_id = $1
                 ORDER BY position",
                &[&id],
            )?;
            let samples = tx.query(
                "SELECT s.metric, s.repetition, s.value, s.labels
                 FROM samples s
                 JOIN run_metrics m ON m.run_id = s.run_id AND m.name = s.metric
                 WHERE s.run_id = $1
                 ORDER BY m.position, s.repetition, s.id",
                &[&id],
            )?;
            Ok((header, metrics, samples))
        })?;
        let h = &header;
        let store = &self.shown;
        let info = RunInfo {
            command: h.get(0),
            subject: decode_subject(store, h.get(1), h.get(2), h.get(3))?,
            host: decode_json::<Host>(store, h.get(4), "host")?,
            started_at: h.get(5),
            command_line: decode_json(store, h.get(6), "command line")?,
            tool_version: h.get(7),
            settings: decode_json(store, h.get(8), "settings")?,
        };
        let metrics = metric_rows
            .iter()
            .map(|r| decode_metric(store, r.get(0), r.get(1), r.get(2)))
            .collect::<Result<Vec<Metric>, _>>()?;
        let samples = sample_rows
            .iter()
            .map(|r| {
                let sample = Sample {
                    metric: r.get(0),
                    repetition: u32::try_from(r.get::<_, i64>(1))
                        .map_err(|_| crate::query::corrupt(store, "repetition".into()))?,
                    value: r.get::<_, Option<f64>>(2).unwrap_or(f64::NAN),
                };
                Ok((sample, r.get::<_, Option<String>>(3)))
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        Ok(RunRecord {
            uuid: h.get(14),
            status: effective_status(store, h.get(9), writer_of(h, 11))?,
            finished_at: h.get(10),
            info,
            metrics,
            samples,
        })
    }

    pub(crate) fn export(
        &self,
        runs: &[RunId],
        format: ExportFormat,
        out: &mut dyn Write,
    ) -> Result<u64, StoreError> {
        let mut client = self.client();
        // One snapshot for the whole export, as in SQLite; streamed, so not retried.
        let mut tx = client
            .build_transaction()
            .isolation_level(postgres::IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .map_err(|e| self.error(e))?;
        let err = |e| self.error(e);
        let ids = checked_ids(
            &mut tx,
            runs,
            |tx| {
                let rows = tx
                    .query("SELECT id FROM runs ORDER BY id", &[])
                    .map_err(err)?;
                Ok(rows.iter().map(|r| r.get(0)).collect())
            },
            |tx, id| {
                let found = tx
                    .query_opt("SELECT 1 FROM runs WHERE id = $1", &[&id])
                    .map_err(err)?;
                Ok(found.is_some())
            },
        )?;
        let rows = export_rows(ids, format, out, |id, sink| {
            self.export_run(&mut tx, id, sink)
        })?;
        tx.commit().map_err(err)?;
        Ok(rows)
    }

    fn export_run(
        &self,
        tx: &mut Transaction<'_>,
        id: RunId,
        sink: &mut RowSink<'_>,
    ) -> Result<(), StoreError> {
        let err = |e| self.error(e);
        let h = tx
            .query_one(&export_header_sql(Dialect::Postgres), &[&id])
            .map_err(err)?;
        let started_at = dyno_model::format_timestamp(h.get(1));
        let metrics = tx
            .query(
                "SELECT name, unit, direction FROM run_metrics WHERE run_id = $1
                 ORDER BY position",
                &[&id],
            )
            .map_err(err)?;
        for m in &metrics {
            let metric = decode_metric(&self.shown, m.get(0), m.get(1), m.get(2))?;
            let params: [&(dyn ToSql + Sync); 2] = [&id, &metric.name];
            let mut cursor = tx
                .query_raw(
                    "SELECT repetition, value, labels FROM samples
                     WHERE run_id = $1 AND metric = $2
                     ORDER BY repetition, id",
                    params,
                )
                .map_err(err)?;
            while let Some(r) =
                postgres::fallible_iterator::FallibleIterator::next(&mut cursor).map_err(err)?
            {
                sink.push(&Row {
                    run_id: id,
                    command: h.get(0),
                    started_at: &started_at,
                    hostname: h.get(2),
                    cpu_model: h.get(3),
                    subject_kind: h.get(4),
                    subject: h.get(5),
                    metric: &metric.name,
                    unit: metric.unit.symbol(),
                    direction: metric.direction.as_str(),
                    repetition: u32::try_from(r.get::<_, i64>(0))
                        .map_err(|_| crate::query::corrupt(&self.shown, "repetition".into()))?,
                    value: r.get::<_, Option<f64>>(1).unwrap_or(f64::NAN),
                    labels: r.get(2),
                })?;
            }
        }
        Ok(())
    }

    pub(crate) fn fleet_runs(&self, query: &FleetQuery) -> Result<FleetRuns, StoreError> {
        let sql = newest_per_machine_sql(Dialect::Postgres, query);
        let args = sql.postgres_params();
        let refs: Vec<&(dyn ToSql + Sync)> = args.iter().map(|a| a.as_ref()).collect();
        let (runs, values) = self.transact(|tx| {
            let runs = tx.query(&sql.text, &refs)?;
            let ids: Vec<RunId> = runs.iter().map(|r| r.get(0)).collect();
            let values = tx.query(
                "SELECT run_id, value FROM samples WHERE run_id = ANY($1) AND metric = $2
                 ORDER BY run_id, repetition, id",
                &[&ids, &query.metric],
            )?;
            Ok((runs, values))
        })?;
        let metric = common_metric(
            &self.shown,
            &query.metric,
            runs.iter().map(|r| (r.get(5), r.get(6))),
        )?;
        let mut by_run: std::collections::HashMap<RunId, Vec<f64>> = Default::default();
        for v in &values {
            if let Some(x) = v.get::<_, Option<f64>>(1) {
                by_run.entry(v.get(0)).or_default().push(x);
            }
        }
        let machines: Vec<MachineRun> = runs
            .iter()
            .filter_map(|r| {
                let run: RunId = r.get(0);
                Some(MachineRun {
                    run,
                    run_uuid: r.get(1),
                    hostname: r.get(2),
                    cpu_model: r.get(3),
                    started_at: r.get(4),
                    samples: by_run.remove(&run)?,
                })
            })
            .collect();
        let metric = metric.filter(|_| !machines.is_empty());
        Ok(FleetRuns { metric, machines })
    }
}

impl Pg {
    pub(crate) fn metric_history(
        &self,
        query: &HistoryQuery,
    ) -> Result<Vec<HistoryPoint>, StoreError> {
        let sql = history_sql(Dialect::Postgres, query);
        let args = sql.postgres_params();
        let refs: Vec<&(dyn ToSql + Sync)> = args.iter().map(|a| a.as_ref()).collect();
        // One transaction for the runs and their values, so they agree.
        let (runs, values, exists) = self.transact(|tx| {
            let runs = tx.query(&sql.text, &refs)?;
            let ids: Vec<RunId> = runs.iter().map(|r| r.get(0)).collect();
            let values = tx.query(
                "SELECT run_id, value FROM samples WHERE run_id = ANY($1) AND metric = $2",
                &[&ids, &query.metric],
            )?;
            let exists = runs.is_empty()
                && tx
                    .query_opt(&METRIC_EXISTS.replace("{P1}", "$1"), &[&query.metric])?
                    .is_some();
            Ok((runs, values, exists))
        })?;
        let mut by_run: std::collections::HashMap<RunId, Vec<f64>> = Default::default();
        for v in &values {
            let value = v.get::<_, Option<f64>>(1).unwrap_or(f64::NAN);
            by_run.entry(v.get(0)).or_default().push(value);
        }
        let rows = runs
            .iter()
            .map(|r| HistoryRow {
                run: r.get(0),
                uuid: r.get(1),
                command: r.get(2),
                subject: (r.get(3), r.get(4), r.get(5)),
                hostname: r.get(6),
                started_at: r.get(7),
                settings: r.get(8),
                metric: (r.get(9), r.get(10)),
            })
            .collect();
        let found = points(&self.shown, query, rows, |run| {
            Ok(by_run.remove(&run).unwrap_or_default())
        })?;
        // Runs that matched but hold only NaN samples: the metric exists.
        let exists = exists || !runs.is_empty();
        known(&self.shown, query, found, || Ok(exists))
    }

    pub(crate) fn metric_names(&self) -> Result<Vec<String>, StoreError> {
        let rows = self.transact(|tx| Ok(tx.query(METRIC_NAMES, &[])?))?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }
}

/// The writer recorded in columns `at..at + 3` (host, pid, token), if any.
pub(crate) fn writer_of(r: &postgres::Row, at: usize) -> Option<Writer> {
    let host: Option<String> = r.get(at);
    let pid: Option<i64> = r.get(at + 1);
    let token: Option<String> = r.get(at + 2);
    let pid = pid.and_then(|p| u32::try_from(p).ok());
    host.zip(pid).map(|(host, pid)| Writer { host, pid, token })
}
