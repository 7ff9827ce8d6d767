//! The proof-of-history tile.

use super::*;

/// What the PoH tile did.
#[derive(Debug, Clone, Default)]
pub struct PohStats {
    /// SHA-256 iterations (excluding mixins).
    pub hashes: u64,
    /// Mixins.
    pub mixins: u64,
    /// Ticks.
    pub ticks: u64,
    /// Slots completed.
    pub slots: u64,
    /// Transactions recorded.
    pub records: u64,
    /// Time spent hashing, ns (for the chain's hash rate).
    pub hash_ns: u64,
    /// Generation-to-PoH latency.
    pub poh_latency: Histogram,
    /// The chain's last hash.
    pub last_hash: [u8; 32],
}

/// The hash chain: hashes continuously (paced to `tick_ns` per tick), mixes in each
/// executed microblock (with `record_order`, then marks it done, which releases its
/// account locks in pack),
/// cuts ticks and slots, and sends entries to the store.
pub struct Poh {
    cfg: PohConfig,
    shared: Arc<Shared>,
    hash: [u8; 32],
    since_entry: u64,
    in_tick: u64,
    start_ns: u64,
    yield_next: bool,
    store: bool,
    buf: Vec<u8>,
    /// The current slot's start and the counters then (for its block record).
    slot_start: SlotStart,
    /// Counters.
    pub stats: PohStats,
}

/// Where the counters stood when the current slot began.
#[derive(Debug, Clone, Copy, Default)]
struct SlotStart {
    at_ns: u64,
    hash_ns: u64,
    exec_ns: u64,
    schedule_ns: u64,
    records: u64,
    mixins: u64,
}

impl Poh {
    /// A chain starting at `start`; `store` = send entries to a store tile.
    pub fn new(cfg: &PohConfig, start: [u8; 32], shared: Arc<Shared>, store: bool) -> Poh {
        let start_ns = shared.now_ns();
        let slot_start = SlotStart {
            at_ns: start_ns,
            ..Default::default()
        };
        Poh {
            slot_start,
            cfg: cfg.clone(),
            shared,
            hash: start,
            since_entry: 0,
            in_tick: 0,
            start_ns,
            yield_next: false,
            store,
            buf: Vec::new(),
            stats: PohStats {
                last_hash: start,
                ..Default::default()
            },
        }
    }

    /// The ledger-entry mtu for `max_txs` transactions.
    pub fn mtu(max_txs: usize) -> usize {
        ENTRY_HEADER + max_txs * RECORD_LEN
    }

    /// The counters now, as the start of the next slot.
    fn slot_counters(&self, at_ns: u64) -> SlotStart {
        let t = &self.shared.telemetry;
        SlotStart {
            at_ns,
            hash_ns: self.stats.hash_ns,
            exec_ns: t.exec_ns.load(Ordering::Relaxed),
            schedule_ns: t.schedule_ns.load(Ordering::Relaxed),
            records: self.stats.records,
            mixins: self.stats.mixins,
        }
    }

    /// Closes the current slot's block record and starts the next.
    fn close_slot(&mut self) {
        let now = self.slot_counters(self.shared.now_ns());
        let s = self.slot_start;
        self.shared.telemetry.slot_closed(BlockRecord {
            slot: self.stats.slots,
            start_ns: s.at_ns,
            end_ns: now.at_ns,
            txs: now.records - s.records,
            microblocks: now.mixins - s.mixins,
            leader_check_ns: None,
            ticking_ns: now.hash_ns - s.hash_ns,
            snapshot_ns: now.schedule_ns.saturating_sub(s.schedule_ns),
            forged_ns: now.exec_ns.saturating_sub(s.exec_ns),
            adopted_ns: None,
        });
        self.slot_start = now;
    }

    /// Publishes an entry; `slot_end` marks the slot's last one for the store.
    fn entry(
        &mut self,
        mixin: Option<[u8; 32]>,
        records: &[u8],
        slot_end: bool,
        out: &mut Outputs,
    ) {
        let h = EntryHeader {
            slot: self.stats.slots,
            num_hashes: self.since_entry,
            hash: self.hash,
            microblock: mixin.is_some(),
            mixin: mixin.unwrap_or([0; 32]),
            count: (records.len() / RECORD_LEN) as u32,
        };
        self.since_entry = 0;
        self.stats.last_hash = self.hash;
        if self.store {
            self.buf.clear();
            h.encode_into(&mut self.buf);
            self.buf.extend_from_slice(records);
            let sig = if slot_end {
                SLOT_END | (h.slot << 2)
            } else {
                h.microblock as u64
            };
            let _ = out.publish(0, sig, &self.buf, 0);
        }
    }
}

impl Tile for Poh {
    fn after_credit(&mut self, out: &mut Outputs) -> bool {
        // Every other call returns without hashing so the loop polls the banks even when
        // the chain is behind its schedule.
        self.yield_next = !self.yield_next;
        if !self.yield_next {
            return false;
        }
        let per_tick = self.cfg.hashes_per_tick;
        let done = self.stats.ticks * per_tick + self.in_tick;
        let due = if self.cfg.tick_ns == 0 {
            u64::MAX
        } else {
            let elapsed = self.shared.now_ns().saturating_sub(self.start_ns) as u128;
            (elapsed * per_tick as u128 / self.cfg.tick_ns as u128) as u64
        };
        // Hash in batches (up to the end of the tick): hashing a few at a time would keep
        // the tile busy forever and never let it yield a shared core.
        let batch = (per_tick - self.in_tick).min(POH_BATCH);
        if due.saturating_sub(done) < batch {
            return false;
        }
        let n = (due - done).min(per_tick - self.in_tick).min(4 * POH_BATCH);
        let t0 = Instant::now();
        let mut h = self.hash;
        for _ in 0..n {
            h = hash_once(&h);
        }
        self.hash = h;
        self.stats.hash_ns += t0.elapsed().as_nanos() as u64;
        self.stats.hashes += n;
        self.since_entry += n;
        self.in_tick += n;
        if self.in_tick == per_tick {
            self.in_tick = 0;
            self.stats.ticks += 1;
            let slot_end = self.stats.ticks.is_multiple_of(self.cfg.ticks_per_slot);
            self.entry(None, &[], slot_end, out);
            if slot_end {
                self.close_slot();
                self.stats.slots += 1;
                self.shared.slot.store(self.stats.slots, Ordering::Relaxed);
            }
        }
        true
    }

    fn after_frag(
        &mut self,
        _: usize,
        meta: &FragMeta,
        payload: &[u8],
        out: &mut Outputs,
    ) -> FragOutcome {
        let count = microblock_count(payload);
        let now = self.shared.now_ns();
        let mut records = Vec::with_capacity(count * RECORD_LEN);
        for i in 0..count {
            let r = &payload[4 + i * EXEC_RECORD..4 + (i + 1) * EXEC_RECORD];
            records.extend_from_slice(&r[..RECORD_LEN]);
            let latency = now.saturating_sub(u64_at(r, RECORD_LEN));
            self.stats.poh_latency.record(latency);
            self.shared.telemetry.latency.record(latency);
        }
        let mixin: [u8; 32] = Sha256::digest(&records).into();
        self.hash = mix(&self.hash, &mixin);
        self.stats.mixins += 1;
        self.stats.records += count as u64;
        self.entry(Some(mixin), &records, false, out);
        // With `record_order`, only now may pack schedule a transaction conflicting with
        // this microblock: a conflicting one then executes after it and is recorded
        // after it, so the chain's order is an order the banks executed in (a follower
        // replaying the entries in order reaches their state). Release: the balances
        // the bank wrote before publishing (which this tile acquired by reading the
        // frag) are visible to whoever pack sends to next. `sig` is the bank's index.
        // (Only with `record_order`, which the forge sets for several banks; otherwise
        // each bank marks its own microblocks done.)
        if self.shared.record_order {
            if let Some(done) = self.shared.bank_done.get(meta.sig as usize) {
                done.fetch_add(1, Ordering::Release);
            }
        }
        FragOutcome::Done
    }
}
