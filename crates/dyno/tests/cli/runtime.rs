//! What a hostile or careless subject, file or client does to dyno at run time, as a user
//! meets it (issue 47): a subject writing without newlines keeps dyno's memory bounded
//! and the comparison says what it dropped. No assertion depends on the machine's speed.

use crate::harness::{dyno_process, heavy, processes_with};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// A one-round comparison of two subjects running `node` (a shell snippet).
fn comparison(dir: &Path, node: &str, measure_s: u32) -> PathBuf {
    let text = format!(
        r#"rounds = 1
seed = 3
grace_s = 2

[[subject]]
name = "old"
command = ["sh", "-c", "{node}"]

[[subject]]
name = "new"
command = ["sh", "-c", "{node}"]

[[workload]]
name = "value"
rate = 100
warmup_s = 0
measure_s = {measure_s}
"#
    );
    let path = dir.join("cmp.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// `VmHWM` (peak resident set) of process `pid` in bytes, while it lives.
fn peak_rss_bytes(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse::<u64>()
        .ok()?;
    Some(kb * 1024)
}

#[test]
fn a_subject_printing_dev_zero_keeps_dyno_bounded_and_the_drop_is_reported() {
    let _heavy = heavy();
    let dir = tempfile::tempdir().unwrap();
    let path = comparison(dir.path(), "exec cat /dev/zero", 3);
    let mut child = dyno_process()
        .args(["compare", "run"])
        .arg(&path)
        .arg("--db")
        .arg(dir.path().join("r.db"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    // Read the peak while dyno lives: each reading is the peak so far.
    let watcher = std::thread::spawn(move || {
        let mut peak = 0;
        let deadline = Instant::now() + Duration::from_secs(900);
        while let Some(p) = peak_rss_bytes(pid) {
            peak = peak.max(p);
            if Instant::now() > deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        peak
    });
    let stderr = {
        use std::io::Read;
        let mut s = String::new();
        child.stderr.take().unwrap().read_to_string(&mut s).unwrap();
        s
    };
    let status = child.wait().unwrap();
    let peak = watcher.join().unwrap();
    assert!(status.code().is_some(), "{stderr}");
    // Without the line cap, dyno held every byte `cat` wrote: gigabytes in seconds.
    assert!(
        peak < 200 << 20,
        "dyno's peak RSS was {peak} bytes\n{stderr}"
    );
    for subject in ["old", "new"] {
        let said = format!("warning: {subject} / value: output: 1 line over 64 KiB cut, ");
        assert!(stderr.contains(&said), "no `{said}` in\n{stderr}");
    }
}

#[test]
fn a_requirements_file_asking_for_a_billion_threads_is_refused_naming_file_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let toml = dir.path().join("cores.toml");
    let json = dir.path().join("reference_hardware.json");
    for (path, text, said) in [
        (
            &toml,
            "[[requirement]]\nmetric = \"Blake2256Parallel\"\nnum_cores = 1000000000\nminimum = 1\n",
            "cores.toml:3:13: key `requirement[0].num_cores`: must be in 1..=4096 (as --parallel-cores), got 1000000000",
        ),
        (
            &toml,
            "[[requirement]]\nmetric = \"Blake2256Parallel\"\nnum_cores = 1e9\nminimum = 1\n",
            "cores.toml:3:13: key `requirement[0].num_cores`: invalid type",
        ),
        (
            &json,
            "[{\"metric\": {\"Blake2256Parallel\": {\"num_cores\": 5000}}, \"minimum\": 1.0}]",
            "reference_hardware.json: entry 1 (Blake2256Parallel): num_cores must be in 1..=4096 (as --parallel-cores), got 5000",
        ),
    ] {
        std::fs::write(path, text).unwrap();
        let out = dyno_process()
            .args(["machine", "--requirements"])
            .arg(path)
            .arg("--db")
            .arg(dir.path().join("r.db"))
            .arg("--base-path")
            .arg(dir.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(said), "no `{said}` in\n{stderr}");
        // Refused before anything ran: no store, no disk file.
        assert!(!dir.path().join("r.db").exists());
    }
}

#[test]
fn a_daemonising_subject_is_killed_and_named_at_the_end_of_its_execution() {
    let dir = tempfile::tempdir().unwrap();
    // A sleep length no other test uses (this process's pid in it).
    let marker = format!("1012{}", std::process::id());
    let path = comparison(
        dir.path(),
        &format!("setsid sleep {marker} & exec sleep 600"),
        2,
    );
    let out = dyno_process()
        .args(["compare", "run"])
        .arg(&path)
        .arg("--db")
        .arg(dir.path().join("r.db"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.code().is_some(), "{stderr}");
    assert_eq!(
        processes_with(&marker),
        Vec::<u32>::new(),
        "orphans left\n{stderr}"
    );
    for subject in ["old", "new"] {
        let said = format!(
            "warning: {subject} / value: killed 1 process that outlived it (left its process group): pid "
        );
        assert!(stderr.contains(&said), "no `{said}` in\n{stderr}");
    }
    assert_eq!(
        stderr.matches(&format!("`sleep {marker}`")).count(),
        2,
        "{stderr}"
    );
}

/// Waits (60 s at most, polled) until `ready` holds.
fn eventually(mut ready: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(120);
    while Instant::now() < deadline {
        if ready() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn a_killed_machine_runs_disk_file_is_cleared_by_the_next_run() {
    let dir = tempfile::tempdir().unwrap();
    let disk = dir.path().join("disk");
    std::fs::create_dir(&disk).unwrap();
    let file = disk.join(".disk_bench_seq_wr.tmp");
    let mut killed = dyno_process()
        .args(["machine", "--only", "DiskSeqWrite", "--disk-duration", "60"])
        .arg("--base-path")
        .arg(&disk)
        .arg("--db")
        .arg(dir.path().join("r.db"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(
        eventually(|| file.exists()),
        "the disk benchmark never started"
    );
    killed.kill().unwrap(); // SIGKILL: nothing of dyno's own clean-up runs
    killed.wait().unwrap();
    assert!(
        file.exists(),
        "SIGKILL leaves the file (what this test is about)"
    );
    let out = dyno_process()
        .args([
            "machine",
            "--only",
            "BLAKE2-256",
            "--hash-duration",
            "0.02",
            "--allow-fail",
        ])
        .arg("--base-path")
        .arg(&disk)
        .arg("--db")
        .arg(dir.path().join("r.db"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!file.exists(), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "note: removed {}, left by a dyno machine that was killed",
            file.display()
        )),
        "{stderr}"
    );
}

/// A two-tile layout (a slow source, a sink, both parked when idle) whose workspace is
/// `dyno-<name>` in `dir`.
fn pipeline_layout(dir: &Path, name: &str) -> PathBuf {
    let text = format!(
        r#"[layout]
affinity = "f2"
idle = "park"

[[layout.tiles]]
kind = "source"
count = 1

[[layout.tiles]]
kind = "sink"
count = 1

[[links]]
from = "source"
to = "sink"
depth = 1024
mtu = 1232
reliable = true

[workspace]
name = "{name}"
dir = "{}"

[synthetic]
frag_size = 64
rate = 100
count = 0
"#,
        dir.display()
    );
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_killed_pipeline_is_shown_dead_by_the_monitor_and_cleared_by_the_next_run() {
    let dir = tempfile::tempdir().unwrap();
    let layout = pipeline_layout(dir.path(), "killed");
    let workspace = dir.path().join("dyno-killed");
    let mut killed = dyno_process()
        .args([
            "pipeline",
            "run",
            "--no-save",
            "--duration",
            "600",
            "--config",
        ])
        .arg(&layout)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let monitor = || {
        dyno_process()
            .args([
                "pipeline",
                "monitor",
                "--once",
                "--interval-ms",
                "50",
                "--wait",
                "120",
                "--config",
            ])
            .arg(&layout)
            .output()
            .unwrap()
    };
    let live = monitor();
    assert_eq!(
        live.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&live.stderr)
    );
    killed.kill().unwrap(); // SIGKILL: the workspace is not closed
    killed.wait().unwrap();
    assert!(
        workspace.exists(),
        "SIGKILL leaves the workspace (what this test is about)"
    );
    let dead = monitor();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&dead.stdout),
        String::from_utf8_lossy(&dead.stderr),
    );
    assert_eq!(dead.status.code(), Some(3), "{stdout}\n{stderr}");
    assert_eq!(stdout.matches("dead (was run)").count(), 2, "{stdout}");
    assert!(
        stderr.contains(&format!(
            "error: the pipeline that made {} (pid {}) is gone",
            workspace.display(),
            killed.id()
        )),
        "{stderr}"
    );
    // The next run of another layout in that directory clears it, and says so.
    let other = pipeline_layout(dir.path(), "next");
    let next = dyno_process()
        .args([
            "pipeline",
            "run",
            "--no-save",
            "--duration",
            "0.2",
            "--config",
        ])
        .arg(&other)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&next.stderr);
    assert_eq!(next.status.code(), Some(0), "{stderr}");
    assert!(!workspace.exists(), "{stderr}");
    assert!(
        stderr.contains(&format!("note: removed {} (", workspace.display()))
            && stderr.contains(&format!(
                "left by a pipeline (pid {}) that was killed",
                killed.id()
            )),
        "{stderr}"
    );
}

/// A three-node reference cluster (ports from `base_port`), one-second slots, a 3-slot
/// window after a 1-slot warm-up.
fn three_nodes(dir: &Path, base_port: u16) -> PathBuf {
    let file = dir.join("three.toml");
    let text = format!(
        "[cluster]\nname = \"three\"\nslot_ms = 1000\nduration_s = 3\nwarmup_s = 1\nbase_port = {base_port}\n\n\
         [node]\nthreads = 1\n\n[nodes]\ncount = 3\nproducers = 3\n\n\
         [[region]]\nname = \"a\"\nlatency_ms = {{ a = 1 }}\n\n[links]\nbandwidth_mbit = 100\n\n\
         [topology]\nkind = \"ring\"\n\n[workload]\nrate_tps = 10\nkind = \"value\"\n"
    );
    std::fs::write(&file, text).unwrap();
    file
}

#[test]
fn a_killed_cluster_run_is_stored_incomplete_with_its_window_and_a_finished_one_with_its_real_start(
) {
    let _heavy = heavy();
    let dir = tempfile::tempdir().unwrap();
    let file = three_nodes(dir.path(), 25300);
    let db = dir.path().join("r.db");
    let runs = || {
        dyno_store::Store::open_read_only(&db)
            .and_then(|s| s.list_runs(&dyno_store::RunFilter::default()))
            .unwrap_or_default()
    };
    let window_of = |id| {
        let run = dyno_store::Store::open_read_only(&db)
            .unwrap()
            .run(id)
            .unwrap();
        run.info.settings["slots"].clone()
    };
    let mut killed = dyno_process()
        .args(["cluster", "run", "--db"])
        .arg(&db)
        .arg("--dir")
        .arg(dir.path().join("killed"))
        .arg(&file)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Stored at its start, its window as soon as the nodes are up.
    assert!(
        eventually(|| runs().first().is_some_and(|r| window_of(r.id).is_array())),
        "the run and its window were never stored"
    );
    killed.kill().unwrap(); // SIGKILL
    killed.wait().unwrap();
    let left = runs();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].status, dyno_model::RunStatus::Incomplete);
    assert_eq!(left[0].command, "cluster run");
    // The same command again runs to its end: stored complete, started before it ended
    // by at least its window (issue 46: the start was stored as the end).
    let out = dyno_process()
        .args(["cluster", "run", "--db"])
        .arg(&db)
        .arg("--dir")
        .arg(dir.path().join("again"))
        .arg(&file)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let all = runs();
    let done = all.iter().find(|r| r.id != left[0].id).unwrap();
    assert_eq!(done.status, dyno_model::RunStatus::Complete, "{stderr}");
    let took = done.finished_at.unwrap() - done.started_at;
    assert!(took >= 3.0, "stored as lasting {took} s\n{stderr}");
    assert!(window_of(done.id).is_array());
}
