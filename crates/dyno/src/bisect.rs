//! `dyno compare bisect FILE --good REV --bad REV`: the commit(s) behind a change between
//! two revisions of the file's git subject (crate dyno-bisect), with progress on stderr
//! and the report on stdout; and what the commands that build git revisions share: a
//! build stopped by Ctrl-C is an interruption (exit 130), not a failed build.

use crate::cli_error::CliError;
use crate::db::{self, StoreArgs};
use clap::{Args, ValueEnum};
use dyno_bisect::record::{StepOutcome, StepRecord};
use dyno_bisect::{Bench, BisectError, BisectEvent, BisectOptions, BisectReport, BisectSpec};
use dyno_compare::session::Event;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `dyno compare bisect`.
#[derive(Debug, Args)]
pub struct BisectArgs {
    /// Comparison file whose first `git = { ... }` subject is bisected (docs/bisect.md).
    file: PathBuf,
    /// A revision without the change (a commit, tag or branch of the subject's repository).
    #[arg(long, value_name = "REV")]
    good: String,
    /// A revision with it; good must be its ancestor.
    #[arg(long, value_name = "REV")]
    bad: String,
    /// Walk the commits of merged branches too (default: first parents only, as `git
    /// rev-list --first-parent`).
    #[arg(long)]
    all_parents: bool,
    /// The change to confirm and search for, at least (`5%`; default: the file's
    /// `precision`, else 5%).
    #[arg(long, value_name = "PCT")]
    precision: Option<String>,
    /// Rounds a step may take before an undecided revision is called between.
    #[arg(long, value_name = "N", default_value_t = dyno_bisect::spec::DEFAULT_STEP_ROUNDS, value_parser = clap::value_parser!(u32).range(2..))]
    step_rounds: u32,
    /// Where revisions are extracted and built (default: ~/.cache/dyno/builds, shared
    /// with `dyno compare run`).
    #[arg(long, value_name = "DIR")]
    build_dir: Option<PathBuf>,
    /// Start a new bisection even when one of this file, good and bad is stored; by
    /// default it is continued (or, finished, shown again).
    #[arg(long)]
    fresh: bool,
    /// `text` or `json` (schema `dyno.compare.bisect/1`).
    #[arg(long, value_enum, default_value = "text")]
    format: BisectFormat,
    #[command(flatten)]
    store: StoreArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum BisectFormat {
    /// The culprits, then every step.
    Text,
    /// The report as JSON.
    Json,
}

/// A git subject's build error as a command's error: an interrupted build exits as
/// interrupted (130, 143), a failed one as bad input (its message names the subject,
/// the revision and the build's last lines).
pub fn build_error(e: dyno_compare::gitbuild::BuildError) -> anyhow::Error {
    match *e.source {
        dyno_build::BuildError::Interrupted => CliError::Interrupted(format!(
            "building `{}` at {}: nothing was measured; run the same command again to build it",
            e.subject, e.rev
        ))
        .into(),
        _ => e.into(),
    }
}

/// A bisection's error with its exit code: bad input 2, Ctrl-C 130, the rest 3.
fn exit_error(e: BisectError) -> anyhow::Error {
    match e {
        BisectError::Interrupted(what) => CliError::Interrupted(what).into(),
        e if e.is_input() => e.into(),
        e => CliError::Runtime(e.to_string()).into(),
    }
}

/// Runs `dyno compare bisect`.
pub fn run(a: BisectArgs) -> anyhow::Result<ExitCode> {
    let precision = a
        .precision
        .as_deref()
        .map(dyno_compare::overrides::parse_precision_text)
        .transpose()
        .map_err(|e| anyhow::anyhow!("--precision: {e}"))?;
    let cfg = dyno_bisect::spec::read_file(&a.file).map_err(exit_error)?;
    let options = BisectOptions {
        good: a.good.clone(),
        bad: a.bad.clone(),
        all_parents: a.all_parents,
        precision,
        step_rounds: a.step_rounds,
    };
    let spec = BisectSpec::new(cfg, &a.file, &options).map_err(exit_error)?;
    let cache_dir = a
        .build_dir
        .clone()
        .unwrap_or_else(dyno_compare::gitbuild::default_cache);
    let cache = dyno_build::BuildCache::new(&cache_dir);
    let mut store = db::open_for_writing(&a.store)?;
    let mut executor = dyno_compare::ProcessExecutor::new(spec.template.grace_s);
    errln!(
        "bisecting `{}` of {}: {} commits from good {} to bad {} ({})",
        spec.subject_name(),
        a.file.display(),
        spec.commits.len() - 1,
        a.good,
        a.bad,
        if spec.first_parent {
            "first parents"
        } else {
            "all parents"
        }
    );
    let mut bench = Bench {
        store: store.as_mut(),
        executor: &mut executor,
        stop: crate::interrupt::stop_flag_keep_stopping(),
        cache: &cache,
        tool: crate::build_info::describe(),
        quiet_look: true,
    };
    let file = a.file.clone();
    // A busy machine is said once per step, not before every round.
    let mut busy_said = false;
    let stored = dyno_bisect::bisect(&spec, &mut bench, a.fresh, &mut |e| {
        match &e {
            BisectEvent::Step { .. } => busy_said = false,
            BisectEvent::Compare(Event::BusyCpus(_) | Event::BusyBeforeRound { .. })
                if busy_said =>
            {
                return
            }
            BisectEvent::Compare(Event::BusyCpus(_) | Event::BusyBeforeRound { .. }) => {
                busy_said = true
            }
            _ => {}
        }
        for line in event_lines(&e, &file, &cache_dir) {
            errln!("{line}");
        }
    })
    .map_err(exit_error)?;
    let report = BisectReport::of(&stored);
    match a.format {
        BisectFormat::Text => out!("{}", report.text())?,
        BisectFormat::Json => outln!("{}", serde_json::to_string_pretty(&report.json())?)?,
    }
    if let Some(s) = &store {
        errln!(
            "Stored as bisect {} in {}; shown again by the same command, and in dyno serve at /bisect/{}",
            report.id,
            s.path().display(),
            report.id
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// A bisection's event as progress lines.
fn event_lines(
    e: &BisectEvent<'_>,
    file: &std::path::Path,
    cache: &std::path::Path,
) -> Vec<String> {
    match e {
        BisectEvent::Continuing { id, steps } => vec![format!(
            "continuing bisect {id}: {steps} steps already stored (--fresh starts anew)"
        )],
        BisectEvent::Step {
            number,
            what,
            remaining,
            commits_left,
            steps_left,
            minutes_left,
        } => {
            let ranges: Vec<String> = remaining.iter().map(|(l, h)| format!("{l}..{h}")).collect();
            let minutes = minutes_left
                .map(|m| format!(", about {m:.1} min"))
                .unwrap_or_default();
            vec![format!(
                "step {number}: {what}; remaining: {commits_left} commits ({}); about {steps_left} steps (and builds) left{minutes}",
                ranges.join(", ")
            )]
        }
        BisectEvent::Building { commit, name } => vec![format!(
            "  building {name} ({}) in {}",
            dyno_bisect::spec::short(commit),
            cache.display()
        )],
        BisectEvent::Compare(c) => match c {
            Event::Planned { .. } | Event::Next { .. } | Event::Looked(_) => Vec::new(),
            other => other.lines(file).into_iter().map(|l| format!("  {l}")).collect(),
        },
        BisectEvent::Evidence(look) => vec![format!(
            "  after {} rounds: {:+.1}% against the baseline (share {:.0}% of the range), log-likelihood ratios {:.2} and {:.2} (bounds {:.2}..{:.2}), per-round sd {:.1}%",
            look.rounds,
            (look.mean.exp() - 1.0) * 100.0,
            look.share * 100.0,
            look.llr_low,
            look.llr_high,
            look.bounds_low.0,
            look.bounds_high.1,
            look.sd * 100.0
        )],
        BisectEvent::StepDone(step) => vec![done_line(step)],
    }
}

fn done_line(step: &StepRecord) -> String {
    let change = match &step.outcome {
        StepOutcome::Decided { mean, .. } => format!(", {:+.1}%", (mean.exp() - 1.0) * 100.0),
        _ => String::new(),
    };
    format!(
        "step {} done after {} rounds ({:.0} s, {} builds{change}): {}",
        step.number,
        step.rounds,
        step.seconds + step.build_seconds,
        step.builds,
        dyno_bisect::report::verdict_text(step)
    )
}
