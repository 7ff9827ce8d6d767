//! `dyno results fleet`: where does a machine stand among all machines in the store?
//!
//! Each machine (host name and CPU model) counts once, with the median of its newest
//! complete run of the metric. From those medians: the distribution per CPU model and
//! over all machines, the share of machines meeting a reference minimum, and the
//! percentile of this host (or of a given run).

use crate::results::ListFormat;
use anyhow::Context as _;
use clap::Args;
use dyno_hw::RequirementSet;
use dyno_model::Direction;
use dyno_report::TableFormat;
use dyno_results::{FleetReference, FleetReport, Place};
use dyno_store::{FleetQuery, RunId};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments of `dyno results fleet`.
#[derive(Debug, Args)]
pub struct FleetArgs {
    #[command(flatten)]
    db: crate::db::DbArg,
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

/// Runs `dyno results fleet`.
pub fn run(a: FleetArgs) -> anyhow::Result<ExitCode> {
    let store = crate::results::open_read(&a.db)?;
    let query = FleetQuery {
        metric: a.metric.clone(),
        cpu: a.cpu.clone(),
        command: Some(a.command.clone()),
    };
    let min = match &a.reference {
        Some(set) => RequirementSet::builtin(set)
            .context("--reference")?
            .minimum_of(&a.metric),
        None => None,
    };
    let meets_fn = |v: f64, direction| {
        min.is_some_and(|m| dyno_hw::judge(v, m, a.tolerance, direction).passed)
    };
    let meets = min.map(|_| &meets_fn as &dyn Fn(f64, Direction) -> bool);
    let reference = a.reference.as_ref().map(|set| FleetReference {
        minimum: min,
        set: set.clone(),
        tolerance_percent: a.tolerance,
    });
    let place = match (&a.run, &a.host) {
        (Some(id), _) => Place::Run(*id),
        (None, Some(h)) => Place::Host(h.clone()),
        (None, None) => {
            let me = dyno_proc::host::probe(Path::new("."));
            Place::ThisHost {
                hostname: me.hostname,
                cpu_model: me.cpu_model,
            }
        }
    };
    let report = FleetReport::from_store(&store, &query, reference, meets, &place)
        .map_err(crate::results::classify)?;
    if let Some(path) = &a.html {
        crate::term::write_file("--html", path, &report.html(&place, store.path()))?;
    }
    if a.format == ListFormat::Json {
        outln!("{}", serde_json::to_string_pretty(&report)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    let format = match a.format {
        ListFormat::Markdown => TableFormat::Markdown,
        ListFormat::Csv => TableFormat::Csv,
        _ => crate::term::table_format(),
    };
    out!("{}", report.text(format, &place))?;
    Ok(ExitCode::SUCCESS)
}
