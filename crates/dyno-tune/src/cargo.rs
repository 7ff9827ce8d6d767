//! The cargo driver's ground floor: one cargo run of a [`BuildPlan`], the inputs'
//! fingerprint, and a build's record on disk (`<target dir>/dyno-build.json`). Both the
//! ordinary build ([`crate::build`]) and the profile-guided one ([`crate::pgo`]) stand
//! on it.

use crate::artifact::BuildRecord;
use crate::error::TuneError;
use crate::toolchain::tail;
use crate::variant::BuildPlan;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// SHA-256 of a file, hex.
pub fn sha256_file(path: &Path) -> Result<String, TuneError> {
    let io = |source| TuneError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut f = std::fs::File::open(path).map_err(io)?;
    let mut h = Sha256::new();
    std::io::copy(&mut f, &mut h).map_err(io)?;
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// The directory whose files are the build's sources: the nearest ancestor of the
/// manifest holding a `Cargo.lock` (the workspace root), else the manifest's directory.
pub fn source_root(manifest: &Path) -> PathBuf {
    let dir = manifest.parent().unwrap_or(Path::new(".")).to_path_buf();
    dir.ancestors()
        .find(|d| d.join("Cargo.lock").is_file())
        .map_or(dir.clone(), Path::to_path_buf)
}

/// A hash of path, size and modification time of every file under `root`, skipping
/// `target` directories, hidden directories and `skip` (the study's own work directory).
pub fn source_fingerprint(root: &Path, skip: &Path) -> String {
    let mut entries = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(read) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in read.flatten() {
            let path = e.path();
            let name = e.file_name();
            let name = name.to_string_lossy();
            let Ok(meta) = e.metadata() else { continue };
            if meta.is_dir() {
                if name == "target" || name.starts_with('.') || path == skip {
                    continue;
                }
                stack.push(path);
            } else {
                let mtime = meta
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_nanos());
                let rel = path
                    .strip_prefix(root)
                    .unwrap_or(&path)
                    .to_string_lossy()
                    .into_owned();
                entries.push(format!("{rel}\t{}\t{mtime}", meta.len()));
            }
        }
    }
    entries.sort();
    crate::short_hash(entries.join("\n").as_bytes())
}

/// The fingerprint of one build's inputs.
pub fn build_fingerprint(plan: &BuildPlan, rustc: &str, sources: &str) -> String {
    let key = serde_json::json!({
        "args": plan.args,
        "env": plan.env,
        "rustc": rustc,
        "sources": sources,
    });
    crate::short_hash(key.to_string().as_bytes())
}

pub(crate) fn record_path(plan: &BuildPlan) -> PathBuf {
    plan.target_dir.join("dyno-build.json")
}

/// The last build record of a plan, if any.
pub fn load_record(plan: &BuildPlan) -> Option<BuildRecord> {
    let text = std::fs::read_to_string(record_path(plan)).ok()?;
    serde_json::from_str(&text).ok()
}

pub(crate) fn save_record(plan: &BuildPlan, record: &BuildRecord) -> Result<(), TuneError> {
    let path = record_path(plan);
    let io = |source| TuneError::Io {
        path: path.clone(),
        source,
    };
    std::fs::create_dir_all(&plan.target_dir).map_err(io)?;
    let tmp = path.with_extension("json.tmp");
    let text = serde_json::to_string_pretty(record).expect("serializable");
    std::fs::write(&tmp, text).map_err(io)?;
    std::fs::rename(&tmp, &path).map_err(io)
}

/// What one cargo run did.
#[derive(Debug, Clone)]
pub(crate) struct CargoRun {
    /// Cargo exited 0.
    pub ok: bool,
    /// Its last 20 lines of stderr.
    pub tail: String,
    /// Wall time, seconds.
    pub seconds: f64,
}

/// Runs cargo as `plan` says, with the caller's environment cleaned of what would change
/// the build behind the study's back.
pub(crate) fn run_cargo(plan: &BuildPlan) -> Result<CargoRun, TuneError> {
    std::fs::create_dir_all(&plan.target_dir).map_err(|source| TuneError::Io {
        path: plan.target_dir.clone(),
        source,
    })?;
    let mut cmd = Command::new(&plan.program);
    cmd.args(&plan.args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for k in &plan.env_remove {
        cmd.env_remove(k);
    }
    // Profile keys of this profile from the caller's shell would silently change the build.
    let prefix = format!(
        "CARGO_PROFILE_{}_",
        crate::profile_env_name(&request_profile(plan))
    );
    for (k, _) in std::env::vars() {
        if k.starts_with(&prefix) {
            cmd.env_remove(k);
        }
    }
    cmd.envs(plan.env.iter().map(|(k, v)| (k, v)));
    let started = Instant::now();
    let out = cmd.output().map_err(|e| TuneError::Tool {
        command: format!("{} {}", plan.program, plan.args.join(" ")),
        message: e.to_string(),
    })?;
    Ok(CargoRun {
        ok: out.status.success(),
        tail: tail(&String::from_utf8_lossy(&out.stderr), 20),
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// The cargo profile a plan builds (`--profile NAME`, else `release`).
fn request_profile(plan: &BuildPlan) -> String {
    plan.args
        .iter()
        .position(|a| a == "--profile")
        .and_then(|i| plan.args.get(i + 1))
        .cloned()
        .unwrap_or_else(|| "release".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_follow_sources() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("Cargo.lock"), "x").unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::create_dir_all(dir.path().join("target/debug")).unwrap();
        std::fs::write(dir.path().join("src/main.rs"), "fn main() {}").unwrap();
        let skip = dir.path().join("study.tune");
        let a = source_fingerprint(dir.path(), &skip);
        std::fs::write(dir.path().join("target/debug/junk"), "built").unwrap();
        std::fs::create_dir(&skip).unwrap();
        std::fs::write(skip.join("x"), "x").unwrap();
        assert_eq!(a, source_fingerprint(dir.path(), &skip));
        std::fs::write(dir.path().join("src/main.rs"), "fn main() { }").unwrap();
        assert_ne!(a, source_fingerprint(dir.path(), &skip));
        assert_eq!(source_root(&dir.path().join("Cargo.toml")), dir.path());
    }
}
