//! A primary verdict's noise split three ways: within a window (from the window's
//! parts), between the windows of one start (with `windows_per_start` above 1), and
//! between starts (the rest), on the log ratio of a start's windows averaged, as the
//! judge pairs them.

use super::{MetricNoise, PARTS};
use crate::comparison::{ComparisonMeta, VerdictKey};
use crate::work::execution_values;
use dyno_exec::{Execution, Outcome, Series, SeriesKind};

/// Half the median spacing of a series' points (0.5 s for one point or none): how far a
/// sample's time may sit from the boundary it belongs to (samples land a few
/// milliseconds after each second).
fn half_step(points: &[(f64, f64)]) -> f64 {
    let steps: Vec<f64> = points.windows(2).map(|p| p[1].0 - p[0].0).collect();
    dyno_stats::median(&steps).map_or(0.5, |s| s / 2.0)
}

/// The series of `series` restricted to part `k` of `parts` of a `window_s` window,
/// times shifted to start at the part: rates and levels by the second each sample closes
/// (a sample at `t` covers the step before it), counters and the unit of work with the
/// sample nearest the part's start as well (their growth), observations by position.
pub(super) fn part_of(
    series: &[Series],
    window_s: f64,
    (k, parts): (usize, usize),
    work: Option<&crate::work::WorkUnit>,
) -> Vec<Series> {
    let (a, b) = (
        window_s * k as f64 / parts as f64,
        window_s * (k + 1) as f64 / parts as f64,
    );
    series
        .iter()
        .map(|s| {
            // The unit of work counts up whatever its kind: by its growth over the part,
            // from the sample nearest its start to the one nearest its end, so the parts
            // tile the window as its whole does (neighbours share a boundary's error).
            let counts =
                s.kind == SeriesKind::Counter || work.is_some_and(|w| w.metric == s.metric.name);
            let h = half_step(&s.points);
            let points: Vec<(f64, f64)> = match s.kind {
                _ if counts => s
                    .points
                    .iter()
                    .filter(|p| p.0 >= a - h && p.0 < b + h)
                    .map(|p| (p.0 - a, p.1))
                    .collect(),
                SeriesKind::Observations => {
                    let n = s.points.len();
                    s.points[n * k / parts..n * (k + 1) / parts].to_vec()
                }
                _ => s
                    .points
                    .iter()
                    .filter(|p| p.0 - h >= a - 1e-9 && p.0 - h < b - 1e-9)
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
pub(super) fn part_values(
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
            let part = part_of(&e.series, window, (k, PARTS), work);
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
    dyno_stats::window_log_variance(&part_values(e, metric, work)?)
}

/// The log ratios of the two windows' parts, part by part. Side by side the two windows
/// are the same seconds, and what moves both nodes alike (drift, other work) cancels in
/// each part's ratio as it does in the whole window's; adding the two windows' own
/// variances would count it twice and predict more noise than the rounds show.
fn part_log_ratios(
    baseline: &Execution,
    candidate: &Execution,
    metric: &str,
    work: Option<&crate::work::WorkUnit>,
) -> Option<Vec<f64>> {
    let b = part_values(baseline, metric, work)?;
    let c = part_values(candidate, metric, work)?;
    let positive = |v: &f64| v.partial_cmp(&0.0) == Some(std::cmp::Ordering::Greater);
    if !b.iter().chain(&c).all(positive) {
        return None;
    }
    Some(c.iter().zip(&b).map(|(c, b)| (c / b).ln()).collect())
}

/// The variance of a window's value (the mean of its parts) from its parts' values,
/// pooled over `windows` (each the parts of one window, all of one length `m >= 2`).
///
/// Batch means (`var(part) / m`) assume the parts independent. A value per unit of work
/// is not: a block counted at the end of one part is missing from the next, so adjacent
/// parts err in opposite directions and the window's error is its two ends', far less
/// than `var(part) / m` (for a counter's steps alone, `var(part) / m²`). So the parts are
/// taken as correlated with their neighbours only: the pooled moments of each window's
/// deviations from its own mean (their square, and the product of neighbours) are solved
/// for the parts' variance `g0` and neighbour covariance `g1`, their means' expectation
/// under that model, and the window's variance is `(m g0 + 2 (m - 1) g1) / m²`, at
/// least 0.
pub(super) fn window_mean_variance(windows: &[&[f64]]) -> Option<f64> {
    let m = windows.first()?.len();
    if m < 2 || windows.iter().any(|w| w.len() != m) {
        return None;
    }
    let (mut sq, mut nb, mut n_sq, mut n_nb) = (0.0, 0.0, 0usize, 0usize);
    for w in windows {
        let mean = w.iter().sum::<f64>() / m as f64;
        let d: Vec<f64> = w.iter().map(|x| x - mean).collect();
        sq += d.iter().map(|x| x * x).sum::<f64>();
        nb += d.windows(2).map(|p| p[0] * p[1]).sum::<f64>();
        n_sq += m;
        n_nb += m - 1;
    }
    let (m0, m1) = (sq / n_sq as f64, nb / n_nb as f64);
    let mf = m as f64;
    // The window's mean holds S / m² of the parts' covariances, S = m g0 + 2 (m - 1) g1;
    // each part's covariance with it is (g0 + neighbours g1) / m.
    let neighbours = |k: usize| f64::from(u8::from(k > 0) + u8::from(k + 1 < m));
    let pairs = (0..m - 1)
        .map(|k| neighbours(k) + neighbours(k + 1))
        .sum::<f64>()
        / (mf - 1.0);
    let (s0, s1) = (mf / (mf * mf), 2.0 * (mf - 1.0) / (mf * mf));
    // E[m0] = g0 - (s0 g0 + s1 g1); E[m1] = g1 - (2 g0 + pairs g1) / m + (s0 g0 + s1 g1).
    let (a, b) = (1.0 - s0, -s1);
    let (c, d) = (-2.0 / mf + s0, 1.0 - pairs / mf + s1);
    let det = a * d - b * c;
    if det.abs() < 1e-12 {
        return None;
    }
    let g0 = (m0 * d - b * m1) / det;
    let g1 = (a * m1 - c * m0) / det;
    Some((s0 * g0 + s1 * g1).max(0.0))
}

/// The value of `metric` over a whole execution.
fn value_of(e: &Execution, metric: &str, work: Option<&crate::work::WorkUnit>) -> Option<f64> {
    execution_values(&e.series, work)
        .into_iter()
        .find(|v| v.metric.name == metric)
        .map(|v| v.value)
}

/// One start's windows of both subjects, paired window by window: the log ratio of each
/// window and of its parts (`None` for a metric with one value per execution).
pub(super) struct StartRatios<'a> {
    /// The baseline's and the candidate's execution of the first window paired (their
    /// placement is the start's).
    pub(super) first: (&'a Execution, &'a Execution),
    /// Per window, the log ratio and its parts' log ratios.
    pub(super) windows: Vec<(f64, Option<Vec<f64>>)>,
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
            windows.push(((cv / bv).ln(), part_log_ratios(be, ce, &key.metric, work)));
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
    let parts: Vec<&[f64]> = starts
        .iter()
        .flat_map(|s| s.windows.iter().filter_map(|w| w.1.as_deref()))
        .collect();
    let per_window_within = window_mean_variance(&parts).unwrap_or(0.0);
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
