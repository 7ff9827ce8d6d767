//! Rounds: every subject once per workload per round, the subjects of each workload in an
//! order shuffled afresh every round, so slow drifts of the machine (thermal state,
//! colleagues' builds) fall on all subjects alike instead of on whichever runs last.

use crate::execution::{Execution, Outcome};
use crate::executor::Executor;
use crate::spec::{ComparisonFile, OnFailure, SubjectSpec, WorkloadSpec};
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

/// The order of all executions: round by round, workload by workload, subjects shuffled
/// with a generator seeded by `seed` (the same file and seed give the same order).
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
    /// An execution ended: its index in the plan, its slot and what it recorded.
    Executed(usize, &'a Slot, &'a Execution),
}

/// Runs the planned executions, handing each to `record` as soon as it ends (so the caller
/// stores it before the next starts). `record` errors stop the rounds.
pub fn run_rounds<E>(
    cfg: &ComparisonFile,
    executor: &mut dyn Executor<Subject = SubjectSpec, Workload = WorkloadSpec>,
    stop: &AtomicBool,
    record: impl FnMut(usize, &Slot, &Execution) -> Result<(), E>,
) -> Result<Ending, E> {
    run_remaining_rounds(cfg, executor, stop, &HashSet::new(), record)
}

/// As [`run_rounds`], skipping the slots in `done` (the executions an interrupted run of
/// the same comparison already stored): the plan is the same for the same file and seed,
/// so the comparison continues where it stopped.
pub fn run_remaining_rounds<E>(
    cfg: &ComparisonFile,
    executor: &mut dyn Executor<Subject = SubjectSpec, Workload = WorkloadSpec>,
    stop: &AtomicBool,
    done: &HashSet<Slot>,
    mut record: impl FnMut(usize, &Slot, &Execution) -> Result<(), E>,
) -> Result<Ending, E> {
    run_plan(cfg, executor, stop, done, |step| {
        if let Step::Executed(i, slot, exec) = step {
            record(i, slot, exec)?;
        }
        Ok(None)
    })
}

/// As [`run_remaining_rounds`], telling `on` of every round before it starts and every
/// execution as it ends; `on` returning an ending stops the rounds there (a precision
/// reached, a comparison refused), an error stops them with the error.
pub fn run_plan<E>(
    cfg: &ComparisonFile,
    executor: &mut dyn Executor<Subject = SubjectSpec, Workload = WorkloadSpec>,
    stop: &AtomicBool,
    done: &HashSet<Slot>,
    mut on: impl FnMut(Step<'_>) -> Result<Option<Ending>, E>,
) -> Result<Ending, E> {
    let plan = schedule(
        cfg.rounds,
        cfg.subjects.len(),
        cfg.workloads.len(),
        cfg.seed,
    );
    let mut failures = vec![0usize; cfg.subjects.len()];
    let mut announced = None;
    for (i, slot) in plan.iter().enumerate() {
        if done.contains(slot) {
            continue;
        }
        if stop.load(Ordering::SeqCst) {
            return Ok(Ending::Interrupted);
        }
        if announced != Some(slot.round) {
            announced = Some(slot.round);
            if let Some(ending) = on(Step::Round(slot.round))? {
                return Ok(ending);
            }
        }
        let subject = &cfg.subjects[slot.subject];
        let exec = executor.execute(subject, &cfg.workloads[slot.workload], slot.round, stop);
        if let Some(ending) = on(Step::Executed(i, slot, &exec))? {
            return Ok(ending);
        }
        match &exec.outcome {
            Outcome::Complete => failures[slot.subject] = 0,
            Outcome::Interrupted => return Ok(Ending::Interrupted),
            Outcome::Failed { reason, .. } => {
                failures[slot.subject] += 1;
                let give_up = match cfg.on_failure {
                    OnFailure::GiveUp => failures[slot.subject] >= FAILURES_IN_A_ROW,
                    OnFailure::Stop => true,
                    OnFailure::Continue => false,
                };
                if give_up {
                    return Ok(Ending::GaveUp {
                        subject: subject.name.clone(),
                        in_a_row: failures[slot.subject],
                        reason: reason.clone(),
                    });
                }
            }
        }
    }
    Ok(Ending::Finished)
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
