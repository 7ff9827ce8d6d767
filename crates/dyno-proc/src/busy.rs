//! How busy the machine is, and which processes make it so: a short look at
//! `/proc/stat` and every `/proc/PID/stat` (dyno itself left out), so a warning about a
//! busy machine can name what to stop.

use crate::procfs;
use std::collections::HashMap;
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
}
