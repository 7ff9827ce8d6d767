//! A metric's history over the store's existing read API: the complete runs of one
//! command on one host and subject that measured the metric, oldest first, with their
//! samples of it.
//!
//! This reads every candidate run in full (`Store::run`), which is fine for the
//! thousands of runs a local store holds; a store-side history query would read only
//! the metric's samples.

use dyno_model::{Metric, RunStatus};
use dyno_store::{RunFilter, RunId, Store, StoreError};
use std::collections::BTreeMap;

/// Which runs form one history: the same command, host and subject (exact names).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct SeriesKey {
    /// The metric.
    pub metric: String,
    /// The command that measured it.
    pub command: String,
    /// The host name.
    pub host: String,
    /// The subject name.
    pub subject: String,
}

/// One run of a history.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HistoryRun {
    /// The run.
    pub run: RunId,
    /// When it started.
    pub started_at: f64,
    /// Its finite samples of the metric, in repetition order.
    pub values: Vec<f64>,
}

/// One history: the metric (unit and direction of the newest run) and its runs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct History {
    /// What the runs measured.
    pub key: SeriesKey,
    /// Unit and direction.
    pub metric: Metric,
    /// The runs, oldest first.
    pub runs: Vec<HistoryRun>,
}

/// What a history page asks for: a metric, and optionally the command, host and subject
/// (each exact); `None` matches every value.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct HistoryQuery<'a> {
    /// The metric; `None` lists every series of every metric (the index).
    pub metric: Option<&'a str>,
    /// The command.
    pub command: Option<&'a str>,
    /// The host name.
    pub host: Option<&'a str>,
    /// The subject name.
    pub subject: Option<&'a str>,
}

/// Every history that matches `q`, ordered by metric, command, host and subject. Only
/// complete runs count: an interrupted run's samples are a part of a measurement.
pub(crate) fn histories(store: &Store, q: &HistoryQuery<'_>) -> Result<Vec<History>, StoreError> {
    let filter = RunFilter {
        command: q.command.map(String::from),
        host: q.host.map(String::from),
        subject: q.subject.map(String::from),
        ..RunFilter::default()
    };
    let mut summaries = store.list_runs(&filter)?;
    // Oldest first, so every history is in run order.
    summaries.reverse();
    let mut out: BTreeMap<SeriesKey, History> = BTreeMap::new();
    for s in summaries {
        let exact = |want: Option<&str>, have: &str| want.is_none_or(|w| w == have);
        if s.status != RunStatus::Complete
            || !exact(q.host, &s.hostname)
            || !exact(q.subject, &s.subject.name)
        {
            continue;
        }
        let run = store.run(s.id)?;
        for m in run.metrics.iter().filter(|m| exact(q.metric, &m.name)) {
            let values: Vec<f64> = run
                .samples
                .iter()
                .filter(|x| x.metric == m.name && x.value.is_finite())
                .map(|x| x.value)
                .collect();
            if values.is_empty() {
                continue;
            }
            let key = SeriesKey {
                metric: m.name.clone(),
                command: s.command.clone(),
                host: s.hostname.clone(),
                subject: s.subject.name.clone(),
            };
            let h = out.entry(key.clone()).or_insert_with(|| History {
                key,
                metric: m.clone(),
                runs: Vec::new(),
            });
            h.metric = m.clone();
            h.runs.push(HistoryRun {
                run: s.id,
                started_at: s.started_at,
                values,
            });
        }
    }
    Ok(out.into_values().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyno_model::{Direction, Host, RunInfo, Sample, Subject, SubjectKind, Unit};

    fn add(store: &mut Store, host: &str, t: f64, values: &[f64], status: RunStatus) -> RunId {
        let info = RunInfo {
            command: "machine".into(),
            subject: Subject::new(SubjectKind::Machine, host),
            host: Host {
                hostname: host.into(),
                ..Host::default()
            },
            started_at: t,
            command_line: vec!["dyno".into(), "machine".into()],
            tool_version: "test".into(),
            settings: serde_json::json!({}),
        };
        let m = Metric::new("Blake2256", Unit::BytesPerSecond, Direction::HigherIsBetter);
        let id = store.begin_run(&info, &[m]).unwrap();
        let samples: Vec<Sample> = values
            .iter()
            .enumerate()
            .map(|(i, v)| Sample {
                metric: "Blake2256".into(),
                repetition: i as u32,
                value: *v,
            })
            .collect();
        store.add_samples(id, &samples).unwrap();
        store.finish_run(id, status).unwrap();
        id
    }

    #[test]
    fn one_history_per_host_in_run_order_with_complete_runs_only() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("r.db")).unwrap();
        let late = add(
            &mut store,
            "a",
            300.0,
            &[3.0, f64::NAN],
            RunStatus::Complete,
        );
        let early = add(&mut store, "a", 100.0, &[1.0, 1.5], RunStatus::Complete);
        add(&mut store, "a", 200.0, &[9.0], RunStatus::Failed);
        // A host whose name contains the other's is a different machine.
        add(&mut store, "ab", 150.0, &[2.0], RunStatus::Complete);

        let all = histories(&store, &HistoryQuery::default()).unwrap();
        assert_eq!(all.len(), 2);
        let a = &all[0];
        assert_eq!(
            (a.key.host.as_str(), a.key.metric.as_str()),
            ("a", "Blake2256")
        );
        let runs: Vec<(RunId, Vec<f64>)> =
            a.runs.iter().map(|r| (r.run, r.values.clone())).collect();
        assert_eq!(runs, vec![(early, vec![1.0, 1.5]), (late, vec![3.0])]);

        let q = HistoryQuery {
            metric: Some("Blake2256"),
            host: Some("a"),
            ..HistoryQuery::default()
        };
        assert_eq!(histories(&store, &q).unwrap().len(), 1);
        let unknown = HistoryQuery {
            metric: Some("Nope"),
            ..HistoryQuery::default()
        };
        assert!(histories(&store, &unknown).unwrap().is_empty());
    }
}
