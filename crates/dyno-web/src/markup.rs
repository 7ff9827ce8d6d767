//! HTML building blocks: escaping, query strings, the page frame and plain tables.
//!
//! Pages are built as strings. Every piece of text that comes from the store (names,
//! command lines, settings, labels) goes through [`esc`]; markup is only ever written
//! here and in the page modules.

/// The stylesheet, served at `/assets/dyno.css`: the rules every dyno page shares (the
/// reports' too), then the pages' own.
pub(crate) static STYLESHEET: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    [
        dyno_report::BASE_STYLESHEET,
        include_str!("assets/dyno.css"),
    ]
    .concat()
});
/// The live page's script, served at `/assets/live.js`.
pub(crate) const LIVE_SCRIPT: &str = include_str!("assets/live.js");

/// Escapes text for element content and quoted attribute values (dyno-report's
/// escaping, the same the reports use).
pub(crate) fn esc(text: &str) -> String {
    dyno_report::escape_html(text)
}

/// Percent-encodes a query-string value (everything but RFC 3986's unreserved bytes).
pub(crate) fn url_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A query string from the pairs whose value is set: `?metric=X&host=Y` (empty when none).
pub(crate) fn query(pairs: &[(&str, Option<&str>)]) -> String {
    let set: Vec<String> = pairs
        .iter()
        .filter_map(|(k, v)| v.map(|v| format!("{k}={}", url_encode(v))))
        .collect();
    if set.is_empty() {
        String::new()
    } else {
        format!("?{}", set.join("&"))
    }
}

/// A name as a table cell shows it: escaped, with a line-break opportunity (`<wbr>`)
/// after each `_`, `.`, `:` and `/` inside it, so `cluster:fault_adoption_recovered_s`
/// wraps between its words when its column is narrow, never in the middle of one.
pub(crate) fn name_cell(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 8);
    let mut chars = name.chars().peekable();
    while let Some(c) = chars.next() {
        out.push_str(&esc(c.encode_utf8(&mut [0; 4])));
        if matches!(c, '_' | '.' | ':' | '/') && chars.peek().is_some() {
            out.push_str("<wbr>");
        }
    }
    out
}

/// A link; `href` must already be safe (built from [`query`] or numbers), `text` is escaped.
pub(crate) fn link(href: &str, text: &str) -> String {
    format!("<a href=\"{}\">{}</a>", esc(href), esc(text))
}

/// A link whose text is a name that may wrap after its separators ([`name_cell`]).
pub(crate) fn name_link(href: &str, name: &str) -> String {
    format!("<a href=\"{}\">{}</a>", esc(href), name_cell(name))
}

/// The top navigation's entries: path and label.
const NAV: [(&str, &str); 5] = [
    ("/", "Runs"),
    ("/history", "History"),
    ("/compare", "Comparisons"),
    ("/fleet", "Fleet"),
    ("/live", "Live"),
];

/// A whole page: `title` (escaped), the navigation with `section` marked current, and
/// `body` (markup). `head_extra` is extra markup for `<head>` (the live page's script).
pub(crate) fn page_with_head(title: &str, section: &str, head_extra: &str, body: &str) -> String {
    let mut nav = String::new();
    for (href, label) in NAV {
        let current = if href == section {
            " aria-current=\"page\""
        } else {
            ""
        };
        nav.push_str(&format!("<a href=\"{href}\"{current}>{label}</a>"));
    }
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{t} · dyno</title>\n<link rel=\"stylesheet\" href=\"/assets/dyno.css\">\n\
         <link rel=\"icon\" href=\"data:,\">\n{head_extra}\
         </head>\n<body>\n<header><span class=\"brand\">dyno</span><nav>{nav}</nav></header>\n\
         <main>\n<h1>{t}</h1>\n{body}</main>\n<footer>dyno {v} · read-only view of the results store</footer>\n\
         </body>\n</html>\n",
        t = esc(title),
        v = env!("CARGO_PKG_VERSION"),
    )
}

/// A whole page without extra head markup.
pub(crate) fn page(title: &str, section: &str, body: &str) -> String {
    page_with_head(title, section, "", body)
}

/// A status code with a whole page, for answers that do not come from the store (the
/// live view, a refused host).
pub(crate) fn plain_page(
    code: axum::http::StatusCode,
    title: &str,
    section: &str,
    body: &str,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    (code, axum::response::Html(page(title, section, body))).into_response()
}

/// A plain HTML table: header cells are escaped, row cells are markup (escape text with
/// [`esc`] before adding it). Cells whose column is numeric are right-aligned and never
/// wrap; text cells wrap, so the table fits the page. Secondary columns
/// ([`HtmlTable::secondary`]) fold away on a narrow screen.
pub(crate) struct HtmlTable {
    class: &'static str,
    head: Vec<(String, bool)>,
    secondary: Vec<bool>,
    rows: Vec<Vec<String>>,
}

impl HtmlTable {
    /// A table with columns `(header, right-aligned)`.
    pub(crate) fn new(class: &'static str, head: &[(&str, bool)]) -> HtmlTable {
        HtmlTable {
            class,
            head: head.iter().map(|(h, r)| (h.to_string(), *r)).collect(),
            secondary: vec![false; head.len()],
            rows: Vec::new(),
        }
    }

    /// Marks the columns headed `headers` as secondary: the page's stylesheet hides them
    /// on a screen too narrow for the whole table (the figures stay in the full report).
    pub(crate) fn secondary(mut self, headers: &[&str]) -> HtmlTable {
        for (i, (h, _)) in self.head.iter().enumerate() {
            if headers.contains(&h.as_str()) {
                self.secondary[i] = true;
            }
        }
        self
    }

    /// The class attribute of column `i`'s cells.
    fn cell_class(&self, i: usize) -> &'static str {
        let right = self.head.get(i).is_some_and(|h| h.1);
        let secondary = self.secondary.get(i).copied().unwrap_or(false);
        match (right, secondary) {
            (true, true) => " class=\"num sec\"",
            (true, false) => " class=\"num\"",
            (false, true) => " class=\"sec\"",
            (false, false) => "",
        }
    }

    /// Adds a row of markup cells.
    pub(crate) fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// True without rows.
    pub(crate) fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The markup.
    pub(crate) fn render(&self) -> String {
        let mut out = format!(
            "<div class=\"table-wrap\"><table class=\"{}\">\n<thead><tr>",
            self.class
        );
        for (i, (h, _)) in self.head.iter().enumerate() {
            out.push_str(&format!("<th{}>{}</th>", self.cell_class(i), esc(h)));
        }
        out.push_str("</tr></thead>\n<tbody>\n");
        for row in &self.rows {
            out.push_str("<tr>");
            for (i, cell) in row.iter().enumerate() {
                out.push_str(&format!("<td{}>{cell}</td>", self.cell_class(i)));
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</tbody></table></div>\n");
        out
    }
}

/// A figure holding an SVG plot made by dyno-report (which escapes its labels), or a
/// note saying why it was not drawn.
pub(crate) fn figure(
    class: &str,
    caption: &str,
    svg: Result<String, dyno_report::ReportError>,
) -> String {
    match svg {
        Ok(svg) => format!(
            "<figure class=\"{class}\">\n{}\n<figcaption>{}</figcaption>\n</figure>\n",
            svg.trim(),
            esc(caption)
        ),
        Err(e) => format!(
            "<p class=\"note\">{}: not drawn: {}</p>\n",
            esc(caption),
            esc(&e.to_string())
        ),
    }
}

/// The answer to the page's question, first on the page: `<section id="answer"
/// class="answer">` (`class` adds `pass`, `fail`... to colour its edge) around `body`.
pub(crate) fn answer(class: &str, heading: &str, body: &str) -> String {
    let class = format!("answer {class}");
    format!(
        "<section id=\"answer\" class=\"{}\">\n<h2>{}</h2>\n{body}</section>\n",
        class.trim_end(),
        esc(heading)
    )
}

/// A list page's answer is its list: `markup` (the table, the plot) under the stable id
/// `answer` the browser test finds it by, without the answer panel's frame.
pub(crate) fn answer_list(markup: &str) -> String {
    format!("<div id=\"answer\">\n{markup}</div>\n")
}

/// A time as the pages show it (`2026-11-25 13:40:02 UTC`), never wrapped or cut.
pub(crate) fn when(unix: f64) -> String {
    format!(
        "<span class=\"when\">{}</span>",
        esc(&dyno_report::format_when(unix))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_may_break_after_their_separators_only() {
        assert_eq!(
            name_cell("fault.back_at_tip_s"),
            "fault.<wbr>back_<wbr>at_<wbr>tip_<wbr>s"
        );
        assert_eq!(name_cell("a<b>_"), "a&lt;b&gt;_");
        assert_eq!(name_cell("plain"), "plain");
    }

    #[test]
    fn secondary_columns_are_marked_and_numbers_keep_their_class() {
        let mut t = HtmlTable::new("t", &[("Metric", false), ("Median", true), ("Max", true)])
            .secondary(&["Max", "Nothing"]);
        t.row(vec!["a".into(), "1".into(), "2".into()]);
        let html = t.render();
        assert!(html.contains(
            "<th>Metric</th><th class=\"num\">Median</th><th class=\"num sec\">Max</th>"
        ));
        assert!(html.contains("<td>a</td><td class=\"num\">1</td><td class=\"num sec\">2</td>"));
        assert!(STYLESHEET.contains(".sec"), "the stylesheet folds them");
    }

    #[test]
    fn markup_in_data_is_escaped() {
        assert_eq!(
            esc(r#"<script>alert("x" & 'y')</script>"#),
            "&lt;script&gt;alert(&quot;x&quot; &amp; &#39;y&#39;)&lt;/script&gt;"
        );
        let page = page("<b>run</b>", "/", "");
        assert!(page.contains("<h1>&lt;b&gt;run&lt;/b&gt;</h1>"));
        assert!(!page.contains("<b>run"));
    }

    #[test]
    fn query_values_are_percent_encoded_and_unset_ones_left_out() {
        assert_eq!(
            query(&[
                ("metric", Some("a b&c=d/é")),
                ("host", None),
                ("x", Some("ok-1.2_~"))
            ]),
            "?metric=a%20b%26c%3Dd%2F%C3%A9&x=ok-1.2_~"
        );
        assert_eq!(query(&[("host", None)]), "");
        assert_eq!(
            link("/history?m=%22", "\"><script>"),
            "<a href=\"/history?m=%22\">&quot;&gt;&lt;script&gt;</a>"
        );
    }

    #[test]
    fn the_current_section_is_marked_once() {
        let page = page("t", "/fleet", "");
        assert_eq!(page.matches("aria-current").count(), 1);
        assert!(page.contains("<a href=\"/fleet\" aria-current=\"page\">Fleet</a>"));
    }
}
