//! The `dyno` command line as a user meets it: exit codes, messages that name the
//! culprit, files left behind, and what reaches the results store. Durations are tiny
//! and no assertion depends on how fast this machine is.

use assert_cmd::Command;
use predicates::prelude::*;

use crate::harness::{dyno, dyno_process, entries, Env, QUICK};

/// A machine run with the disk benchmark in the test's directory, and what it stored.
trait MachineRun {
    fn runs(&self) -> serde_json::Value;
    fn machine(&self, extra: &[&str]) -> Command;
}

impl MachineRun for Env {
    /// `dyno results list --format json`, parsed.
    fn runs(&self) -> serde_json::Value {
        let out = self
            .dyno()
            .args(["results", "list", "--format", "json"])
            .assert()
            .code(0)
            .get_output()
            .stdout
            .clone();
        let doc: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(doc["schema"], "dyno.results.list/1");
        doc["runs"].clone()
    }
    fn machine(&self, extra: &[&str]) -> Command {
        let mut c = self.dyno();
        c.arg("machine")
            .args(QUICK)
            .arg("--base-path")
            .arg(self.disk())
            .args(extra);
        c
    }
}

#[test]
fn a_debug_build_is_refused_without_the_test_override() {
    let env = Env::new();
    let mut c = dyno();
    c.env_remove("DYNO_ALLOW_DEBUG_BUILD")
        .env("DYNO_DB", env.db())
        .args(["machine", "--only", "Blake2256"]);
    c.assert()
        .code(2)
        .stderr(predicate::str::contains("debug build").and(predicate::str::contains("--release")));
    assert!(!env.db().exists(), "nothing stored");
}

#[test]
fn bad_flags_exit_2_naming_the_flag() {
    let env = Env::new();
    let cases: [(&[&str], &str); 7] = [
        (&["--tolerance", "101"], "--tolerance"),
        (&["--tolerance", "-1"], "--tolerance"),
        (&["--hash-duration", "0"], "--hash-duration"),
        (&["--disk-duration", "-3"], "--disk-duration"),
        (&["--verify-duration", "soon"], "--verify-duration"),
        (&["--only", "Blake3"], "Blake3"),
        (&["--repeat", "0"], "--repeat"),
    ];
    for (args, needle) in cases {
        env.dyno()
            .arg("machine")
            .args(args)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(needle));
    }
    assert!(!env.db().exists(), "no store created by a refused run");
}

#[test]
fn a_missing_base_path_is_named_and_nothing_is_stored() {
    let env = Env::new();
    let missing = env.dir.path().join("no-such-dir");
    env.dyno()
        .args(["machine", "--only", "DiskSeqWrite", "--base-path"])
        .arg(&missing)
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("--base-path").and(predicate::str::contains("no-such-dir")),
        );
    assert!(!missing.exists());
    assert!(!env.db().exists());
}

#[test]
fn an_invalid_requirements_file_names_file_and_line() {
    let env = Env::new();
    let file = env.dir.path().join("chain.toml");
    std::fs::write(
        &file,
        "name = \"x\"\n[[requirement]]\nmetric = \"Blake3\"\nminimum = 1\n",
    )
    .unwrap();
    env.machine(&["--requirements", file.to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains(
                "chain.toml:3:10: key `requirement[0].metric`: unknown metric `Blake3`",
            )
            .and(predicate::str::contains("\n3 | metric = \"Blake3\"\n")),
        );
    let json = env.dir.path().join("chain.json");
    std::fs::write(
        &json,
        "[\n{\"metric\": \"MemCopy\", \"minimum\": \"fast\"}\n]",
    )
    .unwrap();
    env.machine(&["--requirements", json.to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("chain.json, line 2"));
    env.machine(&["--reference", "polkadot-1999"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("substrate-2022"));
}

#[test]
fn unjudged_metrics_pass_and_json_parses_with_raw_repetitions() {
    let env = Env::new();
    let out = env
        .machine(&[
            "--only",
            "Sha256Chain,Ed25519Verify",
            "--repeat",
            "3",
            "--format",
            "json",
        ])
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["schema"], "dyno.machine/1");
    assert_eq!(v["verdict"], "pass");
    assert_eq!(v["debug_build"], true);
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    for r in results {
        assert_eq!(r["substrate"], false);
        assert_eq!(r["samples"].as_array().unwrap().len(), 3);
        assert_eq!(r["unit"], "/s");
        assert!(r["minimum"].is_null());
        let ci = &r["ci"];
        assert!(ci["low"].as_f64().unwrap() <= r["score"].as_f64().unwrap());
        assert!(ci["high"].as_f64().unwrap() >= r["score"].as_f64().unwrap());
    }
    assert_eq!(v["summary"]["total"], 0);
    assert!(v["run_id"].as_i64().is_some());
}

/// Measures one metric once and returns its score (used to build requirement files
/// relative to this machine, so the tests hold on any machine).
fn score_of(env: &Env, metric: &str) -> f64 {
    let out = env
        .machine(&["--only", metric, "--format", "json", "--no-save"])
        .assert()
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    v["results"][0]["score"].as_f64().unwrap()
}

#[test]
fn the_exit_code_follows_the_verdict_and_allow_fail() {
    let env = Env::new();
    let score = score_of(&env, "Sha256Chain");
    let write = |name: &str, minimum: f64| {
        let p = env.dir.path().join(name);
        std::fs::write(
            &p,
            format!(
                "[[requirement]]\nmetric = \"Sha256Chain\"\nminimum = {minimum}\nunit = \"/s\"\n"
            ),
        )
        .unwrap();
        p
    };
    // Ten times this machine's score: a fail (and not a "bad result", which needs 100x).
    let hard = write("hard.toml", score * 10.0);
    env.machine(&[
        "--only",
        "Sha256Chain",
        "--tolerance",
        "0",
        "--requirements",
        hard.to_str().unwrap(),
    ])
    .assert()
    .code(1)
    .stdout(predicate::str::contains("❌ Fail").and(predicate::str::contains("fails to meet")));
    env.machine(&[
        "--only",
        "Sha256Chain",
        "--allow-fail",
        "--requirements",
        hard.to_str().unwrap(),
    ])
    .assert()
    .code(0);
    // A fifth of it with 50% tolerance: a pass even if the machine slows down 2x.
    let easy = write("easy.toml", score / 5.0);
    env.machine(&[
        "--only",
        "Sha256Chain",
        "--tolerance",
        "50",
        "--requirements",
        easy.to_str().unwrap(),
    ])
    .assert()
    .code(0)
    .stdout(
        predicate::str::contains("✅ Pass").and(predicate::str::contains("1 passed and 0 failed")),
    );
}

#[test]
fn the_full_run_prints_substrates_table_and_leaves_no_files() {
    let env = Env::new();
    let disk = env.disk();
    let out = env
        .machine(&["--allow-fail", "--parallel-cores", "2"])
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    for needle in [
        "Category",
        "Function",
        "Score",
        "Minimum",
        "Result",
        "BLAKE2-256-Parallel-2",
        "SR25519-Verify",
        "Seq Write",
        "Rnd Write",
        "Ed25519-Verify *",
        "From 6 benchmarks in total",
        "CPU",
        "Disk dir",
    ] {
        assert!(text.contains(needle), "missing `{needle}` in:\n{text}");
    }
    assert_eq!(entries(&disk), 0, "disk benchmark files removed");
}

#[test]
fn fewer_cores_than_parallel_threads_is_said() {
    let env = Env::new();
    env.machine(&[
        "--only",
        "Blake2256Parallel",
        "--parallel-cores",
        "64",
        "--allow-fail",
    ])
    .assert()
    .code(0)
    .stderr(predicate::str::contains("64 threads"));
}

#[test]
fn runs_reach_the_store_and_export() {
    let env = Env::new();
    env.machine(&[
        "--only",
        "Blake2256,MemCopy",
        "--repeat",
        "2",
        "--allow-fail",
    ])
    .assert()
    .code(0);
    env.dyno()
        .args(["results", "list", "--format", "csv"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("machine").and(predicate::str::contains("complete")));
    let out = env
        .dyno()
        .args(["results", "export", "--run", "1", "--format", "csv"])
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    assert_eq!(
        text.lines().count(),
        1 + 4,
        "header + 2 metrics x 2 repetitions:\n{text}"
    );
    assert!(text.contains("Blake2256") && text.contains("MemCopy"));
    env.dyno()
        .args(["results", "show", "1"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("Blake2256"));
    env.dyno()
        .args(["results", "export", "--run", "99", "--format", "csv"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("99"));
    let parquet = env.dir.path().join("out.parquet");
    env.dyno()
        .args(["results", "export", "--format", "parquet", "--output"])
        .arg(&parquet)
        .assert()
        .code(0);
    assert!(std::fs::metadata(&parquet).unwrap().len() > 0);
    env.dyno()
        .args([
            "results", "export", "--run", "42", "--format", "parquet", "--output",
        ])
        .arg(env.dir.path().join("bad.parquet"))
        .assert()
        .code(2);
    let left: Vec<_> = std::fs::read_dir(env.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains("bad.parquet"))
        .collect();
    assert!(
        left.is_empty(),
        "nothing left of the refused export: {left:?}"
    );
    let html = env.dir.path().join("report.html");
    env.dyno()
        .args(["results", "report", "1", "--output"])
        .arg(&html)
        .assert()
        .code(0);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert_eq!(page.matches("<svg").count(), 2, "one box plot per metric");
    assert!(
        !page.contains("<script") && !page.contains("href=\"http") && !page.contains("src=\"http"),
        "self-contained"
    );
    env.dyno().args(["results", "delete", "1"]).assert().code(0);
    env.dyno().args(["results", "show", "1"]).assert().code(2);
}

#[test]
fn no_save_leaves_the_store_alone() {
    let env = Env::new();
    env.machine(&["--only", "Blake2256", "--no-save", "--allow-fail"])
        .assert()
        .code(0);
    assert!(!env.db().exists());
}

#[test]
fn a_foreign_store_file_is_refused_untouched() {
    let env = Env::new();
    std::fs::write(env.db(), b"not a database at all, just text").unwrap();
    env.machine(&["--only", "Blake2256"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("results.db"));
    assert_eq!(
        std::fs::read(env.db()).unwrap(),
        b"not a database at all, just text"
    );
}

#[cfg(unix)]
#[test]
fn ctrl_c_keeps_samples_marks_the_run_incomplete_and_removes_files() {
    let env = Env::new();
    let disk = env.disk();
    let child = dyno_process()
        .env("DYNO_DB", env.db())
        .args([
            "machine",
            "--only",
            "Blake2256,DiskSeqWrite",
            "--hash-duration",
            "0.05",
            "--disk-duration",
            "60",
        ])
        .arg("--base-path")
        .arg(&disk)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the disk benchmark's file exists, i.e. the first sample is stored.
    let file = disk.join(".disk_bench_seq_wr.tmp");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !file.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(file.exists(), "the disk benchmark started");
    std::thread::sleep(std::time::Duration::from_millis(300));
    dyno_proc::signal_process(child.id(), dyno_proc::Signal::Int).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(entries(&disk), 0, "the benchmark file was removed");
    let runs = env.runs();
    assert_eq!(runs[0]["status"], "incomplete");
    assert_eq!(
        runs[0]["samples"], 1,
        "the BLAKE2 sample measured before Ctrl-C is kept"
    );
}

/// A full disk ends the run with exit 2 and leaves no benchmark file behind. It needs a
/// small filesystem, made with a tmpfs mount when the test runs with the right to mount
/// (root in CI); elsewhere it says it was skipped.
#[cfg(target_os = "linux")]
#[test]
fn a_full_disk_fails_cleanly() {
    struct Mount(std::path::PathBuf);
    impl Drop for Mount {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(&self.0).status();
        }
    }
    let env = Env::new();
    let small = env.dir.path().join("small");
    std::fs::create_dir(&small).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=8m", "tmpfs"])
        .arg(&small)
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!("skipped: cannot mount a small tmpfs here (needs root)");
        return;
    }
    let _guard = Mount(small.clone());
    env.dyno()
        .args([
            "machine",
            "--only",
            "DiskSeqWrite",
            "--disk-duration",
            "0.05",
            "--base-path",
        ])
        .arg(&small)
        .assert()
        // A full disk is a runtime failure, not bad input (docs/output.md).
        .code(3)
        .stderr(
            predicate::str::contains("No space left")
                .and(predicate::str::contains(".disk_bench_seq_wr.tmp")),
        );
    assert_eq!(entries(&small), 0, "the partial file was removed");
    let runs = env.runs();
    assert_eq!(runs[0]["status"], "failed");
}
