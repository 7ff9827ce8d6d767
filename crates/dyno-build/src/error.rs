//! Why a build did not give an artifact: git could not find or extract the revision, a
//! tool could not be run, a file could not be written, the build itself failed (with the
//! tail of its output, and whether that failure was read from the cache), or Ctrl-C.

use std::path::PathBuf;

/// What went wrong in the build layer.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// git failed: the repository, the revision or the extraction.
    #[error("{0}")]
    Git(#[from] GitError),
    /// The build settings are not usable (a command without `{{out}}`, an empty one).
    #[error("{0}")]
    Recipe(#[from] RecipeError),
    /// A tool (cargo, rustc, the build's program) could not be started at all.
    #[error("cannot run `{command}`: {message}")]
    Tool {
        /// The command line.
        command: String,
        /// Why.
        message: String,
    },
    /// A file of the cache could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The build ran and failed (or left no artifact).
    #[error("{0}")]
    Failed(FailedBuild),
    /// Ctrl-C (the stop flag) arrived while building: the build was stopped, nothing of
    /// it was recorded.
    #[error("the build was interrupted")]
    Interrupted,
}

impl BuildError {
    /// The failed build, when the build itself failed (not git, not the cache).
    pub fn failed(&self) -> Option<&FailedBuild> {
        match self {
            BuildError::Failed(f) => Some(f),
            _ => None,
        }
    }
}

/// What git said when a repository or revision could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct GitError(pub String);

impl From<String> for GitError {
    fn from(what: String) -> Self {
        GitError(what)
    }
}

impl From<&str> for GitError {
    fn from(what: &str) -> Self {
        GitError(what.to_string())
    }
}

/// Why build settings are refused before anything is extracted or built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecipeError {
    /// The build command is empty.
    #[error("the build command is empty")]
    Empty,
    /// No argument of the build command names `{out}`: dyno would not know where the
    /// artifact is, and a build writing into the extracted sources would not be cached
    /// apart from them.
    #[error("the build command {command:?} never names `{{out}}`, where the artifact goes (e.g. [\"go\", \"build\", \"-o\", \"{{out}}\", \"./cmd/node\"])")]
    NoOut {
        /// The command as given.
        command: Vec<String>,
    },
    /// The program to run names no placeholder of the build and is not absolute: it would
    /// run something outside the built revision.
    #[error("`bin` = {bin:?} must name `{{out}}` or `{{src}}` (the artifact, or a file of the extracted revision)")]
    BinOutsideBuild {
        /// `bin` as given.
        bin: String,
    },
}

/// A build that ran and failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedBuild {
    /// The commit.
    pub commit: String,
    /// The build command line (placeholders filled).
    pub command: String,
    /// How it ended (`exit status: 1`), or what was missing after it.
    pub status: String,
    /// Its last output lines.
    pub tail: Vec<String>,
    /// Read from the cache: this commit failed to build with these settings before, and
    /// was not built again.
    pub cached: bool,
}

impl std::fmt::Display for FailedBuild {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let short = &self.commit[..self.commit.len().min(12)];
        write!(f, "`{}` of {short} failed ({})", self.command, self.status)?;
        if self.cached {
            write!(f, " [an earlier build, cached]")?;
        }
        if !self.tail.is_empty() {
            write!(f, "; last output:\n    {}", self.tail.join("\n    "))?;
        }
        Ok(())
    }
}
