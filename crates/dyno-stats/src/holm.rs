//! The Holm-Bonferroni step-down correction for many tests at once.
//!
//! Sort the `m` p-values ascending, `p(1) <= ... <= p(m)`. The adjusted value of `p(i)` is
//! `max_{j <= i} min(1, (m - j + 1) p(j))`; a hypothesis is rejected when its adjusted
//! p-value is `<= alpha`. This controls the family-wise error rate at `alpha` under any
//! dependence between the tests, and is uniformly more powerful than plain Bonferroni.

use crate::error::{check_open_unit, StatsError};

/// Holm-adjusted p-values and decisions, in the order the p-values were given.
#[derive(Debug, Clone, PartialEq)]
pub struct Holm {
    /// Adjusted p-values; monotone in the raw p-values and never below them.
    pub adjusted: Vec<f64>,
    /// `adjusted[i] <= alpha`.
    pub reject: Vec<bool>,
}

/// Holm-adjusted p-values, in input order. An empty input gives an empty output.
///
/// Errors: a p-value that is NaN or outside `[0, 1]`.
pub fn holm_adjust(p_values: &[f64]) -> Result<Vec<f64>, StatsError> {
    for &p in p_values {
        if !(0.0..=1.0).contains(&p) {
            return Err(StatsError::OutOfRange {
                what: "p-value",
                value: p,
                range: "[0, 1]",
            });
        }
    }
    let m = p_values.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p_values[a].total_cmp(&p_values[b]));
    let mut adjusted = vec![0.0; m];
    let mut running_max: f64 = 0.0;
    for (rank, &i) in order.iter().enumerate() {
        let scaled = ((m - rank) as f64 * p_values[i]).min(1.0);
        running_max = running_max.max(scaled);
        adjusted[i] = running_max;
    }
    Ok(adjusted)
}

/// Holm-Bonferroni at family-wise level `alpha`: adjusted p-values and reject flags.
///
/// Errors: a p-value that is NaN or outside `[0, 1]`; `alpha` outside (0, 1).
pub fn holm(p_values: &[f64], alpha: f64) -> Result<Holm, StatsError> {
    check_open_unit(alpha, "alpha")?;
    let adjusted = holm_adjust(p_values)?;
    let reject = adjusted.iter().map(|&p| p <= alpha).collect();
    Ok(Holm { adjusted, reject })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn textbook_example() {
        // Four tests, alpha 0.05: thresholds 0.0125, 0.0167, 0.025, 0.05.
        // p = 0.01 (rejected), 0.04 (0.04 > 0.0167: stop), so only the first is rejected.
        let h = holm(&[0.04, 0.01, 0.03, 0.005], 0.05).unwrap();
        // sorted 0.005, 0.01, 0.03, 0.04 -> 0.02, 0.03, 0.06, 0.06
        let want = [0.06, 0.03, 0.06, 0.02];
        for (got, want) in h.adjusted.iter().zip(want) {
            assert!((got - want).abs() < 1e-12, "{:?}", h.adjusted);
        }
        assert_eq!(h.reject, vec![false, true, false, true]);
    }

    #[test]
    fn caps_at_one_and_handles_empty() {
        assert_eq!(holm_adjust(&[0.5, 0.9]).unwrap(), vec![1.0, 1.0]);
        assert_eq!(holm(&[], 0.05).unwrap().adjusted, Vec::<f64>::new());
        assert!(holm(&[f64::NAN], 0.05).is_err());
        assert!(holm(&[1.5], 0.05).is_err());
        assert!(holm(&[0.5], 0.0).is_err());
    }

    proptest! {
        #[test]
        fn holm_is_a_conservative_step_down(
            p in prop::collection::vec(0.0f64..=1.0, 0..40),
            alpha in 0.001f64..0.5,
        ) {
            let h = holm(&p, alpha).unwrap();
            let raw_rejects = p.iter().filter(|&&x| x <= alpha).count();
            let holm_rejects = h.reject.iter().filter(|&&r| r).count();
            prop_assert!(holm_rejects <= raw_rejects);
            for i in 0..p.len() {
                prop_assert!(h.adjusted[i] >= p[i]);
                prop_assert!(h.adjusted[i] <= 1.0);
                for j in 0..p.len() {
                    if p[i] <= p[j] {
                        prop_assert!(h.adjusted[i] <= h.adjusted[j]);
                    }
                }
            }
            // Rejections form a prefix of the p-values sorted ascending.
            let mut order: Vec<usize> = (0..p.len()).collect();
            order.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
            let flags: Vec<bool> = order.iter().map(|&i| h.reject[i]).collect();
            let first_keep = flags.iter().position(|r| !r).unwrap_or(flags.len());
            prop_assert!(flags[first_keep..].iter().all(|r| !r));
            prop_assert_eq!(first_keep, holm_rejects);
        }
    }
}
