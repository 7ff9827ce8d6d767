//! `dyno pipeline bench` as a session: each layout's bench is run, its report completed
//! (the CPU load before the start), stored as a run with its samples, and returned typed
//! ([`BenchDocument`] is the schema-versioned JSON). The binary parses the arguments,
//! shows progress, and renders what comes back.
//!
//! A run stores one `tps` sample per second of the window (the repetitions), and one
//! sample each of the latency centiles, the fates and the PoH rate.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use dyno_model::{Direction, Host, Metric, RunInfo, RunStatus, Sample, Subject, SubjectKind, Unit};
use dyno_store::Store;
use serde::Serialize;

use crate::bench::{run_bench, BenchOptions, Progress};
use crate::config::BenchConfig;
use crate::error::Result;
use crate::report::BenchReport;
use dyno_tiles::node_log::NodeLog;
use dyno_tiles::node_metrics::NodeMetrics;

/// The schema of [`BenchDocument`] (`dyno pipeline bench --format json`).
pub const BENCH_SCHEMA: &str = "dyno.pipeline.bench/1";

/// A busier machine than this before the start is named in the report's warnings.
pub const BUSY_WARNING: f64 = 0.25;

/// How the bench was asked for; stored with every run.
#[derive(Debug, Clone)]
pub struct Invocation {
    /// `--config`, if the layout came from a file.
    pub config: Option<PathBuf>,
    /// `--workload`, if a built-in workload was run.
    pub workload: Option<String>,
    /// The measured window asked for.
    pub window: Duration,
    /// The exact command line.
    pub command_line: Vec<String>,
    /// dyno's version and build.
    pub tool_version: String,
    /// The machine.
    pub host: Host,
}

/// The `settings` of a stored bench run (the stored JSON's field names).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSettings {
    /// The config file, if any.
    pub config: Option<String>,
    /// The built-in workload, if any.
    pub workload: Option<String>,
    /// Transactions per second offered (0 = flat out).
    pub rate: u64,
    /// The config file's text (empty when it could no longer be read).
    pub config_toml: Option<String>,
    /// The measured window asked for.
    pub duration_s: f64,
    /// Verify tiles of this layout.
    pub verify_tile_count: usize,
    /// Bank tiles of this layout.
    pub bank_tile_count: usize,
}

/// One layout's bench as the session returns it.
#[derive(Debug, Clone)]
pub struct BenchRun {
    /// The report.
    pub report: BenchReport,
    /// When the bench started (Unix seconds).
    pub started_at: f64,
    /// The run it was stored as (none until [`BenchSession::store`]).
    pub run_id: Option<i64>,
}

/// The JSON document of a report: its fields and `schema`.
#[derive(Debug, Serialize)]
pub struct BenchDocument<'a> {
    /// The report's fields.
    #[serde(flatten)]
    pub report: &'a BenchReport,
    /// [`BENCH_SCHEMA`].
    pub schema: &'static str,
}

impl BenchRun {
    /// The report as its schema-versioned JSON document.
    pub fn document(&self) -> BenchDocument<'_> {
        BenchDocument {
            report: &self.report,
            schema: BENCH_SCHEMA,
        }
    }
}

/// Where a bench's events go besides the caller's progress.
#[derive(Default)]
pub struct Sinks<'a> {
    /// The node log (`--node-log`): a JSON line per second and per block.
    pub log: Option<&'a mut NodeLog>,
    /// The node metrics the bench's endpoint serves.
    pub metrics: Option<&'a NodeMetrics>,
}

/// A bench session: runs layouts and stores each as a run.
///
/// Running and storing are two steps so that the caller opens the store only once a
/// bench has finished: a node may run for hours, longer than a database connection
/// should sit idle.
#[derive(Debug, Clone)]
pub struct BenchSession {
    invocation: Invocation,
}

impl BenchSession {
    /// A session of benches asked for by `invocation`.
    pub fn new(invocation: Invocation) -> BenchSession {
        BenchSession { invocation }
    }

    /// Benches layout `c`. `busy_before` is the CPUs' busy fraction the caller measured
    /// just before (a busy machine moves the figures: the report says so); `sinks` take
    /// every event (the node log each second and block, the endpoint's metrics all), and
    /// `progress` sees those the log does not take, and each second.
    pub fn run(
        &self,
        c: &BenchConfig,
        opts: &BenchOptions,
        stop: &AtomicBool,
        busy_before: Option<f64>,
        mut sinks: Sinks<'_>,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<BenchRun> {
        let started_at = dyno_model::now_unix();
        let mut report = run_bench(c, opts, stop, &mut |p: Progress| {
            if let Some(m) = sinks.metrics {
                m.observe(&p);
            }
            let logged = sinks.log.as_mut().is_some_and(|l| l.write(&p));
            if !logged || matches!(p, Progress::Second { .. }) {
                progress(p);
            }
        })?;
        if let Some(b) = busy_before.filter(|b| *b > BUSY_WARNING) {
            report.warnings.push(format!(
                "the CPUs were {:.0}% busy before the start: other work competed with the tiles",
                100.0 * b
            ));
        }
        // A failed write to the node log is the first thing the report warns of.
        if let Some(e) = sinks.log.and_then(NodeLog::take_error) {
            report.warnings.insert(0, e);
        }
        Ok(BenchRun {
            report,
            started_at,
            run_id: None,
        })
    }

    /// Stores `run` (a bench of layout `c`) as a run with its samples; sets its id.
    pub fn store(&self, store: &mut Store, c: &BenchConfig, run: &mut BenchRun) -> Result<i64> {
        let id = store_run(store, &self.invocation, c, &run.report, run.started_at)?;
        run.run_id = Some(id);
        Ok(id)
    }
}

/// What a stored bench run is: the layout.
fn subject(c: &BenchConfig) -> Subject {
    Subject::new(SubjectKind::Layout, format!("leader:{}", c.workspace.name))
        .with("affinity", c.layout.affinity.clone())
        .with("idle", c.layout.idle.clone())
        .with("verify_tile_count", c.layout.verify_tile_count.to_string())
        .with("bank_tile_count", c.layout.bank_tile_count.to_string())
        .with("store", c.store.enabled.to_string())
}

fn settings(inv: &Invocation, c: &BenchConfig) -> RunSettings {
    RunSettings {
        config: inv.config.as_ref().map(|p| p.display().to_string()),
        workload: inv.workload.clone(),
        rate: c.bench.rate,
        config_toml: inv
            .config
            .as_ref()
            .map(|p| std::fs::read_to_string(p).unwrap_or_default()),
        duration_s: inv.window.as_secs_f64(),
        verify_tile_count: c.layout.verify_tile_count,
        bank_tile_count: c.layout.bank_tile_count,
    }
}

/// The settings with the window's diagnosis beside them (`diagnosis`: the bottleneck, its
/// summary, notes and per-kind busy shares), so the run's page can show what limited it
/// without the bench's terminal output.
fn with_diagnosis(
    mut settings: serde_json::Value,
    d: &crate::diagnosis::Diagnosis,
) -> serde_json::Value {
    settings["diagnosis"] = serde_json::to_value(d).expect("diagnosis serialises");
    settings
}

/// The run's one-per-run figures: latency centiles, fates, the PoH rate.
fn scalars(r: &BenchReport) -> Vec<(Metric, f64)> {
    let lat = |n: &str| Metric::new(n, Unit::Nanoseconds, Direction::LowerIsBetter);
    let count = |n: &str, d| Metric::new(n, Unit::Count, d);
    let lower = Direction::LowerIsBetter;
    let f = &r.fates;
    let mut scalars: Vec<(Metric, f64)> = vec![
        (lat("latency_exec_p50"), r.latency_exec.p50 as f64),
        (lat("latency_exec_p99"), r.latency_exec.p99 as f64),
        (lat("latency_poh_p50"), r.latency_poh.p50 as f64),
        (lat("latency_poh_p99"), r.latency_poh.p99 as f64),
        (
            count("txs_executed", Direction::HigherIsBetter),
            f.executed as f64,
        ),
        (count("txs_failed", lower), f.failed as f64),
        (
            count("txs_invalid_signature", lower),
            f.invalid_signature as f64,
        ),
        (count("txs_duplicate", lower), f.duplicate as f64),
        (
            count("txs_overrun_ingress", lower),
            f.overrun_ingress as f64,
        ),
        (count("txs_pack_dropped", lower), f.pack_dropped as f64),
        (count("txs_in_flight", lower), f.in_flight as f64),
    ];
    if r.poh_hash_rate > 0.0 {
        scalars.push((
            Metric::new(
                "poh_hashes_per_second",
                Unit::PerSecond,
                Direction::HigherIsBetter,
            ),
            r.poh_hash_rate,
        ));
    }
    scalars
}

/// Records one layout's run: per-second TPS as repetitions, latencies, fates.
fn store_run(
    store: &mut Store,
    inv: &Invocation,
    c: &BenchConfig,
    r: &BenchReport,
    started_at: f64,
) -> Result<i64> {
    let info = RunInfo {
        command: "pipeline bench".into(),
        subject: subject(c),
        host: inv.host.clone(),
        started_at,
        command_line: inv.command_line.clone(),
        tool_version: inv.tool_version.clone(),
        settings: with_diagnosis(
            serde_json::to_value(settings(inv, c)).expect("settings serialise"),
            &r.diagnosis,
        ),
    };
    let tps = Metric::new("tps", Unit::PerSecond, Direction::HigherIsBetter);
    let scalars = scalars(r);
    let mut metrics = vec![tps.clone()];
    metrics.extend(scalars.iter().map(|(m, _)| m.clone()));
    let id = store.begin_run(&info, &metrics)?;
    let mut samples: Vec<Sample> = r
        .tps
        .per_second
        .iter()
        .enumerate()
        .map(|(i, v)| Sample {
            metric: tps.name.clone(),
            repetition: i as u32,
            value: *v,
        })
        .collect();
    samples.extend(scalars.into_iter().map(|(m, v)| Sample {
        metric: m.name,
        repetition: 0,
        value: v,
    }));
    store.add_samples(id, &samples)?;
    store.finish_run(id, RunStatus::Complete)?;
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stored_settings_keep_their_field_names() {
        let inv = Invocation {
            config: None,
            workload: Some("value".into()),
            window: Duration::from_millis(2500),
            command_line: vec!["dyno".into()],
            tool_version: "t".into(),
            host: Host::default(),
        };
        let c = BenchConfig::workload("value", Some(1000)).unwrap();
        let v = serde_json::to_value(settings(&inv, &c)).unwrap();
        assert_eq!(
            v,
            serde_json::json!({
                "config": null,
                "workload": "value",
                "rate": 1000,
                "config_toml": null,
                "duration_s": 2.5,
                "verify_tile_count": c.layout.verify_tile_count,
                "bank_tile_count": c.layout.bank_tile_count,
            })
        );
    }
}
