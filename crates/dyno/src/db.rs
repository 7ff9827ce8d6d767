//! Where results go: `--db PATH|URL`, else `DYNO_DB`, else the user's data directory.
//!
//! A `postgres://` URL selects a shared PostgreSQL store for every command. Its password
//! (if the URL has one) is moved into `PGPASSWORD` before anything else sees the URL, so
//! the URL dyno prints, stores in a run's command line or passes to the dyno processes it
//! starts has none, and those processes still log in.

use anyhow::Context;
use clap::Args;
use dyno_store::{Store, StoreError};
use std::path::PathBuf;

/// `--db`: the results store a command reads or writes, the one declaration of the flag
/// (every command that reads or writes a store flattens it).
#[derive(Debug, Clone, Args)]
pub struct DbArg {
    /// Results store: a SQLite file (default $XDG_DATA_HOME/dyno/results.db) or a shared
    /// PostgreSQL database, postgres://USER@HOST/DB (password from PGPASSWORD or the URL).
    #[arg(long = "db", value_name = "PATH|URL", env = "DYNO_DB")]
    pub given: Option<PathBuf>,
}

impl DbArg {
    /// The store location the flag selects (a PostgreSQL URL without its password).
    pub fn path(&self) -> PathBuf {
        match &self.given {
            Some(p) => location(&p.to_string_lossy()),
            None => Store::default_path(),
        }
    }
}

/// Results-store flags shared by every command that measures.
#[derive(Debug, Clone, Args)]
pub struct StoreArgs {
    #[command(flatten)]
    pub db: DbArg,
    /// Do not record this run in the results store.
    #[arg(long)]
    pub no_save: bool,
}

/// A store location as given on the command line: a PostgreSQL URL loses its password to
/// `PGPASSWORD` (see the module docs); a file path is returned as it is.
pub fn location(given: &str) -> PathBuf {
    let (url, password) = dyno_store::split_password(given);
    if let Some(password) = password {
        // Set before any thread of ours reads the environment; children inherit it.
        std::env::set_var("PGPASSWORD", password);
    }
    PathBuf::from(url)
}

/// Opens the store for writing unless `--no-save`.
pub fn open_for_writing(args: &StoreArgs) -> anyhow::Result<Option<Store>> {
    if args.no_save {
        return Ok(None);
    }
    let path = args.db.path();
    let store = Store::open(&path).map_err(classify).with_context(|| {
        format!(
            "results store {} (use --db PATH|URL or --no-save)",
            path.display()
        )
    })?;
    Ok(Some(store))
}

/// A store error as the binary reports it: the user's input (a wrong `--db`, a refused
/// login, an unknown run) exits 2; a failure of the machine or network (a server that
/// cannot be reached or was lost, a full disk) exits with the runtime code.
pub fn classify(e: StoreError) -> anyhow::Error {
    if let StoreError::Older { path, .. } = &e {
        return anyhow::anyhow!(
            "{e}: `dyno results migrate --db {}` brings it to this dyno's schema (so does \
             any command that records a run into it)",
            path.display()
        );
    }
    if e.is_user_error() {
        e.into()
    } else {
        crate::cli_error::CliError::Runtime(e.to_string()).into()
    }
}
