//! Small operating-system helpers: pinning, thread ids, liveness, /proc and /sys reads.
//! The `unsafe` here is limited to libc calls with owned, initialised arguments.

use std::path::Path;

use crate::error::{Error, Result};

/// Pins the calling thread to `cpu`.
pub fn pin_current_thread(cpu: usize) -> Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(Error::Os {
            call: format!("sched_setaffinity(cpu {cpu})"),
            source: std::io::Error::from_raw_os_error(libc::EINVAL),
        });
    }
    // SAFETY: cpu_set_t is a plain bit array; all zeros is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu < CPU_SETSIZE` (checked above), so CPU_SET stays inside `set`.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: `set` is a valid cpu_set_t and the size passed is its size; pid 0 = caller.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc != 0 {
        return Err(Error::Os {
            call: format!("sched_setaffinity(cpu {cpu})"),
            source: std::io::Error::last_os_error(),
        });
    }
    Ok(())
}

/// The kernel thread id of the caller.
pub fn current_tid() -> u64 {
    if cfg!(miri) {
        return 0; // Miri does not model gettid.
    }
    // SAFETY: gettid takes no arguments and cannot fail.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) };
    tid as u64
}

/// True when a process with this pid runs (a zombie has exited: it holds nothing), as
/// `dyno_proc` reads /proc.
pub fn pid_alive(pid: u32) -> bool {
    matches!(dyno_proc::liveness(pid), dyno_proc::Liveness::Alive { .. })
}

/// The start time of a live process in clock ticks since boot, used to tell a live
/// creator from an unrelated process that reused its pid.
pub fn process_start_ticks(pid: u32) -> Option<u64> {
    dyno_proc::start_ticks(pid)
}

/// Voluntary and involuntary context switches of the calling thread.
pub fn thread_context_switches() -> Option<(u64, u64)> {
    if cfg!(miri) {
        return None; // Miri's isolation forbids reading /proc.
    }
    let status = std::fs::read_to_string("/proc/thread-self/status").ok()?;
    let fields = dyno_proc::procfs::parse_status(&status);
    Some((fields.voluntary_switches, fields.involuntary_switches))
}

/// The online CPUs, from /sys/devices/system/cpu/online.
pub fn online_cpus() -> Result<Vec<usize>> {
    let path = Path::new("/sys/devices/system/cpu/online");
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    dyno_proc::host::parse_cpu_list(text.trim()).ok_or_else(|| {
        Error::Invalid(format!(
            "{}: cannot parse CPU list {:?}",
            path.display(),
            text.trim()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg_attr(miri, ignore)]
    fn reads_this_process() {
        assert!(pid_alive(std::process::id()));
        assert!(process_start_ticks(std::process::id()).is_some());
        // Sleeping gives the core up: a voluntary switch of this thread.
        let (voluntary, _) = thread_context_switches().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert!(thread_context_switches().unwrap().0 > voluntary);
        assert!(!online_cpus().unwrap().is_empty());
        assert_ne!(current_tid(), 0);
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(!pid_alive(pid));
    }
}
