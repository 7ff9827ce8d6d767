//! Release comparison verdicts: is the candidate's metric really better or worse than the
//! baseline's, beyond noise?
//!
//! A change is significant only when both hold:
//! - the (Holm-adjusted, when several comparisons are judged together) two-sided
//!   Mann-Whitney p-value ([`compare`]), or for values paired by round the paired t-test's
//!   ([`compare_paired`]) or the signed-rank test's ([`compare_signed_rank`]), is
//!   `<= alpha`, and
//! - the ratio of medians `median(candidate) / median(baseline)` (or the paired ratio)
//!   lies outside the noise band `[1 - noise_band, 1 + noise_band]`.
//!
//! Its sign, read through the metric's direction, makes it a regression or an improvement.
//! The bootstrap interval of the ratio is reported beside the verdict, not used by it.
//!
//! The tests themselves are a level down (`mannwhitney`, `paired`): they know nothing of
//! verdicts, and every comparison that turns one into a [`Comparison`] is here.

use crate::better::Better;
use crate::bootstrap::bootstrap_ratio_of_medians_ci;
use crate::error::{check_non_negative, check_open_unit, StatsError};
use crate::holm::holm_adjust;
use crate::interval::ConfidenceInterval;
use crate::mannwhitney::MannWhitneyMethod;
use crate::mannwhitney::{mann_whitney_u, Alternative, MannWhitney};
use crate::paired::{
    log_ratios, paired_ratio_ci, paired_t, wilcoxon_signed_rank, PairedT, SignedRank,
};
use crate::sequential::{self, sequential_critical_t, sequential_t, SequentialT};
use crate::student::student_t_quantile;

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
    Ok(judged(
        better,
        ratio,
        SignificanceTest::MannWhitney(test),
        settings,
    ))
}

/// A comparison judged on `test`'s raw p-value by [`classify`] (a family's Holm
/// adjustment comes later, from [`apply_holm`]).
pub(crate) fn judged(
    better: Better,
    ratio: ConfidenceInterval,
    test: SignificanceTest,
    settings: &ComparisonSettings,
) -> Comparison {
    let p = test.p_value();
    Comparison {
        better,
        ratio,
        test,
        p_adjusted: p,
        verdict: classify(
            ratio.estimate,
            better,
            p,
            settings.alpha,
            settings.noise_band,
        ),
    }
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

/// Compares one metric from values paired by round (`baseline[i]` and `candidate[i]`
/// measured in the same round): two-sided t-test on the log ratios, the ratio
/// `exp(mean log ratio)` (the geometric mean of the per-round ratios) with its t
/// interval, and the verdict rule of [`classify`] on that ratio.
///
/// Errors: as [`log_ratios`], and settings out of range.
pub fn compare_paired(
    baseline: &[f64],
    candidate: &[f64],
    better: Better,
    settings: &ComparisonSettings,
) -> Result<Comparison, StatsError> {
    check_settings(settings)?;
    check_open_unit(settings.confidence, "confidence")?;
    let logs = log_ratios(baseline, candidate)?;
    let test = paired_t(&logs)?;
    let half = if test.std_error == 0.0 {
        0.0
    } else {
        student_t_quantile(0.5 + settings.confidence / 2.0, test.df) * test.std_error
    };
    let ratio = ConfidenceInterval {
        estimate: test.mean.exp(),
        low: (test.mean - half).exp(),
        high: (test.mean + half).exp(),
        requested: settings.confidence,
        achieved: settings.confidence,
    };
    Ok(judged(
        better,
        ratio,
        SignificanceTest::PairedT(test),
        settings,
    ))
}

/// As [`compare_paired`], with the exact signed-rank test on the log ratios and the
/// Hodges-Lehmann ratio with its exact interval ([`paired_ratio_ci`]). All log ratios
/// zero (identical values) is no change, p = 1. See the module docs for why an exact
/// test needs more rounds than a t-test to survive Holm.
///
/// Errors: as [`paired_ratio_ci`], and settings out of range.
pub fn compare_signed_rank(
    baseline: &[f64],
    candidate: &[f64],
    better: Better,
    settings: &ComparisonSettings,
) -> Result<Comparison, StatsError> {
    check_settings(settings)?;
    let logs = log_ratios(baseline, candidate)?;
    let ratio = paired_ratio_ci(baseline, candidate, settings.confidence)?;
    let test = match wilcoxon_signed_rank(&logs, Alternative::TwoSided) {
        Ok(t) => t,
        Err(StatsError::TooFewValues { .. }) => SignedRank {
            w_plus: 0.0,
            p_value: 1.0,
            method: MannWhitneyMethod::Exact,
            alternative: Alternative::TwoSided,
            n: 0,
        },
        Err(e) => return Err(e),
    };
    Ok(judged(
        better,
        ratio,
        SignificanceTest::SignedRank(test),
        settings,
    ))
}

fn check_settings(settings: &ComparisonSettings) -> Result<(), StatsError> {
    check_open_unit(settings.alpha, "alpha")?;
    check_non_negative(settings.noise_band, "noise_band")?;
    Ok(())
}

/// Compares one metric from values paired by round, in round order, with the sequential
/// t-test on their log ratios: the ratio `exp(mean log ratio)` with its confidence
/// sequence at `settings.confidence` (infinite while too few rounds are in), the
/// always-valid p-value, and the verdict rule of [`classify`].
///
/// Errors: as [`log_ratios`], and settings out of range.
pub fn compare_sequential(
    baseline: &[f64],
    candidate: &[f64],
    better: Better,
    settings: &ComparisonSettings,
) -> Result<Comparison, StatsError> {
    check_open_unit(settings.alpha, "alpha")?;
    check_non_negative(settings.noise_band, "noise_band")?;
    check_open_unit(settings.confidence, "confidence")?;
    let logs = log_ratios(baseline, candidate)?;
    let test = sequential_t(&logs)?;
    let half = match sequential_critical_t(
        test.n,
        sequential::MIXING_VARIANCE,
        1.0 - settings.confidence,
    ) {
        Some(c) => c * test.std_error,
        None => f64::INFINITY,
    };
    let ratio = ConfidenceInterval {
        estimate: test.mean.exp(),
        low: (test.mean - half).exp(),
        high: (test.mean + half).exp(),
        requested: settings.confidence,
        achieved: settings.confidence,
    };
    Ok(Comparison {
        better,
        ratio,
        test: SignificanceTest::Sequential(test),
        p_adjusted: test.p_value,
        verdict: classify(
            ratio.estimate,
            better,
            test.p_value,
            settings.alpha,
            settings.noise_band,
        ),
    })
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

    #[test]
    fn round_noise_cancels_in_the_paired_ratio() {
        // Every round's level moves by up to +-30% (a busy machine); the candidate is 5%
        // above the baseline of its own round.
        let level = [1.0, 1.3, 0.8, 1.1, 0.7, 1.25, 0.9, 1.05, 0.75, 1.2];
        let base: Vec<f64> = level.iter().map(|l| 100.0 * l).collect();
        let cand: Vec<f64> = level
            .iter()
            .enumerate()
            .map(|(i, l)| 105.0 * l * (1.0 + 0.001 * (i as f64 - 4.5)))
            .collect();
        let s = ComparisonSettings::default();
        let paired = compare_signed_rank(&base, &cand, Better::Lower, &s).unwrap();
        assert_eq!(paired.verdict, crate::Verdict::Regression);
        assert!(
            (paired.ratio.estimate - 1.05).abs() < 0.003,
            "{:?}",
            paired.ratio
        );
        assert!(paired.ratio.low > 1.04 && paired.ratio.high < 1.06);
        assert!(paired.ratio.achieved >= 0.95);
        let unpaired = crate::compare(&base, &cand, Better::Lower, &s).unwrap();
        assert_eq!(unpaired.verdict, crate::Verdict::NoSignificantChange);
        let t = compare_paired(&base, &cand, Better::Lower, &s).unwrap();
        assert_eq!(t.verdict, crate::Verdict::Regression);
        assert!((t.ratio.estimate - 1.05).abs() < 0.003, "{:?}", t.ratio);
        assert!(t.ratio.low > 1.04 && t.ratio.high < 1.06, "{:?}", t.ratio);
        // Unlike the exact test's floor of 2/1024, t's p can survive a family of 100.
        assert!(t.p_adjusted * 100.0 < 0.05, "{}", t.p_adjusted);
    }

    #[test]
    fn identical_pairs_are_no_change() {
        let v = [3.0, 4.0, 5.0];
        let s = ComparisonSettings::default();
        for c in [
            compare_signed_rank(&v, &v, Better::Lower, &s).unwrap(),
            compare_paired(&v, &v, Better::Lower, &s).unwrap(),
        ] {
            assert_eq!(c.verdict, crate::Verdict::NoSignificantChange);
            assert_eq!(c.p_adjusted, 1.0);
            assert_eq!(c.ratio.estimate, 1.0);
        }
    }

    #[test]
    fn bad_pairs_are_refused() {
        let s = ComparisonSettings::default();
        assert!(compare_paired(&[1.0, 2.0], &[1.0], Better::Lower, &s).is_err());
        assert!(compare_paired(&[1.0, 0.0], &[1.0, 1.0], Better::Lower, &s).is_err());
        assert!(compare_paired(&[1.0], &[1.0], Better::Lower, &s).is_err());
        assert!(compare_signed_rank(&[1.0, 0.0], &[1.0, 1.0], Better::Lower, &s).is_err());
    }
}
