//! A comparison with a precision target run end to end through the session, with the
//! synthetic executor: deterministic and independent of the machine's speed.

use super::*;
use crate::mock::SyntheticExecutor;
use dyno_judge::precision::{judge_sequential, summary, Stop};
use dyno_judge::TestKind;
use std::sync::atomic::{AtomicBool, Ordering};

fn file(head: &str) -> ComparisonFile {
    let text = format!(
        "{head}\n[[subject]]\nname = \"a\"\ncommand = [\"sh\"]\nmetrics = {{ prometheus = \"http://127.0.0.1:9/metrics\" }}\n[[subject]]\nname = \"b\"\ncommand = [\"sh\"]\nmetrics = {{ prometheus = \"http://127.0.0.1:9/metrics\" }}\n[[workload]]\nname = \"value\"\nrate = 1000\nmeasure_s = 20\n"
    );
    ComparisonFile::parse(&text, std::path::Path::new("p.toml")).unwrap()
}

/// Runs a session of `cfg` (continuing what `store` holds); the events it told, and its
/// outcome.
fn run(
    cfg: &ComparisonFile,
    store: Option<&mut Store>,
    executor: &mut dyn Executor<Subject = SubjectSpec, Workload = WorkloadSpec>,
    stop: &AtomicBool,
) -> (
    Vec<String>,
    Result<crate::session::CompareOutcome, SessionError>,
) {
    let mut told = Vec::new();
    let mut events = |e: Event<'_>| {
        told.push(match e {
            Event::Continuing { done, .. } => format!("continuing {done}"),
            Event::AlreadyDecided { why, .. } => format!("decided: {why}"),
            Event::Looked(l) => format!("looked {}", l.rounds),
            _ => String::new(),
        })
    };
    let mut session = CompareSession::begin(
        cfg.clone(),
        "p.toml".as_ref(),
        store.as_deref(),
        false,
        "test".into(),
        &mut events,
    )
    .unwrap();
    session.quiet_look(None);
    let out = session.run(store, executor, stop, &[], &mut events);
    told.retain(|t| !t.is_empty());
    (told, out)
}

#[test]
fn an_a_a_comparison_stops_at_the_precision_and_a_slowdown_is_flagged() {
    let cfg = file("precision = \"5%\"\nprimary = [\"cpu_percent\"]");
    assert_eq!(cfg.test, Some(TestKind::Sequential));
    assert_eq!(cfg.rounds, crate::spec::DEFAULT_MAX_ROUNDS);
    let stop = AtomicBool::new(false);
    let (told, out) = run(&cfg, None, &mut SyntheticExecutor::new(1), &stop);
    let out = out.unwrap();
    assert_eq!(out.ending, Ending::Decided(Stop::Reached), "{told:?}");
    let rounds = complete_rounds(&out.meta, &out.executions);
    assert!((5..40).contains(&rounds), "{rounds}");
    // A look after every complete round from the first on.
    assert_eq!(told.first().map(String::as_str), Some("looked 1"));
    let j = judge_sequential(&out.meta, &out.executions, &cfg.primary);
    let cpu = j
        .verdicts
        .iter()
        .find(|v| v.metric.name == "cpu_percent")
        .unwrap();
    assert_eq!(cpu.comparison.test.name(), "sequential-t");
    assert!(cpu.power.unwrap().min_detectable_change.unwrap() <= 0.05);
    // 10% more CPU: flagged, well before the precision alone would stop it.
    let mut slow = SyntheticExecutor::new(1);
    slow.slowdown.insert("b".into(), 1.10);
    let out = run(&cfg, None, &mut slow, &stop).1.unwrap();
    let Ending::Decided(Stop::Flagged(what)) = &out.ending else {
        panic!("{:?}", out.ending);
    };
    assert_eq!(what, &["cpu_percent of b under value"]);
    assert!(complete_rounds(&out.meta, &out.executions) <= rounds);
}

#[test]
fn the_budget_ends_a_comparison_that_cannot_reach_its_target() {
    // 2% is the noise band: reachable, but not in 6 rounds of 3% noise.
    let cfg = file("precision = \"2%\"\nmax_rounds = 6\nprimary = [\"cpu_percent\"]");
    let stop = AtomicBool::new(false);
    let out = run(&cfg, None, &mut SyntheticExecutor::new(2), &stop)
        .1
        .unwrap();
    assert_eq!(out.ending, Ending::Decided(Stop::MaxRounds));
    assert_eq!(out.executions.len(), 12);
    let seq = cfg.sequential.unwrap();
    let lines = summary(&out.meta, &seq, &out.executions, &cfg.primary, None, 0.0);
    assert!(
        lines[0].contains("stopped after 6 rounds: the budget of 6 rounds ended"),
        "{lines:?}"
    );
    assert!(
        lines[1].starts_with("short of the target: value: cpu_percent of b can see "),
        "{lines:?}"
    );
    assert!(lines[1].contains("rounds in all"), "{lines:?}");
}

/// Sets `stop` once `after` executions ran, as Ctrl-C would between two of them.
struct StopAfter<'a> {
    inner: SyntheticExecutor,
    after: usize,
    ran: usize,
    stop: &'a AtomicBool,
}

impl Executor for StopAfter<'_> {
    type Subject = SubjectSpec;
    type Workload = WorkloadSpec;

    fn execute(
        &mut self,
        subject: &SubjectSpec,
        workload: &WorkloadSpec,
        round: u32,
        stop: &AtomicBool,
    ) -> crate::execution::Execution {
        let e = self.inner.execute(subject, workload, round, stop);
        self.ran += 1;
        if self.ran == self.after {
            self.stop.store(true, Ordering::SeqCst);
        }
        e
    }
}

#[test]
fn an_interrupted_comparison_continues_its_sequence() {
    let cfg = file("precision = \"5%\"\nprimary = [\"cpu_percent\"]");
    let never = AtomicBool::new(false);
    let whole = run(&cfg, None, &mut SyntheticExecutor::new(3), &never)
        .1
        .unwrap();
    let Ending::Decided(decision) = whole.ending.clone() else {
        panic!("{:?}", whole.ending);
    };
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("r.db")).unwrap();
    let stop = AtomicBool::new(false);
    let mut first = StopAfter {
        inner: SyntheticExecutor::new(3),
        after: 7,
        ran: 0,
        stop: &stop,
    };
    let cut = run(&cfg, Some(&mut store), &mut first, &stop).1.unwrap();
    assert_eq!(cut.ending, Ending::Interrupted);
    assert_eq!(cut.executions.len(), 7);
    stop.store(false, Ordering::SeqCst);
    let (told, resumed) = run(
        &cfg,
        Some(&mut store),
        &mut SyntheticExecutor::new(3),
        &stop,
    );
    let resumed = resumed.unwrap();
    assert_eq!(
        told.first().map(String::as_str),
        Some("continuing 7"),
        "{told:?}"
    );
    // The sequence goes on from the third round: the same decision at the same round
    // as the comparison that was never interrupted.
    assert_eq!(
        told.get(1).map(String::as_str),
        Some("looked 3"),
        "{told:?}"
    );
    assert_eq!(resumed.ending, Ending::Decided(decision));
    assert_eq!(resumed.executions.len(), whole.executions.len());
    assert!(resumed.elapsed_s >= cut.elapsed_s);
    // Run again: that comparison has decided, so a new one starts.
    let (told, again) = run(
        &cfg,
        Some(&mut store),
        &mut SyntheticExecutor::new(4),
        &stop,
    );
    assert!(told[0].starts_with("decided: "), "{told:?}");
    assert_ne!(again.unwrap().meta.id, resumed.meta.id);
}

#[test]
fn an_unknown_work_metric_stops_the_run_after_the_first_executions() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("r.db")).unwrap();
    let stop = AtomicBool::new(false);
    let bad = file("rounds = 4").clone();
    let with_work = |metric: &str| {
        let mut cfg = bad.clone();
        cfg.workloads[0].work = Some(dyno_judge::work::WorkUnit {
            metric: metric.into(),
            unit: "frag".into(),
        });
        cfg
    };
    let (_, out) = run(
        &with_work("node:frags_totl"),
        Some(&mut store),
        &mut SyntheticExecutor::new(5),
        &stop,
    );
    let e = out.unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, SessionError::Refused { done: 2, .. }), "{text}");
    assert!(
        text.contains("work metric `node:frags_totl` was not recorded"),
        "{text}"
    );
    assert!(text.contains("closest: `node:frags_total`"), "{text}");
    assert!(
        text.contains("the comparison stopped after 2 executions"),
        "{text}"
    );
    // The stored comparison is still reported for its other metrics, with a note.
    let loaded = record::load(&store, &[1]).unwrap();
    let j = dyno_judge::judge_with(
        &loaded.executions,
        &loaded.meta.subjects,
        &dyno_stats::ComparisonSettings::default(),
        &dyno_judge::verdict::JudgeOptions {
            work: loaded.meta.work.clone(),
            ..Default::default()
        },
    );
    assert!(
        j.notes
            .iter()
            .any(|n| n.contains("`node:frags_totl` was not recorded")),
        "{:?}",
        j.notes
    );
    // Fixed, the same command continues with the executions stored.
    let (told, out) = run(
        &with_work("node:frags_total"),
        Some(&mut store),
        &mut SyntheticExecutor::new(5),
        &stop,
    );
    assert_eq!(
        told.first().map(String::as_str),
        Some("continuing 2"),
        "{told:?}"
    );
    let out = out.unwrap();
    assert_eq!(out.ending, Ending::Finished);
    assert_eq!(out.executions.len(), 8);
    // Its cost per unit is the default primary CPU figure; cpu_percent is secondary.
    let j = dyno_judge::judge_with(
        &out.executions,
        &out.meta.subjects,
        &dyno_stats::ComparisonSettings::default(),
        &dyno_judge::verdict::JudgeOptions {
            test: TestKind::Paired,
            work: out.meta.work.clone(),
            ..Default::default()
        },
    );
    let secondary = |m: &str| {
        j.verdicts
            .iter()
            .find(|v| v.metric.name == m)
            .unwrap()
            .secondary
    };
    assert!(!secondary("cpu_s_per_frag"));
    assert!(secondary("cpu_percent"));
}

#[test]
fn a_metric_history_reads_the_value_compare_judged() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("r.db")).unwrap();
    let mut cfg = file("rounds = 1");
    cfg.workloads[0].work = Some(dyno_judge::work::WorkUnit {
        metric: "node:frags_total".into(),
        unit: "frag".into(),
    });
    let stop = AtomicBool::new(false);
    let out = run(
        &cfg,
        Some(&mut store),
        &mut SyntheticExecutor::new(6),
        &stop,
    )
    .1
    .unwrap();
    let e = &out.executions[0];
    let cpu = e
        .series
        .iter()
        .find(|s| s.metric.name == "cpu_percent")
        .unwrap();
    let window = dyno_judge::values::window_mean(&cpu.points).unwrap();
    let samples = store.labeled_samples(out.runs[0]).unwrap();
    let of = |m: &str| -> Vec<f64> {
        samples
            .iter()
            .filter(|(s, _)| s.metric == m)
            .map(|(s, _)| s.value)
            .collect()
    };
    // One value per execution under the metric's name: the window's CPU, not a median
    // of its seconds (which stay, under cpu_percent_1s).
    assert_eq!(of("cpu_percent"), vec![window]);
    assert_eq!(of("cpu_percent_1s").len(), cpu.points.len());
    assert_eq!(of("cpu_s_per_frag").len(), 1);
    assert_eq!(of("rss_per_frag").len(), 1);
    assert_eq!(of("node:frags_total_per_s").len(), 1);
    // Read back, the execution is what was measured.
    let loaded = record::load(&store, &out.runs).unwrap();
    assert_eq!(loaded.executions, out.executions);
}

/// The synthetic node with a CPU that falls 80% over fifteen minutes for every subject
/// alike, a 1% offset per start of a node, and three 30 s bursts of other work that make
/// every node running meanwhile 30% more costly.
fn drifting(seed: u64) -> SyntheticExecutor {
    let mut ex = SyntheticExecutor::new(seed);
    ex.drift = Some(dyno_judge::synthetic::Drift {
        fall: 0.8,
        over_s: 900.0,
    });
    ex.start_sd = 0.01;
    for from_s in [100.0, 400.0, 700.0] {
        ex.hogs.push(dyno_judge::synthetic::Hog {
            from_s,
            until_s: from_s + 30.0,
            cpu_percent: 100.0,
            slowdown: 1.3,
        });
    }
    ex
}

#[test]
fn under_drift_side_by_side_reaches_the_precision_in_fewer_rounds_and_still_flags_a_change() {
    let head = "precision = \"5%\"\nmax_rounds = 60\nprimary = [\"cpu_percent\"]";
    let stop = AtomicBool::new(false);
    let rounds_of = |schedule: &str, slowdown: f64| {
        let cfg = file(&format!("{head}\nschedule = \"{schedule}\""));
        let mut ex = drifting(7);
        if slowdown != 1.0 {
            ex.slowdown.insert("b".into(), slowdown);
        }
        let out = run(&cfg, None, &mut ex, &stop).1.unwrap();
        (
            out.ending.clone(),
            complete_rounds(&out.meta, &out.executions),
        )
    };
    let (interleaved, slow_rounds) = rounds_of("interleaved", 1.0);
    let (side, side_rounds) = rounds_of("side_by_side", 1.0);
    // Seeded: 38 rounds interleaved, 13 side by side.
    assert_eq!(interleaved, Ending::Decided(Stop::Reached));
    assert_eq!(
        side,
        Ending::Decided(Stop::Reached),
        "the A/A flags nothing"
    );
    assert!(
        2 * side_rounds <= slow_rounds,
        "{side_rounds} vs {slow_rounds}"
    );
    let (flagged, _) = rounds_of("side_by_side", 1.05);
    assert!(
        matches!(flagged, Ending::Decided(Stop::Flagged(_))),
        "{flagged:?}"
    );
}
