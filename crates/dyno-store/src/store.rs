//! The store's one interface over its two backends: an embedded SQLite file (the
//! default) and a shared PostgreSQL server for a fleet of machines.

use crate::error::StoreError;
use crate::export::ExportFormat;
use crate::filter::RunFilter;
use crate::fleet::{FleetQuery, FleetRuns};
use crate::history::{HistoryPoint, HistoryQuery};
use crate::pg::Pg;
use crate::query::{RunSummary, StoredRun};
use crate::sqlite::Sqlite;
use crate::transfer::{Copied, CopyTally, RunRecord};
use crate::url::path_is_postgres;
use crate::RunId;
use dyno_model::{Metric, RunInfo, RunStatus, Sample};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The results store: hosts, subjects, runs, metrics and samples, in a SQLite file or a
/// PostgreSQL database (same schema, same answers).
///
/// A `Store` is one connection; open one per thread or process. Concurrent writers are
/// safe on both backends: SQLite uses WAL journaling, immediate write transactions and a
/// busy timeout of 10 s; on PostgreSQL every write is one transaction, retried after a
/// reconnect (with backoff, for up to 60 s) when the server goes away.
#[derive(Debug)]
pub struct Store {
    backend: Backend,
}

#[derive(Debug)]
enum Backend {
    Sqlite(Sqlite),
    Postgres(Box<Pg>),
}

/// Calls the same method on whichever backend the store has.
macro_rules! dispatch {
    ($self:expr, $b:ident => $call:expr) => {
        match &$self.backend {
            Backend::Sqlite($b) => $call,
            Backend::Postgres($b) => $call,
        }
    };
}

macro_rules! dispatch_mut {
    ($self:expr, $b:ident => $call:expr) => {
        match &mut $self.backend {
            Backend::Sqlite($b) => $call,
            Backend::Postgres($b) => $call,
        }
    };
}

impl Store {
    /// Opens the store at `path` for reading and writing, creating it and migrating it to
    /// the current schema.
    ///
    /// `path` is a SQLite file (its parent directories are created) or a PostgreSQL URL,
    /// `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=...]` (see
    /// [`is_postgres_url`](crate::is_postgres_url)); the database must exist, its tables
    /// are created.
    ///
    /// A file or database that is not a dyno store is refused ([`StoreError::NotAStore`])
    /// and left untouched; so is a store written by a newer dyno ([`StoreError::TooNew`]).
    /// A server that cannot be reached is [`StoreError::Unreachable`], a refused login
    /// [`StoreError::Login`]; their messages show the URL without its password.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        Ok(Store {
            backend: match postgres_url(path) {
                Some(url) => Backend::Postgres(Box::new(Pg::open(url, false)?)),
                None => Backend::Sqlite(Sqlite::open(path)?),
            },
        })
    }

    /// Opens an existing store for reading only (list, show, export). Creates nothing:
    /// a missing file, or a PostgreSQL database without dyno's tables, is
    /// [`StoreError::Missing`].
    pub fn open_read_only(path: &Path) -> Result<Store, StoreError> {
        Ok(Store {
            backend: match postgres_url(path) {
                Some(url) => Backend::Postgres(Box::new(Pg::open(url, true)?)),
                None => Backend::Sqlite(Sqlite::open_read_only(path)?),
            },
        })
    }

    /// Where the store lives by default: `$XDG_DATA_HOME/dyno/results.db`, else
    /// `$HOME/.local/share/dyno/results.db`, else `dyno-results.db` in the working
    /// directory. (`--db` and `DYNO_DB` are the binary's business.)
    pub fn default_path() -> PathBuf {
        let non_empty = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
        // The XDG spec says relative values are invalid and must be ignored.
        if let Some(xdg) = non_empty("XDG_DATA_HOME").map(PathBuf::from) {
            if xdg.is_absolute() {
                return xdg.join("dyno").join("results.db");
            }
        }
        match non_empty("HOME") {
            Some(home) => PathBuf::from(home).join(".local/share/dyno/results.db"),
            None => PathBuf::from("dyno-results.db"),
        }
    }

    /// The store file; for PostgreSQL, the URL with its password hidden.
    pub fn path(&self) -> &Path {
        match &self.backend {
            Backend::Sqlite(s) => &s.path,
            Backend::Postgres(p) => &p.shown,
        }
    }

    /// True when the store is a PostgreSQL database.
    pub fn is_postgres(&self) -> bool {
        matches!(self.backend, Backend::Postgres(_))
    }

    /// How long a PostgreSQL write keeps reconnecting to a server that went away before
    /// it fails with [`StoreError::ServerLost`] (default 60 s). No effect on SQLite.
    pub fn set_reconnect_limit(&mut self, limit: Duration) {
        if let Backend::Postgres(p) = &mut self.backend {
            p.reconnect_limit = limit;
        }
    }

    /// Records the start of a run with the metrics it will measure; its status is
    /// `running` until [`Store::finish_run`]. The calling process is recorded as the
    /// run's writer (see [`Store::reap_dead_runs`]), and the run gets a new globally
    /// unique id. Any PostgreSQL URL in the command line is stored without its password.
    pub fn begin_run(&mut self, info: &RunInfo, metrics: &[Metric]) -> Result<RunId, StoreError> {
        dispatch_mut!(self, b => b.begin_run(info, metrics))
    }

    /// Registers one more metric with a run. Registering the same metric again is a
    /// no-op; the same name with another unit or direction is [`StoreError::MetricConflict`].
    pub fn add_metric(&mut self, run: RunId, metric: &Metric) -> Result<(), StoreError> {
        dispatch_mut!(self, b => b.add_metric(run, metric))
    }

    /// Adds samples to a run in one transaction, committed on return. Every sample's
    /// metric must be registered with the run; otherwise nothing is added. A NaN value is
    /// kept (stored as SQL NULL, read back as NaN).
    pub fn add_samples(&mut self, run: RunId, samples: &[Sample]) -> Result<(), StoreError> {
        match &mut self.backend {
            Backend::Sqlite(s) => s.add_samples(run, samples),
            Backend::Postgres(p) => {
                let rows: Vec<_> = samples.iter().map(|s| (s, None)).collect();
                p.insert_samples(run, &rows)
            }
        }
    }

    /// Like [`Store::add_samples`], with a JSON value of extra dimensions per sample (a
    /// tune variant and round, a workload phase...). `null` means no labels.
    pub fn add_labeled_samples(
        &mut self,
        run: RunId,
        samples: &[(Sample, serde_json::Value)],
    ) -> Result<(), StoreError> {
        match &mut self.backend {
            Backend::Sqlite(s) => s.add_labeled_samples(run, samples),
            Backend::Postgres(p) => {
                let rows: Vec<_> = samples
                    .iter()
                    .map(|(s, l)| (s, (!l.is_null()).then(|| l.to_string())))
                    .collect();
                p.insert_samples(run, &rows)
            }
        }
    }

    /// Replaces a run's settings: a run stored as it goes (begun before its figures are
    /// known) records what it learns on the way, so a run killed halfway keeps it.
    pub fn update_settings(
        &mut self,
        run: RunId,
        settings: &serde_json::Value,
    ) -> Result<(), StoreError> {
        dispatch_mut!(self, b => b.update_settings(run, settings))
    }

    /// Records how a run ended and when (now). `status` must not be `Running`.
    pub fn finish_run(&mut self, run: RunId, status: RunStatus) -> Result<(), StoreError> {
        dispatch_mut!(self, b => b.finish_run(run, status))
    }

    /// Deletes a run with its metrics and samples, and the host and subject rows no
    /// other run uses.
    pub fn delete_run(&mut self, id: RunId) -> Result<(), StoreError> {
        dispatch_mut!(self, b => b.delete_run(id))
    }

    /// Marks `incomplete` every `running` run whose writing process is known to be dead
    /// (same host, process gone; see the crate docs). Returns the runs it marked.
    ///
    /// Nothing does this implicitly: `list_runs` and `run` already *report* such runs as
    /// incomplete, and this persists it (for a `dyno results reap`, or before resuming).
    pub fn reap_dead_runs(&mut self) -> Result<Vec<RunId>, StoreError> {
        dispatch_mut!(self, b => b.reap_dead_runs())
    }

    /// Runs matching `filter`, newest first (by start time, then id).
    pub fn list_runs(&self, filter: &RunFilter) -> Result<Vec<RunSummary>, StoreError> {
        dispatch!(self, b => b.list_runs(filter))
    }

    /// One run with its metrics and samples; [`StoreError::UnknownRun`] if missing.
    pub fn run(&self, id: RunId) -> Result<StoredRun, StoreError> {
        dispatch!(self, b => b.run(id))
    }

    /// The samples of a run with their labels (`None` for samples added without), in
    /// the order of [`StoredRun::samples`].
    pub fn labeled_samples(
        &self,
        id: RunId,
    ) -> Result<Vec<(Sample, Option<serde_json::Value>)>, StoreError> {
        dispatch!(self, b => b.labeled_samples(id))
    }

    /// Writes the samples of `runs` (all runs when empty, in id order) to `out` in long
    /// format and returns the number of rows. Every id is checked before anything is
    /// written: an unknown one is [`StoreError::UnknownRun`].
    pub fn export(
        &self,
        runs: &[RunId],
        format: ExportFormat,
        out: &mut dyn Write,
    ) -> Result<u64, StoreError> {
        dispatch!(self, b => b.export(runs, format, out))
    }

    /// Copies run `id` (host, subject, metrics, samples, status) into `to`, which may use
    /// the other backend. Idempotent: runs are matched by their globally unique id, so a
    /// run already in `to` is left as it is ([`Copied::AlreadyThere`]). The copy is one
    /// transaction in `to`: an interrupted copy leaves nothing of the run.
    pub fn copy_run(&self, id: RunId, to: &mut Store) -> Result<Copied, StoreError> {
        let record = self.record(id)?;
        match &mut to.backend {
            Backend::Sqlite(s) => s.import(&record),
            Backend::Postgres(p) => p.import(&record),
        }
    }

    /// The summaries of `ids` (each must be here: an unknown one is
    /// [`StoreError::UnknownRun`], found before anything is copied), or of every run
    /// matching `filter` when `ids` is empty; oldest first.
    pub fn select_runs(
        &self,
        ids: &[RunId],
        filter: &RunFilter,
    ) -> Result<Vec<RunSummary>, StoreError> {
        let mut all = self.list_runs(filter)?;
        all.reverse();
        if ids.is_empty() {
            return Ok(all);
        }
        ids.iter()
            .map(|id| {
                all.iter()
                    .find(|r| r.id == *id)
                    .cloned()
                    .ok_or(StoreError::UnknownRun(*id))
            })
            .collect()
    }

    /// Copies `runs` into `to` in order ([`Store::copy_run`] each), leaving out runs still
    /// running. On a failure, the index of the run that failed and the error: the runs
    /// before it are copied, and copying again skips them.
    pub fn copy_runs(
        &self,
        to: &mut Store,
        runs: &[RunSummary],
    ) -> Result<CopyTally, (usize, StoreError)> {
        let mut tally = CopyTally::default();
        for (i, r) in runs.iter().enumerate() {
            if r.status == dyno_model::RunStatus::Running {
                tally.running += 1;
                continue;
            }
            match self.copy_run(r.id, to).map_err(|e| (i, e))? {
                Copied::New(_) => tally.new += 1,
                Copied::AlreadyThere(_) => tally.already_there += 1,
            }
        }
        Ok(tally)
    }

    /// For the fleet question: the newest complete run of every machine (host name and
    /// CPU model) that measured `query.metric`, with its samples of it.
    pub fn fleet_runs(&self, query: &FleetQuery) -> Result<FleetRuns, StoreError> {
        dispatch!(self, b => b.fleet_runs(query))
    }

    /// A metric's history: one [`HistoryPoint`] per complete run that registered
    /// `query.metric` and matches the query, oldest first (by start time, then id), its
    /// value the median of the run's samples of the metric.
    ///
    /// A metric no sample in the store has is [`StoreError::NoSuchMetric`]; a known
    /// metric whose runs the filter all excluded is an empty history. Runs that
    /// registered the metric in different units are [`StoreError::MixedUnits`].
    pub fn metric_history(&self, query: &HistoryQuery) -> Result<Vec<HistoryPoint>, StoreError> {
        dispatch!(self, b => b.metric_history(query))
    }

    /// Every metric name some run in the store registered, sorted (to suggest one when a
    /// name is unknown).
    pub fn metric_names(&self) -> Result<Vec<String>, StoreError> {
        dispatch!(self, b => b.metric_names())
    }

    fn record(&self, id: RunId) -> Result<RunRecord, StoreError> {
        dispatch!(self, b => b.record(id))
    }
}

/// `path` as a PostgreSQL URL, when it is one.
fn postgres_url(path: &Path) -> Option<&str> {
    path_is_postgres(path).then(|| path.to_str()).flatten()
}
