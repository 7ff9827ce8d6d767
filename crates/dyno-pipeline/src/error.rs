//! The crate's error type.

use std::path::PathBuf;

/// Everything that can go wrong in a bench. Messages name the file, key or tile at fault.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The configuration is invalid.
    #[error("bench config {origin}: {reason}")]
    Config {
        /// The file the config came from.
        origin: String,
        /// What is wrong, naming the key.
        reason: String,
    },
    /// A config file is invalid: file:line:column, the key and toml's snippet.
    #[error("{0}")]
    ConfigFile(Box<dyno_model::ConfigDiagnostic>),
    /// An I/O error on a named path.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The ledger could not be read back, or is not a valid chain.
    #[error(transparent)]
    Tiles(#[from] dyno_tiles::Error),
    /// The results store refused the run or its samples.
    #[error(transparent)]
    Store(#[from] dyno_store::StoreError),
    /// The tile runtime failed (workspace, links, affinity, a tile thread).
    #[error(transparent)]
    Tango(#[from] dyno_tango::Error),
    /// A layout of a sweep does not fit this machine (its tiles, affinity and CPUs).
    #[error("{origin}: layout verify={verify}, bank={bank}")]
    Layout {
        /// Where the config came from.
        origin: String,
        /// Verify tiles of the layout.
        verify: usize,
        /// Bank tiles of the layout.
        bank: usize,
        /// What the tile runtime refused.
        source: dyno_tango::Error,
    },
    /// `metrics.listen` is not an address.
    #[error("`{0}` is not an address (use 127.0.0.1:7999 or :7999)")]
    Listen(String),
    /// `dyno pipeline monitor --config` names a file that is neither a layout nor a bench
    /// config.
    #[error("{layout}\n(nor is it a `pipeline bench` config: {bench})")]
    NotAConfig {
        /// Why it is not a `pipeline run` layout.
        layout: String,
        /// Why it is not a `pipeline bench` config.
        bench: String,
    },
    /// `dyno pipeline monitor --wait`: no pipeline came up in time.
    #[error("no running pipeline at {} after {waited_s} s (start one with `dyno pipeline run --config FILE`)", path.display())]
    NoPipeline {
        /// Where its workspace was looked for.
        path: PathBuf,
        /// Seconds waited.
        waited_s: u64,
    },
    /// The metrics endpoint could not be started.
    #[error(transparent)]
    Endpoint(#[from] dyno_obs::Error),
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
