//! Machine benchmarks for validator nodes, compatible with Substrate's
//! `benchmark machine`, plus the extras other validators need.
//!
//! Measuring is separate from judging. [`measure`] runs one metric through the single
//! timing [`harness`] with Substrate's sizes, seeds and formulas, so scores compare with
//! the published minimums; [`requirements`] holds those minimums as data and applies
//! the pass rule; a [`session`] measures a whole run into the results store, and
//! [`output`] lays out what `dyno machine` shows. Nothing here prints: the caller shows
//! progress and chooses the format.
//!
//! ```no_run
//! use dyno_hw::{measure, Context, Durations, MetricId};
//! use std::sync::atomic::AtomicBool;
//! use std::time::Duration;
//!
//! let ctx = Context { base_path: ".".into(), parallel_cores: 8, cores_online: 2 };
//! let durations = Durations::uniform(Duration::from_secs(1));
//! let m = measure(MetricId::Blake2256, &ctx, &durations, &AtomicBool::new(false)).unwrap();
//! println!("{} MiB/s", m.score / 1048576.0);
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod bench;
pub mod harness;
mod metric;
pub mod output;
pub mod preflight;
pub mod report;
pub mod requirements;
pub mod session;
pub mod verdict;

pub use bench::{
    benchmark, clear_leftovers, registry, remove_temp_files, Benchmark, Context, Execution,
};
pub use harness::{Measurement, Workload};
pub use metric::{DurationClass, MetricId};
pub use output::{host_block, stored_verdict_section, MachineOutcome};
pub use report::{
    judge_stored, stored_minimums, MachineReport, MachineSettings, MetricReport, StoredJudgement,
    StoredSettings, MACHINE_SCHEMA, MINIMUMS_KEY,
};
pub use requirements::{judge, Judgement, Requirement, RequirementSet, RequirementsError};
pub use session::{
    begin_run, finish_run, measure_all, MachineRequest, MachineRun, MeasurePlan, Measured,
    RunError, StepProgress,
};
pub use verdict::{evaluate, MetricResult, Verdict};

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// Errors of a measurement.
#[derive(Debug, thiserror::Error)]
pub enum HwError {
    /// A file operation of a disk benchmark failed.
    #[error("cannot {what} {path}")]
    Io {
        /// What was being done.
        what: String,
        /// The file.
        path: String,
        /// The I/O error (a full disk shows here).
        source: std::io::Error,
    },
    /// The stop flag was raised (Ctrl-C).
    #[error("interrupted")]
    Interrupted,
    /// Anything else that made the measurement impossible.
    #[error("{0}")]
    Failed(String),
    /// The disk benchmarks' directory cannot be read. (The I/O errors of these
    /// variants are part of the message, not a source: the directory is the user's
    /// input, so the binary treats them as usage errors.)
    #[error("--base-path {}: {error}", path.display())]
    BasePathUnreadable {
        /// The directory.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The disk benchmarks' directory is not a directory.
    #[error("--base-path {}: not a directory", path.display())]
    BasePathNotADirectory {
        /// The path given.
        path: PathBuf,
    },
    /// The disk benchmarks' directory does not accept a file.
    #[error("--base-path {}: not writable ({error})", path.display())]
    BasePathNotWritable {
        /// The directory.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The write probe could not be removed from the disk benchmarks' directory.
    #[error("--base-path {}: cannot remove probe file ({error})", path.display())]
    BasePathProbeLeft {
        /// The directory.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// One step of a session (a metric, a repetition) failed or was interrupted.
    #[error("measuring {label}")]
    Step {
        /// The step, as progress shows it.
        label: String,
        /// What went wrong.
        source: Box<HwError>,
    },
    /// The results store refused a write of the session.
    #[error("{what}")]
    Store {
        /// What was being recorded.
        what: &'static str,
        /// The store's error.
        source: dyno_store::StoreError,
    },
}

impl HwError {
    /// Whether a session step was stopped by the stop flag (Ctrl-C) rather than failing.
    pub fn is_interrupted(&self) -> bool {
        matches!(self, HwError::Step { source, .. } if matches!(**source, HwError::Interrupted))
    }

    pub(crate) fn io(path: &Path, what: &str, source: std::io::Error) -> HwError {
        HwError::Io {
            what: what.to_string(),
            path: path.display().to_string(),
            source,
        }
    }
}

/// Time limits per kind of metric (Substrate's four flags plus dyno's extras).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Durations {
    /// `--hash-duration`.
    pub hash: Duration,
    /// `--verify-duration`.
    pub verify: Duration,
    /// `--memory-duration`.
    pub memory: Duration,
    /// `--disk-duration` (each disk benchmark).
    pub disk: Duration,
    /// `--extra-duration` (each extra metric).
    pub extra: Duration,
}

impl Durations {
    /// The same limit for every metric.
    pub fn uniform(d: Duration) -> Durations {
        Durations {
            hash: d,
            verify: d,
            memory: d,
            disk: d,
            extra: d,
        }
    }

    /// The limit for one metric.
    pub fn for_metric(&self, id: MetricId) -> Duration {
        match id.duration_class() {
            DurationClass::Hash => self.hash,
            DurationClass::Verify => self.verify,
            DurationClass::Memory => self.memory,
            DurationClass::Disk => self.disk,
            DurationClass::Extra => self.extra,
        }
    }
}

/// Prepares and times one metric once. Preparation (keys, buffers, files) is not timed;
/// files are removed before this returns, whatever the outcome.
pub fn measure(
    id: MetricId,
    ctx: &Context,
    durations: &Durations,
    stop: &AtomicBool,
) -> Result<Measurement, HwError> {
    let bench = benchmark(id);
    let limit = durations.for_metric(id);
    let mut m = match bench.execution(ctx) {
        Execution::Single => {
            let mut workload = bench.prepare(ctx)?;
            harness::run_timed(workload.as_mut(), limit, stop)
        }
        Execution::Parallel { threads, combine } => {
            harness::run_parallel(threads, || bench.prepare(ctx), limit, combine, stop)
        }
    }?;
    m.score = bench.score(m.score);
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_metric_measures_under_a_tiny_limit() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = Context {
            base_path: dir.path().to_path_buf(),
            parallel_cores: 2,
            cores_online: 2,
        };
        let durations = Durations::uniform(Duration::from_millis(1));
        for id in MetricId::ALL {
            let m = measure(id, &ctx, &durations, &AtomicBool::new(false)).unwrap();
            assert!(m.iterations >= 1, "{id}");
            assert!(m.score.is_finite(), "{id}");
            let expected_threads = match id {
                MetricId::Blake2256Parallel | MetricId::MemCopyAllCores => 2,
                _ => 1,
            };
            assert_eq!(m.threads, expected_threads, "{id}");
        }
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "no leftovers"
        );
    }

    #[test]
    fn durations_route_to_the_right_flag() {
        let d = Durations {
            hash: Duration::from_secs(1),
            verify: Duration::from_secs(2),
            memory: Duration::from_secs(3),
            disk: Duration::from_secs(4),
            extra: Duration::from_secs(5),
        };
        assert_eq!(d.for_metric(MetricId::Blake2256Parallel).as_secs(), 1);
        assert_eq!(d.for_metric(MetricId::Sr25519Verify).as_secs(), 2);
        assert_eq!(d.for_metric(MetricId::MemCopy).as_secs(), 3);
        assert_eq!(d.for_metric(MetricId::DiskRndWrite).as_secs(), 4);
        assert_eq!(d.for_metric(MetricId::Sha256Chain).as_secs(), 5);
        assert_eq!(d.for_metric(MetricId::MemCopyAllCores).as_secs(), 5);
    }
}
