//! What a hostile or careless subject, file or client does to dyno at run time, as a user
//! meets it (issue 47): a subject writing without newlines keeps dyno's memory bounded
//! and the comparison says what it dropped. No assertion depends on the machine's speed.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn dyno() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_dyno"));
    c.env("DYNO_ALLOW_DEBUG_BUILD", "1");
    c
}

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
    let dir = tempfile::tempdir().unwrap();
    let path = comparison(dir.path(), "exec cat /dev/zero", 3);
    let mut child = dyno()
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
        let out = dyno()
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
