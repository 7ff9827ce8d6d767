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
    /// SHA-256 rounds of extra work done ([`Bank::with_extra_work`]): `landed x N`.
    pub extra_hashes: u64,
    /// XOR of the first 8 bytes of every extra-work digest: the digests are used, so the
    /// compiler cannot drop the work, and two runs over the same transactions agree.
    pub extra_digest: u64,
}

/// `rounds` chained SHA-256 hashes starting from a transaction's signature: known, fixed
/// CPU work per transaction (`[bank] extra_work_per_tx`, `dyno node --extra-work-per-tx`)
/// that changes no state, to measure how small a slowdown `dyno compare` can see.
/// Zero rounds return the signature's first 32 bytes.
pub fn extra_work(signature: &[u8], rounds: u64) -> [u8; 32] {
    let mut digest = [0u8; 32];
    let n = signature.len().min(32);
    digest[..n].copy_from_slice(&signature[..n]);
    for _ in 0..rounds {
        digest = Sha256::digest(std::hint::black_box(digest)).into();
    }
    digest
}

/// Executes microblocks sent to it (`sig == index`) against the shared store and sends
/// their execution records to poh (which tells pack the microblock is done).
pub struct Bank {
    index: u64,
    shared: Arc<Shared>,
    buf: Vec<u8>,
    audit: bool,
    extra_work_per_tx: u64,
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
            extra_work_per_tx: 0,
            stats: BankStats::default(),
        }
    }

    /// The same bank doing `extra_work` of `rounds` hashes for every transaction it
    /// executes or fails, inside the timed execution (it shows in `stage_forged_s`).
    pub fn with_extra_work(mut self, rounds: u64) -> Bank {
        self.extra_work_per_tx = rounds;
        self
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
        let count = microblock_count(payload);
        let t0 = Instant::now();
        let mut at = 4;
        self.buf.clear();
        self.buf.extend_from_slice(&(count as u32).to_le_bytes());
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
            if self.extra_work_per_tx > 0 {
                let d = extra_work(&tx.signature, self.extra_work_per_tx);
                self.stats.extra_digest ^= u64_at(&d, 0);
                self.stats.extra_hashes += self.extra_work_per_tx;
            }
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
        // Pack may release the microblock's locks now, unless poh is to do it once it
        // recorded it (`record_order`, see `Poh`). Release: every balance written above
        // is visible to the bank pack sends a conflicting transaction to next (with
        // `record_order`, through the link's release and poh's).
        if !self.shared.record_order {
            self.shared.bank_done[self.index as usize].fetch_add(1, Ordering::Release);
        }
        FragOutcome::Done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_work_is_that_many_chained_hashes() {
        let sig = [7u8; SIG_LEN];
        let start: [u8; 32] = sig[..32].try_into().unwrap();
        assert_eq!(extra_work(&sig, 0), start);
        let mut d = start;
        for n in 1..=5 {
            d = Sha256::digest(d).into();
            assert_eq!(extra_work(&sig, n), d, "round {n}");
        }
        // Another signature, other digests: the work depends on the transaction.
        assert_ne!(extra_work(&[8u8; SIG_LEN], 3), extra_work(&sig, 3));
    }
}
