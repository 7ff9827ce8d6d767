//! The load generator tile.

use super::*;

/// What benchg did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BenchgStats {
    /// Transactions published (each one is accounted for by a fate).
    pub generated: u64,
    /// Published with a corrupted signature.
    pub invalid: u64,
    /// Published as a repeat of a recent transaction.
    pub duplicates: u64,
    /// Signed before the run.
    pub presigned: u64,
    /// Signed during the run (after the pool ran out).
    pub signed_live: u64,
    /// When the pre-signed pool ran out, ns since the epoch.
    pub pool_exhausted_ns: Option<u64>,
    /// Signature tags of the corrupted transactions (audit runs only).
    pub invalid_tags: Vec<u128>,
}

/// How far behind its schedule the generator may fall and still catch up: twice the
/// longest sleep of the built-in workloads' idle tiles (1 ms). A tile that sleeps past
/// several send times sends what it owes on waking, so the offered rate holds; a stall
/// longer than this is forgiven rather than sent as one burst.
const CATCH_UP_NS: u64 = 2_000_000;

/// The send time after one sent at `now` whose due time was `due`: one interval later,
/// but never more than [`CATCH_UP_NS`] (or one interval, if longer) behind `now`.
fn next_due(due: u64, now: u64, interval: u64) -> u64 {
    due.max(now.saturating_sub(interval.max(CATCH_UP_NS))) + interval
}

/// Generates and signs transactions.
pub struct Benchg {
    cfg: LoadConfig,
    genesis: Arc<Genesis>,
    shared: Arc<Shared>,
    rng: Pcg64,
    nonce: u64,
    pool: VecDeque<Vec<u8>>,
    recent: VecDeque<Vec<u8>>,
    buf: Vec<u8>,
    interval_ns: u64,
    next_due_ns: u64,
    audit: bool,
    /// Counters.
    pub stats: BenchgStats,
}

impl Benchg {
    /// A generator; signs `cfg.presign` transactions now, spread over the CPUs (before
    /// the measured window, so signing does not compete with the tiles).
    pub fn new(
        cfg: &LoadConfig,
        genesis: Arc<Genesis>,
        shared: Arc<Shared>,
        seed: u64,
        audit: bool,
    ) -> Benchg {
        let mut b = Benchg {
            cfg: cfg.clone(),
            genesis,
            shared,
            rng: Pcg64::seed_from_u64(seed),
            nonce: 0,
            pool: VecDeque::new(),
            recent: VecDeque::with_capacity(64),
            buf: Vec::with_capacity(MAX_ENV),
            interval_ns: if cfg.rate == 0 {
                0
            } else {
                1_000_000_000 / cfg.rate.max(1)
            },
            next_due_ns: 0,
            audit,
            stats: BenchgStats::default(),
        };
        let msgs: Vec<(usize, Message)> = (0..cfg.presign).map(|_| b.message()).collect();
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .max(1);
        let chunk = msgs.len().div_ceil(threads).max(1);
        let keys = &b.genesis.keys;
        let signed: Vec<Vec<u8>> = std::thread::scope(|s| {
            let hs: Vec<_> = msgs
                .chunks(chunk)
                .map(|c| {
                    s.spawn(move || c.iter().map(|(k, m)| m.sign(&keys[*k])).collect::<Vec<_>>())
                })
                .collect();
            hs.into_iter()
                .flat_map(|h| h.join().expect("signing thread"))
                .collect()
        });
        b.stats.presigned = signed.len() as u64;
        b.pool = signed.into();
        b
    }

    fn account(&mut self, hot: bool) -> u32 {
        let n = if hot {
            self.cfg.hot_accounts
        } else {
            self.genesis.keys.len()
        };
        self.rng.gen_range(0..n as u32)
    }

    /// The next fresh message and its signer's account.
    fn message(&mut self) -> (usize, Message) {
        let hot = self.rng.gen_bool(self.cfg.contention);
        let from = self.account(hot);
        let mut to = self.account(hot);
        while to == from {
            to = self.account(hot);
        }
        self.nonce += 1;
        let mut recent_hash = [0u8; 32];
        recent_hash[..8].copy_from_slice(&self.nonce.to_le_bytes());
        let fee = self.rng.gen_range(self.cfg.fee_min..=self.cfg.fee_max);
        let w = |index| AccountRef {
            index,
            writable: true,
        };
        let (kind, accounts) = if self.rng.gen_bool(self.cfg.script_fraction) {
            let read = AccountRef {
                index: self.account(false),
                writable: false,
            };
            let read = if read.index == from || read.index == to {
                None
            } else {
                Some(read)
            };
            let mut a = vec![w(from), w(to)];
            a.extend(read);
            (
                TxKind::Script {
                    budget: self.cfg.script_budget,
                },
                a,
            )
        } else {
            (
                TxKind::Transfer {
                    amount: self.rng.gen_range(1..=1_000),
                },
                vec![w(from), w(to)],
            )
        };
        let m = Message {
            signer: self.genesis.pubkeys[from as usize],
            recent_hash,
            fee,
            kind,
            accounts,
        };
        (from as usize, m)
    }

    fn next_tx(&mut self) -> Vec<u8> {
        if let Some(t) = self.pool.pop_front() {
            return t;
        }
        if self.stats.pool_exhausted_ns.is_none() {
            self.stats.pool_exhausted_ns = Some(self.shared.now_ns());
        }
        self.stats.signed_live += 1;
        let (k, m) = self.message();
        m.sign(&self.genesis.keys[k])
    }
}

impl Tile for Benchg {
    fn after_credit(&mut self, out: &mut Outputs) -> bool {
        let now = self.shared.now_ns();
        if self.interval_ns != 0 {
            if now < self.next_due_ns {
                return false;
            }
            self.next_due_ns = next_due(self.next_due_ns, now, self.interval_ns);
        }
        let tx = if !self.recent.is_empty() && self.rng.gen_bool(self.cfg.duplicate_fraction) {
            self.stats.duplicates += 1;
            let i = self.rng.gen_range(0..self.recent.len());
            self.recent[i].clone()
        } else {
            let mut t = self.next_tx();
            if self.rng.gen_bool(self.cfg.invalid_fraction) {
                t[self.rng.gen_range(0..SIG_LEN)] ^= 1 << self.rng.gen_range(0..8);
                self.stats.invalid += 1;
                if self.audit {
                    self.stats.invalid_tags.push(tx::sig_tag(&t));
                }
            }
            if self.recent.len() == 64 {
                self.recent.pop_front();
            }
            self.recent.push_back(t.clone());
            t
        };
        let id = out.producer(0).seq();
        seal(&mut self.buf, id, now, &tx);
        if out.publish(0, id, &self.buf, now as u32).is_ok() {
            self.stats.generated += 1;
        }
        true
    }

    fn after_frag(&mut self, _: usize, _: &FragMeta, _: &[u8], _: &mut Outputs) -> FragOutcome {
        FragOutcome::Done
    }
}

#[cfg(test)]
mod pacing_tests {
    use super::*;

    /// Sends due at 10,000/s from a tile that wakes every `wake` ns for 1 s of fake time.
    fn sent_in_one_second(wake: u64) -> u64 {
        let interval = 100_000;
        let (mut due, mut sent) = (0, 0);
        let mut now = 0;
        while now < 1_000_000_000 {
            while now >= due {
                sent += 1;
                due = next_due(due, now, interval);
            }
            now += wake;
        }
        sent
    }

    #[test]
    fn a_generator_that_oversleeps_still_offers_its_rate() {
        // Waking every 250 us or 1 ms (a backing-off tile) must not lose the sends that
        // fell due while it slept: keeping one interval of debt lost 20% and 80% of them.
        for wake in [50_000, 250_000, 1_000_000] {
            let sent = sent_in_one_second(wake);
            assert!((9_990..=10_010).contains(&sent), "wake {wake} ns: {sent}");
        }
    }

    #[test]
    fn a_stall_is_forgiven_beyond_the_catch_up_bound() {
        let interval = 100_000;
        let mut due = 1_000_000;
        let now = due + 100_000_000; // woke 100 ms late
        let mut burst = 0;
        while now >= due {
            burst += 1;
            due = next_due(due, now, interval);
        }
        assert_eq!(burst, 1 + CATCH_UP_NS / interval);
        // At a low rate one interval of debt is the bound, as before.
        assert_eq!(next_due(0, 5_000_000_000, 1_000_000_000), 5_000_000_000);
    }
}
