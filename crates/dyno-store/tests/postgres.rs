//! The PostgreSQL backend against a real, throwaway server (crates/dyno-test-pg): the same
//! answers as SQLite, idempotent copies, refusals that name the URL without its password,
//! and writers that survive a server restart.
//!
//! Each test skips with a printed note when PostgreSQL is not installed.

mod common;

use common::{info, metrics, sample};
use dyno_model::{RunStatus, Sample};
use dyno_store::{Copied, ExportFormat, FleetQuery, HistoryQuery, RunFilter, Store, StoreError};
use dyno_test_pg::PgServer;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn open(url: &str) -> Store {
    Store::open(Path::new(url)).unwrap_or_else(|e| panic!("open {url}: {e}"))
}

/// Writes the same two runs (NaN, -0.0, labels with escapes, a failed run) to a store.
fn write_runs(store: &mut Store) {
    let a = store
        .begin_run(&info("machine", "bench-a", "host-a", 1000.0), &metrics())
        .unwrap();
    store
        .add_samples(
            a,
            &[
                sample("Blake2256", 0, 1.5e9),
                sample("Sr25519Verify", 1, -0.0),
                sample("Sr25519Verify", 0, f64::NAN),
            ],
        )
        .unwrap();
    store
        .add_labeled_samples(
            a,
            &[
                (
                    sample("Blake2256", 1, 0.1 + 0.2),
                    serde_json::json!({"variant": "tab\there\\and\nnewline", "round": 2}),
                ),
                (sample("Blake2256", 2, 5e-324), serde_json::Value::Null),
            ],
        )
        .unwrap();
    // Settings learned on the way replace those the run began with, on both backends.
    store
        .update_settings(a, &serde_json::json!({"slots": [1, 4], "late": true}))
        .unwrap();
    store.finish_run(a, RunStatus::Complete).unwrap();
    let b = store
        .begin_run(
            &info("tune", "variant-b", "host-b", 2000.0),
            &metrics()[..1],
        )
        .unwrap();
    store
        .add_samples(b, &[sample("Sr25519Verify", 0, 42.0)])
        .unwrap();
    store.finish_run(b, RunStatus::Failed).unwrap();
}

fn csv(store: &Store) -> String {
    let mut out = Vec::new();
    store.export(&[], ExportFormat::Csv, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn postgres_gives_the_same_answers_as_sqlite() {
    let Some(server) = PgServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut lite = Store::open(&dir.path().join("results.db")).unwrap();
    let mut pg = open(&server.database("same"));
    assert!(pg.is_postgres() && !lite.is_postgres());
    write_runs(&mut lite);
    write_runs(&mut pg);

    assert_eq!(csv(&pg), csv(&lite));
    let strip_uuid = |mut v: Vec<dyno_store::RunSummary>| {
        v.iter_mut().for_each(|r| {
            r.uuid.clear();
            r.finished_at = r.finished_at.map(|_| 0.0);
        });
        v
    };
    let all = RunFilter::default();
    assert_eq!(
        strip_uuid(pg.list_runs(&all).unwrap()),
        strip_uuid(lite.list_runs(&all).unwrap())
    );
    let filtered = RunFilter {
        host: Some("host-b".into()),
        since: Some(1500.0),
        limit: Some(5),
        ..RunFilter::default()
    };
    let found = pg.list_runs(&filtered).unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].status, RunStatus::Failed);
    for id in [1, 2] {
        let (p, l) = (pg.run(id).unwrap(), lite.run(id).unwrap());
        // NaN != NaN: compare samples bit for bit.
        let bits = |s: &[Sample]| -> Vec<(String, u32, u64)> {
            s.iter()
                .map(|s| (s.metric.clone(), s.repetition, s.value.to_bits()))
                .collect()
        };
        assert_eq!(bits(&p.samples), bits(&l.samples));
        assert_eq!(
            (&p.info, &p.metrics, p.status),
            (&l.info, &l.metrics, l.status)
        );
        assert_eq!(
            format!("{:?}", pg.labeled_samples(id).unwrap()),
            format!("{:?}", lite.labeled_samples(id).unwrap())
        );
    }
    assert!(matches!(pg.run(99), Err(StoreError::UnknownRun(99))));
    assert!(matches!(
        pg.add_samples(1, &[sample("Nope", 0, 1.0)]),
        Err(StoreError::UnknownMetric { .. })
    ));

    pg.delete_run(2).unwrap();
    lite.delete_run(2).unwrap();
    assert_eq!(csv(&pg), csv(&lite));
    assert_eq!(server.psql("same", "SELECT count(*) FROM hosts"), "1");
}

#[test]
fn copies_are_idempotent_and_faithful_both_ways() {
    let Some(server) = PgServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut local = Store::open(&dir.path().join("local.db")).unwrap();
    write_runs(&mut local);
    let url = server.database("fleet");
    let mut fleet = open(&url);
    for id in [1, 2] {
        assert!(matches!(
            local.copy_run(id, &mut fleet).unwrap(),
            Copied::New(_)
        ));
    }
    // Pushing again (a resumed push) stores nothing twice.
    for id in [1, 2] {
        assert_eq!(
            local.copy_run(id, &mut fleet).unwrap(),
            Copied::AlreadyThere(id)
        );
    }
    assert_eq!(server.psql("fleet", "SELECT count(*) FROM runs"), "2");
    assert_eq!(server.psql("fleet", "SELECT count(*) FROM samples"), "6");
    let uuids = |s: &Store| -> Vec<String> {
        s.list_runs(&RunFilter::default())
            .unwrap()
            .into_iter()
            .map(|r| r.uuid)
            .collect()
    };
    assert_eq!(uuids(&fleet), uuids(&local));
    assert_eq!(csv(&fleet), csv(&local));

    // And back into a fresh SQLite store.
    let mut pulled = Store::open(&dir.path().join("pulled.db")).unwrap();
    for id in [1, 2] {
        fleet.copy_run(id, &mut pulled).unwrap();
        fleet.copy_run(id, &mut pulled).unwrap();
    }
    assert_eq!(csv(&pulled), csv(&local));
    assert_eq!(uuids(&pulled), uuids(&local));
}

#[test]
fn refusals_name_the_url_without_its_password() {
    let Some(server) = PgServer::start() else {
        return;
    };
    // Wrong password.
    server.database("guarded");
    server.psql("guarded", "GRANT CREATE ON SCHEMA public TO pwuser");
    let url = server.url_as("pwuser", Some("wrong-password"), "guarded");
    let err = Store::open(Path::new(&url)).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, StoreError::Login { .. }), "{err:?}");
    assert!(err.is_user_error());
    assert!(
        msg.contains("pwuser:***@") && !msg.contains("wrong-password"),
        "{msg}"
    );
    // The right one works (and the URL's password is what was used).
    open(&server.url_as("pwuser", Some("right-password"), "guarded"));

    // A newer schema is refused and left as it was.
    let url = server.database("newer");
    drop(open(&url));
    server.psql(
        "newer",
        "UPDATE dyno_meta SET value = '99' WHERE key = 'schema_version'",
    );
    let err = Store::open(Path::new(&url)).unwrap_err();
    assert!(
        matches!(err, StoreError::TooNew { found: 99, .. }),
        "{err:?}"
    );
    assert_eq!(
        server.psql(
            "newer",
            "SELECT value FROM dyno_meta WHERE key = 'schema_version'"
        ),
        "99"
    );

    // An older schema is, to a reader, what SQLite says: the version found and that
    // reading does not migrate it (not "not a dyno results store"); nothing is changed.
    let url = server.database("older");
    drop(open(&url));
    server.psql(
        "older",
        "UPDATE dyno_meta SET value = '1' WHERE key = 'schema_version'",
    );
    let err = Store::open_read_only(Path::new(&url)).unwrap_err();
    assert!(matches!(err, StoreError::Older { found: 1, .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains("has an older dyno schema (version 1;"),
        "{err}"
    );
    assert_eq!(
        server.psql(
            "older",
            "SELECT value FROM dyno_meta WHERE key = 'schema_version'"
        ),
        "1"
    );

    // Somebody else's database is not touched.
    let url = server.database("someone_elses");
    server.psql("someone_elses", "CREATE TABLE accounts (id int)");
    assert!(matches!(
        Store::open(Path::new(&url)),
        Err(StoreError::NotAStore { .. })
    ));
    assert_eq!(
        server.psql(
            "someone_elses",
            "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
        ),
        "1"
    );

    // An empty database is not a store to read from, and reading creates nothing.
    let url = server.database("empty");
    assert!(matches!(
        Store::open_read_only(Path::new(&url)),
        Err(StoreError::Missing { .. })
    ));
    assert_eq!(
        server.psql(
            "empty",
            "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
        ),
        "0"
    );

    // Nobody listening.
    let gone = "postgresql://dyno:secret@%2Fnonexistent%2Fdyno-socket/x?sslmode=disable";
    let err = Store::open(Path::new(gone)).unwrap_err();
    assert!(matches!(err, StoreError::Unreachable { .. }), "{err:?}");
    assert!(!err.to_string().contains("secret"), "{err}");

    // A URL dyno does not understand.
    let err = Store::open(Path::new("postgres://u:secret@h/d?sslmode=maybe")).unwrap_err();
    assert!(matches!(err, StoreError::BadUrl { .. }), "{err:?}");
    assert!(!err.to_string().contains("secret"), "{err}");
}

#[test]
fn eight_writers_lose_nothing_and_duplicate_nothing_through_a_server_restart() {
    let Some(mut server) = PgServer::start() else {
        return;
    };
    let url = server.database("busy");
    drop(open(&url)); // create the schema once, before the writers race
    const WRITERS: usize = 8;
    const BATCHES: usize = 40;
    const PER_BATCH: usize = 25;
    let batches_done = Arc::new(AtomicUsize::new(0));
    let begun = Arc::new(AtomicUsize::new(0));
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let url = url.clone();
            let done = batches_done.clone();
            let begun = begun.clone();
            std::thread::spawn(move || {
                let mut store = open(&url);
                let host = format!("host-{w}");
                let run = store
                    .begin_run(&info("machine", "fleet", &host, w as f64), &metrics())
                    .unwrap();
                begun.fetch_add(1, Ordering::SeqCst);
                for b in 0..BATCHES {
                    let samples: Vec<Sample> = (0..PER_BATCH)
                        .map(|i| sample("Blake2256", (b * PER_BATCH + i) as u32, w as f64))
                        .collect();
                    store.add_samples(run, &samples).unwrap();
                    done.fetch_add(1, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(5));
                }
                store.finish_run(run, RunStatus::Complete).unwrap();
                run
            })
        })
        .collect();
    // Restart the server once every writer has begun its run (opening a store while the
    // server is down is refused at once, by design: that is not what this test is about)
    // and the writers are well under way.
    while begun.load(Ordering::SeqCst) < WRITERS
        || batches_done.load(Ordering::SeqCst) < WRITERS * BATCHES / 4
    {
        std::thread::sleep(Duration::from_millis(5));
    }
    server.stop();
    std::thread::sleep(Duration::from_millis(300));
    server.start_again();
    let runs: Vec<_> = writers.into_iter().map(|h| h.join().unwrap()).collect();
    assert!(
        batches_done.load(Ordering::SeqCst) == WRITERS * BATCHES,
        "every batch acknowledged"
    );
    let fleet = open(&url);
    for run in runs {
        let stored = fleet.run(run).unwrap();
        assert_eq!(stored.status, RunStatus::Complete);
        let mut reps: Vec<u32> = stored.samples.iter().map(|s| s.repetition).collect();
        reps.dedup();
        assert_eq!(
            reps.len(),
            BATCHES * PER_BATCH,
            "run {run}: lost or duplicated"
        );
        assert_eq!(stored.samples.len(), BATCHES * PER_BATCH, "run {run}");
    }
    assert_eq!(
        server.psql("busy", "SELECT count(*) FROM samples"),
        (WRITERS * BATCHES * PER_BATCH).to_string()
    );
    assert!(
        server.log().contains("shutting down"),
        "the server did restart"
    );
}

#[test]
fn a_server_down_past_the_limit_fails_the_write_and_keeps_the_run_incomplete() {
    let Some(mut server) = PgServer::start() else {
        return;
    };
    let url = server.database("down");
    let mut store = open(&url);
    store.set_reconnect_limit(Duration::from_millis(800));
    let run = store
        .begin_run(&info("machine", "m", "host-a", 1.0), &metrics())
        .unwrap();
    store
        .add_samples(run, &[sample("Blake2256", 0, 1.0)])
        .unwrap();
    server.stop();
    let err = store
        .add_samples(run, &[sample("Blake2256", 1, 2.0)])
        .unwrap_err();
    assert!(matches!(err, StoreError::ServerLost { .. }), "{err:?}");
    server.start_again();
    let stored = open(&url).run(run).unwrap();
    // Still being written by this (live) process: running, with only what committed.
    assert_eq!(stored.status, RunStatus::Running);
    assert_eq!(stored.samples.len(), 1);
    // The same store carries on once the server is back.
    store
        .add_samples(run, &[sample("Blake2256", 1, 2.0)])
        .unwrap();
    store.finish_run(run, RunStatus::Complete).unwrap();
    assert_eq!(open(&url).run(run).unwrap().samples.len(), 2);
}

#[test]
fn the_fleet_query_takes_each_machines_newest_complete_run() {
    let Some(server) = PgServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut lite = Store::open(&dir.path().join("results.db")).unwrap();
    let mut pg = open(&server.database("machines"));
    for store in [&mut lite, &mut pg] {
        let mut run = |host: &str, at: f64, values: &[f64], status| {
            let mut i = info("machine", "m", host, at);
            if host == "zen" {
                i.host.cpu_model = "AMD EPYC 7543".into();
            }
            let id = store.begin_run(&i, &metrics()).unwrap();
            let s: Vec<Sample> = values
                .iter()
                .enumerate()
                .map(|(r, v)| sample("Sr25519Verify", r as u32, *v))
                .collect();
            store.add_samples(id, &s).unwrap();
            if let Some(status) = status {
                store.finish_run(id, status).unwrap();
            }
        };
        run("alpha", 10.0, &[1.0, 2.0], Some(RunStatus::Complete));
        run(
            "alpha",
            20.0,
            &[3.0, 4.0, f64::NAN],
            Some(RunStatus::Complete),
        );
        run("alpha", 30.0, &[99.0], Some(RunStatus::Failed));
        run("alpha", 40.0, &[98.0], None); // still running: not visible
        run("zen", 15.0, &[7.0], Some(RunStatus::Complete));
        run("beta", 5.0, &[], Some(RunStatus::Complete)); // no samples of the metric
    }
    for store in [&lite, &pg] {
        let all = store
            .fleet_runs(&FleetQuery {
                metric: "Sr25519Verify".into(),
                ..FleetQuery::default()
            })
            .unwrap();
        let got: Vec<(&str, Vec<f64>)> = all
            .machines
            .iter()
            .map(|m| (m.hostname.as_str(), m.samples.clone()))
            .collect();
        assert_eq!(got, [("zen", vec![7.0]), ("alpha", vec![3.0, 4.0])]);
        assert_eq!(all.metric.as_ref().unwrap().unit.symbol(), "/s");
        let amd = store
            .fleet_runs(&FleetQuery {
                metric: "Sr25519Verify".into(),
                cpu: Some("epyc".into()),
                command: Some("machine".into()),
            })
            .unwrap();
        assert_eq!(amd.machines.len(), 1);
        assert_eq!(amd.machines[0].hostname, "zen");
        let none = store
            .fleet_runs(&FleetQuery {
                metric: "NoSuchMetric".into(),
                ..FleetQuery::default()
            })
            .unwrap();
        assert!(none.machines.is_empty() && none.metric.is_none());
    }
    // A run that measured the metric in another unit makes the distribution meaningless.
    for store in [&mut lite, &mut pg] {
        let odd = dyno_model::Metric::new(
            "Sr25519Verify",
            dyno_model::Unit::BytesPerSecond,
            dyno_model::Direction::HigherIsBetter,
        );
        let id = store
            .begin_run(&info("machine", "m", "odd", 50.0), &[odd])
            .unwrap();
        store
            .add_samples(id, &[sample("Sr25519Verify", 0, 1.0)])
            .unwrap();
        store.finish_run(id, RunStatus::Complete).unwrap();
        let err = store
            .fleet_runs(&FleetQuery {
                metric: "Sr25519Verify".into(),
                ..FleetQuery::default()
            })
            .unwrap_err();
        assert!(matches!(err, StoreError::MixedUnits { .. }), "{err:?}");
        assert!(err.to_string().contains("B/s"), "{err}");
    }
}

#[test]
fn postgres_gives_the_same_history_as_sqlite() {
    let Some(server) = PgServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut lite = Store::open(&dir.path().join("results.db")).unwrap();
    let mut pg = open(&server.database("history"));
    let ids = common::write_history(&mut lite);
    assert_eq!(common::write_history(&mut pg), ids);
    let queries = [
        HistoryQuery {
            metric: "Sr25519Verify".into(),
            ..HistoryQuery::default()
        },
        HistoryQuery {
            metric: "Sr25519Verify".into(),
            runs: RunFilter {
                host: Some("alp".into()),
                subject: Some("v1.".into()),
                since: Some(65.0),
                limit: Some(1),
                ..RunFilter::default()
            },
            workload: None,
        },
        HistoryQuery {
            metric: "Sr25519Verify".into(),
            runs: RunFilter::default(),
            workload: Some("transfers".into()),
        },
    ];
    // Every field but the globally unique run ids, which each store made its own.
    let history = |store: &Store, q: &HistoryQuery| {
        let mut points = store.metric_history(q).unwrap();
        for p in &mut points {
            assert_eq!(p.run_uuid.len(), 36);
            p.run_uuid.clear();
        }
        points
    };
    for q in &queries {
        let (a, b) = (history(&lite, q), history(&pg, q));
        assert!(!a.is_empty());
        assert_eq!(a, b, "{q:?}");
    }
    assert_eq!(lite.metric_names().unwrap(), pg.metric_names().unwrap());
    let unknown = HistoryQuery {
        metric: "Nope".into(),
        ..HistoryQuery::default()
    };
    assert!(matches!(
        pg.metric_history(&unknown),
        Err(StoreError::NoSuchMetric { .. })
    ));
    let nobody = HistoryQuery {
        metric: "Sr25519Verify".into(),
        runs: RunFilter {
            host: Some("gamma".into()),
            ..RunFilter::default()
        },
        workload: None,
    };
    assert_eq!(pg.metric_history(&nobody).unwrap(), []);
}
