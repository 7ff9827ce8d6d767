//! CSV: a header line, then one line per sample. Fields holding a comma, a quote or a
//! line break are quoted with inner quotes doubled (RFC 4180); lines end with `\n`.
//! Values use [`format_f64`], which parses back bit-exactly; no labels is an empty field.

use super::{format_f64, Encoder, Row, COLUMNS};
use crate::error::StoreError;
use std::io::Write;

/// The CSV encoder.
pub(crate) struct Csv;

impl Encoder for Csv {
    fn begin(&mut self, out: &mut Vec<u8>) -> Result<(), StoreError> {
        out.extend_from_slice(COLUMNS.join(",").as_bytes());
        out.push(b'\n');
        Ok(())
    }

    fn row(&mut self, row: &Row<'_>, out: &mut Vec<u8>) -> Result<(), StoreError> {
        let [command, started_at, hostname, cpu_model, kind, subject, metric, unit, direction] =
            row.texts();
        // Writing to a Vec cannot fail.
        let _ = write!(out, "{}", row.run_id);
        for field in [
            command, started_at, hostname, cpu_model, kind, subject, metric, unit, direction,
        ] {
            out.push(b',');
            field_into(field, out);
        }
        let _ = write!(out, ",{},{},", row.repetition, format_f64(row.value));
        field_into(row.labels.unwrap_or(""), out);
        out.push(b'\n');
        Ok(())
    }

    fn finish(&mut self, _out: &mut Vec<u8>) -> Result<(), StoreError> {
        Ok(())
    }
}

/// Appends one field, quoted when it must be.
fn field_into(field: &str, out: &mut Vec<u8>) {
    if field.contains([',', '"', '\n', '\r']) {
        out.push(b'"');
        for part in field.split_inclusive('"') {
            out.extend_from_slice(part.as_bytes());
            if part.ends_with('"') {
                out.push(b'"');
            }
        }
        out.push(b'"');
    } else {
        out.extend_from_slice(field.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(s: &str) -> String {
        let mut out = Vec::new();
        field_into(s, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn fields_are_quoted_only_when_needed() {
        assert_eq!(field("plain text"), "plain text");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(field("two\nlines"), "\"two\nlines\"");
        assert_eq!(field("{\"round\":1}"), "\"{\"\"round\"\":1}\"");
        assert_eq!(field(""), "");
    }

    #[test]
    fn a_row_has_every_column() {
        let row = Row {
            run_id: 7,
            command: "machine",
            started_at: "2026-11-21T23:17:11Z",
            hostname: "h",
            cpu_model: "AMD EPYC, 4 cores",
            subject_kind: "machine",
            subject: "h",
            metric: "Blake2256",
            unit: "B/s",
            direction: "higher_is_better",
            repetition: 3,
            value: 0.1,
            labels: None,
        };
        let mut out = Vec::new();
        Csv.row(&row, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "7,machine,2026-11-21T23:17:11Z,h,\"AMD EPYC, 4 cores\",machine,h,Blake2256,B/s,\
             higher_is_better,3,0.1,\n"
        );
    }
}
