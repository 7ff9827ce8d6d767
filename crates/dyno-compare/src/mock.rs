//! A node that is not run: the judge's seeded synthetic executions
//! ([`dyno_judge::synthetic::Synthetic`]) as an executor, so sessions, the store and the
//! verdicts can be tested end to end without processes or timing. Its clock is its own:
//! each start advances it by the start's length, so its drift and hogs fall on the
//! subjects of one side-by-side start alike and on interleaved subjects at their own
//! times.

use crate::execution::Execution;
use crate::executor::Executor;
use crate::spec::{SubjectSpec, WorkloadSpec};
use std::sync::atomic::AtomicBool;

/// Synthetic executions of a comparison file's subjects: every process metric plus a
/// `node:frags_total` counter, seeded per subject, workload and round (see
/// [`dyno_judge::synthetic::Synthetic`] for the knobs: noise, slowdowns, failing
/// subjects, drift, per-start offsets, hogs).
pub use dyno_judge::synthetic::Synthetic as SyntheticExecutor;

impl Executor for SyntheticExecutor {
    type Subject = SubjectSpec;
    type Workload = WorkloadSpec;

    fn execute(
        &mut self,
        subject: &SubjectSpec,
        workload: &WorkloadSpec,
        round: u32,
        stop: &AtomicBool,
    ) -> Execution {
        let mut one = self.execute_together(&[subject], workload, round, 1, stop);
        one.remove(0)
    }

    fn execute_together(
        &mut self,
        subjects: &[&SubjectSpec],
        workload: &WorkloadSpec,
        round: u32,
        windows: u32,
        _stop: &AtomicBool,
    ) -> Vec<Execution> {
        let names: Vec<&str> = subjects.iter().map(|s| s.name.as_str()).collect();
        let mut execs = self.start(
            &names,
            &workload.name,
            workload.rate,
            round,
            windows,
            workload.warmup_s,
            workload.measure_s,
        );
        for e in &mut execs {
            if let Some(s) = subjects.iter().find(|s| s.name == e.subject) {
                e.command_line = s.command_for(workload);
                e.placement.cpus = s.cpus.clone();
            }
        }
        execs
    }
}
