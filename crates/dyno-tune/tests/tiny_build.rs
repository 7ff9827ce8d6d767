//! End to end on a real (tiny) crate: build one variant with cargo into a temp target
//! directory, reuse it when nothing changed, and race it for two rounds.

use dyno_tune::build::{build_all, source_fingerprint, BuildOutcome};
use dyno_tune::race::RaceConfig;
use dyno_tune::session::{build_requests, lineup};
use dyno_tune::{
    check_environment, run_race, JobResult, MemoryRecorder, Mode, ProcessExecutor, Study,
};
use std::sync::atomic::AtomicBool;

#[test]
fn builds_reuses_and_measures_the_tiny_crate() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = format!(
        "{}/tests/fixtures/tiny/Cargo.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = format!(
        r#"
[project]
manifest = "{manifest}"
bin = "tiny"
[matrix]
toolchain = ["stable"]
opt_level = [1]
[[benchmark]]
name = "sum"
args = ["200000"]
extract = {{ kind = "json-pointer", pointer = "/ops_per_s", metric = "ops", unit = "/s", direction = "higher" }}
"#
    );
    let path = dir.path().join("tiny.toml");
    std::fs::write(&path, text).unwrap();
    let study = Study::load(&path).unwrap();
    let root = check_environment(&study).unwrap();
    assert!(
        root.ends_with("tiny"),
        "the fixture is its own workspace: {}",
        root.display()
    );
    let requests = build_requests(&study);
    assert_eq!(requests.len(), 1);
    assert!(requests[0].plan.target_dir.starts_with(dir.path()));
    let sources = source_fingerprint(&root, &study.work_dir());
    let stop = AtomicBool::new(false);
    let first = build_all(&requests, 1, &sources, &stop, &|_| {});
    let BuildOutcome::Built(record) = &first[0] else {
        panic!("{:?}", first[0])
    };
    assert!(record.binary.is_file());
    assert_eq!(record.sha256.len(), 64);
    assert!(record.size > 0 && record.build_time_s > 0.0);
    assert!(record.rustc.contains("release: "), "{}", record.rustc);
    let again = build_all(&requests, 1, &sources, &stop, &|_| {});
    assert_eq!(again[0], BuildOutcome::Reused(record.clone()));

    let lineup = lineup(&study, &requests, &first).unwrap();
    let cfg = RaceConfig {
        max_rounds: 2,
        ..RaceConfig::from_settings(&study.run, Mode::Exhaustive)
    };
    let mut rec = MemoryRecorder::default();
    let out = run_race(
        &lineup.contestants,
        &study.benchmarks,
        cfg,
        &mut ProcessExecutor,
        &mut rec,
        &stop,
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(out.records[0].len(), 2);
    for job in &out.records[0] {
        match &job.result {
            JobResult::Ok(r) => assert!(r[0].value.is_finite() && r[0].metric.name == "ops"),
            JobResult::Failed { error, tail } => panic!("{error}: {tail}"),
        }
    }
}

#[test]
fn a_failed_build_is_reported_with_the_compilers_last_lines_and_the_rest_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = format!(
        "{}/tests/fixtures/tiny/Cargo.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = format!(
        r#"
[project]
manifest = "{manifest}"
bin = "tiny"
[matrix]
opt_level = [1]
rustflags = ["", "-C no-such-codegen-option=1"]
[[benchmark]]
name = "t"
args = []
extract = {{ kind = "wall-time" }}
"#
    );
    let path = dir.path().join("s.toml");
    std::fs::write(&path, text).unwrap();
    let study = Study::load(&path).unwrap();
    let requests = build_requests(&study);
    assert_eq!(requests.len(), 2);
    let stop = AtomicBool::new(false);
    let outcomes = build_all(&requests, 2, "fixed", &stop, &|_| {});
    assert!(
        matches!(outcomes[0], BuildOutcome::Built(_)),
        "{:?}",
        outcomes[0]
    );
    let BuildOutcome::Failed(failed) = &outcomes[1] else {
        panic!("{:?}", outcomes[1])
    };
    assert!(
        failed.error_tail.contains("no-such-codegen-option"),
        "{}",
        failed.error_tail
    );
    assert!(failed.error_tail.lines().count() <= 20);
    // Inputs unchanged: the failure is remembered, not retried.
    let again = build_all(&requests[1..], 1, "fixed", &stop, &|_| {});
    assert!(matches!(&again[0], BuildOutcome::Reused(r) if !r.ok));
    let lineup = lineup(&study, &requests, &outcomes).unwrap();
    assert_eq!(lineup.contestants.len(), 1);
    assert_eq!(lineup.failed.len(), 1);
    assert_eq!(lineup.failed[0].0.label, "o1/[-C no-such-codegen-option=1]");
}

#[test]
fn a_project_without_a_lock_file_is_not_rebuilt_by_the_next_run() {
    let dir = tempfile::tempdir().unwrap();
    // A copy of the fixture without its Cargo.lock.
    let fixture = format!("{}/tests/fixtures/tiny", env!("CARGO_MANIFEST_DIR"));
    let project = dir.path().join("tiny");
    std::fs::create_dir_all(project.join("src")).unwrap();
    for f in ["Cargo.toml", "src/main.rs"] {
        std::fs::copy(format!("{fixture}/{f}"), project.join(f)).unwrap();
    }
    let text = format!(
        r#"
[project]
manifest = "{}"
bin = "tiny"
[matrix]
opt_level = [1]
[[benchmark]]
name = "t"
args = []
extract = {{ kind = "wall-time" }}
"#,
        project.join("Cargo.toml").display()
    );
    let path = dir.path().join("s.toml");
    std::fs::write(&path, text).unwrap();
    let study = Study::load(&path).unwrap();
    let stop = AtomicBool::new(false);
    // What `dyno tune run` does: check, fingerprint the sources, build.
    let run = || {
        let root = check_environment(&study).unwrap();
        let sources = source_fingerprint(&root, &study.work_dir());
        build_all(&build_requests(&study), 1, &sources, &stop, &|_| {})
    };
    let first = run();
    assert!(project.join("Cargo.lock").is_file());
    let BuildOutcome::Built(record) = &first[0] else {
        panic!("{:?}", first[0])
    };
    // The second run sees the same sources: the lock file existed before the first
    // fingerprint, so nothing is rebuilt.
    let second = run();
    assert_eq!(second[0], BuildOutcome::Reused(record.clone()));
}

#[test]
fn init_next_to_a_project_names_its_binary_and_asks_for_a_benchmark() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = format!("{}/tests/fixtures/tiny", env!("CARGO_MANIFEST_DIR"));
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    for f in ["Cargo.toml", "src/main.rs"] {
        std::fs::copy(format!("{fixture}/{f}"), dir.path().join(f)).unwrap();
    }
    let path = dir.path().join("study.toml");
    let chosen = dyno_tune::init(&path).unwrap();
    assert_eq!(chosen, Some(("tiny".to_string(), "tiny".to_string())));
    let next = dyno_tune::init_next_steps(&path, chosen.as_ref());
    assert!(
        next.contains("binary `tiny` of package `tiny`") && next.contains("dyno tune check"),
        "{next}"
    );
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("bin = \"tiny\""), "{text}");
    assert!(!text.contains("bin = \"dyno\""), "{text}");
    // dyno's own benchmark would fail on another binary: the user writes one first, and
    // until then the study says so.
    assert!(!text.contains("\n[[benchmark]]"), "{text}");
    let err = Study::load(&path).unwrap_err().to_string();
    assert!(err.contains("[[benchmark]]"), "{err}");
    // Uncommenting the suggested benchmark is enough for a valid study of this project.
    let filled = text.replace("# [[benchmark]]", "[[benchmark]]").replace(
        "# name = \"work\"\n# args = [\"--your\", \"arguments\"]\n# extract",
        "name = \"work\"\nargs = []\nextract",
    );
    let filled = filled.replace("\n# timeout = \"10m\"", "\ntimeout = \"10m\"");
    std::fs::write(&path, filled).unwrap();
    let study = Study::load(&path).unwrap();
    assert_eq!(study.project.bin, "tiny");
    assert_eq!(study.benchmarks[0].name, "work");
}

#[test]
fn init_without_a_project_writes_the_plain_example() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("study.toml");
    assert_eq!(dyno_tune::init(&path).unwrap(), None);
    let next = dyno_tune::init_next_steps(&path, None);
    assert!(
        next.ends_with(&format!("then `dyno tune run {}`", path.display())),
        "{next}"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), dyno_tune::EXAMPLE);
}
