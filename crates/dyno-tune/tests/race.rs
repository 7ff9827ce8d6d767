//! The racing scheduler on synthetic samples (mock executor), resume after an
//! interruption (temp store), and the report on a stored study.

use dyno_model::{Host, Subject, SubjectKind};
use dyno_store::Store;
use dyno_tune::measure::{Job, Outcome, SyntheticExecutor, SyntheticMetric};
use dyno_tune::race::{Exit, RaceConfig};
use dyno_tune::record::{study_runs, SubjectKey};
use dyno_tune::report::{build_report, ReportInput};
use dyno_tune::{
    run_race, Benchmark, Contestant, Executor, Extract, Invocation, MemoryRecorder, Mode, Recorder,
    StopReason, StoreRecorder,
};
use std::sync::atomic::{AtomicBool, Ordering};

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

fn contestants(n: usize, baselines: usize) -> Vec<Contestant> {
    (0..n + baselines)
        .map(|i| {
            let baseline = i >= n;
            let label = if baseline {
                format!("official{i}")
            } else {
                format!("v{i}")
            };
            Contestant {
                key: SubjectKey {
                    key: format!("key-{i}"),
                    subject: Subject::new(
                        if baseline {
                            SubjectKind::Release
                        } else {
                            SubjectKind::BuildVariant
                        },
                        label.clone(),
                    ),
                },
                label,
                baseline,
                binary: format!("/bin/v{i}").into(),
            }
        })
        .collect()
}

fn bench() -> Vec<Benchmark> {
    vec![Benchmark {
        name: "machine".into(),
        invocation: Invocation::Args(vec!["machine".into()]),
        extract: Extract::DynoJson { metrics: None },
        timeout_s: 60.0,
    }]
}

fn config(mode: Mode) -> RaceConfig {
    RaceConfig {
        max_rounds: 30,
        min_rounds: 5,
        time_budget_s: None,
        alpha: 0.05,
        min_effect: 0.01,
        seed: 3,
        mode,
        resamples: 500,
        against_front: true,
        settle_variants: true,
        paired: true,
        futility: 0.1,
    }
}

#[test]
fn racing_eliminates_the_slow_and_keeps_the_equal() {
    // v0 and v1 equal, v2 3% slower, v3 and v4 10% slower, 1% noise.
    let slow = vec![0.0, 0.0, 0.03, 0.10, 0.10];
    let mut exec = SyntheticExecutor::new(metrics(), slow, vec![0.01; 5], 11);
    let mut rec = MemoryRecorder::default();
    let stop = AtomicBool::new(false);
    let c = contestants(5, 0);
    let out = run_race(
        &c,
        &bench(),
        config(Mode::Racing),
        &mut exec,
        &mut rec,
        &stop,
        &mut |_| {},
    )
    .unwrap();
    for v in [3, 4] {
        assert!(
            matches!(out.replay.exits.get(&v), Some(Exit::Eliminated { .. })),
            "{v}: {:?}",
            out.replay.exits
        );
    }
    assert!(!out.replay.exits.contains_key(&0) && !out.replay.exits.contains_key(&1));
    // Eliminated variants stop running: they have fewer rounds than the survivors.
    let rounds = |s: usize| out.records[s].len();
    assert!(rounds(3) < rounds(0) && rounds(4) < rounds(0));
    assert!(rounds(3) >= 5, "never before min_rounds");
    assert_eq!(out.jobs_run, exec.runs);
    assert_eq!(
        out.jobs_run,
        out.records.iter().map(Vec::len).sum::<usize>()
    );
}

#[test]
fn exhaustive_runs_everyone_every_round() {
    let mut exec = SyntheticExecutor::new(metrics(), vec![0.0, 0.10, 0.2], vec![0.01; 3], 1);
    let mut rec = MemoryRecorder::default();
    let stop = AtomicBool::new(false);
    let cfg = RaceConfig {
        max_rounds: 12,
        ..config(Mode::Exhaustive)
    };
    let out = run_race(
        &contestants(2, 1),
        &bench(),
        cfg,
        &mut exec,
        &mut rec,
        &stop,
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(out.stop, StopReason::MaxRounds);
    assert!(out.records.iter().all(|r| r.len() == 12));
    assert!(out.replay.exits.is_empty());
    // Rounds are interleaved: every subject's k-th job is round k.
    assert!(out
        .records
        .iter()
        .all(|r| r.iter().enumerate().all(|(i, j)| j.round == i as u32 + 1)));
}

#[test]
fn three_failures_in_a_row_retire_a_variant() {
    let mut exec = SyntheticExecutor::new(metrics(), vec![0.0, 0.0, 0.0], vec![0.01; 3], 1);
    exec.failing = vec![1];
    let mut rec = MemoryRecorder::default();
    let stop = AtomicBool::new(false);
    let out = run_race(
        &contestants(3, 0),
        &bench(),
        config(Mode::Exhaustive),
        &mut exec,
        &mut rec,
        &stop,
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(out.replay.exits.get(&1), Some(&Exit::Retired { round: 3 }));
    assert_eq!(out.records[1].len(), 3);
    assert!(out.records[1].iter().all(|j| j.failed()));
    assert_eq!(out.records[0].len(), 30);
}

/// Raises the stop flag after `after` jobs; the job running at that moment is lost, as a
/// benchmark interrupted by Ctrl-C would be.
struct Interrupting<'a> {
    inner: SyntheticExecutor,
    after: usize,
    stop: &'a AtomicBool,
}

impl Executor for Interrupting<'_> {
    fn run(&mut self, job: &Job) -> Outcome {
        let out = self.inner.run(job);
        if self.inner.runs >= self.after {
            self.stop.store(true, Ordering::SeqCst);
        }
        out
    }
}

fn store_recorder(store: &mut Store) -> StoreRecorder<'_> {
    recorder_on(store, "test")
}

fn recorder_on<'a>(store: &'a mut Store, hostname: &str) -> StoreRecorder<'a> {
    StoreRecorder::new(
        store,
        "study-key",
        Host {
            hostname: hostname.into(),
            ..Host::default()
        },
        vec!["dyno".into(), "tune".into(), "run".into()],
        "0.1.0",
        serde_json::json!({ "mode": "racing" }),
    )
}

#[test]
fn an_interrupted_study_resumes_without_repeating_work() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.db");
    let c = contestants(4, 1);
    let slow = vec![0.0, 0.01, 0.03, 0.10, 0.0];
    let stop = AtomicBool::new(false);
    // Session 1: interrupted in the middle of round 3 (5 subjects a round: job 13).
    let first = {
        let mut store = Store::open(&path).unwrap();
        let mut rec = store_recorder(&mut store);
        let mut exec = Interrupting {
            inner: SyntheticExecutor::new(metrics(), slow.clone(), vec![0.01; 5], 1),
            after: 13,
            stop: &stop,
        };
        run_race(
            &c,
            &bench(),
            config(Mode::Racing),
            &mut exec,
            &mut rec,
            &stop,
            &mut |_| {},
        )
        .unwrap()
    };
    assert_eq!(first.stop, StopReason::Interrupted);
    assert_eq!(
        first.jobs_run, 12,
        "the interrupted 13th job is not recorded"
    );
    assert_eq!(first.replay.rounds_done, 2);
    // Session 2: resumes from the store.
    stop.store(false, Ordering::SeqCst);
    let mut store = Store::open(&path).unwrap();
    let runs_before = study_runs(&store, "study-key").unwrap().len();
    assert_eq!(runs_before, 5);
    let second = {
        let mut rec = store_recorder(&mut store);
        let mut exec = SyntheticExecutor::new(metrics(), slow, vec![0.01; 5], 2);
        let mut first_round = None;
        let out = run_race(
            &c,
            &bench(),
            config(Mode::Racing),
            &mut exec,
            &mut rec,
            &stop,
            &mut |e| {
                first_round.get_or_insert(e.round);
            },
        )
        .unwrap();
        assert_eq!(first_round, Some(3), "resumes in the interrupted round");
        out
    };
    assert_ne!(second.stop, StopReason::Interrupted);
    // Same runs reused, no (round, benchmark) measured twice, and everything is stored.
    assert_eq!(study_runs(&store, "study-key").unwrap().len(), runs_before);
    let mut rec = store_recorder(&mut store);
    let keys: Vec<SubjectKey> = c.iter().map(|c| c.key.clone()).collect();
    let stored = rec.load(&keys).unwrap();
    for (s, jobs) in stored.iter().enumerate() {
        let mut rounds: Vec<u32> = jobs.iter().map(|j| j.round).collect();
        let n = rounds.len();
        rounds.dedup();
        assert_eq!(rounds.len(), n, "subject {s} has a round twice");
        assert_eq!(rounds, (1..=n as u32).collect::<Vec<_>>());
    }
    let total: usize = stored.iter().map(Vec::len).sum();
    assert_eq!(total, first.jobs_run + second.jobs_run);
    assert_eq!(stored, second.records);
}

#[test]
fn report_on_a_stored_study() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("r.db")).unwrap();
    let c = contestants(3, 1);
    let stop = AtomicBool::new(false);
    let out = {
        let mut rec = store_recorder(&mut store);
        let mut exec =
            SyntheticExecutor::new(metrics(), vec![0.0, 0.10, 0.15, 0.05], vec![0.005; 4], 5);
        let cfg = RaceConfig {
            max_rounds: 10,
            ..config(Mode::Exhaustive)
        };
        run_race(&c, &bench(), cfg, &mut exec, &mut rec, &stop, &mut |_| {}).unwrap()
    };
    let mut rec = store_recorder(&mut store);
    let keys: Vec<SubjectKey> = c.iter().map(|c| c.key.clone()).collect();
    let records = rec.load(&keys).unwrap();
    let variants: Vec<Option<dyno_tune::Variant>> = (0..4)
        .map(|i| {
            (i < 3).then(|| {
                dyno_tune::Variant::new(
                    dyno_tune::Settings {
                        toolchain: Some("stable".into()),
                        target_cpu: Some(dyno_tune::profile::TargetCpu::Native),
                        opt_level: Some(dyno_tune::profile::OptLevel::Level(3)),
                        lto: Some(dyno_tune::profile::Lto::Fat),
                        codegen_units: Some(i as u32 + 1),
                        panic: None,
                        rustflags: None,
                        pgo: None,
                    },
                    "production",
                )
            })
        })
        .collect();
    let report = build_report(&ReportInput {
        title: "test".into(),
        contestants: &c,
        variants: &variants,
        builds: &[None, None, None, None],
        failed_builds: &[],
        records: &records,
        replay: &out.replay,
        profile: "production",
        alpha: 0.05,
        min_effect: 0.01,
        bin: "node",
        cpu: &[None, None, None, None],
    })
    .unwrap();
    assert_eq!(report.reference, Some(3), "the baseline is the reference");
    assert_eq!(report.recommended, vec![0]);
    assert_eq!(report.pareto, vec![0]);
    let blake = &report.metrics[0];
    assert_eq!(blake.metric.name, "Blake2256");
    let order: Vec<usize> = blake.rows.iter().map(|r| r.subject).collect();
    assert_eq!(order, vec![0, 3, 1, 2], "best median first");
    // v0 is ~5% faster than the baseline (which is 5% slow): significant, marked.
    let v0 = &blake.rows[0];
    assert!((v0.change.unwrap() - 0.05).abs() < 0.01, "{v0:?}");
    assert_eq!(v0.verdict, Some(dyno_stats::Verdict::Improvement));
    let tables = report.metric_tables();
    let md = dyno_report::TableFormat::Markdown.render(&tables[0]);
    assert!(md.contains("vs official3"), "{md}");
    assert!(md.contains(" *"), "significance mark: {md}");
    let text = report.summary_text();
    assert!(text.contains("[profile.production]\ninherits = \"release\"\nopt-level = 3\nlto = \"fat\"\ncodegen-units = 1\n"), "{text}");
    assert!(
        text.contains("RUSTFLAGS=\"-C target-cpu=native\""),
        "{text}"
    );
    assert!(text.contains("may crash"), "native warning: {text}");
    let html = report.html("test");
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.matches("<svg").count() >= 2, "one box plot per metric");
    assert!(html.contains("official3 median"), "baseline line");
    assert!(
        html.contains("codegen-units = 1"),
        "the snippet, line by line"
    );
}

#[test]
fn the_time_budget_stops_new_rounds() {
    // 3 subjects x 1 s per job: 3 s a round; a 10 s budget allows 4 rounds (9 s < 10 s
    // after 3 rounds, so a 4th starts; 12 s after it).
    let mut exec = SyntheticExecutor::new(metrics(), vec![0.0, 0.0, 0.0], vec![0.01; 3], 1);
    let mut rec = MemoryRecorder::default();
    let stop = AtomicBool::new(false);
    let cfg = RaceConfig {
        time_budget_s: Some(10.0),
        ..config(Mode::Exhaustive)
    };
    let out = run_race(
        &contestants(3, 0),
        &bench(),
        cfg,
        &mut exec,
        &mut rec,
        &stop,
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(out.stop, StopReason::TimeBudget);
    assert_eq!(out.replay.rounds_done, 4);
    assert_eq!(out.jobs_run, 12);
}

#[test]
fn failed_and_unreadable_runs_are_recorded_with_their_tail() {
    use dyno_tune::race::to_record;
    use dyno_tune::JobResult;
    let extract = Extract::DynoJson { metrics: None };
    let crashed = Outcome {
        exit_code: Some(101),
        stdout: "partial\n".into(),
        stderr: "thread 'main' panicked at src/main.rs:3:5\n".into(),
        wall_time_s: 0.1,
        timed_out: false,
    };
    let r = to_record(&crashed, &extract, 4, "machine");
    assert_eq!((r.round, r.benchmark.as_str()), (4, "machine"));
    match &r.result {
        JobResult::Failed { error, tail } => {
            assert_eq!(error, "exit status 101");
            assert!(
                tail.contains("partial") && tail.contains("panicked"),
                "{tail}"
            );
        }
        other => panic!("{other:?}"),
    }
    let hung = Outcome {
        exit_code: None,
        stdout: "syncing\n".into(),
        wall_time_s: 90.2,
        timed_out: true,
        ..Outcome::default()
    };
    match to_record(&hung, &extract, 2, "machine").result {
        JobResult::Failed { error, tail } => {
            assert_eq!(error, "timed out: still running after 90 s");
            assert!(tail.contains("syncing"), "{tail}");
        }
        other => panic!("{other:?}"),
    }
    let garbage = Outcome {
        exit_code: Some(0),
        stdout: "Usage: node [OPTIONS]\n".into(),
        ..Outcome::default()
    };
    match to_record(&garbage, &extract, 1, "machine").result {
        JobResult::Failed { error, tail } => {
            assert!(error.starts_with("nothing to extract"), "{error}");
            assert!(tail.contains("Usage: node"), "{tail}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn settled_variants_sit_out_and_the_race_stops_when_all_are() {
    // 0%, 1% and 3% apart (inside a 5% min_effect) and one 10% variant, plus a baseline,
    // under 1% noise: the three close ones are all recommended whatever their order, so
    // racing stops sampling them once no 5% gain between them is possible.
    let slow = vec![0.0, 0.01, 0.03, 0.10, 0.0];
    let mut exec = SyntheticExecutor::new(metrics(), slow.clone(), vec![0.01; 5], 5);
    let mut rec = MemoryRecorder::default();
    let stop = AtomicBool::new(false);
    let cfg = RaceConfig {
        max_rounds: 40,
        min_effect: 0.05,
        ..config(Mode::Racing)
    };
    let c = contestants(4, 1);
    let out = run_race(&c, &bench(), cfg, &mut exec, &mut rec, &stop, &mut |_| {}).unwrap();
    assert_eq!(out.stop, StopReason::Settled);
    assert!(matches!(
        out.replay.exits.get(&3),
        Some(Exit::Eliminated { .. })
    ));
    assert_eq!(
        out.replay.settled.keys().copied().collect::<Vec<_>>(),
        vec![0, 1, 2]
    );
    let rounds: Vec<usize> = out.records.iter().map(Vec::len).collect();
    assert!(rounds.iter().all(|&r| r >= 5), "{rounds:?}");
    // Far from the 40-round cap: the close variants are never ordered, only settled.
    assert!(rounds.iter().all(|&r| r <= 10), "{rounds:?}");
    // The baseline runs only while some variant is sampled.
    assert_eq!(rounds[4], rounds[..3].iter().copied().max().unwrap());
    let set = dyno_tune::race::recommended(&out.replay, &out.records).unwrap();
    assert_eq!(set, vec![0, 1, 2]);

    // Exhaustive mode, same study: the same recommended set, 40 rounds of everyone.
    let mut exec = SyntheticExecutor::new(metrics(), slow, vec![0.01; 5], 5);
    let mut rec = MemoryRecorder::default();
    let cfg = RaceConfig {
        mode: Mode::Exhaustive,
        ..cfg
    };
    let all = run_race(&c, &bench(), cfg, &mut exec, &mut rec, &stop, &mut |_| {}).unwrap();
    assert_eq!(all.jobs_run, 5 * 40);
    assert!(out.jobs_run * 4 <= all.jobs_run, "{}", out.jobs_run);
    assert_eq!(
        dyno_tune::race::recommended(&all.replay, &all.records).unwrap(),
        vec![0, 1, 2]
    );
}

#[test]
fn a_race_resumes_only_from_its_own_hosts_runs() {
    // A fleet store: another machine ran the same study to the end first. This host's
    // race must start from nothing, not resume from (or report) the other's rounds.
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("results.db")).unwrap();
    let c = contestants(2, 1);
    let stop = AtomicBool::new(false);
    let slow = vec![0.0, 0.05, 0.0];
    let other = {
        let mut rec = recorder_on(&mut store, "other-machine");
        let mut exec = SyntheticExecutor::new(metrics(), slow.clone(), vec![0.01; 3], 1);
        run_race(
            &c,
            &bench(),
            config(Mode::Racing),
            &mut exec,
            &mut rec,
            &stop,
            &mut |_| {},
        )
        .unwrap()
    };
    assert!(other.jobs_run > 0);
    let mut first_round = None;
    let here = {
        let mut rec = store_recorder(&mut store);
        let mut exec = SyntheticExecutor::new(metrics(), slow, vec![0.01; 3], 2);
        run_race(
            &c,
            &bench(),
            config(Mode::Racing),
            &mut exec,
            &mut rec,
            &stop,
            &mut |e| {
                first_round.get_or_insert(e.round);
            },
        )
        .unwrap()
    };
    assert_eq!(first_round, Some(1), "started afresh, not resumed");
    let keys: Vec<SubjectKey> = c.iter().map(|c| c.key.clone()).collect();
    let mine: usize = store_recorder(&mut store)
        .load(&keys)
        .unwrap()
        .iter()
        .map(Vec::len)
        .sum();
    assert_eq!(mine, here.jobs_run, "only this host's jobs are loaded");
    assert_eq!(
        dyno_tune::record::study_hosts(&store, "study-key").unwrap(),
        vec!["other-machine".to_string(), "test".to_string()]
    );
    let theirs: usize = recorder_on(&mut store, "other-machine")
        .load(&keys)
        .unwrap()
        .iter()
        .map(Vec::len)
        .sum();
    assert_eq!(theirs, other.jobs_run);
}
