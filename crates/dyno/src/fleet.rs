//! `dyno results fleet`: where does a machine stand among all machines in the store?
//!
//! Each machine (host name and CPU model) counts once, with the median of its newest
//! complete run of the metric. From those medians: the distribution per CPU model and
//! over all machines, the share of machines meeting a reference minimum, and the
//! percentile of this host (or of a given run).

use crate::results::ListFormat;
use anyhow::{bail, Context as _};
use clap::Args;
use dyno_model::format_value;
use dyno_report::plot::BoxPlot;
use dyno_report::{write_atomic, Align, Cell, HtmlReport, Section, Table, TableFormat};
use dyno_results::{FleetFilter, FleetReference, FleetReport, FleetStanding, Passes};
use dyno_store::{FleetQuery, RunId, Store};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

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
    let min = match &a.reference {
        Some(set) => minimum(set, &a.metric)?,
        None => None,
    };
    let direction = metric.direction;
    let passes_fn =
        |v: f64| min.is_some_and(|m| dyno_hw::judge(v, m, a.tolerance, direction).passed);
    let passes: Passes = min.map(|_| &passes_fn as &dyn Fn(f64) -> bool);
    let filter = FleetFilter {
        command: a.command.clone(),
        cpu: a.cpu.clone(),
    };
    let reference = a.reference.as_ref().map(|set| FleetReference {
        minimum: min,
        set: set.clone(),
        tolerance_percent: a.tolerance,
    });
    let mut report = FleetReport::new(metric, &fleet, filter, reference, passes);
    report.standing = standing(&a, &store, &report, passes)?;

    if let Some(path) = &a.html {
        write_atomic(path, html(&a, &report, &store).as_bytes())
            .with_context(|| format!("--html {}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    if a.format == ListFormat::Json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(ExitCode::SUCCESS);
    }
    let t = table(&report, &a);
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
        println!("{}", standing_line(&report, &a));
    }
    Ok(ExitCode::SUCCESS)
}

/// Finds the machine or run to place: `--run`, `--host`, else this host.
fn standing(
    a: &FleetArgs,
    store: &Store,
    report: &FleetReport,
    passes: Passes,
) -> anyhow::Result<Option<FleetStanding>> {
    if let Some(id) = a.run {
        let run = store
            .run(id)
            .map_err(crate::db::classify)
            .context("--run")?;
        let Some(value) = dyno_results::median_of(&run, &a.metric) else {
            bail!("--run {id}: the run has no samples of {}", a.metric);
        };
        let host = run.info.host;
        return Ok(Some(report.place(
            "run",
            host.hostname,
            host.cpu_model,
            id,
            value,
            passes,
        )));
    }
    let (source, hostname, cpu) = match &a.host {
        Some(h) => ("hostname", h.clone(), None),
        None => {
            let me = dyno_proc::host::probe(Path::new("."));
            ("this host", me.hostname, Some(me.cpu_model))
        }
    };
    match report.machine(&hostname, cpu.as_deref()) {
        Some(s) => Ok(Some(report.place(
            source,
            s.hostname.clone(),
            s.cpu_model.clone(),
            s.run_id,
            s.value,
            passes,
        ))),
        None if a.host.is_some() => bail!(
            "--host {hostname}: no complete run of {} from that machine",
            a.metric
        ),
        None => Ok(None),
    }
}

fn standing_line(report: &FleetReport, a: &FleetArgs) -> String {
    let metric = &report.measured;
    let Some(s) = &report.standing else {
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
        s.run_id,
        metric.name,
        format_value(s.value, metric.unit),
        s.percentile_all,
        s.percentile_cpu,
        match s.meets_minimum {
            Some(true) => ", meets the minimum",
            Some(false) => ", below the minimum",
            None => "",
        }
    )
}

fn table(report: &FleetReport, a: &FleetArgs) -> Table {
    let metric = &report.measured;
    let min = report.reference.as_ref().and_then(|r| r.minimum);
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
    for g in report.cpu_models.iter().chain(&report.overall) {
        t.push_row([
            Cell::new(g.label()),
            Cell::new(g.machines.to_string()),
            Cell::new(f(g.min)),
            Cell::new(f(g.q1)),
            Cell::new(f(g.median)),
            Cell::new(f(g.q3)),
            Cell::new(f(g.max)),
            Cell::new(
                g.passing_share
                    .map(|p| format!("{:.0} %", p * 100.0))
                    .unwrap_or_else(|| "-".into()),
            ),
        ]);
    }
    t
}

fn html(a: &FleetArgs, report: &FleetReport, store: &Store) -> String {
    let metric = &report.measured;
    let mut plot = BoxPlot::new(format!("{} per CPU model", metric.name), metric.clone());
    for g in &report.cpu_models {
        plot = plot.subject(
            format!("{} (n={})", g.label(), g.values.len()),
            g.values.clone(),
        );
    }
    let min = report.reference.as_ref().and_then(|r| r.minimum);
    if let (Some(set), Some(m)) = (&a.reference, min) {
        plot = plot.baseline(format!("{set} minimum"), m);
    }
    let section = Section::new(format!("{} across the fleet", metric.name))
        .paragraph(standing_line(report, a))
        .table(table(report, a))
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
