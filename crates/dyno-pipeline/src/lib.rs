//! # dyno-pipeline: a reference leader pipeline on the tile runtime
//!
//! The tiles of a validator's leader pipeline doing real work on `dyno-tango`:
//! `benchg` generates and signs transactions ([`tx`]), `verify` checks Ed25519
//! signatures, `dedup` drops repeated signatures, `pack` schedules non-conflicting
//! microblocks by fee per cost, `bank` executes them against an account store
//! ([`bank`]), `poh` mixes each microblock into a SHA-256 hash chain, and `store` appends
//! the entries to a ledger file ([`ledger`]). [`bench::run_bench`] builds genesis, runs a
//! layout and accounts for every transaction; [`diagnosis`] names the bottleneck.
//!
//! ```
//! use dyno_pipeline::bank::{fund_initial_accounts, transfer_block, AccountStore, execute};
//! let g = fund_initial_accounts(16, 1_000, 7);
//! let store = AccountStore::new(&g);
//! let tx = &transfer_block(&g, 1, 1)[0];
//! assert!(dyno_pipeline::tx::verify(tx));
//! let t = dyno_pipeline::tx::decode(tx).unwrap();
//! let (_, fee) = execute(&store, &t.message, 0);
//! assert_eq!(store.total() + fee as u128, g.total());
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod bank;
pub mod tx;

pub use bank::{execution_bench, fund_initial_accounts, ExecutionBench};
pub mod bench;
pub mod config;
pub mod diagnosis;
pub mod error;
pub mod hist;
pub mod ledger;
pub mod report;
pub mod tiles;

pub use bench::{run_bench, BenchOptions, BenchReport, Fates, Progress};
pub use config::BenchConfig;
pub use error::{Error, Result};
