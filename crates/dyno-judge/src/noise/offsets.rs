//! Which recorded factor explains the offsets between starts: each start of a node draws
//! its own offset between two copies of one binary, and the stored executions know two
//! things that differ from start to start besides the node's own randomness: its **CPU
//! placement** (with `cpus`, the crossover swaps the sets every round side by side) and
//! its **start order** (side by side, which subject was spawned first; interleaved, which
//! ran first in the round). The per-start log ratio is regressed on an indicator of each
//! (least squares); a factor's share is what the model loses without it (the overlap of
//! correlated factors split in proportion), the rest is unexplained.
//!
//! A factor that never varies (no `cpus`; interleaved `cpus`, where each subject keeps
//! its own set) cannot be separated from the change itself and is said so. With few starts
//! a factor that explains nothing still takes about `1 / (starts - 1)` of the variance by
//! chance.

use super::split::{start_ratios, StartRatios};
use crate::comparison::{ComparisonMeta, VerdictKey};
use dyno_exec::Execution;
use serde::Serialize;

/// Starts needed before the factors are estimated.
pub const MIN_STARTS: usize = 4;

/// What one factor explains.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Factor {
    /// It varied from start to start: its share of the between-start variance (0..1).
    Explains {
        /// The share.
        share: f64,
    },
    /// It was recorded but the same in every start (confounded with the change).
    Constant,
    /// Not recorded for every start (placement without `cpus`).
    NotRecorded,
}

/// What explains one primary verdict's start offsets.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StartFactors {
    /// The workload.
    pub workload: String,
    /// The candidate.
    pub candidate: String,
    /// The metric.
    pub metric: String,
    /// Starts used.
    pub starts: usize,
    /// The candidate's CPU set against the baseline's.
    pub placement: Factor,
    /// Whether the candidate started first.
    pub start_order: Factor,
    /// The share no recorded factor explains: the node's own randomness.
    pub unexplained: f64,
}

impl StartFactors {
    /// What explains the offsets, as [`lines`] says it after whose they are: "62%
    /// explained by CPU placement (cancelled by the crossover), 5% by start order, 33%
    /// unexplained (the node's own randomness)".
    pub fn sentence(&self) -> String {
        let placement = match self.placement {
            Factor::Explains { share } => format!(
                "{:.0}% explained by CPU placement (cancelled by the crossover)",
                share * 100.0
            ),
            Factor::Constant => "CPU placement the same every start (part of the change)".into(),
            Factor::NotRecorded => {
                "CPU placement not recorded (no `cpus`: the CPUs are shared)".into()
            }
        };
        let order = match self.start_order {
            Factor::Explains { share } => format!("{:.0}% by start order", share * 100.0),
            Factor::Constant => "start order the same every start".into(),
            Factor::NotRecorded => "start order not recorded".into(),
        };
        format!(
            "{placement}, {order}, {:.0}% unexplained (the node's own randomness)",
            self.unexplained * 100.0
        )
    }

    /// Whose offsets these are: "kv-200: cpu_s_per_tx of v1.0.1".
    fn whose(&self) -> String {
        format!("{}: {} of {}", self.workload, self.metric, self.candidate)
    }
}

/// One line per finding, the metrics that say the same of the same starts folded into
/// one (without `cpus` every metric's line reads alike): "start offsets: kv-200:
/// cpu_s_per_tx of v1.0.1 over 16 starts: 62% explained by CPU placement (...), ...".
pub fn lines(factors: &[StartFactors]) -> Vec<String> {
    let mut found: Vec<(usize, String, Vec<String>)> = Vec::new();
    for f in factors {
        let said = f.sentence();
        match found
            .iter_mut()
            .find(|(starts, s, _)| *starts == f.starts && *s == said)
        {
            Some((_, _, whose)) => whose.push(f.whose()),
            None => found.push((f.starts, said, vec![f.whose()])),
        }
    }
    found
        .into_iter()
        .map(|(starts, said, whose)| {
            format!(
                "start offsets: {} over {starts} starts: {said}",
                whose.join(", ")
            )
        })
        .collect()
}

/// 1 when the candidate ran on the CPU set that sorts first, 0 when the baseline did;
/// `None` without `cpus` or with one set for both.
fn placement_of(baseline: &Execution, candidate: &Execution) -> Option<f64> {
    let (b, c) = (
        baseline.placement.cpus.as_ref()?,
        candidate.placement.cpus.as_ref()?,
    );
    (b != c).then(|| f64::from(u8::from(c < b)))
}

/// 1 when the candidate started first (side by side, spawned first; interleaved, its
/// execution began first in the round), else 0.
fn order_of(baseline: &Execution, candidate: &Execution) -> f64 {
    let key = |e: &Execution| (e.placement.spawned, e.started_at);
    let (b, c) = (key(baseline), key(candidate));
    f64::from(u8::from(c.0 < b.0 || (c.0 == b.0 && c.1 < b.1)))
}

/// Centred copy of `xs`, and its sum of squares.
fn centred(xs: &[f64]) -> (Vec<f64>, f64) {
    let mean = xs.iter().sum::<f64>() / xs.len() as f64;
    let c: Vec<f64> = xs.iter().map(|x| x - mean).collect();
    let ss = c.iter().map(|x| x * x).sum();
    (c, ss)
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The shares of `y`'s variance that `factors` (centred indicators, `None` where one
/// is constant) explain, and the unexplained rest (module docs).
fn shares(y: &[f64], factors: [Option<&[f64]>; 2]) -> ([f64; 2], f64) {
    let (y, syy) = centred(y);
    if syy <= 0.0 {
        return ([0.0; 2], 1.0);
    }
    let xs: Vec<(usize, Vec<f64>, f64)> = factors
        .iter()
        .enumerate()
        .filter_map(|(i, f)| f.map(|f| (i, centred(f))))
        .filter(|(_, (_, ss))| *ss > 1e-12)
        .map(|(i, (c, ss))| (i, c, ss))
        .collect();
    // R² of one factor alone, and of both (two regressors: the normal equations).
    let alone = |x: &[f64], sxx: f64| dot(x, &y).powi(2) / (sxx * syy);
    let mut out = [0.0; 2];
    let full = match xs.as_slice() {
        [] => 0.0,
        [(i, x, sxx)] => {
            out[*i] = alone(x, *sxx);
            out[*i]
        }
        [(i, x1, s11), (j, x2, s22), ..] => {
            let s12 = dot(x1, x2);
            let det = s11 * s22 - s12 * s12;
            let (s1y, s2y) = (dot(x1, &y), dot(x2, &y));
            let full = if det > 1e-12 {
                ((s22 * s1y - s12 * s2y) * s1y + (s11 * s2y - s12 * s1y) * s2y) / det / syy
            } else {
                alone(x1, *s11).max(alone(x2, *s22))
            };
            let (own1, own2) = (
                (full - alone(x2, *s22)).max(0.0),
                (full - alone(x1, *s11)).max(0.0),
            );
            let overlap = (full - own1 - own2).max(0.0);
            let sum = (own1 + own2).max(1e-12);
            out[*i] = own1 + overlap * own1 / sum;
            out[*j] = own2 + overlap * own2 / sum;
            full
        }
    };
    (out, (1.0 - full).clamp(0.0, 1.0))
}

/// What explains `key`'s start offsets, with at least [`MIN_STARTS`] starts.
pub(super) fn start_factors(
    meta: &ComparisonMeta,
    executions: &[Execution],
    key: &VerdictKey,
) -> Option<StartFactors> {
    let starts = start_ratios(meta, executions, key);
    if starts.len() < MIN_STARTS {
        return None;
    }
    let y: Vec<f64> = starts.iter().map(StartRatios::log_ratio).collect();
    let placement: Option<Vec<f64>> = starts
        .iter()
        .map(|s| placement_of(s.first.0, s.first.1))
        .collect();
    let order: Vec<f64> = starts
        .iter()
        .map(|s| order_of(s.first.0, s.first.1))
        .collect();
    let varies = |x: &[f64]| x.iter().any(|v| *v != x[0]);
    let p = placement.as_deref().filter(|x| varies(x));
    let o = Some(order.as_slice()).filter(|x| varies(x));
    let ([ps, os], unexplained) = shares(&y, [p, o]);
    let factor = |recorded: bool, varied: bool, share: f64| match (recorded, varied) {
        (false, _) => Factor::NotRecorded,
        (true, false) => Factor::Constant,
        (true, true) => Factor::Explains { share },
    };
    Some(StartFactors {
        workload: key.workload.clone(),
        candidate: key.candidate.clone(),
        metric: key.metric.clone(),
        starts: starts.len(),
        placement: factor(placement.is_some(), p.is_some(), ps),
        start_order: factor(true, o.is_some(), os),
        unexplained,
    })
}
