//! The scheduler tile.

use super::*;

struct Pending {
    prio: u64,
    id: u64,
    cost: u64,
    accounts: Vec<AccountRef>,
    env: Vec<u8>,
}

impl PartialEq for Pending {
    fn eq(&self, o: &Self) -> bool {
        (self.prio, self.id) == (o.prio, o.id)
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Pending {
    /// Higher fee per cost first; among equals, older first.
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.prio.cmp(&o.prio).then(o.id.cmp(&self.id))
    }
}

#[derive(Default, Clone, Copy)]
struct Lock {
    writer: bool,
    readers: u32,
}

/// What pack did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PackStats {
    /// Transactions received.
    pub received: u64,
    /// Dropped because `max_pending` were waiting.
    pub dropped: u64,
    /// Microblocks sent.
    pub microblocks: u64,
    /// Transactions scheduled.
    pub scheduled: u64,
    /// Scheduling attempts that found every waiting transaction conflicting or over
    /// the block limit.
    pub blocked: u64,
    /// Slots whose cost limit was reached.
    pub full_blocks: u64,
    /// Transactions waiting when last looked at.
    pub waiting: u64,
    /// Microblocks at the banks, not yet done, when last looked at.
    pub microblocks_in_flight: u64,
    /// Accounts locked when last looked at.
    pub locked_accounts: u64,
    /// Ids dropped (audit runs only).
    pub dropped_ids: Vec<u64>,
}

/// Schedules microblocks of non-conflicting transactions onto the bank tiles.
pub struct Pack {
    cfg: PackConfig,
    shared: Arc<Shared>,
    heap: BinaryHeap<Pending>,
    /// One lock per account of the (fixed) account space, plus one shared slot for
    /// indices outside it.
    locks: Vec<Lock>,
    /// Accounts locked.
    locked: u64,
    in_flight: Vec<VecDeque<Vec<AccountRef>>>,
    sent: Vec<u64>,
    held: u64,
    next_bank: usize,
    slot: u64,
    slot_cost: u64,
    slot_full: bool,
    /// Something changed since the last attempt that found nothing to schedule (a
    /// transaction arrived, a microblock finished, a slot began).
    dirty: bool,
    buf: Vec<u8>,
    audit: bool,
    /// Counters.
    pub stats: PackStats,
}

impl Pack {
    /// A scheduler for `banks` bank tiles.
    pub fn new(cfg: &PackConfig, banks: usize, shared: Arc<Shared>, audit: bool) -> Pack {
        let accounts = shared.store.len();
        Pack {
            cfg: cfg.clone(),
            shared,
            heap: BinaryHeap::new(),
            locks: vec![Lock::default(); accounts + 1],
            locked: 0,
            in_flight: vec![VecDeque::new(); banks],
            sent: vec![0; banks],
            held: 0,
            next_bank: 0,
            slot: 0,
            slot_cost: 0,
            slot_full: false,
            dirty: false,
            buf: Vec::new(),
            audit,
            stats: PackStats::default(),
        }
    }

    /// The microblock mtu for `max_txs` transactions.
    pub fn mtu(max_txs: usize) -> usize {
        4 + max_txs * (2 + MAX_ENV)
    }

    /// Lock slot of an account: indices outside the account space share the last slot
    /// (they fail in the bank anyway; sharing one slot serializes them, which is safe).
    fn slot_of(&self, r: &AccountRef) -> usize {
        (r.index as usize).min(self.locks.len() - 1)
    }

    fn conflicts(&self, a: &[AccountRef]) -> bool {
        a.iter().any(|r| {
            let l = self.locks[self.slot_of(r)];
            l.writer || (r.writable && l.readers > 0)
        })
    }

    fn lock(&mut self, a: &[AccountRef]) {
        for r in a {
            let i = self.slot_of(r);
            let l = &mut self.locks[i];
            if r.writable {
                l.writer = true;
            } else {
                l.readers += 1;
            }
            if l.writer as u32 + l.readers == 1 {
                self.locked += 1;
            }
        }
    }

    fn unlock(&mut self, a: &[AccountRef]) {
        for r in a {
            let i = self.slot_of(r);
            let l = &mut self.locks[i];
            if r.writable {
                l.writer = false;
            } else {
                l.readers -= 1;
            }
            if !l.writer && l.readers == 0 {
                self.locked -= 1;
            }
        }
    }

    fn publish_held(&mut self) {
        self.stats.waiting = self.heap.len() as u64;
        self.stats.microblocks_in_flight = self.held;
        self.stats.locked_accounts = self.locked;
        self.shared
            .pack_held
            .store(self.heap.len() as u64 + self.held, Ordering::Relaxed);
    }

    fn schedule(&mut self, out: &mut Outputs) -> bool {
        let slot = self.shared.slot.load(Ordering::Relaxed);
        if slot != self.slot {
            self.shared.telemetry.slot_seen(slot, self.shared.now_ns());
            self.slot = slot;
            self.slot_cost = 0;
            self.slot_full = false;
            self.dirty = true;
        }
        if !self.dirty {
            return false;
        }
        let banks = self.in_flight.len();
        let Some(bank) = (0..banks)
            .map(|k| (self.next_bank + k) % banks)
            .find(|&b| self.in_flight[b].len() < self.cfg.microblocks_per_bank)
        else {
            return false;
        };
        if self.heap.is_empty() || self.slot_full {
            return false;
        }
        let t0 = Instant::now();
        let did = self.fill_microblock(bank, out);
        self.shared
            .telemetry
            .schedule_ns
            .fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
        did
    }

    /// Selects the next microblock for `bank` from the waiting transactions.
    fn fill_microblock(&mut self, bank: usize, out: &mut Outputs) -> bool {
        let max = self.cfg.max_txs_per_microblock;
        let mut chosen: Vec<Pending> = Vec::new();
        let mut skipped: Vec<Pending> = Vec::new();
        let mut scanned = 0;
        let mtu = out.mtu(0);
        let mut bytes = 4;
        // A deep scan: conflicting high-fee transactions (hot accounts) gather at the top
        // of the heap, and a shallow scan would then cut microblocks of one or two.
        while chosen.len() < max && scanned < SCAN_DEPTH.max(4 * max) {
            let Some(p) = self.heap.pop() else { break };
            scanned += 1;
            if self.slot_cost + p.cost > self.cfg.block_cost_limit {
                self.slot_full = true;
                skipped.push(p);
                continue;
            }
            if bytes + 2 + p.env.len() > mtu || self.conflicts(&p.accounts) {
                skipped.push(p);
                continue;
            }
            // Locked now, so later candidates of this microblock see it too.
            self.lock(&p.accounts);
            self.slot_cost += p.cost;
            bytes += 2 + p.env.len();
            chosen.push(p);
        }
        self.heap.extend(skipped);
        if self.slot_full {
            self.stats.full_blocks += 1;
        }
        if chosen.is_empty() {
            self.stats.blocked += 1;
            self.dirty = false;
            return false;
        }
        self.buf.clear();
        self.buf
            .extend_from_slice(&(chosen.len() as u32).to_le_bytes());
        let mut all = Vec::new();
        for p in &chosen {
            self.buf
                .extend_from_slice(&(p.env.len() as u16).to_le_bytes());
            self.buf.extend_from_slice(&p.env);
            all.extend_from_slice(&p.accounts);
        }
        // Credits were checked before this hook ran (burst 1).
        let _ = out.publish(0, bank as u64, &self.buf, 0);
        self.sent[bank] += 1;
        self.held += 1;
        self.in_flight[bank].push_back(all);
        self.stats.microblocks += 1;
        self.stats.scheduled += chosen.len() as u64;
        self.next_bank = (bank + 1) % self.in_flight.len();
        true
    }
}

impl Tile for Pack {
    fn after_credit(&mut self, out: &mut Outputs) -> bool {
        // Locks of finished microblocks are released first (in bank order).
        for b in 0..self.in_flight.len() {
            let done = self.shared.bank_done[b].load(Ordering::Acquire);
            while self.sent[b] - (self.in_flight[b].len() as u64) < done {
                let Some(accts) = self.in_flight[b].pop_front() else {
                    break;
                };
                self.held -= 1;
                self.unlock(&accts);
                self.dirty = true;
            }
        }
        let did = self.schedule(out);
        self.publish_held();
        did
    }

    fn after_frag(
        &mut self,
        _: usize,
        meta: &FragMeta,
        payload: &[u8],
        _: &mut Outputs,
    ) -> FragOutcome {
        self.stats.received += 1;
        let decoded = open_envelope(payload).and_then(|(_, _, t)| tx::decode(t).ok());
        // Verify forwards only decodable transactions; anything else is dropped here.
        let Some(t) = decoded.filter(|_| self.heap.len() < self.cfg.max_pending) else {
            self.stats.dropped += 1;
            if self.audit {
                self.stats.dropped_ids.push(meta.sig);
            }
            return FragOutcome::Filtered;
        };
        let cost = t.message.cost();
        let prio =
            ((t.message.fee as u128 * 1_000_000) / cost as u128).min(u64::MAX as u128) as u64;
        self.heap.push(Pending {
            prio,
            id: meta.sig,
            cost,
            accounts: t.message.accounts,
            env: payload.to_vec(),
        });
        self.dirty = true;
        self.publish_held();
        FragOutcome::Done
    }
}
