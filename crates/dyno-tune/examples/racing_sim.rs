//! Racing against exhaustive measurement on synthetic variants with known effects.
//!
//! Each scenario is a study of variants whose true medians are 0%, 1%, 3% or 10% worse
//! than the best on two metrics (a throughput and a latency), measured under 1%, 2% or 3%
//! multiplicative noise (independent per run, or partly shared per round). For every seed
//! the same study is run twice with the real scheduler (`run_race`, a mock executor,
//! records in memory): once racing, once exhaustive (every variant every round). Printed
//! per scenario: benchmark runs used by each, their ratio, in how many seeds the two
//! recommended sets agree, in how many both get the clear classes right (every 0% variant
//! in, every 10% variant out), and whether the goal (same set in at least 9 seeds of 10
//! with at most a quarter of the runs) is met.
//!
//! ```text
//! cargo run --release -p dyno-tune --example racing_sim [-- SEEDS [MAX_ROUNDS [MIN_EFFECT [COMMON [TEST [MIN_ROUNDS [FUTILITY]]]]]]]
//! ```
//!
//! Defaults: 10 seeds, 40 rounds, min_effect 0.05, COMMON 0, TEST `paired`, MIN_ROUNDS
//! and FUTILITY the study defaults (3, 0.1). COMMON is the share of the noise variance that
//! is common to every run of a round (machine drift between rounds): at 0.5 and 2% noise,
//! each run has 1.41% noise of its own and 1.41% shared with its round. TEST `unpaired` is
//! the rank-test rule (the shared part is simply more noise to it); `paired` judges
//! per-round ratios, where the shared part cancels.

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
    /// Per variant: rounds measured and how it left the race, for `RACING_SIM_VERBOSE`.
    story: Vec<String>,
}

/// Total relative noise `noise`, of which the fraction `common` of the variance is shared by
/// every run of a round.
fn race(
    slowdown: &[f64],
    (noise, common): (f64, f64),
    mode: Mode,
    config: RaceConfig,
    seed: u64,
) -> Result {
    let n = slowdown.len();
    let own = noise * (1.0 - common).sqrt();
    let mut exec = SyntheticExecutor::new(metrics(), slowdown.to_vec(), vec![own; n], seed);
    exec.common_noise = noise * common.sqrt();
    let mut rec = MemoryRecorder::default();
    let bench = vec![Benchmark {
        name: "machine".into(),
        invocation: Invocation::Args(vec![]),
        extract: Extract::DynoJson { metrics: None },
        timeout_s: 60.0,
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
    let story = (0..n)
        .map(|i| {
            let exit = match out.replay.exits.get(&i) {
                Some(e) => format!("{e:?}"),
                None => match out.replay.settled.get(&i) {
                    Some(r) => format!("settled@{r}"),
                    None => "running".into(),
                },
            };
            format!("v{i}:{}:{exit}", out.records[i].len())
        })
        .collect();
    Result {
        story,
        runs: out.jobs_run,
        recommended: recommended(&out.replay, &out.records).expect("decision"),
    }
}

/// The shape of the polkadot study: a few winners, many hopeless builds.
fn study(variants: usize) -> Vec<f64> {
    match variants {
        4 => vec![0.0, 0.01, 0.03, 0.10],
        _ => {
            let mut v = vec![0.0; 2];
            v.extend([0.01; 4]);
            v.extend([0.03; 6]);
            v.extend([0.10; 12]);
            v
        }
    }
}

fn main() {
    let arg = |i: usize| std::env::args().nth(i);
    let seeds: u64 = arg(1).and_then(|s| s.parse().ok()).unwrap_or(10);
    let max_rounds: u32 = arg(2).and_then(|s| s.parse().ok()).unwrap_or(40);
    let min_effect: f64 = arg(3).and_then(|s| s.parse().ok()).unwrap_or(0.05);
    let common: f64 = arg(4).and_then(|s| s.parse().ok()).unwrap_or(0.0);
    let defaults = dyno_tune::RunSettings::default();
    let paired = match arg(5).as_deref() {
        None | Some("paired") => true,
        Some("unpaired") => false,
        Some(other) => {
            eprintln!("error: TEST must be `paired` or `unpaired`, not `{other}`");
            std::process::exit(2);
        }
    };
    let min_rounds: u32 = arg(6)
        .and_then(|s| s.parse().ok())
        .unwrap_or(defaults.min_rounds);
    let futility: f64 = arg(7)
        .and_then(|s| s.parse().ok())
        .unwrap_or(defaults.futility);
    let model = |noise: f64| {
        if common == 0.0 {
            format!("{:.0}% iid", noise * 100.0)
        } else {
            format!(
                "{:.0}%, {:.0}% of variance common per round",
                noise * 100.0,
                common * 100.0
            )
        }
    };
    let config = RaceConfig {
        max_rounds,
        min_rounds,
        time_budget_s: None,
        alpha: 0.05,
        min_effect,
        seed: 0,
        mode: Mode::Racing,
        resamples: 500,
        against_front: true,
        settle_variants: true,
        paired,
        futility,
    };
    println!(
        "{} tests, min_rounds {}, futility {}, alpha {}, min_effect {}, {} seeds per row; goal: same set in >= 90% of seeds with racing/exhaustive <= 0.25",
        if paired { "paired" } else { "unpaired" },
        config.min_rounds, config.futility, config.alpha, config.min_effect, seeds
    );
    println!("| max rounds | variants | noise | runs racing | runs exhaustive | racing/exhaustive | same recommended set | both keep every 0%, drop every 10% | goal met |");
    println!("|---:|---:|---|---:|---:|---:|---:|---:|---|");
    for variants in [4, 24] {
        let slowdown = study(variants);
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
                let r = race(&slowdown, (noise, common), Mode::Racing, config, seed);
                let e = race(&slowdown, (noise, common), Mode::Exhaustive, config, seed);
                racing += r.runs;
                exhaustive += e.runs;
                agree += usize::from(r.recommended == e.recommended);
                clear += usize::from(sound(&r.recommended) && sound(&e.recommended));
                if std::env::var_os("RACING_SIM_VERBOSE").is_some() {
                    eprintln!(
                        "{variants} variants noise {noise} seed {seed}: racing {:?} ({} runs), exhaustive {:?}\n  {}",
                        r.recommended, r.runs, e.recommended, r.story.join(" ")
                    );
                }
            }
            let ratio = racing as f64 / exhaustive as f64;
            let met = ratio <= 0.25 && agree as u64 * 10 >= seeds * 9;
            println!(
                "| {max_rounds} | {variants} | {} | {:.1} | {:.1} | {ratio:.3} | {agree}/{seeds} | {clear}/{seeds} | {} |",
                model(noise),
                racing as f64 / seeds as f64,
                exhaustive as f64 / seeds as f64,
                if met { "yes" } else { "no" },
            );
        }
    }
}
