//! The verdict table's change column and the way huge detectable changes are said.

use super::*;
use crate::comparison::TestKind;
use crate::synthetic::Synthetic;
use crate::verdict::tests::{run, workloads};
use crate::verdict::{judge_with, JudgeOptions};

fn judged(test: TestKind) -> (ComparisonMeta, Judgement) {
    let mut ex = Synthetic::new(8);
    ex.slowdown.insert("b".into(), 1.05);
    let execs = run(6, &ex);
    let options = JudgeOptions {
        test,
        ..JudgeOptions::default()
    };
    let subjects = vec!["a".to_string(), "b".to_string()];
    let j = judge_with(
        &execs,
        &subjects,
        &dyno_stats::ComparisonSettings::default(),
        &options,
    );
    (ComparisonMeta::of(&["a", "b"], &workloads(), 6), j)
}

#[test]
fn the_change_column_is_the_estimate_the_test_judged_and_says_which() {
    let (meta, j) = judged(TestKind::Paired);
    let t = verdict_table(&meta, &j);
    let header: Vec<&str> = t.columns.iter().map(|c| c.header.as_str()).collect();
    assert_eq!(
        header[3..7],
        [
            "baseline median",
            "candidate median",
            "change (geometric mean of round ratios)",
            "95% CI"
        ]
    );
    for (v, row) in j.verdicts.iter().zip(&t.rows) {
        let ratios = &v.round_ratios;
        assert_eq!(ratios.len(), 6, "{}", v.metric.name);
        let geometric = (ratios.iter().map(|r| r.ln()).sum::<f64>() / 6.0).exp();
        assert_eq!(row[5].text, pct(geometric), "{}", v.metric.name);
        // The t interval the test judged with, not the order statistics of the ratios.
        let c = v.comparison.ratio;
        assert_eq!(row[6].text, format!("{}..{}", pct(c.low), pct(c.high)));
    }
    // Unpaired, the ratio of the medians beside them.
    let (meta, j) = judged(TestKind::Unpaired);
    let t = verdict_table(&meta, &j);
    assert_eq!(t.columns[5].header, "change (ratio of medians)");
    let v = &j.verdicts[0];
    assert_eq!(t.rows[0][5].text, pct(v.comparison.ratio.estimate));
}

#[test]
fn a_detectable_change_beyond_ten_times_is_said_as_over_1000_percent() {
    let (meta, mut j) = judged(TestKind::Paired);
    // Every metric primary, few rounds, wild spread: a detectable change of millions of
    // percent, as `--primary '*'` on a rich endpoint gives.
    let huge = crate::power::stated_power(TestKind::Paired, 3, 2.0, 700, 0.05, 0.02);
    assert!(huge.min_detectable_change.unwrap() > 1e4);
    for v in &mut j.verdicts {
        v.power = Some(huge);
        v.comparison.verdict = dyno_stats::Verdict::NoSignificantChange;
    }
    let said: Vec<String> = observations(&j)
        .into_iter()
        .map(|(_, t)| t)
        .chain(power_lines(&j))
        .chain(
            verdict_table(&meta, &j)
                .rows
                .iter()
                .map(|r| r[9].text.clone()),
        )
        .collect();
    assert!(said.iter().any(|s| s.contains("over 1000%")), "{said:?}");
    for s in &said {
        // No percentage of more than four digits anywhere.
        let digits = s
            .split('%')
            .filter_map(|part| {
                part.rsplit(|c: char| !c.is_ascii_digit() && c != '.')
                    .next()
            })
            .map(|n| n.split('.').next().unwrap_or("").len())
            .max()
            .unwrap_or(0);
        assert!(digits <= 4, "{s}");
    }
}
