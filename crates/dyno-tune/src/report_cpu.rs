//! The study per CPU family: when a (fleet) store holds runs of one study from machines
//! with different CPU models, each variant's median and 95% interval per CPU model, how
//! many hosts and runs are behind each figure, and the recommended variants per model.
//!
//! A CPU family is the CPU model string exactly as the host recorded it (`AMD EPYC 7B13`);
//! a host is a host name within it. Subjects are matched across machines by variant id
//! (baselines: by name), not by binary hash: each machine builds its own binary of a
//! variant, and the question is which *settings* win on which CPU. The recommendation is
//! the report's rule ([`crate::race::recommended`]) applied to each family's pooled
//! samples; the race's eliminations are not replayed per family (each machine raced on its
//! own), so every variant measured on a family is a candidate there.

use crate::error::TuneError;
use crate::race::{metrics_of, recommended, values, RaceConfig, Replay};
use crate::record::{read_run, study_runs, JobRecord};
use dyno_model::{format_value, Direction, Metric, SubjectKind};
use dyno_report::{Align, Cell, Section, Table};
use dyno_stats::{median, median_ci};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// One subject's figures on one CPU family and metric.
#[derive(Debug, Clone, PartialEq)]
pub struct FamilyRow {
    /// Subject label (variant label or baseline name).
    pub label: String,
    /// `true` for a baseline.
    pub baseline: bool,
    /// Hosts of this family that measured it.
    pub hosts: usize,
    /// Stored runs behind it.
    pub runs: usize,
    /// Samples.
    pub n: usize,
    /// Median.
    pub median: f64,
    /// 95% distribution-free interval of the median.
    pub ci: (f64, f64),
}

/// One metric on one CPU family, best median first.
#[derive(Debug, Clone, PartialEq)]
pub struct FamilyMetric {
    /// The metric.
    pub metric: Metric,
    /// Rows, best first.
    pub rows: Vec<FamilyRow>,
}

/// One CPU family's results.
#[derive(Debug, Clone, PartialEq)]
pub struct CpuFamily {
    /// The CPU model as recorded by its hosts.
    pub cpu_model: String,
    /// Hosts (distinct host names) of this family that ran the study.
    pub hosts: usize,
    /// Stored runs of the study on this family.
    pub runs: usize,
    /// Per metric.
    pub metrics: Vec<FamilyMetric>,
    /// Labels of the variants recommended on this family.
    pub recommended: Vec<String>,
}

/// A subject as seen across machines.
struct FleetSubject {
    label: String,
    baseline: bool,
}

/// What one family measured of one subject.
#[derive(Default)]
struct Measured {
    records: Vec<JobRecord>,
    hosts: BTreeSet<String>,
    runs: usize,
}

/// The study's results per CPU family, from every run of `study_key` in the store; empty
/// when the runs come from fewer than two CPU families (the report is then unchanged).
/// `benchmarks` and `config` are the study's, for the recommendation rule.
pub fn per_cpu(
    store: &dyno_store::Store,
    study_key: &str,
    benchmarks: &[String],
    config: RaceConfig,
) -> Result<Vec<CpuFamily>, TuneError> {
    let mut subjects: Vec<FleetSubject> = Vec::new();
    let mut identities: Vec<String> = Vec::new();
    let mut families: BTreeMap<String, BTreeMap<usize, Measured>> = BTreeMap::new();
    let runs: Vec<(dyno_store::RunId, String, dyno_model::RunInfo)> = study_runs(store, study_key)?
        .into_iter()
        .map(|(run, key)| Ok((run, key, store.run(run)?.info)))
        .collect::<Result<_, TuneError>>()?;
    // A single machine's (or a single CPU model's) store: no section, and no samples read
    // a second time.
    let models: BTreeSet<&str> = runs
        .iter()
        .map(|(_, _, i)| i.host.cpu_model.as_str())
        .collect();
    if models.len() < 2 {
        return Ok(Vec::new());
    }
    for (run, key, info) in &runs {
        // The key ends in the binary's hash (see `session::lineup`); without it, the key
        // names the variant (or baseline) on every machine.
        let identity = key.rsplit_once('-').map_or(key.as_str(), |(id, _)| id);
        let s = match identities.iter().position(|i| i == identity) {
            Some(s) => s,
            None => {
                identities.push(identity.to_string());
                subjects.push(FleetSubject {
                    label: info.subject.name.clone(),
                    baseline: info.subject.kind == SubjectKind::Release,
                });
                subjects.len() - 1
            }
        };
        let measured = families
            .entry(info.host.cpu_model.clone())
            .or_default()
            .entry(s)
            .or_default();
        measured.records.extend(read_run(store, *run)?);
        measured.hosts.insert(info.host.hostname.clone());
        measured.runs += 1;
    }
    let baseline: Vec<bool> = subjects.iter().map(|s| s.baseline).collect();
    families
        .into_iter()
        .map(|(cpu_model, measured)| {
            family(
                cpu_model, &measured, &subjects, &baseline, benchmarks, config,
            )
        })
        .collect()
}

fn family(
    cpu_model: String,
    measured: &BTreeMap<usize, Measured>,
    subjects: &[FleetSubject],
    baseline: &[bool],
    benchmarks: &[String],
    config: RaceConfig,
) -> Result<CpuFamily, TuneError> {
    let mut records = vec![Vec::new(); subjects.len()];
    for (&s, m) in measured {
        records[s] = m.records.clone();
    }
    let metrics = metrics_of(&records)
        .into_iter()
        .map(|metric| {
            let mut rows: Vec<FamilyRow> = measured
                .iter()
                .filter_map(|(&s, m)| {
                    let v = values(&records[s], &metric.name, u32::MAX);
                    let med = median(&v)?;
                    let ci = median_ci(&v, 0.95).map_or((med, med), |c| (c.low, c.high));
                    Some(FamilyRow {
                        label: subjects[s].label.clone(),
                        baseline: subjects[s].baseline,
                        hosts: m.hosts.len(),
                        runs: m.runs,
                        n: v.len(),
                        median: med,
                        ci,
                    })
                })
                .collect();
            rows.sort_by(|a, b| {
                let o = a.median.total_cmp(&b.median);
                match metric.direction {
                    Direction::HigherIsBetter => o.reverse(),
                    Direction::LowerIsBetter => o,
                }
            });
            FamilyMetric { metric, rows }
        })
        .collect();
    let replay = Replay::new(config, benchmarks, baseline);
    let recommended = recommended(&replay, &records)?
        .into_iter()
        .map(|s| subjects[s].label.clone())
        .collect();
    let hosts: BTreeSet<&String> = measured.values().flat_map(|m| &m.hosts).collect();
    Ok(CpuFamily {
        cpu_model,
        hosts: hosts.len(),
        runs: measured.values().map(|m| m.runs).sum(),
        metrics,
        recommended,
    })
}

/// One table per metric with a block of rows per CPU family (empty with one family).
pub fn per_cpu_tables(families: &[CpuFamily]) -> Vec<Table> {
    let mut metrics: Vec<&Metric> = Vec::new();
    for m in families.iter().flat_map(|f| &f.metrics) {
        if !metrics.iter().any(|seen| seen.name == m.metric.name) {
            metrics.push(&m.metric);
        }
    }
    metrics
        .into_iter()
        .map(|metric| per_cpu_table(families, metric))
        .collect()
}

fn per_cpu_table(families: &[CpuFamily], metric: &Metric) -> Table {
    let dir = match metric.direction {
        Direction::HigherIsBetter => "higher is better",
        Direction::LowerIsBetter => "lower is better",
    };
    let mut t = Table::new(format!("{} per CPU family ({dir})", metric.name))
        .column("CPU family", Align::Left)
        .column("subject", Align::Left)
        .column("hosts", Align::Right)
        .column("runs", Align::Right)
        .column("n", Align::Right)
        .column("median", Align::Right)
        .column("95% CI", Align::Right)
        .column("status", Align::Left);
    for f in families {
        let Some(m) = f.metrics.iter().find(|m| m.metric.name == metric.name) else {
            continue;
        };
        for row in &m.rows {
            let rec = f.recommended.contains(&row.label);
            let label = Cell::new(row.label.clone());
            let status = if row.baseline {
                Cell::new("baseline")
            } else if rec {
                Cell::new("recommended").good()
            } else {
                Cell::new("-")
            };
            t.push_row(vec![
                Cell::new(f.cpu_model.clone()),
                if rec { label.good() } else { label },
                Cell::new(row.hosts.to_string()),
                Cell::new(row.runs.to_string()),
                Cell::new(row.n.to_string()),
                Cell::new(format_value(row.median, metric.unit)),
                Cell::new(format!(
                    "{} .. {}",
                    format_value(row.ci.0, metric.unit),
                    format_value(row.ci.1, metric.unit)
                )),
                status,
            ]);
        }
    }
    t
}

/// One line per CPU family: hosts, runs and its recommended variants (empty with one
/// family).
pub fn per_cpu_text(families: &[CpuFamily]) -> String {
    let mut out = String::new();
    for f in families {
        let rec = if f.recommended.is_empty() {
            "none".to_string()
        } else {
            f.recommended.join(", ")
        };
        out.push_str(&format!(
            "Recommended on {} ({} hosts, {} runs): {rec}\n",
            f.cpu_model, f.hosts, f.runs
        ));
    }
    out
}

/// The HTML section of the per-family results, when there are several families.
pub fn per_cpu_section(families: &[CpuFamily]) -> Option<Section> {
    if families.is_empty() {
        return None;
    }
    let mut section = Section::new("Per CPU family").paragraph(
        "Runs of this study from machines with different CPU models: each variant per CPU model, and the variants recommended on each (the report's rule applied to that model's samples).",
    );
    for line in per_cpu_text(families).lines() {
        section = section.paragraph(line.to_string());
    }
    for t in per_cpu_tables(families) {
        section = section.table(t);
    }
    Some(section)
}

/// The `per_cpu` field of the JSON report (`[]` with one family).
pub fn per_cpu_json(families: &[CpuFamily]) -> Value {
    families
        .iter()
        .map(|f| {
            let mut results = Map::new();
            for m in &f.metrics {
                let rows: Vec<Value> = m
                    .rows
                    .iter()
                    .map(|r| {
                        json!({
                            "label": r.label,
                            "kind": if r.baseline { "baseline" } else { "variant" },
                            "hosts": r.hosts,
                            "runs": r.runs,
                            "n": r.n,
                            "median": r.median,
                            "ci95_low": r.ci.0,
                            "ci95_high": r.ci.1,
                            "recommended": f.recommended.contains(&r.label),
                        })
                    })
                    .collect();
                results.insert(m.metric.name.clone(), Value::Array(rows));
            }
            json!({
                "cpu_model": f.cpu_model,
                "hosts": f.hosts,
                "runs": f.runs,
                "recommended": f.recommended,
                "results": results,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::Reading;
    use crate::record::{JobResult, Recorder, StoreRecorder, SubjectKey};
    use crate::Mode;
    use dyno_model::{Host, Subject, Unit};
    use dyno_store::Store;

    const STUDY: &str = "study-key";
    const EPYC: &str = "AMD EPYC 7B13";
    const XEON: &str = "Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz";

    fn key(variant: &str, sha: &str) -> SubjectKey {
        SubjectKey {
            key: format!("{variant}-{sha}"),
            subject: Subject::new(SubjectKind::BuildVariant, format!("label {variant}"))
                .with("variant", variant),
        }
    }

    /// Records ten rounds of `ops` per subject on one host; `centers[i]` is subject i's
    /// level, spread by a deterministic +-1% so intervals are not points.
    fn record(store: &mut Store, hostname: &str, cpu: &str, subjects: &[(SubjectKey, f64)]) {
        let host = Host {
            hostname: hostname.into(),
            cpu_model: cpu.into(),
            ..Host::default()
        };
        let mut rec = StoreRecorder::new(
            store,
            STUDY,
            host,
            vec!["dyno".into()],
            "0.1.0",
            json!({ "mode": "racing" }),
        );
        let keys: Vec<SubjectKey> = subjects.iter().map(|(k, _)| k.clone()).collect();
        rec.load(&keys).unwrap();
        for round in 1..=10u32 {
            for (s, (_, center)) in subjects.iter().enumerate() {
                let wobble = f64::from(round % 5) * 0.005 - 0.01;
                let job = JobRecord {
                    round,
                    benchmark: "sum".into(),
                    elapsed_s: 0.1,
                    result: JobResult::Ok(vec![Reading {
                        metric: Metric::new("ops", Unit::PerSecond, Direction::HigherIsBetter),
                        value: center * (1.0 + wobble),
                    }]),
                };
                rec.record(s, &job).unwrap();
            }
        }
        rec.finish(true).unwrap();
    }

    fn families(store: &Store) -> Vec<CpuFamily> {
        let config = RaceConfig::from_settings(&crate::RunSettings::default(), Mode::Racing);
        per_cpu(store, STUDY, &["sum".to_string()], config).unwrap()
    }

    #[test]
    fn each_cpu_family_gets_its_own_figures_and_recommendation() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("results.db")).unwrap();
        // Each machine built its own binaries (different hashes in the keys): the same
        // variant must still be one subject across machines.
        record(
            &mut store,
            "epyc-1",
            EPYC,
            &[(key("a", "1111"), 100.0), (key("b", "2222"), 200.0)],
        );
        assert!(families(&store).is_empty(), "one family: no section");
        record(&mut store, "epyc-2", EPYC, &[(key("a", "3333"), 100.0)]);
        assert!(
            families(&store).is_empty(),
            "two hosts, one family: no section"
        );
        record(
            &mut store,
            "xeon-1",
            XEON,
            &[(key("a", "4444"), 300.0), (key("b", "5555"), 150.0)],
        );
        let f = families(&store);
        assert_eq!(f.len(), 2);
        let (epyc, xeon) = (&f[0], &f[1]);
        assert_eq!(
            (epyc.cpu_model.as_str(), epyc.hosts, epyc.runs),
            (EPYC, 2, 3)
        );
        assert_eq!(
            (xeon.cpu_model.as_str(), xeon.hosts, xeon.runs),
            (XEON, 1, 2)
        );
        assert_eq!(epyc.recommended, vec!["label b".to_string()]);
        assert_eq!(xeon.recommended, vec!["label a".to_string()]);
        let rows = &epyc.metrics[0].rows;
        assert_eq!(rows[0].label, "label b");
        assert_eq!((rows[0].hosts, rows[0].runs, rows[0].n), (1, 1, 10));
        assert_eq!(rows[1].label, "label a");
        assert_eq!((rows[1].hosts, rows[1].runs, rows[1].n), (2, 2, 20));
        assert!((rows[1].median - 100.0).abs() < 1.0, "{}", rows[1].median);
        assert!(rows[1].ci.0 <= rows[1].median && rows[1].median <= rows[1].ci.1);
        let rows = &xeon.metrics[0].rows;
        assert_eq!(rows[0].label, "label a");
        assert!((rows[0].median - 300.0).abs() < 3.0, "{}", rows[0].median);
        assert!((rows[1].median - 150.0).abs() < 1.5, "{}", rows[1].median);
    }
}
