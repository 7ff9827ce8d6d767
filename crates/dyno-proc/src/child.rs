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
//! The parent-death signal fires when the *thread* that spawned the child exits: spawn
//! from a thread that lives as long as the child should (the main thread, or the thread
//! that also stops it).
//!
//! The child's stdout and stderr are read line by line by two threads: the last lines are
//! kept for the record of a failure, a readiness pattern is watched for, lines can be
//! copied to a log file and handed to a callback (a load generator's reports).

use crate::signal::{signal_group, Signal};
use regex::Regex;
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Output lines kept by default for the record of a failed run.
pub const TAIL_LINES: usize = 20;

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
            t.push_back(line);
        }
    }
}

fn read_lines(
    stream: impl Read + Send + 'static,
    which: Stream,
    out: Arc<Output>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stream);
        let mut buf = Vec::new();
        // Bytes, not `lines()`: one line that is not UTF-8 must not end the reading (the
        // pipe would fill and the child block).
        while matches!(reader.read_until(b'\n', &mut buf), Ok(n) if n > 0) {
            let text = String::from_utf8_lossy(&buf);
            let line = text.trim_end_matches(['\n', '\r']).to_string();
            out.take(which, line);
            buf.clear();
        }
    })
}

/// A running child in its own process group, guarded so that it never outlives dyno
/// (see the module documentation).
pub struct GuardedChild {
    child: Child,
    output: Arc<Output>,
    readers: Vec<std::thread::JoinHandle<()>>,
    /// The group guard; `None` if it could not start.
    guard: Option<Child>,
    stop_signal: Signal,
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
}

impl GuardedChild {
    /// Starts `cmd` (stdin closed, stdout and stderr read by dyno) in a process group of
    /// its own, with the parent-death signal and a group guard.
    pub fn spawn(mut cmd: Command, opts: &SpawnOptions) -> Result<GuardedChild, SpawnError> {
        let program = cmd.get_program().to_string_lossy().into_owned();
        let log = match &opts.log_file {
            Some(path) => Some(Mutex::new(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .map_err(|source| SpawnError::LogFile {
                        path: path.clone(),
                        source,
                    })?,
            )),
            None => None,
        };
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        crate::sys::kill_when_parent_dies(&mut cmd);
        if let Some(cpus) = &opts.cpus {
            crate::sys::run_on_cpus(&mut cmd, cpus).map_err(|source| SpawnError::Start {
                program: program.clone(),
                source,
            })?;
        }
        let mut child = cmd
            .spawn()
            .map_err(|source| SpawnError::Start { program, source })?;
        let guard = group_guard(child.id());
        let output = Arc::new(Output {
            tail: Mutex::new(VecDeque::new()),
            tail_lines: opts.tail_lines,
            ready_line: opts.ready_line.clone(),
            ready_seen: AtomicBool::new(false),
            log,
            on_line: opts.on_line.clone(),
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
            guard,
            stop_signal: opts.stop_signal,
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
        self.output
            .tail
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .collect()
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

    /// The stop signal to the group, SIGKILL after `grace`; always reaps. Whatever is left
    /// of the group (the child's own children) is SIGKILLed too.
    pub fn stop(mut self, grace: Duration) -> Stopped {
        let exited_before = self.exited().is_some();
        let mut killed_after = None;
        if !exited_before {
            let _ = self.signal(self.stop_signal);
            if self.wait_timeout(grace).is_none() {
                killed_after = Some(grace);
            }
        }
        self.dismiss_guard();
        let _ = self.signal(Signal::Kill);
        let status = self.child.wait().ok();
        self.reaped = true;
        // A process that left the group (setsid) may still hold the pipes: wait for the
        // output briefly, then leave the reader threads behind rather than hang.
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
        }
    }

    /// Ends the group guard before dyno reaps the child: while the child's zombie holds
    /// its pid, the group id cannot be reused, so a guard that fires late hits nothing
    /// else. (A child that exited by itself was reaped already; its group id could then
    /// be reused only after the pid space wrapped around within that moment.)
    fn dismiss_guard(&mut self) {
        if let Some(mut guard) = self.guard.take() {
            let _ = guard.kill();
            let _ = guard.wait();
        }
    }
}

impl Drop for GuardedChild {
    fn drop(&mut self) {
        if !self.reaped {
            self.dismiss_guard();
            let _ = self.signal(Signal::Kill);
            let _ = self.child.wait();
        }
    }
}

/// Starts the group guard of process group `pgid`: it blocks reading a pipe whose write
/// end only dyno holds (std opens it close-on-exec, so no child inherits it) and SIGKILLs
/// the group at end-of-file, i.e. when dyno exits without dismissing it. It has a group
/// of its own so that a Ctrl-C at the terminal does not end it. `kill` is the shell's
/// built-in: nothing more is spawned.
fn group_guard(pgid: u32) -> Option<Child> {
    Command::new("sh")
        .args([
            "-c",
            "read -r _; kill -KILL \"-$1\" 2>/dev/null",
            "dyno-group-guard",
            &pgid.to_string(),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .ok()
}

#[cfg(test)]
mod tests;
