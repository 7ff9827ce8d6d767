//! Racing replayed on the samples of a real exhaustive study.
//!
//! An exhaustive study ran every variant every round, so it holds every sample a race on
//! the same machine could have drawn. This feeds those samples, round by round, to the real
//! scheduler (`run_race`) twice: racing, which draws only the runs its rules ask for, and
//! exhaustive; then prints the runs each used and both recommended sets. A decision of the
//! race at round `r` sees exactly the samples of rounds `<= r`, as it would have live; what
//! a replay cannot reproduce is the order of runs inside a round (shuffled live) and any
//! effect racing's shorter rounds would have had on the machine.
//!
//! ```text
//! sqlite3 -csv exhaustive.db "select sub.name, json_extract(s.labels,'$.round'), s.value
//!   from samples s join runs r on r.id = s.run_id join subjects sub on sub.id = r.subject_id" > samples.csv
//! cargo run --release -p dyno-tune --example racing_replay -- samples.csv [higher|lower [MIN_ROUNDS [FUTILITY [paired|unpaired [MAX_ROUNDS]]]]]
//! ```
//!
//! The CSV is `variant label, round, value` for one metric; MAX_ROUNDS defaults to the
//! rounds in the file, the rest to the study defaults.

use dyno_model::{Subject, SubjectKind};
use dyno_tune::measure::{Executor, Job, Outcome};
use dyno_tune::race::{recommended, RaceConfig};
use dyno_tune::record::SubjectKey;
use dyno_tune::{run_race, Benchmark, Contestant, Extract, Invocation, MemoryRecorder, Mode};
use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

/// Answers each job with the stored sample of its variant and round.
struct Recorded {
    /// `[variant][round] = value`.
    values: Vec<BTreeMap<u32, f64>>,
    direction: &'static str,
}

impl Executor for Recorded {
    fn run(&mut self, job: &Job) -> Outcome {
        let Some(&value) = self.values[job.subject].get(&job.round) else {
            return Outcome {
                exit_code: Some(1),
                stderr: format!("no stored sample for round {}", job.round),
                ..Outcome::default()
            };
        };
        let result = serde_json::json!({
            "metric": "replayed", "unit": "/s", "direction": self.direction, "score": value,
        });
        Outcome {
            exit_code: Some(0),
            stdout: serde_json::json!({"schema": "dyno.machine/1", "results": [result]})
                .to_string(),
            ..Outcome::default()
        }
    }
}

/// Positional argument `i` parsed as `T` and accepted by `ok`; `None` when it is absent.
fn arg<T: std::str::FromStr>(
    args: &[String],
    i: usize,
    name: &str,
    ok: impl Fn(&T) -> bool,
    expected: &str,
) -> Result<Option<T>, ExitCode> {
    let Some(text) = args.get(i) else {
        return Ok(None);
    };
    match text.parse::<T>() {
        Ok(v) if ok(&v) => Ok(Some(v)),
        _ => Err(fail(format!("{name}: `{text}` is not {expected}"))),
    }
}

fn fail(message: String) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        return fail("usage: racing_replay SAMPLES.csv [higher|lower [MIN_ROUNDS [FUTILITY [paired|unpaired [MAX_ROUNDS]]]]]".into());
    };
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => return fail(format!("{path}: {e}")),
    };
    let mut by_label: BTreeMap<String, BTreeMap<u32, f64>> = BTreeMap::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let fields: Vec<&str> = line.rsplitn(3, ',').collect();
        let parsed = match fields.as_slice() {
            [value, round, label] => value
                .trim()
                .parse::<f64>()
                .ok()
                .zip(round.trim().parse::<u32>().ok())
                .map(|(v, r)| (label.trim().trim_matches('"').to_string(), r, v)),
            _ => None,
        };
        let Some((label, round, value)) = parsed else {
            return fail(format!("{path}:{}: expected `label,round,value`", i + 1));
        };
        by_label.entry(label).or_default().insert(round, value);
    }
    let direction = match args.get(1).map(String::as_str) {
        None | Some("higher") => "higher_is_better",
        Some("lower") => "lower_is_better",
        Some(other) => return fail(format!("direction must be higher or lower, not `{other}`")),
    };
    let defaults = dyno_tune::RunSettings::default();
    let rounds_in_file = by_label.values().map(|v| v.len()).min().unwrap_or(0) as u32;
    let min_rounds = match arg(
        &args,
        2,
        "MIN_ROUNDS",
        |v: &u32| *v >= 2,
        "a whole number, 2 or more",
    ) {
        Ok(v) => v.unwrap_or(defaults.min_rounds),
        Err(e) => return e,
    };
    let futility = match arg(
        &args,
        3,
        "FUTILITY",
        |v: &f64| (0.0..1.0).contains(v),
        "a probability in [0, 1)",
    ) {
        Ok(v) => v.unwrap_or(defaults.futility),
        Err(e) => return e,
    };
    let paired = match args.get(4).map(String::as_str) {
        None | Some("paired") => true,
        Some("unpaired") => false,
        Some(other) => return fail(format!("TEST must be paired or unpaired, not `{other}`")),
    };
    let max_rounds = match arg(
        &args,
        5,
        "MAX_ROUNDS",
        |v: &u32| *v >= 1,
        "a whole number, 1 or more",
    ) {
        Ok(v) => v.unwrap_or(rounds_in_file),
        Err(e) => return e,
    };
    let labels: Vec<String> = by_label.keys().cloned().collect();
    let values: Vec<BTreeMap<u32, f64>> = by_label.into_values().collect();
    let contestants: Vec<Contestant> = labels
        .iter()
        .map(|l| Contestant {
            key: SubjectKey {
                key: l.clone(),
                subject: Subject::new(SubjectKind::BuildVariant, l.clone()),
            },
            label: l.clone(),
            baseline: false,
            binary: "/replayed".into(),
        })
        .collect();
    let bench = vec![Benchmark {
        name: "replayed".into(),
        invocation: Invocation::Args(vec![]),
        extract: Extract::DynoJson { metrics: None },
        timeout_s: 60.0,
    }];
    let config = RaceConfig {
        max_rounds: max_rounds.min(rounds_in_file),
        min_rounds,
        time_budget_s: None,
        alpha: defaults.alpha,
        min_effect: defaults.min_effect,
        seed: defaults.seed,
        mode: Mode::Racing,
        resamples: 1000,
        against_front: true,
        settle_variants: true,
        paired,
        futility,
    };
    println!(
        "{} variants, {} rounds; {} tests, min_rounds {min_rounds}, futility {futility}, min_effect {}",
        labels.len(),
        config.max_rounds,
        if paired { "paired" } else { "unpaired" },
        config.min_effect
    );
    let mut sets = Vec::new();
    for mode in [Mode::Racing, Mode::Exhaustive] {
        let mut exec = Recorded {
            values: values.clone(),
            direction,
        };
        let mut rec = MemoryRecorder::default();
        let cfg = RaceConfig { mode, ..config };
        let out = match run_race(
            &contestants,
            &bench,
            cfg,
            &mut exec,
            &mut rec,
            &AtomicBool::new(false),
            &mut |_| {},
        ) {
            Ok(o) => o,
            Err(e) => return fail(e.to_string()),
        };
        let set = match recommended(&out.replay, &out.records) {
            Ok(s) => s,
            Err(e) => return fail(e.to_string()),
        };
        println!(
            "\n{mode:?}: {} runs, stopped because {}",
            out.jobs_run,
            out.stop.describe()
        );
        for (i, label) in labels.iter().enumerate() {
            let how = match out.replay.exits.get(&i) {
                Some(e) => format!("{e:?}"),
                None if set.contains(&i) => "recommended".into(),
                None => "not recommended".into(),
            };
            println!("  {label:44} {:>3} runs  {how}", out.records[i].len());
        }
        sets.push((out.jobs_run, set));
    }
    let (racing, exhaustive) = (&sets[0], &sets[1]);
    println!(
        "\nracing / exhaustive runs: {} / {} = {:.3}; same recommended set: {}",
        racing.0,
        exhaustive.0,
        racing.0 as f64 / exhaustive.0 as f64,
        racing.1 == exhaustive.1
    );
    ExitCode::SUCCESS
}
