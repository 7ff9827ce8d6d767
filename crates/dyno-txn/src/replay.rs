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
//! [`replay`] works in three steps:
//!
//! 1. **Decode** on every thread (contiguous chunks): most of a transfer's replay cost.
//! 2. **Order** (one pass, on the calling thread): for each transaction, the earlier
//!    transactions it must wait for: for an account it writes, the last earlier writer
//!    and every reader since; for an account it reads, the last earlier writer. A
//!    transaction naming an account outside the account space touches no balance (it
//!    fails before reading any) and waits for nothing.
//! 3. **Execute**: transaction `i` runs on thread `i % threads`, each thread in
//!    increasing order; before running one, a thread waits until the threads owning its
//!    predecessors have passed them (each thread publishes how many of its transactions
//!    it finished, one counter per thread on its own cache line, so a thread that never
//!    waits touches no other thread's line). Interleaving the block over the threads
//!    keeps them at nearby positions, where a random predecessor is almost always done.
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

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::bank::{execute, AccountStore, Outcome};
use crate::tx::{self, Tx};

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

/// Decodes every transaction, on up to `threads` threads; the index of the first one
/// that does not decode otherwise (the same index for any number of threads).
pub fn decode_all<B: AsRef<[u8]> + Sync>(raw: &[B], threads: usize) -> Result<Vec<Tx>, usize> {
    decode_on(raw, threads_for(raw.len(), threads))
}

/// [`decode_all`] on exactly `threads` threads (at least one).
fn decode_on<B: AsRef<[u8]> + Sync>(raw: &[B], threads: usize) -> Result<Vec<Tx>, usize> {
    let decode_chunk = |chunk: &[B], offset: usize| -> Result<Vec<Tx>, usize> {
        chunk
            .iter()
            .enumerate()
            .map(|(i, b)| tx::decode(b.as_ref()).map_err(|_| offset + i))
            .collect()
    };
    if threads <= 1 || raw.is_empty() {
        return decode_chunk(raw, 0);
    }
    let size = raw.len().div_ceil(threads);
    let parts: Vec<Result<Vec<Tx>, usize>> = std::thread::scope(|s| {
        let handles: Vec<_> = raw
            .chunks(size)
            .enumerate()
            .map(|(c, chunk)| s.spawn(move || decode_chunk(chunk, c * size)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a decoding thread panicked"))
            .collect()
    });
    let mut out = Vec::with_capacity(raw.len());
    for p in parts {
        // Chunks are in block order: the first error met is the lowest index.
        out.extend(p?);
    }
    Ok(out)
}

/// Executes `txs` in order on one thread (the reference [`replay`] must equal).
pub fn replay_sequential(store: &AccountStore, txs: &[Tx]) -> Vec<Executed> {
    txs.iter()
        .map(|t| execute(store, &t.message, seed_of(t)))
        .collect()
}

/// Executes `txs` against `store` with the result of [`replay_sequential`], on up to
/// `threads` threads (see the module docs; small blocks use fewer, see [`threads_for`]).
pub fn replay(store: &AccountStore, txs: &[Tx], threads: usize) -> Vec<Executed> {
    replay_on(store, txs, threads_for(txs.len(), threads))
}

/// [`replay`] on exactly `threads` threads (one: [`replay_sequential`]).
fn replay_on(store: &AccountStore, txs: &[Tx], threads: usize) -> Vec<Executed> {
    let threads = threads.clamp(1, MAX_REPLAY_THREADS);
    if threads == 1 {
        return replay_sequential(store, txs);
    }
    let order = Order::of(txs, store.len());
    let progress: Vec<Progress> = (0..threads).map(|_| Progress::default()).collect();
    let per_thread: Vec<Vec<Executed>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (order, progress) = (&order, &progress);
                s.spawn(move || run_share(store, txs, order, progress, t))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a replay thread panicked"))
            .collect()
    });
    // Thread t ran transactions t, t + threads, ...: interleave them back.
    let mut out = Vec::with_capacity(txs.len());
    let mut iters: Vec<_> = per_thread.into_iter().map(Vec::into_iter).collect();
    for i in 0..txs.len() {
        out.push(
            iters[i % threads]
                .next()
                .expect("one result per transaction"),
        );
    }
    out
}

/// The transactions each must wait for, in one flat list (`deps[starts[i]..starts[i+1]]`
/// are transaction `i`'s, all earlier than `i`).
struct Order {
    starts: Vec<u32>,
    deps: Vec<u32>,
}

const NONE: u32 = u32::MAX;

impl Order {
    fn of(txs: &[Tx], accounts: usize) -> Order {
        let mut last_writer = vec![NONE; accounts];
        // Readers of each account since its last write; the next writer waits for all.
        let mut readers: Vec<Vec<u32>> = vec![Vec::new(); accounts];
        let mut starts = Vec::with_capacity(txs.len() + 1);
        let mut deps = Vec::with_capacity(txs.len() * 2);
        // One account set per transaction: an account listed twice counts once, as
        // written if any listing writes it.
        let mut set: Vec<(usize, bool)> = Vec::with_capacity(tx::MAX_ACCOUNTS);
        for (i, t) in txs.iter().enumerate() {
            starts.push(deps.len() as u32);
            let accts = &t.message.accounts;
            // Fails before touching any balance: nothing to order.
            if accts.iter().any(|a| a.index as usize >= accounts) {
                continue;
            }
            set.clear();
            for a in accts {
                let a_idx = a.index as usize;
                match set.iter_mut().find(|(x, _)| *x == a_idx) {
                    Some(e) => e.1 |= a.writable,
                    None => set.push((a_idx, a.writable)),
                }
            }
            let i = i as u32;
            for &(a, writes) in &set {
                if last_writer[a] != NONE {
                    deps.push(last_writer[a]);
                }
                if writes {
                    deps.append(&mut readers[a]);
                    last_writer[a] = i;
                } else {
                    readers[a].push(i);
                }
            }
        }
        starts.push(deps.len() as u32);
        Order { starts, deps }
    }

    fn of_tx(&self, i: usize) -> &[u32] {
        &self.deps[self.starts[i] as usize..self.starts[i + 1] as usize]
    }
}

/// How many of its transactions a replay thread has finished, alone on a cache line.
#[derive(Default)]
#[repr(align(128))]
struct Progress(AtomicUsize);

/// Spins before a waiting thread starts yielding its core (a predecessor being executed
/// is done within a few hundred ns; a preempted one may take a scheduler quantum).
const SPINS: u32 = 256;

/// Thread `t`'s share: transactions `t`, `t + n`, ... in order, each after its
/// predecessors.
fn run_share(
    store: &AccountStore,
    txs: &[Tx],
    order: &Order,
    progress: &[Progress],
    t: usize,
) -> Vec<Executed> {
    let n = progress.len();
    // The last value read of each thread's counter (they only grow).
    let mut seen = vec![0usize; n];
    let mut out = Vec::with_capacity(txs.len() / n + 1);
    for (k, i) in (t..txs.len()).step_by(n).enumerate() {
        for &d in order.of_tx(i) {
            let (owner, pos) = (d as usize % n, d as usize / n);
            if owner == t {
                continue; // earlier on this thread: done
            }
            let mut spins = 0u32;
            while seen[owner] <= pos {
                seen[owner] = progress[owner].0.load(Ordering::Acquire);
                if seen[owner] > pos {
                    break;
                }
                spins += 1;
                if spins < SPINS {
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
        }
        let tx = &txs[i];
        out.push(execute(store, &tx.message, seed_of(tx)));
        progress[t].0.store(k + 1, Ordering::Release);
    }
    out
}

#[cfg(test)]
#[path = "replay_tests.rs"]
mod tests;
