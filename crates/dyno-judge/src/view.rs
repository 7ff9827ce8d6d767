//! A stored comparison as `dyno serve`'s comparison page shows it: judged as `dyno
//! compare report` judges it (the comparison file's test and primary metrics, through
//! [`crate::judged`]), then handed over as dyno-results' plain data.

use crate::family::UnjudgedReason;
use crate::judged::{JudgeRequest, StoredReportError};
use crate::record;
use crate::verdict::MetricVerdict;
use dyno_exec::Outcome;
use dyno_results::{ComparisonView, Finding, UnjudgedView, VerdictView};
use dyno_stats::Verdict;
use dyno_store::{RunId, Store};

/// The comparison run `run` belongs to, judged as `dyno compare report` judges it.
pub fn stored_view(store: &Store, run: RunId) -> Result<ComparisonView, StoredReportError> {
    let loaded = record::load(store, &[run])?;
    let judgement = loaded
        .measured()
        .judge(&JudgeRequest::default(), Vec::new())?
        .judgement;
    let meta = &loaded.meta;
    let done = loaded
        .executions
        .iter()
        .filter(|e| e.outcome == Outcome::Complete)
        .count();
    let planned = meta.rounds as usize * meta.subjects.len() * meta.workloads.len();
    let unjudged = judgement
        .unjudged
        .iter()
        .map(|u| UnjudgedView {
            workload: u.workload.clone(),
            candidate: u.candidate.clone(),
            metric: u.metric.clone(),
            why: match &u.reason {
                UnjudgedReason::Unchanged { value } => {
                    format!("the same value ({value}) in every execution")
                }
                UnjudgedReason::Missing { subject } => format!("{subject} never reported it"),
            },
        })
        .collect();
    Ok(ComparisonView {
        id: meta.id.clone(),
        file: meta.file.clone(),
        subjects: meta.subjects.clone(),
        workloads: meta.workloads.clone(),
        host: loaded.host.hostname.clone(),
        test: meta.test.unwrap_or_default().name().to_string(),
        noise_band: meta.noise_band,
        alpha: meta.alpha,
        executions: (done, planned),
        runs: loaded.runs.clone(),
        // The precision rule's own sentences (target, what it reached, rounds still
        // needed); none for a comparison run to a fixed number of rounds.
        precision: (!judgement.precision.is_empty()).then(|| judgement.precision.join(" ")),
        verdicts: judgement.verdicts.iter().map(verdict_view).collect(),
        unjudged,
        notes: judgement.notes.clone(),
    })
}

fn verdict_view(v: &MetricVerdict) -> VerdictView {
    VerdictView {
        workload: v.workload.clone(),
        candidate: v.candidate.clone(),
        metric: v.metric.clone(),
        secondary: v.secondary,
        baseline: v.baseline_median(),
        candidate_value: v.candidate_median(),
        ratio: (
            v.comparison.ratio.estimate,
            v.comparison.ratio.low,
            v.comparison.ratio.high,
        ),
        p_adjusted: v.comparison.p_adjusted,
        finding: match v.verdict() {
            Verdict::Regression => Finding::Regression,
            Verdict::Improvement => Finding::Improvement,
            Verdict::NoSignificantChange => Finding::NoChange,
        },
        rounds: v
            .power
            .as_ref()
            .map_or(v.candidate_values.len(), |p| p.rounds),
        min_detectable_change: v.power.as_ref().and_then(|p| p.min_detectable_change),
        limited_by_noise_band: v.power.as_ref().is_some_and(|p| p.limited_by_noise_band),
    }
}
