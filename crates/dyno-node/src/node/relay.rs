//! Relaying transactions between mempools, in batches per peer.

use std::collections::HashMap;
use std::time::Instant;

use super::{Node, RELAY_BATCH_BYTES, RELAY_FLUSH};
use crate::transport::Message;

/// Transactions waiting to be relayed.
#[derive(Default)]
pub(super) struct RelayQueue {
    /// Per peer, the transactions waiting and their bytes.
    pending: HashMap<String, (Vec<Vec<u8>>, usize)>,
    /// When the oldest waiting one must leave (none: nothing waits).
    pub(super) due: Option<Instant>,
}

impl Node {
    /// Queues `tx` for every peer but `except`; a peer's batch leaves when full, the
    /// rest within [`RELAY_FLUSH`].
    pub(super) fn relay(&mut self, tx: Vec<u8>, except: Option<&str>) {
        let mut full = Vec::new();
        for p in &self.opts.peers {
            if Some(p.as_str()) == except {
                continue;
            }
            let (txs, bytes) = self.relay.pending.entry(p.clone()).or_default();
            *bytes += tx.len() + 2;
            txs.push(tx.clone());
            if *bytes >= RELAY_BATCH_BYTES {
                full.push(p.clone());
            }
        }
        for p in full {
            self.send_batch(&p);
        }
        if self.relay.due.is_none() && self.relay.pending.values().any(|(t, _)| !t.is_empty()) {
            self.relay.due = Some(Instant::now() + RELAY_FLUSH);
        }
    }

    pub(super) fn send_batch(&mut self, peer: &str) {
        let Some((txs, _)) = self.relay.pending.remove(peer) else {
            return;
        };
        if txs.is_empty() {
            return;
        }
        let n = txs.len() as u64;
        if self.transport.send(peer, Message::Txs(txs).encode()) {
            self.counters.relayed += n;
            self.counters.relay_frames += 1;
        }
    }

    pub(super) fn flush_relay_if_due(&mut self) {
        if self.relay.due.is_some_and(|d| Instant::now() >= d) {
            self.flush_relay();
        }
    }

    pub(super) fn flush_relay(&mut self) {
        let peers: Vec<String> = self.relay.pending.keys().cloned().collect();
        for p in peers {
            self.send_batch(&p);
        }
        self.relay.due = None;
    }
}
