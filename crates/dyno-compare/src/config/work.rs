//! The `work` key of a workload as the file writes it: a metric name, or a table with the
//! unit named; checked into the judge's [`WorkUnit`].

use dyno_judge::work::WorkUnit;
use serde::Deserialize;

/// `work` as the file writes it: a metric name, or a table with the unit named.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub(crate) enum RawWork {
    Metric(String),
    Table {
        metric: String,
        #[serde(default)]
        unit: Option<String>,
    },
}

/// Metric-name prefixes a unit of work can come from.
const SOURCES: [&str; 3] = ["node:", "load:", "jsonl:"];

impl RawWork {
    /// Checks the names; `Err((key, why))` names the key at fault.
    pub(crate) fn validate(&self) -> Result<WorkUnit, (String, String)> {
        let (metric, unit) = match self {
            RawWork::Metric(m) => (m.clone(), None),
            RawWork::Table { metric, unit } => (metric.clone(), unit.clone()),
        };
        let Some(prefix) = SOURCES.iter().find(|p| metric.starts_with(*p)) else {
            return Err((
                "work".into(),
                format!(
                    "`{metric}` is not a metric a node or load reports: name one starting with {} (e.g. \"node:chain_txs_total\", \"load:confirmed\")",
                    SOURCES.join(", ")
                ),
            ));
        };
        let unit = unit.unwrap_or_else(|| unit_from_metric(&metric[prefix.len()..]));
        let valid = !unit.is_empty()
            && unit
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !valid {
            return Err((
                "work.unit".into(),
                format!("`{unit}` must be lowercase letters, digits and `_` (it names `cpu_s_per_<unit>`)"),
            ));
        }
        Ok(WorkUnit { metric, unit })
    }
}

/// `cometbft_consensus_total_txs` -> `cometbft_consensus_total_txs`; `chain_txs_total` ->
/// `chain_txs`; `achieved_tps` -> `achieved_tps`: the metric's name without a counter's
/// `_total` suffix or a label set, lowercased.
fn unit_from_metric(name: &str) -> String {
    let name = name.split('{').next().unwrap_or(name);
    let name = name.strip_suffix("_total").unwrap_or(name);
    name.to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_units_are_checked() {
        let w = RawWork::Metric("node:chain_txs_total".into())
            .validate()
            .unwrap();
        assert_eq!(w.unit, "chain_txs");
        assert_eq!(w.cpu_metric().name, "cpu_s_per_chain_txs");
        let t = RawWork::Table {
            metric: "load:confirmed".into(),
            unit: Some("tx".into()),
        };
        assert_eq!(t.validate().unwrap().rss_metric().name, "rss_per_tx");
        let (key, why) = RawWork::Metric("chain_txs".into()).validate().unwrap_err();
        assert_eq!(key, "work");
        assert!(why.contains("`chain_txs`"), "{why}");
        let bad = RawWork::Table {
            metric: "load:x".into(),
            unit: Some("Tx/s".into()),
        };
        assert_eq!(bad.validate().unwrap_err().0, "work.unit");
    }
}
