//! `dyno pipeline bench` as a user meets it: bad configs and sweeps refused before
//! anything starts (exit 2, naming the file, key or flag), and a short run whose summary
//! accounts for every transaction and is stored. Nothing here depends on speed.

use crate::harness::{dyno, dyno_process};
use predicates::prelude::*;

fn config(dir: &std::path::Path, extra: &str) -> std::path::PathBuf {
    let text = format!(
        r#"[layout]
affinity = "floating"
link_depth = 1024
{extra}
[workspace]
name = "bench-cli-{pid}"
dir = "{d}"
[genesis]
fund_initial_accounts = 256
[bench]
presign = 4000
rate = 1500
invalid_fraction = 0.02
duplicate_fraction = 0.02
[poh]
hashes_per_tick = 200
tick_ns = 2000000
ticks_per_slot = 8
[store]
dir = "{d}"
"#,
        pid = std::process::id(),
        d = dir.display()
    );
    let p = dir.join("bench.toml");
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn bad_configs_and_sweeps_are_refused_naming_the_key_or_flag() {
    let dir = tempfile::tempdir().unwrap();
    // The power study's knob: beyond its bound it is refused by flag and key.
    dyno()
        .args([
            "node",
            "--workload",
            "value",
            "--no-save",
            "--extra-work-per-tx",
            "1000001",
        ])
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("--extra-work-per-tx")
                .and(predicate::str::contains("bank.extra_work_per_tx")),
        );
    let p = config(dir.path(), "verify_tile_count = 0");
    dyno()
        .args(["pipeline", "bench", "--no-save", "--config"])
        .arg(&p)
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("bench.toml")
                .and(predicate::str::contains("layout.verify_tile_count")),
        );
    let p = config(dir.path(), "");
    dyno()
        .args([
            "pipeline",
            "bench",
            "--no-save",
            "--sweep",
            "pack=1..2",
            "--config",
        ])
        .arg(&p)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--sweep"));
    dyno()
        .args([
            "pipeline",
            "bench",
            "--no-save",
            "--config",
            "/nonexistent/bench.toml",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("/nonexistent/bench.toml"));
}

#[test]
fn a_short_bench_accounts_for_every_transaction_and_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let p = config(dir.path(), "");
    let db = dir.path().join("results.db");
    let out = dyno()
        .args([
            "pipeline",
            "bench",
            "--duration",
            "2",
            "--format",
            "json",
            "--db",
        ])
        .arg(&db)
        .arg("--config")
        .arg(&p)
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "dyno pipeline monitor --name bench-cli",
        ))
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["schema"], "dyno.pipeline.bench/1");
    let f = &v["fates"];
    let n = |k: &str| f[k].as_u64().unwrap();
    let settled = n("executed")
        + n("failed")
        + n("invalid_signature")
        + n("duplicate")
        + n("overrun_ingress")
        + n("pack_dropped")
        + n("in_flight");
    assert_eq!(settled, n("generated"), "{f}");
    assert!(n("executed") > 0);
    assert_eq!(v["conserved"], true);
    assert!(
        v["ledger_check"]["Ok"]["records"].as_u64().is_some(),
        "{}",
        v["ledger_check"]
    );
    assert!(!v["diagnosis"]["summary"].as_str().unwrap().is_empty());
    dyno()
        .args(["results", "list", "--db"])
        .arg(&db)
        .assert()
        .success()
        .stdout(predicate::str::contains("pipeline bench"));
}

#[test]
fn workload_flags_are_checked_before_anything_starts() {
    dyno()
        .args(["pipeline", "bench", "--no-save", "--workload", "fast"])
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("--workload").and(predicate::str::contains("value, script")),
        );
    dyno()
        .args(["pipeline", "bench", "--no-save"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--config").and(predicate::str::contains("--workload")));
    dyno()
        .args([
            "pipeline",
            "bench",
            "--no-save",
            "--workload",
            "value",
            "--rate",
            "0",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--rate"));
}

/// `--duration 0` runs as a node until SIGTERM (as `dyno compare` runs it) and writes
/// one JSON line per second and one per block.
#[test]
fn a_node_logs_seconds_and_blocks_until_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let p = config(dir.path(), "");
    let log = dir.path().join("node.jsonl");
    let mut child = dyno_process()
        .args([
            "pipeline",
            "bench",
            "--no-save",
            "--duration",
            "0",
            "--node-log",
        ])
        .arg(&log)
        .arg("--config")
        .arg(&p)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    let has = |kind: &str| {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains(&format!("\"kind\":\"{kind}\""))
    };
    while !(has("second") && has("block")) {
        if let Some(status) = child.try_wait().unwrap() {
            let out = child.wait_with_output().unwrap();
            panic!(
                "dyno exited early ({status}): {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(120),
            "no second and block lines after 120 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    dyno_proc::signal_process(child.id(), dyno_proc::Signal::Term).unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{:?}\n{stdout}", out.status);
    assert!(
        stdout.contains("conservation: balances + fees") && stdout.contains(": ok"),
        "{stdout}"
    );
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let blocks: Vec<_> = lines.iter().filter(|v| v["kind"] == "block").collect();
    for b in &blocks {
        for k in ["stage_ticking_s", "stage_snapshot_s", "stage_forged_s"] {
            assert!(b[k].as_f64().unwrap() >= 0.0, "{k}: {b}");
        }
        assert!(
            b["slot"].as_u64().is_some() && b["txs"].as_u64().is_some(),
            "{b}"
        );
    }
    // Slots are reported once each, in order.
    let slots: Vec<u64> = blocks.iter().map(|b| b["slot"].as_u64().unwrap()).collect();
    assert!(slots.windows(2).all(|w| w[0] < w[1]), "{slots:?}");
    let second = lines.iter().find(|v| v["kind"] == "second").unwrap();
    assert!(second["tps"].as_f64().unwrap() >= 0.0, "{second}");
}
