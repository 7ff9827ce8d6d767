//! End-to-end: the synthetic pipeline in a workspace, watched read-only like a monitor.
#![cfg(not(miri))] // threads pinned through libc, files mapped with mmap

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use dyno_tango::{prometheus_text, run_synthetic, LayoutConfig, Snapshot, Workspace};

fn config(
    dir: &std::path::Path,
    name: &str,
    sinks: usize,
    reliable: bool,
    count: u64,
) -> LayoutConfig {
    let text = format!(
        r#"
        [layout]
        affinity = "f{tiles}"
        [[layout.tiles]]
        kind = "source"
        [[layout.tiles]]
        kind = "sink"
        count = {sinks}
        [[links]]
        from = "source"
        to = "sink"
        depth = 256
        mtu = 256
        reliable = {reliable}
        [workspace]
        name = "{name}"
        dir = "{dir}"
        size_mb = 4
        [synthetic]
        frag_size = 100
        count = {count}
        "#,
        tiles = sinks + 1,
        dir = dir.display()
    );
    LayoutConfig::from_toml(&text, "test.toml").unwrap()
}

#[test]
fn reliable_pipeline_delivers_every_frag_and_reports_it() {
    let dir = tempfile::tempdir().unwrap();
    let n = 200_000;
    let cfg = config(dir.path(), "rel", 2, true, n);
    let stop = AtomicBool::new(false);
    let path = dir.path().join("dyno-rel");
    let summary = std::thread::scope(|s| {
        let run = s.spawn(|| run_synthetic(&cfg, &stop));
        // A monitor attaches read-only while the run is live.
        let watcher = s.spawn(|| {
            for _ in 0..2000 {
                if let Ok(ws) = Workspace::attach_read_only_at(&path) {
                    let a = Snapshot::read(&ws);
                    std::thread::sleep(Duration::from_millis(5));
                    let b = Snapshot::read(&ws);
                    return Some((a, b));
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            None
        });
        let summary = run.join().unwrap().unwrap();
        (summary, watcher.join().unwrap())
    });
    let (summary, watched) = summary;
    assert!(!path.exists(), "the workspace is removed on clean shutdown");
    assert_eq!(summary.published, n);
    assert_eq!(summary.published_bytes, n * 100);
    let read: u64 = summary.sinks.iter().map(|s| s.frags).sum();
    assert_eq!(read, n, "reliable sinks split the frags and lose none");
    for s in &summary.sinks {
        assert_eq!(s.bad_payloads, 0);
        assert_eq!(s.ovrnp + s.ovrnr, 0);
        assert_eq!(s.frags + s.filt1, n);
    }
    let snap = &summary.snapshot;
    assert_eq!(snap.tiles.len(), 3);
    assert_eq!(snap.links[0].counters.frags, n);
    assert_eq!(snap.links[0].name, "source->sink");
    assert_eq!(snap.consumers.len(), 2);
    assert_eq!(
        snap.consumers.iter().map(|c| c.counters.frags).sum::<u64>(),
        n
    );
    for t in &snap.tiles {
        assert_eq!(t.state, "halt");
        let total: f64 = t.time_ns.shares().iter().sum();
        assert!(
            (total - 1.0).abs() < 1e-9,
            "{}: shares sum to {total}",
            t.name
        );
    }
    let text = prometheus_text(snap);
    assert!(text.contains(&format!(
        "dyno_link_frags_total{{link=\"source->sink\"}} {n}\n"
    )));
    if let Some((a, b)) = watched {
        let d = b.delta(&a);
        assert_eq!(d.since_ns, Some(a.taken_ns));
        assert!(d
            .links
            .iter()
            .all(|l| l.counters.frags <= b.links[0].counters.frags));
        serde_json::to_string(&d).unwrap();
    }
}

#[test]
fn unreliable_sinks_account_for_every_frag() {
    let dir = tempfile::tempdir().unwrap();
    let n = 100_000;
    let cfg = config(dir.path(), "unrel", 1, false, n);
    let summary = run_synthetic(&cfg, &AtomicBool::new(false)).unwrap();
    let s = &summary.sinks[0];
    assert_eq!(s.bad_payloads, 0, "no torn payload is ever accepted");
    assert_eq!(s.frags + s.ovrnp + s.ovrnr, n);
    assert_eq!(
        summary.source_backpressure, 0,
        "unreliable consumers never slow the producer"
    );
}

#[test]
fn bad_affinity_fails_before_starting() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path(), "aff", 1, true, 10);
    cfg.layout.affinity = "0,4095".into();
    let e = run_synthetic(&cfg, &AtomicBool::new(false))
        .unwrap_err()
        .to_string();
    assert!(e.contains("4095") && e.contains("online CPUs"), "{e}");
    assert!(!dir.path().join("dyno-aff").exists());
}
