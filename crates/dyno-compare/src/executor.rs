//! Running a node: the [`Executor`] trait, and [`ProcessExecutor`], which starts the
//! subject's command as a child process, samples it from /proc and stops it.
//!
//! The child gets its own process group, so a Ctrl-C in the terminal reaches dyno only:
//! dyno then stops the node itself (SIGINT to the whole group, SIGKILL after the grace
//! period), and anything the node started goes with it. Signals are sent with the `kill`
//! command, which keeps `unsafe` out of this module.
//!
//! If dyno itself dies without stopping the node (SIGKILL, the OOM killer, a crash), two
//! things still end the node's group: the kernel sends the spawned process SIGKILL when
//! the thread that spawned it exits (`PR_SET_PDEATHSIG`, Linux), and a *group guard*, a
//! tiny `sh` that dyno starts beside each node (outside the node's tree and group, so it
//! is neither sampled nor signalled with the node), waits for end-of-file on a pipe only
//! dyno holds open: the kernel closes it when dyno dies, and the guard then SIGKILLs the
//! node's whole group, which the parent-death signal alone would not reach (a launcher
//! shell's children, for one).

use crate::config::{SubjectSpec, WorkloadSpec};
use crate::execution::{guess_direction, process_series, Execution, Outcome, Series, SeriesKind};
use crate::prometheus::{parse_text, Endpoint, FamilyKind};
use crate::sampler::{sample_between, ProcSample, ProcSampler};
use dyno_model::{Metric, Unit};
use std::collections::{BTreeMap, VecDeque};
use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Output lines kept from a node for the record of a failed run.
pub const TAIL_LINES: usize = 20;

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

type Tail = Arc<Mutex<VecDeque<String>>>;

fn keep_tail(stream: impl Read + Send + 'static, tail: Tail) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            let mut t = tail.lock().unwrap_or_else(|e| e.into_inner());
            if t.len() == TAIL_LINES {
                t.pop_front();
            }
            t.push_back(line);
        }
    })
}

/// A started node and what is needed to stop it.
struct Running {
    child: Child,
    tail: Tail,
    readers: Vec<std::thread::JoinHandle<()>>,
    /// The group guard (see the module documentation); `None` if it could not start.
    guard: Option<Child>,
    /// Set once the group was killed and the child reaped; until then dropping a
    /// `Running` (a panic, an early return) kills the group, so no node outlives dyno's
    /// handling of it.
    reaped: bool,
}

impl Drop for Running {
    fn drop(&mut self) {
        if !self.reaped {
            self.dismiss_guard();
            signal("KILL", &format!("-{}", self.child.id()));
            let _ = self.child.wait();
        }
    }
}

impl Running {
    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Ends the group guard before dyno reaps the node: while the node's zombie holds its
    /// pid, the group id cannot be reused, so a guard that fires late hits nothing else.
    /// (A node that exited by itself was reaped already; its group id could then be
    /// reused only after the pid space wrapped around within that moment.)
    fn dismiss_guard(&mut self) {
        if let Some(mut guard) = self.guard.take() {
            let _ = guard.kill();
            let _ = guard.wait();
        }
    }

    fn last_lines(&self) -> Vec<String> {
        self.tail
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .collect()
    }

    fn exited(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(Some(status)) => Some(status.to_string()),
            Ok(None) => None,
            Err(e) => Some(format!("cannot be waited for: {e}")),
        }
    }

    /// SIGINT to the group, SIGKILL after `grace`; always reaps. Returns a warning when the
    /// node had to be killed.
    fn stop(mut self, grace: Duration) -> (Option<String>, Vec<String>) {
        let group = format!("-{}", self.pid());
        let mut warning = None;
        if self.exited().is_none() {
            signal("INT", &group);
            let deadline = Instant::now() + grace;
            while self.exited().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            if self.exited().is_none() {
                warning = Some(format!(
                    "did not stop within {:.0} s of SIGINT: killed",
                    grace.as_secs_f64()
                ));
            }
        }
        // Whatever is left of the group (the node's own children) goes too.
        self.dismiss_guard();
        signal("KILL", &group);
        let _ = self.child.wait();
        self.reaped = true;
        // A process that left the group (setsid) may still hold the pipes: wait for the
        // output briefly, then leave the reader threads behind rather than hang.
        let deadline = Instant::now() + Duration::from_secs(2);
        while self.readers.iter().any(|r| !r.is_finished()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        for r in self.readers.drain(..).filter(|r| r.is_finished()) {
            let _ = r.join();
        }
        let lines = self.last_lines();
        (warning, lines)
    }
}

/// Sends `sig` to `target` (a pid, or `-pgid` for a group) with the `kill` command.
fn signal(sig: &str, target: &str) {
    let _ = Command::new("kill")
        .args([format!("-{sig}"), "--".into(), target.into()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

fn start(
    command: &[String],
    subject: &SubjectSpec,
    workload: &WorkloadSpec,
) -> Result<Running, String> {
    let (program, args) = command.split_first().ok_or("empty command")?;
    let mut cmd = Command::new(program);
    cmd.args(args)
        .envs(subject.env_for(workload))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    crate::sys::kill_when_parent_dies(&mut cmd);
    if let Some(dir) = &subject.cwd {
        cmd.current_dir(dir);
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start `{program}`: {e}"))?;
    let guard = group_guard(child.id());
    let tail: Tail = Arc::new(Mutex::new(VecDeque::new()));
    let mut readers = Vec::new();
    if let Some(out) = child.stdout.take() {
        readers.push(keep_tail(out, tail.clone()));
    }
    if let Some(err) = child.stderr.take() {
        readers.push(keep_tail(err, tail.clone()));
    }
    Ok(Running {
        child,
        tail,
        readers,
        guard,
        reaped: false,
    })
}

/// Starts the group guard of process group `pgid`: it blocks reading a pipe whose write
/// end only dyno holds (std opens it close-on-exec, so no node inherits it) and SIGKILLs
/// the group at end-of-file, i.e. when dyno exits without dismissing it. It has a group
/// of its own so that a Ctrl-C at the terminal does not end it.
fn group_guard(pgid: u32) -> Option<Child> {
    Command::new("sh")
        .args([
            "-c",
            "read -r _; kill -KILL \"-$1\" 2>/dev/null",
            "dyno-group-guard",
            &pgid.to_string(),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .ok()
}

/// Sleeps until `until`, waking every 20 ms; `Err` with why when the node exits or `stop`
/// is set first.
fn wait_until(node: &mut Running, until: Instant, stop: &AtomicBool) -> Result<(), Interruption> {
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
    series: BTreeMap<String, Series>,
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
                for s in parse_text(&body, keep) {
                    let kind = match s.kind {
                        FamilyKind::Counter => SeriesKind::Counter,
                        FamilyKind::Gauge => SeriesKind::Gauge,
                    };
                    let name = format!("node:{}", s.series);
                    let metric = Metric::new(name.clone(), Unit::Count, guess_direction(&s.family));
                    self.series
                        .entry(name)
                        .or_insert_with(|| Series {
                            metric,
                            kind,
                            points: Vec::new(),
                        })
                        .points
                        .push((t, s.value));
                }
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
        let (kill_warning, last_lines) = node.stop(self.grace);
        exec.warnings.extend(kill_warning);
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
        node: &mut Running,
        subject: &SubjectSpec,
        workload: &WorkloadSpec,
        endpoint: Option<&Endpoint>,
        stop: &AtomicBool,
        exec: &mut Execution,
    ) -> Result<(), Interruption> {
        let sampler = ProcSampler::new(node.pid());
        // A node that exits shows up first as an unreadable or zombie /proc entry: report
        // its exit status then, which says more than "vanished".
        let read = |s: &ProcSampler, node: &mut Running| {
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
        exec.series.extend(node_metrics.series.into_values());
        outcome
    }
}

mod jsonl;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ComparisonFile;
    use std::path::{Path, PathBuf};

    /// Not a test of its own: the stand-in for dyno that the orphan tests start and
    /// SIGKILL. With `DYNO_COMPARE_ORPHAN_MODE=executor` it starts a launcher shell whose
    /// child is the "node", exactly as the executor does; with `pdeathsig` it starts
    /// `sleep` with the parent-death signal only (no group, no guard). It writes the pids
    /// to watch to `pids` in `DYNO_COMPARE_ORPHAN_DIR` and waits to be killed.
    #[test]
    #[ignore = "helper process of the orphan tests"]
    fn stand_in_for_dyno() {
        let (Some(dir), Ok(mode)) = (
            std::env::var_os("DYNO_COMPARE_ORPHAN_DIR"),
            std::env::var("DYNO_COMPARE_ORPHAN_MODE"),
        ) else {
            return;
        };
        let dir = PathBuf::from(dir);
        let publish = |pids: String| {
            std::fs::write(dir.join("pids.tmp"), pids).unwrap();
            std::fs::rename(dir.join("pids.tmp"), dir.join("pids")).unwrap();
        };
        if mode == "pdeathsig" {
            let mut cmd = Command::new("sleep");
            cmd.arg("600");
            crate::sys::kill_when_parent_dies(&mut cmd);
            let mut child = cmd.spawn().unwrap();
            publish(child.id().to_string());
            std::thread::sleep(Duration::from_secs(600));
            let _ = child.kill();
            let _ = child.wait();
            return;
        }
        let text = format!(
            r#"[[subject]]
name = "launcher"
command = ["sh", "-c", "sleep 600 & echo $! > g.tmp && mv g.tmp grandchild.pid; wait"]
cwd = "{d}"
[[subject]]
name = "b"
command = ["sh"]
[[workload]]
name = "w"
rate = 1
measure_s = 2
"#,
            d = dir.display()
        );
        let cfg = ComparisonFile::parse(&text, Path::new("t.toml")).unwrap();
        let (subject, workload) = (&cfg.subjects[0], &cfg.workloads[0]);
        let node = start(&subject.command_for(workload), subject, workload).unwrap();
        let grandchild = loop {
            match std::fs::read_to_string(dir.join("grandchild.pid")) {
                Ok(g) => break g,
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        };
        publish(format!("{} {}", node.pid(), grandchild.trim()));
        std::thread::sleep(Duration::from_secs(600));
        drop(node);
    }

    /// Start time of a live, non-zombie process (a killed orphan may wait a moment for
    /// init to reap it); the start time tells it from a later process with its pid.
    fn start_ticks(pid: u32) -> Option<u64> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let s = crate::sampler::parse_stat(&stat)?;
        (s.state != 'Z' && s.state != 'X').then_some(s.start_ticks)
    }

    /// Starts the stand-in in `mode`, waits for its pids, SIGKILLs it and returns the
    /// pids still running after a generous deadline (polled: how fast the machine is
    /// must not matter), which it then kills.
    fn survivors_of_a_killed_dyno(mode: &str) -> Vec<u32> {
        let dir = tempfile::tempdir().unwrap();
        let mut dyno = Command::new(std::env::current_exe().unwrap())
            .args([
                "--ignored",
                "--exact",
                "executor::tests::stand_in_for_dyno",
                "--nocapture",
            ])
            .env("DYNO_COMPARE_ORPHAN_DIR", dir.path())
            .env("DYNO_COMPARE_ORPHAN_MODE", mode)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        let pids: Vec<u32> = loop {
            if let Ok(text) = std::fs::read_to_string(dir.path().join("pids")) {
                break text
                    .split_whitespace()
                    .map(|p| p.parse().unwrap())
                    .collect();
            }
            if Instant::now() > deadline {
                let _ = dyno.kill();
                panic!("the stand-in never started its node");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let node: Vec<(u32, u64)> = pids
            .iter()
            .map(|&p| {
                (
                    p,
                    start_ticks(p).expect("the node runs before dyno is killed"),
                )
            })
            .collect();
        dyno.kill().unwrap(); // SIGKILL: no Drop, no stop(), no signal handler
        dyno.wait().unwrap();
        let running = |&(p, s): &(u32, u64)| start_ticks(p) == Some(s);
        let deadline = Instant::now() + Duration::from_secs(60);
        while node.iter().any(running) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let survivors: Vec<u32> = node.iter().filter(|n| running(n)).map(|n| n.0).collect();
        for p in &survivors {
            signal("KILL", &p.to_string());
        }
        survivors
    }

    #[test]
    fn a_node_and_its_children_do_not_outlive_a_killed_dyno() {
        let survivors = survivors_of_a_killed_dyno("executor");
        assert!(
            survivors.is_empty(),
            "still running 60 s after dyno was killed: {survivors:?}"
        );
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn the_parent_death_signal_alone_ends_a_direct_child() {
        let survivors = survivors_of_a_killed_dyno("pdeathsig");
        assert!(survivors.is_empty(), "{survivors:?}");
    }

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
        assert_eq!(lat.kind, SeriesKind::Observations);
        assert!(lat.points.iter().all(|p| p.1 == 0.25) && !lat.points.is_empty());
        assert_eq!(e.warnings.len(), 1, "{:?}", e.warnings);
        assert!(e.warnings[0].contains("unreachable"), "{:?}", e.warnings);
    }
}
