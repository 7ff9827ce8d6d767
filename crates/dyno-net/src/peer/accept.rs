//! The acceptor and both halves of the handshake.

use std::future::Future;
use std::io;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, BufReader};
use tokio::net::{TcpListener, TcpStream};

use super::{PeerSpec, Shared, HANDSHAKE_TIMEOUT, LINK_BUFFER};
use crate::frame::{nonblocking as wire, Hello, ReadError, RefuseReason};

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
        let Some(slot) = HandshakeSlot::take(s) else {
            s.traffic.handshakes_shed.fetch_add(1, Relaxed);
            drop(stream);
            continue;
        };
        let me = Arc::clone(s);
        s.spawn(async move { serve_inbound(&me, stream, slot).await });
    }
}

/// One of the `max_handshakes` places of inbound connections in their handshake; given
/// back when dropped, on every path out of the handshake.
struct HandshakeSlot(Arc<Shared>);

impl HandshakeSlot {
    fn take(s: &Arc<Shared>) -> Option<HandshakeSlot> {
        // Only the acceptor thread adds, so load-then-add cannot overshoot.
        if s.handshakes.load(Relaxed) >= s.opts.max_handshakes {
            return None;
        }
        s.handshakes.fetch_add(1, Relaxed);
        Some(HandshakeSlot(Arc::clone(s)))
    }
}

impl Drop for HandshakeSlot {
    fn drop(&mut self) {
        self.0.handshakes.fetch_sub(1, Relaxed);
    }
}

async fn serve_inbound(s: &Arc<Shared>, stream: TcpStream, slot: HandshakeSlot) {
    let Ok(remote) = stream.peer_addr() else {
        return;
    };
    let Some((conn, stream)) = s.open_stream(stream) else {
        return;
    };
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
