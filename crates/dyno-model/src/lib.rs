//! The shared vocabulary of dyno.
//!
//! Every dyno command measures a [`Subject`] on a [`Host`] during a [`Run`], and every
//! measured value is a [`Sample`] of one [`Metric`]. Statistics are computed from samples
//! and never stored instead of them, so this crate holds data only: no measuring, no
//! judging, no printing.
//!
//! ```
//! use dyno_model::{Direction, Metric, Unit};
//!
//! let blake2 = Metric::new("Blake2256", Unit::BytesPerSecond, Direction::HigherIsBetter);
//! assert!(blake2.direction.is_better(2.0, 1.0));
//! assert_eq!(Unit::BytesPerSecond.symbol(), "B/s");
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod build_info;
mod config_error;
mod host;
mod units;

pub use build_info::BuildInfo;
pub use config_error::{is_unprintable, key_at, line_col, locate_key, ConfigDiagnostic};
pub use host::{Filesystem, FsKind, Host};
pub use units::{format_binary_rate, format_value, Unit};

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Whether a larger or a smaller value of a metric is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Throughputs, rates, scores.
    HigherIsBetter,
    /// Latencies, times, sizes.
    LowerIsBetter,
}

impl Direction {
    /// True when `a` is strictly better than `b` in this direction.
    pub fn is_better(self, a: f64, b: f64) -> bool {
        match self {
            Direction::HigherIsBetter => a > b,
            Direction::LowerIsBetter => a < b,
        }
    }

    /// The stable name used in files and the store.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::HigherIsBetter => "higher_is_better",
            Direction::LowerIsBetter => "lower_is_better",
        }
    }

    /// Parses [`Direction::as_str`] back.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "higher_is_better" => Some(Direction::HigherIsBetter),
            "lower_is_better" => Some(Direction::LowerIsBetter),
            _ => None,
        }
    }
}

/// A named quantity with a unit and a direction.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Metric {
    /// Stable identifier, e.g. `Blake2256` or `Ed25519Verify`.
    pub name: String,
    /// Unit of every value of this metric (values are stored in base units).
    pub unit: Unit,
    /// Whether larger or smaller values are better.
    pub direction: Direction,
}

impl Metric {
    /// Builds a metric.
    pub fn new(name: impl Into<String>, unit: Unit, direction: Direction) -> Self {
        Metric {
            name: name.into(),
            unit,
            direction,
        }
    }
}

/// What kind of thing a run measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SubjectKind {
    /// The machine itself (`dyno machine`).
    Machine,
    /// A build variant of a Rust project (`dyno tune`).
    BuildVariant,
    /// A tile pipeline layout (`dyno pipeline`).
    Layout,
    /// A release or command (`dyno compare`).
    Release,
}

impl SubjectKind {
    /// The stable name used in files and the store.
    pub fn as_str(self) -> &'static str {
        match self {
            SubjectKind::Machine => "machine",
            SubjectKind::BuildVariant => "build_variant",
            SubjectKind::Layout => "layout",
            SubjectKind::Release => "release",
        }
    }

    /// Parses [`SubjectKind::as_str`] back.
    pub fn parse(s: &str) -> Option<Self> {
        [
            SubjectKind::Machine,
            SubjectKind::BuildVariant,
            SubjectKind::Layout,
            SubjectKind::Release,
        ]
        .into_iter()
        .find(|k| k.as_str() == s)
    }
}

/// What was measured: a machine, a build variant, a layout or a release.
///
/// `attributes` carries the kind-specific description (profile settings and binary hash
/// of a variant, tile counts of a layout, ...). Two subjects with the same kind, name and
/// attributes are the same subject.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subject {
    /// Kind of subject.
    pub kind: SubjectKind,
    /// Human name, e.g. the host name or a variant label.
    pub name: String,
    /// Kind-specific description, sorted by key so that it serialises stably.
    pub attributes: BTreeMap<String, String>,
}

impl Subject {
    /// A subject without attributes.
    pub fn new(kind: SubjectKind, name: impl Into<String>) -> Self {
        Subject {
            kind,
            name: name.into(),
            attributes: BTreeMap::new(),
        }
    }

    /// Adds one attribute (builder style).
    pub fn with(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.attributes.insert(key.into(), value.into());
        self
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Still measuring, or killed before it could say otherwise.
    Running,
    /// Finished every planned measurement.
    Complete,
    /// Stopped early (interrupt, error); its samples are kept.
    Incomplete,
    /// A measurement failed; samples taken before the failure are kept.
    Failed,
}

impl RunStatus {
    /// The stable name used in files and the store.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Complete => "complete",
            RunStatus::Incomplete => "incomplete",
            RunStatus::Failed => "failed",
        }
    }

    /// Parses [`RunStatus::as_str`] back.
    pub fn parse(s: &str) -> Option<Self> {
        [
            RunStatus::Running,
            RunStatus::Complete,
            RunStatus::Incomplete,
            RunStatus::Failed,
        ]
        .into_iter()
        .find(|k| k.as_str() == s)
    }
}

/// One invocation of a dyno command, as it is recorded before any sample.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// Which command (`machine`, `tune`, `pipeline`, `compare`).
    pub command: String,
    /// What was measured.
    pub subject: Subject,
    /// Where it was measured.
    pub host: Host,
    /// Start time, seconds since the Unix epoch (UTC).
    pub started_at: f64,
    /// The exact command line.
    pub command_line: Vec<String>,
    /// dyno's version and build profile, e.g. `0.1.0 (release, opt-level 3)`.
    pub tool_version: String,
    /// Command settings (durations, tolerance, workload...), as given.
    pub settings: serde_json::Value,
}

/// One measured value of one metric in one repetition of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Metric name; the metric's unit and direction are registered with the run.
    pub metric: String,
    /// Zero-based repetition index within the run.
    pub repetition: u32,
    /// The value in the metric's base unit, at full precision.
    pub value: f64,
}

/// A median's distribution-free interval with the level it reaches, as every report
/// writes it (`results show`, `dyno machine`). Fields are in the JSON documents'
/// (alphabetical) order.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MedianInterval {
    /// Upper bound.
    pub high: f64,
    /// Level reached.
    pub level: f64,
    /// Lower bound.
    pub low: f64,
}

/// The current time as seconds since the Unix epoch.
pub fn now_unix() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Formats seconds since the epoch as an RFC 3339 UTC timestamp (`2026-11-21T23:17:11Z`).
pub fn format_timestamp(unix: f64) -> String {
    let secs = unix.floor() as i64;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// Parses a date, `YYYY-MM-DD`, as seconds since the epoch at its UTC midnight: the
/// inverse of [`format_timestamp`] for whole days. `None` for anything else.
pub fn parse_date(s: &str) -> Option<f64> {
    let parts: Vec<&str> = s.split('-').collect();
    let [y, m, d] = parts.as_slice() else {
        return None;
    };
    let (y, m, d): (i64, i64, i64) = (y.parse().ok()?, m.parse().ok()?, d.parse().ok()?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    // Days from civil (Howard Hinnant), the inverse of civil_from_days.
    let y2 = if m <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    Some(((era * 146_097 + doe - 719_468) * 86_400) as f64)
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_utc_dates() {
        assert_eq!(format_timestamp(0.0), "1970-01-01T00:00:00Z");
        assert_eq!(format_timestamp(951_782_400.0), "2000-02-29T00:00:00Z");
        assert_eq!(format_timestamp(1_795_303_031.0), "2026-11-21T23:17:11Z");
    }

    #[test]
    fn dates_parse_to_their_utc_midnight() {
        assert_eq!(parse_date("1970-01-01"), Some(0.0));
        assert_eq!(parse_date("2000-02-29"), Some(951_782_400.0));
        for bad in [
            "2026-13-01",
            "2026-01-32",
            "2026-1",
            "yesterday",
            "2026-01-01-01",
        ] {
            assert_eq!(parse_date(bad), None, "{bad}");
        }
    }

    proptest::proptest! {
        #[test]
        fn a_formatted_day_parses_back(day in -700_000i64..700_000) {
            let t = (day * 86_400) as f64;
            proptest::prop_assert_eq!(parse_date(&format_timestamp(t)[..10]), Some(t));
        }
    }

    #[test]
    fn enums_round_trip_their_names() {
        for k in [
            SubjectKind::Machine,
            SubjectKind::Layout,
            SubjectKind::Release,
        ] {
            assert_eq!(SubjectKind::parse(k.as_str()), Some(k));
        }
        for s in [RunStatus::Running, RunStatus::Complete, RunStatus::Failed] {
            assert_eq!(RunStatus::parse(s.as_str()), Some(s));
        }
        assert_eq!(
            Direction::parse(Direction::LowerIsBetter.as_str()),
            Some(Direction::LowerIsBetter)
        );
        assert_eq!(SubjectKind::parse("bogus"), None);
    }

    #[test]
    fn direction_orders_values() {
        assert!(Direction::LowerIsBetter.is_better(1.0, 2.0));
        assert!(!Direction::LowerIsBetter.is_better(2.0, 2.0));
        assert!(!Direction::HigherIsBetter.is_better(1.0, 2.0));
    }
}
