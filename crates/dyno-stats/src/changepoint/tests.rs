use super::*;
use proptest::prelude::*;
use rand::{Rng, SeedableRng};

/// Gaussian noise of `sd` around `levels[k]` for the `lens[k]` values of stretch `k`.
fn noisy(levels: &[f64], lens: &[usize], sd: f64, seed: u64) -> Vec<f64> {
    let mut rng = rand_pcg::Pcg64::seed_from_u64(seed);
    let mut out = Vec::new();
    for (&level, &len) in levels.iter().zip(lens) {
        for _ in 0..len {
            // Box-Muller.
            let (u, v): (f64, f64) = (rng.gen_range(f64::EPSILON..1.0), rng.gen());
            let z = (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos();
            out.push(level + sd * z);
        }
    }
    out
}

fn strong(points: &[ChangePoint]) -> Vec<usize> {
    points
        .iter()
        .filter(|c| c.strength == Strength::Strong)
        .map(|c| c.index)
        .collect()
}

fn defaults() -> ChangePointSettings {
    ChangePointSettings::default()
}

#[test]
fn a_constant_series_has_no_change_point() {
    for len in [0, 1, 5, 8, 50, 200] {
        let found = change_points(&vec![42.0; len], &defaults()).unwrap();
        assert!(found.is_empty(), "len {len}: {found:?}");
    }
}

#[test]
fn a_planted_step_is_found_at_its_index() {
    // 30 runs at 100, 30 at 110, noise sd 1: a 10-sd step.
    let values = noisy(&[100.0, 110.0], &[30, 30], 1.0, 7);
    let found = change_points(&values, &defaults()).unwrap();
    assert_eq!(strong(&found), vec![30], "{found:?}");
    let c = found.iter().find(|c| c.index == 30).unwrap();
    assert!(c.p_value < 1e-12);
    assert!((c.mean_before - 100.0).abs() < 1.0 && (c.mean_after - 110.0).abs() < 1.0);
    assert!((c.relative_change - 0.1).abs() < 0.015);
    assert!(c.is_regression(Better::Lower) && !c.is_regression(Better::Higher));
}

#[test]
fn steps_in_a_long_history_are_all_found() {
    // 200 runs, three shifts; the long history is searched in overlapping windows.
    let values = noisy(&[100.0, 105.0, 95.0, 100.0], &[60, 50, 40, 50], 1.0, 11);
    let found = change_points(&values, &defaults()).unwrap();
    let strong = strong(&found);
    assert_eq!(strong.len(), 3, "{found:?}");
    for (got, want) in strong.iter().zip([60, 110, 150]) {
        assert!(got.abs_diff(want) <= 1, "{got} vs {want}: {found:?}");
    }
}

#[test]
fn a_step_at_the_end_needs_min_segment_points_after_it() {
    let settings = defaults();
    let base = noisy(&[100.0], &[40], 1.0, 3);
    let step = |after: usize| {
        let mut v = base.clone();
        v.extend(noisy(&[120.0], &[after], 1.0, 4));
        change_points(&v, &settings).unwrap()
    };
    // Too few values after it to place the change at 40; the shift may show earlier,
    // at a split whose right stretch holds old values too.
    assert!(!strong(&step(settings.min_segment - 1)).contains(&40));
    assert_eq!(strong(&step(settings.min_segment)), vec![40]);
}

#[test]
fn weak_points_lie_between_the_two_thresholds() {
    // A 0.7-sd step over 40 + 40 points: significant, though often not strongly so.
    let mut weak_seen = false;
    for seed in 0..40 {
        let values = noisy(&[100.0, 100.7], &[40, 40], 1.0, seed);
        for c in change_points(&values, &defaults()).unwrap() {
            match c.strength {
                Strength::Strong => assert!(c.p_value <= 0.001, "{c:?}"),
                Strength::Weak => {
                    weak_seen = true;
                    assert!(c.p_value > 0.001 && c.p_value <= 0.05, "{c:?}");
                }
            }
        }
    }
    assert!(weak_seen, "some series show a weak change point");
}

#[test]
fn min_magnitude_drops_small_significant_shifts() {
    let values = noisy(&[100.0, 101.0], &[40, 40], 0.1, 5);
    assert_eq!(
        strong(&change_points(&values, &defaults()).unwrap()),
        vec![40]
    );
    let coarse = ChangePointSettings {
        min_magnitude: 0.02,
        ..defaults()
    };
    assert!(change_points(&values, &coarse).unwrap().is_empty());
}

#[test]
fn bad_input_and_settings_are_errors() {
    assert!(matches!(
        change_points(&[1.0, f64::NAN], &defaults()),
        Err(StatsError::NaN { .. })
    ));
    assert!(matches!(
        change_points(&[1.0, f64::INFINITY], &defaults()),
        Err(StatsError::OutOfRange { what: "values", .. })
    ));
    let cases = [
        (
            ChangePointSettings {
                p_strong: 0.0,
                ..defaults()
            },
            "p_strong",
        ),
        (
            ChangePointSettings {
                p_weak: 0.0001,
                ..defaults()
            },
            "p_weak",
        ),
        (
            ChangePointSettings {
                min_segment: 0,
                ..defaults()
            },
            "min_segment",
        ),
        (
            ChangePointSettings {
                window: 5,
                ..defaults()
            },
            "window",
        ),
        (
            ChangePointSettings {
                min_magnitude: -1.0,
                ..defaults()
            },
            "min_magnitude",
        ),
    ];
    for (settings, name) in cases {
        match change_points(&[1.0; 10], &settings) {
            Err(StatsError::OutOfRange { what, .. }) => assert_eq!(what, name),
            other => panic!("{name}: {other:?}"),
        }
    }
}

#[test]
fn the_t_test_matches_a_hand_computation() {
    // a = 1, 2, 3 (mean 2, ss 2); b = 4, 5, 6 (mean 5, ss 2); pooled var 1, se
    // sqrt(2/3), t = 3.674, df 4: two-sided p = 0.02131.
    let (t, p) = t_test(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]);
    assert!((t - 3.674_235).abs() < 1e-6, "{t}");
    assert!((p - 0.021_311).abs() < 1e-5, "{p}");
    assert_eq!(t_test(&[1.0, 1.0], &[2.0, 2.0]), (f64::INFINITY, 0.0));
    assert_eq!(t_test(&[1.0, 1.0], &[1.0, 1.0]), (0.0, 1.0));
    assert_eq!(t_test(&[1.0], &[2.0]), (0.0, 1.0), "no degrees of freedom");
}

#[test]
fn the_energy_split_of_a_clean_step_is_the_step() {
    let y = [1.0, 1.0, 1.0, 1.0, 5.0, 5.0, 5.0];
    assert_eq!(best_split(&y, 1).map(|b| b.0), Some(4));
    assert_eq!(best_split(&y, 3).map(|b| b.0), Some(4));
    assert_eq!(
        best_split(&y, 4),
        None,
        "7 values cannot leave 4 on each side"
    );
}

fn point(index: usize, before: f64, after: f64, strength: Strength) -> ChangePoint {
    ChangePoint {
        index,
        p_value: 1e-6,
        mean_before: before,
        mean_after: after,
        relative_change: (after - before) / before,
        strength,
    }
}

#[test]
fn the_newest_point_regresses_only_after_a_recent_strong_worsening() {
    let up = point(95, 100.0, 110.0, Strength::Strong);
    // Latency (lower is better) went up 5 runs before the end of 100: a regression.
    assert_eq!(latest_regression(&[up], 100, Better::Lower, 10), Some(&up));
    // Throughput went up: an improvement.
    assert_eq!(latest_regression(&[up], 100, Better::Higher, 10), None);
    // Too long ago for this build to be blamed.
    assert_eq!(latest_regression(&[up], 120, Better::Lower, 10), None);
    assert_eq!(latest_regression(&[up], 105, Better::Lower, 10), Some(&up));
    // A later strong fix takes over; a later weak point does not.
    let fix = point(98, 110.0, 100.0, Strength::Strong);
    assert_eq!(latest_regression(&[up, fix], 100, Better::Lower, 10), None);
    let weak = point(98, 110.0, 100.0, Strength::Weak);
    assert_eq!(
        latest_regression(&[up, weak], 100, Better::Lower, 10),
        Some(&up)
    );
    assert_eq!(latest_regression(&[weak], 100, Better::Higher, 10), None);
}

/// Noise in [-1, 1] around 0, with a step of `step` at `pre`.
fn stepped(noise: &[f64], pre: usize, step: f64) -> Vec<f64> {
    noise
        .iter()
        .enumerate()
        .map(|(i, e)| if i < pre { *e } else { step + e })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn a_large_step_is_always_found_exactly(
        noise in proptest::collection::vec(-1.0f64..1.0, 12..120),
        at in 0.0f64..1.0,
    ) {
        let s = defaults();
        let pre = s.min_segment + (at * (noise.len() - 2 * s.min_segment) as f64) as usize;
        let values = stepped(&noise, pre, 50.0);
        let found = change_points(&values, &s).unwrap();
        prop_assert!(strong(&found).contains(&pre), "step at {pre}: {found:?}");
    }

    #[test]
    fn every_reported_point_obeys_its_thresholds(
        values in proptest::collection::vec(-100.0f64..100.0, 0..150),
    ) {
        let s = defaults();
        let found = change_points(&values, &s).unwrap();
        for w in found.windows(2) {
            prop_assert!(w[0].index < w[1].index);
        }
        for c in &found {
            prop_assert!(c.index >= s.min_segment && c.index + s.min_segment <= values.len());
            let limit = match c.strength { Strength::Strong => s.p_strong, Strength::Weak => s.p_weak };
            prop_assert!(c.p_value <= limit, "{c:?}");
        }
    }

    #[test]
    fn units_and_sign_do_not_matter(
        values in proptest::collection::vec(-100.0f64..100.0, 0..120),
        shift in -8i32..8,
        flip in any::<bool>(),
    ) {
        // Scaling by a power of two and negating are exact in floating point, so the
        // answer must be the same to the bit: where the level moves does not depend on
        // the unit a metric is stored in, nor on which way it points.
        let sign = if flip { -1.0 } else { 1.0 };
        let factor = sign * 2f64.powi(shift);
        let scaled: Vec<f64> = values.iter().map(|v| v * factor).collect();
        let a = change_points(&values, &defaults()).unwrap();
        let b = change_points(&scaled, &defaults()).unwrap();
        prop_assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(&b) {
            prop_assert_eq!((x.index, x.strength), (y.index, y.strength));
            prop_assert_eq!(x.p_value, y.p_value);
            prop_assert_eq!(x.mean_after * factor, y.mean_after);
        }
    }

    #[test]
    fn reversing_a_short_series_mirrors_its_change_points(
        noise in proptest::collection::vec(-1.0f64..1.0, 12..50),
        at in 0.0f64..1.0,
    ) {
        // Within one window the method has no direction in time: the step at `pre` of
        // the series is the step at `len - pre` of the series read backwards.
        let s = defaults();
        let pre = s.min_segment + (at * (noise.len() - 2 * s.min_segment) as f64) as usize;
        let values = stepped(&noise, pre, 50.0);
        let reversed: Vec<f64> = values.iter().rev().copied().collect();
        let back = change_points(&reversed, &s).unwrap();
        prop_assert!(strong(&back).contains(&(values.len() - pre)), "{back:?}");
    }
}
