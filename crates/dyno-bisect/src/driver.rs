//! A whole bisection: continue the stored one of the same file, good and bad (or start
//! one), confirm the change between good and bad, then let the search ask and each step
//! answer, storing every step as it ends, until the culprits are named.
//!
//! The confirmation is a comparison of good against bad under the precision rule (the
//! file's `precision`, else 5%): it stops as soon as a primary metric's change is
//! flagged (the sequential t-test), or every primary metric can see the precision (no
//! change beyond it: the bisection says so and ends). The flagged metric with the
//! smallest p-value is the one every step is decided on; its measured change is bad's
//! level, its per-round noise every step's prior.

use crate::evidence::confirmation;
use crate::record::{self, BisectMeta, Confirmed, Likeness, StepKind, StepOutcome, StepRecord};
use crate::search::{Answer, Query, Search, SearchSettings};
use crate::spec::{short, BisectSpec};
use crate::step::{measure, Bench, BisectEvent, Measured, StepTest};
use crate::BisectError;
use dyno_build::{BuildSettings, CommitInfo};
use dyno_compare::Ending;
use dyno_stats::{ComparisonSettings, PriorNoise};

/// The confirmed change of a stored bisection, if its confirmation found one.
pub fn confirmed(steps: &[StepRecord]) -> Option<&Confirmed> {
    steps.iter().find_map(|s| match &s.outcome {
        StepOutcome::Changed(c) => Some(c),
        _ => None,
    })
}

/// The search of a confirmed change, before any answer.
pub fn new_search(meta: &BisectMeta, c: &Confirmed) -> Search {
    Search::new(SearchSettings {
        revisions: meta.commits.len(),
        change: c.change,
        // Half the precision: a culprit of half the change that was asked about is
        // still named; less is not searched for.
        min_change: (1.0 + meta.precision / 2.0).ln(),
    })
}

/// The answer a stored step gives its query.
fn answer_of(outcome: &StepOutcome) -> Option<Answer> {
    match outcome {
        StepOutcome::Unbuildable { .. } | StepOutcome::Untestable { .. } => {
            Some(Answer::Unbuildable)
        }
        StepOutcome::Decided {
            likeness,
            mean,
            interval,
            ..
        } => Some(Answer::Decided {
            decision: (*likeness).into(),
            mean: *mean,
            interval: *interval,
        }),
        _ => None,
    }
}

/// The kind of step a query is.
fn kind_of(q: &Query) -> StepKind {
    match *q {
        Query::Test {
            index,
            low,
            high,
            m0,
            m1,
        } => StepKind::Test {
            index,
            low,
            high,
            m0,
            m1,
        },
        Query::Confirm {
            parent,
            index,
            change,
        } => StepKind::Culprit {
            parent,
            index,
            change,
        },
    }
}

/// Whether a stored step answers query `q`: the same kind of step about the same
/// revisions (the levels, read back from JSON, are not compared bit for bit).
fn answers(q: &Query, kind: &StepKind) -> bool {
    match (kind_of(q), kind) {
        (
            StepKind::Test {
                index, low, high, ..
            },
            StepKind::Test {
                index: i,
                low: l,
                high: h,
                ..
            },
        ) => (index, low, high) == (*i, *l, *h),
        (
            StepKind::Culprit { parent, index, .. },
            StepKind::Culprit {
                parent: p,
                index: i,
                ..
            },
        ) => (parent, index) == (*p, *i),
        _ => false,
    }
}

/// The search of a stored bisection with its steps' answers replayed, and the number of
/// steps it took (`None` without a confirmed change). Steps that no longer match the
/// search's questions (a bisection stored by another version) end the replay there.
pub fn replay(meta: &BisectMeta, steps: &[StepRecord]) -> Option<(Search, usize)> {
    let c = confirmed(steps)?;
    let mut search = new_search(meta, c);
    let mut used = 1;
    for s in steps
        .iter()
        .filter(|s| !matches!(s.kind, StepKind::Confirmation | StepKind::Done))
    {
        let Some(q) = search.next_query() else { break };
        let Some(a) = answer_of(&s.outcome).filter(|_| answers(&q, &s.kind)) else {
            break;
        };
        search.answer(&q, a);
        used += 1;
    }
    Some((search, used))
}

/// A bisection under way.
struct Run<'s> {
    spec: &'s BisectSpec,
    meta: BisectMeta,
    steps: Vec<StepRecord>,
    settings: BuildSettings,
}

impl Run<'_> {
    fn save(&mut self, bench: &mut Bench<'_>, step: StepRecord) -> Result<(), BisectError> {
        if let Some(store) = bench.store.as_deref_mut() {
            let host = dyno_proc::host::probe(std::path::Path::new("."));
            record::save(store, &self.meta, &step, &host, &bench.tool)?;
        }
        self.steps.push(step);
        Ok(())
    }

    fn info(&self, i: usize) -> CommitInfo {
        let commit = &self.spec.commits[i];
        self.spec.repo.commit_info(commit).unwrap_or(CommitInfo {
            hash: commit.clone(),
            subject: String::new(),
            author: String::new(),
            date: String::new(),
        })
    }

    fn minutes_per_step(&self) -> Option<f64> {
        let measured: Vec<f64> = self
            .steps
            .iter()
            .filter(|s| s.rounds > 0 && s.kind != StepKind::Confirmation)
            .map(|s| (s.seconds + s.build_seconds) / 60.0)
            .collect();
        (!measured.is_empty()).then(|| measured.iter().sum::<f64>() / measured.len() as f64)
    }

    /// The step record of a measured step.
    fn record(
        &self,
        kind: StepKind,
        m: &Measured,
        outcome: StepOutcome,
        rounds: u32,
    ) -> StepRecord {
        let (base, tested) = crate::step::pair(self.spec, &kind);
        StepRecord {
            number: self.steps.len() + 1,
            comparison: m.outcome.as_ref().map(|o| o.meta.id.clone()),
            runs: m.outcome.as_ref().and_then(|o| o.stored_runs()),
            seconds: m.outcome.as_ref().map_or(0.0, |o| o.elapsed_s),
            kind,
            outcome,
            rounds,
            builds: m.builds,
            build_seconds: m.build_seconds,
            commits: vec![self.info(base), self.info(tested)],
        }
    }

    fn confirm(
        &mut self,
        bench: &mut Bench<'_>,
        events: &mut dyn FnMut(BisectEvent<'_>),
    ) -> Result<(), BisectError> {
        events(BisectEvent::Step {
            number: 1,
            what: format!(
                "confirming the change: good {} against bad {} (precision {:.1}%)",
                short(&self.spec.good.commit),
                short(&self.spec.bad.commit),
                self.spec.precision * 100.0
            ),
            remaining: vec![(0, self.spec.commits.len() - 1)],
            commits_left: self.spec.commits.len() - 1,
            // The confirmation, about log2 of the commits' tests, a culprit's check.
            steps_left: 2 + (usize::BITS - (self.spec.commits.len() - 1).leading_zeros()) as usize,
            minutes_left: None,
        });
        let rule = self.spec.confirmation_rule();
        let kind = StepKind::Confirmation;
        let m = measure(
            self.spec,
            &kind,
            "confirm",
            &self.settings,
            None,
            Some(rule),
            bench,
            events,
        )?;
        let outcome = m.outcome.as_ref().expect("good and bad built");
        let why = match &outcome.ending {
            Ending::Decided(stop) => stop.sentence(&rule),
            other => format!("{other:?}"),
        };
        let found = confirmation(outcome.measured(), &why).map_err(BisectError::Judge)?;
        let rounds = dyno_judge::precision::complete_rounds(&outcome.meta, &outcome.executions);
        let step = self.record(kind, &m, found, rounds);
        events(BisectEvent::StepDone(&step));
        self.save(bench, step)
    }

    fn test(&self, c: &Confirmed, kind: &StepKind) -> StepTest {
        let (m0, m1) = match *kind {
            StepKind::Test { m0, m1, .. } => (m0, m1),
            StepKind::Culprit { change, .. } => (0.0, change),
            _ => (0.0, c.change),
        };
        StepTest {
            workload: c.workload.clone(),
            metric: c.metric.clone(),
            work: self
                .spec
                .template
                .workloads
                .iter()
                .filter_map(|w| Some((w.name.clone(), w.work.clone()?)))
                .collect(),
            settings: ComparisonSettings {
                noise_band: self.spec.template.noise_band,
                alpha: self.spec.template.alpha,
                ..ComparisonSettings::default()
            },
            m0,
            m1,
            prior: Some(PriorNoise {
                variance: c.noise_variance,
                df: c.noise_df,
            }),
            sprt: self.spec.sprt,
        }
    }

    fn ask(
        &mut self,
        q: &Query,
        search: &Search,
        c: &Confirmed,
        bench: &mut Bench<'_>,
        events: &mut dyn FnMut(BisectEvent<'_>),
    ) -> Result<Answer, BisectError> {
        let kind = kind_of(q);
        let (base, tested) = crate::step::pair(self.spec, &kind);
        let remaining = search.remaining();
        let per_step = self.minutes_per_step();
        let steps_left = search.steps_left().max(1);
        events(BisectEvent::Step {
            number: self.steps.len() + 1,
            what: match q {
                Query::Test { low, high, .. } => format!(
                    "testing {} ({} of {}) against good, between {} and {}",
                    short(&self.spec.commits[tested]),
                    tested,
                    self.spec.commits.len() - 1,
                    self.spec.name_of(*low),
                    self.spec.name_of(*high)
                ),
                Query::Confirm { .. } => format!(
                    "confirming culprit {} against its parent {}",
                    short(&self.spec.commits[tested]),
                    self.spec.name_of(base)
                ),
            },
            commits_left: remaining.iter().map(|(l, h)| h - l).sum(),
            remaining,
            steps_left,
            minutes_left: per_step.map(|m| m * steps_left as f64),
        });
        let test = self.test(c, &kind);
        let tag = match q {
            Query::Test { .. } => format!("test-{}", short(&self.spec.commits[tested])),
            Query::Confirm { .. } => format!("culprit-{}", short(&self.spec.commits[tested])),
        };
        let m = measure(
            self.spec,
            &kind,
            &tag,
            &self.settings,
            Some(&test),
            None,
            bench,
            events,
        )?;
        let (outcome, rounds) = match (&m.skipped, &m.outcome) {
            (Some(skip), _) => (skip.clone(), 0),
            (None, Some(o)) => {
                let subjects = o.meta.subjects.clone();
                let look = test.look(&o.executions, &subjects).ok_or_else(|| {
                    BisectError::Judge(format!("step `{tag}`: no paired rounds of {}", c.metric))
                })?;
                let decided = StepOutcome::Decided {
                    likeness: look.decision.map_or(Likeness::Between, Likeness::from),
                    mean: look.mean,
                    interval: look.mean_interval,
                    share: look.share,
                    sd: look.sd,
                    df: look.df,
                    llr: (look.llr_low, look.llr_high),
                    capped: look.capped || look.decision.is_none(),
                };
                (decided, look.decided_at as u32)
            }
            (None, None) => unreachable!("a step either measured or was skipped"),
        };
        let answer = answer_of(&outcome).expect("a step's answer");
        let step = self.record(kind, &m, outcome, rounds);
        events(BisectEvent::StepDone(&step));
        self.save(bench, step)?;
        Ok(answer)
    }
}

/// Runs (or continues) the bisection of `spec`; `fresh` starts a new one even when one
/// is stored. Returns the stored bisection, finished.
pub fn bisect(
    spec: &BisectSpec,
    bench: &mut Bench<'_>,
    fresh: bool,
    events: &mut dyn FnMut(BisectEvent<'_>),
) -> Result<record::Stored, BisectError> {
    let key = (spec.canonical.clone(), spec.fingerprint());
    let stored = match (&bench.store, fresh) {
        (Some(s), false) => record::find(s, (&key.0, &key.1))?,
        _ => None,
    };
    if let Some(done) = stored.as_ref().filter(|s| s.finished()) {
        return Ok(done.clone());
    }
    let git = spec.template.subjects[spec.subject]
        .git
        .clone()
        .expect("a git subject");
    let settings = dyno_compare::gitbuild::settings(&git)?;
    let (meta, steps) = match stored {
        Some(s) => {
            events(BisectEvent::Continuing {
                id: &s.meta.id,
                steps: s.steps.len(),
            });
            (s.meta, s.steps)
        }
        None => (new_meta(spec, key), Vec::new()),
    };
    let mut run = Run {
        spec,
        meta,
        steps,
        settings,
    };
    if run.steps.is_empty() {
        run.confirm(bench, events)?;
    }
    if let Some(c) = confirmed(&run.steps).cloned() {
        let (mut search, used) = replay(&run.meta, &run.steps).expect("a confirmed change");
        run.steps.truncate(used);
        while let Some(q) = search.next_query() {
            let a = run.ask(&q, &search, &c, bench, events)?;
            search.answer(&q, a);
        }
    }
    let done = StepRecord {
        number: run.steps.len() + 1,
        kind: StepKind::Done,
        outcome: StepOutcome::Finished,
        comparison: None,
        runs: None,
        rounds: 0,
        seconds: 0.0,
        builds: 0,
        build_seconds: 0.0,
        commits: Vec::new(),
    };
    run.save(bench, done)?;
    Ok(record::Stored {
        meta: run.meta,
        steps: run.steps,
        runs: Vec::new(),
    })
}

fn new_meta(spec: &BisectSpec, (file, fingerprint): (String, String)) -> BisectMeta {
    BisectMeta {
        id: format!(
            "bisect-{}-{}",
            (dyno_model::now_unix() * 1000.0) as u64,
            std::process::id()
        ),
        file,
        file_given: spec.file.display().to_string(),
        fingerprint,
        subject: spec.subject_name().to_string(),
        good: spec.good.clone(),
        bad: spec.bad.clone(),
        first_parent: spec.first_parent,
        commits: spec.commits.clone(),
        precision: spec.precision,
        step_rounds: spec.sprt.max_rounds as u32,
        started_at: dyno_model::now_unix(),
    }
}
