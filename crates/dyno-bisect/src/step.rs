//! One step of a bisection, measured: its two revisions built (or taken from the build
//! cache), then compared through dyno-compare's session (interleaved rounds, every
//! execution stored as it ends), the rounds ended by the sequential test as soon as it
//! decides. A step cut short by Ctrl-C is a stored, unfinished comparison: the next run
//! continues it (the session finds it by the step's own file tag).

use crate::evidence::round_log_ratios;
use crate::record::{StepKind, StepOutcome};
use crate::spec::BisectSpec;
use crate::BisectError;
use dyno_build::{BuildCache, BuildSettings};
use dyno_compare::session::{CompareOutcome, CompareSession, Event, RoundRule};
use dyno_compare::{ComparisonFile, Ending, Executor, SubjectSpec, WorkloadSpec};
use dyno_judge::work::WorkUnit;
use dyno_judge::Sequential;
use dyno_stats::{sprt_three_way, ComparisonSettings, PriorNoise, SprtLook};
use dyno_store::Store;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::atomic::AtomicBool;

/// What the steps run with.
pub struct Bench<'a> {
    /// Where executions and steps are stored (`None`: nothing is, and nothing resumes).
    pub store: Option<&'a mut Store>,
    /// Runs the nodes.
    pub executor: &'a mut dyn Executor<Subject = SubjectSpec, Workload = WorkloadSpec>,
    /// Ctrl-C.
    pub stop: &'a AtomicBool,
    /// Where revisions are built.
    pub cache: &'a BuildCache,
    /// The dyno version stored with each run.
    pub tool: String,
    /// Look at the machine before each round (the session's busy warning).
    pub quiet_look: bool,
}

/// What a bisection tells its caller while it works.
#[derive(Debug)]
pub enum BisectEvent<'a> {
    /// A stored bisection of the same file, good and bad is continued.
    Continuing {
        /// Its id.
        id: &'a str,
        /// Steps already stored.
        steps: usize,
    },
    /// A step starts.
    Step {
        /// Its number.
        number: usize,
        /// What it does, in words.
        what: String,
        /// The ranges still to search, as commit index pairs.
        remaining: Vec<(usize, usize)>,
        /// Commits still in those ranges.
        commits_left: usize,
        /// Steps still expected (this one included).
        steps_left: usize,
        /// Minutes still expected, at the mean step so far (`None` before any step).
        minutes_left: Option<f64>,
    },
    /// A revision is built (not found in the cache).
    Building {
        /// Its commit.
        commit: &'a str,
        /// The name it runs under.
        name: &'a str,
    },
    /// One of the step's comparison's events.
    Compare(Event<'a>),
    /// The sequential test's look after a round of a step.
    Evidence(&'a SprtLook),
    /// A step ended (and was stored).
    StepDone(&'a crate::record::StepRecord),
}

/// A step's comparison, measured.
pub(crate) struct Measured {
    pub outcome: Option<CompareOutcome>,
    /// Set when the tested revision could not be built or run.
    pub skipped: Option<StepOutcome>,
    pub builds: u32,
    pub build_seconds: f64,
}

/// How a step is judged after each round: the sequential test between `m0` and `m1` on
/// `metric` under `workload`, with the confirmation's noise as prior.
#[derive(Debug, Clone)]
pub(crate) struct StepTest {
    pub workload: String,
    pub metric: String,
    pub work: BTreeMap<String, WorkUnit>,
    pub settings: ComparisonSettings,
    pub m0: f64,
    pub m1: f64,
    pub prior: Option<PriorNoise>,
    pub sprt: dyno_stats::SprtSettings,
}

impl StepTest {
    /// The test's look at `executions` of a comparison of `subjects`.
    pub fn look(
        &self,
        executions: &[dyno_compare::Execution],
        subjects: &[String],
    ) -> Option<SprtLook> {
        let d = round_log_ratios(
            executions,
            subjects,
            &self.workload,
            &self.metric,
            &self.work,
            &self.settings,
        );
        sprt_three_way(&d, self.m0, self.m1, self.prior, &self.sprt).ok()
    }
}

/// The revisions of step `kind`: (baseline, tested) indices into the commits.
pub(crate) fn pair(spec: &BisectSpec, kind: &StepKind) -> (usize, usize) {
    match *kind {
        StepKind::Test { index, .. } => (0, index),
        StepKind::Culprit { parent, index, .. } => (parent, index),
        StepKind::Confirmation | StepKind::Done => (0, spec.commits.len() - 1),
    }
}

/// Builds the two revisions of `cfg` (subjects `pair`), putting each program in front of
/// its arguments. `Ok(Some(outcome))`: the tested revision does not build.
fn build_pair(
    spec: &BisectSpec,
    cfg: &mut ComparisonFile,
    pair: (usize, usize),
    settings: &BuildSettings,
    bench: &Bench<'_>,
    events: &mut dyn FnMut(BisectEvent<'_>),
    m: &mut Measured,
) -> Result<(), BisectError> {
    let last = spec.commits.len() - 1;
    for (slot, index) in [(0, pair.0), (1, pair.1)] {
        let commit = &spec.commits[index];
        if bench.cache.lookup(settings, commit).is_none() {
            events(BisectEvent::Building {
                commit,
                name: &cfg.subjects[slot].name,
            });
        }
        match bench.cache.build(&spec.repo, commit, settings, bench.stop) {
            Ok(built) => {
                if !built.reused {
                    m.builds += 1;
                    m.build_seconds += built.seconds;
                }
                let s = &mut cfg.subjects[slot];
                s.command.insert(0, built.program.display().to_string());
            }
            Err(dyno_build::BuildError::Interrupted) => {
                return Err(BisectError::Interrupted(format!(
                    "building {}: nothing of this step was measured; run the same command again to continue",
                    crate::spec::short(commit)
                )))
            }
            Err(e @ dyno_build::BuildError::Failed(_)) if index != 0 && index != last => {
                m.skipped = Some(StepOutcome::Unbuildable { why: e.to_string() });
                return Ok(());
            }
            Err(source @ dyno_build::BuildError::Failed(_)) => {
                let flag = if index == 0 { "--good" } else { "--bad" };
                return Err(BisectError::EndDoesNotBuild {
                    flag: flag.into(),
                    source: Box::new(source),
                });
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Builds and measures one step: `tag` names it (its stored comparison), `test` decides
/// its rounds (none for the confirmation, which runs under `sequential`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn measure(
    spec: &BisectSpec,
    kind: &StepKind,
    tag: &str,
    settings: &BuildSettings,
    test: Option<&StepTest>,
    sequential: Option<Sequential>,
    bench: &mut Bench<'_>,
    events: &mut dyn FnMut(BisectEvent<'_>),
) -> Result<Measured, BisectError> {
    let pair = pair(spec, kind);
    let (workload, primary) = match test {
        Some(t) => (Some(t.workload.as_str()), vec![t.metric.clone()]),
        None => (None, spec.template.primary.clone()),
    };
    let mut cfg = spec.step_file(tag, pair, workload, &primary, sequential);
    let mut m = Measured {
        outcome: None,
        skipped: None,
        builds: 0,
        build_seconds: 0.0,
    };
    build_pair(spec, &mut cfg, pair, settings, bench, events, &mut m)?;
    if m.skipped.is_some() {
        return Ok(m);
    }
    let tested = cfg.subjects[1].name.clone();
    let subjects: Vec<String> = cfg.subjects.iter().map(|s| s.name.clone()).collect();
    let file = PathBuf::from(format!("{}#{tag}", spec.canonical));
    let mut session = CompareSession::begin(
        cfg,
        &file,
        bench.store.as_deref(),
        false,
        bench.tool.clone(),
        &mut |e| events(BisectEvent::Compare(e)),
    )?;
    if !bench.quiet_look {
        session.quiet_look(None);
    }
    let latest: Rc<RefCell<Option<SprtLook>>> = Rc::default();
    if let Some(t) = test {
        let (t, subjects, latest) = (t.clone(), subjects.clone(), latest.clone());
        session.stop_rounds_when(RoundRule(Box::new(move |executions| {
            let look = t.look(executions, &subjects)?;
            *latest.borrow_mut() = Some(look);
            look.decision.map(|d| {
                format!(
                    "the sequential test decided ({d:?}) after {} rounds",
                    look.decided_at
                )
            })
        })));
    }
    // The test looks before every round; its look is told once per round measured.
    let mut shown_rounds = 0;
    let outcome = session.run(
        bench.store.as_deref_mut(),
        &mut *bench.executor,
        bench.stop,
        &primary,
        &mut |e| {
            let look = *latest.borrow();
            if let Some(l) = look.filter(|l| l.rounds > shown_rounds) {
                shown_rounds = l.rounds;
                events(BisectEvent::Evidence(&l));
            }
            events(BisectEvent::Compare(e))
        },
    )?;
    match &outcome.ending {
        Ending::Interrupted => {
            return Err(BisectError::Interrupted(format!(
                "{} of {} executions of step `{tag}` done and kept; run the same command again to continue",
                outcome.done, outcome.planned
            )))
        }
        Ending::GaveUp { subject, reason, .. } if *subject == tested && test.is_some() => {
            m.skipped = Some(StepOutcome::Untestable {
                why: reason.clone(),
            });
        }
        Ending::GaveUp {
            subject,
            in_a_row,
            reason,
        } => {
            return Err(BisectError::GaveUp {
                subject: subject.clone(),
                in_a_row: *in_a_row,
                reason: reason.clone(),
            })
        }
        Ending::Finished | Ending::Decided(_) | Ending::Ruled(_) => {}
    }
    m.outcome = Some(outcome);
    Ok(m)
}
