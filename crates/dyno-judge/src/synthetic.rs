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
    /// How every node's CPU drifts over the comparison's time, for all subjects alike
    /// (`None`: it does not). Read by [`Synthetic::start`] only.
    pub drift: Option<Drift>,
    /// The sd, on the log scale, of each start's own offset of a node's CPU, drawn per
    /// subject and round (0: none): what differs between two starts of one binary.
    pub start_sd: f64,
    /// Other work on the machine at given times.
    pub hogs: Vec<Hog>,
    /// Seconds of the comparison so far (its own clock: nothing waits), advanced by
    /// every [`Synthetic::start`].
    pub clock_s: f64,
}

/// A node's CPU falling over a comparison's time for every subject alike (the page cache
/// filling, the node's own state settling): linearly by `fall` (0.4: 40% less) over
/// `over_s` seconds, flat after.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Drift {
    /// The share lost by `over_s`.
    pub fall: f64,
    /// Seconds over which it falls.
    pub over_s: f64,
}

impl Drift {
    /// The CPU's multiplier at `t` seconds into the comparison.
    pub fn at(&self, t: f64) -> f64 {
        1.0 - self.fall * (t / self.over_s).clamp(0.0, 1.0)
    }
}

/// Other work on the machine from `from_s` to `until_s` of the comparison's clock: it
/// uses `cpu_percent` of one core, and makes every node that runs meanwhile `slowdown`
/// times as costly (1.25: 25% more CPU).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hog {
    /// Its start, seconds.
    pub from_s: f64,
    /// Its end, seconds.
    pub until_s: f64,
    /// Its own CPU, percent of one core.
    pub cpu_percent: f64,
    /// What it does to the nodes' CPU.
    pub slowdown: f64,
}

/// Seconds a synthetic start takes besides its warm-up and windows (spawning, readiness,
/// stopping).
pub const START_OVERHEAD_S: f64 = 2.0;

/// The process metrics a node's CPU cost moves (not its memory or I/O).
fn moves_with_cpu(name: &str) -> bool {
    !matches!(
        name,
        "rss_bytes" | "peak_rss_bytes" | "read_bytes_per_s" | "write_bytes_per_s"
    ) && !name.starts_with("node:")
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
            drift: None,
            start_sd: 0.0,
            hogs: Vec::new(),
            clock_s: 0.0,
        }
    }

    /// The executions of one start at the clock's time: the nodes of `subjects` at once
    /// (side by side, or one alone when interleaved), each measured over `windows`
    /// consecutive windows of `window_s` seconds after `warmup_s`, subject by subject,
    /// window by window. Every window carries the drift and the hogs of its own seconds
    /// (so subjects of one start share them), and each subject its start's own offset;
    /// a hog during a window is its disturbance. Advances the clock past the start.
    #[allow(clippy::too_many_arguments)]
    pub fn start(
        &mut self,
        subjects: &[&str],
        workload: &str,
        rate: f64,
        round: u32,
        windows: u32,
        warmup_s: f64,
        window_s: f64,
    ) -> Vec<Execution> {
        let begin = self.clock_s + START_OVERHEAD_S + warmup_s;
        let mut out = Vec::new();
        for (spawned, subject) in subjects.iter().enumerate() {
            let offset = (self.start_sd * self.normal(subject, workload, round)).exp();
            for w in 0..windows {
                let t0 = begin + f64::from(w) * window_s;
                let mut e = self.execution_salted(subject, workload, rate, round, w);
                e.window = w;
                e.placement.spawned = spawned as u32;
                e.started_at = 1_795_000_000.0 + t0;
                e.window_at = Some((e.started_at, e.started_at + window_s));
                if e.outcome == Outcome::Complete {
                    self.shape(&mut e, t0, window_s, offset);
                }
                out.push(e);
            }
        }
        self.clock_s = begin + f64::from(windows) * window_s;
        out
    }

    /// Moves `e`'s CPU-like points by the drift, the hogs and `offset` at their times (a
    /// window from `t0` of `window_s` seconds), and records the hogs as its disturbance.
    fn shape(&self, e: &mut Execution, t0: f64, window_s: f64, offset: f64) {
        let hogged = |t: f64| {
            self.hogs
                .iter()
                .filter(|h| (h.from_s..h.until_s).contains(&t))
                .map(|h| h.slowdown)
                .product::<f64>()
        };
        let n = self.points.max(1) as f64;
        for s in e
            .series
            .iter_mut()
            .filter(|s| moves_with_cpu(&s.metric.name))
        {
            for (i, p) in s.points.iter_mut().enumerate() {
                let t = t0 + (i as f64 + 0.5) * window_s / n;
                p.1 *= self.drift.map_or(1.0, |d| d.at(t)) * hogged(t) * offset;
            }
        }
        let overlap = |h: &Hog| (h.until_s.min(t0 + window_s) - h.from_s.max(t0)).max(0.0);
        let other: f64 = self
            .hogs
            .iter()
            .map(|h| h.cpu_percent * overlap(h) / window_s)
            .sum();
        if other > 0.0 {
            let d = dyno_exec::Disturbance {
                other_cpu_percent: other,
                busiest: Some(("hog".into(), 1, other)),
            };
            e.series.push(d.series());
            e.disturbance = Some(d);
        }
    }

    /// A standard normal draw of `subject`'s start in `round` (Box-Muller), seeded.
    fn normal(&self, subject: &str, workload: &str, round: u32) -> f64 {
        let mut rng = Pcg64::seed_from_u64(
            self.seed
                ^ hash(subject).rotate_left(7)
                ^ hash(workload)
                ^ (u64::from(round) << 32)
                ^ 0x5eed,
        );
        let (u1, u2): (f64, f64) = (rng.gen::<f64>().max(1e-12), rng.gen());
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// The execution of `subject` under `workload` (its name and rate) in `round`,
    /// started at a fixed time per round.
    pub fn execution(&self, subject: &str, workload: &str, rate: f64, round: u32) -> Execution {
        self.execution_salted(subject, workload, rate, round, 0)
    }

    /// As [`Synthetic::execution`], window `window` of its start (window 0 is that
    /// execution).
    fn execution_salted(
        &self,
        subject: &str,
        workload: &str,
        rate: f64,
        round: u32,
        window: u32,
    ) -> Execution {
        let mut rng = Pcg64::seed_from_u64(
            self.seed
                ^ hash(subject)
                ^ hash(workload).rotate_left(17)
                ^ (round as u64) << 40
                ^ (u64::from(window) << 20),
        );
        let factor = self.slowdown.get(subject).copied().unwrap_or(1.0);
        let mut exec = Execution {
            subject: subject.to_string(),
            workload: workload.to_string(),
            round,
            window: 0,
            placement: Default::default(),
            window_at: None,
            started_at: 1_795_000_000.0 + round as f64 * 100.0,
            command_line: Vec::new(),
            series: Vec::new(),
            outcome: Outcome::Complete,
            warnings: Vec::new(),
            disturbance: None,
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
