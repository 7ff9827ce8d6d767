//! Runs of every kind planted in a store as their commands store them: two comparisons of
//! the same subjects (dyno-compare's own synthetic executor and record, so `dyno serve`
//! judges them as `dyno compare` would; the second candidate 30% hungrier for CPU, a
//! change point in its history), a `pipeline bench` run with its diagnosis, the three
//! variants of a `tune` study (one eliminated), a `cluster run` with two faults and a
//! `machine` run judged against two minimums (one met, one not).

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

/// The adoption of block `b` of the planted cluster run at 80% of the nodes: 35 quick
/// blocks, one at 1.319 s and four at 2 s, so that the nearest-rank p90 (the CLI's and
/// the report's: 1.32 s) and a linear one (1.39 s) read differently.
pub fn cluster_adoption_80(b: u32) -> f64 {
    match b {
        10..=13 => 2.0,
        14 => 1.319,
        _ => 0.07 + 0.002 * (b % 7) as f64,
    }
}

/// The cluster file of the planted cluster run: three nodes on a ring, n0 the producer,
/// 400 ms slots.
const CLUSTER_FILE: &str = "[cluster]\nname = \"three\"\nslot_ms = 400\nduration_s = 20\n\
    warmup_s = 2\nbase_port = 31000\n\n[nodes]\ncount = 3\nproducers = 1\nstake = [1]\n\n\
    [[region]]\nname = \"eu\"\nlatency_ms = { eu = 1 }\n\n[links]\nbandwidth_mbit = 100\n\n\
    [topology]\nkind = \"ring\"\n\n[workload]\nrate_tps = 100\nkind = \"value\"\n";

/// A run directory as `dyno cluster run` leaves it, for the run's full report: the
/// cluster file and each node's event log, n0 forging a block in each slot of 5..45 that
/// n1 adopts after the run's `adoption_0.50` and n2 after its `adoption_1.00`. Returns
/// the directory and the cluster file.
pub fn cluster_run_dir(dir: &Path, t: f64) -> (std::path::PathBuf, std::path::PathBuf) {
    let run_dir = dir.join("cluster-run");
    std::fs::create_dir_all(&run_dir).unwrap();
    let file = run_dir.join("cluster.toml");
    std::fs::write(&file, CLUSTER_FILE).unwrap();
    let genesis = (t * 1e9) as u64;
    let slot_ns = 400_000_000u64;
    let ms = 1_000_000u64;
    let line = |node: &str, ts: u64, event: &str, rest: &str| {
        format!("{{\"kind\":\"event\",\"event\":\"{event}\",\"ts_ns\":{ts},\"node\":\"{node}\"{rest}}}\n")
    };
    for (n, node) in ["n0", "n1", "n2"].iter().enumerate() {
        let mut log = line(
            node,
            genesis,
            "started",
            &format!(",\"genesis_time_ns\":{genesis},\"slot_ns\":{slot_ns}"),
        );
        for b in 0..40u32 {
            let slot = 5 + b as u64;
            let start = genesis + slot * slot_ns;
            let block = format!(",\"slot\":{slot},\"block\":\"b{b:02}\"");
            if n == 0 {
                let scheduled = format!(",\"slot\":{slot},\"scheduled_ns\":{start}");
                log.push_str(&line(node, start + 2 * ms, "slot_start", &scheduled));
                log.push_str(&line(node, start + 5 * ms, "forged", &block));
                log.push_str(&line(node, start + 6 * ms, "announced", &block));
            }
            let late = if (10..15).contains(&b) { 1.5 } else { 0.0 };
            let base = 0.05 + 0.002 * (b % 7) as f64;
            let after_s = [0.007, base, base * 2.0 + late][n];
            let at = start + (after_s * 1e9) as u64;
            log.push_str(&line(node, at, "adopted", &block));
        }
        std::fs::write(run_dir.join(format!("{node}.jsonl")), log).unwrap();
    }
    (run_dir, file)
}

/// A three-node `cluster run` with a partition of n2 over slots 10..15 and a restart of
/// n1 over slots 25..27 (whose `to`, filled by the file for every kind, names no target),
/// what each fault did, a lean n2 whose CPU reads 0 in most slots (one clock tick in
/// others), and a forging stage that always took 0 s.
pub fn cluster_run(store: &mut Store, dir: &Path, t: f64) -> RunId {
    let subject = Subject::new(SubjectKind::Release, "three")
        .with("nodes", "3")
        .with("topology", "ring");
    let (run_dir, file) = cluster_run_dir(dir, t);
    let settings = json!({
        "run_dir": run_dir.display().to_string(),
        "cluster_file": file.display().to_string(),
        "slot_ms": 400, "duration_s": 20, "warmup_s": 2, "rate_tps": 100, "blocks": 40,
        "slots": [5, 45], "window_ns": [0, 1], "missing": {}, "problems": [],
        "node_names": ["n0", "n1", "n2"],
        "faults": [
            {"index": 0, "kind": "partition", "at_slot": 10, "slots": 5, "nodes": [2], "to": [0, 1]},
            {"index": 1, "kind": "restart", "at_slot": 25, "slots": 2, "nodes": [1], "to": [0, 2]}
        ]
    });
    let secs = |n: &str| Metric::new(n, Unit::Seconds, Direction::LowerIsBetter);
    let metrics = [
        secs("adoption_0.50"),
        secs("adoption_0.80"),
        secs("adoption_1.00"),
        secs("forging.ledger_ticking"),
        Metric::new("node.cpu_percent", Unit::Percent, Direction::LowerIsBetter),
        secs("fault.adoption_recovered_s"),
        secs("fault.converged_s"),
        secs("fault.back_at_tip_s"),
    ];
    let id = store
        .begin_run(&info("cluster run", subject, t, settings), &metrics)
        .unwrap();
    let mut samples = Vec::new();
    for b in 0..40u32 {
        let late = if (10..15).contains(&b) { 1.5 } else { 0.0 };
        let base = 0.05 + 0.002 * (b % 7) as f64;
        for (metric, value) in [
            ("adoption_0.50", base),
            ("adoption_0.80", cluster_adoption_80(b)),
            ("adoption_1.00", base * 2.0 + late),
            ("forging.ledger_ticking", 0.0),
        ] {
            samples.push(Sample {
                metric: metric.into(),
                repetition: b,
                value,
            });
        }
    }
    store.add_samples(id, &samples).unwrap();
    let mut labeled: Vec<(Sample, serde_json::Value)> = (0..3)
        .flat_map(|n| {
            (0..10).map(move |slot| {
                // n2 is lean: a clock tick (2.5% of a 400 ms slot) in two slots of ten.
                let value = match n {
                    2 if slot % 5 == 3 => 2.5,
                    2 => 0.0,
                    _ => 20.0 + 5.0 * n as f64 + slot as f64,
                };
                let s = Sample {
                    metric: "node.cpu_percent".into(),
                    repetition: slot,
                    value,
                };
                (s, json!({"node": format!("n{n}")}))
            })
        })
        .collect();
    for (i, (metric, value, label)) in [
        ("fault.adoption_recovered_s", 0.95, json!({"fault": 0})),
        (
            "fault.back_at_tip_s",
            0.4,
            json!({"fault": 0, "node": "n2"}),
        ),
        ("fault.adoption_recovered_s", 1.2, json!({"fault": 1})),
        ("fault.converged_s", 0.6, json!({"fault": 1})),
        (
            "fault.back_at_tip_s",
            0.8,
            json!({"fault": 1, "node": "n1"}),
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let s = Sample {
            metric: metric.into(),
            repetition: i as u32,
            value,
        };
        labeled.push((s, label));
    }
    store.add_labeled_samples(id, &labeled).unwrap();
    store.finish_run(id, RunStatus::Complete).unwrap();
    id
}

/// A `machine` run that recorded its requirements' minimums: BLAKE2-256 above its
/// minimum, SR25519 verification at half of its, so the hardware fails.
pub fn machine_run(store: &mut Store, t: f64) -> RunId {
    let settings = json!({
        "requirements": "the test's minimums",
        "tolerance_percent": 10.0,
        "requirement_minimums": [
            {"metric": "Blake2256", "minimum": 1.0e9},
            {"metric": "Sr25519Verify", "minimum": 2.0e6}
        ]
    });
    let rate = |n: &str| Metric::new(n, Unit::BytesPerSecond, Direction::HigherIsBetter);
    let id = store
        .begin_run(
            &info(
                "machine",
                Subject::new(SubjectKind::Machine, HOST),
                t,
                settings,
            ),
            &[rate("Blake2256"), rate("Sr25519Verify")],
        )
        .unwrap();
    let samples: Vec<Sample> = [("Blake2256", 1.2e9), ("Sr25519Verify", 1.0e6)]
        .iter()
        .flat_map(|(metric, level)| {
            (0..5).map(move |r| Sample {
                metric: metric.to_string(),
                repetition: r,
                value: level * (1.0 + 0.01 * r as f64),
            })
        })
        .collect();
    store.add_samples(id, &samples).unwrap();
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
    cluster_run(&mut store, dir, t + 40_000.0);
    machine_run(&mut store, t + 50_000.0);
    (before, after)
}
