//! Running one benchmark of one subject, behind a trait so the scheduler is tested (and
//! simulated) without building or running anything.

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use wait_timeout::ChildExt as _;

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

/// Runs each job as a child process, stdin closed, stdout and stderr captured, killed when
/// it runs past the job's timeout.
#[derive(Debug, Default, Clone)]
pub struct ProcessExecutor;

impl Executor for ProcessExecutor {
    fn run(&mut self, job: &Job) -> Outcome {
        let Some((program, args)) = job.command_line.split_first() else {
            return Outcome {
                stderr: "empty command line".into(),
                ..Outcome::default()
            };
        };
        let started = Instant::now();
        let child = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn();
        let mut child = match child {
            Ok(c) => c,
            Err(e) => {
                return Outcome {
                    stderr: format!("cannot start {program}: {e}"),
                    ..Outcome::default()
                }
            }
        };
        // Both pipes are read on threads, so a chatty program cannot block on a full pipe
        // and the wait below can time out.
        let reader = |pipe: Option<Box<dyn Read + Send>>| {
            std::thread::spawn(move || {
                let mut s = Vec::new();
                if let Some(mut p) = pipe {
                    let _ = p.read_to_end(&mut s);
                }
                s
            })
        };
        let out_reader = reader(child.stdout.take().map(|p| Box::new(p) as _));
        let err_reader = reader(child.stderr.take().map(|p| Box::new(p) as _));
        let (status, timed_out) = match child.wait_timeout(job.timeout) {
            Ok(Some(status)) => (Some(status), false),
            Ok(None) => {
                let _ = child.kill();
                (child.wait().ok(), true)
            }
            Err(_) => (child.wait().ok(), false),
        };
        let wall_time_s = started.elapsed().as_secs_f64();
        // A grandchild that inherited the pipes could hold them open after a kill; the
        // readers are then left behind rather than waited for.
        let collect = |r: std::thread::JoinHandle<Vec<u8>>| {
            if timed_out {
                let grace = Instant::now() + Duration::from_secs(1);
                while !r.is_finished() && Instant::now() < grace {
                    std::thread::sleep(Duration::from_millis(10));
                }
                if !r.is_finished() {
                    return Vec::new();
                }
            }
            r.join().unwrap_or_default()
        };
        let stdout = collect(out_reader);
        let mut stderr = String::from_utf8_lossy(&collect(err_reader)).into_owned();
        if timed_out {
            stderr.push_str(&format!(
                "\n(killed after {:.0} s: the benchmark's timeout)",
                job.timeout.as_secs_f64()
            ));
        }
        Outcome {
            exit_code: status.and_then(|s| s.code()),
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr,
            wall_time_s,
            timed_out,
        }
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
    fn a_run_past_its_timeout_is_killed_and_keeps_what_it_printed() {
        // `exec` so the shell itself is the sleeper and the kill reaches it.
        let out = ProcessExecutor.run(&job(
            "echo started; exec sleep 60",
            Duration::from_millis(300),
        ));
        assert!(out.timed_out);
        assert!(!out.success());
        assert!(out.wall_time_s < 30.0, "waited {} s", out.wall_time_s);
        assert_eq!(out.stdout, "started\n");
        assert!(out.stderr.contains("killed after"), "{}", out.stderr);
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
