//! Stated power: what each verdict could have seen.
//!
//! Every judged metric gets the smallest change its comparison would have flagged with
//! 80% probability ([`POWER`]), given its rounds, the observed spread (the sd of the
//! per-round log ratios for the paired tests, the pooled sd of the log values
//! unpaired) and the size of the Holm family it was corrected in; never less than the
//! noise band, which a change must also leave (see `dyno_stats::PowerQuestion` for the
//! arithmetic). With it, "no significant change" reads as "no change larger than X%",
//! or as "this design could not have seen anything": a rank test whose smallest p-value
//! cannot reach alpha over the family, with the rounds that would.

use crate::comparison::TestKind;
use dyno_stats::{PowerQuestion, PowerTest};
use serde::Serialize;

/// The probability of flagging a change that stated power is given at.
pub const POWER: f64 = 0.8;

/// The change the rounds figure is given for: 5%, a step users ask to see.
pub const REFERENCE_CHANGE: f64 = 0.05;

/// What one verdict could have flagged.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct StatedPower {
    /// Rounds judged (pairs for the paired tests, the smaller subject's values unpaired).
    pub rounds: usize,
    /// The observed spread on the log scale.
    pub log_sd: f64,
    /// Comparisons in the Holm family it was corrected in.
    pub family: usize,
    /// The smallest relative change flagged with probability [`POWER`] (0.05 = 5%), at
    /// least the noise band; `None` when no change of any size could be flagged.
    pub min_detectable_change: Option<f64>,
    /// Whether the noise band, not the statistics, sets `min_detectable_change`.
    pub limited_by_noise_band: bool,
    /// Rounds at which a [`REFERENCE_CHANGE`] would be flagged with probability
    /// [`POWER`] (`None`: more than `dyno_stats::POWER_MAX_ROUNDS`, or below the band).
    pub rounds_for_reference_change: Option<usize>,
    /// Rounds at which the test can reach alpha over the family at all, when it cannot
    /// with `rounds`.
    pub rounds_to_reach_alpha: Option<usize>,
}

/// The power arithmetic's name for a test.
pub(crate) fn power_test(test: TestKind) -> PowerTest {
    match test {
        TestKind::Paired => PowerTest::PairedT,
        TestKind::SignedRank => PowerTest::SignedRank,
        TestKind::Unpaired => PowerTest::MannWhitney,
        TestKind::Sequential => PowerTest::Sequential,
    }
}

/// The stated power of a verdict judged by `test` on `rounds` rounds with spread `log_sd`
/// in a Holm family of `family`.
pub fn stated_power(
    test: TestKind,
    rounds: usize,
    log_sd: f64,
    family: usize,
    alpha: f64,
    noise_band: f64,
) -> StatedPower {
    let q = PowerQuestion {
        test: power_test(test),
        n: rounds,
        sd: log_sd,
        alpha,
        family,
        power: POWER,
    };
    let statistical = q.min_detectable_change();
    let min_detectable_change = statistical.map(|c| c.max(noise_band));
    StatedPower {
        rounds,
        log_sd,
        family,
        min_detectable_change,
        limited_by_noise_band: statistical.is_some_and(|c| c < noise_band),
        rounds_for_reference_change: (REFERENCE_CHANGE > noise_band)
            .then(|| q.rounds_for(REFERENCE_CHANGE))
            .flatten(),
        rounds_to_reach_alpha: statistical
            .is_none()
            .then(|| q.rounds_to_reach_alpha())
            .flatten(),
    }
}

impl StatedPower {
    /// "could flag a change of 7.9% (80% power); 5% needs 18 rounds", or why it could
    /// flag none.
    pub fn sentence(&self) -> String {
        let Some(mdc) = self.min_detectable_change else {
            let rounds = match self.rounds_to_reach_alpha {
                Some(r) => format!("; {r} rounds would"),
                None => String::new(),
            };
            return format!(
                "no change of any size could be flagged with {} rounds in a family of {}{rounds}",
                self.rounds, self.family
            );
        };
        let band = if self.limited_by_noise_band {
            " (the noise band)"
        } else {
            ""
        };
        let reference = match self.rounds_for_reference_change {
            Some(r) if mdc > REFERENCE_CHANGE => {
                format!("; {:.0}% needs {r} rounds", REFERENCE_CHANGE * 100.0)
            }
            _ => String::new(),
        };
        let size = change_text(mdc);
        format!(
            "could flag a change of {size}{band} with {:.0}% power{reference}",
            POWER * 100.0
        )
    }
}

/// A detectable change as people read it: `3.1%`, and `over 1000%` beyond ten times
/// (a design that cannot see anything, not a measurement of 534228411.6%).
pub fn change_text(change: f64) -> String {
    if change >= 10.0 || !change.is_finite() {
        "over 1000%".to_string()
    } else {
        format!("{:.1}%", change * 100.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn four_rounds_of_a_noisy_metric_in_a_large_family_say_so() {
        // The numbers: sd 0.26 of the log ratios, 4 rounds, 762 comparisons.
        let p = stated_power(TestKind::Paired, 4, 0.26, 762, 0.05, 0.02);
        let mdc = p.min_detectable_change.unwrap();
        assert!(mdc > 10.0, "{mdc}"); // over a thousand percent
        assert!(
            p.sentence().starts_with("could flag a change of"),
            "{}",
            p.sentence()
        );
        // The same spread in a family of one is far more sensitive.
        let one = stated_power(TestKind::Paired, 4, 0.26, 1, 0.05, 0.02);
        assert!(one.min_detectable_change.unwrap() < mdc / 10.0);
    }

    #[test]
    fn a_quiet_metric_is_limited_by_the_noise_band() {
        let p = stated_power(TestKind::Paired, 10, 0.001, 3, 0.05, 0.02);
        assert_eq!(p.min_detectable_change, Some(0.02));
        assert!(p.limited_by_noise_band);
        assert!(
            p.sentence().contains("2.0% (the noise band)"),
            "{}",
            p.sentence()
        );
        assert!(!p.sentence().contains("needs"), "{}", p.sentence());
    }

    #[test]
    fn a_rank_test_below_its_floor_names_the_rounds_that_would_do() {
        let p = stated_power(TestKind::SignedRank, 4, 0.03, 5, 0.05, 0.02);
        assert_eq!(p.min_detectable_change, None);
        // 5 * 2 / 2^n <= 0.05 from n = 8.
        assert_eq!(p.rounds_to_reach_alpha, Some(8));
        assert_eq!(
            p.sentence(),
            "no change of any size could be flagged with 4 rounds in a family of 5; 8 rounds would"
        );
    }
}
