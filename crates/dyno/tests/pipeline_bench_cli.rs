//! `dyno pipeline bench` as a user meets it: bad configs and sweeps refused before
//! anything starts (exit 2, naming the file, key or flag), and a short run whose summary
//! accounts for every transaction and is stored. Nothing here depends on speed.

use assert_cmd::Command;
use predicates::prelude::*;

fn dyno() -> Command {
    let mut c = Command::cargo_bin("dyno").unwrap();
    c.env("DYNO_ALLOW_DEBUG_BUILD", "1");
    c
}

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
