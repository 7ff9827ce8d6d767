//! Where each primary metric's noise comes from, and the window and rounds that reach a
//! precision soonest.
//!
//! A round's log ratio varies within the round (a finite window: a longer one averages
//! more) and between rounds (each start of a node lands differently: only more rounds
//! average that). Each execution's window is cut into [`PARTS`] equal parts and every
//! primary metric computed on each part as on the whole window (CPU over the part, the
//! work done in it, the median of its levels and observations); how much the parts
//! differ says the within-round variance of the whole window (`dyno_stats::NoiseSplit`
//! has the model). The rest of the per-round variance is between rounds.
//!
//! From the split, the rounds a target change needs at other window lengths follow, and
//! with each round's length (its executions' windows, warm-ups and the start and stop
//! time measured between stored executions) the window that needs the least time in
//! all ([`Recommendation`]).

use crate::comparison::{ComparisonMeta, Workload};
use crate::comparison::{TestKind, VerdictKey};
use crate::work::execution_values;
use dyno_exec::{Execution, Outcome, Series, SeriesKind};
use dyno_stats::{fastest_window, window_log_variance, NoiseSplit, PowerQuestion, WindowChoice};
use serde::Serialize;
use std::collections::BTreeMap;

/// Equal parts each execution's window is cut into.
pub const PARTS: usize = 4;

/// Window lengths (seconds) a recommendation considers, besides the one run.
pub const WINDOWS: [f64; 12] = [
    5.0, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0, 90.0, 120.0, 180.0, 300.0, 600.0,
];

/// One primary verdict's noise, taken apart.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricNoise {
    /// The workload.
    pub workload: String,
    /// The candidate.
    pub candidate: String,
    /// The metric.
    pub metric: String,
    /// Rounds whose log ratio and within-round variance are both known.
    pub rounds: usize,
    /// The measured window, seconds.
    pub window_s: f64,
    /// Variance of the per-round log ratios.
    pub log_ratio_variance: f64,
    /// Its part from inside the windows, at `window_s` (0 when the metric has one value
    /// per execution, such as `ready_s`).
    pub within: f64,
    /// Its part from round to round.
    pub between: f64,
}

/// The window and rounds that reach a target change soonest for one workload.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Recommendation {
    /// The change aimed at (0.05 = 5%).
    pub target: f64,
    /// Seconds one execution takes besides its warm-up and window (start, readiness,
    /// stop), measured between stored executions.
    pub overhead_s: f64,
    /// At the window run: rounds in all and their time.
    pub current: Option<Choice>,
    /// The fastest window.
    pub fastest: Choice,
}

/// One window's rounds and time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Choice {
    /// The window, seconds.
    pub window_s: f64,
    /// Rounds in all.
    pub rounds: usize,
    /// Minutes in all.
    pub minutes: f64,
}

impl From<WindowChoice> for Choice {
    fn from(c: WindowChoice) -> Choice {
        Choice {
            window_s: c.window_s,
            rounds: c.rounds,
            minutes: c.seconds / 60.0,
        }
    }
}

/// What the noise report says.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct NoiseReport {
    /// Per primary verdict.
    pub metrics: Vec<MetricNoise>,
    /// Per workload, when its metrics' noise is known.
    pub recommendations: BTreeMap<String, Recommendation>,
}

impl MetricNoise {
    /// "kv-200: cpu_s_per_tx of v1.0.1: per-round sd 10.5%; 74% of its variance between
    /// rounds, 26% within the 20 s windows".
    pub fn sentence(&self) -> String {
        let split = self.split();
        format!(
            "{}: {} of {}: per-round sd {:.1}% over {} rounds; {:.0}% of its variance between rounds, {:.0}% within the {} s windows",
            self.workload,
            self.metric,
            self.candidate,
            self.log_ratio_variance.sqrt() * 100.0,
            self.rounds,
            100.0 * (1.0 - split.within_share()),
            100.0 * split.within_share(),
            self.window_s
        )
    }

    fn split(&self) -> NoiseSplit {
        NoiseSplit {
            rounds: self.rounds,
            window_s: self.window_s,
            total: self.log_ratio_variance,
            within: self.within,
            between: self.between,
        }
    }
}

impl Recommendation {
    /// "kv-200: 5.0% needs about 43 rounds at 20 s windows (52 min); the fastest: 60 s
    /// windows, about 21 rounds (41 min)".
    pub fn sentence(&self, workload: &str) -> String {
        let at = |c: &Choice| {
            format!(
                "about {} rounds at {} s windows ({:.0} min)",
                c.rounds, c.window_s, c.minutes
            )
        };
        let target = format!("{:.1}%", self.target * 100.0);
        match &self.current {
            Some(c) if c.window_s == self.fastest.window_s => {
                format!("{workload}: {target} needs {}; no other window is faster", at(c))
            }
            Some(c) => format!(
                "{workload}: {target} needs {}; the fastest: measure_s = {}, {}",
                at(c),
                self.fastest.window_s,
                at(&self.fastest)
            ),
            None => format!(
                "{workload}: {target} cannot be reached at the window run; the fastest: measure_s = {}, {}",
                self.fastest.window_s,
                at(&self.fastest)
            ),
        }
    }
}

/// The series of `series` restricted to part `k` of `parts` of a `window_s` window,
/// times shifted to start at the part: levels and rates by time, counters with the
/// point at the part's start (their growth), observations by position.
fn part_of(series: &[Series], window_s: f64, k: usize, parts: usize) -> Vec<Series> {
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
fn within_of(e: &Execution, metric: &str, work: Option<&crate::work::WorkUnit>) -> Option<f64> {
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
    if b.iter().chain(&c).any(|v| !(*v > 0.0)) {
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

/// Seconds a start takes besides its warm-up and windows (spawning, readiness, stopping):
/// the median gap between consecutive starts, less the first's warm-up and windows. The
/// executions of one start (side by side, every subject; with `windows_per_start`, every
/// window) were begun within a second of each other and count once.
fn overhead_s(executions: &[Execution], workloads: &[Workload], windows_per_start: u32) -> f64 {
    let mut starts: Vec<&Execution> = Vec::new();
    for e in executions {
        if starts
            .last()
            .is_none_or(|s| (e.started_at - s.started_at).abs() >= 1.0)
        {
            starts.push(e);
        }
    }
    let windows = f64::from(windows_per_start.max(1));
    let gaps: Vec<f64> = starts
        .windows(2)
        .filter_map(|w| {
            let spec = workloads.iter().find(|s| s.name == w[0].workload)?;
            let gap = w[1].started_at - w[0].started_at - spec.warmup_s - windows * spec.measure_s;
            (0.0..600.0).contains(&gap).then_some(gap)
        })
        .collect();
    dyno_stats::median(&gaps).unwrap_or(1.0)
}

/// Seconds one round takes at a window of `window_s` under workload `name` (the other
/// workloads keep theirs): interleaved, a start per subject and workload one after
/// another; side by side, one start per workload with every subject at once.
fn round_s(
    meta: &ComparisonMeta,
    workloads: &[Workload],
    name: &str,
    window_s: f64,
    overhead: f64,
) -> f64 {
    let windows = f64::from(meta.windows_per_start.max(1));
    let starts_per_workload = match meta.schedule {
        crate::comparison::Schedule::SideBySide => 1.0,
        crate::comparison::Schedule::Interleaved => meta.subjects.len() as f64,
    };
    workloads
        .iter()
        .map(|w| {
            let t = if w.name == name {
                window_s
            } else {
                w.measure_s
            };
            starts_per_workload * (w.warmup_s + windows * t + overhead)
        })
        .sum()
}

/// The noise report of a judgement's primary verdicts (the whole primary family): each
/// one's split, and per workload the window reaching `target` soonest with `test`.
pub fn report(
    meta: &ComparisonMeta,
    executions: &[Execution],
    workloads: &[Workload],
    primary: &[VerdictKey],
    test: TestKind,
    target: f64,
) -> NoiseReport {
    let mut out = NoiseReport::default();
    for key in primary {
        let Some(w) = workloads.iter().find(|w| w.name == key.workload) else {
            continue;
        };
        out.metrics
            .extend(metric_noise(meta, executions, key, w.measure_s));
    }
    let overhead = overhead_s(executions, workloads, meta.windows_per_start);
    for Workload {
        name, measure_s, ..
    } in workloads
    {
        let splits: Vec<NoiseSplit> = out
            .metrics
            .iter()
            .filter(|m| &m.workload == name)
            .map(MetricNoise::split)
            .collect();
        let round_s = |t: f64| round_s(meta, workloads, name, t, overhead);
        let rounds_for = |sd: f64| {
            PowerQuestion {
                test: crate::power::power_test(test),
                n: 2,
                sd,
                alpha: meta.alpha,
                family: primary.len().max(1),
                power: crate::power::POWER,
            }
            .rounds_for(target)
        };
        let mut windows = WINDOWS.to_vec();
        if !windows.contains(measure_s) {
            windows.push(*measure_s);
        }
        let choices = fastest_window(&splits, &windows, round_s, rounds_for);
        let fastest = choices
            .iter()
            .min_by(|a, b| a.seconds.total_cmp(&b.seconds))
            .copied();
        if let (false, Some(fastest)) = (splits.is_empty(), fastest) {
            let current = choices.iter().find(|c| c.window_s == *measure_s).copied();
            out.recommendations.insert(
                name.clone(),
                Recommendation {
                    target,
                    overhead_s: overhead,
                    current: current.map(Choice::from),
                    fastest: fastest.into(),
                },
            );
        }
    }
    out
}

/// One primary verdict's split: the per-round log ratios of the rounds where both
/// subjects completed, and each round's within-window variance (0 for a metric with one
/// value per execution).
fn metric_noise(
    meta: &ComparisonMeta,
    executions: &[Execution],
    key: &VerdictKey,
    measure_s: f64,
) -> Option<MetricNoise> {
    let (workload, candidate, metric) = (&key.workload, &key.candidate, &key.metric);
    let baseline = meta.subjects.first()?;
    let complete = |subject: &str, round: u32| {
        executions.iter().find(|e| {
            e.subject == subject
                && e.workload == *workload
                && e.round == round
                && e.outcome == Outcome::Complete
        })
    };
    let work = meta.work.get(workload);
    let (mut ratios, mut within) = (Vec::new(), Vec::new());
    let mut any_within = false;
    for round in 0..meta.rounds {
        let (Some(b), Some(c)) = (complete(baseline, round), complete(candidate, round)) else {
            continue;
        };
        let (Some(bv), Some(cv)) = (value_of(b, metric, work), value_of(c, metric, work)) else {
            continue;
        };
        if !(bv > 0.0 && cv > 0.0) {
            continue;
        }
        ratios.push((cv / bv).ln());
        let w = within_of_ratio(b, c, metric, work);
        any_within |= w.is_some();
        within.push(w.unwrap_or(0.0));
    }
    if !any_within {
        within.iter_mut().for_each(|w| *w = 0.0);
    }
    let split = NoiseSplit::new(&ratios, &within, measure_s)?;
    Some(MetricNoise {
        workload: workload.to_string(),
        candidate: candidate.to_string(),
        metric: metric.to_string(),
        rounds: split.rounds,
        window_s: split.window_s,
        log_ratio_variance: split.total,
        within: split.within,
        between: split.between,
    })
}

impl NoiseReport {
    /// The report's lines: one per metric, one per workload's recommendation.
    pub fn lines(&self) -> Vec<String> {
        self.metrics
            .iter()
            .map(MetricNoise::sentence)
            .chain(
                self.recommendations
                    .iter()
                    .map(|(w, r)| format!("recommended: {}", r.sentence(w))),
            )
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyno_model::{Direction, Metric, Unit};

    fn cpu(points: Vec<(f64, f64)>) -> Series {
        Series {
            metric: Metric::new("cpu_percent", Unit::Percent, Direction::LowerIsBetter),
            kind: SeriesKind::Rate,
            points,
        }
    }

    #[test]
    fn parts_of_a_window_keep_each_kind_meaningful() {
        let c = cpu((1..=8).map(|t| (t as f64, t as f64)).collect());
        let counter = Series {
            metric: Metric::new("node:x_total", Unit::Count, Direction::HigherIsBetter),
            kind: SeriesKind::Counter,
            points: (0..=8).map(|t| (t as f64, 10.0 * t as f64)).collect(),
        };
        let part = part_of(&[c, counter], 8.0, 1, PARTS);
        // CPU: the seconds 3 and 4, shifted to start at 0.
        assert_eq!(part[0].points, vec![(1.0, 3.0), (2.0, 4.0)]);
        // The counter keeps the point at the part's start: its growth over the part.
        assert_eq!(part[1].points, vec![(0.0, 20.0), (1.0, 30.0), (2.0, 40.0)]);
    }

    #[test]
    fn a_steady_cpu_has_no_within_round_noise_and_a_jittery_one_has() {
        let mut steady = Execution::starting("a", "w", 0, vec![]);
        steady
            .series
            .push(cpu((1..=20).map(|t| (t as f64, 50.0)).collect()));
        assert_eq!(within_of(&steady, "cpu_percent", None), Some(0.0));
        let mut jitter = Execution::starting("a", "w", 0, vec![]);
        jitter.series.push(cpu((1..=20)
            .map(|t| (t as f64, if (t - 1) % 10 < 5 { 40.0 } else { 60.0 }))
            .collect()));
        let w = within_of(&jitter, "cpu_percent", None).unwrap();
        // Parts of 5 s: 40, 60, 40, 60 (the 5 s blocks line up with the parts).
        let logs = [40f64.ln(), 60f64.ln(), 40f64.ln(), 60f64.ln()];
        let mean = logs.iter().sum::<f64>() / 4.0;
        let var = logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / 3.0;
        assert!((w - var / 4.0).abs() < 1e-12, "{w}");
        // One value per execution: no parts, no within-round estimate.
        let mut ready = Execution::starting("a", "w", 0, vec![]);
        ready.series.push(Series {
            metric: Metric::new("ready_s", Unit::Seconds, Direction::LowerIsBetter),
            kind: SeriesKind::Gauge,
            points: vec![(0.0, 1.5)],
        });
        assert_eq!(within_of(&ready, "ready_s", None), None);
    }

    /// One round of two subjects: CPU a second over a 20 s window, both moved by the same
    /// wobble inside the window (what side by side cancels), the candidate by its own
    /// per-round offset; started `at` seconds into the comparison (the candidate `gap`
    /// seconds after the baseline: 0 side by side).
    fn round(r: u32, offset: f64, at: f64, gap: f64, wobble: f64) -> Vec<Execution> {
        ["a", "b"]
            .iter()
            .map(|s| {
                let mut e = Execution::starting(s, "w", r, vec![]);
                let level = if *s == "b" {
                    50.0 * (1.0 + offset)
                } else {
                    50.0
                };
                e.series.push(cpu((1..=20)
                    .map(|t| {
                        (
                            t as f64,
                            level * (1.0 + wobble * (t as f64 * 1.3 + r as f64).sin()),
                        )
                    })
                    .collect()));
                e.started_at = at + if *s == "b" { gap } else { 0.0 };
                e
            })
            .collect()
    }

    #[test]
    fn the_recommendation_agrees_with_the_sequential_rule_and_the_schedule_s_round_cost() {
        use crate::comparison::{Schedule, TestKind, VerdictKey};
        let workloads = [Workload::new("w", 1.0, 5.0, 20.0)];
        let offsets = [
            0.03, -0.02, 0.01, -0.04, 0.02, 0.0, -0.01, 0.035, -0.025, 0.015,
        ];
        let key = VerdictKey {
            workload: "w".into(),
            candidate: "b".into(),
            metric: "cpu_percent".into(),
        };
        for schedule in [Schedule::SideBySide, Schedule::Interleaved] {
            let side_by_side = schedule == Schedule::SideBySide;
            let mut meta = ComparisonMeta::of(&["a", "b"], &workloads, offsets.len() as u32);
            meta.schedule = schedule;
            // A start: 5 s warm-up, 20 s window, 2 s to spawn, be ready and stop.
            let (start, gap) = (27.0, if side_by_side { 0.0 } else { 27.0 });
            let round_len = if side_by_side { start } else { 2.0 * start };
            let execs: Vec<Execution> = offsets
                .iter()
                .enumerate()
                .flat_map(|(r, o)| round(r as u32, *o, r as f64 * round_len, gap, 0.3))
                .collect();
            let noise = report(
                &meta,
                &execs,
                &workloads,
                &[key.clone()],
                TestKind::Sequential,
                0.05,
            );
            let m = &noise.metrics[0];
            let ratios: Vec<f64> = offsets.iter().map(|o| (1.0 + o).ln()).collect();
            let total = dyno_stats::sample_stddev(&ratios).unwrap().powi(2);
            assert!((m.log_ratio_variance - total).abs() < 1e-12);
            // The wobble moves both alike: no part of a round's ratio is within the window
            // (the two windows' own variances added would be 30x the rounds' variance).
            assert!(m.within < 1e-12, "{m:?}");
            let rule = PowerQuestion {
                test: crate::power::power_test(TestKind::Sequential),
                n: 2,
                sd: total.sqrt(),
                alpha: meta.alpha,
                family: 1,
                power: crate::power::POWER,
            }
            .rounds_for(0.05)
            .unwrap();
            let r = noise.recommendations["w"];
            let current = r.current.unwrap();
            assert_eq!(current.rounds, rule, "the sequential rule's own rounds");
            assert!((r.overhead_s - 2.0).abs() < 1e-9, "{r:?}");
            // Side by side a round is one start of both; interleaved, one start each.
            let expected = rule as f64 * round_len / 60.0;
            assert!(
                (current.minutes - expected).abs() < 1e-9,
                "{schedule:?}: {r:?}"
            );
        }
    }
}
