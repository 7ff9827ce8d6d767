//! Where results go: `--db PATH`, else `DYNO_DB`, else the user's data directory.

use anyhow::Context;
use clap::Args;
use dyno_store::Store;
use std::path::PathBuf;

/// Results-store flags shared by every command that measures.
#[derive(Debug, Clone, Args)]
pub struct StoreArgs {
    /// Results store file (SQLite). Default: $XDG_DATA_HOME/dyno/results.db.
    #[arg(long, value_name = "PATH", env = "DYNO_DB", global = true)]
    pub db: Option<PathBuf>,
    /// Do not record this run in the results store.
    #[arg(long)]
    pub no_save: bool,
}

/// The store path the flags select.
pub fn path(db: &Option<PathBuf>) -> PathBuf {
    db.clone().unwrap_or_else(Store::default_path)
}

/// Opens the store for writing unless `--no-save`.
pub fn open_for_writing(args: &StoreArgs) -> anyhow::Result<Option<Store>> {
    if args.no_save {
        return Ok(None);
    }
    let path = path(&args.db);
    let store = Store::open(&path).with_context(|| {
        format!(
            "results store {} (use --db PATH or --no-save)",
            path.display()
        )
    })?;
    Ok(Some(store))
}
