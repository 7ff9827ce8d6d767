//! Running one benchmark of one subject, behind a trait so the scheduler is tested (and
//! simulated) without building or running anything.

use dyno_proc::{GuardedChild, Signal, SpawnOptions, Stream};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One benchmark run to perform.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// Index of the subject (variant or baseline) in the race.
    pub subject: usize,
    /// Index of the benchmark in the study.
    pub benchmark: usize,
    /// Round number, from 1.
    pub round: u32,
    /// The full command line; the program first.
    pub command_line: Vec<String>,
    /// Kill the run after this long.
    pub timeout: Duration,
}

/// What a run produced.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Outcome {
    /// Exit code; `None` when killed by a signal or not started.
    pub exit_code: Option<i32>,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
    /// Wall-clock time of the run in seconds.
    pub wall_time_s: f64,
    /// Killed for running past the job's timeout.
    pub timed_out: bool,
}

impl Outcome {
    /// `true` when the program exited with status 0.
    pub fn success(&self) -> bool {
        self.exit_code == Some(0)
    }
}

/// Runs jobs. The production implementation starts processes; tests use a mock.
pub trait Executor {
    /// Runs one job to completion.
    fn run(&mut self, job: &Job) -> Outcome;
}

/// Runs each job as a child process in a process group of its own (a [`GuardedChild`]),
/// stdin closed, stdout and stderr captured; a run past the job's timeout is SIGKILLed
/// with its whole group, so a benchmark that forks leaves nothing behind.
#[derive(Debug, Default, Clone)]
pub struct ProcessExecutor;

/// What the reader threads of a run collect: stdout and stderr, line by line, each up to
/// dyno-proc's body cap (a benchmark's output is a few lines; one that floods is cut,
/// and the cut said at the end of its stderr).
#[derive(Default)]
struct Captured {
    stdout: String,
    stderr: String,
    /// Bytes of lines left out once a stream reached the cap.
    left_out: u64,
}

impl Captured {
    fn take(&mut self, stream: Stream, line: &str) {
        let text = match stream {
            Stream::Stdout => &mut self.stdout,
            Stream::Stderr => &mut self.stderr,
        };
        if (text.len() + line.len()) as u64 >= dyno_proc::lines::MAX_BODY_BYTES {
            self.left_out += line.len() as u64 + 1;
            return;
        }
        text.push_str(line);
        text.push('\n');
    }
}

impl Executor for ProcessExecutor {
    fn run(&mut self, job: &Job) -> Outcome {
        let Some((program, args)) = job.command_line.split_first() else {
            return Outcome {
                stderr: "empty command line".into(),
                ..Outcome::default()
            };
        };
        let captured = Arc::new(Mutex::new(Captured::default()));
        let sink = captured.clone();
        let opts = SpawnOptions {
            // A timed-out benchmark is killed outright, as before: no grace to finish.
            stop_signal: Signal::Kill,
            // The whole output is kept below; no separate tail is needed.
            tail_lines: 0,
            on_line: Some(Arc::new(move |stream, line| {
                sink.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .take(stream, line);
            })),
            ..SpawnOptions::default()
        };
        let mut cmd = Command::new(program);
        cmd.args(args);
        let started = Instant::now();
        let mut child = match GuardedChild::spawn(cmd, &opts) {
            Ok(c) => c,
            Err(e) => {
                return Outcome {
                    stderr: format!("cannot start {program}: {e}"),
                    ..Outcome::default()
                }
            }
        };
        let (wall_time_s, timed_out) = wait_for_exit(&mut child, started, job.timeout);
        // Reaps the child and SIGKILLs what is left of its group: on a timeout the
        // benchmark and everything it started, after a normal exit any background process
        // it left. The output read until then is kept.
        let stopped = child.stop(Duration::ZERO);
        let Captured {
            stdout,
            mut stderr,
            left_out,
        } = std::mem::take(&mut *captured.lock().unwrap_or_else(|e| e.into_inner()));
        // The grace was zero: being killed is the benchmark's normal end, not news.
        for note in stopped
            .warnings()
            .into_iter()
            .skip(usize::from(stopped.warning().is_some()))
        {
            stderr.push_str(&format!("\n(dyno: {note})"));
        }
        if left_out > 0 {
            stderr.push_str(&format!(
                "\n(dyno: output past {} per stream not kept: {} left out)",
                dyno_proc::lines::bytes(dyno_proc::lines::MAX_BODY_BYTES),
                dyno_proc::lines::bytes(left_out)
            ));
        }
        if timed_out {
            stderr.push_str(&format!(
                "\n(killed after {:.0} s: the benchmark's timeout)",
                job.timeout.as_secs_f64()
            ));
        }
        Outcome {
            exit_code: stopped.status.and_then(|s| s.code()),
            stdout,
            stderr,
            wall_time_s,
            timed_out,
        }
    }
}

/// Waits until `child` exits or `timeout` has passed since `started`; returns the
/// wall-clock seconds until the exit was seen and whether the timeout passed first.
/// The wait blocks on the kernel's notice of the exit (dyno-proc's `wait_timeout`), so
/// the wall time is not late by a polling interval.
pub(crate) fn wait_for_exit(
    child: &mut GuardedChild,
    started: Instant,
    timeout: Duration,
) -> (f64, bool) {
    let left = timeout.saturating_sub(started.elapsed());
    match child.wait_timeout(left) {
        Some(_) => (started.elapsed().as_secs_f64(), false),
        None => (started.elapsed().as_secs_f64(), true),
    }
}

/// One synthetic metric: its name, whether higher is better, and its true value.
#[derive(Debug, Clone, PartialEq)]
pub struct SyntheticMetric {
    /// Name.
    pub name: String,
    /// Higher is better (`/s`) or lower (`ns`).
    pub higher_is_better: bool,
    /// The value of a subject without slowdown.
    pub base: f64,
}

/// A mock executor printing `dyno machine`-style JSON whose scores have known true values:
/// subject `s` is slower than the base by `slowdown[s]` (0.03 = 3%) with multiplicative
/// normal noise of relative size `noise[s]`, times a factor common to every run of a round
/// (`1 + common_noise * z_round`, a machine whose speed drifts between rounds). Subjects
/// listed in `failing` exit with 1.
#[derive(Debug, Clone)]
pub struct SyntheticExecutor {
    /// Metrics every run reports.
    pub metrics: Vec<SyntheticMetric>,
    /// Relative slowdown per subject.
    pub slowdown: Vec<f64>,
    /// Relative noise per subject, independent between runs.
    pub noise: Vec<f64>,
    /// Relative size of the noise shared by every run of one round (0 = none).
    pub common_noise: f64,
    /// Subjects whose runs fail.
    pub failing: Vec<usize>,
    /// Seconds of "wall time" each run reports.
    pub run_time_s: f64,
    /// Runs performed.
    pub runs: usize,
    rng: Pcg64,
    seed: u64,
}

impl SyntheticExecutor {
    /// A synthetic executor with the given truth, seeded.
    pub fn new(
        metrics: Vec<SyntheticMetric>,
        slowdown: Vec<f64>,
        noise: Vec<f64>,
        seed: u64,
    ) -> Self {
        SyntheticExecutor {
            metrics,
            slowdown,
            noise,
            common_noise: 0.0,
            failing: Vec::new(),
            run_time_s: 1.0,
            runs: 0,
            rng: Pcg64::seed_from_u64(seed),
            seed,
        }
    }

    fn gauss(&mut self) -> f64 {
        gauss(&mut self.rng)
    }

    /// The factor shared by every run of `round` and metric `metric`: a pure function of
    /// the seed, the round and the metric, so every subject sees the same one whatever the
    /// order of the jobs.
    fn common_factor(&self, round: u32, metric: usize) -> f64 {
        if self.common_noise == 0.0 {
            return 1.0;
        }
        let key = self.seed ^ (u64::from(round) << 20) ^ ((metric as u64) << 52);
        let mut rng = Pcg64::seed_from_u64(key ^ 0x9e37_79b9_7f4a_7c15);
        1.0 + self.common_noise * gauss(&mut rng)
    }
}

/// Standard normal by Box-Muller.
fn gauss(rng: &mut Pcg64) -> f64 {
    let u1: f64 = rng.gen_range(f64::EPSILON..1.0);
    let u2: f64 = rng.gen();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

impl Executor for SyntheticExecutor {
    fn run(&mut self, job: &Job) -> Outcome {
        self.runs += 1;
        if self.failing.contains(&job.subject) {
            return Outcome {
                exit_code: Some(1),
                stderr: "error: synthetic failure\n".into(),
                wall_time_s: self.run_time_s,
                ..Outcome::default()
            };
        }
        let d = self.slowdown.get(job.subject).copied().unwrap_or(0.0);
        let noise = self.noise.get(job.subject).copied().unwrap_or(0.01);
        let mut results = Vec::new();
        for (k, m) in self.metrics.clone().into_iter().enumerate() {
            let truth = if m.higher_is_better {
                m.base / (1.0 + d)
            } else {
                m.base * (1.0 + d)
            };
            let value = truth * (1.0 + noise * self.gauss()) * self.common_factor(job.round, k);
            results.push(serde_json::json!({
                "metric": m.name,
                "unit": if m.higher_is_better { "/s" } else { "ns" },
                "direction": if m.higher_is_better { "higher_is_better" } else { "lower_is_better" },
                "score": value,
            }));
        }
        Outcome {
            exit_code: Some(0),
            stdout: serde_json::json!({ "schema": "dyno.machine/1", "results": results })
                .to_string(),
            stderr: String::new(),
            wall_time_s: self.run_time_s,
            timed_out: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(command: &str, timeout: Duration) -> Job {
        Job {
            subject: 0,
            benchmark: 0,
            round: 1,
            command_line: vec!["sh".into(), "-c".into(), command.into()],
            timeout,
        }
    }

    #[test]
    fn a_run_is_captured_whole() {
        let out = ProcessExecutor.run(&job(
            "echo result; echo warning >&2; exit 3",
            Duration::from_secs(60),
        ));
        assert_eq!(out.exit_code, Some(3));
        assert_eq!(out.stdout, "result\n");
        assert_eq!(out.stderr, "warning\n");
        assert!(!out.timed_out);
    }

    #[test]
    fn a_flooding_benchmark_is_kept_within_the_caps_and_the_cut_said() {
        // A line without newlines (cut at the line cap), then more lines than the body cap.
        let out = ProcessExecutor.run(&job(
            "head -c 1000000 /dev/zero; echo; yes \"$(printf '%01000d' 0)\" | head -c 70000000",
            Duration::from_secs(600),
        ));
        let cap = dyno_proc::lines::MAX_BODY_BYTES as usize;
        assert!(out.stdout.len() < cap, "{}", out.stdout.len());
        assert!(out.stdout.len() > cap - 2000, "{}", out.stdout.len());
        assert!(
            out.stderr
                .contains("(dyno: output: 1 line over 64 KiB cut, 934.5 kB dropped)"),
            "{}",
            out.stderr
        );
        assert!(
            out.stderr
                .contains("(dyno: output past 67.1 MB per stream not kept: "),
            "{}",
            out.stderr
        );
    }

    #[test]
    fn a_run_past_its_timeout_is_killed_and_keeps_what_it_printed() {
        let out = ProcessExecutor.run(&job("echo started; sleep 60", Duration::from_millis(300)));
        assert!(out.timed_out);
        assert!(!out.success());
        assert!(out.wall_time_s < 30.0, "waited {} s", out.wall_time_s);
        assert_eq!(out.stdout, "started\n");
        assert!(out.stderr.contains("killed after"), "{}", out.stderr);
    }

    /// Pids of live processes whose command line is exactly `argv`.
    fn processes_running(argv: &[&str]) -> Vec<u32> {
        let want: Vec<u8> = argv
            .iter()
            .flat_map(|a| [a.as_bytes(), b"\0"].concat())
            .collect();
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter(|&pid| matches!(dyno_proc::liveness(pid), dyno_proc::Liveness::Alive { .. }))
            .filter(|pid| std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == want))
            .collect()
    }

    #[test]
    fn a_timed_out_benchmark_takes_its_grandchildren_with_it() {
        // A sleep length no other run uses (this test process's pid in it), so the check
        // below sees only this run's sleeps.
        let secs = format!("9{}1", std::process::id());
        let argv = ["sleep", secs.as_str()];
        let out = ProcessExecutor.run(&job(
            &format!("sleep {secs} & echo forked; sleep {secs}"),
            Duration::from_millis(300),
        ));
        // SIGKILL is delivered asynchronously: allow the killed sleeps a moment to exit.
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut left = processes_running(&argv);
        while !left.is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
            left = processes_running(&argv);
        }
        for &pid in &left {
            // Never leave them behind, even when the assertion fails.
            let _ = dyno_proc::signal_process(pid, dyno_proc::Signal::Kill);
        }
        assert!(out.timed_out);
        assert_eq!(out.stdout, "forked\n");
        assert!(left.is_empty(), "left behind: {left:?}");
    }

    #[test]
    fn a_program_that_does_not_exist_is_an_outcome_not_a_panic() {
        let out = ProcessExecutor.run(&Job {
            command_line: vec!["/nonexistent/dyno-bench".into()],
            ..job("", Duration::from_secs(1))
        });
        assert_eq!(out.exit_code, None);
        assert!(out.stderr.contains("cannot start"), "{}", out.stderr);
    }
}
