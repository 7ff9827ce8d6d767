//! One way to say a config error, for every command that reads a TOML file: exit 2 and
//! `FILE:LINE:COL: key `k`: message`, then toml's snippet (the line, a caret under the
//! fault) on lines of their own. A syntax error and a validation error per command; each
//! is refused before any work starts, so no test waits on a measurement.

use assert_cmd::Command;
use std::path::Path;

/// One refused file: where it goes wrong and what the message must carry.
struct Case {
    /// The command line before the file's path.
    args: &'static [&'static str],
    /// The command line after it.
    after: &'static [&'static str],
    /// File name and content.
    name: &'static str,
    text: String,
    /// 1-based line and column of the fault, and the key named.
    line: usize,
    column: usize,
    key: &'static str,
    /// A piece of the message.
    says: &'static str,
}

/// [`dyno`] run in `dir`, with its store there.
fn dyno_in(dir: &Path) -> Command {
    let mut c = dyno();
    c.env("DYNO_DB", dir.join("results.db")).current_dir(dir);
    c
}
use crate::harness::dyno;

fn check(case: Case) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(case.name);
    std::fs::write(&file, &case.text).unwrap();
    let out = dyno_in(dir.path())
        .args(case.args)
        .arg(&file)
        .args(case.after)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}: {stderr}", case.name);
    let head = format!(
        "{}:{}:{}: key `{}`: ",
        file.display(),
        case.line,
        case.column,
        case.key
    );
    assert!(stderr.contains(&head), "want {head:?} in:\n{stderr}");
    assert!(
        stderr.contains(case.says),
        "want {:?} in:\n{stderr}",
        case.says
    );
    // toml's snippet, each part on a line of its own, the caret under the column.
    let written = case.text.lines().nth(case.line - 1).unwrap();
    let gutter = " ".repeat(case.line.to_string().len());
    let snippet = format!(
        "\n{gutter} |\n{} | {written}\n{gutter} | {}^",
        case.line,
        " ".repeat(case.column - 1)
    );
    assert!(stderr.contains(&snippet), "want {snippet:?} in:\n{stderr}");
    // Refused before any work: nothing but the file in the directory.
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, [std::ffi::OsString::from(case.name)], "{stderr}");
}

const COMPARE: &str = r#"rounds = 4
seed = 3

[[subject]]
name = "old"
command = ["sh", "-c", "exec sleep 30"]

[[subject]]
name = "new"
command = ["sh", "-c", "exec sleep 30"]

[[workload]]
name = "value"
rate = 100
measure_s = 2
"#;

#[test]
fn compare_run() {
    let args = &["compare", "run"][..];
    check(Case {
        args,
        after: &[],
        name: "cmp.toml",
        text: COMPARE.replace("seed = 3", "seed = 3x"),
        line: 2,
        column: 8,
        key: "seed",
        says: "string values must be quoted",
    });
    check(Case {
        args,
        after: &[],
        name: "cmp.toml",
        text: COMPARE.replace("rate = 100", "rate = 0"),
        line: 14,
        column: 1,
        key: "workload[0].rate",
        says: "0 is out of range: give more than 0 to 100000000 tx/s",
    });
}

fn study(bin: &str, alpha: &str) -> String {
    format!(
        r#"[project]
manifest = "Cargo.toml"
bin = "{bin}"

[matrix]
opt_level = [1]

[[benchmark]]
name = "sum"
args = ["1"]
extract = {{ kind = "json-pointer", pointer = "/ops", metric = "ops", unit = "/s", direction = "higher" }}

[run]
alpha = {alpha}
"#
    )
}

#[test]
fn tune_check() {
    let args = &["tune", "check"][..];
    check(Case {
        args,
        after: &[],
        name: "study.toml",
        text: study("node", "0.05.1"),
        line: 14,
        column: 13,
        key: "run.alpha",
        says: "invalid float",
    });
    check(Case {
        args,
        after: &[],
        name: "study.toml",
        text: study("node", "0.7"),
        line: 14,
        column: 9,
        key: "run.alpha",
        says: "key `run.alpha`: 0.7 is outside (0, 0.5)\n",
    });
}

#[test]
fn pipeline_bench() {
    let args = &["pipeline", "bench", "--no-save", "--config"][..];
    check(Case {
        args,
        after: &[],
        name: "bench.toml",
        text: "[layout]\nverify_tile_count = two\n".into(),
        line: 2,
        column: 21,
        key: "layout.verify_tile_count",
        says: "invalid",
    });
    check(Case {
        args,
        after: &[],
        name: "bench.toml",
        text: "[layout]\nverify_tile_count = 0\n".into(),
        line: 2,
        column: 1,
        key: "layout.verify_tile_count",
        says: "must be in 1..=64",
    });
}

const LAYOUT: &str = r#"[layout]
affinity = "auto"
[[layout.tiles]]
kind = "source"
[[layout.tiles]]
kind = "sink"
[[links]]
from = "source"
to = "sink"
depth = 1024
"#;

#[test]
fn pipeline_run() {
    let args = &["pipeline", "run", "--no-save", "--config"][..];
    check(Case {
        args,
        after: &[],
        name: "layout.toml",
        text: LAYOUT.replace("depth = 1024", "depth = 10 24"),
        line: 10,
        column: 9,
        key: "links[0].depth",
        says: "string values must be quoted",
    });
    check(Case {
        args,
        after: &[],
        name: "layout.toml",
        text: LAYOUT.replace("1024", "1000"),
        line: 10,
        column: 1,
        key: "links[0].depth",
        says: "1000 must be a power of two",
    });
}

#[test]
fn machine_requirements() {
    let args = &["machine", "--requirements"][..];
    check(Case {
        args,
        after: &[],
        name: "chain.toml",
        text: "name = \"x\"\n[[requirement]]\nmetric = \"MemCopy\"\nminimum = 1.\n".into(),
        line: 4,
        column: 13,
        key: "requirement[0].minimum",
        says: "invalid fraction",
    });
    check(Case {
        args,
        after: &[],
        name: "chain.toml",
        text: "name = \"x\"\n[[requirement]]\nmetric = \"Blake3\"\nminimum = 1\n".into(),
        line: 3,
        column: 10,
        key: "requirement[0].metric",
        says: "unknown metric `Blake3`",
    });
}
