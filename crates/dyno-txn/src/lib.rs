//! # dyno-txn: the reference node's transactions and bank
//!
//! Shared by the leader pipeline (`dyno-pipeline`, whose bank tiles execute these
//! transactions) and the machine benchmark (`dyno-hw`, whose transfer-execution metric
//! times the same kernel), so both measure one implementation: [`tx`] is the compact
//! signed wire format, [`bank`] the genesis, the account store and execution, and
//! [`replay`] a block's execution on several threads with the result of one (what a
//! follower validating a block runs, and the replay benchmark times).
//!
//! ```
//! use dyno_txn::bank::{fund_initial_accounts, transfer_block, AccountStore, execute};
//! let g = fund_initial_accounts(16, 1_000, 7);
//! let store = AccountStore::new(&g);
//! let tx = &transfer_block(&g, 1, 1)[0];
//! assert!(dyno_txn::tx::verify(tx));
//! let t = dyno_txn::tx::decode(tx).unwrap();
//! let (_, fee) = execute(&store, &t.message, 0);
//! assert_eq!(store.total() + fee as u128, g.total());
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod bank;
pub mod replay;
pub mod sig;
pub mod tx;

pub use bank::{execution_bench, fund_initial_accounts, ExecutionBench};
