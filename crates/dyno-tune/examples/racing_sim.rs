//! Racing against exhaustive measurement on synthetic variants with known effects.
//!
//! Each scenario is a study of variants whose true medians are 0%, 1%, 3% or 10% worse
//! than the best on two metrics (a throughput and a latency), measured under 1%, 2% or 3%
//! multiplicative noise. For every seed the same study is run twice with the real
//! scheduler (`run_race`, a mock executor, records in memory): once racing, once
//! exhaustive (every variant every round). Printed per scenario: benchmark runs used by
//! each, their ratio, and in how many seeds the two recommended sets agree.
//!
//! ```text
//! cargo run --release -p dyno-tune --example racing_sim [-- SEEDS [MAX_ROUNDS [MIN_EFFECT]]]
//! ```

use dyno_model::{Subject, SubjectKind};
use dyno_tune::measure::{SyntheticExecutor, SyntheticMetric};
use dyno_tune::race::{recommended, RaceConfig};
use dyno_tune::record::SubjectKey;
use dyno_tune::{run_race, Benchmark, Contestant, Extract, Invocation, MemoryRecorder, Mode};
use std::sync::atomic::AtomicBool;

fn metrics() -> Vec<SyntheticMetric> {
    vec![
        SyntheticMetric {
            name: "Blake2256".into(),
            higher_is_better: true,
            base: 1.0e9,
        },
        SyntheticMetric {
            name: "remark".into(),
            higher_is_better: false,
            base: 1.5e6,
        },
    ]
}

fn contestants(n: usize) -> Vec<Contestant> {
    (0..n)
        .map(|i| Contestant {
            key: SubjectKey {
                key: format!("v{i}"),
                subject: Subject::new(SubjectKind::BuildVariant, format!("v{i}")),
            },
            label: format!("v{i}"),
            baseline: false,
            binary: format!("/v{i}").into(),
        })
        .collect()
}

struct Result {
    runs: usize,
    recommended: Vec<usize>,
}

fn race(slowdown: &[f64], noise: f64, mode: Mode, config: RaceConfig, seed: u64) -> Result {
    let n = slowdown.len();
    let mut exec = SyntheticExecutor::new(metrics(), slowdown.to_vec(), vec![noise; n], seed);
    let mut rec = MemoryRecorder::default();
    let bench = vec![Benchmark {
        name: "machine".into(),
        invocation: Invocation::Args(vec![]),
        extract: Extract::DynoJson { metrics: None },
    }];
    let stop = AtomicBool::new(false);
    let cfg = RaceConfig {
        mode,
        seed,
        ..config
    };
    let out = run_race(
        &contestants(n),
        &bench,
        cfg,
        &mut exec,
        &mut rec,
        &stop,
        &mut |_| {},
    )
    .expect("synthetic race");
    Result {
        runs: out.jobs_run,
        recommended: recommended(&out.replay, &out.records).expect("decision"),
    }
}

fn main() {
    let seeds: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let arg = |i: usize| std::env::args().nth(i);
    let max_rounds: u32 = arg(2).and_then(|s| s.parse().ok()).unwrap_or(20);
    let min_effect: f64 = arg(3).and_then(|s| s.parse().ok()).unwrap_or(0.02);
    let config = RaceConfig {
        max_rounds,
        min_rounds: 5,
        time_budget_s: None,
        alpha: 0.05,
        min_effect,
        seed: 0,
        mode: Mode::Racing,
        resamples: 500,
        against_front: true,
        settle_recommendation: true,
    };
    // The shape of the polkadot study: a few winners, many hopeless builds.
    let mut study = vec![0.0; 2];
    study.extend([0.01; 4]);
    study.extend([0.03; 6]);
    study.extend([0.10; 12]);
    let scenarios: Vec<(&str, Vec<f64>)> = vec![
        ("4 variants: 0%, 1%, 3%, 10%", vec![0.0, 0.01, 0.03, 0.10]),
        ("24 variants: 2x0%, 4x1%, 6x3%, 12x10%", study),
    ];
    println!(
        "max_rounds {}, min_rounds {}, alpha {}, min_effect {}, {} seeds per row",
        config.max_rounds, config.min_rounds, config.alpha, config.min_effect, seeds
    );
    println!("| elimination rule | scenario | noise | runs racing | runs exhaustive | racing/exhaustive | same recommended set | both keep every 0%, drop every 10% |");
    println!("|---|---|---|---:|---:|---:|---:|---:|");
    let rules = [
        ("front, stop when the recommendation settles", true, true),
        ("front, stop when the order settles", true, false),
        ("all pairs, stop when the order settles", false, false),
    ];
    for (rule, against_front, settle_recommendation) in rules {
        let config = RaceConfig {
            against_front,
            settle_recommendation,
            ..config
        };
        for (name, slowdown) in &scenarios {
            for noise in [0.01, 0.02, 0.03] {
                let (mut racing, mut exhaustive, mut agree, mut clear) = (0, 0, 0, 0);
                // The classes no sound procedure may get wrong: every 0% variant recommended,
                // no 10% variant recommended.
                let sound = |set: &[usize]| {
                    slowdown.iter().enumerate().all(|(i, &d)| {
                        (d != 0.0 || set.contains(&i)) && (d < 0.10 || !set.contains(&i))
                    })
                };
                for seed in 0..seeds {
                    let r = race(slowdown, noise, Mode::Racing, config, seed);
                    let e = race(slowdown, noise, Mode::Exhaustive, config, seed);
                    racing += r.runs;
                    exhaustive += e.runs;
                    agree += usize::from(r.recommended == e.recommended);
                    clear += usize::from(sound(&r.recommended) && sound(&e.recommended));
                    if std::env::var_os("RACING_SIM_VERBOSE").is_some() {
                        eprintln!(
                        "{name} noise {noise} seed {seed}: racing {:?} ({} runs), exhaustive {:?}",
                        r.recommended, r.runs, e.recommended
                    );
                    }
                }
                println!(
                    "| {rule} | {name} | {:.0}% | {:.1} | {:.1} | {:.2} | {agree}/{seeds} | {clear}/{seeds} |",
                    noise * 100.0,
                    racing as f64 / seeds as f64,
                    exhaustive as f64 / seeds as f64,
                    racing as f64 / exhaustive as f64,
                );
            }
        }
    }
}
