//! The study file: which project to build, the matrix of profile settings, the baselines,
//! the benchmarks with their metric extractors, and the racing parameters.
//!
//! The file is parsed into typed structs (`deny_unknown_fields` everywhere) and validated
//! before any work starts; every error names the file, the line and the key.

use crate::error::TuneError;
use crate::extract::Extract;
use crate::profile::{Lto, OptLevel, Panic, Pgo, TargetCpu};
use crate::settings::Settings;
use crate::study_toml::{duration_value, Budget, Ctx};
pub use crate::study_toml::{line_col, parse_duration, DEFAULT_BENCHMARK_TIMEOUT_S};
pub use crate::training::PgoSettings;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use toml::Spanned;

/// A validated study.
#[derive(Debug, Clone)]
pub struct Study {
    /// The study file.
    pub path: PathBuf,
    /// The project to build.
    pub project: Project,
    /// The settings to vary.
    pub matrix: Matrix,
    /// Combinations not to build.
    pub exclude: Vec<Exclude>,
    /// Prebuilt binaries measured beside the variants.
    pub baselines: Vec<Baseline>,
    /// What to run and how to read it.
    pub benchmarks: Vec<Benchmark>,
    /// Rounds, budget and statistics.
    pub run: RunSettings,
    /// How PGO variants are trained (`[pgo]`).
    pub pgo: PgoSettings,
}

/// `[project]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Project {
    /// Absolute path of the project's Cargo.toml.
    pub manifest: PathBuf,
    /// The package holding the binary (`-p`); `None` for a single-package manifest.
    pub package: Option<String>,
    /// The binary target (`--bin`).
    pub bin: String,
    /// The profile the variants are built with (default `production`, inheriting release).
    pub profile: String,
}

/// `[matrix]`: every dimension is a list of alternatives. A dimension left out is not set
/// at all: the variant inherits it from the project's own profile.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Matrix {
    /// Rustup toolchains (`stable`, `nightly`, `1.80.0`).
    #[serde(default)]
    pub toolchain: Vec<String>,
    /// `-C target-cpu`.
    #[serde(default)]
    pub target_cpu: Vec<TargetCpu>,
    /// `opt-level`.
    #[serde(default)]
    pub opt_level: Vec<OptLevel>,
    /// `lto`.
    #[serde(default)]
    pub lto: Vec<Lto>,
    /// `codegen-units`.
    #[serde(default)]
    pub codegen_units: Vec<u32>,
    /// `panic`.
    #[serde(default)]
    pub panic: Vec<Panic>,
    /// Alternative strings of extra RUSTFLAGS (`""` = none).
    #[serde(default)]
    pub rustflags: Vec<String>,
    /// Profile-guided optimisation: `"off"`, `"on"`, `"on+bolt"`.
    #[serde(default)]
    pub pgo: Vec<Pgo>,
}

/// One `exclude` filter: a variant matching every key given is not built. Its keys are
/// a variant's [`Settings`], each one given matching that value, each one left out
/// matching any.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Exclude {
    /// The settings a variant must have to be left out (`None`: any value).
    pub matching: Settings,
}

/// `[[baseline]]`: a binary that is measured but not built (e.g. the official release).
#[derive(Debug, Clone, PartialEq)]
pub struct Baseline {
    /// Its name in reports.
    pub name: String,
    /// Absolute path of the binary.
    pub binary: PathBuf,
}

/// How a benchmark is invoked.
#[derive(Debug, Clone, PartialEq)]
pub enum Invocation {
    /// The subject's binary is the program; these are its arguments.
    Args(Vec<String>),
    /// A full command line; `{bin}` is replaced by the subject's binary.
    Command(Vec<String>),
}

impl Invocation {
    /// The command line for one subject's binary.
    pub fn command_line(&self, binary: &Path) -> Vec<String> {
        let bin = binary.display().to_string();
        match self {
            Invocation::Args(args) => std::iter::once(bin).chain(args.iter().cloned()).collect(),
            Invocation::Command(cmd) => cmd.iter().map(|a| a.replace("{bin}", &bin)).collect(),
        }
    }
}

/// `[[benchmark]]`.
#[derive(Debug, Clone)]
pub struct Benchmark {
    /// Its name (a label on every sample).
    pub name: String,
    /// What to run.
    pub invocation: Invocation,
    /// How to read metrics from what it prints.
    pub extract: Extract,
    /// A run still going after this many seconds is killed and recorded as failed
    /// (`timeout`, default [`DEFAULT_BENCHMARK_TIMEOUT_S`]).
    pub timeout_s: f64,
}

/// `[run]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunSettings {
    /// Most rounds any subject runs (`max_rounds`, alias `repetitions`).
    pub max_rounds: u32,
    /// Rounds before any variant may be eliminated.
    pub min_rounds: u32,
    /// Seconds of benchmark time after which no new round starts.
    pub time_budget_s: Option<f64>,
    /// Family-wise error rate of each racing decision.
    pub alpha: f64,
    /// Smallest relative difference worth acting on.
    pub min_effect: f64,
    /// Conditional power below which racing stops trying to place a variant near the
    /// `min_effect` threshold (0 = measure it up to `max_rounds`).
    pub futility: f64,
    /// Parallel builds.
    pub jobs: usize,
    /// Seed of the per-round shuffles.
    pub seed: u64,
}

/// Defaults, measured with `examples/racing_sim.rs` (variants 0%, 1%, 3% and 10% apart
/// under 1-3% noise) and `examples/racing_replay.rs` (a real study's samples):
/// - `max_rounds` 40: only a cap. Racing stops each variant when more rounds of it can no
///   longer change the recommendation; with these defaults it used 0.08-0.19 of 40
///   rounds' runs in the simulation and reached the same recommended set in every seed.
/// - `min_rounds` 3: the paired t-test's p-value is continuous, so three rounds of a large
///   gap are enough to eliminate (two would leave one degree of freedom, an interval too
///   wide to act on); with rank tests this had to be 5 (p >= 1/252 on 5 against 5).
/// - `alpha` 0.05: the error rate of each decision, Holm-corrected across variants.
/// - `min_effect` 0.05: differences below about 5% between builds of the same code often
///   come from code layout and the machine's state and do not survive another machine or
///   a reboot; and the runs needed to place a variant grow with (noise / its distance to
///   the threshold)^2, so a finer threshold costs many rounds for each variant near it.
///   The report still orders the recommended variants by median.
/// - `futility` 0.1: a variant whose chance of being placed beyond the threshold by
///   `max_rounds` is under 10% stops being measured (see `dyno_stats::paired_settled`).
impl Default for RunSettings {
    fn default() -> Self {
        RunSettings {
            max_rounds: 40,
            min_rounds: 3,
            time_budget_s: None,
            alpha: 0.05,
            min_effect: 0.05,
            futility: 0.1,
            jobs: 1,
            seed: 0,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStudy {
    project: Spanned<RawProject>,
    #[serde(default)]
    matrix: RawMatrix,
    #[serde(default)]
    baseline: Vec<Spanned<RawBaseline>>,
    #[serde(default)]
    benchmark: Vec<Spanned<RawBenchmark>>,
    #[serde(default)]
    run: Option<Spanned<RawRun>>,
    #[serde(default)]
    pgo: Option<Spanned<crate::training::RawPgo>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawMatrix {
    #[serde(default)]
    toolchain: Vec<String>,
    #[serde(default)]
    target_cpu: Vec<TargetCpu>,
    #[serde(default)]
    opt_level: Vec<OptLevel>,
    #[serde(default)]
    lto: Vec<Lto>,
    #[serde(default)]
    codegen_units: Vec<u32>,
    #[serde(default)]
    panic: Vec<Panic>,
    #[serde(default)]
    rustflags: Vec<String>,
    #[serde(default)]
    pgo: Vec<Pgo>,
    #[serde(default)]
    exclude: Vec<Spanned<Exclude>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProject {
    manifest: Spanned<String>,
    package: Option<String>,
    bin: Spanned<String>,
    profile: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBaseline {
    name: String,
    binary: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBenchmark {
    name: String,
    args: Option<Vec<String>>,
    command: Option<Vec<String>>,
    extract: Spanned<Extract>,
    timeout: Option<Spanned<Budget>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRun {
    repetitions: Option<Spanned<u32>>,
    max_rounds: Option<Spanned<u32>>,
    min_rounds: Option<Spanned<u32>>,
    time_budget: Option<Spanned<Budget>>,
    alpha: Option<Spanned<f64>>,
    min_effect: Option<Spanned<f64>>,
    futility: Option<Spanned<f64>>,
    jobs: Option<Spanned<u32>>,
    seed: Option<u64>,
}

impl Study {
    /// The training command lines of PGO variants, with `{bin}` (or, for benchmarks given
    /// as `args`, the `{bin}` program) still to be replaced, and whether they are the
    /// benchmarks' own commands (training on the measured input flatters PGO).
    pub fn training_commands(&self) -> (Vec<Vec<String>>, bool) {
        if !self.pgo.training.is_empty() {
            let measured: Vec<Vec<String>> = self
                .benchmarks
                .iter()
                .map(|b| b.invocation.command_line(Path::new("{bin}")))
                .collect();
            let same = self.pgo.training.iter().all(|t| measured.contains(t));
            return (self.pgo.training.clone(), same);
        }
        let own = self
            .benchmarks
            .iter()
            .map(|b| b.invocation.command_line(Path::new("{bin}")))
            .collect();
        (own, true)
    }
}

impl Study {
    /// Reads, parses and validates a study file. Nothing outside the file is checked
    /// (toolchains, the manifest's binaries): see [`crate::check_environment`].
    pub fn load(path: &Path) -> Result<Study, TuneError> {
        let text = std::fs::read_to_string(path).map_err(|source| TuneError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Study::parse(path, &text)
    }

    /// Parses and validates study text; `path` is used for messages and relative paths.
    pub fn parse(path: &Path, text: &str) -> Result<Study, TuneError> {
        let cx = Ctx::new(path, text);
        let raw: RawStudy =
            dyno_model::ConfigDiagnostic::parse_toml(path, text).map_err(TuneError::Study)?;
        let project = project(&cx, raw.project)?;
        let m = raw.matrix;
        let matrix = Matrix {
            toolchain: m.toolchain,
            target_cpu: m.target_cpu,
            opt_level: m.opt_level,
            lto: m.lto,
            codegen_units: m.codegen_units,
            panic: m.panic,
            rustflags: m.rustflags,
            pgo: m.pgo,
        };
        check_matrix(&cx, &matrix)?;
        let mut exclude = Vec::new();
        for rule in m.exclude {
            check_exclude(&cx, &matrix, &rule)?;
            exclude.push(rule.into_inner());
        }
        let mut baselines: Vec<Baseline> = Vec::new();
        for b in raw.baseline {
            let offset = b.span().start;
            let b = b.into_inner();
            if b.name.is_empty() || baselines.iter().any(|x| x.name == b.name) {
                return Err(cx.err(
                    offset,
                    format!("baseline `name`: {:?} is empty or used twice", b.name),
                ));
            }
            baselines.push(Baseline {
                name: b.name,
                binary: cx.resolve(&b.binary),
            });
        }
        let benchmarks = benchmarks(&cx, raw.benchmark)?;
        let run = run_settings(&cx, raw.run)?;
        let pgo = crate::training::pgo_settings(&cx, raw.pgo)?;
        Ok(Study {
            path: path.to_path_buf(),
            project,
            matrix,
            exclude,
            baselines,
            benchmarks,
            run,
            pgo,
        })
    }

    /// The directory holding the study's target directories and build records:
    /// `<dir of the study file>/<file stem>.tune/`.
    pub fn work_dir(&self) -> PathBuf {
        let stem = self
            .path
            .file_stem()
            .map_or_else(|| "study".into(), |s| s.to_string_lossy().into_owned());
        let dir = self.path.parent().unwrap_or(Path::new("."));
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        // Absolute, so binaries and target directories do not depend on the caller's cwd.
        let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
        dir.join(format!("{stem}.tune"))
    }

    /// A stable key of the study in the results store: a hash of its absolute path.
    pub fn key(&self) -> String {
        let abs = self
            .path
            .canonicalize()
            .unwrap_or_else(|_| self.path.clone());
        crate::short_hash(abs.to_string_lossy().as_bytes())
    }
}

fn project(cx: &Ctx, raw: Spanned<RawProject>) -> Result<Project, TuneError> {
    let raw = raw.into_inner();
    let manifest = raw.manifest.get_ref();
    if !manifest.ends_with("Cargo.toml") {
        return Err(cx.err(
            raw.manifest.span().start,
            format!("project `manifest`: {manifest:?} is not a path to a Cargo.toml"),
        ));
    }
    if raw.bin.get_ref().is_empty() {
        return Err(cx.err(raw.bin.span().start, "project `bin` is empty"));
    }
    let profile = match raw.profile {
        None => "production".to_string(),
        Some(p) => {
            let name = p.get_ref();
            let ok = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
                && name != "dev"
                && name != "test"
                && name != "bench";
            if !ok {
                return Err(cx.err(
                    p.span().start,
                    format!("project `profile`: {name:?} is not a usable profile name (use `release` or a new name such as `production`)"),
                ));
            }
            name.clone()
        }
    };
    Ok(Project {
        manifest: cx.resolve(manifest),
        package: raw.package,
        bin: raw.bin.into_inner(),
        profile,
    })
}

fn check_matrix(cx: &Ctx, m: &Matrix) -> Result<(), TuneError> {
    let find = |key: &str| cx.text.find(&format!("\n{key}")).map_or(0, |i| i + 1);
    let dup = |key: &str, n: usize, distinct: usize| -> Result<(), TuneError> {
        if n != distinct {
            return Err(cx.err(find(key), format!("matrix `{key}` lists a value twice")));
        }
        Ok(())
    };
    let distinct = |v: Vec<String>| {
        let n = v.len();
        let set: std::collections::BTreeSet<String> = v.into_iter().collect();
        (n, set.len())
    };
    let (n, d) = distinct(m.toolchain.clone());
    dup("toolchain", n, d)?;
    let (n, d) = distinct(m.target_cpu.iter().map(|c| format!("{c:?}")).collect());
    dup("target_cpu", n, d)?;
    let (n, d) = distinct(m.opt_level.iter().map(|c| format!("{c:?}")).collect());
    dup("opt_level", n, d)?;
    let (n, d) = distinct(m.lto.iter().map(|c| format!("{c:?}")).collect());
    dup("lto", n, d)?;
    let (n, d) = distinct(m.codegen_units.iter().map(|c| c.to_string()).collect());
    dup("codegen_units", n, d)?;
    let (n, d) = distinct(m.panic.iter().map(|c| format!("{c:?}")).collect());
    dup("panic", n, d)?;
    let (n, d) = distinct(m.rustflags.clone());
    dup("rustflags", n, d)?;
    let (n, d) = distinct(m.pgo.iter().map(|c| c.value().to_string()).collect());
    dup("pgo", n, d)?;
    if m.codegen_units.contains(&0) {
        return Err(cx.err(
            find("codegen_units"),
            "matrix `codegen_units`: 0 is not allowed (use 1 or more)",
        ));
    }
    if let Some(t) = m
        .toolchain
        .iter()
        .find(|t| t.is_empty() || t.contains(char::is_whitespace) || t.starts_with('+'))
    {
        return Err(cx.err(
            find("toolchain"),
            format!("matrix `toolchain`: {t:?} is not a toolchain name"),
        ));
    }
    for flags in &m.rustflags {
        if flags.contains("target-cpu") {
            return Err(cx.err(
                find("rustflags"),
                "matrix `rustflags`: set the CPU with `target_cpu`, not in rustflags",
            ));
        }
        if flags.contains("profile-generate") || flags.contains("profile-use") {
            return Err(cx.err(
                find("rustflags"),
                "matrix `rustflags`: set profile-guided builds with `pgo = [\"off\", \"on\"]`, not in rustflags",
            ));
        }
        if flags.contains("-C lto") || flags.contains("-Clto") {
            return Err(cx.err(
                find("rustflags"),
                "matrix `rustflags`: set LTO with `lto` (-C lto in RUSTFLAGS fails for libraries)",
            ));
        }
    }
    Ok(())
}

fn check_exclude(cx: &Ctx, m: &Matrix, rule: &Spanned<Exclude>) -> Result<(), TuneError> {
    let at = rule.span().start;
    let r = &rule.get_ref().matching;
    let bad = |key: &str, value: String| {
        Err(cx.err(
            at,
            format!("exclude `{key}`: {value} is not one of matrix.{key}"),
        ))
    };
    if let Some(v) = &r.toolchain {
        if !m.toolchain.contains(v) {
            return bad("toolchain", format!("{v:?}"));
        }
    }
    if let Some(v) = &r.target_cpu {
        if !m.target_cpu.contains(v) {
            return bad("target_cpu", format!("{:?}", v.flag().unwrap_or("none")));
        }
    }
    if let Some(v) = &r.opt_level {
        if !m.opt_level.contains(v) {
            return bad("opt_level", v.toml_value());
        }
    }
    if let Some(v) = &r.lto {
        if !m.lto.contains(v) {
            return bad("lto", v.toml_value().to_string());
        }
    }
    if let Some(v) = &r.codegen_units {
        if !m.codegen_units.contains(v) {
            return bad("codegen_units", v.to_string());
        }
    }
    if let Some(v) = &r.panic {
        if !m.panic.contains(v) {
            return bad("panic", format!("{:?}", v.cargo_value()));
        }
    }
    if let Some(v) = &r.rustflags {
        if !m.rustflags.contains(v) {
            return bad("rustflags", format!("{v:?}"));
        }
    }
    if let Some(v) = &r.pgo {
        if !m.pgo.contains(v) {
            return bad("pgo", format!("{:?}", v.value()));
        }
    }
    if *r == Settings::default() {
        return Err(cx.err(at, "exclude: an empty filter would exclude every variant"));
    }
    Ok(())
}

fn benchmarks(cx: &Ctx, raw: Vec<Spanned<RawBenchmark>>) -> Result<Vec<Benchmark>, TuneError> {
    if raw.is_empty() {
        return Err(cx.err(
            cx.text.len(),
            "no [[benchmark]]: add at least one (name, args or command, extract)",
        ));
    }
    let mut out: Vec<Benchmark> = Vec::new();
    let mut metric_names: Vec<String> = Vec::new();
    for b in raw {
        let at = b.span().start;
        let b = b.into_inner();
        if b.name.is_empty() || out.iter().any(|x| x.name == b.name) {
            return Err(cx.err(
                at,
                format!("benchmark `name`: {:?} is empty or used twice", b.name),
            ));
        }
        let invocation = match (b.args, b.command) {
            (Some(args), None) => Invocation::Args(args),
            (None, Some(cmd)) if !cmd.is_empty() => {
                if !cmd.iter().any(|a| a.contains("{bin}")) {
                    return Err(cx.err(at, format!("benchmark {:?} `command`: no {{bin}} placeholder, so every variant would run the same program", b.name)));
                }
                Invocation::Command(cmd)
            }
            (None, Some(_)) => return Err(cx.err(at, format!("benchmark {:?} `command` is empty", b.name))),
            _ => {
                return Err(cx.err(at, format!("benchmark {:?}: give exactly one of `args` (the variant's binary is the program) or `command` (with {{bin}})", b.name)))
            }
        };
        let ex_at = b.extract.span().start;
        let extract = b.extract.into_inner();
        extract
            .validate()
            .map_err(|m| cx.err(ex_at, format!("benchmark {:?} `extract`: {m}", b.name)))?;
        for name in extract.declared_metrics() {
            if metric_names.contains(&name) {
                return Err(cx.err(ex_at, format!("benchmark {:?} `extract`: metric {name:?} is also produced by another benchmark", b.name)));
            }
            metric_names.push(name);
        }
        let timeout_s = match b.timeout {
            None => DEFAULT_BENCHMARK_TIMEOUT_S,
            Some(v) => {
                let t_at = v.span().start;
                duration_value(v.into_inner())
                    .filter(|s| *s > 0.0)
                    .ok_or_else(|| cx.err(t_at, format!("benchmark {:?} `timeout`: not a positive duration (e.g. \"90s\", \"30m\")", b.name)))?
            }
        };
        out.push(Benchmark {
            name: b.name,
            invocation,
            extract,
            timeout_s,
        });
    }
    Ok(out)
}

/// The most parallel builds (`[run] jobs`, `--jobs`): each is a compiler with threads of
/// its own.
pub const MAX_JOBS: u32 = 256;

/// The most rounds (`[run] max_rounds`, `--max-rounds`).
pub const MAX_ROUNDS: u32 = 100_000;

fn run_settings(cx: &Ctx, raw: Option<Spanned<RawRun>>) -> Result<RunSettings, TuneError> {
    let mut s = RunSettings::default();
    let Some(raw) = raw else { return Ok(s) };
    let raw = raw.into_inner();
    if let (Some(a), Some(_)) = (&raw.repetitions, &raw.max_rounds) {
        return Err(cx.err(
            a.span().start,
            "run: give `repetitions` or `max_rounds`, not both (they are the same)",
        ));
    }
    if let Some(v) = raw.repetitions.or(raw.max_rounds) {
        if !(1..=MAX_ROUNDS).contains(v.get_ref()) {
            return Err(cx.err(
                v.span().start,
                format!(
                    "run `max_rounds` must be in 1..={MAX_ROUNDS} (as --max-rounds), got {}",
                    v.get_ref()
                ),
            ));
        }
        s.max_rounds = v.into_inner();
    }
    if let Some(v) = raw.min_rounds {
        if *v.get_ref() < 2 {
            return Err(cx.err(
                v.span().start,
                "run `min_rounds` must be at least 2 (a rank test needs samples)",
            ));
        }
        s.min_rounds = v.into_inner();
    }
    if s.min_rounds > s.max_rounds {
        s.min_rounds = s.max_rounds;
    }
    if let Some(v) = raw.time_budget {
        let at = v.span().start;
        s.time_budget_s = Some(duration_value(v.into_inner()).ok_or_else(|| {
            cx.err(
                at,
                "run `time_budget`: not a duration (e.g. \"90s\", \"30m\", \"2h\")",
            )
        })?);
    }
    if let Some(v) = raw.alpha {
        if !(*v.get_ref() > 0.0 && *v.get_ref() < 0.5) {
            return Err(cx.err(
                v.span().start,
                format!("run `alpha`: {} is outside (0, 0.5)", v.get_ref()),
            ));
        }
        s.alpha = v.into_inner();
    }
    if let Some(v) = raw.min_effect {
        if !(*v.get_ref() >= 0.0 && *v.get_ref() < 1.0) {
            return Err(cx.err(
                v.span().start,
                format!(
                    "run `min_effect`: {} is outside [0, 1) (0.01 = 1%)",
                    v.get_ref()
                ),
            ));
        }
        s.min_effect = v.into_inner();
    }
    if let Some(v) = raw.futility {
        if !(*v.get_ref() >= 0.0 && *v.get_ref() < 1.0) {
            return Err(cx.err(
                v.span().start,
                format!(
                    "run `futility`: {} is outside [0, 1) (a probability; 0 = off)",
                    v.get_ref()
                ),
            ));
        }
        s.futility = v.into_inner();
    }
    if let Some(v) = raw.jobs {
        if !(1..=MAX_JOBS).contains(v.get_ref()) {
            return Err(cx.err(
                v.span().start,
                format!(
                    "run `jobs` must be in 1..={MAX_JOBS} (as --jobs), got {}",
                    v.get_ref()
                ),
            ));
        }
        s.jobs = v.into_inner() as usize;
    }
    if let Some(seed) = raw.seed {
        s.seed = seed;
    }
    Ok(s)
}

/// The commented example `dyno tune init` writes.
pub const EXAMPLE: &str = include_str!("example.toml");
