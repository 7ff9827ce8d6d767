//! Replaying a block's transactions on several threads with the result of one.
//!
//! A follower must reach the leader's state hash by executing the block's transactions
//! in the block's order. Two transactions whose account sets do not conflict (neither
//! writes an account the other reads or writes) give the same result in either order, so
//! only conflicting pairs must keep the block's order. This is the account-lock rule the
//! leader's pack tile schedules by (Solana's runtime, Firedancer's pack); a follower
//! derives it again from the transactions themselves instead of trusting the leader's
//! microblocks.
//!
//! [`replay`] takes the encoded transactions and works in two steps, both on the
//! threads:
//!
//! 1. **Order**: each thread reads the account lists of one contiguous chunk of the
//!    block in place (allocating nothing per transaction) and notes, per account a
//!    transaction names, the previous transaction of the chunk that named it; the
//!    calling thread then gives each chunk's first access to an account the last access
//!    of the chunks before (a pass over the accounts, not the transactions). Reads of
//!    one account are ordered too, which keeps each access to one predecessor: a writer
//!    waiting for the last reader waits, through it, for every earlier reader. A
//!    transaction naming an account outside the account space touches no balance (it
//!    fails before reading any) and waits for nothing.
//! 2. **Decode and execute**: transaction `i` is decoded and run on thread
//!    `i % threads`, each thread in increasing order; before running one, a thread
//!    waits until the threads owning its predecessors have passed them (each thread
//!    publishes how many of its transactions it finished, one counter per thread on its
//!    own cache line, so a thread that never waits touches no other thread's line).
//!    Decoding, most of a transfer's replay, is spread over the threads this way, and
//!    nothing decoded outlives its execution (a block's decoded transactions kept
//!    around cost more in memory traffic than the decoding). Interleaving the block
//!    over the threads keeps them at nearby positions, where a random predecessor is
//!    almost always done. A thread that has waited half a millisecond in all means
//!    threads are being preempted (a machine with more runnable threads than cores,
//!    where they keep waiting for each other): the threads then stop, and the calling
//!    thread runs what they left in block order, so a busy machine replays about as
//!    fast as one thread instead of stalling.
//!
//! The result equals sequential execution's exactly, transaction by transaction (every
//! conflicting pair executes in block order and the kernel is deterministic), whatever
//! the number of threads or their timing: a property test checks it over random blocks
//! with hot accounts, conflicts and failing transactions.
//!
//! Memory order: a thread finishing transaction `j` stores its counter with `Release`
//! after `j`'s balance writes; a thread waiting for `j` loads it with `Acquire`, so it
//! reads the balances `j` wrote. Transactions that run at the same time touch disjoint
//! accounts (or only read common ones), so the store's relaxed atomics never race on a
//! value.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::bank::{execute, AccountStore, Outcome};
use crate::tx::{self, AccountRef, Tx};

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
    std::thread::scope(|s| {
        let handles: Vec<_> = raw
            .chunks(size)
            .enumerate()
            .map(|(c, chunk)| s.spawn(move || check(chunk, c * size)))
            .collect();
        // Chunks are in block order: the first one that failed has the lowest index.
        handles
            .into_iter()
            .filter_map(|h| h.join().expect("a decoding thread panicked"))
            .min()
    })
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

/// Decodes and executes `txs` (encoded) against `store` with the result of
/// [`replay_sequential`], on up to `threads` threads (see the module docs; small blocks
/// use fewer, see [`threads_for`]). A transaction that does not decode: the lowest such
/// index, as [`replay_sequential`] names it (callers check first with
/// [`first_undecodable`]; the store is then of no use).
pub fn replay<B: AsRef<[u8]> + Sync>(
    store: &AccountStore,
    txs: &[B],
    threads: usize,
) -> Result<Vec<Executed>, usize> {
    replay_on(store, txs, threads_for(txs.len(), threads))
}

/// [`replay`] on exactly `threads` threads (one: [`replay_sequential`]).
fn replay_on<B: AsRef<[u8]> + Sync>(
    store: &AccountStore,
    txs: &[B],
    threads: usize,
) -> Result<Vec<Executed>, usize> {
    replay_with(store, txs, threads, STALL)
}

/// [`replay_on`], a wait longer than `stall` stopping the threads (tests set it to zero
/// to run the fallback).
fn replay_with<B: AsRef<[u8]> + Sync>(
    store: &AccountStore,
    txs: &[B],
    threads: usize,
    stall: std::time::Duration,
) -> Result<Vec<Executed>, usize> {
    let threads = threads.clamp(1, MAX_REPLAY_THREADS);
    if threads == 1 {
        return replay_sequential(store, txs);
    }
    let order = Order::of(txs, store.len(), threads);
    let progress: Vec<Progress> = (0..threads).map(|_| Progress::default()).collect();
    let stalled = AtomicBool::new(false);
    let per_thread: Vec<Result<Vec<Executed>, usize>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (order, progress, stalled) = (&order, &progress, &stalled);
                s.spawn(move || run_share(store, txs, order, (progress, stalled, stall), t))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a replay thread panicked"))
            .collect()
    });
    if per_thread.iter().any(Result::is_err) {
        // A thread stopped at a transaction that does not decode; a thread that
        // stalled may not have reached an earlier one: name the first, as sequential
        // replay does.
        return Err(first_undecodable_on(txs, 1).expect("a transaction did not decode"));
    }
    // Thread t ran transactions t, t + threads, ... (a prefix of them, if the replay
    // stalled): interleave them back, and run what no thread reached here, in block
    // order. That is still sequential replay's result: a transaction a thread ran had
    // every predecessor run before it, so none of them comes after one left here.
    let mut iters: Vec<_> = per_thread
        .into_iter()
        .map(|r| r.expect("checked above").into_iter())
        .collect();
    let mut out = Vec::with_capacity(txs.len());
    for i in 0..txs.len() {
        out.push(match iters[i % threads].next() {
            Some(done) => done,
            None => {
                let t = tx::decode(txs[i].as_ref()).map_err(|_| i)?;
                execute(store, &t.message, seed_of(&t))
            }
        });
    }
    Ok(out)
}

/// The accounts an encoded transaction names, read in place: none when its length does
/// not fit its account count (then it does not decode either; every transaction that
/// decodes has its accounts here).
fn accounts_in(b: &[u8]) -> Option<impl Iterator<Item = AccountRef> + '_> {
    let n = *b.get(tx::HEADER_LEN - 1)? as usize;
    if n == 0 || n > tx::MAX_ACCOUNTS || b.len() != tx::HEADER_LEN + 4 * n {
        return None;
    }
    Some(b[tx::HEADER_LEN..].chunks_exact(4).map(|w| {
        let w = u32::from_le_bytes(w.try_into().expect("4 bytes"));
        AccountRef {
            index: w & !tx::WRITABLE,
            writable: w & tx::WRITABLE != 0,
        }
    }))
}

/// Each access's predecessor: the previous transaction that named the same account
/// (read or written: reads of one account run in turn too, which keeps each access to
/// one predecessor; a writer waiting for the last reader waits, through it, for every
/// earlier one). Computed on the threads, one contiguous chunk each; an access whose
/// predecessor is in an earlier chunk takes that chunk's last access to the account.
struct Order {
    /// Transactions per chunk (the last may have fewer).
    size: usize,
    chunks: Vec<OrderChunk>,
    /// Per chunk, per account: the last access in the chunks before it (or [`NONE`]).
    before: Vec<Vec<u32>>,
}

/// One chunk's accesses: per transaction (`items[starts[j]..starts[j+1]]`) its accounts,
/// each with the previous access within the chunk ([`NONE`]: none in this chunk); and
/// per account the chunk's last access.
struct OrderChunk {
    starts: Vec<u32>,
    items: Vec<(u32, u32)>,
    last: Vec<u32>,
}

const NONE: u32 = u32::MAX;

impl Order {
    fn of<B: AsRef<[u8]> + Sync>(txs: &[B], accounts: usize, threads: usize) -> Order {
        let size = txs.len().div_ceil(threads).max(1);
        let chunks: Vec<OrderChunk> = std::thread::scope(|s| {
            let handles: Vec<_> = txs
                .chunks(size)
                .enumerate()
                .map(|(c, chunk)| s.spawn(move || OrderChunk::of(chunk, c * size, accounts)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a replay thread panicked"))
                .collect()
        });
        let mut last = vec![NONE; accounts];
        let before = chunks
            .iter()
            .map(|c| {
                let row = last.clone();
                for (l, &x) in last.iter_mut().zip(&c.last) {
                    if x != NONE {
                        *l = x;
                    }
                }
                row
            })
            .collect();
        Order {
            size,
            chunks,
            before,
        }
    }

    /// The transactions `i` waits for (one per account it names, none for a first
    /// access).
    fn deps(&self, i: usize) -> impl Iterator<Item = u32> + '_ {
        let (c, j) = (i / self.size, i % self.size);
        let chunk = &self.chunks[c];
        let before = &self.before[c];
        chunk.items[chunk.starts[j] as usize..chunk.starts[j + 1] as usize]
            .iter()
            .map(move |&(a, p)| if p == NONE { before[a as usize] } else { p })
            .filter(|&d| d != NONE)
    }
}

impl OrderChunk {
    fn of<B: AsRef<[u8]>>(txs: &[B], first: usize, accounts: usize) -> OrderChunk {
        let mut last = vec![NONE; accounts];
        let mut starts = Vec::with_capacity(txs.len() + 1);
        let mut items = Vec::with_capacity(txs.len() * 2);
        let mut set = [0u32; tx::MAX_ACCOUNTS];
        for (j, b) in txs.iter().enumerate() {
            starts.push(items.len() as u32);
            // A transaction that does not decode, or names an account outside the
            // account space, touches no balance: nothing to order.
            let Some(accts) = accounts_in(b.as_ref()) else {
                continue;
            };
            let (mut n, mut outside) = (0, false);
            for a in accts {
                outside |= a.index as usize >= accounts;
                // An account listed twice is one access.
                if !set[..n].contains(&a.index) {
                    set[n] = a.index;
                    n += 1;
                }
            }
            if outside {
                continue;
            }
            let i = (first + j) as u32;
            for &a in &set[..n] {
                let l = &mut last[a as usize];
                items.push((a, *l));
                *l = i;
            }
        }
        starts.push(items.len() as u32);
        OrderChunk {
            starts,
            items,
            last,
        }
    }
}

/// How many of its transactions a replay thread has finished, alone on a cache line.
#[derive(Default)]
#[repr(align(128))]
struct Progress(AtomicUsize);

/// Spins before a waiting thread starts yielding its core (a predecessor being executed
/// is done within a few hundred ns).
const SPINS: u32 = 512;

/// A thread that has waited this long in all (past its spins) stops the parallel
/// replay: the threads finish the transaction they hold and the calling thread runs the
/// rest in order. Waits on a machine with a core per thread last microseconds; this
/// much means threads are being preempted (more runnable threads than cores), and the
/// others keep waiting for them, slower than one thread alone.
const STALL: std::time::Duration = std::time::Duration::from_micros(500);

/// Thread `t`'s share: transactions `t`, `t + n`, ... in order, each after its
/// predecessors; the index of one that does not decode stops it.
fn run_share<B: AsRef<[u8]>>(
    store: &AccountStore,
    txs: &[B],
    order: &Order,
    (progress, stalled, stall): (&[Progress], &AtomicBool, std::time::Duration),
    t: usize,
) -> Result<Vec<Executed>, usize> {
    let n = progress.len();
    // The last value read of each thread's counter (they only grow).
    let mut seen = vec![0usize; n];
    let mut out = Vec::with_capacity(txs.len() / n + 1);
    // Time spent waiting past the spins, over the whole share: many short waits stall
    // a replay as surely as one long one.
    let mut waited = std::time::Duration::ZERO;
    'txs: for (k, i) in (t..txs.len()).step_by(n).enumerate() {
        for d in order.deps(i) {
            let (owner, pos) = (d as usize % n, d as usize / n);
            if owner == t {
                continue; // earlier on this thread: done
            }
            let (mut spins, mut since) = (0u32, None);
            while seen[owner] <= pos {
                seen[owner] = progress[owner].0.load(Ordering::Acquire);
                if seen[owner] > pos {
                    break;
                }
                if stalled.load(Ordering::Relaxed) {
                    break 'txs;
                }
                spins += 1;
                if spins < SPINS {
                    std::hint::spin_loop();
                    continue;
                }
                let start = *since.get_or_insert_with(std::time::Instant::now);
                if waited + start.elapsed() > stall {
                    stalled.store(true, Ordering::Relaxed);
                    break 'txs;
                }
                std::thread::yield_now();
            }
            if let Some(start) = since {
                waited += start.elapsed();
            }
        }
        if stalled.load(Ordering::Relaxed) {
            break;
        }
        let Ok(d) = tx::decode(txs[i].as_ref()) else {
            // The threads waiting for it wait for nothing it would have written: let
            // them finish, the caller refuses the block.
            progress[t].0.store(usize::MAX, Ordering::Release);
            return Err(i);
        };
        out.push(execute(store, &d.message, seed_of(&d)));
        progress[t].0.store(k + 1, Ordering::Release);
    }
    Ok(out)
}

#[cfg(test)]
#[path = "replay_tests.rs"]
mod tests;
