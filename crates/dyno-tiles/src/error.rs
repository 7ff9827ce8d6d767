//! The crate's error type.

use std::path::PathBuf;

/// What can go wrong reading or writing what the tiles produce. Messages name the file.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An I/O error on a named path.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The ledger file is not a valid chain.
    #[error("ledger {path}: {reason}")]
    Ledger {
        /// The ledger file.
        path: PathBuf,
        /// What is wrong (entry number and field).
        reason: String,
    },
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
