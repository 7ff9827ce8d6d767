//! `dyno tune`: find the fastest build profile of a Rust project on this CPU.
//!
//! A study file ([`Study`]) names a Cargo project, a matrix of profile settings
//! (toolchain, target-cpu, opt-level, lto, codegen-units, panic, extra rustflags),
//! baselines, and benchmarks with metric extractors. The tuner
//!
//! 1. expands the matrix into [`Variant`]s (stable ids, readable labels) and derives the
//!    exact cargo invocation of each ([`build_plan`]): profile keys go through
//!    `CARGO_PROFILE_<NAME>_<KEY>` environment variables, never into the user's files;
//! 2. builds them ([`build`]), skipping variants whose inputs did not change;
//! 3. measures them in rounds, shuffled per round ([`race`]), behind an [`Executor`]
//!    trait so the scheduler is tested with a mock; every sample goes to a [`Recorder`]
//!    (the results store in production) as it is measured, and a resumed study replays
//!    its decisions from what was recorded;
//! 4. eliminates variants significantly worse on every metric (racing), and
//! 5. reports ([`report`]) medians, intervals, changes against the baseline, the Pareto
//!    and near-Pareto sets and a ready-to-paste profile.
//!
//! ```
//! use dyno_tune::{expand, Study};
//! let text = r#"
//! [project]
//! manifest = "Cargo.toml"
//! bin = "node"
//! [matrix]
//! lto = [false, "off", "thin", "fat"]
//! codegen_units = [1, 16]
//! exclude = [{ lto = "off", codegen_units = 1 }]
//! [[benchmark]]
//! name = "run"
//! args = ["--bench"]
//! extract = { kind = "wall-time" }
//! "#;
//! let study = Study::parse("study.toml".as_ref(), text).unwrap();
//! let variants = expand(&study.matrix, &study.exclude, &study.project.profile);
//! assert_eq!(variants.len(), 7);
//! assert_eq!(variants[0].label, "lto-false/cgu1");
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod build;
pub mod challenge;
mod environment;
mod error;
pub mod extract;
pub mod measure;
pub mod profile;
pub mod race;
pub mod record;
pub mod report;
pub mod session;
mod study;
mod variant;

pub use environment::{check_environment, ensure_lock_file, installed_toolchains};
pub use error::TuneError;
pub use extract::{Extract, Reading};
pub use measure::{Executor, Job, Outcome, ProcessExecutor};
pub use race::{run_race, Contestant, Mode, RaceConfig, RaceOutcome, Replay, StopReason};
pub use record::{JobRecord, JobResult, MemoryRecorder, Recorder, StoreRecorder};
pub use study::{
    line_col, parse_duration, Baseline, Benchmark, Exclude, Invocation, Matrix, Project,
    RunSettings, Study, DEFAULT_BENCHMARK_TIMEOUT_S, EXAMPLE,
};
pub use variant::{build_plan, expand, profile_env_name, BuildPlan, Settings, Variant};

/// The first 10 hex digits of the SHA-256 of `bytes`: short, stable ids.
pub fn short_hash(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(bytes);
    digest.iter().take(5).map(|b| format!("{b:02x}")).collect()
}

/// Writes the commented example study to `path`, refusing to overwrite a file.
pub fn init(path: &std::path::Path) -> Result<(), TuneError> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|source| match source.kind() {
            std::io::ErrorKind::AlreadyExists => TuneError::Exists(path.to_path_buf()),
            _ => TuneError::Io {
                path: path.to_path_buf(),
                source,
            },
        })?;
    f.write_all(EXAMPLE.as_bytes())
        .map_err(|source| TuneError::Io {
            path: path.to_path_buf(),
            source,
        })
}
