//! Stated power: the smallest change a comparison could have flagged, and the rounds a
//! change of a given size needs.
//!
//! "No significant change" says little on its own: with four rounds, a noisy metric and a
//! large Holm family no change of any size could have been flagged. A report therefore
//! states, per judged metric, the *minimum detectable change*: the relative change that
//! the design would flag with probability `power` (80% by convention) given its rounds,
//! the observed spread and the family it is corrected in.
//!
//! The arithmetic is the usual normal-theory approximation on the log scale (changes are
//! ratios, and a ratio's logarithm is what the paired t-test judges):
//!
//! `d = (t(1 - a/2, df) + t(power, df)) * se`, with `a = alpha / family`
//!
//! - paired t-test on per-round log ratios: `se = sd / sqrt(n)`, `df = n - 1`, `sd` the
//!   sd of the log ratios;
//! - unpaired (two samples of `n`): `se = sd * sqrt(2 / n)`, `df = 2n - 2`, `sd` the pooled
//!   sd of the log values;
//! - the rank tests (signed-rank, Mann-Whitney) need `pi / 3` times the rounds of their
//!   t counterparts under normal noise (asymptotic relative efficiency `3 / pi`), so `se`
//!   is scaled by `sqrt(pi / 3)`; and their exact p-values have a floor (`2 / 2^n`,
//!   `2 / C(2n, n)`): when `family` times the floor exceeds `alpha` no change of any size
//!   can be flagged, and [`PowerQuestion::min_detectable_change`] returns `None`.
//!
//! - the sequential test: as the paired t-test, with its threshold at `n` rounds
//!   ([`crate::sequential_critical_t`]) in place of `t(1 - a/2, df)`; its floor is the
//!   reciprocal of the largest Bayes factor `n` rounds can give.
//!
//! `a = alpha / family` is Holm's first (strictest) step: a change that reaches it is
//! flagged whatever the other metrics do, so the figure is what one metric can count on.
//! The change is `exp(d) - 1` (a rise; a fall of the same size in log units is
//! `1 - exp(-d)`, slightly smaller).

use crate::student::student_t_quantile;

/// The test a power question is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PowerTest {
    /// Student's t on per-round log ratios.
    PairedT,
    /// Exact Wilcoxon signed-rank on per-round log ratios.
    SignedRank,
    /// Two independent samples, exact Mann-Whitney.
    MannWhitney,
    /// The sequential t-test on per-round log ratios ([`crate::sequential_t`]): the
    /// threshold of its look at `n` rounds, [`crate::sequential_critical_t`], takes the
    /// place of the t quantile, and its floor is the Bayes factor's bound.
    Sequential,
}

/// A design whose power is asked for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PowerQuestion {
    /// The test.
    pub test: PowerTest,
    /// Rounds (pairs for the paired tests, values per subject for Mann-Whitney).
    pub n: usize,
    /// Spread on the log scale: the sd of the per-round log ratios (paired tests) or the
    /// pooled sd of the log values (Mann-Whitney).
    pub sd: f64,
    /// Family-wise significance level.
    pub alpha: f64,
    /// Comparisons in the Holm family (at least 1).
    pub family: usize,
    /// Probability of flagging the change (0.8 by convention).
    pub power: f64,
}

/// Rounds [`PowerQuestion::rounds_for`] searches up to.
pub const MAX_ROUNDS: usize = 1000;

impl PowerQuestion {
    /// The smallest relative change (0.05 = 5%) flagged with probability `power`, or
    /// `None` when the design cannot flag any change (fewer than 2 rounds, a rank test
    /// whose smallest p cannot reach `alpha / family`, a non-finite sd).
    pub fn min_detectable_change(&self) -> Option<f64> {
        self.min_detectable_log_change().map(f64::exp_m1)
    }

    /// [`PowerQuestion::min_detectable_change`] on the log scale.
    pub fn min_detectable_log_change(&self) -> Option<f64> {
        let family = self.family.max(1) as f64;
        let n = self.n as f64;
        if self.n < 2
            || !(self.sd.is_finite() && self.sd >= 0.0)
            || !(self.alpha > 0.0 && self.alpha < 1.0)
            || !(self.power > 0.0 && self.power < 1.0)
            || self.smallest_p() * family > self.alpha
        {
            return None;
        }
        let (se, df) = match self.test {
            PowerTest::PairedT | PowerTest::Sequential => (self.sd / n.sqrt(), n - 1.0),
            PowerTest::SignedRank => (self.sd / n.sqrt() * RANK_INFLATION.sqrt(), n - 1.0),
            PowerTest::MannWhitney => (
                self.sd * (2.0 / n).sqrt() * RANK_INFLATION.sqrt(),
                2.0 * n - 2.0,
            ),
        };
        let a = self.alpha / family;
        let threshold = match self.test {
            PowerTest::Sequential => {
                crate::sequential::sequential_critical_t(self.n, crate::MIXING_VARIANCE, a)?
            }
            _ => student_t_quantile(1.0 - a / 2.0, df),
        };
        let z = threshold + student_t_quantile(self.power, df);
        let d = z * se;
        d.is_finite().then_some(d)
    }

    /// The fewest rounds (from 2 up to [`MAX_ROUNDS`]) at which `change` (relative, e.g.
    /// 0.05) is flagged with probability `power`, the sd and family staying as they are;
    /// `None` beyond [`MAX_ROUNDS`].
    pub fn rounds_for(&self, change: f64) -> Option<usize> {
        if !(change.is_finite() && change > 0.0) {
            return None;
        }
        let target = change.ln_1p();
        (2..=MAX_ROUNDS).find(|&n| {
            PowerQuestion { n, ..*self }
                .min_detectable_log_change()
                .is_some_and(|d| d <= target)
        })
    }

    /// The fewest rounds at which the test can reach `alpha / family` at all (2 for the
    /// t-test; more for the exact rank tests' floor).
    pub fn rounds_to_reach_alpha(&self) -> Option<usize> {
        let family = self.family.max(1) as f64;
        (2..=MAX_ROUNDS).find(|&n| PowerQuestion { n, ..*self }.smallest_p() * family <= self.alpha)
    }

    /// The smallest two-sided p-value the exact test can give with `n` rounds (0 for the
    /// t-test, which has no floor): `2 / 2^n` signed-rank, `2 / C(2n, n)` Mann-Whitney,
    /// the reciprocal of the Bayes factor's bound for the sequential test.
    pub fn smallest_p(&self) -> f64 {
        let n = self.n.min(MAX_ROUNDS);
        match self.test {
            PowerTest::PairedT => 0.0,
            PowerTest::Sequential => {
                (-crate::sequential::max_log_bayes_factor(n, crate::MIXING_VARIANCE)).exp()
            }
            PowerTest::SignedRank => 2.0 / 2f64.powi(n as i32),
            PowerTest::MannWhitney => {
                2.0 / (0..n).fold(1.0, |acc, i| acc * (2 * n - i) as f64 / (i + 1) as f64)
            }
        }
    }
}

/// Rounds a rank test needs per round of its t counterpart under normal noise.
const RANK_INFLATION: f64 = std::f64::consts::PI / 3.0;

/// The sample standard deviation of `ln(candidate / baseline)` per pair, or `None` with
/// fewer than 2 pairs or a value that is not positive.
pub fn log_ratio_sd(baseline: &[f64], candidate: &[f64]) -> Option<f64> {
    let logs: Option<Vec<f64>> = baseline
        .iter()
        .zip(candidate)
        .map(|(&b, &c)| (b > 0.0 && c > 0.0).then(|| (c / b).ln()))
        .collect();
    sd(&logs?)
}

/// The pooled standard deviation of the log values of two samples, or `None` when either
/// has fewer than 2 values or a value that is not positive.
pub fn pooled_log_sd(a: &[f64], b: &[f64]) -> Option<f64> {
    let logs =
        |x: &[f64]| -> Option<Vec<f64>> { x.iter().map(|&v| (v > 0.0).then(|| v.ln())).collect() };
    let (la, lb) = (logs(a)?, logs(b)?);
    let (sa, sb) = (sd(&la)?, sd(&lb)?);
    let (na, nb) = (la.len() as f64, lb.len() as f64);
    Some((((na - 1.0) * sa * sa + (nb - 1.0) * sb * sb) / (na + nb - 2.0)).sqrt())
}

fn sd(x: &[f64]) -> Option<f64> {
    (x.len() >= 2).then(|| crate::sample_stddev(x)).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn paired(n: usize, sd: f64, family: usize) -> PowerQuestion {
        PowerQuestion {
            test: PowerTest::PairedT,
            n,
            sd,
            alpha: 0.05,
            family,
            power: 0.8,
        }
    }

    #[test]
    fn paired_t_matches_the_textbook_figure() {
        // n = 10, sd 0.04: (t(0.975, 9) + t(0.8, 9)) * 0.04 / sqrt(10)
        // = (2.2622 + 0.8834) * 0.012649 = 0.03979 in log units.
        let d = paired(10, 0.04, 1).min_detectable_log_change().unwrap();
        assert!((d - 0.03979).abs() < 2e-5, "{d}");
        let change = paired(10, 0.04, 1).min_detectable_change().unwrap();
        assert!((change - 0.0406).abs() < 1e-3, "{change}");
    }

    #[test]
    fn a_larger_family_needs_a_larger_change_and_more_rounds() {
        let one = paired(4, 0.26, 1).min_detectable_change().unwrap();
        let many = paired(4, 0.26, 762).min_detectable_change().unwrap();
        assert!(many > 3.0 * one, "{one} {many}");
        let r1 = paired(4, 0.03, 1).rounds_for(0.05).unwrap();
        let r20 = paired(4, 0.03, 20).rounds_for(0.05).unwrap();
        assert!(r20 > r1, "{r1} {r20}");
        // At the rounds found the change is detectable, one round fewer it is not.
        let q = paired(r20, 0.03, 20);
        assert!(q.min_detectable_change().unwrap() <= 0.05);
        let fewer = paired(r20 - 1, 0.03, 20);
        assert!(fewer.min_detectable_change().unwrap() > 0.05);
    }

    #[test]
    fn rank_tests_state_when_no_change_can_be_flagged() {
        let q = PowerQuestion {
            test: PowerTest::SignedRank,
            ..paired(4, 0.03, 1)
        };
        // 2 / 2^4 = 0.125 > 0.05: nothing can be significant with 4 pairs.
        assert_eq!(q.min_detectable_change(), None);
        assert_eq!(q.rounds_to_reach_alpha(), Some(6)); // 2 / 64 = 0.031
        let mw = PowerQuestion {
            test: PowerTest::MannWhitney,
            ..paired(3, 0.03, 1)
        };
        // 2 / C(6, 3) = 0.1; with 4 each 2 / 70 = 0.029.
        assert_eq!(mw.min_detectable_change(), None);
        assert_eq!(mw.rounds_to_reach_alpha(), Some(4));
        assert_eq!(paired(1, 0.03, 1).min_detectable_change(), None);
        assert_eq!(paired(1, 0.03, 1).rounds_to_reach_alpha(), Some(2));
    }

    #[test]
    fn the_sequential_test_needs_more_rounds_and_has_a_floor() {
        let seq = |n| PowerQuestion {
            test: PowerTest::Sequential,
            ..paired(n, 0.05, 1)
        };
        // Looking after every round costs sensitivity at any fixed n.
        for n in [5, 10, 30] {
            let s = seq(n).min_detectable_log_change().unwrap();
            let p = paired(n, 0.05, 1).min_detectable_log_change().unwrap();
            assert!(s > p, "{n}: {s} {p}");
        }
        // (1 + 4)^(3/2) < 20 <= (1 + 5)^2: nothing below 5 rounds at alpha 0.05.
        assert_eq!(seq(4).min_detectable_change(), None);
        assert_eq!(seq(4).rounds_to_reach_alpha(), Some(5));
        let r = seq(2).rounds_for(0.05).unwrap();
        assert!(seq(r).min_detectable_change().unwrap() <= 0.05);
        assert!(seq(r - 1).min_detectable_change().is_none_or(|c| c > 0.05));
    }

    #[test]
    fn spreads_from_values() {
        let b = [100.0, 100.0, 100.0];
        let c = [110.0, 121.0, 100.0];
        let logs = [1.1f64.ln(), 1.21f64.ln(), 0.0];
        let mean = logs.iter().sum::<f64>() / 3.0;
        let want = (logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / 2.0).sqrt();
        assert!((log_ratio_sd(&b, &c).unwrap() - want).abs() < 1e-12);
        assert_eq!(log_ratio_sd(&[1.0, 0.0], &[1.0, 1.0]), None);
        assert_eq!(pooled_log_sd(&[1.0, 1.0], &[2.0, 2.0]), Some(0.0));
        assert_eq!(pooled_log_sd(&[1.0], &[2.0, 2.0]), None);
    }

    proptest! {
        #[test]
        fn more_rounds_never_need_a_larger_change(n in 2usize..60, sd in 0.001f64..0.5, m in 1usize..50) {
            let a = paired(n, sd, m).min_detectable_log_change().unwrap();
            let b = paired(n + 1, sd, m).min_detectable_log_change().unwrap();
            prop_assert!(b <= a);
            // Linear in the sd.
            let c = paired(n, 2.0 * sd, m).min_detectable_log_change().unwrap();
            prop_assert!((c - 2.0 * a).abs() <= 1e-9 * c);
        }
    }
}
