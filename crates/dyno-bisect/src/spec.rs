//! What a bisection is, checked before anything is built: the comparison file's git
//! subject (the template every tested revision is run as), good and bad resolved to
//! commits, good an ancestor of bad, the commits between them, the precision the change
//! is confirmed with, and the comparison file of each step (two revisions of the
//! template, interleaved rounds).

use crate::error::BisectError;
use dyno_build::Repo;
use dyno_compare::spec::{DEFAULT_MAX_MINUTES, DEFAULT_MAX_ROUNDS};
use dyno_compare::ComparisonFile;
use dyno_judge::{Sequential, TestKind};
use dyno_stats::SprtSettings;
use std::path::{Path, PathBuf};

/// The precision a change is confirmed with when the file names none: 5%.
pub const DEFAULT_PRECISION: f64 = 0.05;

/// Rounds a step may take before an undecided revision is called between.
pub const DEFAULT_STEP_ROUNDS: u32 = 20;

/// A revision as given and the commit it names.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Revision {
    /// As written on the command line.
    pub rev: String,
    /// The commit.
    pub commit: String,
}

/// What the command line asks besides the file.
#[derive(Debug, Clone, PartialEq)]
pub struct BisectOptions {
    /// `--good`.
    pub good: String,
    /// `--bad`.
    pub bad: String,
    /// `--all-parents`: walk merged branches too (default: first parents only).
    pub all_parents: bool,
    /// `--precision` (default: the file's `precision`, else 5%).
    pub precision: Option<f64>,
    /// `--step-rounds`: rounds a step may take.
    pub step_rounds: u32,
}

/// A bisection, checked.
#[derive(Debug, Clone)]
pub struct BisectSpec {
    /// The comparison file as given.
    pub file: PathBuf,
    /// Its canonical path (what finds a stored bisection again).
    pub canonical: String,
    /// The validated file.
    pub template: ComparisonFile,
    /// The git subject every revision is run as (an index into the file's subjects).
    pub subject: usize,
    /// Its repository.
    pub repo: Repo,
    /// Good.
    pub good: Revision,
    /// Bad.
    pub bad: Revision,
    /// Good, the commits between, bad: oldest first.
    pub commits: Vec<String>,
    /// Only first parents were walked.
    pub first_parent: bool,
    /// The change must exceed this (relative) to be confirmed and searched.
    pub precision: f64,
    /// The sequential test of each step.
    pub sprt: SprtSettings,
}

/// Reads and validates a comparison file for bisecting. A file of one subject (the git
/// subject to bisect) is accepted: a comparison needs two, so the subject is given a
/// twin for validation (appended, so every line keeps its number); bisect runs only
/// the first git subject anyway, at two revisions per step.
pub fn read_file(path: &Path) -> Result<ComparisonFile, BisectError> {
    let text = std::fs::read_to_string(path).map_err(|e| BisectError::Input {
        what: path.display().to_string(),
        why: e.to_string(),
    })?;
    let twin = toml::from_str::<toml::Table>(&text).ok().and_then(|t| {
        let subjects = t.get("subject")?.as_array()?;
        let only = subjects
            .first()
            .filter(|_| subjects.len() == 1)?
            .as_table()?;
        only.get("git")?;
        let mut copy = only.clone();
        let name = copy.get("name")?.as_str()?.to_string();
        copy.insert("name".into(), format!("{name} (twin)").into());
        let mut wrapper = toml::Table::new();
        wrapper.insert("subject".into(), vec![toml::Value::Table(copy)].into());
        Some(format!("\n{}", toml::to_string(&wrapper).ok()?))
    });
    let text = match twin {
        Some(t) => text + &t,
        None => text,
    };
    Ok(ComparisonFile::parse(&text, path)?)
}

impl BisectSpec {
    /// Checks `cfg` (read from `file`) and `options`: a git subject, two revisions that
    /// are commits, distinct, good an ancestor of bad.
    pub fn new(
        cfg: ComparisonFile,
        file: &Path,
        options: &BisectOptions,
    ) -> Result<BisectSpec, BisectError> {
        let subject = cfg
            .subjects
            .iter()
            .position(|s| s.git.is_some())
            .ok_or_else(|| BisectError::NoGitSubject {
                file: file.to_path_buf(),
            })?;
        let git = cfg.subjects[subject].git.clone().expect("a git subject");
        let repo = dyno_compare::gitbuild::repo_of(&git).map_err(|why| BisectError::Input {
            what: format!(
                "{}: subject `{}`",
                file.display(),
                cfg.subjects[subject].name
            ),
            why,
        })?;
        let resolve = |flag: &str, rev: &str| {
            repo.resolve(rev)
                .map(|commit| Revision {
                    rev: rev.to_string(),
                    commit,
                })
                .map_err(|e| BisectError::Revision {
                    flag: flag.to_string(),
                    rev: rev.to_string(),
                    why: e.to_string(),
                })
        };
        let good = resolve("--good", &options.good)?;
        let bad = resolve("--bad", &options.bad)?;
        if good.commit == bad.commit {
            return Err(BisectError::SameCommit {
                good: good.rev,
                bad: bad.rev,
                commit: good.commit,
            });
        }
        let ancestor =
            repo.is_ancestor(&good.commit, &bad.commit)
                .map_err(|e| BisectError::Revision {
                    flag: "--good".into(),
                    rev: good.rev.clone(),
                    why: e.to_string(),
                })?;
        if !ancestor {
            return Err(BisectError::NotAncestor {
                good: good.rev,
                bad: bad.rev,
            });
        }
        let first_parent = !options.all_parents;
        let between = repo
            .ancestry_path(&good.commit, &bad.commit, first_parent)
            .map_err(|e| BisectError::Revision {
                flag: "--bad".into(),
                rev: bad.rev.clone(),
                why: e.to_string(),
            })?;
        if between.last() != Some(&bad.commit) {
            return Err(BisectError::NotAncestor {
                good: good.rev,
                bad: bad.rev,
            });
        }
        let commits = std::iter::once(good.commit.clone())
            .chain(between)
            .collect();
        let precision = options
            .precision
            .or(cfg.sequential.map(|s| s.precision))
            .unwrap_or(DEFAULT_PRECISION);
        let sprt = SprtSettings {
            max_rounds: options.step_rounds.max(2) as usize,
            ..SprtSettings::default()
        };
        Ok(BisectSpec {
            canonical: std::fs::canonicalize(file)
                .unwrap_or_else(|_| file.to_path_buf())
                .display()
                .to_string(),
            file: file.to_path_buf(),
            template: cfg,
            subject,
            repo,
            good,
            bad,
            commits,
            first_parent,
            precision,
            sprt,
        })
    }

    /// The template subject's name.
    pub fn subject_name(&self) -> &str {
        &self.template.subjects[self.subject].name
    }

    /// The name revision `i` runs under in a step: `good`, `bad`, or its short hash.
    pub fn name_of(&self, i: usize) -> String {
        if i == 0 {
            "good".into()
        } else if i + 1 == self.commits.len() {
            "bad".into()
        } else {
            short(&self.commits[i]).to_string()
        }
    }

    /// The fingerprint of what the bisection measures: the file, good, bad and the walk.
    pub fn fingerprint(&self) -> String {
        dyno_compare::resume::digest(&format!(
            "{}\n{}\n{}\n{}",
            dyno_compare::resume::fingerprint(&self.template),
            self.good.commit,
            self.bad.commit,
            self.first_parent
        ))
    }

    /// The comparison file of one step: revisions `base` and `tested` of the template
    /// (the baseline first), under `workload` alone when given, `rounds` rounds, judged
    /// by `primary`; `tag` names the step and seeds its order, so no two steps share a
    /// stored comparison. `sequential` makes it run until a precision (the confirmation).
    pub fn step_file(
        &self,
        tag: &str,
        (base, tested): (usize, usize),
        workload: Option<&str>,
        primary: &[String],
        sequential: Option<Sequential>,
    ) -> ComparisonFile {
        let mut cfg = self.template.clone();
        let revision = |i: usize| {
            let mut s = self.template.subjects[self.subject].clone();
            s.name = self.name_of(i);
            if let Some(g) = s.git.as_mut() {
                g.rev = self.commits[i].clone();
                g.commit = self.commits[i].clone();
            }
            s
        };
        cfg.subjects = vec![revision(base), revision(tested)];
        if let Some(w) = workload {
            cfg.workloads.retain(|x| x.name == w);
        }
        cfg.primary = primary.to_vec();
        cfg.seed = u64::from_str_radix(&dyno_compare::resume::digest(tag), 16).unwrap_or(cfg.seed)
            ^ cfg.seed;
        match sequential {
            Some(seq) => {
                cfg.rounds = seq.max_rounds;
                cfg.test = Some(TestKind::Sequential);
                cfg.sequential = Some(seq);
            }
            None => {
                cfg.rounds = self.sprt.max_rounds as u32;
                cfg.test = Some(TestKind::Paired);
                cfg.sequential = None;
            }
        }
        cfg
    }

    /// The confirmation's precision rule: the bisection's precision, the file's budget
    /// (or compare's defaults).
    pub fn confirmation_rule(&self) -> Sequential {
        let budget = self.template.sequential;
        Sequential {
            precision: self.precision,
            max_rounds: budget.map_or(DEFAULT_MAX_ROUNDS, |s| s.max_rounds),
            max_minutes: budget.map_or(DEFAULT_MAX_MINUTES, |s| s.max_minutes),
        }
    }
}

/// The first 8 hex digits of a commit.
pub fn short(commit: &str) -> &str {
    &commit[..commit.len().min(8)]
}
