//! # dyno-node: the reference node on a network
//!
//! A node reads the shared genesis file ([`genesis`]: accounts, slot length, validators
//! and their stake, from which every node derives the same leader schedule) and its own
//! config ([`config`]: id, listen addresses, peers). In the slots it leads it forges a
//! block ([`block`]: header + PoH entries) from its mempool on the tip of its chain and
//! announces the header; a node that lacks an announced block fetches the body from the
//! announcing peer, validates it ([`chain`]: leader, parent, PoH, every signature,
//! replay to the same state hash), adopts it and announces it onward. Transactions
//! reach the next leaders by relay between mempools ([`mempool`]). Everything the node
//! does is written to its event log ([`log`]), the contract the propagation analysis
//! reads. [`node::Node`] runs all of it over a [`transport::Transport`].
//!
//! ```
//! use dyno_node::genesis::{GenesisFile, Validator};
//! let g = GenesisFile {
//!     network: "doc".into(), seed: 1, accounts: 16, balance: 1_000, slot_ms: 400,
//!     genesis_time_ms: 0, max_block_txs: 20_000,
//!     validators: vec![Validator { id: "a".into(), stake: 1 }, Validator { id: "b".into(), stake: 0 }],
//! }
//! .load();
//! assert_eq!(g.leader(0), "a");
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod admission;
pub mod block;
pub mod chain;
pub mod config;
pub mod control;
pub mod error;
mod flood;
pub mod genesis;
pub mod hash;
pub mod load;
pub mod log;
pub mod mempool;
pub mod metrics;
pub mod node;
pub mod relay_check;
pub mod seal;
pub mod service;
pub mod transport;
pub mod verdict;
pub mod verify;

pub use error::{Error, Result};
pub use hash::Hash;
