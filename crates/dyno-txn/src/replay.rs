//! Replaying a block's transactions on several threads with the result of one.
//!
//! A follower must reach the leader's state hash by executing the block's transactions
//! in the block's order. Most of a block's outcomes do not depend on that order: a
//! transfer whose payer can pay all it pays in the block (fees and amounts, summed over
//! the block) from its balance before the block executes wherever it stands in it,
//! since credits only add (and cannot overflow while the store's total supply fits a
//! u64, which execution never raises). Such a payer's balance ends at its start, less
//! what it pays, plus what it gets. Only the rest needs the block's order. [`replay`]
//! therefore works in two passes:
//!
//! 1. **Tally, in parallel.** The block is cut in contiguous chunks, one per thread;
//!    each thread decodes its chunk, writes each transaction's result as it is when its
//!    payer covers the block (a transfer executes and pays its fee; one that cannot be
//!    loaded fails, whatever the balances), and sums per account what its transfers
//!    take and give. No thread waits on another.
//! 2. **The ordered remainder, on the calling thread.** An account is *ordered* when
//!    the block's takes from it exceed its balance, when a script names it (a script's
//!    outcome reads its accounts' balances as the block's order leaves them), or when a
//!    sum does not fit a u64. The calling thread walks the block in order and executes,
//!    with the sequential kernel, every transaction whose payer is ordered, and applies
//!    in place every credit to an ordered account; a transfer to an unordered account
//!    that failed takes its amount back out of that account's sum. Then every unordered
//!    account gets its sums. A block of payers who can pay has no ordered account, and
//!    its second pass is one check per account.
//!
//! The result equals sequential execution's exactly, transaction by transaction: an
//! unordered account is debited only by its own transfers (scripts and ordered payers
//! debit ordered accounts), which all succeed, so its outcome and final balance are
//! the tally's; an ordered account sees every debit and credit in block order. A
//! property test checks it over random blocks with hot accounts, conflicts, scripts,
//! short balances and failing transactions. A store whose supply does not fit a u64
//! replays sequentially.
//!
//! The tally runs on a pool of threads kept between blocks ([`pool`]), not threads
//! started per block: Linux starts a new thread on its parent's core, and one whose
//! parent keeps that core busy waits for it (a replay that took a chunk on the calling
//! thread ran its two chunks one after the other on a 2-vCPU VM). Each thread keeps its
//! chunk's results, a word per transaction ([`Replayed`]): the calling thread neither
//! fills nor copies a block's results.

use crate::bank::{debit, execute, loadable, AccountStore, FailReason, Outcome};
use crate::tx::{self, Tx, TxKind};

/// Most threads a replay uses.
pub const MAX_REPLAY_THREADS: usize = 256;

/// Transactions per thread below which fewer threads are used: starting a thread costs
/// about as much as replaying a few hundred transfers.
pub const MIN_TXS_PER_THREAD: usize = 256;

/// The replay threads a node uses when its config does not say: one per core. Callers
/// that share a machine between many nodes (a cluster) pass their own number instead.
pub fn default_replay_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(MAX_REPLAY_THREADS)
}

/// The threads a replay of `n` transactions uses when allowed `threads`: at least one,
/// at most one per [`MIN_TXS_PER_THREAD`] transactions.
pub fn threads_for(n: usize, threads: usize) -> usize {
    threads
        .clamp(1, MAX_REPLAY_THREADS)
        .min(n / MIN_TXS_PER_THREAD)
        .max(1)
}

/// One replayed transaction: its outcome and the fee collected (that of a successful
/// transaction included), as [`execute`] returns them.
pub type Executed = (Outcome, u64);

/// The seed a transaction's script draws from: the first 8 bytes of its signature.
pub fn seed_of(t: &Tx) -> u64 {
    u64::from_le_bytes(t.signature[..8].try_into().expect("8 bytes"))
}

/// The index of the first transaction that does not decode, checked on up to `threads`
/// threads (the same index for any number of threads); nothing decoded is kept.
pub fn first_undecodable<B: AsRef<[u8]> + Sync>(raw: &[B], threads: usize) -> Option<usize> {
    first_undecodable_on(raw, threads_for(raw.len(), threads))
}

/// [`first_undecodable`] on exactly `threads` threads (at least one).
fn first_undecodable_on<B: AsRef<[u8]> + Sync>(raw: &[B], threads: usize) -> Option<usize> {
    let check = |chunk: &[B], offset: usize| {
        chunk
            .iter()
            .position(|b| tx::decode(b.as_ref()).is_err())
            .map(|i| offset + i)
    };
    if threads <= 1 || raw.is_empty() {
        return check(raw, 0);
    }
    let size = raw.len().div_ceil(threads);
    // Chunks are in block order: the first one that failed has the lowest index.
    on_pool(raw.chunks(size).enumerate(), |(c, chunk)| {
        check(chunk, c * size)
    })
    .into_iter()
    .flatten()
    .min()
}

/// Decodes and executes `txs` (encoded) in order on one thread: the reference
/// [`replay`] must equal. The index of the first transaction that does not decode
/// otherwise (the transactions before it were executed: the store is then of no use).
pub fn replay_sequential<B: AsRef<[u8]>>(
    store: &AccountStore,
    txs: &[B],
) -> Result<Vec<Executed>, usize> {
    // Filled in place: a collected `Result` has no size hint, and growing a block's
    // results by doubling cost more than replaying it.
    let mut out = Vec::with_capacity(txs.len());
    for (i, b) in txs.iter().enumerate() {
        let t = tx::decode(b.as_ref()).map_err(|_| i)?;
        out.push(execute(store, &t.message, seed_of(&t)));
    }
    Ok(out)
}

/// A block's results in block order, kept as the threads that made them left them: one
/// vector per chunk (putting them in one vector would cost the calling thread a copy of
/// the whole block's results), a word per transaction (24 bytes each would be three
/// times the memory the threads write).
#[derive(Debug, Clone, Default)]
pub struct Replayed {
    /// Per chunk, a word per transaction (see [`word`]).
    chunks: Vec<Vec<u64>>,
    /// The results whose word is [`WHOLE`], by block index.
    whole: std::collections::BTreeMap<usize, Executed>,
}

/// The word of a result kept whole beside the words (a fee of 2^61 or more).
const WHOLE: u64 = 7;

/// A result in one word: the fee above three bits of outcome; None when it does not fit
/// (a fee of 2^61 or more, or a fee charged that is not the fee collected).
fn word((o, fee): Executed) -> Option<u64> {
    let code = match o {
        Outcome::Executed => 0,
        Outcome::Failed {
            reason,
            fee_charged,
        } if fee_charged == fee => match reason {
            FailReason::BadAccount => 1,
            FailReason::FeeUnpaid => 2,
            FailReason::InsufficientFunds => 3,
            FailReason::ScriptAborted => 4,
        },
        Outcome::Failed { .. } => return None,
    };
    (fee < 1 << 61).then_some(fee << 3 | code)
}

/// The result of a [`word`]; None for [`WHOLE`].
fn unword(w: u64) -> Option<Executed> {
    let fee = w >> 3;
    let failed = |reason| Outcome::Failed {
        reason,
        fee_charged: fee,
    };
    let o = match w & 7 {
        0 => Outcome::Executed,
        1 => failed(FailReason::BadAccount),
        2 => failed(FailReason::FeeUnpaid),
        3 => failed(FailReason::InsufficientFunds),
        4 => failed(FailReason::ScriptAborted),
        _ => return None,
    };
    Some((o, fee))
}

impl Replayed {
    /// Results in block order as one chunk.
    fn of(results: Vec<Executed>) -> Replayed {
        let mut r = Replayed::default();
        let words = results
            .into_iter()
            .enumerate()
            .map(|(i, e)| {
                word(e).unwrap_or_else(|| {
                    r.whole.insert(i, e);
                    WHOLE
                })
            })
            .collect();
        r.chunks.push(words);
        r
    }

    /// Transactions replayed.
    pub fn len(&self) -> usize {
        self.chunks.iter().map(Vec::len).sum()
    }

    /// True when the block had none.
    pub fn is_empty(&self) -> bool {
        self.chunks.iter().all(Vec::is_empty)
    }

    /// Each transaction's result, in block order.
    pub fn iter(&self) -> impl Iterator<Item = Executed> + '_ {
        self.chunks
            .iter()
            .flatten()
            .enumerate()
            .map(|(i, &w)| result_of(w, i, &self.whole))
    }

    /// The results in one vector.
    pub fn into_vec(self) -> Vec<Executed> {
        self.iter().collect()
    }

    /// Sets the result of transaction `i` (chunks of `size`).
    fn set(&mut self, i: usize, size: usize, e: Executed) {
        let w = word(e).unwrap_or_else(|| {
            self.whole.insert(i, e);
            WHOLE
        });
        if w != WHOLE {
            self.whole.remove(&i);
        }
        self.chunks[i / size][i % size] = w;
    }
}

impl PartialEq for Replayed {
    fn eq(&self, other: &Replayed) -> bool {
        self.iter().eq(other.iter())
    }
}

/// The iterator of [`Replayed::into_iter`].
pub struct ReplayedIntoIter {
    words: std::iter::Flatten<std::vec::IntoIter<Vec<u64>>>,
    whole: std::collections::BTreeMap<usize, Executed>,
    at: usize,
}

impl Iterator for ReplayedIntoIter {
    type Item = Executed;
    fn next(&mut self) -> Option<Executed> {
        let w = self.words.next()?;
        self.at += 1;
        Some(result_of(w, self.at - 1, &self.whole))
    }
}

/// Transaction `i`'s result from its word, or from `whole` when the word says it did not
/// fit one.
fn result_of(w: u64, i: usize, whole: &std::collections::BTreeMap<usize, Executed>) -> Executed {
    unword(w).unwrap_or_else(|| whole[&i])
}

impl IntoIterator for Replayed {
    type Item = Executed;
    type IntoIter = ReplayedIntoIter;
    fn into_iter(self) -> ReplayedIntoIter {
        ReplayedIntoIter {
            words: self.chunks.into_iter().flatten(),
            whole: self.whole,
            at: 0,
        }
    }
}

/// Decodes and executes `txs` (encoded) against `store` with the result of
/// [`replay_sequential`], the tally on up to `threads` threads (see the module docs;
/// small blocks use fewer, see [`threads_for`]). A transaction that does not decode: the
/// lowest such index, as [`replay_sequential`] names it (callers check first with
/// [`first_undecodable`]; the store is then of no use).
pub fn replay<B: AsRef<[u8]> + Sync>(
    store: &AccountStore,
    txs: &[B],
    threads: usize,
) -> Result<Replayed, usize> {
    replay_on(store, txs, threads_for(txs.len(), threads)).map(|(done, _)| done)
}

/// [`replay`] on exactly `threads` threads however small the block (at least one):
/// what the differential fuzz target compares with [`replay_sequential`] on blocks too
/// small for [`replay`] to cut.
pub fn replay_on_threads<B: AsRef<[u8]> + Sync>(
    store: &AccountStore,
    txs: &[B],
    threads: usize,
) -> Result<Replayed, usize> {
    replay_on(store, txs, threads.clamp(1, MAX_REPLAY_THREADS)).map(|(done, _)| done)
}

/// [`replay`] on exactly `threads` threads (one: [`replay_sequential`]), with the
/// number of transactions the ordered remainder executed.
fn replay_on<B: AsRef<[u8]> + Sync>(
    store: &AccountStore,
    txs: &[B],
    threads: usize,
) -> Result<(Replayed, usize), usize> {
    if threads <= 1 || txs.is_empty() || !store.credits_cannot_overflow() {
        let done = replay_sequential(store, txs)?;
        return Ok((Replayed::of(done), txs.len()));
    }
    let size = txs.len().div_ceil(threads).max(1);
    // The chunks go to the pool first thing: a sleeping worker takes tens of
    // microseconds to wake, and each chunk's results are made by its own thread.
    let chunks: Vec<Tally> = on_pool(txs.chunks(size).enumerate(), |(c, chunk)| {
        Tally::of(store, chunk, c * size)
    });
    if let Some(i) = chunks.iter().find_map(|t| t.undecodable) {
        // Chunks are in block order: the first that stopped holds the lowest index.
        return Err(i);
    }
    let mut out = Replayed::default();
    let mut chunks = chunks.into_iter();
    let mut total = chunks.next().expect("a block has a chunk");
    out.chunks.push(std::mem::take(&mut total.results));
    out.whole.append(&mut total.whole);
    for mut t in chunks {
        total.absorb(&mut t);
        out.chunks.push(t.results);
        out.whole.append(&mut t.whole);
    }
    let ordered = total.ordered_accounts(store);
    let mut in_order = 0;
    if ordered.iter().any(|&o| o) {
        for (i, raw) in txs.iter().enumerate() {
            // Read in place (every transaction decoded in the tally): the accounts
            // decide whether the order matters, and most transactions are passed by.
            let b = raw.as_ref();
            let word = out.chunks[i / size][i % size];
            if word == NOT_LOADED {
                // Failed whatever the balances; the tally summed nothing for it.
                continue;
            }
            if !ordered[tx::account_in(b, 0) as usize] {
                // Its result is the tally's: a script's payer is ordered, so this is
                // a transfer that executes. One to an ordered account is credited in
                // the block's order.
                debug_assert!(tx::is_transfer(b));
                let to = tx::account_in(b, 1) as usize;
                if ordered[to] {
                    store.credit(to, tx::value_in(b));
                }
                continue;
            }
            in_order += 1;
            let d = tx::decode(b).expect("decoded by the tally");
            let (done, credit) = debit(store, &d.message, seed_of(&d));
            out.set(i, size, done);
            match (credit, d.message.kind) {
                (Some((to, amount)), _) if ordered[to] => store.credit(to, amount),
                (None, TxKind::Transfer { amount }) => {
                    let to = d.message.accounts[1].index as usize;
                    if !ordered[to] {
                        // The tally gave the amount; the transfer failed.
                        total.sums[to][GETS] -= amount;
                    }
                }
                _ => {}
            }
        }
    }
    for &a in &total.touched {
        let a = a as usize;
        if !ordered[a] {
            let [takes, gets] = std::mem::take(&mut total.sums[a]);
            store.take_and_give(a, takes, gets);
        }
    }
    Ok((out, in_order))
}

/// The replay pool: one thread per core ([`default_replay_threads`]), named `replay-N`,
/// started by the first replay on more than one thread and kept for the process (idle
/// threads sleep). A replay on `threads` cuts the block in that many chunks; more chunks
/// than the pool's threads wait their turn. None when its threads could not be started
/// (a process at its thread limit): replays then run their chunks one after the other
/// on the calling thread, with the same results.
pub fn pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: std::sync::OnceLock<Option<rayon::ThreadPool>> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(default_replay_threads())
            .thread_name(|i| format!("replay-{i}"))
            .build()
            .ok()
    })
    .as_ref()
}

/// Runs `work` on each of `parts` on the thread pool and returns the results in order;
/// the calling thread waits (taking a part itself measured no faster on the 2-vCPU VM:
/// docs/benchmarks/node.md, "Tried and not kept").
fn on_pool<P: Send, R: Send>(
    parts: impl Iterator<Item = P>,
    work: impl Fn(P) -> R + Sync,
) -> Vec<R> {
    let Some(pool) = pool() else {
        return parts.map(work).collect();
    };
    let parts: Vec<P> = parts.collect();
    let mut results: Vec<Option<R>> = Vec::new();
    results.resize_with(parts.len(), || None);
    pool.in_place_scope(|s| {
        let work = &work;
        for (p, slot) in parts.into_iter().zip(results.iter_mut()) {
            s.spawn(move |_| *slot = Some(work(p)));
        }
    });
    results
        .into_iter()
        .map(|r| r.expect("every part ran"))
        .collect()
}

/// The [`word`] of a transaction that cannot be loaded (failed, no fee), which the tally
/// writes for no other.
const NOT_LOADED: u64 = 1;

/// Index in [`Tally::sums`] of what a chunk's transfers take from an account.
const TAKES: usize = 0;
/// Index in [`Tally::sums`] of what they give it.
const GETS: usize = 1;

/// What a chunk of a block does to the accounts (see the module docs).
struct Tally {
    /// Per account of the store: what the chunk's transfers take from it (fees and
    /// amounts, [`TAKES`]) and give it ([`GETS`]), assuming every one executes;
    /// `u64::MAX` once a sum does not fit (the account is then ordered). Side by side:
    /// a transfer touches two accounts' sums, a cache line each.
    sums: Vec<[u64; 2]>,
    /// The accounts with a take or a gift, each listed when it first got one (listed
    /// twice when its sums were zero again: a second listing adds nothing, since
    /// merging and applying take the sums out).
    touched: Vec<u32>,
    /// The accounts the chunk's scripts name.
    scripted: Vec<u32>,
    /// Each transaction's result as it is if its payer covers the block, in order
    /// ([`word`]s; those that do not fit in `whole`, by block index).
    results: Vec<u64>,
    whole: std::collections::BTreeMap<usize, Executed>,
    /// The first transaction of the chunk that does not decode (its block index).
    undecodable: Option<usize>,
}

impl Tally {
    /// Tallies `chunk` (transactions `offset..` of the block).
    fn of<B: AsRef<[u8]>>(store: &AccountStore, chunk: &[B], offset: usize) -> Tally {
        let mut t = Tally {
            sums: vec![[0; 2]; store.len()],
            touched: Vec::new(),
            scripted: Vec::new(),
            results: Vec::with_capacity(chunk.len()),
            whole: Default::default(),
            undecodable: None,
        };
        for (i, b) in chunk.iter().enumerate() {
            let Ok(d) = tx::decode(b.as_ref()) else {
                t.undecodable = Some(offset + i);
                break;
            };
            let m = &d.message;
            let payer = m.accounts[0].index;
            let result = if !loadable(store, m) {
                let bad = Outcome::Failed {
                    reason: FailReason::BadAccount,
                    fee_charged: 0,
                };
                (bad, 0)
            } else if let TxKind::Transfer { amount } = m.kind {
                let to = m.accounts[1].index;
                t.add(payer, m.fee.saturating_add(amount), 0);
                t.add(to, 0, amount);
                (Outcome::Executed, m.fee)
            } else {
                // Its result is the ordered remainder's to find.
                t.scripted.extend(m.accounts.iter().map(|a| a.index));
                (Outcome::Executed, 0)
            };
            let w = word(result).unwrap_or_else(|| {
                t.whole.insert(offset + i, result);
                WHOLE
            });
            t.results.push(w);
        }
        t
    }

    /// Adds a take and a gift to `account`'s sums (saturating: see `takes`).
    #[inline]
    fn add(&mut self, account: u32, takes: u64, gets: u64) {
        let a = account as usize;
        let sums = &mut self.sums[a];
        if *sums == [0, 0] {
            self.touched.push(account);
        }
        sums[TAKES] = sums[TAKES].saturating_add(takes);
        sums[GETS] = sums[GETS].saturating_add(gets);
    }

    /// Moves `other`'s sums and script accounts into this one's.
    fn absorb(&mut self, other: &mut Tally) {
        for &a in &other.touched {
            let i = a as usize;
            let [takes, gets] = std::mem::take(&mut other.sums[i]);
            self.add(a, takes, gets);
        }
        self.scripted.append(&mut other.scripted);
    }

    /// Per account of `store`: whether it is ordered (see the module docs).
    fn ordered_accounts(&self, store: &AccountStore) -> Vec<bool> {
        let mut ordered = vec![false; store.len()];
        for &a in &self.touched {
            let i = a as usize;
            let [takes, gets] = self.sums[i];
            ordered[i] |= takes > store.balance(i) || takes == u64::MAX || gets == u64::MAX;
        }
        for &a in &self.scripted {
            ordered[a as usize] = true;
        }
        ordered
    }
}

#[cfg(test)]
mod tests;
