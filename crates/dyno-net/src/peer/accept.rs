//! The acceptor and both halves of the handshake.

use std::io;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use super::{lock, spawn, thread_name, PeerSpec, Shared, HANDSHAKE_TIMEOUT};
use crate::frame::{self, Hello, ReadError, RefuseReason};

/// Pause after a failed accept. Out of descriptors (EMFILE/ENFILE) the pending connection
/// stays in the backlog and accept fails again at once: without a pause the acceptor
/// would spin a core until a descriptor frees up.
pub(super) const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(20);

pub(super) fn accept_loop(s: &Arc<Shared>, listener: &TcpListener) {
    serve_accepts(
        s,
        || listener.accept().map(|(stream, _)| stream),
        std::thread::sleep,
    );
}

/// Accepts until shutdown; `accept` and `pause` are the OS calls (replaced in tests).
fn serve_accepts(
    s: &Arc<Shared>,
    mut accept: impl FnMut() -> io::Result<TcpStream>,
    mut pause: impl FnMut(Duration),
) {
    loop {
        let incoming = accept();
        if s.stopping.load(Relaxed) {
            return;
        }
        let stream = match incoming {
            Ok(stream) => stream,
            Err(_) => {
                // Out of descriptors or a connection reset before accept: keep serving.
                s.traffic.accept_errors.fetch_add(1, Relaxed);
                pause(ACCEPT_ERROR_PAUSE);
                continue;
            }
        };
        let Some(slot) = HandshakeSlot::take(s) else {
            s.traffic.handshakes_shed.fetch_add(1, Relaxed);
            let _ = stream.shutdown(Shutdown::Both);
            continue;
        };
        let me = Arc::clone(s);
        // A failed spawn drops the closure, and with it the slot.
        if let Ok(h) = spawn(thread_name("inbound", &s.cfg.node_id), move || {
            serve_inbound(&me, stream, slot)
        }) {
            let mut threads = lock(&s.threads);
            threads.retain(|t| !t.is_finished());
            threads.push(h);
        }
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

fn serve_inbound(s: &Arc<Shared>, stream: TcpStream, slot: HandshakeSlot) {
    let Ok(remote) = stream.peer_addr() else {
        return;
    };
    let Some(conn) = s.open_stream(&stream) else {
        return;
    };
    let _ = stream.set_nodelay(true);
    let _ = stream.set_read_timeout(Some(HANDSHAKE_TIMEOUT));
    let handshake = accept_handshake(s, &stream);
    drop(slot);
    match handshake {
        Ok(peer) => {
            if s.establish(&peer, conn, &stream) {
                s.read_link(&peer, conn, &stream, remote);
            }
        }
        Err(Some(reason)) if !s.stopping.load(Relaxed) => s.count_refusal(remote, reason),
        // The remote went away mid-handshake (a port probe, a peer shutting down): no
        // protocol was broken, nothing to count.
        Err(_) => {}
    }
    s.close_stream(conn);
}

/// The peer's id, or why the handshake failed (None: the remote closed or reset it).
fn accept_handshake(s: &Shared, stream: &TcpStream) -> Result<String, Option<RefuseReason>> {
    let mut r = stream;
    let refuse = |reason: RefuseReason| {
        let h = Hello::refusing(reason, s.cfg.genesis_hash, &s.cfg.node_id);
        let _ = frame::write_opening(&mut &*stream, &h);
        reason
    };
    match frame::read_preamble(&mut r) {
        Ok(()) => {}
        // Not our protocol: nothing to answer.
        Err(e) => return Err(handshake_failure(e)),
    }
    let hello = frame::read_hello(&mut r).map_err(|e| handshake_failure(e).map(refuse))?;
    if hello.genesis != s.cfg.genesis_hash {
        return Err(Some(refuse(RefuseReason::WrongGenesis)));
    }
    if !s.peers.contains_key(&hello.node_id) {
        return Err(Some(refuse(RefuseReason::UnknownPeer)));
    }
    if s.banned_for(&hello.node_id).is_some() {
        return Err(Some(refuse(RefuseReason::Banned)));
    }
    frame::write_opening(&mut &*stream, &s.my_hello()).map_err(|_| None)?;
    Ok(hello.node_id)
}

/// Why the dialer's handshake failed (None: the remote closed or reset it).
pub(super) fn dial_handshake(
    s: &Shared,
    stream: &TcpStream,
    spec: &PeerSpec,
) -> Result<(), Option<RefuseReason>> {
    let mut r = stream;
    frame::write_opening(&mut &*stream, &s.my_hello()).map_err(|_| None)?;
    frame::read_preamble(&mut r).map_err(handshake_failure)?;
    let hello = frame::read_hello(&mut r).map_err(handshake_failure)?;
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
    use std::sync::{mpsc, Arc};

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
        let (events, _rx) = mpsc::channel();
        let s = Arc::new(Shared::new(
            cfg,
            PeerOptions::default(),
            HashMap::new(),
            events,
        ));
        let mut calls = 0;
        let mut pauses = Vec::new();
        serve_accepts(
            &s,
            || {
                calls += 1;
                if calls > 5 {
                    s.stopping.store(true, Relaxed);
                }
                // What accept(2) says when the process is out of descriptors.
                Err(io::Error::from_raw_os_error(24))
            },
            |d| pauses.push(d),
        );
        assert_eq!(pauses, vec![ACCEPT_ERROR_PAUSE; 5]);
        assert_eq!(s.traffic.accept_errors.load(Relaxed), 5);
    }
}
