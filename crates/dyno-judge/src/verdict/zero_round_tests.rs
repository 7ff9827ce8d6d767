//! A metric with a zero in one round: no log ratio for that round, so the change, the
//! medians and the JSON must still agree (issue 47, item 8).

use super::*;
use dyno_exec::{Series, SeriesKind};
use dyno_model::Unit;

fn exec(subject: &str, round: u32, tps: f64) -> Execution {
    let mut e = Execution::starting(subject, "value", round, vec![]);
    e.series.push(Series {
        metric: Metric::new("tps", Unit::PerSecond, Direction::HigherIsBetter),
        kind: SeriesKind::Gauge,
        points: vec![(1.0, tps)],
    });
    e
}

/// Ten rounds at 14.5 against 14.25 (the candidate 1.7% lower), with one round of one
/// subject at zero.
fn rounds(zero_in: &str) -> Vec<Execution> {
    (0..10)
        .flat_map(|r| {
            let a = if zero_in == "a" && r == 3 {
                0.0
            } else {
                14.5 + 0.01 * r as f64
            };
            let b = if zero_in == "b" && r == 3 {
                0.0
            } else {
                14.25 + 0.01 * r as f64
            };
            [exec("a", r, a), exec("b", r, b)]
        })
        .collect()
}

#[test]
fn a_zero_round_is_judged_by_the_rank_test_with_a_change_the_medians_agree_with() {
    let subjects = ["a".to_string(), "b".to_string()];
    for zero_in in ["a", "b"] {
        for test in [TestKind::Paired, TestKind::SignedRank, TestKind::Sequential] {
            let o = JudgeOptions {
                test,
                ..JudgeOptions::default()
            };
            let s = ComparisonSettings::default();
            let j = judge_with(&rounds(zero_in), &subjects, &s, &o);
            let v = j.verdicts.iter().find(|v| v.metric.name == "tps").unwrap();
            let what = format!("zero in {zero_in}, {test:?}: {v:?}");
            // The medians are 14.5 and 14.25: a change of about -1.7%, not an infinite
            // one (nor -100%), and the test that decided says so.
            let medians = dyno_stats::median(&v.candidate_values).unwrap()
                / dyno_stats::median(&v.baseline_values).unwrap();
            let change = v.comparison.ratio.estimate;
            assert!(
                change.is_finite() && (change - medians).abs() < 0.01,
                "{what}"
            );
            assert!(v.comparison.ratio.low <= change && change <= v.comparison.ratio.high);
            assert_eq!(v.comparison.test.name(), "mann-whitney", "{what}");
            // No round ratio of 0 or infinity beside it: the zero round has none.
            assert_eq!(v.round_ratios.len(), 9, "{what}");
            assert!(v.round_ratios.iter().all(|r| r.is_finite() && *r > 0.0));
            let note = format!(
                "value: tps of b: 1 of its rounds at zero (baseline {}, candidate {}) have no ratio: judged by the rank test on all rounds (Mann-Whitney), not {}",
                usize::from(zero_in == "a"),
                usize::from(zero_in == "b"),
                test.name()
            );
            assert!(j.notes.contains(&note), "{what}: {:?}", j.notes);
        }
    }
}

#[test]
fn a_zero_baseline_median_is_still_judged_by_zero_counts() {
    // Every baseline round at zero (no major faults), the candidate's positive: the rank
    // test decides and the ratio is infinite, as before; no note of a zero round.
    let execs: Vec<Execution> = (0..10)
        .flat_map(|r| [exec("a", r, 0.0), exec("b", r, 5.0)])
        .collect();
    let o = JudgeOptions {
        test: TestKind::Paired,
        ..JudgeOptions::default()
    };
    let j = judge_with(
        &execs,
        &["a".into(), "b".into()],
        &ComparisonSettings::default(),
        &o,
    );
    let v = j.verdicts.iter().find(|v| v.metric.name == "tps").unwrap();
    assert_eq!(v.comparison.ratio.estimate, f64::INFINITY);
    assert!(
        j.notes.iter().all(|n| !n.contains("have no ratio")),
        "{:?}",
        j.notes
    );
}
