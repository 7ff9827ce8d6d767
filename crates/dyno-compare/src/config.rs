//! The comparison file: subjects, workloads and how to judge them.
//!
//! ```toml
//! rounds = 10          # each round runs every subject once per workload, in shuffled order
//! noise_band = 0.02    # changes within +-2% are never a verdict
//! alpha = 0.05         # family-wise, Holm across every metric and workload
//! seed = 1             # order shuffling and bootstrap
//! test = "paired"      # per-round ratios, t-test (default); "signed-rank" or "unpaired"
//! primary = ["cpu_s_per_tx"]  # the verdict's metrics, Holm over these alone (default: all)
//! grace_s = 5          # SIGINT, then SIGKILL after this many seconds
//!
//! [[subject]]          # the first subject is the baseline
//! name = "v1.4"
//! command = ["./nodes/v1.4/node", "--config", "{workload}.toml"]
//! env = { RUST_LOG = "warn" }
//! cwd = "."
//! metrics = { prometheus = "http://127.0.0.1:7999/metrics", jsonl = "node.jsonl" }
//! ready = { http = "http://127.0.0.1:7999/ready", timeout_s = 30 }  # see `readiness`
//! addresses = { rpc = "http://127.0.0.1:26657" }  # `{rpc}` in a workload's load command
//! # or as a table of its own, with declared directions and ignored metrics:
//! # [subject.metrics]
//! # jsonl = "node.jsonl"
//! # lower_is_better = ["jsonl:stage_*", "jsonl:latency_*"]
//! # higher_is_better = ["jsonl:tps"]
//! # ignore = ["jsonl:cost_units"]
//!
//! [[subject]]          # or build a git revision of a Cargo project (see `gitbuild`)
//! name = "v1.5"
//! git = { manifest = "node/Cargo.toml", rev = "v1.5", package = "node", bin = "node" }
//! # or any build: git = { repo = "../node", rev = "v1.5", build = ["make", "OUT={out}"] }
//! args = ["--config", "{workload}.toml"]   # after the built binary
//!
//! [[workload]]
//! name = "value"
//! rate = 20000         # transactions per second, fixed so resource use is comparable
//! warmup_s = 5
//! measure_s = 30
//! args = ["--tps", "{rate}"]   # appended to every subject's command
//! # load = { command = ["./load", "--url", "{rpc}", "--rate", "{rate}"] }  # see `load`
//! ```
//!
//! `on_failure` says what a failed execution (a node that crashed, was not ready in
//! time, or whose load generator died) does to the comparison: `"give_up"` (the default)
//! stops it when one subject fails twice in a row, `"stop"` at the first failure,
//! `"continue"` never.
//!
//! `{workload}`, `{rate}`, `{warmup_s}` and `{measure_s}` are replaced in commands, args
//! and environment values; the node also gets `DYNO_WORKLOAD` and `DYNO_RATE` in its
//! environment. Everything is checked by [`ComparisonFile::parse`] before any node starts;
//! errors name the file, the line and the key.

pub use crate::spec::{
    check_executable, substitute, ComparisonFile, GitSource, MetricSources, OnFailure, SubjectSpec,
    WorkloadSpec,
};
use dyno_judge::Sequential;
use dyno_judge::TestKind;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// What is wrong with a comparison file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file cannot be read.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// TOML syntax, a missing or unknown key, a value of the wrong type.
    #[error("{0}")]
    Syntax(dyno_model::ConfigDiagnostic),
    /// A value that parses but makes no sense.
    #[error("{0}")]
    Invalid(dyno_model::ConfigDiagnostic),
    /// `--workload` names a workload the file does not define.
    #[error("{path}: unknown workload `{name}` (the file defines: {known})")]
    UnknownWorkload {
        /// The file.
        path: PathBuf,
        /// The name asked for.
        name: String,
        /// The names defined.
        known: String,
    },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default = "default_rounds")]
    rounds: Spanned<u32>,
    #[serde(default = "default_noise")]
    noise_band: Spanned<f64>,
    #[serde(default = "default_alpha")]
    alpha: Spanned<f64>,
    #[serde(default)]
    seed: u64,
    #[serde(default = "default_grace")]
    grace_s: Spanned<f64>,
    #[serde(default)]
    on_failure: Option<Spanned<String>>,
    #[serde(default)]
    test: Option<Spanned<String>>,
    #[serde(default)]
    primary: Option<Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    precision: Option<Spanned<toml::Value>>,
    #[serde(default)]
    max_rounds: Option<Spanned<i64>>,
    #[serde(default)]
    max_minutes: Option<Spanned<f64>>,
    #[serde(default)]
    schedule: Option<Spanned<String>>,
    #[serde(default)]
    windows_per_start: Option<Spanned<i64>>,
    #[serde(default)]
    max_disturbance: Option<Spanned<toml::Value>>,
    #[serde(default)]
    subject: Vec<Spanned<RawSubject>>,
    #[serde(default)]
    workload: Vec<Spanned<RawWorkload>>,
}

fn default_rounds() -> Spanned<u32> {
    Spanned::new(0..0, 10)
}
fn default_noise() -> Spanned<f64> {
    Spanned::new(0..0, 0.02)
}
fn default_alpha() -> Spanned<f64> {
    Spanned::new(0..0, 0.05)
}
fn default_grace() -> Spanned<f64> {
    Spanned::new(0..0, 5.0)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSubject {
    name: String,
    #[serde(default)]
    command: Option<Vec<String>>,
    #[serde(default)]
    git: Option<GitSource>,
    #[serde(default)]
    args: Option<Vec<String>>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    cwd: Option<PathBuf>,
    #[serde(default)]
    metrics: RawMetrics,
    #[serde(default)]
    ready: Option<crate::readiness::RawReady>,
    #[serde(default)]
    addresses: BTreeMap<String, String>,
    #[serde(default)]
    cluster: Option<PathBuf>,
    #[serde(default)]
    node_command: Option<Vec<String>>,
    #[serde(default)]
    node_binary: Option<PathBuf>,
    #[serde(default)]
    cpus: Option<Spanned<String>>,
}

/// `metrics` as written, with the place of each declared name for errors.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMetrics {
    #[serde(default)]
    prometheus: Option<String>,
    #[serde(default)]
    prometheus_metrics: Vec<String>,
    #[serde(default)]
    jsonl: Option<PathBuf>,
    #[serde(default)]
    higher_is_better: Vec<Spanned<String>>,
    #[serde(default)]
    lower_is_better: Vec<Spanned<String>>,
    #[serde(default)]
    ignore: Vec<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorkload {
    name: String,
    rate: f64,
    #[serde(default)]
    warmup_s: f64,
    measure_s: f64,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    load: Option<crate::load::RawLoad>,
    #[serde(default)]
    work: Option<work::RawWork>,
}

impl ComparisonFile {
    /// Reads and validates a file.
    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text, path)
    }

    /// Parses and validates `text`; `path` names the file in errors and resolves nothing.
    pub fn parse(text: &str, path: &Path) -> Result<Self, ConfigError> {
        let raw: RawFile =
            dyno_model::ConfigDiagnostic::parse_toml(path, text).map_err(ConfigError::Syntax)?;
        let cx = Cx { path, text };
        let mut settings = cx.settings(&raw)?;
        let sequential = cx.sequential(&raw, &settings)?;
        if let Some(seq) = &sequential {
            settings.rounds = seq.max_rounds;
            settings.test = Some(TestKind::Sequential);
        }
        let primary = cx.primary(&raw)?;
        if raw.subject.len() < 2 {
            return Err(cx.invalid(
                0..0,
                "subject".into(),
                format!(
                    "{} [[subject]] given; a comparison needs a baseline and at least one candidate (for an A/A check, give the same command twice under two names)",
                    raw.subject.len()
                ),
            ));
        }
        if raw.workload.is_empty() {
            return Err(cx.invalid(0..0, "workload".into(), "no [[workload]] given".into()));
        }
        let mut subjects = Vec::new();
        for (i, s) in raw.subject.iter().enumerate() {
            let subject = cx.subject(i, s, &subjects)?;
            subjects.push(subject);
        }
        let mut workloads: Vec<WorkloadSpec> = Vec::new();
        for (i, w) in raw.workload.iter().enumerate() {
            let workload = cx.workload(i, w, &subjects, &workloads)?;
            workloads.push(workload);
        }
        crate::cluster_subject::check_comparison(&subjects, &workloads)
            .map_err(|(k, why)| cx.invalid(0..0, k, why))?;
        let rounds_run = cx.rounds_run(&raw, &subjects)?;
        Ok(ComparisonFile {
            rounds: settings.rounds,
            noise_band: settings.noise_band,
            alpha: settings.alpha,
            seed: raw.seed,
            grace_s: settings.grace_s,
            on_failure: settings.on_failure,
            test: settings.test,
            primary,
            sequential,
            schedule: rounds_run.schedule,
            windows_per_start: rounds_run.windows_per_start,
            max_disturbance: rounds_run.max_disturbance,
            subjects,
            workloads,
        })
    }

    /// Keeps only the named workloads (in the file's order); an unknown name is an error.
    pub fn select_workloads(&mut self, names: &[String], path: &Path) -> Result<(), ConfigError> {
        if names.is_empty() {
            return Ok(());
        }
        for n in names {
            if !self.workloads.iter().any(|w| &w.name == n) {
                return Err(ConfigError::UnknownWorkload {
                    path: path.to_path_buf(),
                    name: n.clone(),
                    known: self
                        .workloads
                        .iter()
                        .map(|w| w.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            }
        }
        self.workloads.retain(|w| names.contains(&w.name));
        Ok(())
    }
}

/// The file being parsed, for errors that name its line and key.
struct Cx<'a> {
    path: &'a Path,
    text: &'a str,
}

/// How the rounds run their subjects, checked.
struct RoundsRun {
    schedule: crate::spec::Schedule,
    windows_per_start: u32,
    max_disturbance: Option<f64>,
}

/// The comparison-wide settings, checked.
struct Settings {
    rounds: u32,
    noise_band: f64,
    alpha: f64,
    grace_s: f64,
    on_failure: OnFailure,
    test: Option<TestKind>,
}

impl Cx<'_> {
    /// A value that parses but makes no sense. Defaults and absent tables carry the span
    /// 0..0: no place in the text, so the key is looked up instead (a whole
    /// `[[subject]]` span is narrowed to its key).
    fn invalid(&self, span: std::ops::Range<usize>, key: String, message: String) -> ConfigError {
        let span = Some(span).filter(|s| *s != (0..0));
        ConfigError::Invalid(dyno_model::ConfigDiagnostic::new(
            self.path,
            self.text,
            span,
            Some(&key),
            message,
        ))
    }

    /// Rounds, noise band, alpha, grace period, `on_failure` and `test`.
    fn settings(&self, raw: &RawFile) -> Result<Settings, ConfigError> {
        crate::bounds::count(
            i64::from(*raw.rounds.get_ref()),
            &crate::bounds::ROUNDS,
            "rounds",
        )
        .map_err(|why| self.invalid(raw.rounds.span(), "rounds".into(), why))?;
        let nb = *raw.noise_band.get_ref();
        if !(0.0..1.0).contains(&nb) {
            return Err(self.invalid(
                raw.noise_band.span(),
                "noise_band".into(),
                format!("{nb} is not in [0, 1)"),
            ));
        }
        let alpha = *raw.alpha.get_ref();
        if !(alpha > 0.0 && alpha < 1.0) {
            return Err(self.invalid(
                raw.alpha.span(),
                "alpha".into(),
                format!("{alpha} is not in (0, 1)"),
            ));
        }
        let grace =
            crate::bounds::within(*raw.grace_s.get_ref(), &crate::bounds::GRACE_S, "seconds")
                .map_err(|why| self.invalid(raw.grace_s.span(), "grace_s".into(), why))?;
        let on_failure = match raw
            .on_failure
            .as_ref()
            .map(|v| (v.span(), v.get_ref().as_str()))
        {
            None | Some((_, "give_up")) => OnFailure::GiveUp,
            Some((_, "stop")) => OnFailure::Stop,
            Some((_, "continue")) => OnFailure::Continue,
            Some((span, other)) => {
                return Err(self.invalid(
                    span,
                    "on_failure".into(),
                    format!("`{other}` is not `give_up`, `stop` or `continue`"),
                ))
            }
        };
        let test = match raw.test.as_ref() {
            None => None,
            Some(t) => Some(TestKind::parse(t.get_ref()).ok_or_else(|| {
                self.invalid(
                    t.span(),
                    "test".into(),
                    format!(
                        "`{}` is not `paired`, `signed-rank` or `unpaired`",
                        t.get_ref()
                    ),
                )
            })?),
        };
        Ok(Settings {
            rounds: *raw.rounds.get_ref(),
            noise_band: nb,
            alpha,
            grace_s: grace,
            on_failure,
            test,
        })
    }

    /// `schedule`, `windows_per_start` and `max_disturbance` (default: off), against the
    /// subjects.
    fn rounds_run(
        &self,
        raw: &RawFile,
        subjects: &[SubjectSpec],
    ) -> Result<RoundsRun, ConfigError> {
        let span_of = |k: &str| match k {
            "schedule" => raw.schedule.as_ref().map(|v| v.span()),
            "windows_per_start" => raw.windows_per_start.as_ref().map(|v| v.span()),
            _ => None,
        };
        let schedule = match &raw.schedule {
            None => crate::spec::Schedule::Interleaved,
            Some(v) => schedule::parse_schedule(v.get_ref())
                .map_err(|why| self.invalid(v.span(), "schedule".into(), why))?,
        };
        let windows_per_start = match &raw.windows_per_start {
            None => 1,
            Some(v) => schedule::check_windows_per_start(*v.get_ref())
                .map_err(|why| self.invalid(v.span(), "windows_per_start".into(), why))?,
        };
        let max_disturbance = match &raw.max_disturbance {
            // Off unless asked for: on a shared machine every execution would be run
            // again, and a comparison's length would depend on its neighbours.
            None => None,
            Some(v) => schedule::parse_max_disturbance(v.get_ref())
                .map_err(|why| self.invalid(v.span(), "max_disturbance".into(), why))?,
        };
        schedule::check_subjects(schedule, windows_per_start, subjects)
            .map_err(|(k, why)| self.invalid(span_of(&k).unwrap_or(0..0), k, why))?;
        Ok(RoundsRun {
            schedule,
            windows_per_start,
            max_disturbance,
        })
    }

    /// The precision target and its budget (`precision`, `max_rounds`, `max_minutes`): a
    /// precision in (0, 100%) and at least the noise band, budgets above 0, no fixed
    /// `rounds` and no test but the sequential one beside it.
    fn sequential(
        &self,
        raw: &RawFile,
        settings: &Settings,
    ) -> Result<Option<Sequential>, ConfigError> {
        let Some(value) = &raw.precision else {
            for (given, key) in [
                (raw.max_rounds.as_ref().map(|v| v.span()), "max_rounds"),
                (raw.max_minutes.as_ref().map(|v| v.span()), "max_minutes"),
            ] {
                if let Some(span) = given {
                    return Err(self.invalid(
                        span,
                        key.into(),
                        "a budget for reaching a precision: give `precision` too (e.g. precision = \"5%\"), or fix the rounds with `rounds`".into(),
                    ));
                }
            }
            return Ok(None);
        };
        let precision = crate::overrides::parse_precision(value.get_ref())
            .map_err(|why| self.invalid(value.span(), "precision".into(), why))?;
        if precision < settings.noise_band {
            return Err(self.invalid(
                value.span(),
                "precision".into(),
                format!(
                    "{}% is inside the noise band ({}%), which no verdict can go below: lower `noise_band` or ask for at least {}%",
                    precision * 100.0,
                    settings.noise_band * 100.0,
                    settings.noise_band * 100.0
                ),
            ));
        }
        if raw.rounds.span() != (0..0) {
            return Err(self.invalid(
                raw.rounds.span(),
                "rounds".into(),
                "a precision target decides the rounds: leave `rounds` out and bound them with `max_rounds`".into(),
            ));
        }
        if let Some(t) = raw.test.as_ref().filter(|t| t.get_ref() != "sequential") {
            return Err(self.invalid(
                t.span(),
                "test".into(),
                format!(
                    "`{}` cannot be looked at after every round: a precision target is judged by the sequential test (leave `test` out)",
                    t.get_ref()
                ),
            ));
        }
        let max_rounds = match &raw.max_rounds {
            None => crate::spec::DEFAULT_MAX_ROUNDS,
            Some(r) => {
                crate::bounds::count(*r.get_ref(), &(2..=*crate::bounds::ROUNDS.end()), "rounds")
                    .map_err(|why| {
                        self.invalid(
                            r.span(),
                            "max_rounds".into(),
                            format!("not a budget: {why}"),
                        )
                    })?
            }
        };
        let max_minutes = match &raw.max_minutes {
            None => crate::spec::DEFAULT_MAX_MINUTES,
            Some(m) => crate::bounds::within(*m.get_ref(), &crate::bounds::MAX_MINUTES, "minutes")
                .map_err(|why| {
                    self.invalid(
                        m.span(),
                        "max_minutes".into(),
                        format!("not a budget: {why}"),
                    )
                })?,
        };
        Ok(Some(Sequential {
            precision,
            max_rounds,
            max_minutes,
        }))
    }

    /// The `primary` metrics: named, none empty, none twice.
    fn primary(&self, raw: &RawFile) -> Result<Vec<String>, ConfigError> {
        let mut primary: Vec<String> = Vec::new();
        let Some(list) = &raw.primary else {
            return Ok(primary);
        };
        if list.get_ref().is_empty() {
            return Err(self.invalid(
                list.span(),
                "primary".into(),
                "name at least one metric (e.g. \"cpu_s_per_tx\"), or leave `primary` out to judge every metric as primary".into(),
            ));
        }
        for name in list.get_ref() {
            let n = name.get_ref().trim();
            let why = if n.is_empty() {
                Some("a metric name cannot be empty".to_string())
            } else if primary.iter().any(|p| p == n) {
                Some(format!("`{n}` is named twice"))
            } else {
                None
            };
            if let Some(why) = why {
                return Err(self.invalid(name.span(), "primary".into(), why));
            }
            primary.push(n.to_string());
        }
        Ok(primary)
    }

    /// The `i`th `[[subject]]`: a cluster, or a process given by `command` or `git`.
    fn subject(
        &self,
        i: usize,
        raw: &Spanned<RawSubject>,
        earlier: &[SubjectSpec],
    ) -> Result<SubjectSpec, ConfigError> {
        let span = raw.span();
        let key = |k: &str| format!("subject[{i}].{k}");
        let s = raw.get_ref();
        crate::bounds::check_name(&s.name)
            .map_err(|why| self.invalid(span.clone(), key("name"), why))?;
        if earlier.iter().any(|o| o.name == s.name) {
            return Err(self.invalid(span, key("name"), format!("`{}` is used twice", s.name)));
        }
        let cluster = crate::cluster_subject::validate(&written(s), self.path)
            .map_err(|(k, why)| self.invalid(span.clone(), key(k), why))?;
        let declarations = || {
            check_declarations(&s.metrics)
                .map_err(|(at, k, why)| self.invalid(at, key(&format!("metrics.{k}")), why))
        };
        let cpus = match &s.cpus {
            None => None,
            Some(c) => Some(
                crate::pinning::parse_cpus(c.get_ref(), &crate::pinning::machine_cpus())
                    .map_err(|why| self.invalid(c.span(), key("cpus"), why))?,
            ),
        };
        if let Some(cluster) = cluster {
            return Ok(SubjectSpec {
                name: s.name.clone(),
                command: Vec::new(),
                git: None,
                env: BTreeMap::new(),
                cwd: None,
                metrics: declarations()?,
                ready: None,
                addresses: BTreeMap::new(),
                cluster: Some(cluster),
                cpus: None,
            });
        }
        let (command, git) = self.command(s, span.clone(), &key)?;
        if let Some(cwd) = &s.cwd {
            // Nothing fills a working directory: `{dir}` there would be a literal name.
            crate::placeholder::check_known(&cwd.to_string_lossy(), &[], false)
                .map_err(|why| self.invalid(span.clone(), key("cwd"), why))?;
            if !cwd.is_dir() {
                return Err(self.invalid(
                    span,
                    key("cwd"),
                    format!("{} is not a directory", cwd.display()),
                ));
            }
        }
        if let Some(url) = &s.metrics.prometheus {
            if let Err(why) = crate::prometheus::Endpoint::parse(&crate::placeholder::stand_in(url))
            {
                return Err(self.invalid(span, key("metrics.prometheus"), why.to_string()));
            }
        }
        let metrics = declarations()?;
        let ready = match &s.ready {
            None => None,
            Some(r) => Some(r.validate().map_err(|(k, why)| {
                let k = if k == "ready" {
                    k
                } else {
                    format!("ready.{k}")
                };
                self.invalid(span.clone(), key(&k), why)
            })?),
        };
        let subject = SubjectSpec {
            name: s.name.clone(),
            command,
            git,
            env: s.env.clone(),
            cwd: s.cwd.clone(),
            metrics,
            ready,
            addresses: s.addresses.clone(),
            cluster: None,
            cpus,
        };
        crate::slot::check_subject(&subject)
            .map_err(|(k, why)| self.invalid(span, key(&k), why))?;
        Ok(subject)
    }

    /// A process subject's command, or the git revision it is built from (resolved to a
    /// commit now, so a wrong revision is refused before anything starts).
    fn command(
        &self,
        s: &RawSubject,
        span: std::ops::Range<usize>,
        key: &dyn Fn(&str) -> String,
    ) -> Result<(Vec<String>, Option<GitSource>), ConfigError> {
        match (&s.command, &s.git, &s.args) {
            (Some(_), Some(_), _) => Err(self.invalid(
                span,
                key("git"),
                "give either `command` or `git`, not both".into(),
            )),
            (None, None, _) => {
                Err(self.invalid(span, key("command"), "missing (or give `git`)".into()))
            }
            (Some(_), None, Some(_)) => Err(self.invalid(
                span,
                key("args"),
                "only for `git` subjects; put the arguments in `command`".into(),
            )),
            (None, Some(g), args) => {
                let g = crate::gitbuild::checked(g, s.cwd.as_deref())
                    .map_err(|(k, why)| self.invalid(span, key(&k), why))?;
                Ok((args.clone().unwrap_or_default(), Some(g)))
            }
            (Some(c), None, None) => {
                let Some(program) = c.first() else {
                    return Err(self.invalid(span, key("command"), "is empty".into()));
                };
                if let Err(why) = check_executable(program, s.cwd.as_deref()) {
                    return Err(self.invalid(span, key("command"), why.to_string()));
                }
                Ok((c.clone(), None))
            }
        }
    }

    /// The `i`th `[[workload]]`, its load command checked against the subjects'
    /// addresses and its unit of work against where its metric can come from.
    fn workload(
        &self,
        i: usize,
        raw: &Spanned<RawWorkload>,
        subjects: &[SubjectSpec],
        earlier: &[WorkloadSpec],
    ) -> Result<WorkloadSpec, ConfigError> {
        let span = raw.span();
        let key = |k: &str| format!("workload[{i}].{k}");
        let w = raw.get_ref();
        let refuse = |k: &str, why: &str| Err(self.invalid(span.clone(), key(k), why.into()));
        if let Err(why) = crate::bounds::check_name(&w.name) {
            return refuse("name", &why);
        }
        if earlier.iter().any(|o| o.name == w.name) {
            return refuse("name", &format!("`{}` is used twice", w.name));
        }
        use crate::bounds::{within, MEASURE_S, RATE_TPS, WARMUP_S};
        for (k, value, range, unit) in [
            (
                "rate",
                w.rate,
                RATE_TPS,
                "tx/s (a fixed load, not flat out)",
            ),
            ("warmup_s", w.warmup_s, WARMUP_S, "seconds"),
            (
                "measure_s",
                w.measure_s,
                MEASURE_S,
                "seconds (one sample a second)",
            ),
        ] {
            if let Err(why) = within(value, &range, unit) {
                return refuse(k, &why);
            }
        }
        for arg in &w.args {
            if let Err(why) =
                crate::placeholder::check_known(arg, &crate::placeholder::IN_COMMAND, true)
            {
                return refuse("args", &why);
            }
        }
        let load = match &w.load {
            None => None,
            Some(l) => {
                let spec = l.validate(None).map_err(|(k, why)| {
                    self.invalid(span.clone(), key(&format!("load.{k}")), why)
                })?;
                if let Err((subject, name)) = crate::load::check_placeholders(&spec, subjects) {
                    return refuse(
                        "load.command",
                        &format!("`{{{name}}}` is not a placeholder of subject `{subject}` (give it `addresses = {{ {name} = \"...\" }}`)"),
                    );
                }
                if let Err((subject, name)) = crate::slot::check_load(&spec, subjects) {
                    return refuse(
                        "load.command",
                        &format!("`{{port:{name}}}` is no port of subject `{subject}`: name it in that subject's `command` or `env`, where the node is told it"),
                    );
                }
                Some(spec)
            }
        };
        let work = match &w.work {
            None => None,
            Some(raw) => Some(
                check_work(raw, load.is_some(), subjects)
                    .map_err(|(k, why)| self.invalid(span.clone(), key(&k), why))?,
            ),
        };
        Ok(WorkloadSpec {
            name: w.name.clone(),
            rate: w.rate,
            warmup_s: w.warmup_s,
            measure_s: w.measure_s,
            args: w.args.clone(),
            load,
            work,
        })
    }
}

/// What a `[[subject]]` says about a cluster, and which process-only keys it sets.
fn written(s: &RawSubject) -> crate::cluster_subject::Written<'_> {
    let metrics_given = s.metrics.prometheus.is_some()
        || s.metrics.jsonl.is_some()
        || !s.metrics.prometheus_metrics.is_empty();
    crate::cluster_subject::Written {
        cluster: s.cluster.as_ref(),
        node_command: s.node_command.as_ref(),
        node_binary: s.node_binary.as_ref(),
        process_keys: [
            ("command", s.command.is_some()),
            ("git", s.git.is_some()),
            ("args", s.args.is_some()),
            ("env", !s.env.is_empty()),
            ("cwd", s.cwd.is_some()),
            ("metrics", metrics_given),
            ("ready", s.ready.is_some()),
            ("addresses", !s.addresses.is_empty()),
            ("cpus", s.cpus.is_some()),
        ]
        .into_iter()
        .filter_map(|(k, given)| given.then_some(k))
        .collect(),
    }
}

/// Checks the declared names of a `metrics` table (each a valid pattern, none matching a
/// name of another list) and returns the table; errors give the entry's place, its key
/// (`lower_is_better[2]`) and what is wrong.
/// A workload's `work`, checked against where its metric can come from: `load:` needs a
/// load command, `node:` a Prometheus endpoint and `jsonl:` a JSON-lines file on every
/// subject (a cluster subject brings its own metrics and is not checked here).
fn check_work(
    raw: &work::RawWork,
    has_load: bool,
    subjects: &[SubjectSpec],
) -> Result<dyno_judge::work::WorkUnit, (String, String)> {
    let unit = raw.validate()?;
    let lacking = |has: fn(&SubjectSpec) -> bool| {
        subjects
            .iter()
            .find(|s| s.cluster.is_none() && !has(s))
            .map(|s| s.name.clone())
    };
    let missing = match unit.metric.split(':').next() {
        Some("load") if !has_load => Some("the workload has no `load` command".to_string()),
        Some("node") => lacking(|s| s.metrics.prometheus.is_some())
            .map(|s| format!("subject `{s}` has no `metrics.prometheus` endpoint")),
        Some("jsonl") => lacking(|s| s.metrics.jsonl.is_some())
            .map(|s| format!("subject `{s}` has no `metrics.jsonl` file")),
        _ => None,
    };
    match missing {
        Some(why) => Err((
            "work".into(),
            format!("`{}` cannot be recorded: {why}", unit.metric),
        )),
        None => Ok(unit),
    }
}

fn check_declarations(
    m: &RawMetrics,
) -> Result<MetricSources, (std::ops::Range<usize>, String, String)> {
    use crate::declared::NamePattern;
    let lists = [
        ("higher_is_better", &m.higher_is_better),
        ("lower_is_better", &m.lower_is_better),
        ("ignore", &m.ignore),
    ];
    let mut seen: Vec<(&str, usize, &str, NamePattern)> = Vec::new();
    for (list, entries) in lists {
        for (i, e) in entries.iter().enumerate() {
            let at = || (e.span(), format!("{list}[{i}]"));
            let pattern = NamePattern::parse(e.get_ref()).map_err(|why| {
                let (span, k) = at();
                (span, k, why.to_string())
            })?;
            if let Some((other, j, text, _)) = seen
                .iter()
                .find(|(l, _, _, p)| *l != list && p.overlaps(&pattern))
            {
                let (span, k) = at();
                return Err((
                    span,
                    k,
                    format!(
                        "`{}` is also covered by `{text}` in `{other}[{j}]`: a metric is in one list only",
                        e.get_ref()
                    ),
                ));
            }
            seen.push((list, i, e.get_ref(), pattern));
        }
    }
    let strings = |v: &[Spanned<String>]| v.iter().map(|e| e.get_ref().clone()).collect();
    Ok(MetricSources {
        prometheus: m.prometheus.clone(),
        prometheus_metrics: m.prometheus_metrics.clone(),
        jsonl: m.jsonl.clone(),
        higher_is_better: strings(&m.higher_is_better),
        lower_is_better: strings(&m.lower_is_better),
        ignore: strings(&m.ignore),
    })
}

pub mod schedule;
#[cfg(test)]
mod tests;
mod work;
