//! The [`Executor`] trait: what runs one execution.

use crate::execution::Execution;
use std::sync::atomic::AtomicBool;

/// Runs one subject under one workload and records the measured window.
///
/// What a subject and a workload are is the executor's own: `dyno compare`'s executors
/// take its comparison file's subjects and workloads (a node's command, its metric
/// sources, a load command, or a cluster file). What comes back is the same for every
/// executor, so the rounds, the store and the verdicts do not know what ran.
pub trait Executor {
    /// What is run: a release and how to start it.
    type Subject: ?Sized;
    /// The load it runs under, and for how long.
    type Workload: ?Sized;

    /// Starts the node fresh, waits the warm-up, samples the measured window, stops the
    /// node. Must return promptly (within the grace period) once `stop` is set, with
    /// [`Outcome::Interrupted`](crate::Outcome::Interrupted), and must leave no process
    /// behind.
    fn execute(
        &mut self,
        subject: &Self::Subject,
        workload: &Self::Workload,
        round: u32,
        stop: &AtomicBool,
    ) -> Execution;
}
