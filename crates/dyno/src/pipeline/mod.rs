//! `dyno pipeline`: run a tile layout, watch it live, serve its metrics.

pub(crate) mod bench;
mod http;
mod monitor;

use crate::db::{self, StoreArgs};
use crate::{build_info, interrupt};
use anyhow::Context as _;
use clap::{Args, Subcommand, ValueEnum};
use dyno_model::{Direction, Metric, RunInfo, RunStatus, Sample, Subject, SubjectKind, Unit};
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

/// Summary formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SummaryFormat {
    /// Lines for people.
    Table,
    /// The full summary as JSON.
    Json,
}

fn parse_seconds(s: &str) -> Result<Duration, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(Duration::from_secs_f64(v)),
        _ => Err(format!("must be a positive number of seconds, got `{s}`")),
    }
}

/// `0` (run until stopped) or a positive number of seconds.
pub(crate) fn parse_seconds_or_zero(s: &str) -> Result<Duration, String> {
    if s.parse::<f64>() == Ok(0.0) {
        return Ok(Duration::ZERO);
    }
    parse_seconds(s).map_err(|e| format!("{e} (or 0: until stopped)"))
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
    let cfg = LayoutConfig::from_file(&a.config)?;
    // Everything about the layout is checked before a thread starts or a file is made.
    let online = dyno_tango::sys::online_cpus()?;
    cfg.plan(&online)?;
    let stop = interrupt::stop_flag();
    let server = match &cfg.metrics.listen {
        Some(addr) => Some(
            http::MetricsServer::start(addr, &cfg.workspace.name, cfg.workspace.dir.clone(), None)
                .with_context(|| format!("{}: metrics.listen = \"{addr}\"", a.config.display()))?,
        ),
        None => None,
    };
    if let Some(s) = &server {
        eprintln!("metrics: http://{}/metrics", s.addr());
    }
    eprintln!(
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
        eprintln!("warning: {w}");
    }
    let run_id = save(&a, &cfg, &summary, started_at)?;
    match a.format {
        SummaryFormat::Json => println!(
            "{}",
            serde_json::to_string_pretty(&crate::json_doc::with_schema(
                "dyno.pipeline.run/1",
                &summary
            )?)?
        ),
        SummaryFormat::Table => print!("{}", text_summary(&summary, run_id)),
    }
    // Stopped by a signal: a clean stop, reported the way supervisors expect (143, 130).
    Ok(interrupt::signalled_exit_code().map_or(ExitCode::SUCCESS, ExitCode::from))
}

fn text_summary(s: &dyno_tango::RunSummary, run_id: Option<i64>) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let secs = s.elapsed_ns as f64 / 1e9;
    let _ = writeln!(
        out,
        "source: {} frags in {secs:.2} s = {:.0} frags/s, backpressured {} times",
        s.published, s.frags_per_sec, s.source_backpressure
    );
    for k in &s.sinks {
        let _ = writeln!(
            out,
            "{}: {} frags read, {} filtered, {} lost to overrun while polling, {} while reading, {} bad payloads",
            k.tile, k.frags, k.filt1, k.ovrnp, k.ovrnr, k.bad_payloads
        );
    }
    if let Some(id) = run_id {
        let _ = writeln!(out, "Saved as run {id} (dyno results show {id}).");
    }
    out
}

/// Records the run's headline numbers (one repetition) in the results store.
fn save(
    a: &RunArgs,
    cfg: &LayoutConfig,
    s: &dyno_tango::RunSummary,
    started_at: f64,
) -> anyhow::Result<Option<i64>> {
    let Some(mut store) = db::open_for_writing(&a.store)? else {
        return Ok(None);
    };
    let mut subject = Subject::new(SubjectKind::Layout, cfg.workspace.name.clone())
        .with("affinity", cfg.layout.affinity.clone())
        .with("idle", cfg.layout.idle.clone());
    for t in &cfg.layout.tiles {
        subject = subject.with(format!("{}_tile_count", t.kind), t.count.to_string());
    }
    let info = RunInfo {
        command: "pipeline".into(),
        subject,
        host: dyno_proc::host::probe(std::path::Path::new(".")),
        started_at,
        command_line: std::env::args().collect(),
        tool_version: build_info::describe(),
        settings: serde_json::json!({
            "config": a.config.display().to_string(),
            // The layout as written, so the run can be reproduced from the store alone.
            "layout_toml": std::fs::read_to_string(&a.config).unwrap_or_default(),
        }),
    };
    let rate = Metric::new(
        "frags_per_second",
        Unit::PerSecond,
        Direction::HigherIsBetter,
    );
    let lost = Metric::new("frags_lost", Unit::Count, Direction::LowerIsBetter);
    let id = store.begin_run(&info, &[rate.clone(), lost.clone()])?;
    let lost_total: u64 = s.sinks.iter().map(|k| k.ovrnp + k.ovrnr).sum();
    store.add_samples(
        id,
        &[
            Sample {
                metric: rate.name,
                repetition: 0,
                value: s.frags_per_sec,
            },
            Sample {
                metric: lost.name,
                repetition: 0,
                value: lost_total as f64,
            },
        ],
    )?;
    store.finish_run(id, RunStatus::Complete)?;
    Ok(Some(id))
}
