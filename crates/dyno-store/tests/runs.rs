//! Writing and reading runs: lifecycle, deduplication, listing, deletion, dead writers
//! and concurrent writers.

mod common;

use common::*;
use dyno_model::{Direction, Metric, RunStatus, Unit};
use dyno_store::{RunFilter, Store, StoreError};

#[test]
fn a_run_comes_back_as_it_was_written() {
    let (_dir, path) = temp_store();
    let mut store = Store::open(&path).unwrap();
    let info = info("tune", "lto-fat", "bench-01", 1_795_303_031.25);
    let id = store.begin_run(&info, &metrics()).unwrap();
    let extra = Metric::new("BuildTime", Unit::Seconds, Direction::LowerIsBetter);
    store.add_metric(id, &extra).unwrap();
    store.add_metric(id, &extra).unwrap(); // registering again is a no-op
                                           // Inserted out of order on purpose: reads follow registration order, then repetition.
    store
        .add_samples(
            id,
            &[sample("Blake2256", 1, 2.0), sample("BuildTime", 0, 93.5)],
        )
        .unwrap();
    store
        .add_labeled_samples(
            id,
            &[
                (
                    sample("Blake2256", 0, 1.0),
                    serde_json::json!({ "round": 0 }),
                ),
                (
                    sample("Sr25519Verify", 0, f64::NAN),
                    serde_json::Value::Null,
                ),
            ],
        )
        .unwrap();
    let running = store.run(id).unwrap();
    assert_eq!(running.status, RunStatus::Running);
    assert_eq!(running.finished_at, None);
    store.finish_run(id, RunStatus::Complete).unwrap();

    let run = store.run(id).unwrap();
    assert_eq!(run.id, id);
    assert_eq!(run.info, info);
    assert_eq!(run.status, RunStatus::Complete);
    assert!(run.finished_at.is_some());
    let mut expected_metrics = metrics();
    expected_metrics.push(extra);
    assert_eq!(run.metrics, expected_metrics);
    let got: Vec<_> = run
        .samples
        .iter()
        .map(|s| (s.metric.as_str(), s.repetition))
        .collect();
    assert_eq!(
        got,
        [
            ("Sr25519Verify", 0),
            ("Blake2256", 0),
            ("Blake2256", 1),
            ("BuildTime", 0)
        ]
    );
    assert!(run.samples[0].value.is_nan());
    assert_eq!(run.samples[3].value, 93.5);
    let labeled = store.labeled_samples(id).unwrap();
    assert_eq!(labeled[0].1, None);
    assert_eq!(labeled[1].1, Some(serde_json::json!({ "round": 0 })));
}

#[test]
fn a_run_stored_as_it_goes_keeps_the_settings_it_learned_last() {
    let (_dir, path) = temp_store();
    let mut store = Store::open(&path).unwrap();
    let id = store
        .begin_run(&info("cluster run", "c", "h", 1.0), &metrics())
        .unwrap();
    let late = serde_json::json!({"run_dir": "/r", "slots": [3, 9]});
    store.update_settings(id, &late).unwrap();
    let run = store.run(id).unwrap();
    assert_eq!(run.info.settings, late);
    assert_eq!(run.status, RunStatus::Running);
}

#[test]
fn hosts_and_subjects_are_stored_once() {
    let (_dir, path) = temp_store();
    let mut store = Store::open(&path).unwrap();
    for t in 0..3 {
        store
            .begin_run(&info("machine", "a", "h1", t as f64), &metrics())
            .unwrap();
    }
    let mut other = info("machine", "a", "h1", 5.0);
    other.subject = other.subject.with("lto", "fat");
    other.host.cores_online = 8;
    store.begin_run(&other, &metrics()).unwrap();
    assert_eq!(count(&path, "SELECT count(*) FROM hosts"), 2);
    assert_eq!(count(&path, "SELECT count(*) FROM subjects"), 2);
    assert_eq!(count(&path, "SELECT count(*) FROM runs"), 4);
}

#[test]
fn samples_of_unregistered_metrics_are_refused_whole() {
    let (_dir, path) = temp_store();
    let mut store = Store::open(&path).unwrap();
    let id = store
        .begin_run(&info("machine", "a", "h", 1.0), &metrics())
        .unwrap();
    let err = store
        .add_samples(id, &[sample("Blake2256", 0, 1.0), sample("Nope", 0, 1.0)])
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::UnknownMetric { run, metric } if *run == id && metric == "Nope")
    );
    assert_eq!(count(&path, "SELECT count(*) FROM samples"), 0);
    let clash = Metric::new("Blake2256", Unit::Seconds, Direction::LowerIsBetter);
    assert!(matches!(
        store.add_metric(id, &clash),
        Err(StoreError::MetricConflict { .. })
    ));
    assert!(matches!(
        store.begin_run(
            &info("machine", "a", "h", 1.0),
            &[metrics()[1].clone(), clash]
        ),
        Err(StoreError::MetricConflict { .. })
    ));
    assert_eq!(
        count(&path, "SELECT count(*) FROM runs"),
        1,
        "the refused run was rolled back"
    );
}

#[test]
fn unknown_runs_are_named() {
    let (_dir, path) = temp_store();
    let mut store = Store::open(&path).unwrap();
    let m = &metrics()[0];
    let is_unknown_42 = |e: StoreError| matches!(e, StoreError::UnknownRun(42));
    assert!(is_unknown_42(store.add_samples(42, &[]).unwrap_err()));
    assert!(is_unknown_42(store.add_metric(42, m).unwrap_err()));
    assert!(is_unknown_42(
        store.finish_run(42, RunStatus::Failed).unwrap_err()
    ));
    assert!(is_unknown_42(store.run(42).unwrap_err()));
    assert!(is_unknown_42(store.labeled_samples(42).unwrap_err()));
    assert!(is_unknown_42(
        store
            .update_settings(42, &serde_json::json!({}))
            .unwrap_err()
    ));
    let err = store.delete_run(42).unwrap_err();
    assert_eq!(err.to_string(), "run 42 is not in the results store");
    assert!(err.is_user_error());
    let id = store
        .begin_run(&info("machine", "a", "h", 1.0), &metrics())
        .unwrap();
    assert!(matches!(
        store.finish_run(id, RunStatus::Running),
        Err(StoreError::FinishAsRunning(_))
    ));
}

#[test]
fn delete_removes_the_run_its_samples_and_orphans_only() {
    let (_dir, path) = temp_store();
    let mut store = Store::open(&path).unwrap();
    let keep = store
        .begin_run(&info("machine", "a", "h1", 1.0), &metrics())
        .unwrap();
    let gone = store
        .begin_run(&info("machine", "b", "h2", 2.0), &metrics())
        .unwrap();
    for id in [keep, gone] {
        let samples: Vec<_> = (0..10).map(|r| sample("Blake2256", r, r as f64)).collect();
        store.add_samples(id, &samples).unwrap();
    }
    store.delete_run(gone).unwrap();
    assert!(matches!(store.run(gone), Err(StoreError::UnknownRun(_))));
    assert_eq!(
        count(
            &path,
            &format!("SELECT count(*) FROM samples WHERE run_id = {gone}")
        ),
        0
    );
    assert_eq!(
        count(
            &path,
            &format!("SELECT count(*) FROM run_metrics WHERE run_id = {gone}")
        ),
        0
    );
    assert_eq!(count(&path, "SELECT count(*) FROM samples"), 10);
    assert_eq!(count(&path, "SELECT count(*) FROM hosts"), 1);
    assert_eq!(count(&path, "SELECT count(*) FROM subjects"), 1);
    assert_eq!(store.run(keep).unwrap().samples.len(), 10);
}

#[test]
fn list_filters_and_orders_newest_first() {
    let (_dir, path) = temp_store();
    let mut store = Store::open(&path).unwrap();
    let a = store
        .begin_run(&info("machine", "node-v1", "bench-01", 100.0), &metrics())
        .unwrap();
    let b = store
        .begin_run(&info("tune", "lto-fat", "bench-02", 300.0), &metrics())
        .unwrap();
    let c = store
        .begin_run(&info("machine", "node-v2", "laptop", 200.0), &metrics())
        .unwrap();
    let d = store
        .begin_run(&info("machine", "node-v2", "bench-01", 300.0), &metrics())
        .unwrap();
    store
        .add_samples(
            a,
            &[sample("Blake2256", 0, 1.0), sample("Blake2256", 1, 1.0)],
        )
        .unwrap();
    store.finish_run(a, RunStatus::Failed).unwrap();

    let ids =
        |f: RunFilter| -> Vec<i64> { store.list_runs(&f).unwrap().iter().map(|r| r.id).collect() };
    // Same start time: the later id first.
    assert_eq!(ids(RunFilter::default()), [d, b, c, a]);
    let machine = || RunFilter {
        command: Some("machine".into()),
        ..RunFilter::default()
    };
    assert_eq!(ids(machine()), [d, c, a]);
    assert_eq!(
        ids(RunFilter {
            host: Some("bench".into()),
            ..machine()
        }),
        [d, a]
    );
    assert_eq!(
        ids(RunFilter {
            subject: Some("v2".into()),
            ..RunFilter::default()
        }),
        [d, c]
    );
    assert_eq!(
        ids(RunFilter {
            since: Some(200.0),
            until: Some(300.0),
            ..machine()
        }),
        [d, c]
    );
    assert_eq!(
        ids(RunFilter {
            until: Some(199.9),
            ..RunFilter::default()
        }),
        [a]
    );
    assert_eq!(
        ids(RunFilter {
            limit: Some(2),
            ..RunFilter::default()
        }),
        [d, b]
    );
    assert_eq!(
        ids(RunFilter {
            host: Some("nowhere".into()),
            ..RunFilter::default()
        }),
        Vec::<i64>::new()
    );

    let runs = store
        .list_runs(&RunFilter {
            until: Some(100.0),
            ..RunFilter::default()
        })
        .unwrap();
    let s = &runs[0];
    assert_eq!(
        (
            s.command.as_str(),
            s.hostname.as_str(),
            s.subject.name.as_str()
        ),
        ("machine", "bench-01", "node-v1")
    );
    assert_eq!(
        (s.started_at, s.status, s.samples),
        (100.0, RunStatus::Failed, 2)
    );
    assert!(s.finished_at.is_some());
}

#[test]
fn a_run_whose_writer_died_is_reported_and_reaped_as_incomplete() {
    let (_dir, path) = temp_store();
    let mut store = Store::open(&path).unwrap();
    let alive = store
        .begin_run(&info("machine", "a", "h", 1.0), &metrics())
        .unwrap();
    let dead = store
        .begin_run(&info("machine", "a", "h", 2.0), &metrics())
        .unwrap();
    let token: Option<String> = raw(&path)
        .query_row("SELECT writer_token FROM runs WHERE id = ?1", [dead], |r| {
            r.get(0)
        })
        .unwrap();
    let Some(token) = token else {
        return; // no /proc here: writers are never judged dead, by design
    };
    // A process that has exited, with a start time that cannot be its own.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    let boot = token.split(':').next().unwrap();
    raw(&path)
        .execute(
            "UPDATE runs SET writer_pid = ?1, writer_token = ?2 WHERE id = ?3",
            rusqlite::params![pid, format!("{boot}:1"), dead],
        )
        .unwrap();
    assert_eq!(store.run(dead).unwrap().status, RunStatus::Incomplete);
    assert_eq!(store.run(alive).unwrap().status, RunStatus::Running);
    let listed: Vec<_> = store
        .list_runs(&RunFilter::default())
        .unwrap()
        .iter()
        .map(|r| (r.id, r.status))
        .collect();
    assert_eq!(
        listed,
        [(dead, RunStatus::Incomplete), (alive, RunStatus::Running)]
    );
    let stored = |id: i64| -> String {
        raw(&path)
            .query_row("SELECT status FROM runs WHERE id = ?1", [id], |r| r.get(0))
            .unwrap()
    };
    assert_eq!(stored(dead), "running", "reporting does not write");
    assert_eq!(store.reap_dead_runs().unwrap(), [dead]);
    assert_eq!(stored(dead), "incomplete");
    assert_eq!(stored(alive), "running");
    assert_eq!(store.reap_dead_runs().unwrap(), Vec::<i64>::new());
}

#[test]
fn two_writers_on_their_own_connections_both_succeed() {
    let (_dir, path) = temp_store();
    drop(Store::open(&path).unwrap());
    const BATCHES: u32 = 100;
    const PER_BATCH: u32 = 20;
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let path = path.clone();
            std::thread::spawn(move || {
                let mut store = Store::open(&path).unwrap();
                let id = store
                    .begin_run(
                        &info("machine", &format!("writer-{w}"), "h", w as f64),
                        &metrics(),
                    )
                    .unwrap();
                for b in 0..BATCHES {
                    let samples: Vec<_> = (0..PER_BATCH)
                        .map(|i| sample("Blake2256", b * PER_BATCH + i, (w * 1000 + i) as f64))
                        .collect();
                    store.add_samples(id, &samples).unwrap();
                }
                store.finish_run(id, RunStatus::Complete).unwrap();
                id
            })
        })
        .collect();
    let ids: Vec<i64> = writers.into_iter().map(|t| t.join().unwrap()).collect();
    let store = Store::open_read_only(&path).unwrap();
    for id in ids {
        let run = store.run(id).unwrap();
        assert_eq!(run.status, RunStatus::Complete);
        assert_eq!(run.samples.len(), (BATCHES * PER_BATCH) as usize);
        let reps: Vec<u32> = run.samples.iter().map(|s| s.repetition).collect();
        assert_eq!(reps, (0..BATCHES * PER_BATCH).collect::<Vec<_>>());
    }
}

#[test]
fn two_processes_creating_a_new_store_at_once_both_succeed() {
    // Both connections find an empty file; the migration runs once, under the write lock.
    let (_dir, path) = temp_store();
    let openers: Vec<_> = (0..2)
        .map(|_| {
            let path = path.clone();
            std::thread::spawn(move || {
                let mut store = Store::open(&path).unwrap();
                store
                    .begin_run(&info("machine", "a", "h", 1.0), &metrics())
                    .unwrap()
            })
        })
        .collect();
    for t in openers {
        t.join().unwrap();
    }
    assert_eq!(count(&path, "SELECT count(*) FROM runs"), 2);
    assert_eq!(
        count(&path, "SELECT count(*) FROM dyno_meta WHERE key = 'magic'"),
        1
    );
}

#[test]
fn samples_are_committed_by_each_call_even_if_the_run_never_finishes() {
    let (_dir, path) = temp_store();
    let id = {
        let mut store = Store::open(&path).unwrap();
        let id = store
            .begin_run(&info("machine", "a", "h", 1.0), &metrics())
            .unwrap();
        store
            .add_samples(id, &[sample("Blake2256", 0, 1.0)])
            .unwrap();
        store
            .add_samples(id, &[sample("Blake2256", 1, 2.0)])
            .unwrap();
        id // dropped without finish_run, as an interrupted command would
    };
    let store = Store::open_read_only(&path).unwrap();
    let run = store.run(id).unwrap();
    assert_eq!(run.samples.len(), 2);
    // This process, the writer, is alive: the run is still reported running.
    assert_eq!(run.status, RunStatus::Running);
    assert_eq!(run.finished_at, None);
}
