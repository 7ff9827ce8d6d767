//! A metric's history: one median per complete run, oldest first, filtered like the run
//! list, and an unknown metric told apart from a filter that matched nothing.

mod common;

use common::*;
use dyno_model::{Direction, Metric, RunStatus, Unit};
use dyno_store::{HistoryQuery, RunFilter, Store, StoreError};

fn query(filter: RunFilter, workload: Option<&str>) -> HistoryQuery {
    HistoryQuery {
        metric: "Sr25519Verify".into(),
        runs: filter,
        workload: workload.map(str::to_string),
    }
}

/// `(run, value, samples)` of each point.
fn values(store: &Store, q: &HistoryQuery) -> Vec<(i64, f64, usize)> {
    store
        .metric_history(q)
        .unwrap()
        .iter()
        .map(|p| (p.run, p.value, p.samples))
        .collect()
}

#[test]
fn one_median_per_complete_run_oldest_first() {
    let (_dir, path) = temp_store();
    let mut store = Store::open(&path).unwrap();
    let ids = write_history(&mut store);
    let all = store
        .metric_history(&query(RunFilter::default(), None))
        .unwrap();
    // Oldest first by start time, not by id; the NaN-only, failed and running runs are
    // not points; a NaN sample is left out of its run's median.
    let got: Vec<_> = all.iter().map(|p| (p.run, p.value, p.samples)).collect();
    assert_eq!(
        got,
        [
            (ids[1], 4.5, 2),
            (ids[2], 7.0, 1),
            (ids[0], 2.0, 3),
            (ids[6], 12.0, 2),
            (ids[7], 21.0, 1),
            (ids[8], 31.0, 1),
        ]
    );
    let first = &all[0];
    assert_eq!(
        (first.command.as_str(), first.hostname.as_str()),
        ("machine", "alpha")
    );
    assert_eq!((first.subject.name.as_str(), first.started_at), ("m", 10.0));
    assert_eq!(
        first.metric,
        Metric::new("Sr25519Verify", Unit::PerSecond, Direction::HigherIsBetter)
    );
    assert_eq!(first.workload, None);
    assert_eq!(all[3].workload.as_deref(), Some("transfers"));
    assert_eq!(first.run_uuid.len(), 36);
}

#[test]
fn filters_select_runs_as_the_run_list_does() {
    let (_dir, path) = temp_store();
    let mut store = Store::open(&path).unwrap();
    let ids = write_history(&mut store);
    let machine = RunFilter {
        command: Some("machine".into()),
        ..RunFilter::default()
    };
    assert_eq!(
        values(&store, &query(machine.clone(), None)),
        [(ids[1], 4.5, 2), (ids[2], 7.0, 1), (ids[0], 2.0, 3)]
    );
    let beta = RunFilter {
        host: Some("bet".into()),
        ..machine.clone()
    };
    assert_eq!(values(&store, &query(beta, None)), [(ids[2], 7.0, 1)]);
    let newest_two = RunFilter {
        limit: Some(2),
        ..machine
    };
    assert_eq!(
        values(&store, &query(newest_two, None)),
        [(ids[2], 7.0, 1), (ids[0], 2.0, 3)]
    );
    let releases = RunFilter {
        subject: Some("v1.".into()),
        since: Some(65.0),
        ..RunFilter::default()
    };
    assert_eq!(values(&store, &query(releases, None)), [(ids[7], 21.0, 1)]);
    // A workload is named by compare's settings.workload.name or the bench's string.
    assert_eq!(
        values(&store, &query(RunFilter::default(), Some("transfers"))),
        [(ids[6], 12.0, 2), (ids[8], 31.0, 1)]
    );
}

#[test]
fn an_unknown_metric_is_not_an_empty_history() {
    let (_dir, path) = temp_store();
    let mut store = Store::open(&path).unwrap();
    write_history(&mut store);
    let unknown = HistoryQuery {
        metric: "Sr25519Verfy".into(),
        ..HistoryQuery::default()
    };
    match store.metric_history(&unknown) {
        Err(e @ StoreError::NoSuchMetric { .. }) => {
            assert!(e.is_user_error());
            assert!(e.to_string().contains("\"Sr25519Verfy\""), "{e}");
        }
        other => panic!("{other:?}"),
    }
    let nobody = RunFilter {
        host: Some("gamma".into()),
        ..RunFilter::default()
    };
    assert_eq!(store.metric_history(&query(nobody, None)).unwrap(), []);
    // Registered by every run but never sampled: known to the run list, not a metric
    // with a history.
    assert_eq!(
        store.metric_names().unwrap(),
        ["Blake2256", "Sr25519Verify"]
    );
    let blake = HistoryQuery {
        metric: "Blake2256".into(),
        ..HistoryQuery::default()
    };
    assert!(matches!(
        store.metric_history(&blake),
        Err(StoreError::NoSuchMetric { .. })
    ));
}

#[test]
fn a_history_in_two_units_is_refused() {
    let (_dir, path) = temp_store();
    let mut store = Store::open(&path).unwrap();
    write_history(&mut store);
    let odd = Metric::new(
        "Sr25519Verify",
        Unit::BytesPerSecond,
        Direction::HigherIsBetter,
    );
    let id = store
        .begin_run(&info("machine", "m", "odd", 90.0), &[odd])
        .unwrap();
    store
        .add_samples(id, &[sample("Sr25519Verify", 0, 1.0)])
        .unwrap();
    store.finish_run(id, RunStatus::Complete).unwrap();
    let err = store
        .metric_history(&query(RunFilter::default(), None))
        .unwrap_err();
    assert!(matches!(err, StoreError::MixedUnits { .. }), "{err:?}");
}
