//! `dyno results fleet`: where does a machine stand among all machines in the store?
//!
//! Each machine (host name and CPU model) counts once, with the median of its newest
//! complete run of the metric. From those medians: the distribution per CPU model and
//! over all machines, the share of machines meeting a reference minimum, and the
//! percentile of this host (or of a given run).

use crate::results::ListFormat;
use anyhow::{bail, Context as _};
use clap::Args;
use dyno_model::{format_value, Direction, Metric};
use dyno_report::plot::BoxPlot;
use dyno_report::{write_atomic, Align, Cell, HtmlReport, Section, Table, TableFormat};
use dyno_store::{FleetQuery, RunId, Store};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The JSON document's `schema`: name and major version, which changes only when a
/// field changes meaning or goes away (docs/output.md).
const SCHEMA: &str = "dyno.results.fleet/1";

/// Arguments of `dyno results fleet`.
#[derive(Debug, Args)]
pub struct FleetArgs {
    #[command(flatten)]
    db: crate::results::DbArg,
    /// The metric (as stored: Sr25519Verify, Blake2256, MemoryCopy...).
    #[arg(long)]
    metric: String,
    /// Only CPU models containing this text (case-insensitive).
    #[arg(long, value_name = "PATTERN")]
    cpu: Option<String>,
    /// Only runs of this command (default: machine).
    #[arg(long, default_value = "machine")]
    command: String,
    /// Judge every machine against this built-in requirement set (substrate...).
    #[arg(long, value_name = "SET")]
    reference: Option<String>,
    /// Fault tolerance in percent, as `dyno machine --tolerance`.
    #[arg(long, default_value = "10", value_name = "PERCENT")]
    tolerance: f64,
    /// Where this run stands (a run id in the store) instead of this host.
    #[arg(long, value_name = "ID", conflicts_with = "host")]
    run: Option<RunId>,
    /// Where the machine with this host name stands instead of this host.
    #[arg(long, value_name = "HOSTNAME")]
    host: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    format: ListFormat,
    /// Also write an HTML report with a box plot per CPU model.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
}

/// One machine's score.
#[derive(Debug, Clone, PartialEq)]
struct Scored {
    hostname: String,
    cpu_model: String,
    run: RunId,
    run_uuid: String,
    started_at: f64,
    /// Median of the run's samples.
    value: f64,
    samples: usize,
}

/// The distribution of the scores of a group of machines.
#[derive(Debug, Clone, PartialEq)]
struct Group {
    label: String,
    values: Vec<f64>,
    summary: dyno_stats::Summary,
    /// Share of machines meeting the minimum, when there is one.
    passing: Option<f64>,
}

/// Who is being placed, and where they stand.
#[derive(Debug, Clone, PartialEq)]
struct Standing {
    source: &'static str,
    hostname: String,
    cpu_model: String,
    run: RunId,
    value: f64,
    /// Percent of all machines this one is at least as good as (ties count half).
    percentile_all: f64,
    /// The same among machines with its CPU model.
    percentile_cpu: f64,
    passes: Option<bool>,
}

/// Percent of `values` that `x` beats, ties counting half (the mid-rank percentile),
/// with `direction` deciding what beating means.
fn percentile(values: &[f64], x: f64, direction: Direction) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let (mut worse, mut equal) = (0usize, 0usize);
    for &v in values {
        let beats = match direction {
            Direction::HigherIsBetter => x > v,
            Direction::LowerIsBetter => x < v,
        };
        if beats {
            worse += 1;
        } else if v == x {
            equal += 1;
        }
    }
    (worse as f64 + equal as f64 / 2.0) / values.len() as f64 * 100.0
}

fn group(label: String, values: Vec<f64>, passes: Option<&dyn Fn(f64) -> bool>) -> Option<Group> {
    let summary = dyno_stats::summarize(&values)?;
    let passing =
        passes.map(|p| values.iter().filter(|v| p(**v)).count() as f64 / values.len() as f64);
    Some(Group {
        label,
        values,
        summary,
        passing,
    })
}

/// The minimum of `metric` in the requirement set `name`, if the set has one.
fn minimum(name: &str, metric: &str) -> anyhow::Result<Option<f64>> {
    let set = dyno_hw::RequirementSet::builtin(name).context("--reference")?;
    Ok(dyno_hw::MetricId::parse(metric)
        .and_then(|id| set.get(id))
        .map(|r| r.minimum))
}

/// Runs `dyno results fleet`.
pub fn run(a: FleetArgs) -> anyhow::Result<ExitCode> {
    let store = crate::results::open_read(&a.db)?;
    let query = FleetQuery {
        metric: a.metric.clone(),
        cpu: a.cpu.clone(),
        command: Some(a.command.clone()),
    };
    let fleet = store.fleet_runs(&query).map_err(crate::db::classify)?;
    let Some(metric) = fleet.metric.clone() else {
        bail!(
            "--metric {}: no machine in {} has a complete `{}` run measuring it{}",
            a.metric,
            store.path().display(),
            a.command,
            a.cpu
                .as_ref()
                .map(|c| format!(" with a CPU model containing {c:?}"))
                .unwrap_or_default()
        );
    };
    let scored: Vec<Scored> = fleet
        .machines
        .iter()
        .filter_map(|m| {
            Some(Scored {
                hostname: m.hostname.clone(),
                cpu_model: m.cpu_model.clone(),
                run: m.run,
                run_uuid: m.run_uuid.clone(),
                started_at: m.started_at,
                value: dyno_stats::median(&m.samples)?,
                samples: m.samples.len(),
            })
        })
        .collect();
    let min = match &a.reference {
        Some(set) => minimum(set, &a.metric)?,
        None => None,
    };
    let passes_fn =
        |v: f64| min.is_some_and(|m| dyno_hw::judge(v, m, a.tolerance, metric.direction).passed);
    let passes: Option<&dyn Fn(f64) -> bool> = min.map(|_| &passes_fn as &dyn Fn(f64) -> bool);
    let mut groups = Vec::new();
    let mut models: Vec<&str> = scored.iter().map(|s| s.cpu_model.as_str()).collect();
    models.dedup(); // the store orders machines by CPU model
    for model in &models {
        let values: Vec<f64> = scored
            .iter()
            .filter(|s| s.cpu_model == *model)
            .map(|s| s.value)
            .collect();
        groups.extend(group(model.to_string(), values, passes));
    }
    let all_values: Vec<f64> = scored.iter().map(|s| s.value).collect();
    let overall = group("all machines".into(), all_values.clone(), passes);
    let standing = standing(&a, &store, &scored, &metric, passes)?;

    if let Some(path) = &a.html {
        let html = html(
            &a,
            &metric,
            &groups,
            overall.as_ref(),
            standing.as_ref(),
            min,
            &store,
        );
        write_atomic(path, html.as_bytes())
            .with_context(|| format!("--html {}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    if a.format == ListFormat::Json {
        let doc = json_doc(
            &a,
            &metric,
            &scored,
            &groups,
            overall.as_ref(),
            standing.as_ref(),
            min,
        );
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(ExitCode::SUCCESS);
    }
    let t = table(&metric, &groups, overall.as_ref(), min, &a);
    let rendered = match a.format {
        ListFormat::Markdown => TableFormat::Markdown.render(&t),
        ListFormat::Csv => TableFormat::Csv.render(&t),
        _ => TableFormat::Terminal {
            color: crate::term::color_stdout(),
        }
        .render(&t),
    };
    print!("{rendered}");
    if a.format != ListFormat::Csv {
        println!();
        println!("{}", standing_line(standing.as_ref(), &metric, &a));
    }
    Ok(ExitCode::SUCCESS)
}

/// Finds the machine or run to place: `--run`, `--host`, else this host.
fn standing(
    a: &FleetArgs,
    store: &Store,
    scored: &[Scored],
    metric: &Metric,
    passes: Option<&dyn Fn(f64) -> bool>,
) -> anyhow::Result<Option<Standing>> {
    let (source, hostname, cpu_model, run, value) = if let Some(id) = a.run {
        let run = store
            .run(id)
            .map_err(crate::db::classify)
            .context("--run")?;
        let values: Vec<f64> = run
            .samples
            .iter()
            .filter(|s| s.metric == a.metric)
            .map(|s| s.value)
            .collect();
        let Some(value) = dyno_stats::median(&values) else {
            bail!("--run {id}: the run has no samples of {}", a.metric);
        };
        (
            "run",
            run.info.host.hostname,
            run.info.host.cpu_model,
            id,
            value,
        )
    } else {
        let (source, hostname, cpu) = match &a.host {
            Some(h) => ("hostname", h.clone(), None),
            None => {
                let me = dyno_proc::host::probe(Path::new("."));
                ("this host", me.hostname, Some(me.cpu_model))
            }
        };
        let found = scored
            .iter()
            .find(|s| s.hostname == hostname && cpu.as_ref().is_none_or(|c| *c == s.cpu_model));
        match found {
            Some(s) => (
                source,
                s.hostname.clone(),
                s.cpu_model.clone(),
                s.run,
                s.value,
            ),
            None if a.host.is_some() => {
                bail!(
                    "--host {hostname}: no complete run of {} from that machine",
                    a.metric
                )
            }
            None => return Ok(None),
        }
    };
    let all: Vec<f64> = scored.iter().map(|s| s.value).collect();
    let same_cpu: Vec<f64> = scored
        .iter()
        .filter(|s| s.cpu_model == cpu_model)
        .map(|s| s.value)
        .collect();
    Ok(Some(Standing {
        source,
        percentile_all: percentile(&all, value, metric.direction),
        percentile_cpu: percentile(&same_cpu, value, metric.direction),
        passes: passes.map(|p| p(value)),
        hostname,
        cpu_model,
        run,
        value,
    }))
}

fn standing_line(s: Option<&Standing>, metric: &Metric, a: &FleetArgs) -> String {
    let Some(s) = s else {
        return format!(
            "this host ({}) has no complete `{}` run of {} in this store: push one with \
             `dyno results push --to URL`",
            dyno_proc::host::probe(Path::new(".")).hostname,
            a.command,
            a.metric
        );
    };
    format!(
        "{} {} ({}), run {}: {} = {}, percentile {:.0} among all machines, {:.0} among its CPU model{}",
        s.source,
        s.hostname,
        s.cpu_model,
        s.run,
        metric.name,
        format_value(s.value, metric.unit),
        s.percentile_all,
        s.percentile_cpu,
        match s.passes {
            Some(true) => ", meets the minimum",
            Some(false) => ", below the minimum",
            None => "",
        }
    )
}

fn table(
    metric: &Metric,
    groups: &[Group],
    overall: Option<&Group>,
    min: Option<f64>,
    a: &FleetArgs,
) -> Table {
    let passing_title = match (&a.reference, min) {
        (Some(set), Some(m)) => format!("Meets {set} ({})", format_value(m, metric.unit)),
        (Some(set), None) => format!("Meets {set} (no minimum)"),
        (None, _) => "Meets minimum".into(),
    };
    let mut t = Table::new(format!(
        "{} per CPU model ({})",
        metric.name,
        metric.unit.symbol()
    ))
    .column("CPU model", Align::Left)
    .column("Machines", Align::Right)
    .column("Min", Align::Right)
    .column("Q1", Align::Right)
    .column("Median", Align::Right)
    .column("Q3", Align::Right)
    .column("Max", Align::Right)
    .column(passing_title, Align::Right);
    let f = |v: f64| format_value(v, metric.unit);
    for g in groups.iter().chain(overall) {
        let s = &g.summary;
        t.push_row([
            Cell::new(g.label.clone()),
            Cell::new(s.n.to_string()),
            Cell::new(f(s.min)),
            Cell::new(f(s.q1)),
            Cell::new(f(s.median)),
            Cell::new(f(s.q3)),
            Cell::new(f(s.max)),
            Cell::new(
                g.passing
                    .map(|p| format!("{:.0} %", p * 100.0))
                    .unwrap_or_else(|| "-".into()),
            ),
        ]);
    }
    t
}

fn summary_json(g: &Group) -> serde_json::Value {
    let s = &g.summary;
    json!({
        "machines": s.n, "min": s.min, "q1": s.q1, "median": s.median, "q3": s.q3,
        "max": s.max, "passing_share": g.passing,
    })
}

fn json_doc(
    a: &FleetArgs,
    metric: &Metric,
    scored: &[Scored],
    groups: &[Group],
    overall: Option<&Group>,
    standing: Option<&Standing>,
    min: Option<f64>,
) -> serde_json::Value {
    json!({
        "schema": SCHEMA,
        "metric": { "name": metric.name, "unit": metric.unit.symbol(),
                    "direction": metric.direction.as_str() },
        "filter": { "cpu": a.cpu, "command": a.command },
        "reference": a.reference.as_ref().map(|set| json!({
            "set": set, "minimum": min, "tolerance_percent": a.tolerance,
        })),
        "cpu_models": groups.iter().map(|g| {
            let mut v = summary_json(g);
            v["cpu_model"] = json!(g.label);
            v
        }).collect::<Vec<_>>(),
        "overall": overall.map(summary_json),
        "standing": standing.map(|s| json!({
            "source": s.source, "hostname": s.hostname, "cpu_model": s.cpu_model,
            "run_id": s.run, "value": s.value, "percentile_all": s.percentile_all,
            "percentile_cpu": s.percentile_cpu, "meets_minimum": s.passes,
        })),
        "machines": scored.iter().map(|s| json!({
            "hostname": s.hostname, "cpu_model": s.cpu_model, "run_id": s.run,
            "run_uuid": s.run_uuid, "started_at": dyno_model::format_timestamp(s.started_at),
            "value": s.value, "samples": s.samples,
        })).collect::<Vec<_>>(),
    })
}

fn html(
    a: &FleetArgs,
    metric: &Metric,
    groups: &[Group],
    overall: Option<&Group>,
    standing: Option<&Standing>,
    min: Option<f64>,
    store: &Store,
) -> String {
    let mut plot = BoxPlot::new(format!("{} per CPU model", metric.name), metric.clone());
    for g in groups {
        plot = plot.subject(
            format!("{} (n={})", g.label, g.values.len()),
            g.values.clone(),
        );
    }
    if let (Some(set), Some(m)) = (&a.reference, min) {
        plot = plot.baseline(format!("{set} minimum"), m);
    }
    let section = Section::new(format!("{} across the fleet", metric.name))
        .paragraph(standing_line(standing, metric, a))
        .table(table(metric, groups, overall, min, a))
        .plot_result(
            "Each machine's median of its newest complete run; one box per CPU model",
            plot.render_svg(),
        );
    HtmlReport::new(format!("dyno fleet: {}", metric.name))
        .parameter("store", store.path().display().to_string())
        .parameter("command", a.command.clone())
        .parameter("CPU filter", a.cpu.clone().unwrap_or_else(|| "all".into()))
        .section(section)
        .render()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_mid_rank_and_follow_the_direction() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile(&v, 3.0, Direction::HigherIsBetter), 62.5);
        assert_eq!(percentile(&v, 3.0, Direction::LowerIsBetter), 37.5);
        assert_eq!(percentile(&v, 10.0, Direction::HigherIsBetter), 100.0);
        assert_eq!(percentile(&[5.0], 5.0, Direction::HigherIsBetter), 50.0);
        assert!(percentile(&[], 5.0, Direction::HigherIsBetter).is_nan());
    }

    #[test]
    fn groups_count_passing_machines() {
        let pass = |v: f64| v >= 2.0;
        let g = group("x".into(), vec![1.0, 2.0, 3.0, 4.0], Some(&pass)).unwrap();
        assert_eq!(g.passing, Some(0.75));
        assert_eq!(g.summary.median, 2.5);
        assert!(group("y".into(), vec![], None).is_none());
    }
}
