//! The Prometheus endpoint: `GET /metrics` renders the workspace's counters in the text
//! exposition format. It attaches read-only, like the monitor, so it can never disturb
//! the tiles, and it binds to loopback unless an address says otherwise. Under `dyno
//! pipeline bench` the node's own figures follow (see `dyno_tiles::node_metrics`).

use dyno_tango::{prometheus_text, Snapshot, Workspace};
use dyno_tiles::node_metrics::NodeMetrics;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;

/// A running metrics endpoint; stops when dropped.
pub struct MetricsServer {
    server: Arc<tiny_http::Server>,
    addr: SocketAddr,
    thread: Option<JoinHandle<()>>,
}

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
        let server = Arc::new(
            tiny_http::Server::http(addr)
                .map_err(|e| anyhow::anyhow!("cannot listen on {addr}: {e}"))?,
        );
        let addr = server
            .server_addr()
            .to_ip()
            .ok_or_else(|| anyhow::anyhow!("{addr} is not an IP address"))?;
        let path = dyno_tango::workspace::workspace_path(name, dir.as_deref());
        let srv = Arc::clone(&server);
        let thread = std::thread::Builder::new()
            .name("dyno-metrics".into())
            .spawn(move || serve(&srv, &path, node.as_deref()))?;
        Ok(MetricsServer {
            server,
            addr,
            thread: Some(thread),
        })
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(server: &tiny_http::Server, path: &std::path::Path, node: Option<&NodeMetrics>) {
    let mut attached: Option<Workspace> = None;
    for request in server.incoming_requests() {
        let response = if request.url() != "/metrics" {
            tiny_http::Response::from_string("not found: try /metrics\n").with_status_code(404)
        } else {
            if attached.as_ref().is_none_or(|w| !w.is_ready()) {
                attached = Workspace::attach_read_only_at(path).ok();
            }
            match attached.as_ref().filter(|w| w.is_ready()) {
                Some(ws) => {
                    let mut body = dyno_tango::build_info_text(&[
                        ("version", env!("CARGO_PKG_VERSION")),
                        ("profile", crate::build_info::PROFILE),
                        ("opt_level", crate::build_info::OPT_LEVEL),
                        ("rustc", crate::build_info::RUSTC),
                    ]);
                    body.push_str(&prometheus_text(&Snapshot::read(ws)));
                    if let Some(node) = node {
                        body.push_str(&node.render());
                    }
                    let header = tiny_http::Header::from_bytes(
                        &b"Content-Type"[..],
                        &b"text/plain; version=0.0.4; charset=utf-8"[..],
                    )
                    .expect("static header is valid");
                    tiny_http::Response::from_string(body).with_header(header)
                }
                None => tiny_http::Response::from_string("pipeline not running yet\n")
                    .with_status_code(503),
            }
        };
        let _ = request.respond(response);
    }
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
