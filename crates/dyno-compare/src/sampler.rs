//! The /proc sampler: resource use of a running node, read from outside the process about
//! once a second, without instrumenting it.
//!
//! A [`ProcReading`] holds the raw cumulative counters of one instant; two consecutive
//! readings make one [`ProcSample`] (rates over the interval). Parsing is pure and tested
//! on recorded /proc text; only [`ProcSampler::read`] touches the file system.
//!
//! What is read, per process (all its threads):
//! - `/proc/PID/stat`: utime + stime (clock ticks, every thread, dead ones included),
//!   minor and major faults, thread count;
//! - `/proc/PID/status`: VmRSS and VmHWM (peak RSS);
//! - `/proc/PID/task/*/status`: voluntary and involuntary context switches, summed over the
//!   live threads (the process-level line counts only the main thread);
//! - `/proc/PID/io`: read_bytes and write_bytes (storage I/O). This file is often unreadable
//!   (another user's process, hardened kernels): the values are then *absent*, not zero.
//!
//! Clock ticks per second come from `getconf CLK_TCK`, read once; if that fails the
//! Linux default of 100 is assumed (every mainstream architecture uses 100 in user space).

use std::path::{Path, PathBuf};

/// CPU share at or above which a second counts towards a "CPU 85% span".
pub const CPU_SPAN_THRESHOLD: f64 = 85.0;

/// Cumulative counters of one process at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ProcReading {
    /// Seconds since the sampler started (monotonic clock).
    pub t: f64,
    /// utime + stime of all threads, in clock ticks.
    pub cpu_ticks: u64,
    /// Minor faults (no I/O needed).
    pub minor_faults: u64,
    /// Major faults (a page had to be read).
    pub major_faults: u64,
    /// Live threads.
    pub threads: u64,
    /// Resident set size, bytes.
    pub rss_bytes: u64,
    /// Peak resident set size (VmHWM), bytes.
    pub peak_rss_bytes: u64,
    /// Voluntary context switches summed over live threads.
    pub voluntary_switches: u64,
    /// Involuntary context switches summed over live threads.
    pub involuntary_switches: u64,
    /// Bytes read from storage, when /proc/PID/io is readable.
    pub read_bytes: Option<u64>,
    /// Bytes written to storage, when /proc/PID/io is readable.
    pub write_bytes: Option<u64>,
}

/// Resource use over one sampling interval.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ProcSample {
    /// End of the interval, seconds since the sampler started.
    pub t: f64,
    /// CPU use in percent of one core (200 = two cores busy).
    pub cpu_percent: f64,
    /// Resident set size at the end of the interval, bytes.
    pub rss_bytes: f64,
    /// Peak resident set size so far, bytes.
    pub peak_rss_bytes: f64,
    /// Minor faults per second.
    pub minor_faults_per_s: f64,
    /// Major faults per second.
    pub major_faults_per_s: f64,
    /// Voluntary context switches per second.
    pub voluntary_switches_per_s: f64,
    /// Involuntary context switches per second.
    pub involuntary_switches_per_s: f64,
    /// Storage bytes read per second (absent when /proc/PID/io is unreadable).
    pub read_bytes_per_s: Option<f64>,
    /// Storage bytes written per second (absent when /proc/PID/io is unreadable).
    pub write_bytes_per_s: Option<f64>,
    /// Live threads at the end of the interval.
    pub threads: f64,
}

/// The fields of `/proc/PID/stat` the sampler needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatFields {
    /// Process state letter (`R`, `S`, `Z`, ...).
    pub state: char,
    /// Minor faults.
    pub minor_faults: u64,
    /// Major faults.
    pub major_faults: u64,
    /// utime + stime, clock ticks.
    pub cpu_ticks: u64,
    /// Thread count.
    pub threads: u64,
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
        minor_faults: num(10)?,
        major_faults: num(12)?,
        cpu_ticks: num(14)?.checked_add(num(15)?)?,
        threads: num(20)?,
    })
}

/// The fields of `/proc/PID/status` (or of one thread's status) the sampler needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StatusFields {
    /// VmRSS in bytes (absent for kernel threads and zombies).
    pub rss_bytes: Option<u64>,
    /// VmHWM in bytes.
    pub peak_rss_bytes: Option<u64>,
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
            ("VmRSS", Some(kb)) => out.rss_bytes = Some(kb * 1024),
            ("VmHWM", Some(kb)) => out.peak_rss_bytes = Some(kb * 1024),
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

/// Rates over the interval between two readings, `clk_tck` clock ticks per second.
/// Counters that went backwards (a thread's switches vanish when it exits) count as zero.
pub fn sample_between(prev: &ProcReading, next: &ProcReading, clk_tck: f64) -> ProcSample {
    let dt = (next.t - prev.t).max(1e-9);
    let rate = |a: u64, b: u64| b.saturating_sub(a) as f64 / dt;
    let opt_rate = |a: Option<u64>, b: Option<u64>| Some(rate(a?, b?));
    ProcSample {
        t: next.t,
        cpu_percent: 100.0 * next.cpu_ticks.saturating_sub(prev.cpu_ticks) as f64 / clk_tck / dt,
        rss_bytes: next.rss_bytes as f64,
        peak_rss_bytes: next.peak_rss_bytes.max(next.rss_bytes) as f64,
        minor_faults_per_s: rate(prev.minor_faults, next.minor_faults),
        major_faults_per_s: rate(prev.major_faults, next.major_faults),
        voluntary_switches_per_s: rate(prev.voluntary_switches, next.voluntary_switches),
        involuntary_switches_per_s: rate(prev.involuntary_switches, next.involuntary_switches),
        read_bytes_per_s: opt_rate(prev.read_bytes, next.read_bytes),
        write_bytes_per_s: opt_rate(prev.write_bytes, next.write_bytes),
        threads: next.threads as f64,
    }
}

/// Lengths (in samples) of the maximal runs of consecutive samples whose CPU use is at or
/// above `threshold` percent, in order of occurrence.
pub fn cpu_spans(cpu_percent: &[f64], threshold: f64) -> Vec<usize> {
    let mut spans = Vec::new();
    let mut current = 0;
    for &c in cpu_percent {
        if c >= threshold {
            current += 1;
        } else if current > 0 {
            spans.push(current);
            current = 0;
        }
    }
    if current > 0 {
        spans.push(current);
    }
    spans
}

/// Why a reading failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadError {
    /// The process is gone (or reaped).
    Gone,
    /// The process exited and awaits its parent (state `Z`).
    Zombie,
}

/// Reads /proc for one process.
#[derive(Debug, Clone)]
pub struct ProcSampler {
    dir: PathBuf,
    clk_tck: f64,
    start: std::time::Instant,
}

impl ProcSampler {
    /// A sampler of process `pid` (under `/proc`).
    pub fn new(pid: u32) -> Self {
        Self::with_root(Path::new("/proc"), pid, clock_ticks_per_second())
    }

    /// A sampler under another proc root (for tests with recorded files).
    pub fn with_root(root: &Path, pid: u32, clk_tck: f64) -> Self {
        ProcSampler {
            dir: root.join(pid.to_string()),
            clk_tck,
            start: std::time::Instant::now(),
        }
    }

    /// Clock ticks per second this sampler uses.
    pub fn clk_tck(&self) -> f64 {
        self.clk_tck
    }

    /// Reads the counters now.
    pub fn read(&self) -> Result<ProcReading, ReadError> {
        let t = self.start.elapsed().as_secs_f64();
        let stat = std::fs::read_to_string(self.dir.join("stat")).map_err(|_| ReadError::Gone)?;
        let stat = parse_stat(&stat).ok_or(ReadError::Gone)?;
        if stat.state == 'Z' || stat.state == 'X' {
            return Err(ReadError::Zombie);
        }
        let status = std::fs::read_to_string(self.dir.join("status"))
            .map(|s| parse_status(&s))
            .map_err(|_| ReadError::Gone)?;
        let (voluntary, involuntary) = self
            .thread_switches()
            .unwrap_or((status.voluntary_switches, status.involuntary_switches));
        let io = std::fs::read_to_string(self.dir.join("io"))
            .ok()
            .and_then(|s| parse_io(&s));
        Ok(ProcReading {
            t,
            cpu_ticks: stat.cpu_ticks,
            minor_faults: stat.minor_faults,
            major_faults: stat.major_faults,
            threads: stat.threads,
            rss_bytes: status.rss_bytes.unwrap_or(0),
            peak_rss_bytes: status.peak_rss_bytes.unwrap_or(0),
            voluntary_switches: voluntary,
            involuntary_switches: involuntary,
            read_bytes: io.map(|i| i.0),
            write_bytes: io.map(|i| i.1),
        })
    }

    fn thread_switches(&self) -> Option<(u64, u64)> {
        let mut sum = (0, 0);
        for entry in std::fs::read_dir(self.dir.join("task")).ok()?.flatten() {
            if let Ok(text) = std::fs::read_to_string(entry.path().join("status")) {
                let s = parse_status(&text);
                sum.0 += s.voluntary_switches;
                sum.1 += s.involuntary_switches;
            }
        }
        Some(sum)
    }
}

/// `getconf CLK_TCK`, or 100 (the Linux user-space value) when that cannot be run.
pub fn clock_ticks_per_second() -> f64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|v| *v > 0.0)
        .unwrap_or(100.0)
}

/// CPU time (user + system) this process has used so far, in seconds, from
/// `/proc/self/stat`: lets a caller measure what sampling costs.
pub fn own_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    Some(parse_stat(&stat)?.cpu_ticks as f64 / clock_ticks_per_second())
}

/// On-CPU time of the calling thread in nanoseconds, from `/proc/thread-self/schedstat`
/// (nanosecond resolution, where clock ticks are too coarse to see the sampler's cost).
pub fn own_thread_cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // Recorded from a two-threaded `dyno pipeline run` (command name edited to hold a
    // space and a parenthesis, which the parser must survive).
    const STAT: &str = "4242 (dyno (x) y) S 4200 4242 2124 0 -1 4194560 1834 0 7 0 950 75 0 0 20 0 3 0 278332 3133440 380 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n";
    const STATUS: &str = "Name:\tdyno\nState:\tS (sleeping)\nVmPeak:\t  300000 kB\nVmHWM:\t    5120 kB\nVmRSS:\t    4096 kB\nThreads:\t3\nvoluntary_ctxt_switches:\t12\nnonvoluntary_ctxt_switches:\t3\n";
    const IO: &str = "rchar: 6976\nwchar: 10\nsyscr: 10\nsyscw: 1\nread_bytes: 4096\nwrite_bytes: 8192\ncancelled_write_bytes: 0\n";

    #[test]
    fn stat_fields_are_counted_from_the_last_parenthesis() {
        let s = parse_stat(STAT).unwrap();
        assert_eq!(
            s,
            StatFields {
                state: 'S',
                minor_faults: 1834,
                major_faults: 7,
                cpu_ticks: 1025,
                threads: 3
            }
        );
        assert_eq!(parse_stat("garbage"), None);
        assert_eq!(parse_stat("1 (x) S 1 2"), None);
    }

    #[test]
    fn status_sizes_are_kib() {
        let s = parse_status(STATUS);
        assert_eq!(s.rss_bytes, Some(4096 * 1024));
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
    fn rates_between_readings() {
        let a = ProcReading {
            t: 1.0,
            cpu_ticks: 100,
            minor_faults: 10,
            voluntary_switches: 50,
            read_bytes: Some(0),
            write_bytes: Some(0),
            rss_bytes: 1000,
            peak_rss_bytes: 2000,
            ..ProcReading::default()
        };
        let b = ProcReading {
            t: 3.0,
            cpu_ticks: 270,
            minor_faults: 30,
            voluntary_switches: 40, // a thread exited
            read_bytes: Some(4096),
            write_bytes: None,
            rss_bytes: 3000,
            peak_rss_bytes: 2000,
            ..ProcReading::default()
        };
        let s = sample_between(&a, &b, 100.0);
        assert!((s.cpu_percent - 85.0).abs() < 1e-9);
        assert_eq!(s.minor_faults_per_s, 10.0);
        assert_eq!(s.voluntary_switches_per_s, 0.0);
        assert_eq!(s.read_bytes_per_s, Some(2048.0));
        assert_eq!(s.write_bytes_per_s, None);
        assert_eq!(s.peak_rss_bytes, 3000.0); // never below the current RSS
    }

    #[test]
    fn spans_are_maximal_runs_at_or_above_threshold() {
        let cpu = [90.0, 85.0, 84.9, 100.0, 0.0, 0.0, 99.0, 99.0, 99.0];
        assert_eq!(cpu_spans(&cpu, 85.0), vec![2, 1, 3]);
        assert_eq!(cpu_spans(&[], 85.0), Vec::<usize>::new());
        assert_eq!(cpu_spans(&[10.0, 20.0], 85.0), Vec::<usize>::new());
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
        assert_eq!((r.voluntary_switches, r.involuntary_switches), (24, 6));
        assert_eq!((r.read_bytes, r.write_bytes), (None, None));
        assert_eq!(r.cpu_ticks, 1025);
        std::fs::write(dir.join("stat"), STAT.replace(") S ", ") Z ")).unwrap();
        let z = ProcSampler::with_root(root.path(), 4242, 100.0).read();
        assert_eq!(z, Err(ReadError::Zombie));
        let gone = ProcSampler::with_root(root.path(), 1, 100.0).read();
        assert_eq!(gone, Err(ReadError::Gone));
    }

    #[test]
    fn samples_this_process() {
        let s = ProcSampler::new(std::process::id());
        let r = s.read().unwrap();
        assert!(r.threads >= 1);
        assert!(r.rss_bytes > 0 && r.peak_rss_bytes >= r.rss_bytes);
    }

    proptest! {
        #[test]
        fn span_lengths_count_every_busy_sample(cpu in proptest::collection::vec(0.0f64..120.0, 0..200)) {
            let spans = cpu_spans(&cpu, CPU_SPAN_THRESHOLD);
            let busy = cpu.iter().filter(|&&c| c >= CPU_SPAN_THRESHOLD).count();
            prop_assert_eq!(spans.iter().sum::<usize>(), busy);
            prop_assert!(spans.iter().all(|&l| l > 0));
            let starts = cpu.iter().enumerate()
                .filter(|&(i, &c)| c >= CPU_SPAN_THRESHOLD && (i == 0 || cpu[i - 1] < CPU_SPAN_THRESHOLD))
                .count();
            prop_assert_eq!(spans.len(), starts);
        }

        #[test]
        fn stat_parser_never_panics(s in ".{0,300}") {
            let _ = parse_stat(&s);
            let _ = parse_status(&s);
            let _ = parse_io(&s);
        }
    }
}
