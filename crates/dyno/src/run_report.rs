//! `dyno results report`: one self-contained HTML file for stored runs, with the run
//! parameters, the host, a summary table per run and a box plot per metric (one box
//! per run, best first), built from the raw samples.

use anyhow::Context as _;
use dyno_model::{format_timestamp, format_value, Metric};
use dyno_report::plot::BoxPlot;
use dyno_report::{write_atomic, Align, Cell, HtmlReport, Section, Table};
use dyno_results::{metric_stats, MetricStats};
use dyno_store::{RunId, Store, StoredRun};
use std::path::Path;
use std::process::ExitCode;

/// Reads the runs, renders the report and writes it atomically to `output`.
pub fn write(store: &Store, ids: &[RunId], output: &Path) -> anyhow::Result<ExitCode> {
    let runs: Vec<StoredRun> = ids
        .iter()
        .map(|id| store.run(*id))
        .collect::<Result<_, _>>()?;
    let html = render(&runs);
    write_atomic(output, html.as_bytes())
        .with_context(|| format!("--output {}", output.display()))?;
    eprintln!("wrote {}", output.display());
    Ok(ExitCode::SUCCESS)
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

/// The HTML document for `runs` (at least one).
pub fn render(runs: &[StoredRun]) -> String {
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
                // One sample has no spread: "-", not a CV of zero.
                Cell::new(if sum.n > 1 {
                    format!("{:.2} %", sum.cv * 100.0)
                } else {
                    "-".into()
                }),
            ]);
            plot = plot.subject(label(r), v);
        }
        plots = plots.plot_result(
            format!("{} ({})", m.name, m.unit.symbol()),
            plot.render_svg(),
        );
    }
    let summary = Section::new("Summary")
        .paragraph("Medians of the raw samples, with the distribution-free confidence interval of the median and the level it actually reaches for this many samples.")
        .table(table);
    report = report.section(summary);
    for r in runs {
        if let Some(verdict) = crate::machine::stored::verdict_section(r) {
            report = report.section(verdict);
        }
    }
    report
        .section(plots)
        .footer(format!("dyno {}", env!("CARGO_PKG_VERSION")))
        .render()
}
