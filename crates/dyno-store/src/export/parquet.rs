//! Parquet: typed columns (INT64 `run_id`, INT32 `repetition`, DOUBLE `value`, UTF8
//! strings, optional UTF8 `labels`), Snappy-compressed, in row groups of [`ROW_GROUP`]
//! rows so memory stays bounded. NaN and infinities are stored as such.
//!
//! The Parquet writer needs a `Send` sink and the export destination is a plain
//! `&mut dyn Write`, so the writer writes into a shared buffer that is handed to the
//! export after every row group.

use super::{Encoder, Row};
use crate::error::StoreError;
use parquet::basic::Compression;
use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int32Type, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;
use std::io::Write;
use std::sync::{Arc, Mutex};

/// Rows per row group.
pub(crate) const ROW_GROUP: usize = 65_536;

const SCHEMA: &str = "
message dyno_samples {
    REQUIRED INT64 run_id;
    REQUIRED BYTE_ARRAY command (UTF8);
    REQUIRED BYTE_ARRAY started_at (UTF8);
    REQUIRED BYTE_ARRAY hostname (UTF8);
    REQUIRED BYTE_ARRAY cpu_model (UTF8);
    REQUIRED BYTE_ARRAY subject_kind (UTF8);
    REQUIRED BYTE_ARRAY subject (UTF8);
    REQUIRED BYTE_ARRAY metric (UTF8);
    REQUIRED BYTE_ARRAY unit (UTF8);
    REQUIRED BYTE_ARRAY direction (UTF8);
    REQUIRED INT32 repetition;
    REQUIRED DOUBLE value;
    OPTIONAL BYTE_ARRAY labels (UTF8);
}";

/// Bytes the Parquet writer produced and the export has not taken yet.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Shared {
    fn drain_into(&self, out: &mut Vec<u8>) {
        let mut bytes = self.0.lock().unwrap_or_else(|p| p.into_inner());
        out.append(&mut bytes);
    }
}

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut bytes = self.0.lock().unwrap_or_else(|p| p.into_inner());
        bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// One row group's columns, filled row by row.
#[derive(Default)]
struct Columns {
    run_id: Vec<i64>,
    texts: [Vec<ByteArray>; 9],
    repetition: Vec<i32>,
    value: Vec<f64>,
    labels: Vec<ByteArray>,
    labels_def: Vec<i16>,
}

/// The Parquet encoder.
pub(crate) struct Parquet {
    writer: Option<SerializedFileWriter<Shared>>,
    sink: Shared,
    columns: Columns,
    /// The last value of each text column (cloning a `ByteArray` shares its bytes).
    last: [ByteArray; 9],
}

fn err(e: parquet::errors::ParquetError) -> StoreError {
    StoreError::Parquet(e.to_string())
}

impl Parquet {
    pub fn new() -> Result<Parquet, StoreError> {
        let schema = Arc::new(parse_message_type(SCHEMA).map_err(err)?);
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_max_row_group_row_count(Some(ROW_GROUP))
            .set_created_by(format!("dyno-store {}", env!("CARGO_PKG_VERSION")))
            .build();
        let sink = Shared::default();
        let writer =
            SerializedFileWriter::new(sink.clone(), schema, Arc::new(props)).map_err(err)?;
        Ok(Parquet {
            writer: Some(writer),
            sink,
            columns: Columns::default(),
            last: std::array::from_fn(|_| ByteArray::from("")),
        })
    }

    /// Writes the buffered rows as one row group.
    fn flush_group(&mut self) -> Result<(), StoreError> {
        if self.columns.run_id.is_empty() {
            return Ok(());
        }
        let c = std::mem::take(&mut self.columns);
        let writer = self.writer.as_mut().expect("writer lives until finish");
        let mut group = writer.next_row_group().map_err(err)?;
        let mut index = 0;
        while let Some(mut column) = group.next_column().map_err(err)? {
            match index {
                0 => column
                    .typed::<Int64Type>()
                    .write_batch(&c.run_id, None, None),
                1..=9 => {
                    column
                        .typed::<ByteArrayType>()
                        .write_batch(&c.texts[index - 1], None, None)
                }
                10 => column
                    .typed::<Int32Type>()
                    .write_batch(&c.repetition, None, None),
                11 => column
                    .typed::<DoubleType>()
                    .write_batch(&c.value, None, None),
                _ => column.typed::<ByteArrayType>().write_batch(
                    &c.labels,
                    Some(&c.labels_def),
                    None,
                ),
            }
            .map_err(err)?;
            column.close().map_err(err)?;
            index += 1;
        }
        group.close().map_err(err)?;
        Ok(())
    }
}

impl Encoder for Parquet {
    fn begin(&mut self, _out: &mut Vec<u8>) -> Result<(), StoreError> {
        Ok(())
    }

    fn row(&mut self, row: &Row<'_>, out: &mut Vec<u8>) -> Result<(), StoreError> {
        let repetition = i32::try_from(row.repetition).map_err(|_| {
            StoreError::Parquet(format!("repetition {} exceeds INT32", row.repetition))
        })?;
        let c = &mut self.columns;
        c.run_id.push(row.run_id);
        for ((column, last), text) in c.texts.iter_mut().zip(&mut self.last).zip(row.texts()) {
            // Text columns repeat run after run: share the bytes instead of copying them.
            if last.data() != text.as_bytes() {
                *last = ByteArray::from(text);
            }
            column.push(last.clone());
        }
        c.repetition.push(repetition);
        c.value.push(row.value);
        match row.labels {
            Some(l) => {
                c.labels.push(ByteArray::from(l));
                c.labels_def.push(1);
            }
            None => c.labels_def.push(0),
        }
        if c.run_id.len() >= ROW_GROUP {
            self.flush_group()?;
            self.sink.drain_into(out);
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut Vec<u8>) -> Result<(), StoreError> {
        self.flush_group()?;
        if let Some(writer) = self.writer.take() {
            writer.close().map_err(err)?;
        }
        self.sink.drain_into(out);
        Ok(())
    }
}
