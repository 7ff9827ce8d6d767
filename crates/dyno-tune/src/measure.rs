//! Running one benchmark of one subject, behind a trait so the scheduler is tested (and
//! simulated) without building or running anything.

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::Instant;

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

/// Runs each job as a child process, stdin closed, stdout and stderr captured.
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
        // Read stderr on a thread so a chatty program cannot block on a full pipe.
        let mut err_pipe = child.stderr.take();
        let err_reader = std::thread::spawn(move || {
            let mut s = Vec::new();
            if let Some(p) = err_pipe.as_mut() {
                let _ = p.read_to_end(&mut s);
            }
            s
        });
        let mut stdout = Vec::new();
        if let Some(mut p) = child.stdout.take() {
            let _ = p.read_to_end(&mut stdout);
        }
        let status = child.wait();
        let wall_time_s = started.elapsed().as_secs_f64();
        let stderr = err_reader.join().unwrap_or_default();
        Outcome {
            exit_code: status.ok().and_then(|s| s.code()),
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
            wall_time_s,
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
        }
    }
}
