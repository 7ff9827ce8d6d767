//! `dyno pipeline run` and `monitor` as a user meets them: bad layouts refused before
//! anything starts, a two-tile run watched from a second process, and a metrics endpoint
//! whose text a Prometheus parser accepts. No assertion depends on the machine's speed.

use crate::harness::{dyno, dyno_process};
use predicates::prelude::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

fn layout(name: &str, affinity: &str, listen: Option<&str>, dir: &std::path::Path) -> String {
    let metrics = listen
        .map(|l| format!("listen = \"{l}\""))
        .unwrap_or_default();
    format!(
        r#"[layout]
affinity = "{affinity}"
idle = "spin-then-yield"

[[layout.tiles]]
kind = "source"
count = 1

[[layout.tiles]]
kind = "sink"
count = 1

[[links]]
from = "source"
to = "sink"
depth = 1024
mtu = 1232
reliable = true

[workspace]
name = "{name}"
dir = "{}"

[metrics]
{metrics}

[synthetic]
frag_size = 64
rate = 0
count = 0
"#,
        dir.display()
    )
}

#[test]
fn bad_layouts_are_refused_naming_the_entry_and_the_online_cpus() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [("0,4095", "4095"), ("0,0", "0"), ("0", "for 2 tiles")];
    for (affinity, needle) in cases {
        let file = dir.path().join("bad.toml");
        std::fs::write(&file, layout("bad", affinity, None, dir.path())).unwrap();
        dyno()
            .args(["pipeline", "run", "--no-save", "--config"])
            .arg(&file)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(needle).and(predicate::str::contains("online")));
    }
    // Nothing was created: no workspace file in the directory besides the config.
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(left.len(), 1);
    let file = dir.path().join("typo.toml");
    std::fs::write(&file, "[layout]\naffinty = \"0\"\n").unwrap();
    dyno()
        .args(["pipeline", "run", "--no-save", "--config"])
        .arg(&file)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("affinty"));
}

/// Reads stderr lines until the metrics address is announced.
fn metrics_addr(child: &mut Child) -> String {
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    for line in lines.by_ref() {
        let line = line.unwrap();
        if let Some(rest) = line.strip_prefix("metrics: http://") {
            // Keep draining stderr so the child never blocks on a full pipe.
            std::thread::spawn(move || for _ in lines {});
            return rest.trim_end_matches("/metrics").to_string();
        }
    }
    panic!("no metrics address announced");
}

fn http_get(addr: &str, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let code = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (code, body.to_string())
}

/// The exposition format's grammar for the lines dyno writes.
fn check_prometheus(text: &str) {
    let name_ok = |n: &str| {
        !n.is_empty()
            && n.chars().enumerate().all(|(i, c)| {
                c.is_ascii_alphabetic() || c == '_' || c == ':' || (i > 0 && c.is_ascii_digit())
            })
    };
    let mut samples = 0;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# ") {
            let mut parts = rest.splitn(3, ' ');
            let kind = parts.next().unwrap();
            assert!(kind == "HELP" || kind == "TYPE", "{line}");
            assert!(name_ok(parts.next().unwrap()), "{line}");
            continue;
        }
        let (series, value) = line.rsplit_once(' ').unwrap();
        value
            .parse::<f64>()
            .unwrap_or_else(|_| panic!("value in {line}"));
        let name = series.split('{').next().unwrap();
        assert!(name_ok(name), "{line}");
        if let Some(labels) = series.strip_prefix(name) {
            if !labels.is_empty() {
                assert!(labels.starts_with('{') && labels.ends_with('}'), "{line}");
            }
        }
        samples += 1;
    }
    assert!(
        samples >= 10,
        "a two-tile pipeline exposes tile, link and consumer series"
    );
}

#[test]
fn a_two_tile_run_is_watched_and_scraped_while_it_runs() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("two.toml");
    std::fs::write(&file, layout("two", "f2", Some("127.0.0.1:0"), dir.path())).unwrap();
    let db = dir.path().join("results.db");
    let mut child = dyno_process()
        .env("DYNO_DB", &db)
        .args(["pipeline", "run", "--duration", "20", "--config"])
        .arg(&file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let addr = metrics_addr(&mut child);

    // The monitor attaches read-only from another process.
    let out = dyno()
        .args([
            "pipeline",
            "monitor",
            "--once",
            "--format",
            "json",
            "--wait",
            "30",
            "--interval-ms",
            "200",
            "--name",
            "two",
            "--dir",
        ])
        .arg(dir.path())
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["alive"], true);
    let tiles: Vec<_> = v["snapshot"]["tiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(tiles, ["source:0", "sink:0"]);
    assert_eq!(v["snapshot"]["consumers"][0]["link"], "source->sink");
    let table = dyno()
        .args([
            "pipeline",
            "monitor",
            "--once",
            "--interval-ms",
            "100",
            "--name",
            "two",
            "--dir",
        ])
        .arg(dir.path())
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let table = String::from_utf8(table).unwrap();
    for h in [
        "% hkeep",
        "% backp",
        "% finish",
        "ovrnp cnt",
        "source->sink",
    ] {
        assert!(table.contains(h), "{h} in\n{table}");
    }

    // Scrape until the counters are populated, then check the text format.
    let deadline = Instant::now() + Duration::from_secs(30);
    let body = loop {
        let (code, body) = http_get(&addr, "/metrics");
        if code == 200 && body.contains("dyno_consumer_frags") {
            break body;
        }
        assert!(
            Instant::now() < deadline,
            "metrics never became ready: {code} {body}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    check_prometheus(&body);
    assert!(
        body.contains("# TYPE dyno_build_info gauge\ndyno_build_info{version=\""),
        "{body}"
    );
    assert_eq!(http_get(&addr, "/other").0, 404);
    if let Ok(mut py) = std::process::Command::new("python3")
        .args(["-c", "import sys\nfrom prometheus_client.parser import text_string_to_metric_families as p\nprint(len(list(p(sys.stdin.read()))))"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
    {
        py.stdin.take().unwrap().write_all(body.as_bytes()).unwrap();
        let o = py.wait_with_output().unwrap();
        if o.status.success() {
            let families: usize = String::from_utf8_lossy(&o.stdout).trim().parse().unwrap();
            assert!(families >= 10, "prometheus_client parsed {families} families");
        } else {
            eprintln!("prometheus_client not installed: checked the grammar only");
        }
    }

    // Ctrl-C ends the run cleanly with a summary and a stored run; the workspace is gone;
    // the exit code says a signal ended it (130), as docs/output.md promises.
    dyno_proc::signal_process(child.id(), dyno_proc::Signal::Int).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{:?}", out.status);
    let summary = String::from_utf8(out.stdout).unwrap();
    assert!(
        summary.contains("frags read") && summary.contains("0 bad payloads"),
        "{summary}"
    );
    assert!(
        !dir.path().join("dyno-two").exists(),
        "workspace removed on clean shutdown"
    );
    dyno()
        .env("DYNO_DB", &db)
        .args([
            "results",
            "list",
            "--command",
            "pipeline",
            "--format",
            "csv",
        ])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("two"));
}

#[test]
fn a_monitor_without_a_pipeline_gives_up_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    dyno()
        .args([
            "pipeline", "monitor", "--once", "--wait", "1", "--name", "nobody", "--dir",
        ])
        .arg(dir.path())
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("no running pipeline")
                .and(predicate::str::contains("dyno-nobody")),
        );
}

#[test]
fn the_monitor_reads_the_workspace_of_a_bench_config_too() {
    let dir = tempfile::tempdir().unwrap();
    let bench = dir.path().join("bench.toml");
    std::fs::write(
        &bench,
        format!(
            "[layout]\nverify_tile_count = 2\n[workspace]\nname = \"benchws\"\ndir = \"{}\"\n",
            dir.path().display()
        ),
    )
    .unwrap();
    dyno()
        .args(["pipeline", "monitor", "--once", "--wait", "1", "--config"])
        .arg(&bench)
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("no running pipeline")
                .and(predicate::str::contains("benchws")),
        );
    let neither = dir.path().join("neither.toml");
    std::fs::write(&neither, "[layout]\nbogus = 1\n").unwrap();
    dyno()
        .args(["pipeline", "monitor", "--once", "--wait", "1", "--config"])
        .arg(&neither)
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("neither.toml")
                .and(predicate::str::contains("pipeline bench")),
        );
}
