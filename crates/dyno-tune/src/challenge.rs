//! Elimination against the front: a variant is eliminated when a variant of the current
//! Pareto set (on medians) is significantly better on EVERY metric by at least the
//! minimum effect.
//!
//! `dyno_stats::eliminations` tests every ordered pair, a Holm family of `V (V - 1) M`
//! tests; with 24 variants and 2 metrics that is 1104 tests, and an exact Mann-Whitney on
//! n = 5 against 5 cannot go below p = 1/252, so nothing can be eliminated before about
//! nine rounds whatever the effect. Comparing only against the front (as F-Race compares
//! against the incumbent best) keeps the same test, the same correction and the same
//! effect threshold over `|front| (V - |front|) M` tests. A variant on the front cannot be
//! eliminated: no other variant has a strictly better median on every metric.
//!
//! The front is chosen from the same samples that are then tested, which makes each test
//! slightly optimistic for the winner; the minimum effect on every metric and Holm keep
//! that from eliminating equal variants (see the tests and `examples/racing_sim.rs`).

use crate::error::TuneError;
use dyno_stats::{holm, mann_whitney_u, median, pareto_front, Alternative, Better, RacingRule};

/// The outcome of one decision: `(loser, winner)` pairs (one per loser, ascending by
/// loser) and the survivors (ascending).
pub type Decision = (Vec<(usize, usize)>, Vec<usize>);

/// Eliminated `(loser, winner)` pairs and the survivors; see the module docs.
pub fn eliminate_against_front(
    samples: &[Vec<Vec<f64>>],
    dirs: &[Better],
    rule: &RacingRule,
) -> Result<Decision, TuneError> {
    let v = samples.len();
    let all: Vec<usize> = (0..v).collect();
    let rounds = samples.iter().flatten().map(Vec::len).min().unwrap_or(0);
    if v < 2 || dirs.is_empty() || rounds < rule.min_rounds {
        return Ok((Vec::new(), all));
    }
    let medians: Vec<Vec<f64>> = samples
        .iter()
        .map(|s| s.iter().map(|x| median(x).unwrap_or(f64::NAN)).collect())
        .collect();
    let front = pareto_front(&medians, dirs)?;
    let rest: Vec<usize> = all.iter().copied().filter(|i| !front.contains(i)).collect();
    let mut keys = Vec::new();
    let mut raw = Vec::new();
    for &w in &front {
        for &l in &rest {
            for (m, &dir) in dirs.iter().enumerate() {
                let alt = match dir {
                    Better::Higher => Alternative::Greater,
                    Better::Lower => Alternative::Less,
                };
                raw.push(mann_whitney_u(&samples[w][m], &samples[l][m], alt)?.p_value);
                keys.push((w, l, m));
            }
        }
    }
    if raw.is_empty() {
        return Ok((Vec::new(), all));
    }
    let family = holm(&raw, rule.alpha)?;
    let mut eliminated = Vec::new();
    for &l in &rest {
        let winner = front.iter().copied().find(|&w| {
            (0..dirs.len()).all(|m| {
                let i = keys
                    .iter()
                    .position(|&k| k == (w, l, m))
                    .expect("every pair tested");
                let gain = dirs[m].relative_gain(medians[w][m], medians[l][m]);
                family.reject[i] && gain > 0.0 && gain >= rule.min_effect
            })
        });
        if let Some(w) = winner {
            eliminated.push((l, w));
        }
    }
    let survivors = all
        .into_iter()
        .filter(|i| !eliminated.iter().any(|(l, _)| l == i))
        .collect();
    Ok((eliminated, survivors))
}

/// `true` when no survivor can still be eliminated by another: for every ordered pair
/// `(w, l)` there is a metric on which the one-sided `1 - alpha` bootstrap bound of `w`'s
/// relative gain over `l` stays below `min_effect`. Any further elimination would then
/// be a wrong one, so more rounds cannot change the recommendation for the better.
///
/// This is weaker than `dyno_stats::order_settled` (which also wants the order of
/// equivalent variants resolved), so a race may stop on it while two variants 1% apart
/// under a 2% `min_effect` are still unordered: the report then recommends both.
pub fn recommendation_settled(
    samples: &[Vec<Vec<f64>>],
    dirs: &[Better],
    rule: &RacingRule,
    resamples: usize,
    seed: u64,
) -> Result<bool, TuneError> {
    let v = samples.len();
    let confidence = 1.0 - 2.0 * rule.alpha;
    let mut k = 0u64;
    for w in 0..v {
        for l in (0..v).filter(|&l| l != w) {
            let mut safe = false;
            for (m, &dir) in dirs.iter().enumerate() {
                k += 1;
                // Interval of median(w) / median(l); the gain of w is r - 1 (higher is
                // better) or 1 - r (lower is better).
                let Ok(ci) = dyno_stats::bootstrap_ratio_of_medians_ci(
                    &samples[l][m],
                    &samples[w][m],
                    confidence,
                    resamples,
                    seed.wrapping_add(k),
                ) else {
                    continue;
                };
                let max_gain = match dir {
                    Better::Higher => ci.high - 1.0,
                    Better::Lower => 1.0 - ci.low,
                };
                if max_gain < rule.min_effect {
                    safe = true;
                    break;
                }
            }
            if !safe {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(center: f64, n: usize) -> Vec<f64> {
        // Deterministic spread of +-1% around the center.
        (0..n)
            .map(|i| center * (1.0 + 0.01 * ((i * 7 % 11) as f64 / 5.0 - 1.0)))
            .collect()
    }

    #[test]
    fn clearly_worse_variants_go_equal_ones_stay() {
        let dirs = [Better::Higher, Better::Lower];
        let s = |d: f64| vec![series(100.0 / (1.0 + d), 8), series(50.0 * (1.0 + d), 8)];
        let samples = vec![s(0.0), s(0.0), s(0.10), s(0.10), s(0.10)];
        let rule = RacingRule {
            min_rounds: 5,
            alpha: 0.05,
            min_effect: 0.02,
        };
        let (out, survivors) = eliminate_against_front(&samples, &dirs, &rule).unwrap();
        assert_eq!(out.iter().map(|p| p.0).collect::<Vec<_>>(), vec![2, 3, 4]);
        assert!(out.iter().all(|p| p.1 < 2));
        assert_eq!(survivors, vec![0, 1]);
        // Before min_rounds: nothing.
        let short = RacingRule {
            min_rounds: 9,
            ..rule
        };
        assert!(eliminate_against_front(&samples, &dirs, &short)
            .unwrap()
            .0
            .is_empty());
    }

    #[test]
    fn settled_when_no_gain_can_reach_the_threshold() {
        let dirs = [Better::Higher];
        let rule = RacingRule {
            min_rounds: 5,
            alpha: 0.05,
            min_effect: 0.05,
        };
        // Within +-1% of each other: no 5% gain possible.
        let close = vec![vec![series(100.0, 12)], vec![series(100.5, 12)]];
        assert!(recommendation_settled(&close, &dirs, &rule, 500, 1).unwrap());
        // 10% apart: the faster one may still eliminate the slower.
        let apart = vec![vec![series(100.0, 12)], vec![series(110.0, 12)]];
        assert!(!recommendation_settled(&apart, &dirs, &rule, 500, 1).unwrap());
    }

    #[test]
    fn a_trade_off_is_never_eliminated() {
        let dirs = [Better::Higher, Better::Lower];
        // v1: 10% less throughput but 10% lower latency.
        let samples = vec![
            vec![series(100.0, 10), series(50.0, 10)],
            vec![series(90.0, 10), series(45.0, 10)],
        ];
        let rule = RacingRule::default();
        let (out, survivors) = eliminate_against_front(&samples, &dirs, &rule).unwrap();
        assert!(out.is_empty());
        assert_eq!(survivors, vec![0, 1]);
    }
}
