//! Release comparison verdicts: is the candidate's metric really better or worse than the
//! baseline's, beyond noise?
//!
//! A change is significant only when both hold:
//! - the (Holm-adjusted, when several comparisons are judged together) two-sided
//!   Mann-Whitney p-value (or signed-rank p-value, for values paired by round: see
//!   [`crate::compare_paired`]) is `<= alpha`, and
//! - the ratio of medians `median(candidate) / median(baseline)` (or the paired ratio)
//!   lies outside the noise band `[1 - noise_band, 1 + noise_band]`.
//!
//! Its sign, read through the metric's direction, makes it a regression or an improvement.
//! The bootstrap interval of the ratio is reported beside the verdict, not used by it.

use crate::better::Better;
use crate::bootstrap::bootstrap_ratio_of_medians_ci;
use crate::error::{check_non_negative, check_open_unit, StatsError};
use crate::holm::holm_adjust;
use crate::interval::ConfidenceInterval;
use crate::mannwhitney::{mann_whitney_u, Alternative, MannWhitney};
use crate::paired::{PairedT, SignedRank};
use crate::sequential::SequentialT;

/// The test behind a [`Comparison`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SignificanceTest {
    /// Unpaired: Mann-Whitney of candidate (`x`) against baseline (`y`).
    MannWhitney(MannWhitney),
    /// Paired by round: Wilcoxon signed-rank on the per-round log ratios.
    SignedRank(SignedRank),
    /// Paired by round: Student's t on the per-round log ratios.
    PairedT(PairedT),
    /// Paired by round: the sequential t-test on the per-round log ratios, valid however
    /// often it was looked at (`crate::sequential`); its p-value is always valid.
    Sequential(SequentialT),
}

impl SignificanceTest {
    /// The raw (unadjusted) two-sided p-value.
    pub fn p_value(&self) -> f64 {
        match self {
            SignificanceTest::MannWhitney(t) => t.p_value,
            SignificanceTest::SignedRank(t) => t.p_value,
            SignificanceTest::PairedT(t) => t.p_value,
            SignificanceTest::Sequential(t) => t.p_value,
        }
    }

    /// `"mann-whitney"`, `"signed-rank"`, `"paired-t"` or `"sequential-t"`.
    pub fn name(&self) -> &'static str {
        match self {
            SignificanceTest::MannWhitney(_) => "mann-whitney",
            SignificanceTest::SignedRank(_) => "signed-rank",
            SignificanceTest::PairedT(_) => "paired-t",
            SignificanceTest::Sequential(_) => "sequential-t",
        }
    }
}

/// The outcome of comparing a candidate with a baseline on one metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// Significantly worse, by more than the noise band.
    Regression,
    /// Significantly better, by more than the noise band.
    Improvement,
    /// Not significant, or within the noise band.
    NoSignificantChange,
}

/// How comparisons are judged.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ComparisonSettings {
    /// Relative change of the median ratio treated as noise (0.02 = 2%).
    pub noise_band: f64,
    /// Significance level (family-wise across a [`compare_many`] call).
    pub alpha: f64,
    /// Level of the bootstrap interval of the ratio.
    pub confidence: f64,
    /// Bootstrap resamples.
    pub resamples: usize,
    /// Bootstrap seed; comparison `i` of [`compare_many`] uses `seed + i`.
    pub seed: u64,
}

impl Default for ComparisonSettings {
    fn default() -> Self {
        ComparisonSettings {
            noise_band: 0.02,
            alpha: 0.05,
            confidence: 0.95,
            resamples: 10_000,
            seed: 0,
        }
    }
}

/// A candidate-versus-baseline comparison of one metric.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Comparison {
    /// Direction of the metric.
    pub better: Better,
    /// `median(candidate) / median(baseline)` with its percentile-bootstrap interval, or
    /// the paired ratio with its exact signed-rank interval.
    pub ratio: ConfidenceInterval,
    /// The two-sided test.
    pub test: SignificanceTest,
    /// The p-value the verdict used: the raw one from [`compare`], Holm-adjusted from
    /// [`compare_many`] or [`apply_holm`].
    pub p_adjusted: f64,
    /// The verdict.
    pub verdict: Verdict,
}

/// The verdict rule of the module docs, for given numbers.
pub fn classify(
    ratio: f64,
    better: Better,
    p_adjusted: f64,
    alpha: f64,
    noise_band: f64,
) -> Verdict {
    let outside = ratio > 1.0 + noise_band || ratio < 1.0 - noise_band;
    if !(p_adjusted <= alpha && outside) {
        return Verdict::NoSignificantChange;
    }
    if better.is_better(ratio, 1.0) {
        Verdict::Improvement
    } else {
        Verdict::Regression
    }
}

/// Compares one metric on its own (no multiple-testing correction).
///
/// Errors: an empty or NaN sample, a zero baseline median, settings out of range.
pub fn compare(
    baseline: &[f64],
    candidate: &[f64],
    better: Better,
    settings: &ComparisonSettings,
) -> Result<Comparison, StatsError> {
    check_settings(settings)?;
    let ratio = bootstrap_ratio_of_medians_ci(
        baseline,
        candidate,
        settings.confidence,
        settings.resamples,
        settings.seed,
    )?;
    let test = mann_whitney_u(candidate, baseline, Alternative::TwoSided)?;
    let verdict = classify(
        ratio.estimate,
        better,
        test.p_value,
        settings.alpha,
        settings.noise_band,
    );
    Ok(Comparison {
        better,
        ratio,
        test: SignificanceTest::MannWhitney(test),
        p_adjusted: test.p_value,
        verdict,
    })
}

/// One metric to compare: `(baseline, candidate, direction)`.
pub type ComparisonInput<'a> = (&'a [f64], &'a [f64], Better);

/// Compares many metrics (or workloads) at once and applies Holm across all of them, so the
/// chance of any false regression or improvement in the whole report stays at `alpha`.
pub fn compare_many(
    inputs: &[ComparisonInput<'_>],
    settings: &ComparisonSettings,
) -> Result<Vec<Comparison>, StatsError> {
    let mut out = inputs
        .iter()
        .enumerate()
        .map(|(i, &(baseline, candidate, better))| {
            let one = ComparisonSettings {
                seed: settings.seed.wrapping_add(i as u64),
                ..*settings
            };
            compare(baseline, candidate, better, &one)
        })
        .collect::<Result<Vec<_>, _>>()?;
    apply_holm(&mut out, settings.alpha, settings.noise_band)?;
    Ok(out)
}

/// Replaces each comparison's `p_adjusted` by the Holm adjustment of the raw p-values of all
/// of `comparisons`, and re-classifies them. For comparisons made separately (for example
/// per workload) that belong in one report.
pub fn apply_holm(
    comparisons: &mut [Comparison],
    alpha: f64,
    noise_band: f64,
) -> Result<(), StatsError> {
    check_open_unit(alpha, "alpha")?;
    let raw: Vec<f64> = comparisons.iter().map(|c| c.test.p_value()).collect();
    let adjusted = holm_adjust(&raw)?;
    for (c, p) in comparisons.iter_mut().zip(adjusted) {
        c.p_adjusted = p;
        c.verdict = classify(c.ratio.estimate, c.better, p, alpha, noise_band);
    }
    Ok(())
}

fn check_settings(settings: &ComparisonSettings) -> Result<(), StatsError> {
    check_open_unit(settings.alpha, "alpha")?;
    check_non_negative(settings.noise_band, "noise_band")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_pcg::Pcg64;

    fn noisy(center: f64, noise: f64, n: usize, seed: u64) -> Vec<f64> {
        let mut rng = Pcg64::seed_from_u64(seed);
        (0..n)
            .map(|_| center * (1.0 + noise * (rng.gen::<f64>() * 2.0 - 1.0)))
            .collect()
    }

    fn fast() -> ComparisonSettings {
        ComparisonSettings {
            resamples: 2000,
            ..ComparisonSettings::default()
        }
    }

    #[test]
    fn classify_rule() {
        use Verdict::*;
        let c = |r, b, p| classify(r, b, p, 0.05, 0.02);
        assert_eq!(c(1.10, Better::Lower, 0.001), Regression);
        assert_eq!(c(1.10, Better::Higher, 0.001), Improvement);
        assert_eq!(c(0.90, Better::Lower, 0.001), Improvement);
        assert_eq!(c(0.90, Better::Higher, 0.001), Regression);
        assert_eq!(c(1.01, Better::Lower, 1e-9), NoSignificantChange); // inside the band
        assert_eq!(c(1.50, Better::Lower, 0.2), NoSignificantChange); // not significant
        assert_eq!(c(1.03, Better::Lower, 0.05), Regression); // p <= alpha counts
    }

    #[test]
    fn slower_release_is_a_regression() {
        let base = noisy(100.0, 0.02, 20, 1);
        let cand = noisy(108.0, 0.02, 20, 2);
        let c = compare(&base, &cand, Better::Lower, &fast()).unwrap();
        assert_eq!(c.verdict, Verdict::Regression);
        assert!(c.ratio.low > 1.04 && c.ratio.high < 1.12, "{:?}", c.ratio);
        assert!(c.test.p_value() < 1e-6);
        assert_eq!(c.p_adjusted, c.test.p_value());
        // The same numbers as throughput: an improvement.
        let c = compare(&base, &cand, Better::Higher, &fast()).unwrap();
        assert_eq!(c.verdict, Verdict::Improvement);
    }

    #[test]
    fn same_distribution_is_no_change() {
        let base = noisy(100.0, 0.03, 20, 3);
        let cand = noisy(100.0, 0.03, 20, 4);
        let c = compare(&base, &cand, Better::Lower, &fast()).unwrap();
        assert_eq!(c.verdict, Verdict::NoSignificantChange);
        assert!(c.ratio.low < 1.0 && c.ratio.high > 1.0, "{:?}", c.ratio);
    }

    #[test]
    fn holm_across_comparisons_can_withdraw_a_verdict() {
        // Exact two-sided p = 0.0151515 (U = 33 of 36, n = 6 + 6), ratio 112/105 = 1.0667:
        // a regression alone, but not as one of ten comparisons (Holm: 10 x p = 0.15).
        let base = [100.0, 102.0, 104.0, 106.0, 108.0, 110.0];
        let cand = [107.0, 109.0, 111.0, 113.0, 115.0, 117.0];
        let alone = compare(&base, &cand, Better::Lower, &fast()).unwrap();
        assert!(
            (alone.test.p_value() - 10.0 / 660.0).abs() < 1e-12,
            "{}",
            alone.test.p_value()
        );
        assert!((alone.ratio.estimate - 112.0 / 105.0).abs() < 1e-12);
        assert_eq!(alone.verdict, Verdict::Regression);

        let mut inputs: Vec<ComparisonInput<'_>> = vec![(&base, &cand, Better::Lower)];
        inputs.extend((0..9).map(|_| (&base[..], &base[..], Better::Lower)));
        let many = compare_many(&inputs, &fast()).unwrap();
        assert_eq!(many[0].test.p_value(), alone.test.p_value());
        assert!((many[0].p_adjusted - 10.0 * alone.test.p_value()).abs() < 1e-12);
        assert_eq!(many[0].verdict, Verdict::NoSignificantChange);
        assert!(many[1..].iter().all(|c| c.p_adjusted == 1.0));

        // apply_holm on separately made comparisons gives the same result.
        let mut separate: Vec<Comparison> = inputs
            .iter()
            .map(|&(b, c, d)| compare(b, c, d, &fast()).unwrap())
            .collect();
        apply_holm(&mut separate, 0.05, 0.02).unwrap();
        assert_eq!(separate[0].p_adjusted, many[0].p_adjusted);
        assert_eq!(separate[0].verdict, Verdict::NoSignificantChange);
    }

    #[test]
    fn invalid_inputs() {
        assert!(compare(&[], &[1.0], Better::Lower, &fast()).is_err());
        assert!(compare(&[0.0], &[1.0], Better::Lower, &fast()).is_err());
        let bad = ComparisonSettings {
            noise_band: -0.1,
            ..fast()
        };
        assert!(compare(&[1.0], &[1.0], Better::Lower, &bad).is_err());
    }
}
