//! One comparison inside the app (`/compare/{id}`): the verdict summary first (what was
//! flagged, the precision the comparison reached, its least sensitive metric), then the
//! primary metrics, then the secondary and unjudged ones folded; every metric links to
//! its history. The judging is `dyno compare`'s, plugged in through
//! [`FullReport::comparison`](crate::FullReport::comparison).

use super::stored::{comparisons, Comparison};
use crate::markup::{esc, link, page, query, HtmlTable};
use crate::state::{AppState, PageError};
use crate::{ComparisonView, Finding, VerdictView};
use dyno_model::format_value;
use dyno_store::Store;
use std::collections::BTreeSet;

/// The comparison `id`'s page.
pub(crate) fn render(state: &AppState, store: &Store, id: &str) -> Result<String, PageError> {
    let all = comparisons(store)?;
    let c = all
        .iter()
        .find(|c| c.id == id)
        .ok_or_else(|| PageError::NotFound(format!("There is no comparison {id:?}.")))?;
    let view = judged(state, store, c)?.ok_or_else(|| {
        PageError::NotFound(format!(
            "This server cannot judge comparisons; the runs of {id:?} are at /runs/{}.",
            c.first()
        ))
    })?;
    let known: BTreeSet<String> = store.metric_names()?.into_iter().collect();
    let mut body = facts(&view, c);
    body.push_str(&summary(&view, &known));
    let (primary, secondary): (Vec<&VerdictView>, Vec<&VerdictView>) =
        view.verdicts.iter().partition(|v| !v.secondary);
    body.push_str(&format!("<h2>Primary metrics ({})</h2>\n", primary.len()));
    body.push_str(&verdict_table(&view, &primary, &known));
    if !secondary.is_empty() {
        body.push_str(&format!(
            "<details class=\"fold\"><summary>Secondary metrics ({}): reported, not part of \
             the verdict</summary>\n{}</details>\n",
            secondary.len(),
            verdict_table(&view, &secondary, &known)
        ));
    }
    if !view.unjudged.is_empty() {
        let mut t = HtmlTable::new(
            "unjudged",
            &[
                ("Workload", false),
                ("Candidate", false),
                ("Metric", false),
                ("Why not judged", false),
            ],
        );
        for u in &view.unjudged {
            t.row(vec![
                esc(&u.workload),
                esc(&u.candidate),
                metric_link(&view, &u.metric, &u.candidate, &u.workload, &known),
                esc(&u.why),
            ]);
        }
        body.push_str(&format!(
            "<details class=\"fold\"><summary>Not judged ({})</summary>\n{}</details>\n",
            view.unjudged.len(),
            t.render()
        ));
    }
    if !view.notes.is_empty() {
        body.push_str("<h2>Notes</h2>\n<ul class=\"notes\">\n");
        for n in &view.notes {
            body.push_str(&format!("<li>{}</li>\n", esc(n)));
        }
        body.push_str("</ul>\n");
    }
    Ok(page(&format!("Comparison {id}"), "/compare", &body))
}

/// The plugged-in judgement of comparison `c`, if the server has one.
pub(crate) fn judged(
    state: &AppState,
    store: &Store,
    c: &Comparison,
) -> Result<Option<ComparisonView>, PageError> {
    let Some(reports) = &state.reports else {
        return Ok(None);
    };
    reports
        .comparison(store, c.first())
        .map_err(|e| PageError::Internal(format!("judging comparison {}: {e}", c.id)))
}

/// What the comparison found, in a few words (the list's outcome column).
pub(crate) fn outcome(view: &ComparisonView) -> String {
    let primary: Vec<&VerdictView> = view.verdicts.iter().filter(|v| !v.secondary).collect();
    let count = |f: Finding| primary.iter().filter(|v| v.finding == f).count();
    let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    let (reg, imp) = (count(Finding::Regression), count(Finding::Improvement));
    let mut out = match (reg, imp) {
        _ if primary.is_empty() => "nothing judged yet".to_string(),
        (0, 0) => format!(
            "no significant change ({})",
            plural(primary.len(), "metric")
        ),
        (r, 0) => plural(r, "regression"),
        (0, i) => plural(i, "improvement"),
        (r, i) => format!("{}, {}", plural(r, "regression"), plural(i, "improvement")),
    };
    let (done, planned) = view.executions;
    if done < planned {
        out.push_str(&format!(" (incomplete: {done} of {planned} executions)"));
    }
    out
}

/// The CSS class of an outcome.
pub(crate) fn outcome_class(view: &ComparisonView) -> &'static str {
    let primary = view.verdicts.iter().filter(|v| !v.secondary);
    let mut class = "status-complete";
    for v in primary {
        match v.finding {
            Finding::Regression => return "status-failed",
            Finding::Improvement => class = "improvement",
            Finding::NoChange => {}
        }
    }
    class
}

fn facts(view: &ComparisonView, c: &Comparison) -> String {
    let pairs = [
        ("file", view.file.clone()),
        ("subjects", view.subjects.join(" (baseline), ")),
        ("workloads", view.workloads.join(", ")),
        (
            "test",
            format!(
                "{}, alpha {} per family, noise band ±{:.1}%",
                view.test,
                view.alpha,
                view.noise_band * 100.0
            ),
        ),
        (
            "executions",
            format!("{} of {}", view.executions.0, view.executions.1),
        ),
        ("host", view.host.clone()),
    ];
    let mut out = String::from("<div class=\"facts\"><section><dl>\n");
    for (k, v) in pairs.iter().filter(|(_, v)| !v.is_empty()) {
        out.push_str(&format!("<dt>{}</dt><dd>{}</dd>\n", esc(k), esc(v)));
    }
    out.push_str(&format!(
        "<dt>runs</dt><dd>{}..{} · {}</dd>\n</dl></section></div>\n",
        link(&format!("/runs/{}", c.first()), &c.first().to_string()),
        link(&format!("/runs/{}", c.last()), &c.last().to_string()),
        link(
            &format!("/runs/{}/report", c.first()),
            "the full report (every plot)"
        ),
    ));
    out
}

/// "+3.2%" for a ratio of 1.032; a baseline of 0 has no ratio.
fn change(ratio: f64) -> String {
    if ratio.is_finite() {
        format!("{:+.1}%", (ratio - 1.0) * 100.0)
    } else {
        "n/a".to_string()
    }
}

fn mdc(v: &VerdictView) -> String {
    match v.min_detectable_change {
        Some(m) if v.limited_by_noise_band => format!("±{:.1}% (noise band)", m * 100.0),
        Some(m) => format!("±{:.1}%", m * 100.0),
        None => "none".to_string(),
    }
}

fn summary(view: &ComparisonView, known: &BTreeSet<String>) -> String {
    let primary: Vec<&VerdictView> = view.verdicts.iter().filter(|v| !v.secondary).collect();
    let mut out = format!(
        "<section class=\"summary {}\">\n<h2>Verdict: {}</h2>\n",
        outcome_class(view),
        esc(&outcome(view))
    );
    let flagged: Vec<&&VerdictView> = primary
        .iter()
        .filter(|v| v.finding != Finding::NoChange)
        .collect();
    if !flagged.is_empty() {
        out.push_str("<ul class=\"flagged\">\n");
        for v in flagged {
            out.push_str(&format!(
                "<li><span class=\"{}\">{}</span>: {} on {}, {} against {}: {}{} → {}, {})</li>\n",
                if v.finding == Finding::Regression {
                    "status-failed"
                } else {
                    "improvement"
                },
                v.finding.as_str(),
                metric_link(view, &v.metric.name, &v.candidate, &v.workload, known),
                esc(&v.workload),
                esc(&v.candidate),
                esc(view
                    .subjects
                    .first()
                    .map(String::as_str)
                    .unwrap_or("the baseline")),
                if v.ratio.0.is_finite() {
                    format!("{} (", change(v.ratio.0))
                } else {
                    "(".to_string()
                },
                esc(&format_value(v.baseline, v.metric.unit)),
                esc(&format_value(v.candidate_value, v.metric.unit)),
                esc(&dyno_report::format_p_clause(v.p_adjusted))
            ));
        }
        out.push_str("</ul>\n");
    }
    // The precision: what the comparison says it reached, else what its verdicts could see.
    out.push_str("<p><strong>Precision:</strong> ");
    let seen: Vec<f64> = primary
        .iter()
        .filter_map(|v| v.min_detectable_change)
        .collect();
    match &view.precision {
        Some(p) => out.push_str(&esc(p)),
        None if seen.is_empty() => out.push_str("no primary verdict states what it could see."),
        None => {
            let (lo, hi) = seen.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), m| {
                (lo.min(*m), hi.max(*m))
            });
            let median = dyno_stats::median(&seen).unwrap_or(hi);
            out.push_str(&format!(
                "the primary verdicts could flag changes of ±{:.1}% to ±{:.1}% (median ±{:.1}%) \
                 with 80% probability; smaller ones would have gone unseen.",
                lo * 100.0,
                hi * 100.0,
                median * 100.0
            ));
        }
    }
    out.push_str("</p>\n");
    // The least sensitive primary metric: the largest change it could have missed.
    let least = primary.iter().max_by(|a, b| {
        let key = |v: &VerdictView| v.min_detectable_change.unwrap_or(f64::INFINITY);
        key(a).total_cmp(&key(b))
    });
    if let Some(v) = least {
        out.push_str(&format!(
            "<p><strong>Least sensitive:</strong> {} on {}, {}: {}.</p>\n",
            metric_link(view, &v.metric.name, &v.candidate, &v.workload, known),
            esc(&v.workload),
            esc(&v.candidate),
            match v.min_detectable_change {
                Some(m) => format!("a change under ±{:.1}% could go unseen", m * 100.0),
                None => "it could not flag a change of any size".to_string(),
            }
        ));
    }
    out.push_str("</section>\n");
    out
}

fn verdict_table(view: &ComparisonView, rows: &[&VerdictView], known: &BTreeSet<String>) -> String {
    let mut t = HtmlTable::new(
        "verdicts",
        &[
            ("Workload", false),
            ("Candidate", false),
            ("Metric", false),
            ("Baseline", true),
            ("Candidate", true),
            ("Change (95% CI)", true),
            ("p (Holm)", true),
            ("Verdict", false),
            ("Could see", true),
            ("Rounds", true),
        ],
    );
    for v in rows {
        let f = |x: f64| esc(&format_value(x, v.metric.unit));
        let class = match v.finding {
            Finding::Regression => "status-failed",
            Finding::Improvement => "improvement",
            Finding::NoChange => "",
        };
        t.row(vec![
            esc(&v.workload),
            esc(&v.candidate),
            metric_link(view, &v.metric.name, &v.candidate, &v.workload, known),
            f(v.baseline),
            f(v.candidate_value),
            if v.ratio.0.is_finite() {
                format!(
                    "{} ({} .. {})",
                    change(v.ratio.0),
                    change(v.ratio.1),
                    change(v.ratio.2)
                )
            } else {
                "n/a (baseline 0)".to_string()
            },
            esc(&dyno_report::format_p_value(v.p_adjusted)),
            format!("<span class=\"{class}\">{}</span>", v.finding.as_str()),
            esc(&mdc(v)),
            v.rounds.to_string(),
        ]);
    }
    if t.is_empty() {
        return "<p class=\"note\">None.</p>\n".into();
    }
    t.render()
}

/// The metric's name, linked to the candidate's history of it on this workload when the
/// store has one (derived figures such as `cpu_s_per_tx` may exist only in the verdicts).
fn metric_link(
    view: &ComparisonView,
    metric: &str,
    subject: &str,
    workload: &str,
    known: &BTreeSet<String>,
) -> String {
    if !known.contains(metric) {
        return esc(metric);
    }
    let href = format!(
        "/history{}",
        query(&[
            ("metric", Some(metric)),
            ("command", Some("compare")),
            (
                "host",
                Some(&view.host)
                    .filter(|h| !h.is_empty())
                    .map(|h| h.as_str())
            ),
            ("subject", Some(subject)),
            ("workload", Some(workload)),
        ])
    );
    link(&href, metric)
}
