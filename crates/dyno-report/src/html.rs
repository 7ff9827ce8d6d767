//! The self-contained HTML report.
//!
//! One file, opening offline: the stylesheet is inline, plots are inline SVG, there are
//! no scripts, fonts or external URLs, and a Content-Security-Policy forbids loading any.

use crate::table::{HtmlTable, Table, TableRenderer};
use crate::{escape, ReportError};
use dyno_model::{format_value, Host, Unit};

/// A judgement shown as a coloured badge in front of a sentence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Worse than the baseline, and the difference is real.
    Regression,
    /// Better than the baseline, and the difference is real.
    Improvement,
    /// No difference that the measurements can show.
    NoChange,
    /// A requirement is met.
    Pass,
    /// A requirement is not met.
    Fail,
}

impl Verdict {
    /// The badge text.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Regression => "Regression",
            Verdict::Improvement => "Improvement",
            Verdict::NoChange => "No change",
            Verdict::Pass => "Pass",
            Verdict::Fail => "Fail",
        }
    }

    fn css_class(self) -> &'static str {
        match self {
            Verdict::Regression => "regression",
            Verdict::Improvement => "improvement",
            Verdict::NoChange => "nochange",
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
        }
    }
}

/// One piece of a section's content.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// An observation, as plain text (escaped when rendered).
    Paragraph(String),
    /// An observation with a verdict badge in front.
    Verdict(Verdict, String),
    /// A table, rendered with [`HtmlTable`].
    Table(Table),
    /// An SVG plot from [`crate::plot`] with a caption. The SVG is embedded as is, so only
    /// SVG made by this crate belongs here; anything that is not an `<svg>` element, or
    /// that holds a script, is shown as an error note instead.
    Plot {
        /// Caption under the plot.
        caption: String,
        /// The SVG document.
        svg: String,
    },
    /// A note that something could not be shown (e.g. a plot that failed).
    Note(String),
    /// A table folded into a closed `<details>` element under a one-line summary: what a
    /// reader may want to check but should not have to scroll past.
    Details {
        /// The line shown while folded.
        summary: String,
        /// The folded table.
        table: Table,
    },
}

/// A titled part of a report.
#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    /// Section heading.
    pub heading: String,
    /// Content, in order.
    pub blocks: Vec<Block>,
    /// The report's answer to its command's question (the verdict, the bottleneck): drawn
    /// first, under the title, as `<section id="answer">` (see [`Section::answer`]).
    pub answer: bool,
}

impl Section {
    /// An empty section.
    pub fn new(heading: impl Into<String>) -> Self {
        Section {
            heading: heading.into(),
            blocks: Vec::new(),
            answer: false,
        }
    }

    /// Marks this section as the report's answer: whatever order sections were added in,
    /// it comes first, under the title and before the run's facts, with the stable id
    /// `answer` (one per report: the first section marked wins the id, later ones are
    /// drawn as plain sections).
    pub fn answer(mut self) -> Self {
        self.answer = true;
        self
    }

    /// Adds an observation.
    pub fn paragraph(mut self, text: impl Into<String>) -> Self {
        self.blocks.push(Block::Paragraph(text.into()));
        self
    }

    /// Adds an observation with a verdict badge.
    pub fn verdict(mut self, verdict: Verdict, text: impl Into<String>) -> Self {
        self.blocks.push(Block::Verdict(verdict, text.into()));
        self
    }

    /// Adds a table.
    pub fn table(mut self, table: Table) -> Self {
        self.blocks.push(Block::Table(table));
        self
    }

    /// Adds an SVG plot made by [`crate::plot`].
    pub fn plot(mut self, caption: impl Into<String>, svg: impl Into<String>) -> Self {
        self.blocks.push(Block::Plot {
            caption: caption.into(),
            svg: svg.into(),
        });
        self
    }

    /// Adds a plot, or a note saying why it could not be drawn, so that one bad series
    /// does not cost the whole report.
    pub fn plot_result(self, caption: impl Into<String>, svg: Result<String, ReportError>) -> Self {
        let caption = caption.into();
        match svg {
            Ok(svg) => self.plot(caption, svg),
            Err(e) => self.note(format!("{caption}: not drawn: {e}")),
        }
    }

    /// Adds a table folded under a closed summary line.
    pub fn details(mut self, summary: impl Into<String>, table: Table) -> Self {
        self.blocks.push(Block::Details {
            summary: summary.into(),
            table,
        });
        self
    }

    /// Adds a note.
    pub fn note(mut self, text: impl Into<String>) -> Self {
        self.blocks.push(Block::Note(text.into()));
        self
    }
}

/// Builds one self-contained HTML report.
///
/// ```
/// use dyno_report::{HtmlReport, Section, Verdict};
///
/// let html = HtmlReport::new("dyno compare: v1.2 vs v1.3")
///     .parameter("workload", "value transfers")
///     .host_field("CPU", "AMD EPYC 7B13")
///     .section(Section::new("Throughput").verdict(Verdict::NoChange, "within noise"))
///     .render();
/// assert!(html.contains("No change"));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HtmlReport {
    title: String,
    parameters: Vec<(String, String)>,
    host: Vec<(String, String)>,
    sections: Vec<Section>,
    footer: Option<String>,
}

impl HtmlReport {
    /// An empty report with a title.
    pub fn new(title: impl Into<String>) -> Self {
        HtmlReport {
            title: title.into(),
            ..HtmlReport::default()
        }
    }

    /// Adds a run parameter to the header (command, settings, tool version...).
    pub fn parameter(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.parameters.push((key.into(), value.into()));
        self
    }

    /// Adds one host fact to the header.
    pub fn host_field(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.host.push((key.into(), value.into()));
        self
    }

    /// Adds the usual facts of a host fingerprint to the header (fields that were not
    /// read are left out).
    pub fn host(mut self, host: &Host) -> Self {
        let mut field = |k: &str, v: String| {
            if !v.is_empty() {
                self.host.push((k.to_string(), v));
            }
        };
        field("host name", host.hostname.clone());
        field("CPU", host.cpu_model.clone());
        if host.cores_online > 0 {
            field("cores online", host.cores_online.to_string());
        }
        if host.memory_bytes > 0 {
            field(
                "memory",
                format_value(host.memory_bytes as f64, Unit::Bytes),
            );
        }
        field("kernel", host.kernel.clone());
        field(
            "virtualization",
            host.virtualization.clone().unwrap_or_default(),
        );
        if let Some(fs) = &host.filesystem {
            let where_ = format!("{} on {}", fs.fs_type, fs.mount_point.display());
            field("filesystem", where_);
        }
        self
    }

    /// Adds a section.
    pub fn section(mut self, section: Section) -> Self {
        self.sections.push(section);
        self
    }

    /// Sets a footer line (e.g. the dyno version that generated the report).
    pub fn footer(mut self, text: impl Into<String>) -> Self {
        self.footer = Some(text.into());
        self
    }

    /// The complete HTML document.
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(64 * 1024);
        out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
        out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
        // Nothing may be fetched: the report must read the same offline, years later.
        out.push_str(
            "<meta http-equiv=\"Content-Security-Policy\" \
             content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\n",
        );
        out.push_str(&format!("<title>{}</title>\n", escape::html(&self.title)));
        out.push_str("<style>\n");
        out.push_str(STYLESHEET);
        out.push_str("</style>\n</head>\n<body>\n<main>\n");
        out.push_str(&format!("<h1>{}</h1>\n", escape::html(&self.title)));
        // The answer first, before the run's facts; then the rest in the order added.
        let answer = self.sections.iter().position(|s| s.answer);
        if let Some(i) = answer {
            render_section(&mut out, &self.sections[i], true);
        }
        if !self.parameters.is_empty() || !self.host.is_empty() {
            out.push_str("<div class=\"facts\">\n");
            facts(&mut out, "Run", &self.parameters);
            facts(&mut out, "Host", &self.host);
            out.push_str("</div>\n");
        }
        for (i, section) in self.sections.iter().enumerate() {
            if Some(i) != answer {
                render_section(&mut out, section, false);
            }
        }
        if let Some(footer) = &self.footer {
            out.push_str(&format!("<footer>{}</footer>\n", escape::html(footer)));
        }
        out.push_str("</main>\n</body>\n</html>\n");
        out
    }
}

fn facts(out: &mut String, heading: &str, pairs: &[(String, String)]) {
    if pairs.is_empty() {
        return;
    }
    out.push_str(&format!("<section>\n<h2>{heading}</h2>\n<dl>\n"));
    for (k, v) in pairs {
        out.push_str(&format!(
            "<dt>{}</dt><dd>{}</dd>\n",
            escape::html(k),
            escape::html(v)
        ));
    }
    out.push_str("</dl>\n</section>\n");
}

/// True for what [`Block::Plot`] accepts: one SVG element without scripts or foreign
/// content (plotters emits neither, and escapes every label).
fn is_plain_svg(svg: &str) -> bool {
    let lower = svg.to_ascii_lowercase();
    lower.trim_start().starts_with("<svg")
        && lower.trim_end().ends_with("</svg>")
        && !lower.contains("<script")
        && !lower.contains("<foreignobject")
        && !has_event_handler(&lower)
}

/// True when the text holds something shaped like an event-handler attribute
/// (` onload=`); plotters escapes quotes in labels, so a label cannot open an attribute.
fn has_event_handler(lower: &str) -> bool {
    lower.match_indices(" on").any(|(i, _)| {
        let rest = &lower[i + 3..];
        let name_len = rest.bytes().take_while(u8::is_ascii_lowercase).count();
        name_len > 0 && rest[name_len..].trim_start().starts_with('=')
    })
}

/// One section as an HTML fragment, as a report draws it: for a page that shows a
/// command's section among its own markup (`dyno serve` shows a machine run's
/// requirements on the run's page). A section marked [`Section::answer`] gets the id
/// `answer`, and the class of its first verdict (`pass`, `fail`...).
pub fn section_html(section: &Section) -> String {
    let mut out = String::new();
    render_section(&mut out, section, section.answer);
    out
}

fn render_section(out: &mut String, section: &Section, answer: bool) {
    let open = if answer {
        let verdict = section.blocks.iter().find_map(|b| match b {
            Block::Verdict(v, _) => Some(v.css_class()),
            _ => None,
        });
        match verdict {
            Some(class) => format!("<section id=\"answer\" class=\"answer {class}\">"),
            None => "<section id=\"answer\" class=\"answer\">".to_string(),
        }
    } else {
        "<section>".to_string()
    };
    out.push_str(&format!(
        "{open}\n<h2>{}</h2>\n",
        escape::html(&section.heading)
    ));
    for block in &section.blocks {
        match block {
            Block::Paragraph(text) => out.push_str(&format!("<p>{}</p>\n", escape::html(text))),
            Block::Verdict(v, text) => out.push_str(&format!(
                "<p><span class=\"verdict {}\">{}</span> {}</p>\n",
                v.css_class(),
                v.label(),
                escape::html(text)
            )),
            Block::Table(table) => {
                out.push_str("<div class=\"table-wrap\">\n");
                out.push_str(&HtmlTable.render(table));
                out.push_str("</div>\n");
            }
            Block::Plot { caption, svg } if is_plain_svg(svg) => {
                out.push_str("<figure>\n");
                out.push_str(svg.trim());
                out.push_str(&format!(
                    "\n<figcaption>{}</figcaption>\n</figure>\n",
                    escape::html(caption)
                ));
            }
            Block::Plot { caption, .. } => out.push_str(&format!(
                "<p class=\"note\">{}: not shown (not a plain SVG plot)</p>\n",
                escape::html(caption)
            )),
            Block::Note(text) => {
                out.push_str(&format!("<p class=\"note\">{}</p>\n", escape::html(text)))
            }
            Block::Details { summary, table } => {
                out.push_str(&format!(
                    "<details>\n<summary>{}</summary>\n<div class=\"table-wrap\">\n",
                    escape::html(summary)
                ));
                out.push_str(&HtmlTable.render(table));
                out.push_str("</div>\n</details>\n");
            }
        }
    }
    out.push_str("</section>\n");
}

/// The whole stylesheet: the rules every dyno page shares ([`crate::BASE_STYLESHEET`]),
/// then the report's own (its page width, headings, tables and footer).
const STYLESHEET: &str = concat!(
    include_str!("style/base.css"),
    include_str!("style/report.css")
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::BoxPlot;
    use crate::table::{Align, Cell};
    use dyno_model::{Direction, Metric};

    fn report() -> HtmlReport {
        let metric = Metric::new("Blake2256", Unit::BytesPerSecond, Direction::HigherIsBetter);
        let svg = BoxPlot::new("Blake2", metric)
            .subject("<script>alert(1)</script>", vec![1.0e9, 1.1e9])
            .subject("official", vec![0.9e9, 1.0e9])
            .render_svg()
            .unwrap();
        let table = Table::new("medians")
            .column("subject", Align::Left)
            .column("median", Align::Right)
            .row([
                Cell::new("<script>alert(2)</script>"),
                Cell::new("1.05 GiB/s").good(),
            ]);
        HtmlReport::new("dyno <tune> & \"friends\"")
            .parameter("command", "dyno tune --study s.toml")
            .host_field("CPU", "Test CPU <3")
            .section(
                Section::new("Results")
                    .paragraph("<script>alert(3)</script> was fastest")
                    .verdict(Verdict::Regression, "slower by 5 %")
                    .verdict(Verdict::Pass, "meets the requirements")
                    .table(table)
                    .plot("box plot <b>", svg),
            )
            .footer("dyno 0.1.0")
    }

    #[test]
    fn all_text_is_escaped() {
        let html = report().render();
        assert!(
            !html.to_ascii_lowercase().contains("<script"),
            "no script element"
        );
        for n in 1..=3 {
            assert!(html.contains(&format!("&lt;script&gt;alert({n})&lt;/script&gt;")));
        }
        assert!(html.contains("<title>dyno &lt;tune&gt; &amp; &quot;friends&quot;</title>"));
        assert!(html.contains("<dd>Test CPU &lt;3</dd>"));
        assert!(html.contains("<figcaption>box plot &lt;b&gt;</figcaption>"));
    }

    #[test]
    fn the_document_is_self_contained() {
        let html = report().render();
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.trim_end().ends_with("</html>"));
        for external in ["src=", "href=", "url(", "@import", "<link", "<script"] {
            assert!(!html.contains(external), "no {external}");
        }
        assert!(html.contains("<svg"), "the plot is inline");
        assert!(html.contains("<style>"));
    }

    #[test]
    fn verdicts_and_statuses_get_their_classes() {
        let html = report().render();
        assert!(html.contains("<span class=\"verdict regression\">Regression</span> slower"));
        assert!(html.contains("<span class=\"verdict pass\">Pass</span>"));
        assert!(html.contains("<td class=\"right good\">1.05 GiB/s</td>"));
        assert!(STYLESHEET.contains(".verdict.regression"));
        assert!(STYLESHEET.contains(".verdict.nochange"));
    }

    #[test]
    fn details_are_folded_and_escaped() {
        let table = Table::new("t").column("metric <m>", Align::Left);
        let html = HtmlReport::new("t")
            .section(Section::new("s").details("648 metrics <unchanged>", table))
            .render();
        let open = html.find("<details>").expect("a details element");
        assert!(!html.contains("<details open"), "closed by default");
        assert!(
            html[open..].starts_with("<details>\n<summary>648 metrics &lt;unchanged&gt;</summary>")
        );
        assert!(html[open..].contains("metric &lt;m&gt;"));
        assert!(html[open..].contains("</details>"));
    }

    #[test]
    fn only_plain_svg_is_embedded() {
        let html = HtmlReport::new("t")
            .section(
                Section::new("s")
                    .plot("evil", "<svg><script>alert(1)</script></svg>")
                    .plot("handler", "<svg onload=\"x()\"></svg>")
                    .plot("not svg", "<img src=x>")
                    .plot_result(
                        "failed",
                        Err(ReportError::EmptyInput {
                            plot: "p".into(),
                            what: "no subjects".into(),
                        }),
                    ),
            )
            .render();
        assert!(!html.contains("<script") && !html.contains("onload") && !html.contains("<img"));
        assert_eq!(html.matches("class=\"note\"").count(), 4);
        assert!(html.contains("failed: not drawn: p: nothing to plot (no subjects)"));
    }

    #[test]
    fn the_answer_comes_first_whatever_the_order_it_was_added_in() {
        let html = HtmlReport::new("t")
            .parameter("run", "1")
            .section(Section::new("Summary").paragraph("medians"))
            .section(Section::new("Verdict").answer().paragraph("meets"))
            .section(Section::new("Other").answer().paragraph("second answer"))
            .render();
        let answer = html.find("<section id=\"answer\" class=\"answer\">\n<h2>Verdict</h2>");
        let fragment = section_html(&Section::new("V").answer().verdict(Verdict::Fail, "no"));
        assert!(fragment.starts_with("<section id=\"answer\" class=\"answer fail\">\n<h2>V</h2>"));
        assert!(!section_html(&Section::new("plain")).contains("id="));
        let summary = html.find("<h2>Summary</h2>").unwrap();
        assert!(answer.expect("an answer section") < summary, "{html}");
        assert!(html.find("<div class=\"facts\">").unwrap() > answer.unwrap());
        assert_eq!(html.matches("id=\"answer\"").count(), 1, "one id per page");
        assert!(html.find("<h2>Other</h2>").unwrap() > summary);
    }

    #[test]
    fn host_facts_skip_unknown_fields() {
        let host = Host {
            hostname: "bench-1".into(),
            cores_online: 8,
            memory_bytes: 16 << 30,
            ..Host::default()
        };
        let html = HtmlReport::new("t").host(&host).render();
        assert!(html.contains("<dt>host name</dt><dd>bench-1</dd>"));
        assert!(html.contains("<dt>memory</dt><dd>16.00 GiB</dd>"));
        assert!(!html.contains("<dt>kernel</dt>"));
    }
}
