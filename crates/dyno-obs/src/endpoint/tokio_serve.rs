//! The endpoint as tasks on a caller's tokio runtime: an acceptor, and one short task per
//! connection (read the request head, answer, close).
//!
//! Connections are bounded so that idle ones cannot lock out a real scrape: at most
//! [`MAX_CONNECTIONS`] at once and [`MAX_PER_SOURCE`] from one address, and a connection
//! that has not sent its request head holds its slot at most [`HEAD_TIMEOUT`]. When a
//! bound is reached, the oldest connection still waiting for its head (of that source,
//! when the source's bound is the one reached) is closed to make room: a client that
//! opens connections and sends nothing only ever displaces its own, and a scraper,
//! which sends its request at once, gets in.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{request_path, Reply, EXPOSITION_CONTENT_TYPE};
use crate::error::{Error, Result};

/// Longest request head read (request line and headers); a longer one gets a 400.
const MAX_HEAD: usize = 8 * 1024;
/// How long a client may take to send its request and read the answer.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a connection may hold a slot before its request head has arrived.
const HEAD_TIMEOUT: Duration = Duration::from_secs(2);
/// Connections answered at once, so a flood of connections cannot hold the node's
/// descriptors.
const MAX_CONNECTIONS: usize = 64;
/// Connections from one address at once.
const MAX_PER_SOURCE: usize = 32;

/// The open connections, by accept order: who they are from, whether they still wait
/// for their request head, and how to close them.
#[derive(Default)]
struct Slots {
    open: BTreeMap<u64, Slot>,
    next: u64,
}

struct Slot {
    source: IpAddr,
    waiting: bool,
    abort: tokio::task::AbortHandle,
}

impl Slots {
    /// Makes room for a connection from `source`: `false` when there is none to make
    /// (every connection in the way is being answered).
    fn make_room(&mut self, source: IpAddr) -> bool {
        let from_source = self.open.values().filter(|s| s.source == source).count();
        let victim = if from_source >= MAX_PER_SOURCE {
            self.oldest_waiting(|s| s.source == source)
        } else if self.open.len() >= MAX_CONNECTIONS {
            self.oldest_waiting(|_| true)
        } else {
            return true;
        };
        match victim.and_then(|id| self.open.remove(&id)) {
            Some(slot) => {
                slot.abort.abort();
                true
            }
            None => false,
        }
    }

    fn oldest_waiting(&self, of: impl Fn(&Slot) -> bool) -> Option<u64> {
        self.open
            .iter()
            .find(|(_, s)| s.waiting && of(s))
            .map(|(id, _)| *id)
    }
}

type SharedSlots = Arc<Mutex<Slots>>;

fn lock(slots: &SharedSlots) -> std::sync::MutexGuard<'_, Slots> {
    slots.lock().unwrap_or_else(|p| p.into_inner())
}

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
    let slots: SharedSlots = Arc::default();
    let accept = rt.spawn(async move {
        loop {
            let Ok((stream, peer)) = listener.accept().await else {
                // Out of descriptors: do not spin while the connection waits in the backlog.
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            };
            // The slot is taken and the task listed under one lock, so the task's own
            // bookkeeping never runs before its entry exists.
            let mut open = lock(&slots);
            if !open.make_room(peer.ip()) {
                continue;
            }
            let id = open.next;
            open.next += 1;
            let (route, mine) = (Arc::clone(&route), Arc::clone(&slots));
            let task = tokio::spawn(async move {
                let _ =
                    tokio::time::timeout(CLIENT_TIMEOUT, answer(stream, &route, &mine, id)).await;
                lock(&mine).open.remove(&id);
            });
            let slot = Slot {
                source: peer.ip(),
                waiting: true,
                abort: task.abort_handle(),
            };
            open.open.insert(id, slot);
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

/// Reads one request head (within [`HEAD_TIMEOUT`]), answers it with the route's reply,
/// closes. Once the head is in, the connection no longer waits: it is not evicted.
async fn answer(mut stream: tokio::net::TcpStream, route: &Route, slots: &SharedSlots, id: u64) {
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    let read_head = async {
        loop {
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
        }
    };
    let complete = tokio::time::timeout(HEAD_TIMEOUT, read_head)
        .await
        .unwrap_or(false);
    if let Some(slot) = lock(slots).open.get_mut(&id) {
        slot.waiting = false;
    }
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

    /// A current-thread runtime on a thread of its own, as a node's I/O thread: its handle,
    /// and what ends it.
    fn io_thread() -> (
        tokio::runtime::Handle,
        tokio::sync::oneshot::Sender<()>,
        std::thread::JoinHandle<()>,
    ) {
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
        (handle, stop, io)
    }

    #[test]
    fn a_task_endpoint_answers_like_the_threaded_one() {
        let (handle, stop, io) = io_thread();
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
    fn idle_connections_do_not_lock_out_a_scrape() {
        let (handle, stop, io) = io_thread();
        let e = super::super::MetricsEndpoint::start_on(
            &handle,
            "127.0.0.1:0".parse().unwrap(),
            |_| Reply::metrics("up 1\n".into()),
        )
        .unwrap();
        // More idle connections than the endpoint has slots, all from this one address,
        // opened and kept open, never sending a byte.
        let idle: Vec<std::net::TcpStream> = (0..100)
            .map(|_| std::net::TcpStream::connect(e.addr()).unwrap())
            .collect();
        for _ in 0..3 {
            let answer = get(e.addr(), "GET /metrics HTTP/1.0\r\n\r\n");
            assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer:?}");
            assert!(answer.ends_with("up 1\n"), "{answer:?}");
        }
        drop(idle);
        drop(e);
        let _ = stop.send(());
        io.join().unwrap();
    }

    #[test]
    fn the_oldest_waiting_connection_of_the_full_source_makes_room() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let _in = rt.enter();
        let task = || tokio::spawn(async {}).abort_handle();
        let (a, b): (IpAddr, IpAddr) = ("127.0.0.1".parse().unwrap(), "127.0.0.2".parse().unwrap());
        let mut slots = Slots::default();
        for i in 0..MAX_PER_SOURCE as u64 {
            let waiting = i != 0; // the first is being answered
            slots.open.insert(
                i,
                Slot {
                    source: a,
                    waiting,
                    abort: task(),
                },
            );
        }
        // `a` is at its bound: its oldest waiting connection (1) goes, not the answered one.
        assert!(slots.make_room(a));
        assert!(slots.open.contains_key(&0) && !slots.open.contains_key(&1));
        // `b` is under its bound and the whole is under its own: nothing goes.
        assert!(slots.make_room(b));
        assert_eq!(slots.open.len(), MAX_PER_SOURCE - 1);
        // Nobody waiting: no room is made.
        for s in slots.open.values_mut() {
            s.waiting = false;
        }
        slots.open.insert(
            99,
            Slot {
                source: a,
                waiting: false,
                abort: task(),
            },
        );
        assert!(!slots.make_room(a));
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
