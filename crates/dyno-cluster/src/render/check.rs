//! `dyno cluster check`'s text: the cluster in one line and the propagation predicted
//! from each producer as a table.

use crate::session::CheckReport;
use crate::ClusterSpec;
use dyno_report::{Align, Table};
use std::path::Path;

impl CheckReport {
    /// One line: nodes, producers and relays, regions, the topology's links, peers per
    /// node and diameter, and the slot length; `file` is the cluster file as named.
    pub fn headline(&self, spec: &ClusterSpec, file: &Path) -> String {
        let producers = spec.producers().count();
        let (min, max) = self.peers_per_node;
        format!(
            "{}: {} nodes ({producers} producers, {} relays) over {} regions; {} topology: {} links, \
             {min}..{max} peers per node, diameter {} hops; slots of {} ms",
            file.display(),
            spec.nodes.len(),
            spec.nodes.len() - producers,
            spec.regions.len(),
            spec.topology_kind.name(),
            spec.topology.edges().len(),
            spec.topology.diameter().unwrap_or(0),
            spec.slot_ms,
        )
    }

    /// The propagation predicted from each producer: when 50, 80 and 100% of the nodes
    /// have its block, the hops to the last and how many cross regions; with `injected`
    /// (the milliseconds `--inject-cross-ms` added to every crossing), the delayed full
    /// adoption and its change.
    pub fn prediction_table(&self, spec: &ClusterSpec, injected: Option<f64>) -> Table {
        let mut t = Table::new(format!(
            "Predicted propagation from each producer (a hop: header, request and body, 3 one-way latencies, + {} ms)",
            spec.hop_processing_ms
        ))
        .column("producer", Align::Left)
        .column("region", Align::Left)
        .column("stake", Align::Right)
        .column("50% after", Align::Right)
        .column("80% after", Align::Right)
        .column("100% after", Align::Right)
        .column("hops", Align::Right)
        .column("cross-region", Align::Right);
        if let Some(extra) = injected {
            t = t
                .column(format!("100% +{extra} ms/crossing"), Align::Right)
                .column("change", Align::Right);
        }
        let ms = |ms: f64| format!("{ms:.1} ms");
        for p in &self.predicted {
            let [half, most, full, delayed] = p.adoption_ms;
            let mut row = vec![
                p.producer.clone(),
                p.region.clone(),
                p.stake.map_or_else(|| "-".to_string(), |s| s.to_string()),
                ms(half),
                ms(most),
                ms(full),
                p.hops.to_string(),
                p.cross_region_hops.to_string(),
            ];
            if injected.is_some() {
                row.push(ms(delayed));
                row.push(format!("+{:.1} ms", delayed - full));
            }
            t.push_row(row);
        }
        t
    }
}
