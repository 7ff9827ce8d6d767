//! The operating-system calls this crate cannot make safely: asking the kernel to kill the
//! node when dyno dies, and giving the node back a default SIGINT. The `unsafe` is one
//! `pre_exec` hook that calls async-signal-safe functions with plain integer arguments.

use std::process::Command;

/// Makes the child of `cmd` receive SIGKILL when the *thread* that spawns it exits
/// (`PR_SET_PDEATHSIG`): if dyno is killed outright (SIGKILL, the OOM killer), its
/// SIGINT-then-SIGKILL stop never runs, and without this the node would run on. The
/// kernel ties the signal to the spawning thread, not the process, so the caller must
/// spawn from a thread that lives as long as the node should (see
/// [`crate::executor::ProcessExecutor`]). The setting survives `exec` but not `fork`: the
/// node's own children are not covered (the executor's group guard is).
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
        // the child must not start the node. (No allocation: a raw OS error.)
        // SAFETY: getppid takes no arguments and cannot fail.
        if unsafe { libc::getppid() } != parent {
            return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
        }
        // dyno stops the node with SIGINT. A shell starts background jobs with SIGINT and
        // SIGQUIT ignored (`dyno compare ... &` in a CI script), and an ignored signal
        // stays ignored across exec: give the node the default disposition back, or
        // every stop would wait out the grace period and end in SIGKILL.
        for sig in [libc::SIGINT, libc::SIGQUIT] {
            // SAFETY: signal(2) with SIG_DFL takes integers only and is async-signal safe.
            if unsafe { libc::signal(sig, libc::SIG_DFL) } == libc::SIG_ERR {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    };
    // SAFETY: the hook only calls async-signal-safe functions (prctl, getppid, signal) and
    // builds errors without allocating (`last_os_error`, `from_raw_os_error`).
    unsafe {
        cmd.pre_exec(hook);
    }
}

/// Elsewhere there is no parent-death signal; the executor's group guard still applies.
#[cfg(not(target_os = "linux"))]
pub fn kill_when_parent_dies(_cmd: &mut Command) {}
