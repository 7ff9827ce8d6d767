//! `dyno compare bisect`, and what the commands that build git revisions share: a
//! build stopped by Ctrl-C is an interruption (exit 130), not a failed build.

use crate::cli_error::CliError;

/// A git subject's build error as a command's error: an interrupted build exits as
/// interrupted (130, 143), a failed one as bad input (its message names the subject,
/// the revision and the build's last lines).
pub fn build_error(e: dyno_compare::gitbuild::BuildError) -> anyhow::Error {
    match e.source {
        dyno_build::BuildError::Interrupted => CliError::Interrupted(format!(
            "building `{}` at {}: nothing was measured; run the same command again to build it",
            e.subject, e.rev
        ))
        .into(),
        _ => e.into(),
    }
}
