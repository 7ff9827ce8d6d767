//! Continuing a comparison: the fingerprint of what decides its plan and measurements,
//! and the stored comparison a new `dyno compare run` of a file continues. The stored
//! form itself is the judge's (`dyno_judge::record`).

pub use crate::digest::digest;
use crate::runner::Slot;
use crate::spec::ComparisonFile;
use dyno_judge::record::{self, comparison_runs, LoadError, Loaded};
use dyno_judge::ComparisonMeta;
use dyno_store::Store;

/// The meta of a comparison of `cfg` about to run.
pub fn new_meta(cfg: &ComparisonFile) -> ComparisonMeta {
    ComparisonMeta {
        id: format!(
            "cmp-{}-{}",
            (dyno_model::now_unix() * 1000.0) as u64,
            std::process::id()
        ),
        subjects: cfg.subjects.iter().map(|s| s.name.clone()).collect(),
        workloads: cfg.workloads.iter().map(|w| w.name.clone()).collect(),
        rounds: cfg.rounds,
        noise_band: cfg.noise_band,
        alpha: cfg.alpha,
        seed: cfg.seed,
        fingerprint: fingerprint(cfg),
        file: String::new(),
        test: cfg.test,
        primary: cfg.primary.clone(),
        work: cfg
            .workloads
            .iter()
            .filter_map(|w| Some((w.name.clone(), w.work.clone()?)))
            .collect(),
        sequential: cfg.sequential,
        schedule: cfg.schedule,
        windows_per_start: cfg.windows_per_start,
        max_disturbance: cfg.max_disturbance,
        commits: cfg
            .subjects
            .iter()
            .filter_map(|s| Some((s.name.clone(), s.git.as_ref()?.commit.clone())))
            .collect(),
    }
}

/// A stable hash (FNV-1a, 64 bits) of the validated comparison as JSON: the same file,
/// seed, rounds and workloads give the same fingerprint on every machine and version of
/// Rust (unlike `DefaultHasher`). With a precision target the rounds are its budget, not
/// part of what is measured: they are hashed as 0 (which no fixed comparison has).
pub fn fingerprint(cfg: &ComparisonFile) -> String {
    let text = if cfg.sequential.is_some() {
        let mut c = cfg.clone();
        c.rounds = 0;
        serde_json::to_string(&c)
    } else {
        serde_json::to_string(cfg)
    };
    digest(&text.unwrap_or_default())
}

/// What a new `dyno compare run` of a file should do with what the store holds.
#[derive(Debug, Clone, PartialEq)]
pub enum Resume {
    /// Nothing to continue: a new comparison.
    Fresh,
    /// An unfinished comparison of the same file, seed and settings: continue it.
    Continue(Box<Loaded>),
    /// The newest unfinished comparison of this file was made from different contents or
    /// settings: a new comparison starts (the old one stays stored).
    Changed {
        /// The old comparison's id.
        id: String,
        /// Its executions done.
        done: usize,
        /// Its executions planned.
        planned: usize,
    },
}

/// The slots a loaded comparison has done: every stored execution but the interrupted
/// ones (an execution cut short by Ctrl-C is run again).
pub fn done_slots(loaded: &Loaded) -> std::collections::HashSet<Slot> {
    let index = |names: &[String], n: &str| names.iter().position(|x| x == n);
    loaded
        .executions
        .iter()
        .filter(|e| e.outcome.counts())
        .filter_map(|e| {
            Some(Slot {
                round: e.round,
                workload: index(&loaded.meta.workloads, &e.workload)?,
                subject: index(&loaded.meta.subjects, &e.subject)?,
            })
        })
        .collect()
}

/// Finds the comparison a run of `cfg` from `file` continues: the newest stored
/// comparison of the same fingerprint with executions still to do. A newer unfinished
/// comparison of the same file with another fingerprint is reported as `Changed`.
pub fn find_resumable(
    store: &Store,
    cfg: &ComparisonFile,
    file: &str,
) -> Result<Resume, LoadError> {
    let wanted = fingerprint(cfg);
    let mut seen = std::collections::HashSet::new();
    for found in comparison_runs(store)?.rev() {
        let (run, s) = found?;
        let id = run.id;
        if s.comparison.fingerprint.is_empty() || !seen.insert(s.comparison.id.clone()) {
            continue;
        }
        let same_file = s.comparison.file == file;
        if s.comparison.fingerprint != wanted && !same_file {
            continue;
        }
        let loaded = record::load(store, &[id])?;
        let done = done_slots(&loaded).len();
        let planned = loaded.meta.planned();
        if done >= planned {
            // The newest comparison of this file or fingerprint is finished: a new run
            // is a new comparison.
            return Ok(Resume::Fresh);
        }
        if s.comparison.fingerprint == wanted {
            return Ok(Resume::Continue(Box::new(loaded)));
        }
        return Ok(Resume::Changed {
            id: s.comparison.id,
            done,
            planned,
        });
    }
    Ok(Resume::Fresh)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executor::Executor;
    use crate::mock::SyntheticExecutor;
    use dyno_exec::Outcome;
    use dyno_model::Host;
    use std::sync::atomic::AtomicBool;

    fn file(rounds: u32) -> ComparisonFile {
        let text = format!(
            "rounds = {rounds}\n[[subject]]\nname = \"a\"\ncommand = [\"sh\"]\n[[subject]]\nname = \"b\"\ncommand = [\"sh\"]\n[[workload]]\nname = \"value\"\nrate = 1000\nmeasure_s = 20\n[[workload]]\nname = \"script\"\nrate = 100\nmeasure_s = 20\n"
        );
        ComparisonFile::parse(&text, std::path::Path::new("t.toml")).unwrap()
    }

    fn store_executions(
        store: &mut Store,
        cfg: &ComparisonFile,
        meta: &ComparisonMeta,
        slots: &[crate::runner::Slot],
        outcome_of_last: Outcome,
    ) {
        let mut ex = SyntheticExecutor::new(5);
        let stop = AtomicBool::new(false);
        for (i, slot) in slots.iter().enumerate() {
            let mut e = ex.execute(
                &cfg.subjects[slot.subject],
                &cfg.workloads[slot.workload],
                slot.round,
                &stop,
            );
            if i + 1 == slots.len() {
                e.outcome = outcome_of_last.clone();
            }
            record::save(
                store,
                meta,
                &cfg.workloads[slot.workload].stored(),
                &Host::default(),
                "test",
                &e,
                Some(i as f64),
            )
            .unwrap();
        }
    }

    #[test]
    fn an_interrupted_comparison_is_found_again_and_a_changed_file_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("r.db")).unwrap();
        let cfg = file(3);
        assert_eq!(
            find_resumable(&store, &cfg, "cmp.toml").unwrap(),
            Resume::Fresh
        );
        let mut meta = new_meta(&cfg);
        meta.file = "cmp.toml".into();
        let plan = crate::runner::schedule(3, cfg.subjects.len(), cfg.workloads.len(), cfg.seed);
        // Three executions, the last cut short by Ctrl-C.
        store_executions(&mut store, &cfg, &meta, &plan[..3], Outcome::Interrupted);
        let Resume::Continue(loaded) = find_resumable(&store, &cfg, "cmp.toml").unwrap() else {
            panic!("not resumable");
        };
        assert_eq!(loaded.meta.id, meta.id);
        let done = done_slots(&loaded);
        assert_eq!(done, plan[..2].iter().copied().collect());
        // The same file with another seed: a new comparison, and the old one is named.
        let mut other = cfg.clone();
        other.seed += 1;
        match find_resumable(&store, &other, "cmp.toml").unwrap() {
            Resume::Changed { id, done, planned } => {
                assert_eq!((id, done, planned), (meta.id.clone(), 2, plan.len()));
            }
            r => panic!("{r:?}"),
        }
        // Another file with other contents knows nothing of it.
        assert_eq!(
            find_resumable(&store, &other, "other.toml").unwrap(),
            Resume::Fresh
        );
        // Finished: a new run starts afresh.
        store_executions(&mut store, &cfg, &meta, &plan[2..], Outcome::Complete);
        assert_eq!(
            find_resumable(&store, &cfg, "cmp.toml").unwrap(),
            Resume::Fresh
        );
    }
}
