//! JSON lines: one object per sample with the export columns as keys. Finite values are
//! JSON numbers written with [`format_f64`] (bit-exact on parsing); NaN and infinities,
//! which JSON cannot hold, are the strings `"NaN"`, `"inf"` and `"-inf"`. `labels` is the
//! stored JSON value, or `null`.

use super::{format_f64, Encoder, Row, COLUMNS};
use crate::error::StoreError;
use std::io::Write;

/// The JSON lines encoder.
pub(crate) struct JsonLines;

impl Encoder for JsonLines {
    fn begin(&mut self, _out: &mut Vec<u8>) -> Result<(), StoreError> {
        Ok(())
    }

    fn row(&mut self, row: &Row<'_>, out: &mut Vec<u8>) -> Result<(), StoreError> {
        // Writing to a Vec cannot fail.
        let _ = write!(out, "{{\"{}\":{}", COLUMNS[0], row.run_id);
        for (key, text) in COLUMNS[1..10].iter().zip(row.texts()) {
            let _ = write!(out, ",\"{key}\":");
            let _ = serde_json::to_writer(&mut *out, text);
        }
        let _ = write!(out, ",\"repetition\":{},\"value\":", row.repetition);
        let value = format_f64(row.value);
        if row.value.is_finite() {
            out.extend_from_slice(value.as_bytes());
        } else {
            let _ = write!(out, "\"{value}\"");
        }
        // Labels were written by serde_json, so they are valid JSON already.
        let _ = write!(out, ",\"labels\":{}}}", row.labels.unwrap_or("null"));
        out.push(b'\n');
        Ok(())
    }

    fn finish(&mut self, _out: &mut Vec<u8>) -> Result<(), StoreError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_is_one_json_object() {
        let row = Row {
            run_id: 1,
            command: "tune",
            started_at: "2026-11-21T23:17:11Z",
            hostname: "h\"x",
            cpu_model: "cpu",
            subject_kind: "build_variant",
            subject: "lto-fat",
            metric: "wall",
            unit: "s",
            direction: "lower_is_better",
            repetition: 2,
            value: f64::INFINITY,
            labels: Some("{\"round\":3}"),
        };
        let mut out = Vec::new();
        JsonLines.row(&row, &mut out).unwrap();
        assert_eq!(out.last(), Some(&b'\n'));
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["hostname"], "h\"x");
        assert_eq!(v["value"], "inf");
        assert_eq!(v["labels"]["round"], 3);
        assert_eq!(v.as_object().unwrap().len(), COLUMNS.len());
    }
}
