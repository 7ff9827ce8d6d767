//! Seeded percentile bootstrap intervals for a median and for a ratio of medians.
//!
//! Every function takes a `seed` and draws from [`rand_pcg::Pcg64`], so the same input and
//! seed give the same interval on every machine. The resampling loop allocates nothing per
//! resample: one scratch buffer is refilled and its median found with
//! `select_nth_unstable`, which keeps 250 intervals of 10,000 resamples well under a second.

use rand::{Rng, RngCore, SeedableRng};
use rand_pcg::Pcg64;

use crate::error::{check_open_unit, check_sample, StatsError};
use crate::interval::ConfidenceInterval;
use crate::quantile::{median_in_place, quantile_sorted, QuantileMethod};

/// Percentile bootstrap confidence interval for the median of `data`.
///
/// Draws `resamples` samples of `data.len()` values with replacement, takes each median, and
/// returns the `(1-c)/2` and `(1+c)/2` quantiles (linear) of those medians. `achieved` is the
/// nominal level. Errors: empty `data`, NaN, `confidence` outside (0, 1), `resamples == 0`.
pub fn bootstrap_median_ci(
    data: &[f64],
    confidence: f64,
    resamples: usize,
    seed: u64,
) -> Result<ConfidenceInterval, StatsError> {
    check_sample(data, "data", 1)?;
    check_inputs(confidence, resamples)?;
    let mut rng = Pcg64::seed_from_u64(seed);
    let mut buf = vec![0.0; data.len()];
    let mut medians = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        medians.push(resampled_median(data, &mut buf, &mut rng));
    }
    buf.copy_from_slice(data);
    let estimate = median_in_place(&mut buf);
    Ok(percentile_interval(estimate, &mut medians, confidence))
}

/// Percentile bootstrap confidence interval for `median(b) / median(a)`.
///
/// `a` and `b` are resampled independently (they are separate runs, not pairs). A resample
/// whose `a`-median is zero yields an infinite or NaN ratio; NaN ratios sort above `+inf`, so
/// such an interval has an unbounded upper end rather than a silently wrong one.
/// Errors: either sample empty or with NaN, `median(a) == 0`, bad `confidence` or
/// `resamples == 0`.
pub fn bootstrap_ratio_of_medians_ci(
    a: &[f64],
    b: &[f64],
    confidence: f64,
    resamples: usize,
    seed: u64,
) -> Result<ConfidenceInterval, StatsError> {
    check_sample(a, "a", 1)?;
    check_sample(b, "b", 1)?;
    check_inputs(confidence, resamples)?;
    let mut buf_a = a.to_vec();
    let mut buf_b = b.to_vec();
    let median_a = median_in_place(&mut buf_a);
    if median_a == 0.0 {
        return Err(StatsError::OutOfRange {
            what: "median(a)",
            value: 0.0,
            range: "non-zero (it is the denominator)",
        });
    }
    let estimate = median_in_place(&mut buf_b) / median_a;
    let mut rng = Pcg64::seed_from_u64(seed);
    let mut ratios = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        let ma = resampled_median(a, &mut buf_a, &mut rng);
        let mb = resampled_median(b, &mut buf_b, &mut rng);
        ratios.push(mb / ma);
    }
    Ok(percentile_interval(estimate, &mut ratios, confidence))
}

fn check_inputs(confidence: f64, resamples: usize) -> Result<(), StatsError> {
    check_open_unit(confidence, "confidence")?;
    if resamples == 0 {
        return Err(StatsError::OutOfRange {
            what: "resamples",
            value: 0.0,
            range: "[1, inf)",
        });
    }
    Ok(())
}

/// Fills `buf` (same length as `data`) with a resample of `data` and returns its median.
///
/// Each 64-bit draw yields two indices by 32-bit multiply-shift (`(r * n) >> 32`), half the
/// generator calls of `gen_range`. Its bias, at most `n / 2^32` in any index's probability,
/// is far below the resolution of any bootstrap; samples of 2^32 values or more fall back to
/// `gen_range`.
fn resampled_median(data: &[f64], buf: &mut [f64], rng: &mut Pcg64) -> f64 {
    let n = data.len();
    if n as u64 >= 1 << 32 {
        for slot in buf.iter_mut() {
            *slot = data[rng.gen_range(0..n)];
        }
        return median_in_place(buf);
    }
    let index = |r32: u64| ((r32 * n as u64) >> 32) as usize;
    let mut pairs = buf.chunks_exact_mut(2);
    for pair in &mut pairs {
        let r = rng.next_u64();
        pair[0] = data[index(r & 0xffff_ffff)];
        pair[1] = data[index(r >> 32)];
    }
    for slot in pairs.into_remainder() {
        *slot = data[index(rng.next_u64() >> 32)];
    }
    median_in_place(buf)
}

fn percentile_interval(estimate: f64, stats: &mut [f64], confidence: f64) -> ConfidenceInterval {
    stats.sort_unstable_by(f64::total_cmp);
    let tail = (1.0 - confidence) / 2.0;
    ConfidenceInterval {
        estimate,
        low: quantile_sorted(stats, tail, QuantileMethod::Linear),
        high: quantile_sorted(stats, 1.0 - tail, QuantileMethod::Linear),
        requested: confidence,
        achieved: confidence,
    }
}

#[cfg(test)]
mod tests {
    use super::{bootstrap_median_ci, bootstrap_ratio_of_medians_ci};
    use proptest::prelude::*;
    use rand::{Rng as _, SeedableRng as _};
    use rand_pcg::Pcg64;

    fn noisy(center: f64, noise: f64, n: usize, seed: u64) -> Vec<f64> {
        let mut rng = Pcg64::seed_from_u64(seed);
        (0..n)
            .map(|_| center * (1.0 + noise * (rng.gen::<f64>() * 2.0 - 1.0)))
            .collect()
    }

    #[test]
    fn same_seed_same_interval() {
        let data = noisy(100.0, 0.05, 20, 1);
        let a = bootstrap_median_ci(&data, 0.95, 2000, 7).unwrap();
        let b = bootstrap_median_ci(&data, 0.95, 2000, 7).unwrap();
        let c = bootstrap_median_ci(&data, 0.95, 2000, 8).unwrap();
        assert_eq!(a, b);
        // Another seed moves the bounds by far less than the 5% noise.
        assert!(
            (a.low - c.low).abs() < 1.5 && (a.high - c.high).abs() < 1.5,
            "{a:?} {c:?}"
        );
    }

    #[test]
    fn median_interval_is_plausible() {
        let data = noisy(100.0, 0.02, 30, 3);
        let ci = bootstrap_median_ci(&data, 0.95, 5000, 11).unwrap();
        assert!(ci.low < ci.estimate && ci.estimate < ci.high, "{ci:?}");
        assert!(ci.low > 97.0 && ci.high < 103.0, "{ci:?}");
        assert_eq!(ci.achieved, 0.95);
    }

    #[test]
    fn ratio_interval_finds_a_ten_percent_slowdown() {
        let a = noisy(100.0, 0.02, 20, 5);
        let b = noisy(110.0, 0.02, 20, 6);
        let ci = bootstrap_ratio_of_medians_ci(&a, &b, 0.95, 5000, 13).unwrap();
        assert!(ci.low > 1.05 && ci.high < 1.15, "{ci:?}");
        assert!(ci.low <= ci.estimate && ci.estimate <= ci.high);
    }

    #[test]
    fn constant_sample_gives_degenerate_interval() {
        let ci = bootstrap_median_ci(&[4.0; 9], 0.9, 100, 0).unwrap();
        assert_eq!((ci.low, ci.estimate, ci.high), (4.0, 4.0, 4.0));
    }

    #[test]
    fn invalid_inputs() {
        assert!(bootstrap_median_ci(&[], 0.95, 10, 0).is_err());
        assert!(bootstrap_median_ci(&[1.0], 0.95, 0, 0).is_err());
        assert!(bootstrap_median_ci(&[1.0, f64::NAN], 0.95, 10, 0).is_err());
        assert!(bootstrap_ratio_of_medians_ci(&[0.0, 0.0, 1.0], &[1.0], 0.95, 10, 0).is_err());
        assert!(bootstrap_ratio_of_medians_ci(&[1.0], &[1.0], 0.0, 10, 0).is_err());
    }

    proptest! {
        #[test]
        fn bounds_lie_within_sample_range(
            data in prop::collection::vec(-1e3f64..1e3, 1..30),
            seed in any::<u64>(),
        ) {
            let ci = bootstrap_median_ci(&data, 0.9, 200, seed).unwrap();
            let min = data.iter().copied().fold(f64::INFINITY, f64::min);
            let max = data.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            prop_assert!(min <= ci.low && ci.low <= ci.high && ci.high <= max);
        }
    }
}
