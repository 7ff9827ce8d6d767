//! The steps of `dyno tune run` and `dyno tune report` that need the study, the disk and
//! the store, kept here so the binary only wires them to the terminal.

use crate::artifact::{BuildOutcome, BuildRecord, BuildRequest, PgoJob};
use crate::cargo::{load_record, sha256_file};
use crate::error::TuneError;
use crate::portability::CpuAssumption;
use crate::race::{Contestant, RaceConfig, Replay};
use crate::record::{Recorder, StoreRecorder, SubjectKey};
use crate::report::{build_report, ReportInput, StudyReport};
use crate::study::Study;
use crate::variant::{build_plan, expand, Variant};
use dyno_model::{Host, Subject, SubjectKind};
use dyno_store::Store;

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
