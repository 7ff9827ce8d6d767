//! Why a bisection could not start or go on. Input errors name the flag, the file or
//! the revision; the rest are failures while working (a store, a node that failed, a
//! build of good or bad).

use std::path::PathBuf;

// The large errors of the layers below travel boxed, so every `Result` of a bisection
// stays small.
impl From<dyno_build::BuildError> for BisectError {
    fn from(e: dyno_build::BuildError) -> Self {
        BisectError::Build(Box::new(e))
    }
}

impl From<dyno_compare::ConfigError> for BisectError {
    fn from(e: dyno_compare::ConfigError) -> Self {
        BisectError::Config(Box::new(e))
    }
}

/// What went wrong in a bisection.
#[derive(Debug, thiserror::Error)]
pub enum BisectError {
    /// The comparison file has no subject given as a git source.
    #[error("{}: no subject is given as `git = {{ ... }}`: bisect builds the revisions of one (docs/bisect.md)", file.display())]
    NoGitSubject {
        /// The file.
        file: PathBuf,
    },
    /// A revision is not a commit of the repository.
    #[error("{flag} {rev}: {why}")]
    Revision {
        /// `--good` or `--bad`.
        flag: String,
        /// As given.
        rev: String,
        /// What git said.
        why: String,
    },
    /// Good and bad are the same commit.
    #[error(
        "--good {good} and --bad {bad} are the same commit ({commit}): nothing lies between them"
    )]
    SameCommit {
        /// `--good`.
        good: String,
        /// `--bad`.
        bad: String,
        /// The commit.
        commit: String,
    },
    /// Good is not an ancestor of bad.
    #[error("--good {good} is not an ancestor of --bad {bad} (on the walked parents): bisect searches the commits from good to bad")]
    NotAncestor {
        /// `--good`.
        good: String,
        /// `--bad`.
        bad: String,
    },
    /// The comparison file is not valid (its file, line and key named).
    #[error(transparent)]
    Config(Box<dyno_compare::ConfigError>),
    /// Something else the user gave is wrong.
    #[error("{what}: {why}")]
    Input {
        /// What is at fault.
        what: String,
        /// Why.
        why: String,
    },
    /// Good or bad does not build: there is nothing to compare with.
    #[error("{flag} does not build: {source}")]
    EndDoesNotBuild {
        /// `--good` or `--bad`.
        flag: String,
        /// The build's error.
        #[source]
        source: Box<dyno_build::BuildError>,
    },
    /// A build could not even be tried (git, the cache).
    #[error(transparent)]
    Build(Box<dyno_build::BuildError>),
    /// A step's comparison failed (the store, a refused primary metric).
    #[error(transparent)]
    Session(#[from] dyno_compare::session::SessionError),
    /// The results store failed.
    #[error(transparent)]
    Store(#[from] dyno_store::StoreError),
    /// Good's or bad's node failed too often in a row.
    #[error("revision `{subject}` failed {in_a_row} times in a row (last: {reason}); the bisection stopped, the steps done are kept")]
    GaveUp {
        /// The subject.
        subject: String,
        /// Failures in a row.
        in_a_row: usize,
        /// The last failure.
        reason: String,
    },
    /// The confirmation could not be judged (no primary metric of the file was measured).
    #[error("the confirmation of good against bad: {0}")]
    Judge(String),
    /// Ctrl-C: the step under way stopped; what was measured is stored.
    #[error("interrupted: {0}")]
    Interrupted(String),
}

impl BisectError {
    /// Whether the user's input is at fault (exit 2), rather than something failing
    /// while working (exit 3).
    pub fn is_input(&self) -> bool {
        matches!(
            self,
            BisectError::NoGitSubject { .. }
                | BisectError::Config(_)
                | BisectError::Revision { .. }
                | BisectError::SameCommit { .. }
                | BisectError::NotAncestor { .. }
                | BisectError::Input { .. }
                | BisectError::EndDoesNotBuild { .. }
                | BisectError::Judge(_)
        )
    }
}
