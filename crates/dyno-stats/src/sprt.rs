//! Sequential tests of simple hypotheses about a mean (Wald's SPRT), for deciding whether
//! a revision under test behaves like one known revision or another, adding rounds only
//! until the evidence is in: a clear step costs a round or two, an unclear one more.
//!
//! Each round gives one log ratio `d_i ~ N(mu, sigma^2)` (the tested revision's cost over
//! the good revision's, in the same round). Two known means bound the question: `m0`
//! (the revision behaves like the low end, e.g. good: 0) and `m1` (like the high end,
//! e.g. bad: the confirmed change). A revision can also sit **between** (the change is
//! spread over several commits), so this is Sobel and Wald's (1949) three-decision
//! procedure, two SPRTs run side by side with the midpoint `h = (m0 + m1) / 2`:
//!
//! - SPRT 1, `m0` against `h`; SPRT 2, `h` against `m1`. Each has log-likelihood ratio
//!   `L = (b - a) / sigma^2 * sum (d_i - (a + b) / 2)` and stops at Wald's bounds
//!   `ln((1 - e_b) / e_a)` (accept `b`) and `ln(e_b / (1 - e_a))` (accept `a`), `e_a`
//!   and `e_b` its errors of rejecting `a` and `b` when true: for SPRT 1, `alpha` (a
//!   revision like `m0` taken for another) and `between` (one halfway taken for an end);
//!   for SPRT 2, `between` and `beta` (like `m1` taken for another).
//! - SPRT 1 accepts `m0`: **like the low end**; SPRT 2 accepts `m1`: **like the high end**;
//!   both accept `h`: **between**. Until then, another round.
//! - `max_rounds` without a decision: between, marked capped (neither end fits well
//!   enough to say; the estimate and its interval say where it lies).
//!
//! Wald's bounds keep each SPRT's errors near those rates (at most `e_a / (1 - e_b)`
//! for known sigma, less with the overshoot of a large change): a revision like `m0` is
//! called anything else with about `alpha`, like `m1` with about `beta`, a revision
//! halfway is called an end with about `2 between`. The ends' errors are the costly ones
//! in a bisection (a revision like good taken for partial sends the search into a half
//! with nothing in it), so they default to 1%, the between error to 5%. A revision whose
//! mean is a quarter of the way or less is most often called like its nearer end: the
//! resolution of one step.
//!
//! **The noise.** A known-variance SPRT with the pooled estimate plugged in, not a
//! t-SPRT. Every step of a bisection measures the same program under the same load on
//! the same machine, so the per-round variance is one quantity: pooling the confirmation
//! step's rounds ([`PriorNoise`], typically 5 and more degrees of freedom) with the
//! step's own (each step's residuals about its own mean, so a step's change does not
//! inflate it) gives an estimate with many degrees of freedom after the first steps,
//! where a t-SPRT (Rushton's invariant ratio) would rely on the step's own two or three
//! rounds and need several more of them for the same errors. The price is that the
//! bounds hold only approximately while the pooled degrees of freedom are few; the
//! seeded simulations in `sprt_tests.rs` measure the error rates that result (within
//! alpha and beta with a 5-round prior). While the pooled degrees of freedom `k` are few,
//! the plugged-in variance is widened by `k / (k - 2)` (a Student t's variance against
//! the normal's), which keeps the errors within bounds from a 5-round prior on. A look is
//! made only from `min_rounds` rounds on and with at least 3 pooled degrees of freedom.
//!
//! Every look reruns the whole sequence from the data (each earlier look with the noise
//! estimated at that look), so a stopped or interrupted step decides the same way when
//! its rounds are read back from a store.
//!
//! ```
//! use dyno_stats::{sprt_three_way, PriorNoise, SprtDecision, SprtSettings};
//!
//! // Bad is 10% slower than good (log ratio 0.095); rounds of noise sd 3%.
//! let prior = PriorNoise { variance: 0.03f64.powi(2), df: 8 };
//! let settings = SprtSettings::default();
//! let like_bad = [0.10, 0.09, 0.12];
//! let look = sprt_three_way(&like_bad, 0.0, 0.095, Some(prior), &settings).unwrap();
//! assert_eq!(look.decision, Some(SprtDecision::High));
//! let halfway = [0.05, 0.04, 0.045, 0.05, 0.05];
//! let look = sprt_three_way(&halfway, 0.0, 0.095, Some(prior), &settings).unwrap();
//! assert_eq!(look.decision, Some(SprtDecision::Between));
//! assert!((look.share - 0.49).abs() < 0.05);
//! ```

use crate::error::{check_no_nan, StatsError};
use crate::student::student_t_quantile;

/// The settings of a three-decision SPRT.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SprtSettings {
    /// The probability that a revision like the low end (`m0`) is called otherwise.
    pub alpha: f64,
    /// The probability that a revision like the high end (`m1`) is called otherwise.
    pub beta: f64,
    /// Each SPRT's probability of calling a revision halfway one of the ends.
    pub between: f64,
    /// No decision before this many rounds (at least 1).
    pub min_rounds: usize,
    /// Rounds after which an undecided revision is called between (capped).
    pub max_rounds: usize,
    /// Level of the interval reported around the mean and the share.
    pub level: f64,
}

impl Default for SprtSettings {
    /// alpha = beta = 0.01, between = 0.05, 2 to 20 rounds, 95% intervals.
    fn default() -> Self {
        SprtSettings {
            alpha: 0.01,
            beta: 0.01,
            between: 0.05,
            min_rounds: 2,
            max_rounds: 20,
            level: 0.95,
        }
    }
}

/// What earlier measurements of the same noise say: a variance of the per-round log
/// ratios with its degrees of freedom (the confirmation step's and earlier steps'
/// residuals, pooled).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PriorNoise {
    /// The variance of one round's log ratio.
    pub variance: f64,
    /// Its degrees of freedom.
    pub df: usize,
}

impl PriorNoise {
    /// The residual variance of `d` about its own mean, with `len - 1` degrees of
    /// freedom (`None` for fewer than 2 values).
    pub fn of(d: &[f64]) -> Option<PriorNoise> {
        let n = d.len();
        if n < 2 || d.iter().any(|x| x.is_nan()) {
            return None;
        }
        let mean = d.iter().sum::<f64>() / n as f64;
        let ss: f64 = d.iter().map(|x| (x - mean).powi(2)).sum();
        Some(PriorNoise {
            variance: ss / (n - 1) as f64,
            df: n - 1,
        })
    }

    /// This noise pooled with `other` (degrees of freedom add, variances weighted by
    /// them).
    pub fn pooled(self, other: PriorNoise) -> PriorNoise {
        let df = self.df + other.df;
        if df == 0 {
            return self;
        }
        PriorNoise {
            variance: (self.variance * self.df as f64 + other.variance * other.df as f64)
                / df as f64,
            df,
        }
    }
}

/// Which hypothesis a revision was found to behave like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SprtDecision {
    /// Like the low end (`m0`, e.g. good).
    Low,
    /// Between the two (the change is partly there).
    Between,
    /// Like the high end (`m1`, e.g. bad).
    High,
}

/// A three-decision SPRT's look at the rounds so far.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SprtLook {
    /// Rounds given.
    pub rounds: usize,
    /// The round at which the decision was made (`rounds` when undecided).
    pub decided_at: usize,
    /// The decision; `None`: another round is needed.
    pub decision: Option<SprtDecision>,
    /// The decision is "between" because `max_rounds` passed without one.
    pub capped: bool,
    /// The mean log ratio of the rounds.
    pub mean: f64,
    /// Its interval at `level` (t with the pooled degrees of freedom).
    pub mean_interval: (f64, f64),
    /// Where the mean lies between the ends: 0 at `m0`, 1 at `m1`.
    pub share: f64,
    /// The share's interval (the mean's, rescaled).
    pub share_interval: (f64, f64),
    /// The pooled per-round sd used.
    pub sd: f64,
    /// Its degrees of freedom.
    pub df: usize,
    /// SPRT 1's log-likelihood ratio (`m0` against the midpoint; positive favours the
    /// midpoint) at the last look.
    pub llr_low: f64,
    /// SPRT 2's (the midpoint against `m1`; positive favours `m1`).
    pub llr_high: f64,
    /// SPRT 1's bounds (accept `m0` at or below the first, the midpoint at or above the
    /// second).
    pub bounds_low: (f64, f64),
    /// SPRT 2's bounds (accept the midpoint at or below the first, `m1` at or above the
    /// second).
    pub bounds_high: (f64, f64),
}

/// What one of the two SPRTs has done so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sprt {
    Open,
    /// Accepted its first hypothesis.
    First,
    /// Accepted its second hypothesis.
    Second,
}

fn log_likelihood_ratio(d: &[f64], a: f64, b: f64, variance: f64) -> f64 {
    let mid = (a + b) / 2.0;
    (b - a) / variance * d.iter().map(|x| x - mid).sum::<f64>()
}

fn step(state: Sprt, llr: f64, (lower, upper): (f64, f64)) -> Sprt {
    match state {
        Sprt::Open if llr >= upper => Sprt::Second,
        Sprt::Open if llr <= lower => Sprt::First,
        s => s,
    }
}

/// The three-decision SPRT of `d` (per-round log ratios) between `m0` and `m1`; see the
/// module documentation. `prior` is the noise measured before (pooled with the rounds'
/// own residuals).
pub fn sprt_three_way(
    d: &[f64],
    m0: f64,
    m1: f64,
    prior: Option<PriorNoise>,
    s: &SprtSettings,
) -> Result<SprtLook, StatsError> {
    check_no_nan(d, "d")?;
    for (what, v) in [("alpha", s.alpha), ("beta", s.beta), ("between", s.between)] {
        if !(v > 0.0 && v < 0.5) {
            return Err(StatsError::OutOfRange {
                what,
                value: v,
                range: "(0, 0.5)",
            });
        }
    }
    if !(m0.is_finite() && m1.is_finite() && m0 != m1) {
        return Err(StatsError::OutOfRange {
            what: "m1 - m0",
            value: m1 - m0,
            range: "finite and not 0",
        });
    }
    let wald = |e_a: f64, e_b: f64| (((e_b / (1.0 - e_a)).ln()), ((1.0 - e_b) / e_a).ln());
    let bounds_low = wald(s.alpha, s.between);
    let bounds_high = wald(s.between, s.beta);
    let mid = (m0 + m1) / 2.0;
    let (mut one, mut two) = (Sprt::Open, Sprt::Open);
    let mut decision = None;
    let mut decided_at = d.len();
    let mut last = (0.0, 0.0, noise(d, prior));
    for n in s.min_rounds.max(1)..=d.len() {
        let seen = &d[..n];
        let Some(noise) = noise(seen, prior) else {
            continue;
        };
        let variance = noise.variance.max(1e-12) * plug_in_inflation(noise.df);
        let (l1, l2) = (
            log_likelihood_ratio(seen, m0, mid, variance),
            log_likelihood_ratio(seen, mid, m1, variance),
        );
        last = (l1, l2, Some(noise));
        one = step(one, l1, bounds_low);
        two = step(two, l2, bounds_high);
        decision = match (one, two) {
            (Sprt::First, _) => Some(SprtDecision::Low),
            (_, Sprt::Second) => Some(SprtDecision::High),
            (Sprt::Second, Sprt::First) => Some(SprtDecision::Between),
            _ => None,
        };
        if decision.is_some() {
            decided_at = n;
            break;
        }
    }
    let capped = decision.is_none() && d.len() >= s.max_rounds;
    if capped {
        decision = Some(SprtDecision::Between);
    }
    let seen = &d[..decided_at];
    let (l1, l2, noise) = last;
    let noise = noise.unwrap_or(PriorNoise {
        variance: f64::INFINITY,
        df: 0,
    });
    let mean = if seen.is_empty() {
        f64::NAN
    } else {
        seen.iter().sum::<f64>() / seen.len() as f64
    };
    let half = if noise.df == 0 || seen.is_empty() {
        f64::INFINITY
    } else {
        student_t_quantile(0.5 + s.level / 2.0, noise.df as f64) * noise.variance.sqrt()
            / (seen.len() as f64).sqrt()
    };
    let mean_interval = (mean - half, mean + half);
    let share_of = |x: f64| (x - m0) / (m1 - m0);
    let (a, b) = (share_of(mean_interval.0), share_of(mean_interval.1));
    Ok(SprtLook {
        rounds: d.len(),
        decided_at,
        decision,
        capped,
        mean,
        mean_interval,
        share: share_of(mean),
        share_interval: (a.min(b), a.max(b)),
        sd: noise.variance.sqrt(),
        df: noise.df,
        llr_low: l1,
        llr_high: l2,
        bounds_low,
        bounds_high,
    })
}

/// The factor the plugged-in variance is widened by: `df / (df - 2)`, the variance of a
/// Student t with `df` degrees of freedom against the normal's. A variance estimated
/// from few rounds is as often too small as too large, and a too small one makes the
/// SPRT overconfident; the factor spends a little more evidence while the estimate is
/// young (1.5 at 6 degrees of freedom, 1.1 at 22) and none once it is not.
fn plug_in_inflation(df: usize) -> f64 {
    let df = df as f64;
    df / (df - 2.0)
}

/// The pooled noise of `seen` with `prior`, once it has at least 3 degrees of freedom.
fn noise(seen: &[f64], prior: Option<PriorNoise>) -> Option<PriorNoise> {
    let own = PriorNoise::of(seen);
    let pooled = match (prior, own) {
        (Some(p), Some(o)) => p.pooled(o),
        (Some(p), None) => p,
        (None, Some(o)) => o,
        (None, None) => return None,
    };
    (pooled.df >= 3 && pooled.variance.is_finite()).then_some(pooled)
}

#[cfg(test)]
mod tests;
