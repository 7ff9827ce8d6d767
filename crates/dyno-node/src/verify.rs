//! Signature verification off the ingress thread, on as many threads as the node is
//! given: Firedancer's point that verification scales across tiles right behind QUIC.
//!
//! The QUIC ingress runs on one thread; checking every signature there capped a node at
//! one thread's Ed25519 rate whatever the cores. A [`VerifyPool`] takes each
//! transaction from the ingress (a queue push), hands it to one of `n` verify threads in
//! turn (round robin, so every thread gets every `n`-th transaction and the order of a
//! thread's input is the ingress's), and each thread checks it with its own cache of
//! decompressed signer keys ([`SignerKeys`], no lock shared between threads) before
//! passing it on with its verdict. A transaction whose signature fails is passed on too,
//! marked, so the node counts it as refused where it always did.
//!
//! With a batch size above 1, a thread takes what has queued up for it (never waiting for
//! more, so a light load keeps single-transaction latency) up to the batch size and
//! checks it as one batch ([`tx::verify_many`]): the rule is ZIP 215 for single and batch
//! checks alike ([`dyno_txn::sig`]), so batching never changes a verdict.
//!
//! The same threads run other checking work handed to them as jobs ([`VerifyJobs`]): a
//! node checks its peers' relay frames there (`crate::relay_check`), so its threads do
//! not grow by a second set of checkers.
//!
//! [`verify_all`] does the same for a follower's replay of a block: the block's
//! signatures are checked in `n` contiguous chunks on scoped threads, each chunk in
//! batches.

use dyno_txn::sig::SignerKeys;
use dyno_txn::tx;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Most verify threads a node config may ask for.
pub const MAX_VERIFY_TILES: usize = 256;

/// Blocks with fewer transactions than this are checked on the calling thread: spawning
/// threads costs more than a few dozen checks.
pub const PARALLEL_FROM: usize = 64;

/// Most signatures checked as one batch by default: most of batching's gain (about
/// twice single verification's rate) at a size a verify thread fills within a
/// millisecond under load.
pub const DEFAULT_VERIFY_BATCH: usize = 64;

/// Largest batch a node config may ask for.
pub const MAX_VERIFY_BATCH: usize = 1024;

/// The verify threads a node uses when its config does not say: one. A node's threads
/// do not grow with the machine's cores unless its config asks (`verify_tiles`): a
/// cluster runs thousands of nodes on one machine, and a node sized to the machine
/// (every core but three, as it once was) took 31 threads on 16 cores, so 1,040 of them
/// ran into the kernel's pid limit.
pub const DEFAULT_VERIFY_TILES: usize = 1;

/// Per-thread counts of a [`VerifyPool`].
#[derive(Debug, Default)]
pub struct TileCounts {
    /// Transactions whose signature verified.
    pub passed: AtomicU64,
    /// Transactions refused: bad signature or no valid signer key.
    pub refused: AtomicU64,
}

/// The counts of a [`VerifyPool`]'s threads, readable while the pool runs elsewhere.
#[derive(Debug, Clone)]
pub struct VerifyTally(Arc<Vec<TileCounts>>);

impl VerifyTally {
    /// `(passed, refused)` per thread so far.
    pub fn counts(&self) -> Vec<(u64, u64)> {
        self.0
            .iter()
            .map(|c| {
                (
                    c.passed.load(Ordering::Relaxed),
                    c.refused.load(Ordering::Relaxed),
                )
            })
            .collect()
    }
}

/// What a verify thread is handed: a transaction to check, or a job to run.
enum Work {
    Tx(Vec<u8>),
    Job(Box<dyn FnOnce() + Send>),
}

/// Hands jobs to a [`VerifyPool`]'s threads in turn, from anywhere; the threads end
/// only once the pool and every one of these are dropped.
#[derive(Clone)]
pub struct VerifyJobs {
    inputs: Vec<Sender<Work>>,
    next: Arc<AtomicUsize>,
}

impl VerifyJobs {
    /// Runs `job` on the next verify thread in turn, after what that thread was given
    /// before; false once that thread has ended.
    pub fn run(&self, job: impl FnOnce() + Send + 'static) -> bool {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.inputs.len();
        self.inputs[i].send(Work::Job(Box::new(job))).is_ok()
    }

    /// The number of threads the jobs go to.
    pub fn threads(&self) -> usize {
        self.inputs.len()
    }
}

impl std::fmt::Debug for VerifyJobs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VerifyJobs")
            .field("threads", &self.inputs.len())
            .finish()
    }
}

/// `n` verify threads fed round robin; see the module docs.
pub struct VerifyPool {
    inputs: Vec<Sender<Work>>,
    next: AtomicUsize,
    counts: Arc<Vec<TileCounts>>,
    threads: Vec<JoinHandle<()>>,
}

impl VerifyPool {
    /// Starts `n` threads (at least 1) named `verify-<i>`, each checking up to `batch`
    /// queued transactions at a time (1: one by one); each verified transaction goes to
    /// `out` with its verdict, in the thread's input order. A thread ends when the pool
    /// is dropped or `out` returns false (the node is gone).
    pub fn start<F>(n: usize, batch: usize, out: F) -> std::io::Result<VerifyPool>
    where
        F: Fn(Vec<u8>, bool) -> bool + Send + Sync + 'static,
    {
        let n = n.clamp(1, MAX_VERIFY_TILES);
        let batch = batch.clamp(1, MAX_VERIFY_BATCH);
        let out = Arc::new(out);
        let counts: Arc<Vec<TileCounts>> =
            Arc::new((0..n).map(|_| TileCounts::default()).collect());
        let mut inputs = Vec::with_capacity(n);
        let mut threads = Vec::with_capacity(n);
        for i in 0..n {
            let (tx, rx) = channel::<Work>();
            let (out, counts) = (Arc::clone(&out), Arc::clone(&counts));
            let handle = std::thread::Builder::new()
                .name(format!("verify-{i}"))
                .spawn(move || verify_thread(&rx, batch, &counts[i], &*out))?;
            inputs.push(tx);
            threads.push(handle);
        }
        Ok(VerifyPool {
            inputs,
            next: AtomicUsize::new(0),
            counts,
            threads,
        })
    }

    /// Hands a transaction to the next thread in turn; false once that thread has ended.
    pub fn submit(&self, bytes: Vec<u8>) -> bool {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.inputs.len();
        self.inputs[i].send(Work::Tx(bytes)).is_ok()
    }

    /// A handle that runs jobs on these threads ([`VerifyJobs::run`]).
    pub fn jobs(&self) -> VerifyJobs {
        VerifyJobs {
            inputs: self.inputs.clone(),
            next: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// A handle on the per-thread counts that outlives the pool's owner moving it.
    pub fn tally(&self) -> VerifyTally {
        VerifyTally(Arc::clone(&self.counts))
    }

    /// The number of verify threads.
    pub fn tiles(&self) -> usize {
        self.inputs.len()
    }

    /// `(passed, refused)` per thread so far.
    pub fn counts(&self) -> Vec<(u64, u64)> {
        self.tally().counts()
    }

    /// Stops taking transactions and waits until every thread has passed on what it
    /// was given (and, with [`VerifyPool::jobs`] handles, until they are dropped too).
    pub fn finish(mut self) -> Vec<(u64, u64)> {
        self.inputs.clear();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        self.counts()
    }
}

impl Drop for VerifyPool {
    fn drop(&mut self) {
        // Closing the inputs ends each thread after its queue; nobody waits for them.
        self.inputs.clear();
    }
}

impl std::fmt::Debug for VerifyPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VerifyPool")
            .field("tiles", &self.inputs.len())
            .finish()
    }
}

/// One verify thread: takes what has queued (up to `batch`), checks it, passes it on;
/// runs a job in its turn (after the transactions queued before it).
fn verify_thread(
    rx: &Receiver<Work>,
    batch: usize,
    counts: &TileCounts,
    out: &(dyn Fn(Vec<u8>, bool) -> bool + Send + Sync),
) {
    let mut keys = SignerKeys::new();
    let mut taken: Vec<Vec<u8>> = Vec::with_capacity(batch);
    let mut verdicts = Vec::with_capacity(batch);
    while let Ok(first) = rx.recv() {
        let mut job = match first {
            Work::Tx(b) => {
                taken.push(b);
                None
            }
            Work::Job(j) => Some(j),
        };
        while job.is_none() && !taken.is_empty() && taken.len() < batch {
            match rx.try_recv() {
                Ok(Work::Tx(b)) => taken.push(b),
                Ok(Work::Job(j)) => job = Some(j),
                Err(_) => break,
            }
        }
        if taken.len() == 1 {
            verdicts.clear();
            verdicts.push(tx::verify_cached(&taken[0], &mut keys));
        } else if !taken.is_empty() {
            tx::verify_many(&taken, &mut verdicts);
        }
        for (bytes, ok) in taken.drain(..).zip(verdicts.iter().copied()) {
            let count = if ok { &counts.passed } else { &counts.refused };
            count.fetch_add(1, Ordering::Relaxed);
            if !out(bytes, ok) {
                return;
            }
        }
        if let Some(j) = job {
            j();
        }
    }
}

/// Whether every transaction of `txs` verifies (`verified` may vouch for some already,
/// e.g. the mempool's), checked in `threads` contiguous chunks on scoped threads when the
/// block is large enough, each chunk in batches of `batch`; the index of the first one
/// that fails otherwise. The answer is the same for any number of threads and any batch
/// size.
pub fn verify_all(
    txs: &[&[u8]],
    threads: usize,
    batch: usize,
    verified: &(dyn Fn(&[u8]) -> bool + Sync),
) -> Result<(), usize> {
    let batch = batch.clamp(1, MAX_VERIFY_BATCH);
    let check = |chunk: &[&[u8]], offset: usize| -> Result<(), usize> {
        let mut keys = SignerKeys::new();
        let mut pending: Vec<(usize, &[u8])> = Vec::with_capacity(batch);
        let mut verdicts = Vec::with_capacity(batch);
        let mut judge = |pending: &mut Vec<(usize, &[u8])>| -> Result<(), usize> {
            if let [(i, t)] = pending[..] {
                if !tx::verify_cached(t, &mut keys) {
                    return Err(offset + i);
                }
            } else {
                let bytes: Vec<&[u8]> = pending.iter().map(|(_, t)| *t).collect();
                tx::verify_many(&bytes, &mut verdicts);
                if let Some(k) = verdicts.iter().position(|ok| !ok) {
                    return Err(offset + pending[k].0);
                }
            }
            pending.clear();
            Ok(())
        };
        for (i, t) in chunk.iter().enumerate() {
            if verified(t) {
                continue;
            }
            pending.push((i, t));
            if pending.len() == batch {
                judge(&mut pending)?;
            }
        }
        if pending.is_empty() {
            Ok(())
        } else {
            judge(&mut pending)
        }
    };
    let threads = threads.clamp(1, MAX_VERIFY_TILES);
    if threads == 1 || txs.len() < PARALLEL_FROM {
        return check(txs, 0);
    }
    let size = txs.len().div_ceil(threads);
    let failures: Vec<usize> = std::thread::scope(|s| {
        let handles: Vec<_> = txs
            .chunks(size)
            .enumerate()
            .map(|(i, chunk)| s.spawn(move || check(chunk, i * size)))
            .collect();
        handles
            .into_iter()
            .filter_map(|h| h.join().map_or(Some(usize::MAX), |r| r.err()))
            .collect()
    });
    match failures.into_iter().min() {
        Some(i) => Err(i),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyno_txn::bank::{fund_initial_accounts, transfer_block};
    use std::sync::Mutex;

    fn spoiled(t: &[u8], byte: usize) -> Vec<u8> {
        let mut b = t.to_vec();
        b[byte] ^= 1;
        b
    }

    #[test]
    fn every_verify_tile_refuses_bad_signatures_and_passes_good_ones() {
        for batch in [1, 8, DEFAULT_VERIFY_BATCH] {
            every_tile_refuses_bad_ones(batch);
        }
    }

    fn every_tile_refuses_bad_ones(batch: usize) {
        let g = fund_initial_accounts(16, 1_000, 1);
        let good = transfer_block(&g, 60, 3);
        type Verdicts = Vec<(Vec<u8>, bool)>;
        let seen: Arc<Mutex<Verdicts>> = Arc::default();
        let sink = Arc::clone(&seen);
        let pool = VerifyPool::start(3, batch, move |bytes, ok| {
            sink.lock().unwrap().push((bytes, ok));
            true
        })
        .unwrap();
        assert_eq!(pool.tiles(), 3);
        // Good and bad alternate in runs of 3, so each tile gets both kinds: tile i gets
        // transactions i, i + 3, ... (a bad signature byte, then a bad message byte).
        let mut bad = Vec::new();
        for (i, t) in good.iter().enumerate() {
            let spoil = (i / 3) % 2 == 1;
            let b = if spoil {
                spoiled(t, if i % 2 == 0 { 3 } else { t.len() - 1 })
            } else {
                t.clone()
            };
            if spoil {
                bad.push(b.clone());
            }
            assert!(pool.submit(b));
        }
        let counts = pool.finish();
        assert_eq!(
            counts,
            vec![(10, 10); 3],
            "every tile refused its bad ones ({batch})"
        );
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), good.len());
        for (bytes, ok) in seen.iter() {
            assert_eq!(*ok, !bad.contains(bytes));
            assert_eq!(
                *ok,
                dyno_txn::tx::verify(bytes),
                "the single check's answer"
            );
        }
    }

    #[test]
    fn a_block_is_judged_the_same_on_any_number_of_threads() {
        let g = fund_initial_accounts(32, 1_000, 1);
        let txs = transfer_block(&g, 300, 5);
        let refs: Vec<&[u8]> = txs.iter().map(Vec::as_slice).collect();
        let none = |_: &[u8]| false;
        let layouts = [1, 2, 3, 7, 64]
            .into_iter()
            .flat_map(|threads| [1, 5, DEFAULT_VERIFY_BATCH].map(|batch| (threads, batch)));
        for (threads, batch) in layouts.clone() {
            assert_eq!(
                verify_all(&refs, threads, batch, &none),
                Ok(()),
                "{threads}"
            );
        }
        // Two bad transactions: the first one is named, whoever checked it.
        let (b1, b2) = (spoiled(&txs[123], 10), spoiled(&txs[250], 70));
        let mut with_bad = refs.clone();
        with_bad[123] = &b1;
        with_bad[250] = &b2;
        for (threads, batch) in layouts {
            let judged = verify_all(&with_bad, threads, batch, &none);
            assert_eq!(judged, Err(123), "{threads} threads, batches of {batch}");
        }
        // What the caller vouches for is not checked again.
        let vouched = |t: &[u8]| t == b1.as_slice() || t == b2.as_slice();
        assert_eq!(verify_all(&with_bad, 4, 8, &vouched), Ok(()));
    }
}
