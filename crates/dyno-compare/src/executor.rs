//! Running a node: [`ProcessExecutor`], the [`Executor`] that starts the subject's
//! command as a child process, samples it from /proc and stops it.
//!
//! The node runs as a [`dyno_proc::GuardedChild`]: its own process group, so a Ctrl-C in
//! the terminal reaches dyno only and dyno stops the node itself (SIGINT to the whole
//! group, SIGKILL after the grace period); and a parent-death signal plus a group guard,
//! so the node and anything it started end even when dyno is SIGKILLed.

use crate::execution::{process_series, Execution, Outcome, Series, SeriesKind};
use crate::jsonl;
use crate::prometheus::{parse_text, Endpoint, Scrapes};
use crate::sampler::{sample_between, ProcReading, ProcSample, ProcSampler};
use crate::spec::{SubjectSpec, WorkloadSpec};
use dyno_model::{Direction, Metric, Unit};
use dyno_proc::{GuardedChild, NotReady, SpawnOptions};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Output lines kept from a node for the record of a failed run.
pub use dyno_proc::child::TAIL_LINES;

/// Scrapes of a reachable endpoint that may fail in a row before the node counts as no
/// longer answering.
pub const MISSED_SCRAPES: usize = 5;

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
struct Load {
    child: GuardedChild,
    /// Output lines with the time each arrived.
    lines: Arc<Mutex<LoadLines>>,
    spec: crate::load::LoadSpec,
}

impl Load {
    fn start(
        spec: &crate::load::LoadSpec,
        subject: &SubjectSpec,
        workload: &WorkloadSpec,
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
        let command = spec.command_for(subject, workload);
        let child = start(
            &command,
            spec.env_for(subject, workload),
            spec.cwd.as_deref(),
            &opts,
        )
        .map_err(|e| StartError::Load(Box::new(e)))?;
        Ok(Load {
            child,
            lines,
            spec: spec.clone(),
        })
    }

    /// Stops the load and reads its metrics into `exec` from the lines it printed from
    /// `window_start` on (the warm-up's lines are left out, as they are for the node; a
    /// summary printed when it is stopped is kept). Without a window start (the window
    /// never began), nothing is read.
    fn finish(
        self,
        grace: Duration,
        window_start: Option<Instant>,
        exec: &mut Execution,
    ) -> Vec<String> {
        let stopped = self.child.stop(grace);
        for w in stopped.warnings() {
            exec.warnings.push(format!("load command {w}"));
        }
        let lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        if lines.left_out > 0 {
            exec.warnings.push(format!(
                "load command output: {} lines after the first {} ({}) were not read",
                lines.left_out,
                lines.lines.len(),
                dyno_proc::lines::bytes(lines.bytes)
            ));
        }
        if let Some(start) = window_start {
            let window: Vec<String> = lines
                .lines
                .iter()
                .filter(|(t, _)| *t >= start)
                .map(|(_, l)| l.clone())
                .collect();
            let (series, warnings) = crate::load::read_output(&self.spec, &window);
            exec.series.extend(series);
            exec.warnings.extend(warnings);
        }
        stopped.last_lines
    }
}

/// Sleeps until `until`, waking every 20 ms; `Err` with why when the node or its load
/// exits or `stop` is set first.
fn wait_until(
    node: &mut GuardedChild,
    mut load: Option<&mut Load>,
    until: Instant,
    stop: &AtomicBool,
) -> Result<(), Interruption> {
    loop {
        if stop.load(Ordering::SeqCst) {
            return Err(Interruption::Stop);
        }
        if let Some(status) = node.exited() {
            return Err(Interruption::Exited(status));
        }
        if let Some(status) = load.as_deref_mut().and_then(|l| l.child.exited()) {
            return Err(Interruption::LoadExited(status));
        }
        let now = Instant::now();
        if now >= until {
            return Ok(());
        }
        std::thread::sleep((until - now).min(Duration::from_millis(20)));
    }
}

enum Interruption {
    Stop,
    Exited(String),
    LoadExited(String),
    Failed(String),
}

/// The node's own metrics scraped during the window.
#[derive(Default)]
struct NodeMetrics {
    scrapes: Scrapes,
    answered: bool,
    missed: usize,
    warned: bool,
}

/// A node's metrics endpoint that answered, then failed [`MISSED_SCRAPES`] times in a row.
#[derive(Debug, thiserror::Error)]
#[error("stopped answering: {missed} scrapes of {url} failed in a row ({last})")]
struct StoppedAnswering {
    missed: usize,
    url: String,
    last: dyno_proc::HttpError,
}

impl NodeMetrics {
    fn scrape(
        &mut self,
        ep: &Endpoint,
        keep: &[String],
        t: f64,
        warnings: &mut Vec<String>,
    ) -> Result<(), StoppedAnswering> {
        match ep.scrape(Duration::from_millis(500)) {
            Ok(body) => {
                self.answered = true;
                self.missed = 0;
                self.scrapes.add(t, &parse_text(&body, keep));
                Ok(())
            }
            Err(e) if self.answered => {
                self.missed += 1;
                if self.missed >= MISSED_SCRAPES {
                    Err(StoppedAnswering {
                        missed: self.missed,
                        url: format!("http://{}{}", ep.authority, ep.path),
                        last: e,
                    })
                } else {
                    Ok(())
                }
            }
            Err(e) => {
                if !self.warned {
                    self.warned = true;
                    warnings.push(format!(
                        "metrics endpoint http://{}{} unreachable ({e}): keeping the process metrics only",
                        ep.authority, ep.path
                    ));
                }
                Ok(())
            }
        }
    }
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
        let command_line = subject.command_for(workload);
        let mut exec =
            Execution::starting(&subject.name, &workload.name, round, command_line.clone());
        let failed =
            |reason: String, last_lines: Vec<String>| Outcome::Failed { reason, last_lines };
        let readiness = match subject.ready.as_ref().map(|r| r.readiness()).transpose() {
            Ok(r) => r,
            Err(reason) => {
                exec.outcome = failed(format!("ready: {reason}"), Vec::new());
                return exec;
            }
        };
        let base = SpawnOptions {
            cpus: subject.cpus.clone(),
            ..SpawnOptions::default()
        };
        let opts = match &readiness {
            Some(r) => r.spawn_options(base),
            None => base,
        };
        // dyno's own thread (sampler, scrapes, the output readers it starts) keeps off the
        // pinned CPUs while this execution runs, and goes back to every CPU after it.
        let _own = OwnCpus::keep_off(
            subject.cpus.as_deref(),
            workload.load.as_ref().and_then(|l| l.cpus.as_deref()),
        );
        let env = subject.env_for(workload);
        let mut node = match start(&command_line, env, subject.cwd.as_deref(), &opts) {
            Ok(n) => n,
            Err(reason) => {
                exec.outcome = failed(reason.to_string(), Vec::new());
                return exec;
            }
        };
        // The warm-up counts from the moment the node is up; how long that took is a
        // metric of its own (a slower start is a regression too).
        if let Some(r) = &readiness {
            match r.wait(&mut node, stop) {
                Ok(took) => exec.series.push(Series {
                    metric: Metric::new("ready_s", Unit::Seconds, Direction::LowerIsBetter),
                    kind: SeriesKind::Gauge,
                    points: vec![(0.0, took.as_secs_f64())],
                }),
                Err(NotReady::Stopped) => {
                    exec.warnings.extend(node.stop(self.grace).warnings());
                    exec.outcome = Outcome::Interrupted;
                    return exec;
                }
                Err(e) => {
                    let stopped = node.stop(self.grace);
                    exec.outcome = failed(e.to_string(), stopped.last_lines);
                    return exec;
                }
            }
        }
        let mut load = match workload
            .load
            .as_ref()
            .map(|l| Load::start(l, subject, workload))
        {
            None => None,
            Some(Ok(l)) => Some(l),
            Some(Err(reason)) => {
                let stopped = node.stop(self.grace);
                exec.outcome = failed(reason.to_string(), stopped.last_lines);
                return exec;
            }
        };
        let endpoint = subject
            .metrics
            .prometheus
            .as_deref()
            .and_then(|u| Endpoint::parse(u).ok());
        // Only the lines the node logs during the measured window count: warm-up and
        // shutdown are left out, as they are for the /proc metrics.
        let jsonl_path = subject.metrics.jsonl.as_ref().map(|p| resolve(subject, p));
        let mut jsonl_window = None;
        let mut window_start = None;
        let warm_end = Instant::now() + Duration::from_secs_f64(workload.warmup_s);
        let result = wait_until(&mut node, load.as_mut(), warm_end, stop).and_then(|()| {
            window_start = Some(Instant::now());
            let start = jsonl_path.as_deref().map(jsonl::offset);
            let r = self.measure(
                &mut node,
                load.as_mut(),
                subject,
                workload,
                endpoint.as_ref(),
                stop,
                &mut exec,
            );
            let end = jsonl_path.as_deref().map(jsonl::offset);
            jsonl_window = start.zip(end);
            r
        });
        // The load goes first, so the node is not stopped under load.
        let load_lines = load.map(|l| l.finish(self.grace, window_start, &mut exec));
        let stopped = node.stop(self.grace);
        exec.warnings.extend(stopped.warnings());
        let last_lines = stopped.last_lines;
        exec.outcome = match result {
            Ok(()) => Outcome::Complete,
            Err(Interruption::Stop) => Outcome::Interrupted,
            Err(Interruption::Exited(status)) => failed(
                format!("exited ({status}) before the measured window ended"),
                last_lines,
            ),
            Err(Interruption::LoadExited(status)) => failed(
                format!("the load command exited ({status}) before the measured window ended (its last lines follow)"),
                load_lines.unwrap_or_default(),
            ),
            Err(Interruption::Failed(reason)) => failed(reason, last_lines),
        };
        if let (Some(path), Some((start, end))) = (&jsonl_path, jsonl_window) {
            match jsonl::read_range(path, start, end) {
                Ok(window) => {
                    exec.series.extend(window.series);
                    exec.warnings.extend(window.notes);
                }
                Err(e) => exec.warnings.push(format!("{}: {e}", path.display())),
            }
        }
        crate::declared::apply(&subject.metrics, &mut exec.series);
        exec
    }
}

/// dyno's own CPUs during one execution: restored when dropped.
struct OwnCpus(Option<Vec<usize>>);

impl OwnCpus {
    fn keep_off(node: Option<&[usize]>, load: Option<&[usize]>) -> OwnCpus {
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

fn resolve(subject: &SubjectSpec, p: &std::path::Path) -> std::path::PathBuf {
    match &subject.cwd {
        Some(dir) if p.is_relative() => dir.join(p),
        _ => p.to_path_buf(),
    }
}

impl ProcessExecutor {
    #[allow(clippy::too_many_arguments)]
    fn measure(
        &self,
        node: &mut GuardedChild,
        mut load: Option<&mut Load>,
        subject: &SubjectSpec,
        workload: &WorkloadSpec,
        endpoint: Option<&Endpoint>,
        stop: &AtomicBool,
        exec: &mut Execution,
    ) -> Result<(), Interruption> {
        // One sampler, two trees: the load's cost is measured but not charged to the node.
        let mut pids = vec![node.pid()];
        pids.extend(load.as_deref().map(|l| l.child.pid()));
        let sampler = ProcSampler::many(&pids);
        // A process that exits shows up first as an unreadable or zombie /proc entry:
        // report its exit status then, which says more than "vanished".
        let read = |node: &mut GuardedChild,
                    load: Option<&mut Load>|
         -> Result<(ProcReading, Option<ProcReading>), Interruption> {
            let mut all = sampler.read_all().into_iter();
            let n = all.next().unwrap_or(Err(dyno_proc::ReadError::Gone));
            let n = n.map_err(|e| match node.exited() {
                Some(status) => Interruption::Exited(status),
                None => Interruption::Failed(format!("vanished from /proc while measured ({e})")),
            })?;
            let l = match (all.next(), load) {
                (Some(Ok(r)), _) => Some(r),
                (Some(Err(e)), Some(load)) => {
                    return Err(match load.child.exited() {
                        Some(status) => Interruption::LoadExited(status),
                        None => Interruption::LoadExited(format!("vanished from /proc: {e}")),
                    })
                }
                _ => None,
            };
            Ok((n, l))
        };
        let (mut prev, mut prev_load) = read(node, load.as_deref_mut())?;
        let t0 = prev.t;
        let mut samples: Vec<ProcSample> = Vec::new();
        let mut load_samples: Vec<ProcSample> = Vec::new();
        let mut node_metrics = NodeMetrics::default();
        let window = Duration::from_secs_f64(workload.measure_s);
        let begin = Instant::now();
        let mut tick = 1u32;
        let outcome = loop {
            let due = begin + self.interval * tick;
            if let Err(e) = wait_until(node, load.as_deref_mut(), due, stop) {
                break Err(e);
            }
            let (next, next_load) = match read(node, load.as_deref_mut()) {
                Ok(r) => r,
                Err(e) => break Err(e),
            };
            samples.push(sample_between(&prev, &next, sampler.clk_tck()));
            if let (Some(a), Some(b)) = (&prev_load, &next_load) {
                load_samples.push(sample_between(a, b, sampler.clk_tck()));
            }
            prev = next;
            prev_load = next_load;
            if let Some(ep) = endpoint {
                if let Err(why) = node_metrics.scrape(
                    ep,
                    &subject.metrics.prometheus_metrics,
                    prev.t - t0,
                    &mut exec.warnings,
                ) {
                    break Err(Interruption::Failed(why.to_string()));
                }
            }
            if self.interval * tick >= window {
                break Ok(());
            }
            tick += 1;
        };
        exec.series.extend(process_series(&samples, t0));
        exec.series.extend(load_series(&load_samples, t0));
        exec.series.extend(node_metrics.scrapes.into_series());
        outcome
    }
}

/// The load generator's own CPU and memory, named `load:...`.
fn load_series(samples: &[ProcSample], t0: f64) -> Vec<Series> {
    process_series(samples, t0)
        .into_iter()
        .filter(|s| matches!(s.metric.name.as_str(), "cpu_percent" | "rss_bytes"))
        .map(|mut s| {
            s.metric.name = format!("load:{}", s.metric.name);
            s
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::ComparisonFile;
    use std::path::Path;

    #[test]
    fn an_endpoint_that_answered_and_then_stops_marks_the_node_as_not_answering() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let ep = Endpoint::parse(&format!("http://127.0.0.1:{port}/metrics")).unwrap();
        let mut m = NodeMetrics {
            answered: true,
            ..NodeMetrics::default()
        };
        let mut warnings = Vec::new();
        for i in 1..MISSED_SCRAPES {
            assert!(m.scrape(&ep, &[], i as f64, &mut warnings).is_ok());
        }
        let e = m
            .scrape(&ep, &[], 9.0, &mut warnings)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("stopped answering: 5 scrapes"), "{e}");
        assert!(warnings.is_empty());
    }

    #[test]
    fn a_real_node_is_sampled_its_json_lines_read_and_a_dead_endpoint_only_warned_about() {
        let dir = tempfile::tempdir().unwrap();
        // A port nothing listens on: bind, note, release.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let text = format!(
            r#"[[subject]]
name = "a"
command = ["sh", "-c", "while :; do echo '{{\"latency_s\": 0.25}}' >> lat.jsonl; sleep 0.1; done"]
cwd = "{d}"
metrics = {{ prometheus = "http://127.0.0.1:{port}/metrics", jsonl = "lat.jsonl" }}
[[subject]]
name = "b"
command = ["sh"]
[[workload]]
name = "value"
rate = 10
warmup_s = 0.2
measure_s = 2
"#,
            d = dir.path().display()
        );
        let cfg = ComparisonFile::parse(&text, Path::new("t.toml")).unwrap();
        let stop = AtomicBool::new(false);
        // A generous grace: the shell exits at once on SIGINT, but on a loaded machine it
        // may not be scheduled within a couple of seconds, and then the kill warning would
        // be a second warning.
        let e = ProcessExecutor::new(30.0).execute(&cfg.subjects[0], &cfg.workloads[0], 0, &stop);
        assert_eq!(e.outcome, Outcome::Complete, "{:?}", e.warnings);
        let cpu = e
            .series
            .iter()
            .find(|s| s.metric.name == "cpu_percent")
            .unwrap();
        assert_eq!(cpu.points.len(), 2);
        let lat = e
            .series
            .iter()
            .find(|s| s.metric.name == "jsonl:latency_s")
            .unwrap();
        assert_eq!(lat.kind, SeriesKind::Observations);
        assert!(lat.points.iter().all(|p| p.1 == 0.25) && !lat.points.is_empty());
        assert_eq!(e.warnings.len(), 1, "{:?}", e.warnings);
        assert!(e.warnings[0].contains("unreachable"), "{:?}", e.warnings);
    }

    fn one_subject(
        dir: &Path,
        node: &str,
        ready: &str,
        load: &str,
        measure_s: u32,
    ) -> ComparisonFile {
        let text = format!(
            r#"[[subject]]
name = "a"
command = ["sh", "-c", "{node}"]
cwd = "{d}"
ready = {ready}
addresses = {{ rpc = "http://127.0.0.1:1" }}
[[subject]]
name = "b"
command = ["sh"]
addresses = {{ rpc = "http://127.0.0.1:2" }}
[[workload]]
name = "w"
rate = 50
warmup_s = 0.2
measure_s = {measure_s}
[workload.load]
command = ["sh", "-c", "{load}", "load", "{{rpc}}", "{{rate}}"]
"#,
            d = dir.display()
        );
        ComparisonFile::parse(&text, Path::new("t.toml")).unwrap()
    }

    #[test]
    fn a_ready_node_is_loaded_and_the_load_is_measured_apart() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = one_subject(
            dir.path(),
            "sleep 0.3; echo node up; exec sleep 600",
            "{ log = 'node up$', timeout_s = 60 }",
            r#"echo \"{\\\"target\\\": \\\"$1\\\"}\"; i=0; while :; do echo \"{\\\"achieved_tps\\\": $2}\"; i=$((i+1)); sleep 0.2; done"#,
            2,
        );
        let e = ProcessExecutor::new(30.0).execute(
            &cfg.subjects[0],
            &cfg.workloads[0],
            0,
            &AtomicBool::new(false),
        );
        assert_eq!(e.outcome, Outcome::Complete, "{:?}", e.warnings);
        let get = |n: &str| e.series.iter().find(|s| s.metric.name == n);
        let ready = get("ready_s").expect("ready_s");
        assert!(ready.points[0].1 > 0.0);
        let tps = get("load:achieved_tps").expect("load:achieved_tps");
        assert!(tps.points.iter().all(|p| p.1 == 50.0) && !tps.points.is_empty());
        assert_eq!(get("load:cpu_percent").expect("load cpu").points.len(), 2);
        assert_eq!(get("cpu_percent").expect("node cpu").points.len(), 2);
        // The address placeholder reached the load's command line.
        assert!(e.warnings.is_empty(), "{:?}", e.warnings);
        let cmd = cfg.workloads[0]
            .load
            .as_ref()
            .unwrap()
            .command_for(&cfg.subjects[0], &cfg.workloads[0]);
        assert_eq!(cmd[cmd.len() - 2..], ["http://127.0.0.1:1", "50"]);
    }

    /// Not a test on its own: run by `cpu_is_the_windows_cpu_time_not_a_median_of_seconds`
    /// as the node, it keeps its thread's CPU time at `DYNO_TEST_BURN_SHARE` of the wall
    /// time since it started (spinning while behind, sleeping 1 ms while ahead), until
    /// killed. Without the variable it returns at once.
    #[test]
    fn cpu_burner() {
        let Some(share) = std::env::var("DYNO_TEST_BURN_SHARE")
            .ok()
            .and_then(|s| s.parse::<f64>().ok())
        else {
            return;
        };
        let start = Instant::now();
        let cpu0 = crate::sampler::own_thread_cpu_ns().expect("thread CPU clock");
        loop {
            let cpu = (crate::sampler::own_thread_cpu_ns().unwrap_or(cpu0) - cpu0) as f64 / 1e9;
            if cpu < share * start.elapsed().as_secs_f64() {
                std::hint::spin_loop();
            } else {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }

    #[test]
    fn cpu_is_the_windows_cpu_time_not_a_median_of_seconds() {
        // A node that uses 7.3% of a core: a median of 1-second samples of /proc ticks
        // reads 7 or 8 (1% of a core per second); the window's CPU time reads 7.3.
        let exe = std::env::current_exe().unwrap();
        let text = format!(
            r#"[[subject]]
name = "a"
command = ["{exe}", "--exact", "executor::tests::cpu_burner", "--test-threads=1", "--nocapture"]
env = {{ DYNO_TEST_BURN_SHARE = "0.073" }}
[[subject]]
name = "b"
command = ["sh"]
[[workload]]
name = "w"
rate = 1
warmup_s = 1
measure_s = 8
"#,
            exe = exe.display()
        );
        let cfg = ComparisonFile::parse(&text, Path::new("t.toml")).unwrap();
        let e = ProcessExecutor::new(30.0).execute(
            &cfg.subjects[0],
            &cfg.workloads[0],
            0,
            &AtomicBool::new(false),
        );
        assert_eq!(e.outcome, Outcome::Complete, "{:?}", e.warnings);
        let values = dyno_judge::values::run_values(&e.series);
        let cpu = values
            .iter()
            .find(|v| v.metric.name == "cpu_percent")
            .unwrap()
            .value;
        let series = e
            .series
            .iter()
            .find(|s| s.metric.name == "cpu_percent")
            .unwrap();
        assert_eq!(series.kind, SeriesKind::Rate);
        assert_eq!(
            series.points.len(),
            8,
            "the per-second series is kept for plots"
        );
        // The value is the CPU time over the whole window (each second's share weighted
        // by its length), not a median of the seconds; a busy machine shifts when the
        // burner catches up, not what the window adds up to.
        let whole = dyno_judge::values::window_mean(&series.points).unwrap();
        assert!((cpu - whole).abs() < 1e-9, "cpu_percent {cpu} vs {whole}");
        // The burner's share itself is not asserted: a machine at load 50 starves it
        // (4.2% was seen), and no test depends on the machine's speed.
        assert!(cpu > 0.0 && cpu < 100.0, "cpu_percent {cpu}");
    }

    #[test]
    fn a_node_not_ready_in_time_fails_with_its_last_lines() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = one_subject(
            dir.path(),
            "echo starting; echo still starting; exec sleep 600",
            "{ log = 'never', timeout_s = 0.5 }",
            "exec sleep 600",
            2,
        );
        let e = ProcessExecutor::new(30.0).execute(
            &cfg.subjects[0],
            &cfg.workloads[0],
            0,
            &AtomicBool::new(false),
        );
        match &e.outcome {
            Outcome::Failed { reason, last_lines } => {
                assert!(reason.starts_with("not ready within 0."), "{reason}");
                assert!(reason.contains("`never`"), "{reason}");
                assert_eq!(last_lines, &["starting", "still starting"]);
            }
            o => panic!("{o:?}"),
        }
    }

    #[test]
    fn a_load_that_dies_mid_window_fails_the_execution_with_its_output() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = one_subject(
            dir.path(),
            "echo up; exec sleep 600",
            "{ log = 'up' }",
            "echo sending to $1; sleep 1.2; echo connection refused >&2; exit 3",
            30,
        );
        let started = Instant::now();
        let e = ProcessExecutor::new(30.0).execute(
            &cfg.subjects[0],
            &cfg.workloads[0],
            0,
            &AtomicBool::new(false),
        );
        match &e.outcome {
            Outcome::Failed { reason, last_lines } => {
                assert!(
                    reason.starts_with("the load command exited (exit status: 3)"),
                    "{reason}"
                );
                assert_eq!(
                    last_lines,
                    &["sending to http://127.0.0.1:1", "connection refused"]
                );
            }
            o => panic!("{o:?}"),
        }
        // It did not wait out the 30 s window.
        assert!(started.elapsed() < Duration::from_secs(29));
    }
}
