//! Rounds: every subject once per workload per round, the subjects of each workload in an
//! order shuffled afresh every round, so slow drifts of the machine (thermal state,
//! colleagues' builds) fall on all subjects alike instead of on whichever runs last.

use crate::config::ComparisonFile;
use crate::execution::{Execution, Outcome};
use crate::executor::Executor;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_pcg::Pcg64;
use std::sync::atomic::{AtomicBool, Ordering};

/// One execution to make.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    /// A subject failed [`FAILURES_IN_A_ROW`] times in a row.
    GaveUp {
        /// The subject.
        subject: String,
        /// Its last failure.
        reason: String,
    },
}

/// Runs the planned executions, handing each to `record` as soon as it ends (so the caller
/// stores it before the next starts). `record` errors stop the rounds.
pub fn run_rounds<E>(
    cfg: &ComparisonFile,
    executor: &mut dyn Executor,
    stop: &AtomicBool,
    mut record: impl FnMut(usize, &Slot, &Execution) -> Result<(), E>,
) -> Result<Ending, E> {
    let plan = schedule(
        cfg.rounds,
        cfg.subjects.len(),
        cfg.workloads.len(),
        cfg.seed,
    );
    let mut failures = vec![0usize; cfg.subjects.len()];
    for (i, slot) in plan.iter().enumerate() {
        if stop.load(Ordering::SeqCst) {
            return Ok(Ending::Interrupted);
        }
        let subject = &cfg.subjects[slot.subject];
        let exec = executor.execute(subject, &cfg.workloads[slot.workload], slot.round, stop);
        record(i, slot, &exec)?;
        match &exec.outcome {
            Outcome::Complete => failures[slot.subject] = 0,
            Outcome::Interrupted => return Ok(Ending::Interrupted),
            Outcome::Failed { reason, .. } => {
                failures[slot.subject] += 1;
                if failures[slot.subject] >= FAILURES_IN_A_ROW {
                    return Ok(Ending::GaveUp {
                        subject: subject.name.clone(),
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
}
