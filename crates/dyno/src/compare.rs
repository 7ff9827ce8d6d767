//! `dyno compare`: run releases under fixed workloads, judge every metric, report.

use crate::cli_error::CliError;
use crate::db::{self, StoreArgs};
use crate::{build_info, progress::Progress};
use anyhow::Context as _;
use clap::{Args, Subcommand, ValueEnum};
use dyno_compare::runner::Ending;
use dyno_compare::session::{self, CompareSession, Event};
use dyno_compare::{cluster_run, ComparisonFile};
use dyno_judge::judged::{JudgeRequest, Judged, PowerError};
use dyno_judge::{record, report, TestKind};
use dyno_report::{write_atomic, TableFormat};
use dyno_store::{RunId, Store};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

/// Arguments of `dyno compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    #[command(subcommand)]
    command: CompareCommand,
}

#[derive(Debug, Subcommand)]
enum CompareCommand {
    /// Run a comparison file: every subject under every workload, interleaved, N rounds.
    Run(RunArgs),
    /// Re-report a stored comparison (any run id of it is enough).
    Report(ReportArgs),
    /// What a stored comparison could see: its rounds split into disjoint trials, each
    /// candidate judged alone in each (how often each change was flagged), and over all
    /// rounds the noise of every primary metric (per-round sd, lag-1 autocorrelation,
    /// within- and between-round variance) with the rounds a 5% change needs.
    Power(PowerArgs),
    /// The commit(s) behind a change between two revisions of the file's git subject:
    /// confirm the change, then bisect the commits between, each step decided by a
    /// sequential test (docs/bisect.md).
    Bisect(crate::bisect::BisectArgs),
}

#[derive(Debug, Args)]
struct RunArgs {
    /// Comparison file (TOML); see examples/compare/reference-node.toml.
    file: PathBuf,
    /// Rounds (overrides `rounds` in the file; at most 10000).
    #[arg(long, value_name = "N", value_parser = rounds_flag)]
    rounds: Option<u32>,
    /// Run only this workload (repeatable).
    #[arg(long, value_name = "NAME")]
    workload: Vec<String>,
    /// Where `git` subjects are extracted and built (default: ~/.cache/dyno/builds, shared
    /// with `dyno compare bisect`).
    #[arg(long, value_name = "DIR")]
    build_dir: Option<PathBuf>,
    /// Start a new comparison even when an interrupted one of this file (same contents,
    /// seed and options) is stored; by default it is continued.
    #[arg(long)]
    fresh: bool,
    /// Add rounds until every primary metric's minimum detectable change is at most
    /// this (`5%`), a change is flagged or the budget ends; judged by the sequential test
    /// (overrides `precision` in the file; docs/compare.md).
    #[arg(long, value_name = "PCT")]
    precision: Option<String>,
    /// Rounds at most with a precision target (default 100, or the file's `max_rounds`).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(2..))]
    max_rounds: Option<u32>,
    /// Minutes at most with a precision target, every session of the comparison together
    /// (default 60, or the file's `max_minutes`).
    #[arg(long, value_name = "MIN")]
    max_minutes: Option<f64>,
    /// `interleaved`: one subject at a time, in an order shuffled every round;
    /// `side_by_side`: every subject at once, each under its own copy of the workload, their
    /// windows opening and closing together (overrides `schedule` in the file; default
    /// interleaved; docs/compare.md).
    #[arg(long, value_name = "SCHEDULE")]
    schedule: Option<String>,
    #[command(flatten)]
    out: OutputArgs,
    #[command(flatten)]
    store: StoreArgs,
}

#[derive(Debug, Args)]
struct ReportArgs {
    /// Run ids of the comparison (from `dyno compare run` or `dyno results list`).
    #[arg(required = true, value_name = "RUN")]
    runs: Vec<RunId>,
    /// Judge only rounds A to B-1 (zero-based, e.g. `0..10`): a trial of a longer
    /// comparison, for power studies.
    #[arg(long, value_name = "A..B", value_parser = parse_round_range)]
    rounds: Option<std::ops::Range<u32>>,
    /// Judge only this candidate against the baseline (repeatable): Holm's correction then
    /// covers its metrics alone, as in a comparison of two releases. Default: every
    /// candidate, in one family.
    #[arg(long = "candidate", value_name = "NAME")]
    candidates: Vec<String>,
    #[command(flatten)]
    out: OutputArgs,
    #[command(flatten)]
    db: db::DbArg,
}

#[derive(Debug, Args)]
struct OutputArgs {
    /// Exit 1 when any metric regressed.
    #[arg(long)]
    fail_on_regression: bool,
    /// Write the HTML report here.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Format of the verdict table.
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
    /// `paired`: per-round ratios candidate/baseline, t-test on their logs (noise common
    /// to a round cancels); `signed-rank`: the same ratios, exact Wilcoxon test (needs
    /// more rounds); `unpaired`: the rounds as two samples, Mann-Whitney. Default: the
    /// comparison file's `test`, else paired.
    #[arg(long, value_name = "TEST", value_parser = parse_test)]
    test: Option<TestKind>,
    /// Judge this metric as primary (repeatable): the primary metrics are Holm's family
    /// and the verdict (`--fail-on-regression`); the others are reported as secondary, in
    /// a family of their own. Default: the comparison file's `primary`, else dyno's own
    /// cost and service measurements (CPU, memory, ready_s, cost per unit of work, the
    /// load's rates and latencies; docs/compare.md). `--primary '*'`: every metric.
    #[arg(long = "primary", value_name = "METRIC")]
    primary: Vec<String>,
    /// List every secondary metric's verdict in the table (and each workload's
    /// per-stage block timings); without it the report shows the primary metrics and
    /// sums the secondary ones up in a line. CSV and JSON always hold every verdict.
    #[arg(long)]
    secondary: bool,
}

fn parse_test(s: &str) -> Result<TestKind, String> {
    TestKind::parse(s)
        .ok_or_else(|| format!("`{s}`: expected paired, signed-rank, unpaired or sequential"))
}

#[derive(Debug, Args)]
struct PowerArgs {
    /// A run id of the comparison.
    #[arg(value_name = "RUN")]
    run: RunId,
    /// Rounds per trial.
    #[arg(long, value_name = "T", default_value_t = 10, value_parser = clap::value_parser!(u32).range(2..))]
    trial_rounds: u32,
    /// The test of every trial (default: the comparison's).
    #[arg(long, value_name = "TEST", value_parser = parse_test)]
    test: Option<TestKind>,
    /// Judge with this primary metric (repeatable; default: the comparison's).
    #[arg(long = "primary", value_name = "METRIC")]
    primary: Vec<String>,
    /// `table` or `json`.
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
    #[command(flatten)]
    db: db::DbArg,
}

/// `--rounds`: a count within the rounds a comparison file may ask for.
fn rounds_flag(s: &str) -> Result<u32, String> {
    let n: i64 = s
        .parse()
        .map_err(|_| format!("`{s}` is not a number of rounds"))?;
    dyno_compare::bounds::count(n, &dyno_compare::bounds::ROUNDS, "rounds")
}

fn parse_round_range(s: &str) -> Result<std::ops::Range<u32>, String> {
    let bad = || format!("`{s}`: expected A..B with A < B, rounds counted from 0");
    let (a, b) = s.split_once("..").ok_or_else(bad)?;
    let (a, b): (u32, u32) = (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
    if a >= b {
        return Err(bad());
    }
    Ok(a..b)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    /// A table for people, with observations and notes.
    Table,
    /// A GitHub Markdown table.
    Markdown,
    /// RFC 4180 CSV.
    Csv,
    /// Verdicts as JSON (see `dyno_judge::report::verdicts_json` for the fields).
    Json,
}

/// Runs a `dyno compare` subcommand.
pub fn run(args: CompareArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        CompareCommand::Run(a) => run_file(a),
        CompareCommand::Report(a) => report_runs(a),
        CompareCommand::Power(a) => power(a),
        CompareCommand::Bisect(a) => crate::bisect::run(a),
    }
}

/// Ctrl-C or SIGTERM stops the node under test and ends the comparison after storing
/// what was done. Unlike other commands, a second signal does not exit at once: that
/// would orphan the node, and stopping it takes at most the grace period.
fn stop_flag() -> &'static AtomicBool {
    crate::interrupt::stop_flag_keep_stopping()
}

fn run_file(a: RunArgs) -> anyhow::Result<ExitCode> {
    crate::term::check_output("--html", a.out.html.as_deref())?;
    let mut cfg = ComparisonFile::from_file(&a.file)?;
    cfg.select_workloads(&a.workload, &a.file)?;
    let dyno = std::env::current_exe().context("locating the dyno executable")?;
    cluster_run::check_clusters(&cfg, &a.file, &dyno)?;
    cfg.apply_run_flags(
        a.precision.as_deref(),
        a.max_rounds,
        a.max_minutes,
        a.rounds,
    )
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    cfg.apply_schedule(a.schedule.as_deref())
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let cache = a
        .build_dir
        .clone()
        .unwrap_or_else(dyno_compare::gitbuild::default_cache);
    let builds = dyno_build::BuildCache::new(&cache);
    dyno_compare::gitbuild::build_all(&mut cfg, &builds, stop_flag(), |subject, rev, commit| {
        errln!(
            "building `{subject}` at {rev} ({commit}) in {}",
            cache.display()
        );
    })
    .map_err(crate::bisect::build_error)?;
    let mut store = db::open_for_writing(&a.store)?;
    let tool = build_info::describe();
    let mut shown = Shown::new(&a.file);
    let mut session = CompareSession::begin(
        cfg,
        &a.file,
        store.as_ref(),
        a.fresh,
        tool.clone(),
        &mut |e| shown.event(e),
    )?;
    let mut executor = session::executor_for(session.file(), dyno)
        .context("creating the clusters' run directory")?;
    let outcome = session.run(
        store.as_mut(),
        executor.as_mut(),
        stop_flag(),
        &a.out.primary,
        &mut |e| shown.event(e),
    )?;
    shown.finish();
    let command_line = std::env::args().collect::<Vec<_>>().join(" ");
    let params = outcome.parameters(command_line, &tool);
    if let Some(share) = outcome.own_cpu_share() {
        errln!("dyno's own CPU use while comparing: {share}");
    }
    if let (Some((first, last)), Some(s)) = (outcome.stored_runs(), store.as_ref()) {
        errln!(
            "Stored as runs {first}..{last} in {}; re-report with: dyno compare report {first} --html report.html",
            s.path().display()
        );
    }
    let judged = outcome.measured().judge(&a.out.request(None), params)?;
    let code = show(&judged, &a.out)?;
    match outcome.ending {
        Ending::Finished | Ending::Decided(_) | Ending::Ruled(_) => match unmeasured(&outcome) {
            Some(what) => Err(CliError::Runtime(what).into()),
            None => Ok(code),
        },
        Ending::Interrupted => Err(CliError::Interrupted(interrupted_summary(
            &outcome,
            store.is_some(),
        ))
        .into()),
        Ending::GaveUp {
            subject,
            in_a_row,
            reason,
        } => Err(CliError::Runtime(format!(
            "subject `{subject}` failed {in_a_row} times in a row (last: {reason}); the comparison stopped (on_failure), the runs done are kept"
        ))
        .into()),
    }
}

/// A subject that ran a workload and never completed it leaves that workload with
/// nothing to judge: the comparison failed, however empty its table (exit 3). Says the
/// first such subject and workload with its last failure.
/// What an interrupted comparison kept: the executions done (complete or failed: each
/// stands for its slot), and apart from them the ones Ctrl-C cut short, which are stored
/// as incomplete with what they sampled and run again by the next session.
fn interrupted_summary(outcome: &session::CompareOutcome, stored: bool) -> String {
    use dyno_compare::execution::Outcome;
    // Ctrl-C ends the session, so this session's cut-short executions are the last ones.
    let cut: Vec<String> = outcome
        .executions
        .iter()
        .rev()
        .take_while(|e| e.outcome == Outcome::Interrupted)
        .map(|e| format!("{} / {} round {}", e.subject, e.workload, e.round + 1))
        .collect();
    let mut line = format!(
        "{} of {} executions done and kept",
        outcome.done, outcome.planned
    );
    if !cut.is_empty() {
        let (n, kept) = (
            cut.len(),
            if stored { ", stored as incomplete" } else { "" },
        );
        let which = cut.into_iter().rev().collect::<Vec<_>>().join(", ");
        let s = if n == 1 { "" } else { "s" };
        line.push_str(&format!(
            " ({n} execution{s} cut short, not counted{kept}: {which})"
        ));
    }
    line + "; run the same command again to continue"
}

fn unmeasured(outcome: &session::CompareOutcome) -> Option<String> {
    use dyno_compare::execution::Outcome;
    for workload in &outcome.meta.workloads {
        for subject in &outcome.meta.subjects {
            let ran: Vec<_> = outcome
                .executions
                .iter()
                .filter(|e| &e.subject == subject && &e.workload == workload)
                .collect();
            if ran.is_empty() || ran.iter().any(|e| e.outcome == Outcome::Complete) {
                continue;
            }
            let last = ran.iter().rev().find_map(|e| match &e.outcome {
                Outcome::Failed { reason, .. } => Some(reason.as_str()),
                _ => None,
            });
            return Some(format!(
                "subject `{subject}` completed none of its {} executions of workload `{workload}`{}: there is nothing to compare it with",
                ran.len(),
                last.map(|r| format!(" (last: {r})")).unwrap_or_default()
            ));
        }
    }
    None
}

/// The session's events on stderr: progress, what is continued, warnings.
struct Shown {
    file: PathBuf,
    progress: Option<Progress>,
}

impl Shown {
    fn new(file: &Path) -> Shown {
        Shown {
            file: file.to_path_buf(),
            progress: None,
        }
    }

    fn event(&mut self, e: Event<'_>) {
        match e {
            Event::Planned {
                executions,
                rounds,
                left,
            } => {
                let progress = Progress::new(executions as u64);
                progress.step(&format!("round 1/{rounds}: starting"), left);
                self.progress = Some(progress);
            }
            Event::Next {
                round,
                rounds,
                subject,
                workload,
                left,
            } => {
                if let Some(p) = &self.progress {
                    let what = format!("round {}/{rounds}: {subject} under {workload}", round + 1);
                    p.step(&what, left);
                }
            }
            Event::BusyBeforeRound { .. } | Event::Looked(_) => {
                for line in e.lines(&self.file) {
                    self.say(&line);
                }
            }
            _ => {
                for line in e.lines(&self.file) {
                    errln!("{line}");
                }
                if let (Event::Executed(_), Some(p)) = (e, &self.progress) {
                    p.done_one();
                }
            }
        }
    }

    /// A line on stderr that does not garble the progress bar.
    fn say(&self, line: &str) {
        match &self.progress {
            Some(p) => p.note(line),
            None => errln!("{line}"),
        }
    }

    fn finish(&self) {
        if let Some(p) = &self.progress {
            p.finish();
        }
    }
}

fn report_runs(a: ReportArgs) -> anyhow::Result<ExitCode> {
    let mut loaded = load(&a.db, &a.runs)?;
    let judged = loaded.judge_report(&a.out.request(a.rounds.clone()), &a.candidates)?;
    show(&judged, &a.out)
}

/// The stored comparison that `runs` belong to, from the store `--db` names.
fn load(db: &db::DbArg, runs: &[RunId]) -> anyhow::Result<record::Loaded> {
    let path = db.path();
    let context = || format!("results store {}", path.display());
    let store = Store::open_read_only(&path).with_context(context)?;
    record::load(&store, runs).with_context(context)
}

impl OutputArgs {
    /// What the flags ask of the judging; `rounds` is `compare report --rounds`.
    fn request(&self, rounds: Option<std::ops::Range<u32>>) -> JudgeRequest {
        JudgeRequest {
            test: self.test,
            primary: self.primary.clone(),
            rounds,
        }
    }
}

/// Prints the summary, writes the HTML report; exit 1 on a regression when asked.
fn show(judged: &Judged<'_>, out: &OutputArgs) -> anyhow::Result<ExitCode> {
    match out.format {
        Format::Json => outln!(
            "{}",
            serde_json::to_string_pretty(&report::verdicts_json(&judged.judgement))
                .unwrap_or_default()
        )?,
        Format::Table => out!(
            "{}",
            judged.summary(crate::term::table_format(), out.secondary)
        )?,
        Format::Markdown => out!("{}", judged.summary(TableFormat::Markdown, out.secondary))?,
        Format::Csv => out!("{}", judged.summary(TableFormat::Csv, out.secondary))?,
    }
    if let Some(path) = &out.html {
        write_atomic(path, judged.html().as_bytes())
            .with_context(|| format!("--html {}", path.display()))?;
        errln!("HTML report: {}", path.display());
    }
    if out.fail_on_regression && judged.judgement.has_regression() {
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// `dyno compare power`: trials of a stored comparison and the noise of its metrics.
fn power(a: PowerArgs) -> anyhow::Result<ExitCode> {
    let loaded = load(&a.db, &[a.run])?;
    let request = JudgeRequest {
        test: a.test,
        primary: a.primary.clone(),
        rounds: None,
    };
    let study = loaded
        .measured()
        .power(&request, a.trial_rounds)
        .map_err(|e| match e {
            PowerError::Trials(e) => anyhow::anyhow!("--trial-rounds: {e}"),
            PowerError::Judge(e) => anyhow::Error::new(e),
        })?;
    if a.format == Format::Json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&study).unwrap_or_default()
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    let format = match a.format {
        Format::Markdown => TableFormat::Markdown,
        Format::Csv => TableFormat::Csv,
        _ => crate::term::table_format(),
    };
    out!("{}", study.text(format))?;
    Ok(ExitCode::SUCCESS)
}
