//! `dyno results push`, `pull` and `fleet`, and `--db postgres://...`, against a real
//! throwaway PostgreSQL server (skipped with a note where PostgreSQL is not installed).
//!
//! Two machines: this host (a real `dyno machine` run) and a peer with another host
//! fingerprint (its runs written through the store API, as `dyno machine` writes them,
//! into its own SQLite store). Each pushes from its own process; `dyno results fleet`
//! then places this host among both. No assertion depends on this machine's speed.

use crate::harness::PgServer;
use assert_cmd::Command;
use dyno_model::{Host, RunInfo, RunStatus, Sample, Subject, SubjectKind};
use dyno_store::Store;
use std::path::Path;

fn json(c: &mut Command) -> serde_json::Value {
    let out = c.assert().code(0).get_output().stdout.clone();
    serde_json::from_slice(&out).unwrap()
}
use crate::harness::dyno;

/// A peer machine's store: `runs` complete `machine` runs of Sr25519Verify.
fn peer_store(path: &Path, hostname: &str, cpu: &str, values: &[f64]) {
    let mut store = Store::open(path).unwrap();
    // The metric as dyno machine registers it (unit and direction).
    let metric = dyno_hw::MetricId::Sr25519Verify.metric();
    let info = RunInfo {
        command: "machine".into(),
        subject: Subject::new(SubjectKind::Machine, hostname),
        host: Host {
            hostname: hostname.into(),
            cpu_model: cpu.into(),
            cores_online: 64,
            ..Host::default()
        },
        started_at: 1_795_000_000.0,
        command_line: vec!["dyno".into(), "machine".into()],
        tool_version: "test".into(),
        settings: serde_json::json!({}),
    };
    let run = store.begin_run(&info, &[metric]).unwrap();
    let samples: Vec<Sample> = values
        .iter()
        .enumerate()
        .map(|(i, v)| Sample {
            metric: "Sr25519Verify".into(),
            repetition: i as u32,
            value: *v,
        })
        .collect();
    store.add_samples(run, &samples).unwrap();
    store.finish_run(run, RunStatus::Complete).unwrap();
}

#[test]
fn two_machines_push_and_the_fleet_places_this_host() {
    let Some(server) = PgServer::start() else {
        return;
    };
    let url = server.database("fleet");
    let dir = tempfile::tempdir().unwrap();
    let mine = dir.path().join("mine.db");
    let peer = dir.path().join("peer.db");

    // This host measures for real.
    dyno()
        .args([
            "machine",
            "--only",
            "Sr25519Verify",
            "--verify-duration",
            "0.02",
        ])
        .args(["--repeat", "3", "--allow-fail", "--format", "json", "--db"])
        .arg(&mine)
        .assert()
        .code(0);
    // A peer so fast that this host cannot beat it, and one so slow it cannot lose.
    peer_store(&peer, "peer-fast", "Peer CPU 9000", &[1e12, 1.1e12, 0.9e12]);
    peer_store(&peer, "peer-slow", "Peer CPU 9000", &[1e-3, 2e-3]);

    for store in [&mine, &peer] {
        dyno()
            .args(["results", "push", "--db"])
            .arg(store)
            .args(["--to", &url])
            .assert()
            .code(0);
    }
    // A second push stores nothing twice.
    let again = dyno()
        .args(["results", "push", "--db"])
        .arg(&peer)
        .args(["--to", &url])
        .assert()
        .code(0);
    let said = String::from_utf8_lossy(&again.get_output().stderr).to_string();
    assert!(
        said.contains("0 run(s) copied") && said.contains("2 already there"),
        "{said}"
    );
    let listed = json(dyno().args(["results", "list", "--format", "json", "--db", &url]));
    assert_eq!(listed["runs"].as_array().unwrap().len(), 3);

    let fleet = json(dyno().args([
        "results",
        "fleet",
        "--db",
        &url,
        "--metric",
        "Sr25519Verify",
        "--format",
        "json",
        "--reference",
        "substrate",
    ]));
    assert_eq!(fleet["schema"], "dyno.results.fleet/1");
    let machines = fleet["machines"].as_array().unwrap();
    let hosts: Vec<&str> = machines
        .iter()
        .map(|m| m["hostname"].as_str().unwrap())
        .collect();
    let me = dyno_proc::host::probe(Path::new("."));
    assert_eq!(hosts.len(), 3, "{hosts:?}");
    assert!(hosts.contains(&me.hostname.as_str()) && hosts.contains(&"peer-fast"));
    let standing = &fleet["standing"];
    assert_eq!(standing["source"], "this host");
    assert_eq!(standing["hostname"], me.hostname.as_str());
    // Between the slow and the fast peer: beats one of three, ties itself.
    assert_eq!(standing["percentile_all"], 50.0);
    assert_eq!(standing["percentile_cpu"], 50.0);
    assert_eq!(fleet["overall"]["machines"], 3);
    let peer_cpu = fleet["cpu_models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["cpu_model"] == "Peer CPU 9000")
        .unwrap();
    assert_eq!(peer_cpu["machines"], 2);
    let median = peer_cpu["median"].as_f64().unwrap();
    assert!((median / 5e11 - 1.0).abs() < 1e-12, "{median}");
    // The substrate set has an Sr25519Verify minimum: the fast peer meets it, the slow
    // one does not.
    assert_eq!(peer_cpu["passing_share"], 0.5);

    // The table names both CPU models and this host's place; the HTML has a box plot.
    let html = dir.path().join("fleet.html");
    let out = dyno()
        .args([
            "results",
            "fleet",
            "--db",
            &url,
            "--metric",
            "Sr25519Verify",
            "--html",
        ])
        .arg(&html)
        .assert()
        .code(0);
    let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    assert!(
        text.contains("Peer CPU 9000") && text.contains("percentile 50"),
        "{text}"
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<svg") && page.contains("Peer CPU 9000"));

    // Pull the fleet into a fresh local store: the same three runs, same uuids.
    let pulled = dir.path().join("pulled.db");
    dyno()
        .args(["results", "pull", "--from", &url, "--db"])
        .arg(&pulled)
        .assert()
        .code(0);
    let local = json(
        dyno()
            .args(["results", "list", "--format", "json", "--db"])
            .arg(&pulled),
    );
    let uuids = |v: &serde_json::Value| {
        let mut u: Vec<String> = v["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["uuid"].as_str().unwrap().to_string())
            .collect();
        u.sort();
        u
    };
    assert_eq!(uuids(&local), uuids(&listed));
}

#[test]
fn every_command_writes_to_postgres_and_passwords_stay_secret() {
    let Some(server) = PgServer::start() else {
        return;
    };
    server.database("secret");
    server.psql("secret", "GRANT CREATE ON SCHEMA public TO pwuser");
    let url = server.url_as("pwuser", Some("right-password"), "secret");
    // DYNO_DB selects PostgreSQL for dyno machine like any other store.
    dyno()
        .env("DYNO_DB", &url)
        .args([
            "machine",
            "--only",
            "Sr25519Verify",
            "--verify-duration",
            "0.02",
        ])
        .args(["--allow-fail", "--format", "json", "--db", &url])
        .assert()
        .code(0);
    let runs = json(dyno().args(["results", "list", "--format", "json", "--db", &url]));
    assert_eq!(runs["runs"].as_array().unwrap().len(), 1);
    let stored = server.psql("secret", "SELECT command_line FROM runs");
    assert!(stored.contains("pwuser:***@"), "{stored}");
    assert!(!stored.contains("right-password"), "{stored}");

    // Bad credentials and URLs dyno does not understand are the user's input (exit 2); a
    // server nobody answers for is a runtime failure (exit 3, docs/output.md). Each
    // names the URL without its password.
    let wrong = server.url_as("pwuser", Some("wrong-password"), "secret");
    let unreachable = "postgresql://dyno:hunter2@%2Fnonexistent%2Fdyno/x?sslmode=disable";
    let garbled = "postgres://dyno:hunter2@localhost/x?sslmode=sometimes";
    let mangled = "postgres://dyno:hunter2@%%%/x";
    for (bad, code, says) in [
        (wrong.as_str(), 2, "refused the login"),
        (unreachable, 3, "cannot reach"),
        (garbled, 2, "sslmode=sometimes"),
        (mangled, 2, "invalid URL"),
    ] {
        let out = dyno()
            .args(["results", "list", "--db", bad])
            .assert()
            .code(code);
        let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
        assert!(err.contains(says), "{err}");
        assert!(
            !err.contains("wrong-password") && !err.contains("hunter2"),
            "{err}"
        );
        // The password went to PGPASSWORD before the URL was shown.
        let shown = dyno_store::split_password(bad).0;
        assert!(err.contains(&shown), "{err}");
    }
    // A push to an unreachable server leaves the local store as it was and exits 3.
    let dir = tempfile::tempdir().unwrap();
    let local = dir.path().join("local.db");
    peer_store(&local, "h", "c", &[1.0]);
    let out = dyno()
        .args(["results", "push", "--to", unreachable, "--db"])
        .arg(&local)
        .assert()
        .code(3);
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(!err.contains("hunter2"), "{err}");
}
