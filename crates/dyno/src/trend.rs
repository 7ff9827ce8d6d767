//! `dyno results trend`: where did a metric's level shift over the stored history, and
//! does the newest run start a regression?
//!
//! The history is dyno-store's and its analysis dyno-results' ([`dyno_results::TrendReport`]: one median
//! per complete run, E-Divisive change points, the verdict); the plot is dyno-report's.
//! This module parses the flags, asks for the report and renders it. Method and exit
//! code: docs/trend.md.

use crate::results::DbArg;
use anyhow::{bail, Context as _};
use clap::{Args, ValueEnum};
use dyno_model::{format_timestamp, format_value};
use dyno_report::plot::{ChangeKind, TrendPlot};
use dyno_report::{write_atomic, Align, Cell, HtmlReport, Section, Table, TableFormat, Verdict};
use dyno_results::{
    better, metric_suggestion, mixed_series, percent, TrendFilters, TrendReport, MIN_POINTS,
};
use dyno_stats::ChangePointSettings;
use dyno_store::{HistoryPoint, HistoryQuery, RunFilter, Store, StoreError};
use std::path::PathBuf;
use std::process::ExitCode;

/// Which command's runs (`--kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RunKind {
    /// `dyno machine`.
    Machine,
    /// `dyno tune`.
    Tune,
    /// `dyno pipeline bench`.
    Pipeline,
    /// `dyno compare`.
    Compare,
    /// `dyno cluster run`.
    Cluster,
}

impl RunKind {
    /// The command name the store records.
    fn command(self) -> &'static str {
        match self {
            RunKind::Machine => "machine",
            RunKind::Tune => "tune",
            RunKind::Pipeline => "pipeline",
            RunKind::Compare => "compare",
            RunKind::Cluster => "cluster run",
        }
    }
}

/// Output formats of `dyno results trend`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TrendFormat {
    /// Terminal table and a verdict line.
    Table,
    /// JSON (`dyno.results.trend/1`).
    Json,
    /// Markdown table and a verdict line.
    Markdown,
    /// A self-contained HTML report with the plot (needs --output).
    Html,
}

/// Arguments of `dyno results trend`.
#[derive(Debug, Args)]
pub struct TrendArgs {
    #[command(flatten)]
    db: DbArg,
    /// The metric, as stored (Sr25519Verify, tps, ...).
    #[arg(long)]
    metric: String,
    /// Only runs whose subject name contains this text.
    #[arg(long)]
    subject: Option<String>,
    /// Only runs whose host name contains this text.
    #[arg(long)]
    host: Option<String>,
    /// Only runs whose settings name this workload (compare and pipeline bench runs).
    #[arg(long)]
    workload: Option<String>,
    /// Only runs of this command.
    #[arg(long, value_enum)]
    kind: Option<RunKind>,
    /// Only runs started on or after this date (YYYY-MM-DD, UTC).
    #[arg(long, value_parser = crate::results::parse_date)]
    since: Option<f64>,
    /// Only the newest N runs.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    last: Option<u64>,
    /// A change point is strong (and can fail the build) at a t-test p-value at most this.
    #[arg(long, default_value = "0.001", value_parser = parse_p)]
    p: f64,
    /// A change point is weak (shown, never fails the build) at a p-value at most this.
    #[arg(long, default_value = "0.05", value_parser = parse_p)]
    p_weak: f64,
    /// Runs per E-Divisive search window (windows overlap by half).
    #[arg(long, default_value = "50", value_parser = clap::value_parser!(u64).range(8..))]
    window: u64,
    /// Exit 1 when the latest strong change point is a regression that starts within the
    /// newest N runs.
    #[arg(long, default_value = "10", value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    recent: u64,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    format: TrendFormat,
    /// Write the output to this file instead of standard output (required for html).
    #[arg(long, short, value_name = "FILE")]
    output: Option<PathBuf>,
}

fn parse_p(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(p) if p > 0.0 && p < 1.0 => Ok(p),
        _ => Err(format!(
            "`{s}` is not a p-value between 0 and 1 (exclusive)"
        )),
    }
}

/// Runs `dyno results trend`.
pub fn run(a: TrendArgs) -> anyhow::Result<ExitCode> {
    if a.format == TrendFormat::Html && a.output.is_none() {
        bail!("--format html needs --output FILE");
    }
    if a.p_weak < a.p {
        bail!(
            "--p-weak {} is below --p {}: weak change points are the less certain ones",
            a.p_weak,
            a.p
        );
    }
    let store = crate::results::open_read(&a.db)?;
    let points = history(&store, &a)?;
    for note in mixed_series(&points) {
        eprintln!("note: {note}");
    }
    let settings = ChangePointSettings {
        p_strong: a.p,
        p_weak: a.p_weak,
        window: a.window as usize,
        ..ChangePointSettings::default()
    };
    let filters = TrendFilters {
        command: a.kind.map(|k| k.command().to_string()),
        host: a.host.clone(),
        last: a.last,
        since: a.since.map(format_timestamp),
        subject: a.subject.clone(),
        workload: a.workload.clone(),
    };
    let trend = TrendReport::analyse(points, settings, a.recent as usize, filters)
        .with_context(|| format!("--metric {}: the history holds an infinite value", a.metric))?;
    let text = match a.format {
        TrendFormat::Json => serde_json::to_string_pretty(&trend)? + "\n",
        TrendFormat::Html => html(&trend, &a),
        TrendFormat::Table | TrendFormat::Markdown => {
            let format = match a.format {
                TrendFormat::Markdown => TableFormat::Markdown,
                _ => TableFormat::Terminal {
                    color: a.output.is_none() && crate::term::color_stdout(),
                },
            };
            let shown = if trend.changes.is_empty() {
                String::new()
            } else {
                format.render(&table(&trend)) + "\n"
            };
            format!("{shown}{}\n", trend.verdict.message)
        }
    };
    match &a.output {
        Some(path) => {
            write_atomic(path, text.as_bytes())
                .with_context(|| format!("--output {}", path.display()))?;
            eprintln!("wrote {}", path.display());
        }
        None => print!("{text}"),
    }
    Ok(if trend.verdict.regression {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The history the flags select, or an error that names what is wrong with them.
fn history(store: &Store, a: &TrendArgs) -> anyhow::Result<Vec<HistoryPoint>> {
    let query = HistoryQuery {
        metric: a.metric.clone(),
        runs: RunFilter {
            command: a.kind.map(|k| k.command().to_string()),
            host: a.host.clone(),
            subject: a.subject.clone(),
            since: a.since,
            until: None,
            limit: a.last.map(|n| n as usize),
        },
        workload: a.workload.clone(),
    };
    let points = match store.metric_history(&query) {
        Err(StoreError::NoSuchMetric { .. }) => {
            let names = store.metric_names().map_err(crate::db::classify)?;
            bail!(
                "--metric {}: no run in {} measured a metric of that name{}",
                a.metric,
                store.path().display(),
                metric_suggestion(&a.metric, &names)
            );
        }
        other => other.map_err(crate::db::classify)?,
    };
    if points.is_empty() {
        bail!(
            "--metric {}: no complete run in {} matches the filters{}",
            a.metric,
            store.path().display(),
            filters(a)
        );
    }
    if points.len() < MIN_POINTS {
        bail!(
            "--metric {}: history of {} points; trend needs at least {MIN_POINTS}",
            a.metric,
            points.len()
        );
    }
    Ok(points)
}

/// The filters given, for a message: ` (--host x, --kind machine)`.
fn filters(a: &TrendArgs) -> String {
    let mut given = Vec::new();
    let mut add = |flag: &str, v: Option<String>| {
        if let Some(v) = v {
            given.push(format!("{flag} {v}"));
        }
    };
    add("--subject", a.subject.clone());
    add("--host", a.host.clone());
    add("--workload", a.workload.clone());
    add("--kind", a.kind.map(|k| k.command().to_string()));
    add("--since", a.since.map(format_timestamp));
    if given.is_empty() {
        String::new()
    } else {
        format!(" ({})", given.join(", "))
    }
}

fn table(t: &TrendReport) -> Table {
    let value = |v: f64| format_value(v, t.measured.unit);
    let mut table = Table::new(format!(
        "change points of {} over {} runs",
        t.measured.name,
        t.history.len()
    ))
    .column("Run", Align::Right)
    .column("Started (UTC)", Align::Left)
    .column("Subject", Align::Left)
    .column("Before", Align::Right)
    .column("After", Align::Right)
    .column("Change", Align::Right)
    .column("p", Align::Right)
    .column("Strength", Align::Left)
    .column("Effect", Align::Left);
    for c in &t.changes {
        let run = &t.history[c.index];
        let effect = Cell::new(t.effect(c));
        let effect = match ChangeKind::of(c, better(t.measured.direction)) {
            ChangeKind::Weak => effect,
            ChangeKind::Regression => effect.bad(),
            ChangeKind::Improvement => effect.good(),
        };
        table.push_row([
            Cell::new(run.run.to_string()),
            Cell::new(format_timestamp(run.started_at)),
            Cell::new(run.subject.name.clone()),
            Cell::new(value(c.mean_before)),
            Cell::new(value(c.mean_after)),
            Cell::new(percent(c.relative_change)),
            Cell::new(format!("{:.1e}", c.p_value)),
            Cell::new(c.strength.as_str()),
            effect,
        ]);
    }
    table
}

fn html(t: &TrendReport, a: &TrendArgs) -> String {
    let metric = &t.measured;
    let values: Vec<f64> = t.history.iter().map(|p| p.value).collect();
    let mut plot = TrendPlot::new(
        format!("{} over {} runs", metric.name, t.history.len()),
        metric.clone(),
        values,
    );
    for c in &t.changes {
        let label = format!(
            "run {} {}",
            t.history[c.index].run,
            percent(c.relative_change)
        );
        plot = plot.mark(c.index, ChangeKind::of(c, better(metric.direction)), label);
    }
    let badge = if t.verdict.regression {
        Verdict::Regression
    } else {
        Verdict::NoChange
    };
    let section = Section::new(metric.name.clone())
        .verdict(badge, t.verdict.message.clone())
        .plot_result(
            "per-run medians with change points (strong: coloured, weak: grey)",
            plot.render_svg(),
        )
        .table(table(t));
    let mut report = HtmlReport::new(format!("dyno results trend: {}", metric.name))
        .parameter(
            "metric",
            format!(
                "{} ({}, {})",
                metric.name,
                metric.unit.symbol(),
                metric.direction.as_str()
            ),
        )
        .parameter("runs", t.history.len().to_string())
        .parameter(
            "p strong / weak",
            format!("{} / {}", t.settings.p_strong, t.settings.p_weak),
        )
        .parameter("window", t.settings.window.to_string());
    let f = filters(a);
    if !f.is_empty() {
        report = report.parameter("filters", f.trim().trim_matches(['(', ')']).to_string());
    }
    report.section(section).render()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p_values_must_be_probabilities() {
        assert_eq!(parse_p("0.001"), Ok(0.001));
        assert!(parse_p("0").is_err() && parse_p("1").is_err() && parse_p("x").is_err());
    }
}
