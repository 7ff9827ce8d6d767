//! One subject of a start while it runs: its node, its copy of the load, where its
//! metrics come from, and the executions of its windows; started, made ready, loaded and
//! stopped by the [`super::ProcessExecutor`].

use super::{start, Interruption, StartError};
use crate::execution::{Execution, Outcome, Series, SeriesKind};
use crate::prometheus::Endpoint;
use crate::slot::{Prepared, SlotValues};
use crate::spec::{SubjectSpec, WorkloadSpec};
use dyno_model::{Direction, Metric, Unit};
use dyno_proc::{GuardedChild, NotReady, Probe, SpawnOptions};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Output lines of a load generator kept for its extractors: enough for a line a second
/// of a long window, bounded so a chatty generator cannot exhaust memory (each line is
/// cut at dyno-proc's line cap, and all together at its body cap).
const LOAD_LINES: usize = 100_000;

/// The load's kept lines, with their bytes, so the kept output stays within the body cap.
#[derive(Default)]
struct LoadLines {
    lines: Vec<(Instant, String)>,
    bytes: u64,
    /// Lines not kept because the caps were reached.
    left_out: u64,
}

/// A running load generator and the lines it printed.
pub(super) struct Load {
    pub(super) child: GuardedChild,
    /// Output lines with the time each arrived.
    lines: Arc<Mutex<LoadLines>>,
    spec: crate::load::LoadSpec,
}

impl Load {
    fn start(
        spec: &crate::load::LoadSpec,
        command: &[String],
        env: &std::collections::BTreeMap<String, String>,
    ) -> Result<Load, StartError> {
        let lines: Arc<Mutex<LoadLines>> = Arc::default();
        let sink = lines.clone();
        let opts = SpawnOptions {
            on_line: Some(Arc::new(move |_, line: &str| {
                let mut l = sink.lock().unwrap_or_else(|e| e.into_inner());
                if l.lines.len() < LOAD_LINES && l.bytes < dyno_proc::lines::MAX_BODY_BYTES {
                    l.bytes += line.len() as u64;
                    l.lines.push((Instant::now(), line.to_string()));
                } else {
                    l.left_out += 1;
                }
            })),
            cpus: spec.cpus.clone(),
            ..SpawnOptions::default()
        };
        let child = start(command, env.clone(), spec.cwd.as_deref(), &opts)
            .map_err(|e| StartError::Load(Box::new(e)))?;
        Ok(Load {
            child,
            lines,
            spec: spec.clone(),
        })
    }

    /// Stops the load and reads its metrics into each window's execution from the lines
    /// it printed in that window (`windows`: each window's start; the warm-up's lines are
    /// left out, and a summary printed when it is stopped goes with the last window).
    fn finish(self, grace: Duration, windows: &[Instant], execs: &mut [Execution]) -> Vec<String> {
        let stopped = self.child.stop(grace);
        let mut warnings: Vec<String> = stopped
            .warnings()
            .into_iter()
            .map(|w| format!("load command {w}"))
            .collect();
        let lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        if lines.left_out > 0 {
            warnings.push(format!(
                "load command output: {} lines after the first {} ({}) were not read",
                lines.left_out,
                lines.lines.len(),
                dyno_proc::lines::bytes(lines.bytes)
            ));
        }
        for (w, start) in windows.iter().enumerate() {
            let end = windows.get(w + 1);
            let window: Vec<String> = lines
                .lines
                .iter()
                .filter(|(t, _)| t >= start && end.is_none_or(|e| t < e))
                .map(|(_, l)| l.clone())
                .collect();
            let (series, notes) = crate::load::read_output(&self.spec, &window);
            if let Some(e) = execs.get_mut(w) {
                e.series.extend(series);
                e.warnings.extend(notes);
            }
        }
        if let Some(last) = execs.last_mut() {
            last.warnings.extend(warnings);
        }
        stopped.last_lines
    }
}

/// One subject of a start: its node and its own copy of the load, from spawning to
/// stopping.
pub(super) struct Running<'a> {
    pub(super) subject: &'a SubjectSpec,
    pub(super) prepared: Prepared,
    pub(super) node: GuardedChild,
    spawned: Instant,
    probe: Option<(Probe, Duration)>,
    /// Seconds from spawning until ready (`None` until then, or without a probe).
    ready_s: Option<f64>,
    pub(super) load: Option<Load>,
    pub(super) endpoint: Option<Endpoint>,
    pub(super) jsonl: Option<PathBuf>,
    /// Its executions, one per window.
    pub(super) execs: Vec<Execution>,
}

impl<'a> Running<'a> {
    /// Prepares `subject` under `workload` with its slot's `values` and spawns its node;
    /// `Err` hands the executions back with why it did not start.
    pub(super) fn spawn(
        subject: &'a SubjectSpec,
        workload: &WorkloadSpec,
        values: SlotValues,
        mut execs: Vec<Execution>,
    ) -> Result<Running<'a>, (Vec<Execution>, String)> {
        let prepared = subject.prepare(workload, values);
        for e in &mut execs {
            e.command_line = prepared.command.clone();
        }
        let probe = match prepared
            .ready
            .as_ref()
            .map(|r| r.probe_and_timeout())
            .transpose()
        {
            Ok(p) => p,
            Err(reason) => return Err((execs, format!("ready: {reason}"))),
        };
        let base = SpawnOptions {
            cpus: subject.cpus.clone(),
            ..SpawnOptions::default()
        };
        let opts = match &probe {
            Some((Probe::OutputLine(re), _)) => SpawnOptions {
                ready_line: Some(re.clone()),
                ..base
            },
            _ => base,
        };
        let node = match start(
            &prepared.command,
            prepared.env.clone(),
            subject.cwd.as_deref(),
            &opts,
        ) {
            Ok(n) => n,
            Err(reason) => return Err((execs, reason.to_string())),
        };
        let endpoint = prepared
            .metrics
            .prometheus
            .as_deref()
            .and_then(|u| Endpoint::parse(u).ok());
        let jsonl = prepared.metrics.jsonl.as_ref().map(|p| match &subject.cwd {
            Some(dir) if p.is_relative() => dir.join(p),
            _ => p.clone(),
        });
        Ok(Running {
            subject,
            prepared,
            node,
            spawned: Instant::now(),
            probe,
            ready_s: None,
            load: None,
            endpoint,
            jsonl,
            execs,
        })
    }

    /// One look at whether the node is up: `Ok(true)` once it is (its time to ready is
    /// kept), `Ok(false)` not yet, `Err` when it exited or its time ran out.
    fn check_ready(&mut self) -> Result<bool, String> {
        let Some((probe, timeout)) = &self.probe else {
            return Ok(true);
        };
        if self.ready_s.is_some() {
            return Ok(true);
        }
        if let Some(status) = self.node.exited() {
            return Err(NotReady::Exited(status).to_string());
        }
        match probe.check(Some(&self.node), Duration::from_millis(200)) {
            Ok(()) => {
                self.ready_s = Some(self.spawned.elapsed().as_secs_f64());
                Ok(true)
            }
            Err(why) if self.spawned.elapsed() >= *timeout => Err(NotReady::Timeout {
                waited: self.spawned.elapsed(),
                probe: probe.describe(),
                last: why.to_string(),
            }
            .to_string()),
            Err(_) => Ok(false),
        }
    }

    /// Starts its copy of the load (once its node is ready).
    pub(super) fn start_load(&mut self, workload: &WorkloadSpec) -> Result<(), String> {
        let (Some(spec), Some((command, env))) = (&workload.load, &self.prepared.load) else {
            return Ok(());
        };
        self.load = Some(Load::start(spec, command, env).map_err(|e| e.to_string())?);
        Ok(())
    }

    /// Why the node or its load is no longer running, if one exited.
    pub(super) fn exited(&mut self, index: usize) -> Option<Interruption> {
        if let Some(status) = self.node.exited() {
            return Some(Interruption::Exited(index, status));
        }
        let load = self.load.as_mut()?;
        load.child
            .exited()
            .map(|status| Interruption::LoadExited(index, status))
    }

    /// Stops the load (first, so the node is not stopped under load) and the node, reads
    /// the load's lines into each window and settles every execution's outcome from
    /// `result` (a failure of another subject of the start leaves this one's
    /// executions complete: the runner settles what they are worth). `windows` are the
    /// windows' starts.
    pub(super) fn finish(
        mut self,
        index: usize,
        grace: Duration,
        windows: &[Instant],
        result: &Result<(), Interruption>,
    ) -> Vec<Execution> {
        let load_lines = self
            .load
            .take()
            .map(|l| l.finish(grace, windows, &mut self.execs));
        let stopped = self.node.stop(grace);
        let last = self.execs.len().saturating_sub(1);
        if let Some(e) = self.execs.get_mut(last) {
            e.warnings.extend(stopped.warnings());
        }
        let outcome = match result {
            Ok(()) => Outcome::Complete,
            Err(Interruption::Stop) => Outcome::Interrupted,
            Err(Interruption::Exited(i, status)) if *i == index => Outcome::Failed {
                reason: format!("exited ({status}) before the measured window ended"),
                last_lines: stopped.last_lines,
            },
            Err(Interruption::LoadExited(i, status)) if *i == index => Outcome::Failed {
                reason: format!("the load command exited ({status}) before the measured window ended (its last lines follow)"),
                last_lines: load_lines.unwrap_or_default(),
            },
            Err(Interruption::Failed(i, reason)) if *i == index => Outcome::Failed {
                reason: reason.clone(),
                last_lines: stopped.last_lines,
            },
            Err(_) => Outcome::Complete,
        };
        let ready = self.ready_s.map(|took| Series {
            metric: Metric::new("ready_s", Unit::Seconds, Direction::LowerIsBetter),
            kind: SeriesKind::Gauge,
            points: vec![(0.0, took)],
        });
        for e in &mut self.execs {
            e.outcome = outcome.clone();
            if let Some(r) = &ready {
                e.series.insert(0, r.clone());
            }
            crate::declared::apply(&self.prepared.metrics, &mut e.series);
        }
        self.execs
    }
}

/// Waits until every node of the start is ready, looking at each in turn (each one's
/// time to ready counts from its own spawn); `Err` names the first that exited or ran
/// out of time, or says the user stopped.
pub(super) fn wait_ready(
    running: &mut [Running<'_>],
    stop: &AtomicBool,
) -> Result<(), Interruption> {
    loop {
        if stop.load(Ordering::SeqCst) {
            return Err(Interruption::Stop);
        }
        let mut all = true;
        for (i, r) in running.iter_mut().enumerate() {
            match r.check_ready() {
                Ok(ready) => all &= ready,
                Err(reason) => return Err(Interruption::Failed(i, reason)),
            }
        }
        if all {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Sleeps until `until`, waking every 20 ms; `Err` with why when a node or a load of the
/// start exits or `stop` is set first.
pub(super) fn wait_until(
    running: &mut [Running<'_>],
    until: Instant,
    stop: &AtomicBool,
) -> Result<(), Interruption> {
    loop {
        if stop.load(Ordering::SeqCst) {
            return Err(Interruption::Stop);
        }
        for (i, r) in running.iter_mut().enumerate() {
            if let Some(why) = r.exited(i) {
                return Err(why);
            }
        }
        let now = Instant::now();
        if now >= until {
            return Ok(());
        }
        std::thread::sleep((until - now).min(Duration::from_millis(20)));
    }
}
