//! The Prometheus endpoint: `GET /metrics` renders the workspace's counters in the text
//! exposition format. It attaches read-only, like the monitor, so it can never disturb
//! the tiles, and it binds to loopback unless an address says otherwise. Under `dyno
//! pipeline bench` the node's own figures follow (see `dyno_tiles::node_metrics`). The
//! listener is dyno-obs' endpoint, the one the node serves its metrics with.

use dyno_obs::endpoint::{MetricsEndpoint, Reply};
use dyno_tango::{prometheus_text, Snapshot, Workspace};
use dyno_tiles::node_metrics::NodeMetrics;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A running metrics endpoint; stops when dropped.
pub struct MetricsServer(MetricsEndpoint);

/// `7999` and `:7999` mean loopback; anything else must be a full `host:port`.
pub fn listen_address(spec: &str) -> anyhow::Result<SocketAddr> {
    let spec = spec.trim();
    let full = if let Some(port) = spec.strip_prefix(':') {
        format!("127.0.0.1:{port}")
    } else if spec.chars().all(|c| c.is_ascii_digit()) {
        format!("127.0.0.1:{spec}")
    } else {
        spec.to_string()
    };
    full.parse()
        .map_err(|_| anyhow::anyhow!("`{spec}` is not an address (use 127.0.0.1:7999 or :7999)"))
}

impl MetricsServer {
    /// Binds and starts serving the workspace `name` (in `dir`, or /dev/shm), followed by
    /// the node's own figures when `node` is given (`dyno pipeline bench`).
    pub fn start(
        spec: &str,
        name: &str,
        dir: Option<PathBuf>,
        node: Option<Arc<NodeMetrics>>,
    ) -> anyhow::Result<MetricsServer> {
        let addr = listen_address(spec)?;
        let path = dyno_tango::workspace::workspace_path(name, dir.as_deref());
        let mut attached: Option<Workspace> = None;
        let route = move |url: &str| {
            if url != "/metrics" {
                return Reply::text(404, "not found: try /metrics\n");
            }
            match scrape(&path, &mut attached, node.as_deref()) {
                Some(body) => Reply::metrics(body),
                None => Reply::text(503, "pipeline not running yet\n"),
            }
        };
        Ok(MetricsServer(MetricsEndpoint::start(
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
) -> Option<String> {
    if attached.as_ref().is_none_or(|w| !w.is_ready()) {
        *attached = Workspace::attach_read_only_at(path).ok();
    }
    let ws = attached.as_ref().filter(|w| w.is_ready())?;
    let mut body = dyno_obs::build_info_text(&[
        ("version", env!("CARGO_PKG_VERSION")),
        ("profile", crate::build_info::PROFILE),
        ("opt_level", crate::build_info::OPT_LEVEL),
        ("rustc", crate::build_info::RUSTC),
    ]);
    body.push_str(&prometheus_text(&Snapshot::read(ws)));
    if let Some(node) = node {
        body.push_str(&node.render());
    }
    Some(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_ports_mean_loopback() {
        assert_eq!(
            listen_address("7999").unwrap().to_string(),
            "127.0.0.1:7999"
        );
        assert_eq!(
            listen_address(":8000").unwrap().to_string(),
            "127.0.0.1:8000"
        );
        assert_eq!(
            listen_address("0.0.0.0:9").unwrap().to_string(),
            "0.0.0.0:9"
        );
        assert!(listen_address("localhost").is_err());
    }
}
