//! One build process, run as a guarded child (dyno-proc): in a process group of its own
//! that never outlives dyno, its output copied to a log file and its last lines kept,
//! and stopped with its whole group (a compiler's children too) as soon as the stop flag
//! is set. A build in dyno's own process group would get the terminal's Ctrl-C as well,
//! but a SIGTERM or a dyno that is killed would leave it running.

use crate::error::BuildError;
use dyno_proc::{GuardedChild, Signal, SpawnOptions};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Output lines kept of a build.
pub const TAIL_LINES: usize = 20;

/// How long a build may take to stop after SIGINT before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// How often the stop flag is looked at while a build runs.
const POLL: Duration = Duration::from_millis(100);

/// How one build process ended.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessRun {
    /// It exited 0.
    pub ok: bool,
    /// Its exit status, as the OS says it.
    pub status: String,
    /// Its last output lines (stdout and stderr together).
    pub tail: Vec<String>,
    /// Wall time, seconds.
    pub seconds: f64,
}

/// Runs `cmd` to completion, its output appended to `log` when given. Returns
/// [`BuildError::Interrupted`] once `stop` is set (the build's group stopped and reaped)
/// and [`BuildError::Tool`] when it cannot start.
pub fn run_guarded(
    cmd: Command,
    log: Option<&Path>,
    stop: &AtomicBool,
) -> Result<ProcessRun, BuildError> {
    let line = format!("{cmd:?}").replace('"', "");
    let opts = SpawnOptions {
        stop_signal: Signal::Int,
        tail_lines: TAIL_LINES,
        log_file: log.map(Path::to_path_buf),
        ..SpawnOptions::default()
    };
    let started = Instant::now();
    let mut child = GuardedChild::spawn(cmd, &opts).map_err(|e| BuildError::Tool {
        command: line,
        message: e.to_string(),
    })?;
    loop {
        if stop.load(Ordering::SeqCst) {
            child.stop(STOP_GRACE);
            return Err(BuildError::Interrupted);
        }
        if child.wait_timeout(POLL).is_some() {
            break;
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let stopped = child.stop(Duration::ZERO);
    let ok = stopped.status.is_some_and(|s| s.success());
    let status = stopped
        .status
        .map_or_else(|| "unknown status".to_string(), |s| s.to_string());
    Ok(ProcessRun {
        ok,
        status,
        tail: stopped.last_lines,
        seconds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_build_ends_with_its_status_and_last_lines() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "for i in $(seq 1 30); do echo line $i; done; exit 4"]);
        let run = run_guarded(cmd, None, &AtomicBool::new(false)).unwrap();
        assert!(!run.ok);
        assert!(run.status.contains('4'), "{}", run.status);
        assert_eq!(run.tail.len(), TAIL_LINES);
        assert_eq!(run.tail.last().unwrap(), "line 30");
    }

    #[test]
    fn the_stop_flag_ends_the_build_and_its_children() {
        let marker = format!("dyno-build-stop-{}", std::process::id());
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let setter = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            flag.store(true, Ordering::SeqCst);
        });
        let mut cmd = Command::new("sh");
        // Inner shells that name the marker and outlive their parent unless the whole
        // group is stopped.
        let inner = format!("sh -c 'sleep 60; : {marker}'");
        cmd.args(["-c", &format!("{inner} & {inner}; wait")]);
        let e = run_guarded(cmd, None, &stop).unwrap_err();
        setter.join().unwrap();
        assert!(matches!(e, BuildError::Interrupted), "{e}");
        let left = std::process::Command::new("pgrep")
            .args(["-f", &marker])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default();
        assert_eq!(left, "", "build processes left running");
    }
}
