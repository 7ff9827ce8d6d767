//! Quantiles, location and spread: the numbers every summary of samples is made of.
//!
//! All functions take unsorted data and leave it untouched. Functions returning `Option`
//! return `None` for an empty sample, a sample containing NaN, or a `p` outside `[0, 1]`.

/// How a quantile between two order statistics is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QuantileMethod {
    /// No interpolation: the smallest value with at least a fraction `p` of the sample at
    /// or below it, i.e. `x[ceil(p*n) - 1]` of the sorted sample (`x[0]` for `p = 0`).
    /// This is how Cardano's release benchmarks report centiles.
    NearestRank,
    /// Hyndman-Fan type 7 linear interpolation between `x[floor(h)]` and `x[floor(h)+1]`
    /// with `h = (n - 1) p`; the default of numpy and R.
    Linear,
}

/// The `p`-quantile of `data` (unsorted) by `method`.
///
/// Returns `None` if `data` is empty or contains NaN, or if `p` is outside `[0, 1]`.
pub fn quantile(data: &[f64], p: f64, method: QuantileMethod) -> Option<f64> {
    if data.is_empty() || !(0.0..=1.0).contains(&p) || data.iter().any(|x| x.is_nan()) {
        return None;
    }
    let mut sorted = data.to_vec();
    sorted.sort_unstable_by(f64::total_cmp);
    Some(quantile_sorted(&sorted, p, method))
}

/// The `p`-quantile of an already sorted, non-empty, NaN-free sample.
///
/// `p` is clamped to `[0, 1]`. Panics if `sorted` is empty.
pub fn quantile_sorted(sorted: &[f64], p: f64, method: QuantileMethod) -> f64 {
    assert!(!sorted.is_empty(), "quantile of an empty sample");
    let n = sorted.len();
    let p = p.clamp(0.0, 1.0);
    match method {
        QuantileMethod::NearestRank => {
            let rank = (p * n as f64).ceil() as usize;
            sorted[rank.clamp(1, n) - 1]
        }
        QuantileMethod::Linear => {
            let h = (n - 1) as f64 * p;
            let lo = h.floor() as usize;
            let frac = h - lo as f64;
            if lo + 1 >= n || frac == 0.0 {
                sorted[lo.min(n - 1)]
            } else {
                sorted[lo] + frac * (sorted[lo + 1] - sorted[lo])
            }
        }
    }
}

/// The median of `data` (unsorted), by [`QuantileMethod::Linear`]: the mean of the two middle
/// values for an even count.
///
/// Returns `None` if `data` is empty or contains NaN.
pub fn median(data: &[f64]) -> Option<f64> {
    quantile(data, 0.5, QuantileMethod::Linear)
}

/// The median of a mutable scratch buffer, reordering it; no allocation.
///
/// Uses `select_nth_unstable`, so it runs in linear time. Panics if `buf` is empty. The
/// caller guarantees there is no NaN.
pub(crate) fn median_in_place(buf: &mut [f64]) -> f64 {
    let n = buf.len();
    let mid = n / 2;
    let (lower, &mut upper_mid, _) = buf.select_nth_unstable_by(mid, f64::total_cmp);
    if n % 2 == 1 {
        upper_mid
    } else {
        let lower_mid = lower.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        // Same arithmetic as `quantile_sorted(.., 0.5, Linear)` so both agree to the bit.
        lower_mid + 0.5 * (upper_mid - lower_mid)
    }
}

/// The arithmetic mean; `None` if `data` is empty or contains NaN.
pub fn mean(data: &[f64]) -> Option<f64> {
    if data.is_empty() || data.iter().any(|x| x.is_nan()) {
        return None;
    }
    Some(data.iter().sum::<f64>() / data.len() as f64)
}

/// The sample standard deviation (divisor `n - 1`); `Some(0.0)` for a single value, `None`
/// if `data` is empty or contains NaN.
pub fn sample_stddev(data: &[f64]) -> Option<f64> {
    let m = mean(data)?;
    if data.len() < 2 {
        return Some(0.0);
    }
    let ss: f64 = data.iter().map(|x| (x - m) * (x - m)).sum();
    Some((ss / (data.len() - 1) as f64).sqrt())
}

/// The coefficient of variation, sample standard deviation divided by the mean.
///
/// `Some(0.0)` when fewer than two values are given; `None` if `data` is empty or contains
/// NaN. A zero mean gives an infinite or NaN ratio, returned as is.
pub fn coefficient_of_variation(data: &[f64]) -> Option<f64> {
    let m = mean(data)?;
    if data.len() < 2 {
        return Some(0.0);
    }
    Some(sample_stddev(data)? / m)
}

/// The factor that makes [`mad`] a consistent estimator of the standard deviation of normally
/// distributed data: `1 / Phi^-1(3/4)`.
pub const MAD_NORMAL_SCALE: f64 = 1.4826;

/// The raw median absolute deviation, `median(|x - median(x)|)`, unscaled.
///
/// `None` if `data` is empty or contains NaN. See [`mad_scaled`] for the version comparable
/// with a standard deviation.
pub fn mad(data: &[f64]) -> Option<f64> {
    let m = median(data)?;
    let mut dev: Vec<f64> = data.iter().map(|x| (x - m).abs()).collect();
    Some(median_in_place(&mut dev))
}

/// The median absolute deviation scaled by [`MAD_NORMAL_SCALE`] (1.4826), which estimates the
/// standard deviation for normal data while ignoring outliers.
pub fn mad_scaled(data: &[f64]) -> Option<f64> {
    mad(data).map(|m| m * MAD_NORMAL_SCALE)
}

/// A five-number summary with mean and spread, as shown beside every reported median.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// Number of values.
    pub n: usize,
    /// Smallest value.
    pub min: f64,
    /// First quartile ([`QuantileMethod::Linear`]).
    pub q1: f64,
    /// Median ([`QuantileMethod::Linear`]).
    pub median: f64,
    /// Third quartile ([`QuantileMethod::Linear`]).
    pub q3: f64,
    /// Largest value.
    pub max: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (divisor `n - 1`); 0 for a single value.
    pub stddev: f64,
    /// Coefficient of variation, `stddev / mean`; 0 if `n < 2`; infinite or NaN for a zero
    /// mean (see [`coefficient_of_variation`]).
    pub cv: f64,
    /// Raw (unscaled) median absolute deviation; see [`mad`].
    pub mad: f64,
}

/// Summarises `data` (unsorted); `None` if it is empty or contains NaN.
pub fn summarize(data: &[f64]) -> Option<Summary> {
    if data.is_empty() || data.iter().any(|x| x.is_nan()) {
        return None;
    }
    let mut sorted = data.to_vec();
    sorted.sort_unstable_by(f64::total_cmp);
    let q = |p| quantile_sorted(&sorted, p, QuantileMethod::Linear);
    let mean = mean(data)?;
    let stddev = sample_stddev(data)?;
    Some(Summary {
        n: data.len(),
        min: sorted[0],
        q1: q(0.25),
        median: q(0.5),
        q3: q(0.75),
        max: sorted[sorted.len() - 1],
        mean,
        stddev,
        cv: if data.len() < 2 { 0.0 } else { stddev / mean },
        mad: mad(data)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const X: [f64; 10] = [7.0, 1.0, 9.0, 3.0, 5.0, 10.0, 2.0, 8.0, 4.0, 6.0];

    #[test]
    fn linear_matches_numpy_type7() {
        // numpy.quantile([1..10], p) for p = 0.1, 0.25, 0.5, 0.9: 1.9, 3.25, 5.5, 9.1
        let cases = [
            (0.0, 1.0),
            (0.1, 1.9),
            (0.25, 3.25),
            (0.5, 5.5),
            (0.9, 9.1),
            (1.0, 10.0),
        ];
        for (p, want) in cases {
            let got = quantile(&X, p, QuantileMethod::Linear).unwrap();
            assert!((got - want).abs() < 1e-12, "p={p}: {got} != {want}");
        }
    }

    #[test]
    fn nearest_rank_never_interpolates() {
        let cases = [
            (0.0, 1.0),
            (0.1, 1.0),
            (0.11, 2.0),
            (0.25, 3.0),
            (0.5, 5.0),
            (0.95, 10.0),
            (1.0, 10.0),
        ];
        for (p, want) in cases {
            assert_eq!(
                quantile(&X, p, QuantileMethod::NearestRank),
                Some(want),
                "p={p}"
            );
        }
    }

    #[test]
    fn invalid_inputs_give_none() {
        assert_eq!(quantile(&[], 0.5, QuantileMethod::Linear), None);
        assert_eq!(quantile(&X, 1.5, QuantileMethod::Linear), None);
        assert_eq!(quantile(&X, -0.1, QuantileMethod::NearestRank), None);
        assert_eq!(quantile(&X, f64::NAN, QuantileMethod::NearestRank), None);
        assert_eq!(median(&[1.0, f64::NAN]), None);
        assert_eq!(summarize(&[]), None);
        assert_eq!(mad(&[]), None);
    }

    #[test]
    fn median_even_and_odd() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[42.0]), Some(42.0));
    }

    #[test]
    fn mad_raw_and_scaled() {
        // median 3; deviations 2,1,0,1,97 -> median 1
        let d = [1.0, 2.0, 3.0, 4.0, 100.0];
        assert_eq!(mad(&d), Some(1.0));
        assert!((mad_scaled(&d).unwrap() - 1.4826).abs() < 1e-12);
    }

    #[test]
    fn summary_of_known_sample() {
        let s = summarize(&X).unwrap();
        assert_eq!(s.n, 10);
        assert_eq!(
            (s.min, s.q1, s.median, s.q3, s.max),
            (1.0, 3.25, 5.5, 7.75, 10.0)
        );
        assert!((s.mean - 5.5).abs() < 1e-12);
        // var of 1..10 with n-1 = 82.5 / 9
        assert!((s.stddev - (82.5f64 / 9.0).sqrt()).abs() < 1e-12);
        assert!((s.cv - s.stddev / 5.5).abs() < 1e-12);
        assert_eq!(s.mad, 2.5);
        let one = summarize(&[5.0]).unwrap();
        assert_eq!((one.stddev, one.cv, one.mad), (0.0, 0.0, 0.0));
    }

    proptest! {
        #[test]
        fn quantiles_are_monotone_and_bounded(
            data in prop::collection::vec(-1e6f64..1e6, 1..50),
            p1 in 0.0f64..=1.0, p2 in 0.0f64..=1.0,
        ) {
            let (lo, hi) = if p1 <= p2 { (p1, p2) } else { (p2, p1) };
            let min = data.iter().copied().fold(f64::INFINITY, f64::min);
            let max = data.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            for m in [QuantileMethod::Linear, QuantileMethod::NearestRank] {
                let a = quantile(&data, lo, m).unwrap();
                let b = quantile(&data, hi, m).unwrap();
                prop_assert!(a <= b);
                prop_assert!(min <= a && b <= max);
            }
            // nearest rank always returns a member of the sample
            let q = quantile(&data, p1, QuantileMethod::NearestRank).unwrap();
            prop_assert!(data.contains(&q));
        }

        #[test]
        fn median_in_place_agrees_with_sorting(data in prop::collection::vec(-1e6f64..1e6, 1..50)) {
            let mut buf = data.clone();
            prop_assert_eq!(median_in_place(&mut buf), median(&data).unwrap());
        }
    }
}
