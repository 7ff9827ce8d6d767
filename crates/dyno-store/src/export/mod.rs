//! Exports in long format: one row per sample, with its run, host, subject and metric.
//!
//! Exports stream: a cursor walks the samples run by run and metric by metric (in the
//! order of the `samples(run_id, metric, repetition)` index, so SQLite never sorts), each
//! row goes to the format's [`Encoder`], and the bytes it produced are written out every
//! [`FLUSH_BYTES`]. Memory stays bounded by one flush buffer (and, for Parquet, one row
//! group) whatever the number of samples. The whole export reads one snapshot of the
//! store, so a concurrent writer never splits it.

mod csv;
mod jsonl;
#[cfg(feature = "parquet")]
mod parquet;

use crate::error::StoreError;
use crate::filter::Dialect;
use crate::sqlite::Sqlite;
use crate::RunId;
use rusqlite::OptionalExtension;
use std::io::Write;

/// An export format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExportFormat {
    /// Comma-separated values with a header line, RFC 4180 quoting, `\n` line ends.
    Csv,
    /// One JSON object per line.
    JsonLines,
    /// Apache Parquet, Snappy-compressed, row groups of 65 536 rows. Needs the `parquet`
    /// cargo feature (on by default); without it an export in this format is
    /// [`StoreError::ParquetDisabled`].
    Parquet,
}

/// Column names of every export, in order.
pub(crate) const COLUMNS: [&str; 13] = [
    "run_id",
    "command",
    "started_at",
    "hostname",
    "cpu_model",
    "subject_kind",
    "subject",
    "metric",
    "unit",
    "direction",
    "repetition",
    "value",
    "labels",
];

/// Bytes gathered before they are written to the destination.
pub(crate) const FLUSH_BYTES: usize = 1 << 16;

/// One exported row.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Row<'a> {
    pub run_id: RunId,
    pub command: &'a str,
    /// RFC 3339, UTC.
    pub started_at: &'a str,
    pub hostname: &'a str,
    pub cpu_model: &'a str,
    pub subject_kind: &'a str,
    pub subject: &'a str,
    pub metric: &'a str,
    pub unit: &'a str,
    pub direction: &'a str,
    pub repetition: u32,
    pub value: f64,
    /// JSON text, or `None` for a sample without labels.
    pub labels: Option<&'a str>,
}

impl Row<'_> {
    /// The text columns in [`COLUMNS`] order (all but run_id, repetition, value, labels).
    pub fn texts(&self) -> [&str; 9] {
        [
            self.command,
            self.started_at,
            self.hostname,
            self.cpu_model,
            self.subject_kind,
            self.subject,
            self.metric,
            self.unit,
            self.direction,
        ]
    }
}

/// One export format: turns rows into bytes appended to `out`. Encoders do no I/O.
pub(crate) trait Encoder {
    /// Bytes before the first row (a header line, a file magic).
    fn begin(&mut self, out: &mut Vec<u8>) -> Result<(), StoreError>;
    /// One row.
    fn row(&mut self, row: &Row<'_>, out: &mut Vec<u8>) -> Result<(), StoreError>;
    /// Bytes after the last row (buffered rows, a footer).
    fn finish(&mut self, out: &mut Vec<u8>) -> Result<(), StoreError>;
}

pub(crate) fn encoder(format: ExportFormat) -> Result<Box<dyn Encoder>, StoreError> {
    Ok(match format {
        ExportFormat::Csv => Box::new(csv::Csv),
        ExportFormat::JsonLines => Box::new(jsonl::JsonLines),
        #[cfg(feature = "parquet")]
        ExportFormat::Parquet => Box::new(parquet::Parquet::new()?),
        #[cfg(not(feature = "parquet"))]
        ExportFormat::Parquet => return Err(StoreError::ParquetDisabled),
    })
}

/// Formats a value with the fewest digits that parse back to the same `f64`: plain
/// decimal for ordinary magnitudes, exponent notation for very large or small ones (so a
/// subnormal is `5e-324`, not 324 digits). Non-finite values are `NaN`, `inf`, `-inf`.
pub(crate) fn format_f64(v: f64) -> String {
    let a = v.abs();
    if v.is_finite() && a != 0.0 && !(1e-5..1e16).contains(&a) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

/// The run ids an export covers: `runs` in the order given without repeats, every one
/// checked with `exists` before anything is written (an unknown one is
/// [`StoreError::UnknownRun`]), or every run (`all`, in id order) when `runs` is empty.
/// The same for both backends; they answer the two questions in their dialect, on their
/// connection or transaction `cx`.
pub(crate) fn checked_ids<C>(
    cx: &mut C,
    runs: &[RunId],
    all: impl FnOnce(&mut C) -> Result<Vec<RunId>, StoreError>,
    mut exists: impl FnMut(&mut C, RunId) -> Result<bool, StoreError>,
) -> Result<Vec<RunId>, StoreError> {
    if runs.is_empty() {
        return all(cx);
    }
    let mut ids = Vec::with_capacity(runs.len());
    for &id in runs {
        if !exists(cx, id)? {
            return Err(StoreError::UnknownRun(id));
        }
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    Ok(ids)
}

/// Where a backend's rows go: the format's encoder, the flush buffer and the destination.
pub(crate) struct RowSink<'a> {
    encoder: Box<dyn Encoder>,
    buf: Vec<u8>,
    out: &'a mut dyn Write,
    rows: u64,
}

impl RowSink<'_> {
    /// Encodes one row, writing the buffer out once it holds [`FLUSH_BYTES`].
    pub fn push(&mut self, row: &Row<'_>) -> Result<(), StoreError> {
        self.encoder.row(row, &mut self.buf)?;
        self.rows += 1;
        if self.buf.len() >= FLUSH_BYTES {
            self.out.write_all(&self.buf).map_err(StoreError::export)?;
            self.buf.clear();
        }
        Ok(())
    }
}

/// The export loop both backends share: the encoder's header, every run's rows from
/// `rows_of` (the backend's reads, inside its snapshot), the footer, the last flush.
/// Returns the number of rows.
pub(crate) fn export_rows(
    ids: Vec<RunId>,
    format: ExportFormat,
    out: &mut dyn Write,
    mut rows_of: impl FnMut(RunId, &mut RowSink<'_>) -> Result<(), StoreError>,
) -> Result<u64, StoreError> {
    let mut sink = RowSink {
        encoder: encoder(format)?,
        buf: Vec::with_capacity(FLUSH_BYTES * 2),
        out,
        rows: 0,
    };
    sink.encoder.begin(&mut sink.buf)?;
    for id in ids {
        rows_of(id, &mut sink)?;
    }
    sink.encoder.finish(&mut sink.buf)?;
    sink.out.write_all(&sink.buf).map_err(StoreError::export)?;
    sink.out.flush().map_err(StoreError::export)?;
    Ok(sink.rows)
}

impl Sqlite {
    /// Writes the samples of `runs` (all runs when empty, in id order) to `out` in long
    /// format and returns the number of rows. Every id is checked before anything is
    /// written: an unknown one is [`StoreError::UnknownRun`].
    pub fn export(
        &self,
        runs: &[RunId],
        format: ExportFormat,
        out: &mut dyn Write,
    ) -> Result<u64, StoreError> {
        // One read transaction: a consistent snapshot even while other processes write.
        let snapshot = self.conn.unchecked_transaction().map_err(self.sql())?;
        let ids = checked_ids(
            &mut (),
            runs,
            |_| {
                let mut stmt = self
                    .conn
                    .prepare("SELECT id FROM runs ORDER BY id")
                    .map_err(self.sql())?;
                let ids = stmt.query_map([], |r| r.get(0)).map_err(self.sql())?;
                ids.collect::<Result<_, _>>().map_err(self.sql())
            },
            |_, id| {
                let found = self
                    .conn
                    .query_row("SELECT 1 FROM runs WHERE id = ?1", [id], |_| Ok(()))
                    .optional()
                    .map_err(self.sql())?;
                Ok(found.is_some())
            },
        )?;
        let rows = export_rows(ids, format, out, |id, sink| self.export_run(id, sink))?;
        snapshot.finish().map_err(self.sql())?;
        Ok(rows)
    }

    fn export_run(&self, id: RunId, sink: &mut RowSink<'_>) -> Result<(), StoreError> {
        let (command, started_at, hostname, cpu_model, subject_kind, subject) = self
            .conn
            .query_row(&export_header_sql(Dialect::Sqlite), [id], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    dyno_model::format_timestamp(r.get(1)?),
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, String>(5)?,
                ))
            })
            .map_err(self.sql())?;
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT repetition, value, labels FROM samples
                 WHERE run_id = ?1 AND metric = ?2
                 ORDER BY repetition, rowid",
            )
            .map_err(self.sql())?;
        for metric in self.metrics_of(id)? {
            let mut cursor = stmt
                .query(rusqlite::params![id, metric.name])
                .map_err(self.sql())?;
            while let Some(r) = cursor.next().map_err(self.sql())? {
                let labels = r.get_ref(2).map_err(self.sql())?.as_str_or_null();
                let labels = labels.map_err(|e| self.corrupt(format!("sample labels: {e}")))?;
                sink.push(&Row {
                    run_id: id,
                    command: &command,
                    started_at: &started_at,
                    hostname: &hostname,
                    cpu_model: &cpu_model,
                    subject_kind: &subject_kind,
                    subject: &subject,
                    metric: &metric.name,
                    unit: metric.unit.symbol(),
                    direction: metric.direction.as_str(),
                    repetition: r.get(0).map_err(self.sql())?,
                    value: r
                        .get::<_, Option<f64>>(1)
                        .map_err(self.sql())?
                        .unwrap_or(f64::NAN),
                    labels,
                })?;
            }
        }
        Ok(())
    }
}

/// The run's columns an export repeats on every row, for both dialects.
pub(crate) fn export_header_sql(dialect: Dialect) -> String {
    format!(
        "SELECT r.command, r.started_at, h.hostname, h.cpu_model, su.kind, su.name
         FROM runs r
         JOIN hosts h ON h.id = r.host_id
         JOIN subjects su ON su.id = r.subject_id
         WHERE r.id = {}",
        dialect.placeholder(1)
    )
}

#[cfg(test)]
mod tests {
    use super::format_f64;

    #[cfg(not(feature = "parquet"))]
    #[test]
    fn parquet_is_refused_without_the_feature() {
        use super::{encoder, ExportFormat};
        use crate::error::StoreError;
        let err = encoder(ExportFormat::Parquet)
            .err()
            .expect("no parquet encoder");
        assert!(matches!(err, StoreError::ParquetDisabled), "{err:?}");
        assert!(err.to_string().contains("cargo feature `parquet`"), "{err}");
        assert!(encoder(ExportFormat::Csv).is_ok());
    }

    #[test]
    fn floats_format_short_and_round_trip() {
        assert_eq!(format_f64(1.0), "1");
        assert_eq!(format_f64(0.1), "0.1");
        assert_eq!(format_f64(-0.0), "-0");
        assert_eq!(format_f64(1.2e9), "1200000000");
        assert_eq!(format_f64(5e-324), "5e-324");
        assert_eq!(format_f64(1e300), "1e300");
        assert_eq!(format_f64(f64::MAX), "1.7976931348623157e308");
        assert_eq!(format_f64(f64::NEG_INFINITY), "-inf");
        for v in [0.1 + 0.2, 1e-5, 9.999e15, 1e16, 123.456, f64::MIN_POSITIVE] {
            assert_eq!(format_f64(v).parse::<f64>().unwrap().to_bits(), v.to_bits());
        }
    }
}
