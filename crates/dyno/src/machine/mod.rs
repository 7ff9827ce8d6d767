//! `dyno machine`: arguments, the session in dyno-hw, the output format and the exit code.

use crate::cli_error::CliError;
use crate::db::{self, StoreArgs};
use crate::{build_info, interrupt, progress::Progress};
use anyhow::{bail, Context as _};
use clap::{Args, ValueEnum};
use dyno_hw::{
    preflight, Durations, HwError, MachineOutcome, MachineRequest, MachineRun, MetricId,
    RequirementSet, RunError,
};
use dyno_report::TableFormat;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Output formats of `dyno machine`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// A table in Substrate's layout, for people.
    Table,
    /// One JSON document with every raw repetition (fields documented in docs/machine.md).
    Json,
    /// One row per metric, numbers at full precision.
    Csv,
    /// The table as Markdown, for reports and issues.
    Markdown,
}

/// Arguments of `dyno machine`.
#[derive(Debug, Args)]
pub struct MachineArgs {
    /// Time limit of each BLAKE2-256 benchmark, in seconds.
    #[arg(long, default_value = "5", value_name = "SECONDS", value_parser = parse_seconds, allow_negative_numbers = true)]
    pub hash_duration: Duration,
    /// Time limit of the SR25519 verification benchmark, in seconds.
    #[arg(long, default_value = "5", value_name = "SECONDS", value_parser = parse_seconds, allow_negative_numbers = true)]
    pub verify_duration: Duration,
    /// Time limit of the memory copy benchmark, in seconds.
    #[arg(long, default_value = "5", value_name = "SECONDS", value_parser = parse_seconds, allow_negative_numbers = true)]
    pub memory_duration: Duration,
    /// Time limit of each disk benchmark, in seconds.
    #[arg(long, default_value = "5", value_name = "SECONDS", value_parser = parse_seconds, allow_negative_numbers = true)]
    pub disk_duration: Duration,
    /// Time limit of each extra metric (Ed25519, SHA-256 chain, all-core copy), in seconds.
    #[arg(long, default_value = "1", value_name = "SECONDS", value_parser = parse_seconds, allow_negative_numbers = true)]
    pub extra_duration: Duration,
    /// Directory for the disk benchmarks' temporary files: put it on the node's database disk.
    #[arg(short = 'd', long, default_value = ".", value_name = "DIR")]
    pub base_path: PathBuf,
    /// Fault tolerance in percent: a score passes at (100 - tolerance)% of its minimum.
    #[arg(long, default_value = "10", value_name = "PERCENT", value_parser = parse_tolerance, allow_negative_numbers = true)]
    pub tolerance: f64,
    /// Exit 0 even when requirements are not met.
    #[arg(long)]
    pub allow_fail: bool,
    /// Repeat every metric N times (interleaved) and judge the median; shows the 95% CI and CV.
    #[arg(long, default_value = "1", value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: u32,
    /// Measure only these metrics (comma-separated; as the table prints them or as
    /// requirement files spell them, any case: "Seq Write", seq-write, DiskSeqWrite).
    #[arg(long, value_name = "METRIC", value_delimiter = ',', value_parser = parse_metric)]
    pub only: Vec<MetricId>,
    /// Skip these metrics (comma-separated names).
    #[arg(long, value_name = "METRIC", value_delimiter = ',', value_parser = parse_metric)]
    pub skip: Vec<MetricId>,
    /// Measure only Substrate's six metrics (no dyno extras).
    #[arg(long)]
    pub substrate_only: bool,
    /// Built-in requirement set: substrate (current reference hardware), substrate-2023-02, substrate-2022.
    #[arg(
        long,
        value_name = "NAME",
        default_value = "substrate",
        conflicts_with = "requirements"
    )]
    pub reference: String,
    /// Requirements file: Substrate's reference_hardware.json format, or dyno's TOML format (*.toml).
    #[arg(long, value_name = "FILE")]
    pub requirements: Option<PathBuf>,
    /// Judge against the built-in requirement set of this chain, as Substrate's --chain
    /// (polkadot, kusama, westend, paseo, rococo, their -dev/-local variants, dev, local).
    #[arg(long, value_name = "NAME", conflicts_with_all = ["requirements", "reference", "dev"])]
    pub chain: Option<String>,
    /// Substrate's development chain: the same as --chain dev.
    #[arg(long, conflicts_with_all = ["requirements", "reference"])]
    pub dev: bool,
    /// Threads of BLAKE2-256-Parallel (default: the requirement's num_cores, else 8 as upstream).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=dyno_hw::requirements::MAX_PARALLEL_CORES as i64))]
    pub parallel_cores: Option<u32>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    #[command(flatten)]
    pub store: StoreArgs,
}

fn parse_seconds(s: &str) -> Result<Duration, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number of seconds"))?;
    if !v.is_finite() || v <= 0.0 {
        return Err(format!("must be a positive number of seconds, got {s}"));
    }
    if v > 86_400.0 {
        return Err(format!("{s} seconds is more than a day"));
    }
    Ok(Duration::from_secs_f64(v))
}

fn parse_tolerance(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number"))?;
    if !(0.0..=100.0).contains(&v) {
        return Err(format!("must be within 0..=100 percent, got {s}"));
    }
    Ok(v)
}

fn parse_metric(s: &str) -> Result<MetricId, String> {
    MetricId::parse(s).ok_or_else(|| {
        format!(
            "unknown metric `{s}`; known metrics: {}",
            MetricId::ALL.map(|m| m.spellings()).join(", ")
        )
    })
}

/// Runs `dyno machine`.
pub fn run(args: MachineArgs) -> anyhow::Result<ExitCode> {
    let debug_build = build_info::guard()?;
    let requirements = requirement_set(&args)?;
    let metrics = MetricId::select(&args.only, &args.skip, args.substrate_only);
    if metrics.is_empty() {
        bail!("--only/--skip leave no metric to measure");
    }
    let measures_disk = metrics.iter().any(|m| m.is_disk());
    if measures_disk {
        preflight::check_base_path(&args.base_path)?;
    }
    // A run killed outright left its 64 MiB files; nobody holds them, so they go now.
    for left in dyno_hw::clear_leftovers(&args.base_path) {
        errln!(
            "note: removed {}, left by a dyno machine that was killed",
            left.display()
        );
    }
    let parallel_cores = args
        .parallel_cores
        .map(|n| n as usize)
        .unwrap_or_else(|| requirements.parallel_cores());

    let host = dyno_proc::host::probe(&args.base_path);
    let busy = dyno_proc::host::cpu_busy_fraction(Duration::from_millis(300));
    let parallel = metrics
        .contains(&MetricId::Blake2256Parallel)
        .then_some(parallel_cores);
    let mut warnings: Vec<String> = preflight::warnings(&host, measures_disk, parallel, busy)
        .iter()
        .map(ToString::to_string)
        .collect();
    if debug_build {
        warnings.insert(
            0,
            format!(
                "DEBUG BUILD ({} set): scores are meaningless",
                build_info::ALLOW_DEBUG_ENV
            ),
        );
    }
    if args.format == Format::Table {
        out!(
            "{}",
            dyno_hw::host_block(&host, &args.base_path, &build_info::describe())
        )?;
    }
    for w in &warnings {
        errln!("warning: {w}");
    }

    let request = MachineRequest {
        metrics,
        durations: Durations {
            hash: args.hash_duration,
            verify: args.verify_duration,
            memory: args.memory_duration,
            disk: args.disk_duration,
            extra: args.extra_duration,
        },
        base_path: args.base_path.clone(),
        parallel_cores,
        repeat: args.repeat,
        tolerance: args.tolerance,
        chain: chain(&args).map(str::to_string),
    };
    let mut store = db::open_for_writing(&args.store)?;
    let progress = Progress::new(u64::from(args.repeat) * request.metrics.len() as u64);
    let run = MachineRun {
        request: &request,
        requirements: &requirements,
        host,
        warnings,
        build: (build_info::json(), debug_build),
        command_line: std::env::args().collect(),
        tool_version: build_info::describe(),
    };
    let outcome = run.measure(store.as_mut(), interrupt::stop_flag(), &mut &progress);
    progress.finish();
    let outcome = outcome.map_err(|e| match e {
        RunError::Store(e) => e.into(),
        RunError::Stopped { source, kept } => {
            let kept = kept
                .map(|id| format!(" (samples measured so far are kept in run {id})"))
                .unwrap_or_default();
            stopped(source).context(format!("dyno machine stopped{kept}"))
        }
    })?;
    let ok = outcome.verdict.meets_requirements();
    out!("{}", render(&outcome, args.format))?;
    Ok(if ok || args.allow_fail {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The chain named by `--chain` or `--dev`, as typed.
fn chain(args: &MachineArgs) -> Option<&str> {
    args.chain.as_deref().or(args.dev.then_some("dev"))
}

/// The requirement set the flags choose. A chain's set is announced on stderr, so that
/// nobody mistakes a built-in set for the chain's own file.
fn requirement_set(args: &MachineArgs) -> anyhow::Result<RequirementSet> {
    if let Some(chain) = chain(args) {
        let flag = if args.dev {
            "--dev".to_string()
        } else {
            format!("--chain {chain}")
        };
        let (set, requirements) =
            RequirementSet::for_chain(chain).map_err(|e| anyhow::anyhow!("--chain: {e}"))?;
        errln!(
            "{flag}: judging against the built-in requirement set `{set}` (polkadot-sdk's reference_hardware.json, which this chain's nodes check at start-up)"
        );
        return Ok(requirements);
    }
    Ok(match &args.requirements {
        Some(path) => RequirementSet::load(path)?,
        None => RequirementSet::builtin(&args.reference).context("--reference")?,
    })
}

/// The finished run in the format asked for.
fn render(outcome: &MachineOutcome, format: Format) -> String {
    match format {
        Format::Table => outcome.text(crate::term::table_format()),
        Format::Markdown => outcome.text(TableFormat::Markdown),
        Format::Csv => outcome.text(TableFormat::Csv),
        Format::Json => {
            serde_json::to_string_pretty(&outcome.report()).expect("JSON values serialise") + "\n"
        }
    }
}

/// A session error as the binary reports it: an interruption exits with the signal's
/// code and keeps what was measured.
fn stopped(e: HwError) -> anyhow::Error {
    match e {
        HwError::Step { label, source } if matches!(*source, HwError::Interrupted) => {
            CliError::Interrupted(format!("while measuring {label}")).into()
        }
        other => other.into(),
    }
}

impl dyno_hw::StepProgress for &Progress {
    fn step(&mut self, label: &str, remaining: Duration) {
        Progress::step(self, label, remaining);
    }

    fn done(&mut self) {
        self.done_one();
    }
}
