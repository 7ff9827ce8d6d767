//! Metric histories as the pages show them: the store's [`Store::metric_history`] (one
//! median per complete run, oldest first), split into one series per command, host,
//! subject and workload, each with its change points ([`dyno_stats::change_points`],
//! default settings, as `dyno results trend` finds them).

use dyno_model::Metric;
use dyno_stats::{change_points, ChangePoint, ChangePointSettings};
use dyno_store::{HistoryPoint, HistoryQuery, RunFilter, Store, StoreError};
use std::collections::BTreeMap;

/// What one history is of: the same metric, command, host, subject and workload
/// (exact names).
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
    /// The workload in the run's settings, if it names one.
    pub workload: Option<String>,
}

/// One history with its change points.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct History {
    /// What the runs measured.
    pub key: SeriesKey,
    /// Unit and direction.
    pub metric: Metric,
    /// One point per run, oldest first.
    pub points: Vec<HistoryPoint>,
    /// Where the level shifted (indexes into `points`), oldest first.
    pub changes: Vec<ChangePoint>,
}

/// What a history page asks for; `None` matches every value, names are exact.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct SeriesFilter<'a> {
    /// The metric; `None` lists every series of every metric (the index).
    pub metric: Option<&'a str>,
    /// The command.
    pub command: Option<&'a str>,
    /// The host name.
    pub host: Option<&'a str>,
    /// The subject name.
    pub subject: Option<&'a str>,
    /// The workload.
    pub workload: Option<&'a str>,
}

/// Every history that matches `f`, ordered by metric, command, host, subject and
/// workload. A metric the store does not know is [`StoreError::NoSuchMetric`]; in the
/// index, a metric stored in two units (runs of dyno versions that disagree) is left out
/// rather than failing the whole page.
pub(crate) fn histories(store: &Store, f: &SeriesFilter<'_>) -> Result<Vec<History>, StoreError> {
    let names = match f.metric {
        Some(m) => vec![m.to_string()],
        None => store.metric_names()?,
    };
    let mut out = Vec::new();
    for name in names {
        let query = HistoryQuery {
            metric: name,
            // The store matches host and subject as substrings; exact names are kept below.
            runs: RunFilter {
                command: f.command.map(String::from),
                host: f.host.map(String::from),
                subject: f.subject.map(String::from),
                ..RunFilter::default()
            },
            workload: f.workload.map(String::from),
        };
        match store.metric_history(&query) {
            Ok(points) => out.extend(split(f, points)),
            Err(StoreError::MixedUnits { .. }) if f.metric.is_none() => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

/// Splits one metric's points into series and finds each one's change points.
fn split(f: &SeriesFilter<'_>, points: Vec<HistoryPoint>) -> Vec<History> {
    let exact = |want: Option<&str>, have: &str| want.is_none_or(|w| w == have);
    let mut series: BTreeMap<SeriesKey, History> = BTreeMap::new();
    for p in points {
        if !exact(f.host, &p.hostname) || !exact(f.subject, &p.subject.name) {
            continue;
        }
        let key = SeriesKey {
            metric: p.metric.name.clone(),
            command: p.command.clone(),
            host: p.hostname.clone(),
            subject: p.subject.name.clone(),
            workload: p.workload.clone(),
        };
        series
            .entry(key.clone())
            .or_insert_with(|| History {
                key,
                metric: p.metric.clone(),
                points: Vec::new(),
                changes: Vec::new(),
            })
            .points
            .push(p);
    }
    let settings = ChangePointSettings::default();
    series
        .into_values()
        .map(|mut h| {
            let values: Vec<f64> = h.points.iter().map(|p| p.value).collect();
            // Medians of finite samples are finite; an error would mean no change points.
            h.changes = change_points(&values, &settings).unwrap_or_default();
            h
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyno_model::{Direction, Host, RunInfo, RunStatus, Sample, Subject, SubjectKind, Unit};
    use dyno_store::RunId;

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
        let early = add(&mut store, "a", 100.0, &[1.0, 2.0], RunStatus::Complete);
        add(&mut store, "a", 200.0, &[9.0], RunStatus::Failed);
        // A host whose name contains the other's is a different machine.
        add(&mut store, "ab", 150.0, &[2.0], RunStatus::Complete);

        let all = histories(&store, &SeriesFilter::default()).unwrap();
        assert_eq!(all.len(), 2);
        let a = &all[0];
        assert_eq!(
            (a.key.host.as_str(), a.key.metric.as_str()),
            ("a", "Blake2256")
        );
        let runs: Vec<(RunId, f64)> = a.points.iter().map(|p| (p.run, p.value)).collect();
        assert_eq!(runs, vec![(early, 1.5), (late, 3.0)]);

        let only_a = SeriesFilter {
            metric: Some("Blake2256"),
            host: Some("a"),
            ..SeriesFilter::default()
        };
        assert_eq!(histories(&store, &only_a).unwrap().len(), 1);
        let unknown = SeriesFilter {
            metric: Some("Nope"),
            ..SeriesFilter::default()
        };
        assert!(matches!(
            histories(&store, &unknown),
            Err(StoreError::NoSuchMetric { .. })
        ));
    }

    #[test]
    fn a_shifted_level_has_a_change_point_where_it_shifts() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("r.db")).unwrap();
        let wiggle = [0.8, -1.1, 0.3, -0.4, 1.2];
        for i in 0..40 {
            let level = if i < 20 { 100.0 } else { 120.0 };
            let v = level + wiggle[i % 5];
            add(&mut store, "a", i as f64, &[v], RunStatus::Complete);
        }
        let h = histories(&store, &SeriesFilter::default()).unwrap();
        let at: Vec<usize> = h[0].changes.iter().map(|c| c.index).collect();
        assert_eq!(at, vec![20]);
    }
}
