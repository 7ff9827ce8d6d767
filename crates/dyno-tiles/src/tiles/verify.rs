//! The signature verification tiles.

use super::*;

/// What one verify tile did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VerifyStats {
    /// Signatures that checked out (forwarded).
    pub verified: u64,
    /// Invalid signatures or malformed transactions (dropped).
    pub invalid: u64,
    /// Own-share transactions lost to overrun (unreliable ingress).
    pub overrun: u64,
    /// Batches with a bad signature in them (checked again one by one to find it).
    pub batch_fallbacks: u64,
    /// Ids of dropped transactions (audit runs only).
    pub invalid_ids: Vec<u64>,
    /// Ids of transactions lost to overrun (audit runs only, known once a later frag
    /// of the same share arrives).
    pub overrun_ids: Vec<u64>,
}

/// Verifies Ed25519 signatures of its share (`seq % count == index`) of the ingress.
pub struct Verify {
    index: u64,
    count: u64,
    batch: usize,
    keys: SignerKeys,
    pending: Vec<Vec<u8>>,
    pending_since: Option<Instant>,
    /// Next own-share sequence number expected; frags of the share skipped are lost.
    next_own: u64,
    /// Sequence number accepted in `before_frag` and not yet seen in `after_frag`.
    claimed: Option<u64>,
    audit: bool,
    /// Counters.
    pub stats: VerifyStats,
}

impl Verify {
    /// Verify tile `index` of `count`, verifying `batch` signatures at a time.
    pub fn new(index: usize, count: usize, batch: usize, audit: bool) -> Verify {
        Verify {
            index: index as u64,
            count: count as u64,
            batch: batch.max(1),
            keys: SignerKeys::new(),
            pending: Vec::new(),
            pending_since: None,
            next_own: index as u64,
            claimed: None,
            audit,
            stats: VerifyStats::default(),
        }
    }

    fn lose(&mut self, from: u64, to: u64) {
        let mut s = from;
        while s < to {
            self.stats.overrun += 1;
            if self.audit {
                self.stats.overrun_ids.push(s);
            }
            s += self.count;
        }
    }

    /// Own-share sequence numbers before `seq` never seen: lost at ingress. Call after
    /// the run with the consumer's final position.
    pub fn settle(&mut self, seq: u64) {
        if let Some(c) = self.claimed.take() {
            self.lose(c, c + 1);
        }
        let first = self.next_own;
        let end = seq.max(first);
        self.lose(first, end);
        self.next_own =
            end + (self.count - (end + self.count - self.index) % self.count) % self.count;
    }

    fn reject(&mut self, env: &[u8]) {
        self.stats.invalid += 1;
        if self.audit {
            self.stats.invalid_ids.push(u64_at(env, 0));
        }
    }

    fn forward(&mut self, env: &[u8], out: &mut Outputs) {
        self.stats.verified += 1;
        // Credits for `burst` frags were checked before this hook ran.
        let _ = out.publish(0, u64_at(env, 0), env, u64_at(env, 8) as u32);
    }

    fn check_one(&mut self, env: &[u8], out: &mut Outputs) {
        let ok = match open_envelope(env) {
            Some((_, _, t)) if tx::decode(t).is_ok() => tx::verify_cached(t, &mut self.keys),
            _ => false,
        };
        if ok {
            self.forward(env, out);
        } else {
            self.reject(env);
        }
    }

    fn flush(&mut self, out: &mut Outputs) {
        let batch = std::mem::take(&mut self.pending);
        self.pending_since = None;
        // Malformed transactions are refused before the batch; the rest are checked
        // as one batch by the node's rule (ZIP 215, `dyno_txn::sig`), whose per-item
        // verdicts are single verification's.
        let (parsed, malformed): (Vec<&Vec<u8>>, Vec<&Vec<u8>>) = batch
            .iter()
            .partition(|env| open_envelope(env).is_some_and(|(_, _, t)| tx::decode(t).is_ok()));
        for env in malformed {
            self.reject(env);
        }
        let txs: Vec<&[u8]> = parsed.iter().map(|env| &env[ENV_HEADER..]).collect();
        let mut verdicts = Vec::with_capacity(txs.len());
        tx::verify_many(&txs, &mut verdicts);
        if verdicts.contains(&false) {
            self.stats.batch_fallbacks += 1;
        }
        for (env, ok) in parsed.into_iter().zip(verdicts) {
            if ok {
                self.forward(env, out);
            } else {
                self.reject(env);
            }
        }
    }
}

impl Tile for Verify {
    fn burst(&self) -> u64 {
        self.batch as u64
    }

    fn after_credit(&mut self, out: &mut Outputs) -> bool {
        match self.pending_since {
            Some(t) if t.elapsed().as_micros() >= 200 => {
                self.flush(out);
                true
            }
            _ => false,
        }
    }

    fn before_frag(&mut self, _: usize, meta: &FragMeta) -> bool {
        if meta.seq % self.count != self.index {
            return false;
        }
        if let Some(c) = self.claimed.take() {
            self.lose(c, c + 1);
        }
        let next = self.next_own;
        self.lose(next, meta.seq);
        self.next_own = meta.seq + self.count;
        self.claimed = Some(meta.seq);
        true
    }

    fn after_frag(
        &mut self,
        _: usize,
        _: &FragMeta,
        payload: &[u8],
        out: &mut Outputs,
    ) -> FragOutcome {
        self.claimed = None;
        if self.batch == 1 {
            self.check_one(payload, out);
        } else {
            if payload.len() < ENV_HEADER {
                self.reject(payload);
                return FragOutcome::Filtered;
            }
            self.pending.push(payload.to_vec());
            self.pending_since.get_or_insert_with(Instant::now);
            if self.pending.len() >= self.batch {
                self.flush(out);
            }
        }
        FragOutcome::Done
    }
}
