//! Where one value stands among others.

use crate::Better;

/// Percent of `values` that `x` beats, ties counting half (the mid-rank percentile), with
/// `better` deciding what beating means. NaN for no values.
///
/// ```
/// use dyno_stats::{percentile_rank, Better};
/// assert_eq!(percentile_rank(&[1.0, 2.0, 3.0, 4.0], 3.0, Better::Higher), 62.5);
/// ```
pub fn percentile_rank(values: &[f64], x: f64, better: Better) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let (mut worse, mut equal) = (0usize, 0usize);
    for &v in values {
        if better.is_better(x, v) {
            worse += 1;
        } else if v == x {
            equal += 1;
        }
    }
    (worse as f64 + equal as f64 / 2.0) / values.len() as f64 * 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_mid_rank_and_follow_the_direction() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile_rank(&v, 3.0, Better::Higher), 62.5);
        assert_eq!(percentile_rank(&v, 3.0, Better::Lower), 37.5);
        assert_eq!(percentile_rank(&v, 10.0, Better::Higher), 100.0);
        assert_eq!(percentile_rank(&[5.0], 5.0, Better::Higher), 50.0);
        assert!(percentile_rank(&[], 5.0, Better::Higher).is_nan());
    }
}
