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
//!    and near-Pareto sets and a ready-to-paste profile (for a profile-guided winner,
//!    [`pgo`], the whole recipe), also as versioned JSON ([`report_json`]), and the CPU
//!    features a `target-cpu` build assumes ([`portability`]).
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

mod artifact;
pub mod build;
mod cargo;
pub mod challenge;
mod environment;
mod error;
pub mod extract;
pub mod measure;
pub mod pgo;
pub mod portability;
pub mod profile;
pub mod race;
pub mod record;
pub mod report;
pub mod report_cpu;
pub mod report_json;
pub mod session;
mod settings;
mod study;
mod study_toml;
mod toolchain;
mod training;
mod variant;

pub use environment::{check_environment, ensure_lock_file, installed_toolchains};
pub use error::TuneError;
pub use extract::{Extract, Reading};
pub use measure::{Executor, Job, Outcome, ProcessExecutor};
pub use race::{run_race, Contestant, Mode, RaceConfig, RaceOutcome, Replay, StopReason};
pub use record::{JobRecord, JobResult, MemoryRecorder, Recorder, StoreRecorder};
pub use study::{
    line_col, parse_duration, Baseline, Benchmark, Exclude, Invocation, Matrix, PgoSettings,
    Project, RunSettings, Study, DEFAULT_BENCHMARK_TIMEOUT_S, EXAMPLE, MAX_JOBS, MAX_ROUNDS,
};
pub use variant::{build_plan, expand, profile_env_name, BuildPlan, Settings, Variant};

/// The first 10 hex digits of the SHA-256 of `bytes`: short, stable ids (the build
/// layer's, so variant ids and build records stay what they were).
pub use dyno_build::short_hash;

/// The example study for a file at `path`. When the directory holds a Cargo project with
/// binaries other than dyno, `[project]` names its first binary (its package too in a
/// workspace of several packages) and the dyno benchmark is replaced by a commented one to
/// fill in; returns the text and the `(package, binary)` chosen.
pub fn example_for(path: &std::path::Path) -> (String, Option<(String, String)>) {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    let manifest = dir.join("Cargo.toml");
    let found = match manifest
        .is_file()
        .then(|| environment::project_bins(&manifest))
    {
        Some(Ok(p)) => p,
        _ => return (EXAMPLE.to_string(), None),
    };
    let Some((package, bin)) = found.bins.first().cloned() else {
        return (EXAMPLE.to_string(), None);
    };
    if found.bins.iter().any(|(_, b)| b == "dyno") {
        return (EXAMPLE.to_string(), None);
    }
    let others: Vec<&str> = found.bins[1..].iter().map(|(_, b)| b.as_str()).collect();
    let bin_line = format!("{:<31}# --bin", format!("bin = {bin:?}"));
    let bin_line = if others.is_empty() {
        bin_line
    } else {
        format!("{bin_line}; the others: {}", others.join(", "))
    };
    let mut text = EXAMPLE.replacen("bin = \"dyno\"                   # --bin", &bin_line, 1);
    if found.packages.len() > 1 {
        text = text.replacen(
            "# package = \"my-node\"          # -p, when the manifest is a workspace",
            &format!("{:<31}# -p", format!("package = {package:?}")),
            1,
        );
    }
    if let (Some(start), Some(end)) = (text.find("[[benchmark]]\n"), text.find("\n[run]")) {
        let benchmark = format!(
            "# EDIT: at least one benchmark. Give the arguments of a run of `{bin}` that does\n\
             # representative work and exits, and how to read its figures (or its wall time):\n\
             # [[benchmark]]\n\
             # name = \"work\"\n\
             # args = [\"--your\", \"arguments\"]\n\
             # extract = {{ kind = \"wall-time\", metric = \"wall_time\" }}\n\
             # timeout = \"10m\"\n"
        );
        text.replace_range(start..end, &benchmark);
    }
    (text, Some((package, bin)))
}

/// Writes the example study ([`example_for`]) to `path`, refusing to overwrite a file;
/// returns the `(package, binary)` it filled in, if any.
pub fn init(path: &std::path::Path) -> Result<Option<(String, String)>, TuneError> {
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
    let (text, chosen) = example_for(path);
    f.write_all(text.as_bytes())
        .map_err(|source| TuneError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    Ok(chosen)
}

/// What to do after [`init`] wrote `path`: with a binary filled in (`chosen`, as `init`
/// returns it), write its benchmark and edit the matrix, check, then run; without one,
/// edit the project and the matrix, then run.
pub fn init_next_steps(path: &std::path::Path, chosen: Option<&(String, String)>) -> String {
    let path = path.display();
    match chosen {
        Some((package, bin)) => format!(
            "wrote {path}: set up for binary `{bin}` of package `{package}` (the Cargo.toml \
             next to it); write its [[benchmark]] and edit [matrix], then `dyno tune \
             check {path}` and `dyno tune run {path}`"
        ),
        None => format!("wrote {path}: edit [project] and [matrix], then `dyno tune run {path}`"),
    }
}
