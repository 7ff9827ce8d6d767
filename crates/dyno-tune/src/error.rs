//! Errors of the tuner. Messages name the study file and line, the toolchain, the manifest
//! or the store involved, so the binary prints them as they are.

use std::path::PathBuf;

/// What went wrong in a study.
#[derive(Debug, thiserror::Error)]
pub enum TuneError {
    /// The study file is not valid: unknown key, impossible value, missing section.
    /// Rendered as `file:line:column: key `k`: message` and toml's snippet lines.
    #[error("{0}")]
    Study(dyno_model::ConfigDiagnostic),
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file at fault.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// `dyno tune init` refuses to overwrite an existing file.
    #[error("{} already exists; not overwriting it (choose another path)", .0.display())]
    Exists(PathBuf),
    /// A toolchain named in the matrix is not installed.
    #[error("toolchain `{name}` is not installed; installed: {} (rustup toolchain list)", installed.join(", "))]
    ToolchainMissing {
        /// The toolchain asked for.
        name: String,
        /// What `rustup toolchain list` reports.
        installed: Vec<String>,
    },
    /// The project does not have the package or binary the study names.
    #[error("{}: {message}", manifest.display())]
    Project {
        /// The manifest.
        manifest: PathBuf,
        /// What is missing.
        message: String,
    },
    /// An external tool (cargo, rustc, rustup) could not be run.
    #[error("cannot run `{command}`: {message}")]
    Tool {
        /// The command line.
        command: String,
        /// Why.
        message: String,
    },
    /// A profile-guided variant cannot be built: `llvm-profdata` of the toolchain's LLVM
    /// or `llvm-bolt` is missing; the message says how to install it.
    #[error("toolchain `{toolchain}`: {message}")]
    PgoTools {
        /// The toolchain of the variant.
        toolchain: String,
        /// What is missing and the command that installs it.
        message: String,
    },
    /// The results store failed.
    #[error(transparent)]
    Store(#[from] dyno_store::StoreError),
    /// A statistics routine refused its input.
    #[error("statistics: {0}")]
    Stats(#[from] dyno_stats::StatsError),
    /// `--host` names a machine that did not run the study.
    #[error("--host {host}: no run of {} on that host (hosts: {})", study.display(), if hosts.is_empty() { "none".to_string() } else { hosts.join(", ") })]
    UnknownHost {
        /// The host asked for.
        host: String,
        /// The study file.
        study: PathBuf,
        /// The hosts that ran it.
        hosts: Vec<String>,
    },
    /// Several machines ran the study, not this one, and none was chosen.
    #[error("the store holds {} from {} hosts ({}), not this one: choose one with --host (the per-CPU section compares them)", study.display(), hosts.len(), hosts.join(", "))]
    ChooseHost {
        /// The study file.
        study: PathBuf,
        /// The hosts that ran it.
        hosts: Vec<String>,
    },
    /// Nothing is stored for this study yet.
    #[error("no results stored for study {0} (run `dyno tune run` first)")]
    NoResults(PathBuf),
}

impl From<dyno_build::BuildError> for TuneError {
    /// The build layer's errors as the tuner has always named them: a tool that could not
    /// run, a file; anything else (git, a recipe, which the tuner does not use) as the
    /// build that failed.
    fn from(e: dyno_build::BuildError) -> Self {
        match e {
            dyno_build::BuildError::Tool { command, message } => {
                TuneError::Tool { command, message }
            }
            dyno_build::BuildError::Io { path, source } => TuneError::Io { path, source },
            other => TuneError::Tool {
                command: "build".into(),
                message: other.to_string(),
            },
        }
    }
}

impl TuneError {
    /// `true` for errors the user caused (bad study file, missing toolchain); the binary
    /// maps everything to exit code 2 today, but callers may want to tell them apart.
    pub fn is_user_error(&self) -> bool {
        !matches!(self, TuneError::Store(_) | TuneError::Stats(_))
    }
}
