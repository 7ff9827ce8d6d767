//! Boxed tables for the terminal, drawn by comfy-table.

use super::{Align, Status, Table, TableRenderer};
use comfy_table::{presets, Attribute, CellAlignment, Color};

/// Renders a table with UTF-8 borders for a terminal, the title on the line above.
///
/// Colour (ANSI escapes) is added only when `color` is true: the binary decides, from
/// whether stdout is a terminal and from `NO_COLOR`, never this library. The table is not
/// wrapped to the terminal width, so output is the same wherever it is rendered.
#[derive(Debug, Clone, Copy, Default)]
pub struct TerminalTable {
    /// Colour cells by their [`Status`].
    pub color: bool,
}

fn alignment(align: Align) -> CellAlignment {
    match align {
        Align::Left => CellAlignment::Left,
        Align::Right => CellAlignment::Right,
        Align::Center => CellAlignment::Center,
    }
}

impl TableRenderer for TerminalTable {
    fn render(&self, table: &Table) -> String {
        let mut t = comfy_table::Table::new();
        t.load_preset(presets::UTF8_FULL_CONDENSED).force_no_tty();
        if self.color {
            t.enforce_styling();
        }
        t.set_header(table.columns.iter().map(|c| {
            let cell = comfy_table::Cell::new(&c.header).set_alignment(alignment(c.align));
            if self.color {
                cell.add_attribute(Attribute::Bold)
            } else {
                cell
            }
        }));
        for row in table.normalized_rows() {
            t.add_row(table.columns.iter().zip(row).map(|(col, c)| {
                let cell = comfy_table::Cell::new(&c.text).set_alignment(alignment(col.align));
                match (self.color, c.status) {
                    (true, Some(Status::Good)) => cell.fg(Color::Green),
                    (true, Some(Status::Bad)) => cell.fg(Color::Red),
                    (true, Some(Status::Warn)) => cell.fg(Color::Yellow),
                    (true, Some(Status::Emphasis)) => cell.add_attribute(Attribute::Bold),
                    _ => cell,
                }
            }));
        }
        let mut out = String::new();
        if !table.title.is_empty() {
            out.push_str(&table.title);
            out.push('\n');
        }
        out.push_str(&t.to_string());
        out.push('\n');
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::tests::sample;

    #[test]
    fn snapshot_without_colour() {
        let expected = "\
Blake2-256
┌─────────────┬────────────┬─────────┐
│ variant     ┆     median ┆ verdict │
╞═════════════╪════════════╪═════════╡
│ lto|fat     ┆ 1.20 GiB/s ┆  faster │
│ o2, \"small\" ┆ 0.98 GiB/s ┆  slower │
│ <official>  ┆            ┆         │
└─────────────┴────────────┴─────────┘
";
        let out = TerminalTable { color: false }.render(&sample());
        assert_eq!(out, expected, "\n{out}");
    }

    #[test]
    fn colour_only_when_asked() {
        let plain = TerminalTable { color: false }.render(&sample());
        assert!(!plain.contains('\u{1b}'));
        let coloured = TerminalTable { color: true }.render(&sample());
        assert!(coloured.contains("\u{1b}[38;5;10m") || coloured.contains("\u{1b}[32m"));
        assert!(coloured.contains("1.20 GiB/s"));
    }
}
