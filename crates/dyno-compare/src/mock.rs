//! A node that is not run: the judge's seeded synthetic executions
//! ([`dyno_judge::synthetic::Synthetic`]) as an executor, so sessions, the store and the
//! verdicts can be tested end to end without processes or timing.

use crate::execution::Execution;
use crate::executor::Executor;
use crate::spec::{SubjectSpec, WorkloadSpec};
use std::sync::atomic::AtomicBool;

/// Synthetic executions of a comparison file's subjects: every process metric plus a
/// `node:frags_total` counter, seeded per subject, workload and round (see
/// [`dyno_judge::synthetic::Synthetic`] for the knobs: noise, slowdowns, failing
/// subjects).
pub use dyno_judge::synthetic::Synthetic as SyntheticExecutor;

impl Executor for SyntheticExecutor {
    type Subject = SubjectSpec;
    type Workload = WorkloadSpec;

    fn execute(
        &mut self,
        subject: &SubjectSpec,
        workload: &WorkloadSpec,
        round: u32,
        _stop: &AtomicBool,
    ) -> Execution {
        let mut exec = self.execution(&subject.name, &workload.name, workload.rate, round);
        exec.command_line = subject.command_for(workload);
        exec
    }
}
