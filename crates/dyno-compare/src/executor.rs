//! Running nodes: [`ProcessExecutor`], the [`Executor`] that starts each subject's command
//! as a child process, samples it from /proc and stops it; one subject at a time, or
//! several side by side, their windows opening and closing together.
//!
//! Every node runs as a [`dyno_proc::GuardedChild`]: its own process group, so a Ctrl-C in
//! the terminal reaches dyno only and dyno stops the node itself (SIGINT to the whole
//! group, SIGKILL after the grace period); and a parent-death signal plus a group guard,
//! so the node and anything it started end even when dyno is SIGKILLed. Every subject of
//! a start gets its own ports and directory ([`crate::slot`]), its own copy of the load,
//! and its CPU set for the round.
//!
//! Every window also records what the rest of the machine used meanwhile (the host's
//! busy time less every measured node and load tree and dyno itself: the series
//! `host:other_cpu_percent` and the execution's [`dyno_exec::Disturbance`], naming the
//! busiest other process), so a burst that starts inside a window is seen.

use crate::execution::{Execution, Outcome};
use crate::spec::{SubjectSpec, WorkloadSpec};
use dyno_proc::{GuardedChild, SpawnOptions};
use running::Running;
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

mod running;
mod window;

pub use window::MISSED_SCRAPES;

/// Output lines kept from a node for the record of a failed run.
pub use dyno_proc::child::TAIL_LINES;

/// Runs one subject under one workload and records the measured window.
///
/// What a subject and a workload are is the executor's own: compare's executors take a
/// comparison file's [`SubjectSpec`]s and [`WorkloadSpec`]s (a node's command, its metric
/// sources, a load command, or a cluster file). What comes back is the same for every
/// executor (dyno-exec's [`Execution`]), so the rounds, the store and the judge do not
/// know what ran.
pub trait Executor {
    /// What is run: a release and how to start it.
    type Subject: ?Sized;
    /// The load it runs under, and for how long.
    type Workload: ?Sized;

    /// Starts the node fresh, waits the warm-up, samples the measured window, stops the
    /// node. Must return promptly (within the grace period) once `stop` is set, with
    /// [`Outcome::Interrupted`], and must leave no process behind.
    fn execute(
        &mut self,
        subject: &Self::Subject,
        workload: &Self::Workload,
        round: u32,
        stop: &AtomicBool,
    ) -> Execution;

    /// One start of several subjects at once (side by side; one alone when interleaved):
    /// spawns their nodes in the order given, each under its own copy of the workload,
    /// waits until all are ready, runs one warm-up, then `windows` consecutive measured
    /// windows that open and close at the same instant for all, and stops them all.
    /// Returns every subject's `windows` executions, subject by subject in the order
    /// given, window by window, each recording its window index and placement (spawn
    /// position, CPUs). When `stop` is set, every execution is interrupted; when one
    /// subject fails, the start ends for all (the others' outcomes are settled by the
    /// runner). Must leave no process behind.
    ///
    /// The default runs a lone subject's single window with [`Executor::execute`] and
    /// anything else not at all (no executions): an executor of subjects that cannot run
    /// beside others (clusters), whose comparison files refuse a side-by-side schedule.
    fn execute_together(
        &mut self,
        subjects: &[&Self::Subject],
        workload: &Self::Workload,
        round: u32,
        windows: u32,
        stop: &AtomicBool,
    ) -> Vec<Execution> {
        match subjects {
            [one] if windows == 1 => vec![self.execute(one, workload, round, stop)],
            _ => Vec::new(),
        }
    }
}

/// Runs nodes as child processes.
///
/// The parent-death signal fires when the *thread* that spawned the node exits, so
/// [`Executor::execute`] must be called from a thread that outlives the execution; it
/// starts, measures and stops the node on the calling thread, and `dyno compare` calls it
/// from its main thread, which lives for the whole comparison. Calling it from a
/// short-lived worker thread would kill the node when that thread ends.
#[derive(Debug, Clone)]
pub struct ProcessExecutor {
    /// Seconds between SIGINT and SIGKILL.
    pub grace: Duration,
    /// Time between samples.
    pub interval: Duration,
}

impl ProcessExecutor {
    /// One sample a second, `grace_s` seconds between SIGINT and SIGKILL.
    pub fn new(grace_s: f64) -> Self {
        ProcessExecutor {
            grace: Duration::from_secs_f64(grace_s),
            interval: Duration::from_secs(1),
        }
    }
}

/// Why a node or a load generator did not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The command has no program.
    #[error("empty command")]
    EmptyCommand,
    /// The program could not be spawned.
    #[error(transparent)]
    Spawn(#[from] dyno_proc::SpawnError),
    /// The load generator did not start.
    #[error("load command: {0}")]
    Load(Box<StartError>),
}

fn start(
    command: &[String],
    env: std::collections::BTreeMap<String, String>,
    cwd: Option<&std::path::Path>,
    opts: &SpawnOptions,
) -> Result<GuardedChild, StartError> {
    let (program, args) = command.split_first().ok_or(StartError::EmptyCommand)?;
    let mut cmd = Command::new(program);
    cmd.args(args).envs(env);
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    Ok(GuardedChild::spawn(cmd, opts)?)
}

/// What ended a start early, and which of its subjects (by position) it was.
enum Interruption {
    Stop,
    Exited(usize, String),
    LoadExited(usize, String),
    Failed(usize, String),
}

impl Executor for ProcessExecutor {
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
        stop: &AtomicBool,
    ) -> Vec<Execution> {
        let planned: Vec<Vec<Execution>> = subjects
            .iter()
            .enumerate()
            .map(|(i, s)| {
                (0..windows)
                    .map(|w| {
                        let mut e = Execution::starting(
                            &s.name,
                            &workload.name,
                            round,
                            s.command_for(workload),
                        );
                        e.window = w;
                        e.placement = dyno_exec::Placement {
                            spawned: i as u32,
                            cpus: s.cpus.clone(),
                        };
                        e
                    })
                    .collect()
            })
            .collect();
        let values = match crate::slot::allocate(subjects, workload) {
            Ok(v) => v,
            Err(e) => {
                let why = format!("choosing the slot's ports and directory: {e}");
                return failed(planned, 0, &why);
            }
        };
        // dyno's own thread (sampler, scrapes, the output readers it starts) keeps off the
        // pinned CPUs while the start runs, and goes back to every CPU after it.
        let _own = OwnCpus::keep_off(subjects, workload);
        let mut running: Vec<Running<'_>> = Vec::new();
        let mut rest = subjects.iter().zip(values).zip(planned).enumerate();
        for (i, ((subject, values), execs)) in rest.by_ref() {
            match Running::spawn(subject, workload, values, execs) {
                Ok(r) => running.push(r),
                Err((execs, why)) => {
                    let result = Err(Interruption::Failed(i, why));
                    let mut out = self.finish(running, &[], &result);
                    out.extend(failed(vec![execs], 0, &result_reason(&result)));
                    out.extend(rest.flat_map(|(_, (_, execs))| execs));
                    return out;
                }
            }
        }
        let (starts, result) = self.run(&mut running, workload, windows, stop);
        self.finish(running, &starts, &result)
    }
}

/// The reason of a failure, for executions that never ran.
fn result_reason(result: &Result<(), Interruption>) -> String {
    match result {
        Err(Interruption::Failed(_, why)) => why.clone(),
        _ => String::new(),
    }
}

/// The planned executions of the subject at `culprit`, failed with `why` (every other
/// subject's stays complete: the runner settles what it is worth).
fn failed(planned: Vec<Vec<Execution>>, culprit: usize, why: &str) -> Vec<Execution> {
    planned
        .into_iter()
        .enumerate()
        .flat_map(|(i, execs)| {
            execs.into_iter().map(move |mut e| {
                if i == culprit {
                    e.outcome = Outcome::failed(why.to_string());
                }
                e
            })
        })
        .collect()
}

impl ProcessExecutor {
    /// From spawned nodes to the end of the last window: every node ready, every load
    /// started, one warm-up, the windows. Returns the windows' starts and how it ended.
    fn run(
        &self,
        running: &mut [Running<'_>],
        workload: &WorkloadSpec,
        windows: u32,
        stop: &AtomicBool,
    ) -> (Vec<Instant>, Result<(), Interruption>) {
        // The warm-up counts from the moment every node is up; how long each took is a
        // metric of its own (a slower start is a regression too).
        if let Err(e) = running::wait_ready(running, stop) {
            return (Vec::new(), Err(e));
        }
        for (i, r) in running.iter_mut().enumerate() {
            if let Err(why) = r.start_load(workload) {
                return (Vec::new(), Err(Interruption::Failed(i, why)));
            }
        }
        let warm_end = Instant::now() + Duration::from_secs_f64(workload.warmup_s);
        if let Err(e) = running::wait_until(running, warm_end, stop) {
            return (Vec::new(), Err(e));
        }
        window::measure(running, workload.measure_s, windows, self.interval, stop)
    }

    /// Stops every load, then every node (each group signalled first, so they stop
    /// together), and hands back every execution with its outcome.
    fn finish(
        &self,
        mut running: Vec<Running<'_>>,
        starts: &[Instant],
        result: &Result<(), Interruption>,
    ) -> Vec<Execution> {
        for r in &mut running {
            if let Some(l) = &mut r.load {
                l.child.begin_stop();
            }
        }
        running
            .into_iter()
            .enumerate()
            .flat_map(|(i, r)| r.finish(i, self.grace, starts, result))
            .collect()
    }
}

/// dyno's own CPUs during one start: restored when dropped.
struct OwnCpus(Option<Vec<usize>>);

impl OwnCpus {
    /// Keeps off every node's CPUs of the start, and the load's when CPUs are left.
    fn keep_off(subjects: &[&SubjectSpec], workload: &WorkloadSpec) -> OwnCpus {
        let mut nodes: Vec<usize> = subjects
            .iter()
            .flat_map(|s| s.cpus.iter().flatten().copied())
            .collect();
        nodes.sort_unstable();
        nodes.dedup();
        let pinned = subjects.iter().any(|s| s.cpus.is_some());
        let node = pinned.then_some(nodes.as_slice());
        let load = workload.load.as_ref().and_then(|l| l.cpus.as_deref());
        let before = dyno_proc::affinity::allowed_cpus();
        let machine = crate::pinning::machine_cpus();
        match crate::pinning::own_cpus(&machine, node, load) {
            Some(keep) if dyno_proc::affinity::pin_current_thread(&keep).is_ok() => OwnCpus(before),
            _ => OwnCpus(None),
        }
    }
}

impl Drop for OwnCpus {
    fn drop(&mut self) {
        if let Some(all) = &self.0 {
            // Best effort: a failure leaves dyno on fewer CPUs, which costs it nothing.
            let _ = dyno_proc::affinity::pin_current_thread(all);
        }
    }
}

#[cfg(test)]
mod tests;
