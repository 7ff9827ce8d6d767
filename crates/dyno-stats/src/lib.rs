//! Pure statistics for benchmark samples: quantiles, confidence intervals, tests, Pareto sets
//! and racing rules. Functions take samples and return numbers and decisions; nothing here
//! prints, reads files or keeps state, so every result can be recomputed from stored samples.
//!
//! ```
//! use dyno_stats::{
//!     bootstrap_median_ci, compare, mann_whitney_u, median, median_ci, quantile, summarize,
//!     Alternative, Better, ComparisonSettings, QuantileMethod, Verdict,
//! };
//!
//! let before = [12.1, 11.8, 12.4, 30.0, 12.0, 12.2, 11.9];
//! let after = [13.0, 13.4, 12.9, 13.1, 13.3, 13.2, 13.6];
//!
//! // Location and spread: the outlier 30.0 moves the mean, not the median.
//! assert_eq!(median(&before), Some(12.1));
//! assert_eq!(quantile(&before, 0.9, QuantileMethod::NearestRank), Some(30.0));
//! let s = summarize(&before).unwrap();
//! assert!(s.mean > 14.0 && s.median < 12.2);
//!
//! // Median with an exact distribution-free interval, and a seeded bootstrap one.
//! let ci = median_ci(&before, 0.95).unwrap();
//! assert_eq!((ci.low, ci.high), (11.8, 30.0));
//! assert!((ci.achieved - 0.984375).abs() < 1e-12); // 1 - 2/2^7: min..max of 7 values
//! let boot = bootstrap_median_ci(&before, 0.95, 2_000, 42).unwrap();
//! assert!(boot.low <= boot.estimate && boot.estimate <= boot.high);
//!
//! // Is "after" slower? Exact Mann-Whitney, then a verdict with a 2% noise band.
//! let test = mann_whitney_u(&after, &before, Alternative::Greater).unwrap();
//! assert!((test.p_value - 45.0 / 3432.0).abs() < 1e-12); // exact: 0.0131
//! let settings = ComparisonSettings { resamples: 2_000, ..ComparisonSettings::default() };
//! let c = compare(&before, &after, Better::Lower, &settings).unwrap();
//! assert_eq!(c.verdict, Verdict::Regression);
//! ```
//!
//! # What is where
//! - [`quantile`], [`median`], [`summarize`], [`mad`] / [`mad_scaled`], [`mean`],
//!   [`sample_stddev`], [`coefficient_of_variation`]: location and spread.
//! - [`median_ci`] (exact order-statistic interval), [`bootstrap_median_ci`],
//!   [`bootstrap_ratio_of_medians_ci`]: confidence intervals.
//! - [`mann_whitney_u`]: rank test, exact or normal approximation.
//! - [`holm`]: Holm-Bonferroni correction for many tests.
//! - [`modified_z_outliers`]: Iglewicz-Hoaglin outlier flags.
//! - [`pareto_front`], [`near_pareto`]: non-dominated subjects over metrics with directions.
//! - [`ratio_shift_ci`]: Hodges-Lehmann ratio of two samples with its rank interval.
//! - [`eliminations`], [`order_settled`], [`settled_variants`]: racing rules for `dyno tune`.
//! - [`compare`], [`compare_many`], [`apply_holm`]: release verdicts for `dyno compare`.
//! - [`paired_t`], [`compare_paired`], [`wilcoxon_signed_rank`], [`paired_ratio_ci`],
//!   [`compare_signed_rank`]: the same verdicts from values paired by round (noise common
//!   to a round cancels in its ratio).
//! - [`percentile_rank`]: where one value stands among others (`dyno results fleet`).
//! - [`spans_at_or_above`]: maximal runs of values at or above a level (CPU 85% spans).
//! - [`student_t_sf`], [`student_t_quantile`]: Student's t distribution.
//! - [`PowerQuestion`]: the minimum detectable change of a comparison and the rounds a
//!   change needs (stated power).
//! - [`sequential_t`], [`compare_sequential`], [`sequential_critical_t`]: the paired test
//!   that may be looked at after every round (a scale-invariant mixture SPRT with
//!   always-valid p-values), for comparisons run until they reach a precision.
//! - [`sprt_three_way`]: Wald's SPRT of simple hypotheses, three decisions (like one
//!   known mean, like the other, between), with the noise pooled over earlier
//!   measurements ([`PriorNoise`]): a bisection step's "like good or like bad?".
//! - [`NoiseSplit`], [`fastest_window`]: a per-round variance taken apart into what
//!   longer windows shrink and what only more rounds do, and the window that reaches a
//!   precision soonest.
//! - [`change_points`], [`latest_regression`]: change points over a metric's history
//!   (E-Divisive means with a t-test, as Apache Otava), weak and strong, and whether the
//!   newest value starts a regression (`dyno results trend`);
//!   [`moving_window_changes`]: Mozilla Perfherder's moving-window t-test, to compare.
//!
//! # NaN policy
//! A NaN is never a measurement. Functions returning `Option` return `None` when an input
//! sample contains NaN; functions returning `Result` return [`StatsError::NaN`]. Nothing
//! silently drops or sorts NaNs. Infinities are ordinary (ordered) values.
//!
//! # Reproducibility
//! Every randomised function takes a `seed` and uses [`rand_pcg::Pcg64`]: the same samples
//! and seed give the same interval on every machine.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod better;
mod bootstrap;
mod changepoint;
mod comparison;
mod error;
mod holm;
mod interval;
mod mannwhitney;
mod moving_t;
mod normal;
mod outliers;
mod paired;
mod pareto;
mod power;
mod quantile;
mod racing;
mod racing_paired;
mod rank;
mod sequential;
mod shift;
mod spans;
mod sprt;
mod student;
mod variance;

pub use better::Better;
pub use bootstrap::{bootstrap_median_ci, bootstrap_ratio_of_medians_ci};
pub use changepoint::{
    change_points, latest_regression, ChangePoint, ChangePointSettings, Strength,
};
pub use comparison::{
    apply_holm, classify, compare, compare_many, compare_paired, compare_sequential,
    compare_signed_rank, Comparison, ComparisonInput, ComparisonSettings, SignificanceTest,
    Verdict,
};
pub use error::StatsError;
pub use holm::{holm, holm_adjust, Holm};
pub use interval::{median_ci, order_statistic_rank, ConfidenceInterval};
pub use mannwhitney::{
    exact_u_counts, mann_whitney_u, mann_whitney_u_using, Alternative, MannWhitney,
    MannWhitneyMethod, EXACT_LIMIT,
};
pub use moving_t::{moving_window_changes, MovingWindowSettings, WindowChange};
pub use outliers::{modified_z_outliers, OutlierScale, Outliers, MODIFIED_Z_THRESHOLD};
pub use paired::{
    exact_w_counts, log_ratios, paired_ratio_ci, paired_t, wilcoxon_signed_rank, PairedT,
    SignedRank, EXACT_PAIRED_LIMIT,
};
pub use pareto::{dominates, near_pareto, pareto_front, Interval, NearPareto};
pub use power::{
    log_ratio_sd, pooled_log_sd, PowerQuestion, PowerTest, MAX_ROUNDS as POWER_MAX_ROUNDS,
};
pub use quantile::{
    coefficient_of_variation, mad, mad_scaled, mean, median, quantile, quantile_sorted,
    sample_stddev, summarize, QuantileMethod, Summary, MAD_NORMAL_SCALE,
};
pub use racing::{
    eliminations, order_settled, settled_variants, Elimination, MetricEvidence, OrderSettlement,
    RaceDecision, RacingRule,
};
pub use racing_paired::{
    challenger, paired_eliminations, paired_settled, PairedGain, PairedRule, RoundSamples,
};
pub use rank::percentile_rank;
pub use sequential::{
    max_log_bayes_factor, mixture_log_bayes_factor, sequential_critical_t, sequential_t,
    sequential_t_with, SequentialT, MIXING_VARIANCE,
};
pub use shift::ratio_shift_ci;
pub use spans::spans_at_or_above;
pub use sprt::{sprt_three_way, PriorNoise, SprtDecision, SprtLook, SprtSettings};
pub use student::{student_t_quantile, student_t_sf};
pub use variance::{fastest_window, window_log_variance, NoiseSplit, WindowChoice};
