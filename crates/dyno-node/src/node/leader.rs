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

use dyno_tiles::forge::{ForgeError, ForgedEntry, TileForge};
use serde_json::json;

use super::byzantine::Lies;
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

/// What a node holds as the leader of its slots.
#[derive(Default)]
pub(super) struct Leader {
    /// How it forges.
    pub(super) forge: Forge,
    /// The tails (feeding stopped -> announced) of the last [`TAILS_KEPT`] slots forged
    /// with the tiles and cut with transactions still queued, ns: the margin is
    /// measured from them.
    tails: VecDeque<u64>,
    /// What it serves instead of the truth while it misbehaves.
    pub(super) lies: Lies,
}

impl Leader {
    /// The slot being forged with the tiles, if any.
    fn lead(&self) -> Option<&Lead> {
        match &self.forge {
            Forge::Tiles(t) => t.lead.as_ref(),
            Forge::Sequential => None,
        }
    }

    /// The same, to change it.
    fn lead_mut(&mut self) -> Option<&mut Lead> {
        match &mut self.forge {
            Forge::Tiles(t) => t.lead.as_mut(),
            Forge::Sequential => None,
        }
    }
}

/// How a leader forges its blocks.
#[derive(Default)]
pub(super) enum Forge {
    /// With one sequential bank on the loop, the whole slot at once: the node's choice
    /// ([`super::ForgeMode::Sequential`]), or the tiles did not start (or have not yet:
    /// they start with the loop).
    #[default]
    Sequential,
    /// With the leader pipeline's tiles, across the loop's turns.
    Tiles(Box<TileLeader>),
}

/// The tiles and the slot they forge.
pub(super) struct TileLeader {
    pub(super) forge: TileForge,
    /// The slot being forged, between its start and its announcement (none between
    /// slots).
    pub(super) lead: Option<Lead>,
}

/// A slot this node leads with the tiles, between its start and its announcement.
pub(super) struct Lead {
    plan: SlotPlan,
    phase: Phase,
}

/// When a led slot's stages happened and must happen.
struct SlotPlan {
    slot: u64,
    /// Stage times (ns): the loop's turn that saw the slot, leadership checked,
    /// ticked, snapshot taken.
    stages: [u64; 4],
    /// Feeding stops here...
    feed_until: Instant,
    /// ... and the block must be out by here (the slot's end).
    slot_end: Instant,
    /// The slot is opened no later than this even if the parent is still awaited.
    wait_parent_until: Instant,
}

/// Where a led slot is.
enum Phase {
    /// Not yet opened in the tiles: the previous slot's block may still come.
    AwaitingParent,
    /// Opened on the tip: being fed and replayed.
    Open(Box<OpenSlot>),
}

/// A slot opened in the tiles.
struct OpenSlot {
    /// The block, replayed entry by entry.
    sealer: Sealer,
    /// Candidates not yet fed, oldest first: the snapshot, then arrivals.
    queue: VecDeque<Vec<u8>>,
    /// Signature tags fed this slot (a transaction goes into a block once).
    fed: HashSet<u128>,
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
        let plan = SlotPlan {
            slot,
            stages: [loop_start_ns, t_check, t_tick, 0],
            feed_until: at(scheduled + slot_ns.saturating_sub(margin)),
            slot_end: at(scheduled + slot_ns),
            wait_parent_until: at(scheduled + slot_ns / 2),
        };
        if let Forge::Tiles(t) = &mut self.leader.forge {
            t.lead = Some(Lead {
                plan,
                phase: Phase::AwaitingParent,
            });
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
        if let Some(Lead {
            phase: Phase::Open(open),
            ..
        }) = self.leader.lead_mut()
        {
            open.queue.push_back(b.to_vec());
        }
    }

    /// When the loop must come back to the slot it leads (none: it leads none).
    pub(super) fn lead_due(&self) -> Option<Instant> {
        let l = self.leader.lead()?;
        Some(match l.phase {
            Phase::AwaitingParent => Instant::now() + Duration::from_millis(1),
            // Often enough to keep the tiles fed (IN_FLIGHT transactions are
            // milliseconds of their work) and to replay entries soon after poh
            // records them (one a tick, 1 ms); an input wakes the loop sooner.
            Phase::Open(_) => (Instant::now() + LEAD_TURN).min(l.plan.feed_until),
        })
    }

    /// One turn of the slot being led: open it (once its parent is in), feed the
    /// tiles, replay what they recorded, and finish the block once feeding is over.
    pub(super) fn step_lead(&mut self) {
        // The tiles leave the node for the turn, so that forging can use them and the
        // rest of the node at once; they go back after it.
        let Forge::Tiles(mut tiles) = std::mem::take(&mut self.leader.forge) else {
            return;
        };
        if let Some(lead) = tiles.lead.take() {
            tiles.lead = self.turn(&mut tiles.forge, lead);
        }
        self.leader.forge = Forge::Tiles(tiles);
    }

    /// A turn of `lead` with `tiles`; the slot, when it is still being forged after it.
    fn turn(&mut self, tiles: &mut TileForge, lead: Lead) -> Option<Lead> {
        let Lead { mut plan, phase } = lead;
        let mut open = match phase {
            Phase::Open(open) => open,
            Phase::AwaitingParent
                if self.follower.fetching_slot(plan.slot.checked_sub(1))
                    && Instant::now() < plan.wait_parent_until =>
            {
                return Some(Lead {
                    plan,
                    phase: Phase::AwaitingParent,
                });
            }
            Phase::AwaitingParent => match self.open_lead(tiles, &mut plan) {
                Ok(open) => Box::new(open),
                Err(None) => return None,
                Err(Some(why)) => {
                    self.fall_back(why);
                    self.forge_sequentially(tiles, &plan);
                    return None;
                }
            },
        };
        if let Err(why) = self.feed_lead(tiles, &plan, &mut open) {
            self.fall_back(why.to_string());
            self.forge_sequentially(tiles, &plan);
            return None;
        }
        let snapshot_fed = self.opts.forge_at == super::ForgeAt::SlotStart && open.queue.is_empty();
        if Instant::now() < plan.feed_until && !snapshot_fed {
            return Some(Lead {
                plan,
                phase: Phase::Open(open),
            });
        }
        let t_feed_end = now_ns();
        let unfed = open.queue.len() as u64;
        match self.finish_lead(tiles, &plan, *open) {
            Ok(c) => {
                self.counters.forged_by_tiles += 1;
                self.counters.forge_unrecorded += unfed;
                // Only a tail with the tiles full (transactions still queued when feeding
                // stopped) measures the margin: with less in flight, as when the load
                // has just begun, the tail is shorter than a loaded slot's.
                let measured = unfed > 0;
                self.announce(plan.slot, c, plan.stages, t_feed_end, measured);
            }
            Err(why) => {
                self.fall_back(why.to_string());
                self.forge_sequentially(tiles, &plan);
            }
        }
        None
    }

    /// Opens the slot in the tiles on the tip; `Err(None)`: nothing to lead (the tip
    /// is already at this slot or later).
    fn open_lead(
        &mut self,
        tiles: &mut TileForge,
        plan: &mut SlotPlan,
    ) -> Result<OpenSlot, Option<String>> {
        let base = self.chain.forge_base(plan.slot).ok_or(None)?;
        let txs = self.snapshot(plan.slot);
        plan.stages[3] = now_ns();
        tiles
            .begin(&base.balances, base.poh_start.0, plan.slot_end)
            .map_err(|e| Some(e.to_string()))?;
        Ok(OpenSlot {
            sealer: self.chain.sealer(base),
            queue: txs.into(),
            fed: HashSet::new(),
        })
    }

    /// Feeds what fits and replays every entry recorded so far.
    fn feed_lead(
        &mut self,
        tiles: &mut TileForge,
        plan: &SlotPlan,
        open: &mut OpenSlot,
    ) -> Result<(), TilesFailed> {
        let max = self.opts.max_block_txs;
        while Instant::now() < plan.feed_until && tiles.fed() < max {
            let Some(t) = open.queue.pop_front() else {
                break;
            };
            let tag = dyno_txn::tx::sig_tag(&t);
            if open.fed.contains(&tag) || !self.chain.fresh_on_tip(&t) {
                continue;
            }
            if !tiles.feed(&t) {
                open.queue.push_front(t);
                break;
            }
            open.fed.insert(tag);
        }
        for e in tiles.entries(Duration::ZERO)? {
            push(&mut open.sealer, e)?;
        }
        Ok(())
    }

    /// Lets the tiles record what they were fed, replays the last entries and signs.
    fn finish_lead(
        &mut self,
        tiles: &mut TileForge,
        plan: &SlotPlan,
        open: OpenSlot,
    ) -> Result<Checked, TilesFailed> {
        let done = tiles.finish(plan.slot_end)?;
        let mut sealer = open.sealer;
        for e in done.entries {
            push(&mut sealer, e)?;
        }
        // The tiles' banks and the sealing replay must agree (both execute the same
        // transactions in the same order on the same base); a difference is a bug the
        // block must not carry.
        let c = sealer
            .finish(plan.slot, &self.opts.id)
            .map_err(|r| TilesFailed::Seal(r.name()))?;
        if c.balances != done.balances {
            return Err(TilesFailed::Diverged);
        }
        Ok(c)
    }

    /// The tiles could not forge the slot: the sequential bank forges it from the
    /// mempool (a late block is better than none; a follower refuses none for it).
    fn forge_sequentially(&mut self, tiles: &mut TileForge, plan: &SlotPlan) {
        tiles.close();
        let txs = self.mempool.snapshot(self.opts.max_block_txs);
        let t = now_ns();
        if let Some(c) = self.chain.forge(plan.slot, &self.opts.id, txs) {
            let mut stages = plan.stages;
            if stages[3] == 0 {
                stages[3] = t;
            }
            self.announce(plan.slot, c, stages, t, false);
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
            let tails = &mut self.leader.tails;
            tails.push_back(tail);
            if tails.len() > TAILS_KEPT {
                tails.pop_front();
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
        match self.leader.tails.iter().max() {
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
