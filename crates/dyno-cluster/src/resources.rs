//! What the nodes cost: CPU % of one core and RSS per node and slot, from dyno-proc's
//! /proc sampler, and Cardano's "CPU 85% spans" (runs of consecutive slots at or above 85%
//! of a core).

/// CPU share (percent of one core) at or above which a slot counts towards a span.
pub const SPAN_THRESHOLD_PERCENT: f64 = 85.0;

/// One node's readings, one per slot of the measured window.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct NodeResources {
    /// Node name.
    pub node: String,
    /// CPU % of one core (the node's whole process tree), per slot.
    pub cpu_percent: Vec<f64>,
    /// Resident set size in bytes at the end of each slot.
    pub rss_bytes: Vec<f64>,
}

impl NodeResources {
    /// Lengths (in slots) of the maximal runs of slots at or above
    /// [`SPAN_THRESHOLD_PERCENT`].
    pub fn cpu_85_spans(&self) -> Vec<usize> {
        spans(&self.cpu_percent, SPAN_THRESHOLD_PERCENT)
    }
}

/// Lengths of the maximal runs of `values` at or above `threshold`.
pub fn spans(values: &[f64], threshold: f64) -> Vec<usize> {
    let mut out = Vec::new();
    let mut run = 0;
    for &v in values {
        if v >= threshold {
            run += 1;
        } else if run > 0 {
            out.push(run);
            run = 0;
        }
    }
    if run > 0 {
        out.push(run);
    }
    out
}

/// A node's summary for tables and JSON.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ResourceSummary {
    /// Node name.
    pub node: String,
    /// Slots sampled.
    pub slots: usize,
    /// Mean CPU % of one core.
    pub cpu_mean_percent: f64,
    /// Highest CPU % in a slot.
    pub cpu_max_percent: f64,
    /// Largest RSS, bytes.
    pub rss_max_bytes: f64,
    /// CPU 85% spans, in slots.
    pub cpu_85_spans: Vec<usize>,
}

impl From<&NodeResources> for ResourceSummary {
    fn from(r: &NodeResources) -> Self {
        let n = r.cpu_percent.len();
        ResourceSummary {
            node: r.node.clone(),
            slots: n,
            cpu_mean_percent: if n == 0 {
                0.0
            } else {
                r.cpu_percent.iter().sum::<f64>() / n as f64
            },
            cpu_max_percent: r.cpu_percent.iter().copied().fold(0.0, f64::max),
            rss_max_bytes: r.rss_bytes.iter().copied().fold(0.0, f64::max),
            cpu_85_spans: r.cpu_85_spans(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_are_maximal_runs_at_or_above_the_threshold() {
        assert_eq!(
            spans(&[90.0, 85.0, 10.0, 99.0, 0.0, 86.0, 87.0, 88.0], 85.0),
            vec![2, 1, 3]
        );
        assert!(spans(&[], 85.0).is_empty());
        assert!(spans(&[84.9, 10.0], 85.0).is_empty());
    }

    #[test]
    fn a_summary_of_known_readings() {
        let r = NodeResources {
            node: "n1".into(),
            cpu_percent: vec![50.0, 90.0, 100.0, 20.0],
            rss_bytes: vec![1e6, 3e6, 2e6, 2e6],
        };
        let s = ResourceSummary::from(&r);
        assert_eq!(
            (
                s.slots,
                s.cpu_mean_percent,
                s.cpu_max_percent,
                s.rss_max_bytes
            ),
            (4, 65.0, 100.0, 3e6)
        );
        assert_eq!(s.cpu_85_spans, vec![2]);
    }
}
