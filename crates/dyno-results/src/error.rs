//! Errors of the analysis of stored results.

/// What went wrong analysing stored results.
#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    /// A statistic over stored values could not be computed (an infinite value in a
    /// history, see [`crate::TrendReport::analyse`]).
    #[error(transparent)]
    Stats(#[from] dyno_stats::StatsError),
}
