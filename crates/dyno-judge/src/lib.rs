//! The judge of `dyno compare`: stored executions in, verdicts and reports out.
//!
//! A comparison's executions (dyno-exec's data: a subject under a workload in one round,
//! its series and how it ended) are judged here, whether they were just run or read back
//! from the results store; nothing here starts, samples or stops a process, so a stored
//! comparison is re-judged without the measuring code (`dyno compare report`, `dyno
//! compare power`, `dyno serve`), and dyno-compare asks the judge only for its stopping
//! rule while it runs.
//!
//! - [`comparison`]: what a comparison is (subjects, workloads, settings, the test).
//! - [`values`], [`work`]: the value of each metric in each execution (a level's median,
//!   a rate's window mean, a counter's rate) and the costs per unit of work derived from
//!   them.
//! - [`verdict`]: per workload, metric and candidate, the per-round values against the
//!   baseline's with the test the comparison chose ([`TestKind`]: paired t-test on the
//!   per-round log ratios by default, signed-rank, unpaired Mann-Whitney, or the
//!   sequential test of a precision target); Holm's correction within the primary family
//!   ([`family`]: dyno's own cost and service measurements unless the comparison names
//!   its primary metrics) and, apart, within the secondary one; a noise band a change must
//!   leave; metrics with no information left out; each verdict's stated power
//!   ([`power`]).
//! - [`precision`]: the stopping rule of a comparison with a precision target, after
//!   every round. [`noise`]: where each primary metric's noise comes from and the window
//!   that reaches a precision soonest. [`trials`]: what a stored comparison could see
//!   (`dyno compare power`). [`diagnose`]: notes on the inputs.
//! - [`record`]: the stored form of an execution, one definition for the writer
//!   (dyno-compare) and the reader ([`record::load`]).
//! - [`judged`]: a comparison judged as a command asks; [`report`] and [`summary`]: the
//!   verdict table, sentences, JSON and the HTML report.
//! - [`synthetic`]: seeded made-up executions, for tests and examples.
//!
//! ```
//! use dyno_judge::Workload;
//! use dyno_judge::synthetic::Synthetic;
//! use dyno_judge::{judge, Verdict};
//! use dyno_stats::ComparisonSettings;
//!
//! let workloads = [Workload::new("value", 1000.0, 0.0, 10.0)];
//! let mut node = Synthetic::new(7);
//! node.slowdown.insert("v2".into(), 1.15); // 15% more CPU per transaction
//! let executions = node.comparison(&["v1", "v2"], &workloads, 10);
//! let settings = ComparisonSettings { resamples: 1000, ..ComparisonSettings::default() };
//! let j = judge(&executions, &["v1".into(), "v2".into()], &settings);
//! let cpu = j.verdicts.iter().find(|v| v.metric.name == "cpu_percent").unwrap();
//! assert_eq!(cpu.verdict(), Verdict::Regression);
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod comparison;
pub mod diagnose;
pub mod family;
pub mod judged;
pub mod noise;
pub mod power;
pub mod precision;
pub mod record;
pub mod report;
pub mod summary;
pub mod synthetic;
pub mod trials;
pub mod values;
pub mod verdict;
pub mod work;

pub use comparison::{ComparisonMeta, Schedule, Sequential, TestKind, VerdictKey, Workload};
pub use dyno_stats::Verdict;
pub use verdict::{judge, judge_with, Judgement, MetricVerdict};
