//! What escapes a child's process group: dyno as the subreaper of everything it starts,
//! and the sweep that ends and reaps what outlived a child.
//!
//! A child that daemonises (`setsid sleep 1012 &`) leaves its process group, so stopping
//! the group does not reach it; its parent exits and the kernel re-parents it. With
//! `PR_SET_CHILD_SUBREAPER` ([`become_subreaper`], Linux) it is re-parented to dyno, not
//! to init: dyno then sees it among its own children and can end it and reap it.
//!
//! Which execution an escaped process belongs to is told by an environment variable,
//! [`OWNER_VAR`], that [`GuardedChild`](crate::GuardedChild) sets to a token of its own
//! and every descendant inherits. When a child is stopped, [`sweep`] takes each of
//! dyno's children that dyno did not start itself (not a child dyno-proc spawned and
//! will reap, not in dyno's own process group, where the processes other code starts
//! with `std::process::Command` stay) and:
//! - a zombie is reaped (a member of a stopped group, re-parented to dyno);
//! - a live one carrying this child's token, or no token at all (it cleared its
//!   environment), is SIGKILLed with its whole tree and named ([`Orphan`]), then reaped;
//! - a live one carrying another child's token (a second node of a cluster, a load) is
//!   left for that child's stop.

use crate::procfs::{read_stat, StatFields};
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// The environment variable naming the child a process descends from:
/// `DYNO_OWNER=<dyno's pid>.<child serial>`.
pub const OWNER_VAR: &str = "DYNO_OWNER";

/// How long a sweep waits for what it killed to die and be reaped.
const SETTLE: Duration = Duration::from_secs(2);

/// A process dyno had to end because it outlived its child's stop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Orphan {
    /// Its pid.
    pub pid: u32,
    /// Its command line, arguments joined by spaces (its name in brackets when
    /// /proc gives no command line).
    pub command: String,
}

/// Makes dyno the subreaper of everything it starts (`PR_SET_CHILD_SUBREAPER`, once per
/// process): an orphaned descendant is re-parented to dyno, not to init, so [`sweep`]
/// finds it. `false` where the system has no subreapers (the sweep then finds only what
/// still carries its parent's group). [`GuardedChild::spawn`](crate::GuardedChild::spawn)
/// calls it; commands that start children call it first thing, so nothing started before
/// escapes it.
pub fn become_subreaper() -> bool {
    static SET: OnceLock<bool> = OnceLock::new();
    *SET.get_or_init(crate::sys::set_child_subreaper)
}

/// The pids dyno-proc spawned and reaps itself (children, group guards): the sweep
/// never touches them. Held while spawning, so a sweep never sees a new child before it
/// is listed.
fn spawned() -> MutexGuard<'static, BTreeSet<u32>> {
    static SPAWNED: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());
    SPAWNED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Spawns with `spawn` and lists the new process as one dyno-proc reaps itself.
pub(crate) fn spawn_listed<T>(
    spawn: impl FnOnce() -> std::io::Result<T>,
    pid_of: impl Fn(&T) -> u32,
) -> std::io::Result<T> {
    let mut listed = spawned();
    let child = spawn()?;
    listed.insert(pid_of(&child));
    Ok(child)
}

/// Takes `pid` off the list once it has been reaped.
pub(crate) fn unlist(pid: u32) {
    spawned().remove(&pid);
}

/// A token for a new child ([`OWNER_VAR`]'s value).
pub(crate) fn new_token() -> String {
    static SERIAL: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}.{}",
        std::process::id(),
        SERIAL.fetch_add(1, Ordering::Relaxed)
    )
}

/// Ends and reaps what escaped the child whose token is `token` (see the module
/// documentation); returns what it killed. `group` is the child's process group: the
/// sweep goes on until it is empty (its members die after the SIGKILL and, with dyno the
/// subreaper, are dyno's to reap) or [`SETTLE`] has passed.
pub(crate) fn sweep(token: &str, group: u32) -> Vec<Orphan> {
    let me = std::process::id();
    let own_group = crate::sys::own_process_group();
    let deadline = Instant::now() + SETTLE;
    let mut killed: Vec<Orphan> = Vec::new();
    let mut pending: BTreeSet<u32> = BTreeSet::new();
    loop {
        {
            let listed = spawned();
            for pid in children_of(me) {
                // The list first: a launcher's thousand nodes cost no /proc read each.
                if listed.contains(&pid) {
                    continue;
                }
                let Some(stat) = read_stat(pid) else { continue };
                if Some(stat.pgid) == own_group {
                    continue;
                }
                if stat.exited() {
                    crate::sys::reap_if_exited(pid);
                    continue;
                }
                if owner_of(pid).is_some_and(|t| t != token) {
                    continue;
                }
                for p in tree_of(pid) {
                    // Named before it dies: a dead process has no command line.
                    let command = command_line(p);
                    if crate::sys::kill(p as libc::pid_t, libc::SIGKILL).is_ok()
                        && pending.insert(p)
                    {
                        killed.push(Orphan { pid: p, command });
                    }
                }
            }
        }
        pending.retain(|&p| read_stat(p).is_some());
        let group_left = crate::sys::kill(-(group as libc::pid_t), 0).is_ok();
        if (pending.is_empty() && !group_left) || Instant::now() >= deadline {
            return killed;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The token in the environment of `pid`, if it has one (`None` too when the
/// environment cannot be read).
fn owner_of(pid: u32) -> Option<String> {
    let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    let key = format!("{OWNER_VAR}=");
    env.split(|&b| b == 0)
        .find_map(|kv| kv.strip_prefix(key.as_bytes()))
        .map(|v| String::from_utf8_lossy(v).into_owned())
}

/// The children of process `pid`: every thread's `/proc/PID/task/TID/children`, or where
/// the kernel has no such file, the processes whose parent it is.
fn children_of(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    let mut listed = false;
    for task in tasks.flatten() {
        if let Ok(text) = std::fs::read_to_string(task.path().join("children")) {
            listed = true;
            out.extend(
                text.split_whitespace()
                    .filter_map(|p| p.parse::<u32>().ok()),
            );
        }
    }
    if !listed {
        out = by_parent().remove(&pid).unwrap_or_default();
    }
    out
}

/// Every process by its parent, from a scan of /proc.
fn by_parent() -> HashMap<u32, Vec<u32>> {
    let mut map: HashMap<u32, Vec<u32>> = HashMap::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return map;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        if let Some(StatFields { ppid, .. }) = read_stat(pid) {
            map.entry(ppid).or_default().push(pid);
        }
    }
    map
}

/// `pid` and all its descendants, the root first.
fn tree_of(pid: u32) -> Vec<u32> {
    let mut out = vec![pid];
    let mut i = 0;
    while i < out.len() {
        for c in children_of(out[i]) {
            if !out.contains(&c) {
                out.push(c);
            }
        }
        i += 1;
    }
    out
}

/// The command line of `pid` for a warning.
fn command_line(pid: u32) -> String {
    let args = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let line: Vec<String> = args
        .split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    if line.is_empty() {
        let name = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        return format!("[{}]", name.trim());
    }
    let mut text = line.join(" ");
    if text.len() > 200 {
        let mut end = 200;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str("...");
    }
    text
}

/// A warning naming what a sweep killed: "killed 1 process that outlived it (it left its
/// process group): pid 4242 `sleep 1012`".
pub fn describe(orphans: &[Orphan]) -> Option<String> {
    if orphans.is_empty() {
        return None;
    }
    let named: Vec<String> = orphans
        .iter()
        .map(|o| format!("pid {} `{}`", o.pid, o.command))
        .collect();
    Some(format!(
        "killed {} process{} that outlived it (left its process group): {}",
        orphans.len(),
        if orphans.len() == 1 { "" } else { "es" },
        named.join(", ")
    ))
}
