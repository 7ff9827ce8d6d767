//! Renderings of a propagation analysis: terminal tables, JSON and the HTML report.
//!
//! [`ClusterReport`] is the one model behind all three: the JSON is that model serialised
//! (`"schema": "dyno.cluster.report/1"`, snake_case keys, seconds), and the
//! tables and HTML are drawn from it, so the formats cannot disagree.

mod check;
mod faults;
mod html;
mod svg;
mod tables;

pub use faults::{adoption_plot, fault_lines, fault_table};
pub use html::html_report;
pub use svg::topology_svg;
pub use tables::{headline, tables};

use crate::fault_analysis::FaultReport;
use crate::file::ClusterSpec;
use crate::propagation::{Analysis, Distribution, Family, Summary, FRACTIONS};
use crate::resources::{NodeResources, ResourceSummary};
use crate::shape::predict;

/// The JSON schema: name and major version, which changes only when a field changes
/// meaning or goes away (docs/output.md).
pub const SCHEMA: &str = "dyno.cluster.report/1";

/// One metric: its distribution summarised, and the values it was summarised from.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct MetricReport {
    /// Stable key (`adoption_0.80`, `peer.fetch`).
    pub key: String,
    /// Cardano's name.
    pub label: String,
    /// Family.
    pub family: Family,
    /// Centiles and mean in seconds; `None` when nothing was measured.
    pub summary: Option<Summary>,
    /// Blocks (or block-peer pairs) without a value.
    pub missing: usize,
    /// False when the logs do not record the events this metric needs (a log
    /// extractor's rule set): not measured, rather than zero.
    pub available: bool,
    /// Every value, seconds, ascending.
    pub values_s: Vec<f64>,
}

/// One block's adoption times at each fraction.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct BlockReport {
    /// Block hash, hex.
    pub block: String,
    /// Slot.
    pub slot: u64,
    /// The leader.
    pub leader: String,
    /// Nodes that adopted it.
    pub adopted_by: usize,
    /// Seconds from slot start at each of [`FRACTIONS`] (`None`: not reached).
    pub adoption_s: Vec<Option<f64>>,
}

/// The propagation the topology predicts from one producer.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PredictedReport {
    /// Producer node name.
    pub producer: String,
    /// Seconds after forging until every node has the block.
    pub full_adoption_s: f64,
    /// The node reached last.
    pub farthest: String,
    /// Hops to it.
    pub hops: usize,
    /// Of which cross a region boundary.
    pub cross_region_hops: usize,
}

/// Everything a cluster report shows.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ClusterReport {
    /// Always [`SCHEMA`].
    pub schema: &'static str,
    /// Cluster name, when the cluster file was given.
    pub cluster: Option<String>,
    /// Nodes the adoption fractions count.
    pub node_count: usize,
    /// Blocks analysed.
    pub blocks: usize,
    /// What block times count from (`slot start`, `forging`, `first sighting`).
    pub measured_from: &'static str,
    /// Forged blocks without a slot start (left out).
    pub blocks_without_slot_start: usize,
    /// The adoption fractions, in the order of every `adoption_s` list.
    pub fractions: Vec<f64>,
    /// Every metric.
    pub metrics: Vec<MetricReport>,
    /// Per block.
    pub per_block: Vec<BlockReport>,
    /// Predicted full adoption per producer (needs the cluster file).
    pub predicted: Vec<PredictedReport>,
    /// CPU and memory per node (from a run's /proc sampler; empty for logs alone).
    pub resources: Vec<ResourceSummary>,
    /// What the run's faults did; absent without a fault schedule.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub faults: Option<FaultReport>,
    /// How the run's nodes started; absent for logs alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub startup: Option<crate::launch::Startup>,
}

impl ClusterReport {
    /// Builds the report of `analysis`; `spec` adds the cluster name and the prediction.
    pub fn new(analysis: &Analysis, spec: Option<&ClusterSpec>) -> Self {
        let metrics = analysis
            .distributions()
            .into_iter()
            .map(|d: Distribution| MetricReport {
                summary: d.summary(),
                key: d.key,
                label: d.label,
                family: d.family,
                missing: d.missing,
                available: d.available,
                values_s: d.values_s,
            })
            .collect();
        let per_block = analysis
            .blocks
            .iter()
            .map(|b| BlockReport {
                block: b.block.clone(),
                slot: b.slot,
                leader: b.leader.clone(),
                adopted_by: b.adoption_s.len(),
                adoption_s: b.fractions.clone(),
            })
            .collect();
        let predicted = spec.map_or_else(Vec::new, |spec| {
            spec.producers()
                .map(|p| {
                    let pr = predict(spec, p, 0.0);
                    PredictedReport {
                        producer: spec.nodes[p].name.clone(),
                        full_adoption_s: pr.full_adoption_ms() / 1e3,
                        farthest: spec.nodes[pr.farthest].name.clone(),
                        hops: pr.hops,
                        cross_region_hops: pr.cross_region_hops,
                    }
                })
                .collect()
        });
        ClusterReport {
            schema: SCHEMA,
            cluster: spec.map(|s| s.name.clone()),
            node_count: analysis.node_count,
            blocks: analysis.blocks.len(),
            blocks_without_slot_start: analysis.blocks_without_slot_start,
            measured_from: analysis.measured_from,
            fractions: FRACTIONS.to_vec(),
            metrics,
            per_block,
            predicted,
            resources: Vec::new(),
            faults: None,
            startup: None,
        }
    }

    /// Adds how the run's nodes started.
    pub fn with_startup(mut self, startup: Option<&crate::launch::Startup>) -> Self {
        self.startup = startup.cloned();
        self
    }

    /// Adds what the run's faults did.
    pub fn with_faults(mut self, faults: Option<FaultReport>) -> Self {
        self.faults = faults;
        self
    }

    /// Adds what the nodes cost, from a run.
    pub fn with_resources(mut self, resources: &[NodeResources]) -> Self {
        self.resources = resources.iter().map(ResourceSummary::from).collect();
        self
    }

    /// The metric with `key`.
    pub fn metric(&self, key: &str) -> Option<&MetricReport> {
        self.metrics.iter().find(|m| m.key == key)
    }

    /// The report as pretty JSON.
    pub fn to_json(&self) -> String {
        // Serialising plain structs of numbers and strings cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

/// Seconds shown in milliseconds with enough digits for a propagation figure.
pub(crate) fn ms(seconds: f64) -> String {
    let ms = seconds * 1e3;
    if ms.abs() >= 100.0 {
        format!("{ms:.0} ms")
    } else if ms.abs() >= 1.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{ms:.3} ms")
    }
}

#[cfg(test)]
mod tests;
