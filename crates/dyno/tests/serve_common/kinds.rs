//! Runs of every kind planted in a store as their commands store them: two comparisons of
//! the same subjects (dyno-compare's own synthetic executor and record, so `dyno serve`
//! judges them as `dyno compare` would; the second candidate 30% hungrier for CPU, a
//! change point in its history), a `pipeline bench` run with its diagnosis, the three
//! variants of a `tune` study (one eliminated) and a `cluster run` with a fault.

use dyno_compare::executor::Executor;
use dyno_compare::{resume, ComparisonFile, SyntheticExecutor};
use dyno_judge::record;
use dyno_model::{Direction, Host, Metric, RunInfo, RunStatus, Sample, Subject, SubjectKind, Unit};
use dyno_store::{RunId, Store};
use serde_json::json;
use std::path::Path;
use std::sync::atomic::AtomicBool;

/// The host every planted run ran on.
pub const HOST: &str = "bench-07";

fn host() -> Host {
    Host {
        hostname: HOST.into(),
        cpu_model: "Test CPU".into(),
        ..Host::default()
    }
}

fn info(command: &str, subject: Subject, t: f64, settings: serde_json::Value) -> RunInfo {
    RunInfo {
        command: command.into(),
        subject,
        host: host(),
        started_at: t,
        command_line: vec!["dyno".into(), command.into()],
        tool_version: "test".into(),
        settings,
    }
}

/// One comparison of `v1` against `v2`, 12 rounds, `v2`'s CPU scaled by `v2_cpu`; its
/// executions start at `t0`. Returns its id.
pub fn comparison(store: &mut Store, dir: &Path, id: &str, t0: f64, v2_cpu: f64) -> String {
    let text = "rounds = 12\nseed = 5\n\n\
        [[subject]]\nname = \"v1\"\ncommand = [\"true\"]\n\n\
        [[subject]]\nname = \"v2\"\ncommand = [\"true\"]\n\n\
        [[workload]]\nname = \"value\"\nrate = 100\nwarmup_s = 0\nmeasure_s = 2\n";
    let path = dir.join(format!("{id}.toml"));
    std::fs::write(&path, text).unwrap();
    let cfg = ComparisonFile::parse(text, &path).unwrap();
    let mut meta = resume::new_meta(&cfg);
    meta.id = id.to_string();
    let mut exec = SyntheticExecutor::new(11);
    exec.noise = 0.01;
    exec.slowdown.insert("v2".into(), v2_cpu);
    let stop = AtomicBool::new(false);
    let workload = &cfg.workloads[0];
    let stored = workload.stored();
    let mut k = 0.0;
    for round in 0..cfg.rounds {
        for subject in &cfg.subjects {
            let mut e = exec.execute(subject, workload, round, &stop);
            e.started_at = t0 + k;
            k += 10.0;
            record::save(store, &meta, &stored, &host(), "test", &e, None).unwrap();
        }
    }
    meta.id
}

/// A `pipeline bench` run: ten seconds of TPS, latencies and the diagnosis.
pub fn pipeline_bench(store: &mut Store, t: f64) -> RunId {
    let subject = Subject::new(SubjectKind::Layout, "leader:bench")
        .with("affinity", "floating")
        .with("verify_tile_count", "2")
        .with("bank_tile_count", "2");
    let settings = json!({
        "workload": "value", "rate": 0, "duration_s": 10.0, "config": null,
        "config_toml": null, "verify_tile_count": 2, "bank_tile_count": 2,
        "diagnosis": {
            "bottleneck": "verify",
            "summary": "verify tiles lose frags at ingress: add verify tiles (layout.verify_tile_count) or cores",
            "notes": ["2 tiles share a core"],
            "shares": [
                {"kind": "benchg", "tiles": 1, "busy": 0.41, "backpressured": 0.52},
                {"kind": "verify", "tiles": 2, "busy": 0.97, "backpressured": 0.0},
                {"kind": "bank", "tiles": 2, "busy": 0.35, "backpressured": 0.0}
            ]
        }
    });
    let tps = Metric::new("tps", Unit::PerSecond, Direction::HigherIsBetter);
    let lat = Metric::new(
        "latency_exec_p99",
        Unit::Nanoseconds,
        Direction::LowerIsBetter,
    );
    let id = store
        .begin_run(&info("pipeline bench", subject, t, settings), &[tps, lat])
        .unwrap();
    let mut samples: Vec<Sample> = (0..10)
        .map(|i| Sample {
            metric: "tps".into(),
            repetition: i,
            value: 41_000.0 + 900.0 * ((i * 7 % 5) as f64),
        })
        .collect();
    samples.push(Sample {
        metric: "latency_exec_p99".into(),
        repetition: 0,
        value: 2.4e6,
    });
    store.add_samples(id, &samples).unwrap();
    store.finish_run(id, RunStatus::Complete).unwrap();
    id
}

/// The three variants of one tune study; `o1` stopped after one round.
pub fn tune_study(store: &mut Store, t: f64) -> Vec<RunId> {
    let ops = Metric::new("ops", Unit::PerSecond, Direction::HigherIsBetter);
    let mut ids = Vec::new();
    for (i, (label, level, rounds)) in [
        ("stable/o1", 800.0, 1u32),
        ("stable/o2", 1000.0, 3),
        ("stable/o3", 1010.0, 3),
    ]
    .into_iter()
    .enumerate()
    {
        let subject = Subject::new(SubjectKind::BuildVariant, label)
            .with("study", "study-abc")
            .with("key", label)
            .with(
                "profile",
                format!(
                    "[profile.production]\ninherits = \"release\"\nopt-level = {}\n",
                    i + 1
                ),
            )
            .with("rustflags", "")
            .with("size", (400_000 + 10_000 * i).to_string());
        let settings = json!({"study": "study.toml", "mode": "racing", "max_rounds": 3});
        let id = store
            .begin_run(
                &info("tune", subject, t + i as f64, settings),
                std::slice::from_ref(&ops),
            )
            .unwrap();
        let samples: Vec<Sample> = (0..rounds)
            .map(|r| Sample {
                metric: "ops".into(),
                repetition: r,
                value: level * (1.0 + 0.01 * r as f64),
            })
            .collect();
        store.add_samples(id, &samples).unwrap();
        store.finish_run(id, RunStatus::Complete).unwrap();
        ids.push(id);
    }
    ids
}

/// A three-node `cluster run` with a partition of n2 over slots 10..15.
pub fn cluster_run(store: &mut Store, t: f64) -> RunId {
    let subject = Subject::new(SubjectKind::Release, "three")
        .with("nodes", "3")
        .with("topology", "full");
    let settings = json!({
        "slot_ms": 400, "duration_s": 20, "warmup_s": 2, "rate_tps": 100, "blocks": 40,
        "slots": [5, 45], "window_ns": [0, 1], "missing": {}, "problems": [],
        "node_names": ["n0", "n1", "n2"],
        "faults": [{"index": 0, "kind": "partition", "at_slot": 10, "slots": 5, "nodes": [2], "to": [0, 1]}]
    });
    let secs = |n: &str| Metric::new(n, Unit::Seconds, Direction::LowerIsBetter);
    let metrics = [
        secs("adoption_0.50"),
        secs("adoption_1.00"),
        Metric::new("node.cpu_percent", Unit::Percent, Direction::LowerIsBetter),
    ];
    let id = store
        .begin_run(&info("cluster run", subject, t, settings), &metrics)
        .unwrap();
    let mut samples = Vec::new();
    for b in 0..40u32 {
        let late = if (10..15).contains(&b) { 1.5 } else { 0.0 };
        let base = 0.05 + 0.002 * (b % 7) as f64;
        samples.push(Sample {
            metric: "adoption_0.50".into(),
            repetition: b,
            value: base,
        });
        samples.push(Sample {
            metric: "adoption_1.00".into(),
            repetition: b,
            value: base * 2.0 + late,
        });
    }
    store.add_samples(id, &samples).unwrap();
    let labeled: Vec<(Sample, serde_json::Value)> = (0..3)
        .flat_map(|n| {
            (0..10).map(move |slot| {
                let s = Sample {
                    metric: "node.cpu_percent".into(),
                    repetition: slot,
                    value: 20.0 + 5.0 * n as f64 + slot as f64,
                };
                (s, json!({"node": format!("n{n}")}))
            })
        })
        .collect();
    store.add_labeled_samples(id, &labeled).unwrap();
    store.finish_run(id, RunStatus::Complete).unwrap();
    id
}

/// Every kind, in one store at `path`.
pub fn every_kind(path: &Path, dir: &Path) -> (String, String) {
    let mut store = Store::open(path).unwrap();
    let t = 1_795_000_000.0;
    let before = comparison(&mut store, dir, "cmp-before", t, 1.0);
    let after = comparison(&mut store, dir, "cmp-after", t + 10_000.0, 1.3);
    pipeline_bench(&mut store, t + 20_000.0);
    tune_study(&mut store, t + 30_000.0);
    cluster_run(&mut store, t + 40_000.0);
    (before, after)
}
