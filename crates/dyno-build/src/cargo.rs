//! Cargo with a profile: one cargo invocation ([`CargoPlan`]: arguments, environment,
//! target directory, where the binary lands), run as a guarded child with the caller's
//! environment cleaned of what would change the build behind dyno's back, and the
//! fingerprint of its inputs. `dyno tune`'s variants and the cargo recipe of a git
//! revision both run through here.

use crate::error::BuildError;
use crate::process::run_guarded;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicBool;

/// How cargo is invoked for one build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CargoPlan {
    /// `cargo`.
    pub program: String,
    /// Arguments, starting with `+TOOLCHAIN` when one is set.
    pub args: Vec<String>,
    /// Environment variables set for the build.
    pub env: Vec<(String, String)>,
    /// Environment variables removed so the caller's shell cannot change the build
    /// (`CARGO_ENCODED_RUSTFLAGS` would override `RUSTFLAGS`).
    pub env_remove: Vec<String>,
    /// The build's own target directory.
    pub target_dir: PathBuf,
    /// Where the binary will be.
    pub binary: PathBuf,
}

/// What one cargo run did.
#[derive(Debug, Clone, PartialEq)]
pub struct CargoRun {
    /// Cargo exited 0.
    pub ok: bool,
    /// Its last output lines, one string.
    pub tail: String,
    /// Wall time, seconds.
    pub seconds: f64,
}

/// The environment-variable spelling of a profile name: `production` -> `PRODUCTION`.
pub fn profile_env_name(profile: &str) -> String {
    profile.to_ascii_uppercase().replace('-', "_")
}

/// The directory under the target directory a profile's binaries land in (`dev` builds
/// go to `debug`, every other profile to its own name).
pub fn profile_dir(profile: &str) -> &str {
    match profile {
        "dev" | "test" => "debug",
        "bench" => "release",
        p => p,
    }
}

/// The cargo profile a plan builds (`--profile NAME`, `--release`, else `release`).
pub fn requested_profile(plan: &CargoPlan) -> String {
    if plan.args.iter().any(|a| a == "--release") {
        return "release".into();
    }
    plan.args
        .iter()
        .position(|a| a == "--profile")
        .and_then(|i| plan.args.get(i + 1))
        .cloned()
        .unwrap_or_else(|| "release".into())
}

/// Runs cargo as `plan` says (output appended to `log` when given), with the caller's
/// `CARGO_PROFILE_<profile>_*` variables and `plan.env_remove` left out; Ctrl-C (`stop`)
/// stops it and returns [`BuildError::Interrupted`].
pub fn run_cargo(
    plan: &CargoPlan,
    log: Option<&Path>,
    stop: &AtomicBool,
) -> Result<CargoRun, BuildError> {
    std::fs::create_dir_all(&plan.target_dir).map_err(|source| BuildError::Io {
        path: plan.target_dir.clone(),
        source,
    })?;
    let mut cmd = Command::new(&plan.program);
    cmd.args(&plan.args);
    for k in &plan.env_remove {
        cmd.env_remove(k);
    }
    // Profile keys of this profile from the caller's shell would silently change the build.
    let prefix = format!(
        "CARGO_PROFILE_{}_",
        profile_env_name(&requested_profile(plan))
    );
    for (k, _) in std::env::vars() {
        if k.starts_with(&prefix) {
            cmd.env_remove(k);
        }
    }
    cmd.envs(plan.env.iter().map(|(k, v)| (k, v)));
    let run = run_guarded(cmd, log, stop)?;
    Ok(CargoRun {
        ok: run.ok,
        tail: run.tail.join("\n"),
        seconds: run.seconds,
    })
}

/// The fingerprint of one build's inputs: its arguments and environment, the compiler's
/// `rustc -vV` and the sources' fingerprint.
pub fn build_fingerprint(plan: &CargoPlan, rustc: &str, sources: &str) -> String {
    let key = serde_json::json!({
        "args": plan.args,
        "env": plan.env,
        "rustc": rustc,
        "sources": sources,
    });
    crate::short_hash(key.to_string().as_bytes())
}

/// The `[package] name` of a manifest.
pub fn package_name(manifest: &Path) -> Result<String, BuildError> {
    let io = |source| BuildError::Io {
        path: manifest.to_path_buf(),
        source,
    };
    let text = std::fs::read_to_string(manifest).map_err(io)?;
    let value: toml::Value = toml::from_str(&text).map_err(|e| {
        io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            e.to_string(),
        ))
    })?;
    value
        .get("package")
        .and_then(|p| p.get("name"))
        .and_then(|n| n.as_str())
        .map(str::to_string)
        .ok_or_else(|| {
            io(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "no [package] name; give `package` or `bin`",
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_and_their_directories() {
        assert_eq!(profile_env_name("fast-build"), "FAST_BUILD");
        assert_eq!(profile_dir("dev"), "debug");
        assert_eq!(profile_dir("production"), "production");
        let plan = CargoPlan {
            program: "cargo".into(),
            args: vec!["build".into(), "--profile".into(), "production".into()],
            env: vec![],
            env_remove: vec![],
            target_dir: "/t".into(),
            binary: "/t/production/x".into(),
        };
        assert_eq!(requested_profile(&plan), "production");
        let release = CargoPlan {
            args: vec!["build".into(), "--release".into()],
            ..plan
        };
        assert_eq!(requested_profile(&release), "release");
    }
}
