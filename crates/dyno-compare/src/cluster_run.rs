//! Running cluster subjects: each execution is a child `dyno cluster run`, and the
//! cluster files are checked by a child `dyno cluster check` before anything starts.
//!
//! Why a child process rather than a call: dyno-compare and dyno-cluster are command
//! crates, which do not import each other (compare runs nodes as child processes, and a
//! cluster is many nodes behind one command). The child is the dyno running the
//! comparison; it runs the cluster with the workload's rate and window and the release's
//! node, does not store the run (the comparison stores the execution), and writes the
//! run's compared metrics as a [`ComparedRun`] (the execution contract's
//! `dyno.cluster.compared/1`, in dyno-exec), which [`ClusterExecutor`] records into an
//! [`Execution`]. A failed run's directory (configs, node logs, the child's
//! output) is kept and named in the execution's warnings.

use crate::execution::{Execution, Outcome};
use crate::spec::{ComparisonFile, SubjectSpec, WorkloadSpec};
use crate::Executor;
use dyno_exec::ComparedRun;
use dyno_proc::{GuardedChild, SpawnOptions};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Seconds the child `dyno cluster run` gets, after the comparison's grace period, to
/// stop its nodes (each with its own grace period) before it is killed.
const CHILD_EXTRA_GRACE_S: f64 = 30.0;

/// A cluster file refused before anything started: the comparison file's key and line,
/// then the child `dyno cluster check`'s own diagnostic when it is the cluster file's.
#[derive(Debug, thiserror::Error)]
#[error("{at}")]
pub struct ClusterRefused {
    /// `file:line:column: key ...: what` of the comparison file.
    pub at: String,
    /// The cluster file's diagnostic (file, line, key and snippet), when it is at fault.
    #[source]
    pub cluster_file: Option<ChildSaid>,
}

/// What a child dyno said when it refused.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ChildSaid(pub String);

/// Checks every cluster subject's cluster file with the release's override applied,
/// with `dyno` (this dyno) as `dyno cluster check`. A refusal names the comparison
/// file's key and line, then the cluster file's own diagnostic; nothing has started yet.
pub fn check_clusters(
    cfg: &ComparisonFile,
    file: &Path,
    dyno: &Path,
) -> Result<(), ClusterRefused> {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    let at = |i: usize, key: &str, message: String| {
        let mut d = dyno_model::ConfigDiagnostic::at_key(
            file,
            &text,
            &format!("subject[{i}].{key}"),
            message,
        );
        d.snippet.clear();
        d.to_string()
    };
    for (i, s) in cfg.subjects.iter().enumerate() {
        let Some(c) = &s.cluster else { continue };
        let check = |extra: &[String]| {
            let mut cmd = Command::new(dyno);
            cmd.args(["cluster", "check", "--format", "json"])
                .arg(&c.file)
                .args(extra);
            child_error(cmd)
        };
        if let Some(said) = check(&[]) {
            return Err(ClusterRefused {
                at: at(
                    i,
                    "cluster",
                    format!("the cluster file {} is refused", c.file.display()),
                ),
                cluster_file: Some(said),
            });
        }
        if let Some(argv) = &c.node_command {
            let json = serde_json::to_string(argv).unwrap_or_default();
            if let Some(said) = check(&["--node-command".into(), json]) {
                return Err(refused(at(i, "node_command", said.0)));
            }
        }
        if c.node_binary.is_some() {
            if let Some(said) = check(&["--reference-only".into()]) {
                return Err(refused(at(i, "node_binary", said.0)));
            }
        }
    }
    Ok(())
}

fn refused(at: String) -> ClusterRefused {
    ClusterRefused {
        at,
        cluster_file: None,
    }
}

/// Runs `cmd` to its end; `Some(what it said)` when it failed (its error message, without
/// the `error: ` it starts with).
fn child_error(mut cmd: Command) -> Option<ChildSaid> {
    let out = match cmd.output() {
        Ok(out) if out.status.success() => return None,
        Ok(out) => out,
        Err(e) => return Some(ChildSaid(format!("cannot run {cmd:?}: {e}"))),
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    let said = match stderr.find("error: ") {
        Some(i) => &stderr[i + "error: ".len()..],
        None => &stderr,
    };
    Some(ChildSaid(said.trim_end().to_string()))
}

/// Runs a whole cluster per execution as a child `dyno cluster run`.
pub struct ClusterExecutor {
    /// This dyno: it runs the cluster, and the reference node unless a subject gives
    /// `node_binary`.
    dyno: PathBuf,
    /// Where each execution's run directory goes; complete runs are removed.
    runs: PathBuf,
    /// [`RUNS_LOCK`] in `runs`, held (`flock`) while this executor lives: a later
    /// comparison tells a killed one's directory (nobody holds it) from a live one's.
    lock: std::fs::File,
    /// Seconds between SIGINT and SIGKILL of the child, beyond its own nodes' grace.
    grace: Duration,
}

/// The prefix of the run directories' parent, `dyno-compare-clusters-<pid>`.
const RUNS_PREFIX: &str = "dyno-compare-clusters-";

/// The lock file of a runs directory.
const RUNS_LOCK: &str = ".owner.lock";

/// Marks a failed execution's run directory kept for the user (named in its warnings):
/// clearing a dead comparison's directory leaves it.
const KEPT_MARK: &str = ".kept";

impl ClusterExecutor {
    /// An executor whose children are `dyno`, stopped with `grace_s` seconds (plus the
    /// time their nodes need) of grace; run directories go under the temporary directory.
    /// What comparisons killed outright left there is cleared first ([`clear_dead_runs`]).
    pub fn new(dyno: PathBuf, grace_s: f64) -> std::io::Result<Self> {
        let tmp = std::env::temp_dir();
        clear_dead_runs(&tmp);
        let runs = tmp.join(format!("{RUNS_PREFIX}{}", std::process::id()));
        std::fs::create_dir_all(&runs)?;
        let lock = std::fs::File::create(runs.join(RUNS_LOCK))?;
        lock.lock()?;
        Ok(ClusterExecutor {
            dyno,
            runs,
            lock,
            grace: Duration::from_secs_f64(grace_s + CHILD_EXTRA_GRACE_S),
        })
    }

    /// The child `dyno cluster run` of one execution: the subject's cluster under the
    /// workload's rate and window (whatever the cluster file says: every subject runs
    /// the same load for the same time), writing its compared metrics to `compared`.
    fn command(
        &self,
        subject: &SubjectSpec,
        w: &WorkloadSpec,
        dir: &Path,
        compared: &Path,
    ) -> Command {
        let mut cmd = Command::new(&self.dyno);
        cmd.args(["cluster", "run", "--no-save", "--dir"])
            .arg(dir)
            .arg("--compared")
            .arg(compared)
            .arg("--rate-tps")
            .arg(w.rate.to_string())
            .arg("--warmup-s")
            .arg((w.warmup_s.ceil() as u64).to_string())
            .arg("--duration-s")
            .arg((w.measure_s.ceil() as u64).max(1).to_string());
        if let Some(c) = &subject.cluster {
            if let Some(argv) = &c.node_command {
                cmd.arg("--node-command")
                    .arg(serde_json::to_string(argv).unwrap_or_default());
            }
            if let Some(binary) = &c.node_binary {
                cmd.arg("--node-dyno").arg(binary);
            }
            cmd.arg(&c.file);
        }
        cmd
    }

    /// Runs the child until it ends, or stops it when `stop` is set; its last output
    /// lines when it failed.
    fn run_child(&self, cmd: Command, stop: &AtomicBool) -> Result<(), ChildSaid> {
        let mut child = GuardedChild::spawn(cmd, &SpawnOptions::default())
            .map_err(|e| ChildSaid(format!("cannot run dyno cluster run: {e}")))?;
        loop {
            if let Some(status) = child.wait_timeout(Duration::from_millis(100)) {
                let stopped = child.stop(self.grace);
                return match stopped.status {
                    Some(s) if s.success() => Ok(()),
                    _ => Err(ChildSaid(format!(
                        "dyno cluster run exited ({status}): {}",
                        errors_said(&stopped.last_lines)
                    ))),
                };
            }
            if stop.load(Ordering::SeqCst) {
                let stopped = child.stop(self.grace);
                return Err(ChildSaid(format!(
                    "stopped: {}",
                    errors_said(&stopped.last_lines)
                )));
            }
        }
    }
}

impl Drop for ClusterExecutor {
    fn drop(&mut self) {
        // Only when empty: a failed execution's logs are kept and named in its warnings.
        let _ = std::fs::remove_file(self.runs.join(RUNS_LOCK));
        let _ = self.lock.unlock();
        let _ = std::fs::remove_dir(&self.runs);
    }
}

/// Clears what comparisons killed outright (SIGKILL, the OOM killer) left in `tmp`: each
/// `dyno-compare-clusters-<pid>` directory nobody holds locked loses its half-done run
/// directories (a failed execution's, kept for the user, stay) and goes when empty.
/// Returns the directories it cleared.
pub fn clear_dead_runs(tmp: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return Vec::new();
    };
    let mut cleared = Vec::new();
    for entry in entries.flatten() {
        let dir = entry.path();
        let ours = entry.file_name().to_str().is_some_and(|n| {
            n.strip_prefix(RUNS_PREFIX)
                .is_some_and(|pid| pid.parse::<u32>().is_ok())
        });
        if !ours || !dir.is_dir() {
            continue;
        }
        // A directory without a lock file (a comparison that had not made it yet, or an
        // older dyno's) is judged by its pid.
        let owner_gone = match std::fs::File::open(dir.join(RUNS_LOCK)) {
            Ok(lock) => lock.try_lock().is_ok(),
            Err(_) => pid_of_runs(&dir).is_some_and(|pid| dyno_proc::start_ticks(pid).is_none()),
        };
        if !owner_gone {
            continue;
        }
        for run in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = run.path();
            if path.join(KEPT_MARK).exists() {
                continue;
            }
            let _ = if path.is_dir() {
                std::fs::remove_dir_all(&path)
            } else {
                std::fs::remove_file(&path)
            };
        }
        let _ = std::fs::remove_dir(&dir);
        cleared.push(dir);
    }
    cleared
}

/// The pid in a runs directory's name.
fn pid_of_runs(dir: &Path) -> Option<u32> {
    dir.file_name()?
        .to_str()?
        .strip_prefix(RUNS_PREFIX)?
        .parse()
        .ok()
}

impl Executor for ClusterExecutor {
    type Subject = SubjectSpec;
    type Workload = WorkloadSpec;

    fn execute(
        &mut self,
        subject: &SubjectSpec,
        workload: &WorkloadSpec,
        round: u32,
        stop: &AtomicBool,
    ) -> Execution {
        let mut exec = Execution::starting(&subject.name, &workload.name, round, Vec::new());
        let Some(cluster) = &subject.cluster else {
            exec.outcome = Outcome::failed(format!("subject `{}` is not a cluster", subject.name));
            return exec;
        };
        let name = format!(
            "r{round}-{}-{}",
            dns_safe(&subject.name),
            dns_safe(&workload.name)
        );
        let dir = self.runs.join(&name);
        let compared_file = self.runs.join(format!("{name}.compared.json"));
        let _ = std::fs::remove_dir_all(&dir);
        let _ = std::fs::remove_file(&compared_file);
        let cmd = self.command(subject, workload, &dir, &compared_file);
        let ran = self.run_child(cmd, stop);
        let compared = std::fs::read_to_string(&compared_file)
            .ok()
            .and_then(|text| ComparedRun::parse(&text).ok());
        let _ = std::fs::remove_file(&compared_file);
        exec.command_line = vec![
            "cluster".to_string(),
            cluster.file.display().to_string(),
            "--".into(),
        ];
        match compared {
            None => {
                exec.outcome = match ran {
                    _ if stop.load(Ordering::SeqCst) => Outcome::Interrupted,
                    Err(why) => Outcome::failed(why.0),
                    Ok(()) => Outcome::failed("dyno cluster run wrote no compared metrics".into()),
                }
            }
            Some(c) => c.record(&mut exec, stop.load(Ordering::SeqCst)),
        }
        // A failed run's configs and logs are what the user needs to see why; a complete
        // or interrupted one's are not (its execution is stored, or is run again).
        if !matches!(exec.outcome, Outcome::Failed { .. }) {
            let _ = std::fs::remove_dir_all(&dir);
        } else if dir.exists() {
            let _ = std::fs::write(dir.join(KEPT_MARK), b"");
            exec.warnings.push(format!(
                "the run's configs and logs are kept in {}",
                dir.display()
            ));
        }
        exec
    }
}

/// The `error: ` lines of a child's last output, else all of it.
fn errors_said(lines: &[String]) -> String {
    let errors: Vec<&str> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("error: "))
        .collect();
    if errors.is_empty() {
        lines.join(" | ")
    } else {
        errors.join(" | ")
    }
}

/// A subject or workload name as a directory name.
fn dns_safe(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_killed_comparisons_runs_are_cleared_and_live_or_kept_ones_stay() {
        let tmp = tempfile::tempdir().unwrap();
        let mut child = Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let runs = |pid: u32| tmp.path().join(format!("{RUNS_PREFIX}{pid}"));
        // Killed with a lock nobody holds: a half-done run goes, a kept failure stays.
        let killed = runs(dead);
        std::fs::create_dir_all(killed.join("r1-a-w/n0")).unwrap();
        std::fs::write(killed.join("r1-a-w.compared.json"), b"{").unwrap();
        std::fs::create_dir_all(killed.join("r0-b-w")).unwrap();
        std::fs::write(killed.join("r0-b-w").join(KEPT_MARK), b"").unwrap();
        std::fs::write(killed.join(RUNS_LOCK), b"").unwrap();
        // Killed before it made its lock: judged by its pid (not the same dead pid twice,
        // so a second dead one: an impossible pid).
        let lockless = tmp.path().join(format!("{RUNS_PREFIX}4294967295"));
        std::fs::create_dir_all(lockless.join("r1-a-w")).unwrap();
        // Live: this process holds its lock; and one without a lock whose pid runs.
        let live = runs(std::process::id());
        std::fs::create_dir_all(live.join("r1-a-w")).unwrap();
        let held = std::fs::File::create(live.join(RUNS_LOCK)).unwrap();
        held.lock().unwrap();
        let mut cleared = clear_dead_runs(tmp.path());
        cleared.sort();
        let mut expected = vec![killed.clone(), lockless.clone()];
        expected.sort();
        assert_eq!(cleared, expected);
        assert!(!killed.join("r1-a-w").exists() && !killed.join("r1-a-w.compared.json").exists());
        assert!(killed.join("r0-b-w").exists(), "a kept failure's logs stay");
        assert!(!lockless.exists());
        assert!(live.join("r1-a-w").exists());
    }
}
