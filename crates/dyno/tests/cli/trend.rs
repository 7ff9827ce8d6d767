//! `dyno results trend` over a store written through the store API: planted steps are
//! found at the runs where they were planted, the exit code follows the newest runs, and
//! bad input exits 2 naming it.

use crate::harness::dyno;
use dyno_model::{Direction, Host, Metric, RunInfo, RunStatus, Sample, Subject, SubjectKind, Unit};
use dyno_store::{RunId, Store};
use std::path::Path;

/// Small deterministic noise, about 0.8% of 100.
const WIGGLE: [f64; 7] = [0.6, -0.9, 0.2, 1.0, -0.4, -0.7, 0.3];

/// Writes one complete `machine` run per value of `metric` on `hostname`, a day apart in
/// order, three samples each around the value (so the run's median is the value).
fn write(path: &Path, metric: &Metric, hostname: &str, values: &[f64]) -> Vec<RunId> {
    let mut store = Store::open(path).unwrap();
    values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let info = RunInfo {
                command: "machine".into(),
                subject: Subject::new(SubjectKind::Machine, hostname),
                host: Host {
                    hostname: hostname.into(),
                    ..Host::default()
                },
                started_at: 1_790_000_000.0 + i as f64 * 86_400.0,
                command_line: vec!["dyno".into(), "machine".into()],
                tool_version: "test".into(),
                settings: serde_json::json!({}),
            };
            let run = store
                .begin_run(&info, std::slice::from_ref(metric))
                .unwrap();
            let samples: Vec<Sample> = [v - 0.01 * v, *v, v + 0.02 * v]
                .iter()
                .enumerate()
                .map(|(r, x)| Sample {
                    metric: metric.name.clone(),
                    repetition: r as u32,
                    value: *x,
                })
                .collect();
            store.add_samples(run, &samples).unwrap();
            store.finish_run(run, RunStatus::Complete).unwrap();
            run
        })
        .collect()
}

/// `levels[k]` for `lens[k]` runs, plus the wiggle.
fn steps(levels: &[f64], lens: &[usize]) -> Vec<f64> {
    let mut out = Vec::new();
    for (level, len) in levels.iter().zip(lens) {
        for _ in 0..*len {
            out.push(level * (1.0 + WIGGLE[out.len() % WIGGLE.len()] / 100.0));
        }
    }
    out
}

fn tps() -> Metric {
    Metric::new("tps", Unit::PerSecond, Direction::HigherIsBetter)
}

fn latency() -> Metric {
    Metric::new("latency", Unit::Seconds, Direction::LowerIsBetter)
}

#[test]
fn a_planted_step_is_found_at_its_run() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db");
    // 30 runs at 100, 30 at 110 on one host; another host's runs must not mix in.
    let ids = write(&db, &tps(), "bench-01", &steps(&[100.0, 110.0], &[30, 30]));
    write(&db, &tps(), "other", &steps(&[500.0], &[10]));
    let out = dyno()
        .args(["results", "trend", "--metric", "tps", "--host", "bench-01"])
        .arg("--db")
        .arg(&db)
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    let row = text
        .lines()
        .find(|l| l.contains("strong"))
        .unwrap_or_else(|| panic!("a strong change point: {text}"));
    assert!(row.contains(&format!(" {} ", ids[30])), "{row}");
    assert!(row.contains("improvement") && row.contains("+10."), "{row}");
    assert!(
        text.contains("no regression: the latest strong change point"),
        "{text}"
    );

    let out = dyno()
        .args(["results", "trend", "--metric", "tps", "--kind", "machine"])
        .args(["--host", "bench-01", "--format", "json"])
        .arg("--db")
        .arg(&db)
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let doc: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(doc["schema"], "dyno.results.trend/1");
    assert_eq!(doc["points"].as_array().unwrap().len(), 60);
    let strong: Vec<&serde_json::Value> = doc["change_points"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["strength"] == "strong")
        .collect();
    assert_eq!(strong.len(), 1, "{doc}");
    assert_eq!(
        (strong[0]["index"].as_u64(), strong[0]["run"].as_i64()),
        (Some(30), Some(ids[30]))
    );
    assert_eq!(strong[0]["effect"], "improvement");
    let change = strong[0]["relative_change"].as_f64().unwrap();
    assert!((change - 0.10).abs() < 0.01, "{change}");
    assert_eq!(doc["verdict"]["regression"], false);
    assert_eq!(doc["metric"]["direction"], "higher_is_better");
}

#[test]
fn the_newest_runs_regressing_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db");
    // Latency: 40 runs at 10 ms, then the newest 4 at 12 ms.
    let ids = write(
        &db,
        &latency(),
        "bench-01",
        &steps(&[0.010, 0.012], &[40, 4]),
    );
    let out = dyno()
        .args([
            "results", "trend", "--metric", "latency", "--format", "json",
        ])
        .arg("--db")
        .arg(&db)
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let doc: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(doc["verdict"]["regression"], true);
    assert_eq!(doc["verdict"]["change_point"], 40);
    let c = &doc["change_points"].as_array().unwrap()[0];
    assert_eq!(
        (c["run"].as_i64(), &c["effect"]),
        (Some(ids[40]), &"regression".into())
    );
    // The table says so in its verdict line; an HTML report carries the plot.
    let html = dir.path().join("trend.html");
    dyno()
        .args([
            "results", "trend", "--metric", "latency", "--format", "html", "--output",
        ])
        .arg(&html)
        .arg("--db")
        .arg(&db)
        .assert()
        .code(1);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("<svg") && page.contains(&format!("run {} +19.8%", ids[40])),
        "the plot marks the run and its change"
    );
    dyno()
        .args(["results", "trend", "--metric", "latency"])
        .arg("--db")
        .arg(&db)
        .assert()
        .code(1)
        .stdout(predicates::str::contains(
            "regression: latency moved from 10.00 ms to 11.98 ms (+19.8%",
        ));
    // Once the regression is older than --recent runs, the newest run is not blamed.
    dyno()
        .args(["results", "trend", "--metric", "latency", "--recent", "3"])
        .arg("--db")
        .arg(&db)
        .assert()
        .code(0)
        .stdout(predicates::str::contains("beyond --recent 3"));
}

#[test]
fn bad_input_exits_2_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db");
    write(&db, &tps(), "bench-01", &steps(&[100.0], &[5]));
    let run = |args: &[&str]| {
        let out = dyno()
            .args(["results", "trend"])
            .args(args)
            .arg("--db")
            .arg(&db)
            .assert()
            .code(2)
            .get_output()
            .stderr
            .clone();
        String::from_utf8(out).unwrap()
    };
    let err = run(&["--metric", "TPS"]);
    assert!(
        err.contains("--metric TPS") && err.contains("did you mean tps?"),
        "{err}"
    );
    let err = run(&["--metric", "tps"]);
    assert!(
        err.contains("history of 5 points; trend needs at least 8"),
        "{err}"
    );
    let err = run(&["--metric", "tps", "--host", "nobody"]);
    assert!(
        err.contains("no complete run") && err.contains("--host nobody"),
        "{err}"
    );
    let err = run(&["--metric", "tps", "--p", "1.5"]);
    assert!(err.contains("--p") && err.contains("1.5"), "{err}");
    let err = run(&["--metric", "tps", "--kind", "fishing"]);
    assert!(err.contains("--kind") && err.contains("fishing"), "{err}");
    let err = run(&["--metric", "tps", "--last", "0"]);
    assert!(err.contains("--last"), "{err}");
    let err = run(&["--metric", "tps", "--format", "html"]);
    assert!(err.contains("--output"), "{err}");
}
