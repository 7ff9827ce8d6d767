//! Racing on paired rounds: the rules of [`crate::racing`] judged on per-round ratios.
//!
//! A race runs every sampled variant once per round, in a shuffled order, so two variants'
//! runs of one round are a pair: `ln(w_r / l_r)` is the log gain of `w` over `l` in round
//! `r`, and its mean over the rounds both ran is judged by Student's t. Against the rank
//! tests of [`crate::racing`] this buys two things:
//! - a continuous p-value: an exact Mann-Whitney test on 5 against 5 runs cannot go below
//!   p = 1/252, so with Holm over a dozen losers nothing could be eliminated before the
//!   sixth round however large the gap; a t-test on three rounds of a 20% gap with 1%
//!   noise gives p ~ 1e-4;
//! - noise common to a round (another process, a frequency step) cancels in the ratio.
//!
//! A t-interval on three rounds is wide (t(0.95, 2) = 2.92), and an outlier round widens it
//! further instead of producing a verdict: elimination still needs the one-sided `1 - alpha`
//! lower bound of the gain at `min_effect` or more, so a variant inside the `min_effect`
//! band is not dropped on an unlucky early look.
//!
//! **Futility.** A race has a cap of `max_rounds`. A pair whose gain sits near `min_effect`
//! (say 5.2% under a 5% threshold with 1% noise) would need far more rounds than the cap to
//! be placed on either side; sampling it until the cap buys nothing, since the cap's own
//! answer is a coin toss. So "can `w` still eliminate `l`?" is also answered "no" when the
//! conditional power is below `futility`: the probability, if the gain stays at its current
//! estimate, that the lower bound reached at `max_rounds` rounds clears `min_effect`. This
//! is the stochastic curtailment of sequential trials; it changes which variants near the
//! threshold are called recommended only when the cap could not have decided them either.

use std::collections::BTreeMap;

use crate::better::Better;
use crate::error::{check_non_negative, check_open_unit, StatsError};
use crate::holm::holm;
use crate::normal::normal_sf;
use crate::pareto::pareto_front;
use crate::quantile::median;
use crate::racing::RacingRule;
use crate::student::{student_t_quantile, student_t_sf};

/// The samples of one variant on one metric: value per round.
pub type RoundSamples = BTreeMap<u32, f64>;

/// A paired racing rule: the rule of [`crate::racing`] plus the race's cap and the
/// futility threshold (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairedRule {
    /// `min_rounds`, `alpha` and `min_effect`, as for the unpaired rules.
    pub rule: RacingRule,
    /// The most rounds the race may run.
    pub max_rounds: usize,
    /// Conditional power below which a pair's open question is abandoned (0 = never).
    pub futility: f64,
}

/// The log gain of `w` over `l` (positive = `w` better) over the rounds both ran.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairedGain {
    /// Rounds both ran.
    pub n: usize,
    /// Mean log gain.
    pub mean: f64,
    /// Standard deviation of the per-round log gains (0 for one round).
    pub sd: f64,
}

impl PairedGain {
    /// From the rounds `w` and `l` both have; `None` when they share none or a value is
    /// not positive.
    pub fn of(w: &RoundSamples, l: &RoundSamples, dir: Better) -> Option<PairedGain> {
        let mut gains = Vec::new();
        for (round, &wv) in w {
            let Some(&lv) = l.get(round) else { continue };
            if wv <= 0.0 || lv <= 0.0 || !wv.is_finite() || !lv.is_finite() {
                return None;
            }
            let g = (wv / lv).ln();
            gains.push(match dir {
                Better::Higher => g,
                Better::Lower => -g,
            });
        }
        let n = gains.len();
        if n == 0 {
            return None;
        }
        let mean = gains.iter().sum::<f64>() / n as f64;
        let sd = if n > 1 {
            (gains.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        Some(PairedGain { n, mean, sd })
    }

    /// One-sided `1 - alpha` bound of the mean log gain: lower when `upper` is false.
    /// Infinite (no information) below two rounds.
    pub fn bound(&self, alpha: f64, upper: bool) -> f64 {
        if self.n < 2 {
            return if upper {
                f64::INFINITY
            } else {
                f64::NEG_INFINITY
            };
        }
        let half =
            student_t_quantile(1.0 - alpha, (self.n - 1) as f64) * self.sd / (self.n as f64).sqrt();
        if upper {
            self.mean + half
        } else {
            self.mean - half
        }
    }

    /// One-sided p-value of "the mean log gain is positive" (1 below two rounds).
    pub fn p_better(&self) -> f64 {
        if self.n < 2 {
            return 1.0;
        }
        if self.sd == 0.0 {
            return if self.mean > 0.0 { 0.0 } else { 1.0 };
        }
        student_t_sf(
            self.mean / (self.sd / (self.n as f64).sqrt()),
            (self.n - 1) as f64,
        )
    }

    /// The probability that, with `max_rounds` rounds and the gain staying at its current
    /// estimate, the one-sided `1 - alpha` lower bound reaches `threshold` (a log gain).
    pub fn conditional_power(&self, threshold: f64, alpha: f64, max_rounds: usize) -> f64 {
        let reached = |ok: bool| if ok { 1.0 } else { 0.0 };
        if self.n < 2 {
            return 1.0;
        }
        let remaining = max_rounds.saturating_sub(self.n);
        if remaining == 0 || self.sd == 0.0 {
            return reached(self.bound(alpha, false) >= threshold);
        }
        let total = (self.n + remaining) as f64;
        let q = student_t_quantile(1.0 - alpha, total - 1.0);
        // The final mean is (n mean + remaining x) / total with x ~ N(mean, sd^2 / remaining).
        let final_sd = self.sd * (remaining as f64).sqrt() / total;
        // The trend is taken one standard error above the estimate: on few rounds the
        // estimate alone would abandon real gaps that happened to start low.
        let trend = self.mean + self.sd / (self.n as f64).sqrt();
        normal_sf((threshold + q * self.sd / total.sqrt() - trend) / final_sd)
    }
}

fn check(samples: &[Vec<RoundSamples>], dirs: &[Better], r: &PairedRule) -> Result<(), StatsError> {
    check_open_unit(r.rule.alpha, "alpha")?;
    check_non_negative(r.rule.min_effect, "min_effect")?;
    if !(0.0..1.0).contains(&r.futility) {
        return Err(StatsError::OutOfRange {
            what: "futility",
            value: r.futility,
            range: "[0, 1)",
        });
    }
    if let Some((i, v)) = samples
        .iter()
        .enumerate()
        .find(|(_, v)| v.len() != dirs.len())
    {
        return Err(StatsError::Shape(format!(
            "variant {i} has {} metrics, {} directions given",
            v.len(),
            dirs.len()
        )));
    }
    Ok(())
}

fn medians(samples: &[Vec<RoundSamples>]) -> Vec<Vec<f64>> {
    samples
        .iter()
        .map(|v| {
            v.iter()
                .map(|s| median(&s.values().copied().collect::<Vec<_>>()).unwrap_or(f64::NAN))
                .collect()
        })
        .collect()
}

/// The member of `front` that challenges `loser`: the one with the largest smallest median
/// gain over it across the metrics (`medians[variant][metric]`).
pub fn challenger(
    front: &[usize],
    medians: &[Vec<f64>],
    dirs: &[Better],
    loser: usize,
) -> Option<usize> {
    let smallest_gain = |w: usize| {
        (0..dirs.len())
            .map(|m| dirs[m].relative_gain(medians[w][m], medians[loser][m]))
            .fold(f64::INFINITY, f64::min)
    };
    front
        .iter()
        .copied()
        .max_by(|&a, &b| smallest_gain(a).total_cmp(&smallest_gain(b)))
}

/// Eliminations against the front, judged on paired rounds: each variant off the Pareto
/// front (on medians) meets the front member with the largest smallest median gain over
/// it, and is eliminated when that challenger is better on EVERY metric: the one-sided
/// paired t-test rejects after Holm over the duels (the largest per-metric p-value is the
/// duel's, an intersection-union test), and the mean gain and its one-sided `1 - alpha`
/// lower bound are both at least `min_effect`. Returns `(loser, winner)` pairs, ascending
/// by loser, and the survivors. Nothing is eliminated before every variant has
/// `min_rounds` rounds.
///
/// Errors: shape mismatch, `alpha` outside (0, 1), a negative `min_effect`, a futility
/// outside [0, 1).
#[allow(clippy::type_complexity)]
pub fn paired_eliminations(
    samples: &[Vec<RoundSamples>],
    dirs: &[Better],
    r: &PairedRule,
) -> Result<(Vec<(usize, usize)>, Vec<usize>), StatsError> {
    check(samples, dirs, r)?;
    let v = samples.len();
    let all: Vec<usize> = (0..v).collect();
    let rounds = samples.iter().flatten().map(|s| s.len()).min().unwrap_or(0);
    if v < 2 || dirs.is_empty() || rounds < r.rule.min_rounds.max(2) {
        return Ok((Vec::new(), all));
    }
    let med = medians(samples);
    let front = pareto_front(&med, dirs)?;
    let threshold = r.rule.min_effect.ln_1p();
    let mut duels = Vec::new();
    let mut raw = Vec::new();
    for l in (0..v).filter(|l| !front.contains(l)) {
        let Some(w) = challenger(&front, &med, dirs, l) else {
            continue;
        };
        let gains: Option<Vec<PairedGain>> = (0..dirs.len())
            .map(|m| PairedGain::of(&samples[w][m], &samples[l][m], dirs[m]))
            .collect();
        let Some(gains) = gains else { continue };
        let p = gains.iter().map(PairedGain::p_better).fold(0.0, f64::max);
        let clears = gains
            .iter()
            .all(|g| g.mean >= threshold && g.bound(r.rule.alpha, false) >= threshold);
        duels.push((l, w, clears));
        raw.push(p);
    }
    if raw.is_empty() {
        return Ok((Vec::new(), all));
    }
    let family = holm(&raw, r.rule.alpha)?;
    let eliminated: Vec<(usize, usize)> = duels
        .iter()
        .zip(&family.reject)
        .filter(|((_, _, clears), &reject)| reject && *clears)
        .map(|(&(l, w, _), _)| (l, w))
        .collect();
    let survivors = all
        .into_iter()
        .filter(|i| !eliminated.iter().any(|(l, _)| l == i))
        .collect();
    Ok((eliminated, survivors))
}

/// Which variants more rounds can no longer help: `settled[a]` when, against every other
/// variant `c`, neither can still eliminate the other. `w` can no longer eliminate `l` once,
/// on some metric, the one-sided `1 - alpha` upper bound of its mean log gain is below
/// `min_effect`, or reaching it within `max_rounds` has a conditional power below
/// `futility` (module docs). Nothing is settled before `min_rounds` rounds.
pub fn paired_settled(
    samples: &[Vec<RoundSamples>],
    dirs: &[Better],
    r: &PairedRule,
) -> Result<Vec<bool>, StatsError> {
    check(samples, dirs, r)?;
    let v = samples.len();
    let rounds = samples.iter().flatten().map(|s| s.len()).min().unwrap_or(0);
    if rounds < r.rule.min_rounds {
        return Ok(vec![false; v]);
    }
    let threshold = r.rule.min_effect.ln_1p();
    let can_beat = |w: usize, l: usize| {
        (0..dirs.len()).all(|m| {
            let Some(g) = PairedGain::of(&samples[w][m], &samples[l][m], dirs[m]) else {
                return true; // no shared round: nothing is known
            };
            g.bound(r.rule.alpha, true) >= threshold
                && g.conditional_power(threshold, r.rule.alpha, r.max_rounds) >= r.futility
        })
    };
    Ok((0..v)
        .map(|a| {
            (0..v)
                .filter(|&c| c != a)
                .all(|c| !can_beat(c, a) && !can_beat(a, c))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `center` scaled by a deterministic +-1% pattern per round (its phase from the
    /// center, so two variants' patterns differ), times a drift common to every variant.
    fn rounds(center: f64, n: u32, drift: f64) -> RoundSamples {
        let phase = center as u32;
        (1..=n)
            .map(|r| {
                let own = 1.0 + 0.01 * (((r + phase) * 7 % 11) as f64 / 5.0 - 1.0);
                let common = 1.0 + drift * ((r % 3) as f64 - 1.0);
                (r, center * own * common)
            })
            .collect()
    }

    fn rule(min_effect: f64, futility: f64) -> PairedRule {
        PairedRule {
            rule: RacingRule {
                min_rounds: 3,
                alpha: 0.05,
                min_effect,
            },
            max_rounds: 20,
            futility,
        }
    }

    #[test]
    fn a_large_gap_is_eliminated_on_three_rounds_and_ties_stay() {
        let s = |c: f64| vec![rounds(c, 3, 0.05)];
        let samples = vec![s(100.0), s(99.5), s(80.0), s(70.0)];
        let (out, survivors) =
            paired_eliminations(&samples, &[Better::Higher], &rule(0.05, 0.1)).unwrap();
        assert_eq!(out.iter().map(|d| d.0).collect::<Vec<_>>(), vec![2, 3]);
        assert!(
            out.iter().all(|d| d.1 < 2),
            "beaten by a tied winner: {out:?}"
        );
        assert_eq!(survivors, vec![0, 1]);
        // Unpaired rank tests could not: 3 against 3 never goes below p = 0.05.
        let two = vec![s(100.0), s(80.0)];
        let r2 = PairedRule {
            rule: RacingRule {
                min_rounds: 4,
                ..rule(0.05, 0.1).rule
            },
            ..rule(0.05, 0.1)
        };
        assert!(paired_eliminations(&two, &[Better::Higher], &r2)
            .unwrap()
            .0
            .is_empty());
    }

    #[test]
    fn common_round_noise_cancels() {
        // 15% swings shared by every variant of a round; 8% apart: eliminated under 5%.
        let samples = vec![vec![rounds(100.0, 5, 0.15)], vec![rounds(92.0, 5, 0.15)]];
        let (out, _) = paired_eliminations(&samples, &[Better::Higher], &rule(0.05, 0.0)).unwrap();
        assert_eq!(out, vec![(1, 0)]);
    }

    #[test]
    fn inside_the_band_is_not_eliminated_and_settles() {
        let samples = vec![vec![rounds(100.0, 6, 0.0)], vec![rounds(98.0, 6, 0.0)]];
        let r = rule(0.05, 0.0);
        assert!(paired_eliminations(&samples, &[Better::Higher], &r)
            .unwrap()
            .0
            .is_empty());
        assert_eq!(
            paired_settled(&samples, &[Better::Higher], &r).unwrap(),
            vec![true, true]
        );
    }

    #[test]
    fn a_gap_at_the_threshold_settles_only_by_futility() {
        // 5% apart, 1% noise, 5% threshold, 16 of 20 rounds done: the cap cannot place
        // it either way.
        let samples = vec![vec![rounds(105.0, 16, 0.0)], vec![rounds(100.0, 16, 0.0)]];
        let without = paired_settled(&samples, &[Better::Higher], &rule(0.05, 0.0)).unwrap();
        assert_eq!(without, vec![false, false]);
        let with = paired_settled(&samples, &[Better::Higher], &rule(0.05, 0.1)).unwrap();
        assert_eq!(with, vec![true, true]);
        // A clear 10% gap is not abandoned: its conditional power is high.
        let g = PairedGain::of(
            &rounds(110.0, 4, 0.0),
            &rounds(100.0, 4, 0.0),
            Better::Higher,
        )
        .unwrap();
        assert!(g.conditional_power(0.05f64.ln_1p(), 0.05, 20) > 0.9);
    }

    #[test]
    fn lower_is_better_and_missing_rounds() {
        let mut slow = rounds(120.0, 5, 0.0);
        slow.remove(&2); // a failed run: pairs use the shared rounds only
        let fast = rounds(100.0, 5, 0.0);
        let g = PairedGain::of(&fast, &slow, Better::Lower).unwrap();
        assert_eq!(g.n, 4);
        assert!(g.mean > 0.15 && g.bound(0.05, false) > 0.1);
        assert!(PairedGain::of(&fast, &BTreeMap::new(), Better::Lower).is_none());
        let bad = PairedRule {
            futility: 1.0,
            ..rule(0.05, 0.0)
        };
        assert!(paired_settled(&[vec![fast]], &[Better::Lower], &bad).is_err());
    }
}
