//! A primary verdict's noise split three ways: within a window (from the window's
//! parts), between the windows of one start (with `windows_per_start` above 1), and
//! between starts (the rest), on the log ratio of a start's windows averaged, as the
//! judge pairs them.

use super::{MetricNoise, PARTS};
use crate::comparison::{ComparisonMeta, VerdictKey};
use crate::work::execution_values;
use dyno_exec::{Execution, Outcome, Series, SeriesKind};
use dyno_stats::window_log_variance;

/// The series of `series` restricted to part `k` of `parts` of a `window_s` window,
/// times shifted to start at the part: levels and rates by time, counters with the
/// point at the part's start (their growth), observations by position.
pub(super) fn part_of(series: &[Series], window_s: f64, k: usize, parts: usize) -> Vec<Series> {
    let (a, b) = (
        window_s * k as f64 / parts as f64,
        window_s * (k + 1) as f64 / parts as f64,
    );
    series
        .iter()
        .map(|s| {
            let points: Vec<(f64, f64)> = match s.kind {
                SeriesKind::Observations => {
                    let n = s.points.len();
                    s.points[n * k / parts..n * (k + 1) / parts].to_vec()
                }
                SeriesKind::Counter => s
                    .points
                    .iter()
                    .filter(|p| p.0 >= a - 1e-9 && p.0 <= b + 1e-9)
                    .map(|p| (p.0 - a, p.1))
                    .collect(),
                _ => s
                    .points
                    .iter()
                    .filter(|p| p.0 > a + 1e-9 && p.0 <= b + 1e-9)
                    .map(|p| (p.0 - a, p.1))
                    .collect(),
            };
            Series {
                metric: s.metric.clone(),
                kind: s.kind,
                points,
            }
        })
        .collect()
}

/// `metric`'s value on each of [`PARTS`] equal parts of an execution's window, or `None`
/// when a part lacks it (a metric with one value per execution).
fn part_values(
    e: &Execution,
    metric: &str,
    work: Option<&crate::work::WorkUnit>,
) -> Option<Vec<f64>> {
    let window = crate::work::window_s(&e.series);
    if window <= 0.0 {
        return None;
    }
    (0..PARTS)
        .map(|k| {
            let part = part_of(&e.series, window, k, PARTS);
            execution_values(&part, work)
                .into_iter()
                .find(|v| v.metric.name == metric)
                .map(|v| v.value)
        })
        .collect()
}

/// Within-window variance on the log scale of `metric`'s value over a whole execution
/// (from its parts), or `None` when a part lacks it or a value is not positive.
#[cfg(test)]
pub(super) fn within_of(
    e: &Execution,
    metric: &str,
    work: Option<&crate::work::WorkUnit>,
) -> Option<f64> {
    window_log_variance(&part_values(e, metric, work)?)
}

/// Within-window variance of a round's log ratio, from the ratios of the two windows'
/// parts part by part. Side by side the two windows are the same seconds, and what moves
/// both nodes alike (drift, other work) cancels in each part's ratio as it does in the
/// whole window's; adding the two windows' own variances would count it twice and
/// predict more noise than the rounds show. Interleaved, the parts are independent and
/// this is the sum of the two.
fn within_of_ratio(
    baseline: &Execution,
    candidate: &Execution,
    metric: &str,
    work: Option<&crate::work::WorkUnit>,
) -> Option<f64> {
    let b = part_values(baseline, metric, work)?;
    let c = part_values(candidate, metric, work)?;
    if b.iter()
        .chain(&c)
        .any(|v| v.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater))
    {
        return None;
    }
    let ratios: Vec<f64> = c.iter().zip(&b).map(|(c, b)| c / b).collect();
    window_log_variance(&ratios)
}

/// The value of `metric` over a whole execution.
fn value_of(e: &Execution, metric: &str, work: Option<&crate::work::WorkUnit>) -> Option<f64> {
    execution_values(&e.series, work)
        .into_iter()
        .find(|v| v.metric.name == metric)
        .map(|v| v.value)
}

/// One start's windows of both subjects, paired window by window: the log ratio of each
/// window and its within-window variance (from the parts' ratios; `None` for a metric
/// with one value per execution).
pub(super) struct StartRatios<'a> {
    /// The baseline's and the candidate's execution of the first window paired (their
    /// placement is the start's).
    pub(super) first: (&'a Execution, &'a Execution),
    /// Per window, the log ratio and its within-window variance.
    pub(super) windows: Vec<(f64, Option<f64>)>,
}

impl StartRatios<'_> {
    /// The start's log ratio: its windows' mean, as the judge averages a start's windows.
    pub(super) fn log_ratio(&self) -> f64 {
        self.windows.iter().map(|w| w.0).sum::<f64>() / self.windows.len() as f64
    }
}

/// Every round's start of `key`'s two subjects where both completed at least one window
/// with a positive value, in round order.
pub(super) fn start_ratios<'a>(
    meta: &ComparisonMeta,
    executions: &'a [Execution],
    key: &VerdictKey,
) -> Vec<StartRatios<'a>> {
    let Some(baseline) = meta.subjects.first() else {
        return Vec::new();
    };
    let work = meta.work.get(&key.workload);
    let windows_of = |subject: &str, round: u32| {
        let mut w: Vec<&'a Execution> = executions
            .iter()
            .filter(|e| {
                e.subject == subject
                    && e.workload == key.workload
                    && e.round == round
                    && e.outcome == Outcome::Complete
            })
            .collect();
        w.sort_by_key(|e| e.window);
        w.dedup_by_key(|e| e.window);
        w
    };
    let mut out = Vec::new();
    for round in 0..meta.rounds {
        let (b, c) = (
            windows_of(baseline, round),
            windows_of(&key.candidate, round),
        );
        let mut first = None;
        let mut windows = Vec::new();
        for be in &b {
            let Some(ce) = c.iter().find(|ce| ce.window == be.window) else {
                continue;
            };
            let values = value_of(be, &key.metric, work).zip(value_of(ce, &key.metric, work));
            let Some((bv, cv)) = values.filter(|(b, c)| *b > 0.0 && *c > 0.0) else {
                continue;
            };
            first.get_or_insert((*be, *ce));
            windows.push(((cv / bv).ln(), within_of_ratio(be, ce, &key.metric, work)));
        }
        if let Some(first) = first {
            out.push(StartRatios { first, windows });
        }
    }
    out
}

/// Sample variance, `None` under 2 values.
fn variance(xs: &[f64]) -> Option<f64> {
    Some(dyno_stats::sample_stddev(xs)?.powi(2))
}

/// One primary verdict's three-way split (module docs): `None` under 2 starts.
pub(super) fn metric_noise(
    meta: &ComparisonMeta,
    executions: &[Execution],
    key: &VerdictKey,
    measure_s: f64,
) -> Option<MetricNoise> {
    let starts = start_ratios(meta, executions, key);
    let ratios: Vec<f64> = starts.iter().map(StartRatios::log_ratio).collect();
    let total = variance(&ratios).filter(|t| t.is_finite())?;
    let mut windows: Vec<usize> = starts.iter().map(|s| s.windows.len()).collect();
    windows.sort_unstable();
    let k = windows[windows.len() / 2].max(1) as f64;
    // Per window: the variance inside it (0 for a metric with one value per execution)
    // and from window to window of a start (which holds the windows' own noise too).
    let inside: Vec<f64> = starts
        .iter()
        .flat_map(|s| s.windows.iter().map(|w| w.1.unwrap_or(0.0)))
        .collect();
    let per_window_within = inside.iter().sum::<f64>() / inside.len().max(1) as f64;
    let spread: Vec<f64> = starts
        .iter()
        .filter_map(|s| variance(&s.windows.iter().map(|w| w.0).collect::<Vec<_>>()))
        .collect();
    let per_window_between = if spread.is_empty() {
        0.0
    } else {
        (spread.iter().sum::<f64>() / spread.len() as f64 - per_window_within).max(0.0)
    };
    // A start's mean of k windows holds 1/k of each; the parts' estimate is noisy, so
    // neither part may exceed what the starts vary by.
    let within = (per_window_within / k).min(total);
    let between_windows = (per_window_between / k).min(total - within);
    Some(MetricNoise {
        workload: key.workload.clone(),
        candidate: key.candidate.clone(),
        metric: key.metric.clone(),
        rounds: starts.len(),
        window_s: measure_s,
        windows_per_start: k as u32,
        log_ratio_variance: total,
        within,
        between_windows,
        between: total - within - between_windows,
    })
}
