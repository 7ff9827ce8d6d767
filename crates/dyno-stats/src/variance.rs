//! Where a per-round spread comes from, and which window reaches a precision soonest.
//!
//! One round's log ratio varies for two reasons. **Within** a round, the measured window
//! is finite: a CPU figure over 20 s carries the noise of those 20 s (scheduling, clock
//! ticks, what the node happened to do), which a window twice as long halves. **Between**
//! rounds, each start of a node lands differently (memory layout, caches, background
//! work, the machine's state): that part does not shrink with the window. With
//! within-round variance `w` at a window of `T0` seconds and between-round variance `b`,
//! a round's log-ratio variance at a window of `T` seconds is about
//!
//! `var(T) = b + w * T0 / T`
//!
//! so once `b` dominates longer windows stop helping and only more rounds do.
//!
//! The within part is read from inside the executions: a window's value is compared with
//! the values of its equal parts (batch means: `k` parts of a window whose noise
//! averages out as `1 / T` give `var(ln part) / k` for the whole window;
//! [`window_log_variance`]). The between part is what the per-round log ratios vary by
//! beyond that ([`NoiseSplit`]). [`fastest_window`] then trades windows against rounds.
//!
//! ```
//! use dyno_stats::{fastest_window, NoiseSplit};
//!
//! // Log ratios of 8 rounds; within-round variance 0.0004 a round at 20 s windows.
//! let ratios = [0.05, -0.03, 0.02, -0.04, 0.06, -0.01, 0.00, -0.05];
//! let split = NoiseSplit::new(&ratios, &[0.0004; 8], 20.0).unwrap();
//! assert!(split.between > 0.0 && (split.within - 0.0004).abs() < 1e-15);
//! // Doubling the window halves only the within part.
//! assert!((split.variance_at(40.0) - (split.between + 0.0002)).abs() < 1e-15);
//! // A round of two 20 s executions and 10 s of start-up each: 60 s at 20 s windows.
//! let choices = fastest_window(
//!     &[split],
//!     &[10.0, 20.0, 60.0],
//!     |t| 2.0 * (t + 10.0),
//!     |sd| Some((100.0 * sd * sd).ceil() as usize + 2),
//! );
//! assert_eq!(choices.len(), 3);
//! ```

/// A per-round log-ratio variance taken apart (module docs). Variances are on the log
/// scale (0.0025 is a 5% sd).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NoiseSplit {
    /// Rounds it was measured over.
    pub rounds: usize,
    /// The measured window, seconds.
    pub window_s: f64,
    /// The sample variance of the per-round log ratios.
    pub total: f64,
    /// The mean within-round variance of a round's log ratio at `window_s`, at most
    /// `total`: what longer windows shrink.
    pub within: f64,
    /// `total - within`, at least 0: what only more rounds average out.
    pub between: f64,
}

impl NoiseSplit {
    /// Splits the variance of `log_ratios` (one per round) given each round's
    /// within-round variance of its log ratio at `window_s` seconds (the baseline's and
    /// the candidate's added). `None` with fewer than 2 rounds, unequal lengths, a window
    /// that is not positive or a value that is not finite.
    pub fn new(log_ratios: &[f64], within_per_round: &[f64], window_s: f64) -> Option<NoiseSplit> {
        if log_ratios.len() < 2
            || log_ratios.len() != within_per_round.len()
            || !(window_s > 0.0 && window_s.is_finite())
            || within_per_round
                .iter()
                .any(|w| !(w.is_finite() && *w >= 0.0))
        {
            return None;
        }
        let total = crate::sample_stddev(log_ratios)?.powi(2);
        // The parts' estimate is noisy: where it exceeds the variance the rounds show, all
        // of that variance is within the windows (never more, or the window run would be
        // predicted noisier than it was).
        let within =
            (within_per_round.iter().sum::<f64>() / within_per_round.len() as f64).min(total);
        total.is_finite().then_some(NoiseSplit {
            rounds: log_ratios.len(),
            window_s,
            total,
            within,
            between: (total - within).max(0.0),
        })
    }

    /// The predicted per-round log-ratio variance at a window of `window_s` seconds.
    pub fn variance_at(&self, window_s: f64) -> f64 {
        self.between + self.within * self.window_s / window_s
    }

    /// The share of the variance (0..1) that longer windows would shrink.
    pub fn within_share(&self) -> f64 {
        let sum = self.within + self.between;
        if sum > 0.0 {
            self.within / sum
        } else {
            0.0
        }
    }
}

/// The within-window variance of a window's value on the log scale, from the values of
/// its `k >= 2` equal parts: `var(ln part) / k` (module docs). `None` with fewer than 2
/// parts or a part that is not positive.
pub fn window_log_variance(parts: &[f64]) -> Option<f64> {
    if parts.len() < 2 || parts.iter().any(|p| !(*p > 0.0 && p.is_finite())) {
        return None;
    }
    let logs: Vec<f64> = parts.iter().map(|p| p.ln()).collect();
    Some(crate::sample_stddev(&logs)?.powi(2) / parts.len() as f64)
}

/// What reaching a precision would take at one window length.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WindowChoice {
    /// The window, seconds.
    pub window_s: f64,
    /// Rounds needed in all (the most any split needs).
    pub rounds: usize,
    /// `rounds` times the round's length at this window.
    pub seconds: f64,
}

/// For each window of `windows` (seconds), the rounds the noisiest of `splits` needs and
/// how long they take: `rounds_for_sd` answers the rounds a per-round sd needs (`None`:
/// more than it searches), `round_seconds` how long one round lasts at a window. Windows
/// at which some split cannot reach the precision are left out; the fastest is the one
/// with the fewest `seconds`.
pub fn fastest_window(
    splits: &[NoiseSplit],
    windows: &[f64],
    round_seconds: impl Fn(f64) -> f64,
    rounds_for_sd: impl Fn(f64) -> Option<usize>,
) -> Vec<WindowChoice> {
    windows
        .iter()
        .filter(|w| **w > 0.0)
        .filter_map(|&window_s| {
            let mut rounds = 0;
            for s in splits {
                rounds = rounds.max(rounds_for_sd(s.variance_at(window_s).sqrt())?);
            }
            Some(WindowChoice {
                window_s,
                rounds,
                seconds: rounds as f64 * round_seconds(window_s),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn a_window_of_white_noise_is_split_into_its_parts() {
        // One value a second with 10% noise: the 5 s parts of a 20 s window vary by
        // 0.1^2 / 5 each, so the whole window by 0.1^2 / 20 = 0.0005.
        let mut rng = rand_pcg::Pcg64::seed_from_u64(3);
        let mut estimates = Vec::new();
        for _ in 0..400 {
            let seconds: Vec<f64> = (0..20)
                .map(|_| 1.0 + 0.1 * (rng.gen::<f64>() * 2.0 - 1.0) * 3f64.sqrt())
                .collect();
            let parts: Vec<f64> = seconds
                .chunks(5)
                .map(|c| c.iter().sum::<f64>() / 5.0)
                .collect();
            estimates.push(window_log_variance(&parts).unwrap());
        }
        let mean = estimates.iter().sum::<f64>() / estimates.len() as f64;
        assert!((mean - 0.0005).abs() < 0.00006, "{mean}");
        assert_eq!(window_log_variance(&[1.0]), None);
        assert_eq!(window_log_variance(&[1.0, 0.0]), None);
    }

    #[test]
    fn between_is_what_the_windows_do_not_explain() {
        let r = [0.1, -0.1, 0.1, -0.1];
        let total = crate::sample_stddev(&r).unwrap().powi(2);
        let s = NoiseSplit::new(&r, &[0.002; 4], 10.0).unwrap();
        assert!((s.total - total).abs() < 1e-15);
        assert!((s.between - (total - 0.002)).abs() < 1e-15);
        // More within-round noise than the rounds show: nothing is left between.
        let s = NoiseSplit::new(&r, &[1.0; 4], 10.0).unwrap();
        assert_eq!(s.between, 0.0);
        assert_eq!(s.within_share(), 1.0);
        assert!(NoiseSplit::new(&r, &[0.1; 3], 10.0).is_none());
        assert!(NoiseSplit::new(&r, &[0.1; 4], 0.0).is_none());
    }

    #[test]
    fn the_fastest_window_trades_rounds_against_their_length() {
        // Mostly within-round noise: longer windows pay; mostly between: they do not.
        let rounds_for = |sd: f64| Some(((sd / 0.01).powi(2)).ceil().max(2.0) as usize);
        let round = |t: f64| 2.0 * (t + 15.0);
        let windows = [5.0, 10.0, 20.0, 40.0, 80.0, 160.0];
        let best = |s: NoiseSplit| {
            fastest_window(&[s], &windows, round, rounds_for)
                .into_iter()
                .min_by(|a, b| a.seconds.total_cmp(&b.seconds))
                .unwrap()
                .window_s
        };
        let within = NoiseSplit {
            rounds: 10,
            window_s: 20.0,
            total: 0.01,
            within: 0.0099,
            between: 0.0001,
        };
        let between = NoiseSplit {
            within: 0.0001,
            between: 0.0099,
            ..within
        };
        assert!(best(within) >= 40.0, "{}", best(within));
        assert!(best(between) <= 10.0, "{}", best(between));
        // A split that cannot reach the precision at some window drops that window.
        let capped = |sd: f64| (sd < 0.05).then_some(10);
        let c = fastest_window(&[within], &windows, round, capped);
        assert!(c.iter().all(|c| c.window_s >= 40.0), "{c:?}");
    }

    proptest! {
        #[test]
        fn variance_falls_with_the_window(
            within in 0.0f64..0.1,
            between in 0.0f64..0.1,
            t in 1.0f64..1000.0,
        ) {
            let s = NoiseSplit { rounds: 5, window_s: 20.0, total: within + between, within, between };
            prop_assert!(s.variance_at(t) >= between);
            prop_assert!(s.variance_at(2.0 * t) <= s.variance_at(t));
            prop_assert!((s.variance_at(20.0) - (within + between)).abs() <= 1e-12);
        }
    }
}
