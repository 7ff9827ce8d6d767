//! A whole bisection of a real git repository with real builds (a copy of a file per
//! revision), its nodes synthetic: each revision's artifact says how much more CPU it
//! costs, and dyno-compare's synthetic executor makes up the executions. The search,
//! the steps, the store, resuming and the report run as they do for real processes.

use dyno_bisect::record::StepKind;
use dyno_bisect::{
    bisect, Bench, BisectError, BisectEvent, BisectOptions, BisectReport, BisectSpec,
};
use dyno_build::BuildCache;
use dyno_compare::{Execution, Executor, SubjectSpec, SyntheticExecutor, WorkloadSpec};
use dyno_store::Store;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};

const GIT: &str = "git -c user.email=t@example.invalid -c user.name=Tester";

fn sh(dir: &Path, script: &str) {
    let ok = Command::new("sh")
        .args(["-c", script])
        .current_dir(dir)
        .status()
        .unwrap()
        .success();
    assert!(ok, "{script}");
}

/// A repository of `n` commits `c0..c{n-1}`, each writing its CPU factor into `level`;
/// the commits in `broken` do not build.
fn repo(dir: &Path, n: usize, culprits: &[(usize, f64)], broken: &[usize]) {
    sh(dir, "git init -q .");
    for i in 0..n {
        let level: f64 = culprits.iter().filter(|c| c.0 <= i).map(|c| c.1).product();
        std::fs::write(dir.join("level"), format!("{level}\n")).unwrap();
        std::fs::write(dir.join("n"), format!("{i}\n")).unwrap();
        if broken.contains(&i) {
            std::fs::write(dir.join("broken"), "").unwrap();
        } else {
            let _ = std::fs::remove_file(dir.join("broken"));
        }
        // Fixed dates: the same commits, so the same names (which seed the synthetic
        // executor's noise), on every run of the test.
        let date = format!("2026-01-01T00:{:02}:{:02}Z", i / 60, i % 60);
        sh(
            dir,
            &format!(
                "git add -A && GIT_AUTHOR_DATE={date} GIT_COMMITTER_DATE={date} {GIT} commit -qm 'step {i}' && git tag c{i}"
            ),
        );
    }
}

/// The synthetic executor, each revision's CPU scaled by the factor its artifact holds.
struct Levels {
    inner: SyntheticExecutor,
    executions: usize,
    /// Sets the stop flag after this many executions (Ctrl-C).
    stop_after: Option<(usize, &'static AtomicBool)>,
}

impl Executor for Levels {
    type Subject = SubjectSpec;
    type Workload = WorkloadSpec;

    fn execute(
        &mut self,
        subject: &SubjectSpec,
        workload: &WorkloadSpec,
        round: u32,
        stop: &AtomicBool,
    ) -> Execution {
        let level: f64 = std::fs::read_to_string(&subject.command[0])
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        self.inner.slowdown.insert(subject.name.clone(), level);
        self.executions += 1;
        if let Some((n, flag)) = self.stop_after {
            if self.executions >= n {
                flag.store(true, Ordering::SeqCst);
            }
        }
        self.inner.execute(subject, workload, round, stop)
    }
}

fn spec(dir: &Path, good: &str, bad: &str) -> BisectSpec {
    let text = format!(
        "primary = [\"cpu_percent\"]\n[[subject]]\nname = \"node\"\n\
         git = {{ repo = \"{}\", rev = \"HEAD\", build = [\"sh\", \"-c\", \"test ! -e broken && cp level {{out}}\"] }}\n\
         [[workload]]\nname = \"w\"\nrate = 10\nmeasure_s = 2\n",
        dir.display()
    );
    let path = dir.join("cmp.toml");
    std::fs::write(&path, &text).unwrap();
    let cfg = dyno_bisect::spec::read_file(&path).unwrap();
    let options = BisectOptions {
        good: good.into(),
        bad: bad.into(),
        all_parents: false,
        precision: None,
        step_rounds: 20,
    };
    BisectSpec::new(cfg, &path, &options).unwrap()
}

fn executor(seed: u64) -> Levels {
    let mut inner = SyntheticExecutor::new(seed);
    inner.noise = 0.02;
    Levels {
        inner,
        executions: 0,
        stop_after: None,
    }
}

#[test]
fn names_the_culprit_skips_what_does_not_build_and_resumes_after_ctrl_c() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("repo");
    std::fs::create_dir(&d).unwrap();
    repo(&d, 24, &[(15, 1.12)], &[11]);
    let spec = spec(&d, "c0", "c23");
    let cache = BuildCache::new(dir.path().join("builds"));
    let mut store = Store::open(&dir.path().join("r.db")).unwrap();
    static STOP: AtomicBool = AtomicBool::new(false);
    // Interrupted during the third step.
    let mut first = executor(1);
    first.stop_after = Some((30, &STOP));
    let mut bench = Bench {
        store: Some(&mut store),
        executor: &mut first,
        stop: &STOP,
        cache: &cache,
        tool: "dyno test".into(),
        quiet_look: false,
    };
    let e = bisect(&spec, &mut bench, false, &mut |_| {}).unwrap_err();
    assert!(matches!(e, BisectError::Interrupted(_)), "{e}");
    STOP.store(false, Ordering::SeqCst);

    let mut second = executor(1);
    let mut bench = Bench {
        store: Some(&mut store),
        executor: &mut second,
        stop: &STOP,
        cache: &cache,
        tool: "dyno test".into(),
        quiet_look: false,
    };
    let mut continued = None;
    let mut building = Vec::new();
    let stored = bisect(&spec, &mut bench, false, &mut |e| match e {
        BisectEvent::Continuing { steps, .. } => continued = Some(steps),
        BisectEvent::Building { commit, .. } => building.push(commit.to_string()),
        _ => {}
    })
    .unwrap();
    assert!(continued.is_some_and(|s| s >= 1), "{continued:?}");
    let report = BisectReport::of(&stored);
    let culprit = spec.repo.resolve("c15").unwrap();
    assert_eq!(report.culprits.len(), 1, "{}", report.text());
    assert_eq!(report.culprits[0].commit.hash, culprit);
    assert_eq!(report.culprits[0].commit.subject, "step 15");
    let broken = spec.repo.resolve("c11").unwrap();
    assert!(report.skipped.contains(&broken), "{}", report.text());
    assert!(report.tested <= 8, "{}", report.text());
    assert!(
        (report.culprits[0].change - 0.12).abs() < 0.06,
        "{}",
        report.text()
    );
    // Revisions built before the interruption come from the cache.
    assert!(!building.contains(&spec.good.commit), "{building:?}");

    // The same command once more: the stored report, nothing measured.
    let mut third = executor(1);
    let mut bench = Bench {
        store: Some(&mut store),
        executor: &mut third,
        stop: &STOP,
        cache: &cache,
        tool: "dyno test".into(),
        quiet_look: false,
    };
    let again = bisect(&spec, &mut bench, false, &mut |_| {}).unwrap();
    assert_eq!(third.executions, 0);
    let again_report = BisectReport::of(&again);
    assert_eq!(again_report.culprits.len(), 1);
    assert_eq!(again_report.culprits[0].commit, report.culprits[0].commit);
    assert!((again_report.culprits[0].change - report.culprits[0].change).abs() < 1e-9);
    let rows = |r: &BisectReport| {
        r.steps
            .iter()
            .map(|s| (s.number, s.revision.clone(), s.verdict.clone(), s.rounds))
            .collect::<Vec<_>>()
    };
    assert_eq!(rows(&again_report), rows(&report));
    assert!(again.steps.iter().any(|s| s.kind == StepKind::Done));
}

#[test]
fn two_culprits_are_named_with_their_shares_and_no_change_stops_after_confirming() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("repo");
    std::fs::create_dir(&d).unwrap();
    repo(&d, 32, &[(9, 1.07), (22, 1.07)], &[]);
    let cache = BuildCache::new(dir.path().join("builds"));
    let stop = AtomicBool::new(false);
    let mut node = executor(2);
    let mut bench = Bench {
        store: None,
        executor: &mut node,
        stop: &stop,
        cache: &cache,
        tool: "dyno test".into(),
        quiet_look: false,
    };
    let spec2 = spec(&d, "c0", "c31");
    let stored = bisect(&spec2, &mut bench, false, &mut |_| {}).unwrap();
    let report = BisectReport::of(&stored);
    let names: Vec<&str> = report
        .culprits
        .iter()
        .map(|c| c.commit.subject.as_str())
        .collect();
    assert_eq!(names, ["step 9", "step 22"], "{}", report.text());
    for c in &report.culprits {
        assert!((c.share - 0.5).abs() < 0.25, "{}", report.text());
    }

    // Between c0 and c8 nothing changed.
    let quiet = spec(&d, "c0", "c8");
    let stored = bisect(&quiet, &mut bench, false, &mut |_| {}).unwrap();
    let report = BisectReport::of(&stored);
    assert!(report.no_change.is_some(), "{}", report.text());
    assert!(
        report.text().contains("no change beyond 5.0%"),
        "{}",
        report.text()
    );
    assert_eq!(report.steps.len(), 1, "the confirmation only");
}
