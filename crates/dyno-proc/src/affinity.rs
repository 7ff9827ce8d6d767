//! CPU affinity: the CPUs a child runs on ([`crate::SpawnOptions::cpus`] applies it to a
//! spawned child), the calling thread's, and which CPUs dyno may use at all.

/// Restricts the calling thread, and the threads it starts from now on, to `cpus`.
/// Errors: a CPU beyond the kernel's mask size, one not allowed (offline, outside the
/// cgroup's cpuset), or a system without affinity.
pub fn pin_current_thread(cpus: &[usize]) -> std::io::Result<()> {
    crate::sys::pin_current_thread(cpus)
}

/// The CPUs the calling thread may run on now, or `None` where the system cannot say.
pub fn allowed_cpus() -> Option<Vec<usize>> {
    crate::sys::allowed_cpus()
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use crate::{GuardedChild, SpawnOptions};
    use std::time::Duration;

    #[test]
    fn a_child_runs_on_the_cpus_asked_for_and_so_do_its_children() {
        let allowed = allowed_cpus().unwrap();
        let one = *allowed.last().unwrap();
        let mut cmd = std::process::Command::new("sh");
        // The grandchild's mask, as the kernel reports it.
        cmd.args(["-c", "sh -c 'grep Cpus_allowed_list /proc/self/status'"]);
        let opts = SpawnOptions {
            cpus: Some(vec![one]),
            ..SpawnOptions::default()
        };
        let mut child = GuardedChild::spawn(cmd, &opts).unwrap();
        child.wait_timeout(Duration::from_secs(10));
        let out = child.stop(Duration::from_secs(1)).last_lines;
        assert_eq!(out, [format!("Cpus_allowed_list:\t{one}")], "{out:?}");
        // A CPU the kernel cannot name is refused before anything starts.
        let opts = SpawnOptions {
            cpus: Some(vec![1 << 20]),
            ..SpawnOptions::default()
        };
        assert!(GuardedChild::spawn(std::process::Command::new("true"), &opts).is_err());
    }

    #[test]
    fn this_thread_can_be_pinned_and_released() {
        let allowed = allowed_cpus().unwrap();
        std::thread::spawn(move || {
            pin_current_thread(&allowed[..1]).unwrap();
            assert_eq!(allowed_cpus().unwrap(), allowed[..1]);
            pin_current_thread(&allowed).unwrap();
            assert_eq!(allowed_cpus().unwrap(), allowed);
        })
        .join()
        .unwrap();
    }
}
