//! One bisection (`/bisect/{id}`): the culprit commit(s) with the change each causes,
//! every step with its verdict and rounds (each linking to its stored comparison), the
//! revisions skipped, the builds and minutes.
//!
//! The report is `dyno compare bisect`'s own (its JSON, `dyno.compare.bisect/1`, read
//! into [`BisectView`]), plugged in through
//! [`FullReport::bisect`](crate::FullReport::bisect): the search it replays lives in
//! dyno-bisect, which this crate does not import.

use crate::markup::{esc, link, page, query, HtmlTable};
use crate::state::{AppState, PageError};
use dyno_store::Store;
use serde::Deserialize;

/// A commit as the report names it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct CommitView {
    /// Full hash.
    pub hash: String,
    /// Subject line.
    pub subject: String,
    /// `Name <email>`.
    pub author: String,
    /// Author date.
    pub date: String,
}

/// A culprit.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct CulpritView {
    /// The commit.
    pub commit: CommitView,
    /// Its parent's hash.
    pub parent: String,
    /// The change it causes (0.1 = 10% more).
    pub change: f64,
    /// Its 95% interval.
    pub interval: (f64, f64),
    /// Its share of the confirmed change.
    pub share: f64,
}

/// The confirmed change between good and bad.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ConfirmedView {
    /// The workload.
    pub workload: String,
    /// The metric every step was decided on.
    pub metric: String,
    /// Bad against good (0.1 = 10% more).
    pub change: f64,
    /// Its 95% interval.
    pub interval: (f64, f64),
}

/// One step.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct StepView {
    /// Its number.
    pub number: usize,
    /// `confirmation`, `test` or `culprit`.
    pub kind: String,
    /// The revision measured.
    pub revision: String,
    /// What it was measured against.
    pub against: String,
    /// The verdict in words.
    pub verdict: String,
    /// Complete rounds.
    pub rounds: u32,
    /// The change measured against the baseline.
    pub change: Option<f64>,
    /// Seconds measuring and building.
    pub seconds: f64,
    /// Its stored comparison.
    pub comparison: Option<String>,
}

/// A bisection's report, as `dyno compare bisect --format json` writes it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct BisectView {
    /// Its id.
    pub id: String,
    /// The comparison file.
    pub file: String,
    /// The subject bisected.
    pub subject: String,
    /// Good, as given and short hash.
    pub good: String,
    /// Bad.
    pub bad: String,
    /// Commits from good to bad.
    pub commits: usize,
    /// The precision.
    pub precision: f64,
    /// The confirmed change.
    pub confirmed: Option<ConfirmedView>,
    /// No change beyond the precision: why and what was measured.
    pub no_change: Option<(String, Vec<String>)>,
    /// The culprits.
    pub culprits: Vec<CulpritView>,
    /// Changes behind commits that do not build: (after, up to).
    pub ranges: Vec<(String, String)>,
    /// Commits pointed at but not confirmed.
    pub unconfirmed: Vec<String>,
    /// Commits skipped.
    pub skipped: Vec<String>,
    /// Every step.
    pub steps: Vec<StepView>,
    /// Revisions tested.
    pub tested: usize,
    /// Builds run.
    pub builds: u32,
    /// Minutes spent.
    pub minutes: f64,
    /// The search ended.
    pub finished: bool,
}

fn pct(x: f64) -> String {
    format!("{:+.1}%", x * 100.0)
}

fn short(hash: &str) -> &str {
    &hash[..hash.len().min(8)]
}

fn culprits(view: &BisectView) -> String {
    let mut t = HtmlTable::new(
        "culprits",
        &[
            ("Commit", false),
            ("Subject", false),
            ("Author", false),
            ("Date", false),
            ("Change", true),
            ("95% CI", true),
            ("Share", true),
        ],
    );
    for c in &view.culprits {
        t.row(vec![
            format!("<code>{}</code>", esc(short(&c.commit.hash))),
            esc(&c.commit.subject),
            esc(&c.commit.author),
            esc(&c.commit.date),
            pct(c.change),
            format!("{} .. {}", pct(c.interval.0), pct(c.interval.1)),
            format!("{:.0}%", c.share * 100.0),
        ]);
    }
    t.render()
}

fn steps(view: &BisectView) -> String {
    let mut t = HtmlTable::new(
        "steps",
        &[
            ("Step", true),
            ("Kind", false),
            ("Revision", false),
            ("Against", false),
            ("Verdict", false),
            ("Rounds", true),
            ("Change", true),
            ("Seconds", true),
        ],
    );
    for s in &view.steps {
        let revision = match &s.comparison {
            Some(id) => link(
                &format!("/compare{}", query(&[("id", Some(id))])),
                &s.revision,
            ),
            None => esc(&s.revision),
        };
        t.row(vec![
            s.number.to_string(),
            esc(&s.kind),
            revision,
            esc(&s.against),
            esc(&s.verdict),
            s.rounds.to_string(),
            s.change.map(pct).unwrap_or_default(),
            format!("{:.0}", s.seconds),
        ]);
    }
    t.render()
}

/// The page of one bisection.
pub(crate) fn html(view: &BisectView) -> String {
    let mut body = format!(
        "<p>Bisect of <code>{}</code> ({}): good {}, bad {}, {} commits.</p>\n",
        esc(&view.subject),
        esc(&view.file),
        esc(&view.good),
        esc(&view.bad),
        view.commits
    );
    if let Some((why, measured)) = &view.no_change {
        body.push_str(&format!(
            "<p class=\"note\">No change beyond {:.1}% between good and bad ({}): nothing to bisect.</p>\n",
            view.precision * 100.0,
            esc(why)
        ));
        if !measured.is_empty() {
            let items: Vec<String> = measured
                .iter()
                .map(|m| format!("<li>{}</li>", esc(m)))
                .collect();
            body.push_str(&format!("<ul>{}</ul>\n", items.concat()));
        }
    }
    if let Some(c) = &view.confirmed {
        body.push_str(&format!(
            "<p>Confirmed: <code>{}</code> under {} is {} at bad (95% CI {} .. {}).</p>\n",
            esc(&c.metric),
            esc(&c.workload),
            pct(c.change),
            pct(c.interval.0),
            pct(c.interval.1)
        ));
    }
    if !view.culprits.is_empty() {
        body.push_str("<h2>Culprits</h2>\n");
        body.push_str(&culprits(view));
    } else if view.confirmed.is_some() && view.finished {
        body.push_str(
            "<p class=\"note\">No single commit holds a change beyond half the precision.</p>\n",
        );
    }
    for (low, high) in &view.ranges {
        body.push_str(&format!(
            "<p class=\"note\">The change lies after <code>{}</code> and up to <code>{}</code>: the commits between do not build.</p>\n",
            esc(short(low)),
            esc(short(high))
        ));
    }
    let listed = |what: &str, hashes: &[String]| {
        let s: Vec<String> = hashes
            .iter()
            .map(|h| format!("<code>{}</code>", esc(short(h))))
            .collect();
        format!("<p>{what}: {}.</p>\n", s.join(", "))
    };
    if !view.unconfirmed.is_empty() {
        body.push_str(&listed(
            "Not confirmed against their parent",
            &view.unconfirmed,
        ));
    }
    if !view.skipped.is_empty() {
        body.push_str(&listed("Skipped (do not build or run)", &view.skipped));
    }
    body.push_str("<h2>Steps</h2>\n");
    body.push_str(&steps(view));
    body.push_str(&format!(
        "<p class=\"hint\">{} revisions tested, {} builds, {:.1} minutes{}.</p>\n",
        view.tested,
        view.builds,
        view.minutes,
        if view.finished {
            ""
        } else {
            "; not finished: the same command continues it"
        }
    ));
    page(&format!("Bisect {}", view.id), "/", &body)
}

/// `/bisect/{id}`.
pub(crate) fn render(state: &AppState, store: &Store, id: &str) -> Result<String, PageError> {
    let missing = || PageError::NotFound(format!("There is no bisection {id:?} in this store."));
    let reports = state.reports.as_ref().ok_or_else(missing)?;
    match reports.bisect(store, id) {
        Ok(Some(view)) => Ok(html(&view)),
        Ok(None) => Err(missing()),
        Err(e) => Err(PageError::NotFound(format!(
            "The bisection {id:?} cannot be shown: {e}."
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_names_the_culprit_and_every_step() {
        let json = serde_json::json!({
            "schema": "dyno.compare.bisect/1",
            "id": "bisect-1", "file": "cmp.toml", "subject": "node<x>",
            "good": "c0 (aaaaaaaa)", "bad": "c63 (bbbbbbbb)", "commits": 63, "precision": 0.05,
            "confirmed": {"workload": "paced", "metric": "cpu_s_per_unit", "change": 0.1,
                          "interval": [0.08, 0.12], "log_change": 0.095, "sd": 0.02},
            "no_change": null,
            "culprits": [{"commit": {"hash": "0123456789abcdef", "subject": "slower <loop>",
                          "author": "A <a@x>", "date": "2026-11-25"}, "parent": "ff",
                          "change": 0.1, "interval": [0.07, 0.13], "share": 1.0}],
            "ranges": [], "unconfirmed": [], "skipped": ["cccccccccc"],
            "steps": [{"number": 1, "kind": "confirmation", "revision": "bad", "against": "good",
                       "verdict": "a change", "rounds": 6, "change": 0.1, "seconds": 30.0,
                       "comparison": "cmp-1"}],
            "tested": 6, "builds": 8, "minutes": 4.5, "finished": true
        });
        let view: BisectView = serde_json::from_value(json).unwrap();
        let html = html(&view);
        assert!(html.contains("<code>01234567</code>"), "{html}");
        assert!(html.contains("slower &lt;loop&gt;"), "escaped");
        assert!(html.contains("node&lt;x&gt;"));
        assert!(html.contains("+10.0%"));
        assert!(html.contains("href=\"/compare?id=cmp-1\""));
        assert!(html.contains("<code>cccccccc</code>"));
        assert!(html.contains("6 revisions tested, 8 builds, 4.5 minutes."));
    }
}
