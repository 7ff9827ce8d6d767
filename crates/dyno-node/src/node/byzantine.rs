//! A node under test that lies, while its control file's `[misbehave]` says so (a
//! cluster's byzantine fault; see [`crate::control::Misbehave`]), and what an honest
//! node records when another one lies: equivocation evidence.
//!
//! The lies are a leader's, so they happen as it announces a block it forged:
//! - `equivocate`: a second valid block for the slot (the first one's entries and one
//!   more tick), its header to every other peer instead of the first's;
//! - `invalid_block`: the block spoiled (its signature, its state hash re-signed, or a
//!   PoH entry), announced to every peer and served when asked; the leader keeps
//!   nothing of it;
//! - `withhold`: the block kept and announced, and never served.
//!
//! `garbage` is the control watcher's flood ([`crate::flood`]), not the loop's.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use ed25519_dalek::Signer;
use serde_json::json;

use super::Node;
use crate::block::{next_hash, Entry, Header, HASHES_PER_ENTRY};
use crate::chain::Checked;
use crate::control::{InvalidFlavour, Misbehave};
use crate::hash::hex;
use crate::hash::Hash;
use crate::transport::Message;

/// Blocks a lying leader keeps spoiled bodies of, or withholds, at once (the oldest is
/// forgotten first): a lie is about the last few slots.
const LIES_KEPT: usize = 64;

/// Slots whose first valid block an honest node remembers to tell an equivocation.
pub const SLOTS_REMEMBERED: usize = 1024;

/// What a lying leader serves instead of the truth.
#[derive(Default)]
pub(super) struct Lies {
    /// Spoiled bodies, by the hash their header claims.
    served: HashMap<Hash, Arc<Vec<u8>>>,
    /// Blocks announced and never served.
    withheld: HashSet<Hash>,
    order: VecDeque<Hash>,
}

impl Lies {
    fn remember(&mut self, hash: Hash) {
        self.order.push_back(hash);
        if self.order.len() > LIES_KEPT {
            if let Some(old) = self.order.pop_front() {
                self.served.remove(&old);
                self.withheld.remove(&old);
            }
        }
    }

    /// What to answer a `GetBlock` of `hash` with instead of the chain's body: a
    /// spoiled body, or `Some(None)` for nothing at all; `None`: the truth.
    pub(super) fn answer(&self, hash: &Hash) -> Option<Option<Arc<Vec<u8>>>> {
        if let Some(b) = self.served.get(hash) {
            return Some(Some(b.clone()));
        }
        self.withheld.contains(hash).then_some(None)
    }

    /// Whether `hash` is withheld (a range answer stops before it).
    pub(super) fn withholds(&self, hash: &Hash) -> bool {
        self.withheld.contains(hash)
    }
}

/// The first valid block an honest node saw of each recent slot, to tell a second one.
#[derive(Default)]
pub(super) struct SlotBlocks {
    first: std::collections::BTreeMap<u64, (Hash, Header, [u8; 64])>,
    /// Slots whose equivocation is already recorded (once each).
    recorded: HashSet<u64>,
}

impl Node {
    /// The misbehaviour switched on now, if any.
    pub(super) fn misbehaving(&self) -> Option<Misbehave> {
        *self
            .opts
            .misbehave
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// Once the switch is off, the node tells the truth again: it serves the blocks it
    /// withheld, and forgets the spoiled bodies (a chain it built on a withheld block
    /// can then reach the others).
    pub(super) fn forget_lies_when_honest(&mut self) {
        if !self.leader.lies.order.is_empty() && self.misbehaving().is_none() {
            self.leader.lies = Lies::default();
        }
    }

    /// A second valid block for the slot of `c`, on the same parent: `c`'s entries and
    /// one more tick. Call before `c` is adopted (its parent is still the tip).
    pub(super) fn twin_of(&self, c: &Checked) -> Option<Checked> {
        let base = self.chain.forge_base(c.block.header.slot)?;
        let mut entries = c.block.entries.clone();
        let last = entries.last().map_or(base.poh_start, |e| e.hash);
        entries.push(Entry {
            num_hashes: HASHES_PER_ENTRY,
            hash: next_hash(&last, HASHES_PER_ENTRY, None),
            txs: Vec::new(),
        });
        self.chain
            .seal(c.block.header.slot, &self.opts.id, &base, entries)
            .ok()
    }

    /// Equivocates: keeps `twin` too and sends its header to every other peer instead of
    /// the first block's (`first` is already adopted); logs `misbehaved`.
    pub(super) fn equivocate(&mut self, first: &Header, twin: Checked) {
        let slot = first.slot;
        let (hash_a, hash_b) = (first.hash(), twin.hash);
        let header_b = twin.block.header.encode();
        let bytes = Arc::new(twin.block.encode());
        self.adopt(twin, bytes);
        let (mut to_a, mut to_b) = (Vec::new(), Vec::new());
        let peers = self.opts.peers.clone();
        for (i, p) in peers.iter().enumerate() {
            // With a single peer, it gets both: the lie is still told.
            if i % 2 == 0 || peers.len() == 1 {
                self.transport
                    .send(p, Message::Header(first.encode()).encode());
                to_a.push(p.clone());
            }
            if i % 2 == 1 || peers.len() == 1 {
                self.transport
                    .send(p, Message::Header(header_b.clone()).encode());
                to_b.push(p.clone());
            }
        }
        self.log.event(
            "misbehaved",
            json!({"lie": "equivocate", "slot": slot,
                   "blocks": [hash_a.to_string(), hash_b.to_string()], "peers": [to_a, to_b]}),
        );
    }

    /// Withholds `hash` (already adopted here): announced, never served; logs it.
    pub(super) fn withhold(&mut self, slot: u64, hash: Hash) {
        self.leader.lies.withheld.insert(hash);
        self.leader.lies.remember(hash);
        self.log.event(
            "misbehaved",
            json!({"lie": "withhold", "slot": slot, "block": hash.to_string()}),
        );
    }

    /// Spoils the forged block `c` as `flavour` says, announces it to every peer and
    /// serves it when asked; the leader keeps nothing of it. Logs `misbehaved`.
    pub(super) fn announce_invalid(&mut self, c: Checked, flavour: InvalidFlavour) {
        let mut b = c.block;
        match flavour {
            InvalidFlavour::BadSignature => b.signature[0] ^= 1,
            InvalidFlavour::StateHash => {
                b.header.state_hash.0[0] ^= 1;
                if let Some(key) = self.genesis.leader_key(&self.opts.id) {
                    b.signature = key.sign(b.header.hash().as_bytes()).to_bytes();
                }
            }
            // The header (and so the signature) stays: the chain breaks inside.
            InvalidFlavour::Poh => b.entries[0].hash.0[0] ^= 1,
        }
        let hash = b.header.hash();
        self.leader.lies.served.insert(hash, Arc::new(b.encode()));
        self.leader.lies.remember(hash);
        self.broadcast(&Message::Header(b.header.encode()), None);
        self.log.event(
            "misbehaved",
            json!({"lie": "invalid_block", "flavour": flavour.name(),
                   "slot": b.header.slot, "block": hash.to_string()}),
        );
    }

    /// An honest node's record of a valid block: a second, different valid block of a
    /// slot already seen is an equivocation of its leader, logged once per slot with
    /// both signed headers as evidence (`equivocation`) and counted. Both blocks stay:
    /// fork choice keeps one, alike on every node.
    pub(super) fn note_slot_block(&mut self, c: &Checked, peer: &str) {
        let slot = c.block.header.slot;
        match self.follower.slot_blocks.first.get(&slot).cloned() {
            None => {
                let seen = &mut self.follower.slot_blocks;
                seen.first
                    .insert(slot, (c.hash, c.block.header.clone(), c.block.signature));
                while seen.first.len() > SLOTS_REMEMBERED {
                    if let Some((old, _)) = seen.first.pop_first() {
                        seen.recorded.remove(&old);
                    }
                }
            }
            Some((first, header, signature))
                if first != c.hash && self.follower.slot_blocks.recorded.insert(slot) =>
            {
                self.counters.equivocations += 1;
                self.log.event(
                    "equivocation",
                    json!({"slot": slot, "leader": c.block.header.leader, "peer": peer,
                           "blocks": [first.to_string(), c.hash.to_string()],
                           "evidence": {
                               "headers": [hex(&header.encode()), hex(&c.block.header.encode())],
                               "signatures": [hex(&signature), hex(&c.block.signature)]}}),
                );
            }
            Some(_) => {}
        }
    }
}
