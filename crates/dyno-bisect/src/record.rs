//! A bisection in the results store: one stored run per step (command `bisect`), its
//! settings the bisection's [`BisectMeta`] and the step's [`StepRecord`], written as the
//! step ends. The executions a step measured are the stored runs of its comparison
//! (command `compare`), so `dyno compare report` shows any step. Running the same
//! bisection again (same file, good, bad and walk: [`BisectMeta::key`]) finds these
//! records and replays them to where it stopped.

use dyno_build::CommitInfo;
use dyno_model::{Host, RunInfo, RunStatus, Subject, SubjectKind};
use dyno_store::{RunFilter, RunId, Store, StoreError};
use serde::{Deserialize, Serialize};

/// The command name bisection steps are stored under.
pub const COMMAND: &str = "bisect";

/// What every step of one bisection shares.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BisectMeta {
    /// Unique id (`bisect-<unix ms>-<pid>`).
    pub id: String,
    /// The comparison file (canonical path).
    pub file: String,
    /// The file as given on the command line.
    pub file_given: String,
    /// Fingerprint of the file, good, bad and the walk ([`crate::BisectSpec::fingerprint`]).
    pub fingerprint: String,
    /// The subject of the file the revisions run as.
    pub subject: String,
    /// Good as given and its commit.
    pub good: crate::spec::Revision,
    /// Bad as given and its commit.
    pub bad: crate::spec::Revision,
    /// Only first parents were walked.
    pub first_parent: bool,
    /// Good, the commits between, bad: oldest first.
    pub commits: Vec<String>,
    /// The precision the change was confirmed with.
    pub precision: f64,
    /// Rounds a step may take.
    pub step_rounds: u32,
    /// When the bisection started (seconds since the epoch).
    pub started_at: f64,
}

impl BisectMeta {
    /// What finds a stored bisection again: the same file, fingerprint and walk.
    pub fn key(&self) -> (&str, &str) {
        (&self.file, &self.fingerprint)
    }
}

/// Which hypothesis a tested revision behaves like.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Likeness {
    /// Like the low end of its range (good's side); for a culprit's confirmation: no
    /// change from its parent.
    Low,
    /// Between the ends: part of the change.
    Between,
    /// Like the high end (bad's side); for a confirmation: the change is there.
    High,
}

impl From<dyno_stats::SprtDecision> for Likeness {
    fn from(d: dyno_stats::SprtDecision) -> Self {
        match d {
            dyno_stats::SprtDecision::Low => Likeness::Low,
            dyno_stats::SprtDecision::Between => Likeness::Between,
            dyno_stats::SprtDecision::High => Likeness::High,
        }
    }
}

impl From<Likeness> for dyno_stats::SprtDecision {
    fn from(l: Likeness) -> Self {
        match l {
            Likeness::Low => dyno_stats::SprtDecision::Low,
            Likeness::Between => dyno_stats::SprtDecision::Between,
            Likeness::High => dyno_stats::SprtDecision::High,
        }
    }
}

/// What a step asked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum StepKind {
    /// Good against bad: is there a change beyond the precision?
    Confirmation,
    /// Revision `index` against good: like `low` (level `m0`) or `high` (level `m1`)?
    Test {
        /// The revision (index into the commits).
        index: usize,
        /// Its range's low end.
        low: usize,
        /// Its range's high end.
        high: usize,
        /// `low`'s level (mean log ratio to good).
        m0: f64,
        /// `high`'s level.
        m1: f64,
    },
    /// Culprit `index` against its parent: is the change the search attributes there?
    Culprit {
        /// The parent.
        parent: usize,
        /// The culprit.
        index: usize,
        /// The change attributed (log ratio).
        change: f64,
    },
    /// The search ended (no step measured).
    Done,
}

/// The confirmed change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Confirmed {
    /// The workload it was measured under.
    pub workload: String,
    /// The metric every step is decided on.
    pub metric: String,
    /// Bad's mean log ratio to good.
    pub change: f64,
    /// Its 95% interval (log ratio).
    pub interval: (f64, f64),
    /// The per-round variance of the log ratios and its degrees of freedom (the prior
    /// noise of every step).
    pub noise_variance: f64,
    /// Its degrees of freedom.
    pub noise_df: usize,
    /// Higher is better for this metric (so a rise is an improvement).
    pub higher_is_better: bool,
}

/// What a step found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum StepOutcome {
    /// The confirmation found a change beyond the precision.
    Changed(Confirmed),
    /// The confirmation found none (`why` says how it stopped).
    NoChange {
        /// Why it stopped: the precision reached, or the budget spent.
        why: String,
        /// The primary metrics' changes as measured, for the report.
        measured: Vec<String>,
    },
    /// The revision does not build (its build's last lines).
    Unbuildable {
        /// The build's error, with its last output lines.
        why: String,
    },
    /// The revision builds but its node failed too often to be measured.
    Untestable {
        /// The last failure.
        why: String,
    },
    /// The sequential test decided.
    Decided {
        /// Like which end.
        likeness: Likeness,
        /// Mean log ratio (to good for a test, to the parent for a culprit).
        mean: f64,
        /// Its 95% interval.
        interval: (f64, f64),
        /// Where the mean lies between the range's ends (0 low, 1 high).
        share: f64,
        /// The per-round sd used (pooled).
        sd: f64,
        /// Its degrees of freedom.
        df: usize,
        /// The two SPRTs' log-likelihood ratios at the decision.
        llr: (f64, f64),
        /// Between only because the rounds ran out.
        capped: bool,
    },
    /// The end of the search.
    Finished,
}

/// One step, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRecord {
    /// 1, 2, ... in the order run (the confirmation is 1).
    pub number: usize,
    /// What it asked.
    pub kind: StepKind,
    /// What it found.
    pub outcome: StepOutcome,
    /// The id of the step's comparison (its executions), when it measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparison: Option<String>,
    /// The stored runs of its executions (first..last).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs: Option<(RunId, RunId)>,
    /// Complete rounds measured.
    pub rounds: u32,
    /// Seconds measuring (every session of the step together).
    pub seconds: f64,
    /// Builds run by this step (not taken from the cache).
    pub builds: u32,
    /// Seconds building.
    pub build_seconds: f64,
    /// The commits the step concerns, described (hash, subject, author, date).
    #[serde(default)]
    pub commits: Vec<CommitInfo>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Settings {
    bisect: BisectMeta,
    step: StepRecord,
}

/// Stores `step` of `meta` as one run.
pub fn save(
    store: &mut Store,
    meta: &BisectMeta,
    step: &StepRecord,
    host: &Host,
    tool: &str,
) -> Result<RunId, StoreError> {
    let name = match &step.kind {
        StepKind::Confirmation => format!("{}: confirmation", meta.subject),
        StepKind::Done => format!("{}: done", meta.subject),
        StepKind::Test { index, .. } | StepKind::Culprit { index, .. } => format!(
            "{}@{}",
            meta.subject,
            crate::spec::short(&meta.commits[*index])
        ),
    };
    let subject = Subject::new(SubjectKind::Release, name).with("bisect", meta.id.clone());
    let info = RunInfo {
        command: COMMAND.into(),
        subject,
        host: host.clone(),
        started_at: dyno_model::now_unix(),
        command_line: std::env::args().collect(),
        tool_version: tool.into(),
        settings: serde_json::to_value(Settings {
            bisect: meta.clone(),
            step: step.clone(),
        })
        .unwrap_or_default(),
    };
    let id = store.begin_run(&info, &[])?;
    store.finish_run(id, RunStatus::Complete)?;
    Ok(id)
}

/// A bisection read back from the store.
#[derive(Debug, Clone, PartialEq)]
pub struct Stored {
    /// The bisection.
    pub meta: BisectMeta,
    /// Its steps, in order.
    pub steps: Vec<StepRecord>,
    /// The run of each step.
    pub runs: Vec<RunId>,
}

impl Stored {
    /// Whether the search ended.
    pub fn finished(&self) -> bool {
        self.steps.iter().any(|s| s.kind == StepKind::Done)
    }
}

/// Every stored bisection, oldest first.
pub fn load_all(store: &Store) -> Result<Vec<Stored>, StoreError> {
    let filter = RunFilter {
        command: Some(COMMAND.into()),
        ..RunFilter::default()
    };
    let mut ids: Vec<RunId> = store
        .list_runs(&filter)?
        .into_iter()
        .map(|r| r.id)
        .collect();
    ids.sort_unstable();
    let mut all: Vec<Stored> = Vec::new();
    for id in ids {
        let run = store.run(id)?;
        let Ok(s) = serde_json::from_value::<Settings>(run.info.settings.clone()) else {
            continue;
        };
        match all.iter_mut().find(|b| b.meta.id == s.bisect.id) {
            Some(b) => {
                b.steps.push(s.step);
                b.runs.push(id);
            }
            None => all.push(Stored {
                meta: s.bisect,
                steps: vec![s.step],
                runs: vec![id],
            }),
        }
    }
    for b in &mut all {
        let mut order: Vec<usize> = (0..b.steps.len()).collect();
        order.sort_by_key(|&i| b.steps[i].number);
        b.steps = order.iter().map(|&i| b.steps[i].clone()).collect();
        b.runs = order.iter().map(|&i| b.runs[i]).collect();
    }
    Ok(all)
}

/// The stored bisection `id`.
pub fn load(store: &Store, id: &str) -> Result<Option<Stored>, StoreError> {
    Ok(load_all(store)?.into_iter().find(|b| b.meta.id == id))
}

/// The newest stored bisection of `(file, fingerprint)`.
pub fn find(store: &Store, key: (&str, &str)) -> Result<Option<Stored>, StoreError> {
    Ok(load_all(store)?
        .into_iter()
        .rev()
        .find(|b| b.meta.key() == key))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(id: &str) -> BisectMeta {
        let rev = |c: &str| crate::spec::Revision {
            rev: c.into(),
            commit: c.repeat(8),
        };
        BisectMeta {
            id: id.into(),
            file: "/x/cmp.toml".into(),
            file_given: "cmp.toml".into(),
            fingerprint: "f00".into(),
            subject: "node".into(),
            good: rev("a"),
            bad: rev("b"),
            first_parent: true,
            commits: vec!["a".repeat(8), "c".repeat(8), "b".repeat(8)],
            precision: 0.05,
            step_rounds: 20,
            started_at: 1.0,
        }
    }

    fn step(number: usize, kind: StepKind, outcome: StepOutcome) -> StepRecord {
        StepRecord {
            number,
            kind,
            outcome,
            comparison: None,
            runs: None,
            rounds: 3,
            seconds: 10.0,
            builds: 1,
            build_seconds: 0.5,
            commits: Vec::new(),
        }
    }

    #[test]
    fn steps_are_stored_one_run_each_and_read_back_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("r.db")).unwrap();
        let host = Host::default();
        let (a, b) = (meta("bisect-1"), meta("bisect-2"));
        let unbuildable = StepOutcome::Unbuildable { why: "no".into() };
        let test = StepKind::Test {
            index: 1,
            low: 0,
            high: 2,
            m0: 0.0,
            m1: 0.1,
        };
        save(
            &mut store,
            &a,
            &step(2, test.clone(), unbuildable.clone()),
            &host,
            "t",
        )
        .unwrap();
        save(
            &mut store,
            &b,
            &step(1, StepKind::Confirmation, StepOutcome::Finished),
            &host,
            "t",
        )
        .unwrap();
        save(
            &mut store,
            &a,
            &step(1, StepKind::Confirmation, StepOutcome::Finished),
            &host,
            "t",
        )
        .unwrap();
        let found = find(&store, ("/x/cmp.toml", "f00")).unwrap().unwrap();
        assert_eq!(found.meta.id, "bisect-2", "the newest of the key");
        let a_back = load(&store, "bisect-1").unwrap().unwrap();
        assert_eq!(a_back.steps.len(), 2);
        assert_eq!(a_back.steps[0].kind, StepKind::Confirmation);
        assert_eq!(a_back.steps[1].outcome, unbuildable);
        assert!(!a_back.finished());
        assert!(find(&store, ("/x/other.toml", "f00")).unwrap().is_none());
    }
}
