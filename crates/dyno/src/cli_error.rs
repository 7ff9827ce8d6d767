//! Exit codes, documented in docs/output.md:
//!
//! | code | meaning |
//! |---|---|
//! | 0 | success |
//! | 1 | the verdict failed (requirements not met, a regression found) |
//! | 2 | bad usage or input: a flag, file, line or key is at fault (the message names it) |
//! | 3 | a runtime failure: I/O, the results store, a process dyno ran failed |
//! | 128 + N | stopped by signal N: 130 on Ctrl-C (SIGINT), 143 on SIGTERM, 129 on SIGHUP |

use std::fmt;
use std::io::ErrorKind;

/// The exit code of a runtime failure.
pub const RUNTIME: u8 = 3;
/// The exit code of bad usage or input.
pub const USAGE: u8 = 2;

/// Errors with an exit code other than the default 2.
#[derive(Debug)]
pub enum CliError {
    /// A signal stopped the command; what was measured is kept.
    Interrupted(String),
    /// Something failed while working, not because of the user's input.
    Runtime(String),
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Interrupted(what) => write!(f, "interrupted: {what}"),
            CliError::Runtime(what) => f.write_str(what),
        }
    }
}

impl std::error::Error for CliError {}

impl CliError {
    /// The process exit code for an error returned by a command.
    pub fn exit_code(err: &anyhow::Error) -> u8 {
        match err.downcast_ref::<CliError>() {
            Some(CliError::Interrupted(_)) => crate::interrupt::exit_code(),
            Some(CliError::Runtime(_)) => RUNTIME,
            None if err
                .chain()
                .any(|e| is_runtime_io(e) || is_listener_failure(e)) =>
            {
                RUNTIME
            }
            None => USAGE,
        }
    }
}

/// An I/O error the user's input did not cause: a full disk, a broken pipe, a reset
/// connection, a port another process holds. A missing file, a refused permission or an
/// address that is not this machine's point at something the user named, so they stay
/// usage errors.
fn is_runtime_io(e: &(dyn std::error::Error + 'static)) -> bool {
    let Some(io) = e.downcast_ref::<std::io::Error>() else {
        return false;
    };
    !matches!(
        io.kind(),
        ErrorKind::NotFound
            | ErrorKind::PermissionDenied
            | ErrorKind::AlreadyExists
            | ErrorKind::InvalidInput
            | ErrorKind::InvalidData
            | ErrorKind::AddrNotAvailable
            | ErrorKind::Unsupported
            | ErrorKind::IsADirectory
            | ErrorKind::NotADirectory
    )
}

/// A listener of a node or of its metrics endpoint that could not be bound: the address
/// parsed (clap and the config checked it), so what failed is the machine's state (a
/// port another process holds), not the input. Their reason is text, hence the variants.
fn is_listener_failure(e: &(dyn std::error::Error + 'static)) -> bool {
    matches!(
        e.downcast_ref::<dyno_node::Error>(),
        Some(dyno_node::Error::Bind { .. })
    ) || matches!(
        e.downcast_ref::<dyno_obs::Error>(),
        Some(dyno_obs::Error::Bind { .. })
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context as _;

    fn io(kind: ErrorKind) -> anyhow::Error {
        Err::<(), _>(std::io::Error::new(kind, "x"))
            .context("writing results.csv")
            .unwrap_err()
    }

    #[test]
    fn input_errors_are_two_and_runtime_failures_three() {
        assert_eq!(CliError::exit_code(&anyhow::anyhow!("--rate: bad")), 2);
        assert_eq!(CliError::exit_code(&io(ErrorKind::NotFound)), 2);
        assert_eq!(CliError::exit_code(&io(ErrorKind::AddrNotAvailable)), 2);
        assert_eq!(CliError::exit_code(&io(ErrorKind::AddrInUse)), 3);
        let busy: anyhow::Error = dyno_node::Error::Bind {
            what: "peer",
            addr: "127.0.0.1:1".into(),
            reason: "Address in use".into(),
        }
        .into();
        assert_eq!(CliError::exit_code(&busy), 3);
        assert_eq!(CliError::exit_code(&io(ErrorKind::StorageFull)), 3);
        assert_eq!(CliError::exit_code(&io(ErrorKind::BrokenPipe)), 3);
        let e: anyhow::Error = CliError::Runtime("node crashed".into()).into();
        assert_eq!(CliError::exit_code(&e), 3);
        let e: anyhow::Error = CliError::Interrupted("x".into()).into();
        assert_eq!(CliError::exit_code(&e), 130);
    }
}
