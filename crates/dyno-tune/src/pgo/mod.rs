//! Profile-guided builds: the `pgo` dimension of the matrix.
//!
//! A variant with `pgo = "on"` is built in four steps, all inside its own target directory:
//!
//! 1. an instrumented build (`-Cprofile-generate=<dir>/pgo/raw`, its own target dir);
//! 2. the training commands, run with `{bin}` = the instrumented binary;
//! 3. `llvm-profdata merge` of the raw profiles, with the `llvm-profdata` of the
//!    toolchain's own LLVM ([`find_profdata`]): another LLVM cannot read them;
//! 4. the optimised build (`-Cprofile-use=<dir>/pgo/merged.profdata`).
//!
//! `"on+bolt"` links that build with `--emit-relocs`, instruments it with `llvm-bolt`, runs
//! the training again, merges the `.fdata` files and lets `llvm-bolt` reorder the binary.
//!
//! The merged profile is kept with its SHA-256 and the key of everything it depends on
//! (the instrumented build's inputs, the sources, the training commands, the tool): a
//! re-run reuses it, a change of any of them trains again. The variant's record is written
//! only once every step succeeded, so a half-built variant is never taken for a finished
//! one; a failing training command fails its variant with its output's tail, and the
//! study goes on with the others. Builds go through `--target <host>` so `RUSTFLAGS`
//! (and with it the instrumentation) reach neither build scripts nor proc macros.

use crate::artifact::{BuildOutcome, BuildRecord, BuildRequest};
use crate::cargo::{build_fingerprint, load_record, run_cargo, save_record, sha256_file};
use crate::error::TuneError;
use crate::profile::Pgo;
use crate::variant::BuildPlan;
use dyno_proc::{GuardedChild, Signal, SpawnOptions};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

mod recipe;
pub use crate::artifact::{PgoJob, PgoRecord};
pub use crate::toolchain::{
    choose_profdata, find_bolt, find_profdata, host_triple, llvm_version, tool_llvm_version,
};
pub use recipe::recipe;

/// The stored profile of a variant: `<target dir>/pgo/profile.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct StoredProfile {
    key: String,
    sha256: String,
    instrumented_build_s: f64,
    training_s: f64,
}

/// The build `base` with `--target <host>`, its own target directory and extra RUSTFLAGS.
pub fn pgo_plan(base: &BuildPlan, host: &str, target_dir: &Path, extra_flags: &str) -> BuildPlan {
    let mut plan = base.clone();
    if let Some(i) = plan.args.iter().position(|a| a == "--target-dir") {
        plan.args[i + 1] = target_dir.display().to_string();
    }
    plan.args.extend(["--target".to_string(), host.to_string()]);
    for (k, v) in plan.env.iter_mut() {
        if k == "RUSTFLAGS" {
            *v = [v.trim(), extra_flags]
                .iter()
                .filter(|s| !s.is_empty())
                .copied()
                .collect::<Vec<_>>()
                .join(" ");
        }
    }
    let rel = base
        .binary
        .strip_prefix(&base.target_dir)
        .unwrap_or(&base.binary)
        .to_path_buf();
    plan.binary = target_dir.join(host).join(rel);
    plan.target_dir = target_dir.to_path_buf();
    plan
}

/// Where a variant's PGO files live.
pub struct PgoDirs {
    /// `<target>/pgo`.
    pub root: PathBuf,
    /// Target directory of the instrumented build.
    pub instrumented: PathBuf,
    /// Raw profiles written by the training.
    pub raw: PathBuf,
    /// The merged profile.
    pub profile: PathBuf,
    /// BOLT's profiles.
    pub bolt: PathBuf,
}

impl PgoDirs {
    /// The directories of the variant built by `plan`.
    pub fn of(plan: &BuildPlan) -> PgoDirs {
        let root = plan.target_dir.join("pgo");
        PgoDirs {
            instrumented: root.join("instrumented"),
            raw: root.join("raw"),
            profile: root.join("merged.profdata"),
            bolt: root.join("bolt"),
            root,
        }
    }
}

/// The RUSTFLAGS added to the final build: the profile, and for BOLT the relocations it
/// needs to move code.
pub fn final_flags(profile: &Path, mode: Pgo) -> String {
    let mut f = format!("-Cprofile-use={}", profile.display());
    if mode == Pgo::OnBolt {
        f.push_str(" -Clink-arg=-Wl,--emit-relocs");
    }
    f
}

/// BOLT's optimisation options (those cargo-pgo and LLVM's own BOLT guide use).
pub const BOLT_OPTIONS: &[&str] = &[
    "-reorder-blocks=ext-tsp",
    "-reorder-functions=cdsort",
    "-split-functions",
    "-split-all-cold",
    "-icf=1",
    "-use-gnu-stack",
];

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> TuneError + '_ {
    move |source| TuneError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn fresh_dir(dir: &Path) -> Result<(), TuneError> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(io_err(dir))?;
    }
    std::fs::create_dir_all(dir).map_err(io_err(dir))
}

/// Why a step failed (becomes the variant's error tail) or that Ctrl-C arrived.
enum StepError {
    Failed(String),
    Interrupted,
    Tune(TuneError),
}

impl From<TuneError> for StepError {
    fn from(e: TuneError) -> Self {
        StepError::Tune(e)
    }
}

/// Runs one command line to completion (killed after `timeout`), output to `log`;
/// returns the seconds it took or why it failed with its output's last lines.
fn run_logged(
    line: &[String],
    env: &[(&str, String)],
    log: &Path,
    timeout: Duration,
) -> Result<f64, StepError> {
    let (program, args) = line
        .split_first()
        .ok_or_else(|| StepError::Failed("empty command line".into()))?;
    // Truncated here; the child's output lines are then appended to it.
    std::fs::File::create(log).map_err(io_err(log))?;
    let opts = SpawnOptions {
        // Past the timeout the command is killed outright with its whole group (a
        // training script's children included).
        stop_signal: Signal::Kill,
        log_file: Some(log.to_path_buf()),
        ..SpawnOptions::default()
    };
    let mut cmd = Command::new(program);
    cmd.args(args).envs(env.iter().map(|(k, v)| (k, v)));
    let started = Instant::now();
    let mut child = GuardedChild::spawn(cmd, &opts)
        .map_err(|e| StepError::Failed(format!("cannot start `{}`: {e}", line.join(" "))))?;
    let (seconds, timed_out) = crate::measure::wait_for_exit(&mut child, started, timeout);
    let stopped = child.stop(Duration::ZERO);
    let status = if timed_out { None } else { stopped.status };
    let output = stopped.last_lines.join("\n");
    match status {
        Some(s) if s.success() => Ok(seconds),
        Some(s) => Err(StepError::Failed(format!(
            "`{}` failed ({s}); its last lines:\n{output}",
            line.join(" ")
        ))),
        None => Err(StepError::Failed(format!(
            "`{}` ran past {:.0} s and was killed; its last lines:\n{output}",
            line.join(" "),
            timeout.as_secs_f64()
        ))),
    }
}

fn training_lines(job: &PgoJob, binary: &Path) -> Vec<Vec<String>> {
    let bin = binary.display().to_string();
    job.training
        .iter()
        .map(|l| l.iter().map(|a| a.replace("{bin}", &bin)).collect())
        .collect()
}

/// Runs every training command against `binary`; seconds in total.
fn train(
    job: &PgoJob,
    binary: &Path,
    env: &[(&str, String)],
    log: &Path,
    stop: &AtomicBool,
) -> Result<f64, StepError> {
    let mut total = 0.0;
    for line in training_lines(job, binary) {
        if stop.load(Ordering::SeqCst) {
            return Err(StepError::Interrupted);
        }
        total += run_logged(&line, env, log, Duration::from_secs_f64(job.timeout_s))?;
    }
    Ok(total)
}

fn files_with_extension(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    v.sort();
    v
}

/// The key of everything a variant's profile depends on.
pub fn profile_key(
    instrumented: &BuildPlan,
    rustc: &str,
    sources: &str,
    job: &PgoJob,
    profdata: &Path,
) -> String {
    let key = serde_json::json!({
        "build": build_fingerprint(instrumented, rustc, sources),
        "training": job.training,
        "profdata": profdata,
    });
    crate::short_hash(key.to_string().as_bytes())
}

fn load_profile(dirs: &PgoDirs) -> Option<StoredProfile> {
    let text = std::fs::read_to_string(dirs.root.join("profile.json")).ok()?;
    serde_json::from_str(&text).ok()
}

/// The merged profile for `key`: the stored one when its key and hash still match, else
/// instrumented build + training + merge. Its record is written last, after the profile.
fn profile(
    instrumented: &BuildPlan,
    job: &PgoJob,
    key: &str,
    dirs: &PgoDirs,
    profdata: &Path,
    stop: &AtomicBool,
) -> Result<(StoredProfile, bool), StepError> {
    if let Some(p) = load_profile(dirs) {
        if p.key == key && sha256_file(&dirs.profile).is_ok_and(|sha| sha == p.sha256) {
            return Ok((p, true));
        }
    }
    let record = dirs.root.join("profile.json");
    if record.exists() {
        std::fs::remove_file(&record).map_err(io_err(&record))?;
    }
    let cargo = cargo_step(instrumented, "instrumented build", stop)?;
    fresh_dir(&dirs.raw)?;
    let raw = dirs.raw.join("%m_%p.profraw").display().to_string();
    let log = dirs.root.join("training.log");
    let training_s = train(
        job,
        &instrumented.binary,
        &[("LLVM_PROFILE_FILE", raw)],
        &log,
        stop,
    )?;
    let profiles = files_with_extension(&dirs.raw, "profraw");
    if profiles.is_empty() {
        return Err(StepError::Failed(format!(
            "the training wrote no profile into {} (did the commands run {{bin}}?)",
            dirs.raw.display()
        )));
    }
    let tmp = dirs.profile.with_extension("profdata.tmp");
    let mut merge = vec![
        profdata.display().to_string(),
        "merge".into(),
        "-o".into(),
        tmp.display().to_string(),
    ];
    merge.extend(profiles.iter().map(|p| p.display().to_string()));
    let merge_s = run_logged(
        &merge,
        &[],
        &dirs.root.join("merge.log"),
        Duration::from_secs(600),
    )?;
    std::fs::rename(&tmp, &dirs.profile).map_err(io_err(&dirs.profile))?;
    let stored = StoredProfile {
        key: key.to_string(),
        sha256: sha256_file(&dirs.profile)?,
        instrumented_build_s: cargo.seconds,
        training_s: training_s + merge_s,
    };
    let text = serde_json::to_string_pretty(&stored).expect("serializable");
    std::fs::write(&record, text).map_err(io_err(&record))?;
    Ok((stored, false))
}

/// BOLT on the linked `binary`: instrument, train, merge, optimise into `<binary>-bolt`.
fn bolt(
    binary: &Path,
    job: &PgoJob,
    dirs: &PgoDirs,
    tools: &(PathBuf, PathBuf),
    stop: &AtomicBool,
) -> Result<(PathBuf, f64), StepError> {
    let started = Instant::now();
    fresh_dir(&dirs.bolt)?;
    let log = dirs.bolt.join("bolt.log");
    let s = |p: &Path| p.display().to_string();
    let instrumented = dirs.bolt.join("instrumented");
    let ten_min = Duration::from_secs(600);
    run_logged(
        &[
            s(&tools.0),
            s(binary),
            "-instrument".into(),
            format!("--instrumentation-file={}", s(&dirs.bolt.join("prof"))),
            "--instrumentation-file-append-pid".into(),
            "-o".into(),
            s(&instrumented),
        ],
        &[],
        &log,
        ten_min,
    )?;
    train(
        job,
        &instrumented,
        &[],
        &dirs.bolt.join("training.log"),
        stop,
    )?;
    let fdata = files_with_extension(&dirs.bolt, "fdata");
    if fdata.is_empty() {
        return Err(StepError::Failed(
            "BOLT's training wrote no .fdata profile".into(),
        ));
    }
    let merged = dirs.bolt.join("merged.fdata");
    let mut merge = vec![s(&tools.1), "-o".into(), s(&merged)];
    merge.extend(fdata.iter().map(|p| s(p)));
    run_logged(&merge, &[], &dirs.bolt.join("merge.log"), ten_min)?;
    let out = binary.with_file_name(format!(
        "{}-bolt",
        binary.file_name().unwrap_or_default().to_string_lossy()
    ));
    let tmp = out.with_extension("tmp");
    let mut optimise = vec![
        s(&tools.0),
        s(binary),
        "-o".into(),
        s(&tmp),
        format!("-data={}", s(&merged)),
    ];
    optimise.extend(BOLT_OPTIONS.iter().map(|o| o.to_string()));
    run_logged(&optimise, &[], &log, ten_min)?;
    std::fs::rename(&tmp, &out).map_err(io_err(&out))?;
    Ok((out, started.elapsed().as_secs_f64()))
}

/// One cargo build of a PGO step; a failure names the step (`what`) with cargo's tail.
fn cargo_step(
    plan: &BuildPlan,
    what: &str,
    stop: &AtomicBool,
) -> Result<crate::cargo::CargoRun, StepError> {
    let Some(cargo) = run_cargo(plan, stop)? else {
        return Err(StepError::Interrupted);
    };
    if stop.load(Ordering::SeqCst) {
        return Err(StepError::Interrupted);
    }
    if !cargo.ok {
        return Err(StepError::Failed(format!("{what} failed:\n{}", cargo.tail)));
    }
    Ok(cargo)
}

/// Everything the steps of one PGO build need, fixed before the first one runs.
struct PgoBuild<'a> {
    job: &'a PgoJob,
    dirs: PgoDirs,
    /// The instrumented build.
    instrumented: BuildPlan,
    /// The build with the merged profile.
    final_plan: BuildPlan,
    /// Key of the profile's inputs.
    key: String,
    profdata: PathBuf,
    /// `llvm-bolt` and its `merge-fdata`, for `on+bolt`.
    bolt_tools: Option<(PathBuf, PathBuf)>,
}

impl PgoBuild<'_> {
    /// Trains (or reuses the profile), builds with the profile and, for `on+bolt`,
    /// optimises the binary with BOLT: the binary and what the steps took.
    fn run(&self, stop: &AtomicBool) -> Result<(PathBuf, PgoRecord), StepError> {
        let (job, dirs) = (self.job, &self.dirs);
        let (stored, _reused) = profile(
            &self.instrumented,
            job,
            &self.key,
            dirs,
            &self.profdata,
            stop,
        )?;
        let cargo = cargo_step(&self.final_plan, "build with the profile", stop)?;
        let (binary, bolt_s) = match &self.bolt_tools {
            Some(t) => bolt(&self.final_plan.binary, job, dirs, t, stop)?,
            None => (self.final_plan.binary.clone(), 0.0),
        };
        Ok((
            binary,
            PgoRecord {
                mode: job.mode.value().to_string(),
                profile_sha256: stored.sha256,
                profile: dirs.profile.clone(),
                profile_key: self.key.clone(),
                instrumented_build_s: stored.instrumented_build_s,
                training_s: stored.training_s,
                final_build_s: cargo.seconds,
                bolt_s,
                training: job.training.clone(),
                same_input: job.same_input,
                profdata: self.profdata.clone(),
                bolt: self.bolt_tools.as_ref().map(|t| t.0.clone()),
            },
        ))
    }
}

/// The `llvm-profdata` of the toolchain's LLVM and, for `on+bolt`, `llvm-bolt` with its
/// `merge-fdata`.
type PgoTools = (PathBuf, Option<(PathBuf, PathBuf)>);

fn pgo_tools(job: &PgoJob, toolchain: Option<&str>, rustc: &str) -> Result<PgoTools, TuneError> {
    let profdata = find_profdata(toolchain, rustc)?;
    let bolt = match job.mode {
        Pgo::OnBolt => Some(find_bolt(toolchain, rustc)?),
        _ => None,
    };
    Ok((profdata, bolt))
}

/// The variant's last record, when it is still what these inputs would build: the same
/// fingerprint, a successful build, its binary unchanged and its profile the stored one.
fn reusable(base: &BuildPlan, dirs: &PgoDirs, key: &str, fingerprint: &str) -> Option<BuildRecord> {
    let old = load_record(base)?;
    let profile_same = old.pgo.as_ref().is_some_and(|p| {
        load_profile(dirs).is_some_and(|s| s.key == key && s.sha256 == p.profile_sha256)
    });
    let same_binary = sha256_file(&old.binary).is_ok_and(|sha| sha == old.sha256);
    // A failure is tried again (unlike a failed cargo build): a training command can
    // fail for reasons outside the inputs fingerprinted here (a missing data file).
    (old.fingerprint == fingerprint && old.ok && same_binary && profile_same).then_some(old)
}

/// Builds (or reuses) one PGO variant: see the module documentation.
pub fn build_pgo(
    request: &BuildRequest,
    job: &PgoJob,
    rustc: &str,
    sources: &str,
    stop: &AtomicBool,
) -> Result<BuildOutcome, TuneError> {
    let base = &request.plan;
    let mut record = BuildRecord {
        variant: request.variant.id.clone(),
        fingerprint: String::new(),
        ok: false,
        binary: base.binary.clone(),
        sha256: String::new(),
        size: 0,
        build_time_s: 0.0,
        rustc: rustc.to_string(),
        error_tail: String::new(),
        pgo: None,
    };
    let (profdata, bolt_tools) =
        match pgo_tools(job, request.variant.settings.toolchain.as_deref(), rustc) {
            Ok(t) => t,
            Err(e) => {
                record.error_tail = e.to_string();
                return Ok(BuildOutcome::Failed(record));
            }
        };
    let host = host_triple(rustc).unwrap_or_default();
    let dirs = PgoDirs::of(base);
    let instrumented = pgo_plan(
        base,
        &host,
        &dirs.instrumented,
        &format!("-Cprofile-generate={}", dirs.raw.display()),
    );
    let key = profile_key(&instrumented, rustc, sources, job, &profdata);
    let final_plan = pgo_plan(
        base,
        &host,
        &base.target_dir,
        &final_flags(&dirs.profile, job.mode),
    );
    record.fingerprint = crate::short_hash(
        serde_json::json!({
            "build": build_fingerprint(&final_plan, rustc, sources),
            "profile": key,
            "mode": job.mode.value(),
            "bolt": bolt_tools,
        })
        .to_string()
        .as_bytes(),
    );
    if let Some(old) = reusable(base, &dirs, &key, &record.fingerprint) {
        return Ok(BuildOutcome::Reused(old));
    }
    if stop.load(Ordering::SeqCst) {
        return Ok(BuildOutcome::Interrupted);
    }
    // The record of an earlier build goes first: from here until the new record is saved
    // the variant has no usable binary on disk, whatever happens.
    let record_file = crate::cargo::record_path(base);
    if record_file.exists() {
        std::fs::remove_file(&record_file).map_err(io_err(&record_file))?;
    }
    let steps = PgoBuild {
        job,
        dirs,
        instrumented,
        final_plan,
        key,
        profdata,
        bolt_tools,
    }
    .run(stop);
    finish(base, record, steps, stop)
}

/// The outcome of a PGO build's steps, recorded: the optimised binary's hash and size and
/// the steps' times, or the failing step's message (nothing for Ctrl-C).
fn finish(
    base: &BuildPlan,
    mut record: BuildRecord,
    steps: Result<(PathBuf, PgoRecord), StepError>,
    stop: &AtomicBool,
) -> Result<BuildOutcome, TuneError> {
    match steps {
        Ok((binary, pgo)) => {
            record.sha256 = sha256_file(&binary)?;
            record.size = std::fs::metadata(&binary).map_err(io_err(&binary))?.len();
            record.build_time_s =
                pgo.instrumented_build_s + pgo.training_s + pgo.final_build_s + pgo.bolt_s;
            record.binary = binary;
            record.ok = true;
            record.pgo = Some(Box::new(pgo));
            save_record(base, &record)?;
            Ok(BuildOutcome::Built(record))
        }
        // Ctrl-C reaches a training command too, which then fails: that is an interruption,
        // not a failure of the variant, and nothing is recorded.
        Err(StepError::Interrupted) => Ok(BuildOutcome::Interrupted),
        Err(StepError::Failed(_)) if stop.load(Ordering::SeqCst) => Ok(BuildOutcome::Interrupted),
        Err(StepError::Tune(e)) => Err(e),
        Err(StepError::Failed(why)) => {
            record.error_tail = why;
            save_record(base, &record)?;
            Ok(BuildOutcome::Failed(record))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pgo_plans_add_the_target_their_dir_and_flags() {
        let base = BuildPlan {
            program: "cargo".into(),
            args: vec![
                "build".into(),
                "--bin".into(),
                "node".into(),
                "--target-dir".into(),
                "/w/target/abc".into(),
            ],
            env: vec![("RUSTFLAGS".into(), "-C target-cpu=native".into())],
            env_remove: vec![],
            target_dir: "/w/target/abc".into(),
            binary: "/w/target/abc/production/node".into(),
        };
        let p = pgo_plan(
            &base,
            "x86_64-unknown-linux-gnu",
            Path::new("/w/target/abc/pgo/instrumented"),
            "-Cprofile-generate=/raw",
        );
        assert_eq!(
            p.args[3..],
            [
                "--target-dir",
                "/w/target/abc/pgo/instrumented",
                "--target",
                "x86_64-unknown-linux-gnu"
            ]
        );
        assert_eq!(p.env[0].1, "-C target-cpu=native -Cprofile-generate=/raw");
        assert_eq!(
            p.binary,
            PathBuf::from(
                "/w/target/abc/pgo/instrumented/x86_64-unknown-linux-gnu/production/node"
            )
        );
        assert_eq!(
            final_flags(Path::new("/p.profdata"), Pgo::OnBolt),
            "-Cprofile-use=/p.profdata -Clink-arg=-Wl,--emit-relocs"
        );
    }
}
