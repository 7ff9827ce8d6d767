//! Comparisons: every `dyno compare` comparison in the store (its runs share a
//! comparison id in their settings), each with what it found and a link to its page.
//!
//! The verdicts are `dyno compare`'s, plugged in through
//! [`FullReport::comparison`](crate::FullReport::comparison): judging lives in
//! dyno-compare, which this crate does not import.

use super::comparison::{judged, outcome, outcome_class};
use super::when;
use crate::markup::{esc, link, page, query, HtmlTable};
use crate::state::{AppState, PageError};
use dyno_store::{RunFilter, RunId, Store};

/// One comparison as the list shows it.
#[derive(Debug, Default)]
pub(crate) struct Comparison {
    pub id: String,
    file: String,
    subjects: Vec<String>,
    workloads: Vec<String>,
    planned: u64,
    runs: Vec<RunId>,
    started_at: f64,
}

impl Comparison {
    /// Its first run.
    pub(crate) fn first(&self) -> RunId {
        self.runs.iter().min().copied().unwrap_or_default()
    }

    /// Its last run.
    pub(crate) fn last(&self) -> RunId {
        self.runs.iter().max().copied().unwrap_or_default()
    }

    /// Its page.
    pub(crate) fn href(&self) -> String {
        format!("/compare{}", query(&[("id", Some(&self.id))]))
    }
}

/// The comparison list.
pub(crate) fn render(state: &AppState, store: &Store) -> Result<String, PageError> {
    let comparisons = comparisons(store)?;
    let mut table = HtmlTable::new(
        "comparisons",
        &[
            ("Comparison", false),
            ("Outcome (primary metrics)", false),
            ("Subjects (baseline first)", false),
            ("Workloads", false),
            ("Executions", true),
            ("Started", false),
            ("Runs", false),
            ("File", false),
        ],
    );
    for c in &comparisons {
        let (first, last) = (c.first(), c.last());
        // A comparison that cannot be judged says why in its row; the list stays.
        let found = match judged(state, store, c) {
            Ok(Some(view)) => format!(
                "<span class=\"{}\">{}</span>",
                outcome_class(&view),
                esc(&outcome(&view))
            ),
            Ok(None) => link(&format!("/runs/{first}/report"), "verdicts"),
            Err(e) => format!("<span class=\"down\">{}</span>", esc(&e.to_string())),
        };
        table.row(vec![
            link(&c.href(), &c.id),
            found,
            esc(&c.subjects.join(", ")),
            esc(&c.workloads.join(", ")),
            format!("{} of {}", c.runs.len(), c.planned),
            esc(&when(c.started_at)),
            format!(
                "{}..{}",
                link(&format!("/runs/{first}"), &first.to_string()),
                link(&format!("/runs/{last}"), &last.to_string())
            ),
            esc(&c.file),
        ]);
    }
    let body = if table.is_empty() {
        "<p class=\"note\">No comparison is stored: <code>dyno compare run FILE</code> makes \
         one.</p>\n"
            .to_string()
    } else {
        format!(
            "<p class=\"hint\">Each comparison is judged from its stored runs, as \
             <code>dyno compare report</code> judges it; the outcome counts its primary \
             metrics' verdicts.</p>\n{}",
            table.render()
        )
    };
    Ok(page("Comparisons", "/compare", &body))
}

/// Every comparison in the store, newest first, from its runs' settings.
pub(crate) fn comparisons(store: &Store) -> Result<Vec<Comparison>, PageError> {
    let filter = RunFilter {
        command: Some("compare".into()),
        ..RunFilter::default()
    };
    let mut comparisons: Vec<Comparison> = Vec::new();
    for s in store.list_runs(&filter)? {
        let run = store.run(s.id)?;
        let meta = &run.info.settings["comparison"];
        let Some(id) = meta["id"].as_str() else {
            continue;
        };
        let names = |k: &str| -> Vec<String> {
            meta[k]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default()
        };
        let i = match comparisons.iter().position(|c| c.id == id) {
            Some(i) => i,
            None => {
                let subjects = names("subjects");
                let workloads = names("workloads");
                let rounds = meta["rounds"].as_u64().unwrap_or(0);
                comparisons.push(Comparison {
                    id: id.to_string(),
                    file: meta["file"].as_str().unwrap_or_default().to_string(),
                    planned: rounds * (subjects.len() * workloads.len()) as u64,
                    subjects,
                    workloads,
                    started_at: s.started_at,
                    ..Comparison::default()
                });
                comparisons.len() - 1
            }
        };
        let c = &mut comparisons[i];
        c.runs.push(s.id);
        c.started_at = c.started_at.min(s.started_at);
    }
    Ok(comparisons)
}
