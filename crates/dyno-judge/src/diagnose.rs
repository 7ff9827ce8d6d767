//! What a judgement says about its inputs besides verdicts: counters that went down
//! between scrapes, units of work that no execution recorded, and the names closest to
//! a name that is not there.

use crate::work::WorkUnit;
use dyno_exec::{Execution, Outcome, SeriesKind};
use std::collections::BTreeMap;

/// Notes for the report: every counter that went down between scrapes (naming it and
/// in how many executions), and every unit of work no complete execution of its
/// workload recorded (its costs are then not judged; the other metrics are).
pub fn notes(executions: &[Execution], work: &BTreeMap<String, WorkUnit>) -> Vec<String> {
    let mut out: Vec<String> = counter_drops_note(&counter_drops(executions))
        .into_iter()
        .collect();
    for (workload, unit) in work {
        if let Some(names) = missing_work(executions, workload, unit) {
            out.push(format!(
                "workload `{workload}`: work metric `{}` was not recorded by any execution, so {} and {} are not judged (the closest metrics: {})",
                unit.metric,
                unit.cpu_metric().name,
                unit.rss_metric().name,
                closest_or_none(&unit.metric, &names)
            ));
        }
    }
    out
}

/// One note for every counter that went down between scrapes, however many (a node that
/// restarts resets them all at once; one line each buried the report): `None` when
/// none did.
fn counter_drops_note(drops: &[(String, usize, usize)]) -> Option<String> {
    const WHY: &str = "(a counter reset, or a gauge exported as a counter)";
    const RATE: &str = "counts each drop as a restart from 0, as Prometheus's rate() does";
    match drops {
        [] => None,
        [(metric, drops, of)] => Some(format!(
            "{metric} went down between scrapes in {drops} of {of} executions {WHY}: its rate {RATE}; if it is a level, declare it so or leave it out"
        )),
        many => {
            let named: Vec<String> = many
                .iter()
                .map(|(metric, drops, of)| format!("{metric} ({drops} of {of})"))
                .collect();
            Some(format!(
                "{} counters went down between scrapes {WHY}, in so many executions: {}; each one's rate {RATE}; declare the levels among them so or leave them out",
                many.len(),
                named.join(", ")
            ))
        }
    }
}

/// Counters (Prometheus counters as scraped) whose value fell between two scrapes of a
/// complete execution: `(metric, executions where it fell, executions that had it)`.
pub fn counter_drops(executions: &[Execution]) -> Vec<(String, usize, usize)> {
    let mut seen: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for e in executions.iter().filter(|e| e.outcome == Outcome::Complete) {
        for s in e.series.iter().filter(|s| s.kind == SeriesKind::Counter) {
            let fell = s.points.windows(2).any(|w| w[1].1 < w[0].1);
            let entry = seen.entry(&s.metric.name).or_default();
            entry.0 += usize::from(fell);
            entry.1 += 1;
        }
    }
    seen.into_iter()
        .filter(|(_, (fell, _))| *fell > 0)
        .map(|(m, (fell, of))| (m.to_string(), fell, of))
        .collect()
}

/// The metric names of the complete executions of `workload` when none of them recorded
/// `unit`'s metric; `None` when one did, or none is complete.
pub fn missing_work(
    executions: &[Execution],
    workload: &str,
    unit: &WorkUnit,
) -> Option<Vec<String>> {
    let complete: Vec<&Execution> = executions
        .iter()
        .filter(|e| e.workload == workload && e.outcome == Outcome::Complete)
        .collect();
    if complete.is_empty() || complete.iter().any(|e| unit.series(&e.series).is_some()) {
        return None;
    }
    let mut names: Vec<String> = Vec::new();
    for s in complete.iter().flat_map(|e| &e.series) {
        if !names.contains(&s.metric.name) {
            names.push(s.metric.name.clone());
        }
    }
    Some(names)
}

/// Names shown when suggesting.
pub const SUGGESTIONS: usize = 5;

/// The names of `names` closest to `name` (fewest edits, then the shorter; a name that
/// contains `name` or is contained in it counts as close), at most [`SUGGESTIONS`].
pub fn closest<'a>(name: &str, names: &'a [String]) -> Vec<&'a str> {
    let mut scored: Vec<(usize, &str)> = names
        .iter()
        .map(|n| {
            let d = edit_distance(name, n);
            let contains = n.contains(name) || name.contains(n.as_str());
            (if contains { d.min(2) } else { d }, n.as_str())
        })
        .collect();
    scored.sort_by(|a, b| {
        a.0.cmp(&b.0)
            .then(a.1.len().cmp(&b.1.len()))
            .then(a.1.cmp(b.1))
    });
    scored.dedup_by(|a, b| a.1 == b.1);
    scored
        .into_iter()
        .take(SUGGESTIONS)
        .map(|(_, n)| n)
        .collect()
}

/// [`closest`] as a list of quoted names, or `none`.
pub fn closest_or_none(name: &str, names: &[String]) -> String {
    let close = closest(name, names);
    if close.is_empty() {
        "none".into()
    } else {
        close
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Levenshtein distance over characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyno_exec::Series;
    use dyno_model::{Direction, Metric, Unit};

    fn exec(points: &[f64]) -> Execution {
        let mut e = Execution::starting("a", "w", 0, vec![]);
        e.series.push(Series {
            metric: Metric::new("node:blocks_total", Unit::Count, Direction::HigherIsBetter),
            kind: SeriesKind::Counter,
            points: points
                .iter()
                .enumerate()
                .map(|(i, v)| (i as f64, *v))
                .collect(),
        });
        e
    }

    #[test]
    fn a_counter_that_went_down_is_named() {
        let execs = [exec(&[10.0, 20.0, 5.0, 15.0]), exec(&[1.0, 2.0, 3.0])];
        assert_eq!(
            counter_drops(&execs),
            vec![("node:blocks_total".to_string(), 1, 2)]
        );
        let n = notes(&execs, &BTreeMap::new());
        assert_eq!(n.len(), 1);
        assert!(
            n[0].starts_with("node:blocks_total went down between scrapes in 1 of 2 executions"),
            "{}",
            n[0]
        );
        // Its rate is piecewise: 10 + (restart) 5 + 10 over 3 s.
        let v = crate::values::run_values(&execs[0].series);
        assert_eq!(v[0].metric.name, "node:blocks_total_per_s");
        assert!((v[0].value - 25.0 / 3.0).abs() < 1e-12);
        assert!(counter_drops(&execs[1..]).is_empty());
    }

    #[test]
    fn counters_that_went_down_together_are_one_note() {
        let mut e = exec(&[10.0, 5.0]);
        let mut other = e.series[0].clone();
        other.metric.name = "node:txs_total".into();
        e.series.push(other);
        let n = notes(&[e, exec(&[1.0, 2.0])], &BTreeMap::new());
        assert_eq!(n.len(), 1, "{n:?}");
        assert!(
            n[0].starts_with(
                "2 counters went down between scrapes (a counter reset, or a gauge exported as a counter), in so many executions: node:blocks_total (1 of 2), node:txs_total (1 of 1)"
            ),
            "{}",
            n[0]
        );
    }

    #[test]
    fn the_closest_names_are_few_and_close() {
        let names: Vec<String> = [
            "cpu_percent",
            "cpu_s_per_tx",
            "rss_bytes",
            "node:cometbft_consensus_total_txs",
            "node:cometbft_consensus_num_txs",
            "load:achieved_tps",
            "load:rpc_latency_p50_s",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(closest("cpu_pct", &names)[0], "cpu_percent");
        assert_eq!(
            closest("node:cometbft_consensus_totl_txs", &names)[0],
            "node:cometbft_consensus_total_txs"
        );
        assert!(closest("x", &names).len() <= SUGGESTIONS);
        assert_eq!(closest_or_none("x", &[]), "none");
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
