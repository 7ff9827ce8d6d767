//! `dyno cluster run` under a fault schedule: a node killed and restarted catches up
//! with a range sync and the report says when it was back at the tip; a region cut off
//! for 20 slots forks and the fork resolves; bad schedules exit 2 before anything
//! starts. Every assertion is about structure (the node reached the tip, a fork existed
//! and resolved), never about how fast this machine is.

use crate::harness::{dyno, events, heavy};
use predicates::prelude::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

const REGIONS3: &str = r#"
[[region]]
name = "eu"
latency_ms = { eu = 1, us = 20, ap = 40 }

[[region]]
name = "us"
latency_ms = { eu = 20, us = 1, ap = 30 }

[[region]]
name = "ap"
latency_ms = { eu = 40, us = 30, ap = 1 }
"#;

/// A cluster file of `count` nodes over three regions, slots of 500 ms, the sequential
/// forge (light: nine nodes share two cores), `faults` appended. Each run leaves at least
/// 6 slots after its last fault ends, so a node slow to start again on a busy machine
/// still reaches the tip before the stop.
fn cluster(
    dir: &Path,
    name: &str,
    base_port: u16,
    nodes: &str,
    duration_s: u64,
    faults: &str,
) -> PathBuf {
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(
        &file,
        format!(
            r#"[cluster]
name = "{name}"
slot_ms = 500
duration_s = {duration_s}
warmup_s = 2
base_port = {base_port}

[node]
forge = "sequential"

[nodes]
{nodes}
{REGIONS3}
[links]
bandwidth_mbit = 100

[topology]
kind = "dense_torus"

[workload]
rate_tps = 5
{faults}"#
        ),
    )
    .unwrap();
    file
}

fn run(file: &Path, dir: &Path) -> Value {
    run_into(file, dir, None)
}

/// The run, stored in `db` when given (else not stored).
fn run_into(file: &Path, dir: &Path, db: Option<&Path>) -> Value {
    let mut cmd = dyno();
    match db {
        Some(db) => cmd.arg("cluster").arg("run").arg("--db").arg(db),
        None => cmd.args(["cluster", "run", "--no-save"]),
    };
    let out = cmd
        .args(["--format", "json", "--dir"])
        .arg(dir)
        .arg("--html")
        .arg(dir.with_extension("html"))
        .arg(file)
        .timeout(std::time::Duration::from_secs(300))
        .assert()
        .success();
    serde_json::from_slice(&out.get_output().stdout).unwrap()
}

#[test]
fn a_killed_and_restarted_node_catches_up_and_the_report_says_when() {
    let _heavy = heavy();
    let dir = tempfile::tempdir().unwrap();
    let file = cluster(
        dir.path(),
        "restart",
        24300,
        "count = 3\nproducers = 2",
        8,
        "[[fault]]\nkind = \"restart\"\nnode = \"n2\"\nat_slot = 6\nslots = 4\n",
    );
    let run_dir = dir.path().join("run");
    let db = dir.path().join("results.db");
    let v = run_into(&file, &run_dir, Some(&db));
    let f = &v["faults"]["faults"][0];
    assert_eq!(f["kind"], "restart", "{v}");
    assert_eq!(
        (f["at_slot"].as_u64(), f["end_slot"].as_u64()),
        (Some(6), Some(10))
    );
    assert!(
        f["start_ns"].as_u64().unwrap() < f["end_ns"].as_u64().unwrap(),
        "{f}"
    );
    // n2 came back and reached the others' tip through one range sync or more.
    let n2 = &f["nodes_recovered"][0];
    assert_eq!(n2["node"], "n2");
    assert!(n2["back_at_tip_s"].as_f64().is_some(), "{f}");
    assert!(n2["synced_blocks"].as_u64().unwrap() >= 1, "{f}");
    assert!(n2["sync_rounds"].as_u64().unwrap() >= 1, "{f}");
    assert!(f["converged_s"].as_f64().is_some(), "{f}");
    // Its log shows the second start and the catch-up after it.
    let log = run_dir.join("n2.jsonl");
    let starts = events(&log, "started");
    assert_eq!(starts.len(), 2);
    let caught = events(&log, "caught_up");
    assert!(!caught.is_empty());
    assert!(caught[0]["ts_ns"].as_u64() > starts[1]["ts_ns"].as_u64());
    assert!(caught[0]["height"].as_u64().unwrap() >= 6, "{}", caught[0]);
    // A restart from genesis is no fork.
    assert_eq!(v["faults"]["forks"]["max_depth"], 0, "{v}");
    assert_eq!(v["faults"]["forks"]["resolved"], true);
    assert!(run_dir.join("faults.json").exists());
    let html = std::fs::read_to_string(run_dir.with_extension("html")).unwrap();
    assert!(html.contains("Adoption on 80% of nodes, block by block"));
    assert!(html.contains("restart n2 at slot 6 for 4 slots"));
    // The store keeps what the fault did, as the report says it, for the run's page.
    let store = dyno_store::Store::open_read_only(&db).unwrap();
    let id = store.list_runs(&Default::default()).unwrap()[0].id;
    let back: Vec<(f64, serde_json::Value)> = store
        .labeled_samples(id)
        .unwrap()
        .into_iter()
        .filter(|(s, _)| s.metric == "fault.back_at_tip_s")
        .map(|(s, l)| (s.value, l.unwrap_or_default()))
        .collect();
    assert_eq!(back.len(), 1, "{back:?}");
    assert_eq!(Some(back[0].0), n2["back_at_tip_s"].as_f64());
    assert_eq!(back[0].1, serde_json::json!({"fault": 0, "node": "n2"}));
    let served = crate::harness::served::Served::start(&["--db", db.to_str().unwrap()]);
    let (code, page) = served.get(&format!("/runs/{id}"));
    assert_eq!(code, 200);
    let answer = &page[page.find("id=\"answer\"").expect("an answer")..];
    assert!(answer.contains("restart of n2 from slot 6"), "{answer}");
    assert!(answer.contains("n2 back at the tip"), "{answer}");
}

#[test]
fn nine_nodes_with_a_region_cut_off_for_twenty_slots_fork_and_the_fork_resolves() {
    let _heavy = heavy();
    let dir = tempfile::tempdir().unwrap();
    // The cut-off region's producer (n2) holds half the stake, so both sides lead slots
    // during the 20 (all but certain: 2 x 0.5^20 of the schedules would not).
    let file = cluster(
        dir.path(),
        "split",
        24400,
        "count = 9\nproducers = 3\nstake = [1, 1, 2]",
        22,
        "[[fault]]\nkind = \"partition\"\nregion = \"ap\"\nat_slot = 10\nslots = 20\n",
    );
    let run_dir = dir.path().join("run");
    let v = run(&file, &run_dir);
    let faults = &v["faults"];
    let f = &faults["faults"][0];
    assert_eq!(f["nodes"], serde_json::json!(["n2", "n5", "n8"]), "{f}");
    assert_eq!(faults["windows"], serde_json::json!([[10, 30]]));
    let forks = &faults["forks"];
    assert!(forks["contested_heights"].as_u64().unwrap() >= 1, "{forks}");
    assert!(forks["max_depth"].as_u64().unwrap() >= 1, "{forks}");
    assert!(!forks["reorgs"].as_array().unwrap().is_empty(), "{forks}");
    assert_eq!(forks["resolved"], true, "{forks}");
    assert!(f["converged_s"].as_f64().is_some(), "{f}");
    // Each cut-off node came back to the others' chain.
    let back = f["nodes_recovered"].as_array().unwrap();
    assert_eq!(back.len(), 3, "{f}");
    for n in back {
        assert!(n["back_at_tip_s"].as_f64().is_some(), "{f}");
    }
    // The blocks one side forged while cut off never reached every node.
    assert!(f["blocks_not_everywhere"].as_u64().unwrap() >= 1, "{f}");
    // Each node took the cut through its control file, and its end.
    for n in ["n2", "n5", "n8", "n0"] {
        let applied = events(&run_dir.join(format!("{n}.jsonl")), "control_applied");
        assert_eq!(applied.len(), 2, "{n}: {applied:?}");
    }
}

#[test]
fn a_bad_schedule_exits_2_naming_file_line_and_key_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let file = cluster(
        dir.path(),
        "bad",
        24500,
        "count = 3\nproducers = 2",
        6,
        "[[fault]]\nkind = \"restart\"\nnode = \"n7\"\nat_slot = 6\n",
    );
    let text = std::fs::read_to_string(&file).unwrap();
    let line = text.lines().position(|l| l.contains("n7")).unwrap() + 1;
    for cmd in ["check", "run"] {
        dyno()
            .args(["cluster", cmd])
            .arg(&file)
            .current_dir(dir.path())
            .assert()
            .code(2)
            .stderr(predicate::str::contains(format!("bad.toml:{line}:")))
            .stderr(predicate::str::contains(
                "key `fault[0].node`: no node is named \"n7\"",
            ))
            .stderr(predicate::str::contains(format!(
                "\n{line} | node = \"n7\""
            )));
    }
    assert!(!dir.path().join("cluster-runs").exists(), "nothing started");
    // A slot past the run (2 s warm-up + 6 s at 500 ms: slots 0..16).
    std::fs::write(
        &file,
        text.replace("node = \"n7\"\nat_slot = 6", "node = \"n1\"\nat_slot = 16"),
    )
    .unwrap();
    dyno()
        .args(["cluster", "check"])
        .arg(&file)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "key `fault[0].at_slot`: slot 16 is outside the run: slots 0..16",
        ));
}

#[test]
fn every_kind_of_fault_runs_and_a_node_killed_for_good_does_not_fail_the_run() {
    let _heavy = heavy();
    let dir = tempfile::tempdir().unwrap();
    // The upgrade's "new release" is this dyno again, started by another command line.
    let dyno_bin = assert_cmd::cargo::cargo_bin("dyno");
    let faults = format!(
        r#"
[[fault]]
kind = "pause"
node = "n1"
at_slot = 4
slots = 2

[[fault]]
kind = "link"
node = "n0"
at_slot = 6
slots = 3
extra_latency_ms = 50
jitter_ms = 10
loss = 0.2
bandwidth_mbit = 10

[[fault]]
kind = "clock_skew"
node = "n2"
at_slot = 8
slots = 3
skew_ms = 200

[[fault]]
kind = "upgrade"
node = "n1"
at_slot = 11
command = ["{}", "node", "run", "--quiet", "--config", "{{config}}"]

[[fault]]
kind = "kill"
node = "n2"
at_slot = 15
"#,
        dyno_bin.display()
    );
    let file = cluster(
        dir.path(),
        "kinds",
        24600,
        "count = 3\nproducers = 3",
        10,
        &faults,
    );
    let run_dir = dir.path().join("run");
    let v = run(&file, &run_dir);
    let records = v["faults"]["faults"].as_array().unwrap();
    let kinds: Vec<&str> = records
        .iter()
        .map(|r| r["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["pause", "link", "clock_skew", "upgrade", "kill"]);
    for r in records {
        assert!(r["start_ns"].as_u64().is_some(), "{r}");
        if r["end_slot"].is_u64() {
            assert!(r["end_ns"].as_u64() >= r["start_ns"].as_u64(), "{r}");
        }
    }
    // The paused and the upgraded node came back to the tip.
    for i in [0, 3] {
        let n1 = &records[i]["nodes_recovered"][0];
        assert_eq!(n1["node"], "n1");
        assert!(n1["back_at_tip_s"].as_f64().is_some(), "{}", records[i]);
    }
    assert_eq!(events(&run_dir.join("n1.jsonl"), "started").len(), 2);
    // The link fault and the skew reached their nodes, and their ends too.
    let n0 = events(&run_dir.join("n0.jsonl"), "control_applied");
    assert_eq!(n0.len(), 2, "{n0:?}");
    assert_eq!(
        n0[0]["links"].as_array().unwrap().len(),
        2,
        "both of n0's peers"
    );
    let n2 = events(&run_dir.join("n2.jsonl"), "control_applied");
    let skews: Vec<f64> = n2
        .iter()
        .map(|e| e["clock_skew_ms"].as_f64().unwrap())
        .collect();
    assert!(
        skews.contains(&200.0) && skews.last() == Some(&0.0),
        "{n2:?}"
    );
    assert!(events(&run_dir.join("n2.jsonl"), "control_refused").is_empty());
}

#[test]
fn export_renders_the_schedule_for_chaos_mesh_and_refuses_a_file_without_one() {
    let dir = tempfile::tempdir().unwrap();
    let file = cluster(
        dir.path(),
        "chaos",
        24700,
        "count = 3\nproducers = 2",
        6,
        "[[fault]]\nkind = \"partition\"\nnode = \"n2\"\nat_slot = 4\nslots = 6\n",
    );
    dyno()
        .args(["cluster", "export", "--chaos-mesh"])
        .arg(&file)
        .assert()
        .success()
        .stdout(predicate::str::contains("\"kind\": \"Workflow\""))
        .stdout(predicate::str::contains("\"action\": \"partition\""))
        // Slot 4 of 500 ms slots, held 6 slots.
        .stdout(predicate::str::contains("\"deadline\": \"2s\""))
        .stdout(predicate::str::contains("\"deadline\": \"3s\""));
    let calm = cluster(dir.path(), "calm", 24700, "count = 3\nproducers = 2", 6, "");
    dyno()
        .args(["cluster", "export", "--chaos-mesh"])
        .arg(&calm)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "no fault of the schedule can be rendered",
        ));
}

/// A tool scripts/ci/schemas.sh installs: under DYNO_TOOLS_DIR or
/// ~/.cache/dyno/tools (`rel`), else `name` on PATH; `None` when absent.
fn ci_tool(rel: &str, name: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("DYNO_TOOLS_DIR")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
                .map(|c| c.join("dyno/tools"))
        });
    if let Some(p) = dir.map(|d| d.join(rel)).filter(|p| p.is_file()) {
        return Some(p);
    }
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// kubeconform -strict on `files` against the schemas kept in the repository, offline.
fn kubeconform(kc: &Path, files: &[&Path]) -> std::process::Output {
    let schemas = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schemas");
    let mut c = std::process::Command::new(kc);
    c.args(["-strict", "-summary"]);
    for set in ["kubernetes-v1.32.4", "chaos-mesh-v2.7.3"] {
        c.arg("-schema-location").arg(format!(
            "{}/{set}/{{{{ .ResourceKind }}}}{{{{ .KindSuffix }}}}.json",
            schemas.display()
        ));
    }
    c.args(files).output().unwrap()
}

fn export(args: &[&str], file: &Path, out: &Path) {
    dyno()
        .args(["cluster", "export"])
        .args(args)
        .arg("-o")
        .arg(out)
        .arg(file)
        .assert()
        .success();
}

#[test]
fn every_rendering_passes_kubeconform_strict_and_an_unknown_field_fails() {
    let dir = tempfile::tempdir().unwrap();
    // Every fault kind Chaos Mesh renders: kill, restart with and without downtime,
    // partition, link (delay, jitter, loss, bandwidth), clock skew.
    let faults = r#"
[[fault]]
kind = "restart"
node = "n3"
at_slot = 4

[[fault]]
kind = "restart"
node = "n4"
at_slot = 5
slots = 2

[[fault]]
kind = "partition"
region = "ap"
at_slot = 8
slots = 2

[[fault]]
kind = "link"
nodes = ["n0"]
to_region = "us"
at_slot = 10
slots = 2
extra_latency_ms = 20
jitter_ms = 5
loss = 0.1
bandwidth_mbit = 10

[[fault]]
kind = "clock_skew"
node = "n5"
at_slot = 12
slots = 2
skew_ms = -300

[[fault]]
kind = "kill"
node = "n8"
at_slot = 14
"#;
    let file = cluster(
        dir.path(),
        "kc",
        24800,
        "count = 9\nproducers = 3",
        10,
        faults,
    );
    // The same cluster run by a node command of its own (no reference-node configs, and
    // no network faults: they need the reference node).
    let command = cluster(dir.path(), "kcc", 24800, "count = 9\nproducers = 3", 10, "");
    std::fs::write(
        &command,
        std::fs::read_to_string(&command).unwrap().replace(
            "forge = \"sequential\"",
            "command = [\"sh\", \"-c\", \"exec mynode --listen {listen} --peers {peers}\"]",
        ),
    )
    .unwrap();
    let p = |name: &str| dir.path().join(name);
    export(
        &["--kubernetes", "--image", "dyno:1"],
        &file,
        &p("reference.yaml"),
    );
    export(
        &["--kubernetes", "--image", "node:1"],
        &command,
        &p("command.yaml"),
    );
    export(&["--chaos-mesh"], &file, &p("workflow.yaml"));
    export(
        &["--nomad", "--image", "dyno:1"],
        &file,
        &p("reference.nomad.hcl"),
    );
    export(
        &["--nomad", "--image", "node:1"],
        &command,
        &p("command.nomad.hcl"),
    );

    match ci_tool("kubeconform-v0.6.7/kubeconform", "kubeconform") {
        None => eprintln!(
            "note: kubeconform not found (scripts/ci/schemas.sh installs it); skipping the Kubernetes and Chaos Mesh schema checks"
        ),
        Some(kc) => {
            let out = kubeconform(&kc, &[&p("reference.yaml"), &p("command.yaml"), &p("workflow.yaml")]);
            let said = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(out.status.success(), "{said}");
            // ConfigMap, Service and a StatefulSet per region, twice; one Workflow.
            assert!(
                said.contains("11 resources found in 3 files - Valid: 11, Invalid: 0, Errors: 0, Skipped: 0"),
                "{said}"
            );
            // A field the API does not know fails: in the Workflow (Chaos Mesh's CRD) and
            // in a StatefulSet (Kubernetes').
            let planted = [
                (
                    "workflow.yaml",
                    "\n\"kind\": \"Workflow\"\n",
                    "\n\"kind\": \"Workflow\"\n\"flakiness\": 3\n",
                    "flakiness",
                ),
                (
                    "reference.yaml",
                    "\"podManagementPolicy\": \"Parallel\"",
                    "\"podManagementPolicy\": \"Parallel\"\n  \"replicaz\": 3",
                    "replicaz",
                ),
            ];
            for (name, from, to, field) in planted {
                let text = std::fs::read_to_string(p(name)).unwrap();
                assert!(text.contains(from), "{name}: {from}");
                let bad = p(&format!("planted-{name}"));
                std::fs::write(&bad, text.replacen(from, to, 1)).unwrap();
                let out = kubeconform(&kc, &[&bad]);
                let said = String::from_utf8_lossy(&out.stdout).to_string();
                assert!(!out.status.success(), "{name}: {said}");
                assert!(said.contains(field) && said.contains("not allowed"), "{said}");
            }
        }
    }
    match ci_tool("hclcheck", "hclcheck") {
        None => eprintln!(
            "note: hclcheck not found (scripts/ci/schemas.sh builds it); skipping the Nomad files' HCL parse"
        ),
        Some(hc) => {
            let out = std::process::Command::new(&hc)
                .arg(p("reference.nomad.hcl"))
                .arg(p("command.nomad.hcl"))
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            let text = std::fs::read_to_string(p("reference.nomad.hcl")).unwrap();
            let cut = p("planted.nomad.hcl");
            std::fs::write(&cut, text.replacen("group \"", "group = \"", 1)).unwrap();
            let out = std::process::Command::new(&hc).arg(&cut).output().unwrap();
            assert!(!out.status.success());
        }
    }
}
