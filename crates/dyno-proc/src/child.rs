//! Child processes that never outlive dyno: [`GuardedChild`].
//!
//! The child gets its own process group, so a Ctrl-C in the terminal reaches dyno only:
//! dyno then stops the child itself ([`GuardedChild::stop`]: the stop signal to the whole
//! group, SIGKILL after a grace period), and anything the child started goes with it.
//! Dropping a `GuardedChild` that was not stopped (a panic, an early return) SIGKILLs the
//! group and reaps the child.
//!
//! If dyno itself dies without stopping the child (SIGKILL, the OOM killer, a crash), two
//! things still end the child's group: the kernel sends the spawned process SIGKILL when
//! the thread that spawned it exits (`PR_SET_PDEATHSIG`, Linux), and a *group guard*, a
//! tiny `sh` that dyno starts beside each child (outside the child's tree and group, so it
//! is neither sampled nor signalled with it), waits for end-of-file on a pipe only dyno
//! holds open: the kernel closes it when dyno dies, and the guard then SIGKILLs the
//! child's whole group (with the shell's built-in `kill`), which the parent-death signal
//! alone would not reach (a launcher shell's children, for one).
//!
//! A process that leaves the child's group (`setsid`, a daemon) is not reached by the
//! group's stop signal: dyno is the subreaper of what it starts, every descendant carries
//! the child's token in its environment, and [`GuardedChild::stop`] ends, names
//! ([`Stopped::orphans`]) and reaps whatever of it is left ([`crate::reaper`]).
//!
//! The parent-death signal fires when the *thread* that spawned the child exits: spawn
//! from a thread that lives as long as the child should (the main thread, or the thread
//! that also stops it).
//!
//! The child's stdout and stderr are read line by line by two threads: the last lines are
//! kept for the record of a failure, a readiness pattern is watched for, lines can be
//! copied to a log file and handed to a callback (a load generator's reports).
//!
//! A launcher of thousands of children (a cluster's nodes) can spare dyno both costs per
//! child: [`SpawnOptions::output_to_log_only`] lets the child write its output straight
//! into its log file (no reader threads; the last lines are read back from the file),
//! and one [`GroupGuard`] can guard every child's group (one `sh` in all).

use crate::lines::{BoundedLines, Dropped};
use crate::signal::{signal_group, Signal};
use regex::Regex;
use std::collections::VecDeque;
use std::io::{BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Output lines kept by default for the record of a failed run.
pub const TAIL_LINES: usize = 20;

/// The longest kept line of the tail ([`GuardedChild::last_lines`]): a failure's record
/// shows a few lines, not 20 of 64 KiB. (Callbacks and the log file see lines up to
/// [`MAX_LINE_BYTES`](crate::lines::MAX_LINE_BYTES).)
pub const TAIL_LINE_BYTES: usize = 2048;

/// Which output stream a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// A callback that sees every output line of a child (from two reader threads).
pub type LineSink = Arc<dyn Fn(Stream, &str) + Send + Sync>;

/// How to run a child.
#[derive(Clone)]
pub struct SpawnOptions {
    /// What [`GuardedChild::stop`] sends first (SIGKILL follows after the grace).
    pub stop_signal: Signal,
    /// Output lines kept for [`GuardedChild::last_lines`].
    pub tail_lines: usize,
    /// A line to watch for in the output ([`GuardedChild::saw_ready_line`]); registered
    /// before the child starts, so no early line is missed.
    pub ready_line: Option<Regex>,
    /// A file every output line is appended to.
    pub log_file: Option<PathBuf>,
    /// Called with every output line.
    pub on_line: Option<LineSink>,
    /// The child writes its stdout and stderr straight into [`SpawnOptions::log_file`]
    /// (appending; nowhere without one): no reader threads in dyno, and
    /// [`GuardedChild::last_lines`] reads the end of the file. `ready_line` and
    /// `on_line` then see nothing.
    pub output_to_log_only: bool,
    /// A guard shared with other children instead of a `sh` of this child's own.
    pub guard: Option<Arc<GroupGuard>>,
    /// The CPUs the child (and everything it starts) runs on; all when `None`.
    pub cpus: Option<Vec<usize>>,
}

impl Default for SpawnOptions {
    fn default() -> Self {
        SpawnOptions {
            stop_signal: Signal::Int,
            tail_lines: TAIL_LINES,
            ready_line: None,
            log_file: None,
            on_line: None,
            output_to_log_only: false,
            guard: None,
            cpus: None,
        }
    }
}

impl std::fmt::Debug for SpawnOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpawnOptions")
            .field("stop_signal", &self.stop_signal)
            .field("tail_lines", &self.tail_lines)
            .field("ready_line", &self.ready_line)
            .field("log_file", &self.log_file)
            .field("on_line", &self.on_line.is_some())
            .field("output_to_log_only", &self.output_to_log_only)
            .field("shared_guard", &self.guard.is_some())
            .field("cpus", &self.cpus)
            .finish()
    }
}

/// Why a child could not start.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// The program could not be executed.
    #[error("cannot start `{program}`: {source}")]
    Start {
        /// The program as given.
        program: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The log file could not be opened.
    #[error("cannot open the log file {}: {source}", path.display())]
    LogFile {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

/// What the reader threads share with the owner.
struct Output {
    tail: Mutex<VecDeque<String>>,
    tail_lines: usize,
    ready_line: Option<Regex>,
    ready_seen: AtomicBool,
    log: Option<Mutex<std::fs::File>>,
    on_line: Option<LineSink>,
    /// What the readers cut from lines over [`MAX_LINE_BYTES`](crate::lines::MAX_LINE_BYTES).
    dropped: Mutex<Dropped>,
}

impl Output {
    fn take(&self, stream: Stream, line: String) {
        if let Some(re) = &self.ready_line {
            if !self.ready_seen.load(Ordering::Relaxed) && re.is_match(&line) {
                self.ready_seen.store(true, Ordering::SeqCst);
            }
        }
        if let Some(log) = &self.log {
            let mut f = log.lock().unwrap_or_else(|e| e.into_inner());
            // A full disk must not stop the child's output from being drained.
            let _ = writeln!(f, "{line}");
        }
        if let Some(sink) = &self.on_line {
            sink(stream, &line);
        }
        if self.tail_lines > 0 {
            let mut t = self.tail.lock().unwrap_or_else(|e| e.into_inner());
            if t.len() == self.tail_lines {
                t.pop_front();
            }
            t.push_back(tail_line(line));
        }
    }
}

fn read_lines(
    stream: impl Read + Send + 'static,
    which: Stream,
    out: Arc<Output>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        // Bytes, not `lines()`: one line that is not UTF-8 must not end the reading (the
        // pipe would fill and the child block). Cut at a cap: output without newlines
        // (`cat /dev/zero`) must not become one line held in memory.
        let mut reader = BoundedLines::new(BufReader::new(stream));
        let mut buf = Vec::new();
        let mut counted = Dropped::default();
        while matches!(reader.next_line(&mut buf), Ok(true)) {
            let now = reader.dropped();
            if now != counted {
                let mut d = out.dropped.lock().unwrap_or_else(|e| e.into_inner());
                d.add(Dropped {
                    cut_lines: now.cut_lines - counted.cut_lines,
                    bytes: now.bytes - counted.bytes,
                });
                counted = now;
            }
            out.take(which, String::from_utf8_lossy(&buf).into_owned());
        }
    })
}

/// A kept line for the record of a failure: at most [`TAIL_LINE_BYTES`] of it, the cut
/// said at its end.
fn tail_line(mut line: String) -> String {
    if line.len() > TAIL_LINE_BYTES {
        let cut = line.len();
        let mut end = TAIL_LINE_BYTES;
        while !line.is_char_boundary(end) {
            end -= 1;
        }
        line.truncate(end);
        line.push_str(&format!(
            " [... {} cut]",
            crate::lines::bytes((cut - end) as u64)
        ));
    }
    line
}

/// A running child in its own process group, guarded so that it never outlives dyno
/// (see the module documentation).
pub struct GuardedChild {
    child: Child,
    output: Arc<Output>,
    readers: Vec<std::thread::JoinHandle<()>>,
    /// The file the child writes its output into itself ([`SpawnOptions::output_to_log_only`]).
    written_log: Option<PathBuf>,
    /// The group guard; `None` if it could not start.
    guard: Option<Guard>,
    /// The child's [`OWNER_VAR`](crate::reaper::OWNER_VAR): what carries it descends
    /// from this child.
    token: String,
    stop_signal: Signal,
    /// Set once [`GuardedChild::begin_stop`] sent the stop signal.
    stop_sent: bool,
    /// Set once the group was killed and the child reaped; until then dropping kills the
    /// group.
    reaped: bool,
}

impl std::fmt::Debug for GuardedChild {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuardedChild")
            .field("pid", &self.child.id())
            .field("guarded", &self.guard.is_some())
            .finish()
    }
}

/// How a stop went.
#[derive(Debug, Clone)]
pub struct Stopped {
    /// The exit status, when the child could be waited for.
    pub status: Option<ExitStatus>,
    /// The child had exited by itself before the stop.
    pub exited_before: bool,
    /// The child did not exit within the grace period and was SIGKILLed.
    pub killed_after: Option<Duration>,
    /// The signal sent first.
    pub signal: Signal,
    /// The last output lines.
    pub last_lines: Vec<String>,
    /// What was cut from output lines over the cap.
    pub dropped: Dropped,
    /// Processes that outlived the child outside its group, killed and reaped.
    pub orphans: Vec<crate::reaper::Orphan>,
}

impl Stopped {
    /// A warning to record when the child had to be killed.
    pub fn warning(&self) -> Option<String> {
        self.killed_after.map(|grace| {
            format!(
                "did not stop within {:.0} s of {}: killed",
                grace.as_secs_f64(),
                self.signal
            )
        })
    }

    /// Every warning and note of the stop: killed after the grace, output cut, processes
    /// that outlived the child.
    pub fn warnings(&self) -> Vec<String> {
        self.warning()
            .into_iter()
            .chain(self.output_note())
            .chain(crate::reaper::describe(&self.orphans))
            .collect()
    }

    /// A note to record when output lines were cut: "output: 1 line over 64 KiB cut,
    /// 2.5 GB dropped".
    pub fn output_note(&self) -> Option<String> {
        self.dropped.describe().map(|d| format!("output: {d}"))
    }
}

impl GuardedChild {
    /// Starts `cmd` (stdin closed, stdout and stderr read by dyno) in a process group of
    /// its own, with the parent-death signal and a group guard.
    pub fn spawn(mut cmd: Command, opts: &SpawnOptions) -> Result<GuardedChild, SpawnError> {
        let program = cmd.get_program().to_string_lossy().into_owned();
        let log = match &opts.log_file {
            Some(path) => Some(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .map_err(|source| SpawnError::LogFile {
                        path: path.clone(),
                        source,
                    })?,
            ),
            None => None,
        };
        cmd.stdin(Stdio::null()).process_group(0);
        let (log, written_log) = match (opts.output_to_log_only, log) {
            (true, Some(file)) => {
                let err = file.try_clone().map_err(|source| SpawnError::LogFile {
                    path: opts.log_file.clone().unwrap_or_default(),
                    source,
                })?;
                cmd.stdout(Stdio::from(file)).stderr(Stdio::from(err));
                (None, opts.log_file.clone())
            }
            (true, None) => {
                cmd.stdout(Stdio::null()).stderr(Stdio::null());
                (None, None)
            }
            (false, log) => {
                cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
                (log.map(Mutex::new), None)
            }
        };
        crate::sys::kill_when_parent_dies(&mut cmd);
        // What the child starts and what escapes its group comes back to dyno, named.
        crate::reaper::become_subreaper();
        let token = crate::reaper::new_token();
        cmd.env(crate::reaper::OWNER_VAR, &token);
        if let Some(cpus) = &opts.cpus {
            crate::sys::run_on_cpus(&mut cmd, cpus).map_err(|source| SpawnError::Start {
                program: program.clone(),
                source,
            })?;
        }
        let mut child = crate::reaper::spawn_listed(|| cmd.spawn(), Child::id)
            .map_err(|source| SpawnError::Start { program, source })?;
        let guard = match &opts.guard {
            Some(shared) => shared
                .watch(child.id())
                .then(|| Guard::Shared(Arc::clone(shared), child.id())),
            None => group_guard(child.id()).map(Guard::Own),
        };
        let output = Arc::new(Output {
            tail: Mutex::new(VecDeque::new()),
            tail_lines: opts.tail_lines,
            ready_line: opts.ready_line.clone(),
            ready_seen: AtomicBool::new(false),
            log,
            on_line: opts.on_line.clone(),
            dropped: Mutex::default(),
        });
        let mut readers = Vec::new();
        if let Some(out) = child.stdout.take() {
            readers.push(read_lines(out, Stream::Stdout, output.clone()));
        }
        if let Some(err) = child.stderr.take() {
            readers.push(read_lines(err, Stream::Stderr, output.clone()));
        }
        Ok(GuardedChild {
            child,
            output,
            readers,
            written_log,
            guard,
            token,
            stop_signal: opts.stop_signal,
            stop_sent: false,
            reaped: false,
        })
    }

    /// The child's pid (also its process group id).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the group guard runs (it could not start when `sh` is missing; the
    /// parent-death signal then still covers the child itself).
    pub fn guarded(&self) -> bool {
        self.guard.is_some()
    }

    /// The last output lines, oldest first.
    pub fn last_lines(&self) -> Vec<String> {
        if let Some(path) = &self.written_log {
            return last_lines_of(path, self.output.tail_lines);
        }
        self.output
            .tail
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .collect()
    }

    /// What was cut so far from output lines over
    /// [`MAX_LINE_BYTES`](crate::lines::MAX_LINE_BYTES) (nothing when the child writes
    /// into its log file itself).
    pub fn output_dropped(&self) -> Dropped {
        *self
            .output
            .dropped
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Whether a line matching [`SpawnOptions::ready_line`] has been output.
    pub fn saw_ready_line(&self) -> bool {
        self.output.ready_seen.load(Ordering::SeqCst)
    }

    /// `Some(description)` once the child has exited (it is then reaped, but its group
    /// may live on until [`GuardedChild::stop`]).
    pub fn exited(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(Some(status)) => Some(status.to_string()),
            Ok(None) => None,
            Err(e) => Some(format!("cannot be waited for: {e}")),
        }
    }

    /// Waits until the child exits (`Some(description)`, as [`GuardedChild::exited`]) or
    /// `timeout` passes (`None`). It blocks on the kernel's notice of the exit, so the
    /// caller learns of it within microseconds, not at the next poll; where the kernel
    /// has no pidfds it polls every millisecond.
    pub fn wait_timeout(&mut self, timeout: Duration) -> Option<String> {
        let deadline = Instant::now() + timeout;
        if let Some(done) = self.exited() {
            return Some(done);
        }
        match crate::sys::wait_exit(self.pid(), timeout) {
            Ok(_) => self.exited(),
            Err(_) => loop {
                if let Some(done) = self.exited() {
                    return Some(done);
                }
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return None;
                }
                std::thread::sleep(left.min(Duration::from_millis(1)));
            },
        }
    }

    /// Sends a signal to the child's whole group.
    pub fn signal(&self, sig: Signal) -> std::io::Result<()> {
        signal_group(self.pid(), sig)
    }

    /// Sends the stop signal to the group without waiting: a launcher of thousands of
    /// children signals them all first, so they stop together, then [`GuardedChild::stop`]s
    /// each (which does not signal again).
    pub fn begin_stop(&mut self) {
        if !self.stop_sent && self.exited().is_none() {
            let _ = self.signal(self.stop_signal);
            self.stop_sent = true;
        }
    }

    /// The stop signal to the group (unless [`GuardedChild::begin_stop`] sent it), SIGKILL
    /// after `grace`; always reaps. Whatever is left of the group (the child's own
    /// children) is SIGKILLed too.
    pub fn stop(mut self, grace: Duration) -> Stopped {
        let exited_before = !self.stop_sent && self.exited().is_some();
        let mut killed_after = None;
        if !exited_before {
            if !self.stop_sent {
                let _ = self.signal(self.stop_signal);
            }
            if self.wait_timeout(grace).is_none() {
                killed_after = Some(grace);
            }
        }
        self.dismiss_guard();
        let _ = self.signal(Signal::Kill);
        let status = self.child.wait().ok();
        self.reaped = true;
        crate::reaper::unlist(self.pid());
        let orphans = crate::reaper::sweep(&self.token, self.pid());
        // What left the group (setsid) was ended by the sweep; whatever else still holds
        // the pipes (a process that escaped dyno's tree too), is waited for briefly, then
        // the reader threads are left behind rather than hang.
        let deadline = Instant::now() + Duration::from_secs(2);
        while self.readers.iter().any(|r| !r.is_finished()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        for r in self.readers.drain(..).filter(|r| r.is_finished()) {
            let _ = r.join();
        }
        Stopped {
            status,
            exited_before,
            killed_after,
            signal: self.stop_signal,
            last_lines: self.last_lines(),
            dropped: self.output_dropped(),
            orphans,
        }
    }

    /// Ends the group guard before dyno reaps the child: while the child's zombie holds
    /// its pid, the group id cannot be reused, so a guard that fires late hits nothing
    /// else. (A child that exited by itself was reaped already; its group id could then
    /// be reused only after the pid space wrapped around within that moment.)
    fn dismiss_guard(&mut self) {
        match self.guard.take() {
            Some(Guard::Own(mut guard)) => {
                let _ = guard.kill();
                let _ = guard.wait();
                crate::reaper::unlist(guard.id());
            }
            Some(Guard::Shared(shared, pgid)) => shared.forget(pgid),
            None => {}
        }
    }
}

impl Drop for GuardedChild {
    fn drop(&mut self) {
        if !self.reaped {
            self.dismiss_guard();
            let _ = self.signal(Signal::Kill);
            let _ = self.child.wait();
            crate::reaper::unlist(self.pid());
            crate::reaper::sweep(&self.token, self.pid());
        }
    }
}

/// What guards a child's group.
enum Guard {
    /// A `sh` of its own.
    Own(Child),
    /// A guard shared with other children, watching this group id.
    Shared(Arc<GroupGuard>, u32),
}

/// The last `n` lines of the file at `path` (its last 64 KiB are read).
fn last_lines_of(path: &std::path::Path, n: usize) -> Vec<String> {
    use std::io::{Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(path) else {
        return Vec::new();
    };
    let len = f.metadata().map_or(0, |m| m.len());
    let from = len.saturating_sub(crate::lines::MAX_LINE_BYTES as u64);
    if f.seek(SeekFrom::Start(from)).is_err() {
        return Vec::new();
    }
    let mut bytes = Vec::new();
    if f.read_to_end(&mut bytes).is_err() {
        return Vec::new();
    }
    let text = String::from_utf8_lossy(&bytes);
    let mut lines: Vec<&str> = text.lines().collect();
    if from > 0 && !lines.is_empty() {
        // The first line read is most likely cut.
        lines.remove(0);
    }
    let skip = lines.len().saturating_sub(n);
    lines[skip..]
        .iter()
        .map(|l| tail_line(l.to_string()))
        .collect()
}

/// One group guard for many children (a cluster's thousands of nodes): a tiny `sh` that
/// reads group ids from a pipe only dyno holds, `+ PGID` to watch a group and `- PGID` to
/// forget it (sent before dyno reaps that child, so a reused id is never hit), and at
/// end-of-file (dyno died, or dropped the guard) SIGKILLs every group it still watches.
/// One process and one descriptor in all, instead of a `sh` per child.
pub struct GroupGuard {
    guard: Mutex<(Child, Option<std::process::ChildStdin>)>,
}

impl std::fmt::Debug for GroupGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupGuard").finish_non_exhaustive()
    }
}

impl GroupGuard {
    /// Starts the guard; `None` when `sh` cannot run (the parent-death signal still covers
    /// each child itself).
    pub fn start() -> Option<Arc<GroupGuard>> {
        // `groups` is " id id ... " with a space on each side of every id, so an id is
        // removed by cutting around " id ".
        let script = r#"groups=" "
while read -r op g; do
  case $op in
    +) groups="$groups$g " ;;
    -) case $groups in *" $g "*) groups="${groups%% $g *} ${groups#* $g }" ;; esac ;;
  esac
done
for g in $groups; do kill -KILL "-$g" 2>/dev/null; done"#;
        let mut child = guard_shell(&[script, "dyno-group-guard"])?;
        let stdin = child.stdin.take();
        Some(Arc::new(GroupGuard {
            guard: Mutex::new((child, stdin)),
        }))
    }

    fn send(&self, line: &str) -> bool {
        let mut g = self.guard.lock().unwrap_or_else(|e| e.into_inner());
        match g.1.as_mut() {
            Some(stdin) => stdin.write_all(line.as_bytes()).is_ok(),
            None => false,
        }
    }

    /// Starts watching group `pgid`; false when the guard is gone.
    fn watch(&self, pgid: u32) -> bool {
        self.send(&format!("+ {pgid}\n"))
    }

    /// Stops watching group `pgid` (before its leader is reaped).
    fn forget(&self, pgid: u32) {
        self.send(&format!("- {pgid}\n"));
    }

    /// The guard's pid (its own process group).
    pub fn pid(&self) -> u32 {
        self.guard.lock().unwrap_or_else(|e| e.into_inner()).0.id()
    }
}

impl Drop for GroupGuard {
    /// Closes the pipe once the last child holding the guard is gone (each forgot its
    /// group first): the guard finds nothing to kill, exits, and is reaped here.
    fn drop(&mut self) {
        let g = self.guard.get_mut().unwrap_or_else(|e| e.into_inner());
        drop(g.1.take());
        let _ = g.0.wait();
        crate::reaper::unlist(g.0.id());
    }
}

/// Starts the group guard of process group `pgid`: it blocks reading a pipe whose write
/// end only dyno holds (std opens it close-on-exec, so no child inherits it) and SIGKILLs
/// the group at end-of-file, i.e. when dyno exits without dismissing it. It has a group
/// of its own so that a Ctrl-C at the terminal does not end it. `kill` is the shell's
/// built-in: nothing more is spawned.
fn group_guard(pgid: u32) -> Option<Child> {
    guard_shell(&[
        "read -r _; kill -KILL \"-$1\" 2>/dev/null",
        "dyno-group-guard",
        &pgid.to_string(),
    ])
}

/// `sh -c SCRIPT NAME ARGS...` (`script_and_args`) as a guard: reading a pipe from dyno,
/// in a group of its own, listed as a process dyno-proc reaps itself.
fn guard_shell(script_and_args: &[&str]) -> Option<Child> {
    crate::reaper::spawn_listed(
        || {
            Command::new("sh")
                .arg("-c")
                .args(script_and_args)
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .process_group(0)
                .spawn()
        },
        Child::id,
    )
    .ok()
}

#[cfg(test)]
mod tests;
