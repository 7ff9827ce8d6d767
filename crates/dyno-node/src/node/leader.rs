//! The node's slots as leader: the forging loop with its logged stages.
//!
//! With the tiles, a slot is forged across the loop's turns, not in one call: the
//! loop keeps serving peers and clients while the tiles work. At the slot's start the
//! leader takes its mempool snapshot and opens the slot in the tiles; at every turn it
//! feeds them what is queued (the snapshot, then every transaction admitted since, so
//! one arriving mid-slot lands in this slot's block) and replays the entries poh has
//! recorded into the block's [`Sealer`] as they come. Feeding stops a margin before
//! the slot's end; then the tiles finish what they were fed (at most
//! [`dyno_tiles::forge::IN_FLIGHT`] transactions), the last entries are replayed,
//! and the block is signed, adopted and announced. The margin is measured, not set:
//! twice the longest tail (feeding stopped -> announced) of the last [`TAILS_KEPT`]
//! slots cut with transactions still queued (the tiles full, the longest tails),
//! within [`MIN_MARGIN_PARTS`] and half the slot (a quarter until such a slot).
//!
//! With `forge_at = "slot_start"` ([`super::ForgeAt::SlotStart`]) the block is the
//! snapshot alone: nothing admitted during the slot joins it, and feeding ends (so the
//! block is finished and announced) as soon as the snapshot is fed, not at the margin.
//!
//! A leader whose peers announced the previous slot's block waits for that block (up
//! to half its slot) before it opens its own: forging on the grandparent would only
//! make a fork one of the two blocks loses.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dyno_tiles::forge::{ForgeError, ForgedEntry};
use serde_json::json;

use super::Node;
use crate::block::Entry;
use crate::chain::Checked;
use crate::control::Misbehave;
use crate::hash::Hash;
use crate::log::now_ns;
use crate::seal::Sealer;
use crate::transport::Message;

/// The margin is at least the slot divided by this (a tail never measured short
/// enough to leave no room for a slow turn of the loop).
pub const MIN_MARGIN_PARTS: u64 = 50;

/// Tails remembered for the margin: a spike in one of the last this many slots
/// widens it (a busy machine's tails vary from slot to slot).
pub const TAILS_KEPT: usize = 16;

/// The longest the loop waits for inputs between two turns of the slot it forges.
pub const LEAD_TURN: Duration = Duration::from_millis(2);

/// A slot this node leads with the tiles, between its start and its announcement.
pub(super) struct Lead {
    slot: u64,
    /// Stage times (ns): the loop's turn that saw the slot, leadership checked,
    /// ticked, snapshot taken.
    stages: [u64; 4],
    /// The block, replayed entry by entry (none until the slot is opened).
    sealer: Option<Sealer>,
    /// Candidates not yet fed, oldest first: the snapshot, then arrivals.
    queue: VecDeque<Vec<u8>>,
    /// Signature tags fed this slot (a transaction goes into a block once).
    fed: HashSet<u128>,
    /// Feeding stops here...
    feed_until: Instant,
    /// ... and the block must be out by here (the slot's end).
    slot_end: Instant,
    /// The slot is opened no later than this even if the parent is still awaited.
    wait_parent_until: Instant,
}

impl Node {
    /// Leads `slot`: logs its first stages and, with the tiles, opens it for the loop
    /// to forge across its turns; without, forges it at once with the sequential bank.
    pub(super) fn lead(&mut self, slot: u64, loop_start_ns: u64) {
        let scheduled = self.genesis.slot_start_ns(slot);
        let log = self.log.clone();
        log.event_at(
            "slot_start",
            loop_start_ns,
            json!({"slot": slot, "scheduled_ns": scheduled}),
        );
        let t_check = now_ns();
        log.event("leadership_checked", json!({"slot": slot, "leader": true}));
        let _tip = self.chain.tip();
        let t_tick = now_ns();
        log.event("ticked", json!({"slot": slot}));
        // Slot times are read on the node's own (possibly skewed) slot clock.
        let (clock, real) = (self.clock_ns(), Instant::now());
        let at = |ns: u64| real + Duration::from_nanos(ns.saturating_sub(clock));
        let slot_ns = self.genesis.slot_ns();
        let margin = self.margin_ns();
        let lead = Lead {
            slot,
            stages: [loop_start_ns, t_check, t_tick, 0],
            sealer: None,
            queue: VecDeque::new(),
            fed: HashSet::new(),
            feed_until: at(scheduled + slot_ns.saturating_sub(margin)),
            slot_end: at(scheduled + slot_ns),
            wait_parent_until: at(scheduled + slot_ns / 2),
        };
        if self.tiles.is_some() {
            self.leading = Some(lead);
            self.step_lead();
            return;
        }
        let txs = self.snapshot(slot);
        let t_snap = now_ns();
        // None when the tip is already at this slot or later (a clock step back): a
        // block there could only be refused.
        if let Some(c) = self.chain.forge(slot, &self.opts.id, txs) {
            let stages = [loop_start_ns, t_check, t_tick, t_snap];
            self.announce(slot, c, stages, now_ns(), false);
        }
    }

    fn snapshot(&mut self, slot: u64) -> Vec<Vec<u8>> {
        let txs = self.mempool.snapshot(self.opts.max_block_txs);
        self.log
            .event("snapshot", json!({"slot": slot, "txs": txs.len()}));
        txs
    }

    /// A transaction admitted to the mempool while a slot is led joins its queue.
    pub(super) fn offer_to_lead(&mut self, b: &[u8]) {
        if self.opts.forge_at == super::ForgeAt::SlotStart {
            return; // the block is the slot start's snapshot
        }
        if let Some(l) = self.leading.as_mut() {
            if l.sealer.is_some() {
                l.queue.push_back(b.to_vec());
            }
        }
    }

    /// When the loop must come back to the slot it leads (none: it leads none).
    pub(super) fn lead_due(&self) -> Option<Instant> {
        self.leading.as_ref().map(|l| {
            if l.sealer.is_none() {
                Instant::now() + Duration::from_millis(1)
            } else {
                // Often enough to keep the tiles fed (IN_FLIGHT transactions are
                // milliseconds of their work) and to replay entries soon after poh
                // records them (one a tick, 1 ms); an input wakes the loop sooner.
                (Instant::now() + LEAD_TURN).min(l.feed_until)
            }
        })
    }

    /// One turn of the slot being led: open it (once its parent is in), feed the
    /// tiles, replay what they recorded, and finish the block once feeding is over.
    pub(super) fn step_lead(&mut self) {
        let Some(mut l) = self.leading.take() else {
            return;
        };
        if l.sealer.is_none() {
            let now = Instant::now();
            let prev = l.slot.checked_sub(1);
            let parent_coming = self
                .fetching
                .values()
                .any(|f| f.slot.is_some() && f.slot == prev);
            if parent_coming && now < l.wait_parent_until {
                self.leading = Some(l);
                return;
            }
            if let Err(why) = self.open_lead(&mut l) {
                if let Some(why) = why {
                    self.fall_back(why);
                    self.forge_sequentially(l);
                }
                return;
            }
        }
        if let Err(why) = self.feed_lead(&mut l) {
            self.fall_back(why.to_string());
            self.forge_sequentially(l);
            return;
        }
        let snapshot_fed = self.opts.forge_at == super::ForgeAt::SlotStart && l.queue.is_empty();
        if Instant::now() < l.feed_until && !snapshot_fed {
            self.leading = Some(l);
            return;
        }
        let t_feed_end = now_ns();
        match self.finish_lead(&mut l) {
            Ok(c) => {
                self.counters.forged_by_tiles += 1;
                self.counters.forge_unrecorded += l.queue.len() as u64;
                // Only a tail with the tiles full (transactions still queued when feeding
                // stopped) measures the margin: with less in flight, as when the load
                // has just begun, the tail is shorter than a loaded slot's.
                let measured = !l.queue.is_empty();
                self.announce(l.slot, c, l.stages, t_feed_end, measured);
            }
            Err(why) => {
                self.fall_back(why.to_string());
                self.forge_sequentially(l);
            }
        }
    }

    /// Opens the slot in the tiles on the tip; `Err(None)`: nothing to lead (the tip
    /// is already at this slot or later).
    fn open_lead(&mut self, l: &mut Lead) -> Result<(), Option<String>> {
        let base = self.chain.forge_base(l.slot).ok_or(None)?;
        let txs = self.snapshot(l.slot);
        l.stages[3] = now_ns();
        l.queue = txs.into();
        let tiles = self.tiles.as_mut().expect("leading with the tiles");
        tiles
            .begin(&base.balances, base.poh_start.0, l.slot_end)
            .map_err(|e| Some(e.to_string()))?;
        l.sealer = Some(self.chain.sealer(base));
        Ok(())
    }

    /// Feeds what fits and replays every entry recorded so far.
    fn feed_lead(&mut self, l: &mut Lead) -> Result<(), TilesFailed> {
        let tiles = self.tiles.as_mut().expect("leading with the tiles");
        let sealer = l.sealer.as_mut().expect("an open slot");
        let max = self.opts.max_block_txs;
        while Instant::now() < l.feed_until && tiles.fed() < max {
            let Some(t) = l.queue.pop_front() else {
                break;
            };
            let tag = dyno_txn::tx::sig_tag(&t);
            if l.fed.contains(&tag) || !self.chain.fresh_on_tip(&t) {
                continue;
            }
            if !tiles.feed(&t) {
                l.queue.push_front(t);
                break;
            }
            l.fed.insert(tag);
        }
        for e in tiles.entries(Duration::ZERO)? {
            push(sealer, e)?;
        }
        Ok(())
    }

    /// Lets the tiles record what they were fed, replays the last entries and signs.
    fn finish_lead(&mut self, l: &mut Lead) -> Result<Checked, TilesFailed> {
        let tiles = self.tiles.as_mut().expect("leading with the tiles");
        let done = tiles.finish(l.slot_end)?;
        let mut sealer = l.sealer.take().expect("an open slot");
        for e in done.entries {
            push(&mut sealer, e)?;
        }
        // The tiles' banks and the sealing replay must agree (both execute the same
        // transactions in the same order on the same base); a difference is a bug the
        // block must not carry.
        let c = sealer
            .finish(l.slot, &self.opts.id)
            .map_err(|r| TilesFailed::Seal(r.name()))?;
        if c.balances != done.balances {
            return Err(TilesFailed::Diverged);
        }
        Ok(c)
    }

    /// The tiles could not forge the slot: the sequential bank forges it from the
    /// mempool (a late block is better than none; a follower refuses none for it).
    fn forge_sequentially(&mut self, l: Lead) {
        if let Some(t) = self.tiles.as_mut() {
            t.close();
        }
        let txs = self.mempool.snapshot(self.opts.max_block_txs);
        let t = now_ns();
        if let Some(c) = self.chain.forge(l.slot, &self.opts.id, txs) {
            let mut stages = l.stages;
            if stages[3] == 0 {
                stages[3] = t;
            }
            self.announce(l.slot, c, stages, t, false);
        }
    }

    /// Adopts and announces a forged block and logs its stages; `t_feed_end` is when
    /// feeding stopped (the tail runs from there to the announcement), and the tail
    /// counts towards the margin when `measured`.
    fn announce(
        &mut self,
        slot: u64,
        c: Checked,
        stages: [u64; 4],
        t_feed_end: u64,
        measured: bool,
    ) {
        let misbehave = self.misbehaving();
        if let Some(Misbehave::InvalidBlock { flavour }) = misbehave {
            // Not counted as forged: what leaves is no block a follower accepts.
            self.announce_invalid(c, flavour);
            return;
        }
        // The twin is sealed on the parent, before the first block becomes the tip.
        let twin = (misbehave == Some(Misbehave::Equivocate))
            .then(|| self.twin_of(&c))
            .flatten();
        let log = self.log.clone();
        let bytes = Arc::new(c.block.encode());
        let h = c.block.header.clone();
        let t_forged = now_ns();
        log.event(
            "forged",
            json!({"slot": slot, "block": c.hash.to_string(), "height": h.height,
                   "parent": h.parent.to_string(), "txs": h.tx_count, "bytes": bytes.len()}),
        );
        self.counters.forged += 1;
        let hash = c.hash;
        self.adopt(c, bytes);
        let t_adopted = now_ns();
        match (misbehave, twin) {
            (Some(Misbehave::Equivocate), Some(twin)) => self.equivocate(&h, twin),
            (Some(Misbehave::Withhold), _) => {
                self.withhold(slot, hash);
                self.broadcast(&Message::Header(h.encode()), None);
            }
            _ => {
                self.broadcast(&Message::Header(h.encode()), None);
            }
        }
        log.event(
            "announced",
            json!({"slot": slot, "block": hash.to_string()}),
        );
        let t_announced = now_ns();
        let s = |a: u64, b: u64| b.saturating_sub(a) as f64 / 1e9;
        let [loop_start_ns, t_check, t_tick, t_snap] = stages;
        self.counters.last_forge_stages_s = [
            s(loop_start_ns, t_check),
            s(t_check, t_tick),
            s(t_tick, t_snap),
            s(t_snap, t_forged),
            s(t_forged, t_adopted),
        ];
        let tail = t_announced.saturating_sub(t_feed_end);
        if measured {
            self.tails.push_back(tail);
            if self.tails.len() > TAILS_KEPT {
                self.tails.pop_front();
            }
        }
        let st = self.counters.last_forge_stages_s;
        log.line(&json!({
            "kind": "block",
            "t": loop_start_ns.saturating_sub(self.genesis.genesis_time_ns()) as f64 / 1e9,
            "slot": slot,
            "txs": h.tx_count,
            "stage_leader_check_s": st[0],
            "stage_ticking_s": st[1],
            "stage_snapshot_s": st[2],
            "stage_forged_s": st[3],
            "stage_adopted_s": st[4],
            "tail_s": tail as f64 / 1e9,
            "next_margin_s": self.margin_ns() as f64 / 1e9,
            "end_in_slot_s": (self.genesis.slot_start_ns(slot) + self.genesis.slot_ns())
                .saturating_sub(t_announced) as f64 / 1e9,
        }));
    }

    /// How long before the slot's end feeding stops: twice the longest of the last
    /// [`TAILS_KEPT`] tails of slots cut with transactions still queued, at least the
    /// slot over [`MIN_MARGIN_PARTS`] and at most half of it (before any: a quarter).
    fn margin_ns(&self) -> u64 {
        let slot_ns = self.genesis.slot_ns();
        match self.tails.iter().max() {
            None => slot_ns / 4,
            Some(&t) => (2 * t).clamp(slot_ns / MIN_MARGIN_PARTS, slot_ns / 2),
        }
    }

    pub(super) fn fall_back(&mut self, why: String) {
        self.counters.forge_fallbacks += 1;
        self.counters.last_forge_fallback = Some(why);
    }
}

/// Why the tiles could not forge a slot (the sequential bank forges it instead); the
/// message is the status's `last_forge_fallback`.
#[derive(Debug, thiserror::Error)]
enum TilesFailed {
    /// The forge refused or its tiles stopped.
    #[error(transparent)]
    Forge(#[from] ForgeError),
    /// An entry the tiles recorded does not replay (the rejection's name).
    #[error("sealing the tiles' entries: {0}")]
    Seal(&'static str),
    /// The tiles' banks and the sealing replay ended on different balances.
    #[error("the tiles' balances differ from the sealing replay")]
    Diverged,
}

fn push(sealer: &mut Sealer, e: ForgedEntry) -> Result<(), TilesFailed> {
    sealer
        .push(Entry {
            num_hashes: e.num_hashes,
            hash: Hash(e.hash),
            txs: e.txs,
        })
        .map_err(|r| TilesFailed::Seal(r.name()))
}
