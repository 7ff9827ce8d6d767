//! The dyno results store: every run and every sample any dyno command measures.
//!
//! The store is one SQLite file (by default [`Store::default_path`]) or, for a fleet of
//! machines, one PostgreSQL database named by a `postgres://` URL given where a path
//! goes (same schema, same migrations, same answers; see [`Store::open`]). Its schema follows
//! the data model of `dyno-model`: deduplicated **hosts** and **subjects**, **runs** (one
//! command invocation each), the **metrics** each run registered, and **samples**, one
//! measured value per metric and repetition, with optional JSON labels for extra
//! dimensions. Statistics are never stored: they are computed from the samples.
//!
//! - [`Store::open`] creates and migrates a store; a file that is not a dyno store, or a
//!   store from a newer dyno, is refused and left untouched.
//! - Runs are written as they happen: [`Store::begin_run`], then [`Store::add_samples`]
//!   (one committed transaction per call), then [`Store::finish_run`]. An interrupted
//!   command keeps everything it added.
//! - Several dyno processes may write one store at once (WAL journal, 10 s busy timeout).
//! - A run left `running` by a process that died is *reported* `incomplete` by
//!   [`Store::list_runs`] and [`Store::run`] when its writer (pid, process start time and
//!   boot id, recorded by `begin_run`) is known to be gone from this host;
//!   [`Store::reap_dead_runs`] writes that down. Runs written on other hosts are never
//!   judged.
//! - Every run has a globally unique id ([`RunSummary::uuid`]): [`Store::copy_run`] copies
//!   a run between stores (SQLite to PostgreSQL and back) once, however often it is asked.
//! - [`Store::fleet_runs`] answers "where does my machine stand?": the newest complete
//!   run of every machine that measured a metric, with its samples.
//! - [`Store::metric_history`] answers "how did this metric move over time?": one value
//!   (the median of its samples) per complete run, oldest first, filtered like the run
//!   list; an unknown metric is [`StoreError::NoSuchMetric`], apart from a filter that
//!   matched nothing (an empty history).
//! - [`Store::export`] streams samples in long format (one row per sample) as CSV, JSON
//!   lines or Parquet, in bounded memory.
//!
//! ```
//! use dyno_model::{Direction, Host, Metric, RunInfo, RunStatus, Sample, Subject, SubjectKind, Unit};
//! use dyno_store::{ExportFormat, RunFilter, Store};
//!
//! # fn main() -> Result<(), dyno_store::StoreError> {
//! let dir = tempfile::tempdir().unwrap();
//! let mut store = Store::open(&dir.path().join("results.db"))?;
//! let info = RunInfo {
//!     command: "machine".into(),
//!     subject: Subject::new(SubjectKind::Machine, "bench-01"),
//!     host: Host { hostname: "bench-01".into(), ..Host::default() },
//!     started_at: 1_795_303_031.0,
//!     command_line: vec!["dyno".into(), "machine".into()],
//!     tool_version: "0.1.0".into(),
//!     settings: serde_json::json!({ "duration_s": 5 }),
//! };
//! let blake2 = Metric::new("Blake2256", Unit::BytesPerSecond, Direction::HigherIsBetter);
//! let run = store.begin_run(&info, &[blake2])?;
//! store.add_samples(run, &[Sample { metric: "Blake2256".into(), repetition: 0, value: 1.2e9 }])?;
//! store.finish_run(run, RunStatus::Complete)?;
//!
//! let runs = store.list_runs(&RunFilter { command: Some("machine".into()), ..RunFilter::default() })?;
//! assert_eq!((runs[0].id, runs[0].samples, runs[0].status), (run, 1, RunStatus::Complete));
//!
//! let mut csv = Vec::new();
//! assert_eq!(store.export(&[run], ExportFormat::Csv, &mut csv)?, 1);
//! assert!(String::from_utf8(csv).unwrap().contains(",Blake2256,B/s,higher_is_better,0,1200000000,"));
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod error;
mod export;
mod filter;
mod fleet;
mod history;
mod pg;
mod query;
mod run;
mod schema;
mod sqlite;
mod store;
mod transfer;
mod url;
mod writer;

pub use error::StoreError;
pub use export::ExportFormat;
pub use filter::RunFilter;
pub use fleet::{FleetQuery, FleetRuns, MachineRun};
pub use history::{HistoryPoint, HistoryQuery};
pub use query::{RunSummary, StoredRun};
pub use schema::{MAGIC, SCHEMA_VERSION};
pub use store::Store;
pub use transfer::{Copied, CopyTally};
pub use url::{is_postgres_url, redact, split_password};

/// The id of a run in a store.
pub type RunId = i64;
