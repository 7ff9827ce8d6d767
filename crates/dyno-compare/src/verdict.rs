//! Verdicts: per workload and metric, each candidate's per-round values against the
//! baseline's: ratio of medians with a bootstrap interval, a two-sided Mann-Whitney test,
//! Holm's correction across every metric, workload and candidate of the comparison, and
//! the noise band (see `dyno_stats::comparison`).

use crate::execution::{run_values, Execution, Outcome};
use dyno_model::{Direction, Metric};
use dyno_stats::{
    apply_holm, compare, mann_whitney_u, Alternative, Better, Comparison, ComparisonSettings,
    ConfidenceInterval, Verdict,
};

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
    /// The statistics; the verdict is `comparison.verdict`.
    pub comparison: Comparison,
}

impl MetricVerdict {
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
}

/// All verdicts of a comparison, with notes on what could not be judged.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Judgement {
    /// Verdicts, by workload, then metric, then candidate.
    pub verdicts: Vec<MetricVerdict>,
    /// Metrics left out, and warnings about power.
    pub notes: Vec<String>,
}

impl Judgement {
    /// True when any verdict is a regression.
    pub fn has_regression(&self) -> bool {
        self.verdicts
            .iter()
            .any(|v| v.verdict() == Verdict::Regression)
    }
}

/// Per-run values grouped by workload and metric, each with one list per subject.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunTable {
    /// `(workload, metric, values[subject])`, in first-seen order.
    pub rows: Vec<(String, Metric, Vec<Vec<f64>>)>,
}

impl RunTable {
    /// Collects the per-run values of the complete executions.
    pub fn of(executions: &[Execution], subjects: &[String]) -> RunTable {
        let mut table = RunTable::default();
        for e in executions.iter().filter(|e| e.outcome == Outcome::Complete) {
            let Some(si) = subjects.iter().position(|s| *s == e.subject) else {
                continue;
            };
            for v in run_values(&e.series) {
                let idx = match table
                    .rows
                    .iter()
                    .position(|(w, m, _)| *w == e.workload && m.name == v.metric.name)
                {
                    Some(i) => i,
                    None => {
                        table.rows.push((
                            e.workload.clone(),
                            v.metric.clone(),
                            vec![Vec::new(); subjects.len()],
                        ));
                        table.rows.len() - 1
                    }
                };
                table.rows[idx].2[si].push(v.value);
            }
        }
        table
    }
}

fn better(d: Direction) -> Better {
    match d {
        Direction::HigherIsBetter => Better::Higher,
        Direction::LowerIsBetter => Better::Lower,
    }
}

/// Judges every candidate (subjects after the first) against the baseline.
pub fn judge(
    executions: &[Execution],
    subjects: &[String],
    settings: &ComparisonSettings,
) -> Judgement {
    let table = RunTable::of(executions, subjects);
    let mut out = Judgement::default();
    let mut min_n = usize::MAX;
    for (workload, metric, values) in &table.rows {
        let base = &values[0];
        for (ci, cand) in values.iter().enumerate().skip(1) {
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
            min_n = min_n.min(base.len().min(cand.len()));
            let one = ComparisonSettings {
                seed: settings.seed.wrapping_add(out.verdicts.len() as u64),
                ..*settings
            };
            let comparison = match compare(base, cand, better(metric.direction), &one) {
                Ok(c) => c,
                Err(_) => match zero_baseline(base, cand, better(metric.direction), settings) {
                    Some(c) => c,
                    None => continue,
                },
            };
            out.verdicts.push(MetricVerdict {
                workload: workload.clone(),
                candidate: subjects[ci].clone(),
                metric: metric.clone(),
                baseline_values: base.clone(),
                candidate_values: cand.clone(),
                comparison,
            });
        }
    }
    // A metric whose every value, baseline and candidate, is the same number (no I/O, no
    // major faults) gives p = 1 under every ordering of the data: it can never be
    // significant, so it stays out of Holm's family rather than diluting the others
    // (Tarone's argument for tests that cannot reject).
    let family: Vec<usize> = (0..out.verdicts.len())
        .filter(|&i| !constant(&out.verdicts[i]))
        .collect();
    let mut comparisons: Vec<Comparison> =
        family.iter().map(|&i| out.verdicts[i].comparison).collect();
    if apply_holm(&mut comparisons, settings.alpha, settings.noise_band).is_ok() {
        for (&i, c) in family.iter().zip(comparisons) {
            out.verdicts[i].comparison = c;
        }
    }
    for v in out.verdicts.iter_mut().filter(|v| constant(v)) {
        v.comparison.p_adjusted = 1.0;
        v.comparison.verdict = Verdict::NoSignificantChange;
    }
    if let Some(note) = power_note(min_n, family.len(), settings.alpha) {
        out.notes.push(note);
    }
    out
}

fn constant(v: &MetricVerdict) -> bool {
    let first = v.baseline_values[0];
    v.baseline_values
        .iter()
        .chain(&v.candidate_values)
        .all(|&x| x == first)
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
        test,
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
/// `2 / C(2n, n)`; times `m` comparisons (Holm's first step) it must reach `alpha` for any
/// verdict to be possible. Returns a warning when it cannot, naming the rounds needed.
pub fn power_note(n: usize, m: usize, alpha: f64) -> Option<String> {
    if m == 0 || n == usize::MAX {
        return None;
    }
    let min_p = |n: usize| 2.0 / binomial(2 * n, n) * m as f64;
    if min_p(n) <= alpha {
        return None;
    }
    let needed = (n..200).find(|&k| min_p(k) <= alpha).unwrap_or(200);
    Some(format!(
        "with {n} complete runs per subject and {m} comparisons no difference can be significant at alpha = {alpha} (smallest Holm-adjusted p = {:.3}); run at least {needed} rounds",
        min_p(n).min(1.0)
    ))
}

fn binomial(n: usize, k: usize) -> f64 {
    (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::config::ComparisonFile;
    use crate::mock::SyntheticExecutor;
    use crate::runner::{run_rounds, Ending};
    use std::sync::atomic::AtomicBool;

    pub(crate) fn file(rounds: u32) -> ComparisonFile {
        let text = format!(
            "rounds = {rounds}\n[[subject]]\nname = \"a\"\ncommand = [\"sh\"]\n[[subject]]\nname = \"b\"\ncommand = [\"sh\"]\n[[workload]]\nname = \"value\"\nrate = 1000\nmeasure_s = 20\n[[workload]]\nname = \"script\"\nrate = 100\nmeasure_s = 20\n"
        );
        ComparisonFile::parse(&text, std::path::Path::new("t.toml")).unwrap()
    }

    fn settings(seed: u64) -> ComparisonSettings {
        ComparisonSettings {
            resamples: 1000,
            seed,
            ..ComparisonSettings::default()
        }
    }

    fn run(cfg: &ComparisonFile, ex: &mut SyntheticExecutor) -> (Vec<Execution>, Ending) {
        let mut execs = Vec::new();
        let stop = AtomicBool::new(false);
        let ending = run_rounds(cfg, ex, &stop, |_, _, e| {
            execs.push(e.clone());
            Ok::<_, ()>(())
        })
        .unwrap();
        (execs, ending)
    }

    fn names(cfg: &ComparisonFile) -> Vec<String> {
        cfg.subjects.iter().map(|s| s.name.clone()).collect()
    }

    #[test]
    fn a_against_itself_is_no_change_on_every_metric_for_20_seeds() {
        let cfg = file(10);
        for seed in 0..20 {
            let (execs, ending) = run(&cfg, &mut SyntheticExecutor::new(seed));
            assert_eq!(ending, Ending::Finished);
            let j = judge(&execs, &names(&cfg), &settings(seed));
            // 9 process metrics + 2 span metrics + 1 node rate, 2 workloads.
            assert_eq!(j.verdicts.len(), 24, "{:?}", j.notes);
            for v in &j.verdicts {
                assert_eq!(
                    v.verdict(),
                    Verdict::NoSignificantChange,
                    "seed {seed}: {} {} {:?}",
                    v.workload,
                    v.metric.name,
                    v.comparison
                );
            }
        }
    }

    #[test]
    fn a_slower_candidate_regresses_on_cpu_and_throughput_only() {
        let cfg = file(10);
        let mut ex = SyntheticExecutor::new(3);
        ex.slowdown.insert("b".into(), 1.10);
        let (execs, _) = run(&cfg, &mut ex);
        let j = judge(&execs, &names(&cfg), &settings(3));
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
            assert_eq!(
                verdict(w, "cpu85_spans").verdict(),
                Verdict::NoSignificantChange
            );
        }
    }

    #[test]
    fn too_few_rounds_are_flagged() {
        let cfg = file(3);
        let (execs, _) = run(&cfg, &mut SyntheticExecutor::new(1));
        let j = judge(&execs, &names(&cfg), &settings(1));
        assert!(
            j.notes.iter().any(|n| n.contains("run at least")),
            "{:?}",
            j.notes
        );
        assert_eq!(power_note(10, 24, 0.05), None);
        assert!(power_note(5, 24, 0.05)
            .unwrap()
            .contains("run at least 7 rounds"));
    }

    #[test]
    fn a_failing_subject_stops_the_rounds() {
        let cfg = file(10);
        let mut ex = SyntheticExecutor::new(1);
        ex.failing.push("b".into());
        let (execs, ending) = run(&cfg, &mut ex);
        assert!(matches!(ending, Ending::GaveUp { ref subject, .. } if subject == "b"));
        assert!(execs.len() <= 4);
        let j = judge(&execs, &names(&cfg), &settings(1));
        assert!(j.verdicts.is_empty());
    }

    #[test]
    fn metrics_that_cannot_differ_do_not_dilute_holm() {
        use crate::execution::{Series, SeriesKind};
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
        };
        let execs: Vec<Execution> = (0..6)
            .flat_map(|r| [exec("a", r, 50.0 + r as f64), exec("b", r, 60.0 + r as f64)])
            .collect();
        let j = judge(&execs, &["a".into(), "b".into()], &settings(0));
        assert_eq!(j.verdicts.len(), 33); // cpu, its two span metrics, 30 zeros
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
