//! What a bisection found, for showing: the culprit commit(s) with the change each
//! causes and its interval, every step with its verdict and rounds, the revisions that
//! did not build, the builds and minutes spent. Built from the stored steps alone (the
//! search replayed), so `dyno compare bisect` and `dyno serve` show the same report; as
//! text here, as JSON (`dyno.compare.bisect/1`) with [`BisectReport::json`].

use crate::driver::{confirmed, replay};
use crate::record::{BisectMeta, Confirmed, Likeness, StepKind, StepOutcome, StepRecord, Stored};
use crate::search::Finding;
use crate::spec::short;
use dyno_build::CommitInfo;
use serde::Serialize;

/// A commit that causes (part of) the change.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Culprit {
    /// The commit.
    pub commit: CommitInfo,
    /// Its parent on the walked line (what it was compared with).
    pub parent: String,
    /// The change it causes: `cost / parent's cost - 1` (0.1 = 10% more).
    pub change: f64,
    /// Its 95% interval.
    pub interval: (f64, f64),
    /// Its share of the confirmed change (1: all of it).
    pub share: f64,
}

/// The confirmed change between good and bad, as the report states it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConfirmedChange {
    /// The workload it was measured under.
    pub workload: String,
    /// The metric every step was decided on.
    pub metric: String,
    /// Bad against good: `bad / good - 1`.
    pub change: f64,
    /// Its 95% interval.
    pub interval: (f64, f64),
    /// The mean log ratio (what the sequential tests use as bad's level).
    pub log_change: f64,
    /// The per-round sd of the log ratios (every step's prior noise).
    pub sd: f64,
}

impl From<&Confirmed> for ConfirmedChange {
    fn from(c: &Confirmed) -> Self {
        ConfirmedChange {
            workload: c.workload.clone(),
            metric: c.metric.clone(),
            change: pct(c.change),
            interval: (pct(c.interval.0), pct(c.interval.1)),
            log_change: c.change,
            sd: c.noise_variance.sqrt(),
        }
    }
}

/// One step as the report lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepRow {
    /// Its number.
    pub number: usize,
    /// `confirmation`, `test` or `culprit`.
    pub kind: &'static str,
    /// The revision it measured (short hash; `bad` for the confirmation).
    pub revision: String,
    /// The revision it was measured against.
    pub against: String,
    /// Its verdict in words (`like good`, `between (share 48%)`, `does not build`...).
    pub verdict: String,
    /// Complete rounds.
    pub rounds: u32,
    /// The measured change against the baseline (`cost / baseline - 1`), when measured.
    pub change: Option<f64>,
    /// Seconds measuring and building.
    pub seconds: f64,
    /// The step's stored comparison, when it measured.
    pub comparison: Option<String>,
}

/// A bisection's report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BisectReport {
    /// Its id.
    pub id: String,
    /// The comparison file.
    pub file: String,
    /// The subject of the file.
    pub subject: String,
    /// Good.
    pub good: String,
    /// Bad.
    pub bad: String,
    /// Commits between good and bad (bad included).
    pub commits: usize,
    /// The confirmed change, when there was one.
    pub confirmed: Option<ConfirmedChange>,
    /// No change beyond the precision: how the confirmation stopped and what it measured.
    pub no_change: Option<(String, Vec<String>)>,
    /// The precision.
    pub precision: f64,
    /// The culprits, in commit order.
    pub culprits: Vec<Culprit>,
    /// Where the change lies behind commits that do not build: `(after, up to)`.
    pub ranges: Vec<(String, String)>,
    /// Commits the search pointed at that their parent did not confirm.
    pub unconfirmed: Vec<String>,
    /// The commits that did not build or could not be run.
    pub skipped: Vec<String>,
    /// Every step.
    pub steps: Vec<StepRow>,
    /// Distinct revisions tested (good and bad not counted).
    pub tested: usize,
    /// Builds run (not taken from the cache).
    pub builds: u32,
    /// Minutes spent, measuring and building.
    pub minutes: f64,
    /// The search ended.
    pub finished: bool,
}

fn pct(log: f64) -> f64 {
    log.exp() - 1.0
}

/// A step's verdict in words, as the report's step list says it.
pub fn verdict_text(s: &StepRecord) -> String {
    match &s.outcome {
        StepOutcome::Changed(c) => {
            format!("a change of {:+.1}% in {}", pct(c.change) * 100.0, c.metric)
        }
        StepOutcome::NoChange { why, .. } => format!("no change beyond the precision ({why})"),
        StepOutcome::Unbuildable { .. } => "does not build: skipped".into(),
        StepOutcome::Untestable { why } => format!("could not be run: skipped ({why})"),
        StepOutcome::Decided {
            likeness,
            share,
            capped,
            ..
        } => {
            let culprit = matches!(s.kind, StepKind::Culprit { .. });
            let text = match (likeness, culprit) {
                (Likeness::Low, false) => "like good's side".to_string(),
                (Likeness::High, false) => "like bad's side".to_string(),
                (Likeness::Between, false) => format!("between (share {:.0}%)", share * 100.0),
                (Likeness::Low, true) => "no change from its parent: not confirmed".to_string(),
                (Likeness::High, true) => "the change is there: confirmed".to_string(),
                (Likeness::Between, true) => {
                    format!(
                        "part of the change is there: confirmed ({:.0}%)",
                        share * 100.0
                    )
                }
            };
            if *capped {
                format!("{text}, undecided after the last round")
            } else {
                text
            }
        }
        StepOutcome::Finished => "done".into(),
    }
}

fn row(meta: &BisectMeta, s: &StepRecord) -> Option<StepRow> {
    let name = |i: usize| {
        if i == 0 {
            "good".to_string()
        } else if i + 1 == meta.commits.len() {
            "bad".to_string()
        } else {
            short(&meta.commits[i]).to_string()
        }
    };
    let (kind, revision, against) = match &s.kind {
        StepKind::Confirmation => ("confirmation", "bad".into(), "good".into()),
        StepKind::Test { index, .. } => ("test", name(*index), "good".into()),
        StepKind::Culprit { parent, index, .. } => ("culprit", name(*index), name(*parent)),
        StepKind::Done => return None,
    };
    let change = match &s.outcome {
        StepOutcome::Changed(c) => Some(pct(c.change)),
        StepOutcome::Decided { mean, .. } => Some(pct(*mean)),
        _ => None,
    };
    Some(StepRow {
        number: s.number,
        kind,
        revision,
        against,
        verdict: verdict_text(s),
        rounds: s.rounds,
        change,
        seconds: s.seconds + s.build_seconds,
        comparison: s.comparison.clone(),
    })
}

/// The commit described by some step, else its hash alone.
fn info(steps: &[StepRecord], hash: &str) -> CommitInfo {
    steps
        .iter()
        .flat_map(|s| &s.commits)
        .find(|c| c.hash == hash)
        .cloned()
        .unwrap_or(CommitInfo {
            hash: hash.to_string(),
            subject: String::new(),
            author: String::new(),
            date: String::new(),
        })
}

impl BisectReport {
    /// The report of a stored bisection.
    pub fn of(stored: &Stored) -> BisectReport {
        let (meta, steps) = (&stored.meta, &stored.steps);
        let mut report = BisectReport {
            id: meta.id.clone(),
            file: meta.file_given.clone(),
            subject: meta.subject.clone(),
            good: format!("{} ({})", meta.good.rev, short(&meta.good.commit)),
            bad: format!("{} ({})", meta.bad.rev, short(&meta.bad.commit)),
            commits: meta.commits.len().saturating_sub(1),
            confirmed: confirmed(steps).map(ConfirmedChange::from),
            no_change: None,
            precision: meta.precision,
            culprits: Vec::new(),
            ranges: Vec::new(),
            unconfirmed: Vec::new(),
            skipped: Vec::new(),
            steps: steps.iter().filter_map(|s| row(meta, s)).collect(),
            tested: 0,
            builds: steps.iter().map(|s| s.builds).sum(),
            minutes: steps
                .iter()
                .map(|s| s.seconds + s.build_seconds)
                .sum::<f64>()
                / 60.0,
            finished: stored.finished(),
        };
        report.no_change = steps.iter().find_map(|s| match &s.outcome {
            StepOutcome::NoChange { why, measured } => Some((why.clone(), measured.clone())),
            _ => None,
        });
        let Some((search, _)) = replay(meta, steps) else {
            return report;
        };
        let hash = |i: usize| meta.commits[i].clone();
        report.tested = search.tested().len();
        report.skipped = search.skipped().iter().map(|&i| hash(i)).collect();
        let mut culprits = Vec::new();
        for f in search.findings() {
            match f {
                Finding::Culprit {
                    index,
                    parent,
                    change,
                    interval,
                    share,
                } => culprits.push((
                    *index,
                    Culprit {
                        commit: info(steps, &hash(*index)),
                        parent: hash(*parent),
                        change: pct(*change),
                        interval: (pct(interval.0), pct(interval.1)),
                        share: *share,
                    },
                )),
                Finding::Unconfirmed { index, .. } => report.unconfirmed.push(hash(*index)),
                Finding::Range { low, high, .. } => report.ranges.push((hash(*low), hash(*high))),
            }
        }
        culprits.sort_by_key(|c| c.0);
        report.culprits = culprits.into_iter().map(|c| c.1).collect();
        report
    }

    /// The report as text.
    pub fn text(&self) -> String {
        let mut out = Vec::new();
        out.push(format!(
            "bisect {} of `{}` ({}): good {}, bad {}, {} commits",
            self.id, self.subject, self.file, self.good, self.bad, self.commits
        ));
        if let Some((why, measured)) = &self.no_change {
            out.push(format!(
                "no change beyond {:.1}% between good and bad: {why}; nothing to bisect",
                self.precision * 100.0
            ));
            out.extend(measured.iter().map(|m| format!("  {m}")));
        }
        if let Some(c) = &self.confirmed {
            out.push(format!(
                "confirmed: {} under {} is {:+.1}% at bad (95% CI {:+.1}% .. {:+.1}%; per-round sd {:.1}%)",
                c.metric,
                c.workload,
                c.change * 100.0,
                c.interval.0 * 100.0,
                c.interval.1 * 100.0,
                c.sd * 100.0
            ));
        }
        for c in &self.culprits {
            out.push(format!(
                "culprit: {} {} ({}, {}): {:+.1}% (95% CI {:+.1}% .. {:+.1}%), {:.0}% of the change",
                short(&c.commit.hash),
                c.commit.subject,
                c.commit.author,
                c.commit.date,
                c.change * 100.0,
                c.interval.0 * 100.0,
                c.interval.1 * 100.0,
                c.share * 100.0
            ));
        }
        for (low, high) in &self.ranges {
            out.push(format!(
                "the change lies after {} and up to {}: the commits between do not build",
                short(low),
                short(high)
            ));
        }
        for u in &self.unconfirmed {
            out.push(format!(
                "not confirmed: {} measured like its parent in a direct comparison",
                short(u)
            ));
        }
        if self.confirmed.is_some() && self.culprits.is_empty() && self.ranges.is_empty() {
            out.push("no single commit holds a change beyond half the precision".into());
        }
        if !self.skipped.is_empty() {
            let s: Vec<&str> = self.skipped.iter().map(|h| short(h)).collect();
            out.push(format!("skipped (do not build or run): {}", s.join(", ")));
        }
        out.push("steps:".into());
        for s in &self.steps {
            let change = s
                .change
                .map(|c| format!(", {:+.1}%", c * 100.0))
                .unwrap_or_default();
            out.push(format!(
                "  {:>2}. {} {} against {}: {} ({} rounds{change}, {:.0} s)",
                s.number, s.kind, s.revision, s.against, s.verdict, s.rounds, s.seconds
            ));
        }
        out.push(format!(
            "{} revisions tested, {} builds, {:.1} minutes{}",
            self.tested,
            self.builds,
            self.minutes,
            if self.finished { "" } else { " (not finished)" }
        ));
        out.join("\n") + "\n"
    }

    /// The report as JSON (`"schema": "dyno.compare.bisect/1"`).
    pub fn json(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self).unwrap_or_default();
        if let Some(o) = v.as_object_mut() {
            o.insert("schema".into(), "dyno.compare.bisect/1".into());
        }
        v
    }
}
