//! The ingress server: a task on a tokio current-thread runtime, on a thread of its own or
//! on the caller's (a node's one I/O thread).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use super::wire::Framed;
use super::{
    stream_window, transport, IngressConfig, IngressCounters, Tally, CLOSE_OVERSIZED,
    CLOSE_UNKNOWN_CLIENT, HELLO_LEN, HELLO_TIMEOUT, MAX_CONNECTIONS, PROGRESS_EVERY, PROGRESS_LEN,
};
use crate::error::NetError;

/// How long the server waits, after a client's end mark, for datagrams sent before it.
const LATE_DATAGRAMS: Duration = Duration::from_millis(500);

type Sink = dyn Fn(&[u8]) -> bool + Send + Sync;

/// When a stream is paused (see [`Ingress::start_on_paused`]).
pub struct Room {
    /// Whether the node has room for another transaction now.
    pub has_room: Box<dyn Fn() -> bool + Send + Sync>,
    /// The longest one pause lasts: after it, what the stream's last read brought (at
    /// most 64 KiB) is offered to the node, refused if it still has no room, before the
    /// stream is read and paused again; so a client of a node that stays full still has
    /// its transactions answered and its stream ended, at a bounded rate.
    /// [`Room::MAX_PAUSE`] is what a node uses.
    pub max_pause: Duration,
}

impl Room {
    /// A node's longest pause: half a 400 ms slot, by when a block has usually made room.
    pub const MAX_PAUSE: Duration = Duration::from_millis(200);
}

/// How long a paused stream waits at most between two looks at the node's room (it
/// starts at half a millisecond and doubles): a thousand paused connections look about
/// 125,000 times a second in all, each look two atomic loads and a timer.
const MAX_PAUSE_NAP: Duration = Duration::from_millis(8);

struct ServerState {
    /// Connections being served now.
    live: std::sync::atomic::AtomicUsize,
    genesis: [u8; 32],
    max_frame: usize,
    /// [`IngressConfig::max_tps_per_connection`].
    max_tps: Option<u32>,
    sink: Box<Sink>,
    /// None: never pause (every transaction read is offered to the sink).
    room: Option<Room>,
    tally: Tally,
}

impl ServerState {
    /// Hands one transaction to the node, or counts why not; `conn` is the connection's
    /// own count of what the node accepted and refused.
    fn take(&self, tx: &[u8], conn: &Progress) {
        if tx.is_empty() {
            self.tally.malformed.fetch_add(1, Relaxed);
        } else if tx.len() > self.max_frame {
            self.tally.oversized.fetch_add(1, Relaxed);
        } else {
            if (self.sink)(tx) {
                self.tally.accepted.fetch_add(1, Relaxed);
                conn.accepted.fetch_add(1, Relaxed);
            } else {
                self.tally.dropped_full.fetch_add(1, Relaxed);
                conn.refused.fetch_add(1, Relaxed);
            }
            self.tally.bytes.fetch_add(tx.len() as u64, Relaxed);
        }
    }
}

/// One connection's transactions the node accepted and refused, and its allowance.
#[derive(Default)]
struct Progress {
    accepted: AtomicU64,
    refused: AtomicU64,
    /// None without a per-connection limit.
    quota: Option<std::sync::Mutex<Quota>>,
}

/// A token bucket: `rate` transactions a second, at most `burst` at once.
struct Quota {
    rate: f64,
    burst: f64,
    tokens: f64,
    at: tokio::time::Instant,
}

impl Quota {
    fn new(rate: u32) -> Quota {
        let burst = (f64::from(rate) / 10.0).max(1.0);
        Quota {
            rate: f64::from(rate),
            burst,
            tokens: burst,
            at: tokio::time::Instant::now(),
        }
    }

    /// Takes one transaction's token: None when there was one, else how long until
    /// there is.
    fn take(&mut self) -> Option<Duration> {
        let now = tokio::time::Instant::now();
        let earned = now.duration_since(self.at).as_secs_f64() * self.rate;
        self.tokens = (self.tokens + earned).min(self.burst);
        self.at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            return None;
        }
        Some(Duration::from_secs_f64((1.0 - self.tokens) / self.rate))
    }
}

impl Progress {
    fn new(max_tps: Option<u32>) -> Progress {
        Progress {
            quota: max_tps.map(|r| std::sync::Mutex::new(Quota::new(r))),
            ..Progress::default()
        }
    }

    /// [`Quota::take`] of the connection's quota (None without one).
    fn take_token(&self) -> Option<Duration> {
        self.quota
            .as_ref()?
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }

    fn taken(&self) -> u64 {
        self.accepted.load(Relaxed) + self.refused.load(Relaxed)
    }

    fn message(&self) -> [u8; PROGRESS_LEN] {
        let mut m = [0u8; PROGRESS_LEN];
        m[..8].copy_from_slice(&self.accepted.load(Relaxed).to_be_bytes());
        m[8..].copy_from_slice(&self.refused.load(Relaxed).to_be_bytes());
        m
    }
}

/// Writes the connection's progress every [`PROGRESS_EVERY`] when it changed, until
/// `end` fires (or its sender is dropped), then once more, and finishes the stream.
async fn report_progress(
    mut send: quinn::SendStream,
    progress: Arc<Progress>,
    mut end: tokio::sync::oneshot::Receiver<()>,
) {
    let mut said = [0u8; PROGRESS_LEN];
    loop {
        match tokio::time::timeout(PROGRESS_EVERY, &mut end).await {
            Err(_) => {
                let now = progress.message();
                if now == said {
                    continue;
                }
                if send.write_all(&now).await.is_err() {
                    return;
                }
                said = now;
            }
            Ok(_) => {
                let _ = send.write_all(&progress.message()).await;
                let _ = send.finish();
                return;
            }
        }
    }
}

/// A running QUIC ingress server.
pub struct Ingress {
    endpoint: quinn::Endpoint,
    local_addr: SocketAddr,
    state: Arc<ServerState>,
    runs_on: RunsOn,
}

/// Where the server's task runs.
enum RunsOn {
    /// A thread of its own ([`Ingress::start`]).
    Thread(Option<JoinHandle<()>>),
    /// The caller's runtime ([`Ingress::start_on`]).
    Task(tokio::runtime::Handle, Option<tokio::task::JoinHandle<()>>),
}

impl Ingress {
    /// Binds the UDP address (an error names it) and serves until shutdown, on a thread
    /// of its own named `net-quic-<port>`. `sink` gets each received transaction's bytes
    /// and returns false when the node cannot take it. It runs on the server's thread,
    /// so it should be short (a queue push): while it runs, no other transaction is read.
    pub fn start(
        cfg: IngressConfig,
        sink: impl Fn(&[u8]) -> bool + Send + Sync + 'static,
    ) -> Result<Ingress, NetError> {
        Ingress::start_paused(cfg, sink, None)
    }

    /// [`Ingress::start`], pausing streams while `room` says the node has none (see
    /// [`Ingress::start_on_paused`]).
    pub fn start_paused(
        cfg: IngressConfig,
        sink: impl Fn(&[u8]) -> bool + Send + Sync + 'static,
        room: Option<Room>,
    ) -> Result<Ingress, NetError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| NetError::QuicSetup(format!("tokio runtime: {e}")))?;
        let mut ingress = Ingress::bind(rt.handle(), &cfg, Box::new(sink), room)?;
        let (ep, st) = (ingress.endpoint.clone(), Arc::clone(&ingress.state));
        // The port in the name tells several ingress servers of one process apart.
        let name = format!("net-quic-{}", ingress.local_addr.port());
        let thread = std::thread::Builder::new()
            .name(name.clone())
            .spawn(move || rt.block_on(serve(ep, st)))
            .map_err(|source| NetError::Thread { name, source })?;
        ingress.runs_on = RunsOn::Thread(Some(thread));
        Ok(ingress)
    }

    /// Like [`Ingress::start`], served by a task on the caller's runtime (a node's one
    /// I/O thread, [`crate::IoThread::handle`]) instead of a thread of its own.
    pub fn start_on(
        rt: &tokio::runtime::Handle,
        cfg: IngressConfig,
        sink: impl Fn(&[u8]) -> bool + Send + Sync + 'static,
    ) -> Result<Ingress, NetError> {
        Ingress::start_on_paused(rt, cfg, sink, None)
    }

    /// [`Ingress::start_on`], and while `room` (when given) says the node has no room,
    /// a stream's next transaction is not offered to the sink and the stream is not
    /// read: the client's writes stop once QUIC's flow-control window is full, so an
    /// overloaded node spends nothing on what it could not keep, and neither does its
    /// client, where refusing costs a read, a decryption and a frame each. Datagrams
    /// (no flow control) are still read and refused by the sink.
    pub fn start_on_paused(
        rt: &tokio::runtime::Handle,
        cfg: IngressConfig,
        sink: impl Fn(&[u8]) -> bool + Send + Sync + 'static,
        room: Option<Room>,
    ) -> Result<Ingress, NetError> {
        let mut ingress = Ingress::bind(rt, &cfg, Box::new(sink), room)?;
        let (ep, st) = (ingress.endpoint.clone(), Arc::clone(&ingress.state));
        let task = rt.spawn(serve(ep, st));
        ingress.runs_on = RunsOn::Task(rt.clone(), Some(task));
        Ok(ingress)
    }

    /// The endpoint bound on `rt`, not served yet.
    fn bind(
        rt: &tokio::runtime::Handle,
        cfg: &IngressConfig,
        sink: Box<Sink>,
        room: Option<Room>,
    ) -> Result<Ingress, NetError> {
        let mut server = quinn::ServerConfig::with_crypto(Arc::new(crate::tls::server_config()?));
        server.transport_config(transport(stream_window(
            cfg.max_tps_per_connection,
            cfg.max_frame,
        )));
        let endpoint = {
            let _in_runtime = rt.enter();
            quinn::Endpoint::server(server, cfg.listen).map_err(|source| NetError::Bind {
                what: "QUIC ingress",
                addr: cfg.listen,
                source,
            })?
        };
        let local_addr = endpoint.local_addr().map_err(|source| NetError::Bind {
            what: "QUIC ingress",
            addr: cfg.listen,
            source,
        })?;
        let state = Arc::new(ServerState {
            live: std::sync::atomic::AtomicUsize::new(0),
            genesis: cfg.genesis_hash,
            max_frame: cfg.max_frame,
            max_tps: cfg.max_tps_per_connection,
            sink,
            room,
            tally: Tally::default(),
        });
        Ok(Ingress {
            endpoint,
            local_addr,
            state,
            runs_on: RunsOn::Thread(None),
        })
    }

    /// The bound UDP address.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Counts since start.
    pub fn counters(&self) -> IngressCounters {
        self.state.tally.snapshot()
    }

    /// Closes every connection and ends the server (joining its thread, if it has one).
    pub fn shutdown(self) {
        drop(self);
    }
}

impl Drop for Ingress {
    fn drop(&mut self) {
        self.endpoint.close(0u32.into(), b"node shutting down");
        match &mut self.runs_on {
            RunsOn::Thread(t) => {
                if let Some(t) = t.take() {
                    let _ = t.join();
                }
            }
            // The closed endpoint ends the task (within the second it gives clients).
            RunsOn::Task(rt, task) => {
                if let Some(task) = task.take() {
                    crate::io::join_task(rt, task);
                }
            }
        }
    }
}

async fn serve(endpoint: quinn::Endpoint, st: Arc<ServerState>) {
    // accept() yields None once the endpoint is closed by shutdown.
    while let Some(incoming) = endpoint.accept().await {
        if st.live.load(Relaxed) >= MAX_CONNECTIONS {
            st.tally.connections_refused.fetch_add(1, Relaxed);
            incoming.refuse();
            continue;
        }
        st.live.fetch_add(1, Relaxed);
        let st = Arc::clone(&st);
        tokio::spawn(async move {
            serve_connection(incoming, Arc::clone(&st)).await;
            st.live.fetch_sub(1, Relaxed);
        });
    }
    // Let the close reach clients; a vanished client must not hold shutdown up.
    let _ = tokio::time::timeout(Duration::from_secs(1), endpoint.wait_idle()).await;
}

async fn serve_connection(incoming: quinn::Incoming, st: Arc<ServerState>) {
    let unknown = |conn: Option<&quinn::Connection>, why: &[u8]| {
        st.tally.unknown_clients.fetch_add(1, Relaxed);
        if let Some(c) = conn {
            c.close(CLOSE_UNKNOWN_CLIENT.into(), why);
        }
    };
    // A wrong ALPN fails here, inside the TLS handshake.
    let Ok(conn) = incoming.await else {
        return unknown(None, b"");
    };
    let Ok(Ok((mut send, mut recv))) = tokio::time::timeout(HELLO_TIMEOUT, conn.accept_bi()).await
    else {
        return unknown(Some(&conn), b"no hello");
    };
    let mut got = [0u8; HELLO_LEN];
    match tokio::time::timeout(HELLO_TIMEOUT, recv.read_exact(&mut got)).await {
        Ok(Ok(())) if super::wire::accepts_hello(&got, &st.genesis) => {}
        _ => {
            let _ = send.write_all(&[1]).await;
            return unknown(Some(&conn), b"unknown client: bad hello or genesis");
        }
    }
    if send.write_all(&[0]).await.is_err() {
        return;
    }
    st.tally.connections.fetch_add(1, Relaxed);
    let progress = Arc::new(Progress::new(st.max_tps));
    let (end, ended) = tokio::sync::oneshot::channel();
    let reporter = tokio::spawn(report_progress(send, Arc::clone(&progress), ended));
    let datagrams = tokio::spawn(read_datagrams(
        conn.clone(),
        Arc::clone(&st),
        Arc::clone(&progress),
    ));
    if let Some(sent) = read_frames(&conn, &mut recv, &st, &progress).await {
        // Datagrams sent before the end mark may still be queued behind it.
        let deadline = tokio::time::Instant::now() + LATE_DATAGRAMS;
        while progress.taken() < sent && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let _ = end.send(());
        let _ = reporter.await;
    } else {
        drop(end);
    }
    conn.closed().await;
    let _ = datagrams.await;
}

async fn read_datagrams(conn: quinn::Connection, st: Arc<ServerState>, progress: Arc<Progress>) {
    while let Ok(d) = conn.read_datagram().await {
        if progress.take_token().is_some() {
            // Above the connection's rate: refused here, never offered to the node.
            st.tally.over_rate.fetch_add(1, Relaxed);
            progress.refused.fetch_add(1, Relaxed);
            continue;
        }
        st.take(&d, &progress);
    }
}

/// Reads stream frames until the end mark (returns the client's sent count) or until the
/// stream or connection ends (None).
async fn read_frames(
    conn: &quinn::Connection,
    recv: &mut quinn::RecvStream,
    st: &ServerState,
    progress: &Progress,
) -> Option<u64> {
    let mut buf: Vec<u8> = Vec::with_capacity(128 * 1024);
    loop {
        // At most one pause per read (see Room::max_pause).
        let mut may_pause = true;
        match recv.read_chunk(64 * 1024, true).await {
            Ok(Some(chunk)) => buf.extend_from_slice(&chunk.bytes),
            Ok(None) => {
                if !buf.is_empty() {
                    st.tally.malformed.fetch_add(1, Relaxed);
                }
                return None;
            }
            Err(_) => return None,
        }
        let mut at = 0;
        loop {
            let len = match super::wire::next_frame(&buf[at..], st.max_frame) {
                Framed::Incomplete => break,
                Framed::End { sent } => return Some(sent),
                Framed::Oversized { .. } => {
                    st.tally.oversized.fetch_add(1, Relaxed);
                    conn.close(CLOSE_OVERSIZED.into(), b"oversized frame");
                    return None;
                }
                Framed::Frame { len } => len,
            };
            if may_pause {
                match room_for_one(conn, st).await {
                    Pause::Room => {}
                    Pause::TimedOut => may_pause = false,
                    Pause::Closed => return None,
                }
            }
            if !within_rate(conn, st, progress).await {
                return None;
            }
            st.take(&buf[at + 4..at + 4 + len], progress);
            at += 4 + len;
        }
        buf.drain(..at);
    }
}

/// How a wait for the node's room ended.
enum Pause {
    /// The node has room (or the server never pauses).
    Room,
    /// [`Room::max_pause`] passed without room.
    TimedOut,
    /// The connection closed meanwhile.
    Closed,
}

/// Waits while the node has no room, at most [`Room::max_pause`], reading nothing more of
/// the stream meanwhile.
async fn room_for_one(conn: &quinn::Connection, st: &ServerState) -> Pause {
    let Some(room) = &st.room else {
        return Pause::Room;
    };
    if (room.has_room)() {
        return Pause::Room;
    }
    st.tally.paused.fetch_add(1, Relaxed);
    let until = tokio::time::Instant::now() + room.max_pause;
    let mut nap = Duration::from_micros(500);
    while tokio::time::Instant::now() < until {
        if conn.close_reason().is_some() {
            return Pause::Closed;
        }
        tokio::time::sleep(nap).await;
        nap = (nap * 2).min(MAX_PAUSE_NAP);
        if (room.has_room)() {
            return Pause::Room;
        }
    }
    Pause::TimedOut
}

/// Waits, reading nothing more of the stream, until the connection may hand the node
/// another transaction ([`IngressConfig::max_tps_per_connection`]); false when the
/// connection closed meanwhile.
async fn within_rate(conn: &quinn::Connection, st: &ServerState, progress: &Progress) -> bool {
    let Some(wait) = progress.take_token() else {
        return true;
    };
    st.tally.throttled.fetch_add(1, Relaxed);
    let mut wait = Some(wait);
    while let Some(w) = wait {
        if conn.close_reason().is_some() {
            return false;
        }
        // At least a millisecond: a fast limit refills several tokens per nap.
        tokio::time::sleep(w.max(Duration::from_millis(1))).await;
        wait = progress.take_token();
    }
    true
}
