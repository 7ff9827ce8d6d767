//! The Grafana dashboards under grafana/ ask only for metrics dyno exports.
//!
//! Operators' dashboards break silently when an exporter renames a metric; here a rename
//! fails this test until the dashboards follow. "What dyno exports" is every metric family
//! name written in the exporters' code (outside their tests), cross-checked against what
//! the exporters actually render, so the scan cannot drift from the code either. Where
//! `promtool` is installed (scripts/ci/promtool.sh), every query is also parsed by
//! Prometheus' own parser, the alerting rules pass their unit tests (`promtool test
//! rules`) and the scrape configuration is checked; where grafana-schema-check is built
//! (scripts/ci/grafana-schema.sh), every dashboard is checked against Grafana's dashboard
//! schema. That a running Prometheus answers every panel is prometheus.rs.

use crate::harness::dashboards::{
    as_prometheus_sees_it, dashboards, on_path, panel_queries, variable_queries, workspace,
};
use std::collections::BTreeSet;
use std::path::PathBuf;

/// The files that declare Prometheus families, relative to the workspace (every
/// `dyno_node_*` family of both nodes is declared in node_families.rs).
const EXPORTERS: [&str; 3] = [
    "crates/dyno-obs/src/build_info.rs",
    "crates/dyno-tango/src/prometheus.rs",
    "crates/dyno-tiles/src/node_families.rs",
];

/// Every `"dyno_..."` string literal in the non-test part of the exporters.
fn exported() -> BTreeSet<String> {
    EXPORTERS.iter().flat_map(|f| exported_by(f)).collect()
}

/// The `"dyno_..."` string literals in the non-test part of one exporter's file.
fn exported_by(file: &str) -> BTreeSet<String> {
    let text = std::fs::read_to_string(workspace().join(file)).unwrap();
    let code = text.split("#[cfg(test)]").next().unwrap();
    code.split('"')
        .skip(1)
        .step_by(2)
        .filter(|literal| {
            literal.starts_with("dyno_")
                && literal
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        })
        .map(String::from)
        .collect()
}

/// Each dashboard's `instance` variable lists the endpoints of its own kind only: it asks
/// for a family that only that kind exports (a node's chain, a pipeline's tiles), never
/// `dyno_build_info`, which every endpoint serves, so the node dashboard would offer the
/// benches' endpoints (and the pipeline dashboard the nodes'), whose panels are empty.
#[test]
fn each_dashboards_endpoint_variable_lists_its_own_kind_only() {
    // What each kind of endpoint renders: a pipeline its tiles' families (and, under the
    // bench, the single-process node's); a network node every other `dyno_node_*`.
    let tiles = families(&dyno_tango::prometheus_text(&empty_snapshot()));
    let bench = families(&dyno_tiles::node_metrics::NodeMetrics::default().render());
    let node: BTreeSet<String> = exported()
        .into_iter()
        .filter(|m| m.starts_with("dyno_node_") && !bench.contains(m))
        .collect();
    assert!(node.contains("dyno_node_height") && tiles.contains("dyno_tile_up"));
    for v in variable_queries() {
        let used = metrics_in(&v.expr);
        assert_eq!(used.len(), 1, "{}, {}: `{}`", v.dashboard, v.panel, v.expr);
        let m = &used[0];
        let (own, others): (&BTreeSet<String>, Vec<&BTreeSet<String>>) = match v.dashboard.as_str()
        {
            "dyno-node.json" | "dyno-cluster.json" => (&node, vec![&tiles, &bench]),
            "dyno-pipeline.json" => (&tiles, vec![&node]),
            d => panic!("{d}: which kind of endpoint is it for?"),
        };
        assert!(
            own.contains(m),
            "{}, {}: `{m}` is not a family of its kind of endpoint",
            v.dashboard,
            v.panel
        );
        for other in others {
            assert!(
                !other.contains(m),
                "{}, {}: `{m}` is exported by other endpoints too",
                v.dashboard,
                v.panel
            );
        }
    }
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

/// A snapshot of a workspace without tiles: the pipeline exposition's families alone.
fn empty_snapshot() -> dyno_tango::Snapshot {
    dyno_tango::Snapshot {
        workspace: String::new(),
        pid: 0,
        creator_alive: true,
        generation: 0,
        taken_ns: 0,
        since_ns: None,
        tiles: Vec::new(),
        links: Vec::new(),
        consumers: Vec::new(),
    }
}

#[test]
fn the_scan_finds_what_the_exporters_render() {
    let names = exported();
    let mut rendered = families(&dyno_tango::prometheus_text(&empty_snapshot()));
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
    assert_eq!(
        dashboards().len(),
        3,
        "the cluster, node and pipeline dashboards"
    );
    for q in panel_queries().into_iter().chain(variable_queries()) {
        let used = metrics_in(&q.expr);
        assert!(
            !used.is_empty(),
            "{}, {}: no dyno metric in `{}`",
            q.dashboard,
            q.panel,
            q.expr
        );
        for m in used {
            assert!(
                names.contains(&m),
                "{}, {}: `{m}` is not exported by dyno",
                q.dashboard,
                q.panel
            );
        }
    }
}

/// promtool, if installed (scripts/ci/promtool.sh), else a printed note.
fn promtool(check: &str) -> Option<PathBuf> {
    let found = on_path("promtool");
    if found.is_none() {
        eprintln!(
            "note: promtool not found (scripts/ci/promtool.sh installs it); skipping {check}"
        );
    }
    found
}

fn run(tool: &std::path::Path, args: &[&str]) -> (bool, String) {
    let out = std::process::Command::new(tool)
        .args(args)
        .current_dir(workspace().join("grafana"))
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn every_panel_query_is_valid_promql() {
    let Some(promtool) = promtool("the PromQL check") else {
        return;
    };
    // Every panel query as a recording rule: `promtool check rules` parses each one.
    let mut rules = String::from("groups:\n  - name: dashboards\n    rules:\n");
    let queries = panel_queries();
    for (n, q) in queries.iter().enumerate() {
        let expr = as_prometheus_sees_it(&q.expr, "15s");
        let origin = format!("{} {}", q.dashboard, q.panel);
        rules.push_str(&format!(
            "      - record: dyno:dashboard_check:{n}\n        expr: {}\n        labels: {{origin: {}}}\n",
            serde_json::to_string(&expr).unwrap(),
            serde_json::to_string(&origin).unwrap()
        ));
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("dashboards.rules.yml");
    std::fs::write(&file, &rules).unwrap();
    let (ok, out) = run(&promtool, &["check", "rules", file.to_str().unwrap()]);
    assert!(ok, "promtool refused a dashboard query:\n{out}\n{rules}");
    assert!(
        out.contains(&format!("{} rules found", queries.len())),
        "{out}"
    );
}

#[test]
fn the_alerting_rules_pass_their_unit_tests_and_the_scrape_config_loads_them() {
    let Some(promtool) = promtool("the alerting rules' unit tests") else {
        return;
    };
    let (ok, out) = run(&promtool, &["check", "rules", "alerts/dyno-node.rules.yml"]);
    assert!(ok && out.contains("4 rules found"), "{out}");
    let (ok, out) = run(
        &promtool,
        &["test", "rules", "alerts/dyno-node.rules.test.yml"],
    );
    assert!(ok && out.contains("SUCCESS"), "{out}");
    // The example scrape configuration loads the rules (a path that moved fails here).
    let (ok, out) = run(&promtool, &["check", "config", "prometheus.yml"]);
    assert!(ok && out.contains("1 rule files found"), "{out}");

    // The tests can fail: the same tests against rules whose stall window was widened
    // tenfold expect alerts that no longer fire.
    let dir = tempfile::tempdir().unwrap();
    let rules = std::fs::read_to_string(workspace().join("grafana/alerts/dyno-node.rules.yml"))
        .unwrap()
        .replace(
            "changes(dyno_node_height[2m])",
            "changes(dyno_node_height[20m])",
        );
    std::fs::write(dir.path().join("dyno-node.rules.yml"), rules).unwrap();
    std::fs::copy(
        workspace().join("grafana/alerts/dyno-node.rules.test.yml"),
        dir.path().join("dyno-node.rules.test.yml"),
    )
    .unwrap();
    let out = std::process::Command::new(&promtool)
        .args(["test", "rules", "dyno-node.rules.test.yml"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && text.contains("DynoNodeHeightStalled"),
        "{text}"
    );
}

/// grafana-schema-check, where scripts/ci/grafana-schema.sh built it.
fn schema_check() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("DYNO_GRAFANA_SCHEMA_CHECK") {
        return Some(PathBuf::from(p));
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(cache.join("dyno/bin/grafana-schema-check")).filter(|p| p.is_file())
}

#[test]
fn every_dashboard_follows_grafanas_dashboard_schema() {
    let Some(check) = schema_check() else {
        eprintln!(
            "note: grafana-schema-check not built (scripts/ci/grafana-schema.sh builds it \
             with Go); skipping the Grafana schema check"
        );
        return;
    };
    let files: Vec<PathBuf> = dashboards().into_iter().map(|(p, _)| p).collect();
    let out = std::process::Command::new(&check)
        .args(&files)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert_eq!(text.matches(": valid").count(), files.len(), "{text}");

    // The check can fail: a misspelt option and a grid width that is not a number.
    let (_, mut d) = dashboards()
        .into_iter()
        .find(|(p, _)| p.ends_with("dyno-node.json"))
        .unwrap();
    d["panels"][0]["options"]["legend"]["placment"] = "bottom".into();
    d["panels"][1]["gridPos"]["w"] = "wide".into();
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, serde_json::to_string(&d).unwrap()).unwrap();
    let out = std::process::Command::new(&check)
        .arg(&bad)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("placment") && err.contains("panels[1].gridPos.w"),
        "{err}"
    );
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
