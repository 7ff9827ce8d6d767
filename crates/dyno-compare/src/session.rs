//! A `dyno compare run` session: begin (or continue) a comparison, run the executions
//! still to do, store each as it ends, and hand back what was measured for judging.
//!
//! The session decides everything a comparison needs besides arguments and terminal
//! output: which stored comparison it continues, what the plan has left, what to store,
//! when a misspelt primary metric or unit of work stops the rounds, whether a precision
//! target is reached ([`dyno_judge::precision`]), whether the machine is quiet before a
//! round, how long the rest will take. What happens
//! is told through [`Event`]s; the binary turns them into progress and warnings.
//!
//! ```
//! use dyno_compare::session::{CompareSession, Event};
//! use dyno_compare::{ComparisonFile, SyntheticExecutor};
//! use std::sync::atomic::AtomicBool;
//!
//! let file = r#"
//! rounds = 3
//! [[subject]]
//! name = "v1"
//! command = ["sh", "-c", "exec sleep 60"]
//! [[subject]]
//! name = "v2"
//! command = ["sh", "-c", "exec sleep 60"]
//! [[workload]]
//! name = "value"
//! rate = 1000
//! measure_s = 10
//! "#;
//! let cfg = ComparisonFile::parse(file, "cmp.toml".as_ref()).unwrap();
//! let mut events = |_: Event<'_>| {};
//! let mut session =
//!     CompareSession::begin(cfg, "cmp.toml".as_ref(), None, false, "dyno test".into(), &mut events)
//!         .unwrap();
//! let mut node = SyntheticExecutor::new(7);
//! let outcome = session.run(None, &mut node, &AtomicBool::new(false), &[], &mut events).unwrap();
//! assert_eq!(outcome.executions.len(), 6);
//! ```

use crate::cluster_run::ClusterExecutor;
use crate::execution::{Execution, Outcome};
use crate::pinning::Busy;
use crate::resume::{self, Resume};
use crate::runner::{run_plan, starts, Ending, Slot, Step};
use crate::{ComparisonFile, Executor, ProcessExecutor, SubjectSpec, WorkloadSpec};
use dyno_judge::judged::{primary_metrics, Measured};
use dyno_judge::precision::{complete_rounds, look, Look};
use dyno_judge::record::{self, LoadError, Loaded};
use dyno_judge::verdict::{unknown_primary, unknown_work};
use dyno_judge::{ComparisonMeta, Workload};
use dyno_model::Host;
use dyno_store::{RunId, Store, StoreError};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// Busy share of the CPUs before the start (and before each round) above which the
/// session warns.
pub const BUSY_WARNING: f64 = 0.25;

/// How long the session looks at the machine before each round.
pub const QUIET_LOOK: Duration = Duration::from_millis(300);

/// What a session tells its caller while it works.
#[derive(Debug)]
pub enum Event<'a> {
    /// The CPUs were this busy (a share) before the start: absolute numbers will be noisy.
    BusyCpus(f64),
    /// An interrupted comparison of the same file is continued.
    Continuing {
        /// The comparison's id.
        id: &'a str,
        /// Executions already stored.
        done: usize,
        /// Executions planned.
        planned: usize,
    },
    /// The file changed since an interrupted comparison of it: a new one starts.
    Changed {
        /// The old comparison's id.
        id: &'a str,
        /// Its executions done.
        done: usize,
        /// Its executions planned.
        planned: usize,
    },
    /// Executions still to run, and how long they should take.
    Planned {
        /// Executions left.
        executions: usize,
        /// Rounds in all.
        rounds: u32,
        /// Expected time for all of them.
        left: Duration,
    },
    /// One execution ended (and was stored, when there is a store).
    Executed(&'a Execution),
    /// The newest comparison of this file already stopped by its precision rule under
    /// the same target and budget: a new comparison starts.
    AlreadyDecided {
        /// The old comparison's id.
        id: &'a str,
        /// Why it stopped.
        why: String,
    },
    /// The machine was busy before a round: its work lands in the round's numbers.
    BusyBeforeRound {
        /// The round about to start, zero-based.
        round: u32,
        /// How busy, and who.
        busy: &'a Busy,
    },
    /// A comparison with a precision target looked at its rounds so far (after every
    /// complete round): each primary metric's detectable change, the rounds predicted,
    /// whether it stops.
    Looked(&'a Look),
    /// The next execution starts.
    Next {
        /// Its round, zero-based.
        round: u32,
        /// Rounds in all.
        rounds: u32,
        /// Its subject.
        subject: &'a str,
        /// Its workload.
        workload: &'a str,
        /// Expected time for the executions left.
        left: Duration,
    },
}

/// Why the verdict of a comparison will be refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// A primary metric is unknown.
    Primary(String),
    /// A `work` entry names an unknown metric; the comparison file is named.
    Work {
        /// What is wrong.
        why: String,
        /// The comparison file.
        file: String,
    },
}

/// Errors of a session.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The results store could not be searched for a comparison to continue.
    #[error("results store {}", path.display())]
    Resume {
        /// The store's file.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: LoadError,
    },
    /// An execution could not be stored.
    #[error(transparent)]
    Save(#[from] StoreError),
    /// A primary metric or a `work` entry names something no execution measured: the
    /// verdict would be refused, so the rounds stop as soon as every subject has a
    /// complete execution (the executions done are stored).
    #[error("{}; the comparison stopped after {done} executions, which are kept: fix it and run the same command again to continue", refusal_text(.refusal))]
    Refused {
        /// What is wrong.
        refusal: Refusal,
        /// Executions done (stored when there is a store).
        done: usize,
    },
}

fn refusal_text(r: &Refusal) -> String {
    match r {
        Refusal::Primary(e) => format!("primary metric: {e}"),
        Refusal::Work { why, file } => format!("`work` of {file}: {why}"),
    }
}

/// A comparison begun (or continued) and not yet run.
#[derive(Debug)]
pub struct CompareSession {
    cfg: ComparisonFile,
    meta: ComparisonMeta,
    host: Host,
    tool: String,
    executions: Vec<Execution>,
    runs: Vec<RunId>,
    done: HashSet<Slot>,
    /// Seconds the continued comparison's earlier sessions took.
    earlier_s: f64,
    /// How long to look at the machine before each round (`None`: not at all).
    quiet_look: Option<Duration>,
    /// The caller's rule, looked at before every round ([`CompareSession::stop_rounds_when`]).
    round_rule: Option<RoundRule>,
}

/// A caller's rule for ending a comparison's rounds early: given every execution so far
/// (the continued comparison's stored ones first), `Some(why)` ends the rounds before the
/// next one starts ([`Ending::Ruled`]). `dyno compare bisect` ends each step's rounds
/// when its sequential test has decided.
pub struct RoundRule(pub Box<RuleFn>);

/// The function of a [`RoundRule`].
pub type RuleFn = dyn FnMut(&[Execution]) -> Option<String>;

impl std::fmt::Debug for RoundRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RoundRule")
    }
}

/// What a session measured, for judging and reporting.
#[derive(Debug)]
pub struct CompareOutcome {
    /// The comparison, as stored.
    pub meta: ComparisonMeta,
    /// Every execution, the continued comparison's stored ones first.
    pub executions: Vec<Execution>,
    /// The stored runs, one per execution (empty without a store).
    pub runs: Vec<RunId>,
    /// The workloads as run and stored.
    pub workloads: Vec<Workload>,
    /// The host the session ran on.
    pub host: Host,
    /// How the rounds ended.
    pub ending: Ending,
    /// Executions done, this session's and the stored ones together.
    pub done: usize,
    /// Executions planned.
    pub planned: usize,
    /// CPU seconds dyno itself used while running (its threads, not the nodes), and the
    /// wall seconds of the run: what sampling cost.
    pub own_cpu: Option<(f64, f64)>,
    /// Seconds of the comparison, every session together.
    pub elapsed_s: f64,
}

impl CompareSession {
    /// Begins the comparison of `cfg` read from `file`: checks the CPUs are quiet,
    /// continues an interrupted comparison of the same file from `store` unless `fresh`,
    /// and fingerprints the host. `tool` is the dyno version stored with each run.
    pub fn begin(
        cfg: ComparisonFile,
        file: &Path,
        store: Option<&Store>,
        fresh: bool,
        tool: String,
        events: &mut dyn FnMut(Event<'_>),
    ) -> Result<CompareSession, SessionError> {
        if let Some(busy) = dyno_proc::host::cpu_busy_fraction(Duration::from_millis(300)) {
            if busy > BUSY_WARNING {
                events(Event::BusyCpus(busy));
            }
        }
        let mut meta = resume::new_meta(&cfg);
        meta.file = std::fs::canonicalize(file)
            .unwrap_or_else(|_| file.to_path_buf())
            .display()
            .to_string();
        let mut session = CompareSession {
            cfg,
            meta,
            host: Host::default(),
            tool,
            executions: Vec::new(),
            runs: Vec::new(),
            done: HashSet::new(),
            earlier_s: 0.0,
            quiet_look: Some(QUIET_LOOK),
            round_rule: None,
        };
        if let (Some(s), false) = (store, fresh) {
            session.resume(s, events)?;
        }
        session.host = dyno_proc::host::probe(Path::new("."));
        Ok(session)
    }

    /// Takes over the stored executions of an interrupted comparison of the same file.
    fn resume(
        &mut self,
        store: &Store,
        events: &mut dyn FnMut(Event<'_>),
    ) -> Result<(), SessionError> {
        let found =
            resume::find_resumable(store, &self.cfg, &self.meta.file).map_err(|source| {
                SessionError::Resume {
                    path: store.path().to_path_buf(),
                    source,
                }
            })?;
        match found {
            Resume::Fresh => {}
            Resume::Continue(loaded) if self.decided(&loaded).is_some() => {
                let why = self.decided(&loaded).unwrap_or_default();
                events(Event::AlreadyDecided {
                    id: &loaded.meta.id,
                    why,
                });
            }
            Resume::Continue(loaded) => {
                self.done = resume::done_slots(&loaded);
                self.earlier_s = loaded.elapsed_s;
                events(Event::Continuing {
                    id: &loaded.meta.id,
                    done: self.done.len(),
                    planned: loaded.meta.planned(),
                });
                self.meta.id = loaded.meta.id.clone();
                self.executions = loaded.executions;
                self.runs = loaded.runs;
            }
            Resume::Changed { id, done, planned } => events(Event::Changed {
                id: &id,
                done,
                planned,
            }),
        }
        Ok(())
    }

    /// Why a stored comparison with a precision target has stopped under this session's
    /// target and budget, if it has (its rounds judged as the rule judges them).
    fn decided(&self, loaded: &Loaded) -> Option<String> {
        let seq = self.cfg.sequential.as_ref()?;
        let meta = ComparisonMeta {
            sequential: Some(*seq),
            ..loaded.meta.clone()
        };
        let rounds = complete_rounds(&meta, &loaded.executions);
        let round_s = loaded.elapsed_s / f64::from(rounds.max(1));
        let l = look(
            &meta,
            seq,
            &loaded.executions,
            &self.cfg.primary,
            loaded.elapsed_s,
            round_s,
        );
        Some(l.stop?.sentence(seq))
    }

    /// The comparison as it will be stored.
    pub fn meta(&self) -> &ComparisonMeta {
        &self.meta
    }

    /// The comparison file it runs.
    pub fn file(&self) -> &ComparisonFile {
        &self.cfg
    }

    /// Sets how long the session looks at the machine before each round (a busy machine
    /// is warned about, naming its busiest processes); `None` looks not at all (for
    /// executors that run nothing, as in tests).
    pub fn quiet_look(&mut self, window: Option<Duration>) {
        self.quiet_look = window;
    }

    /// Looks at `rule` before every round (the first included, so a continued comparison
    /// whose rule already holds runs nothing more); it ending the rounds ends the run
    /// with [`Ending::Ruled`].
    pub fn stop_rounds_when(&mut self, rule: RoundRule) {
        self.round_rule = Some(rule);
    }

    /// Runs the executions still to do with `executor`, storing each in `store` as it
    /// ends, until the plan is done, `stop` is set or a subject fails too often.
    /// `primary` is `--primary` (empty: the file's), checked once every subject has a
    /// complete execution.
    pub fn run(
        &mut self,
        mut store: Option<&mut Store>,
        executor: &mut dyn Executor<Subject = SubjectSpec, Workload = WorkloadSpec>,
        stop: &AtomicBool,
        primary: &[String],
        events: &mut dyn FnMut(Event<'_>),
    ) -> Result<CompareOutcome, SessionError> {
        let cfg = &self.cfg;
        let planned = Planned::of(cfg, &self.done);
        events(Event::Planned {
            executions: planned.total,
            rounds: cfg.rounds,
            left: planned.left(0, None),
        });
        // dyno's own CPU time (threads only; the nodes are children and not counted), so
        // the report can show what sampling cost.
        let own_cpu_start = dyno_proc::procfs::own_cpu_seconds();
        let wall_start = Instant::now();
        let chosen = primary_metrics(primary, &self.meta).to_vec();
        let (mut finished, mut starts_run) = (0usize, 0usize);
        let mut primary_checked = false;
        let mut predicted: Option<usize> = None;
        let (meta, host, tool) = (&self.meta, &self.host, &self.tool);
        let stored: Vec<Workload> = cfg.workloads.iter().map(WorkloadSpec::stored).collect();
        let (executions, runs) = (&mut self.executions, &mut self.runs);
        let (earlier, quiet) = (self.earlier_s, self.quiet_look);
        let done = self.done.len() * cfg.windows_per_start as usize; // stored before
        let rule = &mut self.round_rule;
        let elapsed = || earlier + wall_start.elapsed().as_secs_f64();
        let ending = run_plan(cfg, executor, stop, &self.done, |step| match step {
            Step::Round(round) => {
                if let Some(why) = rule.as_mut().and_then(|r| (r.0)(executions)) {
                    return Ok(Some(Ending::Ruled(why)));
                }
                let l = looked(cfg, meta, executions, &chosen, elapsed());
                if let Some(l) = &l {
                    events(Event::Looked(l));
                    predicted = l.rounds_left;
                }
                if let Some(stop) = l.and_then(|l| l.stop) {
                    return Ok(Some(Ending::Decided(stop)));
                }
                if let Some(window) = quiet {
                    if let Some(busy) = crate::pinning::busy_machine(window, BUSY_WARNING) {
                        events(Event::BusyBeforeRound { round, busy: &busy });
                    }
                }
                Ok(None)
            }
            // Announced as it begins, so a disturbed start run again at its round's end
            // is named as itself, not as the next one planned.
            Step::Starting(i, start, tries) => {
                let again = if tries > 0 { " (again: disturbed)" } else { "" };
                events(Event::Next {
                    round: start.round,
                    rounds: cfg.rounds,
                    subject: &format!("{}{again}", planned.labels[i]),
                    workload: &cfg.workloads[start.workload].name,
                    left: planned.left(starts_run, predicted),
                });
                Ok(None)
            }
            Step::Ran(_, start, execs) => {
                for exec in execs {
                    if let Some(store) = store.as_deref_mut() {
                        let workload = &stored[start.workload];
                        let at = Some(elapsed());
                        runs.push(record::save(store, meta, workload, host, tool, exec, at)?);
                    }
                    events(Event::Executed(exec));
                    executions.push(exec.clone());
                    finished += usize::from(exec.outcome.counts());
                }
                starts_run += 1;
                if !primary_checked && every_subject_complete(meta, executions) {
                    primary_checked = true;
                    if let Some(refusal) = refusals(meta, executions, primary).into_iter().next() {
                        return Err(SessionError::Refused {
                            refusal,
                            done: done + finished,
                        });
                    }
                }
                Ok(None)
            }
        })?;
        let ending = last_look(cfg, meta, executions, &chosen, elapsed(), events, ending);
        let own_cpu = own_cpu_start
            .zip(dyno_proc::procfs::own_cpu_seconds())
            .map(|(a, b)| (b - a, wall_start.elapsed().as_secs_f64()));
        Ok(CompareOutcome {
            meta: self.meta.clone(),
            executions: self.executions.clone(),
            runs: self.runs.clone(),
            workloads: stored,
            host: self.host.clone(),
            ending,
            done: done + finished,
            planned: planned.total + done,
            own_cpu,
            elapsed_s: earlier + wall_start.elapsed().as_secs_f64(),
        })
    }
}

/// The executor of a comparison's subjects: a child `dyno cluster run` per execution
/// when they are clusters (a comparison file's subjects are all clusters or none), else
/// the node as a child process. `dyno` is this dyno, which runs the clusters; each is
/// stopped with the file's grace period.
pub fn executor_for(
    cfg: &ComparisonFile,
    dyno: PathBuf,
) -> std::io::Result<Box<dyn Executor<Subject = SubjectSpec, Workload = WorkloadSpec>>> {
    Ok(if cfg.subjects.iter().any(|s| s.cluster.is_some()) {
        Box::new(ClusterExecutor::new(dyno, cfg.grace_s)?)
    } else {
        Box::new(ProcessExecutor::new(cfg.grace_s))
    })
}

/// The rule's last look, after the final round of the budget: a sequential comparison
/// that ran every round ends decided (at the budget when nothing else decided it).
fn last_look(
    cfg: &ComparisonFile,
    meta: &ComparisonMeta,
    executions: &[Execution],
    chosen: &[String],
    elapsed_s: f64,
    events: &mut dyn FnMut(Event<'_>),
    ending: Ending,
) -> Ending {
    match ending {
        Ending::Finished if cfg.sequential.is_some() => {
            let l = looked(cfg, meta, executions, chosen, elapsed_s);
            l.iter().for_each(|l| events(Event::Looked(l)));
            Ending::Decided(
                l.and_then(|l| l.stop)
                    .unwrap_or(dyno_judge::precision::Stop::MaxRounds),
            )
        }
        ending => ending,
    }
}

/// The precision rule's look at the rounds done so far, for a comparison with a target
/// and at least one complete round; the next round is expected to take the mean so far.
fn looked(
    cfg: &ComparisonFile,
    meta: &ComparisonMeta,
    executions: &[Execution],
    primary: &[String],
    elapsed_s: f64,
) -> Option<Look> {
    let seq = cfg.sequential.as_ref()?;
    let rounds = complete_rounds(meta, executions);
    (rounds > 0).then(|| {
        let round_s = elapsed_s / f64::from(rounds);
        look(meta, seq, executions, primary, elapsed_s, round_s)
    })
}

/// What a session's rounds will run: the starts still to do and their labels, and how
/// long that takes.
struct Planned {
    /// Each start's subjects as progress shows them ("v1.0 + v1.1").
    labels: Vec<String>,
    starts_per_round: usize,
    /// Starts not done yet.
    starts_left: usize,
    /// Executions still to run (every window of every subject).
    total: usize,
    per_start: f64,
}

impl Planned {
    fn of(cfg: &ComparisonFile, done: &HashSet<Slot>) -> Planned {
        let plan = starts(cfg);
        let labels = plan
            .iter()
            .map(|s| {
                let names: Vec<&str> = s
                    .subjects
                    .iter()
                    .map(|&i| cfg.subjects[i].name.as_str())
                    .collect();
                names.join(" + ")
            })
            .collect();
        let starts_left = plan
            .iter()
            .filter(|s| !s.slots().all(|slot| done.contains(&slot)))
            .count();
        let slots = cfg.rounds as usize * cfg.subjects.len() * cfg.workloads.len();
        Planned {
            starts_per_round: plan.iter().filter(|s| s.round == 0).count().max(1),
            labels,
            starts_left,
            total: (slots - done.len()) * cfg.windows_per_start as usize,
            per_start: seconds_per_start(cfg),
        }
    }

    /// The time left after `starts_run` starts, at most the rounds the precision rule
    /// `predicted` (and one more) when it did.
    fn left(&self, starts_run: usize, predicted: Option<usize>) -> Duration {
        let mut left = self.starts_left.saturating_sub(starts_run);
        if let Some(rounds) = predicted {
            left = left.min((rounds + 1) * self.starts_per_round);
        }
        Duration::from_secs_f64(left as f64 * self.per_start)
    }
}

/// The mean time one start takes: its warm-up and windows, and a second to start and
/// stop the nodes (side by side, all of a round's at once).
fn seconds_per_start(cfg: &ComparisonFile) -> f64 {
    let windows = f64::from(cfg.windows_per_start);
    cfg.workloads
        .iter()
        .map(|w| w.warmup_s + windows * w.measure_s + 1.0)
        .sum::<f64>()
        / cfg.workloads.len() as f64
}

/// Whether every subject has a complete execution: then the metrics each measures are
/// known.
fn every_subject_complete(meta: &ComparisonMeta, executions: &[Execution]) -> bool {
    meta.subjects.iter().all(|s| {
        executions
            .iter()
            .any(|e| &e.subject == s && e.outcome == Outcome::Complete)
    })
}

/// What the judgement will refuse, said as soon as it is known rather than after the
/// last round.
fn refusals(meta: &ComparisonMeta, executions: &[Execution], chosen: &[String]) -> Vec<Refusal> {
    let mut out = Vec::new();
    let primary = primary_metrics(chosen, meta);
    if !primary.is_empty() {
        if let Err(e) = unknown_primary(executions, &meta.subjects, primary, &meta.work) {
            out.push(Refusal::Primary(e.to_string()));
        }
    }
    if let Err(e) = unknown_work(executions, &meta.work) {
        out.push(Refusal::Work {
            why: e.to_string(),
            file: meta.file.clone(),
        });
    }
    out
}

impl CompareOutcome {
    /// What the session measured, for judging.
    pub fn measured(&self) -> Measured<'_> {
        Measured {
            meta: &self.meta,
            workloads: &self.workloads,
            host: &self.host,
            executions: &self.executions,
            elapsed_s: self.elapsed_s,
        }
    }

    /// The first and last stored run, when any was stored.
    pub fn stored_runs(&self) -> Option<(RunId, RunId)> {
        Some((*self.runs.first()?, *self.runs.last()?))
    }

    /// dyno's own CPU use while comparing, as the report's parameter says it.
    pub fn own_cpu_share(&self) -> Option<String> {
        let (cpu, wall) = self.own_cpu?;
        Some(format!(
            "{cpu:.2} s CPU in {wall:.0} s = {:.2}% of one core",
            100.0 * cpu / wall.max(1e-9)
        ))
    }

    /// The report's parameters of the run: the command line, the dyno version, the stored
    /// runs and dyno's own CPU use.
    pub fn parameters(&self, command_line: String, tool: &str) -> Vec<(String, String)> {
        let mut params = vec![
            ("command line".to_string(), command_line),
            ("dyno".to_string(), tool.to_string()),
        ];
        if let Some((first, last)) = self.stored_runs() {
            params.push(("stored runs".into(), format!("{first}..{last}")));
        }
        if let Some(share) = self.own_cpu_share() {
            params.push(("dyno's own CPU use".into(), share));
        }
        params
    }
}

#[cfg(test)]
mod precision_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SyntheticExecutor;

    #[test]
    fn a_round_rule_ends_the_rounds_before_the_next_round() {
        let file = "rounds = 10\n[[subject]]\nname = \"a\"\ncommand = [\"sh\"]\n\
                    [[subject]]\nname = \"b\"\ncommand = [\"sh\"]\n\
                    [[workload]]\nname = \"w\"\nrate = 1\nmeasure_s = 2\n";
        let cfg = ComparisonFile::parse(file, "c.toml".as_ref()).unwrap();
        let mut events = |_: Event<'_>| {};
        let mut session =
            CompareSession::begin(cfg, "c.toml".as_ref(), None, false, "t".into(), &mut events)
                .unwrap();
        session.quiet_look(None);
        let mut looks = Vec::new();
        let seen = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let told = seen.clone();
        session.stop_rounds_when(RoundRule(Box::new(move |executions| {
            told.borrow_mut().push(executions.len());
            (executions.len() >= 6).then(|| "three rounds are enough".to_string())
        })));
        let outcome = session
            .run(
                None,
                &mut SyntheticExecutor::new(1),
                &AtomicBool::new(false),
                &[],
                &mut |e| {
                    if let Event::Executed(x) = e {
                        looks.push(x.round);
                    }
                },
            )
            .unwrap();
        assert_eq!(
            outcome.ending,
            Ending::Ruled("three rounds are enough".into())
        );
        assert_eq!(outcome.executions.len(), 6);
        assert_eq!(*seen.borrow(), [0, 2, 4, 6], "looked before every round");
        assert_eq!(looks, [0, 0, 1, 1, 2, 2]);
    }
}
