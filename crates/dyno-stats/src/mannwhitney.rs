//! The Mann-Whitney U test (Wilcoxon rank-sum): does one sample tend to hold larger values
//! than another? Rank-based, so it needs no normality and one wild sample moves it little.
//!
//! Conventions follow `scipy.stats.mannwhitneyu`: the statistic is `U1`, the U of the first
//! sample `x` (the number of pairs `(xi, yj)` with `xi > yj`, ties counting one half);
//! [`Alternative::Greater`] means `x` is stochastically greater than `y`.
//!
//! Method choice ([`mann_whitney_u`]): the exact null distribution when there are no ties and
//! both samples have at most [`EXACT_LIMIT`] values; otherwise the normal approximation with
//! tie correction and continuity correction.

use crate::error::{check_sample, StatsError};
use crate::normal::normal_sf;

/// Largest sample size (each side) for which the exact distribution is used by default.
pub const EXACT_LIMIT: usize = 20;

/// Which alternative hypothesis the p-value is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Alternative {
    /// The distributions differ in either direction.
    TwoSided,
    /// `x` tends to be smaller than `y`.
    Less,
    /// `x` tends to be larger than `y`.
    Greater,
}

/// How the p-value was computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MannWhitneyMethod {
    /// Exact null distribution of U (by dynamic programming); valid only without ties.
    Exact,
    /// Normal approximation with tie-corrected variance and a 0.5 continuity correction.
    Asymptotic,
}

/// The outcome of a Mann-Whitney U test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MannWhitney {
    /// `U1`, the statistic of the first sample; `U2 = n1 * n2 - U1`.
    pub u: f64,
    /// The p-value for [`MannWhitney::alternative`].
    pub p_value: f64,
    /// How the p-value was computed.
    pub method: MannWhitneyMethod,
    /// The alternative hypothesis tested.
    pub alternative: Alternative,
    /// Size of the first sample.
    pub n1: usize,
    /// Size of the second sample.
    pub n2: usize,
}

impl MannWhitney {
    /// `U1 / (n1 n2)`: the probability that a random `x` exceeds a random `y` (ties count
    /// one half), the "common language" effect size. 0.5 means no tendency either way.
    pub fn probability_of_superiority(&self) -> f64 {
        self.u / (self.n1 as f64 * self.n2 as f64)
    }
}

/// Mann-Whitney U test of `x` against `y`, choosing the method automatically (see the
/// module docs). Errors: an empty sample or a NaN.
pub fn mann_whitney_u(
    x: &[f64],
    y: &[f64],
    alternative: Alternative,
) -> Result<MannWhitney, StatsError> {
    mann_whitney_u_using(x, y, alternative, None)
}

/// Mann-Whitney U test with an explicit method (`None` chooses as [`mann_whitney_u`] does).
///
/// Asking for [`MannWhitneyMethod::Exact`] with tied values is an error: the exact
/// distribution here assumes distinct values.
pub fn mann_whitney_u_using(
    x: &[f64],
    y: &[f64],
    alternative: Alternative,
    method: Option<MannWhitneyMethod>,
) -> Result<MannWhitney, StatsError> {
    check_sample(x, "x", 1)?;
    check_sample(y, "y", 1)?;
    let (n1, n2) = (x.len(), y.len());
    let ranks = RankSum::of(x, y);
    let u1 = ranks.rank_sum_x - (n1 * (n1 + 1)) as f64 / 2.0;
    let has_ties = ranks.tie_term > 0.0;
    let method = match method {
        Some(MannWhitneyMethod::Exact) if has_ties => {
            return Err(StatsError::Shape(
                "exact Mann-Whitney distribution requested for samples with ties".into(),
            ))
        }
        Some(m) => m,
        None if !has_ties && n1 <= EXACT_LIMIT && n2 <= EXACT_LIMIT => MannWhitneyMethod::Exact,
        None => MannWhitneyMethod::Asymptotic,
    };
    let p_value = match method {
        MannWhitneyMethod::Exact => exact_p(u1, n1, n2, alternative),
        MannWhitneyMethod::Asymptotic => asymptotic_p(u1, n1, n2, ranks.tie_term, alternative),
    };
    Ok(MannWhitney {
        u: u1,
        p_value,
        method,
        alternative,
        n1,
        n2,
    })
}

/// Rank sum of `x` in the pooled sample (mid-ranks for ties) and `sum(t^3 - t)` over tie
/// groups.
struct RankSum {
    rank_sum_x: f64,
    tie_term: f64,
}

impl RankSum {
    fn of(x: &[f64], y: &[f64]) -> Self {
        let mut pooled: Vec<(f64, bool)> = x
            .iter()
            .map(|&v| (v, true))
            .chain(y.iter().map(|&v| (v, false)))
            .collect();
        pooled.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
        let mut rank_sum_x = 0.0;
        let mut tie_term = 0.0;
        let mut i = 0;
        while i < pooled.len() {
            let mut j = i + 1;
            while j < pooled.len() && pooled[j].0 == pooled[i].0 {
                j += 1;
            }
            // Positions i..j (0-based) share the mid-rank of 1-based ranks i+1..=j.
            let mid_rank = (i + 1 + j) as f64 / 2.0;
            let in_x = pooled[i..j].iter().filter(|p| p.1).count();
            rank_sum_x += mid_rank * in_x as f64;
            let t = (j - i) as f64;
            tie_term += t * t * t - t;
            i = j;
        }
        RankSum {
            rank_sum_x,
            tie_term,
        }
    }
}

/// Number of arrangements giving each value of U, for sizes `n1`, `n2` without ties.
///
/// These are the coefficients of the Gaussian binomial `[n1+n2 choose n1]_q`, built as
/// `prod_{i=1..n1} (1 - q^(n2+i)) / (1 - q^i)`; each partial product is itself a Gaussian
/// binomial, so every division is exact and the counts stay exact integers.
pub fn exact_u_counts(n1: usize, n2: usize) -> Vec<u128> {
    let max_u = n1 * n2;
    let mut poly = vec![0i128; max_u + 1];
    poly[0] = 1;
    for i in 1..=n1 {
        let up = n2 + i;
        for d in (up..=max_u).rev() {
            poly[d] -= poly[d - up];
        }
        for d in i..=max_u {
            poly[d] += poly[d - i];
        }
    }
    poly.into_iter()
        .map(|c| u128::try_from(c).expect("Gaussian binomial coefficients are non-negative"))
        .collect()
}

fn exact_p(u1: f64, n1: usize, n2: usize, alternative: Alternative) -> f64 {
    let counts = exact_u_counts(n1, n2);
    let total: f64 = counts.iter().map(|&c| c as f64).sum();
    let u = u1.round() as usize;
    let at_most = |k: usize| counts[..=k].iter().map(|&c| c as f64).sum::<f64>() / total;
    let at_least = |k: usize| counts[k..].iter().map(|&c| c as f64).sum::<f64>() / total;
    let p = match alternative {
        Alternative::Greater => at_least(u),
        Alternative::Less => at_most(u),
        Alternative::TwoSided => 2.0 * at_least(u).min(at_most(u)),
    };
    p.min(1.0)
}

fn asymptotic_p(u1: f64, n1: usize, n2: usize, tie_term: f64, alternative: Alternative) -> f64 {
    let (n1f, n2f) = (n1 as f64, n2 as f64);
    let n = n1f + n2f;
    let mu = n1f * n2f / 2.0;
    let var = n1f * n2f / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
    if var.is_nan() || var <= 0.0 {
        // Every value is tied: the data carry no evidence of any difference.
        return 1.0;
    }
    let u2 = n1f * n2f - u1;
    let u = match alternative {
        Alternative::Greater => u1,
        Alternative::Less => u2,
        Alternative::TwoSided => u1.max(u2),
    };
    let z = (u - mu - 0.5) / var.sqrt();
    let p = normal_sf(z);
    let p = if alternative == Alternative::TwoSided {
        2.0 * p
    } else {
        p
    };
    p.clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // The example of the scipy.stats.mannwhitneyu documentation.
    const MALES: [f64; 5] = [19.0, 22.0, 16.0, 29.0, 24.0];
    const FEMALES: [f64; 4] = [20.0, 11.0, 17.0, 12.0];

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1e-300)
    }

    #[test]
    fn scipy_documentation_example() {
        // scipy: MannwhitneyuResult(statistic=17.0, pvalue=0.1111111111111111)
        let r = mann_whitney_u(&MALES, &FEMALES, Alternative::TwoSided).unwrap();
        assert_eq!(r.u, 17.0);
        assert_eq!(r.method, MannWhitneyMethod::Exact);
        assert!(close(r.p_value, 1.0 / 9.0, 1e-12), "{}", r.p_value);
        // method="asymptotic": pvalue=0.11134688653314041
        let a = mann_whitney_u_using(
            &MALES,
            &FEMALES,
            Alternative::TwoSided,
            Some(MannWhitneyMethod::Asymptotic),
        )
        .unwrap();
        assert!(
            close(a.p_value, 0.11134688653314041, 1e-12),
            "{}",
            a.p_value
        );
    }

    #[test]
    fn one_sided_exact_values() {
        // P(U >= 17) for n1=5, n2=4 is 7/126 (enumerated with python itertools).
        let g = mann_whitney_u(&MALES, &FEMALES, Alternative::Greater).unwrap();
        assert!(close(g.p_value, 7.0 / 126.0, 1e-12), "{}", g.p_value);
        let l = mann_whitney_u(&MALES, &FEMALES, Alternative::Less).unwrap();
        assert!(close(l.p_value, 1.0 - 4.0 / 126.0, 1e-12), "{}", l.p_value);
    }

    #[test]
    fn exact_critical_value_from_tables() {
        // Two-sided 5% tables: n1 = n2 = 10 has critical U = 23 (reject when U <= 23):
        // P(U <= 23) <= 0.025 < P(U <= 24).
        let counts = exact_u_counts(10, 10);
        let total: u128 = counts.iter().sum();
        assert_eq!(total, 184_756); // C(20, 10)
        let cdf = |k: usize| counts[..=k].iter().sum::<u128>() as f64 / total as f64;
        assert!(
            cdf(23) <= 0.025 && cdf(24) > 0.025,
            "{} {}",
            cdf(23),
            cdf(24)
        );
        // n1 = n2 = 20: critical U = 127.
        let counts = exact_u_counts(20, 20);
        let total: u128 = counts.iter().sum();
        assert_eq!(total, 137_846_528_820); // C(40, 20)
        let cdf = |k: usize| counts[..=k].iter().sum::<u128>() as f64 / total as f64;
        assert!(
            cdf(127) <= 0.025 && cdf(128) > 0.025,
            "{} {}",
            cdf(127),
            cdf(128)
        );
    }

    #[test]
    fn ties_use_the_corrected_normal_approximation() {
        // Computed by hand with scipy's formulas (python3, math.erfc):
        // x = [1,2,2,3,4,5], y = [2,3,3,6,7,7,8]: U1 = 9, tie term sum(t^3 - t) = 54,
        // sigma = sqrt(42/12 * (14 - 54/156)), two-sided p = 0.09620204088643225
        let x = [1.0, 2.0, 2.0, 3.0, 4.0, 5.0];
        let y = [2.0, 3.0, 3.0, 6.0, 7.0, 7.0, 8.0];
        let r = mann_whitney_u(&x, &y, Alternative::TwoSided).unwrap();
        assert_eq!(r.u, 9.0);
        assert_eq!(r.method, MannWhitneyMethod::Asymptotic);
        assert!(
            close(r.p_value, 0.09620204088643225, 1e-10),
            "{}",
            r.p_value
        );
        let less = mann_whitney_u(&x, &y, Alternative::Less).unwrap();
        assert!(close(less.p_value, 0.048101020443216125, 1e-10));
        assert!(
            mann_whitney_u_using(&x, &y, Alternative::Less, Some(MannWhitneyMethod::Exact))
                .is_err()
        );
    }

    #[test]
    fn identical_constant_samples_give_p_one() {
        let r = mann_whitney_u(&[3.0; 30], &[3.0; 30], Alternative::TwoSided).unwrap();
        assert_eq!((r.u, r.p_value), (450.0, 1.0));
        assert_eq!(r.probability_of_superiority(), 0.5);
    }

    #[test]
    fn complete_separation_large_samples() {
        let x: Vec<f64> = (0..30).map(f64::from).collect();
        let y: Vec<f64> = (100..130).map(f64::from).collect();
        let r = mann_whitney_u(&x, &y, Alternative::Less).unwrap();
        assert_eq!(r.u, 0.0);
        assert_eq!(r.method, MannWhitneyMethod::Asymptotic);
        assert!(r.p_value < 1e-9 && r.p_value > 0.0, "{}", r.p_value);
    }

    #[test]
    fn invalid_inputs() {
        assert!(mann_whitney_u(&[], &[1.0], Alternative::TwoSided).is_err());
        assert!(mann_whitney_u(&[1.0], &[f64::NAN], Alternative::TwoSided).is_err());
    }

    fn sample() -> impl Strategy<Value = Vec<f64>> {
        prop::collection::vec((0i32..40).prop_map(f64::from), 1..25)
    }

    proptest! {
        #[test]
        fn swapping_samples_mirrors_the_test(x in sample(), y in sample()) {
            let xy = mann_whitney_u(&x, &y, Alternative::TwoSided).unwrap();
            let yx = mann_whitney_u(&y, &x, Alternative::TwoSided).unwrap();
            prop_assert_eq!(xy.u + yx.u, (x.len() * y.len()) as f64);
            prop_assert!(close(xy.p_value, yx.p_value, 1e-12));
            let g = mann_whitney_u(&x, &y, Alternative::Greater).unwrap();
            let l = mann_whitney_u(&y, &x, Alternative::Less).unwrap();
            prop_assert!(close(g.p_value, l.p_value, 1e-12));
            prop_assert!((0.0..=1.0).contains(&xy.p_value));
            let less = mann_whitney_u(&x, &y, Alternative::Less).unwrap();
            let two = (2.0 * g.p_value.min(less.p_value)).min(1.0);
            prop_assert!(close(xy.p_value, two, 1e-9), "{} vs {}", xy.p_value, two);
        }

        #[test]
        fn shifting_and_scaling_does_not_change_the_test(x in sample(), y in sample(), s in 0.5f64..4.0) {
            let a = mann_whitney_u(&x, &y, Alternative::Greater).unwrap();
            let xs: Vec<f64> = x.iter().map(|v| v * s + 1000.0).collect();
            let ys: Vec<f64> = y.iter().map(|v| v * s + 1000.0).collect();
            let b = mann_whitney_u(&xs, &ys, Alternative::Greater).unwrap();
            prop_assert_eq!(a.u, b.u);
            prop_assert!(close(a.p_value, b.p_value, 1e-9));
        }

        #[test]
        fn exact_and_normal_approximation_agree_for_moderate_samples(
            seed in any::<u64>(),
            n1 in 12usize..=20,
            n2 in 12usize..=20,
            shift in 0.0f64..1.5,
        ) {
            // Distinct values (no ties) from a seeded stream; y shifted by `shift`.
            use rand::{Rng, SeedableRng};
            let mut rng = rand_pcg::Pcg64::seed_from_u64(seed);
            let x: Vec<f64> = (0..n1).map(|_| rng.gen::<f64>()).collect();
            let y: Vec<f64> = (0..n2).map(|_| rng.gen::<f64>() + shift).collect();
            let exact = mann_whitney_u_using(&x, &y, Alternative::TwoSided, Some(MannWhitneyMethod::Exact)).unwrap();
            let approx = mann_whitney_u_using(&x, &y, Alternative::TwoSided, Some(MannWhitneyMethod::Asymptotic)).unwrap();
            prop_assert_eq!(exact.u, approx.u);
            prop_assert!((exact.p_value - approx.p_value).abs() < 0.01, "{} vs {}", exact.p_value, approx.p_value);
        }

        #[test]
        fn exact_counts_are_symmetric_and_sum_to_binomial(n1 in 1usize..15, n2 in 1usize..15) {
            let c = exact_u_counts(n1, n2);
            let rev: Vec<u128> = c.iter().rev().copied().collect();
            prop_assert_eq!(&c, &rev);
            prop_assert_eq!(c, exact_u_counts(n2, n1));
        }
    }
}
