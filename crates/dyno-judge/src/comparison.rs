//! What a comparison is, as the judge reads it: its subjects, workloads and settings
//! ([`ComparisonMeta`], stored with every execution), the test its verdicts are judged
//! by, a precision target, and which verdict is which. Plain data, below every other
//! module of the crate.

use serde::{Deserialize, Serialize};

/// What every run of one comparison shares.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComparisonMeta {
    /// Unique id of the comparison (`cmp-<unix ms>-<pid>`).
    pub id: String,
    /// Subject names; the first is the baseline.
    pub subjects: Vec<String>,
    /// Workload names.
    pub workloads: Vec<String>,
    /// Rounds planned.
    pub rounds: u32,
    /// Noise band.
    pub noise_band: f64,
    /// Family-wise alpha.
    pub alpha: f64,
    /// Seed.
    pub seed: u64,
    /// Hash of everything that decides the plan and the measurements (the validated
    /// file, selected workloads and rounds): a run with the same fingerprint continues
    /// this comparison. Empty for comparisons stored before resuming existed.
    #[serde(default)]
    pub fingerprint: String,
    /// The comparison file as given on the command line.
    #[serde(default)]
    pub file: String,
    /// The file's `test`, so a report judges as the run did (`None`: the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test: Option<TestKind>,
    /// The file's `primary` metrics, so a report judges as the run did (empty: the
    /// default family).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub primary: Vec<String>,
    /// Each workload's unit of work (`work`), by workload name.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub work: std::collections::BTreeMap<String, crate::work::WorkUnit>,
    /// The precision target and budget (`rounds` is then `max_rounds`), as the newest
    /// session of the comparison ran it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequential: Option<Sequential>,
    /// How a round ran its subjects (absent: interleaved, one at a time).
    #[serde(default, skip_serializing_if = "Schedule::is_interleaved")]
    pub schedule: Schedule,
    /// Consecutive measured windows per start of a node (absent: 1). A round is one start:
    /// its windows are averaged into one value per subject before pairing.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub windows_per_start: u32,
    /// Other work on the machine (percent of one core) above which an interleaved
    /// execution was disturbed and run again (absent: never).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_disturbance: Option<f64>,
    /// The commit each git subject was built from, by subject name: stored with its runs
    /// (subject attribute `git_commit`, see [`crate::record::save`]), so a change point
    /// between two of them in `dyno results trend` says which `dyno compare bisect`
    /// would search it.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub commits: std::collections::BTreeMap<String, String>,
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

/// How a round runs the subjects of a comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Schedule {
    /// One subject at a time, in an order shuffled every round.
    #[default]
    Interleaved,
    /// Every subject at once, each under its own copy of the workload, their windows
    /// opening and closing together: drift and disturbances fall on both alike.
    SideBySide,
}

impl Schedule {
    /// Whether this is the default schedule.
    pub fn is_interleaved(&self) -> bool {
        *self == Schedule::Interleaved
    }

    /// `interleaved` or `side_by_side`, as the comparison file spells it.
    pub fn name(self) -> &'static str {
        match self {
            Schedule::Interleaved => "interleaved",
            Schedule::SideBySide => "side_by_side",
        }
    }

    /// The schedule named `name`, as the comparison file and `--schedule` spell it.
    pub fn parse(name: &str) -> Option<Schedule> {
        match name {
            "interleaved" => Some(Schedule::Interleaved),
            "side_by_side" => Some(Schedule::SideBySide),
            _ => None,
        }
    }
}

impl ComparisonMeta {
    /// A comparison of `subjects` (the first the baseline) under `workloads` over
    /// `rounds` rounds with a comparison file's defaults (noise band 2%, alpha 5%, seed
    /// 0, the default test and primary family, no file): for examples and tests.
    pub fn of(subjects: &[&str], workloads: &[Workload], rounds: u32) -> ComparisonMeta {
        ComparisonMeta {
            id: "cmp-example".into(),
            subjects: subjects.iter().map(|s| s.to_string()).collect(),
            workloads: workloads.iter().map(|w| w.name.clone()).collect(),
            rounds,
            noise_band: 0.02,
            alpha: 0.05,
            seed: 0,
            fingerprint: String::new(),
            file: String::new(),
            test: None,
            primary: Vec::new(),
            work: Default::default(),
            sequential: None,
            schedule: Schedule::Interleaved,
            windows_per_start: 1,
            max_disturbance: None,
            commits: Default::default(),
        }
    }

    /// Executions the comparison plans.
    pub fn planned(&self) -> usize {
        self.rounds as usize * self.subjects.len() * self.workloads.len()
    }
}

/// A workload as its executions were stored: what judging reads of it (its name, rate,
/// warm-up and window), and the rest of what the measuring side ran it with (its
/// arguments, a load command), kept as written and never read here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Workload {
    /// Unique name.
    pub name: String,
    /// Transactions per second the load applied.
    pub rate: f64,
    /// Seconds between start and the measured window.
    pub warmup_s: f64,
    /// Seconds measured.
    pub measure_s: f64,
    /// The rest of the workload as dyno-compare stored it.
    #[serde(flatten)]
    pub run: serde_json::Map<String, serde_json::Value>,
}

impl Workload {
    /// A workload with nothing stored beside what judging reads.
    pub fn new(name: &str, rate: f64, warmup_s: f64, measure_s: f64) -> Workload {
        Workload {
            name: name.to_string(),
            rate,
            warmup_s,
            measure_s,
            run: serde_json::Map::new(),
        }
    }
}

/// Which test judges a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TestKind {
    /// Baseline and candidate values as two independent samples (Mann-Whitney).
    Unpaired,
    /// Per-round ratios candidate / baseline, t-test on their logarithms: rounds where
    /// either has no value are left out.
    #[default]
    Paired,
    /// Per-round ratios, exact Wilcoxon signed-rank test on their logarithms.
    SignedRank,
    /// Per-round ratios, the sequential t-test on their logarithms: valid however often
    /// it is looked at (`dyno_stats::sequential_t`); the test of a precision target.
    Sequential,
}

impl TestKind {
    /// `"unpaired"` or `"paired"`, as the comparison file spells it.
    pub fn name(self) -> &'static str {
        match self {
            TestKind::Unpaired => "unpaired",
            TestKind::Paired => "paired",
            TestKind::SignedRank => "signed-rank",
            TestKind::Sequential => "sequential",
        }
    }

    /// The kind named `name`, as the comparison file and `--test` spell it.
    pub fn parse(name: &str) -> Option<TestKind> {
        match name {
            "unpaired" => Some(TestKind::Unpaired),
            "paired" => Some(TestKind::Paired),
            "signed-rank" => Some(TestKind::SignedRank),
            "sequential" => Some(TestKind::Sequential),
            _ => None,
        }
    }
}

/// A precision target and the budget for reaching it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sequential {
    /// Every primary metric's minimum detectable change must reach this (0.05 = 5%).
    pub precision: f64,
    /// Rounds at most.
    pub max_rounds: u32,
    /// Minutes at most, executions of every session of the comparison together.
    pub max_minutes: f64,
}

/// Which verdict of a comparison: a candidate's metric under a workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerdictKey {
    /// The workload.
    pub workload: String,
    /// The candidate.
    pub candidate: String,
    /// The metric's name.
    pub metric: String,
}
