//! The pipeline's Prometheus endpoint (`dyno pipeline run` and `bench`, `metrics.listen`):
//! `GET /metrics` renders the workspace's counters in the text exposition format, after
//! the `dyno_build_info` gauge and, under the bench, followed by the node's own figures
//! ([`NodeMetrics`]). It attaches read-only, like the monitor, so it can never disturb the
//! tiles, and binds to loopback unless an address says otherwise. The listener is
//! dyno-obs' endpoint, the one the node serves its metrics with.

use crate::{Error, Result};
use dyno_obs::endpoint::{listen_address, MetricsEndpoint, Reply};
use dyno_tango::{prometheus_text, Snapshot, Workspace};
use dyno_tiles::node_metrics::NodeMetrics;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The labels of the `dyno_build_info` gauge: which build serves the metrics.
pub type BuildLabels = &'static [(&'static str, &'static str)];

/// A running metrics endpoint of a pipeline workspace; stops when dropped.
pub struct PipelineEndpoint(MetricsEndpoint);

impl PipelineEndpoint {
    /// Binds `spec` (`7999` and `:7999` mean loopback) and serves the workspace `name`
    /// (in `dir`, or /dev/shm), followed by the node's own figures when `node` is given
    /// (`dyno pipeline bench`).
    pub fn start(
        spec: &str,
        name: &str,
        dir: Option<PathBuf>,
        node: Option<Arc<NodeMetrics>>,
        build: BuildLabels,
    ) -> Result<PipelineEndpoint> {
        let addr = listen_address(spec).ok_or_else(|| Error::Listen(spec.trim().to_string()))?;
        let path = dyno_tango::workspace::workspace_path(name, dir.as_deref());
        let mut attached: Option<Workspace> = None;
        let route = move |url: &str| {
            if url != "/metrics" {
                return Reply::text(404, "not found: try /metrics\n");
            }
            match scrape(&path, &mut attached, node.as_deref(), build) {
                Some(body) => Reply::metrics(body),
                None => Reply::text(503, "pipeline not running yet\n"),
            }
        };
        Ok(PipelineEndpoint(MetricsEndpoint::start(
            addr,
            "dyno-metrics",
            route,
        )?))
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.0.addr()
    }
}

/// The exposition of the workspace at `path` (attached again once it was replaced or
/// first appears), or none while no pipeline runs there.
fn scrape(
    path: &Path,
    attached: &mut Option<Workspace>,
    node: Option<&NodeMetrics>,
    build: BuildLabels,
) -> Option<String> {
    if attached.as_ref().is_none_or(|w| !w.is_ready()) {
        *attached = Workspace::attach_read_only_at(path).ok();
    }
    let ws = attached.as_ref().filter(|w| w.is_ready())?;
    let mut body = dyno_obs::build_info_text(build);
    body.push_str(&prometheus_text(&Snapshot::read(ws)));
    if let Some(node) = node {
        body.push_str(&node.render());
    }
    Some(body)
}
