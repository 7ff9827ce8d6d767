//! Replaying a block's transactions on several threads with the result of one.
//!
//! A follower must reach the leader's state hash by executing the block's transactions
//! in the block's order. [`replay`] gives the work to threads by **who owns the
//! accounts**: every account belongs to one thread (by the cache line its balance lies
//! on, the lines spread over the threads by a hash), and only that thread ever writes
//! it. Thread `c` first reads the account lists of the block's `c`-th contiguous chunk
//! in place and writes each transaction's role (who does what, one word); then every
//! thread walks all the roles in block order and does its part of each transaction:
//!
//! - a transaction whose accounts are all one thread's is decoded and executed by that
//!   thread alone, with nothing to wait for: its accounts' earlier transactions ran on
//!   the same thread, before it;
//! - a transfer whose destination another thread owns is split: the payer's owner
//!   decodes it, charges the fee, checks and takes the amount (which decides the
//!   outcome) and posts the credit to its outbox; the destination's owner adds the
//!   amount from that post (see below for when). This needs a credit that
//!   cannot overflow, which holds while the store's total supply fits in a u64
//!   (execution never raises it; a store whose supply does not fit replays
//!   sequentially);
//! - a script naming accounts of other threads is a meeting: those threads stop at it
//!   until it ran, and its payer's owner runs it once each of them has reached it (so
//!   it reads their accounts as the block's order leaves them);
//! - a transaction naming an account outside the account space touches nothing: thread
//!   `i % threads` executes it (to its failure).
//!
//! A credit owed to a thread's account is applied lazily: credits commute, so the
//! thread adds it only before it next reads that account (or at a meeting, or the
//! end), by when its post is almost always there; the threads do not wait on each other
//! transaction by transaction. Threads write only their own balance lines; what crosses
//! cores is the roles of the other chunks, an outbox entry per split transfer (eight to
//! a line, read in order) and, rarely, a meeting. Results are kept a word each until the
//! calling thread puts them in block order.
//!
//! A thread that has waited half a millisecond in all means threads are being preempted
//! (a machine with more runnable threads than cores, where they keep waiting for each
//! other): the threads then stop, and the calling thread finishes in block order what
//! each left (the credits a thread still owed among it), so a busy machine replays about
//! as fast as one thread instead of stalling.
//!
//! The result equals sequential execution's exactly, transaction by transaction:
//! every account's writes happen on its owner in block order, a split transfer's credit
//! comes after its debit, and a meeting reads accounts that are exactly as far as the
//! block's order has them; a property test checks it over random blocks with hot
//! accounts, conflicts and failing transactions, on both ownership grains (a cache line,
//! and one account, which makes small test blocks cross threads often).
//!
//! Memory order: a post (an outbox entry, a thread's `reached` mark, a chunk's roles
//! being ready) is stored with `Release` after the writes it vouches for, and read with
//! `Acquire` before the reads that depend on them. Balances themselves are relaxed
//! atomics, each written by one thread.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use crate::bank::{debit, execute, AccountStore, FailReason, Outcome};
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

/// [`replay_on`] with the ownership grain and the longest wait as given (tests set the
/// grain to one account, and the wait to zero to run the fallback).
fn replay_with<B: AsRef<[u8]> + Sync>(
    store: &AccountStore,
    txs: &[B],
    threads: usize,
    stall: std::time::Duration,
) -> Result<Vec<Executed>, usize> {
    replay_grained(store, txs, threads, stall, Grain::Line)
}

/// What one thread owns: the accounts of some cache lines of balances (what
/// [`replay`] uses), or single accounts (tests: a few accounts then still spread).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Grain {
    Line,
    #[cfg_attr(not(test), allow(dead_code))]
    Account,
}

fn replay_grained<B: AsRef<[u8]> + Sync>(
    store: &AccountStore,
    txs: &[B],
    threads: usize,
    stall: std::time::Duration,
    grain: Grain,
) -> Result<Vec<Executed>, usize> {
    let threads = threads.clamp(1, MAX_REPLAY_THREADS);
    if threads == 1 || !store.credits_cannot_overflow() {
        return replay_sequential(store, txs);
    }
    let plan = Plan {
        store,
        threads,
        grain,
    };
    let shared = Shared::new(threads, txs.len(), stall);
    let shares: Vec<Share> = std::thread::scope(|s| {
        let (plan, shared) = (&plan, &shared);
        let handles: Vec<_> = (1..threads)
            .map(|t| s.spawn(move || run_share(plan, txs, shared, t)))
            .collect();
        // The calling thread is thread 0.
        let mut shares = vec![run_share(plan, txs, shared, 0)];
        shares.extend(
            handles
                .into_iter()
                .map(|h| h.join().expect("a replay thread panicked")),
        );
        shares
    });
    if shared.failed.load(Ordering::Relaxed) {
        // A thread met a transaction that does not decode; one that stopped may not
        // have reached an earlier one: name the first, as sequential replay does.
        return Err(first_undecodable_on(txs, 1).expect("a transaction did not decode"));
    }
    finish(&plan, txs, &shared, shares)
}

/// Who owns which account, and each transaction's parts.
struct Plan<'a> {
    store: &'a AccountStore,
    threads: usize,
    grain: Grain,
}

/// One transaction's parts (every thread reads the same from its bytes).
#[derive(Clone, Copy, Debug)]
enum Role {
    /// Touches no balance (an account outside the account space, or bytes that do not
    /// hold an account list): thread `i % threads` executes it, or finds it does not
    /// decode.
    Alone,
    /// Every account it names is this thread's.
    Whole(usize),
    /// A transfer whose destination `to` another thread (`to_owner`) owns: `exec`
    /// debits and posts the credit, `to_owner` adds it.
    Split {
        exec: usize,
        to: usize,
        to_owner: usize,
    },
    /// A script (or anything not a transfer) naming accounts other threads own:
    /// `exec` runs it once each of them has reached it; they wait until it ran.
    Meet(usize),
}

impl Role {
    /// The role in one word: the kind in bits 0-1, `exec` in 8-15, `to_owner` in 16-23,
    /// `to` in 32-63 (thread indices fit: at most [`MAX_REPLAY_THREADS`]).
    fn pack(self) -> u64 {
        match self {
            Role::Alone => 0,
            Role::Whole(e) => 1 | (e as u64) << 8,
            Role::Split { exec, to, to_owner } => {
                2 | (exec as u64) << 8 | (to_owner as u64) << 16 | (to as u64) << 32
            }
            Role::Meet(e) => 3 | (e as u64) << 8,
        }
    }

    fn unpack(w: u64) -> Role {
        let exec = (w >> 8 & 0xff) as usize;
        match w & 3 {
            0 => Role::Alone,
            1 => Role::Whole(exec),
            2 => Role::Split {
                exec,
                to: (w >> 32) as usize,
                to_owner: (w >> 16 & 0xff) as usize,
            },
            _ => Role::Meet(exec),
        }
    }

    /// The thread that executes transaction `i` of a replay on `threads`.
    fn exec(self, i: usize, threads: usize) -> usize {
        match self {
            Role::Alone => i % threads,
            Role::Whole(e) | Role::Meet(e) | Role::Split { exec: e, .. } => e,
        }
    }
}

impl Plan<'_> {
    /// The thread owning `account` (inside the account space).
    fn owner(&self, account: usize) -> usize {
        let unit = match self.grain {
            Grain::Line => self.store.line_of(account),
            Grain::Account => account,
        };
        // A multiplicative hash spreads neighbouring units; its top 32 bits scaled to
        // the thread count (no division in the loop every thread runs per transaction).
        let h = (unit as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
        ((h * self.threads as u64) >> 32) as usize
    }

    /// The parts of encoded transaction `b` and the accounts it names (the same answer
    /// on every thread; no accounts for [`Role::Alone`]).
    fn role<'b>(
        &self,
        b: &[u8],
        indices: &'b mut [usize; tx::MAX_ACCOUNTS],
    ) -> (Role, &'b [usize]) {
        let Some(accounts) = accounts_in(b) else {
            return (Role::Alone, &[]);
        };
        let mut n = 0;
        for a in accounts {
            if a.index as usize >= self.store.len() {
                return (Role::Alone, &[]);
            }
            indices[n] = a.index as usize;
            n += 1;
        }
        let accounts = &indices[..n];
        let exec = self.owner(accounts[0]);
        if b[tx::KIND_AT] == 0 {
            // A transfer touches its payer and destination only (the others are bounds
            // checked); one that does not decode is the executor's to find.
            if n < 2 {
                return (Role::Whole(exec), accounts);
            }
            let to_owner = self.owner(accounts[1]);
            let role = if to_owner == exec {
                Role::Whole(exec)
            } else {
                Role::Split {
                    exec,
                    to: accounts[1],
                    to_owner,
                }
            };
            return (role, accounts);
        }
        if accounts[1..].iter().all(|&a| self.owner(a) == exec) {
            (Role::Whole(exec), accounts)
        } else {
            (Role::Meet(exec), accounts)
        }
    }
}

/// The accounts decoded transaction `d` names.
fn accounts_of(d: &Tx) -> impl Iterator<Item = usize> + Clone + '_ {
    d.message.accounts.iter().map(|a| a.index as usize)
}

/// What the threads share: every transaction's role, each thread's outbox and reached
/// mark, and the stop flags.
struct Shared {
    /// [`Role::pack`] of every transaction, written by the thread of its chunk.
    roles: Vec<AtomicU64>,
    /// Transactions per chunk: thread `c` works out the roles of chunk `c`.
    chunk: usize,
    /// Set once a chunk's roles are written.
    ready: Vec<AtomicBool>,
    outboxes: Vec<Outbox>,
    reached: Vec<Reached>,
    /// A wait lasted too long: every thread stops where it is.
    stalled: AtomicBool,
    /// A transaction did not decode: every thread stops.
    failed: AtomicBool,
    stall: std::time::Duration,
}

impl Shared {
    fn new(threads: usize, txs: usize, stall: std::time::Duration) -> Shared {
        Shared {
            roles: (0..txs).map(|_| AtomicU64::new(0)).collect(),
            chunk: txs.div_ceil(threads).max(1),
            ready: (0..threads).map(|_| AtomicBool::new(false)).collect(),
            outboxes: (0..threads).map(|_| Outbox::new(txs)).collect(),
            reached: (0..threads).map(|_| Reached::default()).collect(),
            stalled: AtomicBool::new(false),
            failed: AtomicBool::new(false),
            stall,
        }
    }

    fn stopped(&self) -> bool {
        self.stalled.load(Ordering::Relaxed) || self.failed.load(Ordering::Relaxed)
    }
}

/// Entries a thread posts, in block order: for a split transfer the amount to credit
/// plus one (one: nothing), for a meeting one (it ran); zero is not posted yet. Pages
/// are made as the thread reaches them (a block's worth for every thread up front would
/// cost more than a small block's replay).
struct Outbox {
    pages: Vec<std::sync::OnceLock<Box<[AtomicU64]>>>,
}

const OUTBOX_PAGE: usize = 1024;

impl Outbox {
    fn new(txs: usize) -> Outbox {
        Outbox {
            pages: (0..txs.div_ceil(OUTBOX_PAGE))
                .map(|_| std::sync::OnceLock::new())
                .collect(),
        }
    }

    fn post(&self, k: usize, value: u64) {
        let page = self.pages[k / OUTBOX_PAGE]
            .get_or_init(|| (0..OUTBOX_PAGE).map(|_| AtomicU64::new(0)).collect());
        page[k % OUTBOX_PAGE].store(value, Ordering::Release);
    }

    /// Entry `k` once posted.
    fn read(&self, k: usize) -> Option<u64> {
        let v = self.pages[k / OUTBOX_PAGE].get()?[k % OUTBOX_PAGE].load(Ordering::Acquire);
        (v != 0).then_some(v)
    }
}

/// The index of the meeting a thread stopped at (every part of its before it done),
/// alone on a cache line.
#[derive(Default)]
#[repr(align(128))]
struct Reached(AtomicUsize);

/// Spins before a waiting thread starts yielding its core (a post is usually a few
/// hundred ns away).
const SPINS: u32 = 512;

/// A thread that has waited this long in all (past its spins) stops the parallel
/// replay: the threads stop where they are and the calling thread finishes in order.
/// Waits on a machine with a core per thread last microseconds; this much means threads
/// are being preempted (more runnable threads than cores), and the others keep waiting
/// for them, slower than one thread alone.
const STALL: std::time::Duration = std::time::Duration::from_micros(500);

/// A thread's results, a word each (the outcome's kind in 3 bits, the fee above them):
/// a block's results in full are 24 bytes a transaction, and moving them between the
/// cores' caches cost more than the replay. What does not fit a word (a fee of 2^61 or
/// more) is kept whole beside them.
#[derive(Default)]
struct Results {
    words: Vec<u64>,
    whole: Vec<Executed>,
}

/// The word of a result kept whole.
const WHOLE: u64 = 7;

impl Results {
    fn with_capacity(n: usize) -> Results {
        Results {
            words: Vec::with_capacity(n),
            whole: Vec::new(),
        }
    }

    fn push(&mut self, (o, fee): Executed) {
        let code = match o {
            Outcome::Executed => Some(0),
            Outcome::Failed {
                reason,
                fee_charged,
            } if fee_charged == fee => Some(match reason {
                FailReason::BadAccount => 1,
                FailReason::FeeUnpaid => 2,
                FailReason::InsufficientFunds => 3,
                FailReason::ScriptAborted => 4,
            }),
            Outcome::Failed { .. } => None,
        };
        match code {
            Some(c) if fee < 1 << 61 => self.words.push(fee << 3 | c),
            _ => {
                self.words.push(WHOLE);
                self.whole.push((o, fee));
            }
        }
    }

    fn into_iter(self) -> impl Iterator<Item = Executed> {
        let mut whole = self.whole.into_iter();
        self.words.into_iter().map(move |w| {
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
                _ => return whole.next().expect("kept whole"),
            };
            (o, fee)
        })
    }
}

/// What a thread did: its executed transactions' results in block order, and the index
/// it stopped at (every part of its before it done but the credits it still owed, none
/// after; the block's length when it finished).
struct Share {
    results: Results,
    stopped_at: usize,
    /// Credits before `stopped_at` the thread had not applied yet (transaction indices,
    /// in block order): the caller applies them.
    unapplied: Vec<usize>,
}

/// Credits a thread owes its accounts: split transfers it reached whose debit another
/// thread posts. Credits to one account commute, so one is applied only when the
/// thread is about to read the account (or at a meeting, or the end): by then its post
/// is almost always there, and the threads do not wait on each other transaction by
/// transaction.
struct Owed {
    /// (transaction, posting thread, its post's index, account), in block order.
    queue: std::collections::VecDeque<(usize, usize, usize, usize)>,
    /// Per account, the credits in `queue`.
    per_account: Vec<u32>,
}

impl Owed {
    fn new(accounts: usize) -> Owed {
        Owed {
            queue: std::collections::VecDeque::new(),
            per_account: vec![0; accounts],
        }
    }

    fn push(&mut self, i: usize, exec: usize, k: usize, to: usize) {
        self.queue.push_back((i, exec, k, to));
        self.per_account[to] += 1;
    }

    /// Applies queued credits, oldest first, until none is owed to any of `accounts`
    /// (all of them when `accounts` is None); false when the replay stopped meanwhile.
    fn settle(
        &mut self,
        accounts: Option<impl Iterator<Item = usize> + Clone>,
        store: &AccountStore,
        shared: &Shared,
        wait: &mut Waiter,
    ) -> bool {
        let owed = |o: &Owed| match accounts.clone() {
            None => !o.queue.is_empty(),
            Some(mut a) => a.any(|a| o.per_account[a] > 0),
        };
        while owed(self) {
            let (_, exec, k, to) = *self.queue.front().expect("owed");
            let Some(v) = wait.until(|| shared.outboxes[exec].read(k)) else {
                return false;
            };
            if v > 1 {
                store.credit(to, v - 1);
            }
            self.queue.pop_front();
            self.per_account[to] -= 1;
        }
        true
    }
}

/// A thread's waiting budget: spins, then yields, until the total passes the stall.
struct Waiter<'a> {
    shared: &'a Shared,
    waited: std::time::Duration,
}

impl Waiter<'_> {
    /// Waits until `ready` gives a value; none when the replay stopped meanwhile.
    fn until<T>(&mut self, mut ready: impl FnMut() -> Option<T>) -> Option<T> {
        let (mut spins, mut since) = (0u32, None::<std::time::Instant>);
        loop {
            if let Some(v) = ready() {
                if let Some(start) = since {
                    self.waited += start.elapsed();
                }
                return Some(v);
            }
            if self.shared.stopped() {
                return None;
            }
            spins += 1;
            if spins < SPINS {
                std::hint::spin_loop();
                continue;
            }
            let start = *since.get_or_insert_with(std::time::Instant::now);
            if self.waited + start.elapsed() > self.shared.stall {
                self.shared.stalled.store(true, Ordering::Relaxed);
                return None;
            }
            std::thread::yield_now();
        }
    }
}

/// Thread `t`'s part of the block (see the module docs): the roles of chunk `t`, then
/// its parts of every transaction in block order.
fn run_share<B: AsRef<[u8]>>(plan: &Plan, txs: &[B], shared: &Shared, t: usize) -> Share {
    let n = plan.threads;
    let store = plan.store;
    // A thread executes about 1 / threads of the block; room for a quarter more.
    let mut results = Results::with_capacity(txs.len() / n + txs.len() / (4 * n) + 16);
    // Posts each thread made so far, as every thread counts them.
    let mut posted = vec![0usize; n];
    let mut owed = Owed::new(store.len());
    let mut indices = [0usize; tx::MAX_ACCOUNTS];
    let first = (t * shared.chunk).min(txs.len());
    let last = (first + shared.chunk).min(txs.len());
    for (b, r) in txs[first..last].iter().zip(&shared.roles[first..last]) {
        r.store(
            plan.role(b.as_ref(), &mut indices).0.pack(),
            Ordering::Relaxed,
        );
    }
    shared.ready[t].store(true, Ordering::Release);
    let mut wait = Waiter {
        shared,
        waited: std::time::Duration::ZERO,
    };
    let decode = |i: usize| match tx::decode(txs[i].as_ref()) {
        Ok(d) => Some(d),
        Err(_) => {
            shared.failed.store(true, Ordering::Relaxed);
            None
        }
    };
    let stop = |results, i, owed: Owed| Share {
        results,
        stopped_at: i,
        unapplied: owed.queue.iter().map(|q| q.0).collect(),
    };
    let mut ready_to = 0;
    for (i, b) in txs.iter().enumerate() {
        if i >= ready_to {
            // The next chunk's roles: written by its thread, usually long ago.
            let c = i / shared.chunk;
            let ready = || shared.ready[c].load(Ordering::Acquire).then_some(());
            if wait.until(ready).is_none() {
                return stop(results, i, owed);
            }
            ready_to = (c + 1) * shared.chunk;
        }
        // Stop between transactions once any thread asked to.
        if (i & 63) == 0 && shared.stopped() {
            return stop(results, i, owed);
        }
        let role = Role::unpack(shared.roles[i].load(Ordering::Relaxed));
        let exec = role.exec(i, n);
        match role {
            Role::Alone => {
                if exec == t {
                    let Some(d) = decode(i) else { break };
                    results.push(execute(store, &d.message, seed_of(&d)));
                }
            }
            Role::Whole(_) => {
                if exec == t {
                    let Some(d) = decode(i) else { break };
                    if !owed.settle(Some(accounts_of(&d)), store, shared, &mut wait) {
                        return stop(results, i, owed);
                    }
                    results.push(execute(store, &d.message, seed_of(&d)));
                }
            }
            Role::Split { to, to_owner, .. } => {
                let k = posted[exec];
                posted[exec] += 1;
                if exec == t {
                    let Some(d) = decode(i) else { break };
                    if !owed.settle(Some(accounts_of(&d).take(1)), store, shared, &mut wait) {
                        return stop(results, i, owed);
                    }
                    let (done, credit) = debit(store, &d.message, seed_of(&d));
                    results.push(done);
                    shared.outboxes[t].post(k, credit.map_or(1, |(_, a)| a + 1));
                } else if to_owner == t {
                    owed.push(i, exec, k, to);
                }
            }
            Role::Meet(_) => {
                let k = posted[exec];
                posted[exec] += 1;
                let accounts = plan.role(b.as_ref(), &mut indices).1;
                let accounts = accounts.iter().copied();
                if exec == t {
                    if !owed.settle(Some(accounts.clone()), store, shared, &mut wait) {
                        return stop(results, i, owed);
                    }
                    // Every other owner of its accounts has done all before it.
                    let reached = (0..n).filter(|&o| o != t).all(|o| {
                        !accounts.clone().any(|a| plan.owner(a) == o)
                            || wait
                                .until(|| {
                                    (shared.reached[o].0.load(Ordering::Acquire) >= i).then_some(())
                                })
                                .is_some()
                    });
                    if !reached {
                        return stop(results, i, owed);
                    }
                    let Some(d) = decode(i) else { break };
                    results.push(execute(store, &d.message, seed_of(&d)));
                    shared.outboxes[t].post(k, 1);
                } else if accounts.clone().any(|a| plan.owner(a) == t) {
                    if !owed.settle(Some(accounts), store, shared, &mut wait) {
                        return stop(results, i, owed);
                    }
                    shared.reached[t].0.store(i, Ordering::Release);
                    if wait.until(|| shared.outboxes[exec].read(k)).is_none() {
                        return stop(results, i, owed);
                    }
                }
            }
        }
    }
    // Finished (or a transaction did not decode: the caller then refuses the block).
    owed.settle(None::<std::iter::Empty<usize>>, store, shared, &mut wait);
    stop(results, txs.len(), owed)
}

/// The results in block order: each transaction's from its executor's share, and what
/// a thread that stopped left of it run here, in block order (see the module docs).
fn finish<B: AsRef<[u8]>>(
    plan: &Plan,
    txs: &[B],
    shared: &Shared,
    shares: Vec<Share>,
) -> Result<Vec<Executed>, usize> {
    let stopped: Vec<usize> = shares.iter().map(|s| s.stopped_at).collect();
    let all_done = shares
        .iter()
        .all(|s| s.stopped_at == txs.len() && s.unapplied.is_empty());
    let n = plan.threads;
    let mut unapplied = Vec::with_capacity(shares.len());
    let mut iters: Vec<_> = shares
        .into_iter()
        .map(|s| {
            unapplied.push(s.unapplied.into_iter().peekable());
            s.results.into_iter()
        })
        .collect();
    let mut out = Vec::with_capacity(txs.len());
    if all_done {
        for (i, r) in shared.roles.iter().enumerate() {
            let e = Role::unpack(r.load(Ordering::Relaxed)).exec(i, n);
            out.push(iters[e].next().expect("one result per executed"));
        }
        return Ok(out);
    }
    let store = plan.store;
    let mut posted = vec![0usize; n];
    let mut indices = [0usize; tx::MAX_ACCOUNTS];
    for (i, b) in txs.iter().enumerate() {
        let b = b.as_ref();
        let run = |i: usize| tx::decode(b).map_err(|_| i);
        match plan.role(b, &mut indices).0 {
            role @ (Role::Alone | Role::Whole(_) | Role::Meet(_)) => {
                let exec = match role {
                    Role::Whole(e) | Role::Meet(e) => e,
                    _ => i % n,
                };
                if matches!(role, Role::Meet(_)) {
                    posted[exec] += 1;
                }
                out.push(if i < stopped[exec] {
                    iters[exec].next().expect("one result per executed")
                } else {
                    let d = run(i)?;
                    execute(store, &d.message, seed_of(&d))
                });
            }
            Role::Split { exec, to, to_owner } => {
                let k = posted[exec];
                posted[exec] += 1;
                let credit = if i < stopped[exec] {
                    out.push(iters[exec].next().expect("one result per executed"));
                    shared.outboxes[exec]
                        .read(k)
                        .expect("posted before it stopped")
                } else {
                    let d = run(i)?;
                    let (done, credit) = debit(store, &d.message, seed_of(&d));
                    out.push(done);
                    credit.map_or(1, |(_, a)| a + 1)
                };
                // Its owner applied it, unless it stopped before it or still owed it.
                let owed = unapplied[to_owner].next_if_eq(&i).is_some();
                if (i >= stopped[to_owner] || owed) && credit > 1 {
                    store.credit(to, credit - 1);
                }
            }
        }
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

#[cfg(test)]
#[path = "replay_tests.rs"]
mod tests;
