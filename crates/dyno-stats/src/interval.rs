//! Confidence intervals for a median that need no distributional assumption: the exact
//! order-statistic (binomial) interval.
//!
//! For a continuous distribution, each value falls below the true median with probability
//! 1/2, so the number of values below it is Binomial(n, 1/2). The interval between the k-th
//! smallest and the k-th largest value, `[x(k), x(n-k+1)]`, therefore covers the median with
//! probability exactly `1 - 2 P(Bin(n, 1/2) <= k - 1)`. Only a few levels are attainable for
//! small n, so the achieved level is returned beside the requested one.

use crate::error::{check_open_unit, check_sample, StatsError};
use crate::quantile::{quantile_sorted, QuantileMethod};

/// A confidence interval around a point estimate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConfidenceInterval {
    /// The point estimate (the sample median, or the ratio of sample medians).
    pub estimate: f64,
    /// Lower bound.
    pub low: f64,
    /// Upper bound.
    pub high: f64,
    /// The confidence level that was asked for.
    pub requested: f64,
    /// The confidence level the interval actually has: exact for the order-statistic
    /// interval (at least `requested` unless the sample is too small, see [`median_ci`]),
    /// equal to `requested` (nominal) for bootstrap intervals.
    pub achieved: f64,
}

/// The distribution-free order-statistic confidence interval for the median of `data`.
///
/// Picks the narrowest interval `[x(k), x(n-k+1)]` whose exact coverage is at least
/// `confidence`. When even `[min, max]` falls short (coverage `1 - 2^(1-n)`, e.g. 93.75% for
/// n = 5, 87.5% for n = 4), it returns `[min, max]` and reports that lower coverage in
/// [`ConfidenceInterval::achieved`]; callers should compare it with `requested`.
///
/// Errors: empty `data`, NaN in `data`, `confidence` outside (0, 1).
pub fn median_ci(data: &[f64], confidence: f64) -> Result<ConfidenceInterval, StatsError> {
    check_sample(data, "data", 1)?;
    check_open_unit(confidence, "confidence")?;
    let mut sorted = data.to_vec();
    sorted.sort_unstable_by(f64::total_cmp);
    let n = sorted.len();
    let (k, achieved) = order_statistic_rank(n, confidence);
    Ok(ConfidenceInterval {
        estimate: quantile_sorted(&sorted, 0.5, QuantileMethod::Linear),
        low: sorted[k - 1],
        high: sorted[n - k],
        requested: confidence,
        achieved,
    })
}

/// The largest 1-based rank `k <= (n+1)/2` whose interval `[x(k), x(n-k+1)]` has coverage at
/// least `confidence`, with that coverage; `(1, coverage of [min, max])` when none reaches it.
pub fn order_statistic_rank(n: usize, confidence: f64) -> (usize, f64) {
    assert!(n > 0, "order statistics of an empty sample");
    let mut best = (1, coverage(n, 1));
    for k in 2..=n.div_ceil(2) {
        let c = coverage(n, k);
        if c >= confidence {
            best = (k, c);
        } else {
            break;
        }
    }
    best
}

/// Exact coverage of `[x(k), x(n-k+1)]`: `1 - 2 P(Bin(n, 1/2) <= k - 1)`.
fn coverage(n: usize, k: usize) -> f64 {
    (1.0 - 2.0 * binomial_half_cdf(n, k - 1)).max(0.0)
}

/// `P(Bin(n, 1/2) <= j)`, summed in log space so large `n` does not underflow.
fn binomial_half_cdf(n: usize, j: usize) -> f64 {
    let ln_half_n = -(n as f64) * std::f64::consts::LN_2;
    let mut ln_choose = 0.0; // ln C(n, 0)
    let mut total = 0.0;
    for i in 0..=j.min(n) {
        if i > 0 {
            ln_choose += ((n - i + 1) as f64).ln() - (i as f64).ln();
        }
        total += (ln_choose + ln_half_n).exp();
    }
    total.min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn five_values_give_min_max_at_93_75_percent() {
        let ci = median_ci(&[5.0, 3.0, 1.0, 4.0, 2.0], 0.90).unwrap();
        assert_eq!((ci.low, ci.estimate, ci.high), (1.0, 3.0, 5.0));
        assert!((ci.achieved - 0.9375).abs() < 1e-12);
        // 95% is not attainable with 5 values: still min..max, honest about the shortfall.
        let ci = median_ci(&[5.0, 3.0, 1.0, 4.0, 2.0], 0.95).unwrap();
        assert_eq!((ci.low, ci.high), (1.0, 5.0));
        assert!(ci.achieved < ci.requested);
    }

    #[test]
    fn textbook_ranks() {
        // n = 20, 95%: [x(6), x(15)], coverage 1 - 2 * 0.020695 = 0.958611 (binomial tables).
        let (k, c) = order_statistic_rank(20, 0.95);
        assert_eq!(k, 6);
        assert!((c - 0.958611).abs() < 1e-6, "{c}");
        // n = 10, 95%: [x(2), x(9)], coverage 1 - 2 * 11/1024 = 0.978516.
        let (k, c) = order_statistic_rank(10, 0.95);
        assert_eq!(k, 2);
        assert!((c - (1.0 - 22.0 / 1024.0)).abs() < 1e-12);
        let data: Vec<f64> = (1..=20).map(f64::from).collect();
        let ci = median_ci(&data, 0.95).unwrap();
        assert_eq!((ci.low, ci.estimate, ci.high), (6.0, 10.5, 15.0));
    }

    #[test]
    fn large_n_does_not_underflow() {
        let (k, c) = order_statistic_rank(5000, 0.95);
        // normal approximation: k ~ n/2 - 1.96 sqrt(n)/2 = 2430.7
        assert!((2425..=2435).contains(&k), "{k}");
        assert!((0.95..0.96).contains(&c), "{c}");
    }

    #[test]
    fn invalid_inputs() {
        assert!(matches!(
            median_ci(&[], 0.95),
            Err(StatsError::TooFewValues { .. })
        ));
        assert!(matches!(
            median_ci(&[1.0, f64::NAN], 0.95),
            Err(StatsError::NaN { .. })
        ));
        assert!(matches!(
            median_ci(&[1.0], 1.0),
            Err(StatsError::OutOfRange { .. })
        ));
        let one = median_ci(&[7.0], 0.5).unwrap();
        assert_eq!((one.low, one.high, one.achieved), (7.0, 7.0, 0.0));
    }

    proptest! {
        #[test]
        fn interval_contains_median_and_meets_level_when_possible(
            data in prop::collection::vec(-1e3f64..1e3, 1..60),
            conf in 0.5f64..0.99,
        ) {
            let ci = median_ci(&data, conf).unwrap();
            prop_assert!(ci.low <= ci.estimate && ci.estimate <= ci.high);
            let min_max = 1.0 - 2.0f64.powi(1 - data.len() as i32);
            if min_max >= conf {
                prop_assert!(ci.achieved >= conf);
            } else {
                prop_assert!((ci.achieved - min_max).abs() < 1e-12);
            }
        }
    }
}
