//! The values an execution is judged by: one per metric and execution, computed from its
//! series as each series' kind says (the median of a level, the window mean of a rate,
//! the maximum of a peak, a counter's rate per second), never stored as the judge's own.
//! The execution, its series and its outcome are dyno-exec's data.

use dyno_exec::{Series, SeriesKind, CPU_SPAN_THRESHOLD};
use dyno_model::{Direction, Metric, Unit};

/// The series of the machine-speed reference that dyno stored beside each node for a while
/// (52704b2 and before: on-CPU seconds of one fixed piece of work after each reading). It
/// describes the machine, not the subject: stores that hold it are re-judged without it.
/// The reference was taken out when the quiet power study showed it no less noisy than
/// what it was to correct (BENCHMARKS.md, "Statistical power").
pub const REFERENCE_METRIC: &str = "ref_work_s";

/// One per-run value of one metric.
#[derive(Debug, Clone, PartialEq)]
pub struct RunValue {
    /// The metric (its unit is that of the value, e.g. /s for a counter's rate).
    pub metric: Metric,
    /// The value.
    pub value: f64,
}

/// The per-run values of a complete execution: the median of each gauge, the window mean
/// of each rate, the maximum of each peak, the rate of each counter, the median of each
/// set of observations, and the number and mean length (seconds) of the CPU-85% spans.
pub fn run_values(series: &[Series]) -> Vec<RunValue> {
    let mut out = Vec::new();
    for s in series {
        let values: Vec<f64> = s.points.iter().map(|p| p.1).collect();
        let value = match s.kind {
            SeriesKind::Gauge | SeriesKind::Observations => dyno_stats::median(&values),
            SeriesKind::Rate => window_mean(&s.points),
            SeriesKind::Peak => values.iter().copied().reduce(f64::max),
            SeriesKind::Counter => counter_rate(&s.points),
        };
        let Some(value) = value else { continue };
        let metric = match s.kind {
            SeriesKind::Counter => Metric::new(
                rate_name(&s.metric.name),
                Unit::PerSecond,
                s.metric.direction,
            ),
            _ => s.metric.clone(),
        };
        out.push(RunValue { metric, value });
        if s.metric.name == "cpu_percent" {
            let spans = dyno_stats::spans_at_or_above(&values, CPU_SPAN_THRESHOLD);
            let dt = sample_interval(&s.points);
            let mean_len = if spans.is_empty() {
                0.0
            } else {
                spans.iter().sum::<usize>() as f64 / spans.len() as f64 * dt
            };
            let lower = Direction::LowerIsBetter;
            out.push(RunValue {
                metric: Metric::new("cpu85_spans", Unit::Count, lower),
                value: spans.len() as f64,
            });
            out.push(RunValue {
                metric: Metric::new("cpu85_span_mean_s", Unit::Seconds, lower),
                value: mean_len,
            });
        }
    }
    out
}

/// The time-weighted mean of a rate series whose points `(t, rate)` each hold the rate
/// over the interval ending at `t`, the first starting at 0 (the window's start): the
/// counter's growth over the window divided by the window. Points at or before 0 (none
/// in practice) carry no interval.
pub fn window_mean(points: &[(f64, f64)]) -> Option<f64> {
    let mut start = 0.0;
    let (mut total, mut span) = (0.0, 0.0);
    for &(t, v) in points {
        let dt = t - start;
        if dt > 0.0 {
            total += v * dt;
            span += dt;
            start = t;
        }
    }
    (span > 0.0).then(|| total / span)
}

/// `family{labels}` -> `family_per_s{labels}`.
fn rate_name(series: &str) -> String {
    match series.find('{') {
        Some(i) => format!("{}_per_s{}", &series[..i], &series[i..]),
        None => format!("{series}_per_s"),
    }
}

/// `(last - first) / elapsed` of a cumulative counter; a reset (a drop) restarts the count.
pub fn counter_rate(points: &[(f64, f64)]) -> Option<f64> {
    let (first, last) = (points.first()?, points.last()?);
    let elapsed = last.0 - first.0;
    if elapsed <= 0.0 {
        return None;
    }
    let mut total = 0.0;
    for w in points.windows(2) {
        let d = w[1].1 - w[0].1;
        total += if d >= 0.0 { d } else { w[1].1 };
    }
    Some(total / elapsed)
}

/// The median spacing of the points (1 s for the sampler), so span lengths are seconds.
fn sample_interval(points: &[(f64, f64)]) -> f64 {
    let gaps: Vec<f64> = points.windows(2).map(|w| w[1].0 - w[0].0).collect();
    dyno_stats::median(&gaps).unwrap_or(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gauge(name: &str, values: &[f64]) -> Series {
        Series {
            metric: Metric::new(name, Unit::Percent, Direction::LowerIsBetter),
            kind: SeriesKind::Gauge,
            points: values
                .iter()
                .enumerate()
                .map(|(i, &v)| (i as f64, v))
                .collect(),
        }
    }

    #[test]
    fn per_run_values() {
        let cpu = gauge("cpu_percent", &[90.0, 95.0, 10.0, 86.0, 86.0, 86.0, 10.0]);
        let peak = Series {
            kind: SeriesKind::Peak,
            ..gauge("peak_rss_bytes", &[5.0, 9.0, 7.0])
        };
        let frags = Series {
            kind: SeriesKind::Counter,
            ..gauge("node:frags_total", &[100.0, 200.0, 300.0, 50.0, 150.0])
        };
        let v = run_values(&[cpu, peak, frags]);
        let get = |n: &str| v.iter().find(|r| r.metric.name == n).unwrap().value;
        assert_eq!(get("cpu_percent"), 86.0);
        assert_eq!(get("cpu85_spans"), 2.0);
        assert_eq!(get("cpu85_span_mean_s"), 2.5);
        assert_eq!(get("peak_rss_bytes"), 9.0);
        // 100 + 100 + (reset to 50) + 100 over 4 s
        assert_eq!(get("node:frags_total_per_s"), 87.5);
        assert_eq!(
            rate_name("x_total{link=\"a\"}"),
            "x_total_per_s{link=\"a\"}"
        );
        let rate = v
            .iter()
            .find(|r| r.metric.name == "node:frags_total_per_s")
            .unwrap();
        assert_eq!(rate.metric.unit, Unit::PerSecond);
    }
}
