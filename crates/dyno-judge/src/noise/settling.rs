//! Whether the warm-up was long enough: were the nodes still settling when their first
//! window opened? Nothing is sampled during the warm-up itself, so what the stored starts
//! can say is whether the first of the window's [`PARTS`] parts, the seconds right after
//! the warm-up, reads like the rest of that window:
//!
//! - the judged **ratio**'s first part off the rest, the same way start after start: the
//!   verdict depends on the warm-up (one release settles slower, or settling varies), and
//!   a warm-up one part longer leaves those seconds out;
//! - only the nodes' own **levels** off (both settle alike): the ratio cancels it and
//!   the warm-up can stay;
//! - neither: the warm-up run suffices as far as the windows show; whether a shorter one
//!   would is untested.
//!
//! Each start gives one difference (the first part's log value less the rest's mean), so
//! the test is Student's t over the starts, strict (p below [`ALPHA`]) and with a floor
//! ([`MIN_SHIFT`]) because it advises a cost, not a verdict.

use super::split::{part_values, start_ratios};
use super::PARTS;
use crate::comparison::{ComparisonMeta, VerdictKey};
use dyno_exec::Execution;
use serde::Serialize;

/// Starts needed before settling is judged.
pub const MIN_STARTS: usize = 4;

/// The p-value under which a first part counts as off the rest.
pub const ALPHA: f64 = 0.01;

/// The least shift of a first part (on the log scale, about a share) that counts.
pub const MIN_SHIFT: f64 = 0.01;

/// A first part's mean log shift from the rest of its window over the starts.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Shift {
    /// Mean of the starts' differences (log scale).
    pub mean: f64,
    /// Its standard error.
    pub std_error: f64,
    /// Two-sided p-value of Student's t.
    pub p_value: f64,
}

impl Shift {
    /// Of the differences, `None` under [`MIN_STARTS`].
    fn of(differences: &[f64]) -> Option<Shift> {
        if differences.len() < MIN_STARTS {
            return None;
        }
        let t = dyno_stats::paired_t(differences).ok()?;
        Some(Shift {
            mean: t.mean,
            std_error: t.std_error,
            p_value: t.p_value,
        })
    }

    /// Whether the first part is off the rest: strictly significant and not negligible.
    pub fn settling(&self) -> bool {
        self.p_value < ALPHA && self.mean.abs() >= MIN_SHIFT
    }

    /// "p 0.002", "p < 0.001".
    fn p(&self) -> String {
        if self.p_value < 0.001 {
            "p < 0.001".into()
        } else {
            format!("p {:.3}", self.p_value)
        }
    }

    /// "+6.1% ± 1.5%" (the shift as a percentage and its standard error).
    fn percent(&self) -> String {
        format!(
            "{:+.1}% ± {:.1}%",
            self.mean.exp_m1() * 100.0,
            self.std_error * 100.0
        )
    }
}

/// One primary verdict's settling after the warm-up.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Settling {
    /// The workload.
    pub workload: String,
    /// The candidate.
    pub candidate: String,
    /// The metric.
    pub metric: String,
    /// Starts used.
    pub starts: usize,
    /// The warm-up run, seconds.
    pub warmup_s: f64,
    /// The first part's length, seconds: what a longer warm-up would add.
    pub part_s: f64,
    /// The judged ratio's first part against the rest.
    pub ratio: Shift,
    /// Each node's own value's first part against the rest: the baseline's, then the
    /// candidate's (a node with too few starts left out).
    pub levels: Vec<Level>,
}

/// One node's own value's first part against the rest.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Level {
    /// The subject.
    pub subject: String,
    /// Its shift.
    #[serde(flatten)]
    pub shift: Shift,
}

impl Settling {
    /// The warm-up that leaves the settling seconds out, when the ratio settles.
    pub fn warmup_needed(&self) -> Option<f64> {
        self.ratio.settling().then_some(self.warmup_s + self.part_s)
    }

    /// "kv-200: cpu_s_per_tx of v2: the first 5 s of the windows after warmup_s = 10, over
    /// 12 starts: the ratio reads +6.1% ± 1.5% off the rest (p 0.002) ...: still settling,
    /// the recommendation takes warmup_s = 15".
    fn settling_sentence(&self) -> Option<String> {
        let w = self.warmup_needed()?;
        let levels: Vec<String> = self
            .levels
            .iter()
            .map(|l| format!("{} {}", l.subject, l.shift.percent()))
            .collect();
        let level = if levels.is_empty() {
            String::new()
        } else {
            format!("; each node's own: {}", levels.join(", "))
        };
        Some(format!(
            "{}: {} of {}: the first {} s of the windows after warmup_s = {}, over {} starts: the ratio reads {} off the rest ({}){level}: still settling; the recommendation takes warmup_s = {}",
            self.workload,
            self.metric,
            self.candidate,
            self.part_s,
            self.warmup_s,
            self.starts,
            self.ratio.percent(),
            self.ratio.p(),
            w
        ))
    }
}

/// The report's warm-up lines: a metric whose ratio was still settling gets its own; the
/// rest of a workload and candidate fold into one, saying which nodes' own values still
/// settled alike.
pub fn lines(settling: &[Settling]) -> Vec<String> {
    let mut out: Vec<String> = settling
        .iter()
        .filter_map(Settling::settling_sentence)
        .collect();
    let mut groups: Vec<(&str, &str)> = Vec::new();
    for s in settling {
        if !groups.contains(&(s.workload.as_str(), s.candidate.as_str())) {
            groups.push((&s.workload, &s.candidate));
        }
    }
    for (workload, candidate) in groups {
        let settled: Vec<&Settling> = settling
            .iter()
            .filter(|s| s.workload == workload && s.candidate == candidate)
            .filter(|s| s.warmup_needed().is_none())
            .collect();
        let Some(first) = settled.first() else {
            continue;
        };
        let ratios: Vec<String> = settled
            .iter()
            .map(|s| format!("{} {}", s.metric, s.ratio.percent()))
            .collect();
        let alike: Vec<String> = settled
            .iter()
            .flat_map(|s| {
                s.levels
                    .iter()
                    .filter(|l| l.shift.settling())
                    .map(move |l| format!("{} of {} {}", s.metric, l.subject, l.shift.percent()))
            })
            .collect();
        let alike = if alike.is_empty() {
            String::new()
        } else {
            format!(
                "; the nodes' own values still settle there ({}), but alike, and the ratio cancels it",
                alike.join(", ")
            )
        };
        out.push(format!(
            "{workload}: {candidate}: after warmup_s = {} the first {} s of the windows read like the rest over {} starts (ratio {}){alike}; whether a shorter warm-up would do is untested (nothing is sampled during it)",
            first.warmup_s,
            first.part_s,
            first.starts,
            ratios.join(", ")
        ));
    }
    out
}

/// `key`'s settling after a warm-up of `warmup_s` with windows of `measure_s`: `None`
/// for a metric with one value per execution or under [`MIN_STARTS`] starts.
pub(super) fn settling(
    meta: &ComparisonMeta,
    executions: &[Execution],
    key: &VerdictKey,
    (warmup_s, measure_s): (f64, f64),
) -> Option<Settling> {
    let work = meta.work.get(&key.workload);
    let first_off_rest = |parts: &[f64]| {
        let rest = parts[1..].iter().sum::<f64>() / (parts.len() - 1) as f64;
        parts[0] - rest
    };
    let starts = start_ratios(meta, executions, key);
    let ratio: Vec<f64> = starts
        .iter()
        .filter_map(|s| s.windows.first()?.1.as_deref().map(first_off_rest))
        .collect();
    let level = |e: &Execution| {
        let parts = part_values(e, &key.metric, work)?;
        let logs: Option<Vec<f64>> = parts.iter().map(|v| (*v > 0.0).then(|| v.ln())).collect();
        Some(first_off_rest(&logs?))
    };
    let levels = [false, true]
        .into_iter()
        .filter_map(|candidate| {
            let shifts: Vec<f64> = starts
                .iter()
                .map(|s| if candidate { s.first.1 } else { s.first.0 })
                .filter_map(level)
                .collect();
            let subject = if candidate {
                key.candidate.clone()
            } else {
                meta.subjects.first()?.clone()
            };
            Some(Level {
                subject,
                shift: Shift::of(&shifts)?,
            })
        })
        .collect();
    Some(Settling {
        workload: key.workload.clone(),
        candidate: key.candidate.clone(),
        metric: key.metric.clone(),
        starts: ratio.len(),
        warmup_s,
        part_s: measure_s / PARTS as f64,
        ratio: Shift::of(&ratio)?,
        levels,
    })
}
