//! Value types and parsers that the flags of several commands share.

use clap::ValueEnum;
use std::time::Duration;

/// The summary formats of a run (`--format` of `pipeline run`, `pipeline bench`,
/// `node` and `node run`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SummaryFormat {
    /// Lines for people.
    Table,
    /// The full summary as JSON.
    Json,
}

/// A positive number of seconds.
pub fn parse_seconds(s: &str) -> Result<Duration, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(Duration::from_secs_f64(v)),
        _ => Err(format!("must be a positive number of seconds, got `{s}`")),
    }
}

/// `0` (run until stopped) or a positive number of seconds.
pub fn parse_seconds_or_zero(s: &str) -> Result<Duration, String> {
    if s.parse::<f64>() == Ok(0.0) {
        return Ok(Duration::ZERO);
    }
    parse_seconds(s).map_err(|e| format!("{e} (or 0: until stopped)"))
}
