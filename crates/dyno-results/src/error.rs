//! Errors of the analysis of stored results. Those of the user's input name the flag at
//! fault, as the binary prints them.

use std::path::PathBuf;

/// What went wrong analysing stored results.
#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    /// A statistic over stored values could not be computed (an infinite value in a
    /// history, see [`crate::TrendReport::analyse`]).
    #[error(transparent)]
    Stats(#[from] dyno_stats::StatsError),
    /// The results store failed or refused.
    #[error(transparent)]
    Store(#[from] dyno_store::StoreError),
    /// The store failed reading the run `--run` names.
    #[error("--run")]
    Run(#[source] dyno_store::StoreError),
    /// No sample in the store has the metric asked for.
    #[error("--metric {metric}: no run in {} measured a metric of that name{suggestion}", store.display())]
    UnknownMetric {
        /// The name asked for.
        metric: String,
        /// The store.
        store: PathBuf,
        /// `; did you mean X?` or the store's names ([`crate::metric_suggestion`]).
        suggestion: String,
    },
    /// The metric exists, but no complete run matches the filters.
    #[error("--metric {metric}: no complete run in {} matches the filters{filters}", store.display())]
    NoMatch {
        /// The metric.
        metric: String,
        /// The store.
        store: PathBuf,
        /// ` (--host x, --kind machine)`, or nothing when no filter was given.
        filters: String,
    },
    /// Too few runs for a trend.
    #[error(
        "--metric {metric}: history of {points} points; trend needs at least {}",
        crate::MIN_POINTS
    )]
    TooShort {
        /// The metric.
        metric: String,
        /// Runs in the history.
        points: usize,
    },
    /// No machine has a complete run of the fleet's command measuring the metric.
    #[error("--metric {metric}: no machine in {} has a complete `{command}` run measuring it{cpu}", store.display())]
    NoFleet {
        /// The metric.
        metric: String,
        /// The store.
        store: PathBuf,
        /// The command whose runs count.
        command: String,
        /// ` with a CPU model containing "X"`, or nothing.
        cpu: String,
    },
    /// The run `--run` names has no samples of the metric.
    #[error("--run {run}: the run has no samples of {metric}")]
    RunWithout {
        /// The run.
        run: dyno_store::RunId,
        /// The metric.
        metric: String,
    },
    /// `--host` names a machine without a complete run of the metric.
    #[error("--host {host}: no complete run of {metric} from that machine")]
    HostWithout {
        /// The host name.
        host: String,
        /// The metric.
        metric: String,
    },
    /// The export file could not be created, written or moved into place (a full disk,
    /// a directory named as the file).
    #[error("--output {}", path.display())]
    Output {
        /// The file asked for.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
}
