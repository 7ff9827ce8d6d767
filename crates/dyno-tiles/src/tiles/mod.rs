//! The leader-pipeline tiles, each a [`Tile`] run by `dyno-tango`'s stem.
//!
//! Frags between tiles carry an envelope: `id u64` (the transaction's sequence number on
//! the benchg->verify link, which identifies one generated transaction), `gen_ns u64`
//! (when benchg published it, ns since the run's epoch) and the encoded transaction.
//! Microblocks (pack->bank) are `count u32` then `len u16` + envelope per transaction;
//! executed microblocks (bank->poh) are `count u32` then `signature (64), status u8,
//! gen_ns u64` per transaction; poh->store frags are ledger entries ([`crate::ledger`]).

use std::collections::{BinaryHeap, HashSet, VecDeque};
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use dyno_tango::mcache::FragMeta;
use dyno_tango::tile::{FragOutcome, Outputs, Tile};
use dyno_txn::sig::SignerKeys;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;
use sha2::{Digest, Sha256};

use crate::bank::{execute, AccountStore, Genesis, Outcome};
use crate::config::{LoadConfig, PackConfig, PohConfig};
use crate::hist::Histogram;
use crate::ledger::{hash_once, mix, EntryHeader, ENTRY_HEADER, RECORD_LEN};
use crate::telemetry::{BlockRecord, Telemetry};
use crate::tx::{self, AccountRef, Message, TxKind, SIG_LEN};

/// Bytes of the envelope header.
pub const ENV_HEADER: usize = 16;
/// Largest envelope.
pub const MAX_ENV: usize = ENV_HEADER + tx::MAX_TX_LEN;
/// Hashes PoH does per hook call, at least (unless the tick ends sooner).
pub const POH_BATCH: u64 = 64;
/// Waiting transactions pack looks at per microblock.
pub const SCAN_DEPTH: usize = 128;
/// Signature bit of a poh->store entry that ends a slot (the slot number is `sig >> 2`).
pub const SLOT_END: u64 = 2;
/// Bytes per transaction in an executed microblock.
pub const EXEC_RECORD: usize = SIG_LEN + 1 + 8;

/// State shared by the tiles of one run (one process).
#[derive(Debug)]
pub struct Shared {
    /// Time origin of `gen_ns`.
    pub epoch: Instant,
    /// Balances.
    pub store: AccountStore,
    /// Transactions executed or failed (landed), for the live TPS.
    pub landed: AtomicU64,
    /// Current PoH slot (pack resets its block cost at each new slot).
    pub slot: AtomicU64,
    /// Microblocks of each bank that are done: executed by the bank, or recorded by poh
    /// with `record_order` (pack then releases their locks; Release/Acquire).
    pub bank_done: Vec<AtomicU64>,
    /// Poh, not the bank, marks a microblock done, so with several banks the entries'
    /// order is an order they executed in (the forge sets it: its blocks are replayed in
    /// entry order; the pipeline bench, which replays nothing, does not).
    pub record_order: bool,
    /// Transactions held by pack (waiting or in microblocks not yet done).
    pub pack_held: AtomicU64,
    /// Latency and per-block stage timings for the node log.
    pub telemetry: Telemetry,
}

impl Shared {
    /// Shared state at genesis for `banks` bank tiles.
    pub fn new(g: &Genesis, banks: usize) -> Shared {
        Shared {
            epoch: Instant::now(),
            store: AccountStore::new(g),
            landed: AtomicU64::new(0),
            slot: AtomicU64::new(0),
            bank_done: (0..banks).map(|_| AtomicU64::new(0)).collect(),
            record_order: false,
            pack_held: AtomicU64::new(0),
            telemetry: Telemetry::default(),
        }
    }

    /// ns since the epoch.
    #[inline]
    pub fn now_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .map_or(0, |s| u64::from_le_bytes(s.try_into().expect("8 bytes")))
}

/// The transaction count a microblock (pack->bank, bank->poh) opens with; 0 when the
/// payload is too short to hold one.
fn microblock_count(payload: &[u8]) -> usize {
    payload.get(..4).map_or(0, |b| {
        u32::from_le_bytes(b.try_into().expect("4 bytes")) as usize
    })
}

/// Splits an envelope into id, gen_ns and transaction bytes.
pub fn open_envelope(b: &[u8]) -> Option<(u64, u64, &[u8])> {
    (b.len() >= ENV_HEADER).then(|| (u64_at(b, 0), u64_at(b, 8), &b[ENV_HEADER..]))
}

fn seal(buf: &mut Vec<u8>, id: u64, gen_ns: u64, tx: &[u8]) {
    buf.clear();
    buf.extend_from_slice(&id.to_le_bytes());
    buf.extend_from_slice(&gen_ns.to_le_bytes());
    buf.extend_from_slice(tx);
}

mod benchg;
mod dedup;
mod execute;
mod pack;
mod poh;
mod store;
mod verify;

pub use benchg::{Benchg, BenchgStats};
pub use dedup::{Dedup, DedupStats};
pub use execute::{Bank, BankStats, ExecRecord};
pub use pack::{Pack, PackStats};
pub use poh::{Poh, PohStats};
pub use store::Store;
pub use verify::{Verify, VerifyStats};
