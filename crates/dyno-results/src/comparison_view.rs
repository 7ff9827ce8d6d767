//! A stored comparison's verdicts as plain data: dyno-compare judges the comparison and
//! fills them in, `dyno serve`'s comparison page (dyno-web) shows them. Neither of the
//! two imports the other; both look down to this crate.

use dyno_model::Metric;

/// A stored comparison as `dyno compare` judges it (its test, primary metrics, noise
/// band and alpha, as the comparison file said).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ComparisonView {
    /// The comparison id.
    pub id: String,
    /// The comparison file.
    pub file: String,
    /// Subjects, baseline first.
    pub subjects: Vec<String>,
    /// Workloads.
    pub workloads: Vec<String>,
    /// The host of its first run (the name its histories are under).
    pub host: String,
    /// The test (`paired`, `signed-rank`, `unpaired`).
    pub test: String,
    /// Relative change treated as noise (0.02 = 2%).
    pub noise_band: f64,
    /// Significance level over each family.
    pub alpha: f64,
    /// Executions that completed, and those planned.
    pub executions: (usize, usize),
    /// Its stored runs, oldest first.
    pub runs: Vec<i64>,
    /// The precision the comparison stated it reached, in its own words, when it has one
    /// (a precision target); `None` for comparisons run to a fixed number of rounds.
    pub precision: Option<String>,
    /// Every verdict: per workload, metric and candidate.
    pub verdicts: Vec<VerdictView>,
    /// Metrics not judged, with why.
    pub unjudged: Vec<UnjudgedView>,
    /// Notes of the judgement (metrics left out, power warnings).
    pub notes: Vec<String>,
}

/// What a verdict says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Finding {
    /// Significantly worse, beyond the noise band.
    Regression,
    /// Significantly better, beyond the noise band.
    Improvement,
    /// Neither.
    #[default]
    NoChange,
}

impl Finding {
    /// `regression`, `improvement`, `no change`.
    pub fn as_str(self) -> &'static str {
        match self {
            Finding::Regression => "regression",
            Finding::Improvement => "improvement",
            Finding::NoChange => "no change",
        }
    }
}

/// One candidate against the baseline on one metric of one workload.
#[derive(Debug, Clone, PartialEq)]
pub struct VerdictView {
    /// Workload.
    pub workload: String,
    /// Candidate subject.
    pub candidate: String,
    /// The metric (name, unit, direction).
    pub metric: Metric,
    /// Judged in the secondary family: reported, not part of the verdict.
    pub secondary: bool,
    /// The baseline's median per-round value.
    pub baseline: f64,
    /// The candidate's.
    pub candidate_value: f64,
    /// Candidate / baseline, with its confidence interval.
    pub ratio: (f64, f64, f64),
    /// The p-value the verdict used (Holm-adjusted within its family).
    pub p_adjusted: f64,
    /// The verdict.
    pub finding: Finding,
    /// Rounds judged.
    pub rounds: usize,
    /// The smallest relative change this verdict could have flagged (0.05 = 5%); `None`
    /// when no change of any size could be, or the spread is unknown.
    pub min_detectable_change: Option<f64>,
    /// Whether the noise band, not the statistics, sets it.
    pub limited_by_noise_band: bool,
}

/// A metric that was not judged.
#[derive(Debug, Clone, PartialEq)]
pub struct UnjudgedView {
    /// Workload.
    pub workload: String,
    /// Candidate subject.
    pub candidate: String,
    /// Metric name.
    pub metric: String,
    /// Why, in words.
    pub why: String,
}
