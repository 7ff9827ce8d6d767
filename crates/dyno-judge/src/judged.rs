//! A comparison judged for showing: the verdicts under what a command asks (its test,
//! primary metrics, rounds), the parameters the report lists, and the HTML report.
//!
//! `dyno compare run` judges the executions its session just made, `dyno compare report`
//! a stored comparison, `dyno serve` a stored comparison's HTML report: all three judge
//! here, so a served report is the one `dyno compare report RUN --html` writes.
//!
//! ```
//! use dyno_judge::judged::{JudgeRequest, Measured};
//! use dyno_judge::{ComparisonMeta, Workload};
//! use dyno_judge::synthetic::Synthetic;
//!
//! let workloads = [Workload::new("value", 1000.0, 0.0, 10.0)];
//! let executions = Synthetic::new(7).comparison(&["v1", "v2"], &workloads, 4);
//! let meta = ComparisonMeta::of(&["v1", "v2"], &workloads, 4);
//! let measured = Measured {
//!     meta: &meta,
//!     workloads: &workloads,
//!     host: &Default::default(),
//!     executions: &executions,
//!     elapsed_s: 0.0,
//! };
//! let judged = measured.judge(&JudgeRequest::default(), Vec::new()).unwrap();
//! assert_eq!(judged.parameters, [("test".to_string(), "paired".to_string())]);
//! assert!(judged.html().starts_with("<!DOCTYPE html>"));
//! ```

use crate::comparison::{ComparisonMeta, TestKind, Workload};
use crate::record::{self, LoadError, Loaded};
use crate::report::{self, ReportInput};
use crate::trials::{study, Study, TrialError, TrialOptions};
use crate::verdict::{judge_with, pick_candidates, unknown_primary};
use crate::verdict::{JudgeOptions, Judgement, Refused};
use dyno_exec::Execution;
use dyno_model::Host;
use dyno_stats::ComparisonSettings;
use dyno_store::{RunId, Store};
use std::ops::Range;

/// A comparison's executions and what they were measured with: what judging needs.
#[derive(Debug, Clone, Copy)]
pub struct Measured<'a> {
    /// The comparison.
    pub meta: &'a ComparisonMeta,
    /// Its workloads as run.
    pub workloads: &'a [Workload],
    /// The host it ran on.
    pub host: &'a Host,
    /// Its executions, in the order they ran.
    pub executions: &'a [Execution],
    /// Seconds the comparison has run so far (over every resumption), for a precision
    /// target's prediction of the rounds still needed.
    pub elapsed_s: f64,
}

/// What a command asks of the judging, beyond what the comparison was stored with.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JudgeRequest {
    /// The test (`--test`); `None`: the comparison file's `test`, else paired.
    pub test: Option<TestKind>,
    /// The primary metrics (`--primary`); empty: the comparison file's `primary`.
    pub primary: Vec<String>,
    /// Only these rounds (`--rounds A..B`, zero-based, end excluded); `None`: all.
    pub rounds: Option<Range<u32>>,
}

/// A comparison judged: its verdicts and the parameters its report lists.
#[derive(Debug)]
pub struct Judged<'a> {
    /// What was judged.
    pub measured: Measured<'a>,
    /// The verdicts.
    pub judgement: Judgement,
    /// The report's parameters: the caller's, then the test, the rounds judged and the
    /// primary metrics.
    pub parameters: Vec<(String, String)>,
}

/// Why a comparison is not judged: a primary metric that names nothing the executions
/// measured. (A unit of work that names nothing is a note of the judgement, not a
/// refusal: its costs are not judged, the other metrics still are.)
#[derive(Debug, thiserror::Error)]
pub enum JudgeError {
    /// A primary metric is unknown; `whence` names where it was given.
    #[error("{whence}")]
    Primary {
        /// `--primary`, or `` `primary` of FILE ``.
        whence: String,
        /// What is unknown.
        #[source]
        why: Refused,
    },
}

/// Why a stored comparison's report cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum StoredReportError {
    /// The comparison cannot be loaded.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// It cannot be judged as its comparison file says.
    #[error(transparent)]
    Judge(#[from] JudgeError),
    /// The candidates asked for (`--candidate`) are not among its subjects.
    #[error("--candidate: {0}")]
    Candidates(Refused),
}

/// The primary metrics to judge by: `chosen` (`--primary`) when given, else the
/// comparison file's `primary` (empty: the default family).
pub fn primary_metrics<'a>(chosen: &'a [String], meta: &'a ComparisonMeta) -> &'a [String] {
    if chosen.is_empty() {
        &meta.primary
    } else {
        chosen
    }
}

/// The judging settings a comparison was stored with.
fn settings(meta: &ComparisonMeta) -> ComparisonSettings {
    ComparisonSettings {
        noise_band: meta.noise_band,
        alpha: meta.alpha,
        seed: meta.seed,
        ..ComparisonSettings::default()
    }
}

impl<'a> Measured<'a> {
    /// Judges every candidate against the baseline as `request` asks, with the noise
    /// band, alpha, seed and units of work the comparison was stored with. `parameters`
    /// are the caller's for the report (command line, stored runs...). A primary metric
    /// or a unit of work that no complete execution measured is refused.
    pub fn judge(
        self,
        request: &JudgeRequest,
        mut parameters: Vec<(String, String)>,
    ) -> Result<Judged<'a>, JudgeError> {
        let meta = self.meta;
        let test = request.test.or(meta.test).unwrap_or_default();
        parameters.push(("test".into(), test.name().into()));
        if let Some(r) = &request.rounds {
            parameters.push(("rounds judged".into(), format!("{}..{}", r.start, r.end)));
        }
        let primary = self.primary(request)?;
        if !primary.is_empty() {
            parameters.push(("primary metrics".into(), primary.join(", ")));
        }
        if let Some(seq) = &meta.sequential {
            parameters.push((
                "precision".into(),
                format!(
                    "{:.1}%, at most {} rounds or {} min",
                    seq.precision * 100.0,
                    seq.max_rounds,
                    seq.max_minutes
                ),
            ));
        }
        let options = JudgeOptions {
            test,
            rounds: request.rounds.clone(),
            primary: primary.clone(),
            work: meta.work.clone(),
        };
        let mut judgement = judge_with(self.executions, &meta.subjects, &settings(meta), &options);
        crate::precision::annotate(
            &mut judgement,
            meta,
            self.executions,
            self.workloads,
            &options,
            self.elapsed_s,
        );
        Ok(Judged {
            measured: self,
            judgement,
            parameters,
        })
    }
}

/// Why a stored comparison's power study cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum PowerError {
    /// A primary metric is unknown.
    #[error(transparent)]
    Judge(#[from] JudgeError),
    /// The comparison has too few rounds for one trial.
    #[error(transparent)]
    Trials(#[from] TrialError),
}

impl<'a> Measured<'a> {
    /// What the comparison could have seen: trials of `trial_rounds` rounds judged as
    /// `request` asks (its rounds are ignored: the trials choose theirs), and the noise of
    /// each primary metric ([`crate::trials::study`]).
    pub fn power(self, request: &JudgeRequest, trial_rounds: u32) -> Result<Study, PowerError> {
        let meta = self.meta;
        let primary = self.primary(request)?;
        let options = TrialOptions {
            trial_rounds,
            test: request.test.or(meta.test).unwrap_or_default(),
            primary,
            settings: settings(meta),
        };
        Ok(study(meta, self.executions, self.workloads, &options)?)
    }
}

impl Measured<'_> {
    /// The primary metrics `request` names (else the comparison file's), each refused
    /// unless a complete execution measured it, naming where it was given.
    fn primary(&self, request: &JudgeRequest) -> Result<Vec<String>, JudgeError> {
        let meta = self.meta;
        let primary = primary_metrics(&request.primary, meta).to_vec();
        if !primary.is_empty() {
            unknown_primary(self.executions, &meta.subjects, &primary, &meta.work).map_err(
                |why| JudgeError::Primary {
                    whence: if request.primary.is_empty() {
                        format!("`primary` of {}", meta.file)
                    } else {
                        "--primary".to_string()
                    },
                    why,
                },
            )?;
        }
        Ok(primary)
    }
}

impl Judged<'_> {
    /// The self-contained HTML report.
    pub fn html(&self) -> String {
        let m = &self.measured;
        report::html(&ReportInput {
            meta: m.meta,
            workloads: m.workloads,
            host: m.host,
            executions: m.executions,
            judgement: &self.judgement,
            parameters: self.parameters.clone(),
        })
    }
}

impl Loaded {
    /// The stored comparison, for judging.
    pub fn measured(&self) -> Measured<'_> {
        Measured {
            meta: &self.meta,
            workloads: &self.workloads,
            host: &self.host,
            executions: &self.executions,
            elapsed_s: self.elapsed_s,
        }
    }

    /// The report's parameter naming the stored runs (`first..last`).
    pub fn stored_runs(&self) -> (String, String) {
        let first = self.runs.first().unwrap_or(&0);
        let last = self.runs.last().unwrap_or(&0);
        ("stored runs".into(), format!("{first}..{last}"))
    }

    /// Judges the stored comparison as `dyno compare report` does: narrowed to the
    /// baseline and `candidates` ([`Loaded::narrow_to`]; every candidate when empty), as
    /// `request` asks, its report listing the stored runs and the candidates judged.
    pub fn judge_report(
        &mut self,
        request: &JudgeRequest,
        candidates: &[String],
    ) -> Result<Judged<'_>, StoredReportError> {
        let narrowed = self
            .narrow_to(candidates)
            .map_err(StoredReportError::Candidates)?;
        let parameters = std::iter::once(self.stored_runs())
            .chain(narrowed)
            .collect();
        Ok(self.measured().judge(request, parameters)?)
    }

    /// Narrows the comparison to the baseline and `candidates` (see [`pick_candidates`]):
    /// their executions alone, so Holm's family is their metrics alone. Returns the
    /// report's parameter naming the candidates judged; nothing when `candidates` is empty
    /// (every candidate is judged).
    pub fn narrow_to(
        &mut self,
        candidates: &[String],
    ) -> Result<Option<(String, String)>, Refused> {
        if candidates.is_empty() {
            return Ok(None);
        }
        let subjects = pick_candidates(&self.meta.subjects, candidates)?;
        self.executions.retain(|e| subjects.contains(&e.subject));
        let named = subjects[1..].join(", ");
        self.meta.subjects = subjects;
        Ok(Some(("candidates judged".into(), named)))
    }
}

/// The HTML report of the stored comparison that run `run` belongs to, judged as its
/// comparison file said (its test and primary metrics): what `dyno compare report RUN
/// --html` writes, for `dyno serve`.
pub fn stored_html(store: &Store, run: RunId) -> Result<String, StoredReportError> {
    let loaded = record::load(store, &[run])?;
    let judged = loaded
        .measured()
        .judge(&JudgeRequest::default(), vec![loaded.stored_runs()])?;
    Ok(judged.html())
}

/// A stored comparison with its judgement, owned: what `dyno serve`'s comparison pages
/// show.
#[derive(Debug, Clone)]
pub struct StoredComparison {
    /// The comparison as stored.
    pub loaded: Loaded,
    /// Its verdicts, judged as `dyno compare report` judges it.
    pub judgement: Judgement,
}

impl StoredComparison {
    /// Executions that completed.
    pub fn complete(&self) -> usize {
        self.loaded
            .executions
            .iter()
            .filter(|e| e.outcome == dyno_exec::Outcome::Complete)
            .count()
    }
}

/// The comparison run `run` belongs to, judged as `dyno compare report` judges it (the
/// comparison file's test and primary metrics).
pub fn stored_comparison(store: &Store, run: RunId) -> Result<StoredComparison, StoredReportError> {
    let loaded = record::load(store, &[run])?;
    let judgement = loaded
        .measured()
        .judge(&JudgeRequest::default(), Vec::new())?
        .judgement;
    Ok(StoredComparison { loaded, judgement })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic::Synthetic;
    use std::error::Error as _;

    /// Three subjects, three rounds, stored as if from `cmp.toml`.
    fn outcome() -> Loaded {
        let workloads = vec![Workload::new("value", 1000.0, 0.0, 10.0)];
        let subjects = ["a", "b", "c"];
        let mut meta = ComparisonMeta::of(&subjects, &workloads, 3);
        meta.file = "cmp.toml".into();
        Loaded {
            executions: Synthetic::new(3).comparison(&subjects, &workloads, 3),
            meta,
            workloads,
            host: Host::default(),
            runs: vec![3, 4, 9],
            elapsed_s: 0.0,
        }
    }

    #[test]
    fn the_report_lists_the_callers_parameters_then_how_it_judged() {
        let o = outcome();
        let request = JudgeRequest {
            test: Some(TestKind::Unpaired),
            primary: vec!["cpu_percent".into()],
            rounds: Some(0..2),
        };
        let given = vec![("dyno".to_string(), "test build".to_string())];
        let judged = o.measured().judge(&request, given).unwrap();
        let names: Vec<(&str, &str)> = judged
            .parameters
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("dyno", "test build"),
                ("test", "unpaired"),
                ("rounds judged", "0..2"),
                ("primary metrics", "cpu_percent"),
            ]
        );
        let primary: Vec<_> = judged
            .judgement
            .verdicts
            .iter()
            .filter(|v| !v.secondary)
            .map(|v| v.metric.name.as_str())
            .collect();
        assert!(!primary.is_empty() && primary.iter().all(|m| *m == "cpu_percent"));
        // Without a request, the comparison file's test (here none: paired) and family.
        let plain = o
            .measured()
            .judge(&JudgeRequest::default(), Vec::new())
            .unwrap();
        assert_eq!(
            plain.parameters,
            [("test".to_string(), "paired".to_string())]
        );
    }

    #[test]
    fn an_unknown_primary_metric_is_refused_naming_where_it_was_given() {
        // A run stops at an unknown primary metric before it is judged; a comparison
        // stored before that check (or with its file's `primary` edited) still reaches
        // the judging, which refuses it too.
        let mut o = outcome();
        o.meta.primary = vec!["cpu_percnt".into()];
        let err = o
            .measured()
            .judge(&JudgeRequest::default(), Vec::new())
            .unwrap_err();
        let file = &o.meta.file;
        assert_eq!(err.to_string(), format!("`primary` of {file}"));
        let why = err.source().unwrap().to_string();
        assert!(why.contains("`cpu_percnt` is no metric"), "{why}");
        let asked = JudgeRequest {
            primary: vec!["rss".into(), "cpu_percent".into()],
            ..JudgeRequest::default()
        };
        let err = o.measured().judge(&asked, Vec::new()).unwrap_err();
        assert_eq!(err.to_string(), "--primary");
        assert!(err.source().unwrap().to_string().contains("`rss`"));
    }

    #[test]
    fn narrowing_keeps_the_baseline_and_the_named_candidates_only() {
        let mut loaded = outcome();
        assert_eq!(loaded.narrow_to(&[]).unwrap(), None);
        assert_eq!(loaded.executions.len(), 9);
        assert!(matches!(
            loaded.narrow_to(&["a".into()]),
            Err(Refused::Baseline { .. })
        ));
        let named = loaded.narrow_to(&["c".into()]).unwrap();
        assert_eq!(named, Some(("candidates judged".into(), "c".into())));
        assert_eq!(loaded.meta.subjects, ["a", "c"]);
        assert_eq!(loaded.executions.len(), 6);
        assert!(loaded.executions.iter().all(|e| e.subject != "b"));
        assert_eq!(loaded.stored_runs(), ("stored runs".into(), "3..9".into()));
        let judged = loaded
            .measured()
            .judge(&JudgeRequest::default(), Vec::new())
            .unwrap();
        assert!(judged.judgement.verdicts.iter().all(|v| v.candidate == "c"));
    }
}
