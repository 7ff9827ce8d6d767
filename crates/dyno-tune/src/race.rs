//! The racing scheduler: rounds of shuffled jobs, eliminations, and when to stop.
//!
//! Its state is a pure function of the job records: [`Replay`] walks the rounds in order,
//! and at the end of each complete round applies the same rules the live race applied
//! (retire after three failures in a row, eliminate, mark the contenders whose further
//! samples could change no elimination as settled, check the budget). A resumed study
//! therefore reaches exactly the state it was interrupted in, and continues with the jobs
//! of the first incomplete round.
//!
//! Decisions judge paired rounds by default (per-round log ratios, Student's t; see
//! `dyno_stats::racing_paired`), the unpaired rank tests when `RaceConfig::paired` is off.
//!
//! Settled contenders sit out the following rounds; the race ends when every contender is
//! settled. Most of racing's savings come from there, not from eliminations: variants
//! within `min_effect` of each other are all recommended whichever is faster, so racing
//! does not measure them until their order is known.
//!
//! Baselines run every round while any variant is in the race; they are never eliminated
//! and never recommended.

use crate::error::TuneError;
use crate::extract::Extract;
use crate::measure::{Executor, Job};
use crate::record::{JobRecord, JobResult, Recorder, SubjectKey};
use dyno_model::Direction;
use dyno_stats::{
    eliminations, order_settled, paired_eliminations, paired_settled, settled_variants, Better,
    PairedRule, RacingRule, RoundSamples,
};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_pcg::Pcg64;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

/// Racing or every variant every round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Eliminate variants worse on every metric, stop sampling settled ones.
    Racing,
    /// Run every variant for `max_rounds` rounds (for comparison).
    Exhaustive,
}

/// The rules of a race.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RaceConfig {
    /// Most rounds.
    pub max_rounds: u32,
    /// Rounds before any elimination.
    pub min_rounds: u32,
    /// No new round starts after this much recorded job time.
    pub time_budget_s: Option<f64>,
    /// Family-wise error rate per decision.
    pub alpha: f64,
    /// Smallest relative effect worth acting on.
    pub min_effect: f64,
    /// Seed of the shuffles and bootstrap resampling.
    pub seed: u64,
    /// Racing or exhaustive.
    pub mode: Mode,
    /// Bootstrap resamples of the "settled" check.
    pub resamples: usize,
    /// Test losers only against the current Pareto front (smaller Holm family, see
    /// [`crate::challenge`]) instead of every ordered pair (`dyno_stats::eliminations`).
    pub against_front: bool,
    /// Stop sampling each contender once more samples of it can change no elimination
    /// ([`dyno_stats::settled_variants`]), and stop the race when every contender is
    /// settled. When `false`, every contender runs until the whole order is settled
    /// ([`dyno_stats::order_settled`]) or `max_rounds`.
    pub settle_variants: bool,
    /// Judge eliminations and settling on paired rounds (Student's t on per-round log
    /// ratios, [`dyno_stats::paired_eliminations`]); `false` = the unpaired rank tests.
    pub paired: bool,
    /// With `paired`: conditional power below which a question near the `min_effect`
    /// threshold is abandoned (0 = never; see [`dyno_stats::paired_settled`]).
    pub futility: f64,
}

impl RaceConfig {
    /// From the study's `[run]` settings.
    pub fn from_settings(s: &crate::RunSettings, mode: Mode) -> RaceConfig {
        RaceConfig {
            max_rounds: s.max_rounds,
            min_rounds: s.min_rounds,
            time_budget_s: s.time_budget_s,
            alpha: s.alpha,
            min_effect: s.min_effect,
            seed: s.seed,
            mode,
            resamples: 1000,
            against_front: true,
            settle_variants: true,
            paired: true,
            futility: s.futility,
        }
    }

    fn rule(&self) -> RacingRule {
        RacingRule {
            min_rounds: self.min_rounds as usize,
            alpha: self.alpha,
            min_effect: self.min_effect,
        }
    }
}

/// One subject of the race: a built variant or a baseline binary.
#[derive(Debug, Clone, PartialEq)]
pub struct Contestant {
    /// Identity in the record.
    pub key: SubjectKey,
    /// Readable label.
    pub label: String,
    /// Baselines are measured, never eliminated or recommended.
    pub baseline: bool,
    /// The binary to run.
    pub binary: PathBuf,
}

/// Why the race ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// Every contender is settled (or, with `settle_variants` off, their order is), or one
    /// is left.
    Settled,
    /// `max_rounds` reached.
    MaxRounds,
    /// The time budget is spent.
    TimeBudget,
    /// No variant can run (all failed).
    NoContenders,
    /// Ctrl-C: the next run resumes.
    Interrupted,
}

impl StopReason {
    /// For people.
    pub fn describe(self) -> &'static str {
        match self {
            StopReason::Settled => {
                "more runs of any contender could change no elimination (or its order is settled)"
            }
            StopReason::MaxRounds => "the maximum number of rounds is reached",
            StopReason::TimeBudget => "the time budget is spent",
            StopReason::NoContenders => "no variant is left that runs",
            StopReason::Interrupted => "interrupted; `dyno tune run` resumes",
        }
    }
}

/// What happened to a subject that left the race.
#[derive(Debug, Clone, PartialEq)]
pub enum Exit {
    /// Significantly worse than `by` on every metric after `round`.
    Eliminated {
        /// Round of the decision.
        round: u32,
        /// The subject that beat it.
        by: usize,
    },
    /// Three failed jobs in a row, the last in `round`.
    Retired {
        /// Round of the third failure.
        round: u32,
    },
}

/// The state of a race after its complete rounds.
#[derive(Debug, Clone, PartialEq)]
pub struct Replay {
    config: RaceConfig,
    benchmarks: Vec<String>,
    baseline: Vec<bool>,
    /// Complete rounds.
    pub rounds_done: u32,
    /// Why the race is over, if it is.
    pub stop: Option<StopReason>,
    /// Subjects that left the race, and how.
    pub exits: BTreeMap<usize, Exit>,
    /// Contenders not sampled in the next round because more samples of them could change
    /// no elimination, with the round since which that holds. They stay contenders: their
    /// samples count in every later decision, they may still be eliminated, and they are
    /// sampled again if a rival's new samples reopen a question.
    pub settled: BTreeMap<usize, u32>,
}

/// The samples of `metric` for `subject` from rounds `<= round` (failed jobs excluded).
pub fn values(records: &[JobRecord], metric: &str, round: u32) -> Vec<f64> {
    records
        .iter()
        .filter(|j| j.round <= round)
        .filter_map(|j| match &j.result {
            JobResult::Ok(r) => Some(r),
            JobResult::Failed { .. } => None,
        })
        .flatten()
        .filter(|r| r.metric.name == metric)
        .map(|r| r.value)
        .collect()
}

/// Every metric (name and direction) any subject reported, in first-seen order.
pub fn metrics_of(records: &[Vec<JobRecord>]) -> Vec<dyno_model::Metric> {
    let mut out: Vec<dyno_model::Metric> = Vec::new();
    for r in records.iter().flatten() {
        if let JobResult::Ok(readings) = &r.result {
            for x in readings {
                if !out.iter().any(|m| m.name == x.metric.name) {
                    out.push(x.metric.clone());
                }
            }
        }
    }
    out
}

fn better(d: Direction) -> Better {
    match d {
        Direction::HigherIsBetter => Better::Higher,
        Direction::LowerIsBetter => Better::Lower,
    }
}

/// The metrics every one of `subjects` has at least `min` samples of (rounds `<= round`).
fn judged_metrics(
    records: &[Vec<JobRecord>],
    subjects: &[usize],
    round: u32,
    min: usize,
) -> Vec<dyno_model::Metric> {
    metrics_of(records)
        .into_iter()
        .filter(|m| {
            subjects
                .iter()
                .all(|&s| values(&records[s], &m.name, round).len() >= min.max(1))
        })
        .collect()
}

/// `per(subject, metric)` over `subjects` and the judged metrics, and their directions.
fn matrix<T>(
    records: &[Vec<JobRecord>],
    subjects: &[usize],
    round: u32,
    min: usize,
    per: impl Fn(&[JobRecord], &str, u32) -> T,
) -> (Vec<Vec<T>>, Vec<Better>) {
    let metrics = judged_metrics(records, subjects, round, min);
    let samples = subjects
        .iter()
        .map(|&s| {
            metrics
                .iter()
                .map(|m| per(&records[s], &m.name, round))
                .collect()
        })
        .collect();
    (
        samples,
        metrics.iter().map(|m| better(m.direction)).collect(),
    )
}

/// The samples matrix `[subject][metric]` over `subjects` with rounds `<= round`, on the
/// metrics every subject has at least `min` samples of, and their directions.
pub fn sample_matrix(
    records: &[Vec<JobRecord>],
    subjects: &[usize],
    round: u32,
    min: usize,
) -> (Vec<Vec<Vec<f64>>>, Vec<Better>) {
    matrix(records, subjects, round, min, values)
}

impl Replay {
    /// The state before any round.
    pub fn new(config: RaceConfig, benchmarks: &[String], baseline: &[bool]) -> Replay {
        Replay {
            config,
            benchmarks: benchmarks.to_vec(),
            baseline: baseline.to_vec(),
            rounds_done: 0,
            stop: None,
            exits: BTreeMap::new(),
            settled: BTreeMap::new(),
        }
    }

    /// Rounds before any elimination.
    pub fn min_rounds(&self) -> u32 {
        self.config.min_rounds
    }

    /// Variants still in the race.
    pub fn contenders(&self) -> Vec<usize> {
        (0..self.baseline.len())
            .filter(|&i| !self.baseline[i] && !self.exits.contains_key(&i))
            .collect()
    }

    /// Who runs in the next round: the contenders not yet settled, and the baselines still
    /// running (while any contender runs).
    pub fn participants(&self) -> Vec<usize> {
        let sampled = self
            .contenders()
            .into_iter()
            .any(|i| !self.settled.contains_key(&i));
        if !sampled {
            return Vec::new();
        }
        (0..self.baseline.len())
            .filter(|&i| !self.exits.contains_key(&i) && !self.settled.contains_key(&i))
            .collect()
    }

    /// The round the next jobs belong to.
    pub fn next_round(&self) -> u32 {
        self.rounds_done + 1
    }

    fn has(records: &[JobRecord], round: u32, benchmark: &str) -> bool {
        records
            .iter()
            .any(|j| j.round == round && j.benchmark == benchmark)
    }

    /// The `(subject, benchmark index)` jobs of the next round not yet recorded.
    pub fn missing_jobs(&self, records: &[Vec<JobRecord>]) -> Vec<(usize, usize)> {
        let round = self.next_round();
        let mut out = Vec::new();
        for s in self.participants() {
            for (b, name) in self.benchmarks.iter().enumerate() {
                if !Self::has(&records[s], round, name) {
                    out.push((s, b));
                }
            }
        }
        out
    }

    /// Applies every round that is complete in `records` and not yet applied, and the
    /// stopping rules; returns when the next round is incomplete or the race is over.
    pub fn advance(&mut self, records: &[Vec<JobRecord>]) -> Result<(), TuneError> {
        while self.stop.is_none() {
            if self.contenders().is_empty() {
                self.stop = Some(StopReason::NoContenders);
                break;
            }
            if self.rounds_done >= self.config.max_rounds {
                self.stop = Some(StopReason::MaxRounds);
                break;
            }
            if let Some(budget) = self.config.time_budget_s {
                let spent: f64 = records
                    .iter()
                    .flatten()
                    .filter(|j| j.round <= self.rounds_done)
                    .map(|j| j.elapsed_s)
                    .sum();
                if spent >= budget {
                    self.stop = Some(StopReason::TimeBudget);
                    break;
                }
            }
            if !self.missing_jobs(records).is_empty() {
                break;
            }
            let round = self.next_round();
            self.rounds_done = round;
            self.retire(records, round);
            self.decide(records, round)?;
        }
        Ok(())
    }

    /// Marks settled survivors and stops the race when all are settled (or one is left).
    fn settle(
        &mut self,
        survivors: &[usize],
        samples: &Judged,
        dirs: &[Better],
        round: u32,
    ) -> Result<(), TuneError> {
        let seed = self.config.seed.wrapping_add(u64::from(round));
        let done = if survivors.len() <= 1 {
            true
        } else if self.config.settle_variants {
            // Judged afresh every round: a variant whose rivals' new samples reopen a
            // question is sampled again.
            let settled = samples.settled(dirs, &self.config)?;
            let before = std::mem::take(&mut self.settled);
            for (&s, _) in survivors.iter().zip(&settled).filter(|(_, &b)| b) {
                self.settled
                    .insert(s, before.get(&s).copied().unwrap_or(round));
            }
            settled.iter().all(|&b| b)
        } else {
            samples.order_settled(dirs, &self.config, seed)?
        };
        if done {
            self.stop = Some(StopReason::Settled);
        }
        Ok(())
    }

    fn retire(&mut self, records: &[Vec<JobRecord>], round: u32) {
        for s in self.participants() {
            let mut jobs: Vec<&JobRecord> =
                records[s].iter().filter(|j| j.round <= round).collect();
            jobs.sort_by_key(|j| {
                let b = self.benchmarks.iter().position(|n| *n == j.benchmark);
                (j.round, b)
            });
            let last3 = jobs.iter().rev().take(3).collect::<Vec<_>>();
            if last3.len() == 3 && last3.iter().all(|j| j.failed()) {
                self.exits.insert(s, Exit::Retired { round });
            }
        }
    }

    fn decide(&mut self, records: &[Vec<JobRecord>], round: u32) -> Result<(), TuneError> {
        if self.config.mode == Mode::Exhaustive || round < self.config.min_rounds {
            return Ok(());
        }
        let contenders = self.contenders();
        if contenders.len() <= 1 {
            self.stop = Some(StopReason::Settled);
            return Ok(());
        }
        // Only contenders with min_rounds samples on every judged metric take part.
        let min = self.config.min_rounds as usize;
        let judged: Vec<usize> = contenders
            .iter()
            .copied()
            .filter(|&s| {
                metrics_of(records)
                    .iter()
                    .any(|m| values(&records[s], &m.name, round).len() >= min)
            })
            .collect();
        let (samples, dirs) = Judged::collect(records, &judged, round, min, self.config.paired);
        if dirs.is_empty() || judged.len() < 2 {
            return Ok(());
        }
        let (eliminated, survivors) = samples.eliminate(&dirs, &self.config)?;
        for (loser, winner) in eliminated {
            self.exits.insert(
                judged[loser],
                Exit::Eliminated {
                    round,
                    by: judged[winner],
                },
            );
        }
        if judged.len() == contenders.len() {
            let sub = samples.subset(&survivors);
            let survivors: Vec<usize> = survivors.into_iter().map(|i| judged[i]).collect();
            self.settle(&survivors, &sub, &dirs, round)?;
        }
        Ok(())
    }
}

/// The recommended variants at the end of a race, the same function for both modes: the
/// variants neither retired nor eliminated during the race that survive one final
/// elimination decision over all their samples, by the race's rule (paired rounds, or the
/// unpaired rank tests): no variant of the Pareto front (on medians) beats them on every
/// metric significantly (Holm) and by at least `min_effect` (the gain and the one-sided
/// `1 - alpha` lower bound of the gain). In exhaustive mode that final decision is the
/// only one.
///
/// Eliminations made during a race stand. Re-judging them in the final decision would
/// judge the loser on the few rounds it ran (the very samples that eliminated it) against
/// a different front and Holm family, which turned clear 10% losers back into recommended
/// variants in the simulation; the lower bound on the gain is what keeps early looks from
/// eliminating variants inside the `min_effect` band instead.
pub fn recommended(replay: &Replay, records: &[Vec<JobRecord>]) -> Result<Vec<usize>, TuneError> {
    let candidates: Vec<usize> = (0..replay.baseline.len())
        .filter(|&i| !replay.baseline[i] && !replay.exits.contains_key(&i))
        .filter(|&i| !records[i].is_empty())
        .collect();
    let (samples, dirs) = Judged::collect(records, &candidates, u32::MAX, 1, replay.config.paired);
    if dirs.is_empty() || candidates.len() < 2 {
        return Ok(candidates);
    }
    let config = RaceConfig {
        min_rounds: 2,
        ..replay.config
    };
    let (_, survivors) = samples.eliminate(&dirs, &config)?;
    Ok(survivors.iter().map(|&i| candidates[i]).collect())
}

use crate::challenge::Decision;

/// The samples a decision judges: pooled per subject and metric (the rank tests), or
/// keyed by round (the paired tests).
#[derive(Debug, Clone)]
enum Judged {
    Unpaired(Vec<Vec<Vec<f64>>>),
    Paired(Vec<Vec<RoundSamples>>),
}

impl Judged {
    /// `subjects`' samples from rounds `<= round` on the metrics each has `min` of.
    fn collect(
        records: &[Vec<JobRecord>],
        subjects: &[usize],
        round: u32,
        min: usize,
        paired: bool,
    ) -> (Judged, Vec<Better>) {
        if paired {
            let (by_round, dirs) = matrix(records, subjects, round, min, round_values);
            return (Judged::Paired(by_round), dirs);
        }
        let (samples, dirs) = sample_matrix(records, subjects, round, min);
        (Judged::Unpaired(samples), dirs)
    }

    fn subset(&self, keep: &[usize]) -> Judged {
        match self {
            Judged::Unpaired(s) => Judged::Unpaired(keep.iter().map(|&i| s[i].clone()).collect()),
            Judged::Paired(s) => Judged::Paired(keep.iter().map(|&i| s[i].clone()).collect()),
        }
    }

    fn paired_rule(config: &RaceConfig) -> PairedRule {
        PairedRule {
            rule: config.rule(),
            max_rounds: config.max_rounds as usize,
            futility: config.futility,
        }
    }

    /// One elimination decision by the configured rule: `(loser, winner)` pairs and survivors.
    fn eliminate(&self, dirs: &[Better], config: &RaceConfig) -> Result<Decision, TuneError> {
        let rule = config.rule();
        match self {
            Judged::Paired(s) => Ok(paired_eliminations(s, dirs, &Self::paired_rule(config))?),
            Judged::Unpaired(s) if config.against_front => {
                crate::challenge::eliminate_against_front(s, dirs, &rule)
            }
            Judged::Unpaired(s) => {
                let d = eliminations(s, dirs, &rule)?;
                let pairs = d
                    .eliminated
                    .iter()
                    .map(|e| (e.variant, e.beaten_by))
                    .collect();
                Ok((pairs, d.survivors))
            }
        }
    }

    /// Per subject: can more samples of it no longer change an elimination?
    fn settled(&self, dirs: &[Better], config: &RaceConfig) -> Result<Vec<bool>, TuneError> {
        Ok(match self {
            Judged::Paired(s) => paired_settled(s, dirs, &Self::paired_rule(config))?,
            Judged::Unpaired(s) => settled_variants(s, dirs, &config.rule())?,
        })
    }

    /// Is the whole order settled (the stricter rule, unpaired samples)?
    fn order_settled(
        &self,
        dirs: &[Better],
        config: &RaceConfig,
        seed: u64,
    ) -> Result<bool, TuneError> {
        let pooled = match self {
            Judged::Unpaired(s) => s.clone(),
            Judged::Paired(s) => s
                .iter()
                .map(|v| v.iter().map(|m| m.values().copied().collect()).collect())
                .collect(),
        };
        Ok(order_settled(&pooled, dirs, &config.rule(), config.resamples, seed)?.settled)
    }
}

/// One value per round of `metric` for `subject` (the median of that round's readings),
/// rounds `<= round`, failed jobs excluded.
pub fn round_values(records: &[JobRecord], metric: &str, round: u32) -> RoundSamples {
    let mut per_round: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
    for j in records.iter().filter(|j| j.round <= round) {
        if let JobResult::Ok(readings) = &j.result {
            for r in readings.iter().filter(|r| r.metric.name == metric) {
                per_round.entry(j.round).or_default().push(r.value);
            }
        }
    }
    per_round
        .into_iter()
        .filter_map(|(r, v)| dyno_stats::median(&v).map(|m| (r, m)))
        .collect()
}

/// A job finished (for progress display).
#[derive(Debug, Clone)]
pub struct JobEvent {
    /// The round.
    pub round: u32,
    /// Subject label.
    pub label: String,
    /// Benchmark name.
    pub benchmark: String,
    /// `true` when it failed.
    pub failed: bool,
    /// Jobs left in this round.
    pub left_in_round: usize,
}

/// How a race ended.
#[derive(Debug, Clone)]
pub struct RaceOutcome {
    /// The final state.
    pub replay: Replay,
    /// Every record, per subject.
    pub records: Vec<Vec<JobRecord>>,
    /// Why it stopped.
    pub stop: StopReason,
    /// Jobs run in this session (not counting resumed work).
    pub jobs_run: usize,
}

/// Turns a process outcome into a record: failed on a non-zero exit or nothing readable.
pub fn to_record(
    outcome: &crate::measure::Outcome,
    extract: &Extract,
    round: u32,
    benchmark: &str,
) -> JobRecord {
    let tail = || {
        let both = format!(
            "{}\n{}",
            outcome.stdout.trim_end(),
            outcome.stderr.trim_end()
        );
        crate::toolchain::tail(both.trim(), 20)
    };
    let result = if !outcome.success() {
        JobResult::Failed {
            error: match outcome.exit_code {
                _ if outcome.timed_out => format!(
                    "timed out: still running after {:.0} s",
                    outcome.wall_time_s
                ),
                Some(c) => format!("exit status {c}"),
                None => "killed by a signal or did not start".into(),
            },
            tail: tail(),
        }
    } else {
        match extract.read(&outcome.stdout, outcome.wall_time_s) {
            Ok(readings) => JobResult::Ok(readings),
            Err(e) => JobResult::Failed {
                error: format!("nothing to extract: {e}"),
                tail: tail(),
            },
        }
    };
    JobRecord {
        round,
        benchmark: benchmark.to_string(),
        elapsed_s: outcome.wall_time_s,
        result,
    }
}

/// Runs (or resumes) a race to its end or until `stop` is raised. Each job is recorded as
/// soon as it finishes; a job that was running when `stop` was raised is not recorded
/// (its process was interrupted too), so no half-measured sample is kept.
#[allow(clippy::too_many_arguments)]
pub fn run_race(
    contestants: &[Contestant],
    benchmarks: &[crate::Benchmark],
    config: RaceConfig,
    executor: &mut dyn Executor,
    recorder: &mut dyn Recorder,
    stop: &AtomicBool,
    on_job: &mut dyn FnMut(&JobEvent),
) -> Result<RaceOutcome, TuneError> {
    let keys: Vec<SubjectKey> = contestants.iter().map(|c| c.key.clone()).collect();
    let mut records = recorder.load(&keys)?;
    let names: Vec<String> = benchmarks.iter().map(|b| b.name.clone()).collect();
    let baseline: Vec<bool> = contestants.iter().map(|c| c.baseline).collect();
    let mut replay = Replay::new(config, &names, &baseline);
    let mut jobs_run = 0;
    loop {
        replay.advance(&records)?;
        if let Some(reason) = replay.stop {
            recorder.finish(true)?;
            return Ok(RaceOutcome {
                replay,
                records,
                stop: reason,
                jobs_run,
            });
        }
        let round = replay.next_round();
        let mut jobs = replay.missing_jobs(&records);
        let mut rng = Pcg64::seed_from_u64(config.seed ^ (u64::from(round) << 32));
        jobs.shuffle(&mut rng);
        let total = jobs.len();
        for (n, (s, b)) in jobs.into_iter().enumerate() {
            if stop.load(Ordering::SeqCst) {
                return interrupted(recorder, replay, records, jobs_run);
            }
            let job = Job {
                subject: s,
                benchmark: b,
                round,
                command_line: benchmarks[b]
                    .invocation
                    .command_line(&contestants[s].binary),
                timeout: std::time::Duration::from_secs_f64(benchmarks[b].timeout_s),
            };
            let outcome = executor.run(&job);
            if stop.load(Ordering::SeqCst) {
                return interrupted(recorder, replay, records, jobs_run);
            }
            let record = to_record(&outcome, &benchmarks[b].extract, round, &names[b]);
            recorder.record(s, &record)?;
            jobs_run += 1;
            on_job(&JobEvent {
                round,
                label: contestants[s].label.clone(),
                benchmark: names[b].clone(),
                failed: record.failed(),
                left_in_round: total - n - 1,
            });
            records[s].push(record);
        }
    }
}

fn interrupted(
    recorder: &mut dyn Recorder,
    replay: Replay,
    records: Vec<Vec<JobRecord>>,
    jobs_run: usize,
) -> Result<RaceOutcome, TuneError> {
    recorder.finish(false)?;
    Ok(RaceOutcome {
        replay,
        records,
        stop: StopReason::Interrupted,
        jobs_run,
    })
}
