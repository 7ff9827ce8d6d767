//! Errors of the node crate: each names the file, line, column and key, the address, or the peer.

use std::path::{Path, PathBuf};

use thiserror::Error;

/// What went wrong.
#[derive(Debug, Error)]
pub enum Error {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A config or genesis file is not valid: the project's one config-error format
    /// (file:line:column, the key, toml's snippet on lines of their own).
    #[error("{0}")]
    Config(dyno_model::ConfigDiagnostic),
    /// The network could not start (a peer list dyno-net refused, a thread).
    #[error("network: {0}")]
    Net(String),
    /// An address could not be bound.
    #[error("cannot bind {what} address {addr}: {reason}")]
    Bind {
        /// Which listener (`peer`, `ingress`, `metrics`).
        what: &'static str,
        /// The address.
        addr: String,
        /// Why.
        reason: String,
    },
    /// A load's pool of signed transactions, as `--pool` gave it, is empty or too large
    /// to hold.
    #[error("--pool {0}: must be in 1..=50000000")]
    Pool(usize),
    /// The pool a load's rate and duration call for (no `--pool` given) is too large to
    /// hold.
    #[error(
        "--duration {duration_s} s at --rate {rate} tx/s: {pool} transactions to sign, over the \
         50000000 one load may hold (lower --rate or --duration, or give --pool)"
    )]
    PoolOfRate {
        /// Transactions per second.
        rate: u64,
        /// Seconds of load.
        duration_s: f64,
        /// The pool they make (saturated).
        pool: usize,
    },
    /// A `--validators` entry of a genesis is not `ID=STAKE` with a whole stake.
    #[error("--validators `{spec}`: {reason}")]
    Validators {
        /// The entry as given.
        spec: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A flag of `node genesis` gave a value the genesis refuses.
    #[error("{flag}: {reason}")]
    Flag {
        /// The flag and its value (`--accounts 0`).
        flag: String,
        /// Why the genesis refuses it.
        reason: String,
    },
    /// The genesis file to write exists and `--force` was not given.
    #[error("--out {}: exists (--force replaces it)", .0.display())]
    Exists(PathBuf),
    /// The genesis file could not be written.
    #[error("--out {}", path.display())]
    Out {
        /// The file asked for.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// Result with [`enum@Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A diagnostic for a check made after parsing: at `key` (a key path such as
/// `peers[1].id`), looked up in `text`.
pub(crate) fn invalid(path: &Path, text: &str, key: &str, reason: impl Into<String>) -> Error {
    Error::Config(dyno_model::ConfigDiagnostic::at_key(
        path, text, key, reason,
    ))
}

/// Parses `text`, the contents of `path`, as TOML; toml's own refusal (syntax, a wrong
/// type, an unknown key) in the same format.
pub(crate) fn parse_toml<T: serde::de::DeserializeOwned>(path: &Path, text: &str) -> Result<T> {
    dyno_model::ConfigDiagnostic::parse_toml(path, text).map_err(Error::Config)
}
