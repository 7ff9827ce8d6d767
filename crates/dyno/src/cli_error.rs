//! Exit codes: 0 success, 1 the verdict failed, 2 usage, input or measurement error,
//! 130 interrupted (the shell's convention for Ctrl-C).

use std::fmt;

/// Errors with an exit code other than the default 2.
#[derive(Debug)]
pub enum CliError {
    /// The user pressed Ctrl-C; what was measured is kept.
    Interrupted(String),
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Interrupted(what) => write!(f, "interrupted: {what}"),
        }
    }
}

impl std::error::Error for CliError {}

impl CliError {
    /// The process exit code for an error returned by a command.
    pub fn exit_code(err: &anyhow::Error) -> u8 {
        match err.downcast_ref::<CliError>() {
            Some(CliError::Interrupted(_)) => 130,
            None => 2,
        }
    }
}
