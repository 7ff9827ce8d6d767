//! GitHub-flavoured Markdown pipe tables.

use super::{Align, Table, TableRenderer};

/// Renders a GitHub pipe table, preceded by the title in bold when there is one.
///
/// Pipes in cells are escaped (`\|`) and line breaks become `<br>`, so a cell never
/// breaks the table. Statuses are not shown: Markdown has no colour.
#[derive(Debug, Clone, Copy, Default)]
pub struct MarkdownTable;

fn cell(text: &str) -> String {
    text.replace('|', "\\|")
        .replace("\r\n", "<br>")
        .replace(['\n', '\r'], "<br>")
}

fn line<'a>(out: &mut String, cells: impl Iterator<Item = &'a str>) {
    out.push('|');
    for c in cells {
        out.push(' ');
        out.push_str(&cell(c));
        out.push_str(" |");
    }
    out.push('\n');
}

impl TableRenderer for MarkdownTable {
    fn render(&self, table: &Table) -> String {
        let mut out = String::new();
        if !table.title.is_empty() {
            out.push_str(&format!("**{}**\n\n", cell(&table.title)));
        }
        line(&mut out, table.columns.iter().map(|c| c.header.as_str()));
        line(
            &mut out,
            table.columns.iter().map(|c| match c.align {
                Align::Left => ":---",
                Align::Right => "---:",
                Align::Center => ":---:",
            }),
        );
        for row in table.normalized_rows() {
            line(&mut out, row.iter().map(|c| c.text.as_str()));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::tests::sample;

    #[test]
    fn snapshot() {
        let expected = "\
**Blake2-256**

| variant | median | verdict |
| :--- | ---: | :---: |
| lto\\|fat | 1.20 GiB/s | faster |
| o2, \"small\" | 0.98 GiB/s | slower |
| <official> |  |  |
";
        assert_eq!(MarkdownTable.render(&sample()), expected);
    }

    #[test]
    fn line_breaks_stay_inside_the_cell() {
        let t = Table::new("").column("a", Align::Left).row(["one\ntwo"]);
        assert_eq!(
            MarkdownTable.render(&t),
            "| a |\n| :--- |\n| one<br>two |\n"
        );
    }
}
