//! Metric histories: the index of every (metric, command, host, subject, workload) series, and one
//! metric's history with a plot and the run behind every point.

use super::given;
use crate::history::{histories, History, SeriesFilter};
use crate::markup::{answer_list, esc, figure, link, name_link, page, query, when, HtmlTable};
use crate::state::PageError;
use dyno_model::format_value;
use dyno_report::plot::{ChangeKind, PlotSize, TrendPlot};
use dyno_store::Store;
use serde::Deserialize;

/// The history page's query parameters.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct HistoryParams {
    metric: Option<String>,
    command: Option<String>,
    host: Option<String>,
    subject: Option<String>,
    workload: Option<String>,
}

/// The index (no metric given) or the histories of one metric.
pub(crate) fn render(store: &Store, p: &HistoryParams) -> Result<String, PageError> {
    let q = SeriesFilter {
        metric: given(&p.metric),
        command: given(&p.command),
        host: given(&p.host),
        subject: given(&p.subject),
        workload: given(&p.workload),
    };
    let found = histories(store, &q)?;
    match q.metric {
        None => Ok(index(&found)),
        Some(metric) if found.is_empty() => Err(PageError::NotFound(format!(
            "No complete run measured a metric {metric:?}{}.",
            if q.command.is_some()
                || q.host.is_some()
                || q.subject.is_some()
                || q.workload.is_some()
            {
                " with these filters"
            } else {
                ""
            }
        ))),
        Some(metric) => Ok(metric_page(metric, &found)),
    }
}

fn href(h: &History) -> String {
    format!(
        "/history{}",
        query(&[
            ("metric", Some(&h.key.metric)),
            ("command", Some(&h.key.command)),
            ("host", Some(&h.key.host)),
            ("subject", Some(&h.key.subject)),
            ("workload", h.key.workload.as_deref()),
        ])
    )
}

fn index(found: &[History]) -> String {
    let mut table = HtmlTable::new(
        "series",
        &[
            ("Metric", false),
            ("Command", false),
            ("Host", false),
            ("Subject", false),
            ("Workload", false),
            ("Runs", true),
            ("Change points", true),
            ("Latest", false),
        ],
    )
    .secondary(&["Workload"]);
    for h in found {
        let latest = h.points.last().map(|p| when(p.started_at));
        table.row(vec![
            name_link(&href(h), &h.key.metric),
            esc(&h.key.command),
            esc(&h.key.host),
            esc(&h.key.subject),
            esc(h.key.workload.as_deref().unwrap_or("-")),
            h.points.len().to_string(),
            h.changes.len().to_string(),
            latest.unwrap_or_default(),
        ]);
    }
    let body = if table.is_empty() {
        "<p class=\"note\">No complete run is stored yet: run <code>dyno machine</code> a few \
         times, then reload.</p>\n"
            .to_string()
    } else {
        format!(
            "<p class=\"hint\">Every metric, per command, host and subject: pick one to see \
             its value run after run.</p>\n{}",
            answer_list(&table.render())
        )
    };
    page("History", "/history", &body)
}

fn metric_page(metric: &str, found: &[History]) -> String {
    let mut body = String::new();
    if found.len() > 1 {
        body.push_str(&format!(
            "<p class=\"hint\">{} series (one per command, host and subject).</p>\n",
            found.len()
        ));
    }
    for (i, h) in found.iter().enumerate() {
        let section = series_section(h);
        // The first series, its plot and table, is what the page answers with.
        body.push_str(&if i == 0 {
            answer_list(&section)
        } else {
            section
        });
    }
    page(&format!("History of {metric}"), "/history", &body)
}

fn series_section(h: &History) -> String {
    let k = &h.key;
    let mut heading = format!("{} · {} · {}", k.command, k.host, k.subject);
    if let Some(w) = &k.workload {
        heading.push_str(&format!(" · {w}"));
    }
    let mut out = format!("<section class=\"series\">\n<h2>{}</h2>\n", esc(&heading));
    let f = |x: f64| format_value(x, h.metric.unit);
    let better = dyno_results::better(h.metric.direction);
    let values: Vec<f64> = h.points.iter().map(|p| p.value).collect();
    let mut plot = TrendPlot::new(
        format!("{} on {}", k.metric, k.host),
        h.metric.clone(),
        values,
    )
    .size(PlotSize {
        width: 900,
        height: 420,
    });
    // Marked as `dyno results trend --format html` marks them.
    for c in &h.changes {
        let run = h.points[c.index].run;
        plot = plot.mark(
            c.index,
            ChangeKind::of(c, better),
            format!("run {run} {:+.1}%", c.relative_change * 100.0),
        );
    }
    let mut table = HtmlTable::new(
        "points",
        &[
            ("#", true),
            ("Run", true),
            ("Started", false),
            ("n", true),
            ("Median", true),
            ("Change", false),
        ],
    )
    .secondary(&["n"]);
    for (i, p) in h.points.iter().enumerate() {
        let change = h.changes.iter().find(|c| c.index == i).map(|c| {
            format!(
                "{} change: {} → {} ({:+.1} %, {})",
                c.strength.as_str(),
                f(c.mean_before),
                f(c.mean_after),
                c.relative_change * 100.0,
                dyno_report::format_p_clause(c.p_value)
            )
        });
        table.row(vec![
            (i + 1).to_string(),
            link(&format!("/runs/{}", p.run), &p.run.to_string()),
            when(p.started_at),
            p.samples.to_string(),
            esc(&f(p.value)),
            esc(&change.unwrap_or_default()),
        ]);
    }
    let found = match h.changes.len() {
        0 => "no change point found".to_string(),
        1 => "1 change point".to_string(),
        n => format!("{n} change points"),
    };
    let caption = format!(
        "{} ({}), the median of each run ({}), run 1 the oldest; {found} (strong: coloured, \
         weak: grey; the flat lines are the mean level between strong ones).",
        k.metric,
        h.metric.unit.symbol(),
        h.metric.direction.as_str().replace('_', " ")
    );
    out.push_str(&figure("history", &caption, plot.render_svg()));
    out.push_str(&table.render());
    out.push_str("</section>\n");
    out
}
