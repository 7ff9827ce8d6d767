//! One comparison inside the app (`/compare/{id}`): the verdict summary first (what was
//! flagged, the precision the comparison reached, its least sensitive metric), then the
//! primary metrics, then the secondary and unjudged ones folded; every metric links to
//! its history. The judging is dyno-judge's, the same `dyno compare report` does.

use super::stored::{comparisons, Comparison};
use crate::markup::{esc, link, page, query, HtmlTable};
use crate::state::PageError;
use dyno_judge::family::UnjudgedReason;
use dyno_judge::judged::StoredComparison;
use dyno_judge::{MetricVerdict, Verdict};
use dyno_model::format_value;
use dyno_store::Store;
use std::collections::BTreeSet;

/// The comparison `id`'s page.
pub(crate) fn render(store: &Store, id: &str) -> Result<String, PageError> {
    let all = comparisons(store)?;
    let c = all
        .iter()
        .find(|c| c.id == id)
        .ok_or_else(|| PageError::NotFound(format!("There is no comparison {id:?}.")))?;
    let view = judged(store, c)?;
    let known: BTreeSet<String> = store.metric_names()?.into_iter().collect();
    let mut body = facts(&view, c);
    body.push_str(&summary(&view, &known));
    let (primary, secondary): (Vec<&MetricVerdict>, Vec<&MetricVerdict>) =
        view.judgement.verdicts.iter().partition(|v| !v.secondary);
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
    let unjudged = &view.judgement.unjudged;
    if !unjudged.is_empty() {
        let mut t = HtmlTable::new(
            "unjudged",
            &[
                ("Workload", false),
                ("Candidate", false),
                ("Metric", false),
                ("Why not judged", false),
            ],
        );
        for u in unjudged {
            let why = match &u.reason {
                UnjudgedReason::Unchanged { value } => {
                    format!("the same value ({value}) in every execution")
                }
                UnjudgedReason::Missing { subject } => format!("{subject} never reported it"),
            };
            t.row(vec![
                esc(&u.workload),
                esc(&u.candidate),
                metric_link(&view, &u.metric, &u.candidate, &u.workload, &known),
                esc(&why),
            ]);
        }
        body.push_str(&format!(
            "<details class=\"fold\"><summary>Not judged ({})</summary>\n{}</details>\n",
            unjudged.len(),
            t.render()
        ));
    }
    let notes = &view.judgement.notes;
    if !notes.is_empty() {
        body.push_str("<h2>Notes</h2>\n<ul class=\"notes\">\n");
        for n in notes {
            body.push_str(&format!("<li>{}</li>\n", esc(n)));
        }
        body.push_str("</ul>\n");
    }
    Ok(page(&format!("Comparison {id}"), "/compare", &body))
}

/// Comparison `c` judged from its stored runs.
pub(crate) fn judged(store: &Store, c: &Comparison) -> Result<StoredComparison, PageError> {
    dyno_judge::judged::stored_comparison(store, c.first()).map_err(|e| {
        let why = match &e {
            dyno_judge::judged::StoredReportError::Load(e) => e.to_string(),
            e => crate::WebError::report(e).to_string(),
        };
        PageError::Internal(format!("judging comparison {}: {why}", c.id))
    })
}

/// The primary verdicts of a judged comparison.
fn primary(view: &StoredComparison) -> Vec<&MetricVerdict> {
    view.judgement
        .verdicts
        .iter()
        .filter(|v| !v.secondary)
        .collect()
}

/// Comparison `c`'s outcome as a list cell: its primary metrics' verdicts counted, or
/// why it could not be judged (the list stays).
pub(crate) fn outcome_cell(store: &Store, c: &Comparison) -> String {
    match judged(store, c) {
        Ok(view) => format!(
            "<span class=\"{}\">{}</span>",
            outcome_class(&view),
            esc(&outcome(&view))
        ),
        Err(e) => format!("<span class=\"down\">{}</span>", esc(&e.to_string())),
    }
}

/// What the comparison found, in a few words (the list's outcome column).
pub(crate) fn outcome(view: &StoredComparison) -> String {
    let primary = primary(view);
    let count = |f: Verdict| primary.iter().filter(|v| v.verdict() == f).count();
    let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    let (reg, imp) = (count(Verdict::Regression), count(Verdict::Improvement));
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
    let (done, planned) = (view.complete(), view.loaded.meta.planned());
    if done < planned {
        out.push_str(&format!(" (incomplete: {done} of {planned} executions)"));
    }
    out
}

/// The CSS class of an outcome.
pub(crate) fn outcome_class(view: &StoredComparison) -> &'static str {
    let mut class = "status-complete";
    for v in primary(view) {
        match v.verdict() {
            Verdict::Regression => return "status-failed",
            Verdict::Improvement => class = "improvement",
            Verdict::NoSignificantChange => {}
        }
    }
    class
}

/// `regression`, `improvement`, `no change`.
fn finding(v: &MetricVerdict) -> &'static str {
    match v.verdict() {
        Verdict::Regression => "regression",
        Verdict::Improvement => "improvement",
        Verdict::NoSignificantChange => "no change",
    }
}

fn facts(view: &StoredComparison, c: &Comparison) -> String {
    let meta = &view.loaded.meta;
    let pairs = [
        ("file", meta.file.clone()),
        ("subjects", meta.subjects.join(" (baseline), ")),
        ("workloads", meta.workloads.join(", ")),
        (
            "test",
            format!(
                "{}, alpha {} per family, noise band ±{:.1}%",
                meta.test.unwrap_or_default().name(),
                meta.alpha,
                meta.noise_band * 100.0
            ),
        ),
        (
            "executions",
            format!("{} of {}", view.complete(), meta.planned()),
        ),
        ("host", view.loaded.host.hostname.clone()),
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

/// The smallest relative change a verdict could have flagged (0.05 = 5%), when any.
fn min_detectable(v: &MetricVerdict) -> Option<f64> {
    v.power.as_ref().and_then(|p| p.min_detectable_change)
}

fn mdc(v: &MetricVerdict) -> String {
    let band = v.power.as_ref().is_some_and(|p| p.limited_by_noise_band);
    match min_detectable(v) {
        Some(m) if band => format!("±{:.1}% (noise band)", m * 100.0),
        Some(m) => format!("±{:.1}%", m * 100.0),
        None => "none".to_string(),
    }
}

fn summary(view: &StoredComparison, known: &BTreeSet<String>) -> String {
    let primary = primary(view);
    let mut out = format!(
        "<section class=\"summary {}\">\n<h2>Verdict: {}</h2>\n",
        outcome_class(view),
        esc(&outcome(view))
    );
    let flagged: Vec<&&MetricVerdict> = primary
        .iter()
        .filter(|v| v.verdict() != Verdict::NoSignificantChange)
        .collect();
    if !flagged.is_empty() {
        out.push_str("<ul class=\"flagged\">\n");
        for v in flagged {
            let ratio = v.change().estimate;
            out.push_str(&format!(
                "<li><span class=\"{}\">{}</span>: {} on {}, {} against {}: {}{} → {}, {})</li>\n",
                if v.verdict() == Verdict::Regression {
                    "status-failed"
                } else {
                    "improvement"
                },
                finding(v),
                metric_link(view, &v.metric.name, &v.candidate, &v.workload, known),
                esc(&v.workload),
                esc(&v.candidate),
                esc(view
                    .loaded
                    .meta
                    .subjects
                    .first()
                    .map(String::as_str)
                    .unwrap_or("the baseline")),
                if ratio.is_finite() {
                    format!("{} (", change(ratio))
                } else {
                    "(".to_string()
                },
                esc(&format_value(v.baseline_median(), v.metric.unit)),
                esc(&format_value(v.candidate_median(), v.metric.unit)),
                esc(&dyno_report::format_p_clause(v.comparison.p_adjusted))
            ));
        }
        out.push_str("</ul>\n");
    }
    // The precision: what the comparison says it reached, else what its verdicts could see.
    out.push_str("<p><strong>Precision:</strong> ");
    let seen: Vec<f64> = primary.iter().filter_map(|v| min_detectable(v)).collect();
    // The precision rule's own sentences (target, what it reached, rounds still needed);
    // none for a comparison run to a fixed number of rounds.
    let precision = &view.judgement.precision;
    match precision.is_empty() {
        false => out.push_str(&esc(&precision.join(" "))),
        true if seen.is_empty() => out.push_str("no primary verdict states what it could see."),
        true => {
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
        let key = |v: &MetricVerdict| min_detectable(v).unwrap_or(f64::INFINITY);
        key(a).total_cmp(&key(b))
    });
    if let Some(v) = least {
        out.push_str(&format!(
            "<p><strong>Least sensitive:</strong> {} on {}, {}: {}.</p>\n",
            metric_link(view, &v.metric.name, &v.candidate, &v.workload, known),
            esc(&v.workload),
            esc(&v.candidate),
            match min_detectable(v) {
                Some(m) => format!("a change under ±{:.1}% could go unseen", m * 100.0),
                None => "it could not flag a change of any size".to_string(),
            }
        ));
    }
    out.push_str("</section>\n");
    out
}

fn verdict_table(
    view: &StoredComparison,
    rows: &[&MetricVerdict],
    known: &BTreeSet<String>,
) -> String {
    // The estimate the test judged, named as the CLI's table names it (in a line above
    // the table: a header that long would widen it past a laptop's screen).
    let named = rows.first().map(|v| {
        format!(
            "<p class=\"hint\">Change: the {} the test judged, with its 95% interval \
             (as <code>dyno compare report</code> shows it).</p>\n",
            dyno_judge::verdict::estimate_name(&v.comparison.test)
        )
    });
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
        let class = match v.verdict() {
            Verdict::Regression => "status-failed",
            Verdict::Improvement => "improvement",
            Verdict::NoSignificantChange => "",
        };
        let ratio = v.change();
        let rounds = v
            .power
            .as_ref()
            .map_or(v.candidate_values.len(), |p| p.rounds);
        t.row(vec![
            esc(&v.workload),
            esc(&v.candidate),
            metric_link(view, &v.metric.name, &v.candidate, &v.workload, known),
            f(v.baseline_median()),
            f(v.candidate_median()),
            if ratio.estimate.is_finite() {
                format!(
                    "{} ({} .. {})",
                    change(ratio.estimate),
                    change(ratio.low),
                    change(ratio.high)
                )
            } else {
                "n/a (baseline 0)".to_string()
            },
            esc(&dyno_report::format_p_value(v.comparison.p_adjusted)),
            format!("<span class=\"{class}\">{}</span>", finding(v)),
            esc(&mdc(v)),
            rounds.to_string(),
        ]);
    }
    if t.is_empty() {
        return "<p class=\"note\">None.</p>\n".into();
    }
    named.unwrap_or_default() + &t.render()
}

/// The metric's name, linked to the candidate's history of it on this workload when the
/// store has one (derived figures such as `cpu_s_per_tx` may exist only in the verdicts).
fn metric_link(
    view: &StoredComparison,
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
                Some(&view.loaded.host.hostname)
                    .filter(|h| !h.is_empty())
                    .map(|h| h.as_str())
            ),
            ("subject", Some(subject)),
            ("workload", Some(workload)),
        ])
    );
    link(&href, metric)
}
