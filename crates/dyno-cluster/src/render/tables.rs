//! Terminal (and Markdown/CSV) tables of a cluster report.

use super::{ms, ClusterReport};
use crate::propagation::Family;
use dyno_model::{format_value, Unit};
use dyno_report::{Align, Cell, Table};

/// The sentence a newcomer looks for: "adopted on 80% of nodes after X ms (p50 over N
/// blocks)", one per fraction that any block reached; then, for a run with faults, a
/// sentence per fault and the forks.
pub fn headline(report: &ClusterReport) -> Vec<String> {
    let mut lines = propagation_lines(report);
    if let Some(f) = &report.faults {
        lines.extend(super::fault_lines(f));
    }
    lines
}

/// The headline without the faults' sentences: the start-up, adoption per fraction and
/// what a node cost (the HTML report gives the faults a section of their own).
pub(crate) fn propagation_lines(report: &ClusterReport) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(s) = &report.startup {
        lines.push(s.line());
    }
    lines.extend(adoption_lines(report));
    if let Some(line) = cost_line(&report.resources) {
        lines.push(line);
    }
    lines
}

/// Tables longer than this (a node or producer per row) are summarised over the nodes;
/// the JSON keeps every row.
pub const MAX_ROWS: usize = 24;

/// What a node cost on average: the mean of the nodes' mean CPU, and of their peak RSS.
fn cost_line(resources: &[crate::resources::ResourceSummary]) -> Option<String> {
    if resources.is_empty() {
        return None;
    }
    let n = resources.len() as f64;
    let cpu = resources.iter().map(|r| r.cpu_mean_percent).sum::<f64>() / n;
    let rss = resources.iter().map(|r| r.rss_max_bytes).sum::<f64>() / n;
    let own = resources.iter().map(|r| r.rss_anon_max_bytes).sum::<f64>();
    Some(format!(
        "per node: {cpu:.3}% of a core (mean over the window and the {} nodes), {} RSS of which {} its own (anonymous; the rest is the binary's pages, shared by every node); means of each node's peak, {} of own memory in all",
        resources.len(),
        format_value(rss, Unit::Bytes),
        format_value(own / n, Unit::Bytes),
        format_value(own, Unit::Bytes)
    ))
}

/// The value at quantile `q` of `values` (nearest rank; `values` need not be sorted).
fn quantile(values: &[f64], q: f64) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len().max(1));
    v.get(rank - 1).copied().unwrap_or(0.0)
}

fn adoption_lines(report: &ClusterReport) -> Vec<String> {
    report
        .metrics
        .iter()
        .filter(|m| m.family == Family::Adoption)
        .filter_map(|m| {
            let s = m.summary?;
            let never = if m.missing > 0 {
                format!(
                    "; {} of {} blocks never got there",
                    m.missing,
                    m.missing + s.count
                )
            } else {
                String::new()
            };
            Some(format!(
                "{} after {} (p50 over {} blocks{never})",
                m.label,
                ms(s.p50_s),
                s.count
            ))
        })
        .collect()
}

/// One table per metric family, then the prediction when the cluster file was given.
pub fn tables(report: &ClusterReport) -> Vec<Table> {
    let adoption = format!(
        "End-to-end adoption (from {}, per block)",
        report.measured_from
    );
    let families = [
        (Family::Adoption, adoption.as_str()),
        (
            Family::Network,
            "Announced to adopted (the network's part: the leader's slot start to announced taken off)",
        ),
        (Family::Forging, "Forging loop (on the leader, per block)"),
        (Family::Peer, "Peer metrics (per block and receiving node)"),
        (
            Family::Slot,
            "Slot-start lateness (per slot started by a leader)",
        ),
    ];
    let mut out: Vec<Table> = families
        .into_iter()
        .map(|(family, title)| family_table(report, family, title))
        .collect();
    if report.resources.len() > MAX_ROWS {
        out.push(cost_summary(&report.resources));
    } else if !report.resources.is_empty() {
        out.push(cost_per_node(&report.resources));
    }
    if let Some(f) = &report.faults {
        out.push(super::fault_table(f));
    }
    if report.predicted.len() > MAX_ROWS {
        out.push(predicted_summary(&report.predicted));
    } else if !report.predicted.is_empty() {
        out.push(predicted_per_producer(&report.predicted));
    }
    out
}

/// The distribution of each metric of `family`, one row per metric.
fn family_table(report: &ClusterReport, family: Family, title: &str) -> Table {
    let mut t = Table::new(title)
        .column("metric", Align::Left)
        .column("n", Align::Right)
        .column("missing", Align::Right)
        .column("p50", Align::Right)
        .column("p90", Align::Right)
        .column("p99", Align::Right)
        .column("max", Align::Right)
        .column("mean", Align::Right);
    for m in report.metrics.iter().filter(|m| m.family == family) {
        if !m.available {
            let mut row = vec![Cell::new(&m.label), Cell::new("not available")];
            row.extend((0..6).map(|_| Cell::new("")));
            t.push_row(row);
            continue;
        }
        let mut row = vec![
            Cell::new(&m.label),
            Cell::new(m.summary.map_or(0, |s| s.count).to_string()),
        ];
        let missing = Cell::new(m.missing.to_string());
        row.push(if m.missing > 0 && family == Family::Adoption {
            missing.warn()
        } else {
            missing
        });
        match m.summary {
            Some(s) => {
                row.extend([s.p50_s, s.p90_s, s.p99_s, s.max_s, s.mean_s].map(|v| Cell::new(ms(v))))
            }
            None => row.extend((0..5).map(|_| Cell::new("-"))),
        }
        t.push_row(row);
    }
    t
}

/// The node cost table of a small cluster: one row per node.
fn cost_per_node(resources: &[crate::resources::ResourceSummary]) -> Table {
    let mut t = Table::new("Node cost (per slot of the window; CPU in % of one core)")
        .column("node", Align::Left)
        .column("slots", Align::Right)
        .column("CPU mean", Align::Right)
        .column("CPU max", Align::Right)
        .column("RSS max", Align::Right)
        .column("own (anon) max", Align::Right)
        .column("CPU 85% spans", Align::Right)
        .column("longest span", Align::Right);
    for r in resources {
        t.push_row([
            r.node.clone(),
            r.slots.to_string(),
            format!("{:.2}%", r.cpu_mean_percent),
            format!("{:.2}%", r.cpu_max_percent),
            format_value(r.rss_max_bytes, Unit::Bytes),
            format_value(r.rss_anon_max_bytes, Unit::Bytes),
            r.cpu_85_spans.len().to_string(),
            r.cpu_85_spans
                .iter()
                .max()
                .map_or("-".to_string(), |l| format!("{l} slots")),
        ]);
    }
    t
}

/// The prediction of a small cluster: one row per producer.
fn predicted_per_producer(predicted: &[super::PredictedReport]) -> Table {
    let mut t = Table::new("Predicted full adoption (topology shortest paths, from forging)")
        .column("producer", Align::Left)
        .column("all nodes after", Align::Right)
        .column("last node", Align::Left)
        .column("hops", Align::Right)
        .column("cross-region", Align::Right);
    for p in predicted {
        t.push_row([
            p.producer.clone(),
            ms(p.full_adoption_s),
            p.farthest.clone(),
            p.hops.to_string(),
            p.cross_region_hops.to_string(),
        ]);
    }
    t
}

/// The node cost table of a large cluster: each column's distribution over the nodes.
fn cost_summary(resources: &[crate::resources::ResourceSummary]) -> Table {
    let mut t = Table::new(format!(
        "Node cost over the {} nodes (each node's figure over the window's slots; CPU in % of one core; every node in the JSON)",
        resources.len()
    ))
    .column("over the nodes", Align::Left)
    .column("CPU mean", Align::Right)
    .column("CPU max", Align::Right)
    .column("RSS max", Align::Right)
    .column("own (anon) max", Align::Right)
    .column("CPU 85% spans", Align::Right);
    let col = |f: fn(&crate::resources::ResourceSummary) -> f64| -> Vec<f64> {
        resources.iter().map(f).collect()
    };
    let (mean, max, rss, own, spans) = (
        col(|r| r.cpu_mean_percent),
        col(|r| r.cpu_max_percent),
        col(|r| r.rss_max_bytes),
        col(|r| r.rss_anon_max_bytes),
        col(|r| r.cpu_85_spans.len() as f64),
    );
    for (label, q) in [("p50", 0.5), ("p90", 0.9), ("max", 1.0)] {
        t.push_row([
            label.to_string(),
            format!("{:.3}%", quantile(&mean, q)),
            format!("{:.2}%", quantile(&max, q)),
            format_value(quantile(&rss, q), Unit::Bytes),
            format_value(quantile(&own, q), Unit::Bytes),
            format!("{:.0}", quantile(&spans, q)),
        ]);
    }
    t
}

/// The prediction of a cluster with many producers: its distribution over them.
fn predicted_summary(predicted: &[super::PredictedReport]) -> Table {
    let mut t = Table::new(format!(
        "Predicted full adoption over the {} producers (topology shortest paths, from forging; every producer in the JSON)",
        predicted.len()
    ))
    .column("over the producers", Align::Left)
    .column("all nodes after", Align::Right)
    .column("hops", Align::Right)
    .column("cross-region", Align::Right);
    let full: Vec<f64> = predicted.iter().map(|p| p.full_adoption_s).collect();
    let hops: Vec<f64> = predicted.iter().map(|p| p.hops as f64).collect();
    let cross: Vec<f64> = predicted
        .iter()
        .map(|p| p.cross_region_hops as f64)
        .collect();
    for (label, q) in [("min", 0.0), ("p50", 0.5), ("p90", 0.9), ("max", 1.0)] {
        t.push_row([
            label.to_string(),
            ms(quantile(&full, q)),
            format!("{:.0}", quantile(&hops, q)),
            format!("{:.0}", quantile(&cross, q)),
        ]);
    }
    t
}
