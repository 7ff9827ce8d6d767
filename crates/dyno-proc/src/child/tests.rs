use super::*;
use crate::procfs::start_ticks;
use std::path::PathBuf;

/// Not a test of its own: the stand-in for dyno that the orphan tests start and SIGKILL.
/// With `DYNO_PROC_ORPHAN_MODE=guarded` it starts a launcher shell whose child is the
/// "node", as compare and cluster do; with `pdeathsig` it starts `sleep` with the
/// parent-death signal only (no group, no guard). It writes the pids to watch to `pids`
/// in `DYNO_PROC_ORPHAN_DIR` and waits to be killed.
#[test]
#[ignore = "helper process of the orphan tests"]
fn stand_in_for_dyno() {
    let (Some(dir), Ok(mode)) = (
        std::env::var_os("DYNO_PROC_ORPHAN_DIR"),
        std::env::var("DYNO_PROC_ORPHAN_MODE"),
    ) else {
        return;
    };
    let dir = PathBuf::from(dir);
    let publish = |pids: String| {
        std::fs::write(dir.join("pids.tmp"), pids).unwrap();
        std::fs::rename(dir.join("pids.tmp"), dir.join("pids")).unwrap();
    };
    if mode == "pdeathsig" {
        let mut cmd = Command::new("sleep");
        cmd.arg("600");
        crate::sys::kill_when_parent_dies(&mut cmd);
        let mut child = cmd.spawn().unwrap();
        publish(child.id().to_string());
        std::thread::sleep(Duration::from_secs(600));
        let _ = child.kill();
        let _ = child.wait();
        return;
    }
    // "shared": two such nodes under one group guard, writing their output to files, as
    // the cluster launcher runs them; the first is stopped before dyno dies (the guard
    // must forget it), the second is left running.
    let shared = (mode == "shared").then(|| GroupGuard::start().unwrap());
    let node = |i: usize| {
        let mut cmd = Command::new("sh");
        cmd.args([
            "-c",
            &format!("sleep 600 & echo $! > g{i}.tmp && mv g{i}.tmp grandchild{i}.pid; wait"),
        ])
        .current_dir(&dir);
        let opts = SpawnOptions {
            guard: shared.clone(),
            output_to_log_only: shared.is_some(),
            log_file: shared.as_ref().map(|_| dir.join(format!("n{i}.out"))),
            ..SpawnOptions::default()
        };
        let node = GuardedChild::spawn(cmd, &opts).unwrap();
        let grandchild = loop {
            match std::fs::read_to_string(dir.join(format!("grandchild{i}.pid"))) {
                Ok(g) => break g,
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        };
        (node, grandchild.trim().to_string())
    };
    let (first, g1) = node(1);
    if shared.is_some() {
        let (second, g2) = node(2);
        // Stopped and reaped: its group is forgotten, so the guard never signals it.
        first.stop(Duration::from_secs(5));
        publish(format!("{} {g2}", second.pid()));
        std::thread::sleep(Duration::from_secs(600));
        drop(second);
        return;
    }
    publish(format!("{} {g1}", first.pid()));
    std::thread::sleep(Duration::from_secs(600));
    drop(first);
}

/// Starts the stand-in in `mode`, waits for its pids, SIGKILLs it and returns the pids
/// still running after a generous deadline (polled: how fast the machine is must not
/// matter), which it then kills.
fn survivors_of_a_killed_dyno(mode: &str) -> Vec<u32> {
    let dir = tempfile::tempdir().unwrap();
    let mut dyno = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "child::tests::stand_in_for_dyno",
            "--nocapture",
        ])
        .env("DYNO_PROC_ORPHAN_DIR", dir.path())
        .env("DYNO_PROC_ORPHAN_MODE", mode)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let pids: Vec<u32> = loop {
        if let Ok(text) = std::fs::read_to_string(dir.path().join("pids")) {
            break text
                .split_whitespace()
                .map(|p| p.parse().unwrap())
                .collect();
        }
        if Instant::now() > deadline {
            let _ = dyno.kill();
            let _ = dyno.wait();
            panic!("the stand-in never started its node");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let node: Vec<(u32, u64)> = pids
        .iter()
        .map(|&p| {
            (
                p,
                start_ticks(p).expect("the node runs before dyno is killed"),
            )
        })
        .collect();
    dyno.kill().unwrap(); // SIGKILL: no Drop, no stop(), no signal handler
    dyno.wait().unwrap();
    let running = |&(p, s): &(u32, u64)| start_ticks(p) == Some(s);
    let deadline = Instant::now() + Duration::from_secs(60);
    while node.iter().any(running) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let survivors: Vec<u32> = node.iter().filter(|n| running(n)).map(|n| n.0).collect();
    for p in &survivors {
        let _ = crate::signal_process(*p, Signal::Kill);
    }
    survivors
}

#[test]
fn a_child_and_its_children_do_not_outlive_a_killed_dyno() {
    let survivors = survivors_of_a_killed_dyno("guarded");
    assert!(
        survivors.is_empty(),
        "still running 60 s after dyno was killed: {survivors:?}"
    );
}

#[test]
fn children_sharing_one_group_guard_do_not_outlive_a_killed_dyno() {
    let survivors = survivors_of_a_killed_dyno("shared");
    assert!(
        survivors.is_empty(),
        "still running 60 s after dyno was killed: {survivors:?}"
    );
}

#[test]
fn output_written_straight_to_the_log_is_read_back_for_the_last_lines() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("n.out");
    let opts = SpawnOptions {
        log_file: Some(log.clone()),
        output_to_log_only: true,
        tail_lines: 3,
        guard: GroupGuard::start(),
        ..SpawnOptions::default()
    };
    let mut child = GuardedChild::spawn(
        sh("for i in 1 2 3 4 5; do echo out $i; done; echo err >&2"),
        &opts,
    )
    .unwrap();
    // No reader threads: the child holds the file itself.
    assert!(child.readers.is_empty());
    assert!(eventually(|| child.exited().is_some()));
    assert_eq!(child.last_lines(), ["out 4", "out 5", "err"]);
    let stopped = child.stop(Duration::from_secs(5));
    assert_eq!(stopped.last_lines, ["out 4", "out 5", "err"]);
    assert_eq!(
        std::fs::read_to_string(&log).unwrap().lines().count(),
        6,
        "every line in the file"
    );
}

#[test]
fn a_group_guard_is_reaped_once_its_last_child_is_stopped() {
    let guard = GroupGuard::start().unwrap();
    let guard_pid = guard.pid();
    let opts = SpawnOptions {
        guard: Some(guard),
        output_to_log_only: true,
        ..SpawnOptions::default()
    };
    let child = GuardedChild::spawn(sh("sleep 600"), &opts).unwrap();
    drop(opts);
    assert!(start_ticks(guard_pid).is_some());
    child.stop(Duration::from_secs(5));
    assert_eq!(
        start_ticks(guard_pid),
        None,
        "the guard exited and was reaped"
    );
}

#[test]
#[cfg(target_os = "linux")]
fn the_parent_death_signal_alone_ends_a_direct_child() {
    let survivors = survivors_of_a_killed_dyno("pdeathsig");
    assert!(survivors.is_empty(), "{survivors:?}");
}

fn sh(script: &str) -> Command {
    let mut c = Command::new("sh");
    c.args(["-c", script]);
    c
}

/// Polls `f` for up to 60 s (a loaded machine may be slow to schedule a child).
fn eventually(mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn a_stop_ends_the_whole_group_and_keeps_the_last_lines() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("node.log");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut cmd =
        sh("echo one; echo two >&2; echo listening on 80; sleep 600 & echo $! > helper.pid; wait");
    cmd.current_dir(dir.path());
    let opts = SpawnOptions {
        tail_lines: 2,
        ready_line: Some(Regex::new("^listening on [0-9]+$").unwrap()),
        log_file: Some(log.clone()),
        on_line: Some(Arc::new({
            let sink = seen.clone();
            move |stream, line: &str| sink.lock().unwrap().push((stream, line.to_string()))
        })),
        ..SpawnOptions::default()
    };
    let mut child = GuardedChild::spawn(cmd, &opts).unwrap();
    assert!(child.guarded());
    assert!(eventually(|| child.saw_ready_line()));
    assert!(eventually(|| dir.path().join("helper.pid").exists()));
    let helper: u32 = std::fs::read_to_string(dir.path().join("helper.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let helper_start = start_ticks(helper);
    assert!(child.exited().is_none());
    let stopped = child.stop(Duration::from_secs(30));
    assert!(!stopped.exited_before);
    assert_eq!(stopped.warning(), None, "sh exits on SIGINT");
    assert_eq!(stopped.last_lines.len(), 2);
    assert!(stopped.last_lines.contains(&"listening on 80".to_string()));
    assert!(
        eventually(|| start_ticks(helper).is_none() || start_ticks(helper) != helper_start),
        "the helper outlived the stop"
    );
    let lines = seen.lock().unwrap().clone();
    assert!(
        lines.contains(&(Stream::Stderr, "two".to_string())),
        "{lines:?}"
    );
    assert!(
        lines.contains(&(Stream::Stdout, "one".to_string())),
        "{lines:?}"
    );
    let logged = std::fs::read_to_string(&log).unwrap();
    assert_eq!(logged.lines().count(), 3, "{logged}");
}

#[test]
fn a_child_that_ignores_the_stop_signal_is_killed_after_the_grace() {
    let child = GuardedChild::spawn(
        sh("trap '' INT; echo ready; exec sleep 600"),
        &SpawnOptions {
            ready_line: Some(Regex::new("ready").unwrap()),
            ..SpawnOptions::default()
        },
    )
    .unwrap();
    // The trap must be set before the stop, or SIGINT would end the shell at once.
    assert!(eventually(|| child.saw_ready_line()));
    let pid = child.pid();
    let stopped = child.stop(Duration::from_millis(300));
    assert_eq!(
        stopped.warning().as_deref(),
        Some("did not stop within 0 s of SIGINT: killed")
    );
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(stopped.status.and_then(|s| s.signal()), Some(libc::SIGKILL));
    assert_eq!(crate::procfs::liveness(pid), crate::procfs::Liveness::Gone);
}

#[test]
fn dropping_a_child_kills_and_reaps_it() {
    let child = GuardedChild::spawn(sh("exec sleep 600"), &SpawnOptions::default()).unwrap();
    let pid = child.pid();
    drop(child);
    assert_eq!(crate::procfs::liveness(pid), crate::procfs::Liveness::Gone);
}

#[test]
fn a_child_that_exits_by_itself_is_reported() {
    let mut child = GuardedChild::spawn(sh("echo bye; exit 3"), &SpawnOptions::default()).unwrap();
    assert!(eventually(|| child.exited().is_some()));
    assert!(child.exited().unwrap().contains('3'));
    let stopped = child.stop(Duration::from_secs(1));
    assert!(stopped.exited_before);
    assert_eq!(stopped.status.and_then(|s| s.code()), Some(3));
    assert_eq!(stopped.last_lines, ["bye"]);
}

#[test]
fn a_missing_program_is_named() {
    let e = GuardedChild::spawn(Command::new("/no/such/node"), &SpawnOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("cannot start `/no/such/node`"), "{e}");
}

#[test]
fn wait_timeout_sees_the_exit_and_times_out_on_a_running_child() {
    let mut cmd = Command::new("sh");
    cmd.args(["-c", "exit 3"]);
    let mut quick = GuardedChild::spawn(cmd, &SpawnOptions::default()).unwrap();
    let done = quick.wait_timeout(Duration::from_secs(60));
    assert!(done.as_deref().is_some_and(|d| d.contains('3')), "{done:?}");
    // Asked again after the exit was seen: still the exit, at once.
    assert!(quick.wait_timeout(Duration::ZERO).is_some());
    assert_eq!(
        quick.stop(Duration::ZERO).status.and_then(|s| s.code()),
        Some(3)
    );

    let mut cmd = Command::new("sleep");
    cmd.arg("600");
    let mut slow = GuardedChild::spawn(cmd, &SpawnOptions::default()).unwrap();
    let asked = Instant::now();
    assert_eq!(slow.wait_timeout(Duration::from_millis(50)), None);
    assert!(
        asked.elapsed() >= Duration::from_millis(50),
        "woke before the timeout"
    );
    let stopped = slow.stop(Duration::from_secs(30));
    assert!(stopped.killed_after.is_none(), "sleep obeys SIGTERM");
}

#[test]
fn children_signalled_first_stop_together_without_a_second_signal() {
    // Each child counts the SIGINTs it gets and exits on the first one after a pause: a
    // second signal would show in its output.
    let script =
        "trap 'n=$((n+1)); echo int $n; sleep 0.3; exit 0' INT; n=0; while :; do sleep 0.05; done";
    let mut children: Vec<GuardedChild> = (0..3)
        .map(|_| GuardedChild::spawn(sh(script), &SpawnOptions::default()).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    for c in &mut children {
        c.begin_stop();
    }
    for c in children {
        let stopped = c.stop(Duration::from_secs(30));
        assert!(stopped.killed_after.is_none(), "{stopped:?}");
        assert!(!stopped.exited_before);
        assert_eq!(stopped.last_lines, ["int 1"]);
    }
}

/// This process's peak resident set (`VmHWM`), in bytes.
fn peak_rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap();
    kb * 1024
}

#[test]
fn output_without_newlines_is_cut_and_counted_not_held() {
    const WRITTEN: u64 = 256 << 20;
    let before = peak_rss_bytes();
    let longest = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = longest.clone();
    let opts = SpawnOptions {
        on_line: Some(Arc::new(move |_, line: &str| {
            seen.fetch_max(line.len(), Ordering::SeqCst);
        })),
        ..SpawnOptions::default()
    };
    let mut child =
        GuardedChild::spawn(sh(&format!("head -c {WRITTEN} /dev/zero")), &opts).unwrap();
    assert!(child.wait_timeout(Duration::from_secs(600)).is_some());
    let stopped = child.stop(Duration::from_secs(5));
    // Held whole, the output would cost twice what was written (the line, then its
    // copy as text): 512 MiB. The peak is the test process's, shared with the tests
    // running beside this one (the HTTP client's cap test holds 64 MiB), so the bound
    // leaves room for them and still fails a reader that holds the line.
    let grown = peak_rss_bytes().saturating_sub(before);
    assert!(
        grown < 200 << 20,
        "dyno grew by {grown} bytes reading {WRITTEN}"
    );
    let cap = crate::lines::MAX_LINE_BYTES;
    assert_eq!(longest.load(Ordering::SeqCst), cap);
    assert_eq!(
        stopped.dropped,
        Dropped {
            cut_lines: 1,
            bytes: WRITTEN - cap as u64
        }
    );
    assert_eq!(
        stopped.output_note().unwrap(),
        "output: 1 line over 64 KiB cut, 268.4 MB dropped"
    );
    let last = &stopped.last_lines[0];
    assert!(last.len() < 2100, "{}", last.len());
    assert!(last.ends_with(" [... 63.5 kB cut]"), "{last:?}");
}

/// Pids of processes whose command line is exactly `sleep <secs>`, alive or zombie.
fn sleeps_of(secs: &str) -> Vec<u32> {
    let want = format!("sleep\0{secs}\0");
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == want.as_bytes())
        })
        .collect()
}

#[test]
fn what_leaves_the_group_is_killed_named_and_reaped_at_the_stop_and_only_its_own() {
    // Sleep lengths no other test uses: this process's pid in them.
    let (a, b) = (
        format!("71{}", std::process::id()),
        format!("72{}", std::process::id()),
    );
    let daemonise = |secs: &str| {
        sh(&format!(
            "setsid sleep {secs} & echo started; exec sleep 600"
        ))
    };
    let ready = |secs: &str| eventually(|| sleeps_of(secs).len() == 1);
    let first = GuardedChild::spawn(daemonise(&a), &SpawnOptions::default()).unwrap();
    let second = GuardedChild::spawn(daemonise(&b), &SpawnOptions::default()).unwrap();
    assert!(ready(&a) && ready(&b), "the daemons never started");
    let daemon_a = sleeps_of(&a)[0];
    let stopped = first.stop(Duration::from_secs(5));
    assert_eq!(
        stopped.orphans,
        [crate::reaper::Orphan {
            pid: daemon_a,
            command: format!("sleep {a}"),
        }]
    );
    assert!(
        stopped
            .warnings()
            .contains(&format!("killed 1 process that outlived it (left its process group): pid {daemon_a} `sleep {a}`")),
        "{:?}",
        stopped.warnings()
    );
    // Killed and reaped: not even a zombie is left. The second child's daemon runs on.
    assert!(crate::procfs::read_stat(daemon_a).is_none());
    assert_eq!(sleeps_of(&b).len(), 1);
    let stopped = second.stop(Duration::from_secs(5));
    assert_eq!(stopped.orphans.len(), 1);
    assert!(sleeps_of(&b).is_empty());
}
