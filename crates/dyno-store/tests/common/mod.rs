//! Helpers shared by the integration tests.
#![allow(dead_code)]

use dyno_model::{Direction, Host, Metric, RunInfo, Sample, Subject, SubjectKind, Unit};
use std::path::{Path, PathBuf};

/// A temporary directory and a store path inside a not-yet-existing subdirectory.
pub fn temp_store() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested/dir/results.db");
    (dir, path)
}

pub fn host(name: &str) -> Host {
    Host {
        hostname: name.into(),
        cpu_model: format!("Test CPU, \"{name}\" edition"),
        cpu_flags: vec!["avx2".into(), "sha_ni".into()],
        cores_online: 4,
        memory_bytes: 8 << 30,
        kernel: "6.1.0".into(),
        virtualization: None,
        filesystem: None,
    }
}

pub fn info(command: &str, subject: &str, hostname: &str, started_at: f64) -> RunInfo {
    RunInfo {
        command: command.into(),
        subject: Subject::new(SubjectKind::BuildVariant, subject).with("opt-level", "3"),
        host: host(hostname),
        started_at,
        command_line: vec!["dyno".into(), command.into(), "--flag=a,b".into()],
        tool_version: "0.1.0 (test)".into(),
        settings: serde_json::json!({ "repetitions": 3, "tolerance": 0.05 }),
    }
}

/// Two metrics registered in non-alphabetical order.
pub fn metrics() -> Vec<Metric> {
    vec![
        Metric::new("Sr25519Verify", Unit::PerSecond, Direction::HigherIsBetter),
        Metric::new("Blake2256", Unit::BytesPerSecond, Direction::HigherIsBetter),
    ]
}

pub fn sample(metric: &str, repetition: u32, value: f64) -> Sample {
    Sample {
        metric: metric.into(),
        repetition,
        value,
    }
}

/// Opens the store file directly, to look at or tamper with what the store wrote.
pub fn raw(path: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open(path).unwrap()
}

pub fn count(path: &Path, sql: &str) -> i64 {
    raw(path).query_row(sql, [], |r| r.get(0)).unwrap()
}

/// Parses RFC 4180 CSV (quoted fields may hold commas, quotes and line breaks).
pub fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') => quoted = true,
            (false, ',') => row.push(std::mem::take(&mut field)),
            (false, '\n') => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
            }
            (false, c) => field.push(c),
        }
    }
    assert!(
        field.is_empty() && row.is_empty(),
        "CSV ends with a line break"
    );
    rows
}

/// True when this process can write into a directory whose write bits are off (root,
/// CAP_DAC_OVERRIDE): permission tests cannot observe a refusal then.
pub fn writes_ignore_permissions(dir: &Path) -> bool {
    let probe = dir.join(".probe");
    let ok = std::fs::write(&probe, b"x").is_ok();
    let _ = std::fs::remove_file(&probe);
    ok
}

/// Writes a history of `Sr25519Verify` for the history tests, SQLite and PostgreSQL alike:
/// complete machine runs on two hosts (one with a NaN sample, one with only NaN), a
/// failed run and a running one (both left out of a history), and compare runs whose
/// settings name workloads. Returns the ids in writing order.
pub fn write_history(store: &mut dyno_store::Store) -> Vec<dyno_store::RunId> {
    use dyno_model::RunStatus;
    let mut ids = Vec::new();
    let mut run = |command: &str,
                   subject: &str,
                   hostname: &str,
                   at: f64,
                   values: &[f64],
                   status: Option<RunStatus>,
                   settings: serde_json::Value| {
        let mut i = info(command, subject, hostname, at);
        i.settings = settings;
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
        ids.push(id);
    };
    let none = serde_json::json!({});
    let done = Some(RunStatus::Complete);
    run(
        "machine",
        "m",
        "alpha",
        30.0,
        &[3.0, 1.0, 2.0],
        done,
        none.clone(),
    );
    run(
        "machine",
        "m",
        "alpha",
        10.0,
        &[5.0, 4.0, f64::NAN],
        done,
        none.clone(),
    );
    run("machine", "m", "beta", 20.0, &[7.0], done, none.clone());
    run(
        "machine",
        "m",
        "beta",
        25.0,
        &[f64::NAN],
        done,
        none.clone(),
    );
    run(
        "machine",
        "m",
        "alpha",
        40.0,
        &[99.0],
        Some(RunStatus::Failed),
        none.clone(),
    );
    run("machine", "m", "alpha", 50.0, &[98.0], None, none);
    let w = |name: &str| serde_json::json!({ "workload": { "name": name, "rate": 10 } });
    run(
        "compare",
        "v1.1",
        "alpha",
        60.0,
        &[11.0, 13.0],
        done,
        w("transfers"),
    );
    run("compare", "v1.2", "alpha", 70.0, &[21.0], done, w("swaps"));
    run(
        "pipeline",
        "bench",
        "alpha",
        80.0,
        &[31.0],
        done,
        serde_json::json!({ "workload": "transfers" }),
    );
    ids
}
