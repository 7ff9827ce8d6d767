//! Who is writing a run, and whether that process still lives.
//!
//! `begin_run` records the writing process: host name, pid, and a token made of the boot
//! id and the process start time (from `/proc`). A run still marked `running` whose writer
//! is on this host and is gone (another boot, no such pid, or a pid reused by a process
//! that started at another time) died without finishing: `list_runs` and `run` report it
//! as `incomplete`, and `Store::reap_dead_runs` writes that down. A writer on another
//! host, or one this system cannot check (no `/proc`), is never declared dead.
//!
//! The store reads the three /proc files this takes itself (a few lines of std) rather
//! than depending on dyno-proc, the process layer of the command crates: storing must not
//! pull in spawning, sampling and libc. `/proc/PID/stat` is parsed as dyno-proc does:
//! fields are counted after the *last* `)`, since the command name may hold spaces and
//! parentheses.

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
        let Some(boot) = boot_id() else {
            return false;
        };
        if !recorded.starts_with(&format!("{boot}:")) {
            return true; // the machine rebooted since
        }
        match start_ticks(self.pid) {
            Some(start) => *recorded != format!("{boot}:{start}"),
            // Exited (a zombie not yet reaped), or no such process.
            None => true,
        }
    }
}

/// A trimmed, non-empty line of a /proc file.
fn proc_line(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

fn hostname() -> String {
    proc_line("/proc/sys/kernel/hostname").unwrap_or_default()
}

/// This boot's id: with a start time, names a process across reboots.
fn boot_id() -> Option<String> {
    proc_line("/proc/sys/kernel/random/boot_id")
}

/// The start time (clock ticks since boot, field 22 of `/proc/PID/stat`) of a process that
/// has not exited; `None` for a zombie (`Z`), a dead task (`X`) or no such process.
fn start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_start_ticks(&stat)
}

fn parse_start_ticks(stat: &str) -> Option<u64> {
    let fields: Vec<&str> = stat[stat.rfind(')')? + 1..].split_whitespace().collect();
    // fields[0] is field 3 (state) of proc(5), so field 22 is fields[19].
    match fields.first()? {
        &"Z" | &"X" => None,
        _ => fields.get(19)?.parse().ok(),
    }
}

/// `boot_id:start_ticks` of a live process.
fn token_of(pid: u32) -> Option<String> {
    let start = start_ticks(pid)?;
    Some(format!("{}:{start}", boot_id()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_ticks_are_field_22_counted_after_the_last_parenthesis() {
        let stat =
            "4242 (a) b) (c) S 1 4242 4242 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 987654 1000 10";
        assert_eq!(parse_start_ticks(stat), Some(987_654));
        assert_eq!(parse_start_ticks(&stat.replace(" S ", " Z ")), None);
        assert_eq!(parse_start_ticks("4242 (truncated"), None);
    }

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
