//! `dyno cluster` from the command line: init, check (with the injected-delay
//! prediction), bad files with exit code 2, report from node logs, exports.

use crate::harness::{dyno, dyno_process, heavy, processes_mentioning};
use predicates::prelude::*;
use std::path::Path;

fn init(dir: &Path) -> std::path::PathBuf {
    let file = dir.join("cluster.toml");
    dyno()
        .args(["cluster", "init"])
        .arg(&file)
        .assert()
        .success();
    file
}

#[test]
fn init_writes_a_file_check_accepts_and_init_will_not_overwrite() {
    let dir = tempfile::tempdir().unwrap();
    let file = init(dir.path());
    dyno()
        .args(["cluster", "check"])
        .arg(&file)
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "9 nodes (3 producers, 6 relays) over 3 regions; dense_torus topology: 18 links",
        ))
        .stdout(predicate::str::contains("n0"));
    dyno()
        .args(["cluster", "init"])
        .arg(&file)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("exists; pass --force"));
}

#[test]
fn check_predicts_the_injected_delay() {
    let dir = tempfile::tempdir().unwrap();
    let file = init(dir.path());
    let out = dyno()
        .args([
            "cluster",
            "check",
            "--format",
            "json",
            "--inject-cross-ms",
            "100",
        ])
        .arg(&file)
        .assert()
        .success();
    let v: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(v["schema"], "dyno.cluster.check/1");
    // In the example every node is one crossing from each producer's region (see the
    // library's prediction tests): a crossing is a header, a request and a body, +300 ms.
    for p in v["predicted"].as_array().unwrap() {
        let d =
            p["full_adoption_delayed_s"].as_f64().unwrap() - p["full_adoption_s"].as_f64().unwrap();
        assert!((d - 0.3).abs() < 1e-9, "{p}");
    }
}

#[test]
fn a_bad_file_exits_2_naming_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let file = init(dir.path());
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.replacen("us-east-1 = 1,", "us-east-1 = -1,", 1)).unwrap();
    let line = text
        .lines()
        .position(|l| l.contains("us-east-1 = 1,"))
        .unwrap()
        + 1;
    dyno()
        .args(["cluster", "check"])
        .arg(&file)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(format!("cluster.toml:{line}:")))
        .stderr(predicate::str::contains(
            "key `region[1].latency_ms.us-east-1`: ",
        ))
        // toml's snippet on lines of its own: the line, then carets under the value.
        .stderr(predicate::str::contains(format!("\n{line} | ")))
        .stderr(predicate::str::is_match(r"\n *\| +\^+").unwrap());
    // An unknown key is toml's own refusal, in the same format.
    std::fs::write(
        &file,
        text.replacen("[links]", "[links]\nbandwith_mbit = 1", 1),
    )
    .unwrap();
    let line = text.lines().position(|l| l == "[links]").unwrap() + 2;
    dyno()
        .args(["cluster", "check"])
        .arg(&file)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(format!(
            "cluster.toml:{line}:1: key `links.bandwith_mbit`: "
        )))
        .stderr(predicate::str::contains("unknown field"))
        .stderr(predicate::str::contains(format!(
            "\n{line} | bandwith_mbit = 1"
        )));
}

fn event(node: &str, ms: u64, body: &str) -> String {
    format!(
        "{{\"kind\":\"event\",\"event\":{body},\"ts_ns\":{},\"node\":\"{node}\"}}\n",
        1_000_000_000u64 + ms * 1_000_000
    )
}

#[test]
fn report_reads_a_log_directory_and_writes_json_and_html() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let started = r#""started","genesis_hash":"00","genesis_time_ns":1000000000,"slot_ns":1000000000,"peers":[]"#;
    let mut n0 = event("n0", 0, started);
    n0 += &event(
        "n0",
        1003,
        r#""slot_start","slot":1,"scheduled_ns":2000000000"#,
    );
    n0 += &event(
        "n0",
        1010,
        r#""forged","slot":1,"block":"b1","height":1,"parent":"00","txs":1,"bytes":10"#,
    );
    n0 += &event(
        "n0",
        1011,
        r#""adopted","slot":1,"block":"b1","height":1,"state_hash":"aa""#,
    );
    let mut n1 = event("n1", 0, started);
    n1 += "{\"kind\":\"second\",\"t\":1.0,\"tps\":3.0}\n";
    n1 += &event(
        "n1",
        1120,
        r#""adopted","slot":1,"block":"b1","height":1,"state_hash":"aa""#,
    );
    std::fs::write(logs.join("n0.log"), n0).unwrap();
    std::fs::write(logs.join("n1.log"), n1).unwrap();
    dyno()
        .args(["cluster", "report"])
        .arg(&logs)
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "adopted on 50% of nodes after 11.0 ms (p50 over 1 blocks)",
        ))
        .stdout(predicate::str::contains(
            "adopted on 100% of nodes after 120 ms (p50 over 1 blocks)",
        ));
    let html = dir.path().join("r.html");
    let out = dyno()
        .args([
            "cluster", "report", "--format", "json", "--nodes", "3", "--html",
        ])
        .arg(&html)
        .arg(&logs)
        .assert()
        .success();
    let v: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(v["schema"], "dyno.cluster.report/1");
    assert_eq!(v["node_count"], 3);
    assert!(v["startup"].is_null(), "logs alone have no start-up");
    let full = v["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["key"] == "adoption_1.00")
        .unwrap();
    assert_eq!(
        full["missing"], 1,
        "2 of 3 nodes adopted b1: 100% never reached"
    );
    assert!(std::fs::read_to_string(&html).unwrap().contains("<svg"));
}

#[test]
fn a_broken_log_line_exits_2_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("n0.log");
    std::fs::write(
        &log,
        format!("{}{{oops\n", event("n0", 0, r#""ticked","slot":1"#)),
    )
    .unwrap();
    dyno()
        .args(["cluster", "report"])
        .arg(&log)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("n0.log:2: not JSON"));
}

/// The text of each `"KEY": |` literal block of a YAML stream (the ConfigMap's files).
fn literal_blocks(yaml: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut current: Option<(String, usize, String)> = None;
    for line in yaml.lines() {
        if let Some((key, indent, text)) = current.as_mut() {
            let own = line.len() - line.trim_start().len();
            if line.trim().is_empty() || own >= *indent {
                text.push_str(line.get(*indent..).unwrap_or(""));
                text.push('\n');
                continue;
            }
            out.push((key.clone(), text.clone()));
            current = None;
        }
        if let Some(key) = line.trim_start().strip_suffix(": |") {
            let indent = line.len() - line.trim_start().len() + 2;
            current = Some((key.trim_matches('"').to_string(), indent, String::new()));
        }
    }
    out.extend(current.map(|(k, _, t)| (k, t)));
    out
}

#[test]
fn export_renders_the_reference_node_with_configs_its_own_parser_accepts() {
    let dir = tempfile::tempdir().unwrap();
    let file = init(dir.path());
    let out = dyno()
        .args(["cluster", "export", "--kubernetes", "--image", "dyno:1"])
        .arg(&file)
        .assert()
        .success();
    let yaml = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    let files = literal_blocks(&yaml);
    let genesis_text = &files.iter().find(|(k, _)| k == "genesis.toml").unwrap().1;
    let genesis_path = dir.path().join("genesis.toml");
    std::fs::write(&genesis_path, genesis_text).unwrap();
    let genesis = dyno_node::genesis::GenesisFile::from_file(&genesis_path)
        .unwrap()
        .load();
    assert_eq!(genesis.file.network, "mini-torus");
    let configs: Vec<&(String, String)> = files
        .iter()
        .filter(|(k, _)| k.ends_with(".toml") && k != "genesis.toml")
        .collect();
    assert_eq!(configs.len(), 9, "a config per node: {yaml}");
    for (pod, text) in configs {
        // The node's own parser and its checks against the genesis, as at start-up.
        let path = dir.path().join(pod);
        std::fs::write(
            &path,
            text.replace("/etc/dyno/genesis.toml", "genesis.toml"),
        )
        .unwrap();
        let loaded = dyno_node::config::NodeConfig::from_file(&path)
            .unwrap_or_else(|e| panic!("{pod}: {e}"));
        loaded
            .check(&genesis)
            .unwrap_or_else(|e| panic!("{pod}: {e}"));
        let peers = &loaded.config.peers;
        assert!(!peers.is_empty(), "{pod}");
        // Peers by StatefulSet pod DNS name through the headless Service.
        assert!(
            peers.iter().all(|p| p.addr.ends_with(".mini-torus:31000")),
            "{pod}: {peers:?}"
        );
    }
    dyno()
        .args(["cluster", "export", "--nomad", "--image", "dyno:1"])
        .arg(&file)
        .assert()
        .success()
        .stdout(predicate::str::contains("nomadService"))
        .stdout(predicate::str::contains(
            "dyno node run --quiet --config /local/node.toml",
        ));
}

#[test]
fn export_renders_kubernetes_and_nomad_for_a_node_command() {
    let dir = tempfile::tempdir().unwrap();
    let file = init(dir.path());
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        &file,
        text.replacen(
            "ready_timeout_s = 60",
            "command = [\"sh\", \"-c\", \"sleep 1\", \"{id}\"]\nready_timeout_s = 60",
            1,
        ),
    )
    .unwrap();
    let out = dir.path().join("k8s.yaml");
    dyno()
        .args([
            "cluster",
            "export",
            "--kubernetes",
            "--image",
            "node:1",
            "-o",
        ])
        .arg(&out)
        .arg(&file)
        .assert()
        .success();
    assert_eq!(
        std::fs::read_to_string(&out)
            .unwrap()
            .matches("StatefulSet")
            .count(),
        3
    );
    dyno()
        .args(["cluster", "export", "--nomad", "--image", "node:1"])
        .arg(&file)
        .assert()
        .success()
        .stdout(predicate::str::contains("group \"ap-southeast-2\""));
    dyno()
        .args(["cluster", "export", "--image", "node:1"])
        .arg(&file)
        .assert()
        .code(2);
}

fn small_cluster(dir: &Path, base_port: u16, node: &str) -> std::path::PathBuf {
    let file = dir.join("three.toml");
    std::fs::write(
        &file,
        format!(
            r#"[cluster]
name = "three"
slot_ms = 1000
duration_s = 3
warmup_s = 1
base_port = {base_port}

[node]
{node}

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

#[test]
fn run_starts_three_reference_nodes_reports_and_leaves_nothing_behind() {
    let _heavy = heavy();
    let dir = tempfile::tempdir().unwrap();
    let file = small_cluster(dir.path(), 23100, "threads = 1");
    let run = dir.path().join("run");
    let db = dir.path().join("results.db");
    let out = dyno()
        .args(["cluster", "run", "--format", "json", "--db"])
        .arg(&db)
        .arg("--dir")
        .arg(&run)
        .arg(&file)
        .timeout(std::time::Duration::from_secs(120))
        .assert()
        .success();
    let v: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(v["schema"], "dyno.cluster.report/1");
    assert_eq!(v["node_count"], 3);
    // The start-up: every node started and ready, in parallel, before slot 0.
    let s = &v["startup"];
    assert_eq!(
        (s["nodes"].as_u64(), s["ready"].as_u64()),
        (Some(3), Some(3)),
        "{s}"
    );
    assert_eq!(s["at_once"].as_u64(), Some(3), "{s}");
    let ready_s = s["ready_s"].as_f64().unwrap();
    assert!(ready_s >= s["node_ready_max_s"].as_f64().unwrap(), "{s}");
    assert!(s["spawned_s"].as_f64().unwrap() <= ready_s, "{s}");
    assert!(v["blocks"].as_u64().unwrap() >= 1, "{v}");
    let full = v["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["key"] == "adoption_1.00")
        .unwrap();
    // Two links of the ring cross regions (20 ms one way): a block reaches a node of the
    // other region no sooner than a header, a request and a body, 60 ms.
    let max = full["summary"]["max_s"].as_f64().unwrap();
    assert!(max >= 0.060, "{full}");
    // Each node's cost was sampled once per slot of the 3-slot window (the first slot has
    // no earlier reading to difference against).
    let cost = v["resources"].as_array().unwrap();
    assert_eq!(cost.len(), 3, "{v}");
    for r in cost {
        let slots = r["slots"].as_u64().unwrap();
        assert!((2..=4).contains(&slots), "{r}");
        assert!(
            r["rss_max_bytes"].as_f64().unwrap() > 1024.0 * 1024.0,
            "{r}"
        );
    }
    for n in ["n0", "n1", "n2"] {
        assert!(run.join(format!("{n}.jsonl")).exists());
        assert!(run.join(format!("{n}.toml")).exists());
    }
    assert!(run.join("genesis.toml").exists());
    assert_eq!(
        processes_mentioning(&run.display().to_string()),
        Vec::<String>::new()
    );
    // The run is in the store, and `report RUN` reads its logs back to the same figures.
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    let id = stderr
        .split("stored as run ")
        .nth(1)
        .and_then(|rest| rest.split(':').next())
        .unwrap_or_else(|| panic!("no run id in {stderr}"))
        .to_string();
    let again = dyno()
        .args(["cluster", "report", "--format", "json", "--db"])
        .arg(&db)
        .arg(&id)
        .assert()
        .success();
    let w: serde_json::Value = serde_json::from_slice(&again.get_output().stdout).unwrap();
    assert_eq!(w["metrics"], v["metrics"]);
    dyno()
        .args(["results", "show", "--db"])
        .arg(&db)
        .arg(&id)
        .assert()
        .success()
        .stdout(predicate::str::contains("adoption_1.00"))
        .stdout(predicate::str::contains("node.cpu_percent"))
        .stdout(predicate::str::contains("startup_s"));
}

#[test]
fn a_cluster_that_cannot_fit_is_refused_before_any_node_starts() {
    let dir = tempfile::tempdir().unwrap();
    // 10,000 nodes of 515 threads each (256 verify threads, as many again while a block is
    // checked): more tasks than any Linux allows (pid_max is at most 4,194,304).
    let file = dir.path().join("huge.toml");
    let text = std::fs::read_to_string(small_cluster(dir.path(), 20000, "verify_tiles = 256"))
        .unwrap()
        .replace("count = 3\nproducers = 3", "count = 10000\nproducers = 1");
    std::fs::write(&file, text).unwrap();
    let run = dir.path().join("run");
    let run_dir = run.display().to_string();
    for args in [
        vec!["cluster", "check"],
        vec!["cluster", "run", "--no-save", "--dir", &run_dir],
    ] {
        let out = dyno()
            .args(&args)
            .arg(&file)
            .timeout(std::time::Duration::from_secs(120))
            .assert()
            .code(2);
        let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
        assert!(
            err.contains("10,000 nodes do not fit this machine"),
            "{err}"
        );
        assert!(
            err.contains("threads: 10,000 nodes x 515 threads + ")
                && err.contains("against kernel.pid_max of "),
            "{err}"
        );
        assert!(!run.exists(), "nothing was written");
        assert_eq!(
            processes_mentioning(&dir.path().display().to_string()),
            Vec::<String>::new()
        );
    }
}

#[test]
fn a_node_that_never_gets_ready_fails_with_its_output_and_no_process_left() {
    let _heavy = heavy();
    let dir = tempfile::tempdir().unwrap();
    let node = r#"command = ["sh", "-c", "echo booting {id}; sleep 60; echo {log}"]
ready_timeout_s = 2"#;
    let file = small_cluster(dir.path(), 23200, node);
    let run = dir.path().join("run");
    dyno()
        .args(["cluster", "run", "--no-save", "--dir"])
        .arg(&run)
        .arg(&file)
        .timeout(std::time::Duration::from_secs(120))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("n0 not ready"))
        .stderr(predicate::str::contains("booting n0"))
        .stderr(predicate::str::contains("run incomplete"));
    assert_eq!(
        processes_mentioning(&run.display().to_string()),
        Vec::<String>::new()
    );
}

#[test]
fn a_node_that_exits_early_marks_the_run_incomplete_and_keeps_the_logs() {
    let _heavy = heavy();
    let dir = tempfile::tempdir().unwrap();
    let dyno_bin = assert_cmd::cargo::cargo_bin("dyno");
    // Reference nodes that stop by themselves 9 s after starting: inside the window
    // (slot 0 starts 6 s after launch, the window lasts 4 s plus 2 s of tail).
    let node = format!(
        r#"command = ["timeout", "9", "{}", "node", "run", "--quiet", "--config", "{{config}}"]"#,
        dyno_bin.display()
    );
    let file = small_cluster(dir.path(), 23300, &node);
    let run = dir.path().join("run");
    dyno()
        .args(["cluster", "run", "--no-save", "--dir"])
        .arg(&run)
        .arg(&file)
        .timeout(std::time::Duration::from_secs(120))
        .assert()
        .code(2)
        // On a machine slow enough that a node is not ready 9 s after it started, it
        // exits before its readiness instead: the same failure, reported as such.
        .stderr(
            predicate::str::contains("exited early")
                .or(predicate::str::contains("before it was ready")),
        )
        .stderr(predicate::str::contains("run incomplete"));
    assert!(run.join("n0.toml").exists() && run.join("n0.out").exists());
    assert_eq!(
        processes_mentioning(&run.display().to_string()),
        Vec::<String>::new()
    );
}

#[test]
fn no_node_outlives_a_sigkilled_dyno() {
    let _heavy = heavy();
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let file = small_cluster(dir.path(), 23400, "threads = 1");
    let run = dir.path().join("run");
    let mut dyno = dyno_process()
        .args(["cluster", "run", "--no-save", "--dir"])
        .arg(&run)
        .arg(&file)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Reaped even if an assertion below fails.
    struct Reap(std::process::Child);
    impl Drop for Reap {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let stderr = dyno.stderr.take().unwrap();
    let mut dyno = Reap(dyno);
    // The pipe stays open until the end: were it closed, dyno's next line on stderr would
    // fail and end dyno (and its nodes) before the nodes are counted.
    let mut lines = std::io::BufReader::new(stderr).lines();
    let ready = lines
        .by_ref()
        .map_while(Result::ok)
        .any(|l| l.contains("nodes ready: 3/3"));
    assert!(ready, "the nodes never got ready");
    let needle = run.display().to_string();
    let found = processes_mentioning(&needle);
    let nodes = found.iter().filter(|c| c.contains(" node run ")).count();
    assert_eq!(nodes, 3, "three nodes should be running: {found:?}");
    dyno.0.kill().unwrap(); // SIGKILL: dyno gets no chance to stop anything itself
    dyno.0.wait().unwrap();
    drop(lines);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    while !processes_mentioning(&needle).is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(processes_mentioning(&needle), Vec::<String>::new());
}

#[test]
fn an_extract_rule_without_a_block_group_exits_2_before_any_node_starts() {
    let dir = tempfile::tempdir().unwrap();
    let file = small_cluster(dir.path(), 23700, "command = [\"/bin/sleep\", \"60\"]");
    let mut text = std::fs::read_to_string(&file).unwrap();
    text = text.replace("[workload]\nrate_tps = 10", "[workload]\nrate_tps = 0");
    text.push_str("\n[extract]\nadopted = 'committed state at (?P<ts>\\S+)'\n");
    std::fs::write(&file, text).unwrap();
    let run_dir = dir.path().join("run");
    dyno()
        .args(["cluster", "run", "--no-save", "--dir"])
        .arg(&run_dir)
        .arg(&file)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("three.toml:34:11:"))
        .stderr(predicate::str::contains("`extract.adopted`"))
        .stderr(predicate::str::contains("(?P<height>"));
    assert!(!run_dir.exists(), "nothing may be left behind");
}

/// The pinned CometBFT releases as examples/compare-cometbft/install.sh installs them.
fn cometbft_installed(release: &str) -> bool {
    let dir = std::env::var_os("DYNO_COMETBFT_DIR")
        .map(std::path::PathBuf::from)
        .or_else(|| {
            std::env::var_os("XDG_CACHE_HOME")
                .map(|c| Path::new(&c).join("dyno/cometbft"))
                .or_else(|| {
                    std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache/dyno/cometbft"))
                })
        });
    dir.is_some_and(|d| d.join(release).join("cometbft").is_file())
}

#[test]
fn cometbft_testnets_run_with_commit_times_from_their_logs() {
    let _heavy = heavy();
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/cluster-cometbft");
    for (release, file, port) in [
        ("v0.38.17", "v0.38.toml", 28200),
        ("v1.0.1", "v1.0.toml", 28220),
    ] {
        if !cometbft_installed(release) {
            eprintln!(
                "note: CometBFT {release} is not installed; skipping its testnet \
                 (run examples/compare-cometbft/install.sh)"
            );
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        let text = std::fs::read_to_string(examples.join(file))
            .unwrap()
            .replace(
                "./run-node.sh",
                &examples.join("run-node.sh").display().to_string(),
            )
            .replace(
                "../compare-cometbft/load.py",
                &examples
                    .join("../compare-cometbft/load.py")
                    .display()
                    .to_string(),
            )
            .replace("duration_s = 20", "duration_s = 6")
            .replace("warmup_s = 3", "warmup_s = 1")
            .replace("base_port = 28100", &format!("base_port = {port}"));
        let cluster = dir.path().join(file);
        std::fs::write(&cluster, text).unwrap();
        let run_dir = dir.path().join("run");
        let out = dyno()
            .args(["cluster", "run", "--no-save", "--format", "json", "--dir"])
            .arg(&run_dir)
            .arg(&cluster)
            .timeout(std::time::Duration::from_secs(60))
            .assert()
            .success();
        let report: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
        let metric = |key: &str| {
            report["metrics"]
                .as_array()
                .unwrap()
                .iter()
                .find(|m| m["key"] == key)
                .unwrap()
                .clone()
        };
        // One block a second or so: a 6 s window holds several, each committed by all 4
        // (a busy machine slows CometBFT's rounds: one is enough to show the times come
        // from the logs).
        let full = metric("adoption_1.00");
        let blocks = full["values_s"].as_array().unwrap();
        assert!(!blocks.is_empty(), "{release}: {full}");
        assert!(
            blocks.iter().all(|v| v.as_f64().unwrap() > 0.0),
            "{release}: {full}"
        );
        assert_eq!(full["available"], true);
        assert_eq!(metric("peer.first_notice")["available"], true);
        // No info-level line says "I proposed this": the rules give no forging loop.
        assert_eq!(metric("forging.loop_start")["available"], false);
        assert!(run_dir.join("n3.out").is_file());
        // The load script ran and said so once a second.
        let load = std::fs::read_to_string(run_dir.join("load.out")).unwrap();
        assert!(load.contains("achieved_tps"), "{release}: {load}");
        let left = processes_mentioning(&dir.path().display().to_string());
        assert!(left.is_empty(), "{release}: left running: {left:?}");
    }
}

#[test]
fn a_load_command_that_fails_mid_window_makes_the_run_incomplete_with_its_output() {
    let _heavy = heavy();
    let dir = tempfile::tempdir().unwrap();
    // Nodes that are not dyno's: a small HTTP server answering the readiness probe.
    let node = r#"command = ["sh", "-c", "exec python3 -m http.server --bind 127.0.0.1 $(echo $0 | cut -d: -f2)", "{metrics}"]
ready_url = "http://{metrics}/""#;
    let file = small_cluster(dir.path(), 23800, node);
    let text = std::fs::read_to_string(&file).unwrap().replace(
        "kind = \"value\"",
        "command = [\"sh\", \"-c\", \"sleep 1; echo load gave up at {rate}/s; exit 3\"]",
    ) + "\n[extract]\nadopted = 'adopted (?P<height>\\d+)'\n";
    std::fs::write(&file, text).unwrap();
    let run = dir.path().join("run");
    dyno()
        .args(["cluster", "run", "--no-save", "--dir"])
        .arg(&run)
        .arg(&file)
        .timeout(std::time::Duration::from_secs(60))
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "the load exited early (exit status: 3); last output: load gave up at 10/s",
        ))
        .stderr(predicate::str::contains("run incomplete"));
    assert!(run.join("load.out").exists());
    assert_eq!(
        processes_mentioning(&run.display().to_string()),
        Vec::<String>::new()
    );
    let servers = processes_mentioning("http.server --bind 127.0.0.1 438");
    assert!(servers.is_empty(), "left running: {servers:?}");
}
