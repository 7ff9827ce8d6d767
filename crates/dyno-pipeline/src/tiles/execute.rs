//! The execution tiles.

use super::*;

/// One executed transaction, kept in audit runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecRecord {
    /// Id.
    pub id: u64,
    /// Signature tag.
    pub tag: u128,
    /// Executed (true) or failed.
    pub ok: bool,
}

/// What one bank tile did.
#[derive(Debug, Clone, Default)]
pub struct BankStats {
    /// Executed.
    pub executed: u64,
    /// Failed (fee charged when the payer could pay it).
    pub failed: u64,
    /// Fees collected.
    pub fees: u128,
    /// Microblocks executed.
    pub microblocks: u64,
    /// Generation-to-execution latency.
    pub exec_latency: Histogram,
    /// Every transaction executed, in order (audit runs only).
    pub records: Vec<ExecRecord>,
    /// Accounts of each microblock's transactions (audit runs only).
    pub microblock_accounts: Vec<Vec<Vec<AccountRef>>>,
}

/// Executes microblocks sent to it (`sig == index`) against the shared store.
pub struct Bank {
    index: u64,
    shared: Arc<Shared>,
    buf: Vec<u8>,
    audit: bool,
    /// Counters.
    pub stats: BankStats,
}

impl Bank {
    /// Bank tile `index`.
    pub fn new(index: usize, shared: Arc<Shared>, audit: bool) -> Bank {
        Bank {
            index: index as u64,
            shared,
            buf: Vec::new(),
            audit,
            stats: BankStats::default(),
        }
    }

    /// The executed-microblock mtu for `max_txs` transactions.
    pub fn mtu(max_txs: usize) -> usize {
        4 + max_txs * EXEC_RECORD
    }
}

impl Tile for Bank {
    fn before_frag(&mut self, _: usize, meta: &FragMeta) -> bool {
        meta.sig == self.index
    }

    fn after_frag(
        &mut self,
        _: usize,
        _: &FragMeta,
        payload: &[u8],
        out: &mut Outputs,
    ) -> FragOutcome {
        let count = payload
            .get(..4)
            .map_or(0, |b| u32::from_le_bytes(b.try_into().expect("4")));
        let t0 = Instant::now();
        let mut at = 4;
        self.buf.clear();
        self.buf.extend_from_slice(&count.to_le_bytes());
        let mut accounts = Vec::new();
        let mut landed = 0;
        for _ in 0..count {
            let len = payload
                .get(at..at + 2)
                .map_or(0, |b| u16::from_le_bytes([b[0], b[1]]) as usize);
            let env = &payload[at + 2..at + 2 + len];
            at += 2 + len;
            let (id, gen_ns, t) = open_envelope(env).expect("pack sends envelopes");
            let tx = tx::decode(t).expect("verify forwards decodable transactions");
            let seed = u64_at(&tx.signature, 0);
            let (outcome, fee) = execute(&self.shared.store, &tx.message, seed);
            let ok = outcome == Outcome::Executed;
            self.stats.fees += fee as u128;
            if ok {
                self.stats.executed += 1;
            } else {
                self.stats.failed += 1;
            }
            landed += 1;
            self.stats
                .exec_latency
                .record(self.shared.now_ns().saturating_sub(gen_ns));
            if self.audit {
                self.stats.records.push(ExecRecord {
                    id,
                    tag: tx::sig_tag(t),
                    ok,
                });
                accounts.push(tx.message.accounts.clone());
            }
            self.buf.extend_from_slice(&tx.signature);
            self.buf.push(!ok as u8);
            self.buf.extend_from_slice(&gen_ns.to_le_bytes());
        }
        if self.audit {
            self.stats.microblock_accounts.push(accounts);
        }
        self.stats.microblocks += 1;
        self.shared
            .telemetry
            .exec_ns
            .fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
        let _ = out.publish(0, self.index, &self.buf, 0);
        self.shared.landed.fetch_add(landed, Ordering::Relaxed);
        // Release: every balance written above is visible to the bank pack sends a
        // conflicting transaction to next.
        self.shared.bank_done[self.index as usize].fetch_add(1, Ordering::Release);
        FragOutcome::Done
    }
}
