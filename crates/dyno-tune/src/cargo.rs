//! The cargo driver's ground floor: a variant's record on disk (`<target
//! dir>/dyno-build.json`) over the build layer (dyno-build), which runs cargo as a
//! guarded child and fingerprints a build's inputs. Both the ordinary build
//! ([`crate::build`]) and the profile-guided one ([`crate::pgo`]) stand on it.

use crate::artifact::BuildRecord;
use crate::error::TuneError;
use crate::variant::BuildPlan;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

pub use dyno_build::cargo::build_fingerprint;
pub use dyno_build::fingerprint::{source_fingerprint, source_root};
pub(crate) use dyno_build::CargoRun;

/// SHA-256 of a file, hex.
pub fn sha256_file(path: &Path) -> Result<String, TuneError> {
    Ok(dyno_build::sha256_file(path)?)
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

/// Runs cargo as `plan` says (the build layer cleans the caller's environment of what
/// would change the build behind the study's back); `None` when `stop` ended it.
pub(crate) fn run_cargo(
    plan: &BuildPlan,
    stop: &AtomicBool,
) -> Result<Option<CargoRun>, TuneError> {
    match dyno_build::cargo::run_cargo(plan, None, stop) {
        Ok(run) => Ok(Some(run)),
        Err(dyno_build::BuildError::Interrupted) => Ok(None),
        Err(e) => Err(e.into()),
    }
}
