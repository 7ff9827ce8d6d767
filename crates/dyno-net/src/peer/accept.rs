//! The acceptor and both halves of the handshake.

use std::collections::BTreeMap;
use std::future::Future;
use std::io;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, BufReader};
use tokio::net::{TcpListener, TcpStream};

use super::{PeerSpec, Shared, HANDSHAKE_TIMEOUT, LINK_BUFFER};
use crate::frame::{nonblocking as wire, Hello, ReadError, RefuseReason};
use crate::shape::lock;

/// How long an inbound connection may take to send its first byte (a peer sends its
/// hello as soon as it has connected).
const FIRST_BYTE_TIMEOUT: Duration = Duration::from_secs(2);

/// Pause after a failed accept. Out of descriptors (EMFILE/ENFILE) the pending connection
/// stays in the backlog and accept fails again at once: without a pause the acceptor
/// would spin a core until a descriptor frees up.
pub(super) const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(20);

pub(super) async fn accept_loop(s: &Arc<Shared>, listener: &TcpListener) {
    serve_accepts(
        s,
        || async { listener.accept().await.map(|(stream, _)| stream) },
        tokio::time::sleep,
    )
    .await;
}

/// Accepts until shutdown; `accept` and `pause` are the OS calls (replaced in tests).
async fn serve_accepts<A, P>(
    s: &Arc<Shared>,
    mut accept: impl FnMut() -> A,
    mut pause: impl FnMut(Duration) -> P,
) where
    A: Future<Output = io::Result<TcpStream>>,
    P: Future<Output = ()>,
{
    loop {
        let incoming = accept().await;
        if s.stopping.load(Relaxed) {
            return;
        }
        let stream = match incoming {
            Ok(stream) => stream,
            Err(_) => {
                // Out of descriptors or a connection reset before accept: keep serving.
                s.traffic.accept_errors.fetch_add(1, Relaxed);
                pause(ACCEPT_ERROR_PAUSE).await;
                continue;
            }
        };
        let Ok(remote) = stream.peer_addr() else {
            continue;
        };
        let Some((conn, stream)) = s.open_stream(stream) else {
            continue;
        };
        let slot = HandshakeSlot::take(s, conn, remote.ip());
        let me = Arc::clone(s);
        s.spawn(async move { serve_inbound(&me, stream, conn, remote, slot).await });
    }
}

/// The inbound connections in their handshake, in accept order (connection numbers grow):
/// where each is from and whether it has sent anything yet.
#[derive(Default)]
pub(super) struct Handshakes(BTreeMap<u64, Handshaking>);

struct Handshaking {
    source: IpAddr,
    spoke: Arc<AtomicBool>,
}

impl Handshakes {
    /// The connection to close to make room for one more from `source`, if a bound is
    /// reached: of that source when its own bound is the one reached, the oldest that
    /// has sent nothing, else the oldest. Idle connections thus only ever displace each
    /// other, and a peer, which says hello at once, gets its handshake done.
    fn to_shed(&self, source: IpAddr, max: usize, max_per_source: usize) -> Option<u64> {
        let from_source = self.0.values().filter(|h| h.source == source).count();
        let of_source = from_source >= max_per_source;
        if !of_source && self.0.len() < max {
            return None;
        }
        let mut candidates = self
            .0
            .iter()
            .filter(|(_, h)| !of_source || h.source == source);
        let oldest = candidates.clone().next().map(|(c, _)| *c);
        candidates
            .find(|(_, h)| !h.spoke.load(Relaxed))
            .map(|(c, _)| *c)
            .or(oldest)
    }
}

/// The place of one inbound connection among those in their handshake; given back when
/// dropped, on every path out of the handshake.
struct HandshakeSlot {
    shared: Arc<Shared>,
    conn: u64,
    /// Set once the remote has sent its first byte.
    spoke: Arc<AtomicBool>,
}

impl HandshakeSlot {
    /// Takes a place for connection `conn` from `source`, closing the connection
    /// [`Handshakes::to_shed`] names first when the bounds are reached.
    fn take(s: &Arc<Shared>, conn: u64, source: IpAddr) -> HandshakeSlot {
        let spoke = Arc::new(AtomicBool::new(false));
        let mut open = lock(&s.handshakes);
        let (max, per_source) = (
            s.opts.max_handshakes.max(1),
            s.opts.max_handshakes_per_source.max(1),
        );
        while let Some(shed) = open.to_shed(source, max, per_source) {
            open.0.remove(&shed);
            // Its handshake reads end of stream and ends the way a vanished remote's does.
            s.close_stream(shed);
            s.traffic.handshakes_shed.fetch_add(1, Relaxed);
        }
        let entry = Handshaking {
            source,
            spoke: Arc::clone(&spoke),
        };
        open.0.insert(conn, entry);
        HandshakeSlot {
            shared: Arc::clone(s),
            conn,
            spoke,
        }
    }
}

impl Drop for HandshakeSlot {
    fn drop(&mut self) {
        lock(&self.shared.handshakes).0.remove(&self.conn);
    }
}

async fn serve_inbound(
    s: &Arc<Shared>,
    stream: TcpStream,
    conn: u64,
    remote: std::net::SocketAddr,
    slot: HandshakeSlot,
) {
    // A connection that says nothing holds its place only so long.
    let mut first = [0u8; 1];
    let said = tokio::time::timeout(FIRST_BYTE_TIMEOUT, stream.peek(&mut first)).await;
    if !matches!(said, Ok(Ok(1..))) {
        drop(slot);
        s.close_stream(conn);
        return;
    }
    slot.spoke.store(true, Relaxed);
    let _ = stream.set_nodelay(true);
    let (reader, mut writer) = stream.into_split();
    let mut reader = BufReader::with_capacity(LINK_BUFFER, reader);
    let handshake = tokio::time::timeout(
        HANDSHAKE_TIMEOUT,
        accept_handshake(s, &mut reader, &mut writer, remote),
    )
    .await
    .unwrap_or(Err(Some(RefuseReason::HandshakeTimeout)));
    drop(slot);
    match handshake {
        Ok(peer) => {
            if s.establish(&peer, conn, writer) {
                s.read_link(&peer, conn, reader, remote).await;
            }
        }
        Err(Some(reason)) if !s.stopping.load(Relaxed) => s.count_refusal(remote, reason),
        // The remote went away mid-handshake (a port probe, a peer shutting down): no
        // protocol was broken, nothing to count.
        Err(_) => {}
    }
    s.close_stream(conn);
}

/// The peer's id, or why the handshake failed (None: the remote closed or reset it, or
/// it was refused with a hello saying so, counted before that hello was written).
async fn accept_handshake(
    s: &Shared,
    r: &mut (impl AsyncRead + Unpin),
    w: &mut (impl AsyncWrite + Unpin),
    remote: std::net::SocketAddr,
) -> Result<String, Option<RefuseReason>> {
    match wire::read_preamble(r).await {
        Ok(()) => {}
        // Not our protocol: nothing to answer.
        Err(e) => return Err(handshake_failure(e)),
    }
    let refusal = match wire::read_hello(r).await {
        Err(e) => handshake_failure(e),
        Ok(hello) if hello.genesis != s.cfg.genesis_hash => Some(RefuseReason::WrongGenesis),
        Ok(hello) if !s.peers.contains_key(&hello.node_id) => Some(RefuseReason::UnknownPeer),
        Ok(hello) if s.banned_for(&hello.node_id).is_some() => Some(RefuseReason::Banned),
        Ok(hello) => {
            wire::write_opening(w, &s.my_hello())
                .await
                .map_err(|_| None)?;
            return Ok(hello.node_id);
        }
    };
    if let Some(reason) = refusal {
        // Counted first: whoever reads the refusal may look at the counts at once.
        if !s.stopping.load(Relaxed) {
            s.count_refusal(remote, reason);
        }
        let h = Hello::refusing(reason, s.cfg.genesis_hash, &s.cfg.node_id);
        let _ = wire::write_opening(w, &h).await;
        return Err(None);
    }
    Err(None)
}

/// Why the dialer's handshake failed (None: the remote closed or reset it).
pub(super) async fn dial_handshake(
    s: &Shared,
    r: &mut (impl AsyncRead + Unpin),
    w: &mut (impl AsyncWrite + Unpin),
    spec: &PeerSpec,
) -> Result<(), Option<RefuseReason>> {
    wire::write_opening(w, &s.my_hello())
        .await
        .map_err(|_| None)?;
    wire::read_preamble(r).await.map_err(handshake_failure)?;
    let hello = wire::read_hello(r).await.map_err(handshake_failure)?;
    if hello.genesis != s.cfg.genesis_hash {
        return Err(Some(RefuseReason::WrongGenesis));
    }
    if let Some(r) = hello.refusal() {
        return Err(Some(r));
    }
    if hello.node_id != spec.id {
        return Err(Some(RefuseReason::WrongPeer));
    }
    Ok(())
}

/// The refusal a failed handshake read counts as; None when the remote simply went away.
fn handshake_failure(e: ReadError) -> Option<RefuseReason> {
    match e {
        ReadError::Refused(r) => Some(r),
        ReadError::Io(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            Some(RefuseReason::HandshakeTimeout)
        }
        ReadError::Io(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::atomic::Ordering::Relaxed;
    use std::sync::Arc;

    use super::*;
    use crate::peer::{PeerConfig, PeerOptions};

    #[test]
    fn a_failing_accept_pauses_instead_of_spinning() {
        let cfg = PeerConfig {
            node_id: "m".into(),
            genesis_hash: [0; 32],
            listen: "127.0.0.1:0".parse().unwrap(),
            max_frame: 1024,
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let (timer, _timer_rx) = tokio::sync::mpsc::unbounded_channel();
        let s = Arc::new(Shared::new(
            cfg,
            PeerOptions::default(),
            HashMap::new(),
            Box::new(|_| {}),
            rt.handle().clone(),
            timer,
        ));
        let mut calls = 0;
        let pauses = std::cell::RefCell::new(Vec::new());
        rt.block_on(serve_accepts(
            &s,
            || {
                calls += 1;
                if calls > 5 {
                    s.stopping.store(true, Relaxed);
                }
                // What accept(2) says when the process is out of descriptors.
                std::future::ready(Err(io::Error::from_raw_os_error(24)))
            },
            |d| {
                pauses.borrow_mut().push(d);
                std::future::ready(())
            },
        ));
        assert_eq!(pauses.into_inner(), vec![ACCEPT_ERROR_PAUSE; 5]);
        assert_eq!(s.traffic.accept_errors.load(Relaxed), 5);
    }
}
