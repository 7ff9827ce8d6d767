//! The one HTTP endpoint of dyno's processes: a listener on its own thread (blocking on
//! accept, so it costs nothing between scrapes) that answers each request with what its
//! route returns for the path. The node routes `/metrics` and `/ready`; the pipeline
//! bench and `dyno pipeline run` route `/metrics`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::error::{Error, Result};

/// The content type of the text exposition.
pub const EXPOSITION_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// An answer to one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// The body.
    pub body: String,
    /// Set for an exposition; plain text otherwise.
    pub exposition: bool,
}

impl Reply {
    /// 200 with an exposition (its content type says the format version).
    pub fn metrics(body: String) -> Reply {
        Reply {
            status: 200,
            body,
            exposition: true,
        }
    }

    /// A plain-text answer (`/ready`, a 404 that says where to look, a 503).
    pub fn text(status: u16, body: impl Into<String>) -> Reply {
        Reply {
            status,
            body: body.into(),
            exposition: false,
        }
    }
}

/// A running endpoint; stops (and joins its thread, or ends its task) when dropped.
pub struct MetricsEndpoint {
    serving: Serving,
    addr: SocketAddr,
}

/// What serves the requests.
enum Serving {
    /// tiny_http's server and the thread that answers its requests.
    Thread(Arc<tiny_http::Server>, Option<JoinHandle<()>>),
    /// A task on the caller's runtime ([`MetricsEndpoint::start_on`]).
    #[cfg(feature = "tokio")]
    Task(tokio_serve::Task),
}

impl MetricsEndpoint {
    /// Binds `addr` (port 0 picks one) and answers every request on a thread named
    /// `thread` with `route(path)`. An address that cannot be bound is an error naming it.
    pub fn start(
        addr: SocketAddr,
        thread: &str,
        mut route: impl FnMut(&str) -> Reply + Send + 'static,
    ) -> Result<MetricsEndpoint> {
        let server = Arc::new(tiny_http::Server::http(addr).map_err(|e| Error::Bind {
            addr: addr.to_string(),
            reason: e.to_string(),
        })?);
        let bound = server.server_addr().to_ip().ok_or_else(|| Error::Bind {
            addr: addr.to_string(),
            reason: "not an IP address".into(),
        })?;
        let srv = Arc::clone(&server);
        let thread = std::thread::Builder::new()
            .name(thread.into())
            .spawn(move || {
                for request in srv.incoming_requests() {
                    let reply = route(request.url());
                    let _ = request.respond(response(reply));
                }
            })
            .map_err(Error::Thread)?;
        Ok(MetricsEndpoint {
            serving: Serving::Thread(server, Some(thread)),
            addr: bound,
        })
    }

    /// Binds `addr` like [`MetricsEndpoint::start`] and answers every request with
    /// `route(path)` from a task on the runtime `rt` (a node's one I/O thread): no thread
    /// of its own. HTTP/1.0 or 1.1, one request per connection (`Connection: close`), as
    /// scrapers and readiness probes use it.
    #[cfg(feature = "tokio")]
    pub fn start_on(
        rt: &tokio::runtime::Handle,
        addr: SocketAddr,
        route: impl FnMut(&str) -> Reply + Send + 'static,
    ) -> Result<MetricsEndpoint> {
        let (task, bound) = tokio_serve::start(rt, addr, route)?;
        Ok(MetricsEndpoint {
            serving: Serving::Task(task),
            addr: bound,
        })
    }

    /// The bound address (port 0 resolved).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

fn response(reply: Reply) -> tiny_http::Response<std::io::Cursor<Vec<u8>>> {
    let r = tiny_http::Response::from_string(reply.body).with_status_code(reply.status);
    if !reply.exposition {
        return r;
    }
    let header = tiny_http::Header::from_bytes(&b"Content-Type"[..], EXPOSITION_CONTENT_TYPE)
        .expect("static header is valid");
    r.with_header(header)
}

impl Drop for MetricsEndpoint {
    fn drop(&mut self) {
        match &mut self.serving {
            Serving::Thread(server, thread) => {
                server.unblock();
                if let Some(t) = thread.take() {
                    let _ = t.join();
                }
            }
            #[cfg(feature = "tokio")]
            Serving::Task(task) => task.stop(),
        }
    }
}

/// The path of a request head's first line, `GET /path HTTP/1.x` (any method: the
/// routes are read-only); `None` when the line is not one.
pub fn request_path(head: &[u8]) -> Option<String> {
    let line = head.split(|&b| b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?.trim_end_matches('\r');
    let mut parts = line.split(' ');
    let (_method, path, version) = (parts.next()?, parts.next()?, parts.next()?);
    (version.starts_with("HTTP/1.") && path.starts_with('/')).then(|| path.to_string())
}

/// A listen address as dyno's configs and flags write it: `7999` and `:7999` mean
/// loopback (127.0.0.1), anything else must be a full `host:port`. `None` when it is not
/// an address; the caller's message says what to write instead.
pub fn listen_address(spec: &str) -> Option<SocketAddr> {
    let spec = spec.trim();
    let full = match spec.strip_prefix(':') {
        Some(port) => format!("127.0.0.1:{port}"),
        None if spec.chars().all(|c| c.is_ascii_digit()) => format!("127.0.0.1:{spec}"),
        None => spec.to_string(),
    };
    full.parse().ok()
}

#[cfg(feature = "tokio")]
mod tokio_serve;

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read as _, Write as _};

    fn get(addr: SocketAddr, path: &str) -> String {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        write!(s, "GET {path} HTTP/1.0\r\nHost: x\r\n\r\n").unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    }

    #[test]
    fn routes_answer_with_their_status_body_and_content_type() {
        let mut scrapes = 0;
        let e =
            MetricsEndpoint::start(
                "127.0.0.1:0".parse().unwrap(),
                "test-metrics",
                move |p| match p {
                    "/metrics" => {
                        scrapes += 1;
                        Reply::metrics(format!("x {scrapes}\n"))
                    }
                    _ => Reply::text(404, "not found: try /metrics\n"),
                },
            )
            .unwrap();
        let first = get(e.addr(), "/metrics");
        assert!(first.lines().next().unwrap().contains(" 200 "), "{first}");
        assert!(first.contains(EXPOSITION_CONTENT_TYPE), "{first}");
        assert!(first.ends_with("\r\n\r\nx 1\n"), "{first}");
        assert!(get(e.addr(), "/metrics").ends_with("x 2\n"));
        let missing = get(e.addr(), "/nope");
        assert!(
            missing.lines().next().unwrap().contains(" 404 "),
            "{missing}"
        );
        assert!(!missing.contains("version=0.0.4"), "{missing}");
    }

    #[test]
    fn an_address_in_use_is_named() {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = taken.local_addr().unwrap();
        let err = MetricsEndpoint::start(addr, "t", |_| Reply::text(404, ""))
            .err()
            .unwrap();
        assert!(
            err.to_string()
                .starts_with(&format!("cannot listen on {addr}")),
            "{err}"
        );
    }

    #[test]
    fn bare_ports_mean_loopback() {
        let at = |s: &str| listen_address(s).map(|a| a.to_string());
        assert_eq!(at("7999").as_deref(), Some("127.0.0.1:7999"));
        assert_eq!(at(" :8000 ").as_deref(), Some("127.0.0.1:8000"));
        assert_eq!(at("0.0.0.0:9").as_deref(), Some("0.0.0.0:9"));
        assert_eq!(at("localhost"), None);
        assert_eq!(at("localhost:1"), None);
    }
}
