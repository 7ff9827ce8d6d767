//! `dyno results trend`: where did a metric's level shift over the stored history, and
//! does the newest run start a regression?
//!
//! The history is dyno-store's and its analysis dyno-results' ([`dyno_results::TrendQuery`]
//! selects it, [`dyno_results::TrendReport`] finds its change points and judges the newest
//! run, and lays out the table and the HTML page). This module parses the flags, asks for
//! the report and prints it. Method and exit code: docs/trend.md.

use crate::db::DbArg;
use anyhow::{bail, Context as _};
use clap::{Args, ValueEnum};
use dyno_report::TableFormat;
use dyno_results::{mixed_series, TrendQuery, TrendReport};
use dyno_stats::ChangePointSettings;
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
    let query = TrendQuery {
        metric: a.metric.clone(),
        subject: a.subject.clone(),
        host: a.host.clone(),
        workload: a.workload.clone(),
        command: a.kind.map(|k| k.command().to_string()),
        since: a.since,
        last: a.last,
    };
    let points = query.history(&store).map_err(crate::results::classify)?;
    for note in mixed_series(&points) {
        errln!("note: {note}");
    }
    let settings = ChangePointSettings {
        p_strong: a.p,
        p_weak: a.p_weak,
        window: a.window as usize,
        ..ChangePointSettings::default()
    };
    let trend = TrendReport::analyse(points, settings, a.recent as usize, query.filters())
        .with_context(|| format!("--metric {}: the history holds an infinite value", a.metric))?;
    let text = match a.format {
        TrendFormat::Json => serde_json::to_string_pretty(&trend)? + "\n",
        TrendFormat::Html => trend.html(&query.described_filters()),
        TrendFormat::Markdown => trend.text(TableFormat::Markdown),
        TrendFormat::Table => trend.text(TableFormat::Terminal {
            color: a.output.is_none() && crate::term::color_stdout(),
        }),
    };
    match &a.output {
        Some(path) => crate::term::write_file("--output", path, &text)?,
        None => out!("{text}")?,
    }
    Ok(if trend.verdict.regression {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
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
