//! Rounds: every subject once per workload per round. Interleaved (the default), the
//! subjects of each workload run one at a time in an order shuffled afresh every round,
//! so slow drifts of the machine (thermal state, colleagues' builds) fall on all subjects
//! alike instead of on whichever runs last. Side by side (`schedule = "side_by_side"`),
//! every subject of a round starts together under its own copy of the workload and their
//! windows open and close at the same instant, so whatever drifts or disturbs the
//! machine during a window falls on both, and the round's ratio compares two windows of
//! the same wall-clock time.
//!
//! A round is one **start** of each node; with `windows_per_start = K` a start measures
//! K consecutive windows before its nodes stop (the judge averages them: a start is the
//! unit). Side by side:
//!
//! - **CPU sets cross over**: with `cpus`, in round `r` subject `i` runs on the CPUs of
//!   subject `(i + r) mod n`, so no release keeps a faster core; each execution records
//!   the CPUs it ran on.
//! - **Start order rotates**: the subject spawned first is `(r + r / n) mod n`, a cycle
//!   offset from the CPU sets' so the two are never confounded (with two subjects, the
//!   four combinations every four rounds); the noise report says what each explained.
//! - **A failure fails the round**: the others' executions of that start ran beside a
//!   node that died (less contention, a window cut short) and are not comparable alone,
//!   so they are recorded as failed too ("not comparable alone"), the round is left out
//!   of the pairs, and `on_failure` counts the failure against the subject that failed
//!   (not its partners). A round that failed is not run again, as interleaved.
//!
//! Interleaved executions whose window the rest of the machine disturbed (other work
//! above `max_disturbance`) are kept, marked [`Outcome::Disturbed`] (left out of the
//! judgement), and run again at the end of their round, after its other executions (so
//! a burst shorter than a round falls on one try only), at most [`DISTURBED_RERUNS`]
//! times; the last is then kept and warned about. Side by side with the CPUs shared (no
//! `cpus`), a disturbance falls on every subject of the window and is recorded, not run
//! again; with `cpus`, each node on CPUs of its own, a burst on one CPU falls on the node
//! there, so a disturbed start is run again as interleaved ([`falls_alike`]).

use crate::execution::{Execution, Outcome};
use crate::executor::Executor;
use crate::spec::{ComparisonFile, OnFailure, Schedule, SubjectSpec, WorkloadSpec};
pub use dyno_judge::precision::Stop;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_pcg::Pcg64;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};

/// One execution to make.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Slot {
    /// Zero-based round.
    pub round: u32,
    /// Index into the workloads.
    pub workload: usize,
    /// Index into the subjects (0 = baseline).
    pub subject: usize,
}

/// The order of all executions of an interleaved comparison: round by round, workload by
/// workload, subjects shuffled with a generator seeded by `seed` (the same file and seed
/// give the same order).
pub fn schedule(rounds: u32, subjects: usize, workloads: usize, seed: u64) -> Vec<Slot> {
    let mut rng = Pcg64::seed_from_u64(seed);
    let mut out = Vec::with_capacity(rounds as usize * subjects * workloads);
    for round in 0..rounds {
        for workload in 0..workloads {
            let mut order: Vec<usize> = (0..subjects).collect();
            order.shuffle(&mut rng);
            out.extend(order.into_iter().map(|subject| Slot {
                round,
                workload,
                subject,
            }));
        }
    }
    out
}

/// One start: the nodes a round starts together under one workload (one alone when
/// interleaved), in the order they are spawned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Start {
    /// Zero-based round.
    pub round: u32,
    /// Index into the workloads.
    pub workload: usize,
    /// Indices into the subjects, in spawn order.
    pub subjects: Vec<usize>,
}

impl Start {
    /// The slots this start fills.
    pub fn slots(&self) -> impl Iterator<Item = Slot> + '_ {
        self.subjects.iter().map(|&subject| Slot {
            round: self.round,
            workload: self.workload,
            subject,
        })
    }
}

/// The starts of a comparison in the order they run: interleaved, one per slot of
/// [`schedule`]; side by side, one per round and workload with every subject, the first
/// spawned rotating as the module docs say.
pub fn starts(cfg: &ComparisonFile) -> Vec<Start> {
    let n = cfg.subjects.len();
    match cfg.schedule {
        Schedule::Interleaved => schedule(cfg.rounds, n, cfg.workloads.len(), cfg.seed)
            .into_iter()
            .map(|s| Start {
                round: s.round,
                workload: s.workload,
                subjects: vec![s.subject],
            })
            .collect(),
        Schedule::SideBySide => (0..cfg.rounds)
            .flat_map(|round| {
                let r = round as usize;
                let first = (r + r / n.max(1)) % n.max(1);
                (0..cfg.workloads.len()).map(move |workload| Start {
                    round,
                    workload,
                    subjects: (0..n).map(|i| (first + i) % n).collect(),
                })
            })
            .collect(),
    }
}

/// The CPUs subject `subject` runs on in `round`: its own interleaved; side by side, the
/// crossover's (subject `i` takes the set of subject `(i + round) mod n`).
pub fn cpus_in_round(cfg: &ComparisonFile, subject: usize, round: u32) -> Option<Vec<usize>> {
    let n = cfg.subjects.len();
    match cfg.schedule {
        Schedule::Interleaved => cfg.subjects[subject].cpus.clone(),
        Schedule::SideBySide => cfg.subjects[(subject + round as usize) % n].cpus.clone(),
    }
}

/// Times an interleaved execution disturbed by other work is run again before the last
/// one is kept (with a warning).
pub const DISTURBED_RERUNS: usize = 2;

/// Consecutive failures of one subject after which the comparison stops.
pub const FAILURES_IN_A_ROW: usize = 2;

/// How a comparison's rounds ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// Every planned execution ran.
    Finished,
    /// The user interrupted; executions so far were handed over.
    Interrupted,
    /// A subject failed as often in a row as `on_failure` allows.
    GaveUp {
        /// The subject.
        subject: String,
        /// Its failures in a row.
        in_a_row: usize,
        /// Its last failure.
        reason: String,
    },
    /// A comparison with a precision target stopped by its rule ([`dyno_judge::precision`]).
    Decided(Stop),
    /// The caller's own rule stopped the rounds
    /// ([`crate::session::CompareSession::stop_rounds_when`]); why, in its words.
    Ruled(String),
}

/// What [`run_plan`] tells its caller.
#[derive(Debug)]
pub enum Step<'a> {
    /// Round `round` is about to start (its first execution still to do).
    Round(u32),
    /// A start is about to run: its index in the plan, the start and how many tries of
    /// it ran before (above 0: a disturbed start run again).
    Starting(usize, &'a Start, usize),
    /// A start ended: its index in the plan, the start and what each of its executions
    /// recorded (subject by subject in spawn order, window by window).
    Ran(usize, &'a Start, &'a [Execution]),
}

/// Runs the planned executions, handing each to `record` as soon as its start ends (so
/// the caller stores it before the next starts). `record` errors stop the rounds.
pub fn run_rounds<E>(
    cfg: &ComparisonFile,
    executor: &mut dyn Executor<Subject = SubjectSpec, Workload = WorkloadSpec>,
    stop: &AtomicBool,
    record: impl FnMut(usize, &Slot, &Execution) -> Result<(), E>,
) -> Result<Ending, E> {
    run_remaining_rounds(cfg, executor, stop, &HashSet::new(), record)
}

/// As [`run_rounds`], skipping the starts whose slots are all in `done` (the executions
/// an interrupted run of the same comparison already stored): the plan is the same for
/// the same file and seed, so the comparison continues where it stopped. `record` gets
/// the index of the execution's start in the plan.
pub fn run_remaining_rounds<E>(
    cfg: &ComparisonFile,
    executor: &mut dyn Executor<Subject = SubjectSpec, Workload = WorkloadSpec>,
    stop: &AtomicBool,
    done: &HashSet<Slot>,
    mut record: impl FnMut(usize, &Slot, &Execution) -> Result<(), E>,
) -> Result<Ending, E> {
    run_plan(cfg, executor, stop, done, |step| {
        if let Step::Ran(i, start, execs) = step {
            for e in execs {
                let slot = Slot {
                    round: start.round,
                    workload: start.workload,
                    subject: cfg
                        .subjects
                        .iter()
                        .position(|s| s.name == e.subject)
                        .unwrap_or(0),
                };
                record(i, &slot, e)?;
            }
        }
        Ok(None)
    })
}

/// As [`run_remaining_rounds`], telling `on` of every round before it starts and every
/// start as it ends (each try of a disturbed one too); `on` returning an ending stops the
/// rounds there (a precision reached, a comparison refused), an error stops them with
/// the error.
pub fn run_plan<E>(
    cfg: &ComparisonFile,
    executor: &mut dyn Executor<Subject = SubjectSpec, Workload = WorkloadSpec>,
    stop: &AtomicBool,
    done: &HashSet<Slot>,
    mut on: impl FnMut(Step<'_>) -> Result<Option<Ending>, E>,
) -> Result<Ending, E> {
    let plan = starts(cfg);
    let mut failures = vec![0usize; cfg.subjects.len()];
    let mut announced = None;
    // Disturbed starts to run again at the end of their round (plan index, tries so far),
    // after the round's other starts, so a burst shorter than a round is escaped.
    let mut deferred: Vec<(usize, usize)> = Vec::new();
    // The plan, then its end, where the last round's re-runs still wait.
    for next in plan.iter().enumerate().map(Some).chain([None]) {
        let round_ended = deferred
            .first()
            .is_some_and(|&(j, _)| next.is_none_or(|(_, s)| plan[j].round != s.round));
        if round_ended {
            let left = (&plan[..], &mut deferred, &mut failures[..]);
            if let Some(ending) = rerun_deferred(cfg, executor, stop, left, &mut on)? {
                return Ok(ending);
            }
        }
        let Some((i, start)) = next else { break };
        if start.slots().all(|s| done.contains(&s)) {
            continue;
        }
        if stop.load(Ordering::SeqCst) {
            return Ok(Ending::Interrupted);
        }
        if announced != Some(start.round) {
            announced = Some(start.round);
            if let Some(ending) = on(Step::Round(start.round))? {
                return Ok(ending);
            }
        }
        match try_start(cfg, executor, stop, (i, start), 0, &mut failures, &mut on)? {
            Tried::Done => {}
            Tried::Disturbed => deferred.push((i, 1)),
            Tried::Ended(ending) => return Ok(ending),
        }
    }
    Ok(Ending::Finished)
}

/// How one try of a start went.
enum Tried {
    /// Kept (complete, failed within what `on_failure` allows, or disturbed too often).
    Done,
    /// Disturbed: to be run again later.
    Disturbed,
    /// The rounds end here.
    Ended(Ending),
}

/// Runs one try of a start (`tries`: how many ran before) and tells `on` of it.
fn try_start<E>(
    cfg: &ComparisonFile,
    executor: &mut dyn Executor<Subject = SubjectSpec, Workload = WorkloadSpec>,
    stop: &AtomicBool,
    (i, start): (usize, &Start),
    tries: usize,
    failures: &mut [usize],
    on: &mut impl FnMut(Step<'_>) -> Result<Option<Ending>, E>,
) -> Result<Tried, E> {
    if let Some(ending) = on(Step::Starting(i, start, tries))? {
        return Ok(Tried::Ended(ending));
    }
    let (mut execs, failed) = run_start(cfg, executor, start, stop);
    let rerun = mark_disturbed(cfg, &mut execs, tries);
    warn_busy_window(cfg, &mut execs, busy_window_limit());
    if let Some(ending) = on(Step::Ran(i, start, &execs))? {
        return Ok(Tried::Ended(ending));
    }
    if execs.iter().any(|e| e.outcome == Outcome::Interrupted) || stop.load(Ordering::SeqCst) {
        return Ok(Tried::Ended(Ending::Interrupted));
    }
    if rerun {
        return Ok(Tried::Disturbed);
    }
    Ok(match count_failures(cfg, start, &failed, failures) {
        Some(ending) => Tried::Ended(ending),
        None => Tried::Done,
    })
}

/// Runs the round's deferred re-runs of disturbed starts, in the order they were
/// disturbed; one disturbed again goes to the back (after the others still waiting).
fn rerun_deferred<E>(
    cfg: &ComparisonFile,
    executor: &mut dyn Executor<Subject = SubjectSpec, Workload = WorkloadSpec>,
    stop: &AtomicBool,
    (plan, deferred, failures): (&[Start], &mut Vec<(usize, usize)>, &mut [usize]),
    on: &mut impl FnMut(Step<'_>) -> Result<Option<Ending>, E>,
) -> Result<Option<Ending>, E> {
    while !deferred.is_empty() {
        let (j, tries) = deferred.remove(0);
        match try_start(cfg, executor, stop, (j, &plan[j]), tries, failures, on)? {
            Tried::Done => {}
            Tried::Disturbed => deferred.push((j, tries + 1)),
            Tried::Ended(ending) => return Ok(Some(ending)),
        }
    }
    Ok(None)
}

/// Runs one start with its subjects' CPU sets for the round, and settles what a failure
/// means for the others (module docs): the executions, and the subjects that failed on
/// their own with their reasons. An executor that hands back fewer executions than the
/// start asks for fails them all.
fn run_start(
    cfg: &ComparisonFile,
    executor: &mut dyn Executor<Subject = SubjectSpec, Workload = WorkloadSpec>,
    start: &Start,
    stop: &AtomicBool,
) -> (Vec<Execution>, Vec<(String, String)>) {
    let subjects: Vec<SubjectSpec> = start
        .subjects
        .iter()
        .map(|&i| SubjectSpec {
            cpus: cpus_in_round(cfg, i, start.round),
            ..cfg.subjects[i].clone()
        })
        .collect();
    let refs: Vec<&SubjectSpec> = subjects.iter().collect();
    let workload = &cfg.workloads[start.workload];
    let windows = cfg.windows_per_start;
    let mut execs = executor.execute_together(&refs, workload, start.round, windows, stop);
    if execs.len() != subjects.len() * windows as usize {
        execs = refused_start(&subjects, workload, start.round, windows);
    }
    let mut failed: Vec<(String, String)> = Vec::new();
    for e in &execs {
        if let Outcome::Failed { reason, .. } = &e.outcome {
            if !failed.iter().any(|(s, _)| *s == e.subject) {
                failed.push((e.subject.clone(), reason.clone()));
            }
        }
    }
    if !failed.is_empty() {
        let names: Vec<String> = failed.iter().map(|(n, _)| format!("`{n}`")).collect();
        let reason = format!(
            "not comparable alone: {} failed beside it in this round",
            names.join(", ")
        );
        for e in execs.iter_mut() {
            if matches!(e.outcome, Outcome::Complete | Outcome::Disturbed { .. }) {
                e.outcome = Outcome::failed(reason.clone());
                e.series.clear();
            }
        }
    }
    (execs, failed)
}

/// The executions of a start an executor could not run (it runs one subject and one
/// window per start).
fn refused_start(
    subjects: &[SubjectSpec],
    workload: &WorkloadSpec,
    round: u32,
    windows: u32,
) -> Vec<Execution> {
    subjects
        .iter()
        .flat_map(|s| {
            (0..windows).map(move |w| {
                let mut e = Execution::starting(&s.name, &workload.name, round, Vec::new());
                e.window = w;
                e.outcome = Outcome::failed(
                    "this executor runs one subject with one window per start".into(),
                );
                e
            })
        })
        .collect()
}

/// Whether other work during a window falls on every subject of it alike: side by side
/// with the CPUs shared. Interleaved it falls on one execution; side by side with `cpus`
/// (each node on CPUs of its own) a one-core burst lands on the node of its CPU.
fn falls_alike(cfg: &ComparisonFile) -> bool {
    cfg.schedule == Schedule::SideBySide && cfg.subjects.iter().all(|s| s.cpus.is_none())
}

/// The other work (percent of one core) above which a start is run again: the
/// `max_disturbance`, unless a disturbance [`falls_alike`].
fn rerun_limit(cfg: &ComparisonFile) -> Option<f64> {
    cfg.max_disturbance.filter(|_| !falls_alike(cfg))
}

/// With a `max_disturbance`, unless a disturbance [`falls_alike`]: marks the start's
/// complete executions disturbed when any window's other work exceeded it, and says
/// whether to run the start again; after `tries` re-runs at [`DISTURBED_RERUNS`] they are
/// kept, with a warning.
fn mark_disturbed(cfg: &ComparisonFile, execs: &mut [Execution], tries: usize) -> bool {
    let Some(limit) = rerun_limit(cfg) else {
        return false;
    };
    let worst = worst_above(execs, limit);
    let Some(worst) = worst else {
        return false;
    };
    let rerun = tries < DISTURBED_RERUNS;
    for e in execs.iter_mut().filter(|e| e.outcome == Outcome::Complete) {
        let what = format!(
            "other work used {} during the window, above max_disturbance ({limit:.0}% of a core)",
            worst.sentence()
        );
        if rerun {
            e.outcome = Outcome::Disturbed { reason: what };
        } else {
            let cure = match cfg.schedule {
                Schedule::Interleaved => "side by side cancels what it does",
                Schedule::SideBySide => {
                    "side by side with the CPUs shared (no `cpus`) lets it fall on both alike"
                }
            };
            e.warnings.push(format!(
                "{what}: kept after {tries} runs again were disturbed too (a busy machine: {cure})"
            ));
        }
    }
    rerun
}

/// The most other work any complete execution's window saw, when above `limit`
/// (percent of one core).
fn worst_above(execs: &[Execution], limit: f64) -> Option<dyno_exec::Disturbance> {
    execs
        .iter()
        .filter(|e| e.outcome == Outcome::Complete)
        .filter_map(|e| e.disturbance.as_ref())
        .filter(|d| d.other_cpu_percent > limit)
        .max_by(|a, b| a.other_cpu_percent.total_cmp(&b.other_cpu_percent))
        .cloned()
}

/// Other work (percent of one core) during a window above which its execution warns:
/// the share of the machine's CPU time the check before each round warns at
/// ([`crate::session::BUSY_WARNING`]), in cores of this machine.
fn busy_window_limit() -> f64 {
    let cpus = crate::pinning::machine_cpus().len().max(1) as f64;
    100.0 * crate::session::BUSY_WARNING * cpus
}

/// The check before each round cannot see a burst that begins inside the round: each
/// window's own accounting of other work can. The first execution of a start whose
/// window saw more than `limit` (percent of one core) and that is kept (not run again as
/// disturbed) warns with the figure and the busiest process, once per start.
fn warn_busy_window(cfg: &ComparisonFile, execs: &mut [Execution], limit: f64) {
    let worst = worst_above(execs, limit);
    // Above `max_disturbance` (where it does not fall alike), the start was run again or
    // warned about.
    let handled = rerun_limit(cfg)
        .is_some_and(|max| worst.as_ref().is_some_and(|d| d.other_cpu_percent > max));
    let (false, Some(worst), Some(first)) = (
        handled,
        worst,
        execs.iter_mut().find(|e| e.outcome == Outcome::Complete),
    ) else {
        return;
    };
    let lands = match cfg.schedule {
        Schedule::SideBySide if falls_alike(cfg) => "it fell on every subject of the window alike",
        Schedule::SideBySide => {
            "each node runs on CPUs of its own, so it may have fallen on one more than the others"
        }
        Schedule::Interleaved => "it lands in this round's numbers",
    };
    first.warnings.push(format!(
        "the machine got busy during round {}'s window: other work used {}: {lands}",
        first.round + 1,
        worst.sentence()
    ));
}

/// Counts the start's failures (`failed`: subject and reason) against the subjects that
/// failed on their own, not their partners, whose streaks stand; an ending when one
/// failed as often in a row as `on_failure` allows.
fn count_failures(
    cfg: &ComparisonFile,
    start: &Start,
    failed: &[(String, String)],
    failures: &mut [usize],
) -> Option<Ending> {
    for &si in &start.subjects {
        let subject = &cfg.subjects[si];
        let Some((_, reason)) = failed.iter().find(|(s, _)| *s == subject.name) else {
            if failed.is_empty() {
                failures[si] = 0;
            }
            continue;
        };
        failures[si] += 1;
        let give_up = match cfg.on_failure {
            OnFailure::GiveUp => failures[si] >= FAILURES_IN_A_ROW,
            OnFailure::Stop => true,
            OnFailure::Continue => false,
        };
        if give_up {
            return Some(Ending::GaveUp {
                subject: subject.name.clone(),
                in_a_row: failures[si],
                reason: reason.clone(),
            });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_subject_runs_once_per_workload_per_round_in_varying_order() {
        let plan = schedule(20, 3, 2, 9);
        assert_eq!(plan.len(), 120);
        for round in 0..20 {
            for w in 0..2 {
                let mut s: Vec<usize> = plan
                    .iter()
                    .filter(|p| p.round == round && p.workload == w)
                    .map(|p| p.subject)
                    .collect();
                s.sort();
                assert_eq!(s, vec![0, 1, 2]);
            }
        }
        let firsts: std::collections::HashSet<usize> =
            plan.chunks(3).map(|c| c[0].subject).collect();
        assert_eq!(firsts.len(), 3, "the first subject of a round varies");
        assert_eq!(plan, schedule(20, 3, 2, 9));
        assert_ne!(plan, schedule(20, 3, 2, 10));
    }

    fn two_subjects(on_failure: &str) -> ComparisonFile {
        ComparisonFile::parse(
            &format!(
                "rounds = 3\non_failure = \"{on_failure}\"\n[[subject]]\nname = \"a\"\ncommand = [\"sh\"]\n[[subject]]\nname = \"b\"\ncommand = [\"sh\"]\n[[workload]]\nname = \"w\"\nrate = 1\nmeasure_s = 2\n"
            ),
            std::path::Path::new("t.toml"),
        )
        .unwrap()
    }

    fn run(cfg: &ComparisonFile, done: &HashSet<Slot>) -> (Ending, Vec<Slot>) {
        let mut ex = crate::mock::SyntheticExecutor::new(1);
        ex.failing.push("b".into());
        let mut ran = Vec::new();
        let ending =
            run_remaining_rounds(cfg, &mut ex, &AtomicBool::new(false), done, |_, s, _| {
                ran.push(*s);
                Ok::<_, ()>(())
            })
            .unwrap();
        (ending, ran)
    }

    #[test]
    fn on_failure_decides_when_a_failing_subject_ends_the_comparison() {
        let (e, ran) = run(&two_subjects("continue"), &HashSet::new());
        assert_eq!((e, ran.len()), (Ending::Finished, 6));
        let (e, ran) = run(&two_subjects("stop"), &HashSet::new());
        assert!(matches!(e, Ending::GaveUp { in_a_row: 1, .. }), "{e:?}");
        assert_eq!(ran.last().unwrap().subject, 1);
        let (e, _) = run(&two_subjects("give_up"), &HashSet::new());
        assert!(matches!(e, Ending::GaveUp { in_a_row: 2, .. }), "{e:?}");
        let e = ComparisonFile::parse("on_failure = \"retry\"\n", std::path::Path::new("t.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("t.toml:1:14: key `on_failure`: "), "{e}");
    }

    #[test]
    fn a_resumed_comparison_runs_only_the_slots_not_done() {
        let cfg = two_subjects("continue");
        let plan = schedule(3, 2, 1, cfg.seed);
        let done: HashSet<Slot> = plan[..4].iter().copied().collect();
        let (e, ran) = run(&cfg, &done);
        assert_eq!(e, Ending::Finished);
        assert_eq!(ran, plan[4..].to_vec());
    }

    /// Two `sh` subjects side by side (`extra` at the top of the file, `a_extra` and
    /// `b_extra` in each subject).
    fn side_by_side(extra: &str, a_extra: &str, b_extra: &str) -> ComparisonFile {
        let text = format!(
            "rounds = 4\n{extra}\n[[subject]]\nname = \"a\"\ncommand = [\"sh\"]\n{a_extra}\n[[subject]]\nname = \"b\"\ncommand = [\"sh\"]\n{b_extra}\n[[workload]]\nname = \"w\"\nrate = 1\nwarmup_s = 1\nmeasure_s = 10\n"
        );
        ComparisonFile::parse(&text, std::path::Path::new("t.toml")).unwrap()
    }

    fn all_executions(cfg: &ComparisonFile, ex: &mut crate::SyntheticExecutor) -> Vec<Execution> {
        let mut execs = Vec::new();
        let ending = run_rounds(cfg, ex, &AtomicBool::new(false), |_, _, e| {
            execs.push(e.clone());
            Ok::<_, ()>(())
        })
        .unwrap();
        assert_eq!(ending, Ending::Finished);
        execs
    }

    #[test]
    fn side_by_side_every_round_starts_both_and_their_windows_are_the_same_seconds() {
        let cfg = side_by_side("schedule = \"side_by_side\"", "", "");
        let plan = starts(&cfg);
        assert_eq!(plan.len(), 4, "one start per round");
        let first: Vec<usize> = plan.iter().map(|s| s.subjects[0]).collect();
        assert_eq!(first, [0, 1, 1, 0], "the first spawned rotates");
        assert!(plan.iter().all(|s| s.subjects.len() == 2));
        let execs = all_executions(&cfg, &mut crate::SyntheticExecutor::new(1));
        assert_eq!(execs.len(), 8);
        for pair in execs.chunks(2) {
            assert_eq!(pair[0].round, pair[1].round);
            assert_ne!(pair[0].subject, pair[1].subject);
            assert!(pair[0].window_at.is_some());
            assert_eq!(pair[0].window_at, pair[1].window_at, "{pair:?}");
        }
        assert_ne!(execs[0].window_at, execs[2].window_at);
        // Interleaved, the same file runs one subject at a time: no two windows shared.
        let interleaved = side_by_side("", "", "");
        let execs = all_executions(&interleaved, &mut crate::SyntheticExecutor::new(1));
        let windows: HashSet<String> = execs.iter().map(|e| format!("{:?}", e.window_at)).collect();
        assert_eq!(windows.len(), 8);
    }

    #[test]
    fn side_by_side_the_cpu_sets_cross_over_every_round() {
        let cfg = side_by_side(
            "schedule = \"side_by_side\"",
            "cpus = \"0\"",
            "cpus = \"1\"",
        );
        let execs = all_executions(&cfg, &mut crate::SyntheticExecutor::new(1));
        let of = |subject: &str| -> Vec<Vec<usize>> {
            execs
                .iter()
                .filter(|e| e.subject == subject)
                .map(|e| e.placement.cpus.clone().unwrap())
                .collect()
        };
        assert_eq!(of("a"), [vec![0], vec![1], vec![0], vec![1]]);
        assert_eq!(of("b"), [vec![1], vec![0], vec![1], vec![0]]);
        // Interleaved, each keeps its own.
        let own = side_by_side("", "cpus = \"0\"", "cpus = \"1\"");
        let execs = all_executions(&own, &mut crate::SyntheticExecutor::new(1));
        assert!(execs
            .iter()
            .all(|e| e.placement.cpus == Some(vec![usize::from(e.subject == "b")])));
    }

    #[test]
    fn side_by_side_a_failure_fails_the_round_for_both_and_counts_against_the_one_that_failed() {
        let cfg = side_by_side(
            "schedule = \"side_by_side\"\non_failure = \"give_up\"",
            "",
            "",
        );
        let mut ex = crate::SyntheticExecutor::new(1);
        ex.failing.push("b".into());
        let mut execs = Vec::new();
        let ending = run_rounds(&cfg, &mut ex, &AtomicBool::new(false), |_, _, e| {
            execs.push(e.clone());
            Ok::<_, ()>(())
        })
        .unwrap();
        assert!(
            matches!(ending, Ending::GaveUp { ref subject, in_a_row: 2, .. } if subject == "b"),
            "{ending:?}"
        );
        assert_eq!(execs.len(), 4);
        let a: Vec<&Execution> = execs.iter().filter(|e| e.subject == "a").collect();
        assert!(a.iter().all(|e| matches!(&e.outcome, Outcome::Failed { reason, .. } if reason.contains("`b` failed beside it"))), "{a:?}");
    }

    #[test]
    fn a_hog_disturbed_start_is_run_again_unless_side_by_side_shares_the_cpus() {
        let hog = dyno_judge::synthetic::Hog {
            from_s: 0.0,
            until_s: 10.0,
            cpu_percent: 95.0,
            slowdown: 1.4,
        };
        let cfg = side_by_side("max_disturbance = \"20%\"", "", "");
        assert_eq!(cfg.max_disturbance, Some(20.0));
        let mut ex = crate::SyntheticExecutor::new(1);
        ex.hogs.push(hog);
        let execs = all_executions(&cfg, &mut ex);
        assert_eq!(execs.len(), 9, "the first execution, disturbed, once more");
        let Outcome::Disturbed { reason } = &execs[0].outcome else {
            panic!("{:?}", execs[0].outcome)
        };
        assert!(reason.contains("busiest: hog"), "{reason}");
        // Run again at the end of its round, after the round's other execution.
        assert_eq!(execs[1].outcome, Outcome::Complete);
        assert_ne!(execs[1].subject, execs[0].subject);
        assert_eq!(execs[2].outcome, Outcome::Complete);
        assert_eq!(
            (execs[2].subject.as_str(), execs[2].round),
            (execs[0].subject.as_str(), 0)
        );
        // Side by side the hog falls on both subjects of the window: kept, not run again.
        let cfg = side_by_side(
            "schedule = \"side_by_side\"\nmax_disturbance = \"20%\"",
            "",
            "",
        );
        let mut ex = crate::SyntheticExecutor::new(1);
        ex.hogs.push(hog);
        let execs = all_executions(&cfg, &mut ex);
        assert_eq!(execs.len(), 8);
        assert!(execs.iter().all(|e| e.outcome == Outcome::Complete));
        assert!(execs[0].disturbance.is_some() && execs[1].disturbance.is_some());
        // Side by side with `cpus`, each node on a CPU of its own, the one-core hog falls
        // on one of them: the start, both subjects, is run again.
        let cfg = side_by_side(
            "schedule = \"side_by_side\"\nmax_disturbance = \"20%\"",
            "cpus = \"0\"",
            "cpus = \"1\"",
        );
        let mut ex = crate::SyntheticExecutor::new(1);
        ex.hogs.push(hog);
        let execs = all_executions(&cfg, &mut ex);
        assert_eq!(execs.len(), 10, "the first start, both subjects, once more");
        assert!(execs[..2]
            .iter()
            .all(|e| matches!(e.outcome, Outcome::Disturbed { .. })));
        assert!(execs[2..].iter().all(|e| e.outcome == Outcome::Complete));
        assert_eq!((execs[2].round, execs[3].round), (0, 0));
    }

    #[test]
    fn a_burst_longer_than_one_execution_spoils_one_try_of_each_not_every_try_of_one() {
        // The hog covers the first execution and part of the second: run again at once,
        // the first's next try would fall inside it too.
        let hog = dyno_judge::synthetic::Hog {
            from_s: 0.0,
            until_s: 20.0,
            cpu_percent: 95.0,
            slowdown: 1.4,
        };
        let cfg = side_by_side("max_disturbance = \"20%\"", "", "");
        let mut ex = crate::SyntheticExecutor::new(1);
        ex.hogs.push(hog);
        let execs = all_executions(&cfg, &mut ex);
        let disturbed: Vec<(&str, u32)> = execs
            .iter()
            .filter(|e| matches!(e.outcome, Outcome::Disturbed { .. }))
            .map(|e| (e.subject.as_str(), e.round))
            .collect();
        assert_eq!(disturbed.len(), 2, "{disturbed:?}");
        assert_ne!(disturbed[0].0, disturbed[1].0, "{disturbed:?}");
        assert_eq!(execs.len(), 10);
        assert!(execs[2..4]
            .iter()
            .all(|e| e.outcome == Outcome::Complete && e.round == 0));
        assert!(
            execs.iter().all(|e| e.warnings.is_empty()),
            "none kept disturbed"
        );
    }

    #[test]
    fn a_burst_that_begins_inside_a_round_warns_with_the_window_s_figure() {
        use crate::executor::ProcessExecutor;
        let text = "rounds = 1\n[[subject]]\nname = \"a\"\ncommand = [\"sleep\", \"30\"]\n[[subject]]\nname = \"b\"\ncommand = [\"sleep\", \"30\"]\n[[workload]]\nname = \"w\"\nrate = 1\nwarmup_s = 0\nmeasure_s = 2\n";
        let cfg = ComparisonFile::parse(text, std::path::Path::new("t.toml")).unwrap();
        let mut ex = ProcessExecutor::new(1.0);
        let mut hog: Option<dyno_proc::GuardedChild> = None;
        let mut execs = Vec::new();
        let stop = AtomicBool::new(false);
        // The burst begins once the round has (after any check before it), inside it.
        let ending = run_plan(&cfg, &mut ex, &stop, &HashSet::new(), |step| {
            match step {
                Step::Round(_) => {
                    let mut cmd = std::process::Command::new("sh");
                    cmd.args(["-c", "while :; do :; done"]);
                    hog = Some(dyno_proc::GuardedChild::spawn(cmd, &Default::default()).unwrap());
                }
                Step::Ran(_, _, ran) => execs.extend(ran.iter().cloned()),
                Step::Starting(..) => {}
            }
            Ok::<_, ()>(None)
        })
        .unwrap();
        let hog = hog.expect("the round was announced");
        let hog_pid = hog.pid();
        hog.stop(std::time::Duration::from_secs(1));
        assert_eq!(ending, Ending::Finished);
        assert_eq!(execs.len(), 2);
        // As run: the first execution of the start warns when its window saw more than a
        // quarter of the machine (the hog's core, with whatever else the machine does).
        let d = execs[0].disturbance.clone().expect("measured");
        let warned = execs[0]
            .warnings
            .iter()
            .any(|w| w.contains("got busy during round 1"));
        assert_eq!(warned, d.other_cpu_percent > busy_window_limit(), "{d:?}");
        // A real spinner outside the measured trees is more than a quarter of the machine
        // whatever else runs (a limit of 1% of a core here, so a slow test machine that
        // gives the spinner little time still shows it).
        let mut first = execs[0].clone();
        first.warnings.clear();
        let mut one = vec![first];
        warn_busy_window(&cfg, &mut one, 1.0);
        let warning = one[0]
            .warnings
            .first()
            .unwrap_or_else(|| panic!("{:?}", one[0].disturbance));
        assert!(
            warning.starts_with("the machine got busy during round 1's window: other work used "),
            "{warning}"
        );
        assert!(warning.contains("busiest: "), "{warning}");
        let d = one[0].disturbance.as_ref().unwrap();
        assert!(d.other_cpu_percent > 1.0, "{d:?}");
        // The hog was named, or something busier still was.
        let (_, pid, share) = d.busiest.clone().unwrap();
        assert!(pid == hog_pid || share > 0.0, "{d:?}");
    }

    #[test]
    fn a_failing_subject_stops_the_rounds() {
        let text = "rounds = 10\n[[subject]]\nname = \"a\"\ncommand = [\"sh\"]\n[[subject]]\nname = \"b\"\ncommand = [\"sh\"]\n[[workload]]\nname = \"value\"\nrate = 1000\nmeasure_s = 20\n";
        let cfg = ComparisonFile::parse(text, std::path::Path::new("t.toml")).unwrap();
        let mut ex = crate::SyntheticExecutor::new(1);
        ex.failing.push("b".into());
        let mut execs = Vec::new();
        let stop = AtomicBool::new(false);
        let ending = run_rounds(&cfg, &mut ex, &stop, |_, _, e| {
            execs.push(e.clone());
            Ok::<_, ()>(())
        })
        .unwrap();
        assert!(matches!(ending, Ending::GaveUp { ref subject, .. } if subject == "b"));
        assert!(execs.len() <= 4);
        assert!(execs
            .iter()
            .all(|e| e.subject == "a" || e.outcome != Outcome::Complete));
    }
}
