//! Precision targets: keep adding rounds until the comparison can see a change of the
//! size asked for, a change is flagged, or the budget ends.
//!
//! ```toml
//! precision = "5%"     # every primary metric's minimum detectable change at most 5%
//! max_rounds = 100     # the default
//! max_minutes = 60     # the default: executions of every session together
//! ```
//!
//! With a precision target every verdict is judged by the sequential t-test
//! (`dyno_stats::sequential_t`, `test = "sequential"`), whose always-valid p-values may
//! be looked at after every round without inflating false alarms; Holm's correction over
//! the primary family applies to them as to any p-value. After every complete round the
//! session takes a [`Look`]: each primary metric's minimum detectable change (the change
//! the sequential test would flag with 80% power at the rounds run, given the observed
//! spread and the family) and the rounds it predicts are still needed, then the
//! stopping rule, in this order:
//!
//! 1. a primary metric's change is flagged (after Holm, outside the noise band): stop,
//!    the verdict is in;
//! 2. every primary metric's minimum detectable change is at or below the target: stop,
//!    "no change larger than the target";
//! 3. `max_rounds` rounds are done, or the next round would end past `max_minutes`: stop
//!    and say what was reached and what reaching the target would need.
//!
//! The rule reads only stored executions, so a comparison interrupted and run again
//! continues its sequence (the time already spent is stored with each execution), and a
//! comparison that stopped can be continued with a tighter target or a larger budget:
//! the sequential test stays valid when continued.

use crate::comparison::Sequential;
use crate::comparison::TestKind;
use crate::comparison::{ComparisonMeta, Workload};
use crate::verdict::{judge_with, JudgeOptions, Judgement};
use dyno_exec::Execution;
use dyno_stats::{ComparisonSettings, PowerQuestion, PowerTest, Verdict};
use std::collections::HashSet;

/// Why a comparison with a precision target stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    /// Every primary metric's detectable change reached the target.
    Reached,
    /// A primary metric's change was flagged (these, as "metric of candidate under
    /// workload").
    Flagged(Vec<String>),
    /// `max_rounds` rounds ran.
    MaxRounds,
    /// The next round would have ended past `max_minutes`.
    MaxMinutes,
}

impl Stop {
    /// A clause for the report: "every primary metric can see 5.0%", "a change was
    /// flagged (...)", "the budget of 100 rounds ended".
    pub fn sentence(&self, seq: &Sequential) -> String {
        match self {
            Stop::Reached => format!(
                "every primary metric reached the precision of {:.1}%",
                seq.precision * 100.0
            ),
            Stop::Flagged(what) => format!("a change was flagged ({})", what.join("; ")),
            Stop::MaxRounds => format!("the budget of {} rounds ended", seq.max_rounds),
            Stop::MaxMinutes => format!("the budget of {} minutes ended", seq.max_minutes),
        }
    }
}

/// Where one primary verdict stands after a look.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricPrecision {
    /// The workload.
    pub workload: String,
    /// The candidate.
    pub candidate: String,
    /// The metric.
    pub metric: String,
    /// Rounds paired so far.
    pub rounds: usize,
    /// Its minimum detectable change now (`None`: none can be flagged yet, or the spread
    /// is unknown).
    pub detectable: Option<f64>,
    /// Rounds in all at which its detectable change reaches the target with the spread
    /// seen so far (`None`: more than `dyno_stats::POWER_MAX_ROUNDS`).
    pub rounds_needed: Option<usize>,
}

/// What the stopping rule saw after a round.
#[derive(Debug, Clone, PartialEq)]
pub struct Look {
    /// Complete rounds so far (every subject and workload executed).
    pub rounds: u32,
    /// The target.
    pub target: f64,
    /// Each primary verdict's precision.
    pub metrics: Vec<MetricPrecision>,
    /// Rounds still needed by the least precise primary metric, as predicted from the
    /// spread so far (`None`: unknown, or more than the search covers).
    pub rounds_left: Option<usize>,
    /// Seconds of the comparison so far, every session together.
    pub elapsed_s: f64,
    /// Whether and why to stop.
    pub stop: Option<Stop>,
}

/// `5.0%`, or `over 1000%`.
pub fn percent(x: f64) -> String {
    crate::power::change_text(x)
}

impl MetricPrecision {
    /// "kv-200: cpu_s_per_tx of v1.0.1 can see 12.3% (target 5.0%; about 31 rounds in
    /// all)".
    pub fn sentence(&self, target: f64) -> String {
        let now = match self.detectable {
            Some(d) => format!("can see {}", percent(d)),
            None => "cannot flag any change yet".to_string(),
        };
        let needed = match (self.detectable, self.rounds_needed) {
            (Some(d), _) if d <= target => "reached".to_string(),
            (_, Some(r)) => format!("about {r} rounds in all"),
            (_, None) => format!("more than {} rounds", dyno_stats::POWER_MAX_ROUNDS),
        };
        format!(
            "{}: {} of {} {now} after {} rounds (target {}; {needed})",
            self.workload,
            self.metric,
            self.candidate,
            self.rounds,
            percent(target)
        )
    }
}

/// Rounds every one of whose planned executions is stored (complete or failed).
pub fn complete_rounds(meta: &ComparisonMeta, executions: &[Execution]) -> u32 {
    let per_round = meta.subjects.len() * meta.workloads.len();
    let mut slots: std::collections::BTreeMap<u32, HashSet<(&str, &str)>> = Default::default();
    for e in executions.iter().filter(|e| e.outcome.counts()) {
        slots
            .entry(e.round)
            .or_default()
            .insert((e.subject.as_str(), e.workload.as_str()));
    }
    slots.values().filter(|s| s.len() >= per_round).count() as u32
}

/// The sequential judgement of the executions so far, with `primary` the primary
/// metrics (as `--primary` or the file names them; empty: the default family).
pub fn judge_sequential(
    meta: &ComparisonMeta,
    executions: &[Execution],
    primary: &[String],
) -> Judgement {
    let settings = ComparisonSettings {
        noise_band: meta.noise_band,
        alpha: meta.alpha,
        seed: meta.seed,
        ..ComparisonSettings::default()
    };
    let options = JudgeOptions {
        test: TestKind::Sequential,
        rounds: None,
        primary: primary.to_vec(),
        work: meta.work.clone(),
    };
    judge_with(executions, &meta.subjects, &settings, &options)
}

/// The look after a round: every primary verdict's precision, and the stopping rule of
/// the module docs. `elapsed_s` is the comparison's time so far and `round_s` what the
/// next round is expected to take.
pub fn look(
    meta: &ComparisonMeta,
    seq: &Sequential,
    executions: &[Execution],
    primary: &[String],
    elapsed_s: f64,
    round_s: f64,
) -> Look {
    let judgement = judge_sequential(meta, executions, primary);
    look_at(meta, seq, executions, &judgement, elapsed_s, round_s)
}

/// [`look`] at a judgement already made by the sequential test over every round (a
/// report's own, so a report judges once).
fn look_at(
    meta: &ComparisonMeta,
    seq: &Sequential,
    executions: &[Execution],
    judgement: &Judgement,
    elapsed_s: f64,
    round_s: f64,
) -> Look {
    let rounds = complete_rounds(meta, executions);
    let mut metrics = Vec::new();
    let mut flagged = Vec::new();
    for v in judgement.verdicts.iter().filter(|v| !v.secondary) {
        if v.verdict() != Verdict::NoSignificantChange {
            flagged.push(format!(
                "{} of {} under {}",
                v.metric.name, v.candidate, v.workload
            ));
        }
        let (n, detectable, needed) = match v.power {
            Some(p) => {
                let q = PowerQuestion {
                    test: PowerTest::Sequential,
                    n: p.rounds,
                    sd: p.log_sd,
                    alpha: meta.alpha,
                    family: p.family,
                    power: crate::power::POWER,
                };
                (
                    p.rounds,
                    p.min_detectable_change,
                    q.rounds_for(seq.precision),
                )
            }
            None => (
                v.baseline_values.len().min(v.candidate_values.len()),
                None,
                None,
            ),
        };
        metrics.push(MetricPrecision {
            workload: v.workload.clone(),
            candidate: v.candidate.clone(),
            metric: v.metric.name.clone(),
            rounds: n,
            detectable,
            rounds_needed: needed,
        });
    }
    let reached = |m: &MetricPrecision| m.detectable.is_some_and(|d| d <= seq.precision);
    // Nothing judged yet (fewer than two rounds paired): nothing predicted either.
    let rounds_left = metrics
        .iter()
        .filter(|m| !reached(m))
        .map(|m| m.rounds_needed.map(|r| r.saturating_sub(m.rounds)))
        .try_fold(0usize, |most, r| r.map(|r| most.max(r)))
        .filter(|_| !metrics.is_empty());
    let stop = if !flagged.is_empty() {
        Some(Stop::Flagged(flagged))
    } else if !metrics.is_empty() && metrics.iter().all(reached) {
        Some(Stop::Reached)
    } else if rounds >= seq.max_rounds {
        Some(Stop::MaxRounds)
    } else if elapsed_s + round_s > seq.max_minutes * 60.0 {
        Some(Stop::MaxMinutes)
    } else {
        None
    };
    Look {
        rounds,
        target: seq.precision,
        metrics,
        rounds_left,
        elapsed_s,
        stop,
    }
}

impl Look {
    /// What the look says, one line each: where it stands after its rounds, then each
    /// primary metric.
    pub fn lines(&self) -> Vec<String> {
        let look = self;
        let left = match look.rounds_left {
            _ if look.stop.is_some() => String::new(),
            Some(r) => format!("; about {r} more rounds predicted"),
            None => "; the rounds still needed are not known yet".into(),
        };
        let judged = if look.metrics.is_empty() {
            ": no primary metric judged yet (two rounds are the least)"
        } else {
            ":"
        };
        let head = format!(
            "precision after {} round{} ({:.0} min){left}{judged}",
            look.rounds,
            if look.rounds == 1 { "" } else { "s" },
            look.elapsed_s / 60.0
        );
        std::iter::once(head)
            .chain(
                look.metrics
                    .iter()
                    .map(|m| format!("  {}", m.sentence(look.target))),
            )
            .collect()
    }
}

impl Look {
    /// What the comparison reached and, when it stopped short of the target, what it
    /// would need: one line per primary metric that did not reach it.
    pub fn shortfall(&self) -> Vec<String> {
        self.metrics
            .iter()
            .filter(|m| !m.detectable.is_some_and(|d| d <= self.target))
            .map(|m| m.sentence(self.target))
            .collect()
    }
}

/// The report's lines about a comparison with a precision target: the target and test,
/// where the stopping rule stands (stopped, and why; or not decided yet), and for every
/// primary metric short of the target what it reached and what it would need.
/// `elapsed_s` is the comparison's time as stored. `sequential` is the judgement of the
/// sequential test over every round when the caller has it (else it is made here).
pub fn summary(
    meta: &ComparisonMeta,
    seq: &Sequential,
    executions: &[Execution],
    primary: &[String],
    sequential: Option<&Judgement>,
    elapsed_s: f64,
) -> Vec<String> {
    let rounds = complete_rounds(meta, executions);
    let round_s = if rounds > 0 {
        elapsed_s / rounds as f64
    } else {
        0.0
    };
    let l = match sequential {
        Some(j) => look_at(meta, seq, executions, j, elapsed_s, round_s),
        None => look(meta, seq, executions, primary, elapsed_s, round_s),
    };
    let minutes = if elapsed_s > 0.0 {
        format!(" in {:.0} min", elapsed_s / 60.0)
    } else {
        String::new()
    };
    let status = match &l.stop {
        Some(stop) => format!("stopped after {rounds} rounds{minutes}: {}", stop.sentence(seq)),
        None => format!(
            "not decided after {rounds} rounds{minutes} (the comparison was interrupted: run the same command again to continue{})",
            match l.rounds_left {
                Some(r) => format!("; about {r} more rounds predicted"),
                None => String::new(),
            }
        ),
    };
    let mut out = vec![format!(
        "target {} (every primary metric's detectable change), budget {} rounds or {} min; sequential test with always-valid p-values, Holm over {} primary comparisons: {status}",
        percent(seq.precision),
        seq.max_rounds,
        seq.max_minutes,
        l.metrics.len()
    )];
    if !matches!(l.stop, Some(Stop::Reached)) {
        out.extend(
            l.shortfall()
                .into_iter()
                .map(|s| format!("short of the target: {s}")),
        );
    }
    out
}

/// Fills what a judgement says beyond its verdicts when a comparison is read for
/// precision: where each primary metric's noise comes from, with the window and rounds
/// that would reach the comparison's precision (5% without one) soonest; and, with a
/// precision target, [`summary`] (plus a note when it is judged with a test that cannot
/// be looked at after every round). `workloads` as stored, `options` what the judgement
/// was made with (the test, the rounds, the primary metrics as `--primary` or the file
/// names them). A judgement of the sequential test over every round is the precision
/// rule's own: it is not judged again.
pub fn annotate(
    judgement: &mut Judgement,
    meta: &ComparisonMeta,
    executions: &[Execution],
    workloads: &[Workload],
    options: &JudgeOptions,
    elapsed_s: f64,
) {
    let (test, primary) = (options.test, &options.primary[..]);
    let keys = judgement.primary_keys();
    let target = meta
        .sequential
        .map_or(crate::power::REFERENCE_CHANGE, |s| s.precision);
    judgement.noise = crate::noise::report(meta, executions, workloads, &keys, test, target);
    if let Some(seq) = &meta.sequential {
        let own = test == TestKind::Sequential && options.rounds.is_none();
        let sequential = own.then_some(&*judgement);
        judgement.precision = summary(meta, seq, executions, primary, sequential, elapsed_s);
        if test != TestKind::Sequential {
            judgement.notes.push(format!(
                "the rounds of this comparison were chosen by looking at its data (precision {}): the `{}` test assumes they were fixed in advance, so its p-values overstate the evidence; the sequential test does not",
                percent(seq.precision),
                test.name()
            ));
        }
    }
}
