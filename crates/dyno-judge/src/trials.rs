//! What a stored comparison could see (`dyno compare power`): its rounds split into
//! disjoint trials, and the noise of every primary metric over all of them.
//!
//! A power study runs one long comparison of a baseline against itself (an A/A
//! candidate) and against candidates with a known change (`dyno node
//! --extra-work-per-tx N` makes one of any size), then asks how often a comparison of T
//! rounds would have flagged each: every disjoint run of T rounds is one trial, each
//! candidate is judged alone against the baseline in it (its own Holm family, as a
//! comparison of two releases would be), and the flags are counted. Over all rounds, per
//! candidate and primary metric: the change, the sd of the per-round log ratios, their
//! lag-1 autocorrelation (the tests assume rounds independent: near 0), the share of the
//! variance that longer windows would shrink ([`crate::noise`]), and the rounds a 5%
//! change needs with 80% power.

use crate::comparison::TestKind;
use crate::comparison::{ComparisonMeta, Workload};
use crate::noise::NoiseReport;
use crate::verdict::{judge_with, JudgeOptions, Judgement, MetricVerdict};
use dyno_exec::{Execution, Outcome};
use dyno_report::{Align, Cell, Table};
use dyno_stats::{ComparisonSettings, Verdict};
use serde::Serialize;

/// The schema of a [`Study`] as JSON.
pub const POWER_SCHEMA: &str = "dyno.compare.power/1";

/// What [`study`] judges with.
#[derive(Debug, Clone, PartialEq)]
pub struct TrialOptions {
    /// Rounds per trial.
    pub trial_rounds: u32,
    /// The test of every judgement.
    pub test: TestKind,
    /// The primary metrics (empty: the default family).
    pub primary: Vec<String>,
    /// Alpha, noise band, seed.
    pub settings: ComparisonSettings,
}

/// Why no study can be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TrialError {
    /// Fewer rounds than one trial.
    #[error("the comparison has {rounds} rounds: not one trial of {trial} rounds")]
    TooFewRounds {
        /// Rounds stored.
        rounds: u32,
        /// Rounds per trial asked for.
        trial: u32,
    },
}

/// How often one candidate's metric was flagged over the trials.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrialCount {
    /// The candidate.
    pub candidate: String,
    /// The workload.
    pub workload: String,
    /// The metric, or `any primary metric` (the comparison's verdict).
    pub metric: String,
    /// Trials it was judged in.
    pub trials: usize,
    /// Trials with a regression verdict.
    pub regressions: usize,
    /// Trials with an improvement verdict.
    pub improvements: usize,
    /// The median over the trials of the change the table shows.
    pub median_change: Option<f64>,
    /// The median over the trials of its minimum detectable change.
    pub median_detectable: Option<f64>,
}

/// One candidate's metric over all rounds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricNoise {
    /// The candidate.
    pub candidate: String,
    /// The workload.
    pub workload: String,
    /// The metric.
    pub metric: String,
    /// Rounds paired.
    pub rounds: usize,
    /// The change (median of the per-round ratios, or ratio of medians unpaired).
    pub change: f64,
    /// The sd of the per-round log ratios.
    pub log_ratio_sd: Option<f64>,
    /// Lag-1 autocorrelation of the per-round log ratios, in round order.
    pub lag1: Option<f64>,
    /// Comparisons in its Holm family.
    pub family: Option<usize>,
    /// The share of its per-round variance from inside the windows.
    pub within_share: Option<f64>,
    /// Rounds a 5% change needs with 80% power.
    pub rounds_for_five_percent: Option<usize>,
}

/// What a stored comparison could see.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Study {
    /// [`POWER_SCHEMA`].
    pub schema: &'static str,
    /// The baseline.
    pub baseline: String,
    /// The test.
    pub test: &'static str,
    /// Rounds per trial.
    pub trial_rounds: u32,
    /// Rounds stored.
    pub rounds: u32,
    /// The trials, as `[first, end)` rounds.
    pub trials: Vec<(u32, u32)>,
    /// Flags per candidate, workload and metric.
    pub counts: Vec<TrialCount>,
    /// Per candidate, workload and primary metric, over all rounds.
    pub noise: Vec<MetricNoise>,
    /// Per candidate: where the noise comes from and the window that reaches 5% soonest.
    pub recommendations: Vec<(String, NoiseReport)>,
}

/// Judges `executions` of the comparison `meta` trial by trial and as a whole; see the
/// module docs.
pub fn study(
    meta: &ComparisonMeta,
    executions: &[Execution],
    workloads: &[Workload],
    opts: &TrialOptions,
) -> Result<Study, TrialError> {
    let rounds = executions
        .iter()
        .filter(|e| e.outcome == Outcome::Complete)
        .map(|e| e.round + 1)
        .max()
        .unwrap_or(0);
    let t = opts.trial_rounds.max(1);
    let trials: Vec<(u32, u32)> = (0..rounds / t).map(|k| (k * t, (k + 1) * t)).collect();
    if trials.is_empty() {
        return Err(TrialError::TooFewRounds {
            rounds,
            trial: opts.trial_rounds,
        });
    }
    let baseline = meta.subjects.first().cloned().unwrap_or_default();
    let mut out = Study {
        schema: POWER_SCHEMA,
        baseline: baseline.clone(),
        test: opts.test.name(),
        trial_rounds: t,
        rounds,
        trials: trials.clone(),
        counts: Vec::new(),
        noise: Vec::new(),
        recommendations: Vec::new(),
    };
    for candidate in meta.subjects.iter().skip(1) {
        let subjects = vec![baseline.clone(), candidate.clone()];
        let execs: Vec<Execution> = executions
            .iter()
            .filter(|e| subjects.contains(&e.subject))
            .cloned()
            .collect();
        let judge = |rounds: Option<std::ops::Range<u32>>| {
            let options = JudgeOptions {
                test: opts.test,
                rounds,
                primary: opts.primary.clone(),
                work: meta.work.clone(),
            };
            judge_with(&execs, &subjects, &opts.settings, &options)
        };
        out.counts.extend(count_flags(
            candidate,
            trials.iter().map(|(a, b)| judge(Some(*a..*b))),
        ));
        let whole = judge(None);
        let pair = ComparisonMeta {
            subjects: subjects.clone(),
            ..meta.clone()
        };
        let (noise, report) = whole_noise(&pair, &execs, workloads, &whole, opts.test);
        out.noise.extend(noise);
        out.recommendations.push((candidate.clone(), report));
    }
    Ok(out)
}

/// One trial's primary verdicts as `(workload, metric, verdict, change, detectable)`,
/// then the trial's verdict over them all ("any primary metric": a regression if any,
/// else an improvement if any).
type TrialRow = (String, String, Verdict, Option<f64>, Option<f64>);

fn trial_rows(j: &Judgement) -> Vec<TrialRow> {
    let primary: Vec<&MetricVerdict> = j.verdicts.iter().filter(|v| !v.secondary).collect();
    let any = |verdict| primary.iter().any(|v| v.verdict() == verdict);
    let mut rows: Vec<TrialRow> = primary
        .iter()
        .map(|v| {
            (
                v.workload.clone(),
                v.metric.name.clone(),
                v.verdict(),
                Some(v.change().estimate).filter(|c| c.is_finite()),
                v.power.and_then(|p| p.min_detectable_change),
            )
        })
        .collect();
    let overall = if any(Verdict::Regression) {
        Verdict::Regression
    } else if any(Verdict::Improvement) {
        Verdict::Improvement
    } else {
        Verdict::NoSignificantChange
    };
    rows.push((
        String::new(),
        "any primary metric".into(),
        overall,
        None,
        None,
    ));
    rows
}

/// Counts one candidate's flags over the judgements of its trials.
fn count_flags(candidate: &str, trials: impl Iterator<Item = Judgement>) -> Vec<TrialCount> {
    let mut counts: Vec<(TrialCount, Vec<f64>, Vec<f64>)> = Vec::new();
    for j in trials {
        for (workload, metric, verdict, change, detectable) in trial_rows(&j) {
            let at = match counts
                .iter()
                .position(|(c, ..)| c.workload == workload && c.metric == metric)
            {
                Some(i) => i,
                None => {
                    let count = TrialCount {
                        candidate: candidate.to_string(),
                        workload,
                        metric,
                        trials: 0,
                        regressions: 0,
                        improvements: 0,
                        median_change: None,
                        median_detectable: None,
                    };
                    counts.push((count, Vec::new(), Vec::new()));
                    counts.len() - 1
                }
            };
            let (c, changes, detectables) = &mut counts[at];
            c.trials += 1;
            c.regressions += usize::from(verdict == Verdict::Regression);
            c.improvements += usize::from(verdict == Verdict::Improvement);
            changes.extend(change);
            detectables.extend(detectable);
        }
    }
    // "any primary metric" last, as a total.
    counts.sort_by_key(|(c, ..)| c.workload.is_empty());
    counts
        .into_iter()
        .map(|(mut c, changes, detectables)| {
            c.median_change = dyno_stats::median(&changes);
            c.median_detectable = dyno_stats::median(&detectables);
            c
        })
        .collect()
}

/// One candidate's primary metrics over all rounds (`pair`: the comparison of the
/// baseline and it alone), and where their noise comes from.
fn whole_noise(
    pair: &ComparisonMeta,
    execs: &[Execution],
    workloads: &[Workload],
    whole: &Judgement,
    test: TestKind,
) -> (Vec<MetricNoise>, NoiseReport) {
    let keys = whole.primary_keys();
    let noise = crate::noise::report(pair, execs, workloads, &keys, test, 0.05);
    let rows = whole
        .verdicts
        .iter()
        .filter(|v| !v.secondary)
        .map(|v| {
            let split = noise
                .metrics
                .iter()
                .find(|m| m.workload == v.workload && m.metric == v.metric.name);
            MetricNoise {
                candidate: v.candidate.clone(),
                workload: v.workload.clone(),
                metric: v.metric.name.clone(),
                rounds: v.power.map_or(v.round_ratios.len(), |p| p.rounds),
                change: v.change().estimate,
                log_ratio_sd: v.power.map(|p| p.log_sd),
                lag1: lag1(&v.round_ratios),
                family: v.power.map(|p| p.family),
                within_share: split.map(|m| {
                    let sum = m.within + m.between_windows + m.between;
                    if sum > 0.0 {
                        m.within / sum
                    } else {
                        0.0
                    }
                }),
                rounds_for_five_percent: v.power.and_then(|p| p.rounds_for_reference_change),
            }
        })
        .collect();
    (rows, noise)
}

/// Lag-1 autocorrelation of the logs of `ratios` (in round order), when at least 3 and
/// not all equal.
fn lag1(ratios: &[f64]) -> Option<f64> {
    if ratios.len() < 3 || ratios.iter().any(|r| *r <= 0.0) {
        return None;
    }
    let logs: Vec<f64> = ratios.iter().map(|r| r.ln()).collect();
    let mean = logs.iter().sum::<f64>() / logs.len() as f64;
    let var: f64 = logs.iter().map(|x| (x - mean).powi(2)).sum();
    if var == 0.0 {
        return None;
    }
    let cov: f64 = logs.windows(2).map(|w| (w[0] - mean) * (w[1] - mean)).sum();
    Some(cov / var)
}

fn pct(x: Option<f64>) -> String {
    match x {
        Some(x) if x.is_finite() => format!("{:+.1}%", (x - 1.0) * 100.0),
        _ => "-".into(),
    }
}

impl Study {
    /// The two tables: flags per trial, and noise over all rounds.
    pub fn tables(&self) -> Vec<Table> {
        let mut flags = Table::new(format!(
            "{} disjoint trials of {} rounds (of {}), each candidate judged alone against {}, test {}",
            self.trials.len(),
            self.trial_rounds,
            self.rounds,
            self.baseline,
            self.test
        ))
        .column("candidate", Align::Left)
        .column("workload", Align::Left)
        .column("metric", Align::Left)
        .column("regressions", Align::Right)
        .column("improvements", Align::Right)
        .column("median change", Align::Right)
        .column("median detectable", Align::Right);
        for c in &self.counts {
            flags.push_row(vec![
                Cell::new(&c.candidate),
                Cell::new(&c.workload),
                Cell::new(&c.metric),
                Cell::new(format!("{} / {}", c.regressions, c.trials)),
                Cell::new(format!("{} / {}", c.improvements, c.trials)),
                Cell::new(pct(c.median_change)),
                Cell::new(match c.median_detectable {
                    Some(d) => format!("±{}", crate::power::change_text(d)),
                    None => "-".into(),
                }),
            ]);
        }
        let mut noise = Table::new(format!(
            "All {} rounds, each candidate against {} (r1: lag-1 autocorrelation of the per-round log ratios; within: the share of their variance from inside the windows)",
            self.rounds, self.baseline
        ))
        .column("candidate", Align::Left)
        .column("workload", Align::Left)
        .column("metric", Align::Left)
        .column("change", Align::Right)
        .column("per-round sd", Align::Right)
        .column("r1", Align::Right)
        .column("within", Align::Right)
        .column("family", Align::Right)
        .column("rounds for 5%", Align::Right);
        for n in &self.noise {
            let opt = |x: Option<String>| x.unwrap_or_else(|| "-".into());
            noise.push_row(vec![
                Cell::new(&n.candidate),
                Cell::new(&n.workload),
                Cell::new(&n.metric),
                Cell::new(pct(Some(n.change))),
                Cell::new(opt(n.log_ratio_sd.map(|s| format!("{:.2}%", s * 100.0)))),
                Cell::new(opt(n.lag1.map(|r| format!("{r:.2}")))),
                Cell::new(opt(n.within_share.map(|w| format!("{:.0}%", w * 100.0)))),
                Cell::new(opt(n.family.map(|f| f.to_string()))),
                Cell::new(opt(n.rounds_for_five_percent.map(|r| r.to_string()))),
            ]);
        }
        vec![flags, noise]
    }

    /// Each candidate's window recommendation, as lines.
    pub fn lines(&self) -> Vec<String> {
        self.recommendations
            .iter()
            .flat_map(|(c, r)| {
                r.recommendations
                    .iter()
                    .map(move |(w, rec)| format!("{c}: {}", rec.sentence(w)))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic::Synthetic;

    #[test]
    fn trials_count_flags_per_candidate_and_the_a_a_pair_stays_quiet() {
        let mut ex = Synthetic::new(4);
        ex.slowdown.insert("plus10".into(), 1.10);
        let subjects = ["base", "again", "plus10"];
        let workloads = vec![Workload::new("value", 1000.0, 0.0, 20.0)];
        let execs = ex.comparison(&subjects, &workloads, 20);
        let meta = ComparisonMeta::of(&subjects, &workloads, 20);
        let opts = TrialOptions {
            trial_rounds: 5,
            test: TestKind::Paired,
            primary: vec!["cpu_percent".into()],
            settings: ComparisonSettings::default(),
        };
        let s = study(&meta, &execs, &workloads, &opts).unwrap();
        assert_eq!(s.trials, vec![(0, 5), (5, 10), (10, 15), (15, 20)]);
        let count = |c: &str, m: &str| {
            s.counts
                .iter()
                .find(|x| x.candidate == c && x.metric == m)
                .unwrap()
                .clone()
        };
        let plus = count("plus10", "cpu_percent");
        assert_eq!((plus.trials, plus.regressions), (4, 4));
        assert!((plus.median_change.unwrap() - 1.10).abs() < 0.03);
        let again = count("again", "any primary metric");
        assert_eq!((again.regressions, again.improvements), (0, 0));
        let n = s
            .noise
            .iter()
            .find(|n| n.candidate == "plus10" && n.metric == "cpu_percent")
            .unwrap();
        assert_eq!(n.rounds, 20);
        assert!(n.lag1.unwrap().abs() < 0.6);
        assert_eq!(s.tables().len(), 2);
        let too_long = TrialOptions {
            trial_rounds: 21,
            ..opts
        };
        assert_eq!(
            study(&meta, &execs, &workloads, &too_long).unwrap_err(),
            TrialError::TooFewRounds {
                rounds: 20,
                trial: 21
            }
        );
        assert!((lag1(&[1.0, 2.0, 1.0, 2.0, 1.0]).unwrap() + 0.8).abs() < 1e-9);
    }
}
