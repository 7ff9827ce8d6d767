//! The self-contained HTML report of a cluster run.

use super::tables::propagation_lines;
use super::{ms, tables, topology_svg, ClusterReport};
use crate::fault_analysis::FaultReport;
use crate::file::ClusterSpec;
use crate::propagation::Family;
use dyno_model::{Direction, Metric, Unit};
use dyno_report::plot::CdfPlot;
use dyno_report::{HtmlReport, Section};

/// The HTML report: the answer first (adoption per fraction with the CDFs of adoption
/// time, a CDF over blocks for each fraction, Cardano's "CDF of CDFs"), then what the
/// faults did (each sentence once: there, not in the headline), every table, and the
/// topology when the cluster file is known.
pub fn html_report(report: &ClusterReport, spec: Option<&ClusterSpec>) -> String {
    let mut html = parameters(report, spec).section(propagation_section(report));
    if let Some(faults) = &report.faults {
        let slot_s = spec.map_or(1.0, |s| s.slot_ms as f64 / 1e3);
        html = html.section(faults_section(report, faults, slot_s));
    }
    let mut details = Section::new("Tables");
    for t in tables(report) {
        details = details.table(t);
    }
    html = html.section(details);
    if let Some(spec) = spec {
        html = html.section(topology_section(report, spec));
    }
    html.footer("dyno cluster report").render()
}

/// The report's title and parameters: the run's size, and the cluster file's shape
/// when it is known.
fn parameters(report: &ClusterReport, spec: Option<&ClusterSpec>) -> HtmlReport {
    let title = match &report.cluster {
        Some(name) => format!("dyno cluster: {name}"),
        None => "dyno cluster".to_string(),
    };
    let html = HtmlReport::new(title)
        .parameter("nodes", report.node_count.to_string())
        .parameter("blocks analysed", report.blocks.to_string());
    let Some(spec) = spec else {
        return html;
    };
    html.parameter("topology", spec.topology_kind.name())
        .parameter(
            "regions",
            spec.regions
                .iter()
                .map(|r| r.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        )
        .parameter("slot", format!("{} ms", spec.slot_ms))
        .parameter(
            "load",
            format!("{} tx/s ({:?})", spec.workload.rate_tps, spec.workload.kind).to_lowercase(),
        )
}

/// The report's answer: the headline without the faults' sentences (their section has
/// them, each once) and the CDF of adoption time per fraction of nodes.
fn propagation_section(report: &ClusterReport) -> Section {
    let mut summary = Section::new("Propagation").answer();
    for line in propagation_lines(report) {
        summary = summary.paragraph(line);
    }
    if report.blocks_without_slot_start > 0 {
        summary = summary.note(format!(
            "{} forged block(s) left out: no slot start or genesis in any log",
            report.blocks_without_slot_start
        ));
    }
    let metric = Metric::new("adoption time", Unit::Seconds, Direction::LowerIsBetter);
    let mut cdf = CdfPlot::new(
        format!(
            "Adoption time from {}, per fraction of nodes",
            report.measured_from
        ),
        metric,
    );
    let mut drawn = false;
    for m in report
        .metrics
        .iter()
        .filter(|m| m.family == Family::Adoption)
    {
        if !m.values_s.is_empty() {
            cdf = cdf.series(
                m.label.trim_start_matches("adopted on ").to_string(),
                m.values_s.clone(),
            );
            drawn = true;
        }
    }
    if drawn {
        summary.plot_result(
            "Each line is one adoption fraction: the fraction of blocks (y) that reached it within x.",
            cdf.render_svg(),
        )
    } else {
        summary.note("no block reached 50% of the nodes: nothing to plot")
    }
}

/// What the faults did, and each block's adoption against the fault windows.
fn faults_section(report: &ClusterReport, faults: &FaultReport, slot_s: f64) -> Section {
    let mut section = Section::new("Faults");
    for line in super::fault_lines(faults) {
        section = section.paragraph(line);
    }
    match super::adoption_plot(report, faults, slot_s) {
        Some(svg) => section.plot(
            "Each point is a block: its adoption on 80% of nodes after its slot started; shaded spans are the fault windows (time from the first slot analysed).",
            svg,
        ),
        None => section.note("no block reached 80% of the nodes: nothing to plot"),
    }
}

/// The topology's facts and its drawing.
fn topology_section(report: &ClusterReport, spec: &ClusterSpec) -> Section {
    let edges = spec.topology.edges().len();
    let diameter = spec
        .topology
        .diameter()
        .map_or("-".to_string(), |d| d.to_string());
    let topo = Section::new("Topology")
        .paragraph(format!(
            "{} nodes, {edges} links, diameter {diameter} hops, {} Mbit/s per link; \
             per-hop processing assumed by the prediction: {}",
            spec.nodes.len(),
            spec.bandwidth_mbit,
            ms(spec.hop_processing_ms / 1e3)
        ))
        .plot("Peers, nodes coloured by region", topology_svg(spec));
    if report.predicted.is_empty() {
        topo.note("no producer to predict from")
    } else {
        topo
    }
}
