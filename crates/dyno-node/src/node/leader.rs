//! The node's slots as leader: the forging loop with its logged stages, and the
//! forge itself (the pipeline's tiles, or the sequential bank).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use super::Node;
use crate::block::{hex, Entry};
use crate::chain::Checked;
use crate::log::now_ns;
use crate::transport::Message;

impl Node {
    /// Leads `slot`: the forging loop, each step logged (Cardano's forging metrics).
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
        let txs = self.mempool.snapshot(self.opts.max_block_txs);
        let t_snap = now_ns();
        log.event("snapshot", json!({"slot": slot, "txs": txs.len()}));
        // None when the tip is already at this slot or later (a clock step back): a
        // block there could only be refused.
        let Some(c) = self.forge(slot, scheduled, txs) else {
            return;
        };
        let bytes = Arc::new(c.block.encode());
        let h = c.block.header.clone();
        let t_forged = now_ns();
        log.event(
            "forged",
            json!({"slot": slot, "block": hex(&c.hash), "height": h.height,
                   "parent": hex(&h.parent), "txs": h.tx_count, "bytes": bytes.len()}),
        );
        self.counters.forged += 1;
        let hash = c.hash;
        self.adopt(c, bytes);
        let t_adopted = now_ns();
        self.broadcast(&Message::Header(h.encode()), None);
        log.event("announced", json!({"slot": slot, "block": hex(&hash)}));
        let s = |a: u64, b: u64| b.saturating_sub(a) as f64 / 1e9;
        self.counters.last_forge_stages_s = [
            s(loop_start_ns, t_check),
            s(t_check, t_tick),
            s(t_tick, t_snap),
            s(t_snap, t_forged),
            s(t_forged, t_adopted),
        ];
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
        }));
    }

    /// Forges the block of `slot` from the snapshot `txs`: with the tiles when they
    /// run, else (or when they fail) with the sequential bank.
    pub(super) fn forge(
        &mut self,
        slot: u64,
        scheduled_ns: u64,
        txs: Vec<Vec<u8>>,
    ) -> Option<Checked> {
        let base = self.chain.forge_base(slot)?;
        let Some(tiles) = self.tiles.as_mut() else {
            return self.chain.forge(slot, &self.opts.id, txs);
        };
        let txs = self.chain.admissible(txs);
        // The block must leave within its slot: the tiles are fed until half of it and
        // finish what they were fed (at most IN_FLIGHT transactions) by its end.
        let at = |ns: u64| Instant::now() + Duration::from_nanos(ns.saturating_sub(now_ns()));
        let feed_until = at(scheduled_ns + self.genesis.slot_ns() / 2);
        let give_up = at(scheduled_ns + self.genesis.slot_ns());
        let sealed = tiles
            .forge(&base.balances, base.poh_start, &txs, feed_until, give_up)
            .map_err(|e| e.to_string())
            .and_then(|f| {
                let unrecorded = f.unrecorded as u64;
                let entries = f
                    .entries
                    .into_iter()
                    .map(|e| Entry {
                        num_hashes: e.num_hashes,
                        hash: e.hash,
                        txs: e.txs,
                    })
                    .collect();
                // The header's state hash is the one a follower's replay reaches; a
                // chain that replay does not reproduce is not sent.
                self.chain
                    .seal(slot, &self.opts.id, &base, entries)
                    .map(|c| (c, unrecorded))
                    .map_err(|r| format!("sealing the tiles' entries: {}", r.name()))
            });
        match sealed {
            Ok((c, unrecorded)) => {
                self.counters.forged_by_tiles += 1;
                self.counters.forge_unrecorded += unrecorded;
                Some(c)
            }
            Err(why) => {
                self.fall_back(why);
                self.chain.forge(slot, &self.opts.id, txs)
            }
        }
    }

    pub(super) fn fall_back(&mut self, why: String) {
        self.counters.forge_fallbacks += 1;
        self.counters.last_forge_fallback = Some(why);
    }
}
