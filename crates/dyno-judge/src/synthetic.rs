//! Made-up executions: seeded, noisy series of every process metric and a node counter,
//! so the judge and its reports are tested and shown end to end without running
//! anything or waiting. dyno-compare runs comparisons of them as its
//! `SyntheticExecutor`.

use crate::comparison::Workload;
use dyno_exec::{process_metrics, Execution, Outcome, Series, SeriesKind};
use dyno_model::{Direction, Metric, Unit};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;
use std::collections::BTreeMap;

/// Synthetic executions: every process metric plus a `node:frags_total` counter, each
/// point `level * (1 + noise * u)` with `u` uniform in [-1, 1].
#[derive(Debug, Clone)]
pub struct Synthetic {
    /// Seed; each execution draws from `seed`, its subject, workload and round.
    pub seed: u64,
    /// Relative noise of each point and of each run's level.
    pub noise: f64,
    /// Points per execution.
    pub points: usize,
    /// Per-subject multiplier of the CPU, faults and switches (1.0 when absent): 1.1 makes
    /// a subject 10% hungrier, and its frag rate 1/1.1 as fast.
    pub slowdown: BTreeMap<String, f64>,
    /// Subjects whose executions fail.
    pub failing: Vec<String>,
}

impl Synthetic {
    /// Identical subjects with 3% noise, 20 points per execution.
    pub fn new(seed: u64) -> Self {
        Synthetic {
            seed,
            noise: 0.03,
            points: 20,
            slowdown: BTreeMap::new(),
            failing: Vec::new(),
        }
    }

    /// The execution of `subject` under `workload` (its name and rate) in `round`,
    /// started at a fixed time per round.
    pub fn execution(&self, subject: &str, workload: &str, rate: f64, round: u32) -> Execution {
        let mut rng = Pcg64::seed_from_u64(
            self.seed ^ hash(subject) ^ hash(workload).rotate_left(17) ^ (round as u64) << 40,
        );
        let factor = self.slowdown.get(subject).copied().unwrap_or(1.0);
        let mut exec = Execution {
            subject: subject.to_string(),
            workload: workload.to_string(),
            round,
            started_at: 1_795_000_000.0 + round as f64 * 100.0,
            command_line: Vec::new(),
            series: Vec::new(),
            outcome: Outcome::Complete,
            warnings: Vec::new(),
        };
        if self.failing.iter().any(|f| f == subject) {
            exec.outcome = Outcome::Failed {
                reason: "exited (exit status: 1) before the measured window ended".into(),
                last_lines: vec!["panic: synthetic".into()],
            };
            return exec;
        }
        let noise = self.noise;
        let u = move |rng: &mut Pcg64| 1.0 + noise * (rng.gen::<f64>() * 2.0 - 1.0);
        for (metric, kind) in process_metrics() {
            let (level, scaled) = match metric.name.as_str() {
                "cpu_percent" => (60.0, true),
                "rss_bytes" | "peak_rss_bytes" => (200.0 * 1024.0 * 1024.0, false),
                "read_bytes_per_s" | "write_bytes_per_s" => (4096.0, false),
                _ => (1000.0, true),
            };
            let run_level = level * if scaled { factor } else { 1.0 } * u(&mut rng);
            let points = (0..self.points)
                .map(|i| (i as f64 + 1.0, run_level * u(&mut rng)))
                .collect();
            exec.series.push(Series {
                metric,
                kind,
                points,
            });
        }
        let rate = rate / factor * u(&mut rng);
        let mut count = 0.0;
        let points = (0..self.points)
            .map(|i| {
                count += rate * u(&mut rng);
                (i as f64 + 1.0, count)
            })
            .collect();
        exec.series.push(Series {
            metric: Metric::new("node:frags_total", Unit::Count, Direction::HigherIsBetter),
            kind: SeriesKind::Counter,
            points,
        });
        exec
    }

    /// Every execution of a comparison of `subjects` (the first the baseline) under
    /// `workloads` over `rounds` rounds, round by round, each round's workloads and
    /// subjects in order.
    pub fn comparison(
        &self,
        subjects: &[&str],
        workloads: &[Workload],
        rounds: u32,
    ) -> Vec<Execution> {
        let mut out = Vec::new();
        for round in 0..rounds {
            for w in workloads {
                for s in subjects {
                    out.push(self.execution(s, &w.name, w.rate, round));
                }
            }
        }
        out
    }
}

/// FNV-1a, so each subject and workload draws its own stream.
fn hash(s: &str) -> u64 {
    s.bytes().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100000001b3)
    })
}
