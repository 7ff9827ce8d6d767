//! How busy the machine is, and which processes make it so: a short look at
//! `/proc/stat` and every `/proc/PID/stat` (dyno itself left out), so a warning about a
//! busy machine can name what to stop; and, over a measured window, what the rest of the
//! machine used besides the measured process trees and dyno ([`MachineReading`],
//! [`others_between`]).

use crate::procfs;
use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

/// A process that used CPU time during a look.
#[derive(Debug, Clone, PartialEq)]
pub struct BusyProcess {
    /// Its pid.
    pub pid: u32,
    /// Its command name (`/proc/PID/comm`).
    pub name: String,
    /// CPU time it used over the look, in cores (1.0: one core all the time).
    pub cpu_share: f64,
}

/// What one look saw.
#[derive(Debug, Clone, PartialEq)]
pub struct Look {
    /// Share of all CPU time that was busy (0..1).
    pub share: f64,
    /// Processes that used CPU time, busiest first.
    pub processes: Vec<BusyProcess>,
}

/// CPU ticks of every process but this one, by pid (with its start time, so a pid reused
/// during the look is not mistaken for the same process).
fn process_ticks() -> HashMap<u32, (u64, u64)> {
    let own = std::process::id();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return HashMap::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != own)
        .filter_map(|pid| {
            let s = procfs::read_stat(pid)?;
            Some((pid, (s.start_ticks, s.cpu_ticks)))
        })
        .collect()
}

/// Watches the machine for `window`; `None` when `/proc/stat` cannot be read.
pub fn look(window: Duration) -> Option<Look> {
    let host0 = procfs::host_cpu_ticks()?;
    let before = process_ticks();
    let t0 = Instant::now();
    std::thread::sleep(window);
    let host1 = procfs::host_cpu_ticks()?;
    let after = process_ticks();
    let seconds = t0.elapsed().as_secs_f64();
    let total = host1.total.saturating_sub(host0.total);
    let share = if total == 0 {
        0.0
    } else {
        1.0 - host1.idle.saturating_sub(host0.idle) as f64 / total as f64
    };
    let hz = procfs::clock_ticks_per_second();
    let mut processes: Vec<BusyProcess> = after
        .iter()
        .filter_map(|(&pid, &(start, ticks))| {
            let (start0, ticks0) = before.get(&pid)?;
            let used = ticks
                .checked_sub(*ticks0)
                .filter(|&d| d > 0 && start == *start0)?;
            let name = std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .map(|n| n.trim().to_string())
                .unwrap_or_else(|_| "?".into());
            Some(BusyProcess {
                pid,
                name,
                cpu_share: used as f64 / hz / seconds.max(1e-9),
            })
        })
        .collect();
    processes.sort_by(|a, b| b.cpu_share.total_cmp(&a.cpu_share));
    Some(Look { share, processes })
}

/// The machine's CPU counters at one instant: the host's ticks, dyno's own, and every
/// other process's.
#[derive(Debug, Clone)]
pub struct MachineReading {
    host: procfs::HostCpuTicks,
    /// utime + stime of every thread of this process.
    own_ticks: u64,
    processes: HashMap<u32, (u64, u64)>,
}

/// Reads the machine now; `None` when `/proc/stat` or `/proc/self/stat` cannot be read.
pub fn read_machine() -> Option<MachineReading> {
    let host = procfs::host_cpu_ticks()?;
    let own_ticks = procfs::read_stat(std::process::id())?.cpu_ticks;
    Some(MachineReading {
        host,
        own_ticks,
        processes: process_ticks(),
    })
}

/// What the rest of the machine used between two readings.
#[derive(Debug, Clone, PartialEq)]
pub struct Others {
    /// CPU time in cores (1.0: one core all the time): the host's busy time (not idle,
    /// I/O wait or steal) less interrupt handling, dyno's own and the measured trees',
    /// never below 0.
    pub cpu_share: f64,
    /// Interrupt handling (irq + softirq) in cores: charged to no process, and mostly the
    /// measured nodes' own loopback traffic, so not counted as other work.
    pub interrupt_share: f64,
    /// The process (not measured, not dyno) that used the most CPU time between the
    /// readings, when one used any: one born after the first reading counts all its CPU
    /// time, one that exited counts what it used until the last reading that saw it.
    pub busiest: Option<BusyProcess>,
}

/// Every other process's CPU time over a window, followed through each reading given to
/// [`OthersWatch::update`], so a process born inside the window (absent from the first
/// reading) or gone before its end still counts, and can be named.
#[derive(Debug, Clone)]
pub struct OthersWatch {
    first: MachineReading,
    last: MachineReading,
    /// By pid and start time: CPU ticks when first seen (0 for one born inside the
    /// window) and when last seen.
    seen: HashMap<(u32, u64), (u64, u64)>,
    /// Command names, read while each process was alive and had used CPU time.
    names: HashMap<(u32, u64), String>,
}

impl OthersWatch {
    /// Starts watching at `first`.
    pub fn new(first: MachineReading) -> OthersWatch {
        let seen = first
            .processes
            .iter()
            .map(|(&pid, &(start, ticks))| ((pid, start), (ticks, ticks)))
            .collect();
        OthersWatch {
            last: first.clone(),
            first,
            seen,
            names: HashMap::new(),
        }
    }

    /// Takes in a later reading.
    pub fn update(&mut self, reading: MachineReading) {
        for (&pid, &(start, ticks)) in &reading.processes {
            let entry = self.seen.entry((pid, start)).or_insert((0, 0));
            entry.1 = entry.1.max(ticks);
            if entry.1 > entry.0 && !self.names.contains_key(&(pid, start)) {
                self.names.insert((pid, start), comm(pid));
            }
        }
        self.last = reading;
    }

    /// What the rest of the machine used from the first reading to the last, `seconds`
    /// apart, given that the measured trees used `measured_s` CPU seconds in that time and
    /// that `measured` are their pids (left out of the busiest).
    pub fn others(&self, measured_s: f64, measured: &HashSet<u32>, seconds: f64) -> Others {
        let (a, b) = (&self.first, &self.last);
        let hz = procfs::clock_ticks_per_second();
        let busy_s = b.host.busy().saturating_sub(a.host.busy()) as f64 / hz;
        let interrupt_s = b.host.interrupts.saturating_sub(a.host.interrupts) as f64 / hz;
        let own_s = b.own_ticks.saturating_sub(a.own_ticks) as f64 / hz;
        let seconds = seconds.max(1e-9);
        let cpu_share = ((busy_s - interrupt_s - own_s - measured_s) / seconds).max(0.0);
        let busiest = self
            .seen
            .iter()
            .filter(|((pid, _), _)| !measured.contains(pid))
            .map(|(&key, &(from, to))| (key, to.saturating_sub(from)))
            .filter(|&(_, used)| used > 0)
            .max_by_key(|&((pid, _), used)| (used, std::cmp::Reverse(pid)))
            .map(|(key, used)| BusyProcess {
                pid: key.0,
                name: self.names.get(&key).cloned().unwrap_or_else(|| comm(key.0)),
                cpu_share: used as f64 / hz / seconds,
            });
        Others {
            cpu_share,
            interrupt_share: (interrupt_s / seconds).max(0.0),
            busiest,
        }
    }
}

/// A process's command name, `?` once it is gone.
fn comm(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|n| n.trim().to_string())
        .unwrap_or_else(|_| "?".into())
}

/// What the rest of the machine used from `a` to `b` (no reading between), `seconds`
/// apart: [`OthersWatch::others`].
pub fn others_between(
    a: &MachineReading,
    b: &MachineReading,
    measured_s: f64,
    measured: &HashSet<u32>,
    seconds: f64,
) -> Others {
    let mut watch = OthersWatch::new(a.clone());
    watch.update(b.clone());
    watch.others(measured_s, measured, seconds)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{GuardedChild, SpawnOptions};

    #[test]
    fn a_spinning_process_is_named() {
        let mut cmd = std::process::Command::new("sh");
        cmd.args(["-c", "while :; do :; done"]);
        let child = GuardedChild::spawn(cmd, &SpawnOptions::default()).unwrap();
        let seen = look(Duration::from_millis(500)).unwrap();
        let pid = child.pid();
        child.stop(Duration::from_secs(1));
        assert!(seen.share > 0.0 && seen.share <= 1.0, "{}", seen.share);
        let spinner = seen.processes.iter().find(|p| p.pid == pid);
        // Whatever else the machine does, the spinner used CPU time and is named.
        let spinner = spinner.unwrap_or_else(|| panic!("{:?}", seen.processes));
        assert_eq!(spinner.name, "sh");
        assert!(spinner.cpu_share > 0.0);
        assert!(seen.processes.iter().all(|p| p.pid != std::process::id()));
    }

    #[test]
    fn a_spinner_outside_the_measured_trees_is_the_rest_of_the_machine() {
        let mut cmd = std::process::Command::new("sh");
        cmd.args(["-c", "while :; do :; done"]);
        let child = GuardedChild::spawn(cmd, &SpawnOptions::default()).unwrap();
        let pid = child.pid();
        let a = read_machine().unwrap();
        let t0 = Instant::now();
        std::thread::sleep(Duration::from_millis(600));
        let b = read_machine().unwrap();
        let seconds = t0.elapsed().as_secs_f64();
        let free = others_between(&a, &b, 0.0, &Default::default(), seconds);
        // Measured, the same spinner is no one else's: named only when it is not.
        let measured: std::collections::HashSet<u32> = [pid].into();
        let spun = b.processes[&pid].1 - a.processes[&pid].1;
        let spun_s = spun as f64 / procfs::clock_ticks_per_second();
        let taken = others_between(&a, &b, spun_s, &measured, seconds);
        child.stop(Duration::from_secs(1));
        // Whatever else the machine does, the spinner used CPU and counts as other work
        // until it is measured; then its time is taken off and it is not named.
        assert!(spun > 0, "the spinner never ran");
        assert!(free.cpu_share >= taken.cpu_share, "{free:?} {taken:?}");
        assert!(
            taken.busiest.as_ref().is_none_or(|p| p.pid != pid),
            "{taken:?}"
        );
        let named = free.busiest.unwrap();
        assert!(named.cpu_share > 0.0);
        assert!(taken.cpu_share >= 0.0);
    }

    /// Every pid of a reading but `keep`: as if the rest of the machine were measured.
    fn all_but(reading: &MachineReading, keep: u32) -> HashSet<u32> {
        reading
            .processes
            .keys()
            .copied()
            .filter(|&p| p != keep)
            .collect()
    }

    #[test]
    fn a_process_born_inside_the_window_and_gone_before_its_end_is_named() {
        let a = read_machine().unwrap();
        let t0 = Instant::now();
        let mut watch = OthersWatch::new(a);
        let mut cmd = std::process::Command::new("sh");
        cmd.args(["-c", "while :; do :; done"]);
        let child = GuardedChild::spawn(cmd, &SpawnOptions::default()).unwrap();
        let pid = child.pid();
        std::thread::sleep(Duration::from_millis(500));
        let alive = read_machine().unwrap();
        let mut everyone = all_but(&alive, pid);
        watch.update(alive);
        child.stop(Duration::from_secs(1));
        let gone = read_machine().unwrap();
        everyone.extend(all_but(&gone, pid));
        watch.update(gone);
        let seconds = t0.elapsed().as_secs_f64();
        // With every other process counted as measured, the spinner, absent from the
        // first reading and gone by the last, is the rest of the machine's busiest.
        let o = watch.others(0.0, &everyone, seconds);
        let named = o.busiest.clone().unwrap_or_else(|| panic!("{o:?}"));
        assert_eq!((named.pid, named.name.as_str()), (pid, "sh"));
        assert!(named.cpu_share > 0.0);
        // Seen by the last reading only (no reading in between), it is not missed either.
        let mut cmd = std::process::Command::new("sh");
        cmd.args(["-c", "while :; do :; done"]);
        let a = read_machine().unwrap();
        let child = GuardedChild::spawn(cmd, &SpawnOptions::default()).unwrap();
        let pid = child.pid();
        std::thread::sleep(Duration::from_millis(400));
        let b = read_machine().unwrap();
        child.stop(Duration::from_secs(1));
        let o = others_between(&a, &b, 0.0, &all_but(&b, pid), 0.4);
        assert_eq!(o.busiest.map(|p| p.pid), Some(pid));
    }
}
