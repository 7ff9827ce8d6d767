//! What a peer can make this node hold of what it sends: the bytes of its messages read
//! from the link and not yet taken by the node ([`PeerOptions::max_inbound_bytes`]),
//! whether they wait in the shaping timer, in the event channel or (for a node that
//! takes events on its own I/O thread, [`PeerNet::start_on`]) in the node's queue until
//! it gives them back with [`PeerNet::taken`]. A link's reader (a task on the I/O
//! thread) stops reading while its peer is over the budget (the peer's TCP window then
//! fills and its writes stop), and reads again as the bytes are given back.
//!
//! [`PeerOptions::max_inbound_bytes`]: super::PeerOptions::max_inbound_bytes
//! [`PeerNet::start_on`]: super::PeerNet::start_on
//! [`PeerNet::taken`]: super::PeerNet::taken

use std::collections::HashMap;
use std::sync::mpsc::{Receiver, RecvTimeoutError, TryRecvError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;

use super::PeerEvent;
use crate::shape::lock;

/// How often a reader waiting for budget looks whether its link is still wanted.
const RECHECK: Duration = Duration::from_millis(50);

/// Bytes of each peer's messages read and not yet handed to the node.
#[derive(Debug)]
pub(super) struct InboundBudget {
    limit: usize,
    pending: Mutex<HashMap<String, usize>>,
    /// Woken whenever bytes are given back (from any thread).
    freed: Notify,
}

impl InboundBudget {
    pub(super) fn new(limit: usize) -> InboundBudget {
        InboundBudget {
            limit,
            pending: Mutex::new(HashMap::new()),
            freed: Notify::new(),
        }
    }

    /// Takes `n` bytes of `peer`'s budget if they fit now (a message into an empty
    /// budget always fits).
    fn try_take(&self, peer: &str, n: usize) -> bool {
        let mut pending = lock(&self.pending);
        let used = pending.get(peer).copied().unwrap_or(0);
        if used == 0 || used.saturating_add(n) <= self.limit {
            *pending.entry(peer.to_string()).or_insert(0) += n;
            return true;
        }
        false
    }

    /// Takes `n` bytes of `peer`'s budget, waiting (without holding the I/O thread)
    /// while it is spent; false when `give_up` says the link is no longer wanted (cut,
    /// replaced, shutting down), checked every [`RECHECK`].
    pub(super) async fn take(&self, peer: &str, n: usize, give_up: impl Fn() -> bool) -> bool {
        loop {
            // Registered before the look, so bytes given back in between still wake it.
            let freed = self.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            if self.try_take(peer, n) {
                return true;
            }
            if give_up() {
                return false;
            }
            let _ = tokio::time::timeout(RECHECK, freed).await;
        }
    }

    /// Gives `n` bytes of `peer`'s budget back.
    pub(super) fn give(&self, peer: &str, n: usize) {
        {
            let mut pending = lock(&self.pending);
            if let Some(used) = pending.get_mut(peer) {
                *used = used.saturating_sub(n);
                if *used == 0 {
                    pending.remove(peer);
                }
            }
        }
        self.freed.notify_waiters();
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
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let b = Arc::new(InboundBudget::new(100));
        rt.block_on(async {
            assert!(b.take("p", 80, || false).await);
            // A message into an empty budget always fits, however large.
            assert!(b.take("q", 1_000, || false).await);
            assert!(
                !b.take("p", 30, || true).await,
                "gives up when the link is gone"
            );
        });
        let giver = {
            let b = b.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                b.give("p", 80);
            })
        };
        rt.block_on(async { assert!(b.take("p", 30, || false).await) });
        giver.join().unwrap();
        assert_eq!(b.pending("p"), 30);
        assert_eq!(b.pending("q"), 1_000);
    }
}
