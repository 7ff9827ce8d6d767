//! A `cluster run`: how fast its blocks reached 50, 80 and 100% of the nodes and how the
//! cluster recovered from its faults (the page's answer, first), then the adoption CDF
//! per fraction, each node's CPU and memory, and the faults the file scheduled with their
//! windows, from the run's samples, labelled samples and settings.
//!
//! Centiles are nearest-rank, as `dyno cluster report` and the stored analysis compute
//! them (Cardano's way), so the page and the report show the same p50 and p90.

use crate::markup::{answer, esc, figure, HtmlTable};
use crate::state::PageError;
use dyno_model::{format_value, Direction, Metric, Unit};
use dyno_report::plot::{CdfPlot, PlotSize};
use dyno_stats::QuantileMethod;
use dyno_store::{Store, StoredRun};
use std::collections::BTreeMap;

/// The centiles of the cluster figures: nearest rank, as dyno-cluster's report.
const CENTILES: QuantileMethod = QuantileMethod::NearestRank;

/// The adoption fractions the answer leads with.
const HEADLINE_FRACTIONS: [&str; 3] = ["0.50", "0.80", "1.00"];

/// The answer at the top of the run page: adoption at 50, 80 and 100% of the nodes, and
/// what each fault did (how long the cluster took to recover).
pub(crate) fn answer_section(store: &Store, run: &StoredRun) -> Result<String, PageError> {
    let mut body = String::from("<div class=\"figures\">\n");
    let blocks = run.info.settings["blocks"].as_u64();
    let mut any = false;
    for fraction in HEADLINE_FRACTIONS {
        let key = format!("adoption_{fraction}");
        let v = super::values(run, &key);
        let share = fraction.parse::<f64>().unwrap_or(0.0) * 100.0;
        let missing = run.info.settings["missing"][&key].as_u64().unwrap_or(0);
        let reached = match blocks {
            Some(b) if missing > 0 => format!("{} of {b} blocks", v.len()),
            _ => format!("{} blocks", v.len()),
        };
        let figure = match (
            dyno_stats::quantile(&v, 0.5, CENTILES),
            dyno_stats::quantile(&v, 0.9, CENTILES),
        ) {
            (Some(p50), Some(p90)) => {
                any = true;
                format!("{} <small>p90 {}</small>", esc(&secs(p50)), esc(&secs(p90)))
            }
            _ => "-".to_string(),
        };
        body.push_str(&format!(
            "<div><b>{figure}</b><span>p50 to {share:.0}% of the nodes, over {}</span></div>\n",
            esc(&reached)
        ));
    }
    body.push_str("</div>\n");
    if !any {
        body.push_str(
            "<p class=\"note\">No block reached half the nodes in the measured window.</p>\n",
        );
    }
    body.push_str(&recoveries(store, run)?);
    Ok(answer("", "Adoption and recovery", &body))
}

/// The section of the run page below the answer: the run's size, the adoption CDF, the
/// nodes and the faults.
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

/// Seconds as the cluster figures read.
fn secs(x: f64) -> String {
    format_value(x, Unit::Seconds)
}

/// What the run's `fault.*` samples say: (metric, fault index) -> [(node, seconds)].
type FaultSamples = BTreeMap<(String, u64), Vec<(Option<String>, f64)>>;

/// The run's `fault.*` samples, by metric and fault.
fn fault_samples(store: &Store, run: &StoredRun) -> Result<FaultSamples, PageError> {
    let mut found = FaultSamples::new();
    for (sample, label) in store.labeled_samples(run.id)? {
        let Some(label) = label.filter(|_| sample.metric.starts_with("fault.")) else {
            continue;
        };
        let Some(fault) = label["fault"].as_u64() else {
            continue;
        };
        let node = label["node"].as_str().map(String::from);
        found
            .entry((sample.metric.clone(), fault))
            .or_default()
            .push((node, sample.value));
    }
    Ok(found)
}

/// One line per scheduled fault: what it was, and how long after it ended adoption was
/// back at its pre-fault pace, the nodes agreed again and each struck node was back at the
/// tip (the run's `fault.*` samples; a run stored before dyno kept them says so).
fn recoveries(store: &Store, run: &StoredRun) -> Result<String, PageError> {
    let Some(list) = run.info.settings["faults"]
        .as_array()
        .filter(|l| !l.is_empty())
    else {
        return Ok(String::new());
    };
    let kept = run.metrics.iter().any(|m| m.name.starts_with("fault."));
    let found = fault_samples(store, run)?;
    let names = node_names(&run.info.settings);
    let mut out = String::from("<ul class=\"notes\">\n");
    for f in list {
        let index = f["index"].as_u64().unwrap_or(0);
        let what = format!(
            "{} of {} from slot {}",
            f["kind"].as_str().unwrap_or("?"),
            node_list(&names, &f["nodes"]),
            f["at_slot"].as_u64().unwrap_or(0)
        );
        let first = |metric: &str| {
            found
                .get(&(metric.to_string(), index))
                .and_then(|v| v.first())
                .map(|v| v.1)
        };
        let mut parts = vec![esc(&what)];
        if !kept {
            parts.push("its recovery was not stored (the run predates it)".into());
        } else {
            parts.push(match first("fault.adoption_recovered_s") {
                Some(s) => format!(
                    "adoption back to its pre-fault pace <b>{}</b> after it ended",
                    esc(&secs(s))
                ),
                None => "adoption not back to its pre-fault pace within the run".into(),
            });
            if let Some(s) = first("fault.converged_s") {
                parts.push(format!("every node agreed again {} after", esc(&secs(s))));
            }
            for (node, s) in found
                .get(&("fault.back_at_tip_s".to_string(), index))
                .into_iter()
                .flatten()
            {
                let node = node.as_deref().unwrap_or("a node");
                parts.push(format!(
                    "{} back at the tip {} after",
                    esc(node),
                    esc(&secs(*s))
                ));
            }
        }
        out.push_str(&format!("<li>{}</li>\n", parts.join("; ")));
    }
    out.push_str("</ul>\n");
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
            ("p50", true),
            ("p90", true),
            ("Slowest", true),
        ],
    );
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
        let centile = |p| dyno_stats::quantile(&v, p, CENTILES).map_or("-".into(), secs);
        table.row(vec![
            esc(&label),
            sum.n.to_string(),
            esc(&centile(0.5)),
            esc(&centile(0.9)),
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
///
/// CPU is read once per slot from /proc in whole clock ticks (10 ms each), so a node that
/// uses a few percent of a core reads 0 in most slots and one tick in the others: the
/// median slot of a lean node is 0 %. The mean over the window is what the ticks measure
/// exactly (the CLI's figure), shown with the digits a small share needs.
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
            ("CPU, mean", true),
            ("CPU, busiest slot", true),
            ("Memory, max", true),
            ("Slots sampled", true),
            ("Faults", false),
        ],
    )
    .secondary(&["Slots sampled"]);
    let mut all: Vec<String> = per.keys().cloned().collect();
    all.extend(names.iter().filter(|n| !per.contains_key(*n)).cloned());
    for node in all {
        let (cpu, rss) = per.get(&node).cloned().unwrap_or_default();
        let pct = |x: Option<f64>| x.map_or("-".into(), dyno_report::format_percent);
        let mean = (!cpu.is_empty()).then(|| cpu.iter().sum::<f64>() / cpu.len() as f64);
        t.row(vec![
            esc(&node),
            pct(mean),
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
    Ok(t.render()
        + "<p class=\"hint\">CPU in percent of one core, the node's whole process tree: \
           the mean over the measured window, and the busiest slot (read in whole clock \
           ticks of 10 ms, so a single slot of a lean node reads 0 or one tick).</p>\n")
}

fn node_names(settings: &serde_json::Value) -> Vec<String> {
    settings["node_names"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| n.as_str().map(String::from))
        .collect()
}

/// The nodes a fault's list of ids names, by name: `n0, n1`.
fn node_list(names: &[String], ids: &serde_json::Value) -> String {
    ids.as_array()
        .into_iter()
        .flatten()
        .map(|id| name_of(names, id))
        .collect::<Vec<_>>()
        .join(", ")
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
        // The other end means something for a link (the links changed) and a partition
        // (the side cut off from); the file fills `to` for other kinds too, where it is
        // no target at all.
        let to = node_list(&names, &f["to"]);
        match f["kind"].as_str() {
            Some("link") if !to.is_empty() => details.insert(0, format!("links to {to}")),
            Some("partition") if !to.is_empty() => details.insert(0, format!("cut off from {to}")),
            _ => {}
        }
        t.row(vec![
            (f["index"].as_u64().unwrap_or(0) + 1).to_string(),
            esc(f["kind"].as_str().unwrap_or("?")),
            esc(&node_list(&names, &f["nodes"])),
            esc(&span),
            esc(&details.join(", ")),
        ]);
    }
    t.render()
}
