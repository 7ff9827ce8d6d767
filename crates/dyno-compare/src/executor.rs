//! Running a node: the [`Executor`] trait, and [`ProcessExecutor`], which starts the
//! subject's command as a child process, samples it from /proc and stops it.
//!
//! The node runs as a [`dyno_proc::GuardedChild`]: its own process group, so a Ctrl-C in
//! the terminal reaches dyno only and dyno stops the node itself (SIGINT to the whole
//! group, SIGKILL after the grace period); and a parent-death signal plus a group guard,
//! so the node and anything it started end even when dyno is SIGKILLed.

use crate::config::{SubjectSpec, WorkloadSpec};
use crate::execution::{process_series, Execution, Outcome};
use crate::prometheus::{parse_text, Endpoint, Scrapes};
use crate::sampler::{sample_between, ProcSample, ProcSampler};
use dyno_proc::{GuardedChild, SpawnOptions};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Output lines kept from a node for the record of a failed run.
pub use dyno_proc::child::TAIL_LINES;

/// Scrapes of a reachable endpoint that may fail in a row before the node counts as no
/// longer answering.
pub const MISSED_SCRAPES: usize = 5;

/// Runs one subject under one workload and records the measured window.
pub trait Executor {
    /// Starts the node fresh, waits the warm-up, samples the measured window, stops the
    /// node. Must return promptly (within the grace period) once `stop` is set, with
    /// [`Outcome::Interrupted`], and must leave no process behind.
    fn execute(
        &mut self,
        subject: &SubjectSpec,
        workload: &WorkloadSpec,
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

fn start(
    command: &[String],
    subject: &SubjectSpec,
    workload: &WorkloadSpec,
) -> Result<GuardedChild, String> {
    let (program, args) = command.split_first().ok_or("empty command")?;
    let mut cmd = Command::new(program);
    cmd.args(args).envs(subject.env_for(workload));
    if let Some(dir) = &subject.cwd {
        cmd.current_dir(dir);
    }
    GuardedChild::spawn(cmd, &SpawnOptions::default()).map_err(|e| e.to_string())
}

/// Sleeps until `until`, waking every 20 ms; `Err` with why when the node exits or `stop`
/// is set first.
fn wait_until(
    node: &mut GuardedChild,
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

impl NodeMetrics {
    fn scrape(
        &mut self,
        ep: &Endpoint,
        keep: &[String],
        t: f64,
        warnings: &mut Vec<String>,
    ) -> Result<(), String> {
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
                    Err(format!(
                        "stopped answering: {} scrapes of http://{}{} failed in a row ({e})",
                        self.missed, ep.authority, ep.path
                    ))
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
    fn execute(
        &mut self,
        subject: &SubjectSpec,
        workload: &WorkloadSpec,
        round: u32,
        stop: &AtomicBool,
    ) -> Execution {
        let command_line = subject.command_for(workload);
        let mut exec = Execution {
            subject: subject.name.clone(),
            workload: workload.name.clone(),
            round,
            started_at: dyno_model::now_unix(),
            command_line: command_line.clone(),
            series: Vec::new(),
            outcome: Outcome::Complete,
            warnings: Vec::new(),
        };
        let mut node = match start(&command_line, subject, workload) {
            Ok(n) => n,
            Err(reason) => {
                exec.outcome = Outcome::Failed {
                    reason,
                    last_lines: Vec::new(),
                };
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
        let warm_end = Instant::now() + Duration::from_secs_f64(workload.warmup_s);
        let result = wait_until(&mut node, warm_end, stop).and_then(|()| {
            let start = jsonl_path.as_deref().map(jsonl::offset);
            let r = self.measure(
                &mut node,
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
        let stopped = node.stop(self.grace);
        exec.warnings.extend(stopped.warning());
        let last_lines = stopped.last_lines;
        exec.outcome = match result {
            Ok(()) => Outcome::Complete,
            Err(Interruption::Stop) => Outcome::Interrupted,
            Err(Interruption::Exited(status)) => Outcome::Failed {
                reason: format!("exited ({status}) before the measured window ended"),
                last_lines,
            },
            Err(Interruption::Failed(reason)) => Outcome::Failed { reason, last_lines },
        };
        if let (Some(path), Some((start, end))) = (&jsonl_path, jsonl_window) {
            match jsonl::read_range(path, start, end) {
                Ok(series) => exec.series.extend(series),
                Err(e) => exec.warnings.push(format!("{}: {e}", path.display())),
            }
        }
        crate::declared::apply(&subject.metrics, &mut exec.series);
        exec
    }
}

fn resolve(subject: &SubjectSpec, p: &std::path::Path) -> std::path::PathBuf {
    match &subject.cwd {
        Some(dir) if p.is_relative() => dir.join(p),
        _ => p.to_path_buf(),
    }
}

impl ProcessExecutor {
    fn measure(
        &self,
        node: &mut GuardedChild,
        subject: &SubjectSpec,
        workload: &WorkloadSpec,
        endpoint: Option<&Endpoint>,
        stop: &AtomicBool,
        exec: &mut Execution,
    ) -> Result<(), Interruption> {
        let sampler = ProcSampler::new(node.pid());
        // A node that exits shows up first as an unreadable or zombie /proc entry: report
        // its exit status then, which says more than "vanished".
        let read = |s: &ProcSampler, node: &mut GuardedChild| {
            s.read().map_err(|e| match node.exited() {
                Some(status) => Interruption::Exited(status),
                None => Interruption::Failed(format!("vanished from /proc while measured ({e:?})")),
            })
        };
        let mut prev = read(&sampler, node)?;
        let t0 = prev.t;
        let mut samples: Vec<ProcSample> = Vec::new();
        let mut node_metrics = NodeMetrics::default();
        let window = Duration::from_secs_f64(workload.measure_s);
        let begin = Instant::now();
        let mut tick = 1u32;
        let outcome = loop {
            let due = begin + self.interval * tick;
            if let Err(e) = wait_until(node, due, stop) {
                break Err(e);
            }
            let next = match read(&sampler, node) {
                Ok(r) => r,
                Err(e) => break Err(e),
            };
            samples.push(sample_between(&prev, &next, sampler.clk_tck()));
            prev = next;
            if let Some(ep) = endpoint {
                if let Err(why) = node_metrics.scrape(
                    ep,
                    &subject.metrics.prometheus_metrics,
                    prev.t - t0,
                    &mut exec.warnings,
                ) {
                    break Err(Interruption::Failed(why));
                }
            }
            if self.interval * tick >= window {
                break Ok(());
            }
            tick += 1;
        };
        exec.series = process_series(&samples, t0);
        exec.series.extend(node_metrics.scrapes.into_series());
        outcome
    }
}

mod jsonl;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ComparisonFile;
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
        let e = m.scrape(&ep, &[], 9.0, &mut warnings).unwrap_err();
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
        assert_eq!(lat.kind, crate::execution::SeriesKind::Observations);
        assert!(lat.points.iter().all(|p| p.1 == 0.25) && !lat.points.is_empty());
        assert_eq!(e.warnings.len(), 1, "{:?}", e.warnings);
        assert!(e.warnings[0].contains("unreachable"), "{:?}", e.warnings);
    }
}
