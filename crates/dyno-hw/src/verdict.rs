//! From raw repetitions to a verdict: the median per metric with its spread, judged
//! against the requirement set with Substrate's rule.
//!
//! A metric measured once is judged on that value, as upstream. Repeated, it is judged on
//! the median and reported with a distribution-free 95% confidence interval and the
//! coefficient of variation, so an operator can see whether a pass or fail is solid.

use crate::requirements::{judge, Judgement, Requirement, RequirementSet};
use crate::{Measurement, MetricId};

/// Confidence level of the reported interval.
pub const CONFIDENCE: f64 = 0.95;

/// Everything known about one metric after a run.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricResult {
    /// The metric.
    pub id: MetricId,
    /// The raw measurement of each repetition, in order.
    pub repetitions: Vec<Measurement>,
    /// Median of the scores (the score that is judged).
    pub median: f64,
    /// Confidence interval of the median, with the level it really has (for n = 5 the
    /// widest interval, min..max, covers 93.75%); `None` for a single repetition.
    pub interval: Option<(f64, f64, f64)>,
    /// Coefficient of variation of the scores; `None` for a single repetition, where
    /// there is no spread to speak of (not a spread of zero).
    pub cv: Option<f64>,
    /// The requirement, if the set has one for this metric.
    pub requirement: Option<Requirement>,
    /// The judgement of the median, if there is a requirement.
    pub judgement: Option<Judgement>,
}

impl MetricResult {
    /// The scores of every repetition.
    pub fn scores(&self) -> Vec<f64> {
        self.repetitions.iter().map(|m| m.score).collect()
    }
}

/// The overall outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// Per-metric results, in running order.
    pub results: Vec<MetricResult>,
    /// Metrics with a requirement.
    pub judged: usize,
    /// Of those, how many passed.
    pub passed: usize,
    /// Of those, how many failed.
    pub failed: usize,
    /// Metrics whose score is off by 100x or more from the minimum.
    pub bad_results: Vec<MetricId>,
    /// Tolerance that was applied, in percent.
    pub tolerance: f64,
}

impl Verdict {
    /// True when every judged metric passed and no result was rejected as bad.
    pub fn meets_requirements(&self) -> bool {
        self.failed == 0 && self.bad_results.is_empty()
    }
}

/// Summarises and judges the measurements of each metric.
pub fn evaluate(
    measured: Vec<(MetricId, Vec<Measurement>)>,
    requirements: &RequirementSet,
    tolerance: f64,
) -> Verdict {
    let mut results = Vec::with_capacity(measured.len());
    let (mut judged, mut passed, mut failed) = (0, 0, 0);
    let mut bad_results = Vec::new();
    for (id, repetitions) in measured {
        if repetitions.is_empty() {
            continue;
        }
        let scores: Vec<f64> = repetitions.iter().map(|m| m.score).collect();
        let median = dyno_stats::median(&scores).unwrap_or(f64::NAN);
        let interval = if scores.len() > 1 {
            dyno_stats::median_ci(&scores, CONFIDENCE)
                .ok()
                .map(|ci| (ci.low, ci.high, ci.achieved))
        } else {
            None
        };
        let cv = if scores.len() > 1 {
            dyno_stats::coefficient_of_variation(&scores)
        } else {
            None
        };
        let requirement = requirements.get(id).cloned();
        let judgement = requirement
            .as_ref()
            .map(|r| judge(median, r.minimum, tolerance, id.direction()));
        if let Some(j) = judgement {
            judged += 1;
            if j.passed {
                passed += 1;
            } else {
                failed += 1;
            }
            if j.bad_result {
                bad_results.push(id);
            }
        }
        results.push(MetricResult {
            id,
            repetitions,
            median,
            interval,
            cv,
            requirement,
            judgement,
        });
    }
    Verdict {
        results,
        judged,
        passed,
        failed,
        bad_results,
        tolerance,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn m(score: f64) -> Measurement {
        Measurement {
            score,
            iterations: 10,
            elapsed: Duration::from_secs(1),
            threads: 1,
        }
    }

    const MIB: f64 = 1048576.0;

    #[test]
    fn the_median_is_judged_and_counted() {
        let set = RequirementSet::builtin("substrate").unwrap();
        let v = evaluate(
            vec![
                // 1000 MiB/s minimum: median 950 passes at 10% tolerance despite one low run.
                (
                    MetricId::Blake2256,
                    vec![m(950.0 * MIB), m(400.0 * MIB), m(960.0 * MIB)],
                ),
                // 950 MiB/s minimum: 800 is 84%, a fail.
                (MetricId::DiskSeqWrite, vec![m(800.0 * MIB)]),
                // No requirement: reported, not judged.
                (MetricId::Sha256Chain, vec![m(2e7), m(2.1e7)]),
            ],
            &set,
            10.0,
        );
        assert_eq!((v.judged, v.passed, v.failed), (2, 1, 1));
        assert!(!v.meets_requirements());
        let blake = &v.results[0];
        assert_eq!(blake.median, 950.0 * MIB);
        assert!(blake.judgement.unwrap().passed);
        let (lo, hi, level) = blake.interval.unwrap();
        assert_eq!((lo, hi), (400.0 * MIB, 960.0 * MIB));
        assert_eq!(level, 0.75, "three values: min..max covers 1 - 2^-2");
        assert!(v.results[1].interval.is_none());
        assert_eq!(v.results[1].cv, None, "one sample has no spread");
        assert_eq!(v.results[2].judgement, None);
        let cv = v.results[2].cv.unwrap();
        assert!(cv > 0.0 && cv < 0.05, "{cv}");
    }

    #[test]
    fn wildly_off_results_are_rejected_even_if_they_pass() {
        let set = RequirementSet::builtin("substrate").unwrap();
        let v = evaluate(vec![(MetricId::MemCopy, vec![m(1e20)])], &set, 10.0);
        assert_eq!(v.passed, 1);
        assert_eq!(v.bad_results, vec![MetricId::MemCopy]);
        assert!(!v.meets_requirements());
    }
}
