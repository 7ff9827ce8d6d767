//! The operating-system calls this crate cannot make safely: asking the kernel to kill a
//! child when dyno dies, giving the child back default signal dispositions, sending
//! signals, the clock tick and the calling thread's CPU clock. Every `unsafe` block calls one libc function with plain
//! integer arguments.

use std::process::Command;

/// Makes the child of `cmd` receive SIGKILL when the *thread* that spawns it exits
/// (`PR_SET_PDEATHSIG`): if dyno is killed outright (SIGKILL, the OOM killer), its
/// stop-then-kill never runs, and without this the child would run on. The kernel ties
/// the signal to the spawning thread, not the process, so the caller must spawn from a
/// thread that lives as long as the child should. The setting survives `exec` but not
/// `fork`: the child's own children are not covered (the group guard is).
///
/// Also gives the child the default SIGINT and SIGQUIT: a shell starts background jobs
/// with both ignored (`dyno compare ... &` in a CI script), an ignored signal stays
/// ignored across exec, and every stop by SIGINT would then wait out the grace period and
/// end in SIGKILL.
#[cfg(target_os = "linux")]
pub fn kill_when_parent_dies(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id() as libc::pid_t;
    let hook = move || {
        // SAFETY: prctl(PR_SET_PDEATHSIG, sig) takes integers only and is async-signal
        // safe; nothing here allocates or takes a lock, as required between fork and exec.
        if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // dyno may have died between fork and prctl: then the signal will never come, and
        // the child must not start. (No allocation: a raw OS error.)
        // SAFETY: getppid takes no arguments and cannot fail.
        if unsafe { libc::getppid() } != parent {
            return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
        }
        default_stop_signals()
    };
    // SAFETY: the hook only calls async-signal-safe functions (prctl, getppid, signal) and
    // builds errors without allocating (`last_os_error`, `from_raw_os_error`).
    unsafe {
        cmd.pre_exec(hook);
    }
}

/// Elsewhere there is no parent-death signal; the group guard still applies.
#[cfg(not(target_os = "linux"))]
pub fn kill_when_parent_dies(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the hook only calls signal(2), which is async-signal safe.
    unsafe {
        cmd.pre_exec(default_stop_signals);
    }
}

fn default_stop_signals() -> std::io::Result<()> {
    for sig in [libc::SIGINT, libc::SIGQUIT] {
        // SAFETY: signal(2) with SIG_DFL takes integers only and is async-signal safe.
        if unsafe { libc::signal(sig, libc::SIG_DFL) } == libc::SIG_ERR {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// A CPU mask holding `cpus`; `None` when one is beyond `CPU_SETSIZE`.
#[cfg(target_os = "linux")]
fn cpu_set(cpus: &[usize]) -> Option<libc::cpu_set_t> {
    // SAFETY: cpu_set_t is a plain bit array; all zeroes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus {
        if cpu >= libc::CPU_SETSIZE as usize {
            return None;
        }
        // SAFETY: `cpu < CPU_SETSIZE` (checked above), so CPU_SET stays inside `set`.
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    Some(set)
}

/// Makes the child of `cmd` run on `cpus` only: `sched_setaffinity` in the child before
/// it executes the program, so every thread and process it starts inherits the mask.
#[cfg(target_os = "linux")]
pub fn run_on_cpus(cmd: &mut Command, cpus: &[usize]) -> std::io::Result<()> {
    use std::os::unix::process::CommandExt;
    let set = cpu_set(cpus).ok_or_else(|| std::io::Error::from_raw_os_error(libc::EINVAL))?;
    let hook = move || {
        // SAFETY: sched_setaffinity reads `set`, a copy owned by this closure that lives
        // through the call; it is a plain system call, async-signal safe, and allocates
        // nothing, as required between fork and exec.
        if unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) } != 0
        {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    };
    // SAFETY: the hook only makes one async-signal-safe system call and builds its error
    // without allocating.
    unsafe {
        cmd.pre_exec(hook);
    }
    Ok(())
}

/// Restricts the calling thread (and the threads it starts from now on) to `cpus`.
#[cfg(target_os = "linux")]
pub fn pin_current_thread(cpus: &[usize]) -> std::io::Result<()> {
    let set = cpu_set(cpus).ok_or_else(|| std::io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: `set` is a valid cpu_set_t that outlives the call; pid 0 is this thread.
    if unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The CPUs the calling thread may run on (`sched_getaffinity`).
#[cfg(target_os = "linux")]
pub fn allowed_cpus() -> Option<Vec<usize>> {
    // SAFETY: cpu_set_t is a plain bit array; all zeroes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid, writable cpu_set_t of the size passed; pid 0 is this thread.
    if unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) } != 0
    {
        return None;
    }
    // SAFETY: CPU_ISSET reads bit `cpu < CPU_SETSIZE` of `set`.
    let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect();
    (!cpus.is_empty()).then_some(cpus)
}

/// Elsewhere there is no CPU affinity: asking for it is an error.
#[cfg(not(target_os = "linux"))]
pub fn run_on_cpus(_cmd: &mut Command, _cpus: &[usize]) -> std::io::Result<()> {
    Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
}

/// Elsewhere there is no CPU affinity: asking for it is an error.
#[cfg(not(target_os = "linux"))]
pub fn pin_current_thread(_cpus: &[usize]) -> std::io::Result<()> {
    Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
}

/// Elsewhere the allowed CPUs are not known.
#[cfg(not(target_os = "linux"))]
pub fn allowed_cpus() -> Option<Vec<usize>> {
    None
}

/// kill(2): `target` is a pid, or a negated process group id. `Err` with errno.
pub fn kill(target: libc::pid_t, sig: libc::c_int) -> std::io::Result<()> {
    // SAFETY: kill(2) takes integers only and touches no memory of this process.
    if unsafe { libc::kill(target, sig) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Gives SIGPIPE its default action (end the process) back: the Rust runtime ignores
/// it, so a write to a closed pipe returns an error, and `eprintln!` panics on it.
pub fn default_sigpipe() {
    // SAFETY: signal(2) with an integer signal and the SIG_DFL constant; no memory of this
    // process is passed or touched.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// sysconf(_SC_CLK_TCK), or `None` when the system does not say.
pub fn clock_ticks() -> Option<u64> {
    // SAFETY: sysconf takes an integer name and reads no memory of this process.
    let v = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    u64::try_from(v).ok().filter(|&v| v > 0)
}

/// On-CPU nanoseconds of the calling thread from `clock_gettime(CLOCK_THREAD_CPUTIME_ID)`,
/// which brings the running thread's count up to date first (its schedstat file is only
/// updated at the next tick or switch, milliseconds stale while the thread runs).
pub fn thread_cpu_ns() -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec that outlives the call.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return None;
    }
    let secs = u64::try_from(ts.tv_sec).ok()?;
    let nanos = u64::try_from(ts.tv_nsec).ok()?;
    Some(secs * 1_000_000_000 + nanos)
}

/// Blocks until process `pid` (a child of this process, not yet reaped) has exited or
/// `timeout` has passed; `Ok(true)` when it exited. Through a pidfd (Linux 5.3+), which
/// becomes readable at the exit itself, so the caller wakes without polling delay.
/// `Err` when pidfds are not available; the caller then polls.
#[cfg(target_os = "linux")]
pub fn wait_exit(pid: u32, timeout: std::time::Duration) -> std::io::Result<bool> {
    use std::os::fd::{FromRawFd, OwnedFd};
    // SAFETY: pidfd_open(pid, flags) takes integers only and returns a new descriptor.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the descriptor was just returned by the kernel and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) };
    let deadline = std::time::Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        // poll's timeout is whole milliseconds: round up so the caller never wakes early.
        let ms = left.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as libc::c_int;
        let mut pfd = libc::pollfd {
            fd: std::os::fd::AsRawFd::as_raw_fd(&fd),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: `pfd` is one valid, writable pollfd, and the count passed is 1.
        let n = unsafe { libc::poll(&mut pfd, 1, ms) };
        match n {
            1.. => return Ok(true),
            0 if left.is_zero() => return Ok(false),
            0 => {}
            _ => {
                let e = std::io::Error::last_os_error();
                if e.kind() != std::io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
        }
    }
}

/// Without pidfds: the caller polls.
#[cfg(not(target_os = "linux"))]
pub fn wait_exit(_pid: u32, _timeout: std::time::Duration) -> std::io::Result<bool> {
    Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
}

/// Makes this process the subreaper of its descendants (`PR_SET_CHILD_SUBREAPER`): an
/// orphan among them is re-parented to it rather than to init. `false` when the kernel
/// refuses.
#[cfg(target_os = "linux")]
pub fn set_child_subreaper() -> bool {
    // SAFETY: prctl(PR_SET_CHILD_SUBREAPER, 1) takes integers only and touches no memory
    // of this process.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0 }
}

/// Elsewhere there are no subreapers.
#[cfg(not(target_os = "linux"))]
pub fn set_child_subreaper() -> bool {
    false
}

/// This process's process group id.
pub fn own_process_group() -> Option<u32> {
    // SAFETY: getpgid(0) takes an integer and reads no memory of this process.
    let pgid = unsafe { libc::getpgid(0) };
    u32::try_from(pgid).ok()
}

/// Reaps child `pid` if it has exited (waitpid with WNOHANG); `true` when it was reaped.
pub fn reap_if_exited(pid: u32) -> bool {
    let mut status = 0;
    // SAFETY: waitpid writes the status into `status`, a valid local integer that
    // outlives the call; WNOHANG makes it return at once.
    unsafe { libc::waitpid(pid as libc::pid_t, &mut status, libc::WNOHANG) == pid as libc::pid_t }
}
