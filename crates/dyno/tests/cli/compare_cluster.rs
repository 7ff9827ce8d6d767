//! A whole cluster as a `dyno compare` subject: a cluster file error is refused with the
//! comparison file's key and the cluster file's line before anything starts, and a tiny
//! cluster of the reference node (the dyno under test) compared with itself survives a
//! SIGKILL of dyno, resumes, finishes, stores its executions, gives a verdict row for every
//! propagation metric and leaves no process behind. No assertion depends on the machine's speed or on the verdict itself
//! (an A/A can be flagged by chance; the A/A is a benchmark, examples/compare/cluster-aa.toml).

use crate::harness::{dyno, dyno_process, heavy, processes_mentioning};
use predicates::prelude::*;
use std::path::{Path, PathBuf};

fn tiny_cluster(dir: &Path, base_port: u16, slot_ms: u64) -> PathBuf {
    let file = dir.join("three.toml");
    std::fs::write(
        &file,
        format!(
            r#"[cluster]
name = "three"
slot_ms = {slot_ms}
duration_s = 3
warmup_s = 1
base_port = {base_port}

[node]
threads = 1

[nodes]
count = 3
producers = 3

[[region]]
name = "a"
latency_ms = {{ a = 1, b = 20 }}

[[region]]
name = "b"
latency_ms = {{ a = 20, b = 1 }}

[links]
bandwidth_mbit = 100

[topology]
kind = "ring"

[workload]
rate_tps = 10
kind = "value"
"#
        ),
    )
    .unwrap();
    file
}

fn comparison(dir: &Path, rounds: u32) -> PathBuf {
    let file = dir.join("cmp.toml");
    std::fs::write(
        &file,
        format!(
            r#"rounds = {rounds}
seed = 5
grace_s = 5

[[subject]]
name = "a"
cluster = "three.toml"

[[subject]]
name = "b"
cluster = "three.toml"

[[workload]]
name = "light"
rate = 10
warmup_s = 1
measure_s = 3
"#
        ),
    )
    .unwrap();
    file
}

#[test]
fn a_bad_cluster_file_is_refused_with_both_files_lines_and_keys() {
    let dir = tempfile::tempdir().unwrap();
    tiny_cluster(dir.path(), 24600, 0);
    let cmp = comparison(dir.path(), 2);
    dyno()
        .env("TMPDIR", dir.path())
        .args(["compare", "run", "--db"])
        .arg(dir.path().join("r.db"))
        .arg(&cmp)
        .assert()
        .code(2)
        // The comparison file's subject ...
        .stderr(predicate::str::contains(
            "cmp.toml:7:1: key `subject[0].cluster`",
        ))
        // ... then the cluster file's own diagnostic with toml's snippet.
        .stderr(predicate::str::contains(
            "three.toml:3:11: key `cluster.slot_ms`: must be at least 1",
        ))
        .stderr(predicate::str::contains("\n3 | slot_ms = 0"));
    assert!(!dir.path().join("r.db").exists(), "nothing was stored");
    // A node_command with an unknown placeholder is the comparison file's error.
    tiny_cluster(dir.path(), 24600, 1000);
    let text = std::fs::read_to_string(&cmp).unwrap().replace(
        "name = \"b\"\ncluster = \"three.toml\"",
        "name = \"b\"\ncluster = \"three.toml\"\nnode_command = [\"/bin/sleep\", \"{nope}\"]",
    );
    std::fs::write(&cmp, text).unwrap();
    dyno()
        .args(["compare", "run", "--db"])
        .arg(dir.path().join("r.db"))
        .arg(&cmp)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "cmp.toml:12:1: key `subject[1].node_command`",
        ))
        .stderr(predicate::str::contains("unknown placeholder {nope}"));
}

#[test]
fn a_tiny_reference_cluster_twice_resumes_and_gives_a_verdict_per_propagation_metric() {
    let _heavy = heavy();
    let dir = tempfile::tempdir().unwrap();
    tiny_cluster(dir.path(), 25700, 1000);
    let cmp = comparison(dir.path(), 2);
    let db = dir.path().join("r.db");
    let needle = dir.path().display().to_string();
    let stored = || {
        dyno_store::Store::open_read_only(&db)
            .and_then(|s| s.list_runs(&dyno_store::RunFilter::default()))
            .map(|r| r.len())
            .unwrap_or(0)
    };
    // SIGKILLed once the first execution is stored (the guard takes its nodes down with
    // it), then run again: it continues with the three executions still missing.
    let mut first = dyno_process()
        .env("TMPDIR", dir.path())
        .args(["compare", "run", "--db"])
        .arg(&db)
        .arg(&cmp)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while stored() < 1 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = first.kill();
    let _ = first.wait();
    let kept = stored();
    assert!(
        (1..4).contains(&kept),
        "{kept} executions stored before the kill"
    );
    let out = dyno()
        // The executor's run directories go under TMPDIR: this test's directory, so
        // every node it started can be looked for afterwards.
        .env("TMPDIR", dir.path())
        .args(["compare", "run", "--format", "json", "--db"])
        .arg(&db)
        .arg(&cmp)
        .timeout(std::time::Duration::from_secs(240))
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(
        stderr.contains(&format!("{kept} of 4 executions already stored")),
        "{stderr}"
    );
    assert_eq!(stored(), 4, "only the missing executions ran");
    let v: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let rows = v["verdicts"].as_array().unwrap();
    for metric in [
        "cluster:adoption_0.50_s",
        "cluster:adoption_0.50_s_p90",
        "cluster:adoption_0.80_s",
        "cluster:adoption_1.00_s",
        "cluster:adoption_1.00_s_p90",
        "cluster:fetch_s",
        "cluster:slot_start_to_announced_s",
        "cluster:node_cpu_percent",
        "cluster:node_rss_bytes",
    ] {
        let row = rows
            .iter()
            .find(|r| r["metric"] == metric)
            .unwrap_or_else(|| panic!("no verdict row for {metric}: {v}"));
        assert_eq!(row["direction"], "lower_is_better", "{row}");
        assert_eq!(row["baseline_values"].as_array().unwrap().len(), 2, "{row}");
        assert_eq!(
            row["candidate_values"].as_array().unwrap().len(),
            2,
            "{row}"
        );
    }
    // A block reaches a node of the other region over a 20 ms link: no sooner than a
    // header, a request and a body (60 ms), so every node's adoption is at least that.
    let full = rows
        .iter()
        .find(|r| r["metric"] == "cluster:adoption_1.00_s")
        .unwrap();
    assert!(full["baseline_median"].as_f64().unwrap() >= 0.06, "{full}");
    // Re-reported from the store alone.
    dyno()
        .args([
            "compare", "report", "1", "2", "3", "4", "--format", "json", "--db",
        ])
        .arg(&db)
        .assert()
        .success()
        .stdout(predicate::str::contains("cluster:adoption_0.80_s"));
    let left = processes_mentioning(&needle);
    assert!(left.is_empty(), "processes left: {left:?}");
    let runs = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("dyno-compare-clusters")
        })
        .count();
    // Complete runs' directories are removed; the SIGKILLed dyno could not tidy its own,
    // so the second run cleared it (nobody held its lock).
    assert_eq!(runs, 0, "run directories left");
}
