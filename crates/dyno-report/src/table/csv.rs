//! RFC 4180 CSV.

use super::{Table, TableRenderer};

/// Renders RFC 4180 CSV: a header row, then one record per row, CRLF line endings, and
/// fields quoted only when they hold a comma, a quote or a line break.
///
/// The title and statuses are not part of the data and are left out.
#[derive(Debug, Clone, Copy, Default)]
pub struct CsvTable;

fn field(out: &mut String, text: &str) {
    if text.contains([',', '"', '\r', '\n']) {
        out.push('"');
        out.push_str(&text.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(text);
    }
}

fn record<'a>(out: &mut String, fields: impl Iterator<Item = &'a str>) {
    for (i, f) in fields.enumerate() {
        if i > 0 {
            out.push(',');
        }
        field(out, f);
    }
    out.push_str("\r\n");
}

impl TableRenderer for CsvTable {
    fn render(&self, table: &Table) -> String {
        let mut out = String::new();
        record(&mut out, table.columns.iter().map(|c| c.header.as_str()));
        for row in table.normalized_rows() {
            record(&mut out, row.iter().map(|c| c.text.as_str()));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::tests::sample;
    use crate::table::Align;

    #[test]
    fn snapshot() {
        let expected = "variant,median,verdict\r\n\
                        lto|fat,1.20 GiB/s,faster\r\n\
                        \"o2, \"\"small\"\"\",0.98 GiB/s,slower\r\n\
                        <official>,,\r\n";
        assert_eq!(CsvTable.render(&sample()), expected);
    }

    #[test]
    fn line_breaks_are_quoted() {
        let t = Table::new("t").column("a", Align::Left).row(["x\ny"]);
        assert_eq!(CsvTable.render(&t), "a\r\n\"x\ny\"\r\n");
    }
}
