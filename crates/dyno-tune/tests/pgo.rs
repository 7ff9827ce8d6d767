//! Profile-guided variants of the tiny crate, end to end: instrumented build, training,
//! merge, optimised build; the profile reused on a re-run and trained again when the
//! training command or the sources change; a failing training command fails its variant
//! (with its output) and leaves nothing usable behind. Needs the llvm-profdata of the
//! stable toolchain's LLVM; without it the tests print a note and pass.

use dyno_tune::build::{build_all, source_fingerprint, BuildOutcome, BuildRecord};
use dyno_tune::session::{build_requests, lineup};
use dyno_tune::{check_environment, Study};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

/// A copy of the tiny fixture, so its sources can change.
fn project(dir: &Path) -> PathBuf {
    let fixture = format!("{}/tests/fixtures/tiny", env!("CARGO_MANIFEST_DIR"));
    let project = dir.join("tiny");
    std::fs::create_dir_all(project.join("src")).unwrap();
    for f in ["Cargo.toml", "Cargo.lock", "src/main.rs"] {
        std::fs::copy(format!("{fixture}/{f}"), project.join(f)).unwrap();
    }
    project
}

fn study(dir: &Path, project: &Path, training: &str) -> Study {
    let text = format!(
        r#"
[project]
manifest = "{}"
bin = "tiny"
[matrix]
toolchain = ["stable"]
pgo = ["on"]
[pgo]
{training}
[[benchmark]]
name = "sum"
args = ["300000"]
extract = {{ kind = "json-pointer", pointer = "/ops_per_s", metric = "ops", unit = "/s", direction = "higher" }}
"#,
        project.join("Cargo.toml").display()
    );
    let path = dir.join("pgo.toml");
    std::fs::write(&path, text).unwrap();
    Study::load(&path).unwrap()
}

/// `None` (after a note) when this machine cannot build PGO variants.
fn tools_or_skip() -> Option<()> {
    let rustc = dyno_tune::build::rustc_version(Some("stable")).ok()?;
    match dyno_tune::pgo::find_profdata(Some("stable"), &rustc) {
        Ok(_) => Some(()),
        Err(e) => {
            println!("note: PGO end-to-end test skipped: {e}");
            None
        }
    }
}

fn build(study: &Study) -> BuildOutcome {
    let root = check_environment(study).unwrap();
    let sources = source_fingerprint(&root, &study.work_dir());
    let stop = AtomicBool::new(false);
    build_all(&build_requests(study), 1, &sources, &stop, &|_| {}).remove(0)
}

fn built(o: &BuildOutcome) -> &BuildRecord {
    match o {
        BuildOutcome::Built(r) => r,
        other => panic!("expected a build: {other:?}"),
    }
}

#[test]
fn a_pgo_variant_is_trained_once_reused_and_retrained_when_its_inputs_change() {
    if tools_or_skip().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let project = project(dir.path());
    let s = study(dir.path(), &project, r#"training = [["{bin}", "20000"]]"#);
    let first = build(&s);
    let r = built(&first);
    let pgo = r.pgo.as_deref().expect("a PGO record");
    assert_eq!(pgo.mode, "on");
    assert!(
        !pgo.same_input,
        "training 20000 differs from the measured 300000"
    );
    assert_eq!(pgo.profile_sha256.len(), 64);
    assert!(pgo.profile.is_file());
    assert!(pgo.instrumented_build_s > 0.0 && pgo.final_build_s > 0.0);
    let total = pgo.instrumented_build_s + pgo.training_s + pgo.final_build_s;
    assert!(
        (r.build_time_s - total).abs() < 1e-9,
        "build time = all steps"
    );
    assert!(r.binary.to_string_lossy().contains("x86_64") || r.binary.is_file());
    let out = std::process::Command::new(&r.binary)
        .arg("1000")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("ops_per_s"));

    // Nothing changed: the variant (and its profile) are reused.
    // (Compared field by field: a build time read back from JSON may differ in its last bit.)
    let BuildOutcome::Reused(again) = build(&s) else {
        panic!("expected a reuse")
    };
    let kept = again.pgo.as_deref().unwrap();
    assert_eq!(
        (
            &again.sha256,
            &again.fingerprint,
            &kept.profile_key,
            &kept.profile_sha256
        ),
        (
            &r.sha256,
            &r.fingerprint,
            &pgo.profile_key,
            &pgo.profile_sha256
        )
    );

    // A changed training command trains again.
    let s2 = study(dir.path(), &project, r#"training = [["{bin}", "30000"]]"#);
    let second = build(&s2);
    let r2 = built(&second).clone();
    let p2 = r2.pgo.as_deref().unwrap();
    assert_ne!(p2.profile_key, pgo.profile_key);
    assert_eq!(p2.training, vec![vec!["{bin}".to_string(), "30000".into()]]);

    // A changed source trains again too.
    let main = project.join("src/main.rs");
    let text = std::fs::read_to_string(&main).unwrap();
    std::fs::write(&main, format!("{text}\n// changed\n")).unwrap();
    let third = build(&s2);
    let p3 = built(&third).pgo.as_deref().unwrap().clone();
    assert_ne!(p3.profile_key, p2.profile_key);

    // Training on the benchmark itself (no [pgo] training) is said so.
    let own = study(dir.path(), &project, "");
    let fourth = build(&own);
    assert!(built(&fourth).pgo.as_deref().unwrap().same_input);
}

#[test]
fn a_failing_training_command_fails_its_variant_with_its_output() {
    if tools_or_skip().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let project = project(dir.path());
    let s = study(
        dir.path(),
        &project,
        r#"training = [["sh", "-c", "echo training input missing >&2; exit 3", "{bin}"]]"#,
    );
    let outcome = build(&s);
    let BuildOutcome::Failed(r) = &outcome else {
        panic!("{outcome:?}")
    };
    assert!(!r.ok && r.sha256.is_empty());
    assert!(
        r.error_tail.contains("training input missing"),
        "{}",
        r.error_tail
    );
    assert!(r.error_tail.contains("exit status: 3"), "{}", r.error_tail);
    let requests = build_requests(&s);
    let l = lineup(&s, &requests, std::slice::from_ref(&outcome)).unwrap();
    assert!(
        l.contestants.is_empty(),
        "no half-built variant in the race"
    );
    assert_eq!(l.failed.len(), 1);
    // No profile was stored for it, so nothing can be reused by mistake.
    assert!(!dyno_tune::pgo::PgoDirs::of(&requests[0].plan)
        .root
        .join("profile.json")
        .exists());
}

#[test]
fn bolt_reorders_the_profile_guided_binary_when_llvm_bolt_is_installed() {
    if tools_or_skip().is_none() {
        return;
    }
    let rustc = dyno_tune::build::rustc_version(Some("stable")).unwrap();
    if let Err(e) = dyno_tune::pgo::find_bolt(Some("stable"), &rustc) {
        println!("note: BOLT end-to-end test skipped: {e}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let project = project(dir.path());
    let s = study(dir.path(), &project, r#"training = [["{bin}", "20000"]]"#);
    let text = std::fs::read_to_string(&s.path)
        .unwrap()
        .replace("pgo = [\"on\"]", "pgo = [\"on+bolt\"]");
    std::fs::write(&s.path, text).unwrap();
    let s = Study::load(&s.path).unwrap();
    let outcome = build(&s);
    let r = built(&outcome);
    let pgo = r.pgo.as_deref().unwrap();
    assert_eq!(pgo.mode, "on+bolt");
    assert!(pgo.bolt.is_some() && pgo.bolt_s > 0.0);
    assert!(
        r.binary.to_string_lossy().ends_with("tiny-bolt"),
        "{}",
        r.binary.display()
    );
    let total = pgo.instrumented_build_s + pgo.training_s + pgo.final_build_s + pgo.bolt_s;
    assert!((r.build_time_s - total).abs() < 1e-9);
    let out = std::process::Command::new(&r.binary)
        .arg("1000")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("ops_per_s"));
}
