//! Catching up: a node that hears of a block whose parent it lacks (it restarted, or a
//! partition kept it from its peers' chain) asks the announcer for the whole missing
//! range at once ([`Message::GetChain`], answered with [`Message::Chain`]) instead of
//! fetching one parent per round trip, and logs `caught_up` when the block it was
//! told of is on its chain.

use std::collections::HashSet;
use std::time::Instant;

use serde_json::json;

use super::Node;
use crate::block::Header;
use crate::hash::Hash;
use crate::log::now_ns;
use crate::transport::Message;

/// Most blocks in one [`Message::Chain`]; a longer gap takes several rounds.
pub const SYNC_MAX_BLOCKS: usize = 128;

/// Most block bytes in one [`Message::Chain`]: under the smallest frame limit
/// ([`crate::service::max_frame`] is at least 1 MiB), with room for the lengths. A
/// single block always goes, however large (one block always fits a frame).
pub const SYNC_MAX_BYTES: usize = 960 * 1024;

/// Rounds one range request may take before it is given up (a peer that keeps sending
/// blocks that do not reach the target must not hold the node forever).
const SYNC_MAX_ROUNDS: u32 = 64;

/// A range request in flight.
#[derive(Debug)]
pub(super) struct Sync {
    peer: String,
    /// The newest block announced whose parent was missing.
    target: Hash,
    /// Who announced it: the next round asks that peer (the one sure to hold it).
    target_peer: String,
    target_height: u64,
    asked_at: Instant,
    /// When the node found itself behind, Unix ns.
    since_ns: u64,
    /// Blocks received through it so far.
    blocks: u64,
    rounds: u32,
}

impl Node {
    /// Called for an announced header that passed the cheap checks. True when the
    /// block is behind a gap (its parent is neither held nor on its way) and a range
    /// request covers it: the caller then does not fetch it alone.
    pub(super) fn sync_for(&mut self, h: &Header, hash: Hash, peer: &str) -> bool {
        let parent = h.parent;
        if self.chain.contains(&parent)
            || self.follower.fetching.contains_key(&parent)
            || self.follower.orphans.contains(&parent)
        {
            return false;
        }
        match &mut self.follower.sync {
            Some(s) if s.asked_at.elapsed() < 2 * self.opts.fetch_timeout => {
                // One range request at a time; a newer block becomes the next round's
                // target.
                if h.height > s.target_height {
                    s.target = hash;
                    s.target_height = h.height;
                    s.target_peer = peer.to_string();
                }
                return true;
            }
            _ => {}
        }
        self.follower.sync = Some(Sync {
            peer: peer.to_string(),
            target: hash,
            target_peer: peer.to_string(),
            target_height: h.height,
            asked_at: Instant::now(),
            since_ns: now_ns(),
            blocks: 0,
            rounds: 0,
        });
        self.ask_range();
        true
    }

    fn ask_range(&mut self) {
        let locator = self.locator();
        let Some(s) = self.follower.sync.as_mut() else {
            return;
        };
        s.peer = s.target_peer.clone();
        s.rounds += 1;
        s.asked_at = Instant::now();
        self.counters.sync_requests += 1;
        self.log.event(
            "sync_requested",
            json!({"peer": s.peer, "block": s.target.to_string(), "height": s.target_height,
                   "from_height": self.chain.tip().height}),
        );
        let m = Message::GetChain {
            to: s.target,
            locator,
        };
        self.transport.send(&s.peer, m.encode());
    }

    /// The best chain at heights tip, tip-1, tip-2, tip-4, ... and genesis.
    fn locator(&self) -> Vec<Hash> {
        let best = self.chain.best_chain();
        let mut out = Vec::new();
        let mut i = 0usize;
        while i < best.len() {
            out.push(best[i]);
            i = if i == 0 { 1 } else { i * 2 };
        }
        out.push(self.genesis.hash);
        out
    }

    /// Answers a range request: the blocks after the newest locator hash on the chain
    /// ending at `to`, oldest first, within [`SYNC_MAX_BLOCKS`] and [`SYNC_MAX_BYTES`].
    pub(super) fn serve_range(&mut self, peer: &str, to: Hash, locator: &[Hash]) {
        let known: HashSet<&Hash> = locator.iter().collect();
        let mut back = Vec::new();
        let mut h = to;
        while !known.contains(&h) {
            let Some(header) = self.chain.header(&h) else {
                break;
            };
            back.push(h);
            h = header.parent;
        }
        let mut blocks = Vec::new();
        let mut bytes = 0;
        for h in back.iter().rev() {
            // Bodies are kept only so far back: a gap past them cannot be served. A
            // withheld block (a node misbehaving on purpose) is not served either.
            let Some(b) = self
                .chain
                .bytes(h)
                .filter(|_| !self.leader.lies.withholds(h))
            else {
                break;
            };
            if blocks.len() >= SYNC_MAX_BLOCKS
                || (!blocks.is_empty() && bytes + b.len() > SYNC_MAX_BYTES)
            {
                break;
            }
            bytes += b.len();
            blocks.push(b.as_ref().clone());
        }
        self.transport.send(peer, Message::Chain(blocks).encode());
    }

    /// Takes a range in: each block as a fetched body, oldest first (each one's parent
    /// arrived just before it). Then either the target is on the chain (`caught_up`),
    /// or another round is asked for, or (an empty answer) the range request ends and
    /// the target is fetched block by block.
    pub(super) fn take_range(&mut self, peer: &str, blocks: Vec<Vec<u8>>, received_ns: u64) {
        let n = blocks.len() as u64;
        for b in blocks {
            self.body(peer, b, received_ns);
        }
        let Some(mut s) = self.follower.sync.take() else {
            return;
        };
        if s.peer != peer {
            self.follower.sync = Some(s);
            return;
        }
        s.blocks += n;
        let target = s.target;
        if self.chain.contains(&target) {
            let tip = self.chain.tip();
            self.log.event(
                "caught_up",
                json!({"peer": peer, "block": tip.hash.to_string(), "height": tip.height,
                       "slot": tip.slot, "blocks": s.blocks, "rounds": s.rounds,
                       "behind_since_ns": s.since_ns}),
            );
        } else if n > 0 && s.rounds < SYNC_MAX_ROUNDS {
            self.follower.sync = Some(s);
            self.ask_range();
        } else {
            self.want(target, None, &s.target_peer);
        }
    }
}
