//! # dyno-pipeline: a reference leader pipeline on the tile runtime
//!
//! The bench of the leader-pipeline tiles (which live in `dyno-tiles`, shared with the
//! node): `benchg` generates and signs transactions ([`tx`]), `verify` checks Ed25519
//! signatures, `dedup` drops repeated signatures, `pack` schedules non-conflicting
//! microblocks by fee per cost, `bank` executes them against an account store
//! ([`bank`]), `poh` mixes each microblock into a SHA-256 hash chain, and `store` appends
//! the entries to a ledger file. [`config`] reads a layout file, [`bench::run_bench`]
//! builds genesis, runs the layout and accounts for every transaction; [`diagnosis`]
//! names the bottleneck; [`session`] runs layouts, stores each as a run and returns
//! the typed report; [`sweep`] expands `--sweep` into checked layouts; [`summary`] is the
//! report as people read it; [`exposition`] serves a running workspace's metrics; and
//! [`layout_run`] stores `dyno pipeline run`'s synthetic layouts.
//!
//! The transaction format and the bank kernel live in `dyno-txn` (re-exported here as
//! [`tx`] and [`bank`]) so that `dyno machine` times the same execution code.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub use dyno_txn::{bank, tx};

pub use dyno_txn::{execution_bench, fund_initial_accounts, ExecutionBench};
pub mod bench;
pub mod config;
pub mod diagnosis;
pub mod error;
pub mod exposition;
pub mod layout_run;
pub mod monitor;
pub mod report;
pub mod session;
pub mod stored;
pub mod summary;
pub mod sweep;

pub use bench::{run_bench, BenchOptions, BenchReport, Fates, Progress};
pub use config::{BenchConfig, BenchOverrides};
pub use error::{Error, Result};
pub use exposition::PipelineEndpoint;
pub use layout_run::{layout_summary_text, store_layout_run, LayoutInvocation};
pub use session::{BenchRun, BenchSession, Invocation, Sinks};
pub use stored::stored_diagnosis_section;
pub use summary::{progress_line, summary_text, sweep_table};
pub use sweep::{sweep_configs, Sweep};
