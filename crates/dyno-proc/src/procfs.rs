//! One parser for what /proc says about a process and about the host: `stat`, `status`,
//! `io`, liveness, start times, the clock tick, boot id and host name.
//!
//! Parsing is pure and tested on recorded text; the `read_*` functions and the host
//! readings touch the file system. Every crate of dyno that asks /proc about a process
//! asks here, so a kernel quirk is handled once; the one exception is the results store,
//! which reads a writer's start time and boot id itself so storing does not depend on the
//! process layer (dyno-store's `writer` module).

use std::path::Path;

/// The fields of `/proc/PID/stat` dyno uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatFields {
    /// Process state letter (`R`, `S`, `Z`, ...).
    pub state: char,
    /// Parent process id.
    pub ppid: u32,
    /// Process group id.
    pub pgid: u32,
    /// Minor faults.
    pub minor_faults: u64,
    /// Major faults.
    pub major_faults: u64,
    /// utime + stime, clock ticks.
    pub cpu_ticks: u64,
    /// Minor faults of waited-for children (cminflt).
    pub children_minor_faults: u64,
    /// Major faults of waited-for children (cmajflt).
    pub children_major_faults: u64,
    /// cutime + cstime of waited-for children, clock ticks.
    pub children_cpu_ticks: u64,
    /// Thread count.
    pub threads: u64,
    /// Start time, clock ticks since boot: with the pid, names a process.
    pub start_ticks: u64,
}

impl StatFields {
    /// Whether the process has exited (a zombie waiting for its parent, or dead).
    pub fn exited(&self) -> bool {
        self.state == 'Z' || self.state == 'X'
    }
}

/// Parses `/proc/PID/stat`. The command name is in parentheses and may itself hold spaces
/// and parentheses, so fields are counted from the *last* `)`.
pub fn parse_stat(text: &str) -> Option<StatFields> {
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // f[0] is field 3 (state) of proc(5); field n is f[n - 3].
    let num = |n: usize| f.get(n - 3)?.parse::<u64>().ok();
    Some(StatFields {
        state: f.first()?.chars().next()?,
        ppid: u32::try_from(num(4)?).ok()?,
        pgid: u32::try_from(num(5)?).ok()?,
        minor_faults: num(10)?,
        children_minor_faults: num(11)?,
        major_faults: num(12)?,
        children_major_faults: num(13)?,
        cpu_ticks: num(14)?.checked_add(num(15)?)?,
        children_cpu_ticks: num(16)?.checked_add(num(17)?)?,
        threads: num(20)?,
        start_ticks: num(22)?,
    })
}

/// The fields of `/proc/PID/status` (or of one thread's status) dyno uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StatusFields {
    /// VmRSS in bytes (absent for kernel threads and zombies).
    pub rss_bytes: Option<u64>,
    /// VmHWM in bytes.
    pub peak_rss_bytes: Option<u64>,
    /// RssAnon in bytes: the resident memory that is the process's own (heap, stacks,
    /// written pages), not file pages shared with every process of the same binary.
    pub anon_rss_bytes: Option<u64>,
    /// voluntary_ctxt_switches.
    pub voluntary_switches: u64,
    /// nonvoluntary_ctxt_switches.
    pub involuntary_switches: u64,
}

/// Parses `/proc/PID/status` (sizes there are in kB = KiB).
pub fn parse_status(text: &str) -> StatusFields {
    let mut out = StatusFields::default();
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let first = value
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<u64>().ok());
        match (key, first) {
            ("VmRSS", Some(kb)) => out.rss_bytes = kb.checked_mul(1024),
            ("VmHWM", Some(kb)) => out.peak_rss_bytes = kb.checked_mul(1024),
            ("RssAnon", Some(kb)) => out.anon_rss_bytes = kb.checked_mul(1024),
            ("voluntary_ctxt_switches", Some(n)) => out.voluntary_switches = n,
            ("nonvoluntary_ctxt_switches", Some(n)) => out.involuntary_switches = n,
            _ => {}
        }
    }
    out
}

/// Parses `/proc/PID/io` into `(read_bytes, write_bytes)`; `None` if either is missing.
pub fn parse_io(text: &str) -> Option<(u64, u64)> {
    let mut read = None;
    let mut write = None;
    for line in text.lines() {
        if let Some((key, value)) = line.split_once(':') {
            let v = value.trim().parse::<u64>().ok();
            match key {
                "read_bytes" => read = v,
                "write_bytes" => write = v,
                _ => {}
            }
        }
    }
    Some((read?, write?))
}

/// `/proc/PID/stat` of a process under the proc root `root`, parsed; `None` when the
/// process is gone (or the file is unreadable or malformed).
pub fn read_stat_under(root: &Path, pid: u32) -> Option<StatFields> {
    let text = std::fs::read_to_string(root.join(pid.to_string()).join("stat")).ok()?;
    parse_stat(&text)
}

/// `/proc/PID/stat`, parsed; `None` when the process is gone.
pub fn read_stat(pid: u32) -> Option<StatFields> {
    read_stat_under(Path::new("/proc"), pid)
}

/// Whether a process runs, as /proc sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Liveness {
    /// Running (or sleeping, stopped...): not yet exited.
    Alive {
        /// Start time in clock ticks since boot: tells it from a later process that
        /// reuses its pid.
        start_ticks: u64,
    },
    /// Exited, waiting for its parent to reap it.
    Zombie,
    /// No such process.
    Gone,
}

/// The one way dyno asks whether a process runs: its `/proc/PID/stat` state.
pub fn liveness(pid: u32) -> Liveness {
    match read_stat(pid) {
        None => Liveness::Gone,
        Some(s) if s.exited() => Liveness::Zombie,
        Some(s) => Liveness::Alive {
            start_ticks: s.start_ticks,
        },
    }
}

/// The start time of a live, non-zombie process (clock ticks since boot); `None` when it
/// is gone or has exited. A pid with the same start time is the same process.
pub fn start_ticks(pid: u32) -> Option<u64> {
    match liveness(pid) {
        Liveness::Alive { start_ticks } => Some(start_ticks),
        _ => None,
    }
}

/// Clock ticks per second, from `sysconf(_SC_CLK_TCK)` (read once), or 100 (the Linux
/// user-space value on every mainstream architecture) when the system does not say.
pub fn clock_ticks_per_second() -> f64 {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| crate::sys::clock_ticks().map_or(100.0, |t| t as f64))
}

/// CPU time (user + system) this process has used so far, in seconds, from
/// `/proc/self/stat`: lets a caller measure what sampling costs.
pub fn own_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    Some(parse_stat(&stat)?.cpu_ticks as f64 / clock_ticks_per_second())
}

/// On-CPU time of the calling thread in nanoseconds (nanosecond resolution, where clock
/// ticks are too coarse to see a sampler's cost), from the thread's CPU clock:
/// `/proc/thread-self/schedstat`, read before, lags the running thread by up to a tick.
pub fn own_thread_cpu_ns() -> Option<u64> {
    crate::sys::thread_cpu_ns()
}

/// This boot's id (`/proc/sys/kernel/random/boot_id`): with a start time, names a process
/// across reboots.
pub fn boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// The host name (`/proc/sys/kernel/hostname`).
pub fn hostname() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// The machine's CPU time so far, from the `cpu ` line of `/proc/stat`, clock ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostCpuTicks {
    /// user + nice + system + idle + iowait + irq + softirq + steal.
    pub total: u64,
    /// idle + iowait.
    pub idle: u64,
    /// steal: time the hypervisor gave this VM's CPUs to another (0 where not reported).
    pub steal: u64,
    /// irq + softirq: interrupt handling (a loopback network's packets among it), which
    /// no process is charged for.
    pub interrupts: u64,
}

impl HostCpuTicks {
    /// Ticks the machine's own CPUs were busy: not idle, waiting for I/O or stolen.
    pub fn busy(&self) -> u64 {
        self.total
            .saturating_sub(self.idle)
            .saturating_sub(self.steal)
    }
}

/// Parses the aggregate `cpu ` line of `/proc/stat`.
pub fn parse_host_cpu(stat: &str) -> Option<HostCpuTicks> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    if v.len() < 5 {
        return None;
    }
    Some(HostCpuTicks {
        total: v.iter().take(8).sum(),
        idle: v[3] + v[4],
        steal: v.get(7).copied().unwrap_or(0),
        interrupts: v.get(5).copied().unwrap_or(0) + v.get(6).copied().unwrap_or(0),
    })
}

/// `/proc/stat`'s CPU time now.
pub fn host_cpu_ticks() -> Option<HostCpuTicks> {
    parse_host_cpu(&std::fs::read_to_string("/proc/stat").ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // Recorded from a two-threaded `dyno pipeline run` (command name edited to hold a
    // space and a parenthesis, which the parser must survive).
    const STAT: &str = "4242 (dyno (x) y) S 4200 4242 2124 0 -1 4194560 1834 0 7 0 950 75 0 0 20 0 3 0 278332 3133440 380 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n";
    const STATUS: &str = "Name:\tdyno\nState:\tS (sleeping)\nVmPeak:\t  300000 kB\nVmHWM:\t    5120 kB\nVmRSS:\t    4096 kB\nRssAnon:\t    1024 kB\nThreads:\t3\nvoluntary_ctxt_switches:\t12\nnonvoluntary_ctxt_switches:\t3\n";
    const IO: &str = "rchar: 6976\nwchar: 10\nsyscr: 10\nsyscw: 1\nread_bytes: 4096\nwrite_bytes: 8192\ncancelled_write_bytes: 0\n";

    #[test]
    fn stat_fields_are_counted_from_the_last_parenthesis() {
        let s = parse_stat(STAT).unwrap();
        assert_eq!(
            s,
            StatFields {
                state: 'S',
                ppid: 4200,
                pgid: 4242,
                minor_faults: 1834,
                major_faults: 7,
                cpu_ticks: 1025,
                children_minor_faults: 0,
                children_major_faults: 0,
                children_cpu_ticks: 0,
                threads: 3,
                start_ticks: 278332,
            }
        );
        assert!(!s.exited());
        assert!(parse_stat(&STAT.replace(") S ", ") Z ")).unwrap().exited());
        assert_eq!(parse_stat("garbage"), None);
        assert_eq!(parse_stat("1 (x) S 1 2"), None);
    }

    #[test]
    fn status_sizes_are_kib() {
        let s = parse_status(STATUS);
        assert_eq!(s.rss_bytes, Some(4096 * 1024));
        assert_eq!(s.anon_rss_bytes, Some(1024 * 1024));
        assert_eq!(s.peak_rss_bytes, Some(5120 * 1024));
        assert_eq!((s.voluntary_switches, s.involuntary_switches), (12, 3));
        assert_eq!(parse_status("Name:\tkthreadd\n").rss_bytes, None);
    }

    #[test]
    fn io_is_absent_not_zero_when_missing() {
        assert_eq!(parse_io(IO), Some((4096, 8192)));
        assert_eq!(parse_io("rchar: 1\n"), None);
        assert_eq!(parse_io(""), None);
    }

    #[test]
    fn host_cpu_line() {
        let stat = "cpu  10 1 5 100 7 0 2 3 0 0\ncpu0 5 0 2 50 3 0 1 0 0 0\n";
        let ticks = parse_host_cpu(stat).unwrap();
        assert_eq!(
            ticks,
            HostCpuTicks {
                total: 128,
                idle: 107,
                steal: 3,
                interrupts: 2
            }
        );
        assert_eq!(ticks.busy(), 18);
        assert_eq!(parse_host_cpu("cpu0 1 2 3 4 5\n"), None);
        assert!(host_cpu_ticks().is_some_and(|c| c.total >= c.idle));
    }

    #[test]
    fn this_process_is_alive_and_a_reaped_child_is_gone() {
        let me = std::process::id();
        let stat = read_stat(me).unwrap();
        assert!(
            matches!(liveness(me), Liveness::Alive { start_ticks } if start_ticks == stat.start_ticks)
        );
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        // Not yet waited for: alive or a zombie, never gone.
        assert_ne!(liveness(pid), Liveness::Gone);
        child.wait().unwrap();
        assert_eq!(liveness(pid), Liveness::Gone);
        assert_eq!(start_ticks(pid), None);
    }

    #[test]
    fn clock_tick_comes_from_sysconf() {
        assert_eq!(
            clock_ticks_per_second(),
            crate::sys::clock_ticks().unwrap() as f64
        );
        assert!(own_cpu_seconds().is_some());
        assert!(boot_id().is_some_and(|b| b.len() == 36), "{:?}", boot_id());
    }

    proptest! {
        #[test]
        fn parsers_never_panic(s in ".{0,300}") {
            let _ = parse_stat(&s);
            let _ = parse_status(&s);
            let _ = parse_io(&s);
            let _ = parse_host_cpu(&s);
        }
    }
}
