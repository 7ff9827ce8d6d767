//! Following the others' blocks: each announced block fetched (asked again of the
//! next announcer when a request goes unanswered or a copy is bad), validated and
//! adopted; a block whose parent is missing waits for it among the orphans; a block
//! refused at its header is remembered as refused. What the node holds for this is
//! [`Follower`]'s; catching up over a gap is [`super::sync`]'s.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::Instant;

use serde_json::json;

use super::byzantine::SlotBlocks;
use super::{Node, MAX_REJECTED};
use crate::block::{Block, Header};
use crate::chain::Reject;
use crate::hash::Hash;
use crate::transport::Message;

/// What a node holds as the follower of the others' blocks.
#[derive(Default)]
pub(super) struct Follower {
    /// Blocks asked of peers and not yet in, by hash.
    pub(super) fetching: HashMap<Hash, Fetch>,
    /// Blocks waiting for their parents.
    pub(super) orphans: Orphans,
    /// Blocks refused for good.
    pub(super) refused: Refused,
    /// The range request in flight, while the node catches up ([`super::sync`]).
    pub(super) sync: Option<super::sync::Sync>,
    /// The first valid block of each recent slot (equivocation evidence).
    pub(super) slot_blocks: SlotBlocks,
}

impl Follower {
    /// Whether `hash` is refused or waits for its parent (the chain's own blocks aside):
    /// either way, not a block to fetch or consider again.
    pub(super) fn knows(&self, hash: &Hash) -> bool {
        self.refused.contains(hash) || self.orphans.contains(hash)
    }

    /// Whether a block of `slot` is being fetched.
    pub(super) fn fetching_slot(&self, slot: Option<u64>) -> bool {
        self.fetching
            .values()
            .any(|f| f.slot.is_some() && f.slot == slot)
    }
}

pub(super) struct Fetch {
    /// The block's slot, once a header said it (a parent asked for by its child has none).
    pub(super) slot: Option<u64>,
    asked: String,
    at: Instant,
    pub(super) announcers: Vec<String>,
    tries: u32,
}

/// Requests for one block before the node gives up on it (and on the children that
/// waited for it): a block nobody serves must not be asked for forever.
const FETCH_TRIES: u32 = 5;

/// Most blocks waiting for their parents at once; a node catching up needs no more than
/// the bodies its peers still serve ([`crate::chain::KEEP_BODIES`] heights), and a peer
/// sending parentless blocks must not grow the node without bound.
pub const MAX_ORPHANS: usize = 1024;
/// Most bytes of blocks waiting for their parents at once (a block can be megabytes).
pub const MAX_ORPHAN_BYTES: usize = 64 << 20;

/// A block waiting for its parent: its bytes and the peer that sent it.
pub(super) struct Orphan {
    bytes: Vec<u8>,
    peer: String,
}

/// The blocks waiting for their parents, within [`MAX_ORPHANS`] and [`MAX_ORPHAN_BYTES`].
#[derive(Default)]
pub(super) struct Orphans {
    /// Parent -> block hash -> the block. Keyed by hash so two copies of one block (a
    /// fetch asked twice) are one orphan.
    by_parent: HashMap<Hash, HashMap<Hash, Orphan>>,
    /// Orphan hash -> its parent.
    parent_of: HashMap<Hash, Hash>,
    /// Bytes of the blocks held.
    bytes: usize,
}

impl Orphans {
    /// Whether `hash` waits for its parent.
    pub(super) fn contains(&self, hash: &Hash) -> bool {
        self.parent_of.contains_key(hash)
    }

    /// Whether one more orphan of `bytes` fits the bounds.
    fn fit(&self, bytes: usize) -> bool {
        self.parent_of.len() < MAX_ORPHANS && self.bytes + bytes <= MAX_ORPHAN_BYTES
    }

    /// Keeps `orphan`, block `hash`, until `parent` comes.
    fn insert(&mut self, parent: Hash, hash: Hash, orphan: Orphan) {
        self.bytes += orphan.bytes.len();
        self.parent_of.insert(hash, parent);
        self.by_parent
            .entry(parent)
            .or_default()
            .insert(hash, orphan);
    }

    /// The blocks that waited for `parent`, no longer held.
    fn take_children(&mut self, parent: &Hash) -> HashMap<Hash, Orphan> {
        let children = self.by_parent.remove(parent).unwrap_or_default();
        for (h, o) in &children {
            self.parent_of.remove(h);
            self.bytes -= o.bytes.len();
        }
        children
    }

    /// Forgets the blocks that waited for `parent` (and theirs): it will not come.
    fn drop_descendants(&mut self, parent: Hash) {
        let mut gone = vec![parent];
        while let Some(p) = gone.pop() {
            gone.extend(self.take_children(&p).into_keys());
        }
    }
}

/// The block hashes refused for good, the newest [`MAX_REJECTED`] (the oldest is
/// forgotten first; a forgotten one is only validated again if announced again).
#[derive(Default)]
pub(super) struct Refused {
    hashes: HashSet<Hash>,
    /// `hashes` in the order they were refused.
    order: VecDeque<Hash>,
}

impl Refused {
    /// Whether `hash` was refused.
    pub(super) fn contains(&self, hash: &Hash) -> bool {
        self.hashes.contains(hash)
    }

    /// Remembers `hash` as refused, forgetting the oldest past [`MAX_REJECTED`].
    fn insert(&mut self, hash: Hash) {
        if self.hashes.insert(hash) {
            self.order.push_back(hash);
            if self.order.len() > MAX_REJECTED {
                if let Some(old) = self.order.pop_front() {
                    self.hashes.remove(&old);
                }
            }
        }
    }
}

impl Node {
    /// Asks `peer` for `hash` unless it is held, refused before, or already asked.
    pub(super) fn want(&mut self, hash: Hash, slot: Option<u64>, peer: &str) {
        if self.chain.contains(&hash) || self.follower.knows(&hash) {
            return;
        }
        if let Some(f) = self.follower.fetching.get_mut(&hash) {
            f.slot = f.slot.or(slot);
            if !f.announcers.iter().any(|a| a == peer) {
                f.announcers.push(peer.to_string());
            }
            return;
        }
        if !self.fetch_fits(peer) {
            return;
        }
        self.ask(hash, slot, peer);
        self.follower.fetching.insert(
            hash,
            Fetch {
                slot,
                asked: peer.to_string(),
                at: Instant::now(),
                announcers: vec![peer.to_string()],
                tries: 1,
            },
        );
    }

    fn ask(&mut self, hash: Hash, slot: Option<u64>, peer: &str) {
        self.counters.fetches += 1;
        let mut e = json!({"block": hash.to_string(), "peer": peer});
        if let Some(s) = slot {
            e["slot"] = json!(s);
        }
        self.log.event("fetch_requested", e);
        self.transport.send(peer, Message::GetBlock(hash).encode());
    }

    pub(super) fn retry_fetches(&mut self) {
        let timeout = self.opts.fetch_timeout;
        let due: Vec<Hash> = self
            .follower
            .fetching
            .iter()
            .filter(|(_, f)| f.at.elapsed() >= timeout)
            .map(|(h, _)| *h)
            .collect();
        for h in due {
            let Some(f) = self.follower.fetching.get_mut(&h) else {
                continue;
            };
            if f.tries >= FETCH_TRIES {
                let mut e =
                    json!({"block": h.to_string(), "tries": f.tries, "peers": f.announcers});
                if let Some(s) = f.slot {
                    e["slot"] = json!(s);
                }
                self.follower.fetching.remove(&h);
                self.counters.fetches_abandoned += 1;
                self.log.event("fetch_abandoned", e);
                self.follower.orphans.drop_descendants(h);
                continue;
            }
            f.at = Instant::now();
            f.tries += 1;
            // Every announcer sent a bad body: wait (counting the try) for a new one.
            if f.announcers.is_empty() {
                continue;
            }
            let n = f.announcers.len();
            let next = f
                .announcers
                .iter()
                .position(|a| *a == f.asked)
                .map_or(0, |i| (i + 1) % n);
            f.asked = f.announcers[next].clone();
            let (slot, peer) = (f.slot, f.asked.clone());
            self.ask(h, slot, &peer);
        }
    }

    /// A copy of `hash` from `peer` was bad (did not decode or failed a body check):
    /// the peer is counted and not asked for it again, and the fetch stays open with
    /// the next announcer asked at once (a peer answering with a real header and a
    /// garbage body must not make the node refuse the real block).
    fn body_failed(&mut self, hash: Hash, peer: &str) {
        *self
            .counters
            .bad_bodies
            .entry(peer.to_string())
            .or_default() += 1;
        let Some(f) = self.follower.fetching.get_mut(&hash) else {
            return;
        };
        f.announcers.retain(|a| a != peer);
        if f.asked != peer {
            return;
        }
        let Some(next) = f.announcers.first().cloned() else {
            return;
        };
        f.asked = next.clone();
        f.at = Instant::now();
        f.tries += 1;
        let slot = f.slot;
        self.ask(hash, slot, &next);
    }

    /// Logs and counts a failed block. A header-level failure refuses the hash for
    /// good (with any children waiting for it); a body-level one blames this copy and
    /// its peer; a block from a future slot is neither (a later copy may be on time).
    fn reject(&mut self, hash: Hash, slot: u64, peer: &str, r: Reject) {
        *self.counters.rejected.entry(r.name()).or_default() += 1;
        self.log.event(
            "rejected",
            json!({"slot": slot, "block": hash.to_string(), "peer": peer, "reason": r.name()}),
        );
        if r.is_header_level() {
            self.follower.refused.insert(hash);
            self.follower.fetching.remove(&hash);
            self.follower.orphans.drop_descendants(hash);
        } else if r != Reject::FutureSlot {
            self.body_failed(hash, peer);
        }
    }

    pub(super) fn body(&mut self, peer: &str, bytes: Vec<u8>, received_ns: u64) {
        let block = match Block::decode(&bytes) {
            Ok(b) => b,
            Err(_) => {
                // Not a block: a refusal of the peer's message, not a verdict on a
                // block (its hash is only what its header claims, if that decodes).
                self.counters.malformed_blocks += 1;
                *self
                    .counters
                    .refused
                    .entry("malformed_block".into())
                    .or_default() += 1;
                let mut e = json!({"peer": peer, "reason": "malformed_block"});
                self.strike(peer, "a block body that does not decode");
                if let Some(h) = Header::decode_prefix(&bytes) {
                    e["block"] = json!(h.hash().to_string());
                    e["slot"] = json!(h.slot);
                    self.body_failed(h.hash(), peer);
                } else {
                    *self
                        .counters
                        .bad_bodies
                        .entry(peer.to_string())
                        .or_default() += 1;
                }
                self.log.event("refused", e);
                return;
            }
        };
        let hash = block.header.hash();
        let slot = block.header.slot;
        if self.follower.fetching.contains_key(&hash) {
            self.counters.fetched_bytes += bytes.len() as u64;
            self.log.event_at(
                "fetch_completed",
                received_ns,
                json!({"slot": slot, "block": hash.to_string(), "peer": peer, "bytes": bytes.len()}),
            );
        } else if self.chain.contains(&hash) || self.follower.knows(&hash) {
            return;
        }
        self.consider(block, hash, bytes, peer);
    }

    /// Validates and adopts `block`, then any waiting children it was the missing
    /// parent of (a worklist, not recursion: a node catching up on a long chain fetches
    /// it newest first and adopts it oldest first). A block already held is skipped, so
    /// two copies of one block are adopted once.
    fn consider(&mut self, block: Block, hash: Hash, bytes: Vec<u8>, peer: &str) {
        let mut work = vec![(block, hash, bytes, peer.to_string())];
        while let Some((block, hash, bytes, peer)) = work.pop() {
            if self.chain.contains(&hash) {
                self.follower.fetching.remove(&hash);
                continue;
            }
            let peer = peer.as_str();
            let slot = block.header.slot;
            let parent = block.header.parent;
            let t = Instant::now();
            let current = self.genesis.slot_at(self.clock_ns());
            let mempool = &self.mempool;
            match self.chain.check_with(block, current, &|t| mempool.holds(t)) {
                Err(Reject::UnknownParent) if self.follower.refused.contains(&parent) => {
                    // A child of a refused block can never be valid.
                    self.reject(hash, slot, peer, Reject::UnknownParent);
                }
                Err(Reject::UnknownParent) if !self.follower.orphans.fit(bytes.len()) => {
                    self.follower.fetching.remove(&hash);
                    self.counters.orphans_dropped += 1;
                }
                Err(Reject::UnknownParent) => {
                    self.follower.fetching.remove(&hash);
                    self.follower.orphans.insert(
                        parent,
                        hash,
                        Orphan {
                            bytes,
                            peer: peer.to_string(),
                        },
                    );
                    // The parent's slot is known only if its header was announced.
                    self.want(parent, None, peer);
                }
                Err(r) => self.reject(hash, slot, peer, r),
                Ok(c) => {
                    self.follower.fetching.remove(&hash);
                    self.counters.last_validate_s = t.elapsed().as_secs_f64();
                    self.note_slot_block(&c, peer);
                    self.log.event(
                        "validated",
                        json!({"slot": slot, "block": hash.to_string()}),
                    );
                    let header = c.block.header.encode();
                    self.adopt(c, Arc::new(bytes));
                    self.broadcast(&Message::Header(header), Some(peer));
                    self.log.event(
                        "announced",
                        json!({"slot": slot, "block": hash.to_string()}),
                    );
                    for (h, o) in self.follower.orphans.take_children(&hash) {
                        if let Ok(child) = Block::decode(&o.bytes) {
                            work.push((child, h, o.bytes, o.peer));
                        }
                    }
                }
            }
        }
    }
}
