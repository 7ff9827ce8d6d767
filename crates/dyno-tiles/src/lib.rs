//! # dyno-tiles: the leader-pipeline tiles that a node and the pipeline bench share
//!
//! The tiles of a validator's leader pipeline doing real work on `dyno-tango`
//! ([`tiles`]): `benchg` generates and signs transactions, `verify` checks Ed25519
//! signatures, `dedup` drops repeated signatures, `pack` schedules non-conflicting
//! microblocks by fee per cost, `bank` executes them against an account store, `poh`
//! mixes each microblock into a SHA-256 hash chain, and `store` appends the entries to a
//! ledger file ([`ledger`]). [`forge`] runs the same tiles to forge one slot of a node's
//! block from its mempool. [`telemetry`] times each block's stages; a run reports
//! [`Progress`], from which the node log ([`node_log`]) and the node's metrics
//! ([`node_metrics`]) are written; [`node_families`] declares every `dyno_node_*`
//! family, the single-process node's and the network node's.
//!
//! This crate sits below both users: `dyno-node` forges with it and `dyno-pipeline`
//! benches it, and neither imports the other. The transaction format and the bank kernel
//! live in `dyno-txn` (re-exported here as [`tx`] and [`bank`]).
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub use dyno_txn::{bank, tx};

pub mod config;
pub mod error;
pub mod forge;
pub mod hist;
pub mod ledger;
pub mod node_families;
pub mod node_log;
pub mod node_metrics;
pub mod progress;
pub mod telemetry;
pub mod tiles;

pub use error::{Error, Result};
pub use progress::{Latency, Progress};
