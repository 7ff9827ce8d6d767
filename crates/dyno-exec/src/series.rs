//! What an execution records: series of points over the measured window, and how each
//! series' points are read.

use dyno_model::Metric;
use serde::{Deserialize, Serialize};

/// How the points of a series are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SeriesKind {
    /// A level read once a second (RSS, a queue length): the run's value is its median.
    Gauge,
    /// A rate over consecutive intervals read from a cumulative counter (CPU %, faults
    /// and context switches per second): the run's value is the time-weighted mean of the
    /// intervals, which is the counter's growth over the whole window divided by the
    /// window. A median of per-second values would quantise: one second of /proc CPU
    /// ticks resolves 1% of a core, 11% of a node using 9%; the window's total resolves
    /// 1% over the window's seconds.
    Rate,
    /// The highest value seen (peak RSS): the run's value is its maximum.
    Peak,
    /// A cumulative count (a Prometheus counter): the run's value is its rate per second.
    Counter,
    /// Individual observations (latencies from JSON lines): the run's value is their
    /// median, and the report draws their distribution.
    Observations,
}

/// Points of one metric over the measured window (as JSON: how a child `dyno cluster
/// run` hands a cluster's compared metrics over, see [`crate::ComparedRun`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// The metric of the points.
    pub metric: Metric,
    /// How to read the points.
    pub kind: SeriesKind,
    /// `(seconds since the measured window started, value)`.
    pub points: Vec<(f64, f64)>,
}
