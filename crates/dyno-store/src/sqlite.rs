//! The SQLite backend: opening a store file, recognising it, and connection settings.
//! Its reads are in `query.rs`, its writes in `run.rs`, its exports in `export/`.

use crate::error::StoreError;
use crate::schema::{self, Found};
use rusqlite::{Connection, ErrorCode, OpenFlags};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a writer waits for another process's write transaction before giving up.
/// Runs commit small transactions, so any real wait is short; this only has to outlast a
/// checkpoint or a large `add_samples` of a concurrent dyno.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// The pause between attempts when SQLite reports a lock conflict it will not wait for.
const BUSY_RETRY: Duration = Duration::from_millis(20);

/// Runs `op` again while it fails with an error `busy` calls a lock conflict, for up to
/// [`BUSY_TIMEOUT`].
fn retry_busy<T, E>(
    mut op: impl FnMut() -> Result<T, E>,
    busy: impl Fn(&E) -> bool,
) -> Result<T, E> {
    let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
    loop {
        match op() {
            Err(e) if busy(&e) && std::time::Instant::now() < deadline => {
                std::thread::sleep(BUSY_RETRY)
            }
            other => return other,
        }
    }
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

/// A results store in one SQLite file holding hosts, subjects, runs, metrics and samples.
///
/// One connection; open one per thread or process. Concurrent writers in
/// separate processes are safe: the store uses WAL journaling, immediate write
/// transactions and a busy timeout of 10 s.
#[derive(Debug)]
pub(crate) struct Sqlite {
    pub(crate) conn: Connection,
    pub(crate) path: PathBuf,
}

impl Sqlite {
    /// Opens the store at `path` for reading and writing, creating its parent directories
    /// and the file when missing, and migrating it to the current schema.
    ///
    /// A file that is not a dyno store is refused ([`StoreError::NotAStore`]) and left
    /// untouched; so is a store written by a newer dyno ([`StoreError::TooNew`]).
    pub fn open(path: &Path) -> Result<Sqlite, StoreError> {
        refuse_directory(path)?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, e))?;
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let mut conn = match Connection::open_with_flags(path, flags) {
            Ok(c) => c,
            // The directory exists (created above) but the file cannot be created in it.
            Err(e) if e.sqlite_error_code() == Some(ErrorCode::CannotOpen) && !path.exists() => {
                return Err(StoreError::ReadOnly {
                    path: path.to_path_buf(),
                })
            }
            Err(e) => return Err(StoreError::sqlite(path, e)),
        };
        let sql = |e| StoreError::sqlite(path, e);
        conn.busy_timeout(BUSY_TIMEOUT).map_err(sql)?;
        // Recognise the file before changing anything in it (journal mode included).
        let version = schema::check(schema::inspect(&conn, path)?, path)?;
        // SQLite silently opens a write-protected file read-only; say so now rather than
        // at the first sample.
        if conn.is_readonly(rusqlite::MAIN_DB).map_err(sql)? {
            return Err(StoreError::ReadOnly {
                path: path.to_path_buf(),
            });
        }
        // Switching a new file to WAL needs its exclusive lock. When two processes try at
        // once, SQLite fails one of them with SQLITE_BUSY at once instead of calling the
        // busy handler (waiting could deadlock), so that case is retried here.
        retry_busy(
            || conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get::<_, String>(0)),
            is_busy,
        )
        .map_err(sql)?;
        // In WAL mode NORMAL keeps the file consistent after a crash of the process or the
        // machine; only the last commits before a power loss may be lost.
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(sql)?;
        conn.pragma_update(None, "foreign_keys", true)
            .map_err(sql)?;
        if version < schema::SCHEMA_VERSION {
            retry_busy(
                || schema::migrate(&mut conn, path),
                |e| matches!(e, StoreError::Sqlite { source, .. } if is_busy(source)),
            )?;
        }
        Ok(Sqlite {
            conn,
            path: path.to_path_buf(),
        })
    }

    /// Opens an existing store for reading only (list, show, export). Creates nothing:
    /// a missing file is [`StoreError::Missing`].
    pub fn open_read_only(path: &Path) -> Result<Sqlite, StoreError> {
        if !path.exists() {
            return Err(StoreError::Missing {
                path: path.to_path_buf(),
            });
        }
        refuse_directory(path)?;
        let found = match connect_read_only(path, false) {
            // A WAL store in a directory we cannot write lacks its shared-memory file;
            // SQLite can still read it when told that nobody else writes it.
            Err(e) if is_cannot_open(&e) => connect_read_only(path, true)?,
            other => other?,
        };
        let (conn, found) = found;
        match schema::check(found, path)? {
            v if v == schema::SCHEMA_VERSION => Ok(Sqlite {
                conn,
                path: path.to_path_buf(),
            }),
            // An empty file holds no schema at all.
            0 => Err(StoreError::NotAStore {
                path: path.to_path_buf(),
            }),
            // Only a writing open may migrate an older store.
            found => Err(StoreError::Older {
                path: path.to_path_buf(),
                found,
                known: schema::SCHEMA_VERSION,
            }),
        }
    }

    /// Maps a SQLite error on this store.
    pub(crate) fn sql(&self) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
        move |e| StoreError::sqlite(&self.path, e)
    }
}

/// SQLite reports a directory as "disk I/O error"; say what it is.
fn refuse_directory(path: &Path) -> Result<(), StoreError> {
    if path.is_dir() {
        return Err(StoreError::Directory {
            path: path.to_path_buf(),
        });
    }
    Ok(())
}

fn is_cannot_open(e: &StoreError) -> bool {
    match e {
        StoreError::Sqlite { source, .. } => matches!(
            source.sqlite_error_code(),
            Some(ErrorCode::CannotOpen) | Some(ErrorCode::ReadOnly)
        ),
        StoreError::ReadOnly { .. } => true,
        _ => false,
    }
}

fn connect_read_only(path: &Path, immutable: bool) -> Result<(Connection, Found), StoreError> {
    let sql = |e| StoreError::sqlite(path, e);
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = if immutable {
        let uri = format!("file:{}?immutable=1", uri_path(path));
        Connection::open_with_flags(uri, flags | OpenFlags::SQLITE_OPEN_URI)
    } else {
        Connection::open_with_flags(path, flags)
    }
    .map_err(sql)?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(sql)?;
    let found = schema::inspect(&conn, path)?;
    Ok((conn, found))
}

/// Percent-encodes a path for a SQLite `file:` URI.
fn uri_path(path: &Path) -> String {
    let mut out = String::new();
    for &b in path.as_os_str().as_encoded_bytes() {
        if b.is_ascii_alphanumeric() || b"/._~-".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uri_paths_escape_query_characters() {
        assert_eq!(uri_path(Path::new("/a b/c?d#e%")), "/a%20b/c%3Fd%23e%25");
    }
}
