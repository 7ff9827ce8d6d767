//! A `cluster run`: how fast its blocks reached each fraction of the nodes (a CDF over
//! blocks per fraction), each node's CPU and memory, and the faults the file scheduled
//! with their windows, from the run's samples, labelled samples and settings.

use crate::markup::{esc, figure, HtmlTable};
use crate::state::PageError;
use dyno_model::{format_value, Direction, Metric, Unit};
use dyno_report::plot::{CdfPlot, PlotSize};
use dyno_store::{Store, StoredRun};
use std::collections::BTreeMap;

/// The section of the run page.
pub(crate) fn section(store: &Store, run: &StoredRun) -> Result<String, PageError> {
    let s = &run.info.settings;
    let mut out = String::from("<div class=\"figures\">\n");
    let mut fig = |value: String, what: &str| {
        out.push_str(&format!(
            "<div><b>{}</b><span>{}</span></div>\n",
            esc(&value),
            esc(what)
        ));
    };
    fig(
        run.info
            .subject
            .attributes
            .get("nodes")
            .cloned()
            .unwrap_or_default(),
        "nodes",
    );
    fig(s["blocks"].to_string(), "blocks in the window");
    if let [Some(a), Some(b)] = [s["slots"][0].as_u64(), s["slots"][1].as_u64()] {
        fig(format!("{a} .. {b}"), "slots measured");
    }
    fig(format!("{} ms", s["slot_ms"]), "slot");
    out.push_str("</div>\n");

    out.push_str("<h2>Adoption</h2>\n");
    out.push_str(&adoption(run));
    out.push_str("<h2>Nodes</h2>\n");
    out.push_str(&nodes(store, run)?);
    out.push_str("<h2>Faults</h2>\n");
    out.push_str(&faults(s));
    if let Some(problems) = s["problems"].as_array().filter(|p| !p.is_empty()) {
        out.push_str("<h2>Problems</h2>\n<ul class=\"notes\">\n");
        for p in problems {
            out.push_str(&format!(
                "<li>{}</li>\n",
                esc(p.as_str().map_or(p.to_string(), String::from).as_str())
            ));
        }
        out.push_str("</ul>\n");
    }
    Ok(out)
}

/// One CDF per adoption fraction: of all blocks, the share that reached that fraction
/// of the nodes within x seconds of their slot's start.
fn adoption(run: &StoredRun) -> String {
    let metric = Metric::new("adoption", Unit::Seconds, Direction::LowerIsBetter);
    let mut plot = CdfPlot::new("Block adoption", metric).size(PlotSize {
        width: 900,
        height: 380,
    });
    let mut table = HtmlTable::new(
        "adoption",
        &[
            ("Nodes reached", false),
            ("Blocks", true),
            ("Median", true),
            ("p90", true),
            ("Slowest", true),
        ],
    );
    let secs = |x: f64| format_value(x, Unit::Seconds);
    let mut any = false;
    for m in run
        .metrics
        .iter()
        .filter(|m| m.name.starts_with("adoption_"))
    {
        let v = super::values(run, &m.name);
        let Some(sum) = dyno_stats::summarize(&v) else {
            continue;
        };
        let share = m.name.trim_start_matches("adoption_");
        let label = share
            .parse::<f64>()
            .map_or(share.to_string(), |f| format!("{:.0}% of nodes", f * 100.0));
        let p90 =
            dyno_stats::quantile(&v, 0.9, dyno_stats::QuantileMethod::Linear).unwrap_or(f64::NAN);
        table.row(vec![
            esc(&label),
            sum.n.to_string(),
            esc(&secs(sum.median)),
            esc(&secs(p90)),
            esc(&secs(sum.max)),
        ]);
        plot = plot.series(label, v);
        any = true;
    }
    if !any {
        return "<p class=\"note\">This run stored no adoption figures (no block was \
                adopted in its window).</p>\n"
            .into();
    }
    figure(
        "adoption",
        "Share of blocks (y) that reached each fraction of the nodes within x seconds of \
         their slot's start",
        plot.render_svg(),
    ) + &table.render()
}

/// Each node's CPU and memory over the window (the run's labelled samples), and the
/// faults that struck it.
fn nodes(store: &Store, run: &StoredRun) -> Result<String, PageError> {
    let mut per: BTreeMap<String, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    for (sample, label) in store.labeled_samples(run.id)? {
        let Some(node) = label.as_ref().and_then(|l| l["node"].as_str()) else {
            continue;
        };
        let e = per.entry(node.to_string()).or_default();
        match sample.metric.as_str() {
            "node.cpu_percent" if sample.value.is_finite() => e.0.push(sample.value),
            "node.rss_bytes" if sample.value.is_finite() => e.1.push(sample.value),
            _ => {}
        }
    }
    let names = node_names(&run.info.settings);
    let mut struck: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for f in run.info.settings["faults"].as_array().into_iter().flatten() {
        for id in f["nodes"].as_array().into_iter().flatten() {
            let name = name_of(&names, id);
            struck
                .entry(name)
                .or_default()
                .push(f["kind"].as_str().unwrap_or("?").to_string());
        }
    }
    let mut t = HtmlTable::new(
        "nodes",
        &[
            ("Node", false),
            ("CPU, median", true),
            ("CPU, max", true),
            ("Memory, max", true),
            ("Slots sampled", true),
            ("Faults", false),
        ],
    );
    let mut all: Vec<String> = per.keys().cloned().collect();
    all.extend(names.iter().filter(|n| !per.contains_key(*n)).cloned());
    for node in all {
        let (cpu, rss) = per.get(&node).cloned().unwrap_or_default();
        let pct = |x: Option<f64>| x.map_or("-".into(), |x| format!("{x:.1} %"));
        t.row(vec![
            esc(&node),
            pct(dyno_stats::median(&cpu)),
            pct(cpu.iter().copied().reduce(f64::max)),
            rss.iter()
                .copied()
                .reduce(f64::max)
                .map_or("-".into(), |x| esc(&format_value(x, Unit::Bytes))),
            cpu.len().to_string(),
            esc(&struck.get(&node).map(|k| k.join(", ")).unwrap_or_default()),
        ]);
    }
    if t.is_empty() {
        return Ok("<p class=\"note\">No node's CPU or memory was stored.</p>\n".into());
    }
    Ok(t.render())
}

fn node_names(settings: &serde_json::Value) -> Vec<String> {
    settings["node_names"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| n.as_str().map(String::from))
        .collect()
}

/// A node id as its name (`n3`), when the run stored the names.
fn name_of(names: &[String], id: &serde_json::Value) -> String {
    id.as_u64()
        .and_then(|i| names.get(i as usize).cloned())
        .unwrap_or_else(|| format!("node {id}"))
}

/// The faults as the cluster file scheduled them, each with its window of slots.
fn faults(settings: &serde_json::Value) -> String {
    let Some(list) = settings["faults"].as_array() else {
        return "<p class=\"note\">This run was stored before dyno kept its faults; the \
                cluster file lists them.</p>\n"
            .into();
    };
    if list.is_empty() {
        return "<p class=\"hint\">No fault was scheduled.</p>\n".into();
    }
    let names = node_names(settings);
    let window = settings["slots"][1].as_u64();
    let mut t = HtmlTable::new(
        "faults",
        &[
            ("#", true),
            ("Fault", false),
            ("Nodes", false),
            ("Window (slots)", false),
            ("Details", false),
        ],
    );
    for f in list {
        let nodes = |key: &str| -> String {
            f[key]
                .as_array()
                .into_iter()
                .flatten()
                .map(|id| name_of(&names, id))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let at = f["at_slot"].as_u64().unwrap_or(0);
        let span = match (f["slots"].as_u64(), window) {
            (Some(n), _) => format!("{at} .. {}", at + n),
            (None, Some(end)) => format!("{at} .. {end} (to the end)"),
            (None, None) => format!("from {at}"),
        };
        let mut details: Vec<String> = f
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, _)| {
                !matches!(
                    k.as_str(),
                    "index" | "kind" | "nodes" | "to" | "at_slot" | "slots"
                )
            })
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| format!("{k} = {v}"))
            .collect();
        let to = nodes("to");
        if !to.is_empty() {
            details.insert(0, format!("to {to}"));
        }
        t.row(vec![
            (f["index"].as_u64().unwrap_or(0) + 1).to_string(),
            esc(f["kind"].as_str().unwrap_or("?")),
            esc(&nodes("nodes")),
            esc(&span),
            esc(&details.join(", ")),
        ]);
    }
    t.render()
}
