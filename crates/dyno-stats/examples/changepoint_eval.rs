//! How well do the change-point detectors of `dyno results trend` work? Measured on
//! seeded synthetic series, the way a CI job sees a history: one point appended at a
//! time, the detector run on every prefix.
//!
//! - **Detection**: `--pre` points at 100 with Gaussian noise of sd `--noise` (3, i.e.
//!   3%), then a step of `--step` (5%) up, a regression of a lower-is-better metric. After
//!   each appended point `k = 1, 2, ...` (up to `--after`), is there a change point
//!   within 2 positions of the step, rising? And does the CI rule
//!   ([`dyno_stats::latest_regression`], `--recent` points) fire? The table gives the
//!   share found by k <= 5 and by k <= `--after`, and the median k.
//! - **False alarms**: stationary series of `--len` (100) points. "whole": the share of
//!   series in which a detector reports any change point, looking once at all 100
//!   points. "CI": the share of series for which the CI rule fires on at least one of
//!   the prefixes of 8..=100 points, as a job appending one run at a time would see.
//!
//! Usage: `cargo run --release -p dyno-stats --example changepoint_eval -- [--trials N]
//! [--seed S] [--window W] [--step PCT] ...` (see `scripts/bench/trend.sh`). Prints a
//! Markdown table.

use dyno_stats::{
    change_points, latest_regression, moving_window_changes, Better, ChangePointSettings,
    MovingWindowSettings, Strength,
};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

/// What the evaluation runs; every field has a flag of the same name.
#[derive(Debug, Clone)]
struct Plan {
    trials: usize,
    seed: u64,
    pre: usize,
    after: usize,
    len: usize,
    noise: f64,
    step: f64,
    recent: usize,
    window: usize,
}

impl Default for Plan {
    fn default() -> Self {
        Plan {
            trials: 1000,
            seed: 2026,
            pre: 50,
            after: 20,
            len: 100,
            noise: 3.0,
            step: 5.0,
            recent: 10,
            window: 50,
        }
    }
}

/// A detector under test: the change points (index, rising?) it reports on a series, and
/// whether the CI rule fires on it.
#[derive(Debug, Clone, Copy)]
enum Detector {
    EDivisive(ChangePointSettings),
    MovingT(MovingWindowSettings),
}

impl Detector {
    fn name(&self) -> String {
        match self {
            Detector::EDivisive(s) => format!(
                "E-Divisive, strong p <= {}, window {}, min segment {}",
                s.p_strong, s.window, s.min_segment
            ),
            Detector::MovingT(s) => format!(
                "moving-window t-test, abs(t) > {}, {} back / {} forward",
                s.t_threshold, s.min_back, s.fore
            ),
        }
    }

    /// Change points as (index, rising): strong ones only for E-Divisive.
    fn changes(&self, values: &[f64]) -> Vec<(usize, bool)> {
        match self {
            Detector::EDivisive(s) => change_points(values, s)
                .expect("finite values, valid settings")
                .into_iter()
                .filter(|c| c.strength == Strength::Strong)
                .map(|c| (c.index, c.mean_after > c.mean_before))
                .collect(),
            Detector::MovingT(s) => moving_window_changes(values, s)
                .expect("finite values, valid settings")
                .into_iter()
                .map(|c| (c.index, c.t > 0.0))
                .collect(),
        }
    }

    /// Does the newest value start a regression (rising = worse)? For the moving-window
    /// test, which marks a change only once `fore` values follow it: a rising latest
    /// change first markable within the last `recent` values.
    fn alarm(&self, values: &[f64], recent: usize) -> bool {
        match self {
            Detector::EDivisive(s) => {
                let found = change_points(values, s).expect("valid");
                latest_regression(&found, values.len(), Better::Lower, recent).is_some()
            }
            Detector::MovingT(s) => self
                .changes(values)
                .last()
                .is_some_and(|&(i, up)| up && i + s.fore + recent >= values.len()),
        }
    }
}

/// `n` Gaussian values of sd `sd` around `level` (Box-Muller).
fn gaussian(rng: &mut Pcg64, n: usize, level: f64, sd: f64) -> Vec<f64> {
    (0..n)
        .map(|_| {
            let u: f64 = rng.gen_range(f64::EPSILON..1.0);
            let v: f64 = rng.gen();
            level + sd * (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
        })
        .collect()
}

/// Results for one detector.
#[derive(Debug, Default)]
struct Tally {
    /// Per trial: the first k at which the step was found (None: not by `after`).
    found_at: Vec<Option<usize>>,
    /// Per trial: the first k at which the CI rule fired.
    alarm_at: Vec<Option<usize>>,
    /// Stationary series with any change point, looking at the whole series.
    whole_false: usize,
    /// Stationary series on which the CI rule fired for some prefix.
    ci_false: usize,
}

fn detection(d: &Detector, plan: &Plan, tally: &mut Tally) {
    for trial in 0..plan.trials {
        let mut rng = Pcg64::seed_from_u64(plan.seed ^ (trial as u64).wrapping_mul(0x9E37));
        let mut series = gaussian(&mut rng, plan.pre, 100.0, plan.noise);
        series.extend(gaussian(
            &mut rng,
            plan.after,
            100.0 + plan.step,
            plan.noise,
        ));
        let (mut found, mut alarm) = (None, None);
        for k in 1..=plan.after {
            let prefix = &series[..plan.pre + k];
            if found.is_none()
                && d.changes(prefix)
                    .iter()
                    .any(|&(i, up)| up && i.abs_diff(plan.pre) <= 2)
            {
                found = Some(k);
            }
            if alarm.is_none() && d.alarm(prefix, plan.recent) {
                alarm = Some(k);
            }
            if found.is_some() && alarm.is_some() {
                break;
            }
        }
        tally.found_at.push(found);
        tally.alarm_at.push(alarm);
    }
}

fn false_alarms(d: &Detector, plan: &Plan, tally: &mut Tally) {
    for trial in 0..plan.trials {
        let seed = plan.seed.wrapping_add(1_000_003) ^ (trial as u64).wrapping_mul(0x9E37);
        let mut rng = Pcg64::seed_from_u64(seed);
        let series = gaussian(&mut rng, plan.len, 100.0, plan.noise);
        if !d.changes(&series).is_empty() {
            tally.whole_false += 1;
        }
        if (8..=plan.len).any(|n| d.alarm(&series[..n], plan.recent)) {
            tally.ci_false += 1;
        }
    }
}

/// `hits / n` in percent with its 95% Wilson interval.
fn rate(hits: usize, n: usize) -> String {
    let (h, n) = (hits as f64, n as f64);
    let p = h / n;
    let z = 1.96f64;
    let centre = (p + z * z / (2.0 * n)) / (1.0 + z * z / n);
    let half = z / (1.0 + z * z / n) * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt();
    format!(
        "{:.1}% ({:.1}-{:.1})",
        p * 100.0,
        (centre - half).max(0.0) * 100.0,
        (centre + half).min(1.0) * 100.0
    )
}

fn median_k(ks: &[Option<usize>]) -> String {
    let mut found: Vec<usize> = ks.iter().flatten().copied().collect();
    if found.len() * 2 <= ks.len() {
        return "-".into();
    }
    found.sort_unstable();
    // The median over all trials, counting misses as later than any hit.
    found[ks.len() / 2].to_string()
}

fn share(ks: &[Option<usize>], by: usize) -> String {
    rate(
        ks.iter().filter(|k| k.is_some_and(|k| k <= by)).count(),
        ks.len(),
    )
}

fn parse_args() -> Plan {
    let mut plan = Plan::default();
    let args: Vec<String> = std::env::args().skip(1).collect();
    for pair in args.chunks(2) {
        let value = pair
            .get(1)
            .unwrap_or_else(|| panic!("{} needs a value", pair[0]));
        let num = || -> f64 {
            value
                .parse()
                .unwrap_or_else(|_| panic!("{}: {value}", pair[0]))
        };
        match pair[0].as_str() {
            "--trials" => plan.trials = num() as usize,
            "--seed" => plan.seed = num() as u64,
            "--pre" => plan.pre = num() as usize,
            "--after" => plan.after = num() as usize,
            "--len" => plan.len = num() as usize,
            "--noise" => plan.noise = num(),
            "--step" => plan.step = num(),
            "--recent" => plan.recent = num() as usize,
            "--window" => plan.window = num() as usize,
            other => panic!("unknown flag {other}"),
        }
    }
    plan
}

fn detectors(plan: &Plan) -> Vec<Detector> {
    let ed = |p_strong: f64, min_segment: usize| {
        Detector::EDivisive(ChangePointSettings {
            p_strong,
            p_weak: p_strong.max(0.05),
            min_segment,
            window: plan.window,
            ..ChangePointSettings::default()
        })
    };
    vec![
        ed(0.01, 3),
        ed(0.001, 3),
        ed(0.0003, 3),
        ed(0.001, 2),
        ed(0.0001, 3),
        ed(0.00001, 3),
        Detector::MovingT(MovingWindowSettings::default()),
        Detector::MovingT(MovingWindowSettings {
            t_threshold: 4.0,
            ..MovingWindowSettings::default()
        }),
    ]
}

fn main() {
    let plan = parse_args();
    println!(
        "{} trials, seed {}; step +{}% after {} points, noise sd {}%; stationary series \
         of {} points; CI rule: latest strong change point rising, within the last {}\n",
        plan.trials, plan.seed, plan.step, plan.pre, plan.noise, plan.len, plan.recent
    );
    println!(
        "| detector | step found by k <= 5 | by k <= {0} | median k | CI alarm by k <= 5 | \
         CI alarm by k <= {0} | false alarms, whole series | false alarms, CI |",
        plan.after
    );
    println!("|---|---|---|---|---|---|---|---|");
    for d in detectors(&plan) {
        let mut tally = Tally::default();
        detection(&d, &plan, &mut tally);
        false_alarms(&d, &plan, &mut tally);
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            d.name(),
            share(&tally.found_at, 5),
            share(&tally.found_at, plan.after),
            median_k(&tally.found_at),
            share(&tally.alarm_at, 5),
            share(&tally.alarm_at, plan.after),
            rate(tally.whole_false, plan.trials),
            rate(tally.ci_false, plan.trials),
        );
    }
}
