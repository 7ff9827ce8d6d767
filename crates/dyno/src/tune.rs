//! `dyno tune`: study files, building variants, racing them, and the report.

use crate::cli_error::CliError;
use crate::progress::Progress;
use crate::{build_info, db, interrupt};
use anyhow::{bail, Context as _};
use clap::{Args, Subcommand, ValueEnum};
use dyno_report::{write_atomic, TableFormat};
use dyno_store::Store;
use dyno_tune::build::BuildEvent;
use dyno_tune::race::JobEvent;
use dyno_tune::session::{
    build_lineup, build_requests, full_report, outcome_line, stored_report, Lineup, RaceRequest,
    RunOverrides,
};
use dyno_tune::{check_environment, Mode, StopReason, Study};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Subcommands of `dyno tune`.
#[derive(Debug, Subcommand)]
pub enum TuneCommand {
    /// Write a commented example study file (never overwrites).
    Init {
        /// Where to write it.
        #[arg(default_value = "dyno-tune.toml")]
        path: PathBuf,
    },
    /// Validate a study file and list its variants and build commands, without building.
    Check(StudyArgs),
    /// Build the variants and race them (resumes an interrupted study).
    Run(RunArgs),
    /// Report a study from the results store: tables, Pareto sets, recommended profile.
    Report(ReportArgs),
}

/// The study file and the store.
#[derive(Debug, Args)]
pub struct StudyArgs {
    /// The study file (TOML; `dyno tune init` writes an example).
    pub study: PathBuf,
    #[command(flatten)]
    pub db: db::DbArg,
}

/// Arguments of `dyno tune run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub study: StudyArgs,
    /// Run every variant every round (no elimination), for comparison with racing.
    #[arg(long)]
    pub exhaustive: bool,
    /// Most rounds (overrides [run] max_rounds).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=i64::from(dyno_tune::MAX_ROUNDS)))]
    pub max_rounds: Option<u32>,
    /// No new round starts after this much benchmark time (e.g. 90s, 30m, 2h).
    #[arg(long, value_name = "DURATION", value_parser = parse_budget)]
    pub time_budget: Option<f64>,
    /// Parallel builds (overrides [run] jobs).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=i64::from(dyno_tune::MAX_JOBS)))]
    pub jobs: Option<u32>,
    /// Build only; do not measure.
    #[arg(long)]
    pub build_only: bool,
}

/// Report formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Boxed tables for the terminal.
    Table,
    /// Markdown tables, for documents.
    Markdown,
    /// CSV tables.
    Csv,
    /// One JSON document (schema `dyno.tune.report/1`; see dyno-tune's README).
    Json,
}

/// Arguments of `dyno tune report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    #[command(flatten)]
    pub study: StudyArgs,
    /// Also write a self-contained HTML report with box plots.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Output format (json: the whole report as one document, schema dyno.tune.report/1).
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// The machine whose race to report, by host name, when the store holds the study
    /// from several (a fleet store). Default: this machine, or the only one.
    #[arg(long, value_name = "HOSTNAME")]
    pub host: Option<String>,
}

fn parse_budget(s: &str) -> Result<f64, String> {
    dyno_tune::parse_duration(s)
        .ok_or_else(|| format!("{s:?} is not a duration (e.g. 90s, 30m, 2h)"))
}

/// Runs a `dyno tune` subcommand.
pub fn run(cmd: TuneCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        TuneCommand::Init { path } => {
            let chosen = dyno_tune::init(&path)?;
            outln!("{}", dyno_tune::init_next_steps(&path, chosen.as_ref()))?;
            Ok(ExitCode::SUCCESS)
        }
        TuneCommand::Check(args) => check(&args),
        TuneCommand::Run(args) => run_study(&args),
        TuneCommand::Report(args) => report(&args),
    }
}

fn load(path: &std::path::Path) -> anyhow::Result<Study> {
    Ok(Study::load(path)?)
}

fn check(args: &StudyArgs) -> anyhow::Result<ExitCode> {
    let study = load(&args.study)?;
    check_environment(&study)?;
    out!("{}", dyno_tune::session::plan_text(&args.study, &study))?;
    Ok(ExitCode::SUCCESS)
}

fn open_store(db: &db::DbArg) -> anyhow::Result<Store> {
    let path = db.path();
    Store::open(&path).with_context(|| format!("results store {} (use --db PATH)", path.display()))
}

/// Builds every variant (reusing unchanged ones) and lines up those that built.
fn build_variants(study: &Study, root: &std::path::Path) -> anyhow::Result<Lineup> {
    let total = build_requests(study).len();
    errln!(
        "building {total} variants ({} at a time) into {}",
        study.run.jobs,
        study.work_dir().display()
    );
    let done = AtomicUsize::new(0);
    let built = build_lineup(study, root, interrupt::stop_flag(), &|e| match e {
        BuildEvent::Started { label } => errln!("  build {label} ..."),
        BuildEvent::Finished { label, outcome } => {
            let n = done.fetch_add(1, Ordering::SeqCst) + 1;
            errln!("  [{n}/{total}] {label}: {}", outcome_line(&outcome));
        }
    })?;
    built.ok_or_else(|| {
        CliError::Interrupted("builds stopped; `dyno tune run` resumes".into()).into()
    })
}

/// What the race shows while it runs: on a terminal one progress line (at most
/// max_rounds rounds of every subject and benchmark; racing usually ends sooner);
/// otherwise a line per finished round, and with DYNO_TUNE_VERBOSE a line per job.
struct RaceProgress {
    bar: Option<Progress>,
    log_each_job: bool,
    per_round: usize,
    max_rounds: u32,
    started: Instant,
    done: u32,
}

impl RaceProgress {
    fn new(per_round: usize, max_rounds: u32) -> RaceProgress {
        RaceProgress {
            bar: std::io::stderr()
                .is_terminal()
                .then(|| Progress::new((per_round as u64) * u64::from(max_rounds))),
            log_each_job: std::env::var_os("DYNO_TUNE_VERBOSE").is_some(),
            per_round,
            max_rounds,
            started: Instant::now(),
            done: 0,
        }
    }

    fn job(&mut self, e: &JobEvent) {
        let mark = if e.failed { "  FAILED" } else { "" };
        match &self.bar {
            Some(bar) => {
                self.done += 1;
                let per_job = self.started.elapsed() / self.done;
                // An upper bound: racing usually stops before max_rounds.
                let rounds_left = self.max_rounds.saturating_sub(e.round) as usize;
                let jobs_left = rounds_left * self.per_round + e.left_in_round;
                bar.step(
                    &format!("round {} {} {}{mark}", e.round, e.label, e.benchmark),
                    per_job * u32::try_from(jobs_left).unwrap_or(u32::MAX),
                );
                bar.done_one();
            }
            None if self.log_each_job => errln!(
                "  round {} {} {} ({} left in round){mark}",
                e.round,
                e.label,
                e.benchmark,
                e.left_in_round
            ),
            None => {
                if e.left_in_round == 0 {
                    errln!(
                        "  round {} done ({:.0} s since the start)",
                        e.round,
                        self.started.elapsed().as_secs_f64()
                    );
                }
                if e.failed {
                    errln!("  round {} {} {}{mark}", e.round, e.label, e.benchmark);
                }
            }
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish();
        }
    }
}

fn run_study(args: &RunArgs) -> anyhow::Result<ExitCode> {
    let mut study = load(&args.study.study)?;
    RunOverrides {
        max_rounds: args.max_rounds,
        time_budget_s: args.time_budget,
        jobs: args.jobs.map(|j| j as usize),
    }
    .apply(&mut study);
    let root = check_environment(&study)?;
    let lineup = build_variants(&study, &root)?;
    for (v, _) in &lineup.failed {
        errln!(
            "warning: variant {} did not build; the study goes on without it",
            v.label
        );
    }
    if !lineup.contestants.iter().any(|c| !c.baseline) {
        bail!(
            "no variant of {} built; see the errors above",
            args.study.study.display()
        );
    }
    if args.build_only {
        outln!(
            "{} variants built, {} failed",
            lineup.contestants.iter().filter(|c| !c.baseline).count(),
            lineup.failed.len()
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(busy) = dyno_proc::host::cpu_busy_fraction(Duration::from_millis(300)) {
        if busy > 0.15 {
            errln!("warning: the CPU is {:.0}% busy before the first round; other work will add noise to every sample", busy * 100.0);
        }
    }
    let mode = if args.exhaustive {
        Mode::Exhaustive
    } else {
        Mode::Racing
    };
    let mut store = open_store(&args.study.db)?;
    let per_round = lineup.contestants.len() * study.benchmarks.len();
    let mut progress = RaceProgress::new(per_round, study.run.max_rounds);
    let request = RaceRequest {
        study: &study,
        path: &args.study.study.display().to_string(),
        mode,
        build: build_info::json(),
        command_line: std::env::args().collect(),
        tool_version: env!("CARGO_PKG_VERSION"),
    };
    let stop = interrupt::stop_flag();
    let raced = request.run(&lineup.contestants, &mut store, stop, &mut |e| {
        progress.job(e)
    });
    progress.finish();
    let (outcome, hostname) = raced?;
    errln!(
        "{} benchmark runs this session; race over: {}",
        outcome.jobs_run,
        outcome.stop.describe()
    );
    if outcome.stop == StopReason::Interrupted {
        return Err(CliError::Interrupted(
            "samples so far are stored; `dyno tune run` resumes".into(),
        )
        .into());
    }
    let report = full_report(&study, &mut store, &hostname, args.exhaustive)?;
    print_report(&report, Format::Table, &args.study.study)?;
    Ok(ExitCode::SUCCESS)
}

fn print_report(
    report: &dyno_tune::report::StudyReport,
    format: Format,
    study: &std::path::Path,
) -> std::io::Result<()> {
    let f = match format {
        Format::Table => crate::term::table_format(),
        Format::Markdown => TableFormat::Markdown,
        Format::Csv => TableFormat::Csv,
        Format::Json => {
            let doc = report.json(&study.display().to_string(), dyno_model::now_unix());
            outln!(
                "{}",
                serde_json::to_string_pretty(&doc).expect("a JSON value serializes")
            )?;
            return Ok(());
        }
    };
    out!("{}", report.text(f))
}

fn report(args: &ReportArgs) -> anyhow::Result<ExitCode> {
    let study = load(&args.study.study)?;
    let path = args.study.db.path();
    let mut store =
        Store::open(&path).with_context(|| format!("results store {}", path.display()))?;
    let here = dyno_proc::procfs::hostname().unwrap_or_default();
    let report = stored_report(&study, &mut store, args.host.as_deref(), &here)?;
    print_report(&report, args.format, &args.study.study)?;
    if let Some(html) = &args.html {
        write_atomic(
            html,
            report
                .html(&args.study.study.display().to_string())
                .as_bytes(),
        )?;
        errln!("wrote {}", html.display());
    }
    Ok(ExitCode::SUCCESS)
}
