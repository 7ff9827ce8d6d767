//! The front page: stored runs, newest first, with a filter form (a plain GET form, so
//! it works without JavaScript and every filtered view has its own URL). A comparison's
//! executions are one row with its outcome.

use super::comparison::outcome_cell;
use super::stored::{comparisons, Comparison};
use super::{given, status};
use crate::markup::{answer_list, esc, link, page, query, url_encode, when, HtmlTable};
use crate::state::PageError;
use dyno_store::{RunFilter, RunId, RunSummary, Store};
use serde::Deserialize;

/// How many runs the page lists unless `limit` says otherwise.
const DEFAULT_LIMIT: usize = 200;

/// The front page's query parameters (all optional, blank means unset).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct RunsQuery {
    command: Option<String>,
    host: Option<String>,
    subject: Option<String>,
    limit: Option<String>,
}

/// The run list.
pub(crate) fn render(store: &Store, q: &RunsQuery) -> Result<String, PageError> {
    let limit = match given(&q.limit) {
        None => DEFAULT_LIMIT,
        Some(l) => l.parse::<usize>().ok().filter(|l| *l > 0).ok_or_else(|| {
            PageError::BadRequest(format!("limit {l:?} is not a positive number"))
        })?,
    };
    let filter = RunFilter {
        command: given(&q.command).map(String::from),
        host: given(&q.host).map(String::from),
        subject: given(&q.subject).map(String::from),
        limit: Some(limit),
        ..RunFilter::default()
    };
    let runs = store.list_runs(&filter)?;
    let mut table = HtmlTable::new(
        "runs",
        &[
            ("Run", true),
            ("Command", false),
            ("Subject", false),
            ("Host", false),
            ("Started", false),
            ("Status", false),
            ("Samples", true),
        ],
    )
    .secondary(&["Samples"]);
    // A comparison's executions are one row: the row of its newest run listed, with the
    // comparison's outcome; its other runs are left out of the list.
    let comparisons = comparisons(store)?;
    let of_comparison = |id: RunId| comparisons.iter().find(|c| c.runs.contains(&id));
    let mut grouped = std::collections::BTreeSet::new();
    let mut rows = 0;
    for r in &runs {
        if let Some(c) = of_comparison(r.id).filter(|_| r.command == "compare") {
            if grouped.insert(c.id.clone()) {
                table.row(comparison_row(store, c, r, &runs));
                rows += 1;
            }
            continue;
        }
        rows += 1;
        table.row(vec![
            link(&format!("/runs/{}", r.id), &r.id.to_string()),
            link(
                &format!("/{}", query(&[("command", Some(&r.command))])),
                &r.command,
            ),
            match r.subject.attributes.get("bisect") {
                // A bisection's step: its subject links to the bisection's page.
                Some(id) if r.command == "bisect" => {
                    link(&format!("/bisect/{}", url_encode(id)), &r.subject.name)
                }
                _ => esc(&r.subject.name),
            },
            link(
                &format!("/{}", query(&[("host", Some(&r.hostname))])),
                &r.hostname,
            ),
            when(r.started_at),
            status(r.status),
            r.samples.to_string(),
        ]);
    }
    // The commands this store has runs of (`pipeline bench`, `cluster run`...), for the form.
    let mut commands: Vec<String> = store
        .list_runs(&RunFilter::default())?
        .into_iter()
        .map(|r| r.command)
        .collect();
    commands.sort();
    commands.dedup();
    let mut body = filter_form(q, limit, &commands);
    body.push_str(&format!(
        "<p class=\"hint\">{} run{} in {}{}{}.</p>\n",
        runs.len(),
        if runs.len() == 1 { "" } else { "s" },
        esc(&store.path().display().to_string()),
        match grouped.len() {
            0 => String::new(),
            n => format!(
                " ({rows} rows: the executions of {n} comparison{} in one row each)",
                if n == 1 { "" } else { "s" }
            ),
        },
        if runs.len() == limit {
            format!(" (the newest {limit}; raise the limit to see more)")
        } else {
            String::new()
        }
    ));
    if table.is_empty() {
        body.push_str(
            "<p class=\"note\">No runs match. Every dyno command stores its runs here: \
             try <code>dyno machine</code>, then reload.</p>\n",
        );
    } else {
        body.push_str(&answer_list(&table.render()));
    }
    Ok(page("Runs", "/", &body))
}

/// The one row of comparison `c` (`newest` its newest run in the list): its runs, a link
/// to its page with its subjects, and its outcome as `dyno compare report` judges it.
fn comparison_row(
    store: &Store,
    c: &Comparison,
    newest: &RunSummary,
    listed: &[RunSummary],
) -> Vec<String> {
    let (first, last) = (c.first(), c.last());
    let outcome = outcome_cell(store, c);
    let samples: u64 = listed
        .iter()
        .filter(|r| c.runs.contains(&r.id))
        .map(|r| r.samples)
        .sum();
    vec![
        format!(
            "{}..{}",
            link(&format!("/runs/{first}"), &first.to_string()),
            link(&format!("/runs/{last}"), &last.to_string())
        ),
        link(
            &format!("/{}", query(&[("command", Some(&newest.command))])),
            &newest.command,
        ),
        link(
            &c.href(),
            &format!("comparison {}: {}", c.id, c.subjects.join(" vs ")),
        ),
        link(
            &format!("/{}", query(&[("host", Some(&newest.hostname))])),
            &newest.hostname,
        ),
        when(c.started_at),
        outcome,
        samples.to_string(),
    ]
}

fn filter_form(q: &RunsQuery, limit: usize, commands: &[String]) -> String {
    let value = |v: &Option<String>| esc(given(v).unwrap_or_default());
    let command = given(&q.command).unwrap_or_default();
    let mut options = String::from("<option value=\"\">any</option>");
    for c in commands {
        let sel = if c == command { " selected" } else { "" };
        options.push_str(&format!("<option{sel}>{}</option>", esc(c)));
    }
    format!(
        "<form class=\"filter\" method=\"get\" action=\"/\">\
         <label>command<select name=\"command\">{options}</select></label>\
         <label>host contains<input name=\"host\" value=\"{}\"></label>\
         <label>subject contains<input name=\"subject\" value=\"{}\"></label>\
         <label>at most<input name=\"limit\" type=\"number\" min=\"1\" value=\"{limit}\"></label>\
         <button type=\"submit\">Filter</button></form>\n",
        value(&q.host),
        value(&q.subject),
    )
}
