//! Who is writing a run, and whether that process still lives.
//!
//! `begin_run` records the writing process: host name, pid, and a token made of the boot
//! id and the process start time (from `/proc`). A run still marked `running` whose writer
//! is on this host and is gone (another boot, no such pid, or a pid reused by a process
//! that started at another time) died without finishing: `list_runs` and `run` report it
//! as `incomplete`, and `Store::reap_dead_runs` writes that down. A writer on another
//! host, or one this system cannot check (no `/proc`), is never declared dead.

use dyno_proc::procfs::{self, Liveness};

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
            token: token_of(pid),
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
        let Some(boot) = procfs::boot_id() else {
            return false;
        };
        if !recorded.starts_with(&format!("{boot}:")) {
            return true; // the machine rebooted since
        }
        match procfs::liveness(self.pid) {
            Liveness::Alive { start_ticks } => *recorded != format!("{boot}:{start_ticks}"),
            // Exited (a zombie not yet reaped), or no such process.
            Liveness::Zombie | Liveness::Gone => true,
        }
    }
}

fn hostname() -> String {
    procfs::hostname().unwrap_or_default()
}

/// `boot_id:start_ticks` of a live process.
fn token_of(pid: u32) -> Option<String> {
    let start = procfs::start_ticks(pid)?;
    Some(format!("{}:{start}", procfs::boot_id()?))
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
            token: Some(format!("{}:1", procfs::boot_id().unwrap())),
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
