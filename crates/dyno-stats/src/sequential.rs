//! Sequential paired testing: add rounds until a comparison is precise enough, without
//! the false alarms that looking after every round brings to a fixed-horizon test.
//!
//! Looking at a t-test's p-value after every round and stopping when it crosses alpha
//! flags an A/A comparison far more often than alpha (about a quarter of the time with
//! five looks). The test here stays valid however often it is looked at and whenever it
//! is stopped: a **scale-invariant mixture sequential probability ratio test** on the
//! per-round log ratios (the "safe t-test" of Grünwald, de Heide and Koolen; the mixture
//! SPRT of Robbins 1970 made free of the unknown variance).
//!
//! Each round adds one log ratio `d_i ~ N(mu, sigma^2)`. Under "no change" `mu = 0`;
//! under a change the standardized effect `delta = mu / sigma` is mixed over a normal
//! prior `N(0, g)` ([`MIXING_VARIANCE`] is `g`), and the unknown `sigma` carries the
//! scale-invariant prior `1 / sigma` under both. The Bayes factor after `n` rounds, with
//! `t` the one-sample t statistic and `nu = n - 1`, is
//!
//! `B_n = (1 + n g)^(-1/2) * ((1 + t^2 / nu) / (1 + t^2 / (nu (1 + n g))))^(n / 2)`
//!
//! It is the likelihood ratio of the data's scale-free part, so under "no change" it is a
//! non-negative martingale with `B_1 = 1`, and by Ville's inequality
//! `P(B_n >= 1 / alpha for some n) <= alpha`: rejecting the first time `B_n` reaches
//! `1 / alpha` keeps the false-alarm rate at alpha at any stopping time, including one
//! chosen by looking at the data (stopping for precision, for a budget, or never). The
//! **always-valid p-value** is `p_n = min(1, min_{k <= n} 1 / B_k)`; Holm's correction
//! applies to it as to any valid p-value, and because it only falls as rounds are added,
//! Holm's rejections only grow: a family judged at every round errs at most alpha.
//!
//! `B_n` grows with `|t|` and is bounded by `(1 + n g)^((n - 1) / 2)`, so a level can be
//! reached only from some number of rounds on (5 for alpha = 0.05, 7 for 0.05 / 8): the
//! sequential test's floor, as an exact rank test has one. The rejection region at `n`
//! is `|t| >= c_n` ([`sequential_critical_t`]); the interval `mean +- c_n(1 - level) se`
//! holds the true mean at every round at once (a confidence sequence), wider than the
//! fixed-horizon t interval by the price of looking as often as one likes.
//!
//! ```
//! use dyno_stats::{sequential_critical_t, sequential_t, MIXING_VARIANCE};
//!
//! // Ten rounds of log ratios around +5% with 3% noise: clearly a change.
//! let d = [0.02, 0.08, 0.05, 0.03, 0.09, 0.04, 0.06, 0.01, 0.07, 0.05];
//! let s = sequential_t(&d).unwrap();
//! assert!(s.p_value < 0.01);
//! // The always-valid threshold is stricter than a fixed-horizon t-test's 2.26.
//! let c = sequential_critical_t(10, MIXING_VARIANCE, 0.05).unwrap();
//! assert!(c > 3.0 && c < 4.0);
//! // No level 0.05 can be reached with 4 rounds.
//! assert_eq!(sequential_critical_t(4, MIXING_VARIANCE, 0.05), None);
//! ```

use crate::error::StatsError;

/// The prior variance `g` of the standardized effect (the change in units of the
/// per-round sd) under the alternative. One sd per round: the size of change a precision
/// target asks to see once a few tens of rounds have narrowed it (a 5% change with a 5%
/// per-round sd), where the test is most sensitive.
pub const MIXING_VARIANCE: f64 = 1.0;

/// The outcome of a sequential t-test after `n` rounds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SequentialT {
    /// Rounds (differences) judged.
    pub n: usize,
    /// Mean of the differences.
    pub mean: f64,
    /// Standard error of the mean.
    pub std_error: f64,
    /// `mean / std_error` (infinite when the differences are equal and not zero).
    pub t: f64,
    /// Degrees of freedom, `n - 1`.
    pub df: f64,
    /// The Bayes factor `B_n` now (an e-value: its reciprocal alone is a valid p-value).
    pub bayes_factor: f64,
    /// The always-valid p-value: `min(1, min over k <= n of 1 / B_k)`.
    pub p_value: f64,
}

/// `ln B_n` for a t statistic `t` after `n >= 2` rounds with mixing variance `g` (module
/// docs). Symmetric in `t`, increasing in `|t|`; `t = +-inf` gives the bound
/// [`max_log_bayes_factor`].
pub fn mixture_log_bayes_factor(t: f64, n: usize, g: f64) -> f64 {
    if n < 2 {
        return 0.0;
    }
    let nu = (n - 1) as f64;
    let c = 1.0 + n as f64 * g;
    if t.is_infinite() {
        return max_log_bayes_factor(n, g);
    }
    let x = t * t / nu;
    -0.5 * c.ln() + 0.5 * n as f64 * (x.ln_1p() - (x / c).ln_1p())
}

/// The largest `ln B_n` any data can give after `n` rounds: `(n - 1) / 2 * ln(1 + n g)`.
pub fn max_log_bayes_factor(n: usize, g: f64) -> f64 {
    if n < 2 {
        return 0.0;
    }
    0.5 * (n - 1) as f64 * (n as f64 * g).ln_1p()
}

/// The `|t|` at which `B_n` reaches `1 / alpha` after `n` rounds: the rejection threshold
/// of the sequential test, and (with `alpha = 1 - level`) the half-width of its
/// confidence sequence in standard errors. `None` when no data of `n` rounds can reach
/// it (module docs: the floor), or for an `alpha` outside (0, 1).
pub fn sequential_critical_t(n: usize, g: f64, alpha: f64) -> Option<f64> {
    if !(alpha > 0.0 && alpha < 1.0 && g > 0.0 && g.is_finite()) || n < 2 {
        return None;
    }
    let target = (1.0 / alpha).ln();
    if max_log_bayes_factor(n, g) <= target {
        return None;
    }
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    while mixture_log_bayes_factor(hi, n, g) < target {
        hi *= 2.0;
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mixture_log_bayes_factor(mid, n, g) < target {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo <= 1e-12 * hi {
            break;
        }
    }
    Some(hi)
}

/// Mean, standard error and t of the first `n` differences, from running sums (an
/// all-equal sample has no spread: rounding error below 1e-12 of the mean counts as none).
fn t_of(n: usize, mean: f64, m2: f64) -> (f64, f64) {
    let nf = n as f64;
    let var = (m2 / (nf - 1.0)).max(0.0);
    let se = (var / nf).sqrt();
    let se = if se <= mean.abs() * 1e-12 { 0.0 } else { se };
    let t = if se == 0.0 {
        if mean == 0.0 {
            0.0
        } else {
            mean.signum() * f64::INFINITY
        }
    } else {
        mean / se
    };
    (se, t)
}

/// The sequential t-test of `differences` (in the order they were observed, one per
/// round) against mean 0, with [`MIXING_VARIANCE`]: see the module docs.
///
/// Errors: fewer than 2 differences, or a NaN.
pub fn sequential_t(differences: &[f64]) -> Result<SequentialT, StatsError> {
    sequential_t_with(differences, MIXING_VARIANCE)
}

/// [`sequential_t`] with mixing variance `g > 0`.
pub fn sequential_t_with(differences: &[f64], g: f64) -> Result<SequentialT, StatsError> {
    crate::error::check_sample(differences, "differences", 2)?;
    if !(g > 0.0 && g.is_finite()) {
        return Err(StatsError::OutOfRange {
            what: "mixing variance",
            value: g,
            range: "(0, inf)",
        });
    }
    // Welford's running mean and sum of squares: one look per round.
    let (mut mean, mut m2) = (0.0, 0.0);
    let mut min_inverse = 1.0f64;
    let mut last = None;
    for (i, &d) in differences.iter().enumerate() {
        let n = i + 1;
        let delta = d - mean;
        mean += delta / n as f64;
        m2 += delta * (d - mean);
        if n < 2 {
            continue;
        }
        let (se, t) = t_of(n, mean, m2);
        let log_bf = mixture_log_bayes_factor(t, n, g);
        min_inverse = min_inverse.min((-log_bf).exp());
        last = Some((n, mean, se, t, log_bf.exp()));
    }
    let (n, mean, std_error, t, bayes_factor) = last.expect("at least 2 differences");
    Ok(SequentialT {
        n,
        mean,
        std_error,
        t,
        df: (n - 1) as f64,
        bayes_factor,
        p_value: min_inverse.min(1.0),
    })
}

#[cfg(test)]
mod tests;
