//! Operating-system calls that std does not offer. The only `unsafe` of the crate.
#![allow(unsafe_code)]

/// Asks the kernel to wake the calling thread within `slack_ns` of its timers instead of
/// the default 50 us, so the shaping timer fires close to each delivery time. Returns
/// false when the kernel refused (the timer then keeps working, only less precisely).
pub fn set_timer_slack_ns(slack_ns: u64) -> bool {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: PR_SET_TIMERSLACK takes one integer argument by value and touches no
        // memory of the caller; it only changes the calling thread's timer slack.
        let rc = unsafe {
            libc::prctl(
                libc::PR_SET_TIMERSLACK,
                slack_ns as libc::c_ulong,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
            )
        };
        rc == 0
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = slack_ns;
        false
    }
}

/// Puts the calling thread in the SCHED_FIFO real-time class at `priority` (1-99), so it
/// runs as soon as its timer fires instead of waiting behind busy threads. Returns false
/// when not permitted (needs CAP_SYS_NICE or an RLIMIT_RTPRIO allowance).
pub fn set_realtime_fifo(priority: i32) -> bool {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param {
            sched_priority: priority,
        };
        // SAFETY: `param` is a valid, initialised sched_param that outlives the call; pid 0
        // names the calling thread.
        let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
        rc == 0
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = priority;
        false
    }
}

/// A timer the kernel fires at an absolute wall-clock time (`CLOCK_REALTIME`, the clock of
/// the delivery times) with nanosecond resolution, as a descriptor that becomes readable
/// when it fires: the I/O thread's reactor waits on it with everything else, so a shaped
/// delivery is not rounded to the reactor's millisecond ticks. The thread that arms it
/// should have a small timer slack ([`set_timer_slack_ns`]): the kernel applies the
/// arming thread's slack.
#[cfg(target_os = "linux")]
#[derive(Debug)]
pub struct TimerFd(std::os::fd::OwnedFd);

#[cfg(target_os = "linux")]
impl TimerFd {
    /// A disarmed, non-blocking timer.
    pub fn new() -> std::io::Result<TimerFd> {
        use std::os::fd::FromRawFd;
        // SAFETY: timerfd_create takes two integers and returns a new descriptor or -1.
        let fd = unsafe {
            libc::timerfd_create(libc::CLOCK_REALTIME, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC)
        };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: the descriptor was just returned by the kernel and nothing else owns it.
        Ok(TimerFd(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) }))
    }

    /// Fires once at `unix_ns` (a time already past fires at once); 0 disarms.
    pub fn arm_at(&self, unix_ns: u64) -> std::io::Result<()> {
        use std::os::fd::AsRawFd;
        // A zero it_value disarms: a due time of 0 must still fire, so it becomes 1 ns.
        let at = unix_ns.max(1);
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: (at / 1_000_000_000) as libc::time_t,
                tv_nsec: (at % 1_000_000_000) as libc::c_long,
            },
        };
        // SAFETY: `spec` is a valid itimerspec that outlives the call; the old value is not
        // asked for (null is allowed).
        let rc = unsafe {
            libc::timerfd_settime(
                self.0.as_raw_fd(),
                libc::TFD_TIMER_ABSTIME,
                &spec,
                std::ptr::null_mut(),
            )
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    /// Reads the expiry count so the descriptor stops being readable (false: it had not
    /// fired).
    pub fn clear(&self) -> bool {
        use std::os::fd::AsRawFd;
        let mut count = [0u8; 8];
        // SAFETY: `count` is 8 writable bytes, the size a timerfd read requires.
        let n = unsafe { libc::read(self.0.as_raw_fd(), count.as_mut_ptr().cast(), count.len()) };
        n == 8
    }
}

#[cfg(target_os = "linux")]
impl TimerFd {
    /// The timer registered with the current tokio runtime's reactor (call it on the
    /// runtime), which then wakes a task when it fires.
    pub fn register(self) -> std::io::Result<tokio::io::unix::AsyncFd<TimerFd>> {
        // SAFETY: the descriptor is the OwnedFd this TimerFd owns: it stays open and is the
        // same description for as long as the AsyncFd owns the TimerFd, and `as_raw_fd`
        // always returns it.
        unsafe {
            tokio::io::unix::AsyncFd::register_with_interest(self, tokio::io::Interest::READABLE)
        }
        .map_err(std::io::Error::from)
    }
}

#[cfg(target_os = "linux")]
impl std::os::fd::AsRawFd for TimerFd {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.0.as_raw_fd()
    }
}

/// The calling thread's timer slack in nanoseconds (None off Linux or on error).
#[cfg(test)]
pub fn timer_slack_ns() -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: PR_GET_TIMERSLACK takes no pointer arguments and returns the value.
        let rc = unsafe {
            libc::prctl(
                libc::PR_GET_TIMERSLACK,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
            )
        };
        (rc >= 0).then_some(rc as u64)
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

#[cfg(test)]
mod tests {
    #[test]
    #[cfg(target_os = "linux")]
    fn a_timerfd_fires_at_its_time_and_not_before() {
        let t = super::TimerFd::new().unwrap();
        assert!(!t.clear(), "a disarmed timer has not fired");
        let due = crate::shape::unix_ns() + 20_000_000;
        t.arm_at(due).unwrap();
        assert!(!t.clear());
        while !t.clear() {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert!(crate::shape::unix_ns() >= due);
        // A time already past fires at once.
        t.arm_at(1).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(1));
        assert!(t.clear());
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn timer_slack_is_set_on_this_thread_only() {
        let before = super::timer_slack_ns().unwrap();
        let t = std::thread::spawn(|| {
            assert!(super::set_timer_slack_ns(1));
            super::timer_slack_ns().unwrap()
        });
        assert_eq!(t.join().unwrap(), 1);
        assert_eq!(super::timer_slack_ns().unwrap(), before);
    }
}
