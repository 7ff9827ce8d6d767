//! Tests of the three-decision SPRT: exact small cases, and seeded simulations of the
//! step a bisection runs (a confirmation's noise estimate, then rounds added one at a
//! time until a decision), whose error rates must stay within alpha and beta.

use super::*;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

/// A standard normal draw (Box-Muller), from the seeded generator.
fn normal(rng: &mut Pcg64) -> f64 {
    let u: f64 = rng.gen::<f64>().max(1e-300);
    let v: f64 = rng.gen();
    (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
}

/// Decisions over `trials` simulated steps: a confirmation of `prior_rounds` rounds
/// estimates the noise (its own mean taken out), then the step's rounds of true mean
/// `truth` arrive one at a time until the test decides. Returns the counts of Low,
/// Between and High and the mean rounds used.
fn simulate(
    truth: f64,
    change: f64,
    sd: f64,
    prior_rounds: usize,
    trials: usize,
    seed: u64,
) -> ([usize; 3], f64) {
    let mut rng = Pcg64::seed_from_u64(seed);
    let settings = SprtSettings::default();
    let mut counts = [0; 3];
    let mut rounds = 0;
    for _ in 0..trials {
        let confirmation: Vec<f64> = (0..prior_rounds)
            .map(|_| change + sd * normal(&mut rng))
            .collect();
        let prior = PriorNoise::of(&confirmation);
        let mut d = Vec::new();
        let look = loop {
            d.push(truth + sd * normal(&mut rng));
            let look = sprt_three_way(&d, 0.0, change, prior, &settings).unwrap();
            if look.decision.is_some() {
                break look;
            }
        };
        rounds += look.decided_at;
        let i = match look.decision.unwrap() {
            SprtDecision::Low => 0,
            SprtDecision::Between => 1,
            SprtDecision::High => 2,
        };
        counts[i] += 1;
    }
    (counts, rounds as f64 / trials as f64)
}

#[test]
fn a_revision_like_one_end_is_called_so_within_the_error_rates() {
    // A 10% change (log 0.095) under 3% per-round noise, the noise known from 6
    // confirmation rounds; alpha = beta = 0.01.
    let trials = 2000;
    let (good, good_rounds) = simulate(0.0, 0.095, 0.03, 6, trials, 1);
    let (bad, bad_rounds) = simulate(0.095, 0.095, 0.03, 6, trials, 2);
    let wrong = |c: [usize; 3], right: usize| (trials - c[right]) as f64 / trials as f64;
    assert!(wrong(good, 0) <= 0.015, "like good: {good:?}");
    assert!(wrong(bad, 2) <= 0.015, "like bad: {bad:?}");
    // Never the far end.
    assert!(
        good[2] <= trials / 200 && bad[0] <= trials / 200,
        "{good:?} {bad:?}"
    );
    // A clear step is cheap: about 4 rounds.
    assert!(
        good_rounds < 4.5 && bad_rounds < 4.5,
        "{good_rounds} {bad_rounds}"
    );
}

#[test]
fn a_revision_halfway_is_called_between() {
    let trials = 2000;
    let (half, rounds) = simulate(0.0475, 0.095, 0.03, 6, trials, 3);
    // Calling it an end needs one SPRT to err: about twice `between` in all.
    assert!(half[1] as f64 >= 0.92 * trials as f64, "halfway: {half:?}");
    assert!(rounds < 8.0, "{rounds}");
}

#[test]
fn the_error_rates_hold_with_a_short_confirmation_and_a_small_change() {
    // A 6% change under 2% noise (three sd), the noise known from 5 rounds only.
    let trials = 2000;
    let (good, _) = simulate(0.0, 0.058, 0.02, 5, trials, 4);
    let (bad, _) = simulate(0.058, 0.058, 0.02, 5, trials, 5);
    let wrong = |c: [usize; 3], right: usize| (trials - c[right]) as f64 / trials as f64;
    assert!(wrong(good, 0) <= 0.015, "like good: {good:?}");
    assert!(wrong(bad, 2) <= 0.015, "like bad: {bad:?}");
}

#[test]
fn a_change_of_two_sd_is_told_apart_within_the_cap_most_of_the_time() {
    // Where the cap of 20 rounds starts to bite: the errors grow past alpha, as the
    // rounds at the cap are called between.
    let trials = 1000;
    let (good, rounds) = simulate(0.0, 0.058, 0.03, 6, trials, 6);
    assert!(good[0] as f64 >= 0.9 * trials as f64, "{good:?}");
    assert!(rounds < 10.0, "{rounds}");
}

#[test]
fn a_decision_stands_as_rounds_are_added_and_replays_from_the_data() {
    let prior = Some(PriorNoise {
        variance: 0.03f64.powi(2),
        df: 8,
    });
    let s = SprtSettings::default();
    let d = [0.10, 0.09, 0.12];
    let first = sprt_three_way(&d, 0.0, 0.095, prior, &s).unwrap();
    assert_eq!(first.decision, Some(SprtDecision::High));
    let n = first.decided_at;
    assert!((2..=3).contains(&n), "{n} rounds");
    // Rounds measured after the decision (a step interrupted after it) change nothing.
    let more = [0.10, 0.09, 0.12, -0.2, -0.3];
    let later = sprt_three_way(&more, 0.0, 0.095, prior, &s).unwrap();
    assert_eq!(later.decision, first.decision);
    assert_eq!(later.decided_at, n);
    assert_eq!(later.mean, first.mean);
    // Known-variance log-likelihood ratios: (b - a) / var * sum(d - (a + b) / 2), with
    // the pooled variance (8 + n - 1 degrees of freedom k) widened by k / (k - 2).
    let own = PriorNoise::of(&d[..n]).unwrap();
    let k = (8 + n - 1) as f64;
    let var = (0.03f64.powi(2) * 8.0 + own.variance * (n - 1) as f64) / k * k / (k - 2.0);
    let expected = 0.0475 / var * d[..n].iter().map(|x| x - 0.07125).sum::<f64>();
    assert!((first.llr_high - expected).abs() < 1e-9);
    assert!((first.bounds_high.1 - (0.99f64 / 0.05).ln()).abs() < 1e-12);
    assert!((first.bounds_low.0 - (0.05f64 / 0.99).ln()).abs() < 1e-12);
}

#[test]
fn no_decision_without_noise_or_before_the_minimum_and_between_at_the_cap() {
    let s = SprtSettings::default();
    // One round and no prior: nothing to judge the noise by.
    let look = sprt_three_way(&[0.1], 0.0, 0.1, None, &s).unwrap();
    assert_eq!(look.decision, None);
    assert!(look.mean_interval.1.is_infinite());
    // Rounds that never settle: between, capped, with the share they measure.
    let wobbly: Vec<f64> = (0..20)
        .map(|i| if i % 2 == 0 { 0.02 } else { 0.08 })
        .collect();
    let look = sprt_three_way(&wobbly, 0.0, 0.1, None, &s).unwrap();
    assert_eq!(look.decision, Some(SprtDecision::Between));
    assert!((look.share - 0.5).abs() < 0.1, "{}", look.share);
    assert!(look.share_interval.0 < 0.5 && look.share_interval.1 > 0.5);
    // Noise too large to tell anything in 20 rounds: between because of the cap.
    let noisy: Vec<f64> = (0..20)
        .map(|i| if i % 2 == 0 { -0.5 } else { 0.5 })
        .collect();
    let look = sprt_three_way(&noisy, 0.0, 0.1, None, &s).unwrap();
    assert!(look.capped, "{look:?}");
    assert_eq!(look.decision, Some(SprtDecision::Between));
    assert_eq!(look.decided_at, 20);
    let look = sprt_three_way(&noisy[..19], 0.0, 0.1, None, &s).unwrap();
    assert_eq!(
        look.decision, None,
        "one round before the cap: another round"
    );
    // An improvement bisects the same way: the ends may be in either order.
    let better = [-0.1, -0.09, -0.11, -0.1, -0.105];
    let look = sprt_three_way(&better, 0.0, -0.1, None, &s).unwrap();
    assert_eq!(look.decision, Some(SprtDecision::High));
    assert!(sprt_three_way(&[0.1, 0.2], 0.1, 0.1, None, &s).is_err());
    assert!(sprt_three_way(&[f64::NAN], 0.0, 0.1, None, &s).is_err());
}

#[test]
fn pooled_noise_weights_by_degrees_of_freedom() {
    let a = PriorNoise {
        variance: 1.0,
        df: 3,
    };
    let b = PriorNoise {
        variance: 4.0,
        df: 1,
    };
    let p = a.pooled(b);
    assert_eq!(p.df, 4);
    assert!((p.variance - 7.0 / 4.0).abs() < 1e-12);
    let of = PriorNoise::of(&[1.0, 2.0, 3.0]).unwrap();
    assert_eq!(of.df, 2);
    assert!((of.variance - 1.0).abs() < 1e-12);
    assert_eq!(PriorNoise::of(&[1.0]), None);
}
