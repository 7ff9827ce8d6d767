//! A whole report with every table format and plot kind, checked as a document.

use dyno_model::{Direction, Metric, Unit};
use dyno_report::plot::{BoxPlot, CdfPlot, Interval, ScatterPlot, ScatterPoint, TimeSeriesPlot};
use dyno_report::{
    write_atomic, Align, Cell, HtmlReport, ReportError, Section, Table, TableFormat, Verdict,
};

/// Checks that every opened element is closed in order (HTML void elements and
/// self-closing SVG elements excepted) and returns the element names seen.
fn balanced(doc: &str) -> Vec<String> {
    const VOID: [&str; 6] = ["meta", "br", "hr", "img", "link", "input"];
    let mut stack: Vec<String> = Vec::new();
    let mut seen = Vec::new();
    let mut rest = doc;
    while let Some(start) = rest.find('<') {
        let end = rest[start..].find('>').expect("every tag closes") + start;
        let tag = &rest[start + 1..end];
        rest = &rest[end + 1..];
        if tag.starts_with('!') || tag.ends_with('/') {
            continue;
        }
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(stack.pop().as_deref(), Some(name), "closing </{name}>");
        } else {
            let name = tag
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .to_string();
            seen.push(name.clone());
            if !VOID.contains(&name.as_str()) {
                stack.push(name);
            }
        }
    }
    assert!(stack.is_empty(), "unclosed: {stack:?}");
    seen
}

fn full_report() -> Result<String, ReportError> {
    let tput = Metric::new("Blake2256", Unit::BytesPerSecond, Direction::HigherIsBetter);
    let lat = Metric::new("latency", Unit::Seconds, Direction::LowerIsBetter);
    let size = Metric::new("size", Unit::Bytes, Direction::LowerIsBetter);
    let cpu = Metric::new("CPU", Unit::Percent, Direction::LowerIsBetter);
    let boxes = BoxPlot::new("throughput", tput.clone())
        .subject("a & b", vec![1.0e9, 1.1e9, 1.2e9])
        .subject("c", vec![0.9e9, 0.95e9])
        .baseline("official", 1.0e9)
        .render_svg()?;
    let scatter = ScatterPlot::new("size vs speed", size, tput)
        .point(
            ScatterPoint::new("a", Interval::point(1e6), Interval::new(1.0, 2.0, 3.0)).pareto(true),
        )
        .point(ScatterPoint::new(
            "b",
            Interval::new(2e6, 3e6, 4e6),
            Interval::point(1.5),
        ))
        .render_svg()?;
    let cdf = CdfPlot::new("latency", lat)
        .series("v1", vec![0.001, 0.002, 0.004])
        .render_svg()?;
    let series = TimeSeriesPlot::new("cpu", cpu)
        .series("node", vec![(0.0, 5.0), (1.0, 90.0), (2.0, 40.0)])
        .render_svg()?;
    let table = Table::new("t")
        .column("subject", Align::Left)
        .column("value", Align::Right)
        .row([Cell::new("a & b"), Cell::new("1.1 GiB/s").good()]);
    Ok(HtmlReport::new("all plots")
        .parameter("seed", "42")
        .section(
            Section::new("Everything")
                .verdict(Verdict::Improvement, "faster")
                .table(table)
                .plot("boxes", boxes)
                .plot("scatter", scatter)
                .plot("cdf", cdf)
                .plot("series", series),
        )
        .render())
}

#[test]
fn a_report_with_every_plot_is_one_balanced_offline_document() {
    let html = full_report().unwrap();
    let elements = balanced(&html);
    assert_eq!(elements.iter().filter(|e| *e == "svg").count(), 4);
    assert_eq!(elements.iter().filter(|e| *e == "table").count(), 1);
    assert!(!html.contains("NaN"));
    for external in ["src=", "href=", "url(", "@import", "<script", "<link"] {
        assert!(!html.contains(external), "no {external}");
    }
}

#[test]
fn the_report_reaches_disk_whole() {
    let html = full_report().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report.html");
    write_atomic(&path, html.as_bytes()).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), html);
}

#[test]
fn every_table_format_renders_the_same_cells() {
    let table = Table::new("t")
        .column("name", Align::Left)
        .column("n", Align::Right)
        .row(["alpha", "1"])
        .row(["beta", "22"]);
    for format in [
        TableFormat::Terminal { color: false },
        TableFormat::Markdown,
        TableFormat::Csv,
        TableFormat::Html,
    ] {
        let out = format.render(&table);
        for text in ["name", "alpha", "beta", "22"] {
            assert!(out.contains(text), "{format:?} shows {text}");
        }
    }
}
