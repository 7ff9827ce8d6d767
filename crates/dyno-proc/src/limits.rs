//! The limits this machine puts on what dyno may start: tasks (every thread is one, and
//! takes a pid) and memory, each with what is in use now, read from `/proc` and the
//! process's cgroup (v1 or v2). A launcher of thousands of processes checks its plan
//! against them before it starts anything, rather than failing at the 780th process.
//!
//! What cannot be read is `None`, never guessed. Parsing is pure and tested on recorded
//! text; [`HostLimits::read`] only gathers the files.

use std::path::{Path, PathBuf};

/// A limit with its current use: `limit - used` is what is left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Headroom {
    /// The limit.
    pub limit: u64,
    /// In use now.
    pub used: u64,
    /// Where the limit was read (a file, or a key of one), for messages.
    pub source: String,
}

impl Headroom {
    /// What is left (0 when already over).
    pub fn left(&self) -> u64 {
        self.limit.saturating_sub(self.used)
    }
}

/// What this machine and this user allow, as far as it could be read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostLimits {
    /// `kernel.pid_max` against every task on the machine.
    pub pid_max: Option<Headroom>,
    /// `kernel.threads-max` against every task on the machine.
    pub threads_max: Option<Headroom>,
    /// RLIMIT_NPROC (soft) against this user's tasks; `None` when unlimited or not
    /// applied (the kernel does not apply it to root).
    pub nproc: Option<Headroom>,
    /// The tightest `pids.max` of this process's cgroup and its ancestors.
    pub cgroup_pids: Option<Headroom>,
    /// `MemAvailable` of /proc/meminfo (a limit with nothing used: it is what is left).
    pub mem_available: Option<Headroom>,
    /// The tightest memory limit of this process's cgroup and its ancestors.
    pub cgroup_memory: Option<Headroom>,
}

impl HostLimits {
    /// Reads every limit this machine exposes (Linux; elsewhere everything is `None`).
    pub fn read() -> HostLimits {
        let tasks = read("/proc/loadavg").and_then(|t| tasks_of_loadavg(&t));
        let with_tasks = |path: &str, what: &str| {
            let limit = read(path)?.trim().parse::<u64>().ok()?;
            Some(Headroom {
                limit,
                used: tasks?,
                source: what.to_string(),
            })
        };
        let status = read("/proc/self/status").unwrap_or_default();
        let uid = field(&status, "Uid:").and_then(|v| v.split_whitespace().next()?.parse().ok());
        let nproc = match (
            uid,
            read("/proc/self/limits").and_then(|t| nproc_of_limits(&t)),
        ) {
            (Some(0), _) | (_, None) | (None, _) => None,
            (Some(uid), Some(limit)) => Some(Headroom {
                limit,
                used: tasks_of_user(uid),
                source: "RLIMIT_NPROC (ulimit -u)".to_string(),
            }),
        };
        let mem_available = read("/proc/meminfo")
            .and_then(|t| kib_field(&t, "MemAvailable:"))
            .map(|bytes| Headroom {
                limit: bytes,
                used: 0,
                source: "MemAvailable in /proc/meminfo".to_string(),
            });
        let cgroups = read("/proc/self/cgroup").unwrap_or_default();
        HostLimits {
            pid_max: with_tasks("/proc/sys/kernel/pid_max", "kernel.pid_max"),
            threads_max: with_tasks("/proc/sys/kernel/threads-max", "kernel.threads-max"),
            nproc,
            cgroup_pids: tightest(&cgroup_dirs(&cgroups, "pids"), |dir| {
                cgroup_limit(dir, &["pids.max"], &["pids.current"])
            }),
            mem_available,
            cgroup_memory: tightest(&cgroup_dirs(&cgroups, "memory"), |dir| {
                cgroup_limit(
                    dir,
                    &["memory.max", "memory.limit_in_bytes"],
                    &["memory.current", "memory.usage_in_bytes"],
                )
            }),
        }
    }
}

fn read(path: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

fn field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .map(str::trim)
}

fn kib_field(text: &str, key: &str) -> Option<u64> {
    let v = field(text, key)?;
    v.trim_end_matches("kB")
        .trim()
        .parse::<u64>()
        .ok()
        .map(|k| k * 1024)
}

/// Every task (thread) on the machine: the fourth field of /proc/loadavg, `running/total`.
pub fn tasks_of_loadavg(text: &str) -> Option<u64> {
    text.split_whitespace()
        .nth(3)?
        .split('/')
        .nth(1)?
        .parse()
        .ok()
}

/// The soft "Max processes" of /proc/PID/limits; `None` when unlimited.
pub fn nproc_of_limits(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("Max processes"))?;
    line["Max processes".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Tasks of user `uid` now: the threads of every process whose real uid it is.
fn tasks_of_user(uid: u32) -> u64 {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    dir.flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter_map(|e| read(e.path().join("status")))
        .filter(|s| {
            field(s, "Uid:").and_then(|v| v.split_whitespace().next()?.parse::<u32>().ok())
                == Some(uid)
        })
        .filter_map(|s| field(&s, "Threads:")?.parse::<u64>().ok())
        .sum()
}

/// The directories of this process's cgroup for `controller` and of its ancestors,
/// innermost first: from the v1 line naming the controller, else the v2 line (`0::`).
pub fn cgroup_dirs(proc_self_cgroup: &str, controller: &str) -> Vec<PathBuf> {
    let mut v1 = None;
    let mut v2 = None;
    for line in proc_self_cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let path = path.trim_start_matches('/');
        if id == "0" && controllers.is_empty() {
            v2 = Some((PathBuf::from("/sys/fs/cgroup"), path));
        } else if controllers.split(',').any(|c| c == controller) {
            v1 = Some((Path::new("/sys/fs/cgroup").join(controller), path));
        }
    }
    let Some((root, path)) = v1.or(v2) else {
        return Vec::new();
    };
    let leaf = root.join(path);
    let mut dirs: Vec<PathBuf> = leaf
        .ancestors()
        .take_while(|a| a.starts_with(&root))
        .map(Path::to_path_buf)
        .collect();
    dirs.dedup();
    dirs
}

/// A cgroup directory's limit and use: the first of `limits` that exists (a value of
/// `max`, or one above 2^62, is no limit) and the first of `used`.
fn cgroup_limit(dir: &Path, limits: &[&str], used: &[&str]) -> Option<Headroom> {
    let (name, text) = limits
        .iter()
        .find_map(|f| read(dir.join(f)).map(|t| (*f, t)))?;
    let limit = parse_limit(&text)?;
    let used = used
        .iter()
        .find_map(|f| read(dir.join(f))?.trim().parse::<u64>().ok())?;
    Some(Headroom {
        limit,
        used,
        source: dir.join(name).display().to_string(),
    })
}

/// A cgroup limit file's value; `None` for "max" or a number meaning no limit.
pub fn parse_limit(text: &str) -> Option<u64> {
    let t = text.trim();
    if t == "max" {
        return None;
    }
    t.parse::<u64>().ok().filter(|&v| v < (1u64 << 62))
}

/// The limit with the least left among `dirs`.
fn tightest(dirs: &[PathBuf], read: impl Fn(&Path) -> Option<Headroom>) -> Option<Headroom> {
    dirs.iter()
        .filter_map(|d| read(d))
        .min_by_key(Headroom::left)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_and_nproc_are_read_from_their_files() {
        assert_eq!(
            tasks_of_loadavg("14.10 13.42 11.17 10/181 1199\n"),
            Some(181)
        );
        assert_eq!(tasks_of_loadavg("garbage"), None);
        let limits = "Limit                     Soft Limit           Hard Limit           Units     \n\
                      Max cpu time              unlimited            unlimited            seconds   \n\
                      Max processes             96365                96365                processes \n";
        assert_eq!(nproc_of_limits(limits), Some(96365));
        let unlimited = limits.replace(
            "96365                96365",
            "unlimited            unlimited",
        );
        assert_eq!(nproc_of_limits(&unlimited), None);
    }

    #[test]
    fn cgroup_directories_of_v1_and_v2() {
        let v1 = "9:name=systemd:/\n8:pids:/user.slice\n4:memory:/process_api/8a03\n0::/\n";
        assert_eq!(
            cgroup_dirs(v1, "memory"),
            [
                PathBuf::from("/sys/fs/cgroup/memory/process_api/8a03"),
                PathBuf::from("/sys/fs/cgroup/memory/process_api"),
                PathBuf::from("/sys/fs/cgroup/memory"),
            ]
        );
        assert_eq!(
            cgroup_dirs(v1, "pids"),
            [
                PathBuf::from("/sys/fs/cgroup/pids/user.slice"),
                PathBuf::from("/sys/fs/cgroup/pids"),
            ]
        );
        let v2 = "0::/user.slice/session-3.scope\n";
        assert_eq!(
            cgroup_dirs(v2, "pids"),
            [
                PathBuf::from("/sys/fs/cgroup/user.slice/session-3.scope"),
                PathBuf::from("/sys/fs/cgroup/user.slice"),
                PathBuf::from("/sys/fs/cgroup"),
            ]
        );
        assert!(cgroup_dirs("", "pids").is_empty());
    }

    #[test]
    fn no_limit_reads_as_none() {
        assert_eq!(parse_limit("max\n"), None);
        assert_eq!(parse_limit("9223372036854771712\n"), None);
        assert_eq!(parse_limit("4096\n"), Some(4096));
        assert_eq!(parse_limit("x"), None);
    }

    #[test]
    fn the_tightest_cgroup_limit_is_the_one_with_least_left() {
        let dir = tempfile::tempdir().unwrap();
        let (outer, inner) = (dir.path().join("a"), dir.path().join("a/b"));
        std::fs::create_dir_all(&inner).unwrap();
        std::fs::write(outer.join("pids.max"), "1000\n").unwrap();
        std::fs::write(outer.join("pids.current"), "900\n").unwrap();
        std::fs::write(inner.join("pids.max"), "max\n").unwrap();
        std::fs::write(inner.join("pids.current"), "10\n").unwrap();
        let h = tightest(&[inner, outer.clone()], |d| {
            cgroup_limit(d, &["pids.max"], &["pids.current"])
        })
        .unwrap();
        assert_eq!((h.limit, h.used, h.left()), (1000, 900, 100));
        assert_eq!(h.source, outer.join("pids.max").display().to_string());
    }

    #[test]
    fn this_machine_says_something() {
        let h = HostLimits::read();
        if cfg!(target_os = "linux") {
            let pid_max = h.pid_max.expect("pid_max is readable on Linux");
            assert!(pid_max.limit >= 301 && pid_max.used >= 1, "{pid_max:?}");
            assert!(h.mem_available.is_some());
        }
    }
}
