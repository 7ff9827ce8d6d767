//! Racing rules for the build-profile tuner: after each round of measurements, which
//! variants can be dropped, and is the order of those left settled?
//!
//! Samples are indexed `samples[variant][metric]`, one value per round. Every decision is
//! made only from samples, with the family-wise error rate of that decision held at `alpha`
//! by Holm's correction across every test it runs.
//!
//! Elimination rule: variant `l` is eliminated when some other variant `w` is better on
//! EVERY metric, where "better on metric m" means all of:
//! - the one-sided Mann-Whitney test "w better than l" (direction of `m`) is rejected after
//!   Holm over all `V (V - 1) M` ordered-pair-and-metric tests of the decision;
//! - the relative gain of the medians, `(med_w - med_l) / |med_l|` (negated for
//!   lower-is-better), is positive and at least `min_effect`.
//!
//! Because "better" requires a strictly better median on every metric, it is a strict partial
//! order: at least one variant always survives.
//!
//! Settling rule ([`settled_variants`]): a variant is settled when, against every other
//! one, neither can still beat the other by `min_effect` on every metric (on some metric
//! the bound of the interval excludes it). More samples of it cannot change an
//! elimination, so a race stops sampling it. [`order_settled`] is the stricter rule that
//! also wants every pair ordered or shown equivalent.

use crate::better::Better;
use crate::bootstrap::bootstrap_ratio_of_medians_ci;
use crate::error::{check_non_negative, check_open_unit, check_sample, StatsError};
use crate::holm::holm;
use crate::mannwhitney::{mann_whitney_u, Alternative};
use crate::quantile::median;
use crate::shift::ratio_shift_ci;

/// The parameters of a racing decision.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RacingRule {
    /// No variant is eliminated before every variant has this many samples on every metric.
    pub min_rounds: usize,
    /// Family-wise error rate of one decision.
    pub alpha: f64,
    /// Smallest relative difference of medians worth acting on (0.01 = 1%).
    pub min_effect: f64,
}

impl Default for RacingRule {
    fn default() -> Self {
        RacingRule {
            min_rounds: 5,
            alpha: 0.05,
            min_effect: 0.01,
        }
    }
}

/// The evidence on one metric that the winner beats the loser.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MetricEvidence {
    /// Metric index.
    pub metric: usize,
    /// Median of the winner.
    pub median_winner: f64,
    /// Median of the loser.
    pub median_loser: f64,
    /// Relative gain of the winner's median over the loser's, positive = winner better.
    pub relative_effect: f64,
    /// Raw one-sided Mann-Whitney p-value.
    pub p_value: f64,
    /// Holm-adjusted p-value within the decision.
    pub p_adjusted: f64,
}

/// One eliminated variant and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Elimination {
    /// The eliminated variant.
    pub variant: usize,
    /// The variant that beat it on every metric (the one with the strongest evidence, i.e.
    /// the smallest largest-adjusted-p over the metrics, when several did).
    pub beaten_by: usize,
    /// Per-metric evidence, one entry per metric.
    pub evidence: Vec<MetricEvidence>,
}

/// The outcome of one racing decision.
#[derive(Debug, Clone, PartialEq)]
pub struct RaceDecision {
    /// Rounds available: the smallest sample count over all variants and metrics.
    pub rounds: usize,
    /// Variants to eliminate, ascending by index.
    pub eliminated: Vec<Elimination>,
    /// Variants that stay in the race, ascending.
    pub survivors: Vec<usize>,
    /// Number of tests in the Holm family (0 when the decision was deferred).
    pub tests: usize,
}

/// Decides which variants to eliminate; see the module docs for the rule.
///
/// Before `rule.min_rounds` rounds (or with fewer than two variants) nothing is eliminated.
/// Errors: shape mismatch, an empty sample or NaN, `alpha` outside (0, 1), negative
/// `min_effect`.
pub fn eliminations(
    samples: &[Vec<Vec<f64>>],
    directions: &[Better],
    rule: &RacingRule,
) -> Result<RaceDecision, StatsError> {
    let rounds = validate(samples, directions, rule)?;
    let v = samples.len();
    let all: Vec<usize> = (0..v).collect();
    if rounds < rule.min_rounds || v < 2 {
        return Ok(RaceDecision {
            rounds,
            eliminated: Vec::new(),
            survivors: all,
            tests: 0,
        });
    }
    let medians = medians(samples);
    let m = directions.len();
    // tests[(w * v + l) * m + metric]: "w better than l on metric".
    let mut raw = Vec::with_capacity(v * v * m);
    let mut keys = Vec::with_capacity(v * v * m);
    for w in 0..v {
        for l in (0..v).filter(|&l| l != w) {
            for (metric, &dir) in directions.iter().enumerate() {
                let alt = match dir {
                    Better::Higher => Alternative::Greater,
                    Better::Lower => Alternative::Less,
                };
                raw.push(mann_whitney_u(&samples[w][metric], &samples[l][metric], alt)?.p_value);
                keys.push((w, l, metric));
            }
        }
    }
    let family = holm(&raw, rule.alpha)?;
    let index = |w: usize, l: usize, metric: usize| {
        let l_pos = if l < w { l } else { l - 1 };
        (w * (v - 1) + l_pos) * m + metric
    };
    debug_assert!(keys
        .iter()
        .enumerate()
        .all(|(i, &(w, l, k))| index(w, l, k) == i));
    let mut eliminated = Vec::new();
    for l in 0..v {
        let mut best: Option<(f64, Elimination)> = None;
        for w in (0..v).filter(|&w| w != l) {
            let evidence: Vec<MetricEvidence> = (0..m)
                .map(|metric| {
                    let i = index(w, l, metric);
                    MetricEvidence {
                        metric,
                        median_winner: medians[w][metric],
                        median_loser: medians[l][metric],
                        relative_effect: directions[metric]
                            .relative_gain(medians[w][metric], medians[l][metric]),
                        p_value: raw[i],
                        p_adjusted: family.adjusted[i],
                    }
                })
                .collect();
            let beats = evidence.iter().all(|e| {
                family.reject[index(w, l, e.metric)]
                    && e.relative_effect > 0.0
                    && e.relative_effect >= rule.min_effect
            });
            if !beats {
                continue;
            }
            let strength = evidence.iter().map(|e| e.p_adjusted).fold(0.0, f64::max);
            let stronger = match &best {
                None => true,
                Some((s, _)) => strength < *s,
            };
            if stronger {
                let elim = Elimination {
                    variant: l,
                    beaten_by: w,
                    evidence,
                };
                best = Some((strength, elim));
            }
        }
        if let Some((_, elim)) = best {
            eliminated.push(elim);
        }
    }
    let survivors = all
        .into_iter()
        .filter(|i| !eliminated.iter().any(|e| e.variant == *i))
        .collect();
    Ok(RaceDecision {
        rounds,
        eliminated,
        survivors,
        tests: raw.len(),
    })
}

/// Whether the order of the contenders is settled, and what is not.
#[derive(Debug, Clone, PartialEq)]
pub struct OrderSettlement {
    /// `true` when every pair is resolved on every metric (and `min_rounds` is reached).
    pub settled: bool,
    /// Unresolved `(a, b, metric)` triples with `a < b`.
    pub unresolved: Vec<(usize, usize, usize)>,
}

/// Says whether more rounds could still change the order of `samples`' variants.
///
/// A pair `(a, b)` is resolved on a metric when either
/// - it differs significantly: two-sided Mann-Whitney rejected after Holm over all
///   `V (V - 1) / 2 * M` pair-and-metric tests, and `|med_b / med_a - 1| >= min_effect`; or
/// - it is equivalent within the effect band: the `1 - alpha` percentile-bootstrap interval
///   of `med_b / med_a` (`resamples`, seeded by `seed`) lies inside
///   `[1 - min_effect, 1 + min_effect]`.
///
/// Point estimates alone never count as "within the band": two noisy variants whose medians
/// happen to be close are not settled until the interval says so.
pub fn order_settled(
    samples: &[Vec<Vec<f64>>],
    directions: &[Better],
    rule: &RacingRule,
    resamples: usize,
    seed: u64,
) -> Result<OrderSettlement, StatsError> {
    let rounds = validate(samples, directions, rule)?;
    let v = samples.len();
    let m = directions.len();
    let pairs: Vec<(usize, usize, usize)> = (0..v)
        .flat_map(|a| ((a + 1)..v).flat_map(move |b| (0..m).map(move |k| (a, b, k))))
        .collect();
    if rounds < rule.min_rounds {
        return Ok(OrderSettlement {
            settled: false,
            unresolved: pairs,
        });
    }
    let medians = medians(samples);
    let raw = pairs
        .iter()
        .map(|&(a, b, k)| {
            mann_whitney_u(&samples[a][k], &samples[b][k], Alternative::TwoSided).map(|r| r.p_value)
        })
        .collect::<Result<Vec<f64>, _>>()?;
    let family = holm(&raw, rule.alpha)?;
    let mut unresolved = Vec::new();
    for (i, &(a, b, k)) in pairs.iter().enumerate() {
        let effect = (medians[b][k] / medians[a][k] - 1.0).abs();
        if family.reject[i] && effect >= rule.min_effect {
            continue;
        }
        let pair_seed = seed.wrapping_add(i as u64);
        let within = bootstrap_ratio_of_medians_ci(
            &samples[a][k],
            &samples[b][k],
            1.0 - rule.alpha,
            resamples,
            pair_seed,
        )
        .map(|ci| ci.low >= 1.0 - rule.min_effect && ci.high <= 1.0 + rule.min_effect)
        .unwrap_or(false); // a zero median: no ratio, so no equivalence claim
        if !within {
            unresolved.push((a, b, k));
        }
    }
    Ok(OrderSettlement {
        settled: unresolved.is_empty(),
        unresolved,
    })
}

/// Which variants more samples can no longer help: `settled[a]` is `true` when no other
/// variant of `samples` can still eliminate `a` and `a` can still eliminate none of them.
///
/// An elimination needs a gain of at least `min_effect` on EVERY metric, so `w` can no longer
/// beat `l` once, on some metric, the one-sided `1 - alpha` upper bound of `w`'s relative
/// gain over `l` is below `min_effect`. The bound comes from the two-sided `1 - 2 alpha`
/// distribution-free interval of the ratio ([`crate::ratio_shift_ci`]), one interval per
/// pair and metric serving both directions (the interval of `a / b` is the reciprocal of
/// that of `b / a`).
///
/// This is what lets a race stop sampling a variant before its order with the others is
/// known: two variants 1% apart under a 5% `min_effect` are both recommended whichever is
/// faster, so measuring them until their order is resolved buys nothing. A metric with a
/// value that is not positive gives no interval; its pairs on that metric settle nothing.
/// Before `min_rounds` nothing is settled.
pub fn settled_variants(
    samples: &[Vec<Vec<f64>>],
    directions: &[Better],
    rule: &RacingRule,
) -> Result<Vec<bool>, StatsError> {
    let rounds = validate(samples, directions, rule)?;
    let v = samples.len();
    if rounds < rule.min_rounds {
        return Ok(vec![false; v]);
    }
    // can_beat[w * v + l]: w may still gain at least min_effect over l on every metric.
    let mut can_beat = vec![true; v * v];
    let confidence = 1.0 - 2.0 * rule.alpha;
    for a in 0..v {
        for b in (a + 1)..v {
            for (m, &dir) in directions.iter().enumerate() {
                let Ok(ci) = ratio_shift_ci(&samples[a][m], &samples[b][m], confidence) else {
                    continue;
                };
                // ci bounds b / a; 1 / ci bounds a / b.
                let (b_over_a, a_over_b) = match dir {
                    Better::Higher => (ci.high - 1.0, 1.0 / ci.low - 1.0),
                    Better::Lower => (1.0 - ci.low, 1.0 - 1.0 / ci.high),
                };
                if b_over_a < rule.min_effect {
                    can_beat[b * v + a] = false;
                }
                // A non-positive low end makes 1 / low meaningless: no claim.
                let a_bound_valid = match dir {
                    Better::Higher => ci.low > 0.0,
                    Better::Lower => ci.high > 0.0,
                };
                if a_bound_valid && a_over_b < rule.min_effect {
                    can_beat[a * v + b] = false;
                }
            }
        }
    }
    Ok((0..v)
        .map(|a| {
            (0..v)
                .filter(|&c| c != a)
                .all(|c| !can_beat[c * v + a] && !can_beat[a * v + c])
        })
        .collect())
}

fn validate(
    samples: &[Vec<Vec<f64>>],
    directions: &[Better],
    rule: &RacingRule,
) -> Result<usize, StatsError> {
    check_open_unit(rule.alpha, "alpha")?;
    check_non_negative(rule.min_effect, "min_effect")?;
    let mut rounds = usize::MAX;
    for (i, variant) in samples.iter().enumerate() {
        if variant.len() != directions.len() {
            return Err(StatsError::Shape(format!(
                "variant {i} has {} metrics, {} directions given",
                variant.len(),
                directions.len()
            )));
        }
        for s in variant {
            check_sample(s, "variant samples", 1)?;
            rounds = rounds.min(s.len());
        }
    }
    Ok(if rounds == usize::MAX { 0 } else { rounds })
}

fn medians(samples: &[Vec<Vec<f64>>]) -> Vec<Vec<f64>> {
    samples
        .iter()
        .map(|v| v.iter().map(|s| median(s).expect("validated")).collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_pcg::Pcg64;

    /// Standard normal by Box-Muller.
    fn gauss(rng: &mut Pcg64) -> f64 {
        let u1: f64 = rng.gen_range(f64::EPSILON..1.0);
        let u2: f64 = rng.gen();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }

    const DIRS: [Better; 2] = [Better::Lower, Better::Higher]; // time, throughput

    /// Variants whose true medians are worse than the best by `slowdowns` (0.0 = same),
    /// with multiplicative normal noise `noise` on each of two metrics.
    fn race(slowdowns: &[f64], noise: f64, rounds: usize, seed: u64) -> Vec<Vec<Vec<f64>>> {
        let mut rng = Pcg64::seed_from_u64(seed);
        let mut out: Vec<Vec<Vec<f64>>> = slowdowns.iter().map(|_| vec![vec![], vec![]]).collect();
        // Interleaved like the tuner runs them: one value per variant per round.
        for _ in 0..rounds {
            for (v, &d) in slowdowns.iter().enumerate() {
                out[v][0].push(100.0 * (1.0 + d) * (1.0 + noise * gauss(&mut rng)));
                out[v][1].push(1000.0 / (1.0 + d) * (1.0 + noise * gauss(&mut rng)));
            }
        }
        out
    }

    const SLOWDOWNS: [f64; 5] = [0.0, 0.0, 0.01, 0.03, 0.10];

    #[test]
    fn ten_percent_worse_is_eliminated_and_equal_one_never() {
        let rule = RacingRule::default();
        for seed in 0..8 {
            for noise in [0.01, 0.02, 0.03] {
                let data = race(&SLOWDOWNS, noise, 30, seed);
                let mut eliminated_at = None;
                for r in 1..=30 {
                    let prefix: Vec<Vec<Vec<f64>>> = data
                        .iter()
                        .map(|v| v.iter().map(|s| s[..r].to_vec()).collect())
                        .collect();
                    let d = eliminations(&prefix, &DIRS, &rule).unwrap();
                    assert_eq!(d.rounds, r);
                    if r < rule.min_rounds {
                        assert!(d.eliminated.is_empty());
                        assert_eq!(d.tests, 0);
                    } else {
                        assert_eq!(d.tests, 5 * 4 * 2);
                    }
                    let ids: Vec<usize> = d.eliminated.iter().map(|e| e.variant).collect();
                    assert!(
                        !ids.contains(&0) && !ids.contains(&1),
                        "seed {seed} noise {noise} round {r}: {ids:?}"
                    );
                    if ids.contains(&4) && eliminated_at.is_none() {
                        eliminated_at = Some(r);
                    }
                }
                let at = eliminated_at.unwrap_or(usize::MAX);
                assert!(
                    at <= 20,
                    "seed {seed} noise {noise}: 10% variant eliminated at {at}"
                );
            }
        }
    }

    #[test]
    fn elimination_carries_its_evidence() {
        let data = race(&SLOWDOWNS, 0.01, 20, 42);
        let d = eliminations(&data, &DIRS, &RacingRule::default()).unwrap();
        let e = d
            .eliminated
            .iter()
            .find(|e| e.variant == 4)
            .expect("10% variant eliminated");
        assert_ne!(e.beaten_by, 4);
        assert_eq!(e.evidence.len(), 2);
        for ev in &e.evidence {
            assert!(ev.p_adjusted <= 0.05 && ev.p_adjusted >= ev.p_value);
            assert!(ev.relative_effect >= 0.01);
        }
        // Time metric (lower is better): the loser's median is about 10% above the winner's.
        let time = &e.evidence[0];
        assert!(
            (time.median_loser / time.median_winner - 1.1).abs() < 0.03,
            "{time:?}"
        );
        assert!(d.survivors.contains(&0) && d.survivors.contains(&1));
        assert!(!d.survivors.contains(&4));
    }

    #[test]
    fn a_big_effect_on_one_metric_only_is_not_enough() {
        // Variant 1 is 10% faster but 10% lower throughput: a trade-off, nobody is dominated.
        let mut data = race(&[0.0, 0.10], 0.01, 30, 7);
        let faster: Vec<f64> = data[1][0].iter().map(|t| t / 1.1 / 1.1).collect();
        data[1][0] = faster;
        let d = eliminations(&data, &DIRS, &RacingRule::default()).unwrap();
        assert!(d.eliminated.is_empty(), "{:?}", d.eliminated);
    }

    #[test]
    fn effects_below_the_threshold_are_kept() {
        // 3% worse with little noise is significant, but not at a 5% minimum effect.
        let data = race(&[0.0, 0.03], 0.005, 30, 3);
        let strict = RacingRule {
            min_effect: 0.05,
            ..RacingRule::default()
        };
        assert!(eliminations(&data, &DIRS, &strict)
            .unwrap()
            .eliminated
            .is_empty());
        let loose = RacingRule {
            min_effect: 0.01,
            ..RacingRule::default()
        };
        let d = eliminations(&data, &DIRS, &loose).unwrap();
        assert_eq!(
            d.eliminated.iter().map(|e| e.variant).collect::<Vec<_>>(),
            vec![1]
        );
    }

    #[test]
    fn order_settles_for_clear_gaps_only() {
        let rule = RacingRule::default();
        // 0% and 10% apart with 0.2% noise: the 10% pair differs, the 0% pair is equivalent.
        let clear = race(&[0.0, 0.0, 0.10], 0.002, 30, 5);
        let s = order_settled(&clear, &DIRS, &rule, 2000, 1).unwrap();
        assert!(s.settled, "{:?}", s.unresolved);
        // 1% apart under 3% noise after 10 rounds: neither different nor equivalent yet.
        let murky = race(&[0.0, 0.01], 0.03, 10, 5);
        let s = order_settled(&murky, &DIRS, &rule, 2000, 1).unwrap();
        assert!(!s.settled);
        assert_eq!(s.unresolved, vec![(0, 1, 0), (0, 1, 1)]);
        // Too few rounds: never settled.
        let short = race(&[0.0, 0.10], 0.002, 3, 5);
        assert!(!order_settled(&short, &DIRS, &rule, 100, 1).unwrap().settled);
    }

    #[test]
    fn variants_inside_the_band_settle_and_a_variant_at_its_edge_does_not() {
        let rule = RacingRule {
            min_rounds: 5,
            alpha: 0.05,
            min_effect: 0.05,
        };
        // 0%, 1% and 3% apart under 1% noise: no gain of 5% is possible between any two.
        let close = race(&[0.0, 0.01, 0.03], 0.01, 12, 9);
        let s = settled_variants(&close, &DIRS, &rule).unwrap();
        assert_eq!(s, vec![true, true, true]);
        // Add a 6% variant: the 0% and 1% ones may still beat it by 5%, so those three stay
        // open; the 3% one can neither beat nor be beaten by 5% by anyone: settled.
        let edge = race(&[0.0, 0.01, 0.03, 0.06], 0.01, 12, 9);
        let s = settled_variants(&edge, &DIRS, &rule).unwrap();
        assert_eq!(s, vec![false, false, true, false]);
        // Before min_rounds nothing settles, however clear.
        let short = race(&[0.0, 0.0], 0.001, 4, 9);
        assert_eq!(
            settled_variants(&short, &DIRS, &rule).unwrap(),
            vec![false, false]
        );
    }

    #[test]
    fn settling_needs_the_interval_not_the_point_estimate() {
        let rule = RacingRule {
            min_rounds: 5,
            alpha: 0.05,
            min_effect: 0.05,
        };
        // Equal true medians under 8% noise: the medians are close, but after 6 rounds a
        // 5% gain is still within the interval, so nothing is settled yet; after 200
        // rounds it is not.
        let noisy = race(&[0.0, 0.0], 0.08, 200, 4);
        let prefix = |r: usize| -> Vec<Vec<Vec<f64>>> {
            noisy
                .iter()
                .map(|v| v.iter().map(|s| s[..r].to_vec()).collect())
                .collect()
        };
        let early = settled_variants(&prefix(6), &DIRS, &rule).unwrap();
        assert_eq!(early, vec![false, false]);
        let late = settled_variants(&prefix(200), &DIRS, &rule).unwrap();
        assert_eq!(late, vec![true, true]);
    }

    #[test]
    fn one_metric_is_enough_to_settle_a_trade_off() {
        // Variant 1 is 10% faster and 10% lower throughput: neither can beat the other on
        // every metric, so both are settled although they differ a lot on each.
        let mut data = race(&[0.0, 0.10], 0.01, 10, 7);
        data[1][0] = data[1][0].iter().map(|t| t / 1.1 / 1.1).collect();
        let s = settled_variants(&data, &DIRS, &RacingRule::default()).unwrap();
        assert_eq!(s, vec![true, true]);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        #[test]
        fn someone_always_survives(
            values in proptest::collection::vec(proptest::collection::vec(0u8..6, 16), 3),
            min_effect in 0.0f64..0.2,
        ) {
            // 4 variants, 2 metrics, 8 rounds of small integers (many ties, large effects).
            let samples: Vec<Vec<Vec<f64>>> = (0..4)
                .map(|v| {
                    (0..2)
                        .map(|m| (0..8).map(|r| {
                            let raw = values[v % 3][(m * 8 + r) % 16];
                            // Variant 0 best on both metrics (time lower, throughput higher),
                            // so eliminations do happen; the sample noise decides how many.
                            let rank = if m == 0 { v } else { 3 - v };
                            f64::from(raw) + 1.0 + 3.0 * rank as f64
                        }).collect())
                        .collect()
                })
                .collect();
            let rule = RacingRule { min_effect, ..RacingRule::default() };
            let d = eliminations(&samples, &DIRS, &rule).unwrap();
            proptest::prop_assert!(!d.survivors.is_empty());
            proptest::prop_assert_eq!(d.survivors.len() + d.eliminated.len(), 4);
            for e in &d.eliminated {
                proptest::prop_assert!(d.survivors.iter().all(|&s| s != e.variant));
                proptest::prop_assert!(e.evidence.iter().all(|ev| ev.p_adjusted <= rule.alpha));
            }
        }
    }

    #[test]
    fn invalid_inputs() {
        let rule = RacingRule::default();
        assert!(eliminations(&[vec![vec![1.0]]], &DIRS, &rule).is_err());
        assert!(eliminations(&[vec![vec![1.0], vec![]]], &DIRS, &rule).is_err());
        let bad = RacingRule { alpha: 1.5, ..rule };
        assert!(eliminations(&[vec![vec![1.0], vec![1.0]]], &DIRS, &bad).is_err());
        let none = eliminations(&[], &DIRS, &rule).unwrap();
        assert!(none.eliminated.is_empty() && none.survivors.is_empty());
    }
}
