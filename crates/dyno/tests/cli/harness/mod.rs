//! What every test of the `dyno` binary shares: the command with a neutral environment
//! (the debug build allowed, no store, colour or password leaking in from the caller's
//! shell), a temporary store and disk directory with tiny `machine` durations, the lock
//! slots heavy tests take so a few at most run at once, free loopback ports, node logs read as events,
//! and children that cannot outlive a failing test.

pub mod dashboards;
pub mod served;

use std::net::{TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::{Condvar, Mutex};
use tempfile::TempDir;

/// The throwaway PostgreSQL server dyno-store's tests use too.
pub use dyno_test_pg::PgServer;

/// `dyno` for `assert_cmd`: run the debug build on purpose, with no store chosen.
pub fn dyno() -> assert_cmd::Command {
    assert_cmd::Command::from_std(dyno_process())
}

/// `dyno` as a plain process, for tests that start it and signal or watch it. The
/// environment is the one [`dyno`] gives.
pub fn dyno_process() -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_dyno"));
    // Tests run the debug build; only the refusal's own test removes this.
    c.env("DYNO_ALLOW_DEBUG_BUILD", "1")
        .env_remove("DYNO_DB")
        .env_remove("PGPASSWORD")
        .env_remove("NO_COLOR");
    c
}

/// How many heavy tests may run at once, whatever the number of test threads: what one
/// former test file ran at once on two cores.
const HEAVY_AT_ONCE: usize = 2;

/// Slots for heavy tests: how many are taken, and whether a test waits to run alone.
struct HeavySlots {
    state: Mutex<(usize, usize)>,
    freed: Condvar,
}

static HEAVY: HeavySlots = HeavySlots {
    state: Mutex::new((0, 0)),
    freed: Condvar::new(),
};

/// A heavy test's slot, given back when dropped.
pub struct HeavySlot(usize);

impl Drop for HeavySlot {
    fn drop(&mut self) {
        let mut state = HEAVY.state.lock().unwrap_or_else(|p| p.into_inner());
        state.0 -= self.0;
        HEAVY.freed.notify_all();
    }
}

fn take(slots: usize) -> HeavySlot {
    // A heavy test that failed poisoned nothing it guarded; the next one may still run.
    let mut state = HEAVY.state.lock().unwrap_or_else(|p| p.into_inner());
    let alone = slots == HEAVY_AT_ONCE;
    if alone {
        state.1 += 1;
    }
    // A test waiting to run alone goes first, so heavy tests cannot starve it.
    while state.0 + slots > HEAVY_AT_ONCE || (!alone && state.1 > 0) {
        state = HEAVY.freed.wait(state).unwrap_or_else(|p| p.into_inner());
    }
    if alone {
        state.1 -= 1;
    }
    state.0 += slots;
    HeavySlot(slots)
}

/// Held by a test that loads the machine for seconds (a cluster, a browser): all the
/// tests are threads of one process, so without it every test thread could run one and
/// turn their deadlines into flakes. At most [`HEAVY_AT_ONCE`] run at once (two cluster
/// tests overlapped in their own file before); light tests run beside them. Tests that
/// bind fixed ports give each its own range, as heavy tests may overlap.
pub fn heavy() -> HeavySlot {
    take(1)
}

/// Held by a test that must not share the machine with another heavy test: one that
/// bounds a node's memory and progress under a flood, or waits on a Prometheus server's
/// answers (each was a test binary of its own before).
pub fn alone() -> HeavySlot {
    take(HEAVY_AT_ONCE)
}

/// Fast settings for every `dyno machine` metric.
pub const QUICK: [&str; 10] = [
    "--hash-duration",
    "0.02",
    "--verify-duration",
    "0.02",
    "--memory-duration",
    "0.02",
    "--disk-duration",
    "0.02",
    "--extra-duration",
    "0.02",
];

/// One test's temporary directory: the results store and the disk benchmark's files.
pub struct Env {
    pub dir: TempDir,
}

impl Env {
    pub fn new() -> Env {
        Env {
            dir: tempfile::tempdir().unwrap(),
        }
    }
    pub fn db(&self) -> PathBuf {
        self.dir.path().join("results.db")
    }
    pub fn disk(&self) -> PathBuf {
        let d = self.dir.path().join("disk");
        std::fs::create_dir_all(&d).unwrap();
        d
    }
    /// [`dyno`] with this test's store.
    pub fn dyno(&self) -> assert_cmd::Command {
        let mut c = dyno();
        c.env("DYNO_DB", self.db());
        c
    }
}

/// Entries in `dir` (to show nothing was left behind).
pub fn entries(dir: &Path) -> usize {
    std::fs::read_dir(dir).unwrap().count()
}

/// Writes `text` to `p` and returns the path.
pub fn write(p: &Path, text: &str) -> PathBuf {
    std::fs::write(p, text).unwrap();
    p.to_path_buf()
}

/// A TCP port free on loopback now.
pub fn free_tcp() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A UDP port free on loopback now.
pub fn free_udp() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The events called `name` in a finished node log (JSON lines); a line that is not
/// JSON fails the test.
pub fn events(log: &Path, name: &str) -> Vec<serde_json::Value> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["kind"] == "event" && v["event"] == name)
        .collect()
}

/// The events called `name` in a log a node is still writing: a missing file or a line
/// not yet complete is skipped.
pub fn events_so_far(log: &Path, name: &str) -> Vec<serde_json::Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["kind"] == "event" && v["event"] == name)
        .collect()
}

/// The command lines (NULs as spaces) of processes mentioning `needle`, such as a test's
/// temporary directory.
pub fn processes_mentioning(needle: &str) -> Vec<String> {
    processes(needle).into_iter().map(|(_, cmd)| cmd).collect()
}

/// The ids of processes whose command line holds `marker`.
pub fn processes_with(marker: &str) -> Vec<u32> {
    processes(marker).into_iter().map(|(pid, _)| pid).collect()
}

fn processes(needle: &str) -> Vec<(u32, String)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if text.contains(needle) {
                found.push((pid, text));
            }
        }
    }
    found
}

/// Runs `cmd` with standard output on a pipe whose reader has already gone, as after
/// `| head` has read what it wanted; returns how it ended and its standard error.
pub fn with_stdout_closed(cmd: &mut std::process::Command) -> std::process::Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    cmd.stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

/// Runs `cmd` with standard output and error both on a pipe whose reader has gone, as
/// `2>&1 | head` leaves them; returns how it ended.
pub fn with_output_closed(cmd: &mut std::process::Command) -> std::process::ExitStatus {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    cmd.stdin(Stdio::null())
        .stdout(writer.try_clone().unwrap())
        .stderr(writer)
        .status()
        .unwrap()
}

/// Runs `cmd` with standard output on a device that takes nothing (ENOSPC), the
/// machine's /dev/full opened for writing (never replaced); `None` where there is none.
pub fn with_stdout_full(cmd: &mut std::process::Command) -> Option<std::process::Output> {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        eprintln!("note: no /dev/full here; skipping the full-stdout case");
        return None;
    };
    Some(
        cmd.stdin(Stdio::null())
            .stdout(full)
            .stderr(Stdio::piped())
            .output()
            .unwrap(),
    )
}

/// A child process killed and reaped when dropped (a failing test leaves no orphan).
pub struct Reaped(pub Option<Child>);

impl Reaped {
    /// Waits for the child to end by itself and returns what it printed.
    pub fn wait_output(mut self) -> std::process::Output {
        self.0.take().unwrap().wait_with_output().unwrap()
    }
}

impl Drop for Reaped {
    fn drop(&mut self) {
        if let Some(c) = &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Writes `dir/genesis.toml` with `dyno node genesis --validators VALIDATORS` and the
/// other flags `args` give (replacing one there); panics with dyno's message if refused.
pub fn node_genesis(dir: &Path, validators: &str, args: &[&str]) -> PathBuf {
    let path = dir.join("genesis.toml");
    let out = dyno_process()
        .args([
            "node",
            "genesis",
            "--force",
            "--validators",
            validators,
            "--out",
        ])
        .arg(&path)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    path
}
