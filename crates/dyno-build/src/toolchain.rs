//! The tools outside a build: running one and keeping the tail of its output, and the
//! compiler's `rustc -vV`, which is part of every cargo build's settings (a new compiler
//! is a new build).

use crate::error::BuildError;
use std::process::Command;

/// Runs a tool to completion and returns its standard output; a failure names the
/// command and ends with its last lines of standard error.
pub fn tool(cmd: &mut Command) -> Result<String, BuildError> {
    let line = format!("{cmd:?}").replace('"', "");
    let out = cmd.output().map_err(|e| BuildError::Tool {
        command: line.clone(),
        message: e.to_string(),
    })?;
    if !out.status.success() {
        return Err(BuildError::Tool {
            command: line,
            message: tail(&String::from_utf8_lossy(&out.stderr), 20),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The last `n` lines of `text`.
pub fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// `rustc +TOOLCHAIN -vV` (the default toolchain when `None`), with the caller's
/// `RUSTUP_TOOLCHAIN` and `RUSTC` left out so the answer is the toolchain's own.
pub fn rustc_version(toolchain: Option<&str>) -> Result<String, BuildError> {
    let mut cmd = Command::new("rustc");
    cmd.env_remove("RUSTUP_TOOLCHAIN").env_remove("RUSTC");
    if let Some(t) = toolchain {
        cmd.arg(format!("+{t}"));
    }
    cmd.arg("-vV");
    let command = format!("rustc +{} -vV", toolchain.unwrap_or("default"));
    let out = cmd.output().map_err(|e| BuildError::Tool {
        command: command.clone(),
        message: e.to_string(),
    })?;
    if !out.status.success() {
        return Err(BuildError::Tool {
            command,
            message: tail(&String::from_utf8_lossy(&out.stderr), 5),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tails_keep_the_last_lines() {
        assert_eq!(tail("a\nb\nc\n", 2), "b\nc");
        assert_eq!(tail("a", 5), "a");
    }

    #[test]
    fn a_failing_tool_is_named_with_its_last_lines() {
        let e = tool(Command::new("sh").args(["-c", "echo one >&2; echo two >&2; exit 3"]))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("cannot run `sh -c"), "{e}");
        assert!(e.ends_with("one\ntwo"), "{e}");
    }
}
