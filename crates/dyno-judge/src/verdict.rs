//! Verdicts: per workload and metric, each candidate's per-round values against the
//! baseline's, Holm's correction across the primary metrics of every workload and
//! candidate (dyno's own cost and service measurements unless the comparison names its
//! primary metrics; the rest in a secondary family of their own: [`crate::family`]),
//! the noise band (see `dyno_stats::comparison`), and each verdict's stated power
//! ([`crate::power`]). Metrics that carry no information (the same value in every
//! execution, or reported by one subject only) are not judged. Three tests
//! ([`TestKind`]): unpaired (ratio of medians with a bootstrap interval, two-sided
//! Mann-Whitney), or paired by round, where noise common to a round cancels in the
//! per-round ratio candidate / baseline: Student's t on the log ratios (the default), or
//! the exact signed-rank test on them (see `dyno_stats::compare_paired` for why the exact
//! test needs more rounds).
//!
//! Besides the metrics an execution recorded, costs per unit of work are derived per
//! execution ([`crate::work`]): `cpu_s_per_<unit>` and `rss_per_<unit>` from a workload's
//! `work`, and the reference node's `cpu_s_per_tx` and `bank_s_per_tx`.

use crate::comparison::{TestKind, VerdictKey};
use crate::family::{is_primary_for, no_information, Unjudged};
use crate::power::{stated_power, StatedPower};
use crate::work::{execution_values, WorkUnit};
use dyno_exec::{Execution, Outcome};
use dyno_model::{Direction, Metric};
use dyno_stats::{
    apply_holm, compare, compare_paired, compare_sequential, compare_signed_rank, mann_whitney_u,
    Alternative, Better, Comparison, ComparisonSettings, ConfidenceInterval, SignificanceTest,
    StatsError, Verdict,
};
use std::collections::BTreeMap;
use std::ops::Range;

/// How [`judge_with`] judges: the test, which rounds count and which metrics are primary.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct JudgeOptions {
    /// The test.
    pub test: TestKind,
    /// Only executions of these rounds (zero-based, end excluded); all when `None`.
    pub rounds: Option<Range<u32>>,
    /// The primary metrics, by name: Holm's family (the verdict, `--fail-on-regression`),
    /// the other metrics a second family of their own, reported as secondary: the fewer
    /// comparisons a verdict is corrected for, the smaller the change it can see. Empty:
    /// the default family, dyno's own cost and service measurements; `["*"]`: every
    /// metric ([`crate::family`]).
    pub primary: Vec<String>,
    /// Each workload's unit of work, by workload name ([`crate::work`]).
    pub work: BTreeMap<String, WorkUnit>,
}

/// One candidate-versus-baseline judgement.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricVerdict {
    /// Workload name.
    pub workload: String,
    /// Candidate subject name.
    pub candidate: String,
    /// The metric.
    pub metric: Metric,
    /// Per-round values of the baseline.
    pub baseline_values: Vec<f64>,
    /// Per-round values of the candidate.
    pub candidate_values: Vec<f64>,
    /// `candidate / baseline` of every round both have, in round order (empty when
    /// judged unpaired).
    pub round_ratios: Vec<f64>,
    /// The statistics; the verdict is `comparison.verdict`.
    pub comparison: Comparison,
    /// Judged in the secondary family (not a primary metric): reported, but not part of
    /// the comparison's verdict.
    pub secondary: bool,
    /// What this comparison could have flagged; `None` when the spread is unknown (a
    /// value that is not positive has no log ratio).
    pub power: Option<StatedPower>,
}

impl MetricVerdict {
    /// Which verdict this is.
    pub fn key(&self) -> VerdictKey {
        VerdictKey {
            workload: self.workload.clone(),
            candidate: self.candidate.clone(),
            metric: self.metric.name.clone(),
        }
    }

    /// Median of the baseline's per-round values.
    pub fn baseline_median(&self) -> f64 {
        dyno_stats::median(&self.baseline_values).unwrap_or(f64::NAN)
    }

    /// Median of the candidate's per-round values.
    pub fn candidate_median(&self) -> f64 {
        dyno_stats::median(&self.candidate_values).unwrap_or(f64::NAN)
    }

    /// The verdict.
    pub fn verdict(&self) -> Verdict {
        self.comparison.verdict
    }

    /// The change this verdict judged, with the interval that belongs to it: the test's
    /// own estimate ([`estimate_name`] says which). Every output shows this one (the
    /// tables, the sentences, the JSON's `ratio`, the web pages).
    pub fn change(&self) -> dyno_stats::ConfidenceInterval {
        self.comparison.ratio
    }

    /// A second estimate, labelled as such where it is shown (the JSON's
    /// `median_ratio`): judged paired, the median of the per-round ratios with its
    /// distribution-free 95% interval (order statistics; min..max when the rounds are too
    /// few for 95%); judged unpaired, the ratio of the medians with its bootstrap
    /// interval.
    pub fn median_of_round_ratios(&self) -> dyno_stats::ConfidenceInterval {
        if self.round_ratios.is_empty() {
            return self.comparison.ratio;
        }
        dyno_stats::median_ci(&self.round_ratios, 0.95).unwrap_or(self.comparison.ratio)
    }
}

/// What [`MetricVerdict::change`] is under `test`, as every header names it.
pub fn estimate_name(test: &SignificanceTest) -> &'static str {
    match test {
        SignificanceTest::MannWhitney(_) => "ratio of medians",
        SignificanceTest::SignedRank(_) => "Hodges-Lehmann ratio of rounds",
        SignificanceTest::PairedT(_) | SignificanceTest::Sequential(_) => {
            "geometric mean of round ratios"
        }
    }
}

/// All verdicts of a comparison, with notes on what could not be judged.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Judgement {
    /// Verdicts, by workload, then metric, then candidate.
    pub verdicts: Vec<MetricVerdict>,
    /// Metrics left out, and warnings about power.
    pub notes: Vec<String>,
    /// Metrics not judged: no information (the same value everywhere, or one subject
    /// never reported them).
    pub unjudged: Vec<Unjudged>,
    /// Where a comparison with a precision target stands or why it stopped
    /// ([`crate::precision::annotate`] fills it; empty without a target).
    pub precision: Vec<String>,
    /// Where each primary metric's noise comes from ([`crate::precision::annotate`]).
    pub noise: crate::noise::NoiseReport,
}

impl Judgement {
    /// True when any primary verdict is a regression (every verdict is primary unless
    /// the comparison names its primary metrics).
    pub fn has_regression(&self) -> bool {
        self.verdicts
            .iter()
            .any(|v| !v.secondary && v.verdict() == Verdict::Regression)
    }

    /// Each primary verdict's key, in verdict order: what the precision rule and the
    /// noise report look at.
    pub fn primary_keys(&self) -> Vec<VerdictKey> {
        self.verdicts
            .iter()
            .filter(|v| !v.secondary)
            .map(MetricVerdict::key)
            .collect()
    }
}

/// Per-run values grouped by workload and metric, each with one list per subject.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunTable {
    /// One row per workload and metric, in first-seen order.
    pub rows: Vec<RunRow>,
}

/// One metric of one workload in a [`RunTable`]: each subject's values, one per round
/// (a start's windows averaged into one), and the round of each.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRow {
    /// The workload.
    pub workload: String,
    /// The metric.
    pub metric: Metric,
    /// `values[subject]`, the subjects in the comparison's order.
    pub values: Vec<Vec<f64>>,
    /// `rounds[subject][i]`: the round of `values[subject][i]`.
    pub rounds: Vec<Vec<u32>>,
}

impl RunTable {
    /// Collects the per-run values of the complete executions, with the derived costs per
    /// unit of work (see the module docs; `work` by workload name). The windows of one
    /// start (`windows_per_start`) are one value, their mean: they share the start's own
    /// offset, so counting them apart would take that offset for a change.
    pub fn of(
        executions: &[Execution],
        subjects: &[String],
        work: &BTreeMap<String, WorkUnit>,
    ) -> RunTable {
        let mut table = RunTable::default();
        // Windows summed so far of each (row, subject, round) that has several.
        let mut windows: BTreeMap<(usize, usize, u32), (f64, u32)> = BTreeMap::new();
        for e in executions.iter().filter(|e| e.outcome == Outcome::Complete) {
            let Some(si) = subjects.iter().position(|s| *s == e.subject) else {
                continue;
            };
            // What the rest of the machine did (`host:other_cpu_percent`) is the context of
            // a verdict, shown per round (report::disturbance_line), never judged.
            let values = execution_values(&e.series, work.get(&e.workload));
            for v in values
                .into_iter()
                .filter(|v| !v.metric.name.starts_with("host:"))
            {
                let idx = match table
                    .rows
                    .iter()
                    .position(|r| r.workload == e.workload && r.metric.name == v.metric.name)
                {
                    Some(i) => i,
                    None => {
                        table.rows.push(RunRow {
                            workload: e.workload.clone(),
                            metric: v.metric.clone(),
                            values: vec![Vec::new(); subjects.len()],
                            rounds: vec![Vec::new(); subjects.len()],
                        });
                        table.rows.len() - 1
                    }
                };
                let row = &mut table.rows[idx];
                match row.rounds[si].iter().position(|&r| r == e.round) {
                    Some(at) => {
                        let first = row.values[si][at];
                        let (sum, n) = windows.entry((idx, si, e.round)).or_insert((first, 1));
                        *sum += v.value;
                        *n += 1;
                        row.values[si][at] = *sum / f64::from(*n);
                    }
                    None => {
                        row.values[si].push(v.value);
                        row.rounds[si].push(e.round);
                    }
                }
            }
        }
        table
    }
}

/// The executions of rounds `r`.
fn in_rounds(executions: &[Execution], r: &Range<u32>) -> Vec<Execution> {
    executions
        .iter()
        .filter(|e| r.contains(&e.round))
        .cloned()
        .collect()
}

/// The workloads whose unit of work gave a CPU cost: there it is the default primary CPU
/// figure ([`crate::family::is_primary_for`]).
fn costed_workloads<'a>(table: &RunTable, work: &'a BTreeMap<String, WorkUnit>) -> Vec<&'a str> {
    work.iter()
        .filter(|(w, unit)| {
            let name = unit.cpu_metric().name;
            table
                .rows
                .iter()
                .any(|r| r.workload == **w && r.metric.name == name)
        })
        .map(|(w, _)| w.as_str())
        .collect()
}

fn better(d: Direction) -> Better {
    match d {
        Direction::HigherIsBetter => Better::Higher,
        Direction::LowerIsBetter => Better::Lower,
    }
}

/// Judges every candidate (subjects after the first) against the baseline, unpaired, on
/// every round: the judgement of comparisons stored before the test was a choice.
pub fn judge(
    executions: &[Execution],
    subjects: &[String],
    settings: &ComparisonSettings,
) -> Judgement {
    let options = JudgeOptions {
        test: TestKind::Unpaired,
        ..JudgeOptions::default()
    };
    judge_with(executions, subjects, settings, &options)
}

/// The values of the rounds both subjects have, in round order: `(baseline, candidate)`.
fn pairs(
    (base, base_rounds): (&[f64], &[u32]),
    (cand, cand_rounds): (&[f64], &[u32]),
) -> (Vec<f64>, Vec<f64>) {
    let mut order: Vec<usize> = (0..base.len()).collect();
    order.sort_by_key(|&i| base_rounds[i]);
    order
        .into_iter()
        .filter_map(|i| {
            let j = cand_rounds.iter().position(|&r| r == base_rounds[i])?;
            Some((base[i], cand[j]))
        })
        .unzip()
}

/// Why a verdict is refused: a candidate, primary metric or unit of work that names
/// nothing of the comparison.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// The comparison has no subjects.
    #[error("the comparison has no subjects")]
    NoSubjects,
    /// A candidate named is the baseline.
    #[error("`{name}` is the baseline; name candidates ({candidates})")]
    Baseline {
        /// The name.
        name: String,
        /// The candidates, comma-separated.
        candidates: String,
    },
    /// A candidate named is no subject.
    #[error("`{name}` is not a subject of this comparison (candidates: {candidates})")]
    NotASubject {
        /// The name.
        name: String,
        /// The candidates, comma-separated.
        candidates: String,
    },
    /// A candidate is named twice.
    #[error("`{0}` is named twice")]
    NamedTwice(String),
    /// Primary metrics that no complete execution measured.
    #[error("{} {} no metric of this comparison (closest: {close}; {count} metrics in all)", quoted(names), if names.len() == 1 { "is" } else { "are" })]
    UnknownPrimary {
        /// The names.
        names: Vec<String>,
        /// The metrics closest to the first name, quoted and comma-separated.
        close: String,
        /// How many metrics the comparison has.
        count: usize,
    },
    /// A workload's unit of work that no complete execution recorded.
    #[error("workload `{workload}`: work metric `{metric}` was not recorded by any execution, or names a family with several label sets (closest: {close})")]
    UnknownWork {
        /// The workload.
        workload: String,
        /// The work metric.
        metric: String,
        /// The metrics closest to it, quoted and comma-separated, or `none`.
        close: String,
    },
}

fn quoted(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The baseline and the named candidates, in the order named: the subjects to judge when
/// one comparison of several candidates is read one candidate at a time. Holm's family is
/// then the named candidates' metrics alone, as in a comparison of two releases (a power
/// study that runs four slowdowns in one comparison asks what each would get on its own).
/// The baseline, an unknown name or a name given twice is refused.
pub fn pick_candidates(subjects: &[String], names: &[String]) -> Result<Vec<String>, Refused> {
    let Some((baseline, candidates)) = subjects.split_first() else {
        return Err(Refused::NoSubjects);
    };
    let mut out = vec![baseline.clone()];
    for name in names {
        if name == baseline {
            return Err(Refused::Baseline {
                name: name.clone(),
                candidates: candidates.join(", "),
            });
        }
        if !candidates.contains(name) {
            return Err(Refused::NotASubject {
                name: name.clone(),
                candidates: candidates.join(", "),
            });
        }
        if out.contains(name) {
            return Err(Refused::NamedTwice(name.clone()));
        }
        out.push(name.clone());
    }
    Ok(out)
}

/// Judges every candidate (subjects after the first) against the baseline with the test
/// and rounds of `options`.
pub fn judge_with(
    executions: &[Execution],
    subjects: &[String],
    settings: &ComparisonSettings,
    options: &JudgeOptions,
) -> Judgement {
    let selected: Vec<Execution>;
    let executions = match &options.rounds {
        Some(r) => {
            selected = in_rounds(executions, r);
            &selected[..]
        }
        None => executions,
    };
    let table = RunTable::of(executions, subjects, &options.work);
    let mut out = Judgement::default();
    out.notes
        .extend(crate::diagnose::notes(executions, &options.work));
    let costed = costed_workloads(&table, &options.work);
    // Per verdict: the rounds and log-scale spread its stated power is computed from.
    let mut spreads: Vec<Option<(usize, f64)>> = Vec::new();
    for RunRow {
        workload,
        metric,
        values,
        rounds,
    } in &table.rows
    {
        let base = &values[0];
        for (ci, cand) in values.iter().enumerate().skip(1) {
            if let Some(reason) = no_information(base, cand, (&subjects[0], &subjects[ci])) {
                out.unjudged.push(Unjudged {
                    workload: workload.clone(),
                    candidate: subjects[ci].clone(),
                    metric: metric.name.clone(),
                    reason,
                });
                continue;
            }
            if base.len() < 2 || cand.len() < 2 {
                let note = format!(
                    "{workload}: {} vs {} complete runs of {} and {}: at least 2 each are needed for a verdict",
                    base.len(),
                    cand.len(),
                    subjects[0],
                    subjects[ci]
                );
                if !out.notes.contains(&note) {
                    out.notes.push(note);
                }
                continue;
            }
            let one = ComparisonSettings {
                seed: settings.seed.wrapping_add(out.verdicts.len() as u64),
                ..*settings
            };
            let (b, c) = pairs((base, &rounds[0]), (cand, &rounds[ci]));
            let better = better(metric.direction);
            let (judged, spread) = tested(options.test, (base, cand), (&b, &c), better, &one);
            let comparison = match judged {
                Ok(c) => c,
                Err(_) => match without_ratio(options.test, (base, cand), better, &one) {
                    Some((c, note)) => {
                        out.notes.extend(note.map(|n| {
                            format!("{workload}: {} of {}: {n}", metric.name, subjects[ci])
                        }));
                        c
                    }
                    None => continue,
                },
            };
            out.verdicts.push(MetricVerdict {
                workload: workload.clone(),
                candidate: subjects[ci].clone(),
                metric: metric.clone(),
                baseline_values: base.clone(),
                candidate_values: cand.clone(),
                round_ratios: match options.test {
                    TestKind::Unpaired => Vec::new(),
                    _ => b
                        .iter()
                        .zip(&c)
                        .filter(|(b, c)| **b > 0.0 && **c > 0.0)
                        .map(|(b, c)| c / b)
                        .collect(),
                },
                comparison,
                secondary: !is_primary_for(
                    metric,
                    &options.primary,
                    costed.contains(&workload.as_str()),
                ),
                power: None,
            });
            spreads.push(spread);
        }
    }
    correct_and_state_power(&mut out, &spreads, settings, options.test);
    out
}

/// One metric's values judged by `test`: unpaired on all of `values`, the paired tests on
/// the round `pairs`; with the rounds and log-scale spread its stated power comes from.
fn tested(
    test: TestKind,
    (base, cand): (&[f64], &[f64]),
    (b, c): (&[f64], &[f64]),
    better: Better,
    one: &ComparisonSettings,
) -> (Result<Comparison, StatsError>, Option<(usize, f64)>) {
    let paired_spread = || dyno_stats::log_ratio_sd(b, c).map(|sd| (b.len(), sd));
    match test {
        TestKind::Unpaired => (
            compare(base, cand, better, one),
            dyno_stats::pooled_log_sd(base, cand).map(|sd| (base.len().min(cand.len()), sd)),
        ),
        TestKind::Paired => (compare_paired(b, c, better, one), paired_spread()),
        TestKind::SignedRank => (compare_signed_rank(b, c, better, one), paired_spread()),
        TestKind::Sequential => (compare_sequential(b, c, better, one), paired_spread()),
    }
}

/// Holm's correction within the primary and the secondary family, each on its own, then
/// every verdict's stated power given the size of its family.
fn correct_and_state_power(
    out: &mut Judgement,
    spreads: &[Option<(usize, f64)>],
    settings: &ComparisonSettings,
    test: TestKind,
) {
    let mut primary_family = 0;
    let mut min_n = usize::MAX;
    for secondary in [false, true] {
        let family: Vec<usize> = (0..out.verdicts.len())
            .filter(|&i| out.verdicts[i].secondary == secondary)
            .collect();
        if !secondary {
            primary_family = family.len();
        }
        let mut comparisons: Vec<Comparison> =
            family.iter().map(|&i| out.verdicts[i].comparison).collect();
        if apply_holm(&mut comparisons, settings.alpha, settings.noise_band).is_ok() {
            for (&i, c) in family.iter().zip(comparisons) {
                out.verdicts[i].comparison = c;
            }
        }
        for &i in &family {
            let Some((n, sd)) = spreads[i] else { continue };
            if !secondary {
                min_n = min_n.min(n);
            }
            out.verdicts[i].power = Some(stated_power(
                test,
                n,
                sd,
                family.len(),
                settings.alpha,
                settings.noise_band,
            ));
        }
    }
    if let Some(note) = power_note(min_n, primary_family, settings.alpha, test) {
        out.notes.push(note);
    }
}

/// The names of `primary` that are no metric of the complete executions (a typo, or a
/// metric the nodes did not write): a comparison's primary metrics must exist, or its
/// verdict would silently rest on nothing. With no complete execution at all (a run
/// stopped in its first execution) nothing is judged and no name is refused.
pub fn unknown_primary(
    executions: &[Execution],
    subjects: &[String],
    primary: &[String],
    work: &BTreeMap<String, WorkUnit>,
) -> Result<(), Refused> {
    let table = RunTable::of(executions, subjects, work);
    let mut known: Vec<String> = Vec::new();
    for RunRow { metric: m, .. } in &table.rows {
        if !known.contains(&m.name) {
            known.push(m.name.clone());
        }
    }
    let unknown: Vec<&String> = primary
        .iter()
        .filter(|p| *p != crate::family::ALL_PRIMARY)
        .filter(|p| !known.is_empty() && !known.contains(p))
        .collect();
    match unknown.as_slice() {
        [] => Ok(()),
        names => Err(Refused::UnknownPrimary {
            names: names.iter().map(|n| n.to_string()).collect(),
            close: crate::diagnose::closest_or_none(names[0], &known),
            count: known.len(),
        }),
    }
}

/// The units of work (`work` of a workload) that no complete execution of the workload
/// recorded: a typo, or a metric the node does not export. Like a primary metric, a unit
/// of work must exist, or its costs would silently be missing from the verdict. With no
/// complete execution of a workload nothing is refused for it.
pub fn unknown_work(
    executions: &[Execution],
    work: &BTreeMap<String, WorkUnit>,
) -> Result<(), Refused> {
    for (workload, unit) in work {
        if let Some(names) = crate::diagnose::missing_work(executions, workload, unit) {
            return Err(Refused::UnknownWork {
                workload: workload.clone(),
                metric: unit.metric.clone(),
                close: crate::diagnose::closest_or_none(&unit.metric, &names),
            });
        }
    }
    Ok(())
}

/// A metric the paired tests cannot judge because a round has no log ratio (a value of
/// zero): a baseline whose median is zero by [`zero_baseline`]; otherwise (one round of
/// a subject at zero among positive ones) by the rank test on all rounds with its
/// Hodges-Lehmann ratio, so the change agrees with the medians beside it rather than
/// being infinite, with a note saying so.
fn without_ratio(
    test: TestKind,
    (base, cand): (&[f64], &[f64]),
    better: Better,
    one: &ComparisonSettings,
) -> Option<(Comparison, Option<String>)> {
    if dyno_stats::median(base)? == 0.0 || test == TestKind::Unpaired {
        return zero_baseline(base, cand, better, one).map(|c| (c, None));
    }
    let zeros = |v: &[f64]| v.iter().filter(|x| **x <= 0.0).count();
    let c = compare(base, cand, better, one).ok()?;
    let note = format!(
        "{} of its rounds at zero (baseline {}, candidate {}) have no ratio: judged by the rank test on all rounds (Mann-Whitney), not {}",
        zeros(base) + zeros(cand),
        zeros(base),
        zeros(cand),
        test.name()
    );
    Some((c, Some(note)))
}

/// A baseline whose median is zero (no major faults, no I/O) has no ratio: both zero is no
/// change; otherwise the ratio is infinite and the rank test alone decides.
fn zero_baseline(
    base: &[f64],
    cand: &[f64],
    better: Better,
    settings: &ComparisonSettings,
) -> Option<Comparison> {
    let test = mann_whitney_u(cand, base, Alternative::TwoSided).ok()?;
    let cm = dyno_stats::median(cand)?;
    let estimate = if cm == 0.0 { 1.0 } else { f64::INFINITY };
    let ratio = ConfidenceInterval {
        estimate,
        low: estimate,
        high: estimate,
        requested: settings.confidence,
        achieved: settings.confidence,
    };
    Some(Comparison {
        better,
        ratio,
        test: SignificanceTest::MannWhitney(test),
        p_adjusted: test.p_value,
        verdict: dyno_stats::classify(
            estimate,
            better,
            test.p_value,
            settings.alpha,
            settings.noise_band,
        ),
    })
}

/// The smallest two-sided exact Mann-Whitney p-value of `n` against `n` values is
/// `2 / C(2n, n)` (signed-rank on `n` pairs: `2 / 2^n`); times `m` comparisons (Holm's
/// first step) it must reach `alpha` for any verdict to be possible. Returns a warning
/// when it cannot, naming the rounds needed. The paired t-test has no such floor.
pub fn power_note(n: usize, m: usize, alpha: f64, test: TestKind) -> Option<String> {
    if m == 0 || n == usize::MAX || test == TestKind::Paired {
        return None;
    }
    let q = dyno_stats::PowerQuestion {
        test: crate::power::power_test(test),
        n,
        sd: 0.0,
        alpha,
        family: m,
        power: crate::power::POWER,
    };
    let floor = q.smallest_p() * m as f64;
    if floor <= alpha {
        return None;
    }
    let needed = q.rounds_to_reach_alpha().map_or_else(
        || format!("more than {}", dyno_stats::POWER_MAX_ROUNDS),
        |r| r.to_string(),
    );
    Some(format!(
        "with {n} complete runs per subject and {m} comparisons no difference can be significant at alpha = {alpha} (smallest Holm-adjusted p = {:.3}); run at least {needed} rounds",
        floor.min(1.0)
    ))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::comparison::Workload;
    use crate::synthetic::Synthetic;
    use crate::values::REFERENCE_METRIC;
    use crate::work::reference_values;
    use dyno_exec::Series;
    use dyno_model::Unit;

    /// The workloads of the tests' comparisons of `a` against `b`: `value` at 1000 tx/s
    /// and `script` at 100, 20 s windows.
    pub(crate) fn workloads() -> Vec<Workload> {
        vec![
            Workload::new("value", 1000.0, 0.0, 20.0),
            Workload::new("script", 100.0, 0.0, 20.0),
        ]
    }

    fn settings(seed: u64) -> ComparisonSettings {
        ComparisonSettings {
            resamples: 1000,
            seed,
            ..ComparisonSettings::default()
        }
    }

    /// `rounds` rounds of `a` against `b` under [`workloads`].
    pub(crate) fn run(rounds: u32, ex: &Synthetic) -> Vec<Execution> {
        ex.comparison(&["a", "b"], &workloads(), rounds)
    }

    fn names() -> Vec<String> {
        vec!["a".into(), "b".into()]
    }

    #[test]
    fn a_against_itself_is_no_change_on_every_metric_for_20_seeds() {
        // Holm keeps the chance of any false verdict per family at alpha = 5%: of 20 A/A
        // comparisons (fixed seeds), at most 2 may have one.
        let mut flagged = 0;
        for seed in 0..20 {
            let execs = run(10, &Synthetic::new(seed));
            let j = judge(&execs, &names(), &settings(seed));
            // 9 process metrics + 1 node rate, 2 workloads; the 2 span metrics are 0 in
            // every execution (CPU 60%) and not judged.
            assert_eq!(j.verdicts.len(), 20, "{:?}", j.notes);
            assert_eq!(j.unjudged.len(), 4, "{:?}", j.unjudged);
            assert!(j.unjudged.iter().all(|u| u.metric.starts_with("cpu85_")));
            let wrong = j
                .verdicts
                .iter()
                .filter(|v| v.verdict() != Verdict::NoSignificantChange)
                .count();
            assert!(wrong <= 1, "seed {seed}: {wrong} false verdicts");
            flagged += usize::from(wrong > 0);
        }
        assert!(flagged <= 2, "{flagged} of 20 A/A comparisons flagged");
    }

    #[test]
    fn a_slower_candidate_regresses_on_cpu_and_throughput_only() {
        let rounds = 10;
        let mut ex = Synthetic::new(3);
        ex.slowdown.insert("b".into(), 1.10);
        let execs = run(rounds, &ex);
        let j = judge(&execs, &names(), &settings(3));
        assert!(j.has_regression());
        let verdict = |w: &str, m: &str| {
            j.verdicts
                .iter()
                .find(|v| v.workload == w && v.metric.name == m)
                .unwrap()
        };
        for w in ["value", "script"] {
            let cpu = verdict(w, "cpu_percent");
            assert_eq!(cpu.verdict(), Verdict::Regression);
            assert!(
                (cpu.comparison.ratio.estimate - 1.10).abs() < 0.03,
                "{:?}",
                cpu.comparison.ratio
            );
            assert_eq!(
                verdict(w, "node:frags_total_per_s").verdict(),
                Verdict::Regression
            );
            assert_eq!(
                verdict(w, "rss_bytes").verdict(),
                Verdict::NoSignificantChange
            );
            assert!(j
                .unjudged
                .iter()
                .any(|u| u.workload == w && u.metric == "cpu85_spans"));
        }
    }

    #[test]
    fn one_candidate_picked_is_judged_in_a_family_of_its_own() {
        let mut ex = Synthetic::new(5);
        ex.slowdown.insert("b".into(), 1.05);
        let value = [Workload::new("value", 1000.0, 0.0, 20.0)];
        let execs = ex.comparison(&["a", "b", "c"], &value, 10);
        let all: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
        let cpu = |j: &Judgement| {
            j.verdicts
                .iter()
                .find(|v| v.candidate == "b" && v.metric.name == "cpu_percent")
                .map(|v| v.comparison)
                .unwrap()
        };
        let options = JudgeOptions {
            test: TestKind::Paired,
            ..JudgeOptions::default()
        };
        let both = judge_with(&execs, &all, &settings(5), &options);
        let picked = pick_candidates(&all, &["b".into()]).unwrap();
        assert_eq!(picked, ["a", "b"]);
        let alone = judge_with(&execs, &picked, &settings(5), &options);
        assert!(alone.verdicts.iter().all(|v| v.candidate == "b"));
        assert_eq!(2 * alone.verdicts.len(), both.verdicts.len());
        // Same data, same raw p; Holm over half the family adjusts it less.
        assert_eq!(cpu(&alone).test.p_value(), cpu(&both).test.p_value());
        assert!(cpu(&alone).p_adjusted < cpu(&both).p_adjusted);
        assert_eq!(
            pick_candidates(&all, &["c".into(), "b".into()]).unwrap(),
            ["a", "c", "b"]
        );
        for (names, says) in [
            (vec!["a"], "`a` is the baseline"),
            (
                vec!["d"],
                "`d` is not a subject of this comparison (candidates: b, c)",
            ),
            (vec!["b", "b"], "`b` is named twice"),
        ] {
            let names: Vec<String> = names.into_iter().map(String::from).collect();
            let err = pick_candidates(&all, &names).unwrap_err().to_string();
            assert!(err.contains(says), "{err}");
        }
    }

    #[test]
    fn primary_metrics_are_one_family_and_the_rest_another() {
        let rounds = 10;
        let mut ex = Synthetic::new(3);
        ex.slowdown.insert("b".into(), 1.10);
        let execs = run(rounds, &ex);
        let subjects = names();
        let judged = |primary: &[&str]| {
            let options = JudgeOptions {
                test: TestKind::Paired,
                primary: primary.iter().map(|s| s.to_string()).collect(),
                ..JudgeOptions::default()
            };
            judge_with(&execs, &subjects, &settings(3), &options)
        };
        let find = |j: &Judgement, m: &str| {
            j.verdicts
                .iter()
                .find(|v| v.workload == "value" && v.metric.name == m)
                .unwrap()
                .clone()
        };
        let all = judged(&["*"]);
        assert!(all.verdicts.iter().all(|v| !v.secondary));
        // By default, dyno's own cost measurements are primary and the node's are not.
        let default = judged(&[]);
        assert!(!find(&default, "cpu_percent").secondary);
        assert!(!find(&default, "rss_bytes").secondary);
        assert!(default
            .verdicts
            .iter()
            .filter(|v| v.metric.name.starts_with("node:") || v.metric.name.starts_with("jsonl:"))
            .all(|v| v.secondary));
        let cpu = judged(&["cpu_percent"]);
        let (one, every) = (find(&cpu, "cpu_percent"), find(&all, "cpu_percent"));
        assert!(!one.secondary && find(&cpu, "rss_bytes").secondary);
        // Same raw p; Holm over the two workloads' cpu_percent alone adjusts it less.
        assert_eq!(
            one.comparison.test.p_value(),
            every.comparison.test.p_value()
        );
        assert!(one.comparison.p_adjusted < every.comparison.p_adjusted);
        assert_eq!(one.verdict(), Verdict::Regression);
        assert!(cpu.has_regression());
        // A regression in a secondary metric is reported but is not the verdict.
        let rss = judged(&["rss_bytes"]);
        let cpu_there = find(&rss, "cpu_percent");
        assert!(cpu_there.secondary);
        assert_eq!(cpu_there.verdict(), Verdict::Regression);
        assert!(!rss.has_regression());
        assert_eq!(
            unknown_primary(&execs, &subjects, &["cpu_percent".into()], &BTreeMap::new()),
            Ok(())
        );
        assert_eq!(
            unknown_primary(&[], &subjects, &["cpu_pct".into()], &BTreeMap::new()),
            Ok(())
        );
        let e = unknown_primary(&execs, &subjects, &["cpu_pct".into()], &BTreeMap::new())
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("`cpu_pct` is no metric of this comparison (closest: `cpu_percent`, "),
            "{e}"
        );
        assert!(e.ends_with(" metrics in all)"), "{e}");
    }

    #[test]
    fn too_few_rounds_are_flagged() {
        let rounds = 3;
        let execs = run(rounds, &Synthetic::new(1));
        let j = judge(&execs, &names(), &settings(1));
        assert!(
            j.notes.iter().any(|n| n.contains("run at least")),
            "{:?}",
            j.notes
        );
        assert_eq!(power_note(10, 24, 0.05, TestKind::Unpaired), None);
        assert!(power_note(5, 24, 0.05, TestKind::Unpaired)
            .unwrap()
            .contains("run at least 7 rounds"));
        // Signed-rank: 2 / 2^n x 24 <= 0.05 first at n = 10; a t-test has no floor.
        assert!(power_note(9, 24, 0.05, TestKind::SignedRank)
            .unwrap()
            .contains("run at least 10 rounds"));
        assert_eq!(power_note(10, 24, 0.05, TestKind::SignedRank), None);
        assert_eq!(power_note(3, 24, 0.05, TestKind::Paired), None);
    }

    #[test]
    fn metrics_that_cannot_differ_do_not_dilute_holm() {
        use dyno_exec::{Series, SeriesKind};
        use dyno_model::Unit;
        let exec = |subject: &str, round: u32, cpu: f64| Execution {
            subject: subject.into(),
            workload: "value".into(),
            round,
            started_at: 0.0,
            command_line: vec![],
            series: std::iter::once(("cpu_percent".to_string(), cpu))
                .chain((0..30).map(|i| (format!("zero_{i}"), 0.0)))
                .map(|(name, v)| Series {
                    metric: Metric::new(name, Unit::Count, Direction::LowerIsBetter),
                    kind: SeriesKind::Gauge,
                    points: vec![(1.0, v)],
                })
                .collect(),
            outcome: Outcome::Complete,
            warnings: vec![],
            window: 0,
            placement: Default::default(),
            window_at: None,
            disturbance: None,
        };
        let execs: Vec<Execution> = (0..6)
            .flat_map(|r| [exec("a", r, 50.0 + r as f64), exec("b", r, 60.0 + r as f64)])
            .collect();
        let j = judge(&execs, &["a".into(), "b".into()], &settings(0));
        // cpu is judged; its two span metrics (no second at 85%) and the 30 zeros are
        // not: they leave the family instead of multiplying cpu's p by 33.
        assert_eq!(j.verdicts.len(), 1);
        assert_eq!(j.unjudged.len(), 32);
        let cpu = j
            .verdicts
            .iter()
            .find(|v| v.metric.name == "cpu_percent")
            .unwrap();
        // Exact p = 2/924 for six against six fully separated values: significant alone,
        // not if it were multiplied by 33.
        assert!((cpu.comparison.p_adjusted - 2.0 / 924.0).abs() < 1e-12);
        assert_eq!(cpu.verdict(), Verdict::Regression);
        assert!(j.notes.is_empty(), "{:?}", j.notes);
    }

    fn paired() -> JudgeOptions {
        JudgeOptions {
            test: TestKind::Paired,
            ..JudgeOptions::default()
        }
    }

    #[test]
    fn paired_a_against_itself_is_no_change_and_a_slowdown_regresses() {
        let rounds = 10;
        // Holm keeps the chance of any false verdict in a comparison at alpha = 5%: of
        // 20 A/A comparisons (fixed seeds), at most 2 may have one.
        let mut flagged = 0;
        for seed in 0..20 {
            let execs = run(rounds, &Synthetic::new(seed));
            let j = judge_with(&execs, &names(), &settings(seed), &paired());
            assert_eq!(j.verdicts.len(), 20, "{:?}", j.notes);
            let wrong = j
                .verdicts
                .iter()
                .filter(|v| v.verdict() != Verdict::NoSignificantChange)
                .count();
            assert!(wrong <= 1, "seed {seed}: {wrong} false verdicts");
            flagged += (wrong > 0) as usize;
            for v in &j.verdicts {
                // Zero counts (no CPU-85% spans) have no ratio: the rank test decides.
                let positive = v.baseline_values.iter().all(|x| *x > 0.0);
                assert_eq!(v.comparison.test.name() == "paired-t", positive, "{v:?}");
            }
        }
        assert!(flagged <= 2, "{flagged} of 20 A/A comparisons flagged");
        let mut ex = Synthetic::new(3);
        ex.slowdown.insert("b".into(), 1.10);
        let execs = run(rounds, &ex);
        let j = judge_with(&execs, &names(), &settings(3), &paired());
        let cpu = j
            .verdicts
            .iter()
            .find(|v| v.workload == "value" && v.metric.name == "cpu_percent")
            .unwrap();
        assert_eq!(cpu.verdict(), Verdict::Regression, "{cpu:?}");
        assert!((cpu.comparison.ratio.estimate - 1.10).abs() < 0.03);
    }

    /// One execution of the reference node's shape: CPU %, `tps` and block lines.
    fn node_exec(subject: &str, round: u32, cpu: f64, tps: f64, busy_s: f64) -> Execution {
        use dyno_exec::{Series, SeriesKind};
        use dyno_model::Unit;
        let series = |name: &str, unit, kind, points: Vec<(f64, f64)>| Series {
            metric: Metric::new(name, unit, Direction::LowerIsBetter),
            kind,
            points,
        };
        Execution {
            subject: subject.into(),
            workload: "value".into(),
            round,
            started_at: 0.0,
            command_line: vec![],
            series: vec![
                series(
                    "cpu_percent",
                    Unit::Percent,
                    SeriesKind::Gauge,
                    vec![(1.0, cpu), (2.0, cpu)],
                ),
                series(
                    "jsonl:tps",
                    Unit::PerSecond,
                    SeriesKind::Observations,
                    vec![(1.0, tps), (2.0, tps)],
                ),
                series(
                    "jsonl:txs",
                    Unit::Count,
                    SeriesKind::Observations,
                    vec![(1.0, 800.0), (1.4, 800.0)],
                ),
                series(
                    "jsonl:stage_forged_s",
                    Unit::Seconds,
                    SeriesKind::Observations,
                    vec![(1.0, busy_s), (1.4, busy_s)],
                ),
            ],
            outcome: Outcome::Complete,
            warnings: vec![],
            window: 0,
            placement: Default::default(),
            window_at: None,
            disturbance: None,
        }
    }

    #[test]
    fn the_windows_of_one_start_are_one_value_their_mean() {
        let window = |subject: &str, round: u32, w: u32, cpu: f64| {
            let mut e = node_exec(subject, round, cpu, 2000.0, 0.04);
            e.window = w;
            e
        };
        let execs = vec![
            window("a", 0, 0, 40.0),
            window("a", 0, 1, 60.0),
            window("b", 0, 0, 70.0),
            window("a", 1, 0, 44.0),
            window("b", 1, 0, 66.0),
            window("b", 1, 1, 77.0),
        ];
        let t = RunTable::of(&execs, &["a".into(), "b".into()], &BTreeMap::new());
        let cpu = t
            .rows
            .iter()
            .find(|r| r.metric.name == "cpu_percent")
            .unwrap();
        assert_eq!(cpu.values[0], [50.0, 44.0]);
        assert_eq!(cpu.values[1], [70.0, 71.5]);
        assert_eq!(cpu.rounds, [vec![0, 1], vec![0, 1]]);
    }

    #[test]
    fn cost_per_transaction_is_derived() {
        let e = node_exec("a", 0, 50.0, 2000.0, 0.04);
        let v = reference_values(&e.series);
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].metric.name, "cpu_s_per_tx");
        assert_eq!(v[0].metric.direction, Direction::LowerIsBetter);
        assert!((v[0].value - 0.5 / 2000.0).abs() < 1e-15);
        assert_eq!(v[1].metric.name, "bank_s_per_tx");
        assert!((v[1].value - 0.08 / 1600.0).abs() < 1e-15);
        // A node without `tps` or block lines gets neither.
        assert!(reference_values(&e.series[..1]).is_empty());
    }

    #[test]
    fn a_stored_speed_reference_is_not_judged() {
        // Stores written while dyno timed a machine-speed reference hold its series;
        // re-judged now, it is no metric of the subjects.
        let execs: Vec<Execution> = (0..6)
            .flat_map(|r| {
                ["a", "b"].map(|s| {
                    let mut e = node_exec(s, r, 40.0, 2000.0, 0.04);
                    e.series.push(Series {
                        metric: Metric::new(
                            REFERENCE_METRIC,
                            Unit::Seconds,
                            Direction::LowerIsBetter,
                        ),
                        kind: dyno_exec::SeriesKind::Gauge,
                        points: vec![(1.0, 0.003 * (1.0 + r as f64)), (2.0, 0.003)],
                    });
                    e
                })
            })
            .collect();
        let subjects = ["a".to_string(), "b".to_string()];
        let j = judge_with(&execs, &subjects, &settings(0), &paired());
        // The same cost in every execution: present, and not judged for want of change.
        assert!(j.unjudged.iter().any(|u| u.metric == "cpu_s_per_tx"));
        assert!(j
            .verdicts
            .iter()
            .map(|v| v.metric.name.as_str())
            .chain(j.unjudged.iter().map(|u| u.metric.as_str()))
            .all(|m| m != REFERENCE_METRIC && m != "cpu_ref_per_ktx"));
    }

    #[test]
    fn round_noise_hides_a_slowdown_from_the_unpaired_test_only() {
        // Each round the machine is up to 30% slower for both subjects alike; the
        // candidate costs 5% more in its own round.
        let level = [1.0, 1.3, 0.8, 1.1, 0.7, 1.25, 0.9, 1.05, 0.75, 1.2];
        let execs: Vec<Execution> = level
            .iter()
            .enumerate()
            .flat_map(|(r, l)| {
                let r = r as u32;
                let wiggle = 1.0 + 0.002 * (r as f64 - 4.5);
                [
                    node_exec("a", r, 40.0 * l, 2000.0, 0.04 * l),
                    node_exec("b", r, 42.0 * l * wiggle, 2000.0, 0.042 * l * wiggle),
                ]
            })
            .collect();
        let subjects = ["a".to_string(), "b".to_string()];
        let find = |j: &Judgement, m: &str| {
            j.verdicts
                .iter()
                .find(|v| v.metric.name == m)
                .unwrap()
                .verdict()
        };
        let p = judge_with(&execs, &subjects, &settings(0), &paired());
        let u = judge(&execs, &subjects, &settings(0));
        for m in ["cpu_s_per_tx", "bank_s_per_tx", "cpu_percent"] {
            assert_eq!(find(&p, m), Verdict::Regression, "paired {m}");
            assert_eq!(find(&u, m), Verdict::NoSignificantChange, "unpaired {m}");
        }
        let exact = JudgeOptions {
            test: TestKind::SignedRank,
            ..JudgeOptions::default()
        };
        let s = judge_with(&execs, &subjects, &settings(0), &exact);
        assert_eq!(find(&s, "cpu_s_per_tx"), Verdict::Regression);
        // Rounds 0..5 only: 5 pairs, which the exact test cannot judge after Holm; said so.
        let five = JudgeOptions {
            rounds: Some(0..5),
            ..exact.clone()
        };
        let j = judge_with(&execs, &subjects, &settings(0), &five);
        assert!(j.verdicts.iter().all(|v| v.baseline_values.len() == 5));
        assert!(
            j.notes.iter().any(|n| n.contains("run at least")),
            "{:?}",
            j.notes
        );
    }

    #[test]
    fn zero_baselines() {
        let s = settings(0);
        let c = zero_baseline(&[0.0, 0.0, 0.0], &[0.0, 0.0, 0.0], Better::Lower, &s).unwrap();
        assert_eq!(c.verdict, Verdict::NoSignificantChange);
        let z = [0.0; 10];
        let c = zero_baseline(&z, &[5.0; 10], Better::Lower, &s).unwrap();
        assert_eq!(c.verdict, Verdict::Regression);
    }
}

#[cfg(test)]
mod zero_round_tests;
