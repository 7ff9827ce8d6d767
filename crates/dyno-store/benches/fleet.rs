//! The fleet store, PostgreSQL and SQLite side by side, on one machine:
//!
//! 1. streaming: N samples (default 1,000,000) added to one run in batches of 1,000, as
//!    `dyno machine` writes (one transaction per batch);
//! 2. push: that run copied from a local SQLite store into the store (`dyno results
//!    push`: one transaction, samples by COPY on PostgreSQL);
//! 3. the fleet query over H hosts x R runs (default 1,000 x 100, 5 samples each),
//!    loaded in bulk with SQL, timed 5 times.
//!
//! ```text
//! cargo bench -p dyno-store --bench fleet                    # a throwaway local server
//! cargo bench -p dyno-store --bench fleet -- 100000          # fewer samples
//! DYNO_BENCH_PG=postgres://... cargo bench -p dyno-store --bench fleet   # your server
//! ```
//!
//! The throwaway server runs with `fsync=off` (as the tests' does): the figures are the
//! client's and the server's work, not the disk's flush latency.

use dyno_model::{Direction, Host, Metric, RunInfo, RunStatus, Sample, Subject, SubjectKind, Unit};
use dyno_store::{FleetQuery, Store};
use std::path::Path;
use std::time::Instant;

const BATCH: usize = 1_000;
const HOSTS: usize = 1_000;
const RUNS_PER_HOST: usize = 100;
const SAMPLES_PER_RUN: usize = 5;

fn main() {
    let samples: usize = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .map(|s| s.replace('_', "").parse().expect("sample count"))
        .unwrap_or(1_000_000);
    if cfg!(debug_assertions) {
        println!("WARNING: debug build; run `cargo bench` for meaningful figures");
    }
    let server = match std::env::var("DYNO_BENCH_PG") {
        Ok(_) => None,
        Err(_) => Some(dyno_test_pg::PgServer::start().expect("PostgreSQL is not installed")),
    };
    let db = |name: &str| match (&server, std::env::var("DYNO_BENCH_PG")) {
        (Some(s), _) => s.database(name),
        (None, Ok(url)) => url,
        (None, Err(_)) => unreachable!("a server or DYNO_BENCH_PG"),
    };
    let dir = tempfile::tempdir().expect("temporary directory");
    let metric = Metric::new("Sr25519Verify", Unit::PerSecond, Direction::HigherIsBetter);
    println!("dyno-store fleet bench: {samples} samples, {HOSTS} hosts x {RUNS_PER_HOST} runs");

    // 1 and 2, on both backends.
    let source = dir.path().join("source.db");
    let lite_stream = stream(&mut Store::open(&source).unwrap(), &metric, samples);
    let pg_url = db("stream");
    let pg_stream = stream(&mut open(&pg_url), &metric, samples);
    report("stream", "sqlite", samples, lite_stream);
    report("stream", "postgres", samples, pg_stream);
    let src = Store::open_read_only(&source).unwrap();
    let mut lite_target = Store::open(&dir.path().join("target.db")).unwrap();
    let t = Instant::now();
    src.copy_run(1, &mut lite_target).unwrap();
    report("push", "sqlite", samples, t.elapsed().as_secs_f64());
    let mut pg_target = open(&db("pushed"));
    let t = Instant::now();
    src.copy_run(1, &mut pg_target).unwrap();
    report("push", "postgres", samples, t.elapsed().as_secs_f64());

    // 3.
    let query = FleetQuery {
        metric: metric.name.clone(),
        cpu: None,
        command: Some("machine".into()),
    };
    let lite_path = dir.path().join("fleet.db");
    drop(Store::open(&lite_path).unwrap());
    load_sqlite(&lite_path, &metric);
    let fleet_url = db("fleet");
    drop(open(&fleet_url));
    load_postgres(&fleet_url, &metric);
    for (name, store) in [
        ("sqlite", Store::open_read_only(&lite_path).unwrap()),
        ("postgres", open(&fleet_url)),
    ] {
        let mut times = Vec::new();
        for _ in 0..5 {
            let t = Instant::now();
            let fleet = store.fleet_runs(&query).unwrap();
            times.push(t.elapsed().as_secs_f64());
            assert_eq!(fleet.machines.len(), HOSTS);
            assert!(fleet
                .machines
                .iter()
                .all(|m| m.samples.len() == SAMPLES_PER_RUN));
        }
        times.sort_by(f64::total_cmp);
        println!(
            "fleet    {name:<8} {HOSTS} hosts x {RUNS_PER_HOST} runs  median {:.3} s  (min {:.3}, max {:.3})",
            times[2], times[0], times[4]
        );
    }
}

fn open(url: &str) -> Store {
    Store::open(Path::new(url)).expect("open PostgreSQL store")
}

fn report(what: &str, backend: &str, samples: usize, secs: f64) {
    println!(
        "{what:<8} {backend:<8} {samples:>9} samples  {secs:7.2} s  {:>10.0} samples/s",
        samples as f64 / secs
    );
}

/// Adds `samples` samples to one new run in batches; returns the seconds it took.
fn stream(store: &mut Store, metric: &Metric, samples: usize) -> f64 {
    let info = RunInfo {
        command: "machine".into(),
        subject: Subject::new(SubjectKind::Machine, "bench"),
        host: Host {
            hostname: "bench".into(),
            ..Host::default()
        },
        started_at: 1.0,
        command_line: vec!["dyno".into(), "machine".into()],
        tool_version: "bench".into(),
        settings: serde_json::json!({}),
    };
    let t = Instant::now();
    let run = store
        .begin_run(&info, std::slice::from_ref(metric))
        .unwrap();
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut batch = Vec::with_capacity(BATCH);
    for i in 0..samples {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        batch.push(Sample {
            metric: metric.name.clone(),
            repetition: i as u32,
            value: (rng >> 11) as f64 * 1e-3,
        });
        if batch.len() == BATCH || i + 1 == samples {
            store.add_samples(run, &batch).unwrap();
            batch.clear();
        }
    }
    store.finish_run(run, RunStatus::Complete).unwrap();
    t.elapsed().as_secs_f64()
}

/// `1..=n` as a table with column `x`, in SQL both dialects accept.
fn series(from: usize, to: usize, alias: &str) -> String {
    format!(
        "(WITH RECURSIVE s(x) AS (SELECT {from} UNION ALL SELECT x + 1 FROM s WHERE x < {to}) \
         SELECT x FROM s) AS {alias}"
    )
}

/// The bulk load of the fleet: the same rows in both dialects (`uuid` and `random` are
/// the dialect's expressions for a fresh id and a random value).
fn fleet_sql(metric: &Metric, uuid: &str, random: &str) -> String {
    let (name, unit, dir) = (
        &metric.name,
        metric.unit.symbol(),
        metric.direction.as_str(),
    );
    format!(
        "INSERT INTO subjects (kind, name, attributes) VALUES ('machine', 'fleet', '{{}}');
         INSERT INTO hosts (fingerprint, hostname, cpu_model, json)
           SELECT 'fp' || t.x, 'host-' || t.x, 'CPU model ' || (t.x % 10), '{{}}' FROM {hosts};
         INSERT INTO runs (command, subject_id, host_id, started_at, finished_at, status,
                           command_line, tool_version, settings, uuid)
           SELECT 'machine', (SELECT max(id) FROM subjects), hs.id, u.x, u.x + 1, 'complete',
                  '[]', 'bench', '{{}}', {uuid}
           FROM hosts hs, {runs} WHERE hs.fingerprint LIKE 'fp%';
         INSERT INTO run_metrics (run_id, position, name, unit, direction)
           SELECT id, 0, '{name}', '{unit}', '{dir}' FROM runs WHERE tool_version = 'bench';
         INSERT INTO samples (run_id, metric, repetition, value)
           SELECT id, '{name}', v.x, {random} FROM runs, {reps}
           WHERE tool_version = 'bench';",
        hosts = series(1, HOSTS, "t"),
        runs = series(1, RUNS_PER_HOST, "u"),
        reps = series(0, SAMPLES_PER_RUN - 1, "v"),
    )
}

fn load_postgres(url: &str, metric: &Metric) {
    let (url, password) = dyno_store::split_password(url);
    let mut config: postgres::Config = url.parse().unwrap();
    if let Some(pw) = password {
        config.password(pw);
    }
    let mut client = config.connect(postgres::NoTls).unwrap();
    let sql = fleet_sql(metric, "gen_random_uuid()::text", "random() * 1000");
    client.batch_execute(&sql).unwrap();
    client.batch_execute("ANALYZE").unwrap();
}

fn load_sqlite(path: &Path, metric: &Metric) {
    let conn = rusqlite::Connection::open(path).unwrap();
    let sql = fleet_sql(
        metric,
        "lower(hex(randomblob(16)))",
        "abs(random() % 1000000) / 1000.0",
    );
    conn.execute_batch(&format!("BEGIN; {sql} COMMIT; ANALYZE;"))
        .unwrap();
}
