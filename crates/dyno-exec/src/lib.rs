//! The execution data of dyno: what one measured run of a release is, below `dyno
//! compare` (which runs executions), the judge (dyno-judge, which judges stored ones) and
//! `dyno cluster` (whose runs are executions of a cluster subject).
//!
//! - [`Execution`]: a subject under a workload in one round, its [`Series`] (points of
//!   one metric over the measured window, read as their [`SeriesKind`] says) and its
//!   [`Outcome`].
//! - [`process_metrics`]: what an execution of a node's process records about its process
//!   tree, and [`CPU_SPAN_THRESHOLD`], the CPU share of a saturated second.
//! - [`ComparedRun`] (schema [`COMPARED_SCHEMA`]): a run handed from a child dyno to the
//!   comparison that started it, so a cluster runs in a process of its own and hands back
//!   this one type.
//!
//! The crate holds data and the rules that read it; it runs, measures, stores and prints
//! nothing, and imports no workspace crate but dyno-model. What runs an execution (the
//! `Executor` trait) is dyno-compare's, beside the judge, which never sees it.
//!
//! ```
//! use dyno_exec::{ComparedRun, Execution, Outcome, Series, SeriesKind};
//! use dyno_model::{Direction, Metric, Unit};
//!
//! // The child dyno writes its run ...
//! let mut run = ComparedRun::new(vec!["dyno".into(), "node".into(), "run".into()]);
//! run.series.push(Series {
//!     metric: Metric::new("cluster:fetch_s", Unit::Seconds, Direction::LowerIsBetter),
//!     kind: SeriesKind::Observations,
//!     points: vec![(0.0, 0.012), (1.0, 0.015)],
//! });
//! let json = run.to_json();
//!
//! // ... and the comparison reads it into the execution it started.
//! let mut exec = Execution::starting("v2", "steady", 0, vec!["cluster".into()]);
//! ComparedRun::parse(&json).unwrap().record(&mut exec, false);
//! assert_eq!(exec.outcome, Outcome::Complete);
//! assert_eq!(exec.series[0].points.len(), 2);
//! assert_eq!(exec.command_line, ["cluster", "dyno", "node", "run"]);
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod compared;
pub mod execution;
pub mod process;
pub mod series;

pub use compared::{ComparedError, ComparedRun, COMPARED_SCHEMA};
pub use execution::{Disturbance, Execution, Outcome, Placement, OTHER_CPU_METRIC};
pub use process::{process_metrics, CPU_SPAN_THRESHOLD};
pub use series::{Series, SeriesKind};
