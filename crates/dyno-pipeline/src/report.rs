//! What a bench reports: fates, throughput, latency, checks, the window's metrics and
//! the diagnosis (JSON field names are stable).

use std::path::PathBuf;

use dyno_tango::snapshot::Snapshot;
use serde::Serialize;

use crate::diagnosis::Diagnosis;
use dyno_tiles::ledger::LedgerSummary;
pub use dyno_tiles::progress::Latency;
use dyno_tiles::tiles::{BankStats, BenchgStats, DedupStats, PackStats, VerifyStats};

/// Every generated transaction by fate; the fates are exclusive.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Fates {
    /// Published by benchg.
    pub generated: u64,
    /// Executed successfully.
    pub executed: u64,
    /// Executed and failed (fee charged when payable).
    pub failed: u64,
    /// Dropped by verify (bad signature or malformed).
    pub invalid_signature: u64,
    /// Dropped by dedup.
    pub duplicate: u64,
    /// Lost at ingress (verify overrun on an unreliable benchg->verify link).
    pub overrun_ingress: u64,
    /// Dropped by pack (its queue was full).
    pub pack_dropped: u64,
    /// Not yet at a fate when the run stopped.
    pub in_flight: u64,
}

impl Fates {
    /// Sum of the terminal fates (all but in flight).
    pub fn settled(&self) -> u64 {
        self.executed
            + self.failed
            + self.invalid_signature
            + self.duplicate
            + self.overrun_ingress
            + self.pack_dropped
    }
}

/// Transactions per second over the window.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Throughput {
    /// One value per full second of the window.
    pub per_second: Vec<f64>,
    /// Median of `per_second`.
    pub median: f64,
    /// Smallest second.
    pub min: f64,
    /// Largest second.
    pub max: f64,
    /// Landed transactions over the whole window / its length.
    pub overall: f64,
}

/// The result of a bench.
#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    /// Tile names in affinity order.
    pub tiles: Vec<String>,
    /// Verify tiles.
    pub verify_tiles: usize,
    /// Bank tiles.
    pub bank_tiles: usize,
    /// CPUs online.
    pub cpus_online: usize,
    /// Measured window, s.
    pub window_s: f64,
    /// Drain time after benchg stopped, s.
    pub drain_s: f64,
    /// Throughput.
    pub tps: Throughput,
    /// Generation to execution.
    pub latency_exec: Latency,
    /// Generation to being mixed into the hash chain.
    pub latency_poh: Latency,
    /// Fates.
    pub fates: Fates,
    /// Transactions signed before the window.
    pub presigned: u64,
    /// Seconds into the window when the pre-signed pool ran out (benchg signed live after).
    pub pool_exhausted_after_s: Option<f64>,
    /// Balances plus fees at the end equal the genesis total.
    pub conserved: bool,
    /// Genesis total.
    pub genesis_total: u128,
    /// Balances plus fees at the end.
    pub final_total: u128,
    /// PoH hashes per second while hashing (the chain's own rate).
    pub poh_hash_rate: f64,
    /// PoH ticks and slots.
    pub poh_ticks: u64,
    /// Slots.
    pub poh_slots: u64,
    /// Ledger file (store enabled).
    pub ledger: Option<PathBuf>,
    /// Result of re-hashing the ledger: entries and records, or why it failed.
    pub ledger_check: Option<std::result::Result<LedgerSummaryView, String>>,
    /// Non-fatal findings (affinity, drain timeout, store errors).
    pub warnings: Vec<String>,
    /// Metrics over the measured window (time shares, link counters).
    pub window: Snapshot,
    /// Which tile limits throughput, with evidence.
    pub diagnosis: Diagnosis,
    /// Per-transaction records (audit runs only).
    #[serde(skip)]
    pub audit: Option<Audit>,
}

impl BenchReport {
    /// A correctness check failed: balances not conserved, a transaction without a
    /// fate, or a ledger whose chain does not verify.
    pub fn check_failed(&self) -> bool {
        let f = &self.fates;
        !self.conserved
            || f.settled() + f.in_flight != f.generated
            || matches!(self.ledger_check, Some(Err(_)))
    }
}

/// A serializable view of a ledger check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LedgerSummaryView {
    /// Entries.
    pub entries: u64,
    /// Ticks.
    pub ticks: u64,
    /// Microblocks.
    pub microblocks: u64,
    /// Transaction records.
    pub records: u64,
}

impl From<LedgerSummary> for LedgerSummaryView {
    fn from(s: LedgerSummary) -> Self {
        LedgerSummaryView {
            entries: s.entries,
            ticks: s.ticks,
            microblocks: s.microblocks,
            records: s.records,
        }
    }
}

/// Everything the correctness checks need.
#[derive(Debug, Clone, Default)]
pub struct Audit {
    /// Benchg.
    pub benchg: BenchgStats,
    /// Verify tiles.
    pub verify: Vec<VerifyStats>,
    /// Dedup.
    pub dedup: DedupStats,
    /// Pack.
    pub pack: PackStats,
    /// Bank tiles (records and microblock accounts).
    pub banks: Vec<BankStats>,
    /// Genesis hash (start of the chain).
    pub genesis_hash: [u8; 32],
}

pub(crate) fn throughput(per_second: &[f64], landed: u64, window_s: f64) -> Throughput {
    let mut sorted = per_second.to_vec();
    sorted.sort_by(f64::total_cmp);
    Throughput {
        per_second: per_second.to_vec(),
        median: dyno_stats::median(&sorted).unwrap_or(0.0),
        min: sorted.first().copied().unwrap_or(0.0),
        max: sorted.last().copied().unwrap_or(0.0),
        overall: if window_s > 0.0 {
            landed as f64 / window_s
        } else {
            0.0
        },
    }
}
