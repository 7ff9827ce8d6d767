//! `dyno results`: what was measured before, here and across a fleet of machines.

mod fleet;
mod trend;

use crate::db::DbArg;
use anyhow::{bail, Context as _};
use clap::{Args, Subcommand, ValueEnum};
use dyno_report::{Table, TableFormat};
use dyno_results::{ResultsError, RunList, RunShow};
use dyno_store::{ExportFormat, RunFilter, RunId, RunSummary, Store};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// `dyno results` subcommands.
#[derive(Debug, Subcommand)]
pub enum ResultsCommand {
    /// List stored runs, newest first.
    List(ListArgs),
    /// Show one run: its settings, host and per-metric summary.
    Show(ShowArgs),
    /// Export samples in long format (one row per sample).
    Export(ExportArgs),
    /// Delete a run and its samples.
    Delete(DeleteArgs),
    /// Bring a store written by an older dyno to this dyno's schema (what any recording
    /// command does on opening it; read-only commands refuse an older store).
    Migrate(MigrateArgs),
    /// Write a self-contained HTML report of one or more runs (box plots per metric).
    Report(ReportArgs),
    /// Copy runs from this store to a shared one (idempotent: rerun to resume).
    Push(PushArgs),
    /// Copy runs from a shared store into this one (idempotent: rerun to resume).
    Pull(PullArgs),
    /// Where this machine stands among all machines in the store, per CPU model.
    Fleet(fleet::FleetArgs),
    /// Change points over a metric's stored history (E-Divisive means with a t-test);
    /// exits 1 when the newest run starts a regression.
    Trend(trend::TrendArgs),
}

/// Arguments of `dyno results migrate`.
#[derive(Debug, Args)]
pub struct MigrateArgs {
    #[command(flatten)]
    db: DbArg,
}

/// Arguments of `dyno results push`.
#[derive(Debug, Args)]
pub struct PushArgs {
    #[command(flatten)]
    db: DbArg,
    /// The shared store to copy to (postgres://USER@HOST/DB, or another SQLite file).
    #[arg(long, value_name = "URL")]
    to: String,
    /// Runs to push (ids in --db); all finished runs when none is given.
    #[arg(value_name = "RUN")]
    runs: Vec<RunId>,
}

/// Arguments of `dyno results pull`.
#[derive(Debug, Args)]
pub struct PullArgs {
    #[command(flatten)]
    db: DbArg,
    /// The shared store to copy from (postgres://USER@HOST/DB, or another SQLite file).
    #[arg(long, value_name = "URL")]
    from: String,
    #[command(flatten)]
    filter: RunFilterArgs,
    /// Runs to pull (ids in --from); every run matching the filters when none is given.
    #[arg(value_name = "RUN")]
    runs: Vec<RunId>,
}

/// Which runs (`list`, `pull`).
#[derive(Debug, Args)]
pub struct RunFilterArgs {
    /// Only runs of this command (machine, tune, pipeline, compare).
    #[arg(long)]
    command: Option<String>,
    /// Only runs whose host name contains this text.
    #[arg(long)]
    host: Option<String>,
    /// Only runs whose subject name contains this text.
    #[arg(long)]
    subject: Option<String>,
    /// Only runs started on or after this date (YYYY-MM-DD, UTC).
    #[arg(long, value_parser = parse_date)]
    since: Option<f64>,
    /// Only runs started before this date (YYYY-MM-DD, UTC).
    #[arg(long, value_parser = parse_date)]
    until: Option<f64>,
}

impl RunFilterArgs {
    /// The store's filter of these flags, at most `limit` runs.
    fn filter(self, limit: Option<usize>) -> RunFilter {
        RunFilter {
            command: self.command,
            host: self.host,
            subject: self.subject,
            since: self.since,
            until: self.until,
            limit,
        }
    }
}

/// Table formats for list and show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ListFormat {
    /// Terminal table.
    Table,
    /// JSON.
    Json,
    /// CSV.
    Csv,
    /// Markdown table.
    Markdown,
}

/// Arguments of `dyno results list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    db: DbArg,
    #[command(flatten)]
    filter: RunFilterArgs,
    /// At most this many runs.
    #[arg(long, default_value = "50")]
    limit: usize,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    format: ListFormat,
}

/// Arguments of `dyno results show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    #[command(flatten)]
    db: DbArg,
    /// The run id (see `dyno results list`).
    run: RunId,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    format: ListFormat,
}

/// Export file formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportKind {
    /// Comma-separated values.
    Csv,
    /// One JSON object per line.
    Jsonl,
    /// Apache Parquet (for pandas, polars, DuckDB).
    Parquet,
}

/// Arguments of `dyno results export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    #[command(flatten)]
    db: DbArg,
    /// Runs to export (repeatable); all runs when none is given.
    #[arg(long = "run", value_name = "ID")]
    runs: Vec<RunId>,
    /// File format.
    #[arg(long, value_enum, default_value = "csv")]
    format: ExportKind,
    /// Output file; standard output when omitted (text formats only).
    #[arg(long, short, value_name = "FILE")]
    output: Option<PathBuf>,
}

/// Arguments of `dyno results report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    #[command(flatten)]
    db: DbArg,
    /// Runs to report (one box per run in every plot).
    #[arg(required = true, value_name = "RUN")]
    runs: Vec<RunId>,
    /// The HTML file to write.
    #[arg(long, short, value_name = "FILE")]
    output: PathBuf,
}

/// Arguments of `dyno results delete`.
#[derive(Debug, Args)]
pub struct DeleteArgs {
    #[command(flatten)]
    db: DbArg,
    /// The run id to delete.
    run: RunId,
}

pub(crate) fn parse_date(s: &str) -> Result<f64, String> {
    dyno_model::parse_date(s).ok_or_else(|| format!("`{s}` is not a date (YYYY-MM-DD)"))
}

pub(crate) fn open_read(db: &DbArg) -> anyhow::Result<Store> {
    let path = db.path();
    Store::open_read_only(&path)
        .map_err(crate::db::classify)
        .with_context(|| format!("results store {}", path.display()))
}

fn open_write(path: &std::path::Path, flag: &str) -> anyhow::Result<Store> {
    Store::open(path)
        .map_err(crate::db::classify)
        .with_context(|| format!("{flag} {}", path.display()))
}

/// Copies `runs` and says how it went; a failure names the run and how to resume.
fn copy_runs(from: &Store, to: &mut Store, runs: &[RunSummary], verb: &str) -> anyhow::Result<()> {
    let tally = from.copy_runs(to, runs).map_err(|(i, e)| {
        crate::db::classify(e).context(format!(
            "{verb} run {} ({} of {}; rerun to resume: runs already copied are skipped)",
            runs[i].id,
            i + 1,
            runs.len()
        ))
    })?;
    errln!(
        "{verb}: {} run(s) copied to {}, {} already there{}",
        tally.new,
        to.path().display(),
        tally.already_there,
        match tally.running {
            0 => String::new(),
            n => format!(", {n} still running (not copied)"),
        }
    );
    Ok(())
}

/// The runs `ids` names, or every run matching `filter`, oldest first.
fn select(store: &Store, ids: &[RunId], filter: &RunFilter) -> anyhow::Result<Vec<RunSummary>> {
    store.select_runs(ids, filter).map_err(crate::db::classify)
}

fn push(a: PushArgs) -> anyhow::Result<ExitCode> {
    let local = open_read(&a.db)?;
    let mut shared = open_write(&crate::db::location(&a.to), "--to")?;
    let runs = select(&local, &a.runs, &RunFilter::default())?;
    copy_runs(&local, &mut shared, &runs, "push")?;
    Ok(ExitCode::SUCCESS)
}

fn pull(a: PullArgs) -> anyhow::Result<ExitCode> {
    let shared = Store::open_read_only(&crate::db::location(&a.from))
        .map_err(crate::db::classify)
        .with_context(|| format!("--from {}", dyno_store::redact(&a.from)))?;
    let runs = select(&shared, &a.runs, &a.filter.filter(None))?;
    let mut local = open_write(&a.db.path(), "--db")?;
    copy_runs(&shared, &mut local, &runs, "pull")?;
    Ok(ExitCode::SUCCESS)
}

/// Runs a `dyno results` subcommand.
pub fn run(cmd: ResultsCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        ResultsCommand::List(a) => list(a),
        ResultsCommand::Show(a) => show(a),
        ResultsCommand::Export(a) => export(a),
        ResultsCommand::Report(a) => {
            crate::run_report::write(&open_read(&a.db)?, &a.runs, &a.output)
        }
        ResultsCommand::Push(a) => push(a),
        ResultsCommand::Pull(a) => pull(a),
        ResultsCommand::Fleet(a) => fleet::run(a),
        ResultsCommand::Trend(a) => trend::run(a),
        ResultsCommand::Migrate(a) => {
            let path = a.db.path();
            open_write(&path, "results store")?;
            outln!(
                "{}: at schema version {}",
                path.display(),
                dyno_store::SCHEMA_VERSION
            )?;
            Ok(ExitCode::SUCCESS)
        }
        ResultsCommand::Delete(a) => {
            let path = a.db.path();
            let mut store = open_write(&path, "results store")?;
            store.delete_run(a.run)?;
            outln!("deleted run {}", a.run)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn render(t: &Table, format: ListFormat) -> String {
    match format {
        ListFormat::Table => TableFormat::Terminal {
            color: crate::term::color_stdout(),
        }
        .render(t),
        ListFormat::Markdown => TableFormat::Markdown.render(t),
        ListFormat::Csv => TableFormat::Csv.render(t),
        ListFormat::Json => unreachable!("JSON is rendered from the data, not the table"),
    }
}

fn list(a: ListArgs) -> anyhow::Result<ExitCode> {
    let store = open_read(&a.db)?;
    let runs = store.list_runs(&a.filter.filter(Some(a.limit)))?;
    if a.format == ListFormat::Json {
        outln!("{}", serde_json::to_string_pretty(&RunList::new(&runs))?)?;
        return Ok(ExitCode::SUCCESS);
    }
    if runs.is_empty() && a.format == ListFormat::Table {
        errln!("no runs in {}", store.path().display());
        return Ok(ExitCode::SUCCESS);
    }
    out!("{}", render(&dyno_results::list_table(&runs), a.format))?;
    Ok(ExitCode::SUCCESS)
}

fn show(a: ShowArgs) -> anyhow::Result<ExitCode> {
    let store = open_read(&a.db)?;
    let run = store.run(a.run)?;
    if a.format == ListFormat::Json {
        outln!("{}", serde_json::to_string_pretty(&RunShow::new(&run))?)?;
        return Ok(ExitCode::SUCCESS);
    }
    out!("{}", dyno_results::show_header(&run))?;
    out!("{}", render(&dyno_results::show_table(&run), a.format))?;
    Ok(ExitCode::SUCCESS)
}

fn export(a: ExportArgs) -> anyhow::Result<ExitCode> {
    if a.format == ExportKind::Parquet && !cfg!(feature = "parquet") {
        bail!(
            "--format parquet: this dyno was built without the cargo feature `parquet` \
             (on by default); rebuild with `--features parquet`"
        );
    }
    let store = open_read(&a.db)?;
    let format = match a.format {
        ExportKind::Csv => ExportFormat::Csv,
        ExportKind::Jsonl => ExportFormat::JsonLines,
        ExportKind::Parquet => ExportFormat::Parquet,
    };
    let Some(path) = a.output else {
        if a.format == ExportKind::Parquet {
            bail!("--format parquet needs --output FILE (Parquet is binary)");
        }
        let mut out = std::io::BufWriter::new(crate::out::stdout());
        store.export(&a.runs, format, &mut out)?;
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    };
    let rows = dyno_results::export_file(&store, &a.runs, format, &path)?;
    errln!("exported {rows} samples to {}", path.display());
    Ok(ExitCode::SUCCESS)
}

/// A results error as the binary reports it: as [`crate::db::classify`] does for the
/// store's errors, a failure of the store while working exits with the runtime code.
pub(crate) fn classify(e: ResultsError) -> anyhow::Error {
    match e {
        ResultsError::Store(s) => crate::db::classify(s),
        ResultsError::Run(s) if !s.is_user_error() => {
            crate::cli_error::CliError::Runtime(format!("--run: {s}")).into()
        }
        other => other.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyno_model::format_timestamp;

    #[test]
    fn dates_parse_to_utc_midnight() {
        assert_eq!(parse_date("1970-01-01"), Ok(0.0));
        assert_eq!(
            format_timestamp(parse_date("2026-11-21").unwrap()),
            "2026-11-21T00:00:00Z"
        );
        assert_eq!(
            format_timestamp(parse_date("2000-02-29").unwrap()),
            "2000-02-29T00:00:00Z"
        );
        assert!(parse_date("2026-13-01").is_err());
        assert!(parse_date("yesterday").is_err());
    }
}
