//! A step's evidence, asked of the judge: the confirmation's verdicts (is there a change
//! beyond the precision, on which primary metric, how large, how noisy), and a step's
//! per-round log ratios of the tested revision to its baseline on that metric, which the
//! sequential test decides on. Nothing here measures; it reads executions.

use crate::record::{Confirmed, StepOutcome};
use dyno_compare::Execution;
use dyno_judge::judged::{JudgeRequest, Measured};
use dyno_judge::verdict::{judge_with, JudgeOptions, MetricVerdict};
use dyno_judge::work::WorkUnit;
use dyno_judge::TestKind;
use dyno_model::Direction;
use dyno_stats::{ComparisonSettings, PriorNoise, Verdict};
use std::collections::BTreeMap;

/// The per-round log ratios `ln(candidate / baseline)` of `metric` under `workload`, in
/// round order (rounds both subjects completed), as the paired judgement pairs them.
pub fn round_log_ratios(
    executions: &[Execution],
    subjects: &[String],
    workload: &str,
    metric: &str,
    work: &BTreeMap<String, WorkUnit>,
    settings: &ComparisonSettings,
) -> Vec<f64> {
    let options = JudgeOptions {
        test: TestKind::Paired,
        rounds: None,
        primary: vec![metric.to_string()],
        work: work.clone(),
    };
    let judgement = judge_with(executions, subjects, settings, &options);
    judgement
        .verdicts
        .iter()
        .find(|v| v.workload == workload && v.metric.name == metric)
        .map(log_ratios)
        .unwrap_or_default()
}

fn log_ratios(v: &MetricVerdict) -> Vec<f64> {
    v.round_ratios
        .iter()
        .filter(|r| **r > 0.0 && r.is_finite())
        .map(|r| r.ln())
        .collect()
}

/// What the confirmation (good against bad, judged sequentially with the precision
/// rule) says: the change to bisect, on the flagged primary metric with the smallest
/// p-value, or that there is none beyond the precision (`why` says how it stopped).
pub fn confirmation(measured: Measured<'_>, why_stopped: &str) -> Result<StepOutcome, String> {
    let judged = measured
        .judge(&JudgeRequest::default(), Vec::new())
        .map_err(|e| match std::error::Error::source(&e) {
            Some(why) => format!("{e}: {why}"),
            None => e.to_string(),
        })?;
    let primary: Vec<&MetricVerdict> = judged
        .judgement
        .verdicts
        .iter()
        .filter(|v| !v.secondary)
        .collect();
    let flagged = primary
        .iter()
        .filter(|v| matches!(v.verdict(), Verdict::Regression | Verdict::Improvement))
        .min_by(|a, b| a.comparison.p_adjusted.total_cmp(&b.comparison.p_adjusted));
    let Some(v) = flagged else {
        let measured = primary
            .iter()
            .map(|v| {
                format!(
                    "{} under {}: {:+.1}%",
                    v.metric.name,
                    v.workload,
                    (v.change().estimate - 1.0) * 100.0
                )
            })
            .collect();
        return Ok(StepOutcome::NoChange {
            why: why_stopped.to_string(),
            measured,
        });
    };
    let d = log_ratios(v);
    let noise = PriorNoise::of(&d).ok_or_else(|| {
        format!(
            "{} was flagged with {} paired rounds: too few to estimate the noise",
            v.metric.name,
            d.len()
        )
    })?;
    let mean = d.iter().sum::<f64>() / d.len() as f64;
    let half = dyno_stats::student_t_quantile(0.975, noise.df as f64) * noise.variance.sqrt()
        / (d.len() as f64).sqrt();
    Ok(StepOutcome::Changed(Confirmed {
        workload: v.workload.clone(),
        metric: v.metric.name.clone(),
        change: mean,
        interval: (mean - half, mean + half),
        noise_variance: noise.variance,
        noise_df: noise.df,
        higher_is_better: v.metric.direction == Direction::HigherIsBetter,
    }))
}
