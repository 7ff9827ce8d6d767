//! Where each primary metric's noise comes from, and the window, windows per start and
//! rounds that reach a precision soonest.
//!
//! A round is one start of each node; its log ratio (its windows averaged) varies within
//! a window (a finite window: a longer one averages more), between the windows of one
//! start (with `windows_per_start` above 1: the node's state moving while it runs) and
//! between starts (each start of a node lands differently: only more starts average
//! that). Each execution's window is cut into [`PARTS`] equal parts and every primary
//! metric computed on each part as on the whole window (CPU over the part, the work done
//! in it, the median of its levels and observations); how much the two subjects' part
//! ratios differ says the within-window variance, how much a start's window ratios differ
//! beyond it the between-window variance, and the rest is between starts ([`split`]).
//! Which recorded factor explains the between-start part is [`offsets`]'s; whether the
//! nodes were still settling when the windows opened, [`settling`]'s.
//!
//! From the split, the rounds a target change needs at other window lengths and windows
//! per start follow (with the test the comparison is judged by), and with each round's
//! length (one start per subject interleaved, one for all side by side: warm-up, windows,
//! and the start and stop time measured between stored starts) the choice that needs the
//! least time in all ([`Recommendation`]); a warm-up one window part longer when the
//! ratio was still settling after it.

use crate::comparison::{ComparisonMeta, Schedule, Workload};
use crate::comparison::{TestKind, VerdictKey};
use dyno_exec::Execution;
use dyno_stats::PowerQuestion;
use serde::Serialize;
use std::collections::BTreeMap;

pub mod offsets;
pub mod settling;
mod split;

pub use offsets::StartFactors;
pub use settling::Settling;

/// Equal parts each execution's window is cut into.
pub const PARTS: usize = 4;

/// Window lengths (seconds) a recommendation considers, besides the one run.
pub const WINDOWS: [f64; 12] = [
    5.0, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0, 90.0, 120.0, 180.0, 300.0, 600.0,
];

/// Windows per start a recommendation considers, besides the one run.
pub const WINDOWS_PER_START: [u32; 4] = [1, 2, 3, 5];

/// One primary verdict's noise, taken apart.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricNoise {
    /// The workload.
    pub workload: String,
    /// The candidate.
    pub candidate: String,
    /// The metric.
    pub metric: String,
    /// Starts (rounds) whose log ratio is known.
    pub rounds: usize,
    /// The measured window, seconds.
    pub window_s: f64,
    /// Windows averaged per start (the median over the starts).
    pub windows_per_start: u32,
    /// Variance of the per-start log ratios.
    pub log_ratio_variance: f64,
    /// Its part from inside the windows, at `window_s` (0 when the metric has one value
    /// per execution, such as `ready_s`).
    pub within: f64,
    /// Its part from window to window of one start (0 with one window per start).
    pub between_windows: f64,
    /// Its part from start to start.
    pub between: f64,
}

/// What reaches a target change soonest for one workload.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Recommendation {
    /// The change aimed at (0.05 = 5%).
    pub target: f64,
    /// Seconds one start takes besides its warm-up and windows (spawning, readiness,
    /// stopping), measured between stored starts.
    pub overhead_s: f64,
    /// The warm-up run, seconds.
    pub warmup_s: f64,
    /// At the window and windows per start run (and the warm-up chosen): rounds in all
    /// and their time.
    pub current: Option<Choice>,
    /// The fastest choice.
    pub fastest: Choice,
}

/// One window length and windows per start: the rounds and their time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Choice {
    /// The window, seconds.
    pub window_s: f64,
    /// Windows per start.
    pub windows_per_start: u32,
    /// The warm-up, seconds: the one run, or one window part longer where the ratio was
    /// still settling after it ([`Settling::warmup_needed`]).
    pub warmup_s: f64,
    /// Rounds in all.
    pub rounds: usize,
    /// Minutes in all.
    pub minutes: f64,
}

/// What the noise report says.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct NoiseReport {
    /// Per primary verdict.
    pub metrics: Vec<MetricNoise>,
    /// Per workload, when its metrics' noise is known.
    pub recommendations: BTreeMap<String, Recommendation>,
    /// Per primary verdict with enough starts: what explains the starts' offsets.
    pub factors: Vec<StartFactors>,
    /// Per primary verdict with enough starts: whether the warm-up was long enough.
    pub settling: Vec<Settling>,
}

impl MetricNoise {
    /// "kv-200: cpu_s_per_tx of v1.0.1: per-round sd 10.5% over 12 rounds; 74% of its
    /// variance between starts, 26% within the 20 s windows" (with the between-window
    /// part when a start has several).
    pub fn sentence(&self) -> String {
        let share = |x: f64| {
            if self.log_ratio_variance > 0.0 {
                100.0 * x / self.log_ratio_variance
            } else {
                0.0
            }
        };
        let windows = if self.windows_per_start > 1 {
            format!(
                ", {:.0}% between the {} windows of a start",
                share(self.between_windows),
                self.windows_per_start
            )
        } else {
            String::new()
        };
        format!(
            "{}: {} of {}: per-round sd {:.1}% over {} rounds; {:.0}% of its variance between starts{windows}, {:.0}% within the {} s windows",
            self.workload,
            self.metric,
            self.candidate,
            self.log_ratio_variance.sqrt() * 100.0,
            self.rounds,
            share(self.between),
            share(self.within),
            self.window_s
        )
    }

    /// The predicted variance of a start's log ratio at `k` windows of `window_s`
    /// seconds each: the between-start part stays, the between-window part shrinks with
    /// `k`, the within part with `k` and the window's length.
    pub fn variance_at(&self, window_s: f64, k: u32) -> f64 {
        let k0 = f64::from(self.windows_per_start.max(1));
        let per_window = self.between_windows * k0 + self.within * k0 * self.window_s / window_s;
        self.between + per_window / f64::from(k.max(1))
    }
}

impl Recommendation {
    /// "kv-200: 5.0% needs about 43 rounds at 20 s windows (52 min); the fastest:
    /// measure_s = 60, about 21 rounds at 60 s windows (41 min)".
    pub fn sentence(&self, workload: &str) -> String {
        let at = |c: &Choice| {
            let per_start = match c.windows_per_start {
                1 => String::new(),
                k => format!(", {k} per start"),
            };
            format!(
                "about {} rounds at {} s windows{per_start} ({:.0} min)",
                c.rounds, c.window_s, c.minutes
            )
        };
        let settings = |c: &Choice| {
            let k = match self.current {
                Some(now) if now.windows_per_start == c.windows_per_start => String::new(),
                None if c.windows_per_start == 1 => String::new(),
                _ => format!(", windows_per_start = {}", c.windows_per_start),
            };
            let warmup = if c.warmup_s == self.warmup_s {
                String::new()
            } else {
                format!(", warmup_s = {}", c.warmup_s)
            };
            format!("measure_s = {}{k}{warmup}", c.window_s)
        };
        let target = format!("{:.1}%", self.target * 100.0);
        let fastest = &self.fastest;
        match &self.current {
            Some(c)
                if c.window_s == fastest.window_s
                    && c.windows_per_start == fastest.windows_per_start
                    && c.warmup_s == self.warmup_s =>
            {
                format!(
                    "{workload}: {target} needs {}; no other window is faster",
                    at(c)
                )
            }
            Some(c)
                if c.window_s == fastest.window_s
                    && c.windows_per_start == fastest.windows_per_start =>
            {
                format!(
                    "{workload}: {target} needs {} with {}; no other window is faster",
                    at(c),
                    settings(c)
                )
            }
            Some(c) => format!(
                "{workload}: {target} needs {}; the fastest: {}, {}",
                at(c),
                settings(fastest),
                at(fastest)
            ),
            None => format!(
                "{workload}: {target} cannot be reached at the window run; the fastest: {}, {}",
                settings(fastest),
                at(fastest)
            ),
        }
    }
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

/// Seconds one round takes at `k` windows of `window_s` per start after `warmup_s` under
/// workload `name` (the other workloads keep theirs): interleaved, a start per subject and
/// workload one after another; side by side, one start per workload with every subject at
/// once.
fn round_s(
    meta: &ComparisonMeta,
    workloads: &[Workload],
    name: &str,
    (window_s, k, warmup_s): (f64, u32, f64),
    overhead: f64,
) -> f64 {
    let starts_per_workload = match meta.schedule {
        Schedule::SideBySide => 1.0,
        Schedule::Interleaved => meta.subjects.len() as f64,
    };
    workloads
        .iter()
        .map(|w| {
            let (t, k, warmup) = if w.name == name {
                (window_s, k, warmup_s)
            } else {
                (w.measure_s, meta.windows_per_start, w.warmup_s)
            };
            starts_per_workload * (warmup + f64::from(k.max(1)) * t + overhead)
        })
        .sum()
}

/// The noise report of a judgement's primary verdicts (the whole primary family): each
/// one's split, start factors and settling, and per workload the window and windows per
/// start (after the warm-up the settling asks for) reaching `target` soonest with `test`.
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
            .extend(split::metric_noise(meta, executions, key, w.measure_s));
        out.factors
            .extend(offsets::start_factors(meta, executions, key));
        out.settling.extend(settling::settling(
            meta,
            executions,
            key,
            (w.warmup_s, w.measure_s),
        ));
    }
    let overhead = overhead_s(executions, workloads, meta.windows_per_start);
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
    for w in workloads {
        let noises: Vec<&MetricNoise> = out
            .metrics
            .iter()
            .filter(|m| m.workload == w.name)
            .collect();
        if noises.is_empty() {
            continue;
        }
        let current_k = meta.windows_per_start.max(1);
        // Every choice leaves out the seconds the ratio was still settling in.
        let warmup_s = out
            .settling
            .iter()
            .filter(|s| s.workload == w.name)
            .filter_map(Settling::warmup_needed)
            .fold(w.warmup_s, f64::max);
        // With one window a start, what its windows would vary by is unknown: several
        // would be at best one longer window, so only the window length is chosen.
        let ks: &[u32] = if noises.iter().all(|m| m.windows_per_start <= 1) {
            &[1]
        } else {
            &WINDOWS_PER_START
        };
        let mut options: Vec<(f64, u32)> = Vec::new();
        for t in WINDOWS.iter().copied().chain([w.measure_s]) {
            for k in ks.iter().copied().chain([current_k]) {
                if !options.contains(&(t, k)) {
                    options.push((t, k));
                }
            }
        }
        let choices: Vec<Choice> = options
            .into_iter()
            .filter_map(|(t, k)| {
                let mut rounds = 0;
                for m in &noises {
                    rounds = rounds.max(rounds_for(m.variance_at(t, k).sqrt())?);
                }
                let seconds =
                    rounds as f64 * round_s(meta, workloads, &w.name, (t, k, warmup_s), overhead);
                Some(Choice {
                    window_s: t,
                    windows_per_start: k,
                    warmup_s,
                    rounds,
                    minutes: seconds / 60.0,
                })
            })
            .collect();
        let Some(fastest) = choices
            .iter()
            .min_by(|a, b| a.minutes.total_cmp(&b.minutes))
            .copied()
        else {
            continue;
        };
        let current = choices
            .iter()
            .find(|c| c.window_s == w.measure_s && c.windows_per_start == current_k)
            .copied();
        out.recommendations.insert(
            w.name.clone(),
            Recommendation {
                target,
                overhead_s: overhead,
                warmup_s: w.warmup_s,
                current,
                fastest,
            },
        );
    }
    out
}

impl NoiseReport {
    /// The report's lines: one per metric, one per workload's recommendation, one per
    /// metric's start factors, one per metric's settling after the warm-up.
    pub fn lines(&self) -> Vec<String> {
        self.metrics
            .iter()
            .map(MetricNoise::sentence)
            .chain(
                self.recommendations
                    .iter()
                    .map(|(w, r)| format!("recommended: {}", r.sentence(w))),
            )
            .chain(offsets::lines(&self.factors))
            .chain(
                settling::lines(&self.settling)
                    .into_iter()
                    .map(|l| format!("warm-up: {l}")),
            )
            .collect()
    }
}

#[cfg(test)]
mod tests;
