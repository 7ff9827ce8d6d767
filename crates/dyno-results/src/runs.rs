//! Stored runs as people read them: the tables of `dyno results list` and `show`, the
//! lines above `show`'s table, and the self-contained HTML report of `dyno results report`
//! (the parameters, the host, a summary table per run and a box plot per metric, one box
//! per run, built from the raw samples).

use crate::run_docs::{cv_text, metric_stats, MetricStats};
use dyno_model::{format_timestamp, format_value, Metric, RunStatus};
use dyno_report::plot::BoxPlot;
use dyno_report::{Align, Cell, HtmlReport, Section, Table};
use dyno_store::{RunSummary, StoredRun};
use std::fmt::Write as _;

/// `dyno results list`'s table: one row per run, newest first as given.
pub fn list_table(runs: &[RunSummary]) -> Table {
    let mut t = Table::new("runs")
        .column("Run", Align::Right)
        .column("Started (UTC)", Align::Left)
        .column("Command", Align::Left)
        .column("Subject", Align::Left)
        .column("Host", Align::Left)
        .column("Status", Align::Left)
        .column("Samples", Align::Right);
    for r in runs {
        t.push_row([
            Cell::new(r.id.to_string()),
            Cell::new(format_timestamp(r.started_at)),
            Cell::new(r.command.clone()),
            Cell::new(r.subject.name.clone()),
            Cell::new(r.hostname.clone()),
            status_cell(r.status),
            Cell::new(r.samples.to_string()),
        ]);
    }
    t
}

fn status_cell(s: RunStatus) -> Cell {
    let c = Cell::new(s.as_str());
    match s {
        RunStatus::Complete => c.good(),
        RunStatus::Running => c,
        RunStatus::Incomplete => c.warn(),
        RunStatus::Failed => c.bad(),
    }
}

/// The lines `dyno results show` prints above its table: run, command line, start,
/// subject, host and tool, then a blank line.
pub fn show_header(run: &StoredRun) -> String {
    let i = &run.info;
    let mut s = String::new();
    let _ = writeln!(s, "Run       {} ({})", run.id, run.status.as_str());
    let _ = writeln!(s, "Command   {}", i.command_line.join(" "));
    let _ = writeln!(s, "Started   {}", format_timestamp(i.started_at));
    let _ = writeln!(
        s,
        "Subject   {} ({})",
        i.subject.name,
        i.subject.kind.as_str()
    );
    let _ = writeln!(
        s,
        "Host      {} / {} / {} cores",
        i.host.hostname, i.host.cpu_model, i.host.cores_online
    );
    let _ = writeln!(s, "Tool      {}", i.tool_version);
    s.push('\n');
    s
}

/// `dyno results show`'s table: one row per metric with samples, in registration order.
pub fn show_table(run: &StoredRun) -> Table {
    let mut t = Table::new(format!("run {}", run.id))
        .column("Metric", Align::Left)
        .column("Unit", Align::Left)
        .column("n", Align::Right)
        .column("Median", Align::Right)
        .column("95% CI of median", Align::Right)
        .column("CV", Align::Right)
        .column("Min", Align::Right)
        .column("Max", Align::Right);
    for m in &run.metrics {
        let Some(MetricStats {
            summary: sum, ci, ..
        }) = metric_stats(run, &m.name)
        else {
            continue;
        };
        let f = |v: f64| format_value(v, m.unit);
        t.push_row([
            m.name.clone(),
            m.unit.symbol().to_string(),
            sum.n.to_string(),
            f(sum.median),
            ci.map(|c| format!("{} .. {}", f(c.low), f(c.high)))
                .unwrap_or_else(|| "-".into()),
            cv_text(&sum),
            f(sum.min),
            f(sum.max),
        ]);
    }
    t
}

fn label(run: &StoredRun) -> String {
    format!("run {} ({})", run.id, run.info.subject.name)
}

/// Metrics in first-seen order across the runs.
fn metrics(runs: &[StoredRun]) -> Vec<Metric> {
    let mut out: Vec<Metric> = Vec::new();
    for m in runs.iter().flat_map(|r| &r.metrics) {
        if !out.iter().any(|o| o.name == m.name) {
            out.push(m.clone());
        }
    }
    out
}

/// The HTML document of `dyno results report` for `runs` (at least one). `verdict` gives
/// a run's command-specific section (a machine run's requirements, say, which its command
/// crate judges), placed after the summary; `footer` closes the page (the dyno build).
pub fn runs_report(
    runs: &[StoredRun],
    verdict: &dyn Fn(&StoredRun) -> Option<Section>,
    footer: String,
) -> String {
    let first = &runs[0];
    let title = if runs.len() == 1 {
        format!("dyno {}: run {}", first.info.command, first.id)
    } else {
        format!("dyno {}: {} runs", first.info.command, runs.len())
    };
    let mut report = HtmlReport::new(title).host(&first.info.host);
    for r in runs {
        report = report.parameter(
            label(r),
            format!(
                "{} · started {} · {} · {}",
                r.info.command_line.join(" "),
                format_timestamp(r.info.started_at),
                r.status.as_str(),
                r.info.tool_version
            ),
        );
    }
    let (table, plots) = medians_and_plots(runs);
    let summary = Section::new("Summary")
        .paragraph("Medians of the raw samples, with the distribution-free confidence interval of the median and the level it actually reaches for this many samples.")
        .table(table);
    report = report.section(summary);
    for r in runs {
        if let Some(section) = verdict(r) {
            report = report.section(section);
        }
    }
    report.section(plots).footer(footer).render()
}

/// The summary table (a row per metric and run) and a box plot per metric.
fn medians_and_plots(runs: &[StoredRun]) -> (Table, Section) {
    let mut table = Table::new("Medians")
        .column("Metric", Align::Left)
        .column("Run", Align::Left)
        .column("n", Align::Right)
        .column("Median", Align::Right)
        .column("95% CI of median", Align::Right)
        .column("CV", Align::Right);
    let mut plots = Section::new("Distributions");
    for m in metrics(runs) {
        let mut plot = BoxPlot::new(m.name.clone(), m.clone());
        for r in runs {
            let Some(MetricStats {
                values: v,
                summary: sum,
                ci,
            }) = metric_stats(r, &m.name)
            else {
                continue;
            };
            table.push_row([
                Cell::new(m.name.clone()),
                Cell::new(label(r)),
                Cell::new(sum.n.to_string()),
                Cell::new(format_value(sum.median, m.unit)),
                Cell::new(
                    ci.map(|c| {
                        format!(
                            "{} .. {} ({:.1}%)",
                            format_value(c.low, m.unit),
                            format_value(c.high, m.unit),
                            c.achieved * 100.0
                        )
                    })
                    .unwrap_or_else(|| "-".into()),
                ),
                Cell::new(cv_text(&sum)),
            ]);
            plot = plot.subject(label(r), v);
        }
        plots = plots.plot_result(
            format!("{} ({})", m.name, m.unit.symbol()),
            plot.render_svg(),
        );
    }
    (table, plots)
}
