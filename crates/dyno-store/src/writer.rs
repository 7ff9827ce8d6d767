//! Who is writing a run, and whether that process still lives.
//!
//! `begin_run` records the writing process: host name, pid, and a token made of the boot
//! id and the process start time (from `/proc`). A run still marked `running` whose writer
//! is on this host and is gone (another boot, no such pid, or a pid reused by a process
//! that started at another time) died without finishing: `list_runs` and `run` report it
//! as `incomplete`, and `Store::reap_dead_runs` writes that down. A writer on another
//! host, or one this system cannot check (no `/proc`), is never declared dead.

/// The identity of a process that writes runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Writer {
    /// Host name, from `/proc/sys/kernel/hostname`.
    pub host: String,
    /// Process id.
    pub pid: u32,
    /// `boot_id:start_ticks`, or `None` when `/proc` cannot tell.
    pub token: Option<String>,
}

impl Writer {
    /// This process.
    pub fn current() -> Writer {
        let pid = std::process::id();
        Writer {
            host: hostname(),
            pid,
            token: token_of("self"),
        }
    }

    /// True when `self` (as recorded in a run) is known to be no longer running.
    pub fn is_dead(&self) -> bool {
        let here = hostname();
        if here.is_empty() || self.host != here {
            return false;
        }
        let Some(recorded) = &self.token else {
            return false;
        };
        let Some(boot) = boot_id() else {
            return false;
        };
        if !recorded.starts_with(&format!("{boot}:")) {
            return true; // the machine rebooted since
        }
        match token_of(&self.pid.to_string()) {
            Some(now) => &now != recorded || is_zombie(self.pid),
            None => true, // no such process
        }
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

fn boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|s| s.trim().to_string())
}

/// Fields of `/proc/<pid>/stat` after the command name (which may hold spaces and parens).
fn stat_fields(pid: &str) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    Some(rest.split_whitespace().map(str::to_string).collect())
}

fn token_of(pid: &str) -> Option<String> {
    // After the command name come state (field 3) ... starttime (field 22).
    let start = stat_fields(pid)?.get(22 - 3)?.clone();
    Some(format!("{}:{start}", boot_id()?))
}

fn is_zombie(pid: u32) -> bool {
    stat_fields(&pid.to_string())
        .and_then(|f| f.first().cloned())
        .is_some_and(|state| state == "Z" || state == "X")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive() {
        assert!(!Writer::current().is_dead());
    }

    #[test]
    fn a_finished_child_is_dead_and_other_hosts_are_not_judged() {
        let me = Writer::current();
        if me.token.is_none() {
            return; // no /proc on this system: liveness is never judged
        }
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        let gone = Writer {
            pid,
            token: Some(format!("{}:1", boot_id().unwrap())),
            ..me.clone()
        };
        assert!(gone.is_dead());
        let elsewhere = Writer {
            host: format!("{}-elsewhere", me.host),
            ..gone.clone()
        };
        assert!(!elsewhere.is_dead());
        let other_boot = Writer {
            token: Some("another-boot:1".into()),
            ..me
        };
        assert!(other_boot.is_dead());
    }
}
