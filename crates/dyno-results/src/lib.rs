//! What was measured before, analysed: the documents of `dyno results list` and `show`,
//! a metric's trend over its stored history, and where a machine stands among all the
//! machines of a store.
//!
//! dyno-store stores runs and answers queries (a run, a run list, a metric's history, the
//! fleet's newest runs); this crate turns those answers into typed, schema-versioned
//! reports. It sits above the store and below the binary and `dyno serve`, so the terminal
//! and the web pages show the same numbers.
//!
//! - [`RunList`], [`RunShow`] (`dyno.results.list/1`, `dyno.results.show/1`), their
//!   tables ([`list_table`], [`show_table`]), [`metric_stats`] (the statistics of one
//!   stored metric), [`runs_report`] (the HTML report of stored runs) and [`export_file`].
//! - [`TrendReport`] (`dyno.results.trend/1`): change points of the history a
//!   [`TrendQuery`] selects and the verdict on its newest run, as a table or HTML.
//! - [`FleetReport`] (`dyno.results.fleet/1`): each machine's median of its newest run,
//!   grouped by CPU model, and where one machine or run ([`Place`]) stands.
//!
//! Reports are data plus their tables and pages; the binary chooses the format and
//! prints.
//!
//! ```
//! use dyno_model::{Direction, Host, Metric, RunInfo, RunStatus, Sample, Subject, SubjectKind, Unit};
//! use dyno_store::Store;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let mut store = Store::open(&dir.path().join("results.db"))?;
//! let info = RunInfo {
//!     command: "machine".into(),
//!     subject: Subject::new(SubjectKind::Machine, "bench-01"),
//!     host: Host { hostname: "bench-01".into(), ..Host::default() },
//!     started_at: 1_795_303_031.0,
//!     command_line: vec!["dyno".into(), "machine".into()],
//!     tool_version: "0.1.0".into(),
//!     settings: serde_json::json!({}),
//! };
//! let blake2 = Metric::new("Blake2256", Unit::BytesPerSecond, Direction::HigherIsBetter);
//! let run = store.begin_run(&info, &[blake2])?;
//! let samples: Vec<Sample> = [1.0e9, 1.2e9, 1.1e9]
//!     .iter()
//!     .enumerate()
//!     .map(|(i, v)| Sample { metric: "Blake2256".into(), repetition: i as u32, value: *v })
//!     .collect();
//! store.add_samples(run, &samples)?;
//! store.finish_run(run, RunStatus::Complete)?;
//!
//! let shown = dyno_results::RunShow::new(&store.run(run)?);
//! assert_eq!((shown.metrics[0].n, shown.metrics[0].median), (3, 1.1e9));
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod error;
mod export;
mod fleet;
mod run_docs;
mod runs;
mod standing;
mod trend;
mod trend_query;

pub use error::ResultsError;
pub use export::export_file;
pub use fleet::{
    better, FleetFilter, FleetGroup, FleetMachine, FleetReference, FleetReport, FleetStanding,
    MetricRef, Passes, ALL_MACHINES, FLEET_SCHEMA,
};
pub use run_docs::{
    cv_text, median_of, metric_stats, ListedRun, MetricStats, RunList, RunShow, ShownMetric,
    LIST_SCHEMA, SHOW_SCHEMA,
};
pub use runs::{list_table, runs_report, show_header, show_table};
pub use standing::Place;
pub use trend::{
    bisect_command, metric_suggestion, mixed_series, percent, TrendChange, TrendFilters,
    TrendPoint, TrendReport, TrendSettings, TrendVerdict, COMPARISON_FILE, GIT_COMMIT, MIN_POINTS,
    TREND_SCHEMA,
};
pub use trend_query::TrendQuery;
