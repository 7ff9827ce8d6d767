//! What a build is asked for and what it leaves behind: the request of one variant, the
//! record of its last build (and, for a profile-guided one, of its training), and what
//! happened to it. Plain data that the cargo driver ([`crate::cargo`]), the ordinary
//! build ([`crate::build`]) and the profile-guided one ([`crate::pgo`]) share, so none of
//! them imports another for its types.

use crate::profile::Pgo;
use crate::variant::{BuildPlan, Variant};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

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
    pub pgo: Option<Box<PgoRecord>>,
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
    pub pgo: Option<PgoJob>,
}

/// How one PGO variant is trained.
#[derive(Debug, Clone, PartialEq)]
pub struct PgoJob {
    /// `On` or `OnBolt`.
    pub mode: Pgo,
    /// Training command lines, `{bin}` where the instrumented binary goes.
    pub training: Vec<Vec<String>>,
    /// `true` when the training commands are the measured benchmarks' own.
    pub same_input: bool,
    /// Kill a training command after this many seconds.
    pub timeout_s: f64,
}

/// What a finished profile-guided build consisted of (stored in its build record).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PgoRecord {
    /// `on` or `on+bolt`.
    pub mode: String,
    /// SHA-256 of the merged profile the binary was built with.
    pub profile_sha256: String,
    /// The merged profile.
    pub profile: PathBuf,
    /// Key of the profile's inputs (instrumented build, sources, training, tool).
    pub profile_key: String,
    /// Seconds of the instrumented build.
    pub instrumented_build_s: f64,
    /// Seconds of the training runs and the merge.
    pub training_s: f64,
    /// Seconds of the optimised build.
    pub final_build_s: f64,
    /// Seconds of BOLT's instrumentation, training and optimisation (0 without BOLT).
    pub bolt_s: f64,
    /// The training command lines (with `{bin}`).
    pub training: Vec<Vec<String>>,
    /// Whether training ran the measured benchmarks' own commands.
    pub same_input: bool,
    /// The `llvm-profdata` used.
    pub profdata: PathBuf,
    /// The `llvm-bolt` used, for `on+bolt`.
    pub bolt: Option<PathBuf>,
}
