//! Mozilla Perfherder's moving-window t-test, kept beside E-Divisive
//! ([`crate::change_points`]) so the two can be measured on the same series.
//!
//! For every point `i`, Perfherder compares a window of points before `i` with a window
//! starting at `i`, by Welch's t statistic on linearly weighted means (the points nearest
//! to `i` weigh most), and marks `i` as a change when `|t|` exceeds a threshold (7 by
//! default) and is a local maximum among its neighbours. A point is only judged once its
//! windows are full: a change is found 12 points after it at the earliest, by design.
//!
//! This follows `perf/alerts/analyze.py`'s `detect_changes` with one value per point
//! (dyno's per-run median): the back window grows from `min_back` up to `max_back` points
//! while no change has been seen, and shrinks back to `min_back` after one.

use crate::error::StatsError;

/// Perfherder's window sizes and threshold; the defaults are Perfherder's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MovingWindowSettings {
    /// Points a back window needs before the point can be judged (default 12).
    pub min_back: usize,
    /// Most points in a back window (default 24).
    pub max_back: usize,
    /// Points in the forward window, the point itself included (default 12).
    pub fore: usize,
    /// A change needs `|t|` above this (default 7).
    pub t_threshold: f64,
}

impl Default for MovingWindowSettings {
    fn default() -> Self {
        MovingWindowSettings {
            min_back: 12,
            max_back: 24,
            fore: 12,
            t_threshold: 7.0,
        }
    }
}

/// A change the moving-window t-test marked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WindowChange {
    /// Index of the first value of the new level.
    pub index: usize,
    /// Welch's t between the weighted windows (signed: positive when the level rose).
    pub t: f64,
    /// Weighted mean of the back window.
    pub mean_before: f64,
    /// Weighted mean of the forward window.
    pub mean_after: f64,
}

/// The changes Perfherder's moving-window t-test marks in `values` (time order).
///
/// Errors: [`StatsError::NaN`] for a NaN value, [`StatsError::OutOfRange`] for windows
/// of 0 points, `max_back < min_back`, or a threshold that is not a positive number.
///
/// ```
/// use dyno_stats::{moving_window_changes, MovingWindowSettings};
///
/// let values: Vec<f64> = (0..48)
///     .map(|i| if i < 24 { 100.0 } else { 130.0 } + [1.0, -1.0, 0.5, -0.5][i % 4])
///     .collect();
/// let found = moving_window_changes(&values, &MovingWindowSettings::default()).unwrap();
/// assert_eq!(found.iter().map(|c| c.index).collect::<Vec<_>>(), vec![24]);
/// ```
pub fn moving_window_changes(
    values: &[f64],
    settings: &MovingWindowSettings,
) -> Result<Vec<WindowChange>, StatsError> {
    validate(settings)?;
    crate::error::check_no_nan(values, "values")?;
    let n = values.len();
    // Pass 1: t for every point, with the back window Perfherder would use; a point is
    // judged only when both its windows are full.
    let mut scored: Vec<(WindowChange, bool)> = Vec::with_capacity(n);
    let mut since_change = 0usize;
    for i in 0..n {
        let reach = since_change.max(settings.min_back).min(settings.max_back);
        let back: Vec<f64> = values[i.saturating_sub(reach)..i]
            .iter()
            .rev()
            .copied()
            .collect();
        let fore = &values[i..(i + settings.fore).min(n)];
        let (t, before, after) = welch_t(&back, fore);
        if i > 0 {
            if t.abs() > settings.t_threshold {
                since_change = 0;
            } else {
                since_change += 1;
            }
        }
        let change = WindowChange {
            index: i,
            t,
            mean_before: before,
            mean_after: after,
        };
        scored.push((
            change,
            back.len() >= settings.min_back && fore.len() >= settings.fore,
        ));
    }
    // Pass 2: a judged point above the threshold whose neighbours' |t| (judged or not,
    // as in Perfherder) are not higher.
    let abs_t = |i: usize| scored.get(i).map_or(0.0, |s| s.0.t.abs());
    let out = scored
        .iter()
        .skip(1)
        .filter(|&&(c, judged)| {
            let t = c.t.abs();
            judged && t > settings.t_threshold && abs_t(c.index - 1) <= t && abs_t(c.index + 1) <= t
        })
        .map(|&(c, _)| c)
        .collect();
    Ok(out)
}

fn validate(s: &MovingWindowSettings) -> Result<(), StatsError> {
    let bad = |what, value: f64, range| Err(StatsError::OutOfRange { what, value, range });
    if s.min_back == 0 {
        return bad("min_back", 0.0, "[1, inf)");
    }
    if s.max_back < s.min_back {
        return bad("max_back", s.max_back as f64, "[min_back, inf)");
    }
    if s.fore == 0 {
        return bad("fore", 0.0, "[1, inf)");
    }
    if !(s.t_threshold > 0.0 && s.t_threshold.is_finite()) {
        return bad("t_threshold", s.t_threshold, "(0, inf)");
    }
    Ok(())
}

/// Perfherder's `calc_t`: Welch's t between windows whose means are weighted linearly
/// (weight `(n - k) / n` for the `k`-th point from the boundary) and whose variances
/// are taken about those weighted means. Returns `(t, mean_back, mean_fore)`; `back`
/// is ordered nearest first.
fn welch_t(back: &[f64], fore: &[f64]) -> (f64, f64, f64) {
    if back.is_empty() || fore.is_empty() {
        return (0.0, f64::NAN, f64::NAN);
    }
    let (m1, v1) = weighted(back);
    let (m2, v2) = weighted(fore);
    let delta = m2 - m1;
    let t = if delta == 0.0 {
        0.0
    } else if v1 == 0.0 && v2 == 0.0 {
        f64::INFINITY.copysign(delta)
    } else {
        delta / (v1 / back.len() as f64 + v2 / fore.len() as f64).sqrt()
    };
    (t, m1, m2)
}

/// Linearly weighted mean, and the sample variance about it (Perfherder's `analyze`).
fn weighted(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let (mut sum, mut weights) = (0.0, 0.0);
    for (k, v) in x.iter().enumerate() {
        let w = (n - k as f64) / n;
        sum += w * v;
        weights += w;
    }
    let mean = sum / weights;
    let variance = if x.len() > 1 {
        x.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (mean, variance)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wiggle(i: usize) -> f64 {
        [0.9, -1.3, 0.2, 1.1, -0.6, -0.3, 0.7, -0.7][i % 8]
    }

    #[test]
    fn a_large_step_is_found_at_its_index_once_the_forward_window_is_full() {
        let s = MovingWindowSettings::default();
        let series = |len: usize| -> Vec<f64> {
            (0..len)
                .map(|i| if i < 30 { 100.0 } else { 120.0 } + wiggle(i))
                .collect()
        };
        // 11 points after the step: the forward window is not full yet.
        assert!(moving_window_changes(&series(41), &s).unwrap().is_empty());
        let found = moving_window_changes(&series(42), &s).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].index, 30);
        assert!(found[0].t > 7.0 && found[0].mean_after > found[0].mean_before);
    }

    #[test]
    fn a_small_step_stays_below_the_threshold_of_7() {
        // A 1.5-unit step in noise of sd ~0.8: t about 4, under Perfherder's 7.
        let values: Vec<f64> = (0..60)
            .map(|i| if i < 30 { 100.0 } else { 101.5 } + wiggle(i))
            .collect();
        let strict = moving_window_changes(&values, &MovingWindowSettings::default()).unwrap();
        assert!(strict.is_empty(), "{strict:?}");
        let loose = MovingWindowSettings {
            t_threshold: 2.5,
            ..MovingWindowSettings::default()
        };
        let found = moving_window_changes(&values, &loose).unwrap();
        assert!(
            found.iter().any(|c| (29..=31).contains(&c.index)),
            "{found:?}"
        );
    }

    #[test]
    fn constant_series_have_no_change_and_bad_settings_are_refused() {
        let flat = vec![5.0; 50];
        assert!(
            moving_window_changes(&flat, &MovingWindowSettings::default())
                .unwrap()
                .is_empty()
        );
        let zero = MovingWindowSettings {
            fore: 0,
            ..MovingWindowSettings::default()
        };
        assert!(matches!(
            moving_window_changes(&flat, &zero),
            Err(StatsError::OutOfRange { what: "fore", .. })
        ));
        assert!(matches!(
            moving_window_changes(&[1.0, f64::NAN], &MovingWindowSettings::default()),
            Err(StatsError::NaN { .. })
        ));
    }

    #[test]
    fn weights_favour_the_points_next_to_the_boundary() {
        // Nearest first: weights 1, 2/3, 1/3.
        let (m, v) = weighted(&[3.0, 0.0, 0.0]);
        assert!((m - 1.5).abs() < 1e-12);
        assert!((v - (2.25 + 2.25 + 2.25) / 2.0).abs() < 1e-12);
    }
}
