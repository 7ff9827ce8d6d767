//! The Grafana dashboards answered by a real Prometheus: Debian's `prometheus` server on
//! loopback (a temporary data directory, a one-second scrape interval) scrapes a
//! `dyno node run` pair under `dyno load` and a `dyno pipeline bench --metrics-listen`,
//! and every panel query of every dashboard (grafana/dashboards) is evaluated through
//! Prometheus' HTTP query API, as Grafana would send it with every instance selected.
//! A query that returns no series fails the test, named by dashboard, panel and query;
//! so does a template variable that lists fewer instances than were scraped, and an
//! alerting rule (grafana/alerts) that Prometheus cannot evaluate on the real series.
//!
//! Skipped with a printed note where the server is not installed (scripts/ci/promtool.sh
//! installs Debian's package, server and promtool). About 15 seconds once built.

use crate::harness::dashboards::{as_prometheus_sees_it, on_path, panel_queries, variable_queries};
use crate::harness::{alone, dyno_process, free_tcp, free_udp, node_genesis, write};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Prometheus' scrape (and rule evaluation) interval.
const SCRAPE: &str = "1s";
/// How long the panels may take to be answered, from the load's start: the node pair
/// needs its genesis to start (2 s) and a few slots; rates need four scrapes.
const ANSWER_WITHIN: Duration = Duration::from_secs(90);

/// A child process that is stopped with SIGTERM (and killed if it does not stop) and
/// reaped when dropped, so a failing test leaves no process behind.
struct Reaped {
    name: &'static str,
    child: Child,
}

impl Reaped {
    fn spawn(name: &'static str, cmd: &mut Command) -> Reaped {
        let child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {name}: {e}"));
        Reaped { name, child }
    }

    /// Still running? (A process that exited early is named with its stderr.)
    fn assert_running(&mut self) {
        if let Some(status) = self.child.try_wait().unwrap() {
            let mut err = String::new();
            if let Some(mut e) = self.child.stderr.take() {
                let _ = e.read_to_string(&mut err);
            }
            panic!("{} exited early ({status}):\n{err}", self.name);
        }
    }
}

impl Drop for Reaped {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_some() {
            return;
        }
        let _ = dyno_proc::signal_process(self.child.id(), dyno_proc::Signal::Term);
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(20) {
            if self.child.try_wait().ok().flatten().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Percent-encodes a query-string value.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// GETs `path` from the server at `authority`: the status code and the body.
fn get(authority: &str, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(authority).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {authority}\r\n\r\n").ok()?;
    let mut raw = String::new();
    s.read_to_string(&mut raw).ok()?;
    let (head, body) = raw.split_once("\r\n\r\n")?;
    let code = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((code, body.to_string()))
}

/// The series an instant query returns now (`None`: no answer or an error, with why).
fn query(authority: &str, expr: &str) -> Result<Vec<serde_json::Value>, String> {
    let (code, body) = get(authority, &format!("/api/v1/query?query={}", encode(expr)))
        .ok_or("Prometheus did not answer")?;
    let v: serde_json::Value =
        serde_json::from_str(&body).map_err(|e| format!("HTTP {code}: {e}: {body}"))?;
    if v["status"] != "success" {
        return Err(format!("HTTP {code}: {}", v["error"]));
    }
    Ok(match v["data"]["resultType"].as_str() {
        // A scalar is one answer however many series it came from.
        Some("scalar") => vec![v["data"]["result"].clone()],
        _ => v["data"]["result"].as_array().cloned().unwrap_or_default(),
    })
}

/// Two nodes that peer with each other, each with its metrics endpoint; returns their
/// configs, their metrics addresses and the second node's ingress.
fn node_pair(dir: &Path) -> (Vec<PathBuf>, Vec<String>, String) {
    let flags = ["--slot-ms", "300", "--start-in", "2", "--accounts", "64"];
    node_genesis(dir, "n1=1,n2=1", &flags);
    let peer = [free_tcp(), free_tcp()];
    let metrics = [free_tcp(), free_tcp()];
    let ingress = [free_udp(), free_udp()];
    let configs = (0..2)
        .map(|i| {
            let (id, other) = (format!("n{}", i + 1), format!("n{}", 2 - i));
            write(
                &dir.join(format!("{id}.toml")),
                &format!(
                    "id = \"{id}\"\ngenesis = \"genesis.toml\"\n\
                     peer_listen = \"127.0.0.1:{}\"\ningress_listen = \"127.0.0.1:{}\"\n\
                     metrics_listen = \"127.0.0.1:{}\"\nnode_log = \"{id}.jsonl\"\n\n\
                     [[peers]]\nid = \"{other}\"\naddr = \"127.0.0.1:{}\"\nlatency_ms = 5\n",
                    peer[i],
                    ingress[i],
                    metrics[i],
                    peer[1 - i]
                ),
            )
        })
        .collect();
    let metrics = metrics.iter().map(|p| format!("127.0.0.1:{p}")).collect();
    (configs, metrics, format!("127.0.0.1:{}", ingress[1]))
}

/// A small pipeline bench config whose shared memory lives in `dir`.
fn bench_config(dir: &Path) -> PathBuf {
    write(
        &dir.join("bench.toml"),
        &format!(
            "[layout]\naffinity = \"floating\"\nlink_depth = 1024\n\
             [workspace]\nname = \"prom-test-{pid}\"\ndir = \"{d}\"\n\
             [genesis]\nfund_initial_accounts = 256\n\
             [bench]\npresign = 20000\nrate = 1000\n\
             [poh]\nhashes_per_tick = 200\ntick_ns = 2000000\nticks_per_slot = 8\n\
             [store]\ndir = \"{d}\"\n",
            pid = std::process::id(),
            d = dir.display()
        ),
    )
}

#[test]
fn every_dashboard_panel_is_answered_by_a_prometheus_scraping_dyno() {
    let _alone = alone();
    let Some(prometheus) = on_path("prometheus") else {
        eprintln!(
            "note: the Prometheus server is not installed (scripts/ci/promtool.sh installs \
             Debian's prometheus package); skipping the dashboards-against-Prometheus test"
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (configs, node_metrics, ingress) = node_pair(dir.path());
    let bench_metrics = format!("127.0.0.1:{}", free_tcp());

    // Everything runs for at most two minutes; the test stops them (SIGTERM) once every
    // panel is answered.
    let mut nodes: Vec<Reaped> = configs
        .iter()
        .map(|c| {
            Reaped::spawn(
                "dyno node run",
                dyno_process()
                    .args(["node", "run", "--quiet", "--duration", "120", "--config"])
                    .arg(c)
                    .current_dir(dir.path()),
            )
        })
        .collect();
    let mut bench = Reaped::spawn(
        "dyno pipeline bench",
        dyno_process()
            .args(["pipeline", "bench", "--duration", "120", "--metrics-listen"])
            .arg(&bench_metrics)
            .arg("--db")
            .arg(dir.path().join("results.db"))
            .arg("--config")
            .arg(bench_config(dir.path())),
    );

    // Prometheus as the example configuration sets it up (grafana/prometheus.yml: one job
    // per kind of endpoint, the node alerting rules), faster.
    let rules = crate::harness::dashboards::workspace().join("grafana/alerts/dyno-node.rules.yml");
    let quoted = |a: &[String]| {
        a.iter()
            .map(|t| format!("\"{t}\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let prom_config = write(
        &dir.path().join("prometheus.yml"),
        &format!(
            "global:\n  scrape_interval: {SCRAPE}\n  scrape_timeout: 900ms\n  evaluation_interval: {SCRAPE}\n\
             rule_files:\n  - \"{}\"\n\
             scrape_configs:\n  - job_name: dyno-node\n    static_configs:\n      - targets: [{}]\n\
             \x20 - job_name: dyno-pipeline\n    static_configs:\n      - targets: [{}]\n",
            rules.display(),
            quoted(&node_metrics),
            quoted(std::slice::from_ref(&bench_metrics)),
        ),
    );
    let prom = format!("127.0.0.1:{}", free_tcp());
    let mut server = Reaped::spawn(
        "prometheus",
        Command::new(prometheus)
            .arg(format!("--config.file={}", prom_config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("tsdb").display()
            ))
            .arg(format!("--web.listen-address={prom}"))
            .arg("--log.level=warn"),
    );
    let start = Instant::now();
    while get(&prom, "/-/ready").map(|r| r.0) != Some(200) {
        server.assert_running();
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "Prometheus not ready in a minute"
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    let mut load = Reaped::spawn(
        "dyno load",
        dyno_process()
            .args(["load", "--genesis"])
            .arg(dir.path().join("genesis.toml"))
            .args(["--target", &ingress, "--rate", "200", "--duration", "110"]),
    );

    // Every panel query, and every template variable's metric, until each has answered
    // with at least one series.
    let mut pending: Vec<(String, String, String)> = panel_queries()
        .into_iter()
        .map(|q| {
            let expr = as_prometheus_sees_it(&q.expr, SCRAPE);
            (q.dashboard, q.panel, expr)
        })
        .collect();
    let total = pending.len();
    let start = Instant::now();
    let mut last_error = String::new();
    while !pending.is_empty() && start.elapsed() < ANSWER_WITHIN {
        for p in nodes.iter_mut().chain([&mut bench, &mut load, &mut server]) {
            p.assert_running();
        }
        pending.retain(|(_, _, expr)| match query(&prom, expr) {
            Ok(series) => series.is_empty(),
            Err(e) => {
                last_error = format!("`{expr}`: {e}");
                true
            }
        });
        std::thread::sleep(Duration::from_millis(500));
    }
    let targets = get(&prom, "/api/v1/targets")
        .map(|r| r.1)
        .unwrap_or_default();
    assert!(
        pending.is_empty(),
        "{} of {total} panel queries returned no series within {ANSWER_WITHIN:?}:\n{}\n\
         last error: {last_error}\ntargets: {targets}",
        pending.len(),
        pending
            .iter()
            .map(|(d, p, e)| format!("  {d}, panel {p:?}: {e}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    eprintln!(
        "all {total} panel queries answered after {:.1} s",
        start.elapsed().as_secs_f64()
    );

    // Each variable lists exactly the scraped instances of its dashboard's kind: the
    // nodes for the node and cluster dashboards, the bench for the pipeline's; never
    // the other kind's, whose panels would be empty (label_values(M, instance)).
    for v in variable_queries() {
        let inner = v
            .expr
            .strip_prefix("label_values(")
            .and_then(|r| r.strip_suffix(')'))
            .unwrap_or_else(|| panic!("{}, {}: `{}`", v.dashboard, v.panel, v.expr));
        let (metric, label) = inner.split_once(',').unwrap();
        let label = label.trim();
        let series = query(&prom, &format!("count by ({label}) ({metric})")).unwrap();
        let mut listed: Vec<String> = series
            .iter()
            .map(|s| s["metric"][label].as_str().unwrap_or_default().to_string())
            .collect();
        listed.sort();
        let mut want = match v.dashboard.as_str() {
            "dyno-pipeline.json" => vec![bench_metrics.clone()],
            _ => node_metrics.clone(),
        };
        want.sort();
        assert_eq!(
            listed, want,
            "{}, {}: `{}` lists {series:?}",
            v.dashboard, v.panel, v.expr
        );
    }

    // The alerting rules load and evaluate without error on the real series.
    let (_, rules) = get(&prom, "/api/v1/rules").unwrap();
    let rules: serde_json::Value = serde_json::from_str(&rules).unwrap();
    let loaded: Vec<&serde_json::Value> = rules["data"]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["rules"].as_array().unwrap())
        .collect();
    assert_eq!(loaded.len(), 4, "{rules}");
    for r in loaded {
        assert_eq!(r["health"], "ok", "{r}");
    }

    // Stop the load, the bench and the nodes as a user would (SIGTERM): each ends cleanly.
    for mut p in [load, bench].into_iter().chain(nodes) {
        let _ = dyno_proc::signal_process(p.child.id(), dyno_proc::Signal::Term);
        let status = p.child.wait().unwrap();
        // 143: stopped by SIGTERM, what was measured kept.
        assert!(
            matches!(status.code(), Some(0 | 143)),
            "{} exited {status}",
            p.name
        );
    }
}
