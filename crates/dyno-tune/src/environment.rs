//! Checks of the world outside the study file, made before any build starts: are the
//! toolchains installed, does the manifest have the binary, do the baselines exist? And
//! the one change made to the project: a missing `Cargo.lock` is generated, so the source
//! fingerprint taken next is the one every later run sees.

use crate::error::TuneError;
use crate::study::{Project, Study};
use crate::toolchain::{find_bolt, find_profdata, rustc_version, tool};
use std::process::Command;

/// Toolchains `rustup toolchain list` reports, without the host triple and markers
/// (`stable-x86_64-unknown-linux-gnu (default)` -> `stable-x86_64-unknown-linux-gnu`).
pub fn installed_toolchains() -> Result<Vec<String>, TuneError> {
    let out = tool(Command::new("rustup").args(["toolchain", "list"]))?;
    Ok(parse_toolchain_list(&out))
}

fn parse_toolchain_list(out: &str) -> Vec<String> {
    out.lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|t| !t.is_empty() && *t != "no")
        .map(str::to_string)
        .collect()
}

/// Whether `name` (`stable`, `nightly-2024-01-01`, `1.80.0`, or a full name) is one of
/// `installed` (full names with a host triple).
fn toolchain_installed(name: &str, installed: &[String]) -> bool {
    installed.iter().any(|t| {
        // `stable` matches `stable-<host triple>`, not `stable-2024-01-01-<host>`.
        t == name
            || t.strip_prefix(name).is_some_and(|rest| {
                rest.starts_with('-') && !rest[1..].starts_with(|c: char| c.is_ascii_digit())
            })
    })
}

/// The binaries of the Cargo project at `manifest`, from `cargo metadata --no-deps`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectBins {
    /// The workspace root (where `Cargo.lock` lives).
    pub root: std::path::PathBuf,
    /// Every package of the workspace.
    pub packages: Vec<String>,
    /// `(package, binary)` for every binary target, in `cargo metadata`'s order.
    pub bins: Vec<(String, String)>,
}

/// Reads the packages and binaries of the project at `manifest`.
pub fn project_bins(manifest: &std::path::Path) -> Result<ProjectBins, TuneError> {
    let out = tool(
        Command::new("cargo")
            .env_remove("RUSTUP_TOOLCHAIN")
            .args([
                "metadata",
                "--no-deps",
                "--format-version",
                "1",
                "--manifest-path",
            ])
            .arg(manifest),
    )
    .map_err(|e| TuneError::Project {
        manifest: manifest.to_path_buf(),
        message: e.to_string(),
    })?;
    let meta: serde_json::Value = serde_json::from_str(&out).map_err(|e| TuneError::Project {
        manifest: manifest.to_path_buf(),
        message: format!("cargo metadata output is not JSON: {e}"),
    })?;
    let root = meta["workspace_root"]
        .as_str()
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| crate::cargo::source_root(manifest));
    let mut packages = Vec::new();
    let mut bins = Vec::new();
    for p in meta["packages"].as_array().into_iter().flatten() {
        let name = p["name"].as_str().unwrap_or_default().to_string();
        for t in p["targets"].as_array().into_iter().flatten() {
            let is_bin = t["kind"]
                .as_array()
                .is_some_and(|k| k.iter().any(|k| k == "bin"));
            if is_bin {
                bins.push((
                    name.clone(),
                    t["name"].as_str().unwrap_or_default().to_string(),
                ));
            }
        }
        packages.push(name);
    }
    Ok(ProjectBins {
        root,
        packages,
        bins,
    })
}

fn check_bin(project: &Project) -> Result<std::path::PathBuf, TuneError> {
    let ProjectBins {
        root,
        packages,
        bins,
    } = project_bins(&project.manifest)?;
    let bins: Vec<(String, String)> = bins
        .into_iter()
        .filter(|(p, _)| project.package.as_deref().is_none_or(|want| want == p))
        .collect();
    if let Some(pkg) = &project.package {
        if !packages.iter().any(|p| p == pkg) {
            return Err(TuneError::Project {
                manifest: project.manifest.clone(),
                message: format!("no package `{pkg}` in this manifest (study key project.package)"),
            });
        }
    }
    if bins.iter().any(|(_, b)| *b == project.bin) {
        return Ok(root);
    }
    let list: Vec<String> = bins
        .iter()
        .map(|(p, b)| format!("{b} (package {p})"))
        .collect();
    Err(TuneError::Project {
        manifest: project.manifest.clone(),
        message: format!(
            "no binary `{}` (study key project.bin); binaries: {}",
            project.bin,
            if list.is_empty() {
                "none".to_string()
            } else {
                list.join(", ")
            }
        ),
    })
}

/// Creates `<root>/Cargo.lock` with `cargo generate-lockfile` when it is absent; returns
/// `true` when it did.
///
/// Without this the first variant build would create the lock file after the source
/// fingerprint was taken, so the next `dyno tune run` would see changed sources and
/// rebuild every variant for nothing. The file is generated with the first toolchain of
/// the matrix (the default one when the matrix names none): a lock file written by a
/// newer cargo may be unreadable to an older one, so list the oldest toolchain first
/// when mixing them.
pub fn ensure_lock_file(study: &Study, root: &std::path::Path) -> Result<bool, TuneError> {
    if root.join("Cargo.lock").is_file() {
        return Ok(false);
    }
    let mut cmd = Command::new("cargo");
    // The toolchain is the matrix's, not the one of a calling cargo or rustup shell.
    cmd.env_remove("RUSTUP_TOOLCHAIN").env_remove("RUSTC");
    if let Some(t) = study.matrix.toolchain.first() {
        cmd.arg(format!("+{t}"));
    }
    cmd.arg("generate-lockfile")
        .arg("--manifest-path")
        .arg(&study.project.manifest);
    tool(&mut cmd)?;
    Ok(true)
}

/// Refuses a study whose PGO variants cannot be built: every toolchain of a variant with
/// `pgo = "on"` needs the `llvm-profdata` of its LLVM, `"on+bolt"` also `llvm-bolt`.
fn check_pgo_tools(study: &Study) -> Result<(), TuneError> {
    let variants = crate::expand(&study.matrix, &study.exclude, &study.project.profile);
    let mut checked: Vec<(Option<String>, bool)> = Vec::new();
    for v in variants {
        let Some(mode) = v.settings.pgo.filter(|p| p.trains()) else {
            continue;
        };
        let bolt = mode == crate::profile::Pgo::OnBolt;
        let key = (v.settings.toolchain.clone(), bolt);
        if checked.contains(&key) {
            continue;
        }
        let toolchain = v.settings.toolchain.as_deref();
        let rustc = rustc_version(toolchain)?;
        find_profdata(toolchain, &rustc)?;
        if bolt {
            find_bolt(toolchain, &rustc)?;
        }
        checked.push(key);
    }
    Ok(())
}

/// Checks toolchains, the manifest's binary and the baselines' files, and generates a
/// missing `Cargo.lock` ([`ensure_lock_file`]); returns the project's workspace root
/// (whose files are the sources of every build).
pub fn check_environment(study: &Study) -> Result<std::path::PathBuf, TuneError> {
    if !study.matrix.toolchain.is_empty() {
        let installed = installed_toolchains()?;
        for t in &study.matrix.toolchain {
            if !toolchain_installed(t, &installed) {
                return Err(TuneError::ToolchainMissing {
                    name: t.clone(),
                    installed,
                });
            }
        }
    }
    if !study.project.manifest.is_file() {
        return Err(TuneError::Project {
            manifest: study.project.manifest.clone(),
            message: "no such file (study key project.manifest)".into(),
        });
    }
    let root = check_bin(&study.project)?;
    check_pgo_tools(study)?;
    crate::portability::check_target_cpus(study)?;
    ensure_lock_file(study, &root)?;
    for b in &study.baselines {
        if !b.binary.is_file() {
            return Err(TuneError::Io {
                path: b.binary.clone(),
                source: std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!("baseline `{}`: binary not found", b.name),
                ),
            });
        }
    }
    Ok(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toolchain_names_match_with_or_without_host() {
        let list = parse_toolchain_list(
            "stable-x86_64-unknown-linux-gnu (active, default)\nnightly-x86_64-unknown-linux-gnu\n1.95.0-x86_64-unknown-linux-gnu\n",
        );
        assert_eq!(list.len(), 3);
        assert!(toolchain_installed("stable", &list));
        assert!(toolchain_installed("nightly", &list));
        assert!(toolchain_installed("1.95.0", &list));
        assert!(toolchain_installed(
            "stable-x86_64-unknown-linux-gnu",
            &list
        ));
        assert!(!toolchain_installed("beta", &list));
        assert!(!toolchain_installed("1.95", &list));
        assert!(!toolchain_installed("nightly-2024-01-01", &list));
    }
}
