//! The endpoint as tasks on a caller's tokio runtime: an acceptor, and one short task per
//! connection (read the request head, answer, close).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{Reply, EXPOSITION_CONTENT_TYPE};
use crate::error::{Error, Result};

/// Longest request head read (request line and headers); a longer one gets a 400.
const MAX_HEAD: usize = 8 * 1024;
/// How long a client may take to send its request and read the answer.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(5);
/// Connections answered at once; one more is closed at once, so a flood of idle
/// connections cannot hold the node's descriptors.
const MAX_CONNECTIONS: usize = 64;

/// The acceptor task and how to end it.
pub(super) struct Task {
    rt: tokio::runtime::Handle,
    accept: Option<tokio::task::JoinHandle<()>>,
}

impl Task {
    /// Ends the acceptor (connections being answered finish by themselves, within
    /// [`CLIENT_TIMEOUT`]) and waits for it, unless called on a runtime.
    pub(super) fn stop(&mut self) {
        if let Some(t) = self.accept.take() {
            t.abort();
            if tokio::runtime::Handle::try_current().is_err() {
                let _ = self.rt.block_on(t);
            }
        }
    }
}

type Route = Arc<Mutex<dyn FnMut(&str) -> Reply + Send>>;

pub(super) fn start(
    rt: &tokio::runtime::Handle,
    addr: SocketAddr,
    route: impl FnMut(&str) -> Reply + Send + 'static,
) -> Result<(Task, SocketAddr)> {
    let bind = |e: std::io::Error| Error::Bind {
        addr: addr.to_string(),
        reason: e.to_string(),
    };
    let listener = std::net::TcpListener::bind(addr).map_err(bind)?;
    let bound = listener.local_addr().map_err(bind)?;
    listener.set_nonblocking(true).map_err(bind)?;
    let listener = {
        let _in_runtime = rt.enter();
        tokio::net::TcpListener::from_std(listener).map_err(bind)?
    };
    let route: Route = Arc::new(Mutex::new(route));
    let open = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let accept = rt.spawn(async move {
        use std::sync::atomic::Ordering::Relaxed;
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                // Out of descriptors: do not spin while the connection waits in the backlog.
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            };
            if open.load(Relaxed) >= MAX_CONNECTIONS {
                continue;
            }
            open.fetch_add(1, Relaxed);
            let (route, open) = (Arc::clone(&route), Arc::clone(&open));
            tokio::spawn(async move {
                let _ = tokio::time::timeout(CLIENT_TIMEOUT, answer(stream, &route)).await;
                open.fetch_sub(1, Relaxed);
            });
        }
    });
    Ok((
        Task {
            rt: rt.clone(),
            accept: Some(accept),
        },
        bound,
    ))
}

/// Reads one request head, answers it with the route's reply, closes.
async fn answer(mut stream: tokio::net::TcpStream, route: &Route) {
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    let complete = loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => break false,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
        if head.windows(4).any(|w| w == b"\r\n\r\n") || head.windows(2).any(|w| w == b"\n\n") {
            break true;
        }
        if head.len() > MAX_HEAD {
            break false;
        }
    };
    let reply = match request_path(&head).filter(|_| complete) {
        Some(path) => {
            let mut route = route.lock().unwrap_or_else(|p| p.into_inner());
            route(&path)
        }
        None if head.is_empty() => return,
        None => Reply::text(400, "bad request\n"),
    };
    let _ = stream.write_all(&response_bytes(&reply)).await;
    let _ = stream.shutdown().await;
}

/// The path of `GET /path HTTP/1.x` (any method: the routes are read-only).
fn request_path(head: &[u8]) -> Option<String> {
    let line = head.split(|&b| b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?.trim_end_matches('\r');
    let mut parts = line.split(' ');
    let (_method, path, version) = (parts.next()?, parts.next()?, parts.next()?);
    (version.starts_with("HTTP/1.") && path.starts_with('/')).then(|| path.to_string())
}

/// The status line's reason phrase of the statuses routes answer with.
fn reason_phrase(status: u16) -> &'static str {
    match status {
        200 => "OK",
        404 => "Not Found",
        503 => "Service Unavailable",
        400 => "Bad Request",
        500 => "Internal Server Error",
        _ => "",
    }
}

fn response_bytes(reply: &Reply) -> Vec<u8> {
    let content_type = if reply.exposition {
        EXPOSITION_CONTENT_TYPE
    } else {
        "text/plain; charset=UTF-8"
    };
    let mut out = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        reply.status,
        reason_phrase(reply.status),
        reply.body.len()
    )
    .into_bytes();
    out.extend_from_slice(reply.body.as_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read as _, Write as _};

    fn get(addr: SocketAddr, request: &str) -> String {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.write_all(request.as_bytes()).unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    }

    #[test]
    fn a_task_endpoint_answers_like_the_threaded_one() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let handle = rt.handle().clone();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let io = std::thread::spawn(move || {
            rt.block_on(async {
                let _ = stopped.await;
            })
        });
        let mut scrapes = 0;
        let e = super::super::MetricsEndpoint::start_on(
            &handle,
            "127.0.0.1:0".parse().unwrap(),
            move |p| match p {
                "/metrics" => {
                    scrapes += 1;
                    Reply::metrics(format!("x {scrapes}\n"))
                }
                "/ready" => Reply::text(503, "starting\n"),
                _ => Reply::text(404, "not found\n"),
            },
        )
        .unwrap();
        let first = get(e.addr(), "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(first.starts_with("HTTP/1.1 200 OK\r\n"), "{first}");
        assert!(first.contains(EXPOSITION_CONTENT_TYPE), "{first}");
        assert!(first.ends_with("\r\n\r\nx 1\n"), "{first}");
        assert!(get(e.addr(), "GET /metrics HTTP/1.0\r\n\r\n").ends_with("x 2\n"));
        let ready = get(e.addr(), "GET /ready HTTP/1.0\r\n\r\n");
        assert!(
            ready.starts_with("HTTP/1.1 503 Service Unavailable\r\n"),
            "{ready}"
        );
        assert!(ready.contains("Content-Length: 9\r\n"), "{ready}");
        let bad = get(e.addr(), "EHLO there\r\n\r\n");
        assert!(bad.starts_with("HTTP/1.1 400 "), "{bad}");
        // dyno's own readiness client reads it as it reads tiny_http's answers.
        let addr = e.addr();
        drop(e);
        // Stopped: the port is free again.
        std::net::TcpListener::bind(addr).unwrap();
        let _ = stop.send(());
        io.join().unwrap();
    }

    #[test]
    fn request_lines_are_read_strictly() {
        assert_eq!(
            request_path(b"GET /ready HTTP/1.1\r\n\r\n").as_deref(),
            Some("/ready")
        );
        assert_eq!(
            request_path(b"GET /a?b=1 HTTP/1.0\n\n").as_deref(),
            Some("/a?b=1")
        );
        assert_eq!(request_path(b"GET ready HTTP/1.1\r\n\r\n"), None);
        assert_eq!(request_path(b"GET /ready SPDY\r\n\r\n"), None);
        assert_eq!(request_path(b""), None);
    }
}
