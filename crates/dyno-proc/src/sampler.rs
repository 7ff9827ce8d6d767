//! The /proc sampler: resource use of running process trees (a node, its load generator,
//! every node of a cluster), read from outside about once a second, without
//! instrumenting them.
//!
//! A [`ProcReading`] holds the raw cumulative counters of every process of one tree at
//! one instant; two consecutive readings make one [`ProcSample`] (rates over the
//! interval). Parsing is pure and tested on recorded /proc text; only
//! [`ProcSampler::read`] and [`ProcSampler::read_all`] touch the file system. One sampler
//! watches any number of trees ([`ProcSampler::many`]); on kernels without `children`
//! files it scans /proc once per reading for all of them.
//!
//! A tree is a watched process and all its descendants, found afresh at every
//! reading through `/proc/PID/task/TID/children` (or, on kernels without that file, by
//! the parent pid field of every `/proc/*/stat`): a subject started as `sh -c "node ..."`
//! or through a launcher script is measured by its real node, not by the idle shell.
//!
//! What is read, per process of the tree (all its threads):
//! - `/proc/PID/stat`: utime + stime (clock ticks, every thread, dead ones included),
//!   minor and major faults, thread count, and the same counters of the children the
//!   process has waited for (cutime, cstime, cminflt, cmajflt);
//! - `/proc/PID/status`: VmRSS, VmHWM (peak RSS) and RssAnon (the process's own part);
//! - `/proc/PID/task/*/status`: voluntary and involuntary context switches, summed over the
//!   live threads (the process-level line counts only the main thread);
//! - `/proc/PID/io`: read_bytes and write_bytes (storage I/O, waited-for children
//!   included). This file is often unreadable (another user's process, hardened kernels):
//!   the values are then *absent*, not zero.
//!
//! Processes come and go between readings, so rates are per-process deltas summed over
//! the processes of both readings (a pid and its start time name a process), plus the
//! whole counters of processes born in the interval. A process that exits and is waited
//! for by its parent in the tree hands its CPU time, faults and I/O to the parent's
//! "children" counters: the parent's delta then holds the child's whole life, so the part
//! already counted in earlier intervals is taken off again (never more than the parent's
//! children counters grew). What cannot be recovered (the last moments of a process
//! nobody in the tree waited for, the context switches of a thread or process that
//! exited) counts as zero: a rate is never negative.
//!
//! Clock ticks per second come from `sysconf(_SC_CLK_TCK)`
//! ([`crate::procfs::clock_ticks_per_second`]).

use crate::procfs::{clock_ticks_per_second, parse_io, parse_stat, parse_status};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// Processes in a tree beyond which descendants are not followed (a fork bomb must not
/// make the sampler the bottleneck).
pub const MAX_PROCESSES: usize = 1024;

/// Cumulative counters of one process (all its threads) at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ProcessCounters {
    /// Process id.
    pub pid: u32,
    /// Parent process id.
    pub ppid: u32,
    /// Start time in clock ticks since boot: with the pid, names the process.
    pub start_ticks: u64,
    /// utime + stime of all threads, clock ticks.
    pub cpu_ticks: u64,
    /// cutime + cstime: the CPU time of the children it waited for, clock ticks.
    pub children_cpu_ticks: u64,
    /// Minor faults (no I/O needed).
    pub minor_faults: u64,
    /// Minor faults of the children it waited for.
    pub children_minor_faults: u64,
    /// Major faults (a page had to be read).
    pub major_faults: u64,
    /// Major faults of the children it waited for.
    pub children_major_faults: u64,
    /// Live threads.
    pub threads: u64,
    /// Resident set size, bytes (0 for a zombie).
    pub rss_bytes: u64,
    /// Peak resident set size (VmHWM), bytes.
    pub peak_rss_bytes: u64,
    /// Anonymous resident memory (RssAnon), bytes: the process's own, not the file pages
    /// it shares with others of the same binary.
    pub anon_rss_bytes: u64,
    /// Voluntary context switches summed over live threads.
    pub voluntary_switches: u64,
    /// Involuntary context switches summed over live threads.
    pub involuntary_switches: u64,
    /// Bytes read from storage, when /proc/PID/io is readable (waited-for children
    /// included: the kernel does not keep them apart here).
    pub read_bytes: Option<u64>,
    /// Bytes written to storage, as `read_bytes`.
    pub write_bytes: Option<u64>,
}

/// Cumulative counters of a process tree at one instant.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ProcReading {
    /// Seconds since the sampler started (monotonic clock).
    pub t: f64,
    /// The sampled process first, then its descendants (parents before children).
    pub processes: Vec<ProcessCounters>,
}

impl ProcReading {
    /// Live threads of the whole tree.
    pub fn threads(&self) -> u64 {
        self.processes.iter().map(|p| p.threads).sum()
    }
}

/// Resource use over one sampling interval.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ProcSample {
    /// End of the interval, seconds since the sampler started.
    pub t: f64,
    /// CPU use in percent of one core (200 = two cores busy).
    pub cpu_percent: f64,
    /// Resident set size at the end of the interval, bytes, summed over the tree.
    pub rss_bytes: f64,
    /// Sum of the peak resident set sizes of the tree's live processes, bytes (an upper
    /// bound of the tree's peak: its processes may have peaked at different times).
    pub peak_rss_bytes: f64,
    /// Anonymous resident memory at the end of the interval, bytes, summed over the
    /// tree: what the tree holds of its own (RSS less the shared file pages).
    pub anon_rss_bytes: f64,
    /// Minor faults per second.
    pub minor_faults_per_s: f64,
    /// Major faults per second.
    pub major_faults_per_s: f64,
    /// Voluntary context switches per second.
    pub voluntary_switches_per_s: f64,
    /// Involuntary context switches per second.
    pub involuntary_switches_per_s: f64,
    /// Storage bytes read per second (absent when the sampled process's /proc/PID/io is
    /// unreadable).
    pub read_bytes_per_s: Option<f64>,
    /// Storage bytes written per second (absent as `read_bytes_per_s`).
    pub write_bytes_per_s: Option<f64>,
    /// Live threads of the tree at the end of the interval.
    pub threads: f64,
}

/// Rates over the interval between two readings of a tree, `clk_tck` clock ticks per
/// second; see the module documentation for processes that come and go.
pub fn sample_between(prev: &ProcReading, next: &ProcReading, clk_tck: f64) -> ProcSample {
    let dt = (next.t - prev.t).max(1e-9);
    let rate = |get: fn(&ProcessCounters) -> (u64, u64)| tree_delta(prev, next, get) as f64 / dt;
    // I/O is absent when the sampled process's file is unreadable; a descendant's
    // unreadable file (another user's setuid helper) counts as zero, not as absent. The
    // kernel adds a waited-for child's I/O into the parent's own counts, so all of it is
    // "inherited": a parent's growth may hold a gone child's count.
    let io_rate = |get: fn(&ProcessCounters) -> Option<u64>| {
        get(prev.processes.first()?)?;
        get(next.processes.first()?)?;
        Some(tree_delta(prev, next, |p| (0, get(p).unwrap_or(0))) as f64 / dt)
    };
    let sum = |get: fn(&ProcessCounters) -> u64| next.processes.iter().map(get).sum::<u64>();
    let rss = sum(|p| p.rss_bytes);
    ProcSample {
        t: next.t,
        cpu_percent: 100.0 * rate(|p| (p.cpu_ticks, p.children_cpu_ticks)) / clk_tck,
        rss_bytes: rss as f64,
        peak_rss_bytes: sum(|p| p.peak_rss_bytes.max(p.rss_bytes)).max(rss) as f64,
        anon_rss_bytes: sum(|p| p.anon_rss_bytes) as f64,
        minor_faults_per_s: rate(|p| (p.minor_faults, p.children_minor_faults)),
        major_faults_per_s: rate(|p| (p.major_faults, p.children_major_faults)),
        voluntary_switches_per_s: rate(|p| (p.voluntary_switches, 0)),
        involuntary_switches_per_s: rate(|p| (p.involuntary_switches, 0)),
        read_bytes_per_s: io_rate(|p| p.read_bytes),
        write_bytes_per_s: io_rate(|p| p.write_bytes),
        threads: next.threads() as f64,
    }
}

/// The growth of one counter over a tree between two readings, never negative. `get`
/// gives a process's `(own, inherited)` counts, inherited being what the kernel added
/// from children the process waited for.
///
/// Processes of both readings add their own growth (a count that went backwards, as
/// switches do when a thread exits, adds zero); processes born since `prev` add their
/// whole count. A process gone since `prev` was usually waited for by its parent, whose
/// inherited count then grew by the child's whole life: what the child had at `prev` was
/// counted in earlier intervals and is taken off again, up to the parent's inherited
/// growth (a child nobody waited for hands over nothing, and takes nothing off).
fn tree_delta(
    prev: &ProcReading,
    next: &ProcReading,
    get: impl Fn(&ProcessCounters) -> (u64, u64),
) -> u64 {
    let key = |p: &ProcessCounters| (p.pid, p.start_ticks);
    let total = |p: &ProcessCounters| {
        let (own, inherited) = get(p);
        own.saturating_add(inherited)
    };
    let before: HashMap<(u32, u64), &ProcessCounters> =
        prev.processes.iter().map(|p| (key(p), p)).collect();
    let mut sum: u64 = 0;
    // Per parent pid still present: how much its inherited count grew.
    let mut handed_over: HashMap<u32, u64> = HashMap::new();
    for p in &next.processes {
        sum += match before.get(&key(p)) {
            Some(q) => {
                handed_over.insert(p.pid, get(p).1.saturating_sub(get(q).1));
                total(p).saturating_sub(total(q))
            }
            None => total(p),
        };
    }
    let after: HashSet<(u32, u64)> = next.processes.iter().map(key).collect();
    for gone in prev.processes.iter().filter(|q| !after.contains(&key(q))) {
        if let Some(budget) = handed_over.get_mut(&gone.ppid) {
            let take = total(gone).min(*budget).min(sum);
            *budget -= take;
            sum -= take;
        }
    }
    sum
}

/// Why a reading failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    /// The process is gone (or reaped).
    #[error("the process is gone")]
    Gone,
    /// The process exited and awaits its parent (state `Z`).
    #[error("the process exited (a zombie)")]
    Zombie,
}

/// What one process's files say.
struct ProcessRead {
    state: char,
    counters: ProcessCounters,
    /// Children pids, from the `children` files (empty without them).
    children: Vec<u32>,
}

/// Reads /proc for one or more process trees.
#[derive(Debug, Clone)]
pub struct ProcSampler {
    root: PathBuf,
    pids: Vec<u32>,
    clk_tck: f64,
    /// Whether `/proc/PID/task/TID/children` exists (CONFIG_PROC_CHILDREN); without it
    /// descendants are found by scanning every `/proc/*/stat`.
    children_files: bool,
    start: std::time::Instant,
}

impl ProcSampler {
    /// A sampler of process `pid` and its descendants (under `/proc`).
    pub fn new(pid: u32) -> Self {
        Self::with_root(Path::new("/proc"), pid, clock_ticks_per_second())
    }

    /// A sampler of several trees at once, one per pid, on one clock: the readings of
    /// [`ProcSampler::read_all`] come in the order of `pids`. A process that is in two
    /// trees (one watched pid descends from another) is counted in both.
    pub fn many(pids: &[u32]) -> Self {
        let mut s = Self::with_root(
            Path::new("/proc"),
            std::process::id(),
            clock_ticks_per_second(),
        );
        s.pids = pids.to_vec();
        s
    }

    /// A sampler of `pid` under another proc root (for tests with recorded files).
    pub fn with_root(root: &Path, pid: u32, clk_tck: f64) -> Self {
        let children_files = root.join(format!("{pid}/task/{pid}/children")).exists();
        ProcSampler {
            root: root.to_path_buf(),
            pids: vec![pid],
            clk_tck,
            children_files,
            start: std::time::Instant::now(),
        }
    }

    /// Watches one more tree; its readings come last in [`ProcSampler::read_all`].
    pub fn watch(&mut self, pid: u32) {
        self.pids.push(pid);
    }

    /// Watches the tree of `pid` in place of the one at `index` (a process restarted
    /// under a new pid), on the same clock: readings before and after stay comparable.
    /// An index past the watched ones is ignored.
    pub fn replace(&mut self, index: usize, pid: u32) {
        if let Some(p) = self.pids.get_mut(index) {
            *p = pid;
        }
    }

    /// The watched pids, in reading order.
    pub fn pids(&self) -> &[u32] {
        &self.pids
    }

    /// Clock ticks per second this sampler uses.
    pub fn clk_tck(&self) -> f64 {
        self.clk_tck
    }

    /// Reads the counters of the first watched process and of its descendants now.
    /// Fails only when the process itself is gone or a zombie; a descendant that
    /// vanishes while being read is left out.
    pub fn read(&self) -> Result<ProcReading, ReadError> {
        let by_parent = self.parents_by_scan();
        let pid = self.pids.first().copied().ok_or(ReadError::Gone)?;
        self.read_tree(pid, by_parent.as_ref())
    }

    /// Reads every watched tree now, in the order of [`ProcSampler::pids`], with one
    /// timestamp each (taken as its tree is read).
    pub fn read_all(&self) -> Vec<Result<ProcReading, ReadError>> {
        let by_parent = self.parents_by_scan();
        self.pids
            .iter()
            .map(|&pid| self.read_tree(pid, by_parent.as_ref()))
            .collect()
    }

    fn read_tree(
        &self,
        pid: u32,
        by_parent: Option<&HashMap<u32, Vec<u32>>>,
    ) -> Result<ProcReading, ReadError> {
        let t = self.start.elapsed().as_secs_f64();
        let root = self.read_process(pid)?;
        if root.state == 'Z' || root.state == 'X' {
            return Err(ReadError::Zombie);
        }
        let mut processes = vec![root.counters];
        let pending = match by_parent {
            Some(map) => descendants(map, pid),
            None => root.children,
        };
        let mut seen: HashSet<u32> = HashSet::from([pid]);
        // Breadth first, so parents come before their children.
        let mut queue = std::collections::VecDeque::from(pending);
        while let Some(p) = queue.pop_front() {
            if processes.len() >= MAX_PROCESSES || !seen.insert(p) {
                continue;
            }
            if let Ok(read) = self.read_process(p) {
                processes.push(read.counters);
                if by_parent.is_none() {
                    queue.extend(read.children);
                }
            }
        }
        Ok(ProcReading { t, processes })
    }

    /// One process: its state, its counters and (when the kernel lists them) the pids of
    /// its children.
    fn read_process(&self, pid: u32) -> Result<ProcessRead, ReadError> {
        let dir = self.root.join(pid.to_string());
        let stat = std::fs::read_to_string(dir.join("stat")).map_err(|_| ReadError::Gone)?;
        let stat = parse_stat(&stat).ok_or(ReadError::Gone)?;
        let status = std::fs::read_to_string(dir.join("status"))
            .map(|s| parse_status(&s))
            .map_err(|_| ReadError::Gone)?;
        let mut switches = (0, 0);
        let mut children = Vec::new();
        let mut tasks = 0;
        if let Ok(entries) = std::fs::read_dir(dir.join("task")) {
            for entry in entries.flatten() {
                tasks += 1;
                let task = entry.path();
                if let Ok(text) = std::fs::read_to_string(task.join("status")) {
                    let s = parse_status(&text);
                    switches.0 += s.voluntary_switches;
                    switches.1 += s.involuntary_switches;
                }
                if self.children_files {
                    if let Ok(text) = std::fs::read_to_string(task.join("children")) {
                        children.extend(
                            text.split_whitespace()
                                .filter_map(|c| c.parse::<u32>().ok()),
                        );
                    }
                }
            }
        }
        if tasks == 0 {
            switches = (status.voluntary_switches, status.involuntary_switches);
        }
        let io = std::fs::read_to_string(dir.join("io"))
            .ok()
            .and_then(|s| parse_io(&s));
        let counters = ProcessCounters {
            pid,
            ppid: stat.ppid,
            start_ticks: stat.start_ticks,
            cpu_ticks: stat.cpu_ticks,
            children_cpu_ticks: stat.children_cpu_ticks,
            minor_faults: stat.minor_faults,
            children_minor_faults: stat.children_minor_faults,
            major_faults: stat.major_faults,
            children_major_faults: stat.children_major_faults,
            threads: stat.threads,
            rss_bytes: status.rss_bytes.unwrap_or(0),
            peak_rss_bytes: status.peak_rss_bytes.unwrap_or(0),
            anon_rss_bytes: status.anon_rss_bytes.unwrap_or(0),
            voluntary_switches: switches.0,
            involuntary_switches: switches.1,
            read_bytes: io.map(|i| i.0),
            write_bytes: io.map(|i| i.1),
        };
        Ok(ProcessRead {
            state: stat.state,
            counters,
            children,
        })
    }

    /// Every process's children, from the parent pid of every `/proc/*/stat`: the slow
    /// way, for kernels without `children` files (`None` when they have them).
    fn parents_by_scan(&self) -> Option<HashMap<u32, Vec<u32>>> {
        if self.children_files {
            return None;
        }
        let mut by_parent: HashMap<u32, Vec<u32>> = HashMap::new();
        let Ok(entries) = std::fs::read_dir(&self.root) else {
            return Some(by_parent);
        };
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            let ppid = std::fs::read_to_string(entry.path().join("stat"))
                .ok()
                .and_then(|s| parse_stat(&s))
                .map(|s| s.ppid);
            if let Some(ppid) = ppid {
                by_parent.entry(ppid).or_default().push(pid);
            }
        }
        Some(by_parent)
    }
}

/// All descendants of `pid` in a parent-to-children map, at most [`MAX_PROCESSES`].
fn descendants(by_parent: &HashMap<u32, Vec<u32>>, pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut frontier = vec![pid];
    while let Some(p) = frontier.pop() {
        for &c in by_parent.get(&p).map(Vec::as_slice).unwrap_or_default() {
            if c != pid && !out.contains(&c) && out.len() < MAX_PROCESSES {
                out.push(c);
                frontier.push(c);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    // Recorded from a two-threaded `dyno pipeline run` (command name edited to hold a
    // space and a parenthesis, which the parser must survive).
    const STAT: &str = "4242 (dyno (x) y) S 4200 4242 2124 0 -1 4194560 1834 0 7 0 950 75 0 0 20 0 3 0 278332 3133440 380 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n";
    const STATUS: &str = "Name:\tdyno\nState:\tS (sleeping)\nVmPeak:\t  300000 kB\nVmHWM:\t    5120 kB\nVmRSS:\t    4096 kB\nThreads:\t3\nvoluntary_ctxt_switches:\t12\nnonvoluntary_ctxt_switches:\t3\n";

    fn process(pid: u32, ppid: u32, cpu_ticks: u64) -> ProcessCounters {
        ProcessCounters {
            pid,
            ppid,
            start_ticks: 1000 + pid as u64,
            cpu_ticks,
            threads: 1,
            ..ProcessCounters::default()
        }
    }

    fn reading(t: f64, processes: Vec<ProcessCounters>) -> ProcReading {
        ProcReading { t, processes }
    }

    #[test]
    fn rates_between_readings() {
        let a = reading(
            1.0,
            vec![ProcessCounters {
                minor_faults: 10,
                voluntary_switches: 50,
                read_bytes: Some(0),
                write_bytes: Some(0),
                rss_bytes: 1000,
                peak_rss_bytes: 2000,
                ..process(10, 1, 100)
            }],
        );
        let b = reading(
            3.0,
            vec![ProcessCounters {
                minor_faults: 30,
                voluntary_switches: 40, // a thread exited
                read_bytes: Some(4096),
                write_bytes: None,
                rss_bytes: 3000,
                peak_rss_bytes: 2000,
                ..process(10, 1, 270)
            }],
        );
        let s = sample_between(&a, &b, 100.0);
        assert!((s.cpu_percent - 85.0).abs() < 1e-9);
        assert_eq!(s.minor_faults_per_s, 10.0);
        assert_eq!(s.voluntary_switches_per_s, 0.0);
        assert_eq!(s.read_bytes_per_s, Some(2048.0));
        assert_eq!(s.write_bytes_per_s, None);
        assert_eq!(s.peak_rss_bytes, 3000.0); // never below the current RSS
        assert_eq!(s.threads, 1.0);
    }

    #[test]
    fn a_tree_is_summed_over_its_processes() {
        // sh (10) started node (11), which runs a helper (12).
        let a = reading(
            0.0,
            vec![process(10, 1, 5), process(11, 10, 100), process(12, 11, 0)],
        );
        let b = reading(
            1.0,
            vec![
                ProcessCounters {
                    rss_bytes: 1 << 20,
                    anon_rss_bytes: 1 << 19,
                    ..process(10, 1, 5)
                },
                ProcessCounters {
                    rss_bytes: 100 << 20,
                    anon_rss_bytes: 3 << 19,
                    ..process(11, 10, 180)
                },
                ProcessCounters {
                    rss_bytes: 4 << 20,
                    ..process(12, 11, 10)
                },
            ],
        );
        let s = sample_between(&a, &b, 100.0);
        assert_eq!(s.cpu_percent, 90.0);
        assert_eq!(s.rss_bytes, (105 << 20) as f64);
        assert_eq!(s.anon_rss_bytes, (2 << 20) as f64);
        assert_eq!(s.threads, 3.0);
    }

    #[test]
    fn processes_that_come_and_go_never_make_a_rate_negative() {
        let node = |own, inherited| ProcessCounters {
            children_cpu_ticks: inherited,
            ..process(11, 10, own)
        };
        let t0 = reading(
            0.0,
            vec![process(10, 1, 0), node(100, 0), process(12, 11, 40)],
        );
        // The helper (12) ran 10 more ticks, exited, and node waited for it: node's
        // inherited count now holds the helper's whole 50 ticks; node's own grew by 20.
        let t1 = reading(1.0, vec![process(10, 1, 0), node(120, 50)]);
        assert_eq!(sample_between(&t0, &t1, 100.0).cpu_percent, 30.0);
        // The same exit, but nobody waited for it (node ignores SIGCHLD): the helper's
        // last ticks are lost, and nothing already counted is taken off.
        let t1 = reading(1.0, vec![process(10, 1, 0), node(120, 0)]);
        assert_eq!(sample_between(&t0, &t1, 100.0).cpu_percent, 20.0);
        // The node itself died and sh is left: the node's ticks vanish, not go negative.
        let t1 = reading(1.0, vec![process(10, 1, 0)]);
        assert_eq!(sample_between(&t0, &t1, 100.0).cpu_percent, 0.0);
        // A helper born during the interval counts whole; a pid reused by a new process
        // (another start time) is a new process, not a counter that went backwards.
        let reborn = ProcessCounters {
            start_ticks: 9999,
            ..process(12, 11, 7)
        };
        let t1 = reading(
            1.0,
            vec![process(10, 1, 0), node(100, 0), reborn, process(13, 11, 3)],
        );
        assert_eq!(sample_between(&t0, &t1, 100.0).cpu_percent, 10.0);
    }

    #[test]
    fn switches_of_exited_processes_are_lost_not_subtracted() {
        let with_switches = |pid, ppid, n| ProcessCounters {
            voluntary_switches: n,
            ..process(pid, ppid, 0)
        };
        let a = reading(
            0.0,
            vec![with_switches(10, 1, 100), with_switches(11, 10, 500)],
        );
        let b = reading(1.0, vec![with_switches(10, 1, 130)]);
        assert_eq!(sample_between(&a, &b, 100.0).voluntary_switches_per_s, 30.0);
    }

    /// Writes a fake /proc entry: stat with `cpu` ticks and `ppid`, status, one task whose
    /// `children` file lists `children` (no file at all when `None`).
    fn fake_process(root: &Path, pid: u32, ppid: u32, cpu: u64, children: Option<&str>) {
        let dir = root.join(pid.to_string());
        let task = dir.join(format!("task/{pid}"));
        std::fs::create_dir_all(&task).unwrap();
        let stat = STAT
            .replacen("4242", &pid.to_string(), 1)
            .replace(" S 4200 ", &format!(" S {ppid} "))
            .replace(" 950 75 ", &format!(" {cpu} 0 "))
            .replace(" 278332 ", &format!(" {} ", 1000 + pid));
        std::fs::write(dir.join("stat"), stat).unwrap();
        std::fs::write(dir.join("status"), STATUS).unwrap();
        std::fs::write(task.join("status"), STATUS).unwrap();
        if let Some(c) = children {
            std::fs::write(task.join("children"), c).unwrap();
        }
    }

    #[test]
    fn reads_a_recorded_proc_tree() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("4242");
        std::fs::create_dir_all(dir.join("task/4242")).unwrap();
        std::fs::create_dir_all(dir.join("task/4243")).unwrap();
        std::fs::write(dir.join("stat"), STAT).unwrap();
        std::fs::write(dir.join("status"), STATUS).unwrap();
        std::fs::write(dir.join("task/4242/status"), STATUS).unwrap();
        std::fs::write(dir.join("task/4243/status"), STATUS).unwrap();
        let r = ProcSampler::with_root(root.path(), 4242, 100.0)
            .read()
            .unwrap();
        assert_eq!(r.processes.len(), 1);
        let p = r.processes[0];
        assert_eq!((p.voluntary_switches, p.involuntary_switches), (24, 6));
        assert_eq!((p.read_bytes, p.write_bytes), (None, None));
        assert_eq!(
            (p.pid, p.ppid, p.cpu_ticks, p.start_ticks),
            (4242, 4200, 1025, 278332)
        );
        std::fs::write(dir.join("stat"), STAT.replace(") S ", ") Z ")).unwrap();
        let z = ProcSampler::with_root(root.path(), 4242, 100.0).read();
        assert_eq!(z, Err(ReadError::Zombie));
        let gone = ProcSampler::with_root(root.path(), 1, 100.0).read();
        assert_eq!(gone, Err(ReadError::Gone));
    }

    #[test]
    fn descendants_are_found_through_children_files_or_by_scanning() {
        for with_children_files in [true, false] {
            let root = tempfile::tempdir().unwrap();
            let c = |s: &'static str| with_children_files.then_some(s);
            // sh (10) -> node (11) -> helpers 12 and 13; 20 is unrelated; 14 is listed as
            // a child but exited before it was read.
            fake_process(root.path(), 10, 1, 1, c("11 14"));
            fake_process(root.path(), 11, 10, 500, c("12 13 "));
            fake_process(root.path(), 12, 11, 30, c(""));
            fake_process(root.path(), 13, 11, 20, c(""));
            fake_process(root.path(), 20, 1, 999, c(""));
            std::fs::create_dir_all(root.path().join("self")).unwrap();
            let r = ProcSampler::with_root(root.path(), 10, 100.0)
                .read()
                .unwrap();
            let mut pids: Vec<u32> = r.processes.iter().map(|p| p.pid).collect();
            assert_eq!(pids[0], 10, "the sampled process comes first");
            pids.sort();
            assert_eq!(
                pids,
                vec![10, 11, 12, 13],
                "children files: {with_children_files}"
            );
            assert_eq!(r.processes.iter().map(|p| p.cpu_ticks).sum::<u64>(), 551);
            assert_eq!(r.threads(), 12);
        }
    }

    #[test]
    fn samples_this_process() {
        let s = ProcSampler::new(std::process::id());
        let r = s.read().unwrap();
        assert!(r.threads() >= 1);
        let me = r.processes[0];
        assert_eq!(me.pid, std::process::id());
        assert!(me.rss_bytes > 0 && me.peak_rss_bytes >= me.rss_bytes);
    }

    /// A launcher shell whose child does the work: the work must be measured. Polls with
    /// a generous deadline instead of assuming how fast the machine is.
    #[test]
    fn the_work_of_a_child_process_is_counted() {
        // Guarded: a failed assertion must not leave `yes` spinning.
        let mut cmd = std::process::Command::new("sh");
        cmd.args(["-c", "yes > /dev/null & wait"]);
        let sh = crate::GuardedChild::spawn(cmd, &crate::SpawnOptions::default()).unwrap();
        let sampler = ProcSampler::new(sh.pid());
        let first = sampler.read().unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let (last, sample) = loop {
            std::thread::sleep(std::time::Duration::from_millis(100));
            let r = sampler.read().unwrap();
            let s = sample_between(&first, &r, sampler.clk_tck());
            if s.cpu_percent > 0.0 || std::time::Instant::now() > deadline {
                break (r, s);
            }
        };
        let sh_pid = sh.pid();
        drop(sh);
        assert_eq!(last.processes.len(), 2, "sh and yes: {:?}", last.processes);
        let yes = last.processes[1];
        assert_eq!(yes.ppid, sh_pid);
        // All the CPU time is the child's: the shell only waits.
        let child_ticks = yes.cpu_ticks;
        let shell_ticks = last.processes[0].cpu_ticks - first.processes[0].cpu_ticks;
        assert!(child_ticks > shell_ticks, "{child_ticks} vs {shell_ticks}");
        assert!(sample.cpu_percent > 0.0, "{sample:?}");
    }

    #[test]
    fn one_sampler_watches_several_trees() {
        for with_children_files in [true, false] {
            let root = tempfile::tempdir().unwrap();
            let c = |s: &'static str| with_children_files.then_some(s);
            // Two nodes (10, 20), each with a helper; 30 is gone.
            fake_process(root.path(), 10, 1, 100, c("11"));
            fake_process(root.path(), 11, 10, 5, c(""));
            fake_process(root.path(), 20, 1, 200, c("21"));
            fake_process(root.path(), 21, 20, 7, c(""));
            let mut s = ProcSampler::with_root(root.path(), 10, 100.0);
            s.watch(20);
            s.watch(30);
            assert_eq!(s.pids(), [10, 20, 30]);
            let all = s.read_all();
            let ticks = |r: &Result<ProcReading, ReadError>| -> Result<u64, ReadError> {
                match r {
                    Ok(r) => Ok(r.processes.iter().map(|p| p.cpu_ticks).sum()),
                    Err(e) => Err(e.clone()),
                }
            };
            assert_eq!(ticks(&all[0]), Ok(105), "{with_children_files}");
            assert_eq!(ticks(&all[1]), Ok(207), "{with_children_files}");
            assert_eq!(all[2], Err(ReadError::Gone));
        }
    }
}
