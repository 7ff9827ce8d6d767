use super::*;
use crate::better::Better;
use crate::comparison::{compare_sequential, ComparisonSettings};
use crate::holm::holm_adjust;
use crate::paired::paired_t;
use crate::student::student_t_quantile;
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

/// The closed form against the two marginal likelihoods integrated numerically: under
/// "no change" over `sigma` with prior `1 / sigma`; under a change also over the
/// standardized effect with prior `N(0, g)`.
#[test]
fn the_closed_form_is_the_ratio_of_the_integrated_likelihoods() {
    let d = [0.031, -0.012, 0.054, 0.022, 0.047];
    let g = MIXING_VARIANCE;
    let log_lik = |mu: f64, sigma: f64| -> f64 {
        d.iter()
            .map(|x| -0.5 * ((x - mu) / sigma).powi(2) - sigma.ln())
            .sum()
    };
    // sigma = e^u, so d sigma / sigma = du; a grid wide enough that both tails vanish.
    let (du, dd) = (0.01, 0.01);
    let (mut m0, mut m1) = (0.0, 0.0);
    let mut u = -9.0;
    while u < 2.0 {
        let sigma = f64::exp(u);
        m0 += log_lik(0.0, sigma).exp() * du;
        let mut delta = -12.0;
        while delta < 12.0 {
            let prior = (-0.5 * delta * delta / g).exp() / (2.0 * std::f64::consts::PI * g).sqrt();
            m1 += log_lik(delta * sigma, sigma).exp() * prior * du * dd;
            delta += dd;
        }
        u += du;
    }
    let t = paired_t(&d).unwrap().t;
    let closed = mixture_log_bayes_factor(t, d.len(), g).exp();
    let numeric = m1 / m0;
    assert!(
        (closed - numeric).abs() < 1e-3 * closed,
        "closed {closed}, numeric {numeric}"
    );
}

#[test]
fn one_round_says_nothing_and_the_bound_is_the_limit() {
    assert_eq!(mixture_log_bayes_factor(3.0, 1, 1.0), 0.0);
    // t = 0 always speaks for "no change": B = (1 + n g)^(-1/2).
    let b = mixture_log_bayes_factor(0.0, 10, 1.0);
    assert!((b + 0.5 * 11f64.ln()).abs() < 1e-12);
    let huge = mixture_log_bayes_factor(1e9, 10, 1.0);
    assert!((huge - max_log_bayes_factor(10, 1.0)).abs() < 1e-6);
    assert_eq!(
        mixture_log_bayes_factor(f64::INFINITY, 10, 1.0),
        max_log_bayes_factor(10, 1.0)
    );
}

#[test]
fn the_floor_of_rounds() {
    // (1 + 4)^(3/2) = 11.2 < 20; (1 + 5)^2 = 36 >= 20.
    assert_eq!(sequential_critical_t(4, 1.0, 0.05), None);
    assert!(sequential_critical_t(5, 1.0, 0.05).is_some());
    // Equal differences: t infinite, B at its bound, p the bound's reciprocal.
    let s = sequential_t(&[0.1; 5]).unwrap();
    assert!(s.t.is_infinite());
    assert!((s.p_value - 1.0 / 36.0).abs() < 1e-12, "{}", s.p_value);
    let zero = sequential_t(&[0.0; 6]).unwrap();
    assert_eq!(zero.t, 0.0);
    assert_eq!(zero.p_value, 1.0);
    assert!(sequential_t(&[0.1]).is_err());
    assert!(sequential_t(&[0.1, f64::NAN]).is_err());
    assert!(sequential_t_with(&[0.1, 0.2], 0.0).is_err());
}

#[test]
fn a_comparison_reports_the_sequence_interval() {
    let base = [100.0, 102.0, 98.0, 101.0, 99.0, 100.0, 103.0, 97.0];
    let cand: Vec<f64> = base.iter().map(|b| b * 1.10).collect();
    let settings = ComparisonSettings::default();
    let c = compare_sequential(&base, &cand, Better::Lower, &settings).unwrap();
    assert!((c.ratio.estimate - 1.10).abs() < 1e-9);
    assert_eq!(c.test.name(), "sequential-t");
    // Every ratio exactly 1.10: no spread, p at the bound of 8 rounds.
    assert!(c.p_adjusted < 0.05);
    assert_eq!(c.verdict, crate::Verdict::Regression);
    // With four rounds nothing can be flagged and the interval is unbounded.
    let four = compare_sequential(&base[..4], &cand[..4], Better::Lower, &settings).unwrap();
    assert_eq!(four.verdict, crate::Verdict::NoSignificantChange);
    assert_eq!(four.ratio.high, f64::INFINITY);
}

proptest! {
    #[test]
    fn free_of_scale_and_sign(d in prop::collection::vec(-1.0f64..1.0, 3..30), scale in 0.001f64..1000.0) {
        let a = sequential_t(&d).unwrap();
        let scaled: Vec<f64> = d.iter().map(|x| x * scale).collect();
        let b = sequential_t(&scaled).unwrap();
        prop_assert!((a.p_value - b.p_value).abs() <= 1e-9 * a.p_value.max(1e-300));
        let flipped: Vec<f64> = d.iter().map(|x| -x).collect();
        let c = sequential_t(&flipped).unwrap();
        prop_assert!((a.p_value - c.p_value).abs() <= 1e-9 * a.p_value.max(1e-300));
    }

    #[test]
    fn the_p_value_is_valid_and_only_falls(d in prop::collection::vec(-1.0f64..1.0, 2..40)) {
        let mut last = 1.0;
        for n in 2..=d.len() {
            let s = sequential_t(&d[..n]).unwrap();
            prop_assert!(s.p_value > 0.0 && s.p_value <= 1.0);
            prop_assert!(s.p_value <= last);
            prop_assert!(s.p_value <= 1.0 / s.bayes_factor + 1e-12);
            last = s.p_value;
        }
    }

    #[test]
    fn the_threshold_is_where_the_factor_reaches_the_level(n in 2usize..200, alpha in 0.0001f64..0.5, t in 0.0f64..20.0) {
        match sequential_critical_t(n, MIXING_VARIANCE, alpha) {
            None => prop_assert!(max_log_bayes_factor(n, MIXING_VARIANCE) <= (1.0 / alpha).ln()),
            Some(c) => {
                let at = mixture_log_bayes_factor(c, n, MIXING_VARIANCE);
                prop_assert!((at - (1.0 / alpha).ln()).abs() < 1e-8);
                let rejects = mixture_log_bayes_factor(t, n, MIXING_VARIANCE) >= (1.0 / alpha).ln();
                prop_assert!(rejects == (t >= c) || (t - c).abs() < 1e-6);
                // Never below the fixed-horizon threshold: looking often has a price.
                prop_assert!(c >= student_t_quantile(1.0 - alpha / 2.0, (n - 1) as f64) - 1e-9);
            }
        }
    }
}

/// A standard normal draw (Box-Muller), from the seeded generator.
fn normal(rng: &mut Pcg64) -> f64 {
    let u: f64 = rng.gen::<f64>().max(1e-300);
    let v: f64 = rng.gen();
    (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
}

/// The stopping rule `dyno compare` runs with `precision`: after every round, judge each
/// primary metric (Holm over the family), stop at the first flagged change, or when every
/// metric's minimum detectable change is at or below `target`, or at `max_rounds`.
/// Returns (flagged, rounds run) per simulated comparison.
struct Study {
    /// Per-round log-ratio sd of each primary metric.
    sds: Vec<f64>,
    /// True log change of each.
    shifts: Vec<f64>,
    target: f64,
    max_rounds: usize,
    alpha: f64,
}

impl Study {
    fn run(&self, trials: usize, seed: u64, test: fn(&[f64]) -> f64) -> (usize, f64) {
        let m = self.sds.len();
        let level = self.alpha / m as f64;
        // The detectable change at n rounds is (c_n + t_0.8) sd / sqrt(n): precomputed.
        let factor: Vec<Option<f64>> = (0..=self.max_rounds)
            .map(|n| {
                let c = sequential_critical_t(n, MIXING_VARIANCE, level)?;
                Some((c + student_t_quantile(0.8, (n - 1) as f64)) / (n as f64).sqrt())
            })
            .collect();
        let mut rng = Pcg64::seed_from_u64(seed);
        let (mut flagged, mut rounds) = (0, 0);
        for _ in 0..trials {
            let mut data: Vec<Vec<f64>> = vec![Vec::new(); m];
            for (n, factor) in factor.iter().enumerate().skip(1) {
                for (j, d) in data.iter_mut().enumerate() {
                    d.push(self.shifts[j] + self.sds[j] * normal(&mut rng));
                }
                if n < 2 {
                    continue;
                }
                let p: Vec<f64> = data.iter().map(|d| test(d)).collect();
                if holm_adjust(&p).unwrap().iter().any(|&q| q <= self.alpha) {
                    flagged += 1;
                    rounds += n;
                    break;
                }
                let precise = factor.is_some_and(|f| {
                    data.iter().all(|d| {
                        f * crate::sample_stddev(d).unwrap_or(f64::INFINITY) <= self.target
                    })
                });
                if precise || n == self.max_rounds {
                    rounds += n;
                    break;
                }
            }
        }
        (flagged, rounds as f64 / trials as f64)
    }
}

fn sequential_p(d: &[f64]) -> f64 {
    sequential_t(d).unwrap().p_value
}

fn fixed_horizon_p(d: &[f64]) -> f64 {
    paired_t(d).unwrap().p_value
}

#[test]
fn an_a_a_comparison_under_the_stopping_rule_flags_at_most_alpha() {
    // Three primary metrics, 3-8% per-round sd, a 5% target, alpha 0.05, Holm.
    let study = Study {
        sds: vec![0.03, 0.05, 0.08],
        shifts: vec![0.0; 3],
        target: 1.05f64.ln(),
        max_rounds: 60,
        alpha: 0.05,
    };
    let trials = 1000;
    let (flagged, mean_rounds) = study.run(trials, 7, sequential_p);
    assert!(
        flagged as f64 <= 0.05 * trials as f64,
        "{flagged} of {trials} A/A comparisons flagged"
    );
    // The same rule with a fixed-horizon t-test looked at after every round is what the
    // sequential test prevents: many times alpha.
    let (peeking, _) = study.run(trials, 7, fixed_horizon_p);
    assert!(
        peeking as f64 >= 0.15 * trials as f64,
        "{peeking} of {trials} flagged by peeking"
    );
    assert!(mean_rounds > 20.0, "{mean_rounds}");
}

#[test]
fn a_change_of_the_target_size_is_caught_at_some_round() {
    // +5% on the noisiest of the three metrics (sd 8% a round), 100 rounds at most.
    let study = Study {
        sds: vec![0.03, 0.05, 0.08],
        shifts: vec![0.0, 0.0, 1.05f64.ln()],
        target: 1.05f64.ln(),
        max_rounds: 100,
        alpha: 0.05,
    };
    let trials = 500;
    let (flagged, _) = study.run(trials, 11, sequential_p);
    assert!(
        flagged as f64 >= 0.8 * trials as f64,
        "{flagged} of {trials} comparisons caught a 5% change"
    );
    // On a metric with 5% sd it is caught nearly always, and well before 100 rounds.
    let quieter = Study {
        shifts: vec![0.0, 1.05f64.ln(), 0.0],
        ..study
    };
    let (flagged, rounds) = quieter.run(trials, 12, sequential_p);
    assert!(flagged as f64 >= 0.95 * trials as f64, "{flagged}");
    assert!(rounds < 40.0, "{rounds}");
}
