//! Genesis, the account store and the execution kernel the bank tiles run.
//!
//! The store is a flat array of balances, one per genesis account, shared by every bank
//! tile. Pack never lets two transactions that write one account run at once, so each
//! balance is read and written by one bank at a time: the atomics are only there so that
//! sharing is safe Rust; they use relaxed loads and stores (not read-modify-write), so a
//! scheduling bug shows up as a broken conservation check instead of being masked.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use ed25519_dalek::SigningKey;
use sha2::{Digest, Sha256};

use crate::tx::{self, AccountRef, Message, TxKind};

/// Default number of funded accounts (`fund_initial_accounts`).
pub const DEFAULT_ACCOUNTS: usize = 1024;
/// Default starting balance of each account.
pub const DEFAULT_BALANCE: u64 = 1_000_000_000_000;

/// The funded accounts at the start of a run.
#[derive(Debug, Clone)]
pub struct Genesis {
    /// Signing keys, one per account (benchg signs with them).
    pub keys: Vec<SigningKey>,
    /// Public keys, one per account (the bank checks the signer against them).
    pub pubkeys: Vec<[u8; 32]>,
    /// Starting balance of each account.
    pub balance: u64,
    /// Start of the PoH chain: SHA-256 over the seed and every public key.
    pub hash: [u8; 32],
}

/// Funds `accounts` accounts with `balance` each, keys derived from `seed`.
pub fn fund_initial_accounts(accounts: usize, balance: u64, seed: u64) -> Genesis {
    let keys: Vec<SigningKey> = (0..accounts as u64)
        .map(|i| {
            let mut h = Sha256::new();
            h.update(b"dyno-genesis-key");
            h.update(seed.to_le_bytes());
            h.update(i.to_le_bytes());
            SigningKey::from_bytes(&h.finalize().into())
        })
        .collect();
    let pubkeys: Vec<[u8; 32]> = keys.iter().map(|k| k.verifying_key().to_bytes()).collect();
    let mut h = Sha256::new();
    h.update(b"dyno-genesis");
    h.update(seed.to_le_bytes());
    h.update(balance.to_le_bytes());
    for p in &pubkeys {
        h.update(p);
    }
    Genesis {
        keys,
        pubkeys,
        balance,
        hash: h.finalize().into(),
    }
}

impl Genesis {
    /// Total of all balances at genesis.
    pub fn total(&self) -> u128 {
        self.balance as u128 * self.keys.len() as u128
    }
}

/// Balances of the genesis accounts.
#[derive(Debug)]
pub struct AccountStore {
    balances: Vec<AtomicU64>,
    pubkeys: Vec<[u8; 32]>,
    /// The sum of the balances the store was made with. Execution never raises it
    /// (transfers move value, fees leave), so while it fits in a u64 no credit can
    /// overflow an account: a transfer's outcome is then decided by its payer alone.
    supply: u128,
}

impl AccountStore {
    /// The store at genesis.
    pub fn new(g: &Genesis) -> AccountStore {
        AccountStore {
            balances: (0..g.keys.len())
                .map(|_| AtomicU64::new(g.balance))
                .collect(),
            pubkeys: g.pubkeys.clone(),
            supply: g.total(),
        }
    }

    /// Number of accounts.
    pub fn len(&self) -> usize {
        self.balances.len()
    }

    /// True without accounts.
    pub fn is_empty(&self) -> bool {
        self.balances.is_empty()
    }

    /// Balance of account `i`.
    pub fn balance(&self, i: usize) -> u64 {
        self.balances[i].load(Ordering::Relaxed)
    }

    /// Sum of all balances.
    pub fn total(&self) -> u128 {
        self.balances
            .iter()
            .map(|b| b.load(Ordering::Relaxed) as u128)
            .sum()
    }

    /// Every balance, in account order: a snapshot a node keeps per block so that a
    /// fork switch restores the state of the new parent instead of undoing transactions.
    pub fn balances(&self) -> Vec<u64> {
        self.balances
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .collect()
    }

    /// The store of genesis `g` with `balances` restored (from [`AccountStore::balances`]);
    /// none when the count differs from the genesis accounts.
    pub fn restore(g: &Genesis, balances: &[u64]) -> Option<AccountStore> {
        let mut supply = 0u128;
        (balances.len() == g.pubkeys.len()).then(|| AccountStore {
            balances: balances
                .iter()
                .map(|&b| {
                    supply += b as u128;
                    AtomicU64::new(b)
                })
                .collect(),
            pubkeys: g.pubkeys.clone(),
            supply,
        })
    }

    /// True when no credit can overflow an account (see `supply`): [`debit`] then
    /// decides a transfer, and its credit is a plain addition.
    pub(crate) fn credits_cannot_overflow(&self) -> bool {
        self.supply <= u64::MAX as u128
    }

    /// Adds `amount` to account `i`, which [`credits_cannot_overflow`] says fits.
    pub(crate) fn credit(&self, i: usize, amount: u64) {
        self.set(i, self.balance(i) + amount);
    }

    /// Takes `takes` from account `i` and gives it `gets`: the balance must cover
    /// `takes`, and the result fit (which [`credits_cannot_overflow`] says it does).
    pub(crate) fn take_and_give(&self, i: usize, takes: u64, gets: u64) {
        self.set(i, self.balance(i) - takes + gets);
    }

    /// SHA-256 over every balance in account order (little-endian): two nodes that
    /// replayed the same blocks from the same genesis agree on it, one differing balance
    /// changes it.
    pub fn state_hash(&self) -> [u8; 32] {
        state_hash_of(&self.balances())
    }

    fn set(&self, i: usize, v: u64) {
        self.balances[i].store(v, Ordering::Relaxed);
    }
}

/// The state hash of a balance snapshot (see [`AccountStore::state_hash`]).
pub fn state_hash_of(balances: &[u64]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"dyno-state");
    for b in balances {
        h.update(b.to_le_bytes());
    }
    h.finalize().into()
}

/// Result of executing one transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Executed; fee charged.
    Executed,
    /// Failed; `fee_charged` is what was taken from the payer (the fee, or 0 when the
    /// payer could not pay it or the transaction could not be loaded).
    Failed {
        /// Why.
        reason: FailReason,
        /// Fee taken.
        fee_charged: u64,
    },
}

/// Why execution failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailReason {
    /// An account index outside the account space, or the signer is not the payer.
    BadAccount,
    /// The payer cannot pay the fee.
    FeeUnpaid,
    /// The payer cannot cover the transfer.
    InsufficientFunds,
    /// The script's computation ended in its abort condition.
    ScriptAborted,
}

fn script(budget: u64, seed: u64, reads: u64) -> u64 {
    let mut x = seed ^ reads;
    for i in 0..budget {
        x = (x ^ (x >> 31))
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(i);
    }
    x
}

/// Executes `m` (whose signature `sig_seed` summarizes) against `store`; returns the
/// outcome and the fee collected (the fee of a successful transaction included).
pub fn execute(store: &AccountStore, m: &Message, sig_seed: u64) -> (Outcome, u64) {
    let (done, credit) = debit(store, m, sig_seed);
    let Some((to, amount)) = credit else {
        return done;
    };
    match store.balance(to).checked_add(amount) {
        Some(v) => {
            store.set(to, v);
            done
        }
        None => {
            // The payer gets the amount back and keeps paying the fee.
            let payer = m.accounts[0].index as usize;
            store.set(payer, store.balance(payer) + amount);
            let o = Outcome::Failed {
                reason: FailReason::InsufficientFunds,
                fee_charged: m.fee,
            };
            (o, m.fee)
        }
    }
}

/// True when `m` can be loaded: every account it names is inside the account space and
/// its signer is the payer's key. One that cannot fails with [`FailReason::BadAccount`],
/// charged nothing and touching nothing, whatever the balances.
pub(crate) fn loadable(store: &AccountStore, m: &Message) -> bool {
    let n = store.len();
    m.accounts.iter().all(|a| (a.index as usize) < n)
        && store.pubkeys[m.accounts[0].index as usize] == m.signer
}

/// [`execute`] up to a transfer's credit: everything but the destination's balance, and
/// the credit still to make (account, amount) when the transfer went through. Where no
/// credit can overflow ([`AccountStore::credits_cannot_overflow`]) the outcome is then
/// final and the credit a plain addition any thread that owns the destination makes.
pub(crate) fn debit(
    store: &AccountStore,
    m: &Message,
    sig_seed: u64,
) -> ((Outcome, u64), Option<(usize, u64)>) {
    if !loadable(store, m) {
        let o = Outcome::Failed {
            reason: FailReason::BadAccount,
            fee_charged: 0,
        };
        return ((o, 0), None);
    }
    let payer = m.accounts[0].index as usize;
    let bal = store.balance(payer);
    if bal < m.fee {
        let o = Outcome::Failed {
            reason: FailReason::FeeUnpaid,
            fee_charged: 0,
        };
        return ((o, 0), None);
    }
    let bal = bal - m.fee;
    store.set(payer, bal);
    let failed = |reason| {
        (
            Outcome::Failed {
                reason,
                fee_charged: m.fee,
            },
            m.fee,
        )
    };
    match m.kind {
        TxKind::Transfer { amount } => {
            if bal < amount {
                return (failed(FailReason::InsufficientFunds), None);
            }
            store.set(payer, bal - amount);
            let to = m.accounts[1].index as usize;
            ((Outcome::Executed, m.fee), Some((to, amount)))
        }
        TxKind::Script { budget } => {
            let reads = m
                .accounts
                .iter()
                .map(|a: &AccountRef| store.balance(a.index as usize))
                .fold(0u64, u64::wrapping_add);
            if script(budget, sig_seed, reads).is_multiple_of(16) {
                return (failed(FailReason::ScriptAborted), None);
            }
            ((Outcome::Executed, m.fee), None)
        }
    }
}

/// The figure of the execution benchmark.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExecutionBench {
    /// Transfers executed per repetition.
    pub transfers: usize,
    /// Nanoseconds per executed transfer, one value per repetition.
    pub ns_per_transfer: f64,
}

/// Builds `count` signed, decodable transfers between `accounts` funded accounts.
pub fn transfer_block(g: &Genesis, count: usize, seed: u64) -> Vec<Vec<u8>> {
    sign_transfers_with(g, count, seed, |i| Sha256::digest(i.to_le_bytes()).into())
}

/// Signs `count` transfers between distinct funded accounts of `g`, the pairs drawn by an
/// xorshift walk from `seed`, amounts 1..=100; `recent_hash(i)` is transaction `i`'s
/// recent hash, which is what makes transactions of different callers or runs distinct.
/// Signing (the cost) is spread over every core, in contiguous chunks: the result is
/// the same, transaction for transaction, as signing them one after another.
pub fn sign_transfers_with(
    g: &Genesis,
    count: usize,
    seed: u64,
    recent_hash: impl Fn(u64) -> [u8; 32] + Sync,
) -> Vec<Vec<u8>> {
    let n = g.keys.len() as u64;
    let mut s = seed | 1;
    // The walk is sequential and cheap; the pairs are drawn first.
    let pairs: Vec<(u64, u64)> = (0..count)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let from = s % n;
            (from, (from + 1 + (s >> 32) % (n - 1)) % n)
        })
        .collect();
    let sign = |i: u64, (from, to): (u64, u64)| {
        Message {
            signer: g.pubkeys[from as usize],
            recent_hash: recent_hash(i),
            fee: 5,
            kind: TxKind::Transfer {
                amount: 1 + i % 100,
            },
            accounts: vec![
                AccountRef {
                    index: from as u32,
                    writable: true,
                },
                AccountRef {
                    index: to as u32,
                    writable: true,
                },
            ],
        }
        .sign(&g.keys[from as usize])
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    if threads == 1 || count < SIGN_PARALLEL_FROM {
        return (0..count).map(|i| sign(i as u64, pairs[i])).collect();
    }
    let size = count.div_ceil(threads);
    std::thread::scope(|sc| {
        let sign = &sign;
        let handles: Vec<_> = pairs
            .chunks(size)
            .enumerate()
            .map(|(c, chunk)| {
                sc.spawn(move || {
                    chunk
                        .iter()
                        .enumerate()
                        .map(|(j, &p)| sign((c * size + j) as u64, p))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a signing thread panicked"))
            .collect()
    })
}

/// Transfers below which [`sign_transfers_with`] signs on the calling thread.
const SIGN_PARALLEL_FROM: usize = 4096;

/// Times the bank's per-transaction work (decode, account checks, fee, debit and credit)
/// over a block of `block` signed transfers among `accounts` funded accounts; signatures
/// are made before timing and not verified here (that is the verify tile's cost).
/// Returns ns per transfer. `accounts` must be at least 2.
pub fn execution_bench(accounts: usize, block: usize) -> ExecutionBench {
    let g = fund_initial_accounts(accounts.max(2), DEFAULT_BALANCE, 1);
    let txs = transfer_block(&g, block, 42);
    let store = AccountStore::new(&g);
    let start = Instant::now();
    let mut fees = 0u64;
    for b in &txs {
        let t = std::hint::black_box(tx::decode(b)).expect("well formed");
        let seed = u64::from_le_bytes(t.signature[..8].try_into().expect("8"));
        fees = fees.wrapping_add(execute(&store, &t.message, seed).1);
    }
    std::hint::black_box(fees);
    let ns = start.elapsed().as_nanos() as f64;
    ExecutionBench {
        transfers: block,
        ns_per_transfer: ns / block.max(1) as f64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signing_on_every_core_gives_the_sequential_transactions() {
        let g = fund_initial_accounts(16, 1_000, 3);
        let count = SIGN_PARALLEL_FROM + 37; // a ragged last chunk
        let parallel = transfer_block(&g, count, 11);
        // Below the threshold the same walk is signed on one thread: the parallel
        // result's first transactions (chunk boundaries among them) must be those.
        let sequential = transfer_block(&g, SIGN_PARALLEL_FROM - 1, 11);
        assert_eq!(parallel.len(), count);
        assert_eq!(parallel[..sequential.len()], sequential[..]);
        assert!(parallel.iter().all(|t| tx::verify(t)));
        let mut tags: Vec<u128> = parallel.iter().map(|t| tx::sig_tag(t)).collect();
        tags.sort_unstable();
        tags.dedup();
        assert_eq!(tags.len(), count, "every transaction distinct");
    }

    #[test]
    fn transfers_conserve_balances_plus_fees() {
        let g = fund_initial_accounts(8, 1_000, 3);
        let store = AccountStore::new(&g);
        let mut fees = 0u128;
        let mut failed = 0;
        for b in transfer_block(&g, 500, 9) {
            let t = tx::decode(&b).unwrap();
            let (o, fee) = execute(&store, &t.message, 0);
            fees += fee as u128;
            failed += matches!(o, Outcome::Failed { .. }) as u32;
        }
        assert_eq!(store.total() + fees, g.total());
        assert!(
            failed > 0,
            "balances of 1000 must run out for some of 500 transfers"
        );
    }

    #[test]
    fn a_signer_that_is_not_the_payer_is_refused_without_a_fee() {
        let g = fund_initial_accounts(4, 1_000, 3);
        let store = AccountStore::new(&g);
        let mut t = tx::decode(&transfer_block(&g, 1, 1)[0]).unwrap();
        t.message.signer = g.pubkeys[(t.message.accounts[0].index as usize + 1) % 4];
        let (o, fee) = execute(&store, &t.message, 0);
        assert!(matches!(
            o,
            Outcome::Failed {
                reason: FailReason::BadAccount,
                fee_charged: 0
            }
        ));
        assert_eq!(fee, 0);
        assert_eq!(store.total(), g.total());
    }

    #[test]
    fn a_restored_snapshot_has_the_same_state_hash_and_a_changed_balance_does_not() {
        let g = fund_initial_accounts(8, 1_000, 3);
        let store = AccountStore::new(&g);
        let at_genesis = store.state_hash();
        for b in transfer_block(&g, 5, 9) {
            execute(&store, &tx::decode(&b).unwrap().message, 0);
        }
        let snap = store.balances();
        let restored = AccountStore::restore(&g, &snap).unwrap();
        assert_eq!(restored.state_hash(), store.state_hash());
        assert_ne!(store.state_hash(), at_genesis);
        let mut changed = snap.clone();
        changed[7] ^= 1;
        assert_ne!(state_hash_of(&changed), store.state_hash());
        assert!(AccountStore::restore(&g, &snap[..7]).is_none());
    }

    #[test]
    fn execution_bench_executes_its_block() {
        let r = execution_bench(64, 200);
        assert_eq!(r.transfers, 200);
        assert!(r.ns_per_transfer.is_finite());
    }
}
