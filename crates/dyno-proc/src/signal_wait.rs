//! Waiting for signals on the caller's own thread: no handler thread, no polling. For a
//! process that a cluster runs thousands of times on one machine (`dyno node run`),
//! where every thread counts against the kernel's limits and every wake-up against the
//! node's idle cost.
//!
//! Each signal sets a flag, then writes a byte to a self-pipe (both from the signal
//! handler, through `signal-hook`'s async-signal-safe registrations);
//! [`SignalWaiter::wait`] blocks on the pipe's read end until a byte comes or its timeout
//! passes, then says which signals arrived.

use std::io::Read as _;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The signals registered with [`SignalWaiter::register`] and the pipe they wake.
#[derive(Debug)]
pub struct SignalWaiter {
    pipe: UnixStream,
    flags: Vec<(i32, Arc<AtomicBool>)>,
}

impl SignalWaiter {
    /// Registers `signals` (their numbers, e.g. `libc::SIGINT`): from now on they no
    /// longer end the process, they are reported by [`SignalWaiter::wait`].
    pub fn register(signals: &[i32]) -> std::io::Result<SignalWaiter> {
        let (read, write) = UnixStream::pair()?;
        let mut flags = Vec::new();
        for &sig in signals {
            let flag = Arc::new(AtomicBool::new(false));
            // The flag first, then the pipe: the waiter drains the pipe, then reads the
            // flags, so a signal that woke it is always seen.
            signal_hook::flag::register(sig, flag.clone())?;
            signal_hook::low_level::pipe::register(sig, write.try_clone()?)?;
            flags.push((sig, flag));
        }
        Ok(SignalWaiter { pipe: read, flags })
    }

    /// Blocks until a registered signal arrives or `timeout` passes (`None`: until a
    /// signal); the signals that arrived since the last call, in registration order.
    pub fn wait(&mut self, timeout: Option<Duration>) -> Vec<i32> {
        let timeout = timeout.map(|t| t.max(Duration::from_millis(1)));
        if self.pipe.set_read_timeout(timeout).is_ok() {
            let mut drained = [0u8; 64];
            let _ = self.pipe.read(&mut drained);
        }
        self.flags
            .iter()
            .filter(|(_, f)| f.swap(false, Ordering::SeqCst))
            .map(|(sig, _)| *sig)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signal_wakes_the_waiter_and_a_timeout_reports_none() {
        // SIGUSR2: nothing else in the test process uses it.
        let mut w = SignalWaiter::register(&[libc::SIGUSR2]).unwrap();
        let t0 = std::time::Instant::now();
        assert!(w.wait(Some(Duration::from_millis(30))).is_empty());
        assert!(t0.elapsed() >= Duration::from_millis(25), "it waited");
        signal_hook::low_level::raise(libc::SIGUSR2).unwrap();
        let t0 = std::time::Instant::now();
        assert_eq!(w.wait(Some(Duration::from_secs(30))), vec![libc::SIGUSR2]);
        assert!(t0.elapsed() < Duration::from_secs(30), "the signal woke it");
        assert!(
            w.wait(Some(Duration::from_millis(1))).is_empty(),
            "reported once"
        );
    }
}
