//! Stored comparisons re-judged give exactly the committed reports: the terminal text,
//! the Markdown, the JSON and the HTML of `dyno compare report` for comparisons of seeded
//! synthetic executions, stored in a results store and read back. A change to what a
//! report says shows up here as a diff of tests/golden/*; after checking it, write the
//! new reports with `DYNO_UPDATE_GOLDEN=1 cargo test -p dyno-judge --test golden`.

use dyno_exec::{Execution, Outcome};
use dyno_judge::judged::JudgeRequest;
use dyno_judge::record::{self, Loaded};
use dyno_judge::synthetic::Synthetic;
use dyno_judge::work::WorkUnit;
use dyno_judge::{ComparisonMeta, Sequential, TestKind, Workload};
use dyno_model::Host;
use dyno_report::TableFormat;
use dyno_store::Store;
use std::path::{Path, PathBuf};

fn host() -> Host {
    Host {
        hostname: "golden-host".into(),
        cpu_model: "Golden CPU".into(),
        ..Host::default()
    }
}

/// Stores `executions` of `meta` under `workloads` (each execution's time in the
/// comparison 30 s after the last) and loads the comparison back.
fn stored(meta: &ComparisonMeta, workloads: &[Workload], executions: &[Execution]) -> Loaded {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("r.db")).unwrap();
    let mut first = None;
    for (i, e) in executions.iter().enumerate() {
        let w = workloads.iter().find(|w| w.name == e.workload).unwrap();
        let at = Some(30.0 * (i + 1) as f64);
        let id = record::save(&mut store, meta, w, &host(), "golden", e, at).unwrap();
        first.get_or_insert(id);
    }
    record::load(&store, &[first.unwrap()]).unwrap()
}

/// The committed reports of `name`, or written anew when asked.
fn check(name: &str, loaded: &mut Loaded, request: &JudgeRequest) {
    let judged = loaded.judge_report(request, &[]).unwrap();
    let outputs = [
        (
            "txt",
            judged.summary(TableFormat::Terminal { color: false }, false),
        ),
        ("md", judged.summary(TableFormat::Markdown, true)),
        (
            "json",
            serde_json::to_string_pretty(&dyno_judge::report::verdicts_json(&judged.judgement))
                .unwrap()
                + "\n",
        ),
        ("html", judged.html()),
    ];
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let update = std::env::var_os("DYNO_UPDATE_GOLDEN").is_some();
    for (ext, text) in outputs {
        let path: PathBuf = dir.join(format!("{name}.{ext}"));
        if update {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &text).unwrap();
            continue;
        }
        let want = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (DYNO_UPDATE_GOLDEN=1 writes it)", path.display()));
        if want != text {
            let line = want
                .lines()
                .zip(text.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(want.lines().count().min(text.lines().count()));
            panic!(
                "{} differs from the report from line {}:\n  committed: {:?}\n  now:       {:?}",
                path.display(),
                line + 1,
                want.lines().nth(line).unwrap_or(""),
                text.lines().nth(line).unwrap_or("")
            );
        }
    }
}

fn two_workloads() -> Vec<Workload> {
    let mut value = Workload::new("value", 1000.0, 2.0, 20.0);
    value
        .run
        .insert("args".into(), serde_json::json!(["--rate", "{rate}"]));
    vec![value, Workload::new("script", 100.0, 0.0, 10.0)]
}

#[test]
fn a_paired_comparison_with_a_unit_of_work() {
    let workloads = two_workloads();
    let mut meta = ComparisonMeta::of(&["v1", "v2"], &workloads, 6);
    meta.seed = 4;
    meta.work.insert(
        "value".into(),
        WorkUnit {
            metric: "node:frags_total".into(),
            unit: "frag".into(),
        },
    );
    let mut node = Synthetic::new(2);
    node.slowdown.insert("v2".into(), 1.1);
    let executions = node.comparison(&["v1", "v2"], &workloads, 6);
    let mut loaded = stored(&meta, &workloads, &executions);
    check("paired", &mut loaded, &JudgeRequest::default());
}

#[test]
fn a_comparison_with_a_precision_target() {
    let workloads = vec![Workload::new("steady", 500.0, 0.0, 20.0)];
    let mut meta = ComparisonMeta::of(&["old", "new"], &workloads, 8);
    meta.test = Some(TestKind::Sequential);
    meta.sequential = Some(Sequential {
        precision: 0.05,
        max_rounds: 8,
        max_minutes: 60.0,
    });
    let mut node = Synthetic::new(9);
    node.noise = 0.01;
    node.slowdown.insert("new".into(), 1.03);
    let executions = node.comparison(&["old", "new"], &workloads, 8);
    let mut loaded = stored(&meta, &workloads, &executions);
    check("precision", &mut loaded, &JudgeRequest::default());
}

#[test]
fn three_subjects_one_failing_one_interrupted_judged_unpaired() {
    let workloads = two_workloads();
    let mut meta = ComparisonMeta::of(&["a", "b", "c"], &workloads, 4);
    meta.primary = vec!["cpu_percent".into(), "rss_bytes".into()];
    meta.test = Some(TestKind::Unpaired);
    let mut node = Synthetic::new(5);
    node.slowdown.insert("b".into(), 0.8);
    node.failing.push("c".into());
    let mut executions = node.comparison(&["a", "b", "c"], &workloads, 4);
    let mut cut = node.execution("a", "value", 1000.0, 4);
    cut.series.clear();
    cut.outcome = Outcome::Interrupted;
    executions.push(cut);
    let mut loaded = stored(&meta, &workloads, &executions);
    check("failures", &mut loaded, &JudgeRequest::default());
}

#[test]
fn a_metric_with_a_zero_round() {
    // Round 2 of the baseline and round 4 of the candidate saw no major fault at all.
    let workloads = vec![Workload::new("value", 1000.0, 0.0, 20.0)];
    let meta = ComparisonMeta::of(&["v1", "v2"], &workloads, 6);
    let mut executions = Synthetic::new(3).comparison(&["v1", "v2"], &workloads, 6);
    for e in executions
        .iter_mut()
        .filter(|e| (e.subject == "v1" && e.round == 2) || (e.subject == "v2" && e.round == 4))
    {
        for s in e
            .series
            .iter_mut()
            .filter(|s| s.metric.name == "major_faults_per_s")
        {
            s.points.iter_mut().for_each(|p| p.1 = 0.0);
        }
    }
    let mut loaded = stored(&meta, &workloads, &executions);
    check("zero-round", &mut loaded, &JudgeRequest::default());
}
