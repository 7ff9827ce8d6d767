//! The steps of `dyno tune run` and `dyno tune report` that need the study, the disk and
//! the store, kept here so the binary only wires them to the terminal.

use crate::artifact::{BuildOutcome, BuildRecord, BuildRequest, PgoJob};
use crate::build::{build_all, source_fingerprint, BuildEvent};
use crate::cargo::{load_record, sha256_file};
use crate::error::TuneError;
use crate::measure::ProcessExecutor;
use crate::portability::CpuAssumption;
use crate::race::{run_race, Contestant, JobEvent, RaceConfig, RaceOutcome, Replay};
use crate::record::{Recorder, StoreRecorder, SubjectKey};
use crate::report::{build_report, ReportInput, StudyReport};
use crate::study::Study;
use crate::variant::{build_plan, expand, Variant};
use dyno_model::{Host, Subject, SubjectKind};
use dyno_store::Store;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// Every variant of the study with its build plan.
pub fn build_requests(study: &Study) -> Vec<BuildRequest> {
    let work = study.work_dir();
    expand(&study.matrix, &study.exclude, &study.project.profile)
        .into_iter()
        .map(|variant| BuildRequest {
            plan: build_plan(&study.project, &variant, &work),
            pgo: pgo_job(study, &variant),
            variant,
        })
        .collect()
}

/// How a variant is trained, when its `pgo` setting asks for training.
pub fn pgo_job(study: &Study, variant: &Variant) -> Option<PgoJob> {
    let mode = variant.settings.pgo.filter(|p| p.trains())?;
    let (training, same_input) = study.training_commands();
    Some(PgoJob {
        mode,
        training,
        same_input,
        timeout_s: study.pgo.timeout_s,
    })
}

/// The race subjects: variants with a usable binary, then baselines.
#[derive(Debug, Clone, Default)]
pub struct Lineup {
    /// Race subjects.
    pub contestants: Vec<Contestant>,
    /// Their variants (`None` for baselines).
    pub variants: Vec<Option<Variant>>,
    /// Their build records (`None` for baselines).
    pub builds: Vec<Option<BuildRecord>>,
    /// Variants without a binary: label and why.
    pub failed: Vec<(Variant, String)>,
}

fn variant_subject(study: &Study, v: &Variant, b: &BuildRecord) -> Subject {
    let subject = Subject::new(SubjectKind::BuildVariant, v.label.clone())
        .with("variant", v.id.clone())
        .with("profile", v.profile_section(&study.project.profile))
        .with("rustflags", v.rustflags())
        .with(
            "toolchain",
            v.settings
                .toolchain
                .clone()
                .unwrap_or_else(|| "default".into()),
        )
        .with("rustc", b.rustc.clone())
        .with("sha256", b.sha256.clone())
        .with("size", b.size.to_string())
        .with("build_time_s", format!("{:.3}", b.build_time_s));
    match &b.pgo {
        Some(p) => subject
            .with("pgo", p.mode.clone())
            .with("pgo_profile_sha256", p.profile_sha256.clone())
            .with("pgo_training_same_input", p.same_input.to_string()),
        None => subject,
    }
}

/// Builds every variant of `study`, whose project is at `root` (an unchanged build is
/// reused), `jobs` of `[run]` at a time, and lines up those that built; `on_event` sees
/// each build start and end. `None` when `stop` ended the builds.
pub fn build_lineup(
    study: &Study,
    root: &Path,
    stop: &AtomicBool,
    on_event: &(dyn Fn(BuildEvent) + Sync),
) -> Result<Option<Lineup>, TuneError> {
    let requests = build_requests(study);
    let sources = source_fingerprint(root, &study.work_dir());
    let outcomes = build_all(&requests, study.run.jobs, &sources, stop, on_event);
    if stop.load(Ordering::SeqCst) {
        return Ok(None);
    }
    lineup(study, &requests, &outcomes).map(Some)
}

/// Pairs variants with their build outcomes (`outcomes[i]` for `requests[i]`) and adds
/// the baselines.
pub fn lineup(
    study: &Study,
    requests: &[BuildRequest],
    outcomes: &[BuildOutcome],
) -> Result<Lineup, TuneError> {
    let mut l = Lineup::default();
    for (r, o) in requests.iter().zip(outcomes) {
        match o.usable() {
            Some(b) => {
                l.contestants.push(Contestant {
                    key: SubjectKey {
                        key: format!("{}-{}", r.variant.id, &b.sha256[..16.min(b.sha256.len())]),
                        subject: variant_subject(study, &r.variant, b),
                    },
                    label: r.variant.label.clone(),
                    baseline: false,
                    binary: b.binary.clone(),
                });
                l.variants.push(Some(r.variant.clone()));
                l.builds.push(Some(b.clone()));
            }
            None => {
                let why = match o {
                    BuildOutcome::Built(b) | BuildOutcome::Reused(b) | BuildOutcome::Failed(b) => {
                        b.error_tail.clone()
                    }
                    BuildOutcome::Interrupted => "not built (interrupted)".into(),
                };
                l.failed.push((r.variant.clone(), why));
            }
        }
    }
    for b in &study.baselines {
        let sha = sha256_file(&b.binary)?;
        l.contestants.push(Contestant {
            key: SubjectKey {
                key: format!("baseline-{}-{}", b.name, &sha[..16]),
                subject: Subject::new(SubjectKind::Release, b.name.clone())
                    .with("binary", b.binary.display().to_string())
                    .with("sha256", sha.clone()),
            },
            label: b.name.clone(),
            baseline: true,
            binary: b.binary.clone(),
        });
        l.variants.push(None);
        l.builds.push(None);
    }
    Ok(l)
}

/// The outcomes recorded on disk by earlier builds, without building anything.
pub fn recorded_outcomes(requests: &[BuildRequest]) -> Vec<BuildOutcome> {
    requests
        .iter()
        .map(|r| match load_record(&r.plan) {
            Some(b) if b.ok => BuildOutcome::Reused(b),
            Some(b) => BuildOutcome::Failed(b),
            None => BuildOutcome::Interrupted,
        })
        .collect()
}

/// The report of a study from its build records and the runs host `hostname` stored.
pub fn report_from_store(
    study: &Study,
    store: &mut Store,
    hostname: &str,
    exhaustive: bool,
) -> Result<StudyReport, TuneError> {
    let requests = build_requests(study);
    let outcomes = recorded_outcomes(&requests);
    let lineup = lineup(study, &requests, &outcomes)?;
    let keys: Vec<SubjectKey> = lineup.contestants.iter().map(|c| c.key.clone()).collect();
    let mut recorder = StoreRecorder::new(
        store,
        &study.key(),
        Host {
            hostname: hostname.to_string(),
            ..Host::default()
        },
        Vec::new(),
        "",
        serde_json::Value::Null,
    );
    let records = recorder.load(&keys)?;
    if records.iter().all(Vec::is_empty) {
        return Err(TuneError::NoResults(study.path.clone()));
    }
    let mode = if exhaustive {
        crate::Mode::Exhaustive
    } else {
        crate::Mode::Racing
    };
    let config = RaceConfig::from_settings(&study.run, mode);
    let names: Vec<String> = study.benchmarks.iter().map(|b| b.name.clone()).collect();
    let baseline: Vec<bool> = lineup.contestants.iter().map(|c| c.baseline).collect();
    let mut replay = Replay::new(config, &names, &baseline);
    replay.advance(&records)?;
    let cpu = cpu_assumptions(&lineup.variants);
    build_report(&ReportInput {
        title: study.path.display().to_string(),
        contestants: &lineup.contestants,
        variants: &lineup.variants,
        builds: &lineup.builds,
        failed_builds: &lineup.failed,
        records: &records,
        replay: &replay,
        profile: &study.project.profile,
        alpha: study.run.alpha,
        min_effect: study.run.min_effect,
        bin: &study.project.bin,
        cpu: &cpu,
    })
}

/// Which host's race `dyno tune report` shows: `asked` (`--host`), else this machine
/// (`here`) when it ran the study, else the only machine that did. Several and none
/// chosen is bad usage: a race's rounds pair runs on one machine, so pooling machines
/// would mislead.
pub fn report_host(
    store: &Store,
    study: &Study,
    asked: Option<&str>,
    here: &str,
) -> Result<String, TuneError> {
    let hosts = crate::record::study_hosts(store, &study.key())?;
    if let Some(h) = asked {
        if hosts.iter().any(|x| x == h) {
            return Ok(h.to_string());
        }
        return Err(TuneError::UnknownHost {
            host: h.to_string(),
            study: study.path.clone(),
            hosts,
        });
    }
    if hosts.iter().any(|h| h == here) || hosts.is_empty() {
        return Ok(here.to_string());
    }
    if let [only] = hosts.as_slice() {
        return Ok(only.clone());
    }
    Err(TuneError::ChooseHost {
        study: study.path.clone(),
        hosts,
    })
}

/// `dyno tune report`'s report: the race of the host [`report_host`] chooses (`asked`
/// is `--host`, `here` this machine's name), judged in the mode it ran in (racing or
/// exhaustive).
pub fn stored_report(
    study: &Study,
    store: &mut Store,
    asked: Option<&str>,
    here: &str,
) -> Result<StudyReport, TuneError> {
    let hostname = report_host(store, study, asked, here)?;
    let exhaustive =
        crate::record::study_mode(store, &study.key(), &hostname)?.as_deref() == Some("exhaustive");
    full_report(study, store, &hostname, exhaustive)
}

/// How `dyno tune run` races and records: the study (and its file as given), the mode,
/// and what the store records of the dyno that runs it.
#[derive(Debug)]
pub struct RaceRequest<'a> {
    /// The study.
    pub study: &'a Study,
    /// Its file, as given on the command line.
    pub path: &'a str,
    /// Racing or exhaustive.
    pub mode: crate::Mode,
    /// The dyno build as JSON, stored with the settings.
    pub build: serde_json::Value,
    /// The command line, stored with the run.
    pub command_line: Vec<String>,
    /// dyno's version.
    pub tool_version: &'a str,
}

impl RaceRequest<'_> {
    /// Races `contestants` on the study's benchmarks, recording every job in `store` as
    /// this machine's (probed where the study builds), resuming what the store holds;
    /// `on_job` sees each job end. Returns the race's outcome and this machine's name.
    pub fn run(
        self,
        contestants: &[Contestant],
        store: &mut Store,
        stop: &AtomicBool,
        on_job: &mut dyn FnMut(&JobEvent),
    ) -> Result<(RaceOutcome, String), TuneError> {
        let study = self.study;
        let work = study.work_dir();
        let host = dyno_proc::host::probe(work.parent().unwrap_or(Path::new(".")));
        let hostname = host.hostname.clone();
        let settings = RaceSettings::new(self.path, study, self.mode, self.build);
        let mut recorder = StoreRecorder::new(
            store,
            &study.key(),
            host,
            self.command_line,
            self.tool_version,
            settings.to_value(),
        );
        let outcome = run_race(
            contestants,
            &study.benchmarks,
            RaceConfig::from_settings(&study.run, self.mode),
            &mut ProcessExecutor,
            &mut recorder,
            stop,
            on_job,
        )?;
        Ok((outcome, hostname))
    }
}

/// What `dyno tune run`'s flags override in the study file's `[run]` table.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RunOverrides {
    /// Most rounds (`--max-rounds`); the minimum is lowered to it when above.
    pub max_rounds: Option<u32>,
    /// Benchmark time after which no round starts (`--time-budget`), in seconds.
    pub time_budget_s: Option<f64>,
    /// Parallel builds (`--jobs`).
    pub jobs: Option<usize>,
}

impl RunOverrides {
    /// `study` with these overrides applied.
    pub fn apply(&self, study: &mut Study) {
        if let Some(n) = self.max_rounds {
            study.run.max_rounds = n;
            study.run.min_rounds = study.run.min_rounds.min(n);
        }
        if let Some(b) = self.time_budget_s {
            study.run.time_budget_s = Some(b);
        }
        if let Some(j) = self.jobs {
            study.run.jobs = j;
        }
    }
}

/// The report of `hostname`'s race ([`report_from_store`]) with the study per CPU family
/// when a fleet store holds its runs from several CPU models.
pub fn full_report(
    study: &Study,
    store: &mut Store,
    hostname: &str,
    exhaustive: bool,
) -> Result<StudyReport, TuneError> {
    let mut report = report_from_store(study, store, hostname, exhaustive)?;
    let mode = if exhaustive {
        crate::Mode::Exhaustive
    } else {
        crate::Mode::Racing
    };
    let names: Vec<String> = study.benchmarks.iter().map(|b| b.name.clone()).collect();
    report.per_cpu = crate::report_cpu::per_cpu(
        store,
        &study.key(),
        &names,
        RaceConfig::from_settings(&study.run, mode),
    )?;
    Ok(report)
}

/// One line per finished build: how long it took, or why it was not built.
pub fn outcome_line(outcome: &BuildOutcome) -> String {
    match outcome {
        BuildOutcome::Built(b) => match &b.pgo {
            Some(p) => format!(
                "built in {:.1} s ({})",
                b.build_time_s,
                crate::report::pgo_steps(p)
            ),
            None => format!("built in {:.1} s", b.build_time_s),
        },
        BuildOutcome::Reused(b) if b.ok => "unchanged, not rebuilt".into(),
        BuildOutcome::Reused(_) => "failed before, inputs unchanged".into(),
        BuildOutcome::Failed(b) => format!("FAILED:\n{}", b.error_tail),
        BuildOutcome::Interrupted => "interrupted".into(),
    }
}

/// What `dyno tune check` prints of the study at `path`: the counts, then each variant
/// with its environment and build command, and for a profile-guided one its training and
/// merge steps.
pub fn plan_text(path: &Path, study: &Study) -> String {
    let requests = build_requests(study);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}: {} variants, {} baselines, {} benchmarks",
        path.display(),
        requests.len(),
        study.baselines.len(),
        study.benchmarks.len()
    );
    for r in &requests {
        let env: Vec<String> = r
            .plan
            .env
            .iter()
            .map(|(k, v)| format!("{k}={v:?}"))
            .collect();
        let _ = writeln!(
            out,
            "{}  {}\n    {} {} {}",
            r.variant.id,
            r.variant.label,
            env.join(" "),
            r.plan.program,
            r.plan.args.join(" ")
        );
        if let Some(job) = &r.pgo {
            pgo_text(&mut out, r, job);
        }
    }
    out
}

fn pgo_text(out: &mut String, r: &BuildRequest, job: &PgoJob) {
    let dirs = crate::pgo::PgoDirs::of(&r.plan);
    let _ = writeln!(
        out,
        "    pgo {}: instrumented build (-Cprofile-generate={}, --target <host>), then training:",
        job.mode.value(),
        dirs.raw.display()
    );
    for t in &job.training {
        let _ = writeln!(out, "      {}", t.join(" "));
    }
    let bolt = if job.mode == crate::profile::Pgo::OnBolt {
        ", linked with --emit-relocs, then llvm-bolt -instrument, the training again, merge-fdata and llvm-bolt"
    } else {
        ""
    };
    let _ = writeln!(
        out,
        "    then llvm-profdata merge and the build above with -Cprofile-use={}{bolt}{}",
        dirs.profile.display(),
        if job.same_input {
            " (training = the measured benchmarks: add [pgo] training with another input)"
        } else {
            ""
        }
    );
}

/// What each variant's `target-cpu` assumes, asked of its toolchain's rustc once per
/// (toolchain, CPU); a rustc that cannot answer leaves the variant without (the report
/// then keeps its general warning about native builds).
pub fn cpu_assumptions(variants: &[Option<Variant>]) -> Vec<Option<CpuAssumption>> {
    let mut known = std::collections::BTreeMap::new();
    variants
        .iter()
        .map(|v| {
            let v = v.as_ref()?;
            let cpu = v.settings.target_cpu.as_ref()?.flag()?.to_string();
            let key = (v.settings.toolchain.clone(), cpu);
            known
                .entry(key)
                .or_insert_with_key(|(toolchain, cpu)| {
                    crate::portability::assumption(toolchain.as_deref(), cpu).ok()
                })
                .clone()
        })
        .collect()
}

/// The settings a `dyno tune run` session records with its runs.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RaceSettings {
    /// The study file, as given.
    pub study: String,
    /// `racing` or `exhaustive`.
    pub mode: &'static str,
    /// Most rounds.
    pub max_rounds: u32,
    /// Fewest rounds before any elimination.
    pub min_rounds: u32,
    /// Significance level of an elimination.
    pub alpha: f64,
    /// Smallest relative effect that counts.
    pub min_effect: f64,
    /// Futility threshold.
    pub futility: f64,
    /// The test rounds are compared with (`paired`).
    pub test: &'static str,
    /// No new round after this much benchmark time.
    pub time_budget_s: Option<f64>,
    /// Seed of the round order.
    pub seed: u64,
    /// The dyno build that ran the race.
    pub dyno: serde_json::Value,
}

impl RaceSettings {
    /// The settings of a race over `study` (read from `path`) in `mode`.
    pub fn new(path: &str, study: &Study, mode: crate::Mode, dyno: serde_json::Value) -> Self {
        let run = &study.run;
        RaceSettings {
            study: path.to_string(),
            mode: match mode {
                crate::Mode::Exhaustive => "exhaustive",
                crate::Mode::Racing => "racing",
            },
            max_rounds: run.max_rounds,
            min_rounds: run.min_rounds,
            alpha: run.alpha,
            min_effect: run.min_effect,
            futility: run.futility,
            test: "paired",
            time_budget_s: run.time_budget_s,
            seed: run.seed,
            dyno,
        }
    }

    /// As a JSON object, for the store.
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("race settings serialise")
    }
}
