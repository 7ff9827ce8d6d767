//! What a peer can make this node hold of what it sends: the bytes of its messages read
//! from the link and not yet taken by the node ([`PeerOptions::max_inbound_bytes`]),
//! whether they wait in the shaping timer or in the event channel. A link's reader
//! stops reading while its peer is over the budget (the peer's TCP window then fills
//! and its writes stop), and reads again as [`PeerEvents`] hands its messages over.
//!
//! [`PeerOptions::max_inbound_bytes`]: super::PeerOptions::max_inbound_bytes

use std::collections::HashMap;
use std::sync::mpsc::{Receiver, RecvTimeoutError, TryRecvError};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use super::PeerEvent;
use crate::shape::lock;

/// How often a reader waiting for budget looks whether its link is still wanted.
const RECHECK: Duration = Duration::from_millis(50);

/// Bytes of each peer's messages read and not yet handed to the node.
#[derive(Debug)]
pub(super) struct InboundBudget {
    limit: usize,
    pending: Mutex<HashMap<String, usize>>,
    freed: Condvar,
}

impl InboundBudget {
    pub(super) fn new(limit: usize) -> InboundBudget {
        InboundBudget {
            limit,
            pending: Mutex::new(HashMap::new()),
            freed: Condvar::new(),
        }
    }

    /// Takes `n` bytes of `peer`'s budget, waiting while it is spent (a message into an
    /// empty budget always fits); false when `give_up` says the link is no longer
    /// wanted (cut, replaced, shutting down), checked every [`RECHECK`].
    pub(super) fn take(&self, peer: &str, n: usize, give_up: impl Fn() -> bool) -> bool {
        let mut pending = lock(&self.pending);
        loop {
            let used = pending.get(peer).copied().unwrap_or(0);
            if used == 0 || used.saturating_add(n) <= self.limit {
                *pending.entry(peer.to_string()).or_insert(0) += n;
                return true;
            }
            if give_up() {
                return false;
            }
            pending = self
                .freed
                .wait_timeout(pending, RECHECK)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Gives `n` bytes of `peer`'s budget back.
    pub(super) fn give(&self, peer: &str, n: usize) {
        let mut pending = lock(&self.pending);
        if let Some(used) = pending.get_mut(peer) {
            *used = used.saturating_sub(n);
        }
        self.freed.notify_all();
    }

    /// Bytes of `peer`'s messages read and not yet handed over.
    pub(super) fn pending(&self, peer: &str) -> usize {
        lock(&self.pending).get(peer).copied().unwrap_or(0)
    }
}

/// The events of a [`PeerNet`](super::PeerNet), in order per peer. Taking a message from
/// here gives its bytes back to its peer's inbound budget, so a consumer that stops
/// taking stops the readers (and, through TCP, the peers) instead of growing memory.
#[derive(Debug)]
pub struct PeerEvents {
    rx: Receiver<PeerEvent>,
    budget: Arc<InboundBudget>,
}

impl PeerEvents {
    pub(super) fn new(rx: Receiver<PeerEvent>, budget: Arc<InboundBudget>) -> PeerEvents {
        PeerEvents { rx, budget }
    }

    fn taken(&self, e: PeerEvent) -> PeerEvent {
        if let PeerEvent::Message { peer, payload, .. } = &e {
            self.budget.give(peer, payload.len());
        }
        e
    }

    /// The next event, waiting for it; an error once the network is gone.
    pub fn recv(&self) -> Result<PeerEvent, std::sync::mpsc::RecvError> {
        self.rx.recv().map(|e| self.taken(e))
    }

    /// The next event, waiting at most `timeout`.
    pub fn recv_timeout(&self, timeout: Duration) -> Result<PeerEvent, RecvTimeoutError> {
        self.rx.recv_timeout(timeout).map(|e| self.taken(e))
    }

    /// The next event if one is there.
    pub fn try_recv(&self) -> Result<PeerEvent, TryRecvError> {
        self.rx.try_recv().map(|e| self.taken(e))
    }

    /// Every event until the network is gone.
    pub fn iter(&self) -> impl Iterator<Item = PeerEvent> + '_ {
        std::iter::from_fn(move || self.recv().ok())
    }
}

impl IntoIterator for PeerEvents {
    type Item = PeerEvent;
    type IntoIter = std::iter::FromFn<Box<dyn FnMut() -> Option<PeerEvent> + Send>>;

    fn into_iter(self) -> Self::IntoIter {
        std::iter::from_fn(Box::new(move || self.recv().ok()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spent_budget_waits_until_bytes_are_given_back_or_the_link_is_gone() {
        let b = Arc::new(InboundBudget::new(100));
        assert!(b.take("p", 80, || false));
        // A message into an empty budget always fits, however large.
        assert!(b.take("q", 1_000, || false));
        assert!(!b.take("p", 30, || true), "gives up when the link is gone");
        let giver = {
            let b = b.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                b.give("p", 80);
            })
        };
        assert!(b.take("p", 30, || false));
        giver.join().unwrap();
        assert_eq!(b.pending("p"), 30);
        assert_eq!(b.pending("q"), 1_000);
    }
}
