//! One run: the command's answer first (a machine run's requirements, a bench's
//! bottleneck, a cluster's adoption and recovery, a study's winning recipe, the comparison
//! a compare execution belongs to), then what was run where, and each metric's median,
//! interval, spread and distribution, with a link to the metric's history and to the
//! command's own report.

use super::values;
use crate::markup::{answer, esc, figure, link, name_cell, page, query, HtmlTable};
use crate::state::{AppState, PageError};
use dyno_model::{format_value, Host, Metric};
use dyno_report::format_when;
use dyno_report::plot::{BoxPlot, PlotSize};
use dyno_store::{Store, StoredRun};

/// Box plots drawn on one run page; a run with more metrics (a compare run's series)
/// gets the table only, past this many.
const MAX_PLOTS: usize = 12;

/// The run page.
pub(crate) fn render(state: &AppState, store: &Store, id: i64) -> Result<String, PageError> {
    let run = store.run(id)?;
    let info = &run.info;
    let title = format!(
        "Run {}: dyno {} of {}",
        run.id, info.command, info.subject.name
    );
    let (answer, kind) = kind_sections(state, store, &run)?;
    let mut body = answer;
    body.push_str("<div class=\"facts\">\n");
    body.push_str(&facts("Run", &run_facts(&run)));
    body.push_str(&facts("Host", &host_facts(&info.host)));
    body.push_str("</div>\n");
    if state.reports.is_some() || info.command == "compare" {
        body.push_str(&format!(
            "<p>{} · the self-contained HTML report dyno writes for this {} run.</p>\n",
            link(&format!("/runs/{}/report", run.id), "Full report"),
            esc(&info.command)
        ));
    }
    body.push_str(&kind);
    let settings = serde_json::to_string_pretty(&info.settings).unwrap_or_default();
    body.push_str(&format!(
        "<details><summary>Settings</summary><pre>{}</pre></details>\n",
        esc(&settings)
    ));
    body.push_str("<h2>Metrics</h2>\n");
    body.push_str(&metrics_table(&run));
    body.push_str(&plots(&run));
    Ok(page(&title, "/", &body))
}

/// What a run of this command has besides its samples, as the answer at the top of the
/// page and the rest further down: a pipeline bench's diagnosis, then its TPS and layout;
/// a cluster's adoption and recovery, then its nodes and faults; a tune study's winning
/// recipe, then its race; the comparison a compare run belongs to; and for the other
/// commands the answer their crate gives through [`crate::FullReport::answer`] (a
/// machine run's requirements).
fn kind_sections(
    state: &AppState,
    store: &Store,
    run: &StoredRun,
) -> Result<(String, String), PageError> {
    Ok(match run.info.command.as_str() {
        "pipeline bench" => (
            super::pipeline::answer_section(run),
            super::pipeline::section(run),
        ),
        "cluster run" => (
            super::cluster::answer_section(store, run)?,
            super::cluster::section(store, run)?,
        ),
        "tune" => super::tune::section(store, run)?,
        "compare" => (compare_answer(store, run), String::new()),
        "bisect" => (bisect_answer(run), String::new()),
        _ => (plugged_answer(state, store, run), String::new()),
    })
}

/// A bisect step's answer: the bisection it belongs to, whose page names the culprits.
fn bisect_answer(run: &StoredRun) -> String {
    let Some(id) = run.info.settings["bisect"]["id"].as_str() else {
        return String::new();
    };
    answer(
        "",
        "Bisection",
        &format!(
            "<p>One step of bisection {}: its culprits and steps are on its page.</p>\n",
            link(&format!("/bisect/{}", crate::markup::url_encode(id)), id)
        ),
    )
}

/// A compare execution's answer: the comparison it belongs to, with what that found.
fn compare_answer(store: &Store, run: &StoredRun) -> String {
    let Some(record) = dyno_judge::record::record_of(run) else {
        return String::new();
    };
    let id = &record.comparison.id;
    let href = format!("/compare{}", query(&[("id", Some(id))]));
    let found = dyno_judge::judged::stored_comparison(store, run.id).ok();
    let (class, outcome) = match &found {
        // The answer's edge: red for a regression, green for an improvement.
        Some(view) => (
            match super::comparison::outcome_class(view) {
                "status-failed" => "regression",
                "improvement" => "improvement",
                _ => "nochange",
            },
            format!(": {}", esc(&super::comparison::outcome(view))),
        ),
        None => ("", String::new()),
    };
    answer(
        class,
        "Comparison",
        &format!(
            "<p>One execution of comparison {}{outcome}. Its verdicts are on its page.</p>\n",
            link(&href, id)
        ),
    )
}

/// The answer the command's crate gives (a machine run's requirements), if any.
fn plugged_answer(state: &AppState, store: &Store, run: &StoredRun) -> String {
    let Some(reports) = state.reports.as_ref() else {
        return String::new();
    };
    match reports.answer(store, run) {
        Ok(Some(section)) => dyno_report::section_html(&section.answer()),
        Ok(None) => String::new(),
        Err(e) => format!(
            "<p class=\"note\">The verdict of this run cannot be given: {}</p>\n",
            esc(&e.to_string())
        ),
    }
}

/// The command's own report of the run: a comparison's from the judge, the others' from
/// the plugged-in [`crate::FullReport`].
pub(crate) fn full_report(state: &AppState, store: &Store, id: i64) -> Result<String, PageError> {
    let run = store.run(id)?;
    let none = || {
        PageError::NotFound(format!(
            "dyno {} has no report beyond the run page; see /runs/{id}.",
            run.info.command
        ))
    };
    let report = if run.info.command == "compare" {
        dyno_judge::judged::stored_html(store, run.id)
            .map(Some)
            .map_err(|e| crate::WebError::report(&e))
    } else {
        let reports = state.reports.as_ref().ok_or_else(none)?;
        reports.report(store, &run)
    };
    match report {
        Ok(Some(html)) => Ok(with_way_back(html, id)),
        Ok(None) => Err(none()),
        // What a report needs beyond the store (a cluster run's node logs) may be gone.
        Err(e) => Err(PageError::NotFound(format!(
            "The report of run {id} cannot be made: {e}. The run page, /runs/{id}, shows its samples."
        ))),
    }
}

/// A command's report with links back to the run page and the run list at the top: the
/// report is a document of its own, written to be opened from a file.
fn with_way_back(html: String, id: i64) -> String {
    let back = format!(
        "<p style=\"margin:8px 28px\"><a href=\"/runs/{id}\">&larr; run {id}</a> · \
         <a href=\"/\">all runs</a></p>\n"
    );
    match html.find("<body>") {
        Some(i) => {
            let at = i + "<body>".len();
            format!("{}\n{back}{}", &html[..at], &html[at..])
        }
        None => html,
    }
}

fn facts(heading: &str, pairs: &[(&str, String)]) -> String {
    let mut out = format!("<section><h2>{heading}</h2><dl>\n");
    for (k, v) in pairs.iter().filter(|(_, v)| !v.is_empty()) {
        out.push_str(&format!("<dt>{}</dt><dd>{}</dd>\n", esc(k), esc(v)));
    }
    out.push_str("</dl></section>\n");
    out
}

fn run_facts(run: &StoredRun) -> Vec<(&'static str, String)> {
    let i = &run.info;
    vec![
        ("command line", i.command_line.join(" ")),
        (
            "subject",
            format!("{} ({})", i.subject.name, i.subject.kind.as_str()),
        ),
        ("started", format_when(i.started_at)),
        (
            "finished",
            run.finished_at.map(format_when).unwrap_or_default(),
        ),
        ("status", run.status.as_str().to_string()),
        ("dyno version", i.tool_version.clone()),
    ]
}

fn host_facts(h: &Host) -> Vec<(&'static str, String)> {
    vec![
        ("host name", h.hostname.clone()),
        ("CPU", h.cpu_model.clone()),
        (
            "cores online",
            if h.cores_online > 0 {
                h.cores_online.to_string()
            } else {
                String::new()
            },
        ),
        (
            "memory",
            if h.memory_bytes > 0 {
                format_value(h.memory_bytes as f64, dyno_model::Unit::Bytes)
            } else {
                String::new()
            },
        ),
        ("kernel", h.kernel.clone()),
        (
            "virtualization",
            h.virtualization.clone().unwrap_or_default(),
        ),
    ]
}

fn metrics_table(run: &StoredRun) -> String {
    let mut table = HtmlTable::new(
        "metrics",
        &[
            ("Metric", false),
            ("n", true),
            ("Median", true),
            ("95% CI of median", true),
            ("CV", true),
            ("Min", true),
            ("Max", true),
            ("History", false),
        ],
    )
    .secondary(&["Min", "Max"]);
    for m in &run.metrics {
        let v = values(run, &m.name);
        let Some(sum) = dyno_stats::summarize(&v) else {
            continue;
        };
        let f = |x: f64| esc(&format_value(x, m.unit));
        let ci = (v.len() > 1)
            .then(|| dyno_stats::median_ci(&v, 0.95).ok())
            .flatten()
            .map(|c| format!("{} .. {}", f(c.low), f(c.high)))
            .unwrap_or_else(|| "-".into());
        table.row(vec![
            name_cell(&m.name),
            sum.n.to_string(),
            f(sum.median),
            ci,
            esc(&dyno_results::cv_text(&sum)),
            f(sum.min),
            f(sum.max),
            link(&history_href(run, m), "history"),
        ]);
    }
    if table.is_empty() {
        return "<p class=\"note\">This run stored no samples.</p>\n".into();
    }
    table.render()
}

/// The history of `metric` for the run's command, host and subject.
pub(crate) fn history_href(run: &StoredRun, metric: &Metric) -> String {
    format!(
        "/history{}",
        query(&[
            ("metric", Some(&metric.name)),
            ("command", Some(&run.info.command)),
            ("host", Some(&run.info.host.hostname)),
            ("subject", Some(&run.info.subject.name)),
        ])
    )
}

fn plots(run: &StoredRun) -> String {
    let mut out = String::from("<div class=\"plots\">\n");
    let drawn: Vec<&Metric> = run
        .metrics
        .iter()
        .filter(|m| !values(run, &m.name).is_empty())
        .collect();
    for m in drawn.iter().take(MAX_PLOTS) {
        let svg = BoxPlot::new(m.name.clone(), (*m).clone())
            .subject(format!("run {}", run.id), values(run, &m.name))
            .size(PlotSize {
                width: 640,
                height: 300,
            })
            .render_svg();
        out.push_str(&figure(
            "distribution",
            &format!("{} ({}), every sample", m.name, m.unit.symbol()),
            svg,
        ));
    }
    out.push_str("</div>\n");
    if drawn.len() > MAX_PLOTS {
        out.push_str(&format!(
            "<p class=\"hint\">{} more metrics are in the table only.</p>\n",
            drawn.len() - MAX_PLOTS
        ));
    }
    out
}
