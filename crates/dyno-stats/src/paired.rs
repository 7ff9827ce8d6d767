//! The paired tests: per-round log ratios of a candidate to a baseline, Student's t on them
//! ([`paired_t`]) or the exact Wilcoxon signed-rank test ([`wilcoxon_signed_rank`]), and
//! the ratio's interval ([`paired_ratio_ci`]). The comparisons that judge a metric with
//! them ([`crate::compare_paired`], [`crate::compare_signed_rank`]) are in `comparison`,
//! beside the unpaired one, and build on these.
//!
//! `dyno compare` runs every subject once per round, interleaved, so whatever slows a
//! whole round (another job on the machine, a thermal step, a noisy neighbour) slows the
//! baseline and the candidate of that round alike. The ratio `candidate / baseline` of one
//! round cancels it; a rank test on those ratios sees a change that the spread between
//! rounds hides from an unpaired test.
//!
//! Why two tests: an exact test on `n` pairs (signed-rank, or a sign-flip permutation)
//! cannot give a p-value below `2 / 2^n`: 0.00195 for 10 rounds. `dyno compare` judges
//! every metric of every candidate as one Holm family (25 metrics per workload is usual),
//! and `25 x 0.00195 = 0.049`: with 10 rounds and a second workload or candidate no
//! exact paired test can ever reach alpha = 0.05, whatever the data. The t-test's p-value
//! is continuous, so a consistent change at 10 rounds survives Holm; log ratios of cost
//! metrics are close to normal, and a wild round shows as a wide interval, not a verdict.
//!
//! Signed-rank conventions follow `scipy.stats.wilcoxon` with `zero_method = "wilcox"`:
//! zero differences are dropped, tied absolute differences share their mean rank, and the
//! statistic reported is `W+`, the rank sum of the positive differences.

use crate::error::{check_open_unit, StatsError};
use crate::interval::ConfidenceInterval;
use crate::mannwhitney::{Alternative, MannWhitneyMethod};
use crate::normal::normal_sf;
use crate::student::student_t_sf;

/// The outcome of a paired t-test (one-sample t on the differences).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairedT {
    /// Mean of the differences.
    pub mean: f64,
    /// Standard error of the mean.
    pub std_error: f64,
    /// `mean / std_error`.
    pub t: f64,
    /// Degrees of freedom, `n - 1`.
    pub df: f64,
    /// Two-sided p-value.
    pub p_value: f64,
}

/// Two-sided one-sample t-test of `differences` against mean 0. Differences that are all
/// equal have no spread and no t: p = 1 when they are all 0; otherwise p is the exact
/// sign-flip test's, `2 / 2^n` (every difference has the same sign, the most extreme of
/// the `2^n` sign assignments either way). A quantised metric (a latency read from
/// histogram buckets) can give the same non-zero ratio in every round; two such rounds
/// are p = 0.5, not a certainty.
///
/// Errors: fewer than 2 differences, or a NaN.
pub fn paired_t(differences: &[f64]) -> Result<PairedT, StatsError> {
    crate::error::check_sample(differences, "differences", 2)?;
    let n = differences.len() as f64;
    let mean = differences.iter().sum::<f64>() / n;
    let var = differences.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / (n - 1.0);
    let std_error = (var / n).sqrt();
    let df = n - 1.0;
    // Equal differences leave rounding error, not spread, in `var` (ten copies of 0.1
    // have a mean that is not quite 0.1): below 1e-12 of the mean it counts as none.
    let std_error = if std_error <= mean.abs() * 1e-12 {
        0.0
    } else {
        std_error
    };
    let (t, p_value) = if std_error == 0.0 {
        if mean == 0.0 {
            (0.0, 1.0)
        } else {
            let sign_flip = 2.0 / 2f64.powi(differences.len().min(1000) as i32);
            (mean.signum() * f64::INFINITY, sign_flip.min(1.0))
        }
    } else {
        let t = mean / std_error;
        (t, (2.0 * student_t_sf(t.abs(), df)).min(1.0))
    };
    Ok(PairedT {
        mean,
        std_error,
        t,
        df,
        p_value,
    })
}

/// Largest number of non-zero differences for which the exact null distribution is used.
pub const EXACT_PAIRED_LIMIT: usize = 25;

/// The outcome of a Wilcoxon signed-rank test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SignedRank {
    /// `W+`: the sum of the ranks of the positive differences (of `n` non-zero ones).
    pub w_plus: f64,
    /// The p-value for [`SignedRank::alternative`].
    pub p_value: f64,
    /// Exact (no ties, `n <=` [`EXACT_PAIRED_LIMIT`]) or the normal approximation.
    pub method: MannWhitneyMethod,
    /// The alternative hypothesis tested ([`Alternative::Greater`]: differences tend to
    /// be positive).
    pub alternative: Alternative,
    /// Non-zero differences ranked.
    pub n: usize,
}

/// Number of sign assignments of ranks `1..=n` whose positive ranks sum to `w`, for every
/// `w` in `0..=n(n+1)/2`: the exact null distribution of `W+` times `2^n`.
pub fn exact_w_counts(n: usize) -> Vec<f64> {
    let max = n * (n + 1) / 2;
    let mut counts = vec![0.0; max + 1];
    counts[0] = 1.0;
    for rank in 1..=n {
        for w in (rank..=max).rev() {
            counts[w] += counts[w - rank];
        }
    }
    counts
}

/// Wilcoxon signed-rank test of `differences` against a symmetric distribution about 0.
///
/// Errors: no non-zero difference, or a NaN.
pub fn wilcoxon_signed_rank(
    differences: &[f64],
    alternative: Alternative,
) -> Result<SignedRank, StatsError> {
    crate::error::check_no_nan(differences, "differences")?;
    let nonzero: Vec<f64> = differences.iter().copied().filter(|d| *d != 0.0).collect();
    let n = nonzero.len();
    if n == 0 {
        return Err(StatsError::TooFewValues {
            what: "non-zero differences",
            got: 0,
            needed: 1,
        });
    }
    let (ranks, tie_term) = abs_ranks(&nonzero);
    let w_plus: f64 = nonzero
        .iter()
        .zip(&ranks)
        .filter(|(d, _)| **d > 0.0)
        .map(|(_, r)| r)
        .sum();
    let exact = tie_term == 0.0 && n <= EXACT_PAIRED_LIMIT;
    let p_value = if exact {
        exact_p(n, w_plus, alternative)
    } else {
        normal_p(n, w_plus, tie_term, alternative)
    };
    Ok(SignedRank {
        w_plus,
        p_value: p_value.min(1.0),
        method: if exact {
            MannWhitneyMethod::Exact
        } else {
            MannWhitneyMethod::Asymptotic
        },
        alternative,
        n,
    })
}

/// Mid-ranks of `|d|` and the tie term `sum(t^3 - t)` of the tied groups.
fn abs_ranks(d: &[f64]) -> (Vec<f64>, f64) {
    let mut order: Vec<usize> = (0..d.len()).collect();
    order.sort_by(|&a, &b| d[a].abs().total_cmp(&d[b].abs()));
    let mut ranks = vec![0.0; d.len()];
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && d[order[j + 1]].abs() == d[order[i]].abs() {
            j += 1;
        }
        let mean_rank = (i + j) as f64 / 2.0 + 1.0;
        for &k in &order[i..=j] {
            ranks[k] = mean_rank;
        }
        let t = (j - i + 1) as f64;
        tie_term += t * t * t - t;
        i = j + 1;
    }
    (ranks, tie_term)
}

fn exact_p(n: usize, w_plus: f64, alternative: Alternative) -> f64 {
    let counts = exact_w_counts(n);
    let total: f64 = counts.iter().sum();
    let w = w_plus.round() as usize;
    let at_most = counts[..=w].iter().sum::<f64>() / total;
    let at_least = counts[w..].iter().sum::<f64>() / total;
    match alternative {
        Alternative::Greater => at_least,
        Alternative::Less => at_most,
        Alternative::TwoSided => 2.0 * at_most.min(at_least),
    }
}

fn normal_p(n: usize, w_plus: f64, tie_term: f64, alternative: Alternative) -> f64 {
    let nf = n as f64;
    let mean = nf * (nf + 1.0) / 4.0;
    let var = nf * (nf + 1.0) * (2.0 * nf + 1.0) / 24.0 - tie_term / 48.0;
    if var <= 0.0 {
        return 1.0;
    }
    let sd = var.sqrt();
    let upper = normal_sf((w_plus - mean - 0.5) / sd);
    let lower = normal_sf((mean - w_plus - 0.5) / sd);
    match alternative {
        Alternative::Greater => upper,
        Alternative::Less => lower,
        Alternative::TwoSided => 2.0 * upper.min(lower),
    }
}

/// `candidate / baseline` from paired values: the exponential of the Hodges-Lehmann
/// estimate of the per-pair log ratios (the median of their Walsh averages), with the
/// exact signed-rank interval (Walsh averages `k` from each end, `k` from the exact
/// distribution of `W+`; the level achieved is at least the one requested whenever the
/// sample is large enough, and is reported).
///
/// Errors: unequal lengths, fewer than 2 pairs, a NaN, a value that is not positive.
pub fn paired_ratio_ci(
    baseline: &[f64],
    candidate: &[f64],
    confidence: f64,
) -> Result<ConfidenceInterval, StatsError> {
    let logs = log_ratios(baseline, candidate)?;
    check_open_unit(confidence, "confidence")?;
    let n = logs.len();
    let mut walsh = Vec::with_capacity(n * (n + 1) / 2);
    for i in 0..n {
        for j in i..n {
            walsh.push((logs[i] + logs[j]) / 2.0);
        }
    }
    walsh.sort_by(f64::total_cmp);
    let estimate = crate::quantile::median(&walsh).expect("at least 3 Walsh averages");
    // The interval [walsh(k), walsh(m + 1 - k)] (1-based) covers the shift with
    // probability 1 - 2 P(W+ <= k - 1); take the largest k that keeps that >= confidence.
    let counts = exact_w_counts(n);
    let total: f64 = counts.iter().sum();
    let tail = (1.0 - confidence) / 2.0;
    let mut k = 1;
    let mut cum = counts[0];
    while k < walsh.len() / 2 && (cum + counts[k]) / total <= tail {
        cum += counts[k];
        k += 1;
    }
    let m = walsh.len();
    Ok(ConfidenceInterval {
        estimate: estimate.exp(),
        low: walsh[k - 1].exp(),
        high: walsh[m - k].exp(),
        requested: confidence,
        achieved: 1.0 - 2.0 * cum / total,
    })
}

/// `ln(candidate[i] / baseline[i])` for every pair.
pub fn log_ratios(baseline: &[f64], candidate: &[f64]) -> Result<Vec<f64>, StatsError> {
    if baseline.len() != candidate.len() {
        return Err(StatsError::Shape(format!(
            "{} baseline values against {} candidate values: pairs need equal counts",
            baseline.len(),
            candidate.len()
        )));
    }
    crate::error::check_sample(baseline, "baseline", 2)?;
    crate::error::check_sample(candidate, "candidate", 2)?;
    for (what, data) in [("baseline", baseline), ("candidate", candidate)] {
        if let Some(&bad) = data.iter().find(|x| **x <= 0.0) {
            return Err(StatsError::OutOfRange {
                what,
                value: bad,
                range: "(0, inf): a ratio needs positive values",
            });
        }
    }
    Ok(baseline
        .iter()
        .zip(candidate)
        .map(|(b, c)| (c / b).ln())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::student::student_t_quantile;
    use proptest::prelude::*;

    /// Darwin's Zea mays height differences (Fisher 1935), the example of
    /// `scipy.stats.wilcoxon`: statistic 24 (= min(W+, W-)), exact p 0.041259765625.
    const DARWIN: [f64; 15] = [
        6.0, 8.0, 14.0, 16.0, 23.0, 24.0, 28.0, 29.0, 41.0, -48.0, 49.0, 56.0, 60.0, -67.0, 75.0,
    ];

    #[test]
    fn darwin_matches_scipy() {
        let t = wilcoxon_signed_rank(&DARWIN, Alternative::TwoSided).unwrap();
        assert_eq!(t.w_plus, 96.0);
        assert_eq!(t.method, MannWhitneyMethod::Exact);
        assert!((t.p_value - 0.041259765625).abs() < 1e-12, "{}", t.p_value);
        let g = wilcoxon_signed_rank(&DARWIN, Alternative::Greater).unwrap();
        assert!((g.p_value - 0.0206298828125).abs() < 1e-12, "{}", g.p_value);
        let l = wilcoxon_signed_rank(&DARWIN, Alternative::Less).unwrap();
        assert!(l.p_value > 0.97);
    }

    /// Critical values of published tables (two-sided alpha = 0.05): reject when
    /// min(W+, W-) <= T, T = 8 for n = 10, 25 for n = 15, 52 for n = 20.
    #[test]
    fn critical_values_match_the_tables() {
        for (n, t) in [(10usize, 8usize), (15, 25), (20, 52)] {
            let counts = exact_w_counts(n);
            let total: f64 = counts.iter().sum();
            assert_eq!(total, 2f64.powi(n as i32));
            let p = |w: usize| 2.0 * counts[..=w].iter().sum::<f64>() / total;
            assert!(p(t) <= 0.05, "n {n}: p({t}) = {}", p(t));
            assert!(p(t + 1) > 0.05, "n {n}: p({}) = {}", t + 1, p(t + 1));
        }
    }

    #[test]
    fn ten_rounds_all_one_way_give_the_smallest_p() {
        let d: Vec<f64> = (1..=10).map(|i| i as f64 * 0.01).collect();
        let t = wilcoxon_signed_rank(&d, Alternative::TwoSided).unwrap();
        assert_eq!(t.w_plus, 55.0);
        assert!((t.p_value - 2.0 / 1024.0).abs() < 1e-15);
    }

    #[test]
    fn ties_and_zeros_use_the_normal_approximation() {
        let d = [0.0, 1.0, 1.0, -2.0, 3.0, 3.0, 3.0, 4.0];
        let t = wilcoxon_signed_rank(&d, Alternative::TwoSided).unwrap();
        assert_eq!(t.n, 7);
        assert_eq!(t.method, MannWhitneyMethod::Asymptotic);
        // Ranks: |1|,|1| -> 1.5; |2| -> 3; |3| x3 -> 5; |4| -> 7. W+ = 28 - 3 = 25.
        assert_eq!(t.w_plus, 25.0);
        assert!(t.p_value > 0.0 && t.p_value < 0.1, "{}", t.p_value);
        assert!(wilcoxon_signed_rank(&[0.0, 0.0], Alternative::TwoSided).is_err());
        assert!(wilcoxon_signed_rank(&[1.0, f64::NAN], Alternative::TwoSided).is_err());
    }

    /// Student's sleep data (Cushny and Peebles, as in R's `t.test(extra ~ group,
    /// paired = TRUE)`): t = -4.0621, df = 9, p = 0.002833, mean difference -1.58,
    /// 95% interval -2.4598858 to -0.7001142.
    #[test]
    fn sleep_data_matches_r() {
        let one = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0];
        let two = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4];
        let d: Vec<f64> = one.iter().zip(&two).map(|(a, b)| a - b).collect();
        let t = paired_t(&d).unwrap();
        assert!((t.t + 4.0621).abs() < 1e-4, "{t:?}");
        assert_eq!(t.df, 9.0);
        assert!((t.p_value - 0.002833).abs() < 1e-6, "{t:?}");
        let half = student_t_quantile(0.975, 9.0) * t.std_error;
        assert!((t.mean - half + 2.4598858).abs() < 1e-5);
        assert!((t.mean + half + 0.7001142).abs() < 1e-5);
        let flat = paired_t(&[0.0, 0.0, 0.0]).unwrap();
        assert_eq!(flat.p_value, 1.0);
        // No spread, same sign: the sign-flip test's 2 / 2^n, not a certainty.
        assert_eq!(paired_t(&[0.1, 0.1]).unwrap().p_value, 0.5);
        assert_eq!(paired_t(&[-0.1; 10]).unwrap().p_value, 2.0 / 1024.0);
        assert!(paired_t(&[0.1]).is_err());
    }

    fn brute_force_counts(n: usize) -> Vec<f64> {
        let mut counts = vec![0.0; n * (n + 1) / 2 + 1];
        for mask in 0u32..(1 << n) {
            let w: usize = (0..n).filter(|i| mask & (1 << i) != 0).map(|i| i + 1).sum();
            counts[w] += 1.0;
        }
        counts
    }

    proptest! {
        #[test]
        fn exact_counts_equal_enumeration(n in 1usize..=12) {
            prop_assert_eq!(exact_w_counts(n), brute_force_counts(n));
        }

        #[test]
        fn flipping_every_sign_mirrors_the_test(d in proptest::collection::vec(-100i32..100, 1..20)) {
            let d: Vec<f64> = d.into_iter().map(f64::from).collect();
            prop_assume!(d.iter().any(|x| *x != 0.0));
            let neg: Vec<f64> = d.iter().map(|x| -x).collect();
            let a = wilcoxon_signed_rank(&d, Alternative::Greater).unwrap();
            let b = wilcoxon_signed_rank(&neg, Alternative::Less).unwrap();
            prop_assert!((a.p_value - b.p_value).abs() < 1e-12);
            let less = wilcoxon_signed_rank(&d, Alternative::Less).unwrap();
            let two = wilcoxon_signed_rank(&d, Alternative::TwoSided).unwrap();
            prop_assert!((two.p_value - (2.0 * a.p_value.min(less.p_value)).min(1.0)).abs() < 1e-12);
        }

        #[test]
        fn the_ratio_interval_holds_its_estimate(
            pairs in proptest::collection::vec((1.0f64..100.0, 0.5f64..2.0), 2..25)
        ) {
            let base: Vec<f64> = pairs.iter().map(|p| p.0).collect();
            let cand: Vec<f64> = pairs.iter().map(|p| p.0 * p.1).collect();
            let ci = paired_ratio_ci(&base, &cand, 0.95).unwrap();
            prop_assert!(ci.low <= ci.estimate && ci.estimate <= ci.high);
            // Scaling every candidate scales the ratio and its interval alike.
            let doubled: Vec<f64> = cand.iter().map(|c| c * 2.0).collect();
            let ci2 = paired_ratio_ci(&base, &doubled, 0.95).unwrap();
            prop_assert!((ci2.estimate / ci.estimate - 2.0).abs() < 1e-9);
            prop_assert!((ci2.low / ci.low - 2.0).abs() < 1e-9);
        }
    }
}
