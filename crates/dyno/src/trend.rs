//! `dyno results trend`: where did a metric's level shift over the stored history, and
//! does the newest run start a regression?
//!
//! The history is the store's ([`dyno_store::Store::metric_history`]: one median per
//! complete run); the change points are dyno-stats' ([`dyno_stats::change_points`],
//! E-Divisive means with a t-test); the plot is dyno-report's. This module parses the
//! flags, puts the three together and renders them. Method and exit code: docs/trend.md.

use crate::results::DbArg;
use anyhow::{bail, Context as _};
use clap::{Args, ValueEnum};
use dyno_model::{format_timestamp, format_value, Direction, Metric};
use dyno_report::plot::{ChangeKind, TrendPlot};
use dyno_report::{write_atomic, Align, Cell, HtmlReport, Section, Table, TableFormat, Verdict};
use dyno_stats::{change_points, latest_regression, Better, ChangePoint, ChangePointSettings};
use dyno_store::{HistoryPoint, HistoryQuery, RunFilter, Store, StoreError};
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;

/// The JSON document's `schema` (docs/output.md).
const SCHEMA: &str = "dyno.results.trend/1";

/// The fewest runs a history needs: with fewer, no split leaves enough values on both
/// sides to test.
pub const MIN_POINTS: usize = 8;

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

/// The history with its change points and the verdict on its newest run.
struct Trend {
    metric: Metric,
    points: Vec<HistoryPoint>,
    changes: Vec<ChangePoint>,
    settings: ChangePointSettings,
    recent: usize,
    /// Index into `changes` of the change point that makes the newest run a regression.
    regression: Option<usize>,
}

impl Trend {
    fn better(&self) -> Better {
        match self.metric.direction {
            Direction::HigherIsBetter => Better::Higher,
            Direction::LowerIsBetter => Better::Lower,
        }
    }

    fn value(&self, v: f64) -> String {
        format_value(v, self.metric.unit)
    }

    /// "regression" or "improvement": what the change did, in the metric's direction.
    fn effect(&self, c: &ChangePoint) -> &'static str {
        if c.is_regression(self.better()) {
            "regression"
        } else {
            "improvement"
        }
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
    for note in mixed(&points) {
        eprintln!("note: {note}");
    }
    let values: Vec<f64> = points.iter().map(|p| p.value).collect();
    let settings = ChangePointSettings {
        p_strong: a.p,
        p_weak: a.p_weak,
        window: a.window as usize,
        ..ChangePointSettings::default()
    };
    let changes = change_points(&values, &settings)
        .with_context(|| format!("--metric {}: the history holds an infinite value", a.metric))?;
    let mut trend = Trend {
        metric: points[0].metric.clone(),
        points,
        changes,
        settings,
        recent: a.recent as usize,
        regression: None,
    };
    trend.regression =
        latest_regression(&trend.changes, values.len(), trend.better(), trend.recent)
            .and_then(|r| trend.changes.iter().position(|c| c.index == r.index));
    let text = match a.format {
        TrendFormat::Json => serde_json::to_string_pretty(&json_doc(&trend, &a))? + "\n",
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
            format!("{shown}{}\n", verdict(&trend).1)
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
    Ok(if trend.regression.is_some() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// What a history mixes that should be one series: several subjects, hosts or workloads
/// (a change point may then be a switch between them, not a change of either), each with
/// the flag that follows one.
fn mixed(points: &[HistoryPoint]) -> Vec<String> {
    let distinct = |get: &dyn Fn(&HistoryPoint) -> String| {
        let mut v: Vec<String> = points.iter().map(get).collect();
        v.sort();
        v.dedup();
        v
    };
    let mut out = Vec::new();
    for (what, flag, names) in [
        (
            "subjects",
            "--subject",
            distinct(&|p| p.subject.name.clone()),
        ),
        ("hosts", "--host", distinct(&|p| p.hostname.clone())),
        (
            "workloads",
            "--workload",
            distinct(&|p| p.workload.clone().unwrap_or_default()),
        ),
    ] {
        if names.len() > 1 {
            let shown: Vec<&str> = names.iter().take(5).map(String::as_str).collect();
            out.push(format!(
                "this history mixes {} {what} ({}{}): a change point may be a switch between them; {flag} follows one",
                names.len(),
                shown.join(", "),
                if names.len() > 5 { ", ..." } else { "" }
            ));
        }
    }
    out
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
                suggestion(&a.metric, &names)
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

/// `; did you mean X?` for the stored names closest to `name` (case-insensitive edit
/// distance at most a third of its length, or one containing the other), else the list
/// of names when it is short.
fn suggestion(name: &str, names: &[String]) -> String {
    let lower = name.to_lowercase();
    let mut close: Vec<(usize, &String)> = names
        .iter()
        .filter_map(|n| {
            let other = n.to_lowercase();
            let d = edit_distance(&lower, &other);
            let near = d <= (lower.chars().count() / 3).max(1)
                || other.contains(&lower)
                || lower.contains(&other);
            near.then_some((d, n))
        })
        .collect();
    close.sort();
    match close.as_slice() {
        [] if names.is_empty() => "; the store has no samples yet".into(),
        [] if names.len() <= 12 => format!("; it has {}", names.join(", ")),
        [] => String::new(),
        found => {
            let names: Vec<&str> = found.iter().take(3).map(|(_, n)| n.as_str()).collect();
            format!("; did you mean {}?", names.join(" or "))
        }
    }
}

/// Levenshtein distance between two strings, by characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (diagonal + usize::from(ca != *cb))
                .min(above + 1)
                .min(row[j] + 1);
            diagonal = above;
        }
    }
    row[b.len()]
}

/// The verdict on the newest run: (badge, one line).
fn verdict(t: &Trend) -> (Verdict, String) {
    let n = t.points.len();
    let newest = &t.points[n - 1];
    if let Some(c) = t.regression.map(|i| &t.changes[i]) {
        let run = &t.points[c.index];
        return (
            Verdict::Regression,
            format!(
                "regression: {} moved from {} to {} ({}, p {:.1e}) at run {} ({}); the newest run, {}, is {} run(s) after it",
                t.metric.name,
                t.value(c.mean_before),
                t.value(c.mean_after),
                percent(c.relative_change),
                c.p_value,
                run.run,
                format_timestamp(run.started_at),
                newest.run,
                n - 1 - c.index,
            ),
        );
    }
    let strong = t
        .changes
        .iter()
        .filter(|c| c.strength == dyno_stats::Strength::Strong)
        .max_by_key(|c| c.index);
    let line = match strong {
        None => format!("no regression: no strong change point in {n} runs of {}", t.metric.name),
        Some(c) if c.is_regression(t.better()) => format!(
            "no new regression: the latest strong change point (run {}, {}) is a regression {} runs before the newest, beyond --recent {}",
            t.points[c.index].run,
            percent(c.relative_change),
            n - c.index,
            t.recent
        ),
        Some(c) => format!(
            "no regression: the latest strong change point (run {}, {}) is an improvement",
            t.points[c.index].run,
            percent(c.relative_change)
        ),
    };
    (Verdict::NoChange, line)
}

fn percent(x: f64) -> String {
    if x.is_finite() {
        format!("{:+.1}%", x * 100.0)
    } else {
        "-".into()
    }
}

fn table(t: &Trend) -> Table {
    let mut table = Table::new(format!(
        "change points of {} over {} runs",
        t.metric.name,
        t.points.len()
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
        let run = &t.points[c.index];
        let effect = Cell::new(t.effect(c));
        let effect = match (c.strength, c.is_regression(t.better())) {
            (dyno_stats::Strength::Weak, _) => effect,
            (_, true) => effect.bad(),
            (_, false) => effect.good(),
        };
        table.push_row([
            Cell::new(run.run.to_string()),
            Cell::new(format_timestamp(run.started_at)),
            Cell::new(run.subject.name.clone()),
            Cell::new(t.value(c.mean_before)),
            Cell::new(t.value(c.mean_after)),
            Cell::new(percent(c.relative_change)),
            Cell::new(format!("{:.1e}", c.p_value)),
            Cell::new(c.strength.as_str()),
            effect,
        ]);
    }
    table
}

fn json_doc(t: &Trend, a: &TrendArgs) -> serde_json::Value {
    let finite = |x: f64| x.is_finite().then_some(x);
    let points: Vec<_> = t
        .points
        .iter()
        .map(|p| {
            json!({
                "run": p.run, "run_uuid": p.run_uuid, "started_at": format_timestamp(p.started_at),
                "command": p.command, "subject": p.subject.name, "hostname": p.hostname,
                "workload": p.workload, "value": p.value, "samples": p.samples,
            })
        })
        .collect();
    let changes: Vec<_> = t
        .changes
        .iter()
        .map(|c| {
            let p = &t.points[c.index];
            json!({
                "index": c.index, "run": p.run, "run_uuid": p.run_uuid,
                "started_at": format_timestamp(p.started_at),
                "mean_before": c.mean_before, "mean_after": c.mean_after,
                "relative_change": finite(c.relative_change), "p_value": c.p_value,
                "strength": c.strength.as_str(), "effect": t.effect(c),
            })
        })
        .collect();
    let (badge, message) = verdict(t);
    json!({
        "schema": SCHEMA,
        "metric": { "name": t.metric.name, "unit": t.metric.unit.symbol(), "direction": t.metric.direction.as_str() },
        "filters": {
            "subject": a.subject, "host": a.host, "workload": a.workload,
            "command": a.kind.map(|k| k.command()), "since": a.since.map(format_timestamp), "last": a.last,
        },
        "settings": {
            "method": "e-divisive-means+t-test", "p_strong": t.settings.p_strong, "p_weak": t.settings.p_weak,
            "window": t.settings.window, "min_segment": t.settings.min_segment, "recent": t.recent,
        },
        "points": points,
        "change_points": changes,
        "verdict": {
            "regression": badge == Verdict::Regression,
            "change_point": t.regression.map(|i| t.changes[i].index),
            "message": message,
        },
    })
}

fn html(t: &Trend, a: &TrendArgs) -> String {
    let values: Vec<f64> = t.points.iter().map(|p| p.value).collect();
    let mut plot = TrendPlot::new(
        format!("{} over {} runs", t.metric.name, t.points.len()),
        t.metric.clone(),
        values,
    );
    for c in &t.changes {
        let kind = match (c.strength, c.is_regression(t.better())) {
            (dyno_stats::Strength::Weak, _) => ChangeKind::Weak,
            (_, true) => ChangeKind::Regression,
            (_, false) => ChangeKind::Improvement,
        };
        let label = format!(
            "run {} {}",
            t.points[c.index].run,
            percent(c.relative_change)
        );
        plot = plot.mark(c.index, kind, label);
    }
    let (badge, message) = verdict(t);
    let section = Section::new(t.metric.name.clone())
        .verdict(badge, message)
        .plot_result(
            "per-run medians with change points (strong: coloured, weak: grey)",
            plot.render_svg(),
        )
        .table(table(t));
    let mut report = HtmlReport::new(format!("dyno results trend: {}", t.metric.name))
        .parameter(
            "metric",
            format!(
                "{} ({}, {})",
                t.metric.name,
                t.metric.unit.symbol(),
                t.metric.direction.as_str()
            ),
        )
        .parameter("runs", t.points.len().to_string())
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
    fn close_names_are_suggested() {
        let names: Vec<String> = ["Blake2256", "Sr25519Verify", "MemoryCopy", "tps"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            suggestion("sr25519verfy", &names),
            "; did you mean Sr25519Verify?"
        );
        assert_eq!(suggestion("Blake2", &names), "; did you mean Blake2256?");
        assert_eq!(
            suggestion("latency", &names),
            "; it has Blake2256, Sr25519Verify, MemoryCopy, tps"
        );
        assert_eq!(suggestion("x", &[]), "; the store has no samples yet");
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
    }

    #[test]
    fn p_values_must_be_probabilities() {
        assert_eq!(parse_p("0.001"), Ok(0.001));
        assert!(parse_p("0").is_err() && parse_p("1").is_err() && parse_p("x").is_err());
    }
}
