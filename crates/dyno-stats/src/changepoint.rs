//! Change points in a benchmark's history: where did the level of a metric shift, and is
//! the shift real?
//!
//! The method is Apache Otava's (formerly Hunter, and MongoDB's before it): **E-Divisive
//! means** proposes where a series splits, and a **Student t-test** between the two sides
//! decides whether the split is significant. Otava replaced E-Divisive's permutation test
//! by the t-test so that the same series always gives the same answer; so does this
//! module. Nothing here is random.
//!
//! # How a series is searched
//! 1. **Proposal.** For a stretch `y` of the series, every split `tau` (leaving at least
//!    [`ChangePointSettings::min_segment`] points on each side) is scored with the energy
//!    statistic of Matteson and James (2014, α = 1) between `A = y[..tau]` and
//!    `B = y[tau..]`:
//!    `Q(tau) = m r / (m + r) * (2 mean|a - b| - mean|a - a'| - mean|b - b'|)`, the
//!    means over all pairs. The split with the largest `Q` is the candidate.
//! 2. **Test.** The candidate is kept when a two-sided pooled Student t-test between `A`
//!    and `B` gives `p <= p_weak`. Then the search recurses (E-Divisive's bisection): the
//!    next candidate is the best split of any stretch between the change points found so
//!    far, until a candidate fails its test.
//! 3. **Windows.** Long histories are searched in windows of
//!    [`ChangePointSettings::window`] points that overlap by half, as Otava does, so an
//!    old large shift does not mask a recent small one.
//! 4. **Merge.** The candidates from all windows are tested again over the whole
//!    series, each against the stretches up to its neighbouring candidates. Of two
//!    candidates closer than `min_segment` (neighbouring windows that placed one shift a
//!    value apart) the less significant goes; then the candidate with the largest p-value
//!    goes while that p-value exceeds the threshold, and the rest are re-tested.
//!
//! # Weak and strong
//! The merge runs twice over the same candidates, as Otava's two passes do:
//! - at [`ChangePointSettings::p_strong`] (default 0.001): what survives is **strong**,
//!   each p-value taken against its strong neighbours. A candidate dropped while weaker
//!   candidates still cut its stretches short is added back when it is significant at
//!   `p_strong` against the strong points that remain.
//! - at the looser [`ChangePointSettings::p_weak`] (default 0.05): a survivor that is
//!   not strong is **weak** when, tested against the strong points around it, its
//!   p-value lies in `(p_strong, p_weak]`.
//!
//! So a strong point's p is never above `p_strong`, a weak point's always is, and weak
//! points never weaken the strong ones (an early version tested every point against all
//! its neighbours: noise marked weak cut the stretches of real shifts short, which cost
//! both detections and false alarms; BENCHMARKS.md, "Change points"). Weak points are worth a look (a shift building up, or noise); only
//! strong ones should fail a build (see [`latest_regression`]).
//!
//! # How far to trust the p-value
//! The t-test is applied to the split E-Divisive chose as the best, so the p-value is
//! optimistic: on a stationary series of 100 points, the best of ~100 splits is
//! "significant at 0.01" far more often than 1% of the time. That is why the default
//! strong threshold is small; the false-alarm rates actually measured are in
//! BENCHMARKS.md ("Change points").

use crate::better::Better;
use crate::error::{check_open_unit, StatsError};
use crate::student::student_t_sf;

/// How [`change_points`] searches a series. The defaults are what `dyno results trend`
/// uses; BENCHMARKS.md has the detection and false-alarm rates they give.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChangePointSettings {
    /// A change point is strong when its t-test p-value is at most this (default 0.001).
    pub p_strong: f64,
    /// A change point is weak when its p-value is at most this but above `p_strong`
    /// (default 0.05). Must be at least `p_strong`.
    pub p_weak: f64,
    /// Points per search window; windows overlap by half (default 50). At least
    /// `2 * min_segment`.
    pub window: usize,
    /// The fewest points on either side of a change point (default 3): a change at the
    /// very end of a series is found once it has this many points after it.
    pub min_segment: usize,
    /// Change points whose relative change `|after - before| / |before|` is below this
    /// are dropped, however significant (default 0: keep all).
    pub min_magnitude: f64,
}

impl Default for ChangePointSettings {
    fn default() -> Self {
        ChangePointSettings {
            p_strong: 0.001,
            p_weak: 0.05,
            window: 50,
            min_segment: 3,
            min_magnitude: 0.0,
        }
    }
}

impl ChangePointSettings {
    /// Checks the settings: p thresholds in (0, 1) with `p_strong <= p_weak`,
    /// `min_segment >= 1`, `window >= 2 * min_segment` and `min_magnitude >= 0`.
    pub fn validate(&self) -> Result<(), StatsError> {
        check_open_unit(self.p_strong, "p_strong")?;
        check_open_unit(self.p_weak, "p_weak")?;
        if self.p_weak < self.p_strong {
            return Err(StatsError::OutOfRange {
                what: "p_weak",
                value: self.p_weak,
                range: "[p_strong, 1)",
            });
        }
        if self.min_segment == 0 {
            return Err(StatsError::OutOfRange {
                what: "min_segment",
                value: 0.0,
                range: "[1, inf)",
            });
        }
        if self.window < 2 * self.min_segment {
            return Err(StatsError::OutOfRange {
                what: "window",
                value: self.window as f64,
                range: "[2 * min_segment, inf)",
            });
        }
        crate::error::check_non_negative(self.min_magnitude, "min_magnitude")
    }
}

/// How sure a change point is; see the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Strength {
    /// Significant at `p_weak` only.
    Weak,
    /// Significant at `p_strong`.
    Strong,
}

impl Strength {
    /// `"weak"` or `"strong"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Strength::Weak => "weak",
            Strength::Strong => "strong",
        }
    }
}

/// One shift in the level of a series.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChangePoint {
    /// Index of the first value of the new level (`1..len`).
    pub index: usize,
    /// Two-sided pooled t-test p-value between the stretches before and after, each
    /// reaching to the neighbouring change point of the same pass (or the series' end).
    pub p_value: f64,
    /// Mean of the stretch before.
    pub mean_before: f64,
    /// Mean of the stretch after.
    pub mean_after: f64,
    /// `(mean_after - mean_before) / |mean_before|`; infinite or NaN when
    /// `mean_before` is 0.
    pub relative_change: f64,
    /// Weak or strong.
    pub strength: Strength,
}

impl ChangePoint {
    /// True when the level moved in the worse direction of a metric where `better` is
    /// better.
    pub fn is_regression(&self, better: Better) -> bool {
        better.is_better(self.mean_before, self.mean_after)
    }
}

/// The change points of `values` (in time order), oldest first; see the module docs.
///
/// Errors: [`StatsError::NaN`] or [`StatsError::OutOfRange`] for a NaN or infinite value,
/// and [`StatsError::OutOfRange`] for settings that [`ChangePointSettings::validate`]
/// refuses. A series too short to split (fewer than `2 * min_segment` values) has none.
///
/// ```
/// use dyno_stats::{change_points, ChangePointSettings, Strength};
///
/// // 30 runs near 100, then 30 near 110: one strong change point, at run 30.
/// let values: Vec<f64> = (0..60)
///     .map(|i| if i < 30 { 100.0 } else { 110.0 } + [0.8, -1.1, 0.3, -0.4, 1.2][i % 5])
///     .collect();
/// let found = change_points(&values, &ChangePointSettings::default()).unwrap();
/// assert_eq!(found.len(), 1);
/// assert_eq!((found[0].index, found[0].strength), (30, Strength::Strong));
/// assert!((found[0].relative_change - 0.1).abs() < 0.01);
/// ```
pub fn change_points(
    values: &[f64],
    settings: &ChangePointSettings,
) -> Result<Vec<ChangePoint>, StatsError> {
    settings.validate()?;
    check_finite(values)?;
    let candidates = windowed_candidates(values, settings);
    let weak = merge(values, candidates.clone(), settings.p_weak, settings);
    let strong = strong_splits(values, candidates, settings);
    let cuts: Vec<usize> = strong.iter().map(|s| s.index).collect();
    let mut out: Vec<ChangePoint> = strong
        .iter()
        .map(|s| s.to_point(Strength::Strong))
        .collect();
    for w in weak.iter().filter(|w| !cuts.contains(&w.index)) {
        let s = against(values, &cuts, w.index, settings.min_segment);
        if s.p_value > settings.p_strong
            && s.p_value <= settings.p_weak
            && s.magnitude() >= settings.min_magnitude
        {
            out.push(s.to_point(Strength::Weak));
        }
    }
    out.sort_by_key(|c| c.index);
    Ok(out)
}

/// The change point that makes the newest value of a series of `len` values a
/// regression, if any: the **latest strong** change point, when it moved the level in
/// the worse direction and starts within the last `recent` values (`index >= len -
/// recent`).
///
/// This is the rule behind `dyno results trend`'s exit code 1. "Latest" means a later
/// strong change point (a fix, or a further shift) takes over; "within the last
/// `recent`" means one regression fails the builds that see it first, not every build
/// after it forever. With the default settings a change needs `min_segment` values
/// after it before it can be found at all, so `recent` should exceed `min_segment`.
pub fn latest_regression(
    points: &[ChangePoint],
    len: usize,
    better: Better,
    recent: usize,
) -> Option<&ChangePoint> {
    let latest = points
        .iter()
        .filter(|c| c.strength == Strength::Strong)
        .max_by_key(|c| c.index)?;
    (latest.is_regression(better) && latest.index + recent >= len).then_some(latest)
}

fn check_finite(values: &[f64]) -> Result<(), StatsError> {
    crate::error::check_no_nan(values, "values")?;
    match values.iter().find(|v| v.is_infinite()) {
        Some(&value) => Err(StatsError::OutOfRange {
            what: "values",
            value,
            range: "finite numbers",
        }),
        None => Ok(()),
    }
}

/// A change point with the statistics of the stretches around it.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Split {
    index: usize,
    /// |t| of the t-test, to rank splits whose p-values both underflow to 0.
    t: f64,
    p_value: f64,
    mean_before: f64,
    mean_after: f64,
}

impl Split {
    fn to_point(self, strength: Strength) -> ChangePoint {
        ChangePoint {
            index: self.index,
            p_value: self.p_value,
            mean_before: self.mean_before,
            mean_after: self.mean_after,
            relative_change: (self.mean_after - self.mean_before) / self.mean_before.abs(),
            strength,
        }
    }

    /// True when `self` is less significant than `other`.
    fn weaker_than(&self, other: &Split) -> bool {
        self.p_value > other.p_value || (self.p_value == other.p_value && self.t < other.t)
    }

    fn magnitude(&self) -> f64 {
        ((self.mean_after - self.mean_before) / self.mean_before.abs()).abs()
    }
}

/// Candidate indices from E-Divisive over windows of `settings.window` values that
/// overlap by half, sorted and without duplicates.
fn windowed_candidates(values: &[f64], settings: &ChangePointSettings) -> Vec<usize> {
    let n = values.len();
    let step = (settings.window / 2).max(1);
    let mut found = Vec::new();
    let mut start = 0;
    loop {
        let end = (start + settings.window).min(n);
        // The last window reaches back a full window, so the newest values are searched
        // with as much history as any other.
        let from = end.saturating_sub(settings.window);
        let window = &values[from..end];
        found.extend(
            e_divisive(window, settings.p_weak, settings.min_segment)
                .into_iter()
                .map(|i| i + from),
        );
        if end == n {
            break;
        }
        start += step;
    }
    found.sort_unstable();
    found.dedup();
    found
}

/// E-Divisive with a t-test: the significant change points of `x`, sorted.
fn e_divisive(x: &[f64], p_max: f64, min_segment: usize) -> Vec<usize> {
    let mut cuts: Vec<usize> = Vec::new();
    loop {
        let mut bounds = Vec::with_capacity(cuts.len() + 2);
        bounds.push(0);
        bounds.extend(&cuts);
        bounds.push(x.len());
        let best = bounds
            .windows(2)
            .filter_map(|w| {
                let (tau, q) = best_split(&x[w[0]..w[1]], min_segment)?;
                Some((w[0], w[0] + tau, w[1], q))
            })
            .max_by(|a, b| a.3.total_cmp(&b.3));
        let Some((lo, tau, hi, _)) = best else {
            return cuts;
        };
        if t_test(&x[lo..tau], &x[tau..hi]).1 > p_max {
            return cuts;
        }
        let at = cuts.partition_point(|&c| c < tau);
        cuts.insert(at, tau);
    }
}

/// The split `tau` of `y` (at least `min_segment` values each side) with the largest
/// energy statistic, and that statistic. O(n²): each step moves one value from the right
/// stretch to the left and updates the three sums of distances.
fn best_split(y: &[f64], min_segment: usize) -> Option<(usize, f64)> {
    let n = y.len();
    if n < 2 * min_segment || n < 2 {
        return None;
    }
    let first = min_segment.max(1);
    let dist = |i: usize, j: usize| (y[i] - y[j]).abs();
    // Sums of |a - a'| within the left stretch, |b - b'| within the right one, and
    // |a - b| across, for tau = first.
    let (mut within_left, mut within_right, mut across) = (0.0, 0.0, 0.0);
    for i in 0..n {
        for j in i + 1..n {
            match (i < first, j < first) {
                (true, true) => within_left += dist(i, j),
                (false, false) => within_right += dist(i, j),
                _ => across += dist(i, j),
            }
        }
    }
    let mut best: Option<(usize, f64)> = None;
    let mut tau = first;
    loop {
        let (m, r) = (tau as f64, (n - tau) as f64);
        let pairs = |k: f64| if k >= 2.0 { k * (k - 1.0) / 2.0 } else { 1.0 };
        let energy = 2.0 * across / (m * r) - within_left / pairs(m) - within_right / pairs(r);
        let q = m * r / (m + r) * energy;
        if best.is_none_or(|(_, b)| q > b) {
            best = Some((tau, q));
        }
        if tau + 1 > n - min_segment.max(1) {
            return best;
        }
        // Move y[tau] from the right stretch to the left one.
        let to_left: f64 = (0..tau).map(|i| dist(i, tau)).sum();
        let to_right: f64 = (tau + 1..n).map(|j| dist(tau, j)).sum();
        within_left += to_left;
        within_right -= to_right;
        across += to_right - to_left;
        tau += 1;
    }
}

/// Two-sided pooled (equal-variance) Student t-test between `a` and `b`, as Otava's
/// tester uses: `(|t|, p)`. Two constant stretches at different levels give `(inf, 0)`;
/// equal means, or too few values for a degree of freedom, give `(0, 1)`.
pub(crate) fn t_test(a: &[f64], b: &[f64]) -> (f64, f64) {
    let (na, nb) = (a.len() as f64, b.len() as f64);
    if a.is_empty() || b.is_empty() || a.len() + b.len() < 3 {
        return (0.0, 1.0);
    }
    let (ma, mb) = (mean_of(a), mean_of(b));
    let ss = |x: &[f64], m: f64| x.iter().map(|v| (v - m) * (v - m)).sum::<f64>();
    let df = na + nb - 2.0;
    let pooled = (ss(a, ma) + ss(b, mb)) / df;
    let se = (pooled * (1.0 / na + 1.0 / nb)).sqrt();
    let diff = (mb - ma).abs();
    // Differences at the level of rounding are no difference.
    if diff <= 1e-12 * ma.abs().max(mb.abs()) {
        return (0.0, 1.0);
    }
    if se == 0.0 {
        return (f64::INFINITY, 0.0);
    }
    let t = diff / se;
    (t, (2.0 * student_t_sf(t, df)).min(1.0))
}

fn mean_of(x: &[f64]) -> f64 {
    x.iter().sum::<f64>() / x.len() as f64
}

/// The strong change points among `candidates`: the merge at `p_strong`, then, while a
/// candidate it dropped is significant at `p_strong` against the strong points that
/// remain (it was dropped while weaker neighbours still cut its stretches short), the
/// most significant such candidate is added back and the merge runs again. The rounds
/// are bounded by the number of candidates, in case additions and drops ever cycle.
fn strong_splits(
    values: &[f64],
    candidates: Vec<usize>,
    settings: &ChangePointSettings,
) -> Vec<Split> {
    let indices = |splits: Vec<Split>| splits.iter().map(|s| s.index).collect::<Vec<_>>();
    let mut cuts = indices(merge(
        values,
        candidates.clone(),
        settings.p_strong,
        settings,
    ));
    for _ in 0..candidates.len() {
        let best = candidates
            .iter()
            .filter(|c| !cuts.contains(c))
            .map(|&c| against(values, &cuts, c, settings.min_segment))
            .filter(|s| s.p_value <= settings.p_strong && s.magnitude() >= settings.min_magnitude)
            .min_by(|a, b| a.p_value.total_cmp(&b.p_value).then(b.t.total_cmp(&a.t)));
        let Some(best) = best else { break };
        let at = cuts.partition_point(|&c| c < best.index);
        cuts.insert(at, best.index);
        cuts = indices(merge(values, cuts, settings.p_strong, settings));
    }
    merge(values, cuts, settings.p_strong, settings)
}

/// The split at `at` against the stretches up to the nearest of the sorted `cuts` on
/// either side (`at` not among them); p = 1 when either stretch is shorter than
/// `min_segment`.
fn against(values: &[f64], cuts: &[usize], at: usize, min_segment: usize) -> Split {
    let k = cuts.partition_point(|&c| c < at);
    let lo = k.checked_sub(1).map_or(0, |k| cuts[k]);
    let hi = cuts.get(k).copied().unwrap_or(values.len());
    let mut split = split_at(values, lo, at, hi);
    if at - lo < min_segment || hi - at < min_segment {
        split.t = 0.0;
        split.p_value = 1.0;
    }
    split
}

/// Re-tests `cuts` over the whole series, each against the stretches up to its
/// neighbours. First, of two cuts closer than `min_segment` (two windows placed one
/// shift a point apart), the less significant goes, each judged as if the other were not
/// there. Then the least significant cut goes while its p-value exceeds `p_max` (or its
/// change is below `min_magnitude`), and the rest are re-tested.
fn merge(
    values: &[f64],
    mut cuts: Vec<usize>,
    p_max: f64,
    settings: &ChangePointSettings,
) -> Vec<Split> {
    while let Some(i) = cuts
        .windows(2)
        .position(|w| w[1] - w[0] < settings.min_segment)
    {
        let lo = i.checked_sub(1).map_or(0, |k| cuts[k]);
        let hi = cuts.get(i + 2).copied().unwrap_or(values.len());
        let first = split_at(values, lo, cuts[i], hi);
        let second = split_at(values, lo, cuts[i + 1], hi);
        cuts.remove(if first.weaker_than(&second) { i } else { i + 1 });
    }
    loop {
        let splits: Vec<Split> = (0..cuts.len())
            .map(|i| {
                let lo = i.checked_sub(1).map_or(0, |k| cuts[k]);
                let hi = cuts.get(i + 1).copied().unwrap_or(values.len());
                split_at(values, lo, cuts[i], hi)
            })
            .collect();
        let worst = splits
            .iter()
            .enumerate()
            .filter(|(_, s)| s.p_value > p_max || s.magnitude() < settings.min_magnitude)
            .max_by(|a, b| a.1.p_value.total_cmp(&b.1.p_value));
        match worst {
            Some((i, _)) => {
                cuts.remove(i);
            }
            None => return splits,
        }
    }
}

/// The split of `values[lo..hi]` at `at`, with its t-test.
fn split_at(values: &[f64], lo: usize, at: usize, hi: usize) -> Split {
    let (before, after) = (&values[lo..at], &values[at..hi]);
    let (t, p_value) = t_test(before, after);
    Split {
        index: at,
        t,
        p_value,
        mean_before: mean_of(before),
        mean_after: mean_of(after),
    }
}

#[cfg(test)]
mod tests;
