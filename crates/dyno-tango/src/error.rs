//! The crate's error type.

use std::path::PathBuf;

/// Everything that can go wrong in `dyno-tango`. Messages name the object, file or
/// config entry at fault.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A shared object's magic number did not match: the memory is not what the caller
    /// expected (never formatted, deleted, or a different kind of object).
    #[error("{what}: bad magic {found:#018x} (expected {expected:#018x})")]
    BadMagic {
        /// The object being joined.
        what: String,
        /// The magic found in memory.
        found: u64,
        /// The magic expected for this kind of object.
        expected: u64,
    },
    /// A shared object was written by an incompatible layout version.
    #[error("{what}: layout version {found} is not supported (expected {expected})")]
    BadVersion {
        /// The object being joined.
        what: String,
        /// The version found in memory.
        found: u64,
        /// The version this library writes.
        expected: u64,
    },
    /// A parameter of a shared object is out of range (depth not a power of two,
    /// region too small, misaligned, ...).
    #[error("{0}")]
    Invalid(String),
    /// The workspace exists and its creator process is still alive.
    #[error("workspace {path} is in use by live process {pid}; stop it or choose another name")]
    WorkspaceInUse {
        /// The workspace file.
        path: PathBuf,
        /// The live creator.
        pid: u32,
    },
    /// The workspace is not ready to be read (still being built, or closed).
    #[error("workspace {path} is not ready (state {state})")]
    WorkspaceNotReady {
        /// The workspace file.
        path: PathBuf,
        /// The state word found.
        state: u64,
    },
    /// The workspace has no room or no table slot left for another object.
    #[error("workspace {path} is full: cannot place {object} ({bytes} bytes)")]
    WorkspaceFull {
        /// The workspace file.
        path: PathBuf,
        /// The object that did not fit.
        object: String,
        /// Its size.
        bytes: u64,
    },
    /// A named object is missing from the workspace.
    #[error("workspace has no {kind} object named {name:?}")]
    NoSuchObject {
        /// The kind of object looked for.
        kind: &'static str,
        /// The name looked for.
        name: String,
    },
    /// An I/O error on a named path.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// An operating-system call failed.
    #[error("{call}: {source}")]
    Os {
        /// The call that failed, with its argument.
        call: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The affinity string is invalid.
    #[error("affinity {input:?}: {reason}")]
    Affinity {
        /// The affinity string (or the entry at fault).
        input: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The layout configuration is invalid.
    #[error("layout config {origin}: {reason}")]
    Config {
        /// The file (or `<string>`) the config came from.
        origin: String,
        /// What is wrong, naming the key.
        reason: String,
    },
    /// A layout file is invalid: file:line:column, the key and toml's snippet.
    #[error("{0}")]
    ConfigFile(Box<dyno_model::ConfigDiagnostic>),
    /// A tile thread panicked or failed.
    #[error("tile {tile}: {reason}")]
    Tile {
        /// The tile name, e.g. `verify:0`.
        tile: String,
        /// What happened.
        reason: String,
    },
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}
