//! Which metrics a comparison judges, and in which Holm family.
//!
//! Holm's correction makes every verdict pay for every other comparison in its family: a
//! third-party node that exports hundreds of metrics would otherwise leave nothing
//! detectable. So:
//!
//! - **Metrics with no information are not judged.** A metric with the same value in
//!   every execution of both subjects (mostly zeros: no I/O, no major faults, an idle
//!   subsystem) cannot be significant under any test, and a metric one subject never
//!   reported has nothing to pair with. They leave the family ([`Unjudged`]), are counted
//!   in one line and listed in the JSON and the HTML report.
//! - **Default families.** With no `primary` named, the primary family (the verdict, the
//!   exit code) is dyno's own measurements of cost and service, the same for every node:
//!   CPU and memory of the node's process tree, `ready_s`, the costs per unit of work
//!   (`cpu_s_per_*`, `rss_per_*`, `bank_s_per_tx`), the load generator's achieved rates
//!   and latencies, and a cluster's adoption, fetch and per-node cost. Everything the node
//!   exports about itself (Prometheus `node:` and JSON-lines `jsonl:` metrics, fault and
//!   context-switch rates) is judged in a secondary family of its own: reported with its
//!   own Holm correction, never diluting the verdict. When a workload names its unit of
//!   work, `cpu_s_per_<unit>` is its CPU figure and `cpu_percent` is secondary. `primary = ["*"]` (or `--primary
//!   '*'`) puts every metric in one family, as before this rule.

use dyno_model::{Metric, Unit};
use serde::Serialize;

/// The `primary` entry that makes every metric primary.
pub const ALL_PRIMARY: &str = "*";

/// Whether a metric is primary under `primary` (the file's names, `["*"]`, or empty for
/// the default family of the module docs).
pub fn is_primary(metric: &Metric, primary: &[String]) -> bool {
    // What the rest of the machine did during a window (`host:other_cpu_percent`) is the
    // context of a verdict, never one: not even under `*`.
    if metric.name.starts_with("host:") {
        return false;
    }
    if primary.is_empty() {
        return default_primary(metric);
    }
    primary
        .iter()
        .any(|p| p == ALL_PRIMARY || *p == metric.name)
}

/// As [`is_primary`], for a metric of a workload whose unit of work gave its CPU cost
/// (`has_cost`): then `cpu_s_per_<unit>` is the default family's CPU figure and the
/// node's `cpu_percent` is secondary (at a fixed rate both move with the CPU, and the
/// cost stays comparable when the achieved rate differs; one CPU figure in the family
/// instead of two makes every verdict's Holm level less strict).
pub fn is_primary_for(metric: &Metric, primary: &[String], has_cost: bool) -> bool {
    if primary.is_empty() && has_cost && metric.name == "cpu_percent" {
        return false;
    }
    is_primary(metric, primary)
}

/// dyno's own measurements of cost and service: the default primary family.
pub fn default_primary(metric: &Metric) -> bool {
    let name = metric.name.as_str();
    if matches!(
        name,
        "cpu_percent" | "rss_bytes" | "peak_rss_bytes" | "ready_s" | "bank_s_per_tx"
    ) || name.starts_with("cpu_s_per_")
        || name.starts_with("rss_per_")
        || name.starts_with("cluster:")
    {
        return true;
    }
    // The load's service: what it achieved per second and how long the node took to
    // answer, not the load generator's own cost.
    if let Some(field) = name.strip_prefix("load:") {
        return !matches!(field, "cpu_percent" | "rss_bytes")
            && matches!(
                metric.unit,
                Unit::PerSecond | Unit::Seconds | Unit::Nanoseconds
            );
    }
    false
}

/// Why a metric was not judged.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "reason")]
pub enum UnjudgedReason {
    /// The same value in every execution of both subjects.
    Unchanged {
        /// The value.
        value: f64,
    },
    /// One subject never reported it.
    Missing {
        /// The subject without it.
        subject: String,
    },
}

/// A metric left out of every family, with why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Unjudged {
    /// Workload name.
    pub workload: String,
    /// Candidate subject name.
    pub candidate: String,
    /// The metric's name.
    pub metric: String,
    /// Why.
    #[serde(flatten)]
    pub reason: UnjudgedReason,
}

/// Why `base` against `cand` (each subject's per-round values) gives no information, if
/// it does not.
pub fn no_information(
    base: &[f64],
    cand: &[f64],
    subjects: (&str, &str),
) -> Option<UnjudgedReason> {
    if base.is_empty() || cand.is_empty() {
        let subject = if base.is_empty() {
            subjects.0
        } else {
            subjects.1
        };
        return Some(UnjudgedReason::Missing {
            subject: subject.to_string(),
        });
    }
    let first = base[0];
    base.iter()
        .chain(cand)
        .all(|&x| x == first)
        .then_some(UnjudgedReason::Unchanged { value: first })
}

/// One line per kind of unjudged metric, e.g. "648 metrics did not change in any
/// execution", counting each workload's metric once.
pub fn summary_lines(unjudged: &[Unjudged]) -> Vec<String> {
    let count = |unchanged: bool| {
        let mut seen: Vec<(&str, &str)> = unjudged
            .iter()
            .filter(|u| matches!(u.reason, UnjudgedReason::Unchanged { .. }) == unchanged)
            .map(|u| (u.workload.as_str(), u.metric.as_str()))
            .collect();
        seen.sort_unstable();
        seen.dedup();
        seen.len()
    };
    let plural = |n: usize| if n == 1 { "metric" } else { "metrics" };
    let mut out = Vec::new();
    let (same, missing) = (count(true), count(false));
    if same > 0 {
        out.push(format!(
            "{same} {} did not change in any execution (not judged, not in Holm's family)",
            plural(same)
        ));
    }
    if missing > 0 {
        out.push(format!(
            "{missing} {} reported by one subject only (not judged)",
            plural(missing)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyno_model::Direction;

    fn m(name: &str, unit: Unit) -> Metric {
        Metric::new(name, unit, Direction::LowerIsBetter)
    }

    #[test]
    fn the_default_family_is_dynos_own_cost_and_service() {
        for (name, unit) in [
            ("cpu_percent", Unit::Percent),
            ("rss_bytes", Unit::Bytes),
            ("ready_s", Unit::Seconds),
            ("cpu_s_per_tx", Unit::Seconds),
            ("rss_per_chain_txs", Unit::Bytes),
            ("load:achieved_tps", Unit::PerSecond),
            ("load:rpc_latency_p50_s", Unit::Seconds),
            ("cluster:adoption_0.80_s", Unit::Seconds),
        ] {
            assert!(is_primary(&m(name, unit), &[]), "{name}");
        }
        for (name, unit) in [
            ("load:cpu_percent", Unit::Percent),
            ("load:errors", Unit::Count),
            ("node:cometbft_mempool_size", Unit::Count),
            ("jsonl:tps", Unit::PerSecond),
            ("minor_faults_per_s", Unit::PerSecond),
        ] {
            assert!(!is_primary(&m(name, unit), &[]), "{name}");
        }
        let named = vec!["jsonl:tps".to_string()];
        assert!(is_primary(&m("jsonl:tps", Unit::PerSecond), &named));
        assert!(!is_primary(&m("cpu_percent", Unit::Percent), &named));
        assert!(is_primary(&m("node:x", Unit::Count), &[ALL_PRIMARY.into()]));
    }

    #[test]
    fn unchanged_and_missing_metrics_carry_no_information() {
        let s = ("a", "b");
        assert_eq!(
            no_information(&[0.0, 0.0], &[0.0, 0.0, 0.0], s),
            Some(UnjudgedReason::Unchanged { value: 0.0 })
        );
        assert_eq!(no_information(&[0.0, 0.0], &[0.0, 1.0], s), None);
        assert_eq!(
            no_information(&[], &[1.0, 2.0], s),
            Some(UnjudgedReason::Missing {
                subject: "a".into()
            })
        );
        let u = |w: &str, metric: &str, reason| Unjudged {
            workload: w.into(),
            candidate: "b".into(),
            metric: metric.into(),
            reason,
        };
        let same = UnjudgedReason::Unchanged { value: 0.0 };
        let lines = summary_lines(&[
            u("w", "x", same.clone()),
            u("w", "y", same.clone()),
            u(
                "w",
                "z",
                UnjudgedReason::Missing {
                    subject: "a".into(),
                },
            ),
        ]);
        assert_eq!(
            lines,
            vec![
                "2 metrics did not change in any execution (not judged, not in Holm's family)",
                "1 metric reported by one subject only (not judged)"
            ]
        );
    }
}
