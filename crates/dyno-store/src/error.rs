//! Errors of the results store. Every message names the store file it concerns, so the
//! binary can print it as is.

use crate::RunId;
use std::path::{Path, PathBuf};

/// What went wrong in the results store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The file exists but holds no dyno schema; it was left untouched.
    #[error("{} is not a dyno results store (no dyno schema found)", path.display())]
    NotAStore {
        /// The file at fault.
        path: PathBuf,
    },
    /// The store was written by a newer dyno whose schema this one cannot read safely.
    #[error(
        "{} was written by a newer dyno (schema version {found}, this dyno knows up to {known})",
        path.display()
    )]
    TooNew {
        /// The file at fault.
        path: PathBuf,
        /// Schema version found in the file.
        found: i64,
        /// Highest schema version this build knows.
        known: i64,
    },
    /// A read-only open found a store of an older schema: only a writing open migrates
    /// it, and read-only commands do not write.
    #[error(
        "{} has an older dyno schema (version {found}; this dyno reads version {known}) and \
         reading does not migrate it",
        path.display()
    )]
    Older {
        /// The file at fault.
        path: PathBuf,
        /// Schema version found in the file.
        found: i64,
        /// The version this build reads.
        known: i64,
    },
    /// `--db` names a directory, not a store file.
    #[error("{} is a directory, not a results store file (name a file in it, such as {})",
        path.display(), path.join("results.db").display())]
    Directory {
        /// The directory given.
        path: PathBuf,
    },
    /// A read-only open was asked for a store that does not exist (nothing recorded yet).
    #[error("{} does not exist: no results have been recorded there", path.display())]
    Missing {
        /// The file that was looked for.
        path: PathBuf,
    },
    /// The file, its directory or the filesystem does not accept writes.
    #[error("cannot write {}: read-only", path.display())]
    ReadOnly {
        /// The file at fault.
        path: PathBuf,
    },
    /// The filesystem ran out of space; the transaction in progress was rolled back.
    #[error("disk full while writing {}", path.display())]
    DiskFull {
        /// The file at fault.
        path: PathBuf,
    },
    /// The store's content does not decode (hand-edited or damaged file).
    #[error("{} is damaged: {detail}", path.display())]
    Corrupt {
        /// The file at fault.
        path: PathBuf,
        /// What failed to decode.
        detail: String,
    },
    /// No sample in the store has this metric name (see [`crate::Store::metric_history`]).
    #[error("no run in {} measured a metric named {metric:?}", path.display())]
    NoSuchMetric {
        /// The store.
        path: PathBuf,
        /// The name asked for.
        metric: String,
    },
    /// No run with this id is in the store.
    #[error("run {0} is not in the results store")]
    UnknownRun(RunId),
    /// A sample names a metric that was not registered with its run.
    #[error(
        "run {run} has no metric named {metric:?}; register it with begin_run or add_metric first"
    )]
    UnknownMetric {
        /// The run the samples were for.
        run: RunId,
        /// The unregistered metric name.
        metric: String,
    },
    /// A metric was registered twice with a different unit or direction.
    #[error("run {run} already has metric {metric:?} with another unit or direction")]
    MetricConflict {
        /// The run concerned.
        run: RunId,
        /// The metric name registered twice.
        metric: String,
    },
    /// `finish_run` was called with [`RunStatus::Running`](dyno_model::RunStatus::Running).
    #[error("run {0} cannot finish with status \"running\"")]
    FinishAsRunning(RunId),
    /// Creating the store's directory or file failed.
    #[error("cannot create {}: {source}", path.display())]
    Io {
        /// The path at fault.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// Any other SQLite failure.
    #[error("{}: {source}", path.display())]
    Sqlite {
        /// The store file.
        path: PathBuf,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// A store location that looks like a URL but is not one dyno can use.
    #[error("{url}: {detail}")]
    BadUrl {
        /// The URL, password hidden.
        url: String,
        /// What is wrong with it.
        detail: String,
    },
    /// The PostgreSQL server cannot be reached (no such host, nothing listening).
    #[error("cannot reach the PostgreSQL server of {url}: {detail}")]
    Unreachable {
        /// The URL, password hidden.
        url: String,
        /// The client's reason.
        detail: String,
    },
    /// The PostgreSQL server refused the user name, password or database.
    #[error("PostgreSQL refused the login of {url}: {detail}")]
    Login {
        /// The URL, password hidden.
        url: String,
        /// The server's reason.
        detail: String,
    },
    /// The PostgreSQL server stayed unreachable past the reconnect limit during a write;
    /// the write was not committed (a run being written stays `running`).
    #[error("lost the PostgreSQL server of {url} and could not reconnect within {waited_s:.0} s")]
    ServerLost {
        /// The URL, password hidden.
        url: String,
        /// How long reconnecting was tried.
        waited_s: f64,
        /// The last failure, as a connection-aborted I/O error (a failure of the
        /// machine or network, not of the input).
        #[source]
        source: std::io::Error,
    },
    /// Any other PostgreSQL failure.
    #[error("{url}: {detail}")]
    Postgres {
        /// The URL, password hidden.
        url: String,
        /// The server's message and SQLSTATE, or the client's error.
        detail: String,
        /// The client's error.
        source: postgres::Error,
    },
    /// The fleet's runs measured one metric in different units or directions (runs of
    /// dyno versions that disagree), so their values cannot form one distribution.
    #[error("runs in the store measured {metric} in different units: {}", units.join(", "))]
    MixedUnits {
        /// The metric.
        metric: String,
        /// Every unit (direction) found.
        units: Vec<String>,
    },
    /// Writing an export to its destination failed (the cause is the source, said once).
    #[error("cannot write the export")]
    Export(#[source] std::io::Error),
    /// The Parquet encoder refused the data.
    #[error("cannot encode the Parquet export: {0}")]
    Parquet(String),
    /// Parquet export was asked of a build without the `parquet` cargo feature.
    #[error("Parquet export is not in this build: rebuild with the cargo feature `parquet` (on by default)")]
    ParquetDisabled,
}

impl StoreError {
    /// True when the error is the user's or the input's (a wrong `--db`, an unknown run id,
    /// a read-only location, a refused login): the binary exits with status 2. False for
    /// failures of the machine, the network or the library (disk full, a server nobody
    /// answers for, SQLite errors, I/O errors).
    pub fn is_user_error(&self) -> bool {
        matches!(
            self,
            StoreError::NotAStore { .. }
                | StoreError::TooNew { .. }
                | StoreError::Older { .. }
                | StoreError::Directory { .. }
                | StoreError::Missing { .. }
                | StoreError::ReadOnly { .. }
                | StoreError::Corrupt { .. }
                | StoreError::UnknownRun(_)
                | StoreError::NoSuchMetric { .. }
                | StoreError::BadUrl { .. }
                | StoreError::Login { .. }
                | StoreError::ParquetDisabled
        )
    }

    /// Maps a SQLite error on the store at `path` to the variant that says what happened.
    pub(crate) fn sqlite(path: &Path, err: rusqlite::Error) -> StoreError {
        use rusqlite::ErrorCode;
        let path = path.to_path_buf();
        match err.sqlite_error_code() {
            Some(ErrorCode::ReadOnly) => StoreError::ReadOnly { path },
            Some(ErrorCode::DiskFull) => StoreError::DiskFull { path },
            Some(ErrorCode::NotADatabase) => StoreError::NotAStore { path },
            _ => StoreError::Sqlite { path, source: err },
        }
    }

    /// Maps an I/O error while creating `path`.
    pub(crate) fn io(path: &Path, err: std::io::Error) -> StoreError {
        let path = path.to_path_buf();
        match err.kind() {
            std::io::ErrorKind::PermissionDenied => StoreError::ReadOnly { path },
            _ if err.raw_os_error() == Some(30) => StoreError::ReadOnly { path }, // EROFS
            _ if err.raw_os_error() == Some(28) => StoreError::DiskFull { path }, // ENOSPC
            _ => StoreError::Io { path, source: err },
        }
    }

    /// Maps an I/O error while writing an export.
    pub(crate) fn export(err: std::io::Error) -> StoreError {
        StoreError::Export(err)
    }
}
