//! The cargo driver: builds variants in parallel into their own target directories,
//! records build time, binary size and hash and the toolchain's `rustc -vV`, and skips
//! variants whose inputs did not change.
//!
//! Inputs of a build = its [`BuildPlan`] (arguments and environment), the toolchain's
//! `rustc -vV`, and a fingerprint of the project's sources (path, size and mtime of every
//! file under the workspace root except `target/` and hidden directories). The record of
//! the last build, successful or not, is `<target dir>/dyno-build.json`; a build is
//! skipped when its inputs and the binary's hash match that record.

use crate::environment::tail;
use crate::error::TuneError;
use crate::variant::{BuildPlan, Variant};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// What is known about one variant's last build.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BuildRecord {
    /// The variant's id.
    pub variant: String,
    /// Hash of every input of the build.
    pub fingerprint: String,
    /// `true` when cargo succeeded.
    pub ok: bool,
    /// The binary.
    pub binary: PathBuf,
    /// SHA-256 of the binary (hex); empty after a failure.
    pub sha256: String,
    /// Size of the binary in bytes.
    pub size: u64,
    /// Wall time of the build in seconds.
    pub build_time_s: f64,
    /// `rustc -vV` of the toolchain.
    pub rustc: String,
    /// The last lines cargo printed, after a failure.
    pub error_tail: String,
    /// The steps of a profile-guided build (its `build_time_s` is their sum).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pgo: Option<Box<crate::pgo::PgoRecord>>,
}

impl BuildRecord {
    /// The `release:` line of `rustc -vV` (`1.95.0`), or the first line.
    pub fn rustc_release(&self) -> String {
        self.rustc
            .lines()
            .find_map(|l| l.strip_prefix("release: "))
            .or_else(|| self.rustc.lines().next())
            .unwrap_or_default()
            .to_string()
    }
}

/// What happened to one variant.
#[derive(Debug, Clone, PartialEq)]
pub enum BuildOutcome {
    /// Built now.
    Built(BuildRecord),
    /// Inputs unchanged since the last build: reused (successful or failed).
    Reused(BuildRecord),
    /// Cargo failed; the record holds its last lines.
    Failed(BuildRecord),
    /// Ctrl-C: not built, nothing recorded.
    Interrupted,
}

impl BuildOutcome {
    /// The record of a usable binary, if any.
    pub fn usable(&self) -> Option<&BuildRecord> {
        match self {
            BuildOutcome::Built(r) | BuildOutcome::Reused(r) if r.ok => Some(r),
            _ => None,
        }
    }
}

/// Progress of a parallel build, for the binary to show.
#[derive(Debug, Clone)]
pub enum BuildEvent {
    /// A build starts.
    Started {
        /// Variant label.
        label: String,
    },
    /// A build ended.
    Finished {
        /// Variant label.
        label: String,
        /// How.
        outcome: BuildOutcome,
    },
}

/// One variant to build.
#[derive(Debug, Clone)]
pub struct BuildRequest {
    /// The variant.
    pub variant: Variant,
    /// How cargo is invoked (for a PGO variant: its final build, without the profile
    /// flags, which [`crate::pgo`] adds).
    pub plan: BuildPlan,
    /// The training of a PGO variant; `None` for an ordinary build.
    pub pgo: Option<crate::pgo::PgoJob>,
}

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

/// `rustc +TOOLCHAIN -vV`.
pub fn rustc_version(toolchain: Option<&str>) -> Result<String, TuneError> {
    let mut cmd = Command::new("rustc");
    cmd.env_remove("RUSTUP_TOOLCHAIN").env_remove("RUSTC");
    if let Some(t) = toolchain {
        cmd.arg(format!("+{t}"));
    }
    cmd.arg("-vV");
    let out = cmd.output().map_err(|e| TuneError::Tool {
        command: format!("rustc +{} -vV", toolchain.unwrap_or("default")),
        message: e.to_string(),
    })?;
    if !out.status.success() {
        return Err(TuneError::Tool {
            command: format!("rustc +{} -vV", toolchain.unwrap_or("default")),
            message: tail(&String::from_utf8_lossy(&out.stderr), 5),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
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

/// Builds (or reuses) one variant.
pub fn build_one(
    request: &BuildRequest,
    rustc: &str,
    sources: &str,
    stop: &AtomicBool,
) -> Result<BuildOutcome, TuneError> {
    if let Some(job) = &request.pgo {
        return crate::pgo::build_pgo(request, job, rustc, sources, stop);
    }
    let plan = &request.plan;
    let fingerprint = build_fingerprint(plan, rustc, sources);
    let previous = load_record(plan);
    if let Some(old) = &previous {
        let same_binary = !old.ok || sha256_file(&old.binary).is_ok_and(|sha| sha == old.sha256);
        if old.fingerprint == fingerprint && same_binary {
            return Ok(BuildOutcome::Reused(old.clone()));
        }
    }
    if stop.load(Ordering::SeqCst) {
        return Ok(BuildOutcome::Interrupted);
    }
    let run = run_cargo(plan)?;
    if stop.load(Ordering::SeqCst) {
        return Ok(BuildOutcome::Interrupted);
    }
    let mut record = BuildRecord {
        variant: request.variant.id.clone(),
        fingerprint,
        ok: run.ok,
        binary: plan.binary.clone(),
        sha256: String::new(),
        size: 0,
        build_time_s: run.seconds,
        rustc: rustc.to_string(),
        error_tail: String::new(),
        pgo: None,
    };
    if record.ok {
        match (sha256_file(&plan.binary), std::fs::metadata(&plan.binary)) {
            (Ok(sha), Ok(meta)) => {
                // An input that does not reach the binary (a new Cargo.lock, a touched
                // file) makes cargo a no-op: keep the time of the build that made it.
                if let Some(old) = previous.filter(|o| o.ok && o.sha256 == sha) {
                    record.build_time_s = old.build_time_s;
                }
                record.sha256 = sha;
                record.size = meta.len();
            }
            _ => {
                record.ok = false;
                record.error_tail =
                    format!("cargo succeeded but {} is missing", plan.binary.display());
            }
        }
    } else {
        record.error_tail = run.tail;
    }
    save_record(plan, &record)?;
    Ok(if record.ok {
        BuildOutcome::Built(record)
    } else {
        BuildOutcome::Failed(record)
    })
}

fn request_profile(plan: &BuildPlan) -> String {
    plan.args
        .iter()
        .position(|a| a == "--profile")
        .and_then(|i| plan.args.get(i + 1))
        .cloned()
        .unwrap_or_else(|| "release".into())
}

/// Builds every request, up to `jobs` at a time, in request order. `rustc` maps a
/// toolchain (`None` = default) to its `rustc -vV`; a toolchain whose `rustc` cannot be
/// run fails its variants, not the study.
pub fn build_all(
    requests: &[BuildRequest],
    jobs: usize,
    sources: &str,
    stop: &AtomicBool,
    on_event: &(dyn Fn(BuildEvent) + Sync),
) -> Vec<BuildOutcome> {
    let mut versions: Vec<(Option<String>, Result<String, String>)> = Vec::new();
    for r in requests {
        let t = r.variant.settings.toolchain.clone();
        if !versions.iter().any(|(k, _)| *k == t) {
            let v = rustc_version(t.as_deref()).map_err(|e| e.to_string());
            versions.push((t, v));
        }
    }
    let next = Mutex::new(0usize);
    let results: Mutex<Vec<Option<BuildOutcome>>> = Mutex::new(vec![None; requests.len()]);
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1).min(requests.len().max(1)) {
            scope.spawn(|| loop {
                let i = {
                    let mut n = next.lock().expect("not poisoned");
                    let i = *n;
                    *n += 1;
                    i
                };
                let Some(request) = requests.get(i) else {
                    break;
                };
                on_event(BuildEvent::Started {
                    label: request.variant.label.clone(),
                });
                let rustc = versions
                    .iter()
                    .find(|(k, _)| *k == request.variant.settings.toolchain)
                    .map(|(_, v)| v.clone())
                    .expect("every toolchain was probed");
                let outcome = match rustc {
                    Ok(rustc) => build_one(request, &rustc, sources, stop)
                        .unwrap_or_else(|e| BuildOutcome::Failed(failed(request, e.to_string()))),
                    Err(e) => BuildOutcome::Failed(failed(request, e)),
                };
                on_event(BuildEvent::Finished {
                    label: request.variant.label.clone(),
                    outcome: outcome.clone(),
                });
                results.lock().expect("not poisoned")[i] = Some(outcome);
            });
        }
    });
    results
        .into_inner()
        .expect("not poisoned")
        .into_iter()
        .map(|o| o.unwrap_or(BuildOutcome::Interrupted))
        .collect()
}

fn failed(request: &BuildRequest, message: String) -> BuildRecord {
    BuildRecord {
        variant: request.variant.id.clone(),
        fingerprint: String::new(),
        ok: false,
        binary: request.plan.binary.clone(),
        sha256: String::new(),
        size: 0,
        build_time_s: 0.0,
        rustc: String::new(),
        error_tail: message,
        pgo: None,
    }
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
