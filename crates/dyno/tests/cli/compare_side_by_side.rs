//! `dyno compare run` side by side as a user meets it: bad schedules, placeholders and
//! limits refused before anything starts (exit 2, naming the key or flag), and two copies
//! of a node with one fixed port each compared at once through `{port:rpc}`, stopped
//! with Ctrl-C mid-round (no node or load left) and continued by the same command. No
//! assertion depends on the machine's speed.

use crate::harness::{dyno, dyno_process, heavy, processes_with};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// A node that listens on the one port it is given, and fails if another has it.
const NODE: &str = "import http.server, sys; http.server.HTTPServer(('127.0.0.1', int(sys.argv[1])), http.server.SimpleHTTPRequestHandler).serve_forever()";

/// Two copies of [`NODE`] on `{port:rpc}`, each with its own load (a shell that holds
/// `marker` in its command line, as the nodes do); `top` at the top of the file.
fn pair(dir: &Path, top: &str, marker: &str) -> PathBuf {
    let subject = |name: &str| {
        format!(
            r#"[[subject]]
name = "{name}"
command = ["python3", "-c", "{NODE}", "{{port:rpc}}", "{marker}"]
ready = {{ http = "http://127.0.0.1:{{port:rpc}}/", timeout_s = 120 }}
addresses = {{ rpc = "http://127.0.0.1:{{port:rpc}}" }}
"#
        )
    };
    let text = format!(
        r#"{top}
rounds = 3
grace_s = 5
{}{}[[workload]]
name = "w"
rate = 5
warmup_s = 0
measure_s = 2
[workload.load]
command = ["sh", "-c", "while :; do sleep 1; done", "{marker}", "{{rpc}}"]
"#,
        subject("old"),
        subject("new"),
    );
    let path = dir.join("sbs.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// Runs `dyno compare run` on `path` with `args`; asserts exit 2, that stderr holds
/// `says`, and that no store was made.
fn refused(path: &Path, args: &[&str], says: &str) {
    let db = path.with_file_name("r.db");
    let out = dyno()
        .args(["compare", "run"])
        .arg(path)
        .args(args)
        .arg("--db")
        .arg(&db)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(says), "wanted {says:?} in: {stderr}");
    assert!(!db.exists(), "nothing may start before the file is valid");
}

#[test]
fn bad_schedules_placeholders_and_limits_exit_2_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = pair(dir.path(), "", "m");
    let text = std::fs::read_to_string(&path).unwrap();
    let with = |top: &str| {
        std::fs::write(&path, format!("{top}\n{text}")).unwrap();
        &path
    };
    refused(with("schedule = \"parallel\""), &[], "key `schedule`");
    refused(
        with(""),
        &["--schedule", "sideways"],
        "--schedule: `sideways` is not",
    );
    refused(
        with("windows_per_start = 0"),
        &[],
        "key `windows_per_start`",
    );
    for limit in ["\"0%\"", "\"150%\"", "-0.5"] {
        refused(
            with(&format!("max_disturbance = {limit}")),
            &[],
            "key `max_disturbance`",
        );
    }
    std::fs::write(
        &path,
        text.replacen("/\", timeout_s", "/{port:status}\", timeout_s", 1),
    )
    .unwrap();
    refused(&path, &[], "key `subject[0].ready.http`");
    std::fs::write(&path, text.replace("\"{rpc}\"]", "\"{port:p2p}\"]")).unwrap();
    refused(&path, &[], "`{port:p2p}` is no port of subject `old`");
}

/// Runs stored in `db` (0 before it exists).
fn stored(db: &Path) -> usize {
    dyno_store::Store::open_read_only(db)
        .and_then(|s| s.list_runs(&dyno_store::RunFilter::default()))
        .map(|r| r.len())
        .unwrap_or(0)
}

#[test]
fn two_fixed_port_nodes_side_by_side_stopped_mid_round_leave_nothing_and_continue() {
    let _slot = heavy();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let marker = format!("dyno-sbs-cli-{}", std::process::id());
    let path = pair(dir.path(), "seed = 3", &marker);
    let run = || {
        dyno_process()
            .args(["compare", "run", "--schedule", "side_by_side"])
            .arg(&path)
            .arg("--db")
            .arg(&db)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let child = run();
    // Round 1 stored (both subjects) and round 2's nodes and loads running.
    let deadline = Instant::now() + Duration::from_secs(180);
    while !(stored(&db) >= 2 && processes_with(&marker).len() >= 4) {
        assert!(Instant::now() < deadline, "round 2 never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    dyno_proc::signal_process(child.id(), dyno_proc::Signal::Int).unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("old + new") || stderr.contains("new + old"),
        "{stderr}"
    );
    assert_eq!(
        processes_with(&marker),
        Vec::<u32>::new(),
        "a node or load left behind"
    );
    let kept = stored(&db);
    let out = run().wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("continuing comparison"), "{stderr}");
    assert!(stdout.contains("6 complete executions of"), "{stdout}");
    assert!(
        stdout.contains("disturbance: other work on the machine"),
        "{stdout}"
    );
    assert!(!stdout.contains("host:other_cpu_percent"), "{stdout}");
    assert!(
        stored(&db) <= kept + 4,
        "only the rounds not done ran again"
    );
    assert_eq!(processes_with(&marker), Vec::<u32>::new());
    // As stored: every round's two windows are the same seconds, on their own ports.
    let store = dyno_store::Store::open_read_only(&db).unwrap();
    let runs: Vec<_> = store
        .list_runs(&dyno_store::RunFilter::default())
        .unwrap()
        .iter()
        .map(|r| r.id)
        .collect();
    let loaded = dyno_judge::record::load(&store, &runs).unwrap();
    let complete: Vec<_> = loaded
        .executions
        .iter()
        .filter(|e| e.outcome == dyno_compare::Outcome::Complete)
        .collect();
    assert_eq!(complete.len(), 6);
    for round in 0..3 {
        let both: Vec<_> = complete.iter().filter(|e| e.round == round).collect();
        assert_eq!(both.len(), 2, "round {round}");
        assert!(both[0].window_at.is_some());
        assert_eq!(both[0].window_at, both[1].window_at, "round {round}");
        assert_ne!(
            both[0].command_line[3], both[1].command_line[3],
            "one port each"
        );
    }
}
