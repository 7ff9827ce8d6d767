//! The cargo driver: builds variants in parallel into their own target directories,
//! records build time, binary size and hash and the toolchain's `rustc -vV`, and skips
//! variants whose inputs did not change.
//!
//! Inputs of a build = its [`BuildPlan`](crate::BuildPlan) (arguments and environment),
//! the toolchain's `rustc -vV`, and a fingerprint of the project's sources (path, size
//! and mtime of every file under the workspace root except `target/` and hidden
//! directories). The record of the last build, successful or not, is
//! `<target dir>/dyno-build.json`; a build is skipped when its inputs and the binary's
//! hash match that record.
//!
//! The data a build shares with the profile-guided one is in `artifact.rs`, the record
//! on disk in `cargo.rs`, the cargo run itself (a guarded child, stopped by Ctrl-C) in
//! the build layer (dyno-build); this module only chooses between reusing, building and
//! [`crate::pgo`], and runs the builds in parallel.

pub use crate::artifact::{BuildEvent, BuildOutcome, BuildRecord, BuildRequest};
pub use crate::cargo::{
    build_fingerprint, load_record, sha256_file, source_fingerprint, source_root,
};
pub use crate::toolchain::rustc_version;

use crate::cargo::{run_cargo, save_record};
use crate::error::TuneError;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

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
    let Some(run) = run_cargo(plan, stop)? else {
        return Ok(BuildOutcome::Interrupted);
    };
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
    let mut versions: Vec<(Option<String>, Result<String, TuneError>)> = Vec::new();
    for r in requests {
        let t = r.variant.settings.toolchain.clone();
        if !versions.iter().any(|(k, _)| *k == t) {
            let v = rustc_version(t.as_deref());
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
                    .map(|(_, v)| v.as_ref())
                    .expect("every toolchain was probed");
                let outcome = match rustc {
                    Ok(rustc) => build_one(request, rustc, sources, stop)
                        .unwrap_or_else(|e| BuildOutcome::Failed(failed(request, e.to_string()))),
                    Err(e) => BuildOutcome::Failed(failed(request, e.to_string())),
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
