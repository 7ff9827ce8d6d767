//! `dyno pipeline`: run a tile layout, watch it live, serve its metrics.

mod bench;
mod monitor;

use crate::cli::{parse_seconds, SummaryFormat};
use crate::db::{self, StoreArgs};
use crate::leader::{clear_dead_workspaces, serve_metrics};
use crate::{build_info, interrupt};
use clap::{Args, Subcommand};
use dyno_pipeline::LayoutInvocation;
use dyno_tango::LayoutConfig;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// `dyno pipeline` subcommands.
#[derive(Debug, Subcommand)]
pub enum PipelineCommand {
    /// Run a layout from a config file until Ctrl-C, --duration, or its frag count.
    Run(RunArgs),
    /// Watch a running pipeline from another terminal (q quits).
    Monitor(monitor::MonitorArgs),
    /// Benchmark the reference leader pipeline (verify, dedup, pack, bank, poh, store) under load and name its bottleneck.
    Bench(bench::BenchArgs),
}

/// Arguments of `dyno pipeline run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Layout file (TOML); see examples/pipeline/two-tile.toml.
    #[arg(long, value_name = "FILE")]
    config: PathBuf,
    /// Stop after this many seconds.
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds)]
    duration: Option<Duration>,
    /// Output format of the summary.
    #[arg(long, value_enum, default_value = "table")]
    format: SummaryFormat,
    #[command(flatten)]
    store: StoreArgs,
}

/// Runs a `dyno pipeline` subcommand.
pub fn run(cmd: PipelineCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        PipelineCommand::Run(a) => run_layout(a),
        PipelineCommand::Monitor(a) => monitor::run(a),
        PipelineCommand::Bench(a) => bench::run(a),
    }
}

fn run_layout(a: RunArgs) -> anyhow::Result<ExitCode> {
    let cfg = LayoutConfig::synthetic_from_file(&a.config)?;
    // Everything about the layout is checked before a thread starts or a file is made.
    let online = dyno_tango::sys::online_cpus()?;
    cfg.plan(&online)?;
    let stop = interrupt::stop_flag();
    clear_dead_workspaces(cfg.workspace.dir.as_deref());
    let server = match &cfg.metrics.listen {
        Some(addr) => Some(serve_metrics(
            addr,
            &cfg.workspace,
            None,
            &a.config.display().to_string(),
        )?),
        None => None,
    };
    errln!(
        "running {} tiles in workspace `{}`; watch with: dyno pipeline monitor --name {}",
        cfg.tile_names().len(),
        cfg.workspace.name,
        cfg.workspace.name
    );
    if let Some(d) = a.duration {
        std::thread::spawn(move || {
            std::thread::sleep(d);
            stop.store(true, Ordering::SeqCst);
        });
    }
    let started_at = dyno_model::now_unix();
    let summary = dyno_tango::run_synthetic(&cfg, stop)?;
    drop(server);
    for w in &summary.warnings {
        errln!("warning: {w}");
    }
    let run_id = save(&a, &cfg, &summary, started_at)?;
    match a.format {
        SummaryFormat::Json => outln!(
            "{}",
            serde_json::to_string_pretty(&crate::json_doc::with_schema(
                "dyno.pipeline.run/1",
                &summary
            )?)?
        )?,
        SummaryFormat::Table => out!("{}", dyno_pipeline::layout_summary_text(&summary, run_id))?,
    }
    // Stopped by a signal: a clean stop, reported the way supervisors expect (143, 130).
    Ok(interrupt::signalled_exit_code().map_or(ExitCode::SUCCESS, ExitCode::from))
}

/// Records the run's headline numbers in the results store, unless `--no-save`.
fn save(
    a: &RunArgs,
    cfg: &LayoutConfig,
    s: &dyno_tango::RunSummary,
    started_at: f64,
) -> anyhow::Result<Option<i64>> {
    let Some(mut store) = db::open_for_writing(&a.store)? else {
        return Ok(None);
    };
    let invocation = LayoutInvocation {
        config: &a.config,
        started_at,
        command_line: std::env::args().collect(),
        tool_version: build_info::describe(),
        host: dyno_proc::host::probe(std::path::Path::new(".")),
    };
    Ok(Some(dyno_pipeline::store_layout_run(
        &mut store, cfg, s, invocation,
    )?))
}
