//! `dyno compare` as a user meets it: bad comparison files refused before anything starts
//! (exit 2, naming file, line and key), a small comparison of two `sleep` "nodes" stored
//! and re-reported, a crashing node recorded with its last output, Ctrl-C mid-round
//! leaving no process behind, and an interrupted comparison continued by running the
//! same command again. No assertion depends on the machine's speed.

use crate::harness::{dyno, dyno_process, processes_with};
use predicates::prelude::*;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// A comparison of two subjects running `node_a` and `node_b` (shell snippets).
fn file(dir: &Path, rounds: u32, measure_s: u32, node_a: &str, node_b: &str) -> PathBuf {
    let text = format!(
        r#"rounds = {rounds}
seed = 3
grace_s = 2

[[subject]]
name = "old"
command = ["sh", "-c", "{node_a}"]

[[subject]]
name = "new"
command = ["sh", "-c", "{node_b}"]

[[workload]]
name = "value"
rate = 100
warmup_s = 0
measure_s = {measure_s}
"#
    );
    let path = dir.join("cmp.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn bad_files_are_refused_with_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let path = file(dir.path(), 2, 2, "exec sleep 30", "exec sleep 30");
    let text = std::fs::read_to_string(&path).unwrap();

    std::fs::write(
        &path,
        text.replacen(
            "[\"sh\", \"-c\", \"exec sleep 30\"]",
            "[\"./no/such/node\"]",
            1,
        ),
    )
    .unwrap();
    dyno()
        .args(["compare", "run"])
        .arg(&path)
        .arg("--db")
        .arg(&db)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "cmp.toml:7:1: key `subject[0].command`: `./no/such/node` does not exist\n  |\n7 | command = [\"./no/such/node\"]\n",
        ));

    std::fs::write(&path, text.replace("seed = 3", "sede = 3")).unwrap();
    dyno()
        .args(["compare", "run"])
        .arg(&path)
        .arg("--db")
        .arg(&db)
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("cmp.toml:2:1: key `sede`: unknown field `sede`")
                .and(predicate::str::contains("\n2 | sede = 3\n  | ^^^^\n")),
        );

    std::fs::write(&path, &text).unwrap();
    dyno()
        .args(["compare", "run", "--workload", "script"])
        .arg(&path)
        .arg("--db")
        .arg(&db)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "unknown workload `script` (the file defines: value)",
        ));
    assert!(!db.exists(), "nothing may start before the file is valid");
}

#[test]
fn a_small_comparison_is_stored_and_reported_again() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let html = dir.path().join("report.html");
    let path = file(dir.path(), 2, 2, "exec sleep 30", "exec sleep 30");
    let out = dyno()
        .args(["compare", "run", "--fail-on-regression"])
        .arg(&path)
        .arg("--db")
        .arg(&db)
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "4 complete executions of 4 (4 planned)",
        ))
        .stdout(predicate::str::contains("rss_bytes"))
        .stdout(predicate::str::contains("No significant change on any of"))
        // `sleep` uses no CPU tick in any execution: not judged, said in one line.
        .stdout(predicate::str::contains("did not change in any execution"))
        .stdout(predicate::str::contains("could flag a change of"))
        .stderr(predicate::str::contains(
            "re-report with: dyno compare report 1",
        ))
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8(out).unwrap();
    assert!(!out.contains("regression:"), "{out}");
    dyno()
        .args(["compare", "report", "3", "--format", "csv", "--html"])
        .arg(&html)
        .arg("--db")
        .arg(&db)
        .assert()
        .code(0)
        .stdout(predicate::str::contains("4 complete executions of 4"))
        .stdout(predicate::str::contains("value,rss_bytes,new,"));
    let report = std::fs::read_to_string(&html).unwrap();
    assert!(report.starts_with("<!DOCTYPE html>"));
    assert!(report.contains("CPU use over the measured window"));
    // The metrics not judged are folded away, not 762 rows of the verdict table.
    assert!(report.contains("<details>\n<summary>"), "a folded list");
    assert!(report.contains("did not change in any execution"));
    // `dyno compare report RUN ARGS --format json` of this store, parsed.
    let report_json = |run: &str, args: &[&str]| -> serde_json::Value {
        let out = dyno()
            .args(["compare", "report", run])
            .args(args)
            .args(["--format", "json", "--db"])
            .arg(&db)
            .assert()
            .code(0)
            .get_output()
            .stdout
            .clone();
        serde_json::from_slice(&out).unwrap()
    };
    let json = report_json("2", &[]);
    assert_eq!(json["schema"], "dyno.compare.verdicts/2");
    let rows = json["verdicts"].as_array().unwrap();
    let rss = rows.iter().find(|r| r["metric"] == "rss_bytes").unwrap();
    assert_eq!(rss["verdict"], "no_significant_change");
    assert_eq!(rss["baseline_values"].as_array().unwrap().len(), 2);
    // Stated power: at least the 2% noise band, with the family it was corrected in.
    assert!(
        rss["min_detectable_change"].as_f64().unwrap() >= 0.02,
        "{rss}"
    );
    assert_eq!(rss["power"]["rounds"], 2);
    // `sleep` uses no CPU, so its cpu_percent is zero in every round and left unjudged
    // as unchanged, unless a sample caught a clock tick of it (a CI run did): then it
    // is judged like any metric. Either way it is in exactly one of the two lists.
    let unjudged = json["unjudged"].as_array().unwrap();
    let cpu = unjudged.iter().find(|u| u["metric"] == "cpu_percent");
    let judged = rows.iter().filter(|r| r["metric"] == "cpu_percent").count();
    match cpu {
        Some(cpu) => {
            assert_eq!(cpu["reason"], "unchanged", "{cpu}");
            assert_eq!(judged, 0, "{json}");
        }
        None => assert_eq!(judged, 1, "{json}"),
    }
    dyno()
        .args(["compare", "report", "99", "--db"])
        .arg(&db)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("99"));
    // The flags that re-judge a stored comparison refuse what they cannot mean.
    for (flag, value) in [
        ("--rounds", "3..1"),
        ("--rounds", "x"),
        ("--test", "welch"),
        ("--candidate", "old"),
        ("--candidate", "newer"),
        ("--primary", "cpu_pct"),
    ] {
        let err = dyno()
            .args(["compare", "report", "1", flag, value, "--db"])
            .arg(&db)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(flag))
            .stderr(predicate::str::contains(value))
            .get_output()
            .stderr
            .clone();
        // A short error with the closest names, not a line of every metric.
        assert!(err.len() < 600, "{}", String::from_utf8_lossy(&err));
    }
    dyno()
        .args(["compare", "report", "1", "--primary", "rss_byte", "--db"])
        .arg(&db)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("closest: `rss_bytes`"));
    // What the stored comparison could see: one trial of its two rounds.
    dyno()
        .args(["compare", "power", "1", "--trial-rounds", "2", "--db"])
        .arg(&db)
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "1 disjoint trials of 2 rounds (of 2), each candidate judged alone against old",
        ))
        .stdout(predicate::str::contains("any primary metric"));
    dyno()
        .args(["compare", "power", "1", "--trial-rounds", "3", "--db"])
        .arg(&db)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "--trial-rounds: the comparison has 2 rounds: not one trial of 3 rounds",
        ));
    // One candidate judged alone: here the only one, so the same rows.
    let alone = report_json("1", &["--candidate", "new"]);
    assert_eq!(alone["verdicts"].as_array().unwrap().len(), rows.len());
    // One primary metric: the others are reported as secondary.
    let primary = report_json("1", &["--primary", "rss_bytes"]);
    assert!(primary["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["test"] == "paired-t"));
    for row in primary["verdicts"].as_array().unwrap() {
        assert_eq!(row["primary"], row["metric"] == "rss_bytes", "{row}");
        // The sd of the per-round log ratios, where the paired t-test judged.
        let sd = row["log_ratio_sd"].as_f64();
        assert_eq!(
            sd.is_some_and(|sd| sd >= 0.0),
            row["test"] == "paired-t",
            "{row}"
        );
    }
}

#[test]
fn a_crashing_node_is_recorded_with_its_last_output_and_stops_the_comparison() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let path = file(
        dir.path(),
        3,
        2,
        "exec sleep 30",
        "echo loading ledger; echo panic: out of cheese >&2; exit 3",
    );
    dyno()
        .args(["compare", "run"])
        .arg(&path)
        .arg("--db")
        .arg(&db)
        .assert()
        // A node that fails is a runtime failure, not bad input (docs/output.md).
        .code(3)
        .stdout(predicate::str::contains(
            "new / value round 1: failed: exited (exit status: 3)",
        ))
        .stdout(predicate::str::contains("panic: out of cheese"))
        .stderr(predicate::str::contains(
            "subject `new` failed 2 times in a row",
        ));
    let store = dyno_store::Store::open_read_only(&db).unwrap();
    let runs = store.list_runs(&dyno_store::RunFilter::default()).unwrap();
    assert!(runs
        .iter()
        .any(|r| r.status == dyno_model::RunStatus::Failed));
}

#[test]
fn ctrl_c_mid_round_keeps_the_rounds_done_and_leaves_no_process() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    // A node that forks a child of its own: both must go.
    let marker = format!("9{}1", std::process::id());
    let node = format!("sleep {marker} & sleep {marker}; wait");
    let path = file(dir.path(), 10, 2, &node, &node);
    let child = dyno_process()
        .args(["compare", "run"])
        .arg(&path)
        .arg("--db")
        .arg(&db)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until one execution is stored and the next node runs.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        assert!(Instant::now() < deadline, "no execution was stored");
        let stored = dyno_store::Store::open_read_only(&db)
            .and_then(|s| s.list_runs(&dyno_store::RunFilter::default()))
            .map(|r| r.len())
            .unwrap_or(0);
        if stored >= 1 && processes_with(&marker).len() >= 2 {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    dyno_proc::signal_process(child.id(), dyno_proc::Signal::Int).unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    // The execution Ctrl-C cut short is stored, and said apart from those done.
    let stored = dyno_store::Store::open_read_only(&db)
        .and_then(|s| s.list_runs(&dyno_store::RunFilter::default()))
        .unwrap()
        .len();
    assert!(
        stderr.contains(&format!(
            "{} of 20 executions done and kept (1 execution cut short, not counted, stored as incomplete: ",
            stored - 1
        )),
        "{stderr}"
    );
    assert_eq!(processes_with(&marker), Vec::<u32>::new(), "orphans left");
    dyno()
        .args(["compare", "report", "1", "--db"])
        .arg(&db)
        .assert()
        .code(0)
        .stdout(predicate::str::contains("complete executions of"))
        .stdout(predicate::str::contains("interrupted"));
}

#[test]
fn two_git_revisions_are_built_and_compared_with_one_command() {
    let repo = tempfile::tempdir().unwrap();
    let dir = repo.path();
    let db = dir.join("r.db");
    std::fs::create_dir_all(dir.join("node/src")).unwrap();
    std::fs::write(
        dir.join("node/Cargo.toml"),
        "[package]\nname = \"toy-node\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[workspace]\n",
    )
    .unwrap();
    let main = |ms: u32| {
        format!("fn main() {{ loop {{ std::thread::sleep(std::time::Duration::from_millis({ms})); }} }}\n")
    };
    let sh = |script: &str| {
        let ok = std::process::Command::new("sh")
            .args(["-c", script])
            .current_dir(dir)
            .status()
            .unwrap()
            .success();
        assert!(ok, "{script}");
    };
    let git = "git -c user.email=t@example.invalid -c user.name=t";
    std::fs::write(dir.join("node/src/main.rs"), main(100)).unwrap();
    sh(&format!(
        "git init -q . && git add -A && {git} commit -qm v1 && {git} tag v1"
    ));
    std::fs::write(dir.join("node/src/main.rs"), main(50)).unwrap();
    sh(&format!("git add -A && {git} commit -qm v2"));
    let text = format!(
        "rounds = 2\n[[subject]]\nname = \"old\"\ngit = {{ manifest = \"node/Cargo.toml\", rev = \"v1\" }}\ncwd = \"{d}\"\n\
         [[subject]]\nname = \"new\"\ngit = {{ manifest = \"node/Cargo.toml\", rev = \"HEAD\" }}\ncwd = \"{d}\"\n\
         [[workload]]\nname = \"value\"\nrate = 10\nmeasure_s = 2\n",
        d = dir.display()
    );
    let path = dir.join("cmp.toml");
    std::fs::write(&path, text).unwrap();
    dyno()
        .args(["compare", "run"])
        .arg(&path)
        .arg("--db")
        .arg(&db)
        .arg("--build-dir")
        .arg(dir.join("builds"))
        .assert()
        .code(0)
        .stderr(predicate::str::contains("building `old` at v1 ("))
        .stderr(predicate::str::contains("building `new` at HEAD ("))
        .stdout(predicate::str::contains("4 complete executions of 4"));
}

#[test]
fn bad_readiness_and_load_declarations_are_refused_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let path = file(dir.path(), 2, 2, "exec sleep 30", "exec sleep 30");
    let text = std::fs::read_to_string(&path).unwrap();
    let not_exec = dir.path().join("load.sh");
    std::fs::write(&not_exec, "#!/bin/sh\n").unwrap();
    let cases = [
        (
            text.replacen(
                "command = [\"sh\", \"-c\", \"exec sleep 30\"]",
                "command = [\"sh\", \"-c\", \"exec sleep 30\"]\nready = { http = \"127.0.0.1:26657/health\" }",
                1,
            ),
            "cmp.toml:8:11: key `subject[0].ready.http`: `127.0.0.1:26657/health`: only http:// URLs",
        ),
        (
            text.replacen(
                "command = [\"sh\", \"-c\", \"exec sleep 30\"]",
                "command = [\"sh\", \"-c\", \"exec sleep 30\"]\nready = { log = \"height=(\" }",
                1,
            ),
            "cmp.toml:8:11: key `subject[0].ready.log`: `height=(` is not a valid regex",
        ),
        (
            format!(
                "{text}[workload.load]\ncommand = [\"{}\"]\n",
                not_exec.display()
            ),
            "cmp.toml:19:1: key `workload[0].load.command`:",
        ),
        (
            format!(
                "{text}[workload.load]\ncommand = [\"sh\"]\n[[workload.load.extract]]\nmetric = \"tps\"\npattern = 'tps=([0-9]+)'\n"
            ),
            "cmp.toml:22:1: key `workload[0].load.extract[0].pattern`: `tps=([0-9]+)` has no (?P<value>...) group",
        ),
        (
            format!("{text}[workload.load]\ncommand = [\"sh\", \"-c\", \"load {{rpc}}\"]\n"),
            "cmp.toml:19:1: key `workload[0].load.command`: `{rpc}` is not a placeholder of subject `old`",
        ),
    ];
    for (bad, expected) in cases {
        std::fs::write(&path, &bad).unwrap();
        dyno()
            .args(["compare", "run"])
            .arg(&path)
            .arg("--db")
            .arg(&db)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(expected));
    }
    assert!(!db.exists(), "nothing may start before the file is valid");
    std::fs::write(
        &path,
        format!(
            "{text}[workload.load]\ncommand = [\"{}\"]\n",
            not_exec.display()
        ),
    )
    .unwrap();
    dyno()
        .args(["compare", "run"])
        .arg(&path)
        .arg("--db")
        .arg(&db)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("is not an executable file"));
}

#[test]
fn an_interrupted_comparison_continues_where_it_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let path = file(dir.path(), 2, 2, "exec sleep 30", "exec sleep 30");
    let run = || {
        dyno_process()
            .args(["compare", "run"])
            .arg(&path)
            .arg("--db")
            .arg(&db)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let stored = || {
        dyno_store::Store::open_read_only(&db)
            .and_then(|s| s.list_runs(&dyno_store::RunFilter::default()))
            .map(|r| r.len())
            .unwrap_or(0)
    };
    // Waits (polling, with a generous deadline) until `n` runs are stored, then SIGKILLs
    // `child`: no handler runs, nothing is tidied up.
    let kill_at = |mut child: std::process::Child, n: usize| {
        let deadline = Instant::now() + Duration::from_secs(120);
        while stored() < n && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let out = child.wait_with_output().unwrap();
        assert!(stored() >= n, "fewer than {n} executions were stored");
        out
    };
    kill_at(run(), 2);
    let kept = stored();
    assert!(kept < 4, "the first run finished before it was killed");
    let out = run().wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!("{kept} of 4 executions already stored")),
        "{stderr}"
    );
    assert!(stdout.contains("4 complete executions of 4"), "{stdout}");
    assert_eq!(stored(), 4, "only the missing executions ran");
    // Finished: the next run is a new comparison. A changed file says so.
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("seed = 3", "seed = 4")).unwrap();
    kill_at(run(), 5);
    std::fs::write(&path, &text).unwrap();
    let out = kill_at(run(), 6);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("changed since comparison cmp-")
            && stderr.contains("starting a new comparison"),
        "{stderr}"
    );
}

#[test]
fn a_unit_of_work_no_execution_recorded_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let path = file(dir.path(), 3, 2, "exec sleep 30", "exec sleep 30");
    let text = std::fs::read_to_string(&path).unwrap();
    let load = "work = \"load:confirmd\"\n[workload.load]\ncommand = [\"sh\", \"-c\", \"while :; do echo '{\\\"achieved_tps\\\": 100, \\\"confirmed\\\": 20}'; sleep 0.2; done\"]\n";
    std::fs::write(&path, format!("{text}{load}")).unwrap();
    // Found after the first execution of each subject, not after all three rounds.
    dyno()
        .args(["compare", "run"])
        .arg(&path)
        .arg("--db")
        .arg(&db)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "work metric `load:confirmd` was not recorded by any execution",
        ))
        .stderr(predicate::str::contains("closest: `load:confirmed`"))
        .stderr(predicate::str::contains(
            "the comparison stopped after 2 executions, which are kept",
        ));
    let stored = dyno_store::Store::open_read_only(&db)
        .and_then(|s| s.list_runs(&dyno_store::RunFilter::default()))
        .unwrap();
    assert_eq!(stored.len(), 2);
    // The stored comparison is still reported, for every metric but the costs per unit.
    dyno()
        .args(["compare", "report", "1", "--db"])
        .arg(&db)
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "note: workload `value`: work metric `load:confirmd` was not recorded by any execution, so cpu_s_per_confirmd and rss_per_confirmd are not judged",
        ));
    // Fixed, the same command continues with the two executions stored.
    std::fs::write(
        &path,
        format!("{text}{}", load.replace("confirmd", "confirmed")),
    )
    .unwrap();
    dyno()
        .args(["compare", "run"])
        .arg(&path)
        .arg("--db")
        .arg(&db)
        .assert()
        .code(0)
        .stderr(predicate::str::contains("2 of 6 executions already stored"))
        // `sleep` uses no CPU: its cost per unit is 0 everywhere and not judged; memory is.
        .stdout(predicate::str::contains("rss_per_confirmed"));
    // Where the metric cannot come from at all, the file is refused before anything runs.
    let db2 = dir.path().join("r2.db");
    std::fs::write(&path, format!("{text}work = \"node:chain_txs_total\"\n")).unwrap();
    dyno()
        .args(["compare", "run"])
        .arg(&path)
        .arg("--db")
        .arg(&db2)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("key `workload[0].work`"))
        .stderr(predicate::str::contains(
            "subject `old` has no `metrics.prometheus` endpoint",
        ));
    assert!(!db2.exists(), "nothing may start before the file is valid");
}

#[test]
fn a_precision_target_adds_rounds_until_its_budget_and_says_what_it_reached() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let path = file(dir.path(), 2, 2, "exec sleep 30", "exec sleep 30");
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("rounds = 2\n", "");
    std::fs::write(&path, format!("precision = \"5%\"\nmax_rounds = 3\n{text}")).unwrap();
    dyno()
        .args(["compare", "run"])
        .arg(&path)
        .arg("--db")
        .arg(&db)
        .assert()
        .code(0)
        .stdout(predicate::str::contains("6 complete executions of 6 (at most 6 planned)"))
        .stdout(predicate::str::contains(
            "precision: target 5.0% (every primary metric's detectable change), budget 3 rounds or 60 min; sequential test",
        ))
        .stdout(predicate::str::contains(
            "stopped after 3 rounds in 0 min: the budget of 3 rounds ended",
        ))
        .stderr(predicate::str::contains(
            "precision after 1 round (0 min); the rounds still needed are not known yet: no primary metric judged yet",
        ))
        .stderr(predicate::str::contains("precision after 2 rounds"));
    let out = dyno()
        .args(["compare", "report", "1", "--format", "json", "--db"])
        .arg(&db)
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let json: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert!(json["precision"][0]
        .as_str()
        .unwrap()
        .contains("stopped after 3 rounds"));
    let rows = json["verdicts"].as_array().unwrap();
    // Every primary metric with a log ratio in every round is judged by the sequential
    // test; one with a zero (the CPU of `sleep`, which a sample catches a tick of now and
    // then) has no log ratio and falls back to the rank test for zeros.
    let positive = |r: &&serde_json::Value| {
        ["baseline_values", "candidate_values"].iter().all(|k| {
            r[*k]
                .as_array()
                .unwrap()
                .iter()
                .all(|v| v.as_f64().unwrap() > 0.0)
        })
    };
    let primary: Vec<&serde_json::Value> = rows
        .iter()
        .filter(|r| r["primary"] == true)
        .filter(positive)
        .collect();
    assert!(!primary.is_empty(), "{rows:?}");
    assert!(
        primary.iter().all(|r| r["test"] == "sequential-t"),
        "{rows:?}"
    );
    // Judged with a fixed-horizon test, the report says why that overstates the evidence.
    dyno()
        .args(["compare", "report", "1", "--test", "paired", "--db"])
        .arg(&db)
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "the rounds of this comparison were chosen by looking at its data",
        ));
}

#[test]
fn bad_precision_budgets_and_cpu_sets_are_refused_naming_the_key_or_flag() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let path = file(dir.path(), 2, 2, "exec sleep 30", "exec sleep 30");
    let text = std::fs::read_to_string(&path).unwrap();
    let cases = [
        (
            "rounds = 2\n",
            "precision = \"0%\"\n",
            "cmp.toml:1:13: key `precision`: 0% is not in (0%, 100%)",
        ),
        (
            "rounds = 2\n",
            "precision = \"120%\"\n",
            "key `precision`: 120% is not in (0%, 100%)",
        ),
        (
            "rounds = 2\n",
            "precision = \"5%\"\nmax_rounds = 0\n",
            "cmp.toml:2:14: key `max_rounds`: not a budget: 0 is out of range",
        ),
        (
            "rounds = 2\n",
            "precision = \"5%\"\nmax_minutes = 0\n",
            "cmp.toml:2:15: key `max_minutes`: not a budget: 0 is out of range",
        ),
        (
            "name = \"new\"\n",
            "name = \"new\"\ncpus = \"9999\"\n",
            "key `subject[1].cpus`: CPU 9999 is not on this machine",
        ),
    ];
    for (from, to, says) in cases {
        std::fs::write(&path, text.replace(from, to)).unwrap();
        dyno()
            .args(["compare", "run"])
            .arg(&path)
            .arg("--db")
            .arg(&db)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(says));
    }
    std::fs::write(&path, &text).unwrap();
    for (args, says) in [
        (
            vec!["--precision", "0%"],
            "--precision: 0% is not in (0%, 100%)",
        ),
        (
            vec!["--precision", "5%", "--max-rounds", "0"],
            "--max-rounds",
        ),
        (
            vec!["--precision", "5%", "--max-minutes", "0"],
            "--max-minutes",
        ),
        (
            vec!["--max-rounds", "10"],
            "--max-rounds: a budget for a precision target",
        ),
        (
            vec!["--precision", "5%", "--rounds", "4"],
            "--rounds: the comparison has a precision target",
        ),
    ] {
        dyno()
            .args(["compare", "run"])
            .arg(&path)
            .args(&args)
            .arg("--db")
            .arg(&db)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(says));
    }
    assert!(!db.exists(), "nothing may start before the input is valid");
}

#[test]
fn a_pinned_node_runs_on_its_cpus_only() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let cpus = std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| {
            l.strip_prefix("Cpus_allowed_list:")
                .map(|v| v.trim().to_string())
        })
        .unwrap();
    // The last CPU dyno may use (a list such as 0-1 or 0,2-3).
    let last: String = cpus.rsplit([',', '-']).next().unwrap().to_string();
    let report = dir.path().join("pinned.txt");
    let node = format!(
        "grep Cpus_allowed_list /proc/self/status > {}; exec sleep 30",
        report.display()
    );
    let path = file(dir.path(), 1, 2, "exec sleep 30", &node);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        text.replace(
            "name = \"new\"\n",
            &format!("name = \"new\"\ncpus = \"{last}\"\n"),
        ),
    )
    .unwrap();
    dyno()
        .args(["compare", "run"])
        .arg(&path)
        .arg("--db")
        .arg(&db)
        .assert()
        .code(0);
    let seen = std::fs::read_to_string(&report).unwrap();
    assert_eq!(seen.trim(), format!("Cpus_allowed_list:\t{last}"));
}
