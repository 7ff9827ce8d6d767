//! The schema, its version and the migrations that bring a store up to date.
//!
//! A dyno store is recognised by two marks: `PRAGMA user_version` holds the schema version
//! and the table `dyno_meta` holds the row `('magic', MAGIC)`. A SQLite file with tables
//! but without the magic row belongs to someone else and is never written to. An empty
//! database (a new file) is a store at version 0 and is migrated.
//!
//! Migrations run inside one `BEGIN IMMEDIATE` transaction, after re-reading the version
//! under the write lock, so two processes opening a new store at once migrate it once.

use crate::error::StoreError;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior};
use std::path::Path;

/// The value of `dyno_meta.magic` that marks a dyno results store.
pub const MAGIC: &str = "dyno-results-store";

/// `PRAGMA application_id` of a dyno store ("dyno" in ASCII), so `file(1)` can tell it.
const APPLICATION_ID: i32 = 0x6479_6e6f;

/// Migration `i` brings a store from schema version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[
    // 0 -> 1: the first schema.
    r#"
    CREATE TABLE dyno_meta (
        key   TEXT PRIMARY KEY,
        value TEXT NOT NULL
    );
    CREATE TABLE hosts (
        id          INTEGER PRIMARY KEY,
        fingerprint TEXT NOT NULL,   -- FNV-1a 64 of `json`, hex; equal JSON means same host
        hostname    TEXT NOT NULL,
        cpu_model   TEXT NOT NULL,
        json        TEXT NOT NULL    -- the whole dyno_model::Host
    );
    CREATE INDEX hosts_fingerprint ON hosts(fingerprint);
    CREATE INDEX hosts_hostname ON hosts(hostname);
    CREATE TABLE subjects (
        id         INTEGER PRIMARY KEY,
        kind       TEXT NOT NULL,
        name       TEXT NOT NULL,
        attributes TEXT NOT NULL,    -- JSON object, keys sorted
        UNIQUE (kind, name, attributes)
    );
    CREATE TABLE runs (
        id           INTEGER PRIMARY KEY,
        command      TEXT NOT NULL,
        subject_id   INTEGER NOT NULL REFERENCES subjects(id),
        host_id      INTEGER NOT NULL REFERENCES hosts(id),
        started_at   REAL NOT NULL,  -- seconds since the Unix epoch, UTC
        finished_at  REAL,
        status       TEXT NOT NULL,  -- dyno_model::RunStatus::as_str
        command_line TEXT NOT NULL,  -- JSON array of strings
        tool_version TEXT NOT NULL,
        settings     TEXT NOT NULL,  -- JSON
        writer_host  TEXT,           -- host name of the process that began the run
        writer_pid   INTEGER,        -- its process id
        writer_token TEXT            -- boot id and process start time, against pid reuse
    );
    CREATE INDEX runs_started ON runs(started_at);
    CREATE INDEX runs_command ON runs(command, started_at);
    CREATE INDEX runs_subject ON runs(subject_id);
    CREATE INDEX runs_host ON runs(host_id);
    CREATE TABLE run_metrics (
        run_id    INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        position  INTEGER NOT NULL,  -- registration order within the run
        name      TEXT NOT NULL,
        unit      TEXT NOT NULL,     -- dyno_model::Unit::symbol
        direction TEXT NOT NULL,     -- dyno_model::Direction::as_str
        PRIMARY KEY (run_id, name)
    );
    CREATE TABLE samples (
        run_id     INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        metric     TEXT NOT NULL,
        repetition INTEGER NOT NULL,
        -- An f64 stored as an 8-byte IEEE double. The column has no declared type on
        -- purpose: REAL affinity makes SQLite store integral doubles as integers, which
        -- turns -0.0 into 0. NULL stands for NaN (SQLite has no NaN).
        value,
        labels     TEXT              -- optional JSON: extra dimensions (tune variant, round)
    );
    CREATE INDEX samples_run_metric ON samples(run_id, metric, repetition);
    "#,
];

/// The highest schema version this build knows.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// What an opened SQLite database turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Found {
    /// No tables at all: a new file.
    Empty,
    /// A dyno store at this schema version.
    Store(i64),
    /// Somebody else's database.
    Foreign,
}

/// Classifies the database without writing to it.
pub(crate) fn inspect(conn: &Connection, path: &Path) -> Result<Found, StoreError> {
    let sql = |e| StoreError::sqlite(path, e);
    let tables: i64 = conn
        .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
        .map_err(sql)?;
    if tables == 0 {
        return Ok(Found::Empty);
    }
    let has_meta: bool = conn
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'dyno_meta'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .map_err(sql)?
        > 0;
    if !has_meta {
        return Ok(Found::Foreign);
    }
    let magic: Option<String> = conn
        .query_row("SELECT value FROM dyno_meta WHERE key = 'magic'", [], |r| {
            r.get(0)
        })
        .optional()
        .map_err(sql)?;
    if magic.as_deref() != Some(MAGIC) {
        return Ok(Found::Foreign);
    }
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(sql)?;
    Ok(Found::Store(version))
}

/// Refuses foreign files and stores from a newer dyno; returns the version found.
pub(crate) fn check(found: Found, path: &Path) -> Result<i64, StoreError> {
    match found {
        Found::Empty => Ok(0),
        Found::Foreign => Err(StoreError::NotAStore {
            path: path.to_path_buf(),
        }),
        Found::Store(v) if v > SCHEMA_VERSION => Err(StoreError::TooNew {
            path: path.to_path_buf(),
            found: v,
            known: SCHEMA_VERSION,
        }),
        Found::Store(v) => Ok(v),
    }
}

/// Brings the store up to [`SCHEMA_VERSION`] in one immediate transaction.
pub(crate) fn migrate(conn: &mut Connection, path: &Path) -> Result<(), StoreError> {
    let sql = |e| StoreError::sqlite(path, e);
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(sql)?;
    // Another process may have migrated between our first look and the write lock.
    let from = check(inspect(&tx, path)?, path)?;
    if from == SCHEMA_VERSION {
        return Ok(()); // dropping the transaction rolls back nothing of consequence
    }
    for (version, step) in MIGRATIONS.iter().enumerate().skip(from as usize) {
        tx.execute_batch(step).map_err(sql)?;
        if version == 0 {
            tx.execute(
                "INSERT INTO dyno_meta (key, value) VALUES ('magic', ?1)",
                [MAGIC],
            )
            .map_err(sql)?;
            tx.pragma_update(None, "application_id", APPLICATION_ID)
                .map_err(sql)?;
        }
    }
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)
        .map_err(sql)?;
    tx.commit().map_err(sql)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_database_migrates_to_the_current_version() {
        let mut conn = Connection::open_in_memory().unwrap();
        let p = Path::new(":memory:");
        assert_eq!(inspect(&conn, p).unwrap(), Found::Empty);
        migrate(&mut conn, p).unwrap();
        assert_eq!(inspect(&conn, p).unwrap(), Found::Store(SCHEMA_VERSION));
        // Migrating again is a no-op.
        migrate(&mut conn, p).unwrap();
        let id: i32 = conn
            .query_row("PRAGMA application_id", [], |r| r.get(0))
            .unwrap();
        assert_eq!(id, APPLICATION_ID);
    }

    #[test]
    fn tables_without_the_magic_are_foreign() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE t (x)").unwrap();
        assert_eq!(inspect(&conn, Path::new("x")).unwrap(), Found::Foreign);
        conn.execute_batch("CREATE TABLE dyno_meta (key, value)")
            .unwrap();
        assert_eq!(inspect(&conn, Path::new("x")).unwrap(), Found::Foreign);
    }
}
