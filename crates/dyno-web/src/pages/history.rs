//! Metric histories: the index of every (metric, command, host, subject) series, and one
//! metric's history with a plot and the run behind every point.

use super::{given, when};
use crate::history::{histories, History, HistoryQuery};
use crate::markup::{esc, figure, link, page, query, HtmlTable};
use crate::state::PageError;
use dyno_model::format_value;
use dyno_report::plot::{HistoryPlot, HistoryPoint};
use dyno_store::Store;
use serde::Deserialize;

/// The history page's query parameters.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct HistoryParams {
    metric: Option<String>,
    command: Option<String>,
    host: Option<String>,
    subject: Option<String>,
}

/// The index (no metric given) or the histories of one metric.
pub(crate) fn render(store: &Store, p: &HistoryParams) -> Result<String, PageError> {
    let q = HistoryQuery {
        metric: given(&p.metric),
        command: given(&p.command),
        host: given(&p.host),
        subject: given(&p.subject),
    };
    let found = histories(store, &q)?;
    match q.metric {
        None => Ok(index(&found)),
        Some(metric) if found.is_empty() => Err(PageError::NotFound(format!(
            "No complete run measured a metric {metric:?}{}.",
            if q.command.is_some() || q.host.is_some() || q.subject.is_some() {
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
            ("Runs", true),
            ("Latest", false),
        ],
    );
    for h in found {
        let latest = h
            .runs
            .last()
            .map(|r| when(r.started_at))
            .unwrap_or_default();
        table.row(vec![
            link(&href(h), &h.key.metric),
            esc(&h.key.command),
            esc(&h.key.host),
            esc(&h.key.subject),
            h.runs.len().to_string(),
            esc(&latest),
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
            table.render()
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
    for h in found {
        body.push_str(&series_section(h));
    }
    page(&format!("History of {metric}"), "/history", &body)
}

/// A run's point: the median of its samples, with the median's 95% interval when it has
/// two samples or more.
fn point(values: &[f64], started_at: f64) -> Option<HistoryPoint> {
    let sum = dyno_stats::summarize(values)?;
    let interval = (values.len() > 1)
        .then(|| dyno_stats::median_ci(values, 0.95).ok())
        .flatten()
        .map(|c| (c.low, c.high));
    Some(HistoryPoint {
        started_at,
        value: sum.median,
        interval,
    })
}

fn series_section(h: &History) -> String {
    let k = &h.key;
    let mut out = format!(
        "<section class=\"series\">\n<h2>{} · {} · {}</h2>\n",
        esc(&k.command),
        esc(&k.host),
        esc(&k.subject)
    );
    let mut plot = HistoryPlot::new(format!("{} on {}", k.metric, k.host), h.metric.clone());
    let mut table = HtmlTable::new(
        "points",
        &[
            ("Run", true),
            ("Started", false),
            ("n", true),
            ("Median", true),
            ("95% CI of median", true),
        ],
    );
    for r in &h.runs {
        let Some(p) = point(&r.values, r.started_at) else {
            continue;
        };
        let f = |x: f64| esc(&format_value(x, h.metric.unit));
        table.row(vec![
            link(&format!("/runs/{}", r.run), &r.run.to_string()),
            esc(&when(r.started_at)),
            r.values.len().to_string(),
            f(p.value),
            p.interval
                .map(|(lo, hi)| format!("{} .. {}", f(lo), f(hi)))
                .unwrap_or_else(|| "-".into()),
        ]);
        plot = plot.point(p);
    }
    let caption = format!(
        "{} ({}), median of each run with its 95% interval, {}. Change points are not \
         marked: this build has no change-point detection.",
        k.metric,
        h.metric.unit.symbol(),
        h.metric.direction.as_str().replace('_', " ")
    );
    out.push_str(&figure("history", &caption, plot.render_svg()));
    out.push_str(&table.render());
    out.push_str("</section>\n");
    out
}
