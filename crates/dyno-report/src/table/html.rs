//! HTML `<table>` fragments.

use super::{Align, Cell, Table, TableRenderer};
use crate::escape;

/// Renders an HTML `<table class="dyno-table">` fragment with the title as `<caption>`.
///
/// Alignment and status become CSS classes (`right`, `center`; `good`, `bad`, `warn`,
/// `emph`) that the [`HtmlReport`](crate::HtmlReport) stylesheet colours. All text is
/// escaped.
#[derive(Debug, Clone, Copy, Default)]
pub struct HtmlTable;

fn classes(align: Align, cell: Option<&Cell>) -> String {
    let mut classes = Vec::new();
    match align {
        Align::Left => {}
        Align::Right => classes.push("right"),
        Align::Center => classes.push("center"),
    }
    if let Some(status) = cell.and_then(|c| c.status) {
        classes.push(status.css_class());
    }
    if classes.is_empty() {
        String::new()
    } else {
        format!(" class=\"{}\"", classes.join(" "))
    }
}

impl TableRenderer for HtmlTable {
    fn render(&self, table: &Table) -> String {
        let mut out = String::from("<table class=\"dyno-table\">\n");
        if !table.title.is_empty() {
            out.push_str(&format!(
                "<caption>{}</caption>\n",
                escape::html(&table.title)
            ));
        }
        out.push_str("<thead>\n<tr>");
        for c in &table.columns {
            out.push_str(&format!(
                "<th{}>{}</th>",
                classes(c.align, None),
                escape::html(&c.header)
            ));
        }
        out.push_str("</tr>\n</thead>\n<tbody>\n");
        for row in table.normalized_rows() {
            out.push_str("<tr>");
            for (col, cell) in table.columns.iter().zip(row) {
                out.push_str(&format!(
                    "<td{}>{}</td>",
                    classes(col.align, Some(cell)),
                    escape::html(&cell.text)
                ));
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</tbody>\n</table>\n");
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
<table class=\"dyno-table\">
<caption>Blake2-256</caption>
<thead>
<tr><th>variant</th><th class=\"right\">median</th><th class=\"center\">verdict</th></tr>
</thead>
<tbody>
<tr><td>lto|fat</td><td class=\"right good\">1.20 GiB/s</td><td class=\"center good\">faster</td></tr>
<tr><td>o2, &quot;small&quot;</td><td class=\"right bad\">0.98 GiB/s</td><td class=\"center bad\">slower</td></tr>
<tr><td class=\"emph\">&lt;official&gt;</td><td class=\"right\"></td><td class=\"center\"></td></tr>
</tbody>
</table>
";
        assert_eq!(HtmlTable.render(&sample()), expected);
    }
}
