//! A `pipeline bench` run: the diagnosis of what limited it (the page's answer, first),
//! its layout and its TPS second by second, from the run's subject, samples and settings.

use super::values;
use crate::markup::{answer, esc, figure, HtmlTable};
use dyno_model::{format_value, Direction, Metric, Unit};
use dyno_report::plot::{PlotSize, TimeSeriesPlot};
use dyno_store::StoredRun;

/// The answer at the top of the run page: the bottleneck, why, and each tile kind's
/// busy and backpressured shares.
pub(crate) fn answer_section(run: &StoredRun) -> String {
    let d = &run.info.settings["diagnosis"];
    let heading = match d["bottleneck"].as_str() {
        Some(b) => format!("Bottleneck: {b}"),
        None => "Bottleneck".to_string(),
    };
    answer("", &heading, &diagnosis(d))
}

/// The rest of the run page's section: the layout and the throughput.
pub(crate) fn section(run: &StoredRun) -> String {
    let mut out = String::from("<h2>Throughput</h2>\n");
    out.push_str(&throughput(run));
    out.push_str("<h2>Layout</h2>\n");
    out.push_str(&layout(run));
    out
}

fn layout(run: &StoredRun) -> String {
    let s = &run.info.settings;
    let mut t = HtmlTable::new("layout", &[("Setting", false), ("Value", false)]);
    for (k, v) in &run.info.subject.attributes {
        t.row(vec![esc(k), esc(v)]);
    }
    for key in ["workload", "rate", "duration_s"] {
        if let Some(v) = s.get(key).filter(|v| !v.is_null()) {
            let text = match key {
                "rate" if v.as_u64() == Some(0) => "flat out".to_string(),
                "rate" => format!("{v} tx/s offered"),
                "duration_s" => format!("{v} s measured"),
                _ => v.as_str().map_or(v.to_string(), String::from),
            };
            t.row(vec![esc(key), esc(&text)]);
        }
    }
    let mut out = t.render();
    if let Some(toml) = s["config_toml"].as_str().filter(|t| !t.is_empty()) {
        out.push_str(&format!(
            "<details><summary>The layout file as it was run</summary><pre>{}</pre></details>\n",
            esc(toml)
        ));
    }
    out
}

/// The headline figures, then TPS per second of the window.
fn throughput(run: &StoredRun) -> String {
    let tps = values(run, "tps");
    let first = |name: &str| values(run, name).first().copied();
    let mut figures = String::from("<div class=\"figures\">\n");
    let mut fig = |value: String, what: &str| {
        figures.push_str(&format!(
            "<div><b>{}</b><span>{}</span></div>\n",
            esc(&value),
            esc(what)
        ));
    };
    if let Some(s) = dyno_stats::summarize(&tps) {
        fig(format!("{:.0}", s.median), "TPS, median second");
        fig(
            format!("{:.0} .. {:.0}", s.min, s.max),
            "TPS, slowest .. fastest second",
        );
    }
    let ns = |x: f64| format_value(x, Unit::Nanoseconds);
    for (name, what) in [
        ("latency_exec_p50", "to execution, p50"),
        ("latency_exec_p99", "to execution, p99"),
        ("latency_poh_p99", "to PoH, p99"),
    ] {
        if let Some(v) = first(name) {
            fig(ns(v), what);
        }
    }
    if let Some(v) = first("txs_executed") {
        fig(format!("{v:.0}"), "transactions executed");
    }
    figures.push_str("</div>\n");
    if tps.is_empty() {
        return figures + "<p class=\"note\">This run stored no TPS samples.</p>\n";
    }
    let metric = Metric::new("tps", Unit::PerSecond, Direction::HigherIsBetter);
    let points: Vec<(f64, f64)> = tps
        .iter()
        .enumerate()
        .map(|(i, v)| ((i + 1) as f64, *v))
        .collect();
    let svg = TimeSeriesPlot::new("Transactions per second", metric)
        .series("TPS", points)
        .size(PlotSize {
            width: 900,
            height: 320,
        })
        .render_svg();
    figures
        + &figure(
            "tps",
            "TPS in each second of the measured window (x: seconds since the window opened)",
            svg,
        )
}

/// The stored diagnosis: the bottleneck, why, and each tile kind's busy share.
fn diagnosis(d: &serde_json::Value) -> String {
    let Some(bottleneck) = d["bottleneck"].as_str() else {
        return "<p class=\"note\">This run was stored before dyno kept the bench's \
                diagnosis; run the bench again to see what limits it.</p>\n"
            .into();
    };
    let mut out = format!(
        "<p>{}</p>\n",
        esc(d["summary"].as_str().unwrap_or_default())
    );
    if let Some(notes) = d["notes"].as_array().filter(|n| !n.is_empty()) {
        out.push_str("<ul class=\"notes\">\n");
        for n in notes.iter().filter_map(|n| n.as_str()) {
            out.push_str(&format!("<li>{}</li>\n", esc(n)));
        }
        out.push_str("</ul>\n");
    }
    let mut t = HtmlTable::new(
        "shares",
        &[
            ("Tile kind", false),
            ("Tiles", true),
            ("Busy", true),
            ("", false),
            ("Backpressured", true),
        ],
    );
    for s in d["shares"].as_array().into_iter().flatten() {
        let share = |k: &str| s[k].as_f64().unwrap_or(0.0);
        let kind = s["kind"].as_str().unwrap_or_default();
        let name = if kind == bottleneck {
            format!("<strong>{}</strong>", esc(kind))
        } else {
            esc(kind)
        };
        t.row(vec![
            name,
            s["tiles"].to_string(),
            format!("{:.1} %", share("busy") * 100.0),
            format!(
                "<meter min=\"0\" max=\"1\" value=\"{:.3}\"></meter>",
                share("busy")
            ),
            format!("{:.1} %", share("backpressured") * 100.0),
        ]);
    }
    out.push_str(&t.render());
    out
}
