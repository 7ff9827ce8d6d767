//! What a node reports about itself while it runs: end-to-end transaction latency and
//! the stages of producing each block.
//!
//! A block is one PoH slot. Its stages, each the leader pipeline's counterpart of a stage
//! that block-producing nodes time (Cardano's trace names in brackets):
//!
//! | field | what is timed | counterpart |
//! |---|---|---|
//! | `leader_check` | slot start (PoH cut the previous slot) until pack saw the new slot and reset its block budget | leadership check |
//! | `ticking` | time PoH spent hashing the slot's ticks | ledger ticking |
//! | `snapshot` | time pack spent selecting the slot's transactions into microblocks | mempool snapshot |
//! | `forged` | time the banks spent executing microblocks during the slot | block forged |
//! | `adopted` | slot end until the store wrote the slot's last entry to the ledger file | block adopted |
//!
//! Tiles add to plain atomics on paths they already take once per microblock or slot, and
//! PoH closes each slot's record; slot events take one mutex (a few times a second). The
//! end-to-end latency is generation (benchg published the transaction) to PoH (the
//! transaction's record was mixed into the chain), recorded by the one PoH tile.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::AtomicU64;
use std::sync::Mutex;

use serde::Serialize;

use crate::hist::AtomicHistogram;

/// One produced block (slot) and its stage timings, ns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BlockRecord {
    /// Slot number.
    pub slot: u64,
    /// Slot start, ns since the run's epoch.
    pub start_ns: u64,
    /// Slot end (its last tick), ns since the run's epoch.
    pub end_ns: u64,
    /// Transactions recorded in the slot.
    pub txs: u64,
    /// Microblocks mixed into the slot.
    pub microblocks: u64,
    /// Slot start until pack saw the slot (none if pack never saw it: it was busy for
    /// the whole slot).
    pub leader_check_ns: Option<u64>,
    /// PoH hashing time within the slot.
    pub ticking_ns: u64,
    /// Pack's scheduling time within the slot.
    pub snapshot_ns: u64,
    /// Bank execution time within the slot.
    pub forged_ns: u64,
    /// Slot end until its last entry was written (none without a store tile, or when the
    /// store did not write it within [`ADOPTION_WAIT_NS`]).
    pub adopted_ns: Option<u64>,
}

/// How long a closed slot waits for the store before it is reported without `adopted`.
pub const ADOPTION_WAIT_NS: u64 = 2_000_000_000;

#[derive(Debug, Default)]
struct Slots {
    /// When pack first saw each slot (trimmed as slots close).
    seen: BTreeMap<u64, u64>,
    /// Closed slots waiting for the store.
    waiting: VecDeque<BlockRecord>,
    /// Adoption times that arrived before PoH closed the slot's record.
    adopted_early: BTreeMap<u64, u64>,
}

/// The counters the tiles share for the node log.
#[derive(Debug, Default)]
pub struct Telemetry {
    /// Generation-to-PoH latency, ns (written by PoH only).
    pub latency: AtomicHistogram,
    /// Bank execution time, ns, all banks.
    pub exec_ns: AtomicU64,
    /// Pack scheduling time, ns.
    pub schedule_ns: AtomicU64,
    slots: Mutex<Slots>,
}

impl Telemetry {
    fn slots(&self) -> std::sync::MutexGuard<'_, Slots> {
        // A panicking tile fails the run anyway; its half-updated map is still usable.
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Pack saw `slot` at `now_ns`.
    pub fn slot_seen(&self, slot: u64, now_ns: u64) {
        self.slots().seen.entry(slot).or_insert(now_ns);
    }

    /// PoH closed a slot: fills in when pack saw it and queues it for the store.
    pub fn slot_closed(&self, mut r: BlockRecord) {
        let mut s = self.slots();
        r.leader_check_ns = s
            .seen
            .get(&r.slot)
            .map(|&seen| seen.saturating_sub(r.start_ns));
        s.seen.retain(|&k, _| k > r.slot);
        if let Some(at) = s.adopted_early.remove(&r.slot) {
            r.adopted_ns = Some(at.saturating_sub(r.end_ns));
        }
        s.waiting.push_back(r);
    }

    /// The store wrote the last entry of `slot` at `now_ns`.
    pub fn slot_adopted(&self, slot: u64, now_ns: u64) {
        let mut s = self.slots();
        match s.waiting.iter_mut().find(|r| r.slot == slot) {
            Some(r) => r.adopted_ns = Some(now_ns.saturating_sub(r.end_ns)),
            None => {
                s.adopted_early.insert(slot, now_ns);
            }
        }
    }

    /// Blocks that are complete at `now_ns`, oldest first: adopted, or closed without a
    /// store (`store` false), or waiting longer than [`ADOPTION_WAIT_NS`].
    pub fn take_blocks(&self, now_ns: u64, store: bool) -> Vec<BlockRecord> {
        let mut s = self.slots();
        let mut out = Vec::new();
        while let Some(r) = s.waiting.front() {
            let done = !store
                || r.adopted_ns.is_some()
                || now_ns.saturating_sub(r.end_ns) > ADOPTION_WAIT_NS;
            if !done {
                break;
            }
            out.extend(s.waiting.pop_front());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn closed(slot: u64, start: u64, end: u64) -> BlockRecord {
        BlockRecord {
            slot,
            start_ns: start,
            end_ns: end,
            txs: 3,
            microblocks: 1,
            leader_check_ns: None,
            ticking_ns: 10,
            snapshot_ns: 20,
            forged_ns: 30,
            adopted_ns: None,
        }
    }

    #[test]
    fn a_block_completes_when_the_store_adopts_it() {
        let t = Telemetry::default();
        t.slot_seen(1, 1_050);
        t.slot_seen(1, 1_900); // only the first sighting counts
        t.slot_closed(closed(1, 1_000, 5_000));
        assert!(t.take_blocks(5_100, true).is_empty(), "not adopted yet");
        t.slot_adopted(1, 5_400);
        let b = t.take_blocks(5_500, true);
        assert_eq!(b.len(), 1);
        assert_eq!(b[0].leader_check_ns, Some(50));
        assert_eq!(b[0].adopted_ns, Some(400));
        assert!(t.take_blocks(9_000, true).is_empty(), "reported once");
    }

    #[test]
    fn an_adoption_before_the_close_is_kept_and_order_is_preserved() {
        let t = Telemetry::default();
        t.slot_adopted(2, 9_000);
        t.slot_closed(closed(1, 0, 4_000));
        t.slot_closed(closed(2, 4_000, 8_000));
        // Slot 1 is not adopted: slot 2 waits behind it until slot 1 times out.
        assert!(t.take_blocks(8_500, true).is_empty());
        let b = t.take_blocks(4_000 + ADOPTION_WAIT_NS + 1, true);
        assert_eq!(b.iter().map(|r| r.slot).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(b[0].adopted_ns, None);
        assert_eq!(b[1].adopted_ns, Some(1_000));
        assert_eq!(b[1].leader_check_ns, None);
    }

    #[test]
    fn without_a_store_blocks_complete_when_closed() {
        let t = Telemetry::default();
        t.slot_closed(closed(0, 0, 100));
        assert_eq!(t.take_blocks(100, false).len(), 1);
    }
}
