//! What the dashboard tests share: the dashboards under grafana/dashboards, their panel
//! queries as Prometheus sees them once Grafana filled in its variables, and the tools
//! (promtool, prometheus) where they are installed.

use std::path::{Path, PathBuf};

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every dashboard file with its JSON, by file name.
pub fn dashboards() -> Vec<(PathBuf, serde_json::Value)> {
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

/// One PromQL query of a dashboard.
#[derive(Debug, Clone)]
pub struct PanelQuery {
    /// The dashboard's file name.
    pub dashboard: String,
    /// The panel's title, or `variable NAME` for a template variable's query.
    pub panel: String,
    /// The query as written in the dashboard.
    pub expr: String,
}

/// Every panel query of every dashboard (template variables not included).
pub fn panel_queries() -> Vec<PanelQuery> {
    let mut out = Vec::new();
    for (path, d) in dashboards() {
        let dashboard = path.file_name().unwrap().to_string_lossy().into_owned();
        for panel in d["panels"].as_array().unwrap() {
            for target in panel["targets"].as_array().unwrap() {
                out.push(PanelQuery {
                    dashboard: dashboard.clone(),
                    panel: panel["title"].as_str().unwrap().to_string(),
                    expr: target["expr"].as_str().unwrap().to_string(),
                });
            }
        }
    }
    out
}

/// Every template variable's query: `label_values(METRIC, LABEL)`, as (dashboard,
/// variable name, query).
pub fn variable_queries() -> Vec<PanelQuery> {
    let mut out = Vec::new();
    for (path, d) in dashboards() {
        let dashboard = path.file_name().unwrap().to_string_lossy().into_owned();
        for var in d["templating"]["list"].as_array().unwrap() {
            out.push(PanelQuery {
                dashboard: dashboard.clone(),
                panel: format!("variable {}", var["name"].as_str().unwrap()),
                expr: var["query"]["query"].as_str().unwrap().to_string(),
            });
        }
    }
    out
}

/// `expr` as Prometheus evaluates it once Grafana has filled in its variables (every
/// instance selected; the rate interval Grafana picks for a `scrape` interval: four
/// scrapes).
pub fn as_prometheus_sees_it(expr: &str, scrape: &str) -> String {
    let rate_interval = match scrape.strip_suffix('s').and_then(|s| s.parse::<u64>().ok()) {
        Some(s) => format!("{}s", 4 * s),
        None => "1m".to_string(),
    };
    expr.replace("$instance", ".*")
        .replace("$__rate_interval", &rate_interval)
}

/// A program on PATH, if installed.
pub fn on_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}
