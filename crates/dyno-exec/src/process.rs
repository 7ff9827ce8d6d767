//! What an execution of a node's process records about the process tree: the metrics the
//! /proc sampler yields, and the CPU share that makes a second count as saturated.

use crate::series::SeriesKind;
use dyno_model::{Direction, Metric, Unit};

/// CPU share (percent of one core) at or above which a sample counts towards a "CPU 85%
/// span", Cardano's measure of how long a node stays saturated.
pub const CPU_SPAN_THRESHOLD: f64 = 85.0;

/// The metrics the /proc sampler yields, in report order, with how each is read.
pub fn process_metrics() -> Vec<(Metric, SeriesKind)> {
    let lower = Direction::LowerIsBetter;
    vec![
        (
            Metric::new("cpu_percent", Unit::Percent, lower),
            SeriesKind::Rate,
        ),
        (
            Metric::new("rss_bytes", Unit::Bytes, lower),
            SeriesKind::Gauge,
        ),
        (
            Metric::new("peak_rss_bytes", Unit::Bytes, lower),
            SeriesKind::Peak,
        ),
        (
            Metric::new("minor_faults_per_s", Unit::PerSecond, lower),
            SeriesKind::Rate,
        ),
        (
            Metric::new("major_faults_per_s", Unit::PerSecond, lower),
            SeriesKind::Rate,
        ),
        (
            Metric::new("voluntary_switches_per_s", Unit::PerSecond, lower),
            SeriesKind::Rate,
        ),
        (
            Metric::new("involuntary_switches_per_s", Unit::PerSecond, lower),
            SeriesKind::Rate,
        ),
        (
            Metric::new("read_bytes_per_s", Unit::BytesPerSecond, lower),
            SeriesKind::Rate,
        ),
        (
            Metric::new("write_bytes_per_s", Unit::BytesPerSecond, lower),
            SeriesKind::Rate,
        ),
    ]
}
