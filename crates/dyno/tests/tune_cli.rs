//! `dyno tune` from the command line: init, validation errors with exit code 2, and a
//! full run and report on the tiny fixture crate.

use assert_cmd::Command;
use predicates::prelude::*;
use std::path::{Path, PathBuf};

fn dyno() -> Command {
    let mut c = Command::cargo_bin("dyno").unwrap();
    c.env_remove("DYNO_DB");
    c
}

fn tiny_manifest() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../dyno-tune/tests/fixtures/tiny/Cargo.toml")
        .canonicalize()
        .unwrap()
}

fn study(dir: &Path, matrix: &str, bin: &str) -> PathBuf {
    let text = format!(
        r#"[project]
manifest = "{}"
bin = "{bin}"

[matrix]
{matrix}

[[benchmark]]
name = "sum"
args = ["100000"]
extract = {{ kind = "json-pointer", pointer = "/ops_per_s", metric = "ops", unit = "/s", direction = "higher" }}

[run]
max_rounds = 3
min_rounds = 2
"#,
        tiny_manifest().display()
    );
    let path = dir.join("study.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn init_writes_an_example_and_never_overwrites() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.toml");
    dyno().args(["tune", "init"]).arg(&path).assert().success();
    assert!(std::fs::read_to_string(&path).unwrap().contains("[matrix]"));
    dyno()
        .args(["tune", "init"])
        .arg(&path)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("already exists"));
}

#[test]
fn bad_study_files_exit_2_naming_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = study(dir.path(), "lto = [false, \"medium\"]", "tiny");
    dyno()
        .args(["tune", "check"])
        .arg(&path)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("study.toml:6:").and(predicate::str::contains("lto")));
    let path = study(dir.path(), "toolchain = [\"no-such-toolchain\"]", "tiny");
    dyno()
        .args(["tune", "check"])
        .arg(&path)
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("toolchain `no-such-toolchain` is not installed")
                .and(predicate::str::contains("rustup toolchain list")),
        );
    let path = study(dir.path(), "opt_level = [1]", "huge");
    dyno()
        .args(["tune", "check"])
        .arg(&path)
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("no binary `huge`")
                .and(predicate::str::contains("tiny"))
                .and(predicate::str::contains("Cargo.toml")),
        );
}

#[test]
fn run_then_report_on_the_tiny_crate() {
    let dir = tempfile::tempdir().unwrap();
    let path = study(
        dir.path(),
        "toolchain = [\"stable\"]\nopt_level = [1, 2]",
        "tiny",
    );
    let db = dir.path().join("results.db");
    dyno()
        .args(["tune", "run", "--exhaustive"])
        .arg(&path)
        .arg("--db")
        .arg(&db)
        .assert()
        .success()
        .stdout(
            predicate::str::contains("ops (higher is better)")
                .and(predicate::str::contains("[profile.production]"))
                .and(predicate::str::contains("3 rounds, 6 benchmark runs")),
        );
    // A second run resumes: nothing rebuilt, nothing measured again.
    dyno()
        .args(["tune", "run", "--exhaustive"])
        .arg(&path)
        .arg("--db")
        .arg(&db)
        .env("DYNO_TUNE_VERBOSE", "1")
        .assert()
        .success()
        .stderr(
            predicate::str::contains("unchanged, not rebuilt")
                .and(predicate::str::contains("0 benchmark runs this session")),
        );
    let html = dir.path().join("report.html");
    dyno()
        .args(["tune", "report"])
        .arg(&path)
        .arg("--db")
        .arg(&db)
        .arg("--html")
        .arg(&html)
        .args(["--format", "markdown"])
        .assert()
        .success()
        .stdout(predicate::str::contains("| stable/o"));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<svg") && page.contains("[profile.production]"));
}

#[test]
fn report_without_results_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let path = study(dir.path(), "opt_level = [1]", "tiny");
    dyno()
        .args(["tune", "report"])
        .arg(&path)
        .arg("--db")
        .arg(dir.path().join("empty.db"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no results stored"));
}
