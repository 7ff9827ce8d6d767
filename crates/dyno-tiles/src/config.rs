//! The sections of the bench configuration that configure the tiles themselves (genesis,
//! load, verify, dedup, pack, bank, PoH, store), so that a node forging with the tiles and
//! the pipeline bench read the same typed settings. The whole file (`BenchConfig`, with
//! its layout and validation) is dyno-pipeline's.

use std::path::PathBuf;

use serde::Deserialize;

/// `[genesis]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GenesisConfig {
    /// Accounts funded at genesis (more accounts = fewer conflicts).
    pub fund_initial_accounts: usize,
    /// Balance of each.
    pub balance: u64,
    /// Seed of the keys and of the load.
    pub seed: u64,
}

impl Default for GenesisConfig {
    fn default() -> Self {
        GenesisConfig {
            fund_initial_accounts: dyno_txn::bank::DEFAULT_ACCOUNTS,
            balance: dyno_txn::bank::DEFAULT_BALANCE,
            seed: 1,
        }
    }
}

/// `[bench]`: what benchg generates.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LoadConfig {
    /// Transactions signed before the measured window (0 = sign every one live, which
    /// makes benchg compete with verify for the cores). Once used up, benchg signs live.
    pub presign: usize,
    /// Transactions per second offered; 0 = as fast as the pipeline takes them.
    pub rate: u64,
    /// Fraction of transactions whose two accounts come from the hot set.
    pub contention: f64,
    /// Size of the hot set.
    pub hot_accounts: usize,
    /// Fraction with a corrupted signature.
    pub invalid_fraction: f64,
    /// Fraction that repeat a recently sent transaction.
    pub duplicate_fraction: f64,
    /// Fraction of script (compute) transactions; the rest are transfers.
    pub script_fraction: f64,
    /// Compute budget of a script (rounds).
    pub script_budget: u64,
    /// Fees are uniform in [fee_min, fee_max].
    pub fee_min: u64,
    /// See `fee_min`.
    pub fee_max: u64,
}

impl Default for LoadConfig {
    fn default() -> Self {
        LoadConfig {
            presign: 100_000,
            rate: 0,
            contention: 0.0,
            hot_accounts: 4,
            invalid_fraction: 0.0,
            duplicate_fraction: 0.0,
            script_fraction: 0.0,
            script_budget: 20_000,
            fee_min: 5,
            fee_max: 5_000,
        }
    }
}

/// `[verify]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct VerifyConfig {
    /// Signatures verified together (1 = one at a time; a failed batch is re-checked one
    /// by one).
    pub batch: usize,
}

impl Default for VerifyConfig {
    fn default() -> Self {
        VerifyConfig { batch: 1 }
    }
}

/// `[dedup]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DedupConfig {
    /// Signatures remembered.
    pub depth: usize,
}

impl Default for DedupConfig {
    fn default() -> Self {
        DedupConfig { depth: 1 << 16 }
    }
}

/// `[pack]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PackConfig {
    /// Most transactions per microblock.
    pub max_txs_per_microblock: usize,
    /// Cost units per slot (block).
    pub block_cost_limit: u64,
    /// Transactions waiting in pack; beyond this new arrivals are dropped and counted.
    pub max_pending: usize,
    /// Microblocks a bank may hold at once.
    pub microblocks_per_bank: usize,
}

impl Default for PackConfig {
    fn default() -> Self {
        PackConfig {
            max_txs_per_microblock: 31,
            block_cost_limit: 48_000_000,
            max_pending: 1 << 16,
            microblocks_per_bank: 2,
        }
    }
}

/// `[bank]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct BankConfig {
    /// SHA-256 rounds of extra work per executed transaction (0 = none): a known
    /// slowdown that changes no state, for measuring what `dyno compare` can detect.
    pub extra_work_per_tx: u64,
}

/// Most rounds of `bank.extra_work_per_tx` (tens of milliseconds per transaction).
pub const MAX_EXTRA_WORK_PER_TX: u64 = 100_000;

/// `[poh]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PohConfig {
    /// SHA-256 hashes per tick.
    pub hashes_per_tick: u64,
    /// Target tick length in ns (the chain is paced to this; 0 = hash flat out).
    pub tick_ns: u64,
    /// Ticks per slot.
    pub ticks_per_slot: u64,
}

impl Default for PohConfig {
    fn default() -> Self {
        PohConfig {
            hashes_per_tick: 2_000,
            tick_ns: 6_250_000,
            ticks_per_slot: 64,
        }
    }
}

/// `[store]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StoreConfig {
    /// Write the ledger (false: no store tile, the pipeline's own ceiling).
    pub enabled: bool,
    /// Directory of the ledger file (default: the system temp directory); /dev/shm keeps
    /// it in memory.
    pub dir: Option<PathBuf>,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            enabled: true,
            dir: None,
        }
    }
}
