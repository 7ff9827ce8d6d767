//! Outlier flags by the Iglewicz-Hoaglin modified z-score,
//! `M = 0.6745 (x - median) / MAD`, flagged when `|M| > 3.5`.
//!
//! Median and MAD ignore the outliers they are hunting, unlike mean and standard deviation.
//! When more than half the values are equal the MAD is 0; then the score falls back to
//! `(x - median) / (1.253314 * mean absolute deviation)` (the same normal-consistent scale),
//! and when that is 0 too (all values equal) nothing is an outlier.

use crate::error::{check_non_negative, check_sample, StatsError};
use crate::quantile::{mad, median};

/// The threshold on `|M|` recommended by Iglewicz and Hoaglin.
pub const MODIFIED_Z_THRESHOLD: f64 = 3.5;

/// Which spread estimate scaled the scores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OutlierScale {
    /// `0.6745 / MAD` (the normal case).
    MedianAbsoluteDeviation,
    /// MAD was 0: `1 / (1.253314 * mean absolute deviation from the median)`.
    MeanAbsoluteDeviation,
    /// Every value equals the median: all scores are 0.
    Constant,
}

/// Modified z-scores and outlier flags, in input order.
#[derive(Debug, Clone, PartialEq)]
pub struct Outliers {
    /// The modified z-score of each value.
    pub scores: Vec<f64>,
    /// `|score| > threshold`.
    pub flagged: Vec<bool>,
    /// Which spread estimate was used.
    pub scale: OutlierScale,
}

/// Scores `data` and flags values whose `|M|` exceeds `threshold`
/// (use [`MODIFIED_Z_THRESHOLD`] unless you have a reason).
///
/// Errors: empty `data`, NaN, or a `threshold` that is NaN or negative.
pub fn modified_z_outliers(data: &[f64], threshold: f64) -> Result<Outliers, StatsError> {
    check_sample(data, "data", 1)?;
    check_non_negative(threshold, "threshold")?;
    let med = median(data).expect("checked non-empty, NaN-free");
    let raw_mad = mad(data).expect("checked non-empty, NaN-free");
    let mean_ad = data.iter().map(|x| (x - med).abs()).sum::<f64>() / data.len() as f64;
    let (factor, scale) = if raw_mad > 0.0 {
        (0.6745 / raw_mad, OutlierScale::MedianAbsoluteDeviation)
    } else if mean_ad > 0.0 {
        (
            1.0 / (1.253314 * mean_ad),
            OutlierScale::MeanAbsoluteDeviation,
        )
    } else {
        (0.0, OutlierScale::Constant)
    };
    let scores: Vec<f64> = data.iter().map(|x| (x - med) * factor).collect();
    let flagged = scores.iter().map(|s| s.abs() > threshold).collect();
    Ok(Outliers {
        scores,
        flagged,
        scale,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn flags_the_one_slow_run() {
        let d = [10.0, 10.2, 9.9, 10.1, 10.0, 9.8, 14.0];
        let o = modified_z_outliers(&d, MODIFIED_Z_THRESHOLD).unwrap();
        assert_eq!(o.scale, OutlierScale::MedianAbsoluteDeviation);
        assert_eq!(
            o.flagged,
            vec![false, false, false, false, false, false, true]
        );
        // median 10.0, MAD 0.1: M(14) = 0.6745 * 4 / 0.1 = 26.98
        assert!((o.scores[6] - 26.98).abs() < 1e-9, "{}", o.scores[6]);
        assert!((o.scores[1] - 1.349).abs() < 1e-9);
    }

    #[test]
    fn zero_mad_falls_back_to_mean_absolute_deviation() {
        let d = [5.0, 5.0, 5.0, 5.0, 9.0];
        let o = modified_z_outliers(&d, MODIFIED_Z_THRESHOLD).unwrap();
        assert_eq!(o.scale, OutlierScale::MeanAbsoluteDeviation);
        // mean abs deviation 0.8: M(9) = 4 / (1.253314 * 0.8) = 3.9894
        assert!((o.scores[4] - 4.0 / (1.253314 * 0.8)).abs() < 1e-12);
        assert_eq!(o.flagged, vec![false, false, false, false, true]);
        let c = modified_z_outliers(&[3.0; 4], MODIFIED_Z_THRESHOLD).unwrap();
        assert_eq!(c.scale, OutlierScale::Constant);
        assert_eq!(c.scores, vec![0.0; 4]);
        assert!(c.flagged.iter().all(|f| !f));
    }

    #[test]
    fn invalid_inputs() {
        assert!(modified_z_outliers(&[], 3.5).is_err());
        assert!(modified_z_outliers(&[1.0, f64::NAN], 3.5).is_err());
        assert!(modified_z_outliers(&[1.0], -1.0).is_err());
    }

    proptest! {
        #[test]
        fn at_most_half_are_flagged(data in prop::collection::vec(-1e3f64..1e3, 1..60)) {
            // With the MAD scale at least half the values are within one MAD of the median,
            // i.e. |M| <= 0.6745; a threshold of 0.6745 or more can flag at most half.
            let o = modified_z_outliers(&data, MODIFIED_Z_THRESHOLD).unwrap();
            let n_flagged = o.flagged.iter().filter(|&&f| f).count();
            prop_assert!(2 * n_flagged <= data.len());
            // Scores are equivariant: shifting and scaling the data leaves them unchanged.
            let moved: Vec<f64> = data.iter().map(|x| 3.0 * x + 7.0).collect();
            let o2 = modified_z_outliers(&moved, MODIFIED_Z_THRESHOLD).unwrap();
            for (a, b) in o.scores.iter().zip(&o2.scores) {
                prop_assert!((a - b).abs() <= 1e-6 * a.abs().max(1.0));
            }
        }
    }
}
