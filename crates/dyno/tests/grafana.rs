//! The Grafana dashboards under grafana/ ask only for metrics dyno exports.
//!
//! Operators' dashboards break silently when an exporter renames a metric; here a rename
//! fails this test until the dashboards follow. "What dyno exports" is every metric family
//! name written in the exporters' code (outside their tests), cross-checked against what
//! the exporters actually render, so the scan cannot drift from the code either. Where
//! `promtool` is installed (scripts/ci/promtool.sh), every query is also parsed by
//! Prometheus' own parser.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The files that write Prometheus families, relative to the workspace.
const EXPORTERS: [&str; 4] = [
    "crates/dyno-obs/src/build_info.rs",
    "crates/dyno-tango/src/prometheus.rs",
    "crates/dyno-node/src/metrics.rs",
    "crates/dyno-tiles/src/node_metrics.rs",
];

/// Every `"dyno_..."` string literal in the non-test part of the exporters.
fn exported() -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for file in EXPORTERS {
        let text = std::fs::read_to_string(workspace().join(file)).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap();
        for literal in code.split('"').skip(1).step_by(2) {
            let is_name = literal.starts_with("dyno_")
                && literal
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
            if is_name {
                names.insert(literal.to_string());
            }
        }
    }
    names
}

/// The family names in an exposition (`# TYPE name kind` lines).
fn families(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_whitespace().next())
        .map(String::from)
        .collect()
}

/// The metric names a PromQL expression uses: identifiers starting with `dyno_`, once
/// quoted label values are taken out (a label value may look like anything).
fn metrics_in(expr: &str) -> Vec<String> {
    let unquoted: String = expr.split('"').step_by(2).collect::<Vec<_>>().join("\"\"");
    unquoted
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
        .filter(|t| t.starts_with("dyno_"))
        .map(String::from)
        .collect()
}

/// Every PromQL expression of a dashboard: panel targets and query variables.
fn expressions(dashboard: &serde_json::Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        let title = panel["title"].as_str().unwrap().to_string();
        for target in panel["targets"].as_array().unwrap() {
            out.push((title.clone(), target["expr"].as_str().unwrap().to_string()));
        }
    }
    for var in dashboard["templating"]["list"].as_array().unwrap() {
        let name = format!("variable {}", var["name"]);
        out.push((name, var["query"]["query"].as_str().unwrap().to_string()));
    }
    out
}

fn dashboards() -> Vec<(PathBuf, serde_json::Value)> {
    let dir = workspace().join("grafana/dashboards");
    let mut out: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| {
            let v = serde_json::from_str(&std::fs::read_to_string(&p).unwrap())
                .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p, v)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[test]
fn the_scan_finds_what_the_exporters_render() {
    let names = exported();
    let empty = dyno_tango::Snapshot {
        workspace: String::new(),
        pid: 0,
        generation: 0,
        taken_ns: 0,
        since_ns: None,
        tiles: Vec::new(),
        links: Vec::new(),
        consumers: Vec::new(),
    };
    let mut rendered = families(&dyno_tango::prometheus_text(&empty));
    rendered.extend(families(&dyno_obs::build_info_text(&[])));
    rendered.extend(families(
        &dyno_tiles::node_metrics::NodeMetrics::default().render(),
    ));
    assert!(rendered.len() >= 20, "{rendered:?}");
    let missed: Vec<_> = rendered.difference(&names).collect();
    assert!(
        missed.is_empty(),
        "rendered but not found by the scan: {missed:?}"
    );
    for node_family in [
        "dyno_node_height",
        "dyno_node_blocks_adopted_total",
        "dyno_node_peer_connected",
    ] {
        assert!(names.contains(node_family), "{node_family}");
    }
}

#[test]
fn every_dashboard_query_names_only_exported_metrics() {
    let names = exported();
    let dashboards = dashboards();
    assert_eq!(dashboards.len(), 2, "the pipeline and node dashboards");
    for (path, d) in &dashboards {
        let file = path.file_name().unwrap().to_string_lossy();
        for (panel, expr) in expressions(d) {
            let used = metrics_in(&expr);
            assert!(
                !used.is_empty(),
                "{file}, {panel}: no dyno metric in `{expr}`"
            );
            for m in used {
                assert!(
                    names.contains(&m),
                    "{file}, {panel}: `{m}` is not exported by dyno"
                );
            }
        }
    }
}

/// `expr` as Prometheus evaluates it once Grafana has filled in its variables.
fn as_prometheus_sees_it(expr: &str) -> String {
    expr.replace("$instance", ".*")
        .replace("$__rate_interval", "1m")
}

#[test]
fn every_panel_query_is_valid_promql() {
    let Some(promtool) = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join("promtool"))
        .find(|p| p.is_file())
    else {
        eprintln!("note: promtool not found (scripts/ci/promtool.sh installs it); skipping the PromQL check");
        return;
    };
    // Every panel query as a recording rule: `promtool check rules` parses each one.
    let mut rules = String::from("groups:\n  - name: dashboards\n    rules:\n");
    let mut n = 0;
    for (path, d) in dashboards() {
        for panel in d["panels"].as_array().unwrap() {
            for target in panel["targets"].as_array().unwrap() {
                let expr = as_prometheus_sees_it(target["expr"].as_str().unwrap());
                let origin = format!("{} {}", path.display(), panel["title"]);
                rules.push_str(&format!(
                    "      - record: dyno:dashboard_check:{n}\n        expr: {}\n        labels: {{origin: {}}}\n",
                    serde_json::to_string(&expr).unwrap(),
                    serde_json::to_string(&origin).unwrap()
                ));
                n += 1;
            }
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("dashboards.rules.yml");
    std::fs::write(&file, &rules).unwrap();
    let out = std::process::Command::new(promtool)
        .args(["check", "rules"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "promtool refused a dashboard query:\n{}{}\n{rules}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("{n} rules found")));
}

#[test]
fn dashboards_are_provisionable() {
    let provisioned =
        std::fs::read_to_string(workspace().join("grafana/provisioning/datasources/dyno.yaml"))
            .unwrap();
    assert!(provisioned.contains("uid: dyno-prometheus"));
    let mut uids = BTreeSet::new();
    for (path, d) in dashboards() {
        let file = path.display().to_string();
        assert!(
            uids.insert(d["uid"].as_str().unwrap().to_string()),
            "{file}: uid taken"
        );
        let mut ids = BTreeSet::new();
        for panel in d["panels"].as_array().unwrap() {
            assert!(
                ids.insert(panel["id"].as_u64().unwrap()),
                "{file}: panel ids repeat"
            );
            assert_eq!(panel["datasource"]["uid"], "dyno-prometheus", "{file}");
            let refs: BTreeSet<_> = panel["targets"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["refId"].as_str().unwrap().to_string())
                .collect();
            assert_eq!(
                refs.len(),
                panel["targets"].as_array().unwrap().len(),
                "{file}"
            );
        }
    }
}

#[test]
fn label_values_and_lookalikes_are_not_taken_for_metrics() {
    let expr = r#"sum by (tile) (rate(dyno_tile_time_seconds_total{instance=~"$instance",bucket="dyno_fake"}[1m])) / dyno_x:y"#;
    assert_eq!(
        metrics_in(expr),
        vec!["dyno_tile_time_seconds_total", "dyno_x:y"]
    );
    assert_eq!(
        metrics_in("label_values(dyno_build_info, instance)"),
        vec!["dyno_build_info"]
    );
}
