//! Elimination against the front: a variant is eliminated when its challenger, the
//! variant of the current Pareto set (on medians) with the largest smallest median gain
//! over it, is better on EVERY metric: significantly (one-sided Mann-Whitney, Holm over
//! the losers), with a median gain of at least `min_effect`, and with the one-sided
//! `1 - alpha` lower bound of its gain ([`dyno_stats::ratio_shift_ci`]) at least
//! `min_effect` too. The last condition is what keeps a 3% slower variant from being
//! dropped under a 5% `min_effect` on an unlucky early look, when its median happens to
//! sit 5% behind: the point estimate may cross the threshold, the bound rarely does.
//!
//! `dyno_stats::eliminations` tests every ordered pair, a Holm family of `V (V - 1) M`
//! tests; with 24 variants and 2 metrics that is 1104 tests, and an exact Mann-Whitney on
//! n = 5 against 5 cannot go below p = 1/252, so nothing can be eliminated before about
//! nine rounds whatever the effect. Comparing only against the front (as F-Race compares
//! against the incumbent best) keeps the same test, the same correction and the same
//! effect threshold over fewer tests. A variant on the front cannot be eliminated: no other
//! variant has a strictly better median on every metric.
//!
//! "Better on every metric" is an intersection-union hypothesis: it holds only if each
//! per-metric one holds, so it is rejected at level `alpha` when every per-metric one-sided
//! test is, and the largest per-metric p-value is a valid p-value for the pair. With one
//! challenger per loser, Holm runs over the `V - |front|` losers: with 24 variants and a
//! front of 3 that is 21 tests, where every front member against every loser on every
//! metric would be 126. Exact Mann-Whitney p-values on n against n cannot go below
//! `1 / C(2n, n)` (1/252 at 5, 1/924 at 6), so the family size decides the first round an
//! elimination is possible at all: round 6 here, round 7 with 126 tests.
//!
//! The front and the challengers are chosen from the same samples that are then tested,
//! which makes each test slightly optimistic for the winner; the minimum effect on every
//! metric (on the median and on the bound) and Holm keep that from eliminating equal
//! variants (see the tests and `examples/racing_sim.rs`).

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
    // Each loser meets one challenger: the front member with the largest smallest median
    // gain over it. Its p-value is the largest of the per-metric one-sided p-values (an
    // intersection-union test of "better on every metric").
    let mut duels = Vec::with_capacity(rest.len());
    let mut raw = Vec::with_capacity(rest.len());
    for &l in &rest {
        let Some(w) = dyno_stats::challenger(&front, &medians, dirs, l) else {
            continue;
        };
        let mut p = 0.0f64;
        for (m, &dir) in dirs.iter().enumerate() {
            let alt = match dir {
                Better::Higher => Alternative::Greater,
                Better::Lower => Alternative::Less,
            };
            p = p.max(mann_whitney_u(&samples[w][m], &samples[l][m], alt)?.p_value);
        }
        duels.push((l, w));
        raw.push(p);
    }
    if raw.is_empty() {
        return Ok((Vec::new(), all));
    }
    let family = holm(&raw, rule.alpha)?;
    let mut eliminated = Vec::new();
    for (i, &(l, w)) in duels.iter().enumerate() {
        let beaten = family.reject[i]
            && (0..dirs.len()).all(|m| {
                let gain = dirs[m].relative_gain(medians[w][m], medians[l][m]);
                gain > 0.0 && gain >= rule.min_effect
            })
            && (0..dirs.len()).all(|m| {
                gain_lower_bound(&samples[w][m], &samples[l][m], dirs[m], rule)
                    .is_some_and(|low| low >= rule.min_effect)
            });
        if beaten {
            eliminated.push((l, w));
        }
    }
    let survivors = all
        .into_iter()
        .filter(|i| !eliminated.iter().any(|(l, _)| l == i))
        .collect();
    Ok((eliminated, survivors))
}

/// The one-sided `1 - alpha` lower bound of `winner`'s relative gain over `loser`, from
/// the two-sided `1 - 2 alpha` distribution-free interval of their ratio
/// ([`dyno_stats::ratio_shift_ci`]); `None` when a value is not positive.
fn gain_lower_bound(winner: &[f64], loser: &[f64], dir: Better, rule: &RacingRule) -> Option<f64> {
    let ci = dyno_stats::ratio_shift_ci(loser, winner, 1.0 - 2.0 * rule.alpha).ok()?;
    // ci bounds winner / loser.
    Some(match dir {
        Better::Higher => ci.low - 1.0,
        Better::Lower => 1.0 - ci.high,
    })
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
    fn the_loser_not_the_metric_is_the_unit_of_the_holm_family() {
        // 2 best variants and 22 hopeless ones, 6 rounds each, fully separated: every
        // one-sided p is 1/924 on each metric. Holm over the 22 losers needs p <= 0.05/22:
        // all 22 go. Over 88 front-loser-metric tests (0.05/88 = 0.00057) none could.
        let dirs = [Better::Higher, Better::Lower];
        let s = |d: f64| vec![series(100.0 / (1.0 + d), 6), series(50.0 * (1.0 + d), 6)];
        let mut samples = vec![s(0.0), s(0.0)];
        samples.extend((0..22).map(|_| s(0.10)));
        let rule = RacingRule {
            min_rounds: 5,
            alpha: 0.05,
            min_effect: 0.02,
        };
        let (out, survivors) = eliminate_against_front(&samples, &dirs, &rule).unwrap();
        assert_eq!(survivors, vec![0, 1]);
        assert_eq!(out.len(), 22);
        // With only 5 rounds (p = 1/252 = 0.004 at best) nothing can go.
        let five: Vec<Vec<Vec<f64>>> = samples
            .iter()
            .map(|v| v.iter().map(|m| m[..5].to_vec()).collect())
            .collect();
        assert!(eliminate_against_front(&five, &dirs, &rule)
            .unwrap()
            .0
            .is_empty());
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
