//! The typed comparison: what a comparison file says once parsed and checked
//! ([`ComparisonFile`], its subjects and workloads, and the typed pieces they hold: a
//! cluster, a load command, a unit of work, the test).
//!
//! A leaf: the parser ([`crate::config`]) builds these types, and every other module
//! (the runner, the executors, the store records, the git builds) reads them, without
//! importing the parser or each other through it.

use dyno_judge::work::WorkUnit;
pub use dyno_judge::Schedule;
use dyno_judge::Sequential;
use dyno_judge::TestKind;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A subject built from a git revision: dyno extracts the revision (`git archive`, the
/// repository is not touched) and builds it through the build layer, cached per commit
/// and build settings (see [`crate::gitbuild`]): a Cargo project (`manifest`) with
/// `cargo build --profile release`, or any build (`repo` and `build`, a command line with
/// `{src}` and `{out}`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GitSource {
    /// Path of the project's Cargo.toml inside a git work tree (relative to the subject's
    /// `cwd` when given), for a Cargo project.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest: Option<PathBuf>,
    /// A directory of the repository (relative to the subject's `cwd` when given), for a
    /// `build` command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repo: Option<PathBuf>,
    /// Revision to build.
    pub rev: String,
    /// Package to build.
    #[serde(default)]
    pub package: Option<String>,
    /// Binary to run: a Cargo project's binary (default: `package`, else the manifest's
    /// package name); with `build`, the program's path (default `{out}`).
    #[serde(default)]
    pub bin: Option<String>,
    /// The build command (`{src}` the extracted revision, its working directory; `{out}`
    /// where the artifact goes, which it must name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<Vec<String>>,
    /// A Cargo project's profile (default `release`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// The commit `rev` resolved to, filled in by validation.
    #[serde(skip_deserializing)]
    pub commit: String,
}

/// Where a subject's own metrics come from, and what they mean.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MetricSources {
    /// Prometheus text endpoint, scraped once a second (`http://host:port/path`).
    #[serde(default)]
    pub prometheus: Option<String>,
    /// Metric families to keep from the endpoint (all when empty).
    #[serde(default)]
    pub prometheus_metrics: Vec<String>,
    /// A file the node writes JSON lines to; numeric fields of each line become samples.
    #[serde(default)]
    pub jsonl: Option<PathBuf>,
    /// Metrics whose larger values are better, whatever their names suggest (names as
    /// reports show them, e.g. `jsonl:tps`, or Prometheus family names; one `*` allowed
    /// at the start or the end). See [`crate::declared`].
    #[serde(default)]
    pub higher_is_better: Vec<String>,
    /// Metrics whose smaller values are better (as `higher_is_better`).
    #[serde(default)]
    pub lower_is_better: Vec<String>,
    /// Metrics not recorded at all (as `higher_is_better`).
    #[serde(default)]
    pub ignore: Vec<String>,
}

/// One release to measure.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SubjectSpec {
    /// Unique name.
    pub name: String,
    /// Program and arguments (placeholders not yet replaced). For a `git` subject, only
    /// the arguments until [`crate::gitbuild::build_all`] puts the built binary in front.
    pub command: Vec<String>,
    /// The revision to build, for subjects given as `git`.
    pub git: Option<GitSource>,
    /// Extra environment.
    pub env: BTreeMap<String, String>,
    /// Working directory.
    pub cwd: Option<PathBuf>,
    /// Its own metrics.
    pub metrics: MetricSources,
    /// How to know it is up.
    pub ready: Option<crate::readiness::ReadySpec>,
    /// Named addresses for `{name}` placeholders in load commands.
    pub addresses: BTreeMap<String, String>,
    /// A whole cluster instead of one process (see [`crate::cluster_subject`]); `command`
    /// is then empty. Left out of the fingerprint of a file without clusters, so stored
    /// comparisons made before clusters existed still resume.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterSubject>,
    /// The CPUs the node's process tree runs on (`cpus`; all when `None`): see
    /// [`crate::pinning`]. Left out of the fingerprint when not given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpus: Option<Vec<usize>>,
}

/// One fixed-rate load.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkloadSpec {
    /// Unique name.
    pub name: String,
    /// Transactions per second the load applies.
    pub rate: f64,
    /// Seconds between start and the measured window.
    pub warmup_s: f64,
    /// Seconds measured.
    pub measure_s: f64,
    /// Arguments appended to every subject's command.
    pub args: Vec<String>,
    /// An outside load generator run against the node (see [`crate::load`]).
    #[serde(default)]
    pub load: Option<LoadSpec>,
    /// The unit of work costs are given per (see [`dyno_judge::work`]). A judgement, not a
    /// measurement: left out of the fingerprint (kept in the stored comparison), so
    /// naming it continues an interrupted comparison.
    #[serde(skip)]
    pub work: Option<WorkUnit>,
}

/// A validated comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ComparisonFile {
    /// Rounds to run.
    pub rounds: u32,
    /// Relative change treated as noise.
    pub noise_band: f64,
    /// Family-wise significance level.
    pub alpha: f64,
    /// Seed of the order shuffle and the bootstrap.
    pub seed: u64,
    /// Seconds between SIGINT and SIGKILL.
    pub grace_s: f64,
    /// What a failed execution does to the comparison.
    pub on_failure: OnFailure,
    /// The test of every verdict (`test`); `None`: the default, paired. Left out of the
    /// fingerprint when not given, so files written before it still resume.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test: Option<TestKind>,
    /// The primary metrics (`primary`), judged in a Holm family of their own; empty:
    /// every metric is primary. A judgement, not a measurement: left out of the
    /// fingerprint, so correcting it continues an interrupted comparison.
    #[serde(skip)]
    pub primary: Vec<String>,
    /// A precision target (`precision`, `max_rounds`, `max_minutes`): rounds are added
    /// until it is reached ([`dyno_judge::precision`]); `rounds` is then `max_rounds`. When to
    /// stop, not what is measured: left out of the fingerprint (with `rounds`), so a
    /// comparison continued with another target or budget continues its sequence.
    #[serde(skip)]
    pub sequential: Option<Sequential>,
    /// How a round runs its subjects (`schedule`, `--schedule`): one at a time, or side
    /// by side (see [`crate::runner`]). Left out of the fingerprint when interleaved, so
    /// files written before it still resume.
    #[serde(skip_serializing_if = "Schedule::is_interleaved")]
    pub schedule: Schedule,
    /// Consecutive measured windows per start of the nodes (`windows_per_start`, at least
    /// 1). Left out of the fingerprint when 1.
    #[serde(skip_serializing_if = "is_one")]
    pub windows_per_start: u32,
    /// Other work on the machine during a window, in percent of one core, above which an
    /// interleaved execution is disturbed and run again (`max_disturbance`; `None`:
    /// `"off"`). Which executions are run again, not what is measured: left out of the
    /// fingerprint, so changing it continues an interrupted comparison.
    #[serde(skip)]
    pub max_disturbance: Option<f64>,
    /// Subjects; the first is the baseline.
    pub subjects: Vec<SubjectSpec>,
    /// Workloads.
    pub workloads: Vec<WorkloadSpec>,
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

/// `max_rounds` when not given.
pub const DEFAULT_MAX_ROUNDS: u32 = 100;

/// `max_minutes` when not given: an hour.
pub const DEFAULT_MAX_MINUTES: f64 = 60.0;

/// What a failed execution does to the comparison (`on_failure`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OnFailure {
    /// Stop when one subject failed [`crate::runner::FAILURES_IN_A_ROW`] times in a row.
    GiveUp,
    /// Stop at the first failure.
    Stop,
    /// Record failures and go on.
    Continue,
}

impl WorkloadSpec {
    /// The workload as its executions are stored (the judge's record of it: the figures
    /// judging reads, and the rest of this spec kept as written).
    pub fn stored(&self) -> dyno_judge::Workload {
        // Plain data with string keys: serialising cannot fail, and the record reads
        // back every field this spec writes.
        serde_json::to_value(self)
            .and_then(serde_json::from_value)
            .unwrap_or_else(|_| {
                dyno_judge::Workload::new(&self.name, self.rate, self.warmup_s, self.measure_s)
            })
    }
}

impl SubjectSpec {
    /// The command line for `workload`: the subject's command, then the workload's
    /// arguments, with placeholders replaced.
    pub fn command_for(&self, workload: &WorkloadSpec) -> Vec<String> {
        self.command
            .iter()
            .chain(workload.args.iter())
            .map(|a| substitute(a, workload))
            .collect()
    }

    /// The extra environment for `workload`, placeholders replaced, plus `DYNO_WORKLOAD`
    /// and `DYNO_RATE`.
    pub fn env_for(&self, workload: &WorkloadSpec) -> BTreeMap<String, String> {
        let mut env: BTreeMap<String, String> = self
            .env
            .iter()
            .map(|(k, v)| (k.clone(), substitute(v, workload)))
            .collect();
        env.insert("DYNO_WORKLOAD".into(), workload.name.clone());
        env.insert("DYNO_RATE".into(), workload.rate.to_string());
        env
    }
}

/// Replaces `{workload}`, `{rate}`, `{warmup_s}`, `{measure_s}` in `s`.
pub fn substitute(s: &str, w: &WorkloadSpec) -> String {
    s.replace("{workload}", &w.name)
        .replace("{rate}", &w.rate.to_string())
        .replace("{warmup_s}", &w.warmup_s.to_string())
        .replace("{measure_s}", &w.measure_s.to_string())
}

/// Why a program named in a comparison file cannot be run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotExecutable {
    /// The path exists but is no executable file.
    #[error("`{0}` is not an executable file")]
    NotAnExecutableFile(String),
    /// The path does not exist.
    #[error("`{0}` does not exist")]
    Missing(String),
    /// The name is found on no directory of PATH.
    #[error("`{0}` is not an executable on PATH")]
    NotOnPath(String),
}

/// Checks that `program` can be executed: a path (relative to `cwd` when given) to an
/// executable file, or a name found on PATH.
pub fn check_executable(program: &str, cwd: Option<&Path>) -> Result<PathBuf, NotExecutable> {
    use std::os::unix::fs::PermissionsExt;
    let is_exec = |p: &Path| {
        std::fs::metadata(p)
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    };
    if program.contains('/') {
        let p = match cwd {
            Some(dir) if Path::new(program).is_relative() => dir.join(program),
            _ => PathBuf::from(program),
        };
        return if is_exec(&p) {
            Ok(p)
        } else if p.exists() {
            Err(NotExecutable::NotAnExecutableFile(program.to_string()))
        } else {
            Err(NotExecutable::Missing(program.to_string()))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| is_exec(p))
        .ok_or_else(|| NotExecutable::NotOnPath(program.to_string()))
}

/// The cluster a subject runs, and the release's part of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClusterSubject {
    /// The cluster file, resolved against the comparison file's directory.
    pub file: PathBuf,
    /// The node command replacing the cluster file's `node.command` (program resolved to
    /// a path; placeholders are the cluster file's, checked by `dyno cluster check` before
    /// the start).
    pub node_command: Option<Vec<String>>,
    /// The dyno build that runs the reference node (`BINARY node run ...`), its genesis and
    /// its load; default: the dyno running the comparison.
    pub node_binary: Option<PathBuf>,
    /// A digest of the cluster file's text, so an edited cluster file is a changed
    /// comparison (not resumed) although the comparison file is the same.
    pub file_digest: String,
}

/// A validated load command.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadSpec {
    /// Program and arguments, placeholders not yet replaced.
    pub command: Vec<String>,
    /// Working directory.
    pub cwd: Option<PathBuf>,
    /// Extra environment (placeholders replaced).
    pub env: BTreeMap<String, String>,
    /// How its output is read.
    pub output: LoadOutput,
    /// The units of JSON-lines fields (`fields = { latency = { unit = "ms" } }`), by field
    /// name: values are converted to the unit's base (seconds, bytes) and carry it, so a
    /// latency in milliseconds is judged as a latency. Left out of the fingerprint when
    /// empty.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub fields: BTreeMap<String, FieldUnit>,
    /// The CPUs the load's process tree runs on (all when `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<Vec<usize>>,
}

/// What a JSON-lines field of a load means.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FieldUnit {
    /// Unit as written (`ms`, `s`, `/s`, `B`, `%`, `count`...).
    pub unit: String,
    /// `higher` or `lower` is better (guessed from the name when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<String>,
}

/// How a load's output becomes metrics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadOutput {
    /// Each numeric field of each JSON-object line is one observation of `load:<field>`.
    Jsonl,
    /// Regular expressions with a `value` group; every match is one observation.
    Regex(Vec<Extractor>),
}

/// One regex extractor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Extractor {
    /// Metric name (reported as `load:<metric>`).
    pub metric: String,
    /// The pattern, with a `(?P<value>...)` group.
    pub pattern: String,
    /// Unit of the captured number.
    pub unit: String,
    /// `higher` or `lower` is better (guessed from the name when absent).
    pub direction: Option<String>,
}
