//! Opening stores: creation, migration, reopening, and refusing what is not ours.

mod common;

use common::*;
use dyno_model::RunStatus;
use dyno_store::{RunFilter, Store, StoreError, SCHEMA_VERSION};
use std::os::unix::fs::PermissionsExt;

#[test]
fn open_creates_parent_directories_and_migrates_from_empty() {
    let (_dir, path) = temp_store();
    let store = Store::open(&path).unwrap();
    assert_eq!(store.path(), path);
    assert!(path.exists());
    drop(store);
    let conn = raw(&path);
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    let magic: String = conn
        .query_row("SELECT value FROM dyno_meta WHERE key = 'magic'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(magic, dyno_store::MAGIC);
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    for table in ["hosts", "subjects", "runs", "run_metrics", "samples"] {
        let n: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
                [table],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(n, 1, "table {table}");
    }
}

#[test]
fn reopening_keeps_runs() {
    let (_dir, path) = temp_store();
    let id = {
        let mut store = Store::open(&path).unwrap();
        let id = store
            .begin_run(&info("machine", "a", "h", 10.0), &metrics())
            .unwrap();
        store
            .add_samples(id, &[sample("Blake2256", 0, 1.5)])
            .unwrap();
        store.finish_run(id, RunStatus::Complete).unwrap();
        id
    };
    let store = Store::open(&path).unwrap();
    let run = store.run(id).unwrap();
    assert_eq!(run.samples, vec![sample("Blake2256", 0, 1.5)]);
    let reader = Store::open_read_only(&path).unwrap();
    assert_eq!(reader.list_runs(&RunFilter::default()).unwrap().len(), 1);
}

#[test]
fn a_foreign_sqlite_file_is_refused_and_left_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.db");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE accounts (id INTEGER, balance REAL); INSERT INTO accounts VALUES (1, 2.5);")
            .unwrap();
    }
    let before = std::fs::read(&path).unwrap();
    for result in [Store::open(&path), Store::open_read_only(&path)] {
        let err = result.unwrap_err();
        assert!(matches!(err, StoreError::NotAStore { .. }), "{err:?}");
        assert!(err.is_user_error());
        assert_eq!(
            err.to_string(),
            format!(
                "{} is not a dyno results store (no dyno schema found)",
                path.display()
            )
        );
    }
    assert_eq!(std::fs::read(&path).unwrap(), before);
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        names,
        vec![std::ffi::OsString::from("other.db")],
        "no journal files left behind"
    );
}

#[test]
fn a_file_that_is_not_sqlite_is_refused_and_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.txt");
    let text = b"these are my notes, not a database\n".repeat(200);
    std::fs::write(&path, &text).unwrap();
    let err = Store::open(&path).unwrap_err();
    assert!(matches!(err, StoreError::NotAStore { .. }), "{err:?}");
    assert!(matches!(
        Store::open_read_only(&path),
        Err(StoreError::NotAStore { .. })
    ));
    assert_eq!(std::fs::read(&path).unwrap(), text);
}

#[test]
fn a_store_from_a_newer_dyno_is_refused() {
    let (_dir, path) = temp_store();
    drop(Store::open(&path).unwrap());
    raw(&path).pragma_update(None, "user_version", 7).unwrap();
    let before = std::fs::read(&path).unwrap();
    for result in [Store::open(&path), Store::open_read_only(&path)] {
        let err = result.unwrap_err();
        assert!(
            matches!(err, StoreError::TooNew { found: 7, known, .. } if known == SCHEMA_VERSION),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            format!(
                "{} was written by a newer dyno (schema version 7, this dyno knows up to {SCHEMA_VERSION})",
                path.display()
            )
        );
        assert!(err.is_user_error());
    }
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn read_only_open_of_a_missing_store_creates_nothing() {
    let (dir, path) = temp_store();
    let err = Store::open_read_only(&path).unwrap_err();
    assert!(matches!(err, StoreError::Missing { .. }), "{err:?}");
    assert!(err.to_string().starts_with(&path.display().to_string()));
    assert!(err.is_user_error());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn read_only_files_and_directories() {
    let dir = tempfile::tempdir().unwrap();
    let locked = dir.path().join("locked");
    std::fs::create_dir(&locked).unwrap();
    let path = locked.join("results.db");
    let id = {
        let mut store = Store::open(&path).unwrap();
        store
            .begin_run(&info("machine", "a", "h", 1.0), &metrics())
            .unwrap()
    };
    let set_mode = |p: &std::path::Path, mode| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap()
    };
    set_mode(&path, 0o444);
    set_mode(&locked, 0o555);
    // Root ignores permission bits: the refusals below cannot happen then, but reading
    // must work either way.
    let enforced = !writes_ignore_permissions(&locked);
    let reader = Store::open_read_only(&path).unwrap();
    assert_eq!(reader.run(id).unwrap().status, RunStatus::Running);
    drop(reader);
    if enforced {
        let err = Store::open(&path).unwrap_err();
        assert!(matches!(err, StoreError::ReadOnly { .. }), "{err:?}");
        assert_eq!(
            err.to_string(),
            format!("cannot write {}: read-only", path.display())
        );
        let missing = locked.join("new.db");
        let err = Store::open(&missing).unwrap_err();
        assert!(matches!(err, StoreError::ReadOnly { .. }), "{err:?}");
        let below = locked.join("sub/new.db");
        let err = Store::open(&below).unwrap_err();
        assert!(matches!(err, StoreError::ReadOnly { .. }), "{err:?}");
        assert!(err.is_user_error());
    }
    set_mode(&locked, 0o755);
    set_mode(&path, 0o644);
}

#[test]
fn default_path_ends_in_the_dyno_data_directory() {
    let p = Store::default_path();
    assert!(
        p.ends_with("dyno/results.db") || p.ends_with("dyno-results.db"),
        "{p:?}"
    );
}

#[test]
fn a_version_1_store_gains_run_uuids_on_open() {
    let (_dir, path) = temp_store();
    let mut store = Store::open(&path).unwrap();
    for at in [1.0, 2.0] {
        store
            .begin_run(&common::info("machine", "m", "h", at), &common::metrics())
            .unwrap();
    }
    drop(store);
    // Take the store back to schema version 1 (before run uuids).
    common::raw(&path)
        .execute_batch(
            "DROP INDEX runs_uuid; ALTER TABLE runs DROP COLUMN uuid; DROP TABLE sample_batches;
             DROP INDEX hosts_machine; PRAGMA user_version = 1;",
        )
        .unwrap();
    let store = Store::open(&path).unwrap();
    let runs = store.list_runs(&dyno_store::RunFilter::default()).unwrap();
    assert_eq!(runs.len(), 2);
    for r in &runs {
        let parts: Vec<usize> = r.uuid.split('-').map(str::len).collect();
        assert_eq!(parts, [8, 4, 4, 4, 12], "{}", r.uuid);
        assert!(r.uuid.chars().all(|c| c == '-' || c.is_ascii_hexdigit()));
        assert_eq!(&r.uuid[14..15], "4");
    }
    assert_ne!(runs[0].uuid, runs[1].uuid);
    assert_eq!(
        common::count(&path, "PRAGMA user_version"),
        dyno_store::SCHEMA_VERSION
    );
}
